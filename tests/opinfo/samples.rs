//! Inputs for the OpInfo matrix: one family per `opinfo: {samples: NAME}` in
//! native_functions.yaml. `NAME(dtype)` gives regular and edge (0-d / empty) samples,
//! `NAME_errors()` inputs the op must reject, each with a fragment of the expected message.
//!
//! Conventions every family follows:
//! - Values are deterministic (seeded `kiln::Generator`s) and small: integers stay in about
//!   [-4, 10) (never negative for u8) so nothing wraps in u8/i8 arithmetic.
//! - The first three regular samples are the float64 gradcheck inputs: small, and
//!   well-conditioned for the op (no ties for max/min, no kinks for abs/relu/clamp, no zero
//!   divisors, positive bases for pow).
//! - In regular samples a tensor of 2+ dims never has a size-1 dim among its last two:
//!   `harness::noncontiguous` transposes those two dims and asserts the copy is
//!   non-contiguous, which a size-1 dim there defeats (a `[3, 1]` or `[1, 4]` operand makes
//!   that check panic). Broadcasting against size-1 dims therefore uses leading dims
//!   (`[2, 1, 3, 2]` with `[1, 3, 3, 2]`); 1-d and one-element tensors are fine anywhere.
//! - An `_errors` list is shared by every op using the family, so each case must fail for
//!   all of them. Families some of whose ops accept every input (`clone`, `exp`, `to`,
//!   `add.Scalar`, `squeeze`, ...) return an empty list: there is nothing such an op must
//!   reject.

#![allow(dead_code)]

use crate::harness::{Arg, ErrorSample, Sample};

#[path = "samples/binary.rs"]
mod binary;
#[path = "samples/classification.rs"]
mod classification;
#[path = "samples/conv.rs"]
mod conv;
#[path = "samples/conversion.rs"]
mod conversion;
#[path = "samples/distances.rs"]
mod distances;
#[path = "samples/elementwise.rs"]
mod elementwise;
#[path = "samples/embedding.rs"]
mod embedding;
#[path = "samples/indexing.rs"]
mod indexing;
#[path = "samples/joining.rs"]
mod joining;
#[path = "samples/linalg.rs"]
mod linalg;
#[path = "samples/losses.rs"]
mod losses;
#[path = "samples/norm.rs"]
mod norm;
#[path = "samples/pooling.rs"]
mod pooling;
#[path = "samples/reducing.rs"]
mod reducing;
#[path = "samples/resampling.rs"]
mod resampling;
#[path = "samples/scatter.rs"]
mod scatter;
#[path = "samples/shaping.rs"]
mod shaping;
#[path = "samples/softmax.rs"]
mod softmax;
#[path = "samples/sorting.rs"]
mod sorting;
#[path = "samples/unary.rs"]
mod unary;
#[path = "samples/views.rs"]
mod views;
pub use binary::*;
pub use classification::*;
pub use conv::*;
pub use conversion::*;
pub use distances::*;
pub use elementwise::*;
pub use embedding::*;
pub use indexing::*;
pub use joining::*;
use kiln::{DType, ErrorKind, Generator, Scalar, Tensor};
pub use linalg::*;
pub use losses::*;
pub use norm::*;
pub use pooling::*;
pub use reducing::*;
pub use resampling::*;
pub use scatter::*;
pub use shaping::*;
pub use softmax::*;
pub use sorting::*;
pub use unary::*;
pub use views::*;

// ---------------------------------------------------------------------------------------
// Value helpers
// ---------------------------------------------------------------------------------------

/// A tensor of `dtype` holding `vals` (row-major) with `shape`.
fn from_f64(vals: &[f64], shape: &[usize], dtype: DType) -> Tensor {
    Tensor::from_vec(vals.to_vec(), shape)
        .expect("sample shape")
        .to_dtype(dtype)
        .expect("sample cast")
}

/// `n` uniform samples from [0, 1).
fn uniform(n: usize, seed: u64) -> Vec<f64> {
    let mut g = Generator::new(seed);
    Tensor::rand_with([n], DType::F64, &mut g)
        .expect("rand")
        .to_vec::<f64>()
        .expect("CPU")
}

/// Deterministic random values: floats uniform in [lo, hi) (drawn in float64, then cast),
/// integers uniform in [lo, hi) (negative part dropped for u8), random bools.
pub fn make(shape: &[usize], dtype: DType, lo: f64, hi: f64, seed: u64) -> Tensor {
    let mut g = Generator::new(seed);
    match dtype {
        DType::Bool => Tensor::randint_with(0, 2, shape, DType::Bool, &mut g).expect("randint"),
        d if d.is_floating_point() => {
            let n = shape.iter().product();
            let v: Vec<f64> = uniform(n, seed)
                .iter()
                .map(|u| lo + (hi - lo) * u)
                .collect();
            from_f64(&v, shape, d)
        }
        d => {
            let mut l = lo.ceil() as i64;
            if d == DType::U8 {
                l = l.max(0);
            }
            let h = (hi.ceil() as i64).max(l + 1);
            Tensor::randint_with(l, h, shape, d, &mut g).expect("randint")
        }
    }
}

/// Floats uniform in `float`, integers in `int`, bools random.
fn ranged(shape: &[usize], dtype: DType, float: (f64, f64), int: (i64, i64), seed: u64) -> Tensor {
    if dtype.is_floating_point() {
        make(shape, dtype, float.0, float.1, seed)
    } else {
        make(shape, dtype, int.0 as f64, int.1 as f64, seed)
    }
}

/// General values: floats in [-2, 2), integers in [-4, 5) ([0, 5) for u8), random bools.
fn vals(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    ranged(shape, dtype, (-2.0, 2.0), (-4, 5), seed)
}

/// Like [`vals`], with floats on a grid of quarters in [-2, 2): sums of a few of them are
/// exact in f16 and bf16, so a GPU's atomic adds, which round after every step (as PyTorch's
/// do), still give the reference's once-rounded value.
fn quarters(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    if dtype.is_floating_point() {
        discrete(shape, dtype, -8, 8, 0.25, seed)
    } else {
        vals(shape, dtype, seed)
    }
}

/// Strictly positive values: floats in [0.5, 3), integers in [1, 5).
fn positive(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    ranged(shape, dtype, (0.5, 3.0), (1, 5), seed)
}

/// Values bounded away from zero: |x| in [0.5, 2) for floats, [1, 5) for integers, with a
/// random sign (always positive for u8).
fn nonzero(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let (mag, sign) = (uniform(n, seed), uniform(n, seed + 1000));
    let v: Vec<f64> = mag
        .iter()
        .zip(&sign)
        .map(|(&m, &s)| {
            let m = if dtype.is_floating_point() {
                0.5 + 1.5 * m
            } else {
                1.0 + (4.0 * m).floor()
            };
            if s < 0.5 && dtype != DType::U8 {
                -m
            } else {
                m
            }
        })
        .collect();
    from_f64(&v, shape, dtype)
}

/// `k * scale` for integers `k` uniform in [lo, hi) (lo clamped to 0 for u8); bools random.
fn discrete(shape: &[usize], dtype: DType, lo: i64, hi: i64, scale: f64, seed: u64) -> Tensor {
    if dtype == DType::Bool {
        return make(shape, dtype, 0.0, 2.0, seed);
    }
    let lo = if dtype == DType::U8 { lo.max(0) } else { lo };
    let mut g = Generator::new(seed);
    let k = Tensor::randint_with(lo, hi, shape, DType::I64, &mut g)
        .expect("randint")
        .to_vec::<f64>()
        .expect("CPU");
    let v: Vec<f64> = k.iter().map(|k| k * scale).collect();
    from_f64(&v, shape, dtype)
}

/// Values from a small set so two tensors share many elements: halves in [-1.5, 2) for
/// floats, integers in [-3, 4) ([0, 4) for u8), random bools.
fn ties(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    let scale = if dtype.is_floating_point() { 0.5 } else { 1.0 };
    discrete(shape, dtype, -3, 4, scale, seed)
}

/// A deterministic permutation of `0..n`.
fn perm(n: usize, seed: u64) -> Vec<usize> {
    let keys = uniform(n, seed);
    let mut p: Vec<usize> = (0..n).collect();
    p.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
    p
}

/// Pairwise distinct values (a shuffled range): quarter steps around 0 for floats (exact in
/// f16/bf16 for up to 60 elements), integers around 0 (from 0 for u8); bools random.
fn distinct(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    if dtype == DType::Bool {
        return make(shape, dtype, 0.0, 2.0, seed);
    }
    let n: usize = shape.iter().product();
    let half = (n / 2) as f64;
    let v: Vec<f64> = perm(n, seed)
        .iter()
        .map(|&k| {
            let k = k as f64;
            if dtype.is_floating_point() {
                (k - half) * 0.25
            } else if dtype == DType::U8 {
                k
            } else {
                k - half
            }
        })
        .collect();
    from_f64(&v, shape, dtype)
}

/// Random bools (masks, conditions).
fn mask(shape: &[usize], seed: u64) -> Tensor {
    make(shape, DType::Bool, 0.0, 2.0, seed)
}

/// `[batch..., n, n]` with every trailing matrix symmetric, values in [-2, 2). Its
/// non-contiguous copy (the transpose of a transposed copy) has the same storage contents.
fn symmetric(batch: usize, n: usize, dtype: DType, seed: u64) -> Tensor {
    let u = uniform(batch * n * n, seed);
    let mut v = vec![0.0; batch * n * n];
    for b in 0..batch {
        for i in 0..n {
            for j in 0..n {
                let (r, c) = if i <= j { (i, j) } else { (j, i) };
                v[b * n * n + i * n + j] = -2.0 + 4.0 * u[b * n * n + r * n + c];
            }
        }
    }
    let shape: Vec<usize> = if batch == 1 {
        vec![n, n]
    } else {
        vec![batch, n, n]
    };
    from_f64(&v, &shape, dtype)
}

/// An int64 index tensor.
fn index(v: &[i64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).expect("index shape")
}

/// Random int64 indices in [0, hi).
fn rand_index(shape: &[usize], hi: i64, seed: u64) -> Tensor {
    let mut g = Generator::new(seed);
    Tensor::randint_with(0, hi, shape, DType::I64, &mut g).expect("randint")
}

fn float(x: f64) -> Arg {
    Arg::Scalar(Scalar::Float(x))
}

fn int(x: i64) -> Arg {
    Arg::Scalar(Scalar::Int(x))
}

fn ints(v: &[i64]) -> Arg {
    Arg::Ints(v.to_vec())
}

fn opt_int(x: Option<i64>) -> Arg {
    Arg::OptInt(x)
}

fn err(sample: Sample, kind: ErrorKind, message: &'static str) -> ErrorSample {
    ErrorSample {
        sample,
        kind,
        message,
    }
}

const BROADCAST_ERROR: &str =
    "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1";

/// Two operands whose shapes do not broadcast ([2, 3] and [2, 4]).
fn mismatched_pair(dtype: DType) -> Vec<Tensor> {
    vec![vals(&[2, 3], dtype, 90), vals(&[2, 4], dtype, 91)]
}

/// Two operands of general values with shapes `a` and `b`.
fn two(a: &[usize], b: &[usize], dtype: DType, seed: u64) -> Vec<Tensor> {
    vec![vals(a, dtype, seed), vals(b, dtype, seed + 1)]
}

/// General float32 values.
fn f32v(shape: &[usize], seed: u64) -> Tensor {
    vals(shape, DType::F32, seed)
}

/// Small weights so half-precision sums stay accurate.
fn small(s: &[usize], dtype: DType, seed: u64) -> Tensor {
    make(s, dtype, -0.5, 0.5, seed)
}
