//! Samples for scatter, scatter_add, index_add, masked_scatter and the scatter reductions.

use super::{err, f32v, float, index, int, mask, quarters, rand_index, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

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

/// An index whose entries are distinct along `dim` within each line, so every written
/// position has one source (PyTorch leaves the winner among repeats unspecified).
fn unique_index(shape: &[usize], dim: usize, size: usize, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    let mut vals = vec![0i64; n];
    let lines = n / shape[dim].max(1);
    let inner: usize = shape[dim + 1..].iter().product();
    for l in 0..lines {
        let (o, j) = (l / inner, l % inner);
        let p = super::perm(size, seed + l as u64);
        for k in 0..shape[dim] {
            vals[(o * shape[dim] + k) * inner + j] = p[k] as i64;
        }
    }
    index(&vals, shape)
}

pub fn scatter(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[4,3] dim 0 index [2,3]",
            vec![x(&[4, 3], 1), unique_index(&[2, 3], 0, 4, 2), x(&[2, 3], 3)],
        )
        .arg("dim", Arg::Int(0)),
        Sample::new(
            "[3,4] dim 1 index [3,2]",
            vec![x(&[3, 4], 4), unique_index(&[3, 2], 1, 4, 5), x(&[3, 2], 6)],
        )
        .arg("dim", Arg::Int(1)),
        Sample::new(
            "[2,3,4] dim -1",
            vec![
                x(&[2, 3, 4], 12),
                unique_index(&[2, 3, 2], 2, 4, 13),
                x(&[2, 3, 2], 14),
            ],
        )
        .arg("dim", Arg::Int(-1)),
        // Not among the gradchecked three: src's gradient has the index's shape (as PyTorch's).
        Sample::new(
            "[2,3,4] dim -1, src larger than index",
            vec![
                x(&[2, 3, 4], 7),
                unique_index(&[2, 3, 2], 2, 4, 8),
                x(&[2, 3, 3], 9),
            ],
        )
        .arg("dim", Arg::Int(-1)),
        Sample::new(
            "[3] dim 0 empty index",
            vec![x(&[3], 10), index(&[], &[0]), x(&[0], 11)],
        )
        .arg("dim", Arg::Int(0))
        .edge(),
    ]
}

pub fn scatter_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "index 3 of 3",
            vec![
                f32v(&[3, 2], 50),
                index(&[3, 0], &[1, 2]),
                f32v(&[1, 2], 51),
            ],
        )
        .arg("dim", Arg::Int(0)),
        ErrorKind::Index,
        "index 3 is out of bounds for dimension 0 with size 3",
    )]
}

pub fn scatter_value(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let v = |f: f64| {
        if dtype == DType::Bool {
            Arg::Scalar(kiln::Scalar::Bool(f != 0.0))
        } else if dtype.is_floating_point() {
            super::float(f)
        } else {
            super::int(f as i64)
        }
    };
    vec![
        Sample::new(
            "[4,3] dim 0 value 2",
            vec![x(&[4, 3], 1), unique_index(&[2, 3], 0, 4, 2)],
        )
        .arg("dim", Arg::Int(0))
        .arg("value", v(2.0)),
        Sample::new(
            "[3,4] dim 1 value -1",
            vec![x(&[3, 4], 3), rand_index(&[3, 2], 4, 4)],
        )
        .arg("dim", Arg::Int(1))
        .arg("value", v(-1.0)),
        Sample::new(
            "[2,3,2] dim 1 value 0",
            vec![x(&[2, 3, 2], 5), rand_index(&[2, 2, 2], 3, 6)],
        )
        .arg("dim", Arg::Int(1))
        .arg("value", v(0.0)),
        Sample::new("[3] dim 0 empty index", vec![x(&[3], 7), index(&[], &[0])])
            .arg("dim", Arg::Int(0))
            .arg("value", v(1.0))
            .edge(),
    ]
}

pub fn scatter_value_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("index -1", vec![f32v(&[3], 52), index(&[-1], &[1])])
            .arg("dim", Arg::Int(0))
            .arg("value", super::float(1.0)),
        ErrorKind::Index,
        "index -1 is out of bounds for dimension 0 with size 3",
    )]
}

pub fn masked_scatter(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] mask [3,4] source [12]",
            vec![x(&[3, 4], 1), mask(&[3, 4], 2), x(&[12], 3)],
        ),
        Sample::new(
            "[2,3] mask [3] source [3,3]",
            vec![x(&[2, 3], 4), mask(&[3], 5), x(&[3, 3], 6)],
        ),
        Sample::new(
            "[4] mask 0-d source [5]",
            vec![x(&[4], 7), Tensor::from(true), x(&[5], 8)],
        ),
        Sample::new(
            "[0,2] mask [2] source [1]",
            vec![x(&[0, 2], 9), mask(&[2], 10), x(&[1], 11)],
        )
        .edge(),
        Sample::new(
            "[3,2] mask [2,3,2] source [12] (self broadcast)",
            vec![x(&[3, 2], 12), mask(&[2, 3, 2], 13), x(&[12], 14)],
        ),
    ]
}

pub fn masked_scatter_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "source too small",
            vec![
                f32v(&[3], 53),
                Tensor::from(vec![true, true, true]),
                f32v(&[2], 54),
            ],
        ),
        ErrorKind::Shape,
        "masked_scatter: expected source to have at least 3 elements",
    )]
}

/// Values for a scatter reduction whose `self` and `src` are pairwise distinct, one shuffled
/// range split in two: no ties (kinks) for amax/amin, within or across the two.
fn distinct_pair(a: &[usize], b: &[usize], dtype: DType, seed: u64) -> Vec<Tensor> {
    let (na, nb): (usize, usize) = (a.iter().product(), b.iter().product());
    let all = super::distinct(&[na + nb], dtype, seed);
    let part = |start: usize, len: usize, shape: &[usize]| {
        let shape: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        all.narrow(0, start as i64, len as i64)
            .and_then(|t| t.reshape(&shape))
            .and_then(|t| t.contiguous())
            .expect("split of a sample")
    };
    vec![part(0, na, a), part(na, nb, b)]
}

/// Small values for products: floats 0, ±0.5, ±1 and ±2 (products stay exact in f16/bf16,
/// even rounded after every step as a GPU's atomics do), integers in [-2, 3) ([0, 3) for u8),
/// so a product of a few never wraps.
fn small(shape: &[usize], dtype: DType, seed: u64) -> Tensor {
    if !dtype.is_floating_point() {
        return super::ranged(shape, dtype, (-2.0, 2.0), (-2, 3), seed);
    }
    let k = super::discrete(shape, DType::I64, -3, 4, 1.0, seed)
        .to_vec::<i64>()
        .expect("CPU");
    let v: Vec<f64> = k
        .iter()
        .map(|&k| match k {
            0 => 0.0,
            k => f64::from(k.signum() as i32) * 2f64.powi(k.abs() as i32 - 2),
        })
        .collect();
    super::from_f64(&v, shape, dtype)
}

fn reduce_args(s: Sample, dim: i64, reduce: &'static str, include_self: Option<bool>) -> Sample {
    let s = s.arg("dim", Arg::Int(dim)).arg("reduce", Arg::Str(reduce));
    match include_self {
        Some(b) => s.arg("include_self", Arg::Bool(b)),
        None => s,
    }
}

/// scatter_reduce(dim, index, src, reduce, include_self): every reduction with and without
/// `self`, repeated indices throughout, float values exact in f16/bf16 through sums
/// ([`super::quarters`]) and products ([`small`]). The first three (the gradchecked ones) are PyTorch's
/// prod sample with zeros in `self` and `src` (at most one zero of `src` per position),
/// amax without self over distinct values, and mean. bool has no mean (PyTorch's floor
/// division has no bool kernel).
pub fn scatter_reduce(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::quarters(s, dtype, seed);
    let sm = |s: &[usize], seed| small(s, dtype, seed);
    let pair = |a: &[usize], b: &[usize], seed| distinct_pair(a, b, dtype, seed);
    let mean = dtype != DType::Bool;
    let t = |v: &[f64], shape: &[usize]| {
        Tensor::from_vec(v.to_vec(), shape)
            .and_then(|t| t.to_dtype(dtype))
            .expect("sample")
    };
    let with = |mut ts: Vec<Tensor>, i: Tensor| {
        ts.insert(1, i);
        ts
    };
    let mut v = vec![reduce_args(
        Sample::new(
            "prod [3,2] dim 1, zeros in self and src",
            vec![
                t(&[0., 13., 0., 17., 0., 19.], &[3, 2]),
                index(&[1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 1], &[3, 4]),
                t(&[0., 1., 2., 3., 0., 4., 0., 1., 2., 3., 5., 6.], &[3, 4]),
            ],
        ),
        1,
        "prod",
        Some(true),
    )];
    v.push(reduce_args(
        Sample::new(
            "amax without self, [3,4] dim 0 index [5,4]",
            with(pair(&[3, 4], &[5, 4], 1), rand_index(&[5, 4], 3, 2)),
        ),
        0,
        "amax",
        Some(false),
    ));
    if mean {
        v.push(reduce_args(
            Sample::new(
                "mean [2,3,4] dim -1 index [2,3,3]",
                vec![
                    x(&[2, 3, 4], 3),
                    rand_index(&[2, 3, 3], 4, 4),
                    x(&[2, 3, 3], 5),
                ],
            ),
            -1,
            "mean",
            None,
        ));
    }
    v.extend([
        reduce_args(
            Sample::new(
                "sum [4,3] dim 0 index [6,3]",
                vec![x(&[4, 3], 6), rand_index(&[6, 3], 4, 7), x(&[6, 3], 8)],
            ),
            0,
            "sum",
            None,
        ),
        reduce_args(
            Sample::new(
                "sum without self [3,4] dim 1 index [3,6]",
                vec![x(&[3, 4], 9), rand_index(&[3, 6], 4, 10), x(&[3, 6], 11)],
            ),
            1,
            "sum",
            Some(false),
        ),
        reduce_args(
            Sample::new(
                "prod without self [4,3] dim 0 index [5,3]",
                vec![sm(&[4, 3], 12), rand_index(&[5, 3], 4, 13), sm(&[5, 3], 14)],
            ),
            0,
            "prod",
            Some(false),
        ),
        reduce_args(
            Sample::new(
                "amin [3,4] dim 1 index [3,5]",
                with(pair(&[3, 4], &[3, 5], 15), rand_index(&[3, 5], 4, 16)),
            ),
            1,
            "amin",
            Some(true),
        ),
        reduce_args(
            Sample::new(
                "amin without self [2,3,4] dim 0 index [3,3,4]",
                with(
                    pair(&[2, 3, 4], &[3, 3, 4], 17),
                    rand_index(&[3, 3, 4], 2, 18),
                ),
            ),
            0,
            "amin",
            Some(false),
        ),
        reduce_args(
            Sample::new(
                "amax with ties [4,3] dim 0 index [6,3]",
                vec![x(&[4, 3], 19), rand_index(&[6, 3], 4, 20), x(&[6, 3], 21)],
            ),
            0,
            "amax",
            Some(true),
        ),
    ]);
    if mean {
        v.extend([
            reduce_args(
                Sample::new(
                    "mean without self [4,3] dim 0 index [5,3]",
                    vec![x(&[4, 3], 22), rand_index(&[5, 3], 4, 23), x(&[5, 3], 24)],
                ),
                0,
                "mean",
                Some(false),
            ),
            reduce_args(
                Sample::new(
                    "mean, src [3,5] larger than index [2,4]",
                    vec![x(&[3, 4], 25), rand_index(&[2, 4], 3, 26), x(&[3, 5], 27)],
                ),
                0,
                "mean",
                Some(true),
            ),
        ]);
    }
    if dtype.is_floating_point() {
        // NaN from src propagates through amax and amin, with or without self.
        let n = f64::NAN;
        let self_ = || t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        let src = || t(&[0., n, 7., -1., 2., n], &[2, 3]);
        let idx = || index(&[0, 1, 0, 1, 0, 1], &[2, 3]);
        v.push(reduce_args(
            Sample::new("amax with NaN in src", vec![self_(), idx(), src()]),
            0,
            "amax",
            Some(true),
        ));
        v.push(reduce_args(
            Sample::new("amin without self, NaN in src", vec![self_(), idx(), src()]),
            0,
            "amin",
            Some(false),
        ));
    }
    v.extend([
        reduce_args(
            Sample::new(
                "empty index [0,4]",
                vec![x(&[3, 4], 28), index(&[], &[0, 4]), x(&[0, 4], 29)],
            )
            .edge(),
            0,
            "sum",
            Some(false),
        ),
        reduce_args(
            Sample::new(
                "0-d self, index and src",
                vec![x(&[], 30), index(&[0], &[]), x(&[], 31)],
            )
            .edge(),
            0,
            "amax",
            Some(true),
        ),
    ]);
    if mean {
        v.push(reduce_args(
            Sample::new(
                "0-d mean without self",
                vec![x(&[], 32), index(&[0], &[]), x(&[], 33)],
            )
            .edge(),
            -1,
            "mean",
            Some(false),
        ));
    }
    v
}

fn reduce_error_sample(desc: &str, tensors: Vec<Tensor>, reduce: &'static str) -> Sample {
    Sample::new(desc, tensors)
        .arg("dim", Arg::Int(0))
        .arg("reduce", Arg::Str(reduce))
}

pub fn scatter_reduce_errors() -> Vec<ErrorSample> {
    let i = || index(&[0, 1, 2, 0], &[1, 4]);
    vec![
        err(
            reduce_error_sample(
                "reduce 'max'",
                vec![f32v(&[3, 4], 60), i(), f32v(&[1, 4], 61)],
                "max",
            ),
            ErrorKind::Value,
            "reduce argument must be either sum, prod, mean, amax or amin, got max",
        ),
        err(
            reduce_error_sample(
                "index 3 along a dim of size 3",
                vec![
                    f32v(&[3, 4], 62),
                    index(&[0, 3], &[1, 2]),
                    f32v(&[1, 2], 63),
                ],
                "sum",
            ),
            ErrorKind::Index,
            "index 3 is out of bounds for dimension 0 with size 3",
        ),
        err(
            reduce_error_sample(
                "self float32, src float64",
                vec![f32v(&[3, 4], 64), i(), vals(&[1, 4], DType::F64, 65)],
                "amax",
            ),
            ErrorKind::DType,
            "scatter(): Expected self.dtype to be equal to src.dtype",
        ),
        err(
            reduce_error_sample(
                "1-d index for 2-d self",
                vec![f32v(&[3, 4], 66), index(&[0, 1], &[2]), f32v(&[2], 67)],
                "prod",
            ),
            ErrorKind::Shape,
            "Index tensor must have the same number of dimensions as self tensor",
        ),
        err(
            reduce_error_sample(
                "mean of bools",
                vec![
                    vals(&[3, 4], DType::Bool, 68),
                    i(),
                    vals(&[1, 4], DType::Bool, 69),
                ],
                "mean",
            ),
            ErrorKind::DType,
            "not implemented for 'Bool'",
        ),
        err(
            Sample::new(
                "dim 2 of 2-d",
                vec![f32v(&[3, 4], 70), i(), f32v(&[1, 4], 71)],
            )
            .arg("dim", Arg::Int(2))
            .arg("reduce", Arg::Str("sum")),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

/// scatter(dim, index, src, reduce=): "add" and "multiply" with repeated indices.
pub fn scatter_src_reduce(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::quarters(s, dtype, seed);
    let sm = |s: &[usize], seed| small(s, dtype, seed);
    let r = |s: Sample, dim: i64, reduce: &'static str| {
        s.arg("dim", Arg::Int(dim)).arg("reduce", Arg::Str(reduce))
    };
    vec![
        r(
            Sample::new(
                "add [4,3] dim 0 index [6,3]",
                vec![x(&[4, 3], 1), rand_index(&[6, 3], 4, 2), x(&[6, 3], 3)],
            ),
            0,
            "add",
        ),
        r(
            Sample::new(
                "multiply [3,4] dim 1 index [3,5]",
                vec![sm(&[3, 4], 4), rand_index(&[3, 5], 4, 5), sm(&[3, 5], 6)],
            ),
            1,
            "multiply",
        ),
        r(
            Sample::new(
                "multiply [2,3,4] dim -1, src larger than index",
                vec![
                    sm(&[2, 3, 4], 7),
                    rand_index(&[2, 3, 3], 4, 8),
                    sm(&[2, 3, 5], 9),
                ],
            ),
            -1,
            "multiply",
        ),
        r(
            Sample::new(
                "empty index [0,4]",
                vec![x(&[3, 4], 10), index(&[], &[0, 4]), x(&[0, 4], 11)],
            )
            .edge(),
            0,
            "multiply",
        ),
        r(
            Sample::new(
                "0-d self, index and src",
                vec![x(&[], 12), index(&[0], &[]), x(&[], 13)],
            )
            .edge(),
            0,
            "add",
        ),
    ]
}

pub fn scatter_src_reduce_errors() -> Vec<ErrorSample> {
    let i = || index(&[0, 1, 2, 0], &[1, 4]);
    vec![
        err(
            reduce_error_sample(
                "reduce 'sum'",
                vec![f32v(&[3, 4], 72), i(), f32v(&[1, 4], 73)],
                "sum",
            ),
            ErrorKind::Value,
            "reduce argument must be either add or multiply.",
        ),
        err(
            reduce_error_sample(
                "index -1",
                vec![
                    f32v(&[3, 4], 74),
                    index(&[0, -1], &[1, 2]),
                    f32v(&[1, 2], 75),
                ],
                "add",
            ),
            ErrorKind::Index,
            "index -1 is out of bounds for dimension 0 with size 3",
        ),
    ]
}

/// scatter(dim, index, value, reduce=): the value added or multiplied in once per index.
pub fn scatter_value_reduce(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::quarters(s, dtype, seed);
    let v = |f: f64| {
        if dtype == DType::Bool {
            Arg::Scalar(kiln::Scalar::Bool(f != 0.0))
        } else if dtype.is_floating_point() {
            super::float(f)
        } else {
            super::int(f as i64)
        }
    };
    let r = |s: Sample, dim: i64, value: f64, reduce: &'static str| {
        s.arg("dim", Arg::Int(dim))
            .arg("value", v(value))
            .arg("reduce", Arg::Str(reduce))
    };
    vec![
        r(
            Sample::new(
                "add [4,3] dim 0 index [6,3]",
                vec![x(&[4, 3], 1), rand_index(&[6, 3], 4, 2)],
            ),
            0,
            if dtype.is_floating_point() { 1.5 } else { 2.0 },
            "add",
        ),
        r(
            Sample::new(
                "multiply by -2 [3,4] dim 1 index [3,5]",
                vec![small(&[3, 4], dtype, 3), rand_index(&[3, 5], 4, 4)],
            ),
            1,
            if dtype == DType::U8 { 2.0 } else { -2.0 },
            "multiply",
        ),
        r(
            Sample::new(
                "multiply by 0 [2,3,2] dim 1",
                vec![x(&[2, 3, 2], 5), rand_index(&[2, 2, 2], 3, 6)],
            ),
            1,
            0.0,
            "multiply",
        ),
        r(
            Sample::new("[3] dim 0 empty index", vec![x(&[3], 7), index(&[], &[0])]).edge(),
            0,
            1.0,
            "add",
        ),
    ]
}

pub fn scatter_value_reduce_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("reduce 'mean'", vec![f32v(&[3], 76), index(&[0], &[1])])
            .arg("dim", Arg::Int(0))
            .arg("value", super::float(1.0))
            .arg("reduce", Arg::Str("mean")),
        ErrorKind::Value,
        "reduce argument must be either add or multiply.",
    )]
}
