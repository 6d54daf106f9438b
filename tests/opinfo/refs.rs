//! Float64 references for the ops that are not pointwise: plain loops over row-major
//! values (`RefTensor`), written without kiln ops. Each takes a `Sample` and reads the op's
//! arguments by schema name, with the schema's defaults; it returns one `RefTensor` per op
//! output.

#![allow(dead_code)]

use crate::harness::{RefTensor, Sample};

#[path = "refs/elementwise.rs"]
mod elementwise;
#[path = "refs/indexing.rs"]
mod indexing;
#[path = "refs/linalg.rs"]
mod linalg;
#[path = "refs/losses.rs"]
mod losses;
#[path = "refs/nn.rs"]
mod nn;
#[path = "refs/norm.rs"]
mod norm;
#[path = "refs/shaping.rs"]
mod shaping;
#[path = "refs/sorting.rs"]
mod sorting;
pub use elementwise::*;
pub use indexing::*;
use kiln::DType;
pub use linalg::*;
pub use losses::*;
pub use nn::*;
pub use norm::*;
pub use shaping::*;
pub use sorting::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Wraps a possibly negative dim into `0..n` (a 0-d tensor accepts 0 and -1).
fn wrap(dim: i64, n: usize) -> usize {
    let m = n.max(1) as i64;
    assert!(
        dim >= -m && dim < m,
        "reference: dim {dim} out of range for {n} dims"
    );
    (if dim < 0 { dim + m } else { dim }) as usize
}

fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The values of sample tensor `i`.
fn input(s: &Sample, i: usize) -> RefTensor {
    RefTensor::of(s.t(i))
}

/// A tensor of `shape` whose element at each multi-index is `f(index)`.
fn tabulate(shape: Vec<usize>, mut f: impl FnMut(&[usize]) -> f64) -> RefTensor {
    let frame = RefTensor {
        shape,
        data: vec![],
    };
    let data = (0..numel(&frame.shape))
        .map(|i| f(&frame.unravel(i)))
        .collect();
    RefTensor {
        shape: frame.shape,
        data,
    }
}

/// The element of `x` at a multi-index.
fn at(x: &RefTensor, idx: &[usize]) -> f64 {
    x.data[x.ravel(idx)]
}

/// The same values with another shape.
fn with_shape(x: RefTensor, shape: Vec<usize>) -> RefTensor {
    assert_eq!(
        numel(&shape),
        x.data.len(),
        "reference: reshape to {shape:?}"
    );
    RefTensor {
        shape,
        data: x.data,
    }
}

fn scalar(v: f64) -> RefTensor {
    RefTensor {
        shape: vec![],
        data: vec![v],
    }
}

/// A `view`/`reshape` size list with at most one -1, resolved against `n` elements.
fn infer_sizes(sizes: &[i64], n: usize) -> Vec<usize> {
    let known: usize = sizes
        .iter()
        .filter(|&&s| s >= 0)
        .map(|&s| s as usize)
        .product();
    sizes
        .iter()
        .map(|&s| {
            if s < 0 {
                n.checked_div(known).unwrap_or(0)
            } else {
                s as usize
            }
        })
        .collect()
}

/// Which dims a reduction over `dims` collapses (all of them for an empty list).
fn reduced_mask(dims: &[i64], ndim: usize) -> Vec<bool> {
    if dims.is_empty() {
        return vec![true; ndim];
    }
    let mut mask = vec![false; ndim];
    for &d in dims {
        let w = wrap(d, ndim);
        if w < ndim {
            mask[w] = true;
        }
    }
    mask
}

/// The elements of `x` grouped by output position of a reduction over the masked dims:
/// (output shape, each output's inputs in row-major order). Along a single reduced dim an
/// element's position in its group is its index along that dim; reducing every dim, it is
/// the flat index.
fn groups(x: &RefTensor, mask: &[bool], keepdim: bool) -> (Vec<usize>, Vec<Vec<f64>>) {
    let nd = x.shape.len();
    let mut out_shape = vec![];
    for (&size, &reduced) in x.shape.iter().zip(mask) {
        if !reduced {
            out_shape.push(size);
        } else if keepdim {
            out_shape.push(1);
        }
    }
    let frame = RefTensor {
        shape: out_shape.clone(),
        data: vec![],
    };
    let mut gs = vec![vec![]; numel(&out_shape)];
    for (i, &v) in x.data.iter().enumerate() {
        let idx = x.unravel(i);
        let oidx: Vec<usize> = (0..nd)
            .filter(|&d| !mask[d] || keepdim)
            .map(|d| if mask[d] { 0 } else { idx[d] })
            .collect();
        gs[frame.ravel(&oidx)].push(v);
    }
    (out_shape, gs)
}

/// Position and value of the largest (`max`) or smallest element: the first NaN if any,
/// else the first occurrence of the extreme.
fn extreme(g: &[f64], max: bool) -> (usize, f64) {
    if let Some(i) = g.iter().position(|v| v.is_nan()) {
        return (i, f64::NAN);
    }
    let mut best = 0;
    for (i, &v) in g.iter().enumerate() {
        if (max && v > g[best]) || (!max && v < g[best]) {
            best = i;
        }
    }
    (best, g[best])
}

fn keepdim(s: &Sample) -> bool {
    s.flag("keepdim").unwrap_or(false)
}

// ---------------------------------------------------------------------------------------
// Copies and conversion
// ---------------------------------------------------------------------------------------

/// clone, contiguous: the input's values.
pub fn identity(s: &Sample) -> Vec<RefTensor> {
    vec![input(s, 0)]
}

/// to(dtype): integers truncate toward zero, bool is `x != 0`, floats keep the value (the
/// comparison tolerance covers rounding to the target).
/// to(device) moves values without changing them.
pub fn to_device(s: &Sample) -> Vec<RefTensor> {
    vec![input(s, 0)]
}

pub fn to_dtype(s: &Sample) -> Vec<RefTensor> {
    let target = s.dtype("dtype").expect("sample provides dtype");
    let mut x = input(s, 0);
    for v in &mut x.data {
        *v = match target {
            DType::Bool => (*v != 0.0) as u8 as f64,
            d if d.is_floating_point() => *v,
            _ => v.trunc(),
        };
    }
    vec![x]
}

// ---------------------------------------------------------------------------------------
// Reductions
// ---------------------------------------------------------------------------------------

/// sum(): the sum of every element (0 when empty).
pub fn sum_all(s: &Sample) -> Vec<RefTensor> {
    vec![scalar(input(s, 0).data.iter().sum())]
}

/// mean(): the sum over the count (NaN when empty).
pub fn mean_all(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(x.data.iter().sum::<f64>() / x.data.len() as f64)]
}

fn reduce_dims(s: &Sample, f: impl Fn(&[f64]) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dims = s.ints("dim").expect("sample provides dim");
    let (shape, gs) = groups(&x, &reduced_mask(dims, x.shape.len()), keepdim(s));
    vec![RefTensor {
        shape,
        data: gs.iter().map(|g| f(g)).collect(),
    }]
}

/// sum(dim, keepdim).
pub fn sum_dim(s: &Sample) -> Vec<RefTensor> {
    reduce_dims(s, |g| g.iter().sum())
}

/// mean(dim, keepdim): NaN for an empty group.
pub fn mean_dim(s: &Sample) -> Vec<RefTensor> {
    reduce_dims(s, |g| g.iter().sum::<f64>() / g.len() as f64)
}

fn extreme_all(s: &Sample, max: bool) -> Vec<RefTensor> {
    vec![scalar(extreme(&input(s, 0).data, max).1)]
}

/// max(): the largest element.
pub fn max_all(s: &Sample) -> Vec<RefTensor> {
    extreme_all(s, true)
}

/// min(): the smallest element.
pub fn min_all(s: &Sample) -> Vec<RefTensor> {
    extreme_all(s, false)
}

fn extreme_dim(s: &Sample, max: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dim = s.int("dim").expect("sample provides dim");
    let (shape, gs) = groups(&x, &reduced_mask(&[dim], x.shape.len()), keepdim(s));
    let picks: Vec<(usize, f64)> = gs.iter().map(|g| extreme(g, max)).collect();
    vec![
        RefTensor {
            shape: shape.clone(),
            data: picks.iter().map(|p| p.1).collect(),
        },
        RefTensor {
            shape,
            data: picks.iter().map(|p| p.0 as f64).collect(),
        },
    ]
}

/// max(dim, keepdim): values and indices (first occurrence on ties).
pub fn max_dim(s: &Sample) -> Vec<RefTensor> {
    extreme_dim(s, true)
}

/// min(dim, keepdim): values and indices (first occurrence on ties).
pub fn min_dim(s: &Sample) -> Vec<RefTensor> {
    extreme_dim(s, false)
}

/// mode(dim=-1, keepdim): per group, the value occurring most often (the smallest of the
/// most frequent; a NaN equals nothing, so counts once, and ranks above every number) and
/// its last position, counted pairwise.
pub fn mode(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dim = s.int("dim").unwrap_or(-1);
    let (shape, gs) = groups(&x, &reduced_mask(&[dim], x.shape.len()), keepdim(s));
    let mut values = vec![];
    let mut indices = vec![];
    for g in &gs {
        // (count, value, position) of the best candidate so far.
        let mut best: Option<(usize, f64, usize)> = None;
        for (i, &v) in g.iter().enumerate() {
            let count = g.iter().filter(|&&w| w == v).count(); // 0 for NaN
            let count = count.max(1);
            let better = match best {
                None => true,
                Some((bc, _, _)) if count != bc => count > bc,
                Some((_, bv, _)) if bv.is_nan() => !v.is_nan(),
                Some((_, bv, _)) => !v.is_nan() && v <= bv,
            };
            if better {
                best = Some((count, v, i));
            }
        }
        let (_, v, i) = best.expect("mode of a non-empty group");
        values.push(v);
        indices.push(i as f64);
    }
    vec![
        RefTensor {
            shape: shape.clone(),
            data: values,
        },
        RefTensor {
            shape,
            data: indices,
        },
    ]
}

fn arg_extreme(s: &Sample, max: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    match s.opt_int("dim").unwrap_or(None) {
        None => {
            let i = extreme(&x.data, max).0 as f64;
            let shape = if keepdim(s) { vec![1; nd] } else { vec![] };
            vec![RefTensor {
                shape,
                data: vec![i],
            }]
        }
        Some(d) => {
            let (shape, gs) = groups(&x, &reduced_mask(&[d], nd), keepdim(s));
            vec![RefTensor {
                shape,
                data: gs.iter().map(|g| extreme(g, max).0 as f64).collect(),
            }]
        }
    }
}

/// argmax(dim, keepdim): into the flattened tensor when `dim` is None.
pub fn argmax(s: &Sample) -> Vec<RefTensor> {
    arg_extreme(s, true)
}

/// argmin(dim, keepdim): into the flattened tensor when `dim` is None.
pub fn argmin(s: &Sample) -> Vec<RefTensor> {
    arg_extreme(s, false)
}

/// sum_to_size(size): each element added into the target position it broadcasts from.
pub fn sum_to_size(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let target: Vec<usize> = s
        .ints("size")
        .expect("sample provides size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let lead = x.shape.len() - target.len();
    let mut out = RefTensor {
        shape: target.clone(),
        data: vec![0.0; numel(&target)],
    };
    for (i, &v) in x.data.iter().enumerate() {
        let idx = x.unravel(i);
        let oidx: Vec<usize> = (0..target.len())
            .map(|j| if target[j] == 1 { 0 } else { idx[lead + j] })
            .collect();
        let p = out.ravel(&oidx);
        out.data[p] += v;
    }
    vec![out]
}

// ---------------------------------------------------------------------------------------
// Softmax
// ---------------------------------------------------------------------------------------

/// softmax (or its log) along `dim`, max-shifted for stability. A 0-d input is a group of
/// one.
fn softmax_impl(s: &Sample, log: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let d = wrap(s.int("dim").expect("sample provides dim"), nd);
    let out = tabulate(x.shape.clone(), |idx| {
        let line: Vec<f64> = if nd == 0 {
            vec![x.data[0]]
        } else {
            (0..x.shape[d])
                .map(|k| {
                    let mut j = idx.to_vec();
                    j[d] = k;
                    at(&x, &j)
                })
                .collect()
        };
        let m = line.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let z: f64 = line.iter().map(|v| (v - m).exp()).sum();
        let v = at(&x, idx);
        if log {
            v - m - z.ln()
        } else {
            (v - m).exp() / z
        }
    });
    vec![out]
}

/// softmax / _softmax along `dim`.
pub fn softmax(s: &Sample) -> Vec<RefTensor> {
    softmax_impl(s, false)
}

/// log_softmax / _log_softmax along `dim`.
pub fn log_softmax(s: &Sample) -> Vec<RefTensor> {
    softmax_impl(s, true)
}

// ---------------------------------------------------------------------------------------
// Linear algebra
// ---------------------------------------------------------------------------------------

/// mm: `out[i][j] = Σ_k a[i][k] b[k][j]`.
pub fn mm(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let (k, m) = (a.shape[1], b.shape[1]);
    vec![tabulate(vec![a.shape[0], m], |ix| {
        (0..k)
            .map(|kk| at(&a, &[ix[0], kk]) * at(&b, &[kk, ix[1]]))
            .sum()
    })]
}

/// bmm: one mm per batch entry.
pub fn bmm(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let k = a.shape[2];
    vec![tabulate(vec![a.shape[0], a.shape[1], b.shape[2]], |ix| {
        (0..k)
            .map(|kk| at(&a, &[ix[0], ix[1], kk]) * at(&b, &[ix[0], kk, ix[2]]))
            .sum()
    })]
}

/// matmul with NumPy semantics: a 1-d first operand is a row, a 1-d second a column (both
/// dropped from the result), and the leading batch dims broadcast.
pub fn matmul(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let (da, db) = (a.shape.len(), b.shape.len());
    let a = if da == 1 {
        with_shape(a.clone(), vec![1, a.shape[0]])
    } else {
        a
    };
    let b = if db == 1 {
        with_shape(b.clone(), vec![b.shape[0], 1])
    } else {
        b
    };
    let (ra, rb) = (a.shape.len(), b.shape.len());
    let (n, k, m) = (a.shape[ra - 2], a.shape[ra - 1], b.shape[rb - 1]);
    let (ba, bb) = (&a.shape[..ra - 2], &b.shape[..rb - 2]);
    let nb = ba.len().max(bb.len());
    let dim_of = |sh: &[usize], i: usize| {
        if i + sh.len() >= nb {
            sh[i + sh.len() - nb]
        } else {
            1
        }
    };
    let batch: Vec<usize> = (0..nb)
        .map(|i| {
            let (x, y) = (dim_of(ba, i), dim_of(bb, i));
            if x == 1 {
                y
            } else {
                x
            }
        })
        .collect();
    // Index into an operand's batch dims for an output batch index (size-1 dims broadcast).
    let batch_idx = |sh: &[usize], bi: &[usize]| -> Vec<usize> {
        let lead = nb - sh.len();
        (0..sh.len())
            .map(|j| if sh[j] == 1 { 0 } else { bi[lead + j] })
            .collect()
    };
    let mut shape = batch.clone();
    shape.extend([n, m]);
    let full = tabulate(shape, |ix| {
        let bi = &ix[..nb];
        let (i, j) = (ix[nb], ix[nb + 1]);
        let mut ia = batch_idx(ba, bi);
        ia.extend([i, 0]);
        let mut ib = batch_idx(bb, bi);
        ib.extend([0, j]);
        (0..k)
            .map(|kk| {
                ia[ra - 1] = kk;
                ib[rb - 2] = kk;
                at(&a, &ia) * at(&b, &ib)
            })
            .sum()
    });
    let mut out_shape = batch;
    if da != 1 {
        out_shape.push(n);
    }
    if db != 1 {
        out_shape.push(m);
    }
    vec![with_shape(full, out_shape)]
}

// ---------------------------------------------------------------------------------------
// Joining and indexing
// ---------------------------------------------------------------------------------------

/// cat(tensors, dim): 1-d empty inputs are skipped (PyTorch's legacy rule).
pub fn cat(s: &Sample) -> Vec<RefTensor> {
    let parts: Vec<RefTensor> = s
        .list(0)
        .iter()
        .map(RefTensor::of)
        .filter(|r| !(r.shape.len() == 1 && r.shape[0] == 0))
        .collect();
    if parts.is_empty() {
        return vec![RefTensor {
            shape: vec![0],
            data: vec![],
        }];
    }
    let d = wrap(s.int("dim").unwrap_or(0), parts[0].shape.len());
    let mut shape = parts[0].shape.clone();
    shape[d] = parts.iter().map(|p| p.shape[d]).sum();
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        for p in &parts {
            if j[d] < p.shape[d] {
                return at(p, &j);
            }
            j[d] -= p.shape[d];
        }
        unreachable!("index inside the concatenation")
    })]
}

/// stack(tensors, dim): a new dim at `dim` indexing the tensors.
pub fn stack(s: &Sample) -> Vec<RefTensor> {
    let parts: Vec<RefTensor> = s.list(0).iter().map(RefTensor::of).collect();
    let d = wrap(s.int("dim").unwrap_or(0), parts[0].shape.len() + 1);
    let mut shape = parts[0].shape.clone();
    shape.insert(d, parts.len());
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        let k = j.remove(d);
        at(&parts[k], &j)
    })]
}

fn as_index(v: f64) -> usize {
    assert!(v >= 0.0, "reference: negative index {v}");
    v as usize
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

/// A 0-d tensor seen as shape [1] (scatter/gather's convention).
fn at_least_1d(x: RefTensor) -> RefTensor {
    if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    }
}

/// scatter_add(self, dim, index, src): for every position `p` of the index,
/// `out[p with p[dim] = index[p]] += src[p]`.
pub fn scatter_add(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = x.shape.clone();
    let (mut out, index, src) = (
        at_least_1d(x),
        at_least_1d(input(s, 1)),
        at_least_1d(input(s, 2)),
    );
    let d = wrap(s.int("dim").expect("sample provides dim"), shape.len());
    for i in 0..index.data.len() {
        let p = index.unravel(i);
        let mut t = p.clone();
        t[d] = as_index(index.data[i]);
        let o = out.ravel(&t);
        out.data[o] += at(&src, &p);
    }
    vec![with_shape(out, shape)]
}

/// index_add(self, dim, index, source, alpha): `out[.., index[r], ..] += alpha * source[.., r, ..]`.
pub fn index_add(s: &Sample) -> Vec<RefTensor> {
    let (mut out, index, source) = (input(s, 0), input(s, 1), input(s, 2));
    let alpha = s.scalar("alpha").map(|a| a.to_f64()).unwrap_or(1.0);
    if out.shape.is_empty() {
        out.data[0] += alpha * source.data[0];
        return vec![out];
    }
    let d = wrap(s.int("dim").expect("sample provides dim"), out.shape.len());
    for (q, &v) in source.data.iter().enumerate() {
        let mut t = source.unravel(q);
        t[d] = as_index(index.data[t[d]]);
        let o = out.ravel(&t);
        out.data[o] += alpha * v;
    }
    vec![out]
}

// ---------------------------------------------------------------------------------------
// Views and their backwards
// ---------------------------------------------------------------------------------------

/// view(size): the same row-major values with the new shape.
pub fn view(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = infer_sizes(s.ints("size").expect("sample provides size"), x.data.len());
    vec![with_shape(x, shape)]
}

/// reshape(shape): as view.
pub fn reshape(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = infer_sizes(
        s.ints("shape").expect("sample provides shape"),
        x.data.len(),
    );
    vec![with_shape(x, shape)]
}

/// permute(dims): `out[i_0, ..] = x[j]` with `j[dims[k]] = i_k`.
pub fn permute(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let dims: Vec<usize> = s
        .ints("dims")
        .expect("sample provides dims")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let shape: Vec<usize> = dims.iter().map(|&d| x.shape[d]).collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0; nd];
        for (k, &d) in dims.iter().enumerate() {
            j[d] = ix[k];
        }
        at(&x, &j)
    })]
}

fn swap_dims(x: RefTensor, a: usize, b: usize) -> RefTensor {
    let mut shape = x.shape.clone();
    shape.swap(a, b);
    tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j.swap(a, b);
        at(&x, &j)
    })
}

/// transpose(dim0, dim1).
pub fn transpose(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let (a, b) = (
        wrap(s.int("dim0").expect("dim0"), nd),
        wrap(s.int("dim1").expect("dim1"), nd),
    );
    if nd == 0 {
        return vec![x];
    }
    vec![swap_dims(x, a, b)]
}

/// t(): transpose of a matrix; 0-d and 1-d unchanged.
pub fn t(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    if x.shape.len() < 2 {
        return vec![x];
    }
    vec![swap_dims(x, 0, 1)]
}

/// unsqueeze(dim): a size-1 dim inserted at `dim` (which may be ndim).
pub fn unsqueeze(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(
        s.int("dim").expect("sample provides dim"),
        x.shape.len() + 1,
    );
    let mut shape = x.shape.clone();
    shape.insert(d, 1);
    vec![with_shape(x, shape)]
}

/// squeeze(): every size-1 dim dropped.
pub fn squeeze(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape: Vec<usize> = x.shape.iter().copied().filter(|&n| n != 1).collect();
    vec![with_shape(x, shape)]
}

/// squeeze(dim): `dim` dropped if it has size 1.
pub fn squeeze_dim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("sample provides dim"), x.shape.len());
    let mut shape = x.shape.clone();
    if !shape.is_empty() && shape[d] == 1 {
        shape.remove(d);
    }
    vec![with_shape(x, shape)]
}

/// expand(size): new leading dims and size-1 dims repeat; -1 keeps a size.
pub fn expand(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let size = s.ints("size").expect("sample provides size");
    let lead = size.len() - x.shape.len();
    let shape: Vec<usize> = size
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            if n == -1 {
                x.shape[i - lead]
            } else {
                n as usize
            }
        })
        .collect();
    vec![tabulate(shape, |ix| {
        let j: Vec<usize> = (0..x.shape.len())
            .map(|k| if x.shape[k] == 1 { 0 } else { ix[lead + k] })
            .collect();
        at(&x, &j)
    })]
}

/// narrow(dim, start, length): `length` entries from `start` (negative counts from the end).
pub fn narrow(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let start = s.int("start").expect("start");
    let start = if start < 0 {
        start + x.shape[d] as i64
    } else {
        start
    } as usize;
    let mut shape = x.shape.clone();
    shape[d] = s.int("length").expect("length") as usize;
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] += start;
        at(&x, &j)
    })]
}

/// select(dim, index): `dim` removed at `index` (negative counts from the end).
pub fn select(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let i = s.int("index").expect("index");
    let i = if i < 0 { i + x.shape[d] as i64 } else { i } as usize;
    let mut shape = x.shape.clone();
    shape.remove(d);
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j.insert(d, i);
        at(&x, &j)
    })]
}

/// Python's slice bounds for a dim of `size`: (start, number of elements).
fn slice_bounds(size: usize, start: Option<i64>, end: Option<i64>, step: i64) -> (usize, usize) {
    let n = size as i64;
    let clamp = |v: i64| if v < 0 { (v + n).max(0) } else { v.min(n) };
    let b = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(n)).max(b);
    (b as usize, ((e - b + step - 1) / step) as usize)
}

/// slice(dim=0, start=None, end=None, step=1) with Python's clamping.
pub fn slice(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let step = s.int("step").unwrap_or(1);
    let (b, len) = slice_bounds(
        x.shape[d],
        s.opt_int("start").unwrap_or(None),
        s.opt_int("end").unwrap_or(None),
        step,
    );
    let mut shape = x.shape.clone();
    shape[d] = len;
    vec![tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] = b + ix[d] * step as usize;
        at(&x, &j)
    })]
}

/// as_strided(size, stride, storage_offset): reads the input's row-major values as the
/// storage (samples pass contiguous inputs at offset 0).
pub fn as_strided(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let size: Vec<usize> = s
        .ints("size")
        .expect("size")
        .iter()
        .map(|&v| v as usize)
        .collect();
    let stride = s.ints("stride").expect("stride").to_vec();
    let offset = s.opt_int("storage_offset").unwrap_or(None).unwrap_or(0) as usize;
    vec![tabulate(size, |ix| {
        let p: usize = ix
            .iter()
            .zip(&stride)
            .map(|(&i, &st)| i * st as usize)
            .sum();
        x.data[offset + p]
    })]
}

/// flatten(start_dim=0, end_dim=-1); a 0-d input becomes [1].
pub fn flatten(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    if nd == 0 {
        return vec![with_shape(x, vec![1])];
    }
    let (a, b) = (
        wrap(s.int("start_dim").unwrap_or(0), nd),
        wrap(s.int("end_dim").unwrap_or(-1), nd),
    );
    let mut shape = x.shape[..a].to_vec();
    shape.push(numel(&x.shape[a..=b]));
    shape.extend_from_slice(&x.shape[b + 1..]);
    vec![with_shape(x, shape)]
}

/// unflatten(dim, sizes): `dim` split into `sizes` (one may be -1).
pub fn unflatten(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let inner = infer_sizes(s.ints("sizes").expect("sizes"), x.shape[d]);
    let mut shape = x.shape[..d].to_vec();
    shape.extend(inner);
    shape.extend_from_slice(&x.shape[d + 1..]);
    vec![with_shape(x, shape)]
}

fn input_sizes(s: &Sample) -> Vec<usize> {
    s.ints("input_sizes")
        .expect("sample provides input_sizes")
        .iter()
        .map(|&v| v as usize)
        .collect()
}

/// slice_backward: zeros of `input_sizes` with grad_output at `start, start + step, ...`.
pub fn slice_backward(s: &Sample) -> Vec<RefTensor> {
    let g = input(s, 0);
    let sizes = input_sizes(s);
    let d = wrap(s.int("dim").expect("dim"), sizes.len());
    let step = s.int("step").expect("step");
    let (b, _) = slice_bounds(sizes[d], s.int("start"), s.int("end"), step);
    let mut out = RefTensor {
        shape: sizes.clone(),
        data: vec![0.0; numel(&sizes)],
    };
    for (i, &v) in g.data.iter().enumerate() {
        let mut j = g.unravel(i);
        j[d] = b + j[d] * step as usize;
        let o = out.ravel(&j);
        out.data[o] = v;
    }
    vec![out]
}

/// select_backward: zeros of `input_sizes` with grad_output at `index` along `dim`.
pub fn select_backward(s: &Sample) -> Vec<RefTensor> {
    let g = input(s, 0);
    let sizes = input_sizes(s);
    let d = wrap(s.int("dim").expect("dim"), sizes.len());
    let i = s.int("index").expect("index");
    let i = if i < 0 { i + sizes[d] as i64 } else { i } as usize;
    let mut out = RefTensor {
        shape: sizes.clone(),
        data: vec![0.0; numel(&sizes)],
    };
    for (k, &v) in g.data.iter().enumerate() {
        let mut j = g.unravel(k);
        j.insert(d, i);
        let o = out.ravel(&j);
        out.data[o] = v;
    }
    vec![out]
}

fn map_input(s: &Sample, f: impl Fn(f64) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![RefTensor {
        shape: x.shape.clone(),
        data: x.data.iter().map(|&v| f(v)).collect(),
    }]
}

/// relu6: `min(max(x, 0), 6)`.
pub fn relu6(s: &Sample) -> Vec<RefTensor> {
    map_input(s, |x| x.clamp(0.0, 6.0))
}

/// selu with the constants of Klambauer et al. (2017), to f64 precision.
pub fn selu(s: &Sample) -> Vec<RefTensor> {
    let alpha = 1.673_263_242_354_377_3;
    let scale = 1.050_700_987_355_480_5;
    map_input(s, |x| {
        if x > 0.0 {
            scale * x
        } else {
            scale * alpha * (x.exp() - 1.0)
        }
    })
}

/// celu: `max(0, x) + min(0, alpha (e^(x / alpha) - 1))`.
pub fn celu(s: &Sample) -> Vec<RefTensor> {
    let alpha = s.scalar("alpha").map_or(1.0, |a| a.to::<f64>());
    map_input(s, |x| {
        x.max(0.0) + (alpha * ((x / alpha).exp() - 1.0)).min(0.0)
    })
}

// ---------------------------------------------------------------------------------------
// Composites
// ---------------------------------------------------------------------------------------

fn opt_dims(s: &Sample) -> Vec<i64> {
    s.opt_ints("dim")
        .flatten()
        .map(|d| d.to_vec())
        .unwrap_or_default()
}

fn variance(g: &[f64], correction: f64) -> f64 {
    let n = g.len() as f64;
    let mean = g.iter().sum::<f64>() / n;
    g.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - correction).max(0.0)
}

fn correction(s: &Sample) -> f64 {
    s.opt_scalar("correction")
        .flatten()
        .map_or(1.0, |c| c.to::<f64>())
}

fn grouped(s: &Sample, dims: &[i64], f: impl Fn(&[f64]) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    let (shape, gs) = groups(&x, &reduced_mask(dims, x.shape.len()), keepdim(s));
    vec![RefTensor {
        shape,
        data: gs.iter().map(|g| f(g)).collect(),
    }]
}

pub fn var(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    grouped(s, &opt_dims(s), |g| variance(g, c))
}

pub fn std_dev(s: &Sample) -> Vec<RefTensor> {
    let c = correction(s);
    grouped(s, &opt_dims(s), |g| variance(g, c).sqrt())
}

/// logsumexp, shifted by the group maximum in f64.
pub fn logsumexp(s: &Sample) -> Vec<RefTensor> {
    let dims = s.ints("dim").expect("sample provides dim").to_vec();
    grouped(s, &dims, |g| {
        let m = g.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        m + g.iter().map(|v| (v - m).exp()).sum::<f64>().ln()
    })
}

/// all/any return bool (uint8 for uint8 input; the comparison reads values, so 0/1 either way).
pub fn all(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(if x.data.iter().all(|&v| v != 0.0) {
        1.0
    } else {
        0.0
    })]
}

pub fn any(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    vec![scalar(if x.data.iter().any(|&v| v != 0.0) {
        1.0
    } else {
        0.0
    })]
}

fn triangle(s: &Sample, lower: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = s.int("diagonal").unwrap_or(0);
    let n = x.shape.len();
    vec![tabulate(x.shape.clone(), |ix| {
        let off = ix[n - 1] as i64 - ix[n - 2] as i64;
        let keep = if lower { off <= d } else { off >= d };
        if keep {
            at(&x, ix)
        } else {
            0.0
        }
    })]
}

pub fn tril(s: &Sample) -> Vec<RefTensor> {
    triangle(s, true)
}

pub fn triu(s: &Sample) -> Vec<RefTensor> {
    triangle(s, false)
}

/// Elementwise `f` of two tensors broadcast against each other (NumPy rules).
fn broadcast2(s: &Sample, f: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    let n = a.shape.len().max(b.shape.len());
    let dim = |sh: &[usize], i: usize| {
        if i + sh.len() >= n {
            sh[i + sh.len() - n]
        } else {
            1
        }
    };
    let shape: Vec<usize> = (0..n)
        .map(|i| match (dim(&a.shape, i), dim(&b.shape, i)) {
            (1, y) => y,
            (x, _) => x,
        })
        .collect();
    let pick = |x: &RefTensor, ix: &[usize]| {
        let lead = n - x.shape.len();
        let j: Vec<usize> = (0..x.shape.len())
            .map(|k| if x.shape[k] == 1 { 0 } else { ix[lead + k] })
            .collect();
        at(x, &j)
    };
    vec![tabulate(shape, |ix| f(pick(&a, ix), pick(&b, ix)))]
}

/// max(other): the larger element, NaN if either is NaN.
pub fn max_other(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    })
}

pub fn min_other(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, b| {
        if a.is_nan() || b.is_nan() {
            f64::NAN
        } else {
            a.min(b)
        }
    })
}

pub fn expand_as(s: &Sample) -> Vec<RefTensor> {
    broadcast2(s, |a, _| a)
}

pub fn swapaxes(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let n = x.shape.len();
    let (a, b) = (
        wrap(s.int("axis0").expect("axis0"), n),
        wrap(s.int("axis1").expect("axis1"), n),
    );
    vec![swap_dims(x, a, b)]
}

fn repeat_by(x: &RefTensor, reps: &[i64]) -> RefTensor {
    let lead = reps.len() - x.shape.len();
    let src: Vec<usize> = (0..reps.len())
        .map(|i| if i < lead { 1 } else { x.shape[i - lead] })
        .collect();
    let shape: Vec<usize> = src
        .iter()
        .zip(reps)
        .map(|(&s, &r)| s * r as usize)
        .collect();
    tabulate(shape, |ix| {
        let j: Vec<usize> = (lead..reps.len()).map(|i| ix[i] % src[i]).collect();
        at(x, &j)
    })
}

pub fn repeat(s: &Sample) -> Vec<RefTensor> {
    vec![repeat_by(&input(s, 0), s.ints("repeats").expect("repeats"))]
}

pub fn tile(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let dims = s.ints("dims").expect("dims");
    let pad = x.shape.len().saturating_sub(dims.len());
    let reps: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(dims.iter().copied())
        .collect();
    vec![repeat_by(&x, &reps)]
}

pub fn dot(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    vec![scalar(a.data.iter().zip(&b.data).map(|(x, y)| x * y).sum())]
}

pub fn outer(s: &Sample) -> Vec<RefTensor> {
    let (a, b) = (input(s, 0), input(s, 1));
    vec![tabulate(vec![a.data.len(), b.data.len()], |ix| {
        a.data[ix[0]] * b.data[ix[1]]
    })]
}

/// addmm: `beta * self + alpha * mat1 @ mat2`, `self` broadcast; beta 0 drops `self`.
pub fn addmm(s: &Sample) -> Vec<RefTensor> {
    let (c, a, b) = (input(s, 0), input(s, 1), input(s, 2));
    let beta = s.scalar("beta").map_or(1.0, |v| v.to::<f64>());
    let alpha = s.scalar("alpha").map_or(1.0, |v| v.to::<f64>());
    let (n, k, m) = (a.shape[0], a.shape[1], b.shape[1]);
    vec![tabulate(vec![n, m], |ix| {
        let p: f64 = (0..k)
            .map(|kk| at(&a, &[ix[0], kk]) * at(&b, &[kk, ix[1]]))
            .sum();
        let lead = 2 - c.shape.len();
        let j: Vec<usize> = (0..c.shape.len())
            .map(|d| if c.shape[d] == 1 { 0 } else { ix[lead + d] })
            .collect();
        let base = if beta == 0.0 { 0.0 } else { beta * at(&c, &j) };
        base + alpha * p
    })]
}

// ---------------------------------------------------------------------------------------
// Losses and distances
// ---------------------------------------------------------------------------------------

/// Applies `f` to (input, target) pairs after broadcasting, then PyTorch's reduction.
fn loss_ref(s: &Sample, f: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    let per = broadcast2(s, f).remove(0);
    match s.int("reduction").unwrap_or(1) {
        0 => vec![per],
        1 => vec![scalar(per.data.iter().sum::<f64>() / per.data.len() as f64)],
        _ => vec![scalar(per.data.iter().sum())],
    }
}

pub fn mse_loss(s: &Sample) -> Vec<RefTensor> {
    loss_ref(s, |a, b| (a - b) * (a - b))
}

pub fn l1_loss(s: &Sample) -> Vec<RefTensor> {
    loss_ref(s, |a, b| (a - b).abs())
}

pub fn smooth_l1_loss(s: &Sample) -> Vec<RefTensor> {
    let beta = s.float("beta").unwrap_or(1.0);
    loss_ref(s, |a, b| {
        let d = (a - b).abs();
        if d < beta {
            0.5 * d * d / beta
        } else {
            d - 0.5 * beta
        }
    })
}

pub fn huber_loss(s: &Sample) -> Vec<RefTensor> {
    let delta = s.float("delta").unwrap_or(1.0);
    loss_ref(s, |a, b| {
        let d = (a - b).abs();
        if d <= delta {
            0.5 * d * d
        } else {
            delta * (d - 0.5 * delta)
        }
    })
}

pub fn kl_div(s: &Sample) -> Vec<RefTensor> {
    let log_target = s.flag("log_target").unwrap_or(false);
    loss_ref(s, |x, t| {
        if log_target {
            t.exp() * (t - x)
        } else if t > 0.0 {
            t * (t.ln() - x)
        } else {
            0.0
        }
    })
}

/// Matching rows of two tensors.
type RowPairs = Vec<(Vec<f64>, Vec<f64>)>;

/// Rows along `dim` of two broadcast tensors, as (output shape, pairs of rows).
fn rows_along(s: &Sample, dim: i64, keepdim: bool) -> (Vec<usize>, RowPairs) {
    let a = broadcast2(s, |a, _| a).remove(0);
    let b = broadcast2(s, |_, b| b).remove(0);
    let d = wrap(dim, a.shape.len());
    let mut mask = vec![false; a.shape.len()];
    mask[d] = true;
    let (shape, ga) = groups(&a, &mask, keepdim);
    let (_, gb) = groups(&b, &mask, keepdim);
    (shape, ga.into_iter().zip(gb).collect())
}

pub fn cosine_similarity(s: &Sample) -> Vec<RefTensor> {
    let dim = s.int("dim").unwrap_or(1);
    let eps = s.float("eps").unwrap_or(1e-8);
    let (shape, rows) = rows_along(s, dim, false);
    let data = rows
        .iter()
        .map(|(x, y)| {
            let dot: f64 = x.iter().zip(y).map(|(p, q)| p * q).sum();
            let nx: f64 = x.iter().map(|p| p * p).sum();
            let ny: f64 = y.iter().map(|q| q * q).sum();
            dot / (nx * ny).max(eps * eps).sqrt()
        })
        .collect();
    vec![RefTensor { shape, data }]
}

pub fn pairwise_distance(s: &Sample) -> Vec<RefTensor> {
    let p = s.float("p").unwrap_or(2.0);
    let eps = s.float("eps").unwrap_or(1e-6);
    let (shape, rows) = rows_along(s, -1, keepdim(s));
    let data = rows
        .iter()
        .map(|(x, y)| {
            x.iter()
                .zip(y)
                .map(|(a, b)| (a - b + eps).abs().powf(p))
                .sum::<f64>()
                .powf(1.0 / p)
        })
        .collect();
    vec![RefTensor { shape, data }]
}
