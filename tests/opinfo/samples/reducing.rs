//! Samples for the reductions of src/ops/reducing.rs.

use super::{distinct, err, float, ints, opt_int, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Scalar, Tensor};

fn opt_dims(v: &[i64]) -> Arg {
    Arg::OptInts(Some(v.to_vec()))
}

/// Distinct values (no ties, so the gradient has one destination) over dim lists.
pub fn amax(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4] dim [1]", vec![x(&[3, 4], 1)]).arg("dim", ints(&[1])),
        Sample::new("[2,3,4] dims [0,2] keepdim", vec![x(&[2, 3, 4], 2)])
            .arg("dim", ints(&[0, 2]))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,4] all", vec![x(&[3, 4], 3)]),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
        Sample::new("[0,3] dim [1]", vec![x(&[0, 3], 5)])
            .arg("dim", ints(&[1]))
            .edge(),
    ];
    if dtype.is_floating_point() {
        // Ties: the gradient is split evenly among them.
        let t = Tensor::from(vec![1.0f64, 3.0, 3.0, 2.0, -1.0, -1.0])
            .reshape([2, 3])
            .expect("shape")
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("[2,3] with ties dim [1]", vec![t]).arg("dim", ints(&[1])));
    }
    v
}

pub fn amax_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("empty dim", vec![vals(&[0, 3], DType::F32, 60)]).arg("dim", ints(&[0])),
            ErrorKind::Index,
            "Expected reduction dim 0 to have non-zero size.",
        ),
        err(
            Sample::new("repeated dim", vec![vals(&[2, 3], DType::F32, 61)])
                .arg("dim", ints(&[1, -1])),
            ErrorKind::Shape,
            "dim 1 appears multiple times in the list of dims",
        ),
        err(
            Sample::new(
                "65 dims, dim [0]",
                vec![Tensor::ones(vec![1usize; 65], DType::F32).expect("ones")],
            )
            .arg("dim", ints(&[0])),
            ErrorKind::Shape,
            "only tensors with up to 64 dims are supported",
        ),
    ]
}

pub fn aminmax(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| distinct(s, dtype, seed);
    vec![
        Sample::new("[3,4] all", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] dim 1", vec![x(&[3, 4], 2)]).arg("dim", opt_int(Some(1))),
        Sample::new("[2,3,4] dim -1 keepdim", vec![x(&[2, 3, 4], 3)])
            .arg("dim", opt_int(Some(-1)))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn aminmax_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("empty dim", vec![vals(&[3, 0], DType::F32, 62)])
                .arg("dim", opt_int(Some(1))),
            ErrorKind::Index,
            "Expected reduction dim 1 to have non-zero size.",
        ),
        err(
            Sample::new(
                "65 dims, dim 0",
                vec![Tensor::ones(vec![1usize; 65], DType::F32).expect("ones")],
            )
            .arg("dim", opt_int(Some(0))),
            ErrorKind::Shape,
            "aminmax: only tensors with up to 64 dims are supported",
        ),
    ]
}

/// General values, with NaNs mixed in for floating dtypes.
pub fn nan_reduce(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4] all", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] dim [1]", vec![x(&[3, 4], 2)]).arg("dim", opt_dims(&[1])),
        Sample::new("[2,3,4] dims [0,2] keepdim", vec![x(&[2, 3, 4], 3)])
            .arg("dim", opt_dims(&[0, 2]))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ];
    if dtype.is_floating_point() {
        let t = Tensor::from(vec![1.0f64, f64::NAN, 2.5, f64::NAN, -1.0, 0.5])
            .reshape([2, 3])
            .expect("shape")
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("[2,3] with NaNs dim [1]", vec![t]).arg("dim", opt_dims(&[1])));
    }
    v
}

pub fn nan_reduce_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", vec![vals(&[3], DType::I64, 63)]),
        ErrorKind::DType,
        "nanmean(): expected input to have floating point or complex dtype but got Long",
    )]
}

/// Values with many zeros.
fn sparse(s: &[usize], dtype: DType, seed: u64) -> Tensor {
    super::discrete(s, dtype, -1, 2, 1.0, seed)
}

pub fn count_nonzero_dims(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| sparse(s, dtype, seed);
    vec![
        Sample::new("[3,4] dims [1]", vec![x(&[3, 4], 1)]).arg("dim", ints(&[1])),
        Sample::new("[2,3,4] dims [0,2]", vec![x(&[2, 3, 4], 2)]).arg("dim", ints(&[0, 2])),
        Sample::new("[3,4] dims []", vec![x(&[3, 4], 3)]).arg("dim", ints(&[])),
        Sample::new("[0,3] dims [0]", vec![x(&[0, 3], 4)])
            .arg("dim", ints(&[0]))
            .edge(),
    ]
}

pub fn count_nonzero_dims_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("repeated dim", vec![vals(&[2, 3], DType::F32, 64)]).arg("dim", ints(&[0, 0])),
        ErrorKind::Shape,
        "dim 0 appears multiple times in the list of dims",
    )]
}

pub fn count_nonzero(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| sparse(s, dtype, seed);
    vec![
        Sample::new("[3,4] all", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] dim 0", vec![x(&[3, 4], 2)]).arg("dim", opt_int(Some(0))),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 3)]).arg("dim", opt_int(Some(-1))),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn count_nonzero_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("dim 2 of 2-d", vec![vals(&[2, 3], DType::F32, 65)])
            .arg("dim", opt_int(Some(2))),
        ErrorKind::Index,
        "Dimension out of range",
    )]
}

/// Values bounded away from zero (so |x| has a derivative), over several orders.
pub fn vector_norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    let ord = |v: f64| Arg::Scalar(Scalar::Float(v));
    vec![
        Sample::new("[3,4] ord 2 all", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] ord 1 dim [1]", vec![x(&[3, 4], 2)])
            .arg("ord", ord(1.0))
            .arg("dim", opt_dims(&[1])),
        Sample::new("[2,3,4] ord 3 dims [0,2] keepdim", vec![x(&[2, 3, 4], 3)])
            .arg("ord", ord(3.0))
            .arg("dim", opt_dims(&[0, 2]))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,4] ord inf dim [0]", vec![distinct(&[3, 4], dtype, 4)])
            .arg("ord", ord(f64::INFINITY))
            .arg("dim", opt_dims(&[0])),
        Sample::new("[3,4] ord -inf", vec![distinct(&[3, 4], dtype, 5)])
            .arg("ord", ord(f64::NEG_INFINITY)),
        Sample::new("[3,4] ord 0.5", vec![x(&[3, 4], 6)]).arg("ord", ord(0.5)),
        Sample::new("[4] ord 0", vec![x(&[4], 7)]).arg("ord", ord(0.0)),
        Sample::new(
            "[3] zeros ord 2",
            vec![Tensor::zeros([3], dtype).expect("zeros")],
        ),
        Sample::new("0-d", vec![x(&[], 8)]).edge(),
        Sample::new("[0,3] dim [1]", vec![x(&[0, 3], 9)])
            .arg("dim", opt_dims(&[1]))
            .edge(),
    ]
}

pub fn vector_norm_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("int64", vec![vals(&[3], DType::I64, 66)]),
            ErrorKind::DType,
            "Expected a floating point or complex tensor as input. Got Long",
        ),
        err(
            Sample::new("inf norm of empty", vec![vals(&[0], DType::F32, 67)])
                .arg("ord", Arg::Scalar(Scalar::Float(f64::INFINITY))),
            ErrorKind::Shape,
            "cannot compute the inf norm on an empty tensor",
        ),
    ]
}

pub fn norm(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 2", vec![x(&[3, 4], 1)]),
        Sample::new("[2,3] p 1", vec![x(&[2, 3], 2)]).arg("p", float(1.0)),
        Sample::new("[5] p 3", vec![x(&[5], 3)]).arg("p", float(3.0)),
        Sample::new("0-d", vec![x(&[], 4)]).edge(),
    ]
}

pub fn norm_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("int64", vec![vals(&[3], DType::I64, 68)]),
        ErrorKind::DType,
        "Expected a floating point or complex tensor as input. Got Long",
    )]
}

pub fn norm_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| super::nonzero(s, dtype, seed);
    vec![
        Sample::new("[3,4] p 2 dim [1]", vec![x(&[3, 4], 1)])
            .arg("p", Arg::OptScalar(Some(Scalar::Float(2.0))))
            .arg("dim", ints(&[1])),
        Sample::new("[2,3,4] p None dims [0,2] keepdim", vec![x(&[2, 3, 4], 2)])
            .arg("p", Arg::OptScalar(None))
            .arg("dim", ints(&[0, 2]))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,4] p 1 dim [0]", vec![x(&[3, 4], 3)])
            .arg("p", Arg::OptScalar(Some(Scalar::Float(1.0))))
            .arg("dim", ints(&[0])),
        Sample::new("[0,3] dim [1]", vec![x(&[0, 3], 4)])
            .arg("p", Arg::OptScalar(None))
            .arg("dim", ints(&[1]))
            .edge(),
    ]
}

pub fn norm_dim_errors() -> Vec<ErrorSample> {
    norm_errors()
        .into_iter()
        .map(|e| {
            err(
                e.sample
                    .arg("p", Arg::OptScalar(None))
                    .arg("dim", ints(&[0])),
                e.kind,
                e.message,
            )
        })
        .collect()
}

/// mode(dim=-1, keepdim): the first three have distinct values (the mode is the smallest
/// element, a smooth choice for gradcheck); later ones repeat values, in rows shorter and
/// longer than 16, and (floats) hold NaNs.
pub fn mode(dtype: DType) -> Vec<Sample> {
    let d = |s: &[usize], seed| distinct(s, dtype, seed);
    let t = |s: &[usize], seed| super::ties(s, dtype, seed);
    let mut v = vec![
        Sample::new("[3,4] dim 1 distinct", vec![d(&[3, 4], 1)]).arg("dim", Arg::Int(1)),
        Sample::new("[4,3] dim 0 keepdim distinct", vec![d(&[4, 3], 2)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[2,3,4] default dim distinct", vec![d(&[2, 3, 4], 3)]),
        Sample::new("[4,6] dim 1 repeats", vec![t(&[4, 6], 4)]).arg("dim", Arg::Int(1)),
        Sample::new("[6,4] dim 0 keepdim repeats", vec![t(&[6, 4], 5)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true)),
        Sample::new("[3,5,2] dim 1 repeats", vec![t(&[3, 5, 2], 6)]).arg("dim", Arg::Int(1)),
        Sample::new("[7] repeats", vec![t(&[7], 7)]),
        Sample::new("[2,20] dim 1 repeats in long rows", vec![t(&[2, 20], 8)])
            .arg("dim", Arg::Int(1)),
        Sample::new("0-d", vec![d(&[], 9)]).edge(),
        Sample::new("0-d dim 0 keepdim", vec![d(&[], 10)])
            .arg("dim", Arg::Int(0))
            .arg("keepdim", Arg::Bool(true))
            .edge(),
        Sample::new("[0,3] dim 1", vec![d(&[0, 3], 11)])
            .arg("dim", Arg::Int(1))
            .edge(),
    ];
    if dtype.is_floating_point() {
        // A NaN counts once and ranks above every number; a row of NaNs gives its first.
        let n = f64::NAN;
        let x = Tensor::from(vec![n, 1.0, 1.0, n, n, n, 3.0, 2.0, n, n, n, n])
            .reshape([3, 4])
            .expect("shape")
            .to_dtype(dtype)
            .expect("cast");
        v.push(Sample::new("[3,4] dim 1 with NaNs", vec![x]).arg("dim", Arg::Int(1)));
    }
    v
}

pub fn mode_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new(
                "reducing a zero-size dim",
                vec![vals(&[3, 0], DType::F32, 81)],
            )
            .arg("dim", Arg::Int(1)),
            ErrorKind::Index,
            "mode(): Expected reduction dim 1 to have non-zero size.",
        ),
        err(
            Sample::new("dim 2 of 2-d", vec![vals(&[2, 3], DType::F32, 82)])
                .arg("dim", Arg::Int(2)),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}
