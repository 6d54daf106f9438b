//! Float64 references for scans, sort and order statistics, and prod: each line along
//! `dim` handled by a plain loop.

use super::{input, wrap};
use crate::harness::{RefTensor, Sample};

/// Applies `f` to every line of `x` along `d` (0-d as one line of one), writing `outs`
/// values per element: `f(line) -> Vec<[out0, out1, ...]>` in line order.
fn per_line(
    x: &RefTensor,
    d: usize,
    outs: usize,
    f: impl Fn(&[f64]) -> Vec<Vec<f64>>,
) -> Vec<RefTensor> {
    let sizes = if x.shape.is_empty() {
        vec![1]
    } else {
        x.shape.clone()
    };
    let n = sizes[d];
    let inner: usize = sizes[d + 1..].iter().product();
    let outer: usize = sizes[..d].iter().product();
    let mut data = vec![vec![0.0; x.data.len()]; outs];
    for o in 0..outer {
        for j in 0..inner {
            let idx: Vec<usize> = (0..n).map(|k| (o * n + k) * inner + j).collect();
            let line: Vec<f64> = idx.iter().map(|&i| x.data[i]).collect();
            for (k, vals) in f(&line).into_iter().enumerate() {
                for (c, v) in vals.into_iter().enumerate() {
                    data[c][idx[k]] = v;
                }
            }
        }
    }
    data.into_iter()
        .map(|d| RefTensor {
            shape: x.shape.clone(),
            data: d,
        })
        .collect()
}

fn dim_of(s: &Sample, x: &RefTensor, default: i64) -> usize {
    wrap(s.int("dim").unwrap_or(default), x.shape.len())
}

fn running(s: &Sample, f: impl Fn(f64, f64) -> f64) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, 0);
    per_line(&x, d, 1, |line| {
        let mut acc = None;
        line.iter()
            .map(|&v| {
                let a = acc.map_or(v, |a| f(a, v));
                acc = Some(a);
                vec![a]
            })
            .collect()
    })
}

pub fn cumsum(s: &Sample) -> Vec<RefTensor> {
    running(s, |a, v| a + v)
}

pub fn cumprod(s: &Sample) -> Vec<RefTensor> {
    running(s, |a, v| a * v)
}

pub fn logcumsumexp(s: &Sample) -> Vec<RefTensor> {
    running(s, |a, v| {
        let m = a.max(v);
        m + ((a - m).exp() + (v - m).exp()).ln()
    })
}

fn cum_extreme(s: &Sample, max: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, 0);
    per_line(&x, d, 2, |line| {
        let mut best: Option<(f64, usize)> = None;
        line.iter()
            .enumerate()
            .map(|(k, &v)| {
                let better = match best {
                    None => true,
                    Some((b, _)) if b.is_nan() => v.is_nan(),
                    Some((b, _)) => v.is_nan() || if max { v >= b } else { v <= b },
                };
                if better {
                    best = Some((v, k));
                }
                let (b, i) = best.expect("first element");
                vec![b, i as f64]
            })
            .collect()
    })
}

pub fn cummax(s: &Sample) -> Vec<RefTensor> {
    cum_extreme(s, true)
}

pub fn cummin(s: &Sample) -> Vec<RefTensor> {
    cum_extreme(s, false)
}

/// The stable order of a line: indices sorted by value (NaN largest).
fn order(line: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..line.len()).collect();
    let key = |v: f64| if v.is_nan() { f64::INFINITY } else { v };
    // Insertion sort: stable by construction, independent of the kernel's sort_by.
    for i in 1..idx.len() {
        let mut j = i;
        while j > 0 {
            let (a, b) = (line[idx[j - 1]], line[idx[j]]);
            let (ka, kb) = (key(a), key(b));
            let a_nan_over = a.is_nan() && !b.is_nan();
            let b_nan_over = b.is_nan() && !a.is_nan();
            let swap = if descending {
                b_nan_over || (!a.is_nan() && !b.is_nan() && kb > ka)
            } else {
                a_nan_over || (!a.is_nan() && !b.is_nan() && kb < ka)
            };
            if !swap {
                break;
            }
            idx.swap(j - 1, j);
            j -= 1;
        }
    }
    idx
}

fn sorted(s: &Sample, d: usize, descending: bool) -> Vec<RefTensor> {
    let x = input(s, 0);
    per_line(&x, d, 2, |line| {
        order(line, descending)
            .into_iter()
            .map(|i| vec![line[i], i as f64])
            .collect()
    })
}

pub fn sort(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, -1);
    sorted(s, d, s.flag("descending").unwrap_or(false))
}

pub fn argsort(s: &Sample) -> Vec<RefTensor> {
    vec![sort(s).remove(1)]
}

pub fn msort(s: &Sample) -> Vec<RefTensor> {
    vec![sorted(s, 0, false).remove(0)]
}

/// Entries `from..from+len` of every sorted line along `d` (values, indices).
fn take_sorted(
    x: &RefTensor,
    d: usize,
    descending: bool,
    from: usize,
    len: usize,
    keep: bool,
) -> Vec<RefTensor> {
    let full = per_line(x, d, 2, |line| {
        order(line, descending)
            .into_iter()
            .map(|i| vec![line[i], i as f64])
            .collect()
    });
    if x.shape.is_empty() {
        return full;
    }
    full.into_iter()
        .map(|t| {
            let mut shape = t.shape.clone();
            shape[d] = len;
            let r = super::tabulate(shape.clone(), |ix| {
                let mut j = ix.to_vec();
                j[d] += from;
                super::at(&t, &j)
            });
            if keep {
                r
            } else {
                shape.remove(d);
                super::with_shape(r, shape)
            }
        })
        .collect()
}

pub fn topk(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, -1);
    let k = s.int("k").expect("k") as usize;
    take_sorted(&x, d, s.flag("largest").unwrap_or(true), 0, k, true)
}

pub fn kthvalue(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, -1);
    let k = s.int("k").expect("k") as usize;
    take_sorted(&x, d, false, k - 1, 1, s.flag("keepdim").unwrap_or(false))
}

pub fn median_dim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, 0);
    let n = if x.shape.is_empty() { 1 } else { x.shape[d] };
    take_sorted(
        &x,
        d,
        false,
        n.div_ceil(2) - 1,
        1,
        s.flag("keepdim").unwrap_or(false),
    )
}

pub fn median(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let mut v = x.data.clone();
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN in median samples"));
    vec![super::scalar(v[v.len().div_ceil(2) - 1])]
}

pub fn prod(s: &Sample) -> Vec<RefTensor> {
    vec![super::scalar(input(s, 0).data.iter().product())]
}

pub fn prod_dim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = dim_of(s, &x, 0);
    let keep = s.flag("keepdim").unwrap_or(false);
    let mut shape = x.shape.clone();
    shape[d] = 1;
    let r = super::tabulate(shape.clone(), |ix| {
        (0..x.shape[d])
            .map(|k| {
                let mut j = ix.to_vec();
                j[d] = k;
                super::at(&x, &j)
            })
            .product()
    });
    if keep {
        vec![r]
    } else {
        shape.remove(d);
        vec![super::with_shape(r, shape)]
    }
}
