//! Samples for the reordering and padding ops of src/ops/shaping.rs (flip, roll, rot90,
//! diagonal, movedim, unfold, repeat_interleave, pad, ...), the Tensor-argument forms of
//! masked_fill, clamp and to, and the composites tril/triu, expand_as, swapaxes, repeat, tile.

use super::{err, f32v, index, ints, mask, opt_int, two, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

pub fn flip(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] dims [0]", vec![x(&[3, 4], 1)]).arg("dims", ints(&[0])),
        Sample::new("[2,3,4] dims [0,2]", vec![x(&[2, 3, 4], 2)]).arg("dims", ints(&[0, 2])),
        Sample::new("[5] dims [-1]", vec![x(&[5], 3)]).arg("dims", ints(&[-1])),
        Sample::new("[2,3] dims []", vec![x(&[2, 3], 4)]).arg("dims", ints(&[])),
        Sample::new("0-d dims [0]", vec![x(&[], 5)])
            .arg("dims", ints(&[0]))
            .edge(),
        Sample::new("[0,3] dims [1]", vec![x(&[0, 3], 6)])
            .arg("dims", ints(&[1]))
            .edge(),
    ]
}

pub fn flip_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("repeated dim", vec![f32v(&[2, 3], 7)]).arg("dims", ints(&[0, -2])),
            ErrorKind::Shape,
            "dim 0 appears multiple times in the list of dims",
        ),
        err(
            Sample::new("dim out of range", vec![f32v(&[2, 3], 8)]).arg("dims", ints(&[2])),
            ErrorKind::Index,
            "Dimension out of range",
        ),
    ]
}

pub fn flip_lr_ud(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[2,3,4]", vec![x(&[2, 3, 4], 2)]),
        Sample::new("[4,2]", vec![x(&[4, 2], 3)]),
        Sample::new("[0,2]", vec![x(&[0, 2], 4)]).edge(),
    ]
}

pub fn flip_lr_ud_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("0-d", vec![f32v(&[], 9)]),
        ErrorKind::Shape,
        "Input must be >= ",
    )]
}

pub fn roll(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] shift 1 dim 1", vec![x(&[3, 4], 1)])
            .arg("shifts", ints(&[1]))
            .arg("dims", ints(&[1])),
        Sample::new("[2,3,4] shifts [-1,5] dims [0,2]", vec![x(&[2, 3, 4], 2)])
            .arg("shifts", ints(&[-1, 5]))
            .arg("dims", ints(&[0, 2])),
        Sample::new("[3,4] shift 7 flattened", vec![x(&[3, 4], 3)]).arg("shifts", ints(&[7])),
        Sample::new("[5] shift -12 dim 0", vec![x(&[5], 4)])
            .arg("shifts", ints(&[-12]))
            .arg("dims", ints(&[0])),
        Sample::new("[0,3] shift 2 dim 0", vec![x(&[0, 3], 5)])
            .arg("shifts", ints(&[2]))
            .arg("dims", ints(&[0]))
            .edge(),
    ]
}

pub fn roll_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("2 shifts, 1 dim", vec![f32v(&[2, 3], 10)])
                .arg("shifts", ints(&[1, 2]))
                .arg("dims", ints(&[0])),
            ErrorKind::Shape,
            "shifts and dimensions must align. shifts: 2, dims:1",
        ),
        err(
            Sample::new("0-d along dim 0", vec![Tensor::from(1.0f32)])
                .arg("shifts", ints(&[1]))
                .arg("dims", ints(&[0])),
            ErrorKind::Index,
            "Dimension specified as 0 but tensor has no dimensions",
        ),
    ]
}

pub fn rot90(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] k 1", vec![x(&[3, 4], 1)]),
        Sample::new("[2,3,4] k 2 dims [1,2]", vec![x(&[2, 3, 4], 2)])
            .arg("k", Arg::Int(2))
            .arg("dims", ints(&[1, 2])),
        Sample::new("[3,2] k -1", vec![x(&[3, 2], 3)]).arg("k", Arg::Int(-1)),
        Sample::new("[2,3] k 4", vec![x(&[2, 3], 4)]).arg("k", Arg::Int(4)),
        Sample::new("[3,0] k 1", vec![x(&[3, 0], 5)]).edge(),
    ]
}

pub fn rot90_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("one dim", vec![f32v(&[2, 3], 11)]).arg("dims", ints(&[0])),
            ErrorKind::Shape,
            "expected total rotation dims == 2, but got dims = 1",
        ),
        err(
            Sample::new("same dims", vec![f32v(&[2, 3], 12)]).arg("dims", ints(&[0, -2])),
            ErrorKind::Shape,
            "expected rotation dims to be different",
        ),
        err(
            Sample::new("1-d input", vec![f32v(&[3], 13)]),
            ErrorKind::Shape,
            "expected total dims >= 2, but got total dims = 1",
        ),
    ]
}

pub fn diagonal(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[3,4] offset 1", vec![x(&[3, 4], 2)]).arg("offset", Arg::Int(1)),
        Sample::new("[2,3,4] offset -1 dims (2,1)", vec![x(&[2, 3, 4], 3)])
            .arg("offset", Arg::Int(-1))
            .arg("dim1", Arg::Int(2))
            .arg("dim2", Arg::Int(1)),
        Sample::new("[3,4,2] dims (0,-1)", vec![x(&[3, 4, 2], 4)])
            .arg("dim1", Arg::Int(0))
            .arg("dim2", Arg::Int(-1)),
        Sample::new("[3,4] offset 5 (empty)", vec![x(&[3, 4], 5)])
            .arg("offset", Arg::Int(5))
            .edge(),
        Sample::new("[0,3]", vec![x(&[0, 3], 6)]).edge(),
    ]
}

pub fn diagonal_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("same dims", vec![f32v(&[3, 3], 14)])
            .arg("dim1", Arg::Int(1))
            .arg("dim2", Arg::Int(-1)),
        ErrorKind::Shape,
        "diagonal dimensions cannot be identical 1, -1",
    )]
}

pub fn diag(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[4] -> matrix", vec![x(&[4], 1)]),
        Sample::new("[3,4] diagonal 1", vec![x(&[3, 4], 2)]).arg("diagonal", Arg::Int(1)),
        Sample::new("[3] diagonal -2", vec![x(&[3], 3)]).arg("diagonal", Arg::Int(-2)),
        Sample::new("[3] diagonal 1", vec![x(&[3], 4)]).arg("diagonal", Arg::Int(1)),
        Sample::new("[4,3] diagonal -1", vec![x(&[4, 3], 5)]).arg("diagonal", Arg::Int(-1)),
        Sample::new("[0]", vec![x(&[0], 6)]).edge(),
    ]
}

pub fn diag_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("3-d", vec![f32v(&[2, 2, 2], 15)]),
        ErrorKind::Shape,
        "diag(): Supports 1D or 2D tensors. Got 3D",
    )]
}

pub fn trace(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,3]", vec![x(&[3, 3], 1)]),
        Sample::new("[3,4]", vec![x(&[3, 4], 2)]),
        Sample::new("[4,2]", vec![x(&[4, 2], 3)]),
        Sample::new("[0,3]", vec![x(&[0, 3], 4)]).edge(),
    ]
}

pub fn trace_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("1-d", vec![f32v(&[3], 16)]),
        ErrorKind::Shape,
        "trace: expected a matrix, but got tensor with dim 1",
    )]
}

pub fn movedim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[2,3,4] 0 -> 2", vec![x(&[2, 3, 4], 1)])
            .arg("source", ints(&[0]))
            .arg("destination", ints(&[2])),
        Sample::new("[2,3,4,5] [0,1] -> [-1,0]", vec![x(&[2, 3, 4, 5], 2)])
            .arg("source", ints(&[0, 1]))
            .arg("destination", ints(&[-1, 0])),
        Sample::new("[3,4] [] -> []", vec![x(&[3, 4], 3)])
            .arg("source", ints(&[]))
            .arg("destination", ints(&[])),
        Sample::new("0-d 0 -> 0", vec![x(&[], 4)])
            .arg("source", ints(&[0]))
            .arg("destination", ints(&[0]))
            .edge(),
    ]
}

pub fn movedim_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("lengths differ", vec![f32v(&[2, 3], 17)])
                .arg("source", ints(&[0, 1]))
                .arg("destination", ints(&[0])),
            ErrorKind::Shape,
            "should contain the same number of dims as destination",
        ),
        err(
            Sample::new("repeated source", vec![f32v(&[2, 3], 18)])
                .arg("source", ints(&[0, 0]))
                .arg("destination", ints(&[0, 1])),
            ErrorKind::Shape,
            "movedim: repeated dim in `source` ([0, 0])",
        ),
    ]
}

pub fn broadcast_to(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3] to [2,3]", vec![x(&[3], 1)]).arg("size", ints(&[2, 3])),
        Sample::new("[1,2,3] to [4,2,3]", vec![x(&[1, 2, 3], 2)]).arg("size", ints(&[4, 2, 3])),
        Sample::new("[4] to [2,-1]", vec![x(&[4], 3)]).arg("size", ints(&[2, -1])),
        Sample::new("0-d to [2,2]", vec![x(&[], 4)])
            .arg("size", ints(&[2, 2]))
            .edge(),
    ]
}

pub fn broadcast_to_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("[3] to [4]", vec![f32v(&[3], 19)]).arg("size", ints(&[4])),
        ErrorKind::Shape,
        "must match the existing size (3) at non-singleton dimension 0",
    )]
}

pub fn unfold(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[7] size 3 step 2", vec![x(&[7], 1)])
            .arg("dimension", Arg::Int(0))
            .arg("size", Arg::Int(3))
            .arg("step", Arg::Int(2)),
        Sample::new("[3,5] dim 1 size 2 step 1", vec![x(&[3, 5], 2)])
            .arg("dimension", Arg::Int(1))
            .arg("size", Arg::Int(2))
            .arg("step", Arg::Int(1)),
        Sample::new("[4,3] dim 0 size 4 step 3", vec![x(&[4, 3], 3)])
            .arg("dimension", Arg::Int(0))
            .arg("size", Arg::Int(4))
            .arg("step", Arg::Int(3)),
        Sample::new("0-d size 1", vec![x(&[], 4)])
            .arg("dimension", Arg::Int(0))
            .arg("size", Arg::Int(1))
            .arg("step", Arg::Int(1))
            .edge(),
    ]
}

pub fn unfold_errors() -> Vec<ErrorSample> {
    let s = |size, step, seed| {
        Sample::new(format!("size {size} step {step}"), vec![f32v(&[3], seed)])
            .arg("dimension", Arg::Int(0))
            .arg("size", Arg::Int(size))
            .arg("step", Arg::Int(step))
    };
    vec![
        err(
            s(4, 1, 20),
            ErrorKind::Shape,
            "maximum size for tensor at dimension 0 is 3 but size is 4",
        ),
        err(s(2, 0, 21), ErrorKind::Value, "step is 0 but must be > 0"),
    ]
}

pub fn squeeze_dims(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    // Size-1 dims stay out of the last two, so the non-contiguous copy stays non-contiguous.
    vec![
        Sample::new("[1,1,3,4] dims [0,1]", vec![x(&[1, 1, 3, 4], 1)]).arg("dim", ints(&[0, 1])),
        Sample::new("[2,1,3,2] dims [1,-1]", vec![x(&[2, 1, 3, 2], 2)]).arg("dim", ints(&[1, -1])),
        Sample::new("[3,4] dims []", vec![x(&[3, 4], 3)]).arg("dim", ints(&[])),
        Sample::new("[1,3,1,4] dims [0,2]", vec![x(&[1, 3, 1, 4], 5)])
            .arg("dim", ints(&[0, 2]))
            .edge(),
        Sample::new("0-d dims [0]", vec![x(&[], 4)])
            .arg("dim", ints(&[0]))
            .edge(),
    ]
}

pub fn squeeze_dims_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("repeated", vec![f32v(&[1, 3], 22)]).arg("dim", ints(&[0, 0])),
        ErrorKind::Shape,
        "dim 0 appears multiple times in the list of dims",
    )]
}

pub fn narrow_tensor(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let start = |v: i64| Tensor::from(v);
    vec![
        Sample::new("[4,3] dim 0 start 1 len 2", vec![x(&[4, 3], 1), start(1)])
            .arg("dim", Arg::Int(0))
            .arg("length", Arg::Int(2)),
        Sample::new("[3,5] dim 1 start -3 len 3", vec![x(&[3, 5], 2), start(-3)])
            .arg("dim", Arg::Int(1))
            .arg("length", Arg::Int(3)),
        Sample::new("[5] start 0 len 5", vec![x(&[5], 3), start(0)])
            .arg("dim", Arg::Int(0))
            .arg("length", Arg::Int(5)),
        Sample::new("[3] start 3 len 0", vec![x(&[3], 4), start(3)])
            .arg("dim", Arg::Int(0))
            .arg("length", Arg::Int(0))
            .edge(),
    ]
}

pub fn narrow_tensor_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("float start", vec![f32v(&[3], 23), Tensor::from(1.0f32)])
            .arg("dim", Arg::Int(0))
            .arg("length", Arg::Int(1)),
        ErrorKind::DType,
        "start must be an 0-dim integral Tensor.",
    )]
}

pub fn masked_fill_tensor(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] mask [3,4]",
            vec![x(&[3, 4], 1), mask(&[3, 4], 2), x(&[], 3)],
        ),
        Sample::new(
            "[2,3,4] mask [4]",
            vec![x(&[2, 3, 4], 4), mask(&[4], 5), x(&[], 6)],
        ),
        Sample::new(
            "[5] mask 0-d",
            vec![x(&[5], 7), Tensor::from(true), x(&[], 8)],
        ),
        Sample::new(
            "[0,2] mask [2]",
            vec![x(&[0, 2], 9), mask(&[2], 10), x(&[], 11)],
        )
        .edge(),
        Sample::new(
            "[4] mask [3,4] (self broadcast)",
            vec![x(&[4], 12), mask(&[3, 4], 13), x(&[], 14)],
        ),
    ]
}

pub fn masked_fill_tensor_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "1-d value",
            vec![f32v(&[3], 37), mask(&[3], 38), f32v(&[1], 39)],
        ),
        ErrorKind::Shape, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).",
    )]
}

pub fn clamp_tensor(dtype: DType) -> Vec<Sample> {
    // Bounds and values are well apart so no element sits on a kink.
    let x = |s: &[usize], seed| super::distinct(s, dtype, seed);
    let lo = |s: &[usize], seed| {
        vals(s, dtype, seed)
            .sub_scalar(3)
            .expect("shift")
            .to_dtype(dtype)
            .expect("cast")
    };
    let hi = |s: &[usize], seed| {
        vals(s, dtype, seed)
            .add_scalar(3)
            .expect("shift")
            .to_dtype(dtype)
            .expect("cast")
    };
    vec![
        Sample::new(
            "[3,4] min [3,4] max [4]",
            vec![x(&[3, 4], 1), lo(&[3, 4], 2), hi(&[4], 3)],
        ),
        Sample::new("[2,3] min [3]", vec![x(&[2, 3], 4), lo(&[3], 5)]),
        Sample::new(
            "[4] min 0-d max 0-d",
            vec![x(&[4], 6), lo(&[], 7), hi(&[], 8)],
        ),
        Sample::new("[0,3] min [3]", vec![x(&[0, 3], 9), lo(&[3], 10)]).edge(),
    ]
}

pub fn clamp_tensor_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("no bounds", vec![f32v(&[3], 40)]),
        ErrorKind::Value,
        "torch.clamp: At least one of 'min' or 'max' must not be None",
    )]
}

pub fn to_other(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] to float64",
            vec![x(&[3, 4], 1), vals(&[2], DType::F64, 2)],
        ),
        Sample::new("[4] to own dtype, copy", vec![x(&[4], 5), x(&[1], 6)])
            .arg("copy", Arg::Bool(true)),
        Sample::new(
            "[2,2] to float64 (0-d other)",
            vec![x(&[2, 2], 9), vals(&[], DType::F64, 10)],
        ),
        Sample::new(
            "[2,3] to float32",
            vec![x(&[2, 3], 3), vals(&[], DType::F32, 4)],
        ),
        Sample::new("0-d to int64", vec![x(&[], 7), vals(&[1], DType::I64, 8)]).edge(),
    ]
}

pub fn to_other_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn repeat_interleave(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] x2 dim 0", vec![x(&[3, 4], 1)])
            .arg("repeats", Arg::Int(2))
            .arg("dim", opt_int(Some(0))),
        Sample::new("[2,3] x3 flattened", vec![x(&[2, 3], 2)]).arg("repeats", Arg::Int(3)),
        Sample::new("[2,3,2] x2 dim -1", vec![x(&[2, 3, 2], 3)])
            .arg("repeats", Arg::Int(2))
            .arg("dim", opt_int(Some(-1))),
        Sample::new("0-d x3", vec![x(&[], 4)])
            .arg("repeats", Arg::Int(3))
            .edge(),
        Sample::new("[2,3] x0 dim 1", vec![x(&[2, 3], 5)])
            .arg("repeats", Arg::Int(0))
            .arg("dim", opt_int(Some(1)))
            .edge(),
    ]
}

pub fn repeat_interleave_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("negative repeats", vec![f32v(&[3], 41)]).arg("repeats", Arg::Int(-1)),
        ErrorKind::Value,
        "repeats can not be negative",
    )]
}

pub fn repeat_interleave_tensor(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] by [1,0,2] dim 0",
            vec![x(&[3, 4], 1), index(&[1, 0, 2], &[3])],
        )
        .arg("dim", opt_int(Some(0))),
        Sample::new(
            "[2,3] by 0-d 2 flattened",
            vec![x(&[2, 3], 2), Tensor::from(2i64)],
        ),
        Sample::new(
            "[2,3] by [3,1,1] dim 1",
            vec![x(&[2, 3], 3), index(&[3, 1, 1], &[3])],
        )
        .arg("dim", opt_int(Some(1))),
        Sample::new("[0] by [0]", vec![x(&[0], 4), index(&[], &[0])]).edge(),
    ]
}

pub fn repeat_interleave_tensor_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("2 counts for 3", vec![f32v(&[3], 42), index(&[1, 1], &[2])])
            .arg("dim", opt_int(Some(0))),
        ErrorKind::Shape, "repeats must have the same size as input along dim, but got repeats.size(0) = 2 and input.size(0) = 3",
    )]
}

pub fn pad(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    let mut v = vec![
        Sample::new("[2,3] constant (1,2)", vec![x(&[2, 3], 1)]).arg("pad", ints(&[1, 2])),
        Sample::new("[2,3,4] reflect (2,1,1,2)", vec![x(&[2, 3, 4], 2)])
            .arg("pad", ints(&[2, 1, 1, 2]))
            .arg("mode", Arg::Str("reflect")),
        Sample::new("[2,3,4] replicate (1,3)", vec![x(&[2, 3, 4], 3)])
            .arg("pad", ints(&[1, 3]))
            .arg("mode", Arg::Str("replicate")),
        Sample::new("[2,3,4] circular (2,-1,3,0)", vec![x(&[2, 3, 4], 4)])
            .arg("pad", ints(&[2, -1, 3, 0]))
            .arg("mode", Arg::Str("circular")),
        Sample::new("[3,4] constant (-1,1,1,0) value 2", vec![x(&[3, 4], 5)])
            .arg("pad", ints(&[-1, 1, 1, 0]))
            .arg("value", Arg::Float(2.0)),
        Sample::new("[0,2] constant (0,0,1,1)", vec![x(&[0, 2], 6)])
            .arg("pad", ints(&[0, 0, 1, 1]))
            .edge(),
    ];
    if dtype.is_floating_point() {
        v.push(
            Sample::new("[2,2,3] reflect (2,2)", vec![x(&[2, 2, 3], 7)])
                .arg("pad", ints(&[2, 2]))
                .arg("mode", Arg::Str("reflect")),
        );
    }
    v
}

pub fn pad_errors() -> Vec<ErrorSample> {
    let s = |pad: &[i64], mode: &'static str, seed| {
        Sample::new(format!("{mode} {pad:?}"), vec![f32v(&[2, 3], seed)])
            .arg("pad", ints(pad))
            .arg("mode", Arg::Str(mode))
    };
    vec![
        err(
            s(&[1], "constant", 43),
            ErrorKind::Shape,
            "Padding length must be divisible by 2",
        ),
        err(
            s(&[3, 0], "reflect", 44),
            ErrorKind::Shape,
            "Padding size should be less than the corresponding input dimension",
        ),
        err(
            s(&[1, 1], "wrap", 45),
            ErrorKind::Value,
            "Unrecognised padding mode wrap",
        ),
        err(
            s(&[1, 1, 1, 1, 1, 1], "constant", 46),
            ErrorKind::Shape,
            "Padding length should be less than or equal to two times the input dimension",
        ),
    ]
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
