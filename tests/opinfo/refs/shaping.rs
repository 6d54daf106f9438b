//! Float64 references for src/ops/shaping.rs: every output element located by index
//! arithmetic on row-major values.

use super::{as_index, at, at_least_1d, input, numel, scalar, tabulate, with_shape, wrap};
use crate::harness::{RefTensor, Sample};
use kiln::DType;

fn opt_wrap(d: i64, n: usize) -> usize {
    wrap(d, n)
}

/// `x` with the coordinate along each of `dims` reversed.
fn flipped(x: &RefTensor, dims: &[usize]) -> RefTensor {
    tabulate(x.shape.clone(), |ix| {
        let mut j = ix.to_vec();
        for &d in dims {
            j[d] = x.shape[d] - 1 - j[d];
        }
        at(x, &j)
    })
}

pub fn flip(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    if x.shape.is_empty() {
        return vec![x];
    }
    let dims: Vec<usize> = s
        .ints("dims")
        .expect("dims")
        .iter()
        .map(|&d| opt_wrap(d, x.shape.len()))
        .collect();
    vec![flipped(&x, &dims)]
}

pub fn fliplr(s: &Sample) -> Vec<RefTensor> {
    vec![flipped(&input(s, 0), &[1])]
}

pub fn flipud(s: &Sample) -> Vec<RefTensor> {
    vec![flipped(&input(s, 0), &[0])]
}

pub fn roll(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shifts = s.ints("shifts").expect("shifts");
    let dims = s.ints("dims").unwrap_or(&[]);
    if dims.is_empty() {
        let n = x.data.len() as i64;
        let k = shifts[0];
        let data = (0..n)
            .map(|i| x.data[(i - k).rem_euclid(n.max(1)) as usize])
            .collect();
        return vec![RefTensor {
            shape: x.shape.clone(),
            data,
        }];
    }
    let pairs: Vec<(usize, i64)> = dims
        .iter()
        .zip(shifts)
        .map(|(&d, &k)| (wrap(d, x.shape.len()), k))
        .collect();
    vec![tabulate(x.shape.clone(), |ix| {
        let mut j = ix.to_vec();
        for &(d, k) in &pairs {
            let n = x.shape[d] as i64;
            j[d] = (ix[d] as i64 - k).rem_euclid(n) as usize;
        }
        at(&x, &j)
    })]
}

/// rot90: `out` is `x` turned k quarter turns from dims[0] towards dims[1]; each turn maps
/// `out[.., i, .., j, ..] = x[.., j, .., n - 1 - i, ..]` over the plane.
pub fn rot90(s: &Sample) -> Vec<RefTensor> {
    let mut x = input(s, 0);
    let dims = s.ints("dims").unwrap_or(&[0, 1]);
    let (a, b) = (wrap(dims[0], x.shape.len()), wrap(dims[1], x.shape.len()));
    let k = s.int("k").unwrap_or(1).rem_euclid(4);
    for _ in 0..k {
        let mut shape = x.shape.clone();
        shape.swap(a, b);
        let src = x.clone();
        x = tabulate(shape, |ix| {
            let mut j = ix.to_vec();
            j[a] = ix[b];
            j[b] = src.shape[b] - 1 - ix[a];
            at(&src, &j)
        });
    }
    vec![x]
}

fn diagonal_of(x: &RefTensor, offset: i64, d1: usize, d2: usize) -> RefTensor {
    let (n1, n2) = (x.shape[d1] as i64, x.shape[d2] as i64);
    let len = if offset >= 0 {
        n1.min(n2 - offset)
    } else {
        (n1 + offset).min(n2)
    }
    .max(0) as usize;
    let rest: Vec<usize> = (0..x.shape.len()).filter(|&d| d != d1 && d != d2).collect();
    let mut shape: Vec<usize> = rest.iter().map(|&d| x.shape[d]).collect();
    shape.push(len);
    tabulate(shape, |ix| {
        let k = ix[ix.len() - 1] as i64;
        let mut j = vec![0; x.shape.len()];
        for (p, &d) in rest.iter().enumerate() {
            j[d] = ix[p];
        }
        let (r, c) = if offset >= 0 {
            (k, k + offset)
        } else {
            (k - offset, k)
        };
        j[d1] = r as usize;
        j[d2] = c as usize;
        at(x, &j)
    })
}

pub fn diagonal(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let d1 = wrap(s.int("dim1").unwrap_or(0), nd);
    let d2 = wrap(s.int("dim2").unwrap_or(1), nd);
    vec![diagonal_of(&x, s.int("offset").unwrap_or(0), d1, d2)]
}

pub fn diag(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let k = s.int("diagonal").unwrap_or(0);
    if x.shape.len() == 2 {
        return vec![diagonal_of(&x, k, 0, 1)];
    }
    let n = x.shape[0] + k.unsigned_abs() as usize;
    vec![tabulate(vec![n, n], |ix| {
        let (r, c) = (ix[0] as i64, ix[1] as i64);
        if c - r != k {
            return 0.0;
        }
        x.data[r.min(c) as usize]
    })]
}

pub fn trace(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let n = x.shape[0].min(x.shape[1]);
    vec![scalar((0..n).map(|i| at(&x, &[i, i])).sum())]
}

pub fn movedim(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let src: Vec<usize> = s
        .ints("source")
        .expect("source")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let dst: Vec<usize> = s
        .ints("destination")
        .expect("destination")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    if nd == 0 {
        return vec![x];
    }
    // order[p] = the input dim that lands at output position p.
    let mut order: Vec<Option<usize>> = vec![None; nd];
    for (&a, &b) in src.iter().zip(&dst) {
        order[b] = Some(a);
    }
    let mut rest = (0..nd).filter(|d| !src.contains(d));
    let order: Vec<usize> = order
        .into_iter()
        .map(|o| o.unwrap_or_else(|| rest.next().expect("enough dims")))
        .collect();
    let shape: Vec<usize> = order.iter().map(|&d| x.shape[d]).collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0; nd];
        for (p, &d) in order.iter().enumerate() {
            j[d] = ix[p];
        }
        at(&x, &j)
    })]
}

pub fn broadcast_to(s: &Sample) -> Vec<RefTensor> {
    super::expand(s)
}

pub fn unfold(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let x = if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    };
    let was_scalar = input(s, 0).shape.is_empty();
    let d = wrap(s.int("dimension").expect("dimension"), x.shape.len());
    let (size, step) = (
        s.int("size").expect("size") as usize,
        s.int("step").expect("step") as usize,
    );
    let mut shape = x.shape.clone();
    shape[d] = (x.shape[d] - size) / step + 1;
    shape.push(size);
    let r = tabulate(shape, |ix| {
        let mut j = ix[..ix.len() - 1].to_vec();
        j[d] = ix[d] * step + ix[ix.len() - 1];
        at(&x, &j)
    });
    if was_scalar {
        let n = r.data.len();
        return vec![with_shape(r, vec![n])];
    }
    vec![r]
}

pub fn squeeze_dims(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let nd = x.shape.len();
    let dims: Vec<usize> = s
        .ints("dim")
        .expect("dim")
        .iter()
        .map(|&d| wrap(d, nd))
        .collect();
    let shape: Vec<usize> = (0..nd)
        .filter(|d| !(dims.contains(d) && x.shape[*d] == 1))
        .map(|d| x.shape[d])
        .collect();
    vec![with_shape(x, shape)]
}

pub fn narrow_tensor(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let start = input(s, 1).data[0] as i64;
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

/// Pieces of `x` along `d` with the given sizes.
fn pieces(x: &RefTensor, d: usize, sizes: &[usize]) -> Vec<RefTensor> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&n| {
            let mut shape = x.shape.clone();
            shape[d] = n;
            let s0 = start;
            start += n;
            tabulate(shape, |ix| {
                let mut j = ix.to_vec();
                j[d] += s0;
                at(x, &j)
            })
        })
        .collect()
}

fn even_sizes(n: usize, size: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0];
    }
    (0..n.div_ceil(size))
        .map(|i| size.min(n - i * size))
        .collect()
}

pub fn split(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let size = s.int("split_size").expect("split_size") as usize;
    pieces(&x, d, &even_sizes(x.shape[d], size))
}

pub fn split_with_sizes(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let sizes: Vec<usize> = s
        .ints("split_sizes")
        .expect("split_sizes")
        .iter()
        .map(|&v| v as usize)
        .collect();
    pieces(&x, d, &sizes)
}

pub fn chunk(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let chunks = s.int("chunks").expect("chunks") as usize;
    let n = x.shape[d];
    if n == 0 {
        return pieces(&x, d, &vec![0; chunks]);
    }
    pieces(&x, d, &even_sizes(n, n.div_ceil(chunks)))
}

pub fn unbind(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let d = wrap(s.int("dim").unwrap_or(0), x.shape.len());
    let mut shape = x.shape.clone();
    shape.remove(d);
    (0..x.shape[d])
        .map(|i| {
            tabulate(shape.clone(), |ix| {
                let mut j = ix.to_vec();
                j.insert(d, i);
                at(&x, &j)
            })
        })
        .collect()
}

pub fn meshgrid(s: &Sample) -> Vec<RefTensor> {
    let xs: Vec<RefTensor> = s.list(0).iter().map(RefTensor::of).collect();
    let xy = s.string("indexing") == Some("xy") && xs.len() >= 2;
    let pos = |i: usize| match (xy, i) {
        (true, 0) => 1,
        (true, 1) => 0,
        _ => i,
    };
    let mut shape = vec![0; xs.len()];
    for (i, x) in xs.iter().enumerate() {
        shape[pos(i)] = x.data.len();
    }
    xs.iter()
        .enumerate()
        .map(|(i, x)| tabulate(shape.clone(), |ix| x.data[ix[pos(i)]]))
        .collect()
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

pub fn masked_fill_tensor(s: &Sample) -> Vec<RefTensor> {
    let (x, m, v) = (input(s, 0), input(s, 1), input(s, 2).data[0]);
    vec![tabulate(broadcast(&x.shape, &m.shape), |ix| {
        if at_broadcast(&m, ix) != 0.0 {
            v
        } else {
            at_broadcast(&x, ix)
        }
    })]
}

pub fn clamp_tensor(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let lo = s.opt_t(1).map(RefTensor::of);
    let hi = s.opt_t(2).map(RefTensor::of);
    let mut shape = x.shape.clone();
    for b in lo.iter().chain(hi.iter()) {
        shape = broadcast(&shape, &b.shape);
    }
    vec![tabulate(shape, |ix| {
        let mut v = at_broadcast(&x, ix);
        if let Some(l) = &lo {
            v = v.max(at_broadcast(l, ix));
        }
        if let Some(h) = &hi {
            v = v.min(at_broadcast(h, ix));
        }
        v
    })]
}

/// to(other): the values, rounded as `other`'s dtype rounds (compared at that dtype's
/// tolerance by the harness).
pub fn to_other(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let target = s.t(1).dtype();
    let data = x
        .data
        .iter()
        .map(|&v| {
            if target == kiln::DType::I64 {
                v.trunc()
            } else {
                v
            }
        })
        .collect();
    vec![RefTensor {
        shape: x.shape,
        data,
    }]
}

fn interleaved(x: &RefTensor, dim: Option<usize>, counts: &[usize]) -> RefTensor {
    let (x, d) = match dim {
        Some(d) => (x.clone(), d),
        None => (with_shape(x.clone(), vec![x.data.len()]), 0),
    };
    let x = if x.shape.is_empty() {
        with_shape(x, vec![1])
    } else {
        x
    };
    let src: Vec<usize> = counts
        .iter()
        .enumerate()
        .flat_map(|(i, &c)| std::iter::repeat_n(i, c))
        .collect();
    let mut shape = x.shape.clone();
    shape[d] = src.len();
    tabulate(shape, |ix| {
        let mut j = ix.to_vec();
        j[d] = src[ix[d]];
        at(&x, &j)
    })
}

pub fn repeat_interleave(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let r = s.int("repeats").expect("repeats") as usize;
    let dim = s
        .opt_int("dim")
        .unwrap_or(None)
        .map(|d| wrap(d, x.shape.len()));
    let n = match dim {
        Some(d) if !x.shape.is_empty() => x.shape[d],
        _ => x.data.len(),
    };
    vec![interleaved(&x, dim, &vec![r; n])]
}

pub fn repeat_interleave_tensor(s: &Sample) -> Vec<RefTensor> {
    let (x, reps) = (input(s, 0), input(s, 1));
    let dim = s
        .opt_int("dim")
        .unwrap_or(None)
        .map(|d| wrap(d, x.shape.len()));
    let n = match dim {
        Some(d) if !x.shape.is_empty() => x.shape[d],
        _ => x.data.len(),
    };
    let counts: Vec<usize> = if reps.shape.is_empty() {
        vec![reps.data[0] as usize; n]
    } else {
        reps.data.iter().map(|&c| c as usize).collect()
    };
    vec![interleaved(&x, dim, &counts)]
}

/// pad: each output coordinate maps back to a source coordinate (or to the fill value).
pub fn pad(s: &Sample) -> Vec<RefTensor> {
    let x = input(s, 0);
    let pad = s.ints("pad").expect("pad");
    let mode = s.string("mode").unwrap_or("constant");
    let value = s.float("value").unwrap_or(0.0);
    let nd = x.shape.len();
    let mut before = vec![0i64; nd];
    let mut after = vec![0i64; nd];
    for (i, p) in pad.chunks(2).enumerate() {
        before[nd - 1 - i] = p[0];
        after[nd - 1 - i] = p[1];
    }
    let shape: Vec<usize> = (0..nd)
        .map(|d| (x.shape[d] as i64 + before[d] + after[d]) as usize)
        .collect();
    vec![tabulate(shape, |ix| {
        let mut j = vec![0usize; nd];
        for d in 0..nd {
            let n = x.shape[d] as i64;
            let p = ix[d] as i64 - before[d];
            let src = match mode {
                "constant" => {
                    if p < 0 || p >= n {
                        return value;
                    }
                    p
                }
                "reflect" => {
                    let mut q = p;
                    while q < 0 || q >= n {
                        q = if q < 0 { -q } else { 2 * (n - 1) - q };
                    }
                    q
                }
                "replicate" => p.clamp(0, n - 1),
                _ => {
                    // Circular: PyTorch crops the negative amounts first and wraps around
                    // what is left.
                    let (lo, hi) = ((-before[d]).max(0), (-after[d]).max(0));
                    lo + (ix[d] as i64 - before[d].max(0)).rem_euclid(n - lo - hi)
                }
            };
            j[d] = src as usize;
        }
        at(&x, &j)
    })]
}

pub fn scatter(s: &Sample) -> Vec<RefTensor> {
    let (x, idx, src) = (input(s, 0), input(s, 1), input(s, 2));
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let mut out = x.clone();
    for i in 0..idx.data.len() {
        let p = idx.unravel(i);
        let mut t = p.clone();
        t[d] = idx.data[i] as usize;
        let o = out.ravel(&t);
        out.data[o] = at(&src, &p);
    }
    vec![out]
}

pub fn scatter_value(s: &Sample) -> Vec<RefTensor> {
    let (x, idx) = (input(s, 0), input(s, 1));
    let v = s.scalar("value").expect("value").to::<f64>();
    let d = wrap(s.int("dim").expect("dim"), x.shape.len());
    let mut out = x.clone();
    for i in 0..idx.data.len() {
        let mut t = idx.unravel(i);
        t[d] = idx.data[i] as usize;
        let o = out.ravel(&t);
        out.data[o] = v;
    }
    vec![out]
}

/// A scatter reduction: for every position `p` of `index`, the value `value_at(p)` is sent to
/// `p` with `p[dim] = index[p]`; each position sent anything becomes the `reduce` of those
/// values, with its own first when `include_self` (an integer `mean` rounds down), and
/// every other position keeps `x`'s value.
fn scatter_reduced(
    s: &Sample,
    value_at: impl Fn(&[usize]) -> f64,
    reduce: &str,
    include_self: bool,
) -> Vec<RefTensor> {
    let x = input(s, 0);
    let shape = x.shape.clone();
    let integral = !s.t(0).dtype().is_floating_point();
    let (x, index) = (at_least_1d(x), at_least_1d(input(s, 1)));
    let d = wrap(s.int("dim").expect("dim"), shape.len());
    let mut sent: Vec<Vec<f64>> = vec![vec![]; x.data.len()];
    for i in 0..index.data.len() {
        let p = index.unravel(i);
        let mut t = p.clone();
        t[d] = as_index(index.data[i]);
        sent[x.ravel(&t)].push(value_at(&p));
    }
    let mut out = x.clone();
    for (o, vals) in sent.iter().enumerate() {
        if vals.is_empty() {
            continue;
        }
        let mut all = if include_self {
            vec![x.data[o]]
        } else {
            vec![]
        };
        all.extend(vals);
        let n = all.len() as f64;
        let nan = all.iter().any(|v| v.is_nan());
        out.data[o] = match reduce {
            "sum" => all.iter().sum(),
            "prod" => all.iter().product(),
            "mean" if integral => (all.iter().sum::<f64>() / n).floor(),
            "mean" => all.iter().sum::<f64>() / n,
            _ if nan => f64::NAN,
            "amax" => all.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            "amin" => all.iter().copied().fold(f64::INFINITY, f64::min),
            other => panic!("reference: unknown reduction {other}"),
        };
    }
    vec![with_shape(out, shape)]
}

/// scatter_reduce(dim, index, src, reduce, include_self=True).
pub fn scatter_reduce(s: &Sample) -> Vec<RefTensor> {
    let src = at_least_1d(input(s, 2));
    let reduce = s.string("reduce").expect("reduce");
    let include_self = s.flag("include_self").unwrap_or(true);
    scatter_reduced(s, |p| at(&src, p), reduce, include_self)
}

/// The `scatter_reduce` name of scatter's `reduce=` argument.
fn legacy_reduce(s: &Sample) -> &'static str {
    match s.string("reduce").expect("reduce") {
        "add" => "sum",
        "multiply" => "prod",
        other => panic!("reference: unknown scatter reduce {other}"),
    }
}

/// scatter(dim, index, src, reduce=): sum or prod, self included.
pub fn scatter_src_reduce(s: &Sample) -> Vec<RefTensor> {
    let src = at_least_1d(input(s, 2));
    scatter_reduced(s, |p| at(&src, p), legacy_reduce(s), true)
}

/// scatter(dim, index, value, reduce=): `value`, cast to self's dtype, sent by every index.
pub fn scatter_value_reduce(s: &Sample) -> Vec<RefTensor> {
    let v = s.scalar("value").expect("value").to::<f64>();
    let v = match s.t(0).dtype() {
        DType::Bool => f64::from(u8::from(v != 0.0)),
        d if d.is_floating_point() => v,
        _ => v.trunc(),
    };
    scatter_reduced(s, |_| v, legacy_reduce(s), true)
}

pub fn masked_scatter(s: &Sample) -> Vec<RefTensor> {
    let (x, m, src) = (input(s, 0), input(s, 1), input(s, 2));
    // self and mask broadcast; source fills the true positions in row-major order.
    let mut k = 0;
    vec![tabulate(broadcast(&x.shape, &m.shape), |ix| {
        if at_broadcast(&m, ix) != 0.0 {
            k += 1;
            src.data[k - 1]
        } else {
            at_broadcast(&x, ix)
        }
    })]
}

pub fn where_nonzero(s: &Sample) -> Vec<RefTensor> {
    let nz = nonzero(s).remove(0);
    let (rows, nd) = (nz.shape[0], nz.shape[1]);
    (0..nd)
        .map(|d| RefTensor {
            shape: vec![rows],
            data: (0..rows).map(|r| nz.data[r * nd + d]).collect(),
        })
        .collect()
}
