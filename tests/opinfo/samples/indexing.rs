//! Samples for advanced indexing, `index.Tensor` and `index_put` (src/ops/indexing.rs):
//! index lists of int64/int32 tensors, `None`s and bool/uint8 masks, adjacent and separated
//! advanced dims, broadcasting index tensors, negative indices. Also index_select, gather, take,
//! take_along_dim, one_hot, nonzero and masked_select.

use super::{err, f32v, index, make, mask, opt_int, rand_index, vals};
use crate::harness::{Arg, ErrorSample, Sample};
use kiln::{DType, ErrorKind, Tensor};

/// A uint8 mask of `shape` holding `v`.
fn byte_mask(v: &[u8], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).expect("mask shape")
}

/// An int32 index tensor.
fn index32(v: &[i32], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape).expect("index shape")
}

/// `self` and index lists shared by `index` and `index_put` (description, self, indices,
/// edge): none picks a position twice, so `index_put` without `accumulate` is deterministic.
fn index_cases(dtype: DType) -> Vec<(&'static str, Tensor, Vec<Option<Tensor>>, bool)> {
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    vec![
        (
            "[5,4] [i] i=[4,0,-2]",
            x(&[5, 4], 1),
            vec![Some(index(&[4, 0, -2], &[3]))],
            false,
        ),
        (
            "[3,4,5] [:, i, j] adjacent, i [2,3] j [3] broadcast",
            x(&[3, 4, 5], 2),
            vec![
                None,
                Some(index(&[0, 1, 2, 3, -1, 1], &[2, 3])),
                Some(index(&[4, 0, -3], &[3])),
            ],
            false,
        ),
        (
            "[3,4,5] [i, :, j] separated, index dims first",
            x(&[3, 4, 5], 3),
            vec![
                Some(index(&[2, 0], &[2])),
                None,
                Some(index(&[1, -1], &[2])),
            ],
            false,
        ),
        (
            "[3,4] bool mask [3,4]",
            x(&[3, 4], 4),
            vec![Some(mask(&[3, 4], 5))],
            false,
        ),
        (
            "[3,4,2] mask [3,4] then index 1",
            x(&[3, 4, 2], 6),
            vec![Some(mask(&[3, 4], 7)), Some(index(&[1], &[1]))],
            false,
        ),
        (
            "[4,3] [:, uint8 mask]",
            x(&[4, 3], 8),
            vec![None, Some(byte_mask(&[1, 0, 1], &[3]))],
            false,
        ),
        (
            "[4,5] int32 index [2,2]",
            x(&[4, 5], 9),
            vec![Some(index32(&[3, -3, 0, 2], &[2, 2]))],
            false,
        ),
        (
            "[2,3,4] [:, :, i]",
            x(&[2, 3, 4], 10),
            vec![None, None, Some(index(&[3, 1], &[2]))],
            false,
        ),
        (
            "[3,4] 0-d index 1",
            x(&[3, 4], 11),
            vec![Some(Tensor::from(1i64))],
            false,
        ),
        (
            "[3] 0-d mask true adds a dim",
            x(&[3], 12),
            vec![Some(Tensor::from(true))],
            false,
        ),
        (
            "[2,4,4] [:, i, j] with i [2,2,3] j [2,3]",
            x(&[2, 4, 4], 13),
            vec![
                None,
                Some(index(&[0, 0, 1, 1, 2, 2, 1, 1, 0, 0, 3, 3], &[2, 2, 3])),
                Some(index(&[0, 1, 2, -1, 0, 1], &[2, 3])),
            ],
            false,
        ),
        (
            "[0,3] [empty i]",
            x(&[0, 3], 14),
            vec![Some(index(&[], &[0]))],
            true,
        ),
        (
            "[3,4] [empty i]",
            x(&[3, 4], 15),
            vec![Some(index(&[], &[0]))],
            true,
        ),
        (
            "0-d [0-d mask false]",
            x(&[], 16),
            vec![Some(Tensor::from(false))],
            true,
        ),
    ]
}

/// index(self, indices) (`index.Tensor`).
pub fn index_tensor(dtype: DType) -> Vec<Sample> {
    index_cases(dtype)
        .into_iter()
        .map(|(desc, x, list, edge)| {
            let s = Sample::new(desc, vec![x]).with_opt_list(list);
            if edge {
                s.edge()
            } else {
                s
            }
        })
        .collect()
}

fn index_error(desc: &str, shape: &[usize], list: Vec<Option<Tensor>>) -> Sample {
    Sample::new(desc, vec![vals(shape, DType::F32, 170)]).with_opt_list(list)
}

/// Inputs `index` and `index_put` both reject, with PyTorch's messages.
/// Every one is an `IndexError` in PyTorch, so their kind is `ErrorKind::Index`.
fn index_list_errors() -> Vec<(Sample, &'static str)> {
    vec![
        (
            index_error("index 5 of size 3", &[3, 4], vec![Some(index(&[0, 5], &[2]))]),
            "index 5 is out of bounds for dimension 0 with size 3",
        ),
        (
            // PyTorch numbers the dim among the index tensors, not among self's dims.
            index_error(
                "[:, -4] of size 3",
                &[2, 3],
                vec![None, Some(index(&[-4], &[1]))],
            ),
            "index -4 is out of bounds for dimension 0 with size 3",
        ),
        (
            index_error(
                "float index",
                &[3, 4],
                vec![Some(Tensor::from(vec![1.0f32]))],
            ),
            "tensors used as indices must be long, int, byte or bool tensors",
        ),
        (
            index_error(
                "two indices into 1 dim",
                &[3],
                vec![Some(index(&[0], &[1])), Some(index(&[0], &[1]))],
            ),
            "too many indices for tensor of dimension 1 (got 2)",
        ),
        (
            index_error("mask [3,3] on [3,4]", &[3, 4], vec![Some(mask(&[3, 3], 171))]),
            "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 4] at index 1",
        ),
        (
            index_error(
                "indices [2] and [3]",
                &[3, 4],
                vec![Some(index(&[0, 1], &[2])), Some(index(&[0, 1, 2], &[3]))],
            ),
            "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]",
        ),
        (
            index_error("no index", &[3, 4], vec![]),
            "at least one index must be provided",
        ),
        (
            index_error("[0,3] [i]", &[0, 3], vec![Some(index(&[0], &[1]))]),
            "index is out of bounds for dimension with size 0",
        ),
    ]
}

pub fn index_tensor_errors() -> Vec<ErrorSample> {
    index_list_errors()
        .into_iter()
        .map(|(s, m)| err(s, ErrorKind::Index, m))
        .collect()
}

/// index_put(self, indices, values, accumulate): every `index` case with values of the
/// indexed shape (or broadcast to it), written and accumulated; then repeated positions,
/// which only `accumulate` (or one value for all of them) makes deterministic.
pub fn index_put(dtype: DType) -> Vec<Sample> {
    let mut out = Vec::new();
    for (i, (desc, x, list, edge)) in index_cases(dtype).into_iter().enumerate() {
        let sample = Sample::new(desc, vec![x.clone()]).with_opt_list(list.clone());
        // The indexed shape, from the float64 reference; leading 1s dropped (values broadcast).
        let full = crate::refs::index(&sample).remove(0).shape;
        let shape: Vec<usize> = full.iter().copied().skip_while(|&d| d == 1).collect();
        for accumulate in [false, true] {
            let v = vals(&shape, dtype, 300 + 2 * i as u64 + accumulate as u64);
            let s = Sample::new(
                format!("{desc}, values {shape:?}, accumulate {accumulate}"),
                vec![x.clone(), v],
            )
            .with_opt_list(list.clone())
            .arg("accumulate", Arg::Bool(accumulate));
            out.push(if edge { s.edge() } else { s });
        }
    }
    let x = |s: &[usize], seed| vals(s, dtype, seed);
    out.extend([
        Sample::new(
            "[4,3] [i] repeated, values [3] broadcast, accumulate",
            vec![x(&[4, 3], 20), x(&[3], 21)],
        )
        .with_opt_list(vec![Some(index(&[1, -3, 2, 1], &[4]))])
        .arg("accumulate", Arg::Bool(true)),
        Sample::new(
            "[4,3] [i, j] repeated, accumulate",
            vec![x(&[4, 3], 22), x(&[5], 23)],
        )
        .with_opt_list(vec![
            Some(index(&[0, 0, 3, 0, 3], &[5])),
            Some(index(&[2, 2, 1, 2, 1], &[5])),
        ])
        .arg("accumulate", Arg::Bool(true)),
        Sample::new(
            "[3,4] [mask] = 0-d value, written",
            vec![x(&[3, 4], 24), x(&[], 25)],
        )
        .with_opt_list(vec![Some(mask(&[3, 4], 26))])
        .arg("accumulate", Arg::Bool(false)),
        Sample::new(
            "[4,3] [i] repeated = one row, written",
            vec![x(&[4, 3], 27), x(&[3], 28)],
        )
        .with_opt_list(vec![Some(index(&[2, 0, -2], &[3]))])
        .arg("accumulate", Arg::Bool(false)),
    ]);
    out
}

pub fn index_put_errors() -> Vec<ErrorSample> {
    let with_values = |(s, m): (Sample, &'static str)| {
        let v = vals(&[], DType::F32, 172);
        let mut s = s;
        s.tensors.push(v);
        err(s.arg("accumulate", Arg::Bool(false)), ErrorKind::Index, m)
    };
    let mut out: Vec<ErrorSample> = index_list_errors().into_iter().map(with_values).collect();
    let x = || vals(&[3, 4], DType::F32, 173);
    out.extend([
        err(
            Sample::new("values [3] for [2,4]", vec![x(), vals(&[3], DType::F32, 174)])
                .with_opt_list(vec![Some(index(&[0, 2], &[2]))])
                .arg("accumulate", Arg::Bool(false)),
            ErrorKind::Shape, "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2, 4]",
        ),
        err(
            Sample::new("float64 values", vec![x(), vals(&[4], DType::F64, 175)])
                .with_opt_list(vec![Some(index(&[1], &[1]))])
                .arg("accumulate", Arg::Bool(true)),
            ErrorKind::DType, "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.",
        ),
    ]);
    out
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
