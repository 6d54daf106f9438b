//! Samples for advanced indexing, `index.Tensor` and `index_put` (src/ops/indexing.rs):
//! index lists of int64/int32 tensors, `None`s and bool/uint8 masks, adjacent and separated
//! advanced dims, broadcasting index tensors, negative indices.

use super::{err, index, mask, vals};
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
            vec![Some(index32(&[3, -4, 0, 2], &[2, 2]))],
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
