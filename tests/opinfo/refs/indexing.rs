//! Float64 references for advanced indexing (src/ops/indexing.rs), NumPy's rules spelled out
//! per result element: the result's multi-index splits into the index-tensor part and the
//! whole dims, and each indexed dim's coordinate is read from its (broadcast) index tensor.
//! Also index_select, gather, take, take_along_dim, one_hot, nonzero and masked_select.

use super::{as_index, at, at_broadcast, broadcast, input, numel, tabulate, with_shape, wrap};
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
fn broadcast_shapes(shapes: &[&[usize]]) -> Vec<usize> {
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
    let b = broadcast_shapes(&shapes);
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

/// index_select(self, dim, index): `out[.., r, ..] = self[.., index[r], ..]`; a 0-d self
/// gives its single value.
pub fn index_select(s: &Sample) -> Vec<RefTensor> {
    let (x, index) = (input(s, 0), input(s, 1));
    if x.shape.is_empty() {
        return vec![x];
    }
    let d = wrap(s.int("dim").expect("sample provides dim"), x.shape.len());
    let mut shape = x.shape.clone();
    shape[d] = index.data.len();
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] = as_index(index.data[ix[d]]);
        at(&x, &j)
    })]
}

/// gather(self, dim, index): `out[p] = self[p with p[dim] = index[p]]`, of the index's shape.
pub fn gather(s: &Sample) -> Vec<RefTensor> {
    let (x, index) = (input(s, 0), input(s, 1));
    if x.shape.is_empty() {
        return vec![with_shape(
            RefTensor {
                shape: vec![],
                data: vec![x.data[0]; index.data.len()],
            },
            index.shape.clone(),
        )];
    }
    let d = wrap(s.int("dim").expect("sample provides dim"), x.shape.len());
    vec![tabulate(index.shape.clone(), |ix| {
        let mut j = ix.to_vec();
        j[d] = as_index(at(&index, ix));
        at(&x, &j)
    })]
}

pub fn take(s: &Sample) -> Vec<RefTensor> {
    let (x, idx) = (input(s, 0), input(s, 1));
    let n = x.data.len() as f64;
    let data = idx
        .data
        .iter()
        .map(|&i| x.data[if i < 0.0 { i + n } else { i } as usize])
        .collect();
    vec![RefTensor {
        shape: idx.shape,
        data,
    }]
}

pub fn take_along_dim(s: &Sample) -> Vec<RefTensor> {
    let (x, idx) = (input(s, 0), input(s, 1));
    let Some(d) = s.opt_int("dim").unwrap_or(None) else {
        return vec![RefTensor {
            shape: vec![idx.data.len()],
            data: idx.data.iter().map(|&i| x.data[i as usize]).collect(),
        }];
    };
    let d = wrap(d, x.shape.len());
    // Broadcast shape, with the index's size along d.
    let shape: Vec<usize> = (0..x.shape.len())
        .map(|k| {
            if k == d {
                idx.shape[k]
            } else {
                x.shape[k].max(idx.shape[k])
            }
        })
        .collect();
    vec![tabulate(shape, |ix| {
        let ji: Vec<usize> = (0..ix.len())
            .map(|k| if idx.shape[k] == 1 { 0 } else { ix[k] })
            .collect();
        let mut jx: Vec<usize> = (0..ix.len())
            .map(|k| if x.shape[k] == 1 { 0 } else { ix[k] })
            .collect();
        jx[d] = (at(&idx, &ji) as i64).rem_euclid(x.shape[d] as i64) as usize;
        at(&x, &jx)
    })]
}

pub fn one_hot(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let c = match s.int("num_classes").unwrap_or(-1) {
        -1 => x.data.iter().cloned().fold(-1.0, f64::max) as usize + 1,
        c => c as usize,
    };
    let mut shape = x.shape.clone();
    shape.push(c);
    vec![tabulate(shape, |ix| {
        let k = ix[ix.len() - 1];
        (at(&x, &ix[..ix.len() - 1]) as usize == k) as u8 as f64
    })]
}

pub fn nonzero(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let mut data = Vec::new();
    let mut rows = 0;
    for i in 0..x.data.len() {
        if x.data[i] != 0.0 {
            rows += 1;
            data.extend(x.unravel(i).iter().map(|&c| c as f64));
        }
    }
    vec![RefTensor {
        shape: vec![rows, nd],
        data,
    }]
}

pub fn masked_select(s: &Sample) -> Vec<RefTensor> {
    let (x, m) = (input(s, 0), input(s, 1));
    let shape = broadcast(&x.shape, &m.shape);
    let frame = tabulate(shape.clone(), |_| 0.0);
    let data: Vec<f64> = (0..numel(&shape))
        .map(|i| frame.unravel(i))
        .filter(|ix| at_broadcast(&m, ix) != 0.0)
        .map(|ix| at_broadcast(&x, &ix))
        .collect();
    vec![RefTensor {
        shape: vec![data.len()],
        data,
    }]
}
