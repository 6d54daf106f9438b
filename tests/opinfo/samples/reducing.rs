//! Samples for the reductions: sum, mean, max/min, argmax, sum_to_size, var/std, logsumexp,
//! all/any and those of src/ops/reducing.rs.

use super::{distinct, err, float, from_f64, ints, make, nonzero, opt_int, ties, vals};
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
        Sample::new(
            "[40,3,5,6] dims [0,2,3] (a conv bias gradient)",
            vec![x(&[40, 3, 5, 6], 12)],
        )
        .arg("dim", ints(&[0, 2, 3]))
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
// Composites: var/std, logsumexp, all/any
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
