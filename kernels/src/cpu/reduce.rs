//! Reductions: `sum`, `max`/`min` (over everything or along a dim), `argmax`/`argmin` and
//! `mode`.
//!
//! Every kernel first orders its input as `[kept dims..., reduced dims...]`, row-major, so
//! each output element reduces one contiguous run of `group` inputs. A contiguous input
//! reduced over trailing dims is used in place; any other layout (a transposed input, a
//! reduction over a leading dim, a stride-0 broadcast) is copied once in that order, which
//! keeps the reduction loops plain slice loops. `sum` has one more in-place path: a
//! contiguous input reduced over adjacent leading or middle dims adds whole rows.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::cpu::shape::contiguous_out;
use crate::layout::wrap_dim;
use crate::parallel::{fan_out, install, par_chunks_mut, par_chunks_mut2};
use crate::Dims;
use crate::KernelError;
use crate::{Arith, DType, Dst, Element, KResult, Layout, Src};
use std::borrow::Cow;

/// Input elements per parallel task when splitting over output groups.
const TASK_WORK: usize = 1 << 12;

// ---------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------

/// Marks the dims a reduction collapses. `None` or an empty list reduces every dim, as
/// PyTorch's `sum(dim=[])` does.
fn reduced_mask(dims: Option<&[i64]>, ndim: usize) -> KResult<Vec<bool>> {
    let dims = match dims {
        Some(d) if !d.is_empty() => d,
        _ => return Ok(vec![true; ndim]),
    };
    let mut mask = vec![false; ndim];
    // A 0-d tensor accepts dim 0 / -1 but has no mask entry; `seen` still catches repeats.
    let mut seen = vec![false; ndim.max(1)];
    for &d in dims {
        let w = wrap_dim(d, ndim)?;
        if seen[w] {
            return Err(KernelError::shape(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        seen[w] = true;
        if w < ndim {
            mask[w] = true;
        }
    }
    Ok(mask)
}

/// The mask for a single reduced dim.
fn single_mask(dim: i64, ndim: usize) -> KResult<Vec<bool>> {
    reduced_mask(Some(&[dim]), ndim)
}

/// The shape left after reducing the masked dims (kept as size 1 with `keepdim`).
fn reduced_shape(sizes: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    sizes
        .iter()
        .zip(mask)
        .filter_map(|(&s, &r)| match (r, keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `max.dim`/`argmax` cannot reduce a zero-size dim: there is no element to pick.
fn check_nonzero_dim(sizes: &[usize], dim: i64, name: &str) -> KResult<()> {
    let d = wrap_dim(dim, sizes.len())?;
    if sizes.get(d) == Some(&0) {
        return Err(KernelError::index(format!(
            "{name}: Expected reduction dim {d} to have non-zero size."
        )));
    }
    Ok(())
}

/// The input reordered so each output element's inputs are one contiguous run, plus the
/// run's length (the product of the reduced sizes; 1 when nothing is reduced).
fn grouped<'a, T: Element>(src: &Src<'a, T>, mask: &[bool]) -> (Cow<'a, [T]>, usize) {
    let l = src.layout;
    let kept = (0..l.ndim()).filter(|&d| !mask[d]);
    let reduced = (0..l.ndim()).filter(|&d| mask[d]);
    // Saturating: an empty tensor's other dims may multiply past usize (then the group is 0
    // if a reduced dim is, and otherwise there is no output element to use it).
    let group = reduced
        .clone()
        .map(|d| l.sizes[d])
        .fold(1usize, |n, s| n.saturating_mul(s));
    let mut perm = Layout {
        sizes: Dims::new(),
        strides: Dims::new(),
        offset: l.offset,
    };
    for d in kept.chain(reduced) {
        perm.sizes.push(l.sizes[d]);
        perm.strides.push(l.strides[d]);
    }
    let data = if perm.numel() == 0 {
        Cow::Borrowed(&[][..])
    } else if perm.is_contiguous() {
        Cow::Borrowed(&src.data[perm.offset..perm.offset + perm.numel()])
    } else {
        Cow::Owned(Src::new(src.data, &perm).to_vec())
    };
    (data, group)
}

/// Fills `out[g] = f(group g of data)`, in parallel over output elements when the input is
/// large. `group` must be non-zero.
fn map_groups<T: Element, O: Send>(
    data: &[T],
    group: usize,
    out: &mut [O],
    f: impl Fn(&[T]) -> O + Sync,
) {
    if fan_out(data.len() >= PARALLEL_MIN && out.len() > 1) {
        // Enough groups per task that the per-task call is noise next to the work.
        let per = (TASK_WORK / group).max(1);
        par_chunks_mut(out, per, &|t, outs| {
            let groups = data[t * per * group..].chunks(group);
            outs.iter_mut().zip(groups).for_each(|(o, g)| *o = f(g));
        });
    } else {
        out.iter_mut()
            .zip(data.chunks(group))
            .for_each(|(o, g)| *o = f(g));
    }
}

// ---------------------------------------------------------------------------------------
// sum
// ---------------------------------------------------------------------------------------

/// Sums up to a few hundred elements with eight independent accumulators, so the loop
/// vectorises and the error of a long serial chain is cut eightfold.
fn block_sum<T: Element>(xs: &[T]) -> T::Compute {
    let zero = <T::Compute as Arith>::zero();
    let mut acc = [zero; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a = a.add(x.up());
        }
    }
    let mut s = acc.iter().fold(zero, |s, &a| s.add(a));
    for &x in chunks.remainder() {
        s = s.add(x.up());
    }
    s
}

/// Sums `xs` in `T::Compute` by pairwise halving: rounding error grows like `log n` rather
/// than `n`, and because the split points do not depend on the thread count, the parallel
/// result is bit-identical to the serial one.
fn pairwise_sum<T: Element>(xs: &[T]) -> T::Compute {
    const BLOCK: usize = 256;
    if xs.len() <= BLOCK {
        return block_sum(xs);
    }
    let (a, b) = xs.split_at(xs.len() / 2);
    if fan_out(xs.len() >= PARALLEL_MIN) {
        install(|| {
            let (x, y) = rayon::join(|| pairwise_sum(a), || pairwise_sum(b));
            x.add(y)
        })
    } else {
        pairwise_sum(a).add(pairwise_sum(b))
    }
}

/// For a contiguous, non-empty input whose dims with `mask[d] == which` are adjacent, the
/// `[before, block, after]` split of its shape around them.
fn split_around(layout: &Layout, mask: &[bool], which: bool) -> Option<(usize, usize, usize)> {
    let first = mask.iter().position(|&m| m == which)?;
    let last = mask.iter().rposition(|&m| m == which)?;
    if !layout.is_contiguous()
        || layout.numel() == 0
        || mask[first..=last].iter().any(|&m| m != which)
    {
        return None;
    }
    let s = &layout.sizes;
    Some((
        s[..first].iter().product(),
        s[first..=last].iter().product(),
        s[last + 1..].iter().product(),
    ))
}

/// For a contiguous input whose reduced dims are adjacent, the `[outer, reduced, inner]`
/// split of its shape; such an input can be summed in place, row by row.
fn adjacent_reduced_block(layout: &Layout, mask: &[bool]) -> Option<(usize, usize, usize)> {
    split_around(layout, mask, true)
}

/// For a contiguous input whose kept dims are adjacent with reduced dims on both sides
/// (a conv bias gradient: `[B, C, H, W]` summed over 0, 2 and 3), the `[before, kept,
/// after]` split of its shape.
fn kept_block(layout: &Layout, mask: &[bool]) -> Option<(usize, usize, usize)> {
    if !(mask.first()? & mask.last()?) {
        return None;
    }
    split_around(layout, mask, false)
}

/// Sums `[before, kept, after]` (contiguous) over its first and last dims into `o`
/// (`[kept]`) without reordering it: each contiguous `after` run is summed pairwise (runs in
/// parallel), then the `before` partial sums of each kept element are added pairwise.
fn sum_outer_inner<T: Element>(x: &[T], before: usize, after: usize, o: &mut [T]) {
    let mut partial = vec![<T::Compute as Arith>::zero(); before * o.len()];
    map_groups(x, after, &mut partial, |run| pairwise_sum(run));
    let kept = o.len();
    let mut acc = vec![<T::Compute as Arith>::zero(); kept];
    compute_column_sum(&partial, before, kept, &mut acc);
    o.iter_mut().zip(&acc).for_each(|(d, &a)| *d = T::down(a));
}

/// Adds `rows` rows of `x` (row `k` is `x[k * stride..][..acc.len()]`) into `acc`, halving
/// the rows recursively so the rounding error grows like `log rows`, as in [`pairwise_sum`].
fn column_sum<T: Element>(x: &[T], rows: usize, stride: usize, acc: &mut [T::Compute]) {
    column_sum_by(x, rows, stride, acc, |v: T| v.up());
}

/// [`column_sum`] over values already in a compute type.
fn compute_column_sum<C: Arith>(x: &[C], rows: usize, stride: usize, acc: &mut [C]) {
    column_sum_by(x, rows, stride, acc, |v: C| v);
}

/// The pairwise column sum both share, each value widened by `up` first.
fn column_sum_by<X: Copy, C: Arith>(
    x: &[X],
    rows: usize,
    stride: usize,
    acc: &mut [C],
    up: impl Fn(X) -> C + Copy,
) {
    const LEAF_ROWS: usize = 32;
    if rows <= LEAF_ROWS {
        let width = acc.len();
        for k in 0..rows {
            for (a, &v) in acc.iter_mut().zip(&x[k * stride..k * stride + width]) {
                *a = a.add(up(v));
            }
        }
        return;
    }
    let half = rows / 2;
    column_sum_by(x, half, stride, acc, up);
    let mut rest = vec![C::zero(); acc.len()];
    column_sum_by(&x[half * stride..], rows - half, stride, &mut rest, up);
    acc.iter_mut().zip(&rest).for_each(|(a, &b)| *a = a.add(b));
}

/// Sums `[outer, r, inner]` (contiguous) over its middle dim into `o` (`[outer, inner]`),
/// adding whole rows so the inner loop runs over contiguous memory. Work is split over
/// `(outer, column block)` pairs.
fn sum_middle<T: Element>(x: &[T], r: usize, inner: usize, o: &mut [T]) {
    const COLS: usize = 512;
    let block = |oi: usize, j0: usize, dst: &mut [T]| {
        let mut acc = vec![<T::Compute as Arith>::zero(); dst.len()];
        column_sum(&x[oi * r * inner + j0..], r, inner, &mut acc);
        dst.iter_mut().zip(&acc).for_each(|(d, &a)| *d = T::down(a));
    };
    if fan_out(x.len() >= PARALLEL_MIN) {
        par_chunks_mut(o, inner, &|oi, row| {
            par_chunks_mut(row, COLS, &|c, dst| block(oi, c * COLS, dst));
        });
    } else {
        for (oi, row) in o.chunks_mut(inner).enumerate() {
            row.chunks_mut(COLS)
                .enumerate()
                .for_each(|(c, dst)| block(oi, c * COLS, dst));
        }
    }
}

/// A permuted-dense input (`x.t()`, `x.permute(..)`) with its dims put in memory order
/// (largest stride first), the reduction mask following them — when that keeps the kept
/// dims in their order, which is the output's. The reordered input is contiguous, so a
/// reduction over a leading or middle dim of it adds whole rows in place (`x.t().sum(1)`
/// is a column sum of `x`) instead of copying the input into `[kept, reduced]` order.
fn in_memory_order(layout: &Layout, mask: &[bool]) -> Option<(Layout, Vec<bool>)> {
    if layout.is_contiguous() || !layout.is_non_overlapping_and_dense() {
        return None;
    }
    let mut order: Vec<usize> = (0..layout.ndim()).collect();
    order.sort_by_key(|&d| std::cmp::Reverse(layout.strides[d]));
    // Size-1 dims hold one output element either way; only the others' order matters.
    let kept = order.iter().filter(|&&d| !mask[d] && layout.sizes[d] > 1);
    if !kept.clone().zip(kept.skip(1)).all(|(a, b)| a < b) {
        return None;
    }
    Some((
        layout.reordered(&order),
        order.iter().map(|&d| mask[d]).collect(),
    ))
}

/// Shared body of both `sum` overloads.
fn sum_masked<T: Element>(src: Src<'_, T>, mask: &[bool], mut out: Dst<'_, T>) -> KResult<()> {
    let o = contiguous_out(&mut out)?;
    let reordered = in_memory_order(src.layout, mask);
    let (src, mask) = match &reordered {
        Some((layout, mask)) => (Src::new(src.data, layout), &mask[..]),
        None => (src, mask),
    };
    if let Some((outer, r, inner)) = adjacent_reduced_block(src.layout, mask) {
        if inner > 1 && r > 1 && o.len() == outer * inner {
            let start = src.layout.offset;
            sum_middle(&src.data[start..start + outer * r * inner], r, inner, o);
            return Ok(());
        }
    }
    if let Some((before, kept, after)) = kept_block(src.layout, mask) {
        if o.len() == kept {
            let start = src.layout.offset;
            sum_outer_inner(
                &src.data[start..start + before * kept * after],
                before,
                after,
                o,
            );
            return Ok(());
        }
    }
    let (data, group) = grouped(&src, mask);
    if group == 0 {
        // Summing over an empty dim gives the additive identity.
        o.fill(T::down(<T::Compute as Arith>::zero()));
    } else if o.len() == 1 {
        // One output: parallelism comes from inside the pairwise tree.
        o[0] = T::down(pairwise_sum(&data));
    } else {
        map_groups(&data, group, o, |g| T::down(pairwise_sum(g)));
    }
    Ok(())
}

/// Output shape of `sum(Tensor self, *, ScalarType? dtype=None)`: a 0-d tensor.
pub fn sum_all_meta(self_: &[usize], _dtype: Option<DType>) -> KResult<Vec<Vec<usize>>> {
    let _ = self_;
    Ok(vec![vec![]])
}

/// `sum(self)`: the sum of all elements, accumulated in `T::Compute` (f32 for half types;
/// integers wrap). An empty tensor sums to 0. `dtype` was already applied by the caller,
/// which cast `self_` to it.
pub fn sum_all<T: Element>(
    self_: Src<'_, T>,
    _dtype: Option<DType>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let mask = vec![true; self_.layout.ndim()];
    sum_masked(self_, &mask, out)
}

/// Output shape of `sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *,
/// ScalarType? dtype=None)`. `dim = None` or `[]` reduces every dim.
pub fn sum_dim_meta(
    self_: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<DType>,
) -> KResult<Vec<Vec<usize>>> {
    let mask = reduced_mask(dim, self_.len())?;
    Ok(vec![reduced_shape(self_, &mask, keepdim)])
}

/// `sum(self, dim, keepdim)`: sums over the listed dims, accumulating in `T::Compute`.
/// `dtype` was already applied by the caller.
pub fn sum_dim<T: Element>(
    self_: Src<'_, T>,
    dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<DType>,
    out: Dst<'_, T>,
) -> KResult<()> {
    let _ = keepdim; // only the output's shape depends on it
    let mask = reduced_mask(dim, self_.layout.ndim())?;
    sum_masked(self_, &mask, out)
}

// ---------------------------------------------------------------------------------------
// max / min / argmax / argmin
// ---------------------------------------------------------------------------------------

/// True when `v` should replace the current best `b` (strictly better, so ties keep the
/// first occurrence).
#[inline(always)]
fn better<C: Arith, const MAX: bool>(v: C, b: C) -> bool {
    if MAX {
        v > b
    } else {
        v < b
    }
}

/// Index and value of the largest (`MAX`) or smallest element of a non-empty run. The first
/// NaN wins outright, as NaN propagates through `max`/`min` in PyTorch.
fn arg_extreme<T: Element, const MAX: bool>(xs: &[T]) -> (usize, T) {
    let mut bi = 0;
    let mut b = xs[0].up();
    if b.is_nan() {
        return (0, xs[0]);
    }
    for (i, &x) in xs.iter().enumerate().skip(1) {
        let v = x.up();
        if v.is_nan() {
            return (i, x);
        }
        if better::<_, MAX>(v, b) {
            b = v;
            bi = i;
        }
    }
    (bi, xs[bi])
}

/// Merges the results of two adjacent chunks, `a` before `b`, with the serial scan's rules:
/// an earlier NaN beats anything, then a later NaN, then a strictly better value.
fn combine<T: Element, const MAX: bool>(a: (usize, T), b: (usize, T)) -> (usize, T) {
    let (va, vb) = (a.1.up(), b.1.up());
    if va.is_nan() {
        a
    } else if vb.is_nan() || better::<_, MAX>(vb, va) {
        b
    } else {
        a
    }
}

/// [`arg_extreme`] over one long run, split into chunks across threads when large.
fn arg_extreme_all<T: Element, const MAX: bool>(xs: &[T]) -> (usize, T) {
    const CHUNK: usize = 1 << 14;
    if !fan_out(xs.len() >= PARALLEL_MIN) {
        return arg_extreme::<T, MAX>(xs);
    }
    let mut partial = vec![(0, xs[0]); xs.len().div_ceil(CHUNK)];
    par_chunks_mut(&mut partial, 1, &|c, p| {
        let (i, v) = arg_extreme::<T, MAX>(&xs[c * CHUNK..xs.len().min((c + 1) * CHUNK)]);
        p[0] = (c * CHUNK + i, v);
    });
    // Folding in chunk order keeps ties and NaNs on their first occurrence.
    partial
        .into_iter()
        .reduce(combine::<T, MAX>)
        .unwrap_or((0, xs[0]))
}

/// Shape check shared by `max_all`/`min_all`: an empty tensor has no extreme element.
fn extreme_all_meta(sizes: &[usize], name: &str) -> KResult<Vec<Vec<usize>>> {
    if sizes.iter().product::<usize>() == 0 {
        return Err(KernelError::shape(format!(
            "{name}: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        )));
    }
    Ok(vec![vec![]])
}

/// Shared body of `max_all`/`min_all`.
fn extreme_all<T: Element, const MAX: bool>(
    src: Src<'_, T>,
    mut out: Dst<'_, T>,
    name: &str,
) -> KResult<()> {
    extreme_all_meta(&src.layout.sizes, name)?;
    let mask = vec![true; src.layout.ndim()];
    let (data, _) = grouped(&src, &mask);
    let (_, v) = arg_extreme_all::<T, MAX>(&data);
    contiguous_out(&mut out)?.fill(v);
    Ok(())
}

/// Shared body of `max_dim`/`min_dim`/`argmax`/`argmin` along one dim; `values` is `None`
/// for the arg-only ops.
fn extreme_dim<T: Element, const MAX: bool>(
    src: Src<'_, T>,
    dim: i64,
    name: &str,
    values: Option<&mut [T]>,
    indices: &mut [i64],
) -> KResult<()> {
    let sizes = &src.layout.sizes;
    check_nonzero_dim(sizes, dim, name)?;
    let mask = single_mask(dim, sizes.len())?;
    let (data, group) = grouped(&src, &mask);
    if data.is_empty() {
        return Ok(()); // no output elements (a kept dim has size 0)
    }
    match values {
        Some(values) => {
            let pick = |(v, i): (&mut T, &mut i64), g: &[T]| {
                let (bi, bv) = arg_extreme::<T, MAX>(g);
                (*v, *i) = (bv, bi as i64);
            };
            if fan_out(data.len() >= PARALLEL_MIN && indices.len() > 1) {
                let per = (TASK_WORK / group).max(1);
                par_chunks_mut2(values, indices, per, &|t, vs, is| {
                    let groups = data[t * per * group..].chunks(group);
                    vs.iter_mut()
                        .zip(is.iter_mut())
                        .zip(groups)
                        .for_each(|(o, g)| pick(o, g));
                });
            } else {
                values
                    .iter_mut()
                    .zip(indices.iter_mut())
                    .zip(data.chunks(group))
                    .for_each(|(o, g)| pick(o, g));
            }
        }
        None => map_groups(&data, group, indices, |g| arg_extreme::<T, MAX>(g).0 as i64),
    }
    Ok(())
}

/// Output shape of `max(Tensor self) -> Tensor`: a 0-d tensor. An empty input has no
/// maximum and is rejected.
pub fn max_all_meta(self_: &[usize]) -> KResult<Vec<Vec<usize>>> {
    extreme_all_meta(self_, "max()")
}

/// `max(self)`: the largest element; NaN if any element is NaN. Errors on an empty tensor.
pub fn max_all<T: Element>(self_: Src<'_, T>, out: Dst<'_, T>) -> KResult<()> {
    extreme_all::<T, true>(self_, out, "max()")
}

/// Output shape of `min(Tensor self) -> Tensor`: a 0-d tensor. An empty input has no
/// minimum and is rejected.
pub fn min_all_meta(self_: &[usize]) -> KResult<Vec<Vec<usize>>> {
    extreme_all_meta(self_, "min()")
}

/// `min(self)`: the smallest element; NaN if any element is NaN. Errors on an empty tensor.
pub fn min_all<T: Element>(self_: Src<'_, T>, out: Dst<'_, T>) -> KResult<()> {
    extreme_all::<T, false>(self_, out, "min()")
}

/// Output shapes of `max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values,
/// Tensor indices)`.
pub fn max_dim_meta(self_: &[usize], dim: i64, keepdim: bool) -> KResult<Vec<Vec<usize>>> {
    check_nonzero_dim(self_, dim, "max()")?;
    let shape = reduced_shape(self_, &single_mask(dim, self_.len())?, keepdim);
    Ok(vec![shape.clone(), shape])
}

/// `max(self, dim, keepdim)`: the largest value along `dim` and its index (first occurrence
/// on ties; the first NaN if there is one).
pub fn max_dim<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    keepdim: bool,
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let _ = keepdim; // only the outputs' shape depends on it
    let v = contiguous_out(&mut values)?;
    extreme_dim::<T, true>(self_, dim, "max()", Some(v), contiguous_out(&mut indices)?)
}

/// Output shapes of `min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values,
/// Tensor indices)`.
pub fn min_dim_meta(self_: &[usize], dim: i64, keepdim: bool) -> KResult<Vec<Vec<usize>>> {
    check_nonzero_dim(self_, dim, "min()")?;
    let shape = reduced_shape(self_, &single_mask(dim, self_.len())?, keepdim);
    Ok(vec![shape.clone(), shape])
}

/// `min(self, dim, keepdim)`: the smallest value along `dim` and its index (first occurrence
/// on ties; the first NaN if there is one).
pub fn min_dim<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    keepdim: bool,
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let _ = keepdim;
    let v = contiguous_out(&mut values)?;
    extreme_dim::<T, false>(self_, dim, "min()", Some(v), contiguous_out(&mut indices)?)
}

/// Output shapes of `mode(Tensor self, int dim=-1, bool keepdim=False) -> (Tensor values,
/// Tensor indices)`; a zero-size `dim` has no mode (PyTorch's message).
pub fn mode_meta(self_: &[usize], dim: i64, keepdim: bool) -> KResult<Vec<Vec<usize>>> {
    check_nonzero_dim(self_, dim, "mode()")?;
    let shape = reduced_shape(self_, &single_mask(dim, self_.len())?, keepdim);
    Ok(vec![shape.clone(), shape])
}

/// `mode(self, dim, keepdim)`: the most frequent value along `dim` (the smallest of them on a
/// tie in frequency) and the index of its last occurrence, as PyTorch's CPU kernel gives for
/// short rows. Each row is sorted stably (NaN last); a NaN equals nothing, so it counts once.
pub fn mode<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    keepdim: bool,
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let _ = keepdim; // only the outputs' shape depends on it
    let sizes = &self_.layout.sizes;
    check_nonzero_dim(sizes, dim, "mode()")?;
    let mask = single_mask(dim, sizes.len())?;
    let (data, group) = grouped(&self_, &mask);
    if data.is_empty() {
        return Ok(()); // no output elements (a kept dim has size 0)
    }
    let (vs, is) = (contiguous_out(&mut values)?, contiguous_out(&mut indices)?);
    let pick = |(v, i): (&mut T, &mut i64), g: &[T]| {
        let at = mode_of(g);
        (*v, *i) = (g[at], at as i64);
    };
    if fan_out(data.len() >= PARALLEL_MIN && is.len() > 1) {
        let per = (TASK_WORK / group).max(1);
        par_chunks_mut2(vs, is, per, &|t, vs, is| {
            let groups = data[t * per * group..].chunks(group);
            vs.iter_mut()
                .zip(is.iter_mut())
                .zip(groups)
                .for_each(|(o, g)| pick(o, g));
        });
    } else {
        vs.iter_mut()
            .zip(is.iter_mut())
            .zip(data.chunks(group))
            .for_each(|(o, g)| pick(o, g));
    }
    Ok(())
}

/// The position in a non-empty row of its mode's last occurrence: the row's positions sorted
/// stably by value (NaN last), then the first run of equal values longer than every earlier
/// one; the run's last entry is the value's last occurrence.
fn mode_of<T: Element>(g: &[T]) -> usize {
    let mut order: Vec<(T::Compute, usize)> = g.iter().map(|&x| x.up()).zip(0..).collect();
    order.sort_by(|a, b| match (a.0.is_nan(), b.0.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Greater,
        (false, true) => std::cmp::Ordering::Less,
        (false, false) => a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal),
    });
    let (mut best, mut best_len, mut run) = (0, 0, 0);
    for k in 0..order.len() {
        run += 1;
        // NaN != NaN: every NaN ends its own run of one.
        if k + 1 == order.len() || order[k].0 != order[k + 1].0 {
            if run > best_len {
                (best, best_len) = (order[k].1, run);
            }
            run = 0;
        }
    }
    best
}

/// Shape checks shared by `argmax`/`argmin`.
fn arg_meta(
    self_: &[usize],
    dim: Option<i64>,
    keepdim: bool,
    name: &str,
) -> KResult<Vec<Vec<usize>>> {
    match dim {
        Some(d) => {
            check_nonzero_dim(self_, d, name)?;
            Ok(vec![reduced_shape(
                self_,
                &single_mask(d, self_.len())?,
                keepdim,
            )])
        }
        None => {
            if self_.iter().product::<usize>() == 0 {
                return Err(KernelError::shape(format!(
                    "{name}: Expected reduction dim to be specified for input.numel() == 0."
                )));
            }
            Ok(vec![if keepdim {
                vec![1; self_.len()]
            } else {
                vec![]
            }])
        }
    }
}

/// Shared body of `argmax`/`argmin`.
fn arg_kernel<T: Element, const MAX: bool>(
    src: Src<'_, T>,
    dim: Option<i64>,
    keepdim: bool,
    mut out: Dst<'_, i64>,
    name: &str,
) -> KResult<()> {
    arg_meta(&src.layout.sizes, dim, keepdim, name)?;
    let o = contiguous_out(&mut out)?;
    match dim {
        Some(d) => extreme_dim::<T, MAX>(src, d, name, None, o),
        None => {
            // An index into the flattened (row-major) tensor.
            let mask = vec![true; src.layout.ndim()];
            let (data, _) = grouped(&src, &mask);
            o.fill(arg_extreme_all::<T, MAX>(&data).0 as i64);
            Ok(())
        }
    }
}

/// Output shape of `argmax(Tensor self, int? dim=None, bool keepdim=False)`. With
/// `dim = None` the result is 0-d, or all ones of the input's rank with `keepdim`.
pub fn argmax_meta(self_: &[usize], dim: Option<i64>, keepdim: bool) -> KResult<Vec<Vec<usize>>> {
    arg_meta(self_, dim, keepdim, "argmax()")
}

/// `argmax(self, dim, keepdim)`: the index of the largest element along `dim`, or into the
/// flattened tensor when `dim` is `None`. First occurrence on ties; a NaN counts as largest.
pub fn argmax<T: Element>(
    self_: Src<'_, T>,
    dim: Option<i64>,
    keepdim: bool,
    out: Dst<'_, i64>,
) -> KResult<()> {
    arg_kernel::<T, true>(self_, dim, keepdim, out, "argmax()")
}

/// Output shape of `argmin(Tensor self, int? dim=None, bool keepdim=False)`, as for
/// [`argmax_meta`].
pub fn argmin_meta(self_: &[usize], dim: Option<i64>, keepdim: bool) -> KResult<Vec<Vec<usize>>> {
    arg_meta(self_, dim, keepdim, "argmin()")
}

/// `argmin(self, dim, keepdim)`: the index of the smallest element along `dim`, or into the
/// flattened tensor when `dim` is `None`. First occurrence on ties; a NaN counts as smallest.
pub fn argmin<T: Element>(
    self_: Src<'_, T>,
    dim: Option<i64>,
    keepdim: bool,
    out: Dst<'_, i64>,
) -> KResult<()> {
    arg_kernel::<T, false>(self_, dim, keepdim, out, "argmin()")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::f16;

    /// Runs a single-output kernel into a fresh buffer of `shape`.
    fn run1<O: Element>(
        shape: &[usize],
        k: impl FnOnce(Dst<'_, O>) -> KResult<()>,
    ) -> KResult<Vec<O>> {
        let l = Layout::contiguous(shape);
        let mut buf = vec![O::default(); l.numel()];
        k(Dst::new(&mut buf, &l))?;
        Ok(buf)
    }

    /// Naive reduction of a logical tensor given as row-major f64 `values` of `shape`:
    /// `f(acc, value, position_along_reduced)` folds each output's inputs in row-major order.
    fn naive_reduce(
        shape: &[usize],
        values: &[f64],
        reduced: &[usize],
        init: (f64, usize),
        f: impl Fn((f64, usize), f64, usize) -> (f64, usize),
    ) -> Vec<(f64, usize)> {
        let out_shape: Vec<usize> = shape
            .iter()
            .enumerate()
            .map(|(d, &s)| if reduced.contains(&d) { 1 } else { s })
            .collect();
        let out_n: usize = out_shape.iter().product();
        let mut out = vec![None; out_n];
        for (lin, &v) in values.iter().enumerate() {
            // Unravel `lin`, then ravel it into the output and into the reduced sub-space.
            let mut rem = lin;
            let mut idx = vec![0; shape.len()];
            for d in (0..shape.len()).rev() {
                idx[d] = rem % shape[d];
                rem /= shape[d];
            }
            let (mut o, mut r) = (0, 0);
            for d in 0..shape.len() {
                if reduced.contains(&d) {
                    r = r * shape[d] + idx[d];
                } else {
                    o = o * shape[d] + idx[d];
                }
            }
            let acc = out[o].unwrap_or(init);
            out[o] = Some(f(acc, v, r));
        }
        out.into_iter().map(|a| a.unwrap_or(init)).collect()
    }

    fn naive_sum(shape: &[usize], values: &[f64], reduced: &[usize]) -> Vec<f64> {
        naive_reduce(shape, values, reduced, (0.0, 0), |(a, _), v, _| (a + v, 0))
            .into_iter()
            .map(|x| x.0)
            .collect()
    }

    /// Naive max with PyTorch's rules, written as an explicit "first NaN / first max" scan.
    fn naive_max(shape: &[usize], values: &[f64], reduced: &[usize]) -> Vec<(f64, usize)> {
        naive_reduce(
            shape,
            values,
            reduced,
            (f64::NEG_INFINITY, usize::MAX),
            |(b, bi), v, r| {
                if bi != usize::MAX && b.is_nan() {
                    (b, bi)
                } else if bi == usize::MAX || v.is_nan() || v > b {
                    (v, r)
                } else {
                    (b, bi)
                }
            },
        )
    }

    fn close(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tol * (1.0 + y.abs()), "{a:?} vs {b:?}");
        }
    }

    /// A 3-d f64 input [2, 3, 4] stored as its [4, 3, 2] permutation (so non-contiguous),
    /// with its logical row-major values.
    fn permuted_input() -> (Vec<f64>, Layout, Vec<f64>) {
        let store: Vec<f64> = (0..24).map(|v| ((v * 7) % 11) as f64 - 5.0).collect();
        let layout = Layout::contiguous(&[4, 3, 2]).permute(&[2, 1, 0]).unwrap();
        let mut logical = vec![];
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    logical.push(store[k * 6 + j * 2 + i]);
                }
            }
        }
        (store, layout, logical)
    }

    #[test]
    fn sum_all_of_permuted_broadcast_f16_and_int_inputs() {
        let (store, layout, logical) = permuted_input();
        let got = run1::<f64>(&[], |o| sum_all(Src::new(&store, &layout), None, o)).unwrap();
        close(&got, &naive_sum(&[2, 3, 4], &logical, &[0, 1, 2]), 1e-12);

        // A [3] row broadcast to [4, 3] through stride 0.
        let row = vec![1.5f32, -2.0, 4.0];
        let bl = Layout::contiguous(&[1, 3]).expand(&[4, 3]).unwrap();
        let got = run1::<f32>(&[], |o| sum_all(Src::new(&row, &bl), None, o)).unwrap();
        assert_eq!(got, vec![4.0 * (1.5 - 2.0 + 4.0)]);

        let h: Vec<f16> = (0..10).map(|v| f16::from_f64(v as f64 * 0.25)).collect();
        let hl = Layout::contiguous(&[10]);
        let got = run1::<f16>(&[], |o| sum_all(Src::new(&h, &hl), None, o)).unwrap();
        assert_eq!(
            got[0].to_f64(),
            (0..10).map(|v| v as f64 * 0.25).sum::<f64>()
        );

        let ints = vec![i64::MAX, 1, 5];
        let il = Layout::contiguous(&[3]);
        let got = run1::<i64>(&[], |o| sum_all(Src::new(&ints, &il), None, o)).unwrap();
        assert_eq!(got, vec![i64::MIN.wrapping_add(5)]); // wraps like PyTorch
    }

    #[test]
    fn sum_of_empty_and_zero_dim() {
        let e: Vec<f32> = vec![];
        let el = Layout::contiguous(&[0, 3]);
        assert_eq!(
            run1::<f32>(&[], |o| sum_all(Src::new(&e, &el), None, o)).unwrap(),
            vec![0.0]
        );
        assert_eq!(
            sum_dim_meta(&[0, 3], Some(&[0]), false, None).unwrap(),
            vec![vec![3]]
        );
        assert_eq!(
            run1::<f32>(&[3], |o| sum_dim(
                Src::new(&e, &el),
                Some(&[0]),
                false,
                None,
                o
            ))
            .unwrap(),
            vec![0.0; 3]
        );
        assert_eq!(
            run1::<f32>(&[0], |o| sum_dim(
                Src::new(&e, &el),
                Some(&[1]),
                false,
                None,
                o
            ))
            .unwrap(),
            vec![]
        );

        let s = vec![7i32];
        let sl = Layout::contiguous(&[]);
        assert_eq!(
            sum_dim_meta(&[], Some(&[-1]), true, None).unwrap(),
            vec![Vec::<usize>::new()]
        );
        assert_eq!(
            run1::<i32>(&[], |o| sum_dim(
                Src::new(&s, &sl),
                Some(&[0]),
                true,
                None,
                o
            ))
            .unwrap(),
            vec![7]
        );
    }

    #[test]
    fn sum_dim_over_several_dims_of_permuted_input() {
        let (store, layout, logical) = permuted_input();
        for (dims, reduced) in [
            (vec![0i64, 2], vec![0usize, 2]),
            (vec![-2], vec![1]),
            (vec![], vec![0, 1, 2]),
        ] {
            let shape = sum_dim_meta(&[2, 3, 4], Some(&dims), false, None)
                .unwrap()
                .remove(0);
            let got = run1::<f64>(&shape, |o| {
                sum_dim(Src::new(&store, &layout), Some(&dims), false, None, o)
            })
            .unwrap();
            close(&got, &naive_sum(&[2, 3, 4], &logical, &reduced), 1e-12);
        }
        assert_eq!(
            sum_dim_meta(&[2, 3, 4], Some(&[0, 2]), true, None).unwrap(),
            vec![vec![1, 3, 1]]
        );
        assert_eq!(
            sum_dim_meta(&[2, 3, 4], None, true, None).unwrap(),
            vec![vec![1, 1, 1]]
        );
        assert_eq!(
            sum_dim_meta(&[2, 3, 4], None, false, None).unwrap(),
            vec![Vec::<usize>::new()]
        );
    }

    #[test]
    fn sum_dim_of_contiguous_input_over_middle_and_leading_dims() {
        // Contiguous inputs whose reduced dims are adjacent are summed row by row in place.
        let x: Vec<f64> = (0..24).map(|v| ((v * 5) % 7) as f64 - 2.5).collect();
        let l = Layout::contiguous(&[2, 3, 4]);
        for (dims, reduced) in [
            (vec![1i64], vec![1usize]),
            (vec![0, 1], vec![0, 1]),
            (vec![0, 2], vec![0, 2]),
        ] {
            let shape = sum_dim_meta(&[2, 3, 4], Some(&dims), true, None)
                .unwrap()
                .remove(0);
            let got = run1::<f64>(&shape, |o| {
                sum_dim(Src::new(&x, &l), Some(&dims), true, None, o)
            })
            .unwrap();
            close(&got, &naive_sum(&[2, 3, 4], &x, &reduced), 1e-12);
        }
        // Enough rows for the pairwise halving, in f16 (accumulated in f32) and i8 (wrapping).
        let h: Vec<f16> = (0..300)
            .map(|v| f16::from_f64((v % 10) as f64 * 0.5))
            .collect();
        let hl = Layout::contiguous(&[100, 3]);
        let got = run1::<f16>(&[3], |o| {
            sum_dim(Src::new(&h, &hl), Some(&[0]), false, None, o)
        })
        .unwrap();
        let logical: Vec<f64> = h.iter().map(|v| v.to_f64()).collect();
        close(
            &got.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            &naive_sum(&[100, 3], &logical, &[0]),
            1e-3,
        );
        let b = vec![100i8; 6];
        let bl = Layout::contiguous(&[3, 2]);
        let got = run1::<i8>(&[2], |o| {
            sum_dim(Src::new(&b, &bl), Some(&[0]), false, None, o)
        })
        .unwrap();
        assert_eq!(got, vec![44, 44]); // 300 wraps to 44
    }

    #[test]
    fn sum_large_parallel_matches_naive() {
        let n = 3 * PARALLEL_MIN + 17;
        let data: Vec<f32> = (0..n).map(|v| ((v % 97) as f32) * 0.01 - 0.3).collect();
        let l = Layout::contiguous(&[n]);
        let want: f64 = data.iter().map(|&v| v as f64).sum();
        let got = run1::<f32>(&[], |o| sum_all(Src::new(&data, &l), None, o)).unwrap();
        close(&[got[0] as f64], &[want], 1e-5);

        // Many rows, reduced over the leading dim of a [rows, 600] contiguous matrix.
        let l2 = Layout::contiguous(&[n / 600, 600]);
        let logical: Vec<f64> = data[..l2.numel()].iter().map(|&v| v as f64).collect();
        let got = run1::<f32>(&[600], |o| {
            sum_dim(Src::new(&data, &l2), Some(&[0]), false, None, o)
        })
        .unwrap();
        let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        close(&got, &naive_sum(&l2.sizes, &logical, &[0]), 1e-5);
    }

    #[test]
    fn sum_over_a_small_last_dim_splits_groups_across_tasks() {
        // 11,003 groups of 3: more than one task's worth, and not a multiple of the groups
        // each task takes, so the last task is a partial one.
        let rows = 11_003;
        let data: Vec<f32> = (0..rows * 3).map(|v| (v % 13) as f32 - 6.0).collect();
        let l = Layout::contiguous(&[rows, 3]);
        let logical: Vec<f64> = data.iter().map(|&v| v as f64).collect();
        let got = run1::<f32>(&[rows], |o| {
            sum_dim(Src::new(&data, &l), Some(&[1]), false, None, o)
        })
        .unwrap();
        let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
        close(&got, &naive_sum(&[rows, 3], &logical, &[1]), 0.0);
    }

    /// The elements of `data` under `layout`, row-major, by plain index arithmetic.
    fn read_logical<T: Copy>(data: &[T], layout: &Layout) -> Vec<T> {
        let mut idx = vec![0usize; layout.ndim()];
        (0..layout.numel())
            .map(|_| {
                let off: usize = idx.iter().zip(&layout.strides).map(|(i, s)| i * s).sum();
                for d in (0..idx.len()).rev() {
                    idx[d] += 1;
                    if idx[d] < layout.sizes[d] {
                        break;
                    }
                    idx[d] = 0;
                }
                data[layout.offset + off]
            })
            .collect()
    }

    #[test]
    fn sum_over_every_dim_subset_of_every_permuted_layout_matches_naive() {
        // A [5, 6, 7] input stored as each of its six permutations (dense, so reordering
        // its dims into memory order makes it contiguous, when that keeps the kept dims in
        // order), plus a step-2 slice and a larger transposed matrix summed over each dim.
        let sizes = [5usize, 6, 7];
        let perms = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ];
        let store: Vec<f64> = (0..420).map(|v| ((v * 37) % 101) as f64 - 50.0).collect();
        for perm in perms {
            let stored: Vec<usize> = perm.iter().map(|&d| sizes[d]).collect();
            let mut inv = [0i64; 3];
            perm.iter()
                .enumerate()
                .for_each(|(i, &d)| inv[d] = i as i64);
            let layout = Layout::contiguous(&stored).permute(&inv).unwrap();
            let logical = read_logical(&store, &layout);
            for dims in [
                vec![0i64],
                vec![1],
                vec![2],
                vec![0, 1],
                vec![0, 2],
                vec![1, 2],
            ] {
                let reduced: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
                let shape = sum_dim_meta(&sizes, Some(&dims), false, None)
                    .unwrap()
                    .remove(0);
                let got = run1::<f64>(&shape, |o| {
                    sum_dim(Src::new(&store, &layout), Some(&dims), false, None, o)
                })
                .unwrap();
                close(&got, &naive_sum(&sizes, &logical, &reduced), 1e-12);
            }
        }
        let (r, c) = (300, 250);
        let data: Vec<f32> = (0..2 * r * c).map(|v| (v % 19) as f32 - 9.0).collect();
        let t = Layout::contiguous(&[c, r]).transpose(0, 1).unwrap();
        let stepped = Layout::contiguous(&[c, 2 * r])
            .slice(1, Some(1), None, 2)
            .unwrap()
            .transpose(0, 1)
            .unwrap();
        for layout in [t, stepped] {
            let logical: Vec<f64> = read_logical(&data, &layout)
                .iter()
                .map(|&v| v as f64)
                .collect();
            for dim in [0usize, 1] {
                let got = run1::<f32>(&[[c, r][dim]], |o| {
                    sum_dim(
                        Src::new(&data, &layout),
                        Some(&[dim as i64]),
                        false,
                        None,
                        o,
                    )
                })
                .unwrap();
                let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
                close(&got, &naive_sum(&[r, c], &logical, &[dim]), 1e-6);
            }
        }
    }

    #[test]
    fn sum_dim_errors() {
        assert_eq!(
            sum_dim_meta(&[2, 3], Some(&[1, -1]), false, None)
                .unwrap_err()
                .to_string(),
            "dim 1 appears multiple times in the list of dims"
        );
        assert_eq!(
            sum_dim_meta(&[2, 3], Some(&[2]), false, None)
                .unwrap_err()
                .to_string(),
            "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
        );
        assert!(sum_dim_meta(&[], Some(&[1]), false, None).is_err());
    }

    #[test]
    fn max_min_all_with_nan_bool_and_empty() {
        let (store, layout, logical) = permuted_input();
        let got = run1::<f64>(&[], |o| max_all(Src::new(&store, &layout), o)).unwrap();
        assert_eq!(got[0], naive_max(&[2, 3, 4], &logical, &[0, 1, 2])[0].0);
        let neg: Vec<f64> = logical.iter().map(|v| -v).collect();
        let got = run1::<f64>(&[], |o| min_all(Src::new(&store, &layout), o)).unwrap();
        assert_eq!(-got[0], naive_max(&[2, 3, 4], &neg, &[0, 1, 2])[0].0);

        let nan = vec![1.0f32, f32::NAN, 3.0];
        let l = Layout::contiguous(&[3]);
        assert!(run1::<f32>(&[], |o| max_all(Src::new(&nan, &l), o)).unwrap()[0].is_nan());
        assert!(run1::<f32>(&[], |o| min_all(Src::new(&nan, &l), o)).unwrap()[0].is_nan());

        let b = vec![false, true, false];
        assert_eq!(
            run1::<bool>(&[], |o| max_all(Src::new(&b, &l), o)).unwrap(),
            vec![true]
        );
        assert_eq!(
            run1::<bool>(&[], |o| min_all(Src::new(&b, &l), o)).unwrap(),
            vec![false]
        );

        let e: Vec<f32> = vec![];
        let el = Layout::contiguous(&[0]);
        assert_eq!(
            run1::<f32>(&[], |o| max_all(Src::new(&e, &el), o)).unwrap_err().to_string(),
            "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        );
        assert!(run1::<f32>(&[], |o| min_all(Src::new(&e, &el), o))
            .unwrap_err()
            .to_string()
            .starts_with("min(): Expected"));
        assert!(max_all_meta(&[2, 0])
            .unwrap_err()
            .to_string()
            .starts_with("max(): Expected reduction dim to be specified"));
        assert_eq!(min_all_meta(&[]).unwrap(), vec![Vec::<usize>::new()]);
    }

    #[test]
    fn max_dim_matches_naive_on_permuted_input() {
        let (store, layout, logical) = permuted_input();
        for d in 0..3 {
            let shapes = max_dim_meta(&[2, 3, 4], d as i64, true).unwrap();
            let (lv, li) = (
                Layout::contiguous(&shapes[0]),
                Layout::contiguous(&shapes[1]),
            );
            let (mut v, mut i) = (vec![0.0f64; lv.numel()], vec![0i64; li.numel()]);
            max_dim(
                Src::new(&store, &layout),
                d as i64,
                true,
                Dst::new(&mut v, &lv),
                Dst::new(&mut i, &li),
            )
            .unwrap();
            let want = naive_max(&[2, 3, 4], &logical, &[d]);
            assert_eq!(v, want.iter().map(|w| w.0).collect::<Vec<_>>());
            assert_eq!(
                i,
                want.iter().map(|w| w.1 as i64).collect::<Vec<_>>(),
                "dim {d}"
            );
        }
    }

    /// Runs `max_dim` or `min_dim` on a contiguous input.
    fn extreme_dim_of<T: Element>(
        data: &[T],
        shape: &[usize],
        dim: i64,
        max: bool,
    ) -> KResult<(Vec<T>, Vec<i64>)> {
        let l = Layout::contiguous(shape);
        let shapes = if max {
            max_dim_meta(shape, dim, false)?
        } else {
            min_dim_meta(shape, dim, false)?
        };
        let (lv, li) = (
            Layout::contiguous(&shapes[0]),
            Layout::contiguous(&shapes[1]),
        );
        let (mut v, mut i) = (vec![T::default(); lv.numel()], vec![0i64; li.numel()]);
        let (dv, di) = (Dst::new(&mut v, &lv), Dst::new(&mut i, &li));
        if max {
            max_dim(Src::new(data, &l), dim, false, dv, di)?;
        } else {
            min_dim(Src::new(data, &l), dim, false, dv, di)?;
        }
        Ok((v, i))
    }

    #[test]
    fn max_min_dim_ties_nan_f16_int_and_zero_dim() {
        // Ties keep the first index; the first NaN wins.
        let x = vec![3.0f32, 1.0, 3.0, 1.0, f32::NAN, 2.0, f32::NAN, 0.0];
        let (v, i) = extreme_dim_of(&x, &[2, 4], 1, true).unwrap();
        assert_eq!((v[0], i[0]), (3.0, 0));
        assert!(v[1].is_nan() && i[1] == 0);
        let (v, i) = extreme_dim_of(&x, &[2, 4], 1, false).unwrap();
        assert_eq!((v[0], i[0]), (1.0, 1));
        assert!(v[1].is_nan() && i[1] == 0);

        let h: Vec<f16> = [0.5, -1.0, 2.5, 2.5]
            .iter()
            .map(|&v| f16::from_f64(v))
            .collect();
        let (v, i) = extreme_dim_of(&h, &[4], 0, true).unwrap();
        assert_eq!((v[0].to_f64(), i[0]), (2.5, 2));

        let ints = vec![5i32, -9, 7, -9];
        let (v, i) = extreme_dim_of(&ints, &[2, 2], 0, false).unwrap();
        assert_eq!((v, i), (vec![5, -9], vec![0, 0]));

        let s = vec![4u8];
        assert_eq!(
            extreme_dim_of(&s, &[], -1, true).unwrap(),
            (vec![4], vec![0])
        );
        assert_eq!(
            max_dim_meta(&[], 0, true).unwrap(),
            vec![Vec::<usize>::new(), vec![]]
        );
    }

    #[test]
    fn max_dim_errors_and_empty_kept_dims() {
        assert_eq!(
            max_dim_meta(&[2, 0], 1, false).unwrap_err().to_string(),
            "max(): Expected reduction dim 1 to have non-zero size."
        );
        assert_eq!(
            min_dim_meta(&[0], -1, false).unwrap_err().to_string(),
            "min(): Expected reduction dim 0 to have non-zero size."
        );
        let e: Vec<f32> = vec![];
        assert!(extreme_dim_of(&e, &[0, 3], 0, true).is_err());
        // Reducing a non-empty dim of an empty tensor is fine and gives an empty result.
        assert_eq!(
            extreme_dim_of(&e, &[0, 3], 1, true).unwrap(),
            (vec![], vec![])
        );
    }

    #[test]
    fn max_dim_large_parallel_with_broadcast_input() {
        // A [1, 500] row expanded to [200, 500]: every row's max is the row's max.
        let row: Vec<f64> = (0..500).map(|v| ((v * 37) % 501) as f64).collect();
        let l = Layout::contiguous(&[1, 500]).expand(&[200, 500]).unwrap();
        let (lv, li) = (Layout::contiguous(&[200]), Layout::contiguous(&[200]));
        let (mut v, mut i) = (vec![0.0; 200], vec![0i64; 200]);
        max_dim(
            Src::new(&row, &l),
            1,
            false,
            Dst::new(&mut v, &lv),
            Dst::new(&mut i, &li),
        )
        .unwrap();
        let logical: Vec<f64> = (0..200).flat_map(|_| row.iter().copied()).collect();
        let want = naive_max(&[200, 500], &logical, &[1]);
        assert_eq!(v, want.iter().map(|w| w.0).collect::<Vec<_>>());
        assert_eq!(i, want.iter().map(|w| w.1 as i64).collect::<Vec<_>>());
    }

    #[test]
    fn argmax_argmin_flattened_and_along_dim() {
        let (store, layout, logical) = permuted_input();
        let got = run1::<i64>(&[], |o| argmax(Src::new(&store, &layout), None, false, o)).unwrap();
        assert_eq!(
            got[0] as usize,
            naive_max(&[2, 3, 4], &logical, &[0, 1, 2])[0].1
        );
        let neg: Vec<f64> = logical.iter().map(|v| -v).collect();
        let got = run1::<i64>(&[1, 1, 1], |o| {
            argmin(Src::new(&store, &layout), None, true, o)
        })
        .unwrap();
        assert_eq!(
            got[0] as usize,
            naive_max(&[2, 3, 4], &neg, &[0, 1, 2])[0].1
        );
        assert_eq!(
            argmax_meta(&[2, 3, 4], None, true).unwrap(),
            vec![vec![1, 1, 1]]
        );
        assert_eq!(
            argmax_meta(&[2, 3, 4], Some(-1), false).unwrap(),
            vec![vec![2, 3]]
        );

        let got = run1::<i64>(&[2, 4], |o| {
            argmin(Src::new(&store, &layout), Some(1), false, o)
        })
        .unwrap();
        let want: Vec<i64> = naive_max(&[2, 3, 4], &neg, &[1])
            .iter()
            .map(|w| w.1 as i64)
            .collect();
        assert_eq!(got, want);

        // Large flattened argmax across parallel chunks: the max sits near the end, a tie later.
        let n = 2 * PARALLEL_MIN + 5;
        let mut big = vec![0i64; n];
        big[n - 100] = 9;
        big[n - 3] = 9;
        let bl = Layout::contiguous(&[n]);
        assert_eq!(
            run1::<i64>(&[], |o| argmax(Src::new(&big, &bl), None, false, o)).unwrap(),
            vec![(n - 100) as i64]
        );
        let mut nan = vec![1.0f32; n];
        nan[PARALLEL_MIN + 1] = f32::NAN;
        nan[n - 1] = f32::NAN;
        nan[3] = 5.0;
        let nl = Layout::contiguous(&[n]);
        let got = run1::<i64>(&[], |o| argmin(Src::new(&nan, &nl), None, false, o)).unwrap();
        assert_eq!(got, vec![(PARALLEL_MIN + 1) as i64]);
    }

    #[test]
    fn argmax_errors_and_zero_dim() {
        assert_eq!(
            argmax_meta(&[0, 2], None, false).unwrap_err().to_string(),
            "argmax(): Expected reduction dim to be specified for input.numel() == 0."
        );
        assert_eq!(
            argmin_meta(&[0, 2], Some(0), false)
                .unwrap_err()
                .to_string(),
            "argmin(): Expected reduction dim 0 to have non-zero size."
        );
        assert_eq!(argmax_meta(&[0, 2], Some(1), false).unwrap(), vec![vec![0]]);
        let s = vec![2.0f64];
        let sl = Layout::contiguous(&[]);
        assert_eq!(
            run1::<i64>(&[], |o| argmax(Src::new(&s, &sl), Some(0), true, o)).unwrap(),
            vec![0]
        );
        assert_eq!(
            run1::<i64>(&[], |o| argmax(Src::new(&s, &sl), None, true, o)).unwrap(),
            vec![0]
        );
    }

    #[test]
    fn mode_picks_the_smallest_most_frequent_value_at_its_last_occurrence() {
        assert_eq!(mode_of(&[3i64, 1, 3, 1, 2]), 3); // 1 and 3 twice: 1, last at 3
        assert_eq!(mode_of(&[4.0f64, 2.0, 9.0]), 1); // all once: the smallest
        let n = f64::NAN;
        assert_eq!(mode_of(&[n, 5.0, n, 5.0]), 3); // NaNs count once each
        assert_eq!(mode_of(&[n, n, n]), 0); // all NaN: the first
        assert_eq!(mode_of(&[true, false, true]), 2);
        assert_eq!(
            mode_meta(&[2, 0], 1, false).unwrap_err().to_string(),
            "mode(): Expected reduction dim 1 to have non-zero size."
        );
        assert_eq!(mode_meta(&[0, 3], 1, true).unwrap(), vec![vec![0, 1]; 2]);
    }
}
