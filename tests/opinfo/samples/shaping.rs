//! Samples for the reordering, view, splitting, indexing and padding ops of
//! src/ops/shaping.rs.

use super::{err, index, ints, mask, opt_int, rand_index, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

fn f32v(shape: &[usize], seed: u64) -> Tensor {
    vals(shape, DType::F32, seed)
}

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

pub fn split(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[5,3] size 2", vec![x(&[5, 3], 1)]).arg("split_size", Arg::Int(2)),
        Sample::new("[3,4] size 2 dim 1", vec![x(&[3, 4], 2)])
            .arg("split_size", Arg::Int(2))
            .arg("dim", Arg::Int(1)),
        Sample::new("[4] size 5", vec![x(&[4], 3)]).arg("split_size", Arg::Int(5)),
        Sample::new("[0,2] size 0", vec![x(&[0, 2], 4)])
            .arg("split_size", Arg::Int(0))
            .edge(),
    ]
}

pub fn split_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("negative size", vec![f32v(&[3], 24)]).arg("split_size", Arg::Int(-1)),
            ErrorKind::Shape,
            "split expects split_size be non-negative, but got split_size=-1",
        ),
        err(
            Sample::new("0-d", vec![f32v(&[], 25)]).arg("split_size", Arg::Int(1)),
            ErrorKind::Shape,
            "split expects at least a 1-dimensional tensor",
        ),
    ]
}

pub fn split_with_sizes(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[5,3] sizes [2,3]", vec![x(&[5, 3], 1)]).arg("split_sizes", ints(&[2, 3])),
        Sample::new("[3,4] sizes [1,0,3] dim 1", vec![x(&[3, 4], 2)])
            .arg("split_sizes", ints(&[1, 0, 3]))
            .arg("dim", Arg::Int(1)),
        Sample::new("[4] sizes [4]", vec![x(&[4], 3)]).arg("split_sizes", ints(&[4])),
        Sample::new("[0] sizes [0,0]", vec![x(&[0], 4)])
            .arg("split_sizes", ints(&[0, 0]))
            .edge(),
    ]
}

pub fn split_with_sizes_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("sizes sum to 2 of 3", vec![f32v(&[3], 26)]).arg("split_sizes", ints(&[1, 1])),
        ErrorKind::Shape, "split_with_sizes expects split_sizes to sum exactly to 3 (input tensor's size at dimension 0), but got split_sizes=[1, 1]",
    )]
}

pub fn chunk(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[5,3] 2 chunks", vec![x(&[5, 3], 1)]).arg("chunks", Arg::Int(2)),
        Sample::new("[3,6] 3 chunks dim -1", vec![x(&[3, 6], 2)])
            .arg("chunks", Arg::Int(3))
            .arg("dim", Arg::Int(-1)),
        Sample::new("[2] 5 chunks", vec![x(&[2], 3)]).arg("chunks", Arg::Int(5)),
        Sample::new("[0,2] 3 chunks", vec![x(&[0, 2], 4)])
            .arg("chunks", Arg::Int(3))
            .edge(),
    ]
}

pub fn chunk_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("0 chunks", vec![f32v(&[3], 27)]).arg("chunks", Arg::Int(0)),
        ErrorKind::Value,
        "chunk expects `chunks` to be greater than 0, got: 0",
    )]
}

pub fn unbind(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4]", vec![x(&[3, 4], 1)]),
        Sample::new("[2,3,4] dim -1", vec![x(&[2, 3, 4], 2)]).arg("dim", Arg::Int(-1)),
        Sample::new("[4]", vec![x(&[4], 3)]),
        Sample::new("[0,3] dim 1", vec![x(&[0, 3], 4)])
            .arg("dim", Arg::Int(1))
            .edge(),
    ]
}

pub fn unbind_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new("0-d", vec![f32v(&[], 28)]),
        ErrorKind::Index,
        "Dimension specified as 0 but tensor has no dimensions",
    )]
}

pub fn meshgrid(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::with_lists("[3] x [4]", vec![vec![x(&[3], 1), x(&[4], 2)]]),
        Sample::with_lists(
            "[2] x [3] x [4] xy",
            vec![vec![x(&[2], 3), x(&[3], 4), x(&[4], 5)]],
        )
        .arg("indexing", Arg::Str("xy")),
        Sample::with_lists("[3] x 0-d", vec![vec![x(&[3], 6), x(&[], 7)]]),
        Sample::with_lists("[0] x [2]", vec![vec![x(&[0], 8), x(&[2], 9)]]).edge(),
    ]
}

pub fn meshgrid_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::with_lists("2-d input", vec![vec![f32v(&[2, 2], 29)]]),
            ErrorKind::Shape,
            "torch.meshgrid: Expected 0D or 1D tensor in the input list but got: [2, 2]",
        ),
        err(
            Sample::with_lists("bad indexing", vec![vec![f32v(&[2], 30)]])
                .arg("indexing", Arg::Str("yx")),
            ErrorKind::Value,
            "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: yx",
        ),
    ]
}

pub fn take(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] by [2,2]",
            vec![x(&[3, 4], 1), index(&[0, 11, 5, 5], &[2, 2])],
        ),
        Sample::new(
            "[5] by [3] negative",
            vec![x(&[5], 2), index(&[-1, 0, -5], &[3])],
        ),
        Sample::new("[2,3] by 0-d", vec![x(&[2, 3], 3), Tensor::from(4i64)]),
        Sample::new("[2,3] by [0]", vec![x(&[2, 3], 4), index(&[], &[0])]).edge(),
    ]
}

pub fn take_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("index 6 of 6", vec![f32v(&[2, 3], 31), index(&[6], &[1])]),
            ErrorKind::Index,
            "out of range: tried to access index 6 on a tensor of 6 elements.",
        ),
        err(
            Sample::new(
                "int32 index",
                vec![f32v(&[2, 3], 32), Tensor::from(vec![1i32])],
            ),
            ErrorKind::DType,
            "take(): Expected a long tensor for index, but got Int",
        ),
    ]
}

pub fn take_along_dim(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new(
            "[3,4] by [3,2] dim 1",
            vec![x(&[3, 4], 1), rand_index(&[3, 2], 4, 2)],
        )
        .arg("dim", opt_int(Some(1))),
        Sample::new(
            "[2,3,4] by [1,3,2] dim -1 (broadcast)",
            vec![x(&[2, 3, 4], 3), rand_index(&[1, 3, 2], 4, 4)],
        )
        .arg("dim", opt_int(Some(-1))),
        Sample::new(
            "[3,4] flattened",
            vec![x(&[3, 4], 5), rand_index(&[5], 12, 6)],
        ),
        Sample::new(
            "[3,4] by [3,0] dim 1",
            vec![x(&[3, 4], 7), index(&[], &[3, 0])],
        )
        .arg("dim", opt_int(Some(1)))
        .edge(),
        Sample::new(
            "[3,4] by [3,2] dim 1, negative and past-the-end (taken modulo 4)",
            vec![x(&[3, 4], 8), index(&[-1, 3, -4, 5, 2, -6], &[3, 2])],
        )
        .arg("dim", opt_int(Some(1))),
    ]
}

pub fn take_along_dim_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("ranks differ", vec![f32v(&[2, 3], 33), index(&[0], &[1])])
                .arg("dim", opt_int(Some(0))),
            ErrorKind::Shape, "input and indices should have the same number of dimensions, but got 2 dimensions for input, and 1 dimensions for indices",
        ),
        err(
            Sample::new(
                "int32 indices with a dim",
                vec![f32v(&[2, 3], 34), Tensor::from(vec![0i32, 1]).reshape([2, 1]).expect("shape")],
            )
            .arg("dim", opt_int(Some(1))),
            ErrorKind::DType, "torch.take_along_dim(): dtype of indices should be Long but got Int",
        ),
        err(
            Sample::new("0-d input", vec![Tensor::from(1.0f32), index(&[0], &[])])
                .arg("dim", opt_int(Some(0))),
            ErrorKind::Index, "Dimension specified as 0 but tensor has no dimensions",
        ),
        err(
            Sample::new("size-0 dim", vec![f32v(&[3, 0], 35), index(&[0], &[1, 1])])
                .arg("dim", opt_int(Some(1))),
            ErrorKind::Value, "ZeroDivisionError",
        ),
    ]
}

pub fn one_hot(_dtype: DType) -> Vec<Sample> {
    vec![
        Sample::new("[4] inferred", vec![index(&[0, 2, 1, 2], &[4])]),
        Sample::new("[2,3] 5 classes", vec![index(&[4, 0, 1, 3, 3, 2], &[2, 3])])
            .arg("num_classes", Arg::Int(5)),
        Sample::new("0-d 3 classes", vec![Tensor::from(1i64)])
            .arg("num_classes", Arg::Int(3))
            .edge(),
        Sample::new("[0] 2 classes", vec![index(&[], &[0])])
            .arg("num_classes", Arg::Int(2))
            .edge(),
    ]
}

pub fn one_hot_errors() -> Vec<ErrorSample> {
    vec![
        err(
            Sample::new("class 3 of 3", vec![index(&[0, 3], &[2])]).arg("num_classes", Arg::Int(3)),
            ErrorKind::Value,
            "Class values must be smaller than num_classes.",
        ),
        err(
            Sample::new("negative class", vec![index(&[-1], &[1])]),
            ErrorKind::Value,
            "Class values must be non-negative.",
        ),
        err(
            Sample::new("float input", vec![f32v(&[2], 34)]),
            ErrorKind::DType,
            "one_hot is only applicable to index tensor of type LongTensor.",
        ),
    ]
}

pub fn nonzero_values(dtype: DType) -> Vec<Sample> {
    let z = |s: &[usize], seed| super::discrete(s, dtype, -1, 2, 1.0, seed);
    vec![
        Sample::new("[3,4]", vec![z(&[3, 4], 1)]),
        Sample::new("[2,3,2]", vec![z(&[2, 3, 2], 2)]),
        Sample::new("[5]", vec![z(&[5], 3)]),
        Sample::new("0-d", vec![z(&[], 4)]).edge(),
        Sample::new("[0,3]", vec![z(&[0, 3], 5)]).edge(),
    ]
}

pub fn nonzero_values_errors() -> Vec<ErrorSample> {
    vec![]
}

pub fn masked_select(dtype: DType) -> Vec<Sample> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        Sample::new("[3,4] mask [3,4]", vec![x(&[3, 4], 1), mask(&[3, 4], 2)]),
        Sample::new(
            "[2,3] mask [4,2,3] (broadcast)",
            vec![x(&[2, 3], 3), mask(&[4, 2, 3], 4)],
        ),
        Sample::new("[2,3,4] mask [4]", vec![x(&[2, 3, 4], 5), mask(&[4], 6)]),
        Sample::new("0-d mask 0-d", vec![x(&[], 7), Tensor::from(true)]).edge(),
    ]
}

pub fn masked_select_errors() -> Vec<ErrorSample> {
    vec![err(
        Sample::new(
            "uint8 mask",
            vec![f32v(&[3], 35), vals(&[3], DType::U8, 36)],
        ),
        ErrorKind::DType,
        "masked_select: expected BoolTensor for mask",
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
