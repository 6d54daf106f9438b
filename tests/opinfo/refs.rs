//! Float64 references for the ops that are not pointwise: plain loops over row-major
//! values (`RefTensor`), written without kiln ops. Each takes a `Sample` and reads the op's
//! arguments by schema name, with the schema's defaults; it returns one `RefTensor` per op
//! output.

#![allow(dead_code)]

use crate::harness::{RefTensor, Sample};

#[path = "refs/classification.rs"]
mod classification;
#[path = "refs/conv.rs"]
mod conv;
#[path = "refs/conversion.rs"]
mod conversion;
#[path = "refs/distances.rs"]
mod distances;
#[path = "refs/elementwise.rs"]
mod elementwise;
#[path = "refs/embedding.rs"]
mod embedding;
#[path = "refs/indexing.rs"]
mod indexing;
#[path = "refs/joining.rs"]
mod joining;
#[path = "refs/linalg.rs"]
mod linalg;
#[path = "refs/losses.rs"]
mod losses;
#[path = "refs/norm.rs"]
mod norm;
#[path = "refs/pooling.rs"]
mod pooling;
#[path = "refs/reducing.rs"]
mod reducing;
#[path = "refs/resampling.rs"]
mod resampling;
#[path = "refs/scatter.rs"]
mod scatter;
#[path = "refs/shaping.rs"]
mod shaping;
#[path = "refs/softmax.rs"]
mod softmax;
#[path = "refs/sorting.rs"]
mod sorting;
#[path = "refs/unary.rs"]
mod unary;
#[path = "refs/views.rs"]
mod views;
pub use classification::*;
pub use conv::*;
pub use conversion::*;
pub use distances::*;
pub use elementwise::*;
pub use embedding::*;
pub use indexing::*;
pub use joining::*;
pub use linalg::*;
pub use losses::*;
pub use norm::*;
pub use pooling::*;
pub use reducing::*;
pub use resampling::*;
pub use scatter::*;
pub use shaping::*;
pub use softmax::*;
pub use sorting::*;
pub use unary::*;
pub use views::*;

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

fn as_index(v: f64) -> usize {
    assert!(v >= 0.0, "reference: negative index {v}");
    v as usize
}

/// A 0-d tensor seen as shape [1] (scatter/gather's convention).
fn at_least_1d(x: RefTensor) -> RefTensor {
    if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    }
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

/// `v` written out for `n` dims (one value is repeated).
fn full(v: &[i64], n: usize) -> Vec<i64> {
    if v.len() == 1 {
        vec![v[0]; n]
    } else {
        v.to_vec()
    }
}

/// Row-major multi-index of flat `i` in `shape`.
fn unravel(mut i: usize, shape: &[usize]) -> Vec<usize> {
    let mut v = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        v[d] = i % shape[d].max(1);
        i /= shape[d].max(1);
    }
    v
}

/// Image [B, C, *S] (a missing batch dim added), its spatial sizes and whether it was batched.
fn as_batched(x: RefTensor, n: usize) -> (RefTensor, bool) {
    if x.shape.len() == n + 2 {
        return (x, true);
    }
    let mut shape = x.shape.clone();
    shape.insert(0, 1);
    (
        RefTensor {
            shape,
            data: x.data,
        },
        false,
    )
}

fn tensor(shape: Vec<usize>, data: Vec<f64>) -> RefTensor {
    RefTensor { shape, data }
}

fn ints_or(s: &Sample, name: &str, default: &[i64], n: usize) -> Vec<i64> {
    full(s.ints(name).unwrap_or(default), n)
}

/// Drops the batch dim added by [`as_batched`].
fn unbatch(t: RefTensor, batched: bool) -> RefTensor {
    if batched {
        return t;
    }
    RefTensor {
        shape: t.shape[1..].to_vec(),
        data: t.data,
    }
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

/// The broadcast shape of two shapes (NumPy rules; the samples only use valid pairs).
fn broadcast(a: &[usize], b: &[usize]) -> Vec<usize> {
    let n = a.len().max(b.len());
    let get = |s: &[usize], i: usize| {
        if i + s.len() >= n {
            s[i + s.len() - n]
        } else {
            1
        }
    };
    (0..n)
        .map(|i| match (get(a, i), get(b, i)) {
            (1, y) => y,
            (x, _) => x,
        })
        .collect()
}

/// `x`'s value at a multi-index of a broadcast shape it takes part in.
fn at_broadcast(x: &RefTensor, ix: &[usize]) -> f64 {
    let lead = ix.len() - x.shape.len();
    let j: Vec<usize> = (0..x.shape.len())
        .map(|k| if x.shape[k] == 1 { 0 } else { ix[lead + k] })
        .collect();
    at(x, &j)
}

fn opt(s: &Sample, i: usize) -> Option<RefTensor> {
    s.opt_t(i).map(RefTensor::of)
}

fn reduce(loss: Vec<f64>, shape: Vec<usize>, reduction: i64, denom: f64) -> RefTensor {
    match reduction {
        0 => tensor(shape, loss),
        2 => tensor(vec![], vec![loss.iter().sum()]),
        _ => tensor(vec![], vec![loss.iter().sum::<f64>() / denom]),
    }
}
