//! Samples for joining and splitting: cat, stack, split, chunk, unbind, meshgrid.

use super::{err, f32v, ints, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

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
