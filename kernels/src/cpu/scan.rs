//! Scans and sorts along one dim: `cumsum`, `cumprod`, `logcumsumexp`, `cummax`,
//! `cummin`, `sort`. Viewing the input as `[outer, n, inner]` around `dim`, each of the
//! `outer * inner` lines is independent; a line is walked in compute precision (f32 for
//! half types) and written to the contiguous output.

use crate::cpu::shape::{contiguous_out, row_major, split_at_dim};
use crate::layout::wrap_dim;
use crate::{Arith, DType, Dst, Element, FloatMath, KResult, Src};

/// Output shape of a scan: the input's, once `dim` is known to be valid.
fn same_shape(self_: &[usize], dim: i64) -> KResult<Vec<usize>> {
    wrap_dim(dim, self_.len())?;
    Ok(self_.to_vec())
}

/// Calls `f(line)` with the flat indices of every line along `dim` of `sizes`.
fn for_each_line(
    sizes: &[usize],
    dim: i64,
    mut f: impl FnMut(&mut dyn Iterator<Item = usize>),
) -> KResult<()> {
    let d = wrap_dim(dim, sizes.len())?;
    let (outer, n, inner) = split_at_dim(sizes, d);
    for o in 0..outer {
        for j in 0..inner {
            let mut line = (0..n).map(move |k| (o * n + k) * inner + j);
            f(&mut line);
        }
    }
    Ok(())
}

/// `out[.., k, ..] = step(out[.., k-1, ..], x[.., k, ..])` along `dim`, from `x[.., 0, ..]`.
fn scan<T: Element>(
    src: Src<'_, T>,
    dim: i64,
    mut out: Dst<'_, T>,
    step: impl Fn(T::Compute, T::Compute) -> T::Compute,
) -> KResult<()> {
    let x = row_major(&src);
    let o = contiguous_out(&mut out)?;
    if o.is_empty() {
        return Ok(());
    }
    for_each_line(&src.layout.sizes, dim, |line| {
        let mut acc: Option<T::Compute> = None;
        for i in line {
            let v = x[i].up();
            let a = match acc {
                None => v,
                Some(a) => step(a, v),
            };
            acc = Some(a);
            o[i] = T::down(a);
        }
    })
}

pub fn cumsum_meta(self_: &[usize], dim: i64, _dtype: Option<DType>) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![same_shape(self_, dim)?])
}

/// `cumsum(dim)`: running sums (integers wrap, as PyTorch's).
pub fn cumsum<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    _dtype: Option<DType>,
    out: Dst<'_, T>,
) -> KResult<()> {
    scan(self_, dim, out, |a, v| a.add(v))
}

pub fn cumprod_meta(self_: &[usize], dim: i64, _dtype: Option<DType>) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![same_shape(self_, dim)?])
}

/// `cumprod(dim)`: running products.
pub fn cumprod<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    _dtype: Option<DType>,
    out: Dst<'_, T>,
) -> KResult<()> {
    scan(self_, dim, out, |a, v| a.mul(v))
}

pub fn logcumsumexp_meta(self_: &[usize], dim: i64) -> KResult<Vec<Vec<usize>>> {
    Ok(vec![same_shape(self_, dim)?])
}

/// `log(exp(a) + exp(b))` from the larger argument; two -inf stay -inf, two +inf stay +inf
/// (`lo - hi` would be NaN for both).
fn log_add_exp<C: FloatMath>(a: C, b: C) -> C {
    let (hi, lo) = if a > b || b.is_nan() { (a, b) } else { (b, a) };
    if lo == C::infinity().neg() || (hi == C::infinity() && !lo.is_nan()) {
        return hi;
    }
    hi.add(lo.sub(hi).exp().ln_1p())
}

/// `logcumsumexp(dim)`: running `log(Σ exp(x))`, without overflow.
pub fn logcumsumexp<T: Element>(self_: Src<'_, T>, dim: i64, out: Dst<'_, T>) -> KResult<()>
where
    T::Compute: FloatMath,
{
    scan(self_, dim, out, log_add_exp)
}

pub fn cummax_meta(self_: &[usize], dim: i64) -> KResult<Vec<Vec<usize>>> {
    let s = same_shape(self_, dim)?;
    Ok(vec![s.clone(), s])
}

/// Running extreme with its index: a later element equal to the extreme takes over (PyTorch
/// reports the last occurrence), and a NaN, once seen, is the extreme from then on.
fn cum_extreme<T: Element>(
    src: Src<'_, T>,
    dim: i64,
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
    max: bool,
) -> KResult<()> {
    let x = row_major(&src);
    let v = contiguous_out(&mut values)?;
    let ix = contiguous_out(&mut indices)?;
    if v.is_empty() {
        return Ok(());
    }
    for_each_line(&src.layout.sizes, dim, |line| {
        let mut best: Option<(T::Compute, i64)> = None;
        for (k, i) in line.enumerate() {
            let c = x[i].up();
            let take = match best {
                None => true,
                Some((b, _)) => c.is_nan() || (!b.is_nan() && if max { c >= b } else { c <= b }),
            };
            if take {
                best = Some((c, k as i64));
            }
            let (b, bi) = best.expect("set on the first element");
            v[i] = T::down(b);
            ix[i] = bi;
        }
    })
}

/// `cummax(dim)`: running maximum and the index it came from.
pub fn cummax<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    values: Dst<'_, T>,
    indices: Dst<'_, i64>,
) -> KResult<()> {
    cum_extreme(self_, dim, values, indices, true)
}

pub fn cummin_meta(self_: &[usize], dim: i64) -> KResult<Vec<Vec<usize>>> {
    cummax_meta(self_, dim)
}

/// `cummin(dim)`: running minimum and the index it came from.
pub fn cummin<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    values: Dst<'_, T>,
    indices: Dst<'_, i64>,
) -> KResult<()> {
    cum_extreme(self_, dim, values, indices, false)
}

pub fn sort_meta(self_: &[usize], dim: i64, descending: bool) -> KResult<Vec<Vec<usize>>> {
    let _ = descending;
    let s = same_shape(self_, dim)?;
    Ok(vec![s.clone(), s])
}

/// `sort(dim, descending)`: each line ordered, with the source index of every element.
/// Always stable (equal elements keep their order), which PyTorch allows for its unstable
/// sort too. NaN sorts above every number, as in PyTorch.
pub fn sort<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    descending: bool,
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let x = row_major(&self_);
    let v = contiguous_out(&mut values)?;
    let ix = contiguous_out(&mut indices)?;
    if v.is_empty() {
        return Ok(());
    }
    let mut keyed: Vec<(T::Compute, usize)> = Vec::new();
    let mut slots: Vec<usize> = Vec::new();
    for_each_line(&self_.layout.sizes, dim, |line| {
        slots.clear();
        slots.extend(line);
        keyed.clear();
        keyed.extend(slots.iter().enumerate().map(|(k, &i)| (x[i].up(), k)));
        // NaN is the largest value; a total order keeps sort_by stable and panic-free.
        let rank = |a: &T::Compute, b: &T::Compute| match (a.is_nan(), b.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal),
        };
        if descending {
            keyed.sort_by(|a, b| rank(&b.0, &a.0));
        } else {
            keyed.sort_by(|a, b| rank(&a.0, &b.0));
        }
        for (&slot, &(c, k)) in slots.iter().zip(&keyed) {
            v[slot] = T::down(c);
            ix[slot] = k as i64;
        }
    })
}
