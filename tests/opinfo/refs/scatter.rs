//! Float64 references for scatter, scatter_add, index_add, masked_scatter and the scatter
//! reductions.

use super::{
    as_index, at, at_broadcast, at_least_1d, broadcast, input, tabulate, with_shape, wrap,
};
use crate::harness::{RefTensor, Sample};
use kiln::DType;

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
