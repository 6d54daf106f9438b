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

use crate::harness::{noncontiguous, Arg, ErrorSample, Sample};

#[path = "samples/elementwise.rs"]
mod elementwise;
#[path = "samples/indexing.rs"]
mod indexing;
#[path = "samples/linalg.rs"]
mod linalg;
#[path = "samples/losses.rs"]
mod losses;
#[path = "samples/nn.rs"]
mod nn;
#[path = "samples/norm.rs"]
mod norm;
#[path = "samples/reducing.rs"]
mod reducing;
#[path = "samples/shaping.rs"]
mod shaping;
#[path = "samples/sorting.rs"]
mod sorting;
pub use elementwise::*;
pub use indexing::*;
use kiln::{DType, Device, ErrorKind, Generator, Scalar, Tensor};
pub use linalg::*;
pub use losses::*;
pub use nn::*;
pub use norm::*;
pub use reducing::*;
pub use shaping::*;
pub use sorting::*;

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

// ---------------------------------------------------------------------------------------
// Pointwise binary: add, sub, mul, maximum, minimum (`binary`); div (`binary_nonzero`);
// comparisons (`binary_ties`); pow
// ---------------------------------------------------------------------------------------

/// Operands of binary arithmetic. For u8, `a` is in [6, 10) and `b` in [0, 3), so
/// `a - alpha * b` with alpha ≤ 2 never wraps.
fn binary_pair(sa: &[usize], sb: &[usize], dtype: DType, seed: u64) -> Vec<Tensor> {
    if dtype == DType::U8 {
        vec![
            make(sa, dtype, 6.0, 10.0, seed),
            make(sb, dtype, 0.0, 3.0, seed + 1),
        ]
    } else {
        vec![vals(sa, dtype, seed), vals(sb, dtype, seed + 1)]
    }
}

/// Makes a sample's operands from two shapes and a seed.
type PairFn<'a> = &'a dyn Fn(&[usize], &[usize], u64) -> Vec<Tensor>;

/// The common shape cases of a broadcasting binary op, with operands from `pair`.
fn binary_shapes(pair: PairFn<'_>) -> Vec<Sample> {
    vec![
        Sample::new("2-d [3,4] with [3,4]", pair(&[3, 4], &[3, 4], 1)),
        Sample::new("broadcast [3,4] with [4]", pair(&[3, 4], &[4], 2)),
        Sample::new(
            "mutual broadcast [2,1,3,2] with [1,3,3,2]",
            pair(&[2, 1, 3, 2], &[1, 3, 3, 2], 3),
        ),
        Sample::new("3-d [2,3,4] with [2,3,4]", pair(&[2, 3, 4], &[2, 3, 4], 4)),
        Sample::new("broadcast [4] with [2,3,4]", pair(&[4], &[2, 3, 4], 5)),
        Sample::new("0-d other: [3,4] with []", pair(&[3, 4], &[], 6)),
        Sample::new("1-d [5] with [5]", pair(&[5], &[5], 7)),
        Sample::new("0-d 0-d with []", pair(&[], &[], 8)).edge(),
        Sample::new("empty [0,3] with [3]", pair(&[0, 3], &[3], 9)).edge(),
        Sample::new("empty [0,3] with [0,3]", pair(&[0, 3], &[0, 3], 10)).edge(),
    ]
}

/// add/sub/mul/maximum/minimum: shape cases plus an `alpha` (ignored by ops without one).
pub fn binary(dtype: DType) -> Vec<Sample> {
    let mut v = binary_shapes(&|a, b, s| binary_pair(a, b, dtype, s));
    if dtype != DType::Bool {
        let alpha = if dtype.is_floating_point() {
            float(-1.5)
        } else {
            int(2)
        };
        v.push(
            Sample::new(
                "alpha with [3,4] and [3,4]",
                binary_pair(&[3, 4], &[3, 4], dtype, 11),
            )
            .arg("alpha", alpha),
        );
    }
    v
}

pub fn binary_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "shapes [2,3] and [2,4] do not broadcast",
            mismatched_pair(DType::F32),
        ),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

/// Comparisons: operands drawn from a small set so equal elements occur.
pub fn binary_ties(dtype: DType) -> Vec<Sample> {
    let mut v = binary_shapes(&|a, b, s| vec![ties(a, dtype, s), ties(b, dtype, s + 1)]);
    v.push(Sample::new(
        "identical operands [3,4]",
        vec![ties(&[3, 4], dtype, 12), ties(&[3, 4], dtype, 12)],
    ));
    v
}

pub fn binary_ties_errors() -> Vec<ErrorSample> {
    binary_errors()
}

/// div: the divisor is bounded away from zero (positive for u8).
pub fn binary_nonzero(dtype: DType) -> Vec<Sample> {
    binary_shapes(&|a, b, s| vec![vals(a, dtype, s), nonzero(b, dtype, s + 1)])
}

pub fn binary_nonzero_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "shapes [2,3] and [2,4] do not broadcast",
            vec![
                vals(&[2, 3], DType::F32, 92),
                nonzero(&[2, 4], DType::F32, 93),
            ],
        ),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

/// pow(Tensor, Tensor): positive bases in [0.5, 2) and exponents in [-2, 2) for floats;
/// bases in [0, 4) and exponents in [0, 3) for integers.
pub fn pow(dtype: DType) -> Vec<Sample> {
    let pair = |a: &[usize], b: &[usize], s: u64| {
        if dtype.is_floating_point() {
            vec![
                make(a, dtype, 0.5, 2.0, s),
                make(b, dtype, -2.0, 2.0, s + 1),
            ]
        } else {
            vec![make(a, dtype, 0.0, 4.0, s), make(b, dtype, 0.0, 3.0, s + 1)]
        }
    };
    binary_shapes(&pair)
}

pub fn pow_errors() -> Vec<ErrorSample> {
    let pair = vec![
        make(&[2, 3], DType::F32, 0.5, 2.0, 94),
        make(&[2, 4], DType::F32, 0.5, 2.0, 95),
    ];
    vec![
        err(
            Sample::new("shapes [2,3] and [2,4] do not broadcast", pair),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
        err(
            Sample::new("bool ** bool", vec![mask(&[3], 96), mask(&[3], 97)]),
            ErrorKind::DType,
            "\"pow\" not implemented for 'Bool'",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Pointwise with a Scalar: add/sub/mul/eq/le/gt/ge.Scalar (`unary_scalar`), div.Scalar
// (`unary_scalar_nonzero`), pow.Tensor_Scalar (`pow_scalar`), clamp, masked_fill
// ---------------------------------------------------------------------------------------

/// Tensor op Scalar: float scalars with float tensors, int scalars with integer tensors, an
/// int scalar with a float tensor and a float scalar with an integer tensor (promotes), a
/// scalar equal to some elements (comparisons), and an `alpha` (add/sub only). u8 tensors
/// are in [6, 10) and u8 scalars non-negative, so `self - alpha * other` never wraps. Bool
/// tensors never meet `True` (the `a + alpha * b` reference cannot express logical or).
pub fn unary_scalar(dtype: DType) -> Vec<Sample> {
    let x = |shape: &[usize], seed: u64| {
        if dtype == DType::U8 {
            make(shape, dtype, 6.0, 10.0, seed)
        } else {
            vals(shape, dtype, seed)
        }
    };
    let fl = dtype.is_floating_point();
    let (s1, s2) = match dtype {
        d if d.is_floating_point() => (float(1.5), float(-0.75)),
        DType::Bool => (int(2), Arg::Scalar(Scalar::Bool(false))),
        DType::U8 => (int(2), int(1)),
        _ => (int(2), int(-3)),
    };
    let tie = match dtype {
        d if d.is_floating_point() => float(0.5),
        DType::U8 => int(0),
        _ => int(1),
    };
    let mut v = vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]).arg("other", s1.clone()),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]).arg("other", s2),
        Sample::new(
            "1-d [6] with elements equal to the scalar",
            vec![ties(&[6], dtype, 3)],
        )
        .arg("other", tie),
        if fl {
            Sample::new("int scalar with a float tensor", vec![x(&[3, 4], 4)]).arg("other", int(2))
        } else {
            Sample::new(
                "float scalar with an integer tensor (promotes to float)",
                vec![x(&[3, 4], 4)],
            )
            .arg("other", float(0.5))
        },
        Sample::new("0-d", vec![x(&[], 6)])
            .arg("other", s1.clone())
            .edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 7)])
            .arg("other", s1.clone())
            .edge(),
    ];
    if dtype != DType::Bool {
        let alpha = if fl { float(-0.5) } else { int(2) };
        v.push(
            Sample::new("alpha", vec![x(&[3, 4], 5)])
                .arg("other", s1)
                .arg("alpha", alpha),
        );
    }
    v
}

/// add/sub/mul/eq/le/gt/ge.Scalar accept every tensor and scalar: nothing to reject.
pub fn unary_scalar_errors() -> Vec<ErrorSample> {
    vec![]
}

/// div.Scalar: divisors bounded away from zero.
pub fn unary_scalar_nonzero(dtype: DType) -> Vec<Sample> {
    let fl = dtype.is_floating_point();
    let (s1, s2, s3) = if fl {
        (float(2.5), float(-0.5), int(3))
    } else {
        (int(2), int(-3), float(0.5))
    };
    vec![
        Sample::new("2-d [3,4]", vec![vals(&[3, 4], dtype, 1)]).arg("other", s1.clone()),
        Sample::new("3-d [2,3,4]", vec![vals(&[2, 3, 4], dtype, 2)]).arg("other", s2),
        Sample::new(
            if fl {
                "int scalar with a float tensor"
            } else {
                "float scalar with an integer tensor"
            },
            vec![vals(&[5], dtype, 3)],
        )
        .arg("other", s3),
        Sample::new("0-d", vec![vals(&[], dtype, 4)])
            .arg("other", s1.clone())
            .edge(),
        Sample::new("empty [0,3]", vec![vals(&[0, 3], dtype, 5)])
            .arg("other", s1)
            .edge(),
    ]
}

/// div.Scalar promotes every input to float and accepts every divisor: nothing to reject.
pub fn unary_scalar_nonzero_errors() -> Vec<ErrorSample> {
    vec![]
}

/// pow(Tensor, Scalar): bases as for `pow`; float, negative and int exponents for float
/// tensors, small int exponents (and 0.5, which promotes) for integer tensors.
pub fn pow_scalar(dtype: DType) -> Vec<Sample> {
    let fl = dtype.is_floating_point();
    let x = |shape: &[usize], seed: u64| {
        if fl {
            make(shape, dtype, 0.5, 2.0, seed)
        } else {
            make(shape, dtype, 0.0, 4.0, seed)
        }
    };
    let exps = if fl {
        vec![float(2.5), float(-1.5), int(2), int(-1), float(0.5)]
    } else {
        vec![int(2), int(3), int(0), float(0.5), int(1)]
    };
    let shapes: [&[usize]; 5] = [&[3, 4], &[2, 3, 4], &[5], &[3, 4], &[2, 3]];
    let mut v: Vec<Sample> = exps
        .into_iter()
        .zip(shapes)
        .enumerate()
        .map(|(i, (e, sh))| {
            Sample::new(format!("{sh:?} ** {e:?}"), vec![x(sh, i as u64 + 1)]).arg("exponent", e)
        })
        .collect();
    v.push(
        Sample::new("0-d", vec![x(&[], 10)])
            .arg("exponent", int(2))
            .edge(),
    );
    v.push(
        Sample::new("empty [0,3]", vec![x(&[0, 3], 11)])
            .arg("exponent", if fl { float(1.5) } else { int(2) })
            .edge(),
    );
    v
}

pub fn pow_scalar_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool tensor ** True", vec![mask(&[3], 98)])
            .arg("exponent", Arg::Scalar(Scalar::Bool(true))),
        ErrorKind::DType,
        "\"pow\" not implemented for 'Bool'",
    )]
}

/// clamp: min only, max only, both (min < max); bounds are exact in every dtype and never
/// equal to a float input, so the gradient is defined everywhere.
pub fn clamp(dtype: DType) -> Vec<Sample> {
    let some = |a: Arg| match a {
        Arg::Scalar(s) => Arg::OptScalar(Some(s)),
        other => other,
    };
    let (lo, hi, lo2, hi2) = match dtype {
        d if d.is_floating_point() => (float(-0.5), float(0.75), float(-1.0), float(1.25)),
        DType::U8 => (int(1), int(3), int(2), int(4)),
        _ => (int(-1), int(2), int(0), int(3)),
    };
    let x = |shape: &[usize], seed: u64| vals(shape, dtype, seed);
    let mut v = vec![
        Sample::new("min only", vec![x(&[3, 4], 1)]).arg("min", some(lo.clone())),
        Sample::new("max only", vec![x(&[3, 4], 2)]).arg("max", some(hi.clone())),
        Sample::new("min and max", vec![x(&[2, 3, 4], 3)])
            .arg("min", some(lo.clone()))
            .arg("max", some(hi.clone())),
        Sample::new("min and max, 1-d", vec![x(&[7], 4)])
            .arg("min", some(lo2))
            .arg("max", some(hi2)),
        Sample::new("0-d, min only", vec![x(&[], 6)])
            .arg("min", some(lo.clone()))
            .edge(),
        Sample::new("empty [0,3], min and max", vec![x(&[0, 3], 7)])
            .arg("min", some(lo))
            .arg("max", some(hi))
            .edge(),
    ];
    if dtype.is_floating_point() {
        v.push(
            Sample::new("int bounds with a float tensor", vec![x(&[3, 4], 5)])
                .arg("min", some(int(-1)))
                .arg("max", some(int(1))),
        );
    } else {
        v.push(
            Sample::new(
                "float bounds with an integer tensor (promotes)",
                vec![x(&[3, 4], 5)],
            )
            .arg("min", some(float(0.5)))
            .arg("max", some(float(2.5))),
        );
    }
    v
}

pub fn clamp_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("neither min nor max", vec![vals(&[3], DType::F32, 99)]),
            ErrorKind::Value,
            "At least one of 'min' or 'max' must not be None",
        ),
        err(
            Sample::new("bool tensor with bool bounds", vec![mask(&[3], 100)])
                .arg("min", Arg::OptScalar(Some(Scalar::Bool(false))))
                .arg("max", Arg::OptScalar(Some(Scalar::Bool(true)))),
            ErrorKind::DType,
            "\"clamp\" not implemented for 'Bool'",
        ),
    ]
}

/// where(condition, self, other): a bool condition (tensors[0]) and values, all broadcast.
pub fn where_cond(dtype: DType) -> Vec<Sample> {
    let t = |c: &[usize], a: &[usize], b: &[usize], s: u64| {
        vec![mask(c, s), vals(a, dtype, s + 1), vals(b, dtype, s + 2)]
    };
    vec![
        Sample::new("all [3,4]", t(&[3, 4], &[3, 4], &[3, 4], 1)),
        Sample::new(
            "self [4] broadcast to the condition [3,4]",
            t(&[3, 4], &[4], &[3, 4], 4),
        ),
        Sample::new(
            "mutual broadcast",
            t(&[1, 3, 3, 2], &[2, 1, 3, 2], &[3, 2], 7),
        ),
        Sample::new("3-d", t(&[2, 3, 4], &[2, 3, 4], &[2, 3, 4], 10)),
        Sample::new("condition [4], other 0-d", t(&[4], &[3, 4], &[], 13)),
        Sample::new("all 0-d", t(&[], &[], &[], 16)).edge(),
        Sample::new("empty [0,3]", t(&[0, 3], &[3], &[0, 3], 19)).edge(),
    ]
}

pub fn where_cond_errors() -> Vec<ErrorSample> {
    let f = |s: &[usize], seed| vals(s, DType::F32, seed);
    vec![
        err(
            Sample::new(
                "uint8 condition",
                vec![
                    make(&[3], DType::U8, 0.0, 2.0, 101),
                    f(&[3], 102),
                    f(&[3], 103),
                ],
            ),
            ErrorKind::DType,
            "expected condition to have dtype torch.bool, but got torch.uint8",
        ),
        err(
            Sample::new(
                "shapes do not broadcast",
                vec![mask(&[2, 3], 104), f(&[2, 3], 105), f(&[2, 4], 106)],
            ),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
    ]
}

/// masked_fill(self, mask, value): a bool mask broadcastable to self; the value is a float
/// for float tensors (plus an int value once), an int for integers, `True` for bool.
pub fn masked_fill(dtype: DType) -> Vec<Sample> {
    let value = match dtype {
        d if d.is_floating_point() => float(-1.5),
        DType::Bool => Arg::Scalar(Scalar::Bool(true)),
        DType::U8 => int(7),
        _ => int(-3),
    };
    let t = |a: &[usize], m: &[usize], s: u64| vec![vals(a, dtype, s), mask(m, s + 1)];
    let mut v = vec![
        Sample::new("mask [3,4]", t(&[3, 4], &[3, 4], 1)).arg("value", value.clone()),
        Sample::new("mask [4] broadcast to [3,4]", t(&[3, 4], &[4], 3)).arg("value", value.clone()),
        Sample::new(
            "mask [1,3,4] broadcast to [2,3,4]",
            t(&[2, 3, 4], &[1, 3, 4], 5),
        )
        .arg("value", value.clone()),
        Sample::new("0-d mask", t(&[3, 4], &[], 7)).arg("value", value.clone()),
        Sample::new("0-d", t(&[], &[], 9))
            .arg("value", value.clone())
            .edge(),
        Sample::new("empty [0,3] with mask [3]", t(&[0, 3], &[3], 11))
            .arg("value", value)
            .edge(),
    ];
    if dtype.is_floating_point() {
        v.push(
            Sample::new("int value into a float tensor", t(&[3, 4], &[3, 4], 13))
                .arg("value", int(2)),
        );
    }
    v
}

pub fn masked_fill_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "uint8 mask",
                vec![
                    vals(&[3], DType::F32, 107),
                    make(&[3], DType::U8, 0.0, 2.0, 108),
                ],
            )
            .arg("value", float(1.0)),
            ErrorKind::DType,
            "expected mask to have dtype torch.bool, but got torch.uint8",
        ),
        err(
            Sample::new(
                "mask does not broadcast",
                vec![vals(&[2, 3], DType::F32, 109), mask(&[2, 4], 110)],
            )
            .arg("value", float(1.0)),
            ErrorKind::Shape,
            BROADCAST_ERROR,
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Pointwise unary: `unary` (neg, exp, sin, cos, tanh, sigmoid, erf, silu, sign, clone,
// contiguous), `unary_nonzero` (abs, relu), `unary_positive` (log, log1p, sqrt, rsqrt), gelu
// ---------------------------------------------------------------------------------------

/// The shape cases of a unary op, with values from `x`.
fn unary_shapes(x: &dyn Fn(&[usize], u64) -> Tensor) -> Vec<Sample> {
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]),
        Sample::new("1-d [7]", vec![x(&[7], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 5)]).edge(),
    ]
}

/// Values in [-2, 2) (integers in [-4, 5), [0, 5) for u8; random bools).
pub fn unary(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| vals(s, dtype, seed))
}

/// `unary` serves clone, contiguous and float functions that promote every dtype: nothing
/// to reject.
pub fn unary_errors() -> Vec<ErrorSample> {
    vec![]
}

/// |x| in [0.5, 2) with random signs: away from the kinks of abs and relu.
pub fn unary_nonzero(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| nonzero(s, dtype, seed))
}

/// square: `unary_nonzero`'s values; bool is accepted (it squares in int64).
pub fn square(dtype: DType) -> Vec<Sample> {
    unary_nonzero(dtype)
}

pub fn square_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn unary_nonzero_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool input", vec![mask(&[3], 111)]),
        ErrorKind::DType,
        "not implemented for 'Bool'",
    )]
}

/// Strictly positive values, inside the domain of log and sqrt.
pub fn unary_positive(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| positive(s, dtype, seed))
}

/// log/log1p/sqrt/rsqrt promote every dtype to float and accept any value: nothing to reject.
pub fn unary_positive_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Values in (-0.9, 0.9), inside the domains of asin, acos and atanh and away from tan's
/// poles; integers are 0 (the one integer inside every such domain).
pub fn unary_unit(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| ranged(s, dtype, (-0.9, 0.9), (0, 1), seed))
}

/// asin, acos, atan, tan, atanh promote every dtype to float: nothing to reject.
pub fn unary_unit_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Values in [1.25, 3) (integers in [2, 5)), inside acosh's domain and away from its kink.
pub fn unary_above_one(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| ranged(s, dtype, (1.25, 3.0), (2, 5), seed))
}

pub fn unary_above_one_errors() -> Vec<ErrorSample> {
    vec![]
}

/// General values for ops that compute only in floating dtypes and keep the input's dtype
/// (frac): integers are rejected.
pub fn unary_floating(dtype: DType) -> Vec<Sample> {
    unary(dtype)
}

pub fn unary_floating_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64 input", vec![vals(&[3], DType::I64, 112)]),
        ErrorKind::DType,
        "not implemented for 'Long'",
    )]
}

/// Floats with NaN, ±inf, ±0 and finite values mixed in (the classification ops); other
/// dtypes get general values.
pub fn unary_special(dtype: DType) -> Vec<Sample> {
    if !dtype.is_floating_point() {
        return unary(dtype);
    }
    let special = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1.5,
        -2.25,
    ];
    let x = |shape: &[usize], seed: u64| {
        let n: usize = shape.iter().product();
        let u = uniform(n, seed);
        let v: Vec<f64> = u
            .iter()
            .enumerate()
            .map(|(i, &r)| {
                if i % 2 == 0 {
                    special[(r * 7.0) as usize % 7]
                } else {
                    4.0 * r - 2.0
                }
            })
            .collect();
        from_f64(&v, shape, dtype)
    };
    unary_shapes(&x)
}

/// isnan/isinf/isfinite/logical_not take every dtype: nothing to reject.
pub fn unary_special_errors() -> Vec<ErrorSample> {
    vec![]
}

/// Binary ops that compute only in floating dtypes and keep them (hypot, logaddexp):
/// general values, the second bounded away from zero; integers are rejected.
pub fn binary_floating(dtype: DType) -> Vec<Sample> {
    binary_nonzero(dtype)
}

pub fn binary_floating_errors() -> Vec<ErrorSample> {
    let mut v = binary_nonzero_errors();
    v.push(err(
        Sample::new(
            "int64 operands",
            vec![vals(&[3], DType::I64, 94), vals(&[3], DType::I64, 95)],
        ),
        ErrorKind::DType,
        "not implemented for 'Long'",
    ));
    v
}

/// Activations: floats in [-4, 4), across every piece of the piecewise ones (hardsigmoid's
/// and hardswish's ±3 included); integers are rejected.
pub fn activation(dtype: DType) -> Vec<Sample> {
    unary_shapes(&|s, seed| make(s, dtype, -4.0, 4.0, seed))
}

pub fn activation_errors() -> Vec<ErrorSample> {
    unary_floating_errors()
}

/// `activation` plus one sample with non-default arguments.
fn activation_with(dtype: DType, args: &[(&'static str, f64)]) -> Vec<Sample> {
    let mut v = activation(dtype);
    let mut s = Sample::new(
        "non-default arguments",
        vec![make(&[3, 4], dtype, -4.0, 4.0, 13)],
    );
    for &(name, value) in args {
        s = s.arg(name, float(value));
    }
    v.push(s);
    v
}

pub fn leaky_relu(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("negative_slope", 0.2)])
}

pub fn leaky_relu_errors() -> Vec<ErrorSample> {
    activation_errors()
}

/// hardtanh; integer dtypes get integer bounds (the kernel converts them to the integer type,
/// which the float64 reference does not) and, for uint8, none below 0.
pub fn hardtanh(dtype: DType) -> Vec<Sample> {
    if dtype == DType::U8 {
        let mut v = vec![Sample::new(
            "[3,4] bounds 1, 3",
            vec![make(&[3, 4], dtype, 0.0, 6.0, 13)],
        )
        .arg("min_val", float(1.0))
        .arg("max_val", float(3.0))];
        v.push(
            Sample::new("[5] relu6 bounds", vec![make(&[5], dtype, 0.0, 9.0, 14)])
                .arg("min_val", float(0.0))
                .arg("max_val", float(6.0)),
        );
        for (name, shape) in [("0-d", &[][..]), ("[0]", &[0][..])] {
            v.push(
                Sample::new(name, vec![make(shape, dtype, 0.0, 6.0, 15)])
                    .arg("min_val", float(1.0))
                    .arg("max_val", float(3.0))
                    .edge(),
            );
        }
        return v;
    }
    if !dtype.is_floating_point() {
        return activation_with(dtype, &[("min_val", -2.0), ("max_val", 3.0)]);
    }
    activation_with(dtype, &[("min_val", -0.5), ("max_val", 1.5)])
}

pub fn hardtanh_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("bool input", vec![vals(&[3], DType::Bool, 112)]),
            ErrorKind::DType,
            "Bool inputs not supported for hardtanh",
        ),
        err(
            Sample::new("min_val > max_val", vec![vals(&[3], DType::F32, 113)])
                .arg("min_val", float(2.0))
                .arg("max_val", float(1.0)),
            ErrorKind::Value,
            "min_val cannot be greater than max_val",
        ),
    ]
}

/// relu6: `activation`'s values; integers too.
pub fn relu6(dtype: DType) -> Vec<Sample> {
    activation(dtype)
}

pub fn relu6_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("bool input", vec![vals(&[3], DType::Bool, 114)]),
        ErrorKind::DType,
        "Bool inputs not supported for hardtanh",
    )]
}

pub fn elu(dtype: DType) -> Vec<Sample> {
    activation_with(
        dtype,
        &[("alpha", 0.5), ("scale", 1.5), ("input_scale", 2.0)],
    )
}

pub fn elu_errors() -> Vec<ErrorSample> {
    activation_errors()
}

/// softplus; the extra sample's threshold (1) falls inside the values, so both branches run.
pub fn softplus(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("beta", 2.0), ("threshold", 1.0)])
}

pub fn softplus_errors() -> Vec<ErrorSample> {
    activation_errors()
}

pub fn celu(dtype: DType) -> Vec<Sample> {
    activation_with(dtype, &[("alpha", 0.5)])
}

pub fn celu_errors() -> Vec<ErrorSample> {
    let mut v = activation_errors();
    v.push(err(
        Sample::new("alpha = 0", vec![make(&[3], DType::F32, -1.0, 1.0, 14)])
            .arg("alpha", float(0.0)),
        ErrorKind::Value,
        "ZeroDivisionError",
    ));
    v
}

/// gelu, exact and tanh-approximated, on [-3, 3).
pub fn gelu(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| make(s, dtype, -3.0, 3.0, seed);
    vec![
        Sample::new("2-d, approximate='none'", vec![x(&[3, 4], 1)])
            .arg("approximate", Arg::Str("none")),
        Sample::new("2-d, approximate='tanh'", vec![x(&[3, 4], 2)])
            .arg("approximate", Arg::Str("tanh")),
        Sample::new("3-d, default approximate", vec![x(&[2, 3, 4], 3)]),
        Sample::new("1-d, approximate='tanh'", vec![x(&[7], 4)])
            .arg("approximate", Arg::Str("tanh")),
        Sample::new("0-d, approximate='tanh'", vec![x(&[], 5)])
            .arg("approximate", Arg::Str("tanh"))
            .edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 6)]).edge(),
    ]
}

pub fn gelu_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("approximate='fast'", vec![vals(&[3], DType::F32, 112)])
                .arg("approximate", Arg::Str("fast")),
            ErrorKind::Value,
            "approximate argument must be either none or tanh, got 'fast'",
        ),
        err(
            Sample::new("int64 input", vec![vals(&[3], DType::I64, 113)]),
            ErrorKind::DType,
            "\"gelu\" not implemented for 'Long'",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Dtype conversion
// ---------------------------------------------------------------------------------------

/// to(dtype) from the test dtype to f64, i64, bool, f32, f16 and i32. Float inputs are
/// non-integers of both signs (truncation toward zero); the bool target sample includes
/// zeros. The first three targets (f64, i64, bool) give float64 gradcheck exact outputs
/// (no float32 rounding in the finite differences).
pub fn to_dtype(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| ranged(s, dtype, (-3.0, 3.0), (-4, 5), seed);
    let with_zeros = |s: &[usize], seed| {
        discrete(
            s,
            dtype,
            -4,
            5,
            if dtype.is_floating_point() { 0.5 } else { 1.0 },
            seed,
        )
    };
    let to = |d: DType| Arg::DType(d);
    vec![
        Sample::new("to float64", vec![x(&[3, 4], 1)]).arg("dtype", to(DType::F64)),
        Sample::new("to int64 (truncates)", vec![x(&[2, 3, 4], 2)]).arg("dtype", to(DType::I64)),
        Sample::new("to bool (zeros included)", vec![with_zeros(&[3, 4], 3)])
            .arg("dtype", to(DType::Bool)),
        Sample::new("to float32", vec![x(&[3, 4], 4)]).arg("dtype", to(DType::F32)),
        Sample::new("to float16", vec![x(&[7], 5)]).arg("dtype", to(DType::F16)),
        Sample::new("to int32", vec![x(&[2, 3], 6)]).arg("dtype", to(DType::I32)),
        Sample::new("to the same dtype", vec![x(&[2, 3], 7)]).arg("dtype", to(dtype)),
        Sample::new("0-d to float32", vec![x(&[], 8)])
            .arg("dtype", to(DType::F32))
            .edge(),
        Sample::new("empty [0,3] to int64", vec![x(&[0, 3], 9)])
            .arg("dtype", to(DType::I64))
            .edge(),
    ]
}

/// Every dtype converts to every dtype: nothing to reject.
pub fn to_dtype_errors() -> Vec<ErrorSample> {
    vec![]
}

/// to(device): the harness moves samples to the device under test, so `cpu` here means
/// "the device the input is on" only on the CPU run; both directions are covered.
pub fn to_device(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| ranged(s, dtype, (-3.0, 3.0), (-4, 5), seed);
    let to = |d: Device| Arg::Device(d);
    vec![
        Sample::new("to cpu", vec![x(&[3, 4], 1)]).arg("device", to(Device::Cpu)),
        Sample::new("0-d to cpu", vec![x(&[], 2)])
            .arg("device", to(Device::Cpu))
            .edge(),
        Sample::new("empty [0,3] to cpu", vec![x(&[0, 3], 3)])
            .arg("device", to(Device::Cpu))
            .edge(),
    ]
}

/// No machine has 65 GPUs: the device ordinal is rejected with or without CUDA.
pub fn to_device_errors() -> Vec<ErrorSample> {
    vec![ErrorSample {
        sample: Sample::new("to cuda:64", vec![Tensor::from([1f32, 2.])])
            .arg("device", Arg::Device(Device::Cuda(64))),
        kind: ErrorKind::Device,
        message: "cannot use device cuda:64",
    }]
}

// ---------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------

/// sum() / mean(): whole-tensor reductions, once with an explicit float64 `dtype`.
pub fn reduce_all(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]),
        Sample::new("1-d [7]", vec![x(&[7], 3)]),
        Sample::new("dtype=float64", vec![x(&[3, 4], 4)])
            .arg("dtype", Arg::OptDType(Some(DType::F64))),
        Sample::new("0-d", vec![x(&[], 5)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 6)]).edge(),
    ]
}

/// sum(dtype=bool) has no kernel and mean(dtype=bool) cannot infer a float dtype; the two
/// messages share only the dtype's name.
pub fn reduce_all_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("dtype=bool", vec![vals(&[3], DType::F32, 114)])
            .arg("dtype", Arg::OptDType(Some(DType::Bool))),
        ErrorKind::DType,
        "Bool",
    )]
}

/// sum(dim) / mean(dim): one dim, two dims, negative dims, all dims (`[]`), keepdim both
/// ways, and an explicit float64 `dtype`.
pub fn reduce_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let kd = |b: bool| Arg::Bool(b);
    vec![
        Sample::new("[3,4] dim [1]", vec![x(&[3, 4], 1)]).arg("dim", ints(&[1])),
        Sample::new("[3,4] dim [0] keepdim", vec![x(&[3, 4], 2)])
            .arg("dim", ints(&[0]))
            .arg("keepdim", kd(true)),
        Sample::new("[2,3,4] dims [0,2]", vec![x(&[2, 3, 4], 3)])
            .arg("dim", ints(&[0, 2]))
            .arg("keepdim", kd(false)),
        Sample::new("[2,3,4] dim [-1] keepdim", vec![x(&[2, 3, 4], 4)])
            .arg("dim", ints(&[-1]))
            .arg("keepdim", kd(true)),
        Sample::new("[2,3,4] dims [1,-1] keepdim", vec![x(&[2, 3, 4], 5)])
            .arg("dim", ints(&[1, -1]))
            .arg("keepdim", kd(true)),
        Sample::new("[2,3,4] dims [] (all)", vec![x(&[2, 3, 4], 6)]).arg("dim", ints(&[])),
        Sample::new("[3,4] dim [1] dtype=float64", vec![x(&[3, 4], 7)])
            .arg("dim", ints(&[1]))
            .arg("dtype", Arg::OptDType(Some(DType::F64))),
        Sample::new("0-d dim [0]", vec![x(&[], 8)])
            .arg("dim", ints(&[0]))
            .edge(),
        Sample::new("0-d dim [-1] keepdim", vec![x(&[], 9)])
            .arg("dim", ints(&[-1]))
            .arg("keepdim", kd(true))
            .edge(),
        Sample::new("empty [0,3] dim [1]", vec![x(&[0, 3], 10)])
            .arg("dim", ints(&[1]))
            .edge(),
        Sample::new(
            "empty [0,3] dim [0] (reduces an empty dim)",
            vec![x(&[0, 3], 11)],
        )
        .arg("dim", ints(&[0]))
        .edge(),
    ]
}

pub fn reduce_dim_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 115);
    vec![
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()]).arg("dim", ints(&[2])),
            ErrorKind::Index,
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
        ),
        err(
            Sample::new("repeated dim", vec![x()]).arg("dim", ints(&[0, -2])),
            ErrorKind::Shape,
            "dim 0 appears multiple times in the list of dims",
        ),
    ]
}

/// max() / min(): pairwise distinct values (ties would make the gradient ambiguous).
pub fn reduce_all_nonempty(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("3-d [2,3,4]", vec![x(&[2, 3, 4], 2)]),
        Sample::new("1-d [7]", vec![x(&[7], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn reduce_all_nonempty_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("empty [0,3]", vec![vals(&[0, 3], DType::F32, 116)]),
        ErrorKind::Shape,
        "Expected reduction dim to be specified for input.numel() == 0",
    )]
}

/// max(dim) / min(dim): distinct values, several dims, keepdim both ways.
pub fn reduce_one_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[3,4] dim 0 keepdim", vec![x(&[3, 4], 2)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(-1)),
        Sample::new("[2,3,4] dim 1 keepdim", vec![x(&[2, 3, 4], 4)])
            .arg("dim", Arg::Int(1))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[7] dim 0", vec![x(&[7], 5)]).arg("dim", Arg::Int(0)),
        Sample::new("0-d dim 0", vec![x(&[], 6)])
            .arg("dim", Arg::Int(0))
            .edge(),
        Sample::new("0-d dim -1 keepdim", vec![x(&[], 7)])
            .arg("dim", Arg::Int(-1))
            .arg("keepdim", Arg::Bool(true))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 8)])
            .arg("dim", Arg::Int(1))
            .edge(),
    ]
}

pub fn reduce_one_dim_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "reducing a zero-size dim",
                vec![vals(&[0, 3], DType::F32, 117)],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "Expected reduction dim 0 to have non-zero size.",
        ),
        err(
            Sample::new(
                "dim 2 of a 2-d tensor",
                vec![vals(&[3, 4], DType::F32, 118)],
            )
            .arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// argmax / argmin: distinct values, over the flattened tensor (`dim` None) and along dims.
pub fn reduce_arg(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,4] flattened", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 2)]).arg("dim", opt_int(Some(1))),
        Sample::new("[2,3,4] dim -1 keepdim", vec![x(&[2, 3, 4], 3)])
            .arg("dim", opt_int(Some(-1)))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,4] flattened keepdim", vec![x(&[3, 4], 4)]).arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] dim 0", vec![x(&[2, 3, 4], 5)]).arg("dim", opt_int(Some(0))),
        Sample::new("0-d flattened", vec![x(&[], 6)]).edge(),
        Sample::new("0-d dim 0", vec![x(&[], 7)])
            .arg("dim", opt_int(Some(0)))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 8)])
            .arg("dim", opt_int(Some(1)))
            .edge(),
    ]
}

pub fn reduce_arg_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "empty [0,3] flattened",
                vec![vals(&[0, 3], DType::F32, 119)],
            ),
            ErrorKind::Shape,
            "Expected reduction dim to be specified for input.numel() == 0.",
        ),
        err(
            Sample::new(
                "dim 2 of a 2-d tensor",
                vec![vals(&[3, 4], DType::F32, 120)],
            )
            .arg("dim", opt_int(Some(2))),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// sum_to_size: target sizes reachable by summing leading and size-1 dims.
pub fn sum_to_size(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] to [1,4]", vec![x(&[3, 4], 1)]).arg("size", ints(&[1, 4])),
        Sample::new("[2,3,4] to [3,1]", vec![x(&[2, 3, 4], 2)]).arg("size", ints(&[3, 1])),
        Sample::new("[3,4] to [4]", vec![x(&[3, 4], 3)]).arg("size", ints(&[4])),
        Sample::new("[2,3,4] to [1,1,1]", vec![x(&[2, 3, 4], 4)]).arg("size", ints(&[1, 1, 1])),
        Sample::new("[3,4] to [3,1]", vec![x(&[3, 4], 5)]).arg("size", ints(&[3, 1])),
        Sample::new("[3,4] to itself", vec![x(&[3, 4], 6)]).arg("size", ints(&[3, 4])),
        Sample::new("[2,3,4] to []", vec![x(&[2, 3, 4], 7)]).arg("size", ints(&[])),
        Sample::new("0-d to []", vec![x(&[], 8)])
            .arg("size", ints(&[]))
            .edge(),
        Sample::new("empty [0,3] to [1,3]", vec![x(&[0, 3], 9)])
            .arg("size", ints(&[1, 3]))
            .edge(),
        Sample::new("empty [0,3] to [3]", vec![x(&[0, 3], 10)])
            .arg("size", ints(&[3]))
            .edge(),
    ]
}

pub fn sum_to_size_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("[3,4] to [2,4]", vec![vals(&[3, 4], DType::F32, 121)])
            .arg("size", ints(&[2, 4])),
        ErrorKind::Shape,
        "size [2, 4] is not expandable to size [3, 4]",
    )]
}

// ---------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------

/// The dims softmax is taken over, on values in [-2, 2).
fn softmax_cases(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[3,4] dim 0", vec![x(&[3, 4], 2)]).arg("dim", Arg::Int(0)),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3)]).arg("dim", Arg::Int(-1)),
        Sample::new("[2,3,4] dim 1", vec![x(&[2, 3, 4], 4)]).arg("dim", Arg::Int(1)),
        Sample::new("[7] dim 0", vec![x(&[7], 5)]).arg("dim", Arg::Int(0)),
        Sample::new("0-d dim 0", vec![x(&[], 6)])
            .arg("dim", Arg::Int(0))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 7)])
            .arg("dim", Arg::Int(1))
            .edge(),
        Sample::new("empty [0,3] dim 0", vec![x(&[0, 3], 8)])
            .arg("dim", Arg::Int(0))
            .edge(),
    ]
}

/// _softmax / _log_softmax(self, dim, half_to_float=false).
pub fn softmax_raw(dtype: DType) -> Vec<Sample> {
    softmax_cases(dtype)
        .into_iter()
        .map(|s| s.arg("half_to_float", Arg::Bool(false)))
        .collect()
}

pub fn softmax_raw_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 122);
    vec![
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()])
                .arg("dim", Arg::Int(2))
                .arg("half_to_float", Arg::Bool(false)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("half_to_float on CPU", vec![x()])
                .arg("dim", Arg::Int(1))
                .arg("half_to_float", Arg::Bool(true)),
            ErrorKind::DType,
            "with half to float conversion is not supported on CPU",
        ),
    ]
}

/// softmax / log_softmax(self, dim, dtype=None), plus one sample with dtype=float64.
pub fn softmax(dtype: DType) -> Vec<Sample> {
    let mut v = softmax_cases(dtype);
    v.push(
        Sample::new("[3,4] dim 1 dtype=float64", vec![vals(&[3, 4], dtype, 9)])
            .arg("dim", Arg::Int(1))
            .arg("dtype", Arg::OptDType(Some(DType::F64))),
    );
    v
}

pub fn softmax_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 123);
    vec![
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()]).arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("dtype=int64", vec![x()])
                .arg("dim", Arg::Int(1))
                .arg("dtype", Arg::OptDType(Some(DType::I64))),
            ErrorKind::DType,
            "not implemented for 'Long'",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Linear algebra
// ---------------------------------------------------------------------------------------

fn two(a: &[usize], b: &[usize], dtype: DType, seed: u64) -> Vec<Tensor> {
    vec![vals(a, dtype, seed), vals(b, dtype, seed + 1)]
}

/// mm: [n,k] x [k,m]; edges with k = 0, n = 0 and m = 0.
pub fn mm(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3,4] x [4,2]", two(&[3, 4], &[4, 2], dtype, 1)),
        Sample::new("[2,5] x [5,3]", two(&[2, 5], &[5, 3], dtype, 3)),
        Sample::new("[4,2] x [2,4]", two(&[4, 2], &[2, 4], dtype, 5)),
        Sample::new("[3,3] x [3,3]", two(&[3, 3], &[3, 3], dtype, 7)),
        Sample::new("k = 0: [2,0] x [0,3]", two(&[2, 0], &[0, 3], dtype, 9)).edge(),
        Sample::new("n = 0: [0,3] x [3,2]", two(&[0, 3], &[3, 2], dtype, 11)).edge(),
        Sample::new("m = 0: [2,3] x [3,0]", two(&[2, 3], &[3, 0], dtype, 13)).edge(),
    ]
}

pub fn mm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("[2,3] x [4,5]", two(&[2, 3], &[4, 5], f, 124)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        err(
            Sample::new("3-d self", two(&[2, 3, 4], &[4, 5], f, 126)),
            ErrorKind::Shape,
            "self must be a matrix",
        ),
        err(
            Sample::new(
                "float32 x float64",
                vec![vals(&[2, 3], f, 128), vals(&[3, 2], DType::F64, 129)],
            ),
            ErrorKind::DType,
            "expected m1 and m2 to have the same dtype, but got: Float != Double",
        ),
    ]
}

/// bmm: [b,n,k] x [b,k,m]; edges with b = 0 and k = 0.
pub fn bmm(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[2,3,4] x [2,4,2]", two(&[2, 3, 4], &[2, 4, 2], dtype, 1)),
        Sample::new("[3,2,2] x [3,2,3]", two(&[3, 2, 2], &[3, 2, 3], dtype, 3)),
        Sample::new("[1,2,3] x [1,3,2]", two(&[1, 2, 3], &[1, 3, 2], dtype, 5)),
        Sample::new(
            "b = 0: [0,2,3] x [0,3,2]",
            two(&[0, 2, 3], &[0, 3, 2], dtype, 7),
        )
        .edge(),
        Sample::new(
            "k = 0: [2,3,0] x [2,0,2]",
            two(&[2, 3, 0], &[2, 0, 2], dtype, 9),
        )
        .edge(),
    ]
}

pub fn bmm_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(Sample::new("2-d self", two(&[2, 3], &[2, 3, 4], f, 130)), ErrorKind::Shape, "batch1 must be a 3D tensor"),
        err(
            Sample::new("[2,3,4] x [2,5,2]", two(&[2, 3, 4], &[2, 5, 2], f, 132)),
            ErrorKind::Shape, "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5].",
        ),
    ]
}

/// matmul: every rank case — dot, matrix-vector, vector-matrix, matrix-matrix, batched with
/// broadcast batch dims, vector with a batch, 4-d broadcast.
pub fn matmul(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("2-d x 2-d [3,4] x [4,2]", two(&[3, 4], &[4, 2], dtype, 1)),
        Sample::new(
            "3-d x 2-d [2,3,4] x [4,2] (batch broadcast)",
            two(&[2, 3, 4], &[4, 2], dtype, 3),
        ),
        Sample::new("1-d x 2-d [4] x [4,3]", two(&[4], &[4, 3], dtype, 5)),
        Sample::new("1-d x 1-d [4] x [4]", two(&[4], &[4], dtype, 7)),
        Sample::new("2-d x 1-d [3,4] x [4]", two(&[3, 4], &[4], dtype, 9)),
        Sample::new("1-d x 3-d [4] x [2,4,3]", two(&[4], &[2, 4, 3], dtype, 11)),
        Sample::new("3-d x 1-d [2,3,4] x [4]", two(&[2, 3, 4], &[4], dtype, 13)),
        Sample::new(
            "4-d x 3-d [2,1,2,3] x [3,3,2]",
            two(&[2, 1, 2, 3], &[3, 3, 2], dtype, 15),
        ),
        Sample::new(
            "3-d x 3-d [2,2,3] x [2,3,2]",
            two(&[2, 2, 3], &[2, 3, 2], dtype, 17),
        ),
        Sample::new("empty dot [0] x [0]", two(&[0], &[0], dtype, 19)).edge(),
        Sample::new("empty rows [0,3] x [3,2]", two(&[0, 3], &[3, 2], dtype, 21)).edge(),
        Sample::new(
            "empty batch [0,2,3] x [3,2]",
            two(&[0, 2, 3], &[3, 2], dtype, 23),
        )
        .edge(),
    ]
}

pub fn matmul_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("0-d operand", two(&[], &[3], f, 134)),
            ErrorKind::Shape,
            "both arguments to matmul need to be at least 1D",
        ),
        err(
            Sample::new("[2,3] x [4,5]", two(&[2, 3], &[4, 5], f, 136)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
        err(
            Sample::new("[3] x [4]", two(&[3], &[4], f, 138)),
            ErrorKind::Shape,
            "inconsistent tensor size",
        ),
        err(
            Sample::new("[2,2,3] x [2,4,5]", two(&[2, 2, 3], &[2, 4, 5], f, 140)),
            ErrorKind::Shape,
            "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Joining and indexing
// ---------------------------------------------------------------------------------------

fn list(shapes: &[&[usize]], dtype: DType, seed: u64) -> Vec<Tensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(i, s)| vals(s, dtype, seed + i as u64))
        .collect()
}

/// cat: 2-3 tensors along dims 0, 1, -1, -2; edges with a zero size along the cat dim and
/// PyTorch's legacy skipped 1-d empty tensor.
pub fn cat(dtype: DType) -> Vec<Sample> {
    let l = |shapes: &[&[usize]], seed| vec![list(shapes, dtype, seed)];
    vec![
        Sample::with_lists(
            "[2,3] + [4,3] along the default dim 0",
            l(&[&[2, 3], &[4, 3]], 1),
        ),
        Sample::with_lists(
            "[2,3] + [2,2] + [2,4] along dim 1",
            l(&[&[2, 3], &[2, 2], &[2, 4]], 3),
        )
        .arg("dim", Arg::Int(1)),
        Sample::with_lists(
            "[2,3,2] + [2,3,3] along dim -1",
            l(&[&[2, 3, 2], &[2, 3, 3]], 6),
        )
        .arg("dim", Arg::Int(-1)),
        Sample::with_lists(
            "[2,2,3] + [2,3,3] along dim 1",
            l(&[&[2, 2, 3], &[2, 3, 3]], 8),
        )
        .arg("dim", Arg::Int(1)),
        Sample::with_lists("1-d [3] + [2] + [4]", l(&[&[3], &[2], &[4]], 10)),
        Sample::with_lists("[2,3] + [3,3] along dim -2", l(&[&[2, 3], &[3, 3]], 13))
            .arg("dim", Arg::Int(-2)),
        Sample::with_lists(
            "zero size along the cat dim: [2,3] + [0,3]",
            l(&[&[2, 3], &[0, 3]], 15),
        )
        .edge(),
        Sample::with_lists(
            "all empty: [0,3] + [0,2] along dim 1",
            l(&[&[0, 3], &[0, 2]], 17),
        )
        .arg("dim", Arg::Int(1))
        .edge(),
        Sample::with_lists(
            "legacy 1-d empty input is skipped: [2,3] + [0]",
            l(&[&[2, 3], &[0]], 19),
        )
        .arg("dim", Arg::Int(1))
        .edge(),
    ]
}

pub fn cat_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::with_lists("[2,3] + [2,4] along dim 0", vec![list(&[&[2, 3], &[2, 4]], f, 142)]),
            ErrorKind::Shape, "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list.",
        ),
        err(Sample::with_lists("0-d input", vec![list(&[&[], &[]], f, 144)]), ErrorKind::Shape, "zero-dimensional tensor (at position 0) cannot be concatenated"),
        err(Sample::with_lists("empty list", vec![vec![]]), ErrorKind::Shape, "expected a non-empty list of Tensors"),
        err(Sample::with_lists("dim 2 of 2-d inputs", vec![list(&[&[2, 3], &[2, 3]], f, 146)]).arg("dim", Arg::Int(2)), ErrorKind::Index, "Dimension out of range"),
        err(Sample::with_lists("different ranks", vec![list(&[&[2, 2], &[2, 2, 2]], f, 148)]), ErrorKind::Shape, "Tensors must have same number of dimensions: got 2 and 3"),
    ]
}

/// stack: 2-3 equal-shape tensors along dims 0, 1, -1 (the new last dim); 0-d and empty
/// inputs as edges.
pub fn stack(dtype: DType) -> Vec<Sample> {
    let l = |shapes: &[&[usize]], seed| vec![list(shapes, dtype, seed)];
    vec![
        Sample::with_lists("two [3,4] along dim 0", l(&[&[3, 4], &[3, 4]], 1)),
        Sample::with_lists(
            "three [3,4] along dim 1",
            l(&[&[3, 4], &[3, 4], &[3, 4]], 3),
        )
        .arg("dim", Arg::Int(1)),
        Sample::with_lists("two [2,3] along dim -1", l(&[&[2, 3], &[2, 3]], 6))
            .arg("dim", Arg::Int(-1)),
        Sample::with_lists("two [5] along dim 1", l(&[&[5], &[5]], 8)).arg("dim", Arg::Int(1)),
        Sample::with_lists("two [2,3,2] along dim 2", l(&[&[2, 3, 2], &[2, 3, 2]], 10))
            .arg("dim", Arg::Int(2)),
        Sample::with_lists("two 0-d", l(&[&[], &[]], 12)).edge(),
        Sample::with_lists("two empty [0,3] along dim 1", l(&[&[0, 3], &[0, 3]], 14))
            .arg("dim", Arg::Int(1))
            .edge(),
    ]
}

pub fn stack_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::with_lists("[2,3] and [2,4]", vec![list(&[&[2, 3], &[2, 4]], f, 150)]),
            ErrorKind::Shape,
            "stack expects each tensor to be equal size",
        ),
        err(
            Sample::with_lists("empty list", vec![vec![]]),
            ErrorKind::Shape,
            "stack expects a non-empty TensorList",
        ),
        err(
            Sample::with_lists("dim 3 for 1-d inputs", vec![list(&[&[2], &[2]], f, 152)])
                .arg("dim", Arg::Int(3)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// index_select(self, dim, index): int64 indices with repeats; empty index, empty self and
/// 0-d self as edges.
pub fn index_select(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new(
            "[3,4] dim 0 index [2,0,2]",
            vec![x(&[3, 4], 1), index(&[2, 0, 2], &[3])],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "[3,4] dim 1 index [3,1]",
            vec![x(&[3, 4], 2), index(&[3, 1], &[2])],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "[2,3,4] dim -1 index [1,0,3]",
            vec![x(&[2, 3, 4], 3), index(&[1, 0, 3], &[3])],
        )
        .arg("dim", dim(-1)),
        Sample::new(
            "[2,3,4] dim 1 index [2]",
            vec![x(&[2, 3, 4], 4), index(&[2], &[1])],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "[5] dim 0 index [4,0,1,1]",
            vec![x(&[5], 5), index(&[4, 0, 1, 1], &[4])],
        )
        .arg("dim", dim(0)),
        Sample::new("empty index", vec![x(&[3, 4], 6), index(&[], &[0])])
            .arg("dim", dim(0))
            .edge(),
        Sample::new(
            "empty self [0,3] dim 1",
            vec![x(&[0, 3], 7), index(&[2, 0], &[2])],
        )
        .arg("dim", dim(1))
        .edge(),
        Sample::new("0-d self", vec![x(&[], 8), index(&[0], &[1])])
            .arg("dim", dim(0))
            .edge(),
    ]
}

pub fn index_select_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 154);
    vec![
        err(
            Sample::new("index 3 of size 3", vec![x(), index(&[0, 3], &[2])])
                .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "index out of range in self",
        ),
        err(
            Sample::new(
                "int16 index",
                vec![x(), make(&[2], DType::I16, 0.0, 3.0, 155)],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::DType,
            "Expected dtype int32/int64 for index",
        ),
        err(
            Sample::new("2-d index", vec![x(), index(&[0, 1, 1, 0], &[2, 2])])
                .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "Index is supposed to be a vector",
        ),
        err(
            Sample::new("dim 2", vec![x(), index(&[0], &[1])]).arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// gather(self, dim, index): index of self's rank, no larger than self outside `dim`.
pub fn gather(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new(
            "[3,4] dim 0 index [2,4]",
            vec![x(&[3, 4], 1), rand_index(&[2, 4], 3, 2)],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "[3,4] dim 1 index [3,2]",
            vec![x(&[3, 4], 3), rand_index(&[3, 2], 4, 4)],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "[2,3,4] dim -1 index [2,3,3]",
            vec![x(&[2, 3, 4], 5), rand_index(&[2, 3, 3], 4, 6)],
        )
        .arg("dim", dim(-1)),
        Sample::new(
            "[3,4] dim 1 index [2,5] (smaller outside dim, larger along it)",
            vec![x(&[3, 4], 7), rand_index(&[2, 5], 4, 8)],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "[2,3,4] dim 1 index [2,2,3]",
            vec![x(&[2, 3, 4], 9), rand_index(&[2, 2, 3], 3, 10)],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "empty index [0,4]",
            vec![x(&[3, 4], 11), index(&[], &[0, 4])],
        )
        .arg("dim", dim(0))
        .edge(),
        Sample::new("0-d self and index", vec![x(&[], 12), index(&[0], &[])])
            .arg("dim", dim(0))
            .edge(),
    ]
}

pub fn gather_errors() -> Vec<ErrorSample> {
    let x = || vals(&[3, 4], DType::F32, 156);
    vec![
        err(
            Sample::new(
                "index 3 along a dim of size 3",
                vec![x(), index(&[0, 3, 1, 2], &[2, 2])],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "index 3 is out of bounds for dimension 0 with size 3",
        ),
        err(
            Sample::new("1-d index for 2-d self", vec![x(), index(&[0, 1], &[2])])
                .arg("dim", Arg::Int(0)),
            ErrorKind::Shape,
            "Index tensor must have the same number of dimensions as input tensor",
        ),
        err(
            Sample::new(
                "int16 index",
                vec![x(), make(&[2, 2], DType::I16, 0.0, 3.0, 157)],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::DType,
            "Expected dtype int32/int64 for index",
        ),
    ]
}

/// scatter_add(self, dim, index, src): repeated indices accumulate (float values on a grid
/// of quarters, see [`quarters`]). The first three
/// samples have `src` of the index's shape (their gradient is the index-shaped gather); a
/// later one has a larger `src`, of which only the indexed part is read.
pub fn scatter_add(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| quarters(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new(
            "[3,4] dim 0 index [2,4]",
            vec![x(&[3, 4], 1), rand_index(&[2, 4], 3, 2), x(&[2, 4], 3)],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "[3,4] dim 1 index [3,2]",
            vec![x(&[3, 4], 4), rand_index(&[3, 2], 4, 5), x(&[3, 2], 6)],
        )
        .arg("dim", dim(1)),
        Sample::new(
            "[2,3,4] dim -1 index [2,3,2]",
            vec![
                x(&[2, 3, 4], 7),
                rand_index(&[2, 3, 2], 4, 8),
                x(&[2, 3, 2], 9),
            ],
        )
        .arg("dim", dim(-1)),
        Sample::new(
            "src [3,4] larger than index [2,3]",
            vec![x(&[3, 4], 10), rand_index(&[2, 3], 3, 11), x(&[3, 4], 12)],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "[4,3] dim 0 index [6,3] (many repeats)",
            vec![x(&[4, 3], 13), rand_index(&[6, 3], 4, 14), x(&[6, 3], 15)],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "empty index [0,4]",
            vec![x(&[3, 4], 16), index(&[], &[0, 4]), x(&[0, 4], 17)],
        )
        .arg("dim", dim(0))
        .edge(),
        Sample::new(
            "0-d self, index and src",
            vec![x(&[], 18), index(&[0], &[]), x(&[], 19)],
        )
        .arg("dim", dim(0))
        .edge(),
    ]
}

pub fn scatter_add_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "index 3 along a dim of size 3",
                vec![
                    vals(&[3, 4], f, 158),
                    index(&[0, 3], &[1, 2]),
                    vals(&[1, 2], f, 159),
                ],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "index 3 is out of bounds for dimension 0 with size 3",
        ),
        err(
            Sample::new(
                "1-d index for 2-d self",
                vec![
                    vals(&[3, 4], f, 160),
                    index(&[0, 1], &[2]),
                    vals(&[2], f, 161),
                ],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Shape,
            "Index tensor must have the same number of dimensions as self tensor",
        ),
    ]
}

/// index_add(self, dim, index, source, alpha): repeated indices accumulate (float values on
/// a grid of quarters, see [`quarters`]); alpha given on some samples (default 1 otherwise).
pub fn index_add(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| quarters(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    let alpha = if dtype.is_floating_point() {
        float(-0.5)
    } else {
        int(2)
    };
    vec![
        Sample::new(
            "[3,4] dim 0 index [0,2,0]",
            vec![x(&[3, 4], 1), index(&[0, 2, 0], &[3]), x(&[3, 4], 2)],
        )
        .arg("dim", dim(0)),
        Sample::new(
            "[3,4] dim 1 index [1,3] with alpha",
            vec![x(&[3, 4], 3), index(&[1, 3], &[2]), x(&[3, 2], 4)],
        )
        .arg("dim", dim(1))
        .arg("alpha", alpha.clone()),
        Sample::new(
            "[2,3,4] dim -1 index [3,0,3]",
            vec![x(&[2, 3, 4], 5), index(&[3, 0, 3], &[3]), x(&[2, 3, 3], 6)],
        )
        .arg("dim", dim(-1)),
        Sample::new(
            "[5] dim 0 index [4,1] with alpha",
            vec![x(&[5], 7), index(&[4, 1], &[2]), x(&[2], 8)],
        )
        .arg("dim", dim(0))
        .arg("alpha", alpha),
        Sample::new(
            "empty index",
            vec![x(&[3, 4], 9), index(&[], &[0]), x(&[0, 4], 10)],
        )
        .arg("dim", dim(0))
        .edge(),
        Sample::new(
            "empty self [0,3] dim 1",
            vec![x(&[0, 3], 11), index(&[2, 0], &[2]), x(&[0, 2], 12)],
        )
        .arg("dim", dim(1))
        .edge(),
    ]
}

pub fn index_add_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new(
                "index 3 along a dim of size 3",
                vec![
                    vals(&[3, 4], f, 162),
                    index(&[3], &[1]),
                    vals(&[1, 4], f, 163),
                ],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Index,
            "index out of range in self",
        ),
        err(
            Sample::new(
                "2 indices for 3 source rows",
                vec![
                    vals(&[3, 4], f, 164),
                    index(&[0, 1], &[2]),
                    vals(&[3, 4], f, 165),
                ],
            )
            .arg("dim", Arg::Int(0)),
            ErrorKind::Shape,
            "Number of indices (2) should be equal to source.size(dim) (3)",
        ),
    ]
}

// ---------------------------------------------------------------------------------------
// Views. Regular samples must also be valid on the non-contiguous copy the harness makes
// (last two dims transposed in memory; 1-d tensors with stride 2).
// ---------------------------------------------------------------------------------------

/// view(size): splits and merges that stay expressible on the transposed-in-memory copy.
pub fn view(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let size = |v: &[i64]| ints(v);
    vec![
        Sample::new("[2,3,4] to [2,3,2,2]", vec![x(&[2, 3, 4], 1)])
            .arg("size", size(&[2, 3, 2, 2])),
        Sample::new("[12] to [3,4]", vec![x(&[12], 2)]).arg("size", size(&[3, 4])),
        Sample::new("[4,6] to [2,2,6]", vec![x(&[4, 6], 3)]).arg("size", size(&[2, 2, 6])),
        Sample::new("[2,3,4] to [1,2,3,4]", vec![x(&[2, 3, 4], 4)])
            .arg("size", size(&[1, 2, 3, 4])),
        Sample::new("[2,3,4] to [-1,3,4]", vec![x(&[2, 3, 4], 5)]).arg("size", size(&[-1, 3, 4])),
        Sample::new("[12] to [2,-1]", vec![x(&[12], 6)]).arg("size", size(&[2, -1])),
        Sample::new("0-d to [1]", vec![x(&[], 7)])
            .arg("size", size(&[1]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 8)])
            .arg("size", size(&[]))
            .edge(),
        Sample::new("empty [0,3] to [3,0]", vec![x(&[0, 3], 9)])
            .arg("size", size(&[3, 0]))
            .edge(),
        Sample::new("empty [0,3] to [-1]", vec![x(&[0, 3], 10)])
            .arg("size", size(&[-1]))
            .edge(),
    ]
}

pub fn view_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("6 elements to [5]", vec![vals(&[2, 3], f, 166)]).arg("size", ints(&[5])),
            ErrorKind::Shape,
            "shape '[5]' is invalid for input of size 6",
        ),
        err(
            Sample::new(
                "transposed [3,4] to [12]",
                vec![noncontiguous(&vals(&[3, 4], f, 167))],
            )
            .arg("size", ints(&[12])),
            ErrorKind::Shape,
            "view size is not compatible with input tensor's size and stride",
        ),
    ]
}

/// reshape(shape): anything with the right number of elements (a copy when not a view).
pub fn reshape(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let shape = |v: &[i64]| ints(v);
    vec![
        Sample::new("[2,3,4] to [6,4]", vec![x(&[2, 3, 4], 1)]).arg("shape", shape(&[6, 4])),
        Sample::new("[3,4] to [12]", vec![x(&[3, 4], 2)]).arg("shape", shape(&[12])),
        Sample::new("[12] to [2,2,3]", vec![x(&[12], 3)]).arg("shape", shape(&[2, 2, 3])),
        Sample::new("[2,3,4] to [4,-1]", vec![x(&[2, 3, 4], 4)]).arg("shape", shape(&[4, -1])),
        Sample::new("[4,6] to [3,8]", vec![x(&[4, 6], 5)]).arg("shape", shape(&[3, 8])),
        Sample::new("0-d to [1]", vec![x(&[], 6)])
            .arg("shape", shape(&[1]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 7)])
            .arg("shape", shape(&[]))
            .edge(),
        Sample::new("empty [0,3] to [3,0]", vec![x(&[0, 3], 8)])
            .arg("shape", shape(&[3, 0]))
            .edge(),
        Sample::new("empty [0,3] to [-1]", vec![x(&[0, 3], 9)])
            .arg("shape", shape(&[-1]))
            .edge(),
    ]
}

pub fn reshape_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3], DType::F32, 168);
    vec![
        err(
            Sample::new("6 elements to [5]", vec![x()]).arg("shape", ints(&[5])),
            ErrorKind::Shape,
            "shape '[5]' is invalid for input of size 6",
        ),
        err(
            Sample::new("two -1", vec![x()]).arg("shape", ints(&[-1, -1])),
            ErrorKind::Shape,
            "only one dimension can be inferred",
        ),
    ]
}

/// permute(dims), including negative dims and the identity.
pub fn permute(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] dims [2,0,1]", vec![x(&[2, 3, 4], 1)]).arg("dims", ints(&[2, 0, 1])),
        Sample::new("[3,4] dims [1,0]", vec![x(&[3, 4], 2)]).arg("dims", ints(&[1, 0])),
        Sample::new("[2,3,4] dims [-1,0,1]", vec![x(&[2, 3, 4], 3)]).arg("dims", ints(&[-1, 0, 1])),
        Sample::new("[2,3,4] identity", vec![x(&[2, 3, 4], 4)]).arg("dims", ints(&[0, 1, 2])),
        Sample::new("0-d dims []", vec![x(&[], 5)])
            .arg("dims", ints(&[]))
            .edge(),
        Sample::new("empty [0,3] dims [1,0]", vec![x(&[0, 3], 6)])
            .arg("dims", ints(&[1, 0]))
            .edge(),
    ]
}

pub fn permute_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3], DType::F32, 169);
    vec![
        err(
            Sample::new("1 dim for a 2-d tensor", vec![x()]).arg("dims", ints(&[0])),
            ErrorKind::Shape,
            "number of dims don't match in permute",
        ),
        err(
            Sample::new("repeated dim", vec![x()]).arg("dims", ints(&[0, -2])),
            ErrorKind::Shape,
            "repeated dim in permute",
        ),
    ]
}

/// transpose(dim0, dim1), including negative and equal dims.
pub fn transpose(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let d = |a: i64, b: i64, s: Sample| s.arg("dim0", Arg::Int(a)).arg("dim1", Arg::Int(b));
    vec![
        d(0, 1, Sample::new("[3,4] (0,1)", vec![x(&[3, 4], 1)])),
        d(0, 2, Sample::new("[2,3,4] (0,2)", vec![x(&[2, 3, 4], 2)])),
        d(-1, 1, Sample::new("[2,3,4] (-1,1)", vec![x(&[2, 3, 4], 3)])),
        d(1, 1, Sample::new("[3,4] (1,1)", vec![x(&[3, 4], 4)])),
        d(0, -1, Sample::new("0-d (0,-1)", vec![x(&[], 5)]).edge()),
        d(
            0,
            1,
            Sample::new("empty [0,3] (0,1)", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn transpose_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 2 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 170)],
        )
        .arg("dim0", Arg::Int(0))
        .arg("dim1", Arg::Int(2)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    )]
}

/// t(): 2-d, 1-d and (edge) 0-d and empty inputs.
pub fn matrix_or_less(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("2-d [3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("1-d [5]", vec![x(&[5], 2)]),
        Sample::new("2-d [2,3]", vec![x(&[2, 3], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 5)]).edge(),
        Sample::new("empty [0]", vec![x(&[0], 6)]).edge(),
    ]
}

pub fn matrix_or_less_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("3-d", vec![vals(&[2, 3, 4], DType::F32, 171)]),
        ErrorKind::Shape,
        "t() expects a tensor with <= 2 dimensions, but self is 3D",
    )]
}

/// unsqueeze(dim) for dims from -(n+1) to n.
pub fn unsqueeze(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new("[3,4] dim 0", vec![x(&[3, 4], 1)]).arg("dim", dim(0)),
        Sample::new("[3,4] dim 2 (new last dim)", vec![x(&[3, 4], 2)]).arg("dim", dim(2)),
        Sample::new("[2,3,4] dim 1", vec![x(&[2, 3, 4], 3)]).arg("dim", dim(1)),
        Sample::new("[3,4] dim -1", vec![x(&[3, 4], 4)]).arg("dim", dim(-1)),
        Sample::new("[3,4] dim -3", vec![x(&[3, 4], 5)]).arg("dim", dim(-3)),
        Sample::new("[5] dim -2", vec![x(&[5], 6)]).arg("dim", dim(-2)),
        Sample::new("0-d dim 0", vec![x(&[], 7)])
            .arg("dim", dim(0))
            .edge(),
        Sample::new("0-d dim -1", vec![x(&[], 8)])
            .arg("dim", dim(-1))
            .edge(),
        Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 9)])
            .arg("dim", dim(1))
            .edge(),
    ]
}

pub fn unsqueeze_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 3 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 172)],
        )
        .arg("dim", Arg::Int(3)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    )]
}

/// squeeze(): size-1 dims in leading and middle positions (see the module notes), a
/// one-element tensor, and a tensor with nothing to squeeze.
pub fn squeeze(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,1,3,4]", vec![x(&[2, 1, 3, 4], 1)]),
        Sample::new("[1,3,4]", vec![x(&[1, 3, 4], 2)]),
        Sample::new("[1,2,1,3,2]", vec![x(&[1, 2, 1, 3, 2], 3)]),
        Sample::new("[3,4] (nothing to squeeze)", vec![x(&[3, 4], 4)]),
        Sample::new("[1,1] to 0-d", vec![x(&[1, 1], 5)]),
        Sample::new("0-d", vec![x(&[], 6)]).edge(),
        Sample::new("empty [0,1,3]", vec![x(&[0, 1, 3], 7)]).edge(),
        Sample::new("[3,1] (trailing size-1 dim)", vec![x(&[3, 1], 8)]).edge(),
    ]
}

/// squeeze() accepts every tensor: nothing to reject.
pub fn squeeze_errors() -> Vec<ErrorSample> {
    vec![]
}

/// squeeze(dim): size-1 dims (positive and negative) and no-op dims.
pub fn squeeze_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let dim = |d: i64| Arg::Int(d);
    vec![
        Sample::new("[2,1,3,4] dim 1", vec![x(&[2, 1, 3, 4], 1)]).arg("dim", dim(1)),
        Sample::new("[1,3,4] dim 0", vec![x(&[1, 3, 4], 2)]).arg("dim", dim(0)),
        Sample::new("[2,1,3,4] dim -3", vec![x(&[2, 1, 3, 4], 3)]).arg("dim", dim(-3)),
        Sample::new("[3,4] dim 0 (not size 1: no-op)", vec![x(&[3, 4], 4)]).arg("dim", dim(0)),
        Sample::new("[2,1,3,4] dim -1 (no-op)", vec![x(&[2, 1, 3, 4], 5)]).arg("dim", dim(-1)),
        Sample::new("0-d dim 0", vec![x(&[], 6)])
            .arg("dim", dim(0))
            .edge(),
        Sample::new("0-d dim -1", vec![x(&[], 7)])
            .arg("dim", dim(-1))
            .edge(),
        Sample::new("empty [0,1,3] dim 1", vec![x(&[0, 1, 3], 8)])
            .arg("dim", dim(1))
            .edge(),
    ]
}

pub fn squeeze_dim_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "dim 2 of a 2-d tensor",
            vec![vals(&[3, 4], DType::F32, 173)],
        )
        .arg("dim", Arg::Int(2)),
        ErrorKind::Index,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    )]
}

/// expand(size): new leading dims, size-1 dims broadcast, -1 keeping a size.
pub fn expand(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let size = |v: &[i64]| ints(v);
    vec![
        Sample::new("[4] to [3,4]", vec![x(&[4], 1)]).arg("size", size(&[3, 4])),
        Sample::new("[1,2,3] to [4,2,3]", vec![x(&[1, 2, 3], 2)]).arg("size", size(&[4, 2, 3])),
        Sample::new("[2,1,2,3] to [2,3,2,3]", vec![x(&[2, 1, 2, 3], 3)])
            .arg("size", size(&[2, 3, 2, 3])),
        Sample::new("[1,2,3] to [2,-1,-1]", vec![x(&[1, 2, 3], 4)]).arg("size", size(&[2, -1, -1])),
        Sample::new("[1,1] to [3,4]", vec![x(&[1, 1], 5)]).arg("size", size(&[3, 4])),
        Sample::new("[3,4] to [2,3,4]", vec![x(&[3, 4], 6)]).arg("size", size(&[2, 3, 4])),
        Sample::new("0-d to [2,3]", vec![x(&[], 7)])
            .arg("size", size(&[2, 3]))
            .edge(),
        Sample::new("0-d to []", vec![x(&[], 8)])
            .arg("size", size(&[]))
            .edge(),
        Sample::new("empty [0,3] to [2,0,3]", vec![x(&[0, 3], 9)])
            .arg("size", size(&[2, 0, 3]))
            .edge(),
        Sample::new("[3,1] to [3,4] (trailing size-1 dim)", vec![x(&[3, 1], 10)])
            .arg("size", size(&[3, 4]))
            .edge(),
    ]
}

pub fn expand_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("[3] to [4]", vec![vals(&[3], f, 174)]).arg("size", ints(&[4])),
            ErrorKind::Shape, "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 0",
        ),
        err(
            Sample::new("fewer sizes than dims", vec![vals(&[2, 3], f, 175)]).arg("size", ints(&[3])),
            ErrorKind::Shape, "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)",
        ),
    ]
}

/// narrow(dim, start, length), including a negative start.
pub fn narrow(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let n = |d: i64, st: i64, len: i64, s: Sample| {
        s.arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("length", Arg::Int(len))
    };
    vec![
        n(
            1,
            1,
            3,
            Sample::new("[4,6] dim 1 start 1 length 3", vec![x(&[4, 6], 1)]),
        ),
        n(
            0,
            -3,
            2,
            Sample::new("[4,6] dim 0 start -3 length 2", vec![x(&[4, 6], 2)]),
        ),
        n(
            -1,
            0,
            2,
            Sample::new("[2,3,4] dim -1 start 0 length 2", vec![x(&[2, 3, 4], 3)]),
        ),
        n(
            0,
            2,
            3,
            Sample::new("[5] dim 0 start 2 length 3", vec![x(&[5], 4)]),
        ),
        n(1, 2, 0, Sample::new("length 0", vec![x(&[4, 6], 5)]).edge()),
        n(
            1,
            1,
            2,
            Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn narrow_errors() -> Vec<ErrorSample> {
    let n = |s: Sample| {
        s.arg("dim", Arg::Int(0))
            .arg("start", Arg::Int(0))
            .arg("length", Arg::Int(1))
    };
    vec![
        err(
            Sample::new(
                "start 4 + length 3 > 6",
                vec![vals(&[4, 6], DType::F32, 176)],
            )
            .arg("dim", Arg::Int(1))
            .arg("start", Arg::Int(4))
            .arg("length", Arg::Int(3)),
            ErrorKind::Shape,
            "start (4) + length (3) exceeds dimension size (6).",
        ),
        err(
            n(Sample::new("0-d", vec![vals(&[], DType::F32, 177)])),
            ErrorKind::Shape,
            "narrow() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// select(dim, index), including negative index and a 1-d input (0-d result).
pub fn select(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sel = |d: i64, i: i64, s: Sample| s.arg("dim", Arg::Int(d)).arg("index", Arg::Int(i));
    vec![
        sel(
            0,
            1,
            Sample::new("[4,6] dim 0 index 1", vec![x(&[4, 6], 1)]),
        ),
        sel(
            1,
            -1,
            Sample::new("[4,6] dim 1 index -1", vec![x(&[4, 6], 2)]),
        ),
        sel(
            1,
            2,
            Sample::new("[2,3,4] dim 1 index 2", vec![x(&[2, 3, 4], 3)]),
        ),
        sel(
            0,
            3,
            Sample::new("[5] dim 0 index 3 (0-d result)", vec![x(&[5], 4)]),
        ),
        sel(
            -1,
            0,
            Sample::new("[2,3,4] dim -1 index 0", vec![x(&[2, 3, 4], 5)]),
        ),
        sel(
            1,
            2,
            Sample::new("empty [0,3] dim 1", vec![x(&[0, 3], 6)]).edge(),
        ),
        sel(
            0,
            -1,
            Sample::new("empty [2,0] dim 0", vec![x(&[2, 0], 7)]).edge(),
        ),
    ]
}

pub fn select_errors() -> Vec<ErrorSample> {
    let sel = |d: i64, i: i64, s: Sample| s.arg("dim", Arg::Int(d)).arg("index", Arg::Int(i));
    vec![
        err(
            sel(
                0,
                4,
                Sample::new("index 4 of size 4", vec![vals(&[4, 6], DType::F32, 178)]),
            ),
            ErrorKind::Index,
            "select(): index 4 out of range for tensor of size [4, 6] at dimension 0",
        ),
        err(
            sel(0, 0, Sample::new("0-d", vec![vals(&[], DType::F32, 179)])),
            ErrorKind::Index,
            "select() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// slice(dim, start, end, step): step 2, negative start, end past the size, defaults.
pub fn slice(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let so = |v: i64| Arg::OptInt(Some(v));
    vec![
        Sample::new("[6,4] dim 0 1:5:2", vec![x(&[6, 4], 1)])
            .arg("dim", Arg::Int(0))
            .arg("start", so(1))
            .arg("end", so(5))
            .arg("step", Arg::Int(2)),
        Sample::new("[4,6] dim 1 -3:", vec![x(&[4, 6], 2)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(-3)),
        Sample::new("[2,3,4] dim -1 :3:2", vec![x(&[2, 3, 4], 3)])
            .arg("dim", Arg::Int(-1))
            .arg("end", so(3))
            .arg("step", Arg::Int(2)),
        Sample::new("[5] 0:100 (end clamped)", vec![x(&[5], 4)])
            .arg("start", so(0))
            .arg("end", so(100)),
        Sample::new("[4,6] defaults (everything)", vec![x(&[4, 6], 5)]),
        Sample::new("[4,6] dim 1 -5:-1:3", vec![x(&[4, 6], 6)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(-5))
            .arg("end", so(-1))
            .arg("step", Arg::Int(3)),
        Sample::new("start after end: empty result", vec![x(&[4, 6], 7)])
            .arg("dim", Arg::Int(1))
            .arg("start", so(4))
            .arg("end", so(2))
            .edge(),
        Sample::new("bounds below the start: empty result", vec![x(&[4, 6], 8)])
            .arg("start", so(-100))
            .arg("end", so(-90))
            .edge(),
        Sample::new("empty [0,3] dim 0 1:", vec![x(&[0, 3], 9)])
            .arg("start", so(1))
            .edge(),
    ]
}

pub fn slice_errors() -> Vec<ErrorSample> {
    let x = || vals(&[4, 6], DType::F32, 180);
    vec![
        err(
            Sample::new("step 0", vec![x()]).arg("step", Arg::Int(0)),
            ErrorKind::Value,
            "slice step must be positive",
        ),
        err(
            Sample::new("dim 2 of a 2-d tensor", vec![x()]).arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
        err(
            Sample::new("0-d", vec![vals(&[], DType::F32, 181)]),
            ErrorKind::Index,
            "slice() cannot be applied to a 0-dim tensor.",
        ),
    ]
}

/// as_strided(size, stride, storage_offset) on contiguous inputs whose trailing matrices are
/// symmetric: the harness's non-contiguous copy stores such a matrix transposed, i.e. with
/// the same storage contents, so the same geometry reads the same values from it. The
/// reference reads the input's row-major values as the storage.
pub fn as_strided(dtype: DType) -> Vec<Sample> {
    let sym = |batch, n, seed| symmetric(batch, n, dtype, seed);
    let g = |s: Sample, size: &[i64], stride: &[i64], off: Option<i64>| {
        let s = s.arg("size", ints(size)).arg("stride", ints(stride));
        match off {
            Some(o) => s.arg("storage_offset", Arg::OptInt(Some(o))),
            None => s,
        }
    };
    vec![
        g(
            Sample::new("[4,4]: [2,2] block", vec![sym(1, 4, 1)]),
            &[2, 2],
            &[4, 1],
            None,
        ),
        g(
            Sample::new("[4,4]: [3,2] transposed with offset 1", vec![sym(1, 4, 2)]),
            &[3, 2],
            &[1, 4],
            Some(1),
        ),
        g(
            Sample::new("[4,4]: overlapping [3,3] windows", vec![sym(1, 4, 3)]),
            &[3, 3],
            &[1, 1],
            None,
        ),
        g(
            Sample::new("[4,4]: 3-d [2,2,2]", vec![sym(1, 4, 4)]),
            &[2, 2, 2],
            &[8, 1, 4],
            Some(0),
        ),
        g(
            Sample::new("[2,3,3]: [2,2] across batches", vec![sym(2, 3, 5)]),
            &[2, 2],
            &[9, 4],
            None,
        ),
        g(
            Sample::new("[4,4]: 0-d at offset 5", vec![sym(1, 4, 6)]),
            &[],
            &[],
            Some(5),
        ),
        g(
            Sample::new("[4,4]: stride 0 broadcast [2,3]", vec![sym(1, 4, 7)]),
            &[2, 3],
            &[0, 2],
            Some(3),
        ),
        g(
            Sample::new("empty result [0]", vec![sym(1, 4, 8)]),
            &[0],
            &[1],
            None,
        )
        .edge(),
        g(
            Sample::new("empty result [2,0]", vec![sym(1, 4, 9)]),
            &[2, 0],
            &[1, 1],
            Some(2),
        )
        .edge(),
        g(
            Sample::new("0-d input to 0-d", vec![vals(&[], dtype, 10)]),
            &[],
            &[],
            None,
        )
        .edge(),
    ]
}

pub fn as_strided_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 2], DType::F32, 182);
    vec![
        err(
            Sample::new("reads past the storage", vec![x()])
                .arg("size", ints(&[3, 3]))
                .arg("stride", ints(&[3, 1])),
            ErrorKind::Shape,
            "out of bounds for storage of size 4",
        ),
        err(
            Sample::new("2 sizes, 1 stride", vec![x()])
                .arg("size", ints(&[2, 2]))
                .arg("stride", ints(&[1])),
            ErrorKind::Shape,
            "mismatch in length of strides and shape",
        ),
    ]
}

/// flatten(start_dim, end_dim).
pub fn flatten(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] all dims", vec![x(&[2, 3, 4], 1)]),
        Sample::new("[2,3,4] from dim 1", vec![x(&[2, 3, 4], 2)]).arg("start_dim", Arg::Int(1)),
        Sample::new("[2,3,4] dims 0..1", vec![x(&[2, 3, 4], 3)])
            .arg("start_dim", Arg::Int(0))
            .arg("end_dim", Arg::Int(1)),
        Sample::new("[3,4] dims 1..1 (no-op)", vec![x(&[3, 4], 4)])
            .arg("start_dim", Arg::Int(1))
            .arg("end_dim", Arg::Int(1)),
        Sample::new("[2,3,4] dims -2..-1", vec![x(&[2, 3, 4], 5)])
            .arg("start_dim", Arg::Int(-2))
            .arg("end_dim", Arg::Int(-1)),
        Sample::new("0-d", vec![x(&[], 6)]).edge(),
        Sample::new("empty [0,3]", vec![x(&[0, 3], 7)]).edge(),
    ]
}

pub fn flatten_errors() -> Vec<ErrorSample> {
    let x = || vals(&[2, 3, 4], DType::F32, 183);
    vec![
        err(
            Sample::new("start_dim after end_dim", vec![x()])
                .arg("start_dim", Arg::Int(2))
                .arg("end_dim", Arg::Int(1)),
            ErrorKind::Shape,
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ),
        err(
            Sample::new("start_dim 3 of a 3-d tensor", vec![x()]).arg("start_dim", Arg::Int(3)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// unflatten(dim, sizes), including a -1 size.
pub fn unflatten(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let u = |d: i64, sizes: &[i64], s: Sample| s.arg("dim", Arg::Int(d)).arg("sizes", ints(sizes));
    vec![
        u(
            0,
            &[2, 3],
            Sample::new("[6,4] dim 0 to [2,3]", vec![x(&[6, 4], 1)]),
        ),
        u(
            1,
            &[2, 4],
            Sample::new("[3,8] dim 1 to [2,4]", vec![x(&[3, 8], 2)]),
        ),
        u(
            -1,
            &[3, -1],
            Sample::new("[2,12] dim -1 to [3,-1]", vec![x(&[2, 12], 3)]),
        ),
        u(
            0,
            &[3, 4],
            Sample::new("[12] dim 0 to [3,4]", vec![x(&[12], 4)]),
        ),
        u(
            1,
            &[2, 3],
            Sample::new("empty [0,6] dim 1 to [2,3]", vec![x(&[0, 6], 5)]).edge(),
        ),
        u(
            0,
            &[0, 2],
            Sample::new("empty [0,3] dim 0 to [0,2]", vec![x(&[0, 3], 6)]).edge(),
        ),
    ]
}

pub fn unflatten_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "[4,2] does not multiply to 6",
            vec![vals(&[6, 4], DType::F32, 184)],
        )
        .arg("dim", Arg::Int(0))
        .arg("sizes", ints(&[4, 2])),
        ErrorKind::Shape,
        "don't multiply up to the size of dim 0 (6) in the input tensor",
    )]
}

/// slice_backward(grad_output, input_sizes, dim, start, end, step): grad_output has the
/// slice's shape.
pub fn slice_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sb = |sizes: &[i64], d: i64, st: i64, e: i64, step: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("end", Arg::Int(e))
            .arg("step", Arg::Int(step))
    };
    vec![
        sb(
            &[4, 6],
            1,
            1,
            5,
            2,
            Sample::new("[4,6] dim 1 1:5:2", vec![x(&[4, 2], 1)]),
        ),
        sb(
            &[4, 6],
            0,
            0,
            3,
            1,
            Sample::new("[4,6] dim 0 0:3", vec![x(&[3, 6], 2)]),
        ),
        sb(
            &[2, 3, 4],
            -1,
            1,
            4,
            1,
            Sample::new("[2,3,4] dim -1 1:4", vec![x(&[2, 3, 3], 3)]),
        ),
        sb(
            &[5, 2],
            0,
            0,
            4,
            2,
            Sample::new("[5,2] dim 0 0:4:2", vec![x(&[2, 2], 4)]),
        ),
        sb(&[7], 0, 2, 7, 3, Sample::new("[7] 2:7:3", vec![x(&[2], 5)])),
        sb(
            &[4, 6],
            1,
            2,
            2,
            1,
            Sample::new("empty slice", vec![x(&[4, 0], 6)]).edge(),
        ),
        sb(
            &[0, 3],
            0,
            0,
            0,
            1,
            Sample::new("empty input [0,3]", vec![x(&[0, 3], 7)]).edge(),
        ),
    ]
}

pub fn slice_backward_errors() -> Vec<ErrorSample> {
    let sb = |sizes: &[i64], d: i64, st: i64, e: i64, step: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("start", Arg::Int(st))
            .arg("end", Arg::Int(e))
            .arg("step", Arg::Int(step))
    };
    vec![
        err(
            sb(
                &[4, 6],
                1,
                0,
                2,
                1,
                Sample::new(
                    "grad [3,3] for a [4,2] slice",
                    vec![vals(&[3, 3], DType::F32, 185)],
                ),
            ),
            ErrorKind::Shape,
            "The expanded size of the tensor",
        ),
        err(
            sb(
                &[4, 6],
                1,
                0,
                2,
                0,
                Sample::new("step 0", vec![vals(&[4, 2], DType::F32, 186)]),
            ),
            ErrorKind::Value,
            "slice step must be positive",
        ),
    ]
}

/// select_backward(grad_output, input_sizes, dim, index): grad_output has the selection's
/// shape.
pub fn select_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let sb = |sizes: &[i64], d: i64, i: i64, s: Sample| {
        s.arg("input_sizes", ints(sizes))
            .arg("dim", Arg::Int(d))
            .arg("index", Arg::Int(i))
    };
    vec![
        sb(
            &[4, 6],
            0,
            2,
            Sample::new("[4,6] dim 0 index 2", vec![x(&[6], 1)]),
        ),
        sb(
            &[4, 6],
            1,
            -1,
            Sample::new("[4,6] dim 1 index -1", vec![x(&[4], 2)]),
        ),
        sb(
            &[2, 3, 4],
            1,
            1,
            Sample::new("[2,3,4] dim 1 index 1", vec![x(&[2, 4], 3)]),
        ),
        sb(
            &[2, 3, 4],
            -1,
            3,
            Sample::new("[2,3,4] dim -1 index 3", vec![x(&[2, 3], 4)]),
        ),
        sb(
            &[3],
            0,
            1,
            Sample::new("[3] index 1: 0-d grad", vec![x(&[], 5)]).edge(),
        ),
        sb(
            &[0, 3],
            1,
            2,
            Sample::new("empty input [0,3]", vec![x(&[0], 6)]).edge(),
        ),
    ]
}

pub fn select_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("index 4 of size 4", vec![vals(&[6], DType::F32, 187)])
            .arg("input_sizes", ints(&[4, 6]))
            .arg("dim", Arg::Int(0))
            .arg("index", Arg::Int(4)),
        ErrorKind::Index,
        "select(): index 4 out of range",
    )]
}

// ---------------------------------------------------------------------------------------
// Composites: var/std, logsumexp, all/any, tril/triu, expand_as, swapaxes, repeat, tile,
// dot, outer, addmm
// ---------------------------------------------------------------------------------------

/// var/std: the reduce_dim cases with the default and explicit corrections (0, 2, and one
/// larger than the group, which divides by 0 as PyTorch does).
pub fn var(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let c = |v: i64| Arg::OptScalar(Some(Scalar::Int(v)));
    vec![
        Sample::new("[3,4] all dims", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] dim [1]", vec![x(&[3, 4], 2)]).arg("dim", Arg::OptInts(Some(vec![1]))),
        Sample::new("[2,3,4] dims [0,2] keepdim", vec![x(&[2, 3, 4], 3)])
            .arg("dim", Arg::OptInts(Some(vec![0, 2])))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,4] dim [0] correction 0", vec![x(&[3, 4], 4)])
            .arg("dim", Arg::OptInts(Some(vec![0])))
            .arg("correction", c(0)),
        Sample::new("[5,2] dim [0] correction 2", vec![x(&[5, 2], 5)])
            .arg("dim", Arg::OptInts(Some(vec![0])))
            .arg("correction", c(2)),
        Sample::new(
            "[2,3] dim [-1] correction 4 (N - c < 0)",
            vec![x(&[2, 3], 6)],
        )
        .arg("dim", Arg::OptInts(Some(vec![-1])))
        .arg("correction", c(4))
        .edge(),
    ]
}

pub fn var_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64 input", vec![vals(&[3], DType::I64, 120)]),
        ErrorKind::DType,
        "std and var only support floating point and complex dtypes",
    )]
}

/// logsumexp over one or several dims, with large values that would overflow `exp`.
pub fn logsumexp(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4] dim [1]", vec![x(&[3, 4], 1)]).arg("dim", ints(&[1])),
        Sample::new("[3,4] dim [0] keepdim", vec![x(&[3, 4], 2)])
            .arg("dim", ints(&[0]))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] dims [0,2]", vec![x(&[2, 3, 4], 3)]).arg("dim", ints(&[0, 2])),
        Sample::new("0-d dim [0]", vec![x(&[], 4)])
            .arg("dim", ints(&[0]))
            .edge(),
    ];
    if dtype == DType::F32 || dtype == DType::F64 {
        v.push(
            Sample::new(
                "values near 500",
                vec![make(&[2, 3], dtype, 499.0, 501.0, 5)],
            )
            .arg("dim", ints(&[1])),
        );
    }
    v
}

pub fn logsumexp_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("dim out of range", vec![vals(&[2, 3], DType::F32, 135)])
            .arg("dim", ints(&[2])),
        ErrorKind::Index,
        "Dimension out of range",
    )]
}

/// all/any: general values, all-zero and all-nonzero tensors, and empty ones.
pub fn all_any(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("mixed [3,4]", vec![ties(&[3, 4], dtype, 1)]),
        Sample::new("all zero [2,3]", vec![from_f64(&[0.0; 6], &[2, 3], dtype)]),
        Sample::new("nonzero [5]", vec![nonzero(&[5], dtype, 3)]),
        Sample::new("0-d", vec![ties(&[], dtype, 4)]).edge(),
        Sample::new("empty [0,2]", vec![ties(&[0, 2], dtype, 5)]).edge(),
    ]
}

pub fn all_any_errors() -> Vec<ErrorSample> {
    vec![]
}

/// tril/triu: square, wide, tall and batched matrices with several diagonals.
pub fn triangle(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[4,4]", vec![x(&[4, 4], 1)]),
        Sample::new("[3,5] diagonal 1", vec![x(&[3, 5], 2)]).arg("diagonal", Arg::Int(1)),
        Sample::new("[5,3] diagonal -2", vec![x(&[5, 3], 3)]).arg("diagonal", Arg::Int(-2)),
        Sample::new("[2,3,4] batched", vec![x(&[2, 3, 4], 4)]),
        Sample::new("[0,3] empty", vec![x(&[0, 3], 5)]).edge(),
    ]
}

pub fn triangle_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("1-d input", vec![vals(&[3], DType::F32, 121)]),
        ErrorKind::Shape,
        "input tensor must have at least 2 dimensions",
    )]
}

/// expand_as: the second tensor only gives the shape.
pub fn expand_as(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[4] as [3,4]", two(&[4], &[3, 4], dtype, 1)),
        Sample::new("[2,3] as [4,2,3]", two(&[2, 3], &[4, 2, 3], dtype, 3)),
        Sample::new("0-d as [2]", two(&[], &[2], dtype, 5)).edge(),
    ]
}

pub fn expand_as_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("[3] as [4]", two(&[3], &[4], DType::F32, 122)),
        ErrorKind::Shape,
        "must match the existing size",
    )]
}

pub fn swapaxes(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] 0 1", vec![x(&[3, 4], 1)])
            .arg("axis0", Arg::Int(0))
            .arg("axis1", Arg::Int(1)),
        Sample::new("[2,3,4] -1 0", vec![x(&[2, 3, 4], 2)])
            .arg("axis0", Arg::Int(-1))
            .arg("axis1", Arg::Int(0)),
        Sample::new("empty [0,3] 0 1", vec![x(&[0, 3], 3)])
            .arg("axis0", Arg::Int(0))
            .arg("axis1", Arg::Int(1))
            .edge(),
    ]
}

pub fn swapaxes_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("axis out of range", vec![vals(&[2, 3], DType::F32, 123)])
            .arg("axis0", Arg::Int(2))
            .arg("axis1", Arg::Int(0)),
        ErrorKind::Index,
        "Dimension out of range",
    )]
}

pub fn repeat(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3] by [2,2]", vec![x(&[2, 3], 1)]).arg("repeats", ints(&[2, 2])),
        Sample::new("[3] by [2,1,3] (new leading dims)", vec![x(&[3], 2)])
            .arg("repeats", ints(&[2, 1, 3])),
        Sample::new("[2,3] by [1,0]", vec![x(&[2, 3], 3)])
            .arg("repeats", ints(&[1, 0]))
            .edge(),
        Sample::new("0-d by [3]", vec![x(&[], 4)])
            .arg("repeats", ints(&[3]))
            .edge(),
    ]
}

pub fn repeat_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("fewer repeats than dims", vec![vals(&[2, 3], DType::F32, 124)])
            .arg("repeats", ints(&[2])),
        ErrorKind::Shape, "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
    )]
}

pub fn tile(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3] by [2] (padded to [1,2])", vec![x(&[2, 3], 1)]).arg("dims", ints(&[2])),
        Sample::new("[2] by [3,2]", vec![x(&[2], 2)]).arg("dims", ints(&[3, 2])),
        Sample::new("0-d by [2]", vec![x(&[], 3)])
            .arg("dims", ints(&[2]))
            .edge(),
    ]
}

pub fn tile_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("negative dims", vec![vals(&[2, 3], DType::F32, 136)])
            .arg("dims", ints(&[2, -1])),
        ErrorKind::Shape,
        "Trying to create tensor with negative dimension",
    )]
}

pub fn dot(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[5] . [5]", two(&[5], &[5], dtype, 1)),
        Sample::new("[0] . [0]", two(&[0], &[0], dtype, 3)).edge(),
    ]
}

pub fn dot_errors() -> Vec<ErrorSample> {
    let f = DType::F32;
    vec![
        err(
            Sample::new("2-d operands", two(&[2, 2], &[2, 2], f, 125)),
            ErrorKind::Shape,
            "1D tensors expected, but got 2D and 2D tensors",
        ),
        err(
            Sample::new("[3] . [4]", two(&[3], &[4], f, 127)),
            ErrorKind::Shape,
            "inconsistent tensor size",
        ),
        err(
            Sample::new(
                "float32 . float64",
                vec![vals(&[3], f, 129), vals(&[3], DType::F64, 130)],
            ),
            ErrorKind::DType,
            "dot : expected both vectors to have same dtype, but found Float and Double",
        ),
    ]
}

pub fn outer(dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[3] x [4]", two(&[3], &[4], dtype, 1)),
        Sample::new("[0] x [2]", two(&[0], &[2], dtype, 3)).edge(),
    ]
}

pub fn outer_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2-d self", two(&[2, 2], &[3], DType::F32, 131)),
        ErrorKind::Shape,
        "outer: Expected 1-D argument self, but got 2-D",
    )]
}

/// addmm: full and broadcast `self`, with default and explicit beta/alpha (beta 0 ignores
/// a NaN in `self`).
pub fn addmm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,2] + [3,4] @ [4,2]",
            vec![x(&[3, 2], 1), x(&[3, 4], 2), x(&[4, 2], 3)],
        ),
        Sample::new(
            "[2] + [3,4] @ [4,2]",
            vec![x(&[2], 4), x(&[3, 4], 5), x(&[4, 2], 6)],
        ),
        Sample::new(
            "beta 0.5 alpha -2",
            vec![x(&[3, 2], 7), x(&[3, 4], 8), x(&[4, 2], 9)],
        )
        .arg("beta", float(0.5))
        .arg("alpha", float(-2.0)),
        Sample::new(
            "k = 0: [2,3] + [2,0] @ [0,3]",
            vec![x(&[2, 3], 10), x(&[2, 0], 11), x(&[0, 3], 12)],
        )
        .edge(),
    ]
}

pub fn addmm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "[2,3] @ [4,5]",
            vec![
                vals(&[2, 5], DType::F32, 132),
                vals(&[2, 3], DType::F32, 133),
                vals(&[4, 5], DType::F32, 134),
            ],
        ),
        ErrorKind::Shape,
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    )]
}

// ---------------------------------------------------------------------------------------
// Losses and distances
// ---------------------------------------------------------------------------------------

/// Input/target pairs for the regression losses, each reduction, plus a broadcast target.
pub fn loss(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] mean", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[3,4] none", vec![x(&[3, 4], 3), x(&[3, 4], 4)]).arg("reduction", Arg::Int(0)),
        Sample::new("[2,3,2] sum", vec![x(&[2, 3, 2], 5), x(&[2, 3, 2], 6)])
            .arg("reduction", Arg::Int(2)),
        Sample::new("0-d", vec![x(&[], 7), x(&[], 8)]).edge(),
    ]
}

/// `(grad_output, self, target)` of a pointwise loss's backward: the `loss` samples with
/// the gradient of their result (0-d for `mean` and `sum`), plus a broadcast target.
pub fn loss_backward(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let mut v: Vec<Sample> = loss(dtype)
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let shape = if s.int("reduction") == Some(0) {
                s.t(0).shape().to_vec()
            } else {
                vec![]
            };
            let mut tensors = vec![x(&shape, 50 + i as u64)];
            tensors.extend(s.tensors.iter().cloned());
            let s = Sample { tensors, ..s };
            // The backward's `reduction` has no default.
            match s.int("reduction") {
                Some(_) => s,
                None => s.arg("reduction", Arg::Int(1)),
            }
        })
        .collect();
    v.push(
        Sample::new(
            "[2,3,2] none, target [3,2] broadcast",
            vec![x(&[2, 3, 2], 60), x(&[2, 3, 2], 61), x(&[3, 2], 62)],
        )
        .arg("reduction", Arg::Int(0)),
    );
    v.push(
        Sample::new(
            "[3,2] mean, target [2,3,2] broadcast",
            vec![x(&[], 63), x(&[3, 2], 64), x(&[2, 3, 2], 65)],
        )
        .arg("reduction", Arg::Int(1)),
    );
    v
}

pub fn loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "reduction 3",
            vec![
                vals(&[], DType::F32, 143),
                vals(&[3], DType::F32, 144),
                vals(&[3], DType::F32, 145),
            ],
        )
        .arg("reduction", Arg::Int(3)),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )]
}

/// With `beta`: the loss backward samples, a smaller beta, and beta 0.
pub fn smooth_l1_loss_backward(dtype: DType) -> Vec<Sample> {
    let mut v = loss_backward(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(
        Sample::new("beta 0.5", vec![x(&[], 66), x(&[3, 4], 67), x(&[3, 4], 68)])
            .arg("reduction", Arg::Int(1))
            .arg("beta", Arg::Float(0.5)),
    );
    v.push(
        Sample::new("beta 0 (L1)", vec![x(&[5], 69), x(&[5], 70), x(&[5], 71)])
            .arg("beta", Arg::Float(0.0))
            .arg("reduction", Arg::Int(0)),
    );
    v.into_iter()
        .map(|s| {
            if s.float("beta").is_some() {
                s
            } else {
                s.arg("beta", Arg::Float(1.0))
            }
        })
        .collect()
}

pub fn smooth_l1_loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "beta -1",
            vec![
                vals(&[], DType::F32, 146),
                vals(&[3], DType::F32, 147),
                vals(&[3], DType::F32, 148),
            ],
        )
        .arg("reduction", Arg::Int(1))
        .arg("beta", Arg::Float(-1.0)),
        ErrorKind::Value,
        "smooth_l1_loss does not support negative values for beta.",
    )]
}

/// With `delta`: the loss backward samples and a smaller delta.
pub fn huber_loss_backward(dtype: DType) -> Vec<Sample> {
    let mut v = loss_backward(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(
        Sample::new(
            "delta 0.5",
            vec![x(&[], 72), x(&[3, 4], 73), x(&[3, 4], 74)],
        )
        .arg("reduction", Arg::Int(1))
        .arg("delta", Arg::Float(0.5)),
    );
    v.into_iter()
        .map(|s| {
            if s.float("delta").is_some() {
                s
            } else {
                s.arg("delta", Arg::Float(1.0))
            }
        })
        .collect()
}

pub fn huber_loss_backward_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "delta 0",
            vec![
                vals(&[], DType::F32, 149),
                vals(&[3], DType::F32, 150),
                vals(&[3], DType::F32, 151),
            ],
        )
        .arg("reduction", Arg::Int(1))
        .arg("delta", Arg::Float(0.0)),
        ErrorKind::Value,
        "huber_loss does not support non-positive values for delta.",
    )]
}

pub fn loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("reduction 3", two(&[3], &[3], DType::F32, 140)).arg("reduction", Arg::Int(3)),
        ErrorKind::Value,
        "3 is not a valid value for reduction",
    )]
}

pub fn smooth_l1_loss(dtype: DType) -> Vec<Sample> {
    let mut v = loss(dtype);
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    v.push(Sample::new("beta 0.5", two(&[3, 4], &[3, 4], dtype, 9)).arg("beta", Arg::Float(0.5)));
    v.push(
        Sample::new("beta 0 (L1)", vec![x(&[5], 11), x(&[5], 12)])
            .arg("beta", Arg::Float(0.0))
            .arg("reduction", Arg::Int(0)),
    );
    v
}

pub fn smooth_l1_loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("beta -1", two(&[3], &[3], DType::F32, 141)).arg("beta", Arg::Float(-1.0)),
        ErrorKind::Value,
        "smooth_l1_loss does not support negative values for beta.",
    )]
}

pub fn huber_loss(dtype: DType) -> Vec<Sample> {
    let mut v = loss(dtype);
    v.push(Sample::new("delta 0.5", two(&[3, 4], &[3, 4], dtype, 9)).arg("delta", Arg::Float(0.5)));
    v
}

pub fn huber_loss_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("delta 0", two(&[3], &[3], DType::F32, 142)).arg("delta", Arg::Float(0.0)),
        ErrorKind::Value,
        "huber_loss does not support non-positive values for delta.",
    )]
}

/// kl_div: log-probabilities against positive probabilities or log-probabilities.
pub fn kl_div(dtype: DType) -> Vec<Sample> {
    let logp = |s: &[usize], seed| make(s, dtype, -3.0, -0.1, seed);
    let p = |s: &[usize], seed| {
        let n: usize = s.iter().product();
        let u = uniform(n, seed);
        // Strictly positive: at a zero target the loss's gradient in the target is undefined.
        let v: Vec<f64> = u.iter().map(|&r| 0.05 + 0.95 * r).collect();
        from_f64(&v, s, dtype)
    };
    vec![
        Sample::new("[3,4] mean", vec![logp(&[3, 4], 1), p(&[3, 4], 2)]),
        Sample::new("[3,4] none", vec![logp(&[3, 4], 3), p(&[3, 4], 4)])
            .arg("reduction", Arg::Int(0)),
        Sample::new(
            "[3,4] sum, log_target",
            vec![logp(&[3, 4], 5), logp(&[3, 4], 6)],
        )
        .arg("reduction", Arg::Int(2))
        .arg("log_target", Arg::Bool(true)),
        Sample::new("0-d", vec![logp(&[], 7), p(&[], 8)]).edge(),
    ]
}

pub fn kl_div_errors() -> Vec<ErrorSample> {
    loss_errors()
}

pub fn cosine_similarity(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3), x(&[2, 3, 4], 4)])
            .arg("dim", Arg::Int(-1)),
        Sample::new(
            "broadcast [3,4] with [4] dim 1",
            vec![x(&[3, 4], 5), x(&[4], 6)],
        ),
        Sample::new("[0,4] dim 1", vec![x(&[0, 4], 7), x(&[0, 4], 8)]).edge(),
    ]
}

pub fn cosine_similarity_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("[2,3] with [2,4]", two(&[2, 3], &[2, 4], DType::F32, 143)),
        ErrorKind::Shape,
        BROADCAST_ERROR,
    )]
}

pub fn pairwise_distance(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 2", vec![x(&[3, 4], 1), x(&[3, 4], 2)]),
        Sample::new("[3,4] p 1 keepdim", vec![x(&[3, 4], 3), x(&[3, 4], 4)])
            .arg("p", Arg::Float(1.0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,5] p 3", vec![x(&[2, 5], 5), x(&[2, 5], 6)]).arg("p", Arg::Float(3.0)),
        Sample::new("[0,4]", vec![x(&[0, 4], 7), x(&[0, 4], 8)]).edge(),
    ]
}

pub fn pairwise_distance_errors() -> Vec<ErrorSample> {
    cosine_similarity_errors()
}
