//! Float64 references for advanced indexing (src/ops/indexing.rs), NumPy's rules spelled out
//! per result element: the result's multi-index splits into the index-tensor part and the
//! whole dims, and each indexed dim's coordinate is read from its (broadcast) index tensor.

use super::numel;
use crate::harness::{RefTensor, Sample};
use kiln::{DType, Tensor};

/// One dim of the indexed tensor, as an index list treats it.
enum Entry {
    /// Taken whole (`None`, or a dim past the end of the list).
    Whole,
    /// Coordinates along the dim, of the index's own shape (broadcast with the others).
    Picked(RefTensor),
}

/// The element of `x` at `idx`, `x` broadcast (right-aligned, size-1 dims read at 0).
fn broadcast_at(x: &RefTensor, idx: &[usize]) -> f64 {
    let lead = idx.len() - x.shape.len();
    let j: Vec<usize> = x
        .shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { 0 } else { idx[lead + d] })
        .collect();
    x.data[x.ravel(&j)]
}

/// NumPy's broadcast of `shapes`.
fn broadcast(shapes: &[&[usize]]) -> Vec<usize> {
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = vec![1; nd];
    for s in shapes {
        for (i, &n) in s.iter().enumerate() {
            let d = nd - s.len() + i;
            if out[d] == 1 {
                out[d] = n;
            } else {
                assert!(n == 1 || n == out[d], "reference: indices do not broadcast");
            }
        }
    }
    out
}

/// The dims of a tensor of `x_shape` under `list`: masks become one coordinate list per dim
/// they cover (their true elements in row-major order), a 0-d mask a new dim of size 1 taken
/// at `[0]` (true) or `[]` (false). Returns the dims' sizes with each dim's entry.
fn resolve(x_shape: &[usize], list: &[Option<Tensor>]) -> (Vec<usize>, Vec<Entry>) {
    let mut sizes = vec![];
    let mut entries = vec![];
    let mut next = x_shape.iter();
    for e in list {
        let Some(t) = e else {
            sizes.push(*next.next().expect("reference: too many indices"));
            entries.push(Entry::Whole);
            continue;
        };
        let r = RefTensor::of(t);
        if !matches!(t.dtype(), DType::Bool | DType::U8) {
            sizes.push(*next.next().expect("reference: too many indices"));
            entries.push(Entry::Picked(r));
            continue;
        }
        if r.shape.is_empty() {
            let taken = if r.data[0] != 0.0 { vec![0.0] } else { vec![] };
            sizes.push(1);
            entries.push(Entry::Picked(RefTensor {
                shape: vec![taken.len()],
                data: taken,
            }));
            continue;
        }
        let hits: Vec<Vec<usize>> = (0..r.data.len())
            .filter(|&i| r.data[i] != 0.0)
            .map(|i| r.unravel(i))
            .collect();
        for j in 0..r.shape.len() {
            sizes.push(*next.next().expect("reference: too many indices"));
            entries.push(Entry::Picked(RefTensor {
                shape: vec![hits.len()],
                data: hits.iter().map(|h| h[j] as f64).collect(),
            }));
        }
    }
    for &n in next {
        sizes.push(n);
        entries.push(Entry::Whole);
    }
    (sizes, entries)
}

/// The shape of `x[list]` and, for each of its elements in row-major order, the flat
/// position of `x` it reads.
fn positions(x_shape: &[usize], list: &[Option<Tensor>]) -> (Vec<usize>, Vec<usize>) {
    let (sizes, entries) = resolve(x_shape, list);
    let picked: Vec<usize> = (0..entries.len())
        .filter(|&d| matches!(entries[d], Entry::Picked(_)))
        .collect();
    let shapes: Vec<&[usize]> = entries
        .iter()
        .filter_map(|e| match e {
            Entry::Picked(r) => Some(r.shape.as_slice()),
            Entry::Whole => None,
        })
        .collect();
    let b = broadcast(&shapes);
    // Adjacent indexed dims keep their place; separated ones go first.
    let adjacent = match (picked.first(), picked.last()) {
        (Some(f), Some(l)) => l - f + 1 == picked.len(),
        _ => true,
    };
    let at = if adjacent {
        picked.first().copied().unwrap_or(0)
    } else {
        0
    };
    let whole: Vec<usize> = (0..sizes.len()).filter(|d| !picked.contains(d)).collect();
    let whole_sizes: Vec<usize> = whole.iter().map(|&d| sizes[d]).collect();
    let mut shape = whole_sizes[..at].to_vec();
    shape.extend(&b);
    shape.extend(&whole_sizes[at..]);

    let frame = RefTensor {
        shape: shape.clone(),
        data: vec![],
    };
    let work = RefTensor {
        shape: sizes.clone(),
        data: vec![],
    };
    let reads = (0..numel(&shape))
        .map(|i| {
            let r = frame.unravel(i);
            let bi = &r[at..at + b.len()];
            let mut whole_coords = r[..at].iter().chain(&r[at + b.len()..]);
            let coord: Vec<usize> = entries
                .iter()
                .zip(&sizes)
                .map(|(e, &n)| match e {
                    Entry::Whole => *whole_coords.next().expect("one per whole dim"),
                    Entry::Picked(t) => {
                        let v = broadcast_at(t, bi) as i64;
                        (if v < 0 { v + n as i64 } else { v }) as usize
                    }
                })
                .collect();
            work.ravel(&coord)
        })
        .collect();
    (shape, reads)
}

/// index(self, indices): `x[indices]`.
pub fn index(s: &Sample) -> Vec<RefTensor> {
    let x = RefTensor::of(s.t(0));
    let (shape, reads) = positions(&x.shape, &s.opt_lists[0]);
    vec![RefTensor {
        shape,
        data: reads.iter().map(|&p| x.data[p]).collect(),
    }]
}

/// index_put(self, indices, values, accumulate): `x` with `values` (broadcast to the shape
/// of `x[indices]`) written, or added, at the positions `x[indices]` reads, in row-major
/// order of the result.
pub fn index_put(s: &Sample) -> Vec<RefTensor> {
    let (x, values) = (RefTensor::of(s.t(0)), RefTensor::of(s.t(1)));
    let accumulate = s.flag("accumulate").unwrap_or(false);
    let (shape, reads) = positions(&x.shape, &s.opt_lists[0]);
    let frame = RefTensor {
        shape,
        data: vec![],
    };
    let mut out = x.clone();
    for (i, &p) in reads.iter().enumerate() {
        let v = broadcast_at(&values, &frame.unravel(i));
        if accumulate {
            out.data[p] += v;
        } else {
            out.data[p] = v;
        }
    }
    vec![out]
}
