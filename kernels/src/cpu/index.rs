//! Indexing along one dim with an `i64` index tensor: `index_select`, `gather`, `scatter`,
//! `scatter_add`, `scatter_reduce` (and `scatter`'s `reduce=` form) and `index_add`.
//!
//! Every kernel validates all indices before touching the output, so a bad index is an
//! error (with PyTorch's wording), never a panic or a partial write. Accumulating kernels
//! (`scatter_add`, `scatter_reduce`, `index_add`) reduce in `T::Compute` and round once at
//! the end.

use crate::cpu::pointwise::PARALLEL_MIN;
use crate::cpu::shape::{contiguous_out, row_major, split_at_dim};
use crate::cpu::strided::for_each_run;
use crate::layout::{contiguous_strides, wrap_dim};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, DType, Dst, Element, KResult, Layout, Src};

/// PyTorch's `ensure_nonempty_*`: scatter/gather treat a 0-d tensor as shape `[1]`.
fn nonempty(sizes: &[usize]) -> Vec<usize> {
    if sizes.is_empty() {
        vec![1]
    } else {
        sizes.to_vec()
    }
}

/// Strides to match [`nonempty`] sizes.
fn nonempty_strides(layout: &Layout) -> crate::Dims {
    if layout.sizes.is_empty() {
        smallvec::smallvec![0]
    } else {
        layout.strides.clone()
    }
}

/// Converts every index to `usize`, or fails with `err(bad_index)` on the first one outside
/// `0..size` (negative indices are out of range, as in PyTorch's CPU kernels).
fn check_indices(
    idx: &[i64],
    size: usize,
    err: impl Fn(i64) -> KernelError,
) -> KResult<Vec<usize>> {
    idx.iter()
        .map(|&i| match usize::try_from(i) {
            Ok(u) if u < size => Ok(u),
            _ => Err(err(i)),
        })
        .collect()
}

/// The error scatter/gather give for an index outside `0..size` of `dim`.
fn oob(dim: usize, size: usize) -> impl Fn(i64) -> KernelError {
    move |i| {
        KernelError::index(format!(
            "index {i} is out of bounds for dimension {dim} with size {size}"
        ))
    }
}

// ---------------------------------------------------------------------------------------
// index_select
// ---------------------------------------------------------------------------------------

/// Output shape of `index_select(Tensor self, int dim, Tensor index)`: `self`'s shape with
/// `dim` resized to the number of indices (a 0-d `self` takes exactly one index and stays 0-d).
pub fn index_select_meta(self_: &[usize], dim: i64, index: &[usize]) -> KResult<Vec<Vec<usize>>> {
    let d = wrap_dim(dim, self_.len())?;
    if index.len() > 1 {
        return Err(KernelError::index(
            "index_select(): Index is supposed to be a vector",
        ));
    }
    let numel: usize = index.iter().product();
    if self_.is_empty() {
        if numel != 1 {
            return Err(KernelError::index(format!(
                "index_select(): Index to scalar can have only 1 value, got {numel} value(s)"
            )));
        }
        return Ok(vec![vec![]]);
    }
    let mut shape = self_.to_vec();
    shape[d] = numel;
    Ok(vec![shape])
}

/// `index_select(self, dim, index)`: `out[.., r, ..] = self[.., index[r], ..]`. Each output
/// row block is a run of `memcpy`s of the `inner` trailing elements; parallel over the outer
/// dims when large.
pub fn index_select<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    index_select_meta(&self_.layout.sizes, dim, &index.layout.sizes)?;
    let d = wrap_dim(dim, self_.layout.ndim())?;
    let (outer, n, inner) = split_at_dim(&self_.layout.sizes, d);
    let rows = check_indices(&row_major(&index), n, |_| {
        KernelError::index("index out of range in self")
    })?;
    let x = row_major(&self_);
    let o = contiguous_out(&mut out)?;
    let block = rows.len() * inner;
    if o.len() != outer * block {
        return Err(KernelError::shape(format!(
            "internal error: output has {} elements, expected {}",
            o.len(),
            outer * block
        )));
    }
    if o.is_empty() {
        return Ok(());
    }
    let fill = |(oi, dst): (usize, &mut [T])| {
        if inner == 1 {
            // Single elements (the last dim, a flip): a `memcpy` call each costs more than
            // the move.
            let src = &x[oi * n..(oi + 1) * n];
            for (d, &i) in dst.iter_mut().zip(rows.iter()) {
                *d = src[i];
            }
            return;
        }
        for (r, &i) in rows.iter().enumerate() {
            let from = (oi * n + i) * inner;
            dst[r * inner..(r + 1) * inner].copy_from_slice(&x[from..from + inner]);
        }
    };
    if fan_out(o.len() >= PARALLEL_MIN && outer > 1) {
        par_chunks_mut(o, block, &|i, dst| fill((i, dst)));
    } else {
        o.chunks_mut(block).enumerate().for_each(fill);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// gather
// ---------------------------------------------------------------------------------------

/// PyTorch's `gather_shape_check`: same rank, and `index` no larger than `self` outside `dim`.
fn gather_shape_check(self_: &[usize], d: usize, index: &[usize]) -> KResult<()> {
    let (s, i) = (nonempty(self_), nonempty(index));
    if s.len() != i.len() {
        return Err(KernelError::shape(
            "Index tensor must have the same number of dimensions as input tensor",
        ));
    }
    for e in 0..s.len() {
        if e != d && i[e] > s[e] {
            return Err(KernelError::shape(format!(
                "Size does not match at dimension {e} expected index {index:?} to be smaller than self {self_:?} apart from dimension {d}"
            )));
        }
    }
    Ok(())
}

/// Output shape of `gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False)`:
/// the index's shape. An empty index skips the shape checks, as in PyTorch.
pub fn gather_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    sparse_grad: bool,
) -> KResult<Vec<Vec<usize>>> {
    let _ = sparse_grad; // only changes the backward formula
    let d = wrap_dim(dim, self_.len())?;
    if index.iter().product::<usize>() != 0 {
        gather_shape_check(self_, d, index)?;
    }
    Ok(vec![index.to_vec()])
}

/// `gather(self, dim, index)`: `out[p] = self[p with p[dim] = index[p]]`. `self` is read in
/// place through its strides: walking `self`'s layout resized to the index's shape, with
/// `dim`'s stride zeroed, yields each position's base offset in the index's row-major order.
pub fn gather<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    sparse_grad: bool,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    gather_meta(&self_.layout.sizes, dim, &index.layout.sizes, sparse_grad)?;
    let d = wrap_dim(dim, self_.layout.ndim())?;
    let idx = row_major(&index);
    let o = contiguous_out(&mut out)?;
    if o.len() != idx.len() {
        return Err(KernelError::shape(format!(
            "internal error: output has {} elements, expected {}",
            o.len(),
            idx.len()
        )));
    }
    if idx.is_empty() {
        return Ok(());
    }
    let size = nonempty(&self_.layout.sizes)[d];
    let idx = check_indices(&idx, size, oob(d, size))?;
    let mut strides = nonempty_strides(self_.layout);
    let step = strides[d];
    strides[d] = 0;
    let bases = Layout {
        sizes: nonempty(&index.layout.sizes).into(),
        strides,
        offset: self_.layout.offset,
    };
    let mut k = 0;
    for_each_run([&bases], |[base], len, [s]| {
        for t in 0..len {
            o[k] = self_.data[base + t * s + idx[k] * step];
            k += 1;
        }
    });
    Ok(())
}

// ---------------------------------------------------------------------------------------
// scatter_add
// ---------------------------------------------------------------------------------------

/// PyTorch's `scatter_shape_check` with a `src` tensor.
fn scatter_shape_check(self_: &[usize], d: usize, index: &[usize], src: &[usize]) -> KResult<()> {
    if index.iter().product::<usize>() == 0 {
        return Ok(());
    }
    let (s, i, sr) = (nonempty(self_), nonempty(index), nonempty(src));
    if s.len() != i.len() {
        return Err(KernelError::shape(
            "Index tensor must have the same number of dimensions as self tensor",
        ));
    }
    if sr.len() != i.len() {
        return Err(KernelError::shape(
            "Index tensor must have the same number of dimensions as src tensor",
        ));
    }
    let wrong = (0..i.len()).any(|e| (e != d && i[e] > s[e]) || i[e] > sr[e]);
    if wrong {
        return Err(KernelError::shape(format!(
            "Expected index {index:?} to be smaller than self {self_:?} apart from dimension {d} and to be smaller size than src {src:?}"
        )));
    }
    Ok(())
}

/// Output shape of `scatter_add(Tensor self, int dim, Tensor index, Tensor src)`: `self`'s.
pub fn scatter_add_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    src: &[usize],
) -> KResult<Vec<Vec<usize>>> {
    let d = wrap_dim(dim, self_.len())?;
    scatter_shape_check(self_, d, index, src)?;
    Ok(vec![self_.to_vec()])
}

/// `scatter_add(self, dim, index, src)`: a copy of `self` with, for every position `p` of
/// `index`, `src[p]` added at `p` with `p[dim]` replaced by `index[p]`. Only the part of
/// `src` covered by `index` is read. Serial, so repeated indices add in a fixed order.
pub fn scatter_add<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    out: Dst<'_, T>,
) -> KResult<()> {
    scatter_with(self_, dim, index, src, out, |a, v| *a = a.add(v))
}

pub fn scatter_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    src: &[usize],
) -> KResult<Vec<Vec<usize>>> {
    scatter_add_meta(self_, dim, index, src)
}

/// `scatter(self, dim, index, src)`: a copy of `self` with `src[p]` written at `p` with
/// `p[dim]` replaced by `index[p]`. Where indices repeat, the last position in the index's
/// row-major order wins (PyTorch leaves the winner unspecified).
pub fn scatter<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    out: Dst<'_, T>,
) -> KResult<()> {
    scatter_with(self_, dim, index, src, out, |a, v| *a = v)
}

/// The walk `scatter` and `scatter_add` share: `self` copied in compute precision, then
/// `combine(slot, src[p])` for each index position in row-major order.
fn scatter_with<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    mut out: Dst<'_, T>,
    combine: impl Fn(&mut T::Compute, T::Compute),
) -> KResult<()> {
    let mut acc: Vec<T::Compute> = row_major(&self_).iter().map(|x| x.up()).collect();
    scatter_walk(&self_, dim, &index, &src, |o, v| combine(&mut acc[o], v))?;
    write_out(&mut out, &acc)
}

/// Checks `scatter`'s shapes and indices, then calls `visit(slot, src[p])` for every position
/// `p` of the index in row-major order, where `slot` is the row-major offset in `self` of
/// `p` with `p[dim]` replaced by `index[p]`. Only the part of `src` the index covers is read.
fn scatter_walk<T: Element>(
    self_: &Src<'_, T>,
    dim: i64,
    index: &Src<'_, i64>,
    src: &Src<'_, T>,
    mut visit: impl FnMut(usize, T::Compute),
) -> KResult<()> {
    scatter_add_meta(
        &self_.layout.sizes,
        dim,
        &index.layout.sizes,
        &src.layout.sizes,
    )?;
    let d = wrap_dim(dim, self_.layout.ndim())?;
    let idx = row_major(index);
    if idx.is_empty() {
        return Ok(());
    }
    let self_sizes = nonempty(&self_.layout.sizes);
    let size = self_sizes[d];
    let idx = check_indices(&idx, size, oob(d, size))?;
    // Walk the index's positions in the (row-major) accumulator and in `src` together.
    let mut acc_strides = contiguous_strides(&self_sizes);
    let step = acc_strides[d];
    acc_strides[d] = 0;
    let sizes = nonempty(&index.layout.sizes);
    let acc_view = Layout {
        sizes: sizes.clone().into(),
        strides: acc_strides,
        offset: 0,
    };
    let src_view = Layout {
        sizes: sizes.into(),
        strides: nonempty_strides(src.layout),
        offset: src.layout.offset,
    };
    let mut k = 0;
    for_each_run([&acc_view, &src_view], |[ao, so], len, [as_, ss]| {
        for t in 0..len {
            visit(ao + t * as_ + idx[k] * step, src.data[so + t * ss].up());
            k += 1;
        }
    });
    Ok(())
}

/// Rounds the compute-precision accumulator into `out` (row-major, `self`'s shape).
fn write_out<T: Element>(out: &mut Dst<'_, T>, acc: &[T::Compute]) -> KResult<()> {
    let o = contiguous_out(out)?;
    if o.len() != acc.len() {
        return Err(KernelError::shape(format!(
            "internal error: output has {} elements, expected {}",
            o.len(),
            acc.len()
        )));
    }
    o.iter_mut().zip(acc).for_each(|(o, &a)| *o = T::down(a));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// scatter_reduce
// ---------------------------------------------------------------------------------------

/// The reductions of `scatter_reduce` (`"sum"`, `"prod"`, `"mean"`, `"amax"`, `"amin"`) and
/// of `scatter(..., reduce=)` (`"add"`, `"multiply"`, which are sum and prod).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterReduce {
    Sum,
    Prod,
    Mean,
    Amax,
    Amin,
}

impl ScatterReduce {
    /// `scatter_reduce`'s names, with PyTorch's message for any other.
    pub fn parse(reduce: &str) -> KResult<ScatterReduce> {
        Ok(match reduce {
            "sum" => ScatterReduce::Sum,
            "prod" => ScatterReduce::Prod,
            "mean" => ScatterReduce::Mean,
            "amax" => ScatterReduce::Amax,
            "amin" => ScatterReduce::Amin,
            _ => {
                return Err(KernelError::value(format!(
                    "reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
                )))
            }
        })
    }

    /// `scatter(..., reduce=)`'s names, with PyTorch's message for any other.
    pub fn parse_legacy(reduce: &str) -> KResult<ScatterReduce> {
        match reduce {
            "add" => Ok(ScatterReduce::Sum),
            "multiply" => Ok(ScatterReduce::Prod),
            _ => Err(KernelError::value(
                "reduce argument must be either add or multiply.",
            )),
        }
    }

    /// `acc` combined with one more value. `amax`/`amin` propagate NaN from either side, as
    /// PyTorch's kernels do.
    #[inline]
    fn combine<C: Arith>(self, acc: C, v: C) -> C {
        match self {
            ScatterReduce::Sum | ScatterReduce::Mean => acc.add(v),
            ScatterReduce::Prod => acc.mul(v),
            ScatterReduce::Amax => {
                if acc.is_nan() || !(v.is_nan() || v > acc) {
                    acc
                } else {
                    v
                }
            }
            ScatterReduce::Amin => {
                if acc.is_nan() || !(v.is_nan() || v < acc) {
                    acc
                } else {
                    v
                }
            }
        }
    }
}

/// PyTorch's `div(..., rounding_mode="floor")` for a mean of integers: the quotient rounded
/// toward negative infinity, computed in i64 so a count never wraps.
fn floor_div(sum: i64, count: i64) -> i64 {
    let q = sum.wrapping_div(count);
    if sum.wrapping_rem(count) != 0 && sum < 0 {
        q - 1
    } else {
        q
    }
}

/// Output shape of `scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str
/// reduce, *, bool include_self=True)`: `self`'s. Checks as PyTorch's `scatter_meta_impl`:
/// dim, shapes, then the reduction's name.
pub fn scatter_reduce_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    src: &[usize],
    reduce: &str,
    include_self: bool,
) -> KResult<Vec<Vec<usize>>> {
    let _ = include_self; // only changes the values
    let shape = scatter_add_meta(self_, dim, index, src)?;
    ScatterReduce::parse(reduce)?;
    Ok(shape)
}

/// The dtype check of `scatter_reduce`, which the kernel makes and the meta device makes
/// too (`_meta` sees shapes only): a bool `mean` has no floor division, as in PyTorch. An
/// unknown `reduce` is `_meta`'s error, which comes first.
pub fn scatter_reduce_check(
    compute: DType,
    _dim: i64,
    reduce: &str,
    _include_self: bool,
) -> KResult<()> {
    match ScatterReduce::parse(reduce) {
        Ok(op) => mean_of_bools(op, compute),
        Err(_) => Ok(()),
    }
}

/// PyTorch's mean ends in div(..., rounding_mode="floor"), which has no bool kernel.
fn mean_of_bools(op: ScatterReduce, dtype: DType) -> KResult<()> {
    if op == ScatterReduce::Mean && dtype == DType::Bool {
        return Err(KernelError::dtype(
            "\"div_floor_cpu\" not implemented for 'Bool'",
        ));
    }
    Ok(())
}

/// `scatter_reduce(self, dim, index, src, reduce, include_self)`: a copy of `self` in which
/// every position some index points at becomes the reduction of the `src` values sent
/// there, together with `self`'s value when `include_self`. `mean` divides by the number of
/// values reduced (floor division for integers, as PyTorch); positions no index points at
/// keep `self`. Accumulates in compute precision, serially, and rounds once.
pub fn scatter_reduce<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    reduce: &str,
    include_self: bool,
    out: Dst<'_, T>,
) -> KResult<()> {
    let op = ScatterReduce::parse(reduce)?;
    scatter_reduce_with(self_, dim, index, src, op, include_self, out)
}

/// Output shape of `scatter.reduce(Tensor self, int dim, Tensor index, Tensor src, *, str
/// reduce)`: `self`'s.
pub fn scatter_src_reduce_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    src: &[usize],
    reduce: &str,
) -> KResult<Vec<Vec<usize>>> {
    let shape = scatter_add_meta(self_, dim, index, src)?;
    ScatterReduce::parse_legacy(reduce)?;
    Ok(shape)
}

/// `scatter(self, dim, index, src, reduce=)`: `"add"` adds and `"multiply"` multiplies `src`
/// into a copy of `self` at the indexed positions (`scatter_reduce` with `sum` / `prod` and
/// `include_self`).
pub fn scatter_src_reduce<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    reduce: &str,
    out: Dst<'_, T>,
) -> KResult<()> {
    let op = ScatterReduce::parse_legacy(reduce)?;
    scatter_reduce_with(self_, dim, index, src, op, true, out)
}

/// Both scatter reductions: each slot's first value (without `include_self`) replaces
/// `self`'s, later ones combine; `mean` then divides by its count.
fn scatter_reduce_with<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    src: Src<'_, T>,
    op: ScatterReduce,
    include_self: bool,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    mean_of_bools(op, T::DTYPE)?;
    let mut acc: Vec<T::Compute> = row_major(&self_).iter().map(|x| x.up()).collect();
    if include_self && op != ScatterReduce::Mean {
        scatter_walk(&self_, dim, &index, &src, |o, v| {
            acc[o] = op.combine(acc[o], v)
        })?;
        return write_out(&mut out, &acc);
    }
    // How many values each position received: the first replaces `self`'s value when it
    // is not included, and `mean` divides by the count.
    let mut count = vec![0i64; acc.len()];
    scatter_walk(&self_, dim, &index, &src, |o, v| {
        acc[o] = if count[o] == 0 && !include_self {
            v
        } else {
            op.combine(acc[o], v)
        };
        count[o] += 1;
    })?;
    if op == ScatterReduce::Mean {
        let floating = T::DTYPE.is_floating_point();
        for (a, &c) in acc.iter_mut().zip(&count) {
            if c == 0 {
                continue;
            }
            let n = c + i64::from(include_self);
            *a = if floating {
                a.div(<T::Compute as Arith>::from_i64(n))
            } else {
                T::from_i64(floor_div(T::down(*a).to_i64(), n)).up()
            };
        }
    }
    write_out(&mut out, &acc)
}

// ---------------------------------------------------------------------------------------
// index_add
// ---------------------------------------------------------------------------------------

/// Output shape of `index_add(Tensor self, int dim, Tensor index, Tensor source, *,
/// Scalar alpha=1)`: `self`'s. Checks follow PyTorch's `index_func_meta_impl`.
pub fn index_add_meta(
    self_: &[usize],
    dim: i64,
    index: &[usize],
    source: &[usize],
    alpha: f64,
) -> KResult<Vec<Vec<usize>>> {
    let _ = alpha;
    let d = wrap_dim(dim, self_.len())?;
    if index.len() > 1 {
        return Err(KernelError::index(
            "index_add_(): Index is supposed to be a vector",
        ));
    }
    if d != 0 && d >= source.len() {
        return Err(KernelError::index(format!(
            "index_add_(): Indexing dim {d} is out of bounds of the source tensor with dim {}",
            source.len()
        )));
    }
    let numel: usize = index.iter().product();
    let source_size = if source.is_empty() { 1 } else { source[d] };
    if numel != source_size {
        return Err(KernelError::shape(format!(
            "index_add_(): Number of indices ({numel}) should be equal to source.size(dim) ({source_size})"
        )));
    }
    let (mut s, mut src) = (self_.to_vec(), source.to_vec());
    if !s.is_empty() && !src.is_empty() {
        s.remove(d);
        src.remove(d);
    }
    if s != src {
        return Err(KernelError::shape(format!(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {self_:?} source.shape = {source:?}"
        )));
    }
    Ok(vec![self_.to_vec()])
}

/// `index_add(self, dim, index, source, alpha)`: a copy of `self` with `alpha * source[.., r, ..]`
/// added to `self[.., index[r], ..]` for every `r`. `alpha` arrives as f64 and is converted to
/// `T::Compute`. Serial, so repeated indices add in a fixed order.
pub fn index_add<T: Element>(
    self_: Src<'_, T>,
    dim: i64,
    index: Src<'_, i64>,
    source: Src<'_, T>,
    alpha: f64,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    index_add_meta(
        &self_.layout.sizes,
        dim,
        &index.layout.sizes,
        &source.layout.sizes,
        alpha,
    )?;
    let d = wrap_dim(dim, self_.layout.ndim())?;
    let (outer, n, inner) = split_at_dim(&self_.layout.sizes, d);
    let rows = check_indices(&row_major(&index), n, |_| {
        KernelError::index("index out of range in self")
    })?;
    let mut acc: Vec<T::Compute> = row_major(&self_).iter().map(|x| x.up()).collect();
    let src = row_major(&source);
    // As PyTorch's CPU kernel, each source slice is added into `self` in turn, so a half
    // dtype rounds after every addition (`down` is the identity for other dtypes): through
    // `add_(source_slice, alpha)` (computed in float32) for a `self` of 2 or more dims, and
    // as `self[i] += source[j] * alpha` on half scalars (the product rounded too) for 1-D.
    let one_d = self_.layout.ndim() <= 1;
    let round = |c: T::Compute| T::down(c).up();
    let alpha = <T::Compute as Arith>::from_f64(alpha);
    let alpha = if one_d { round(alpha) } else { alpha };
    // The shape check makes `source` [outer, rows.len(), inner] around the same dim.
    let k = rows.len();
    for oi in 0..outer {
        for (r, &i) in rows.iter().enumerate() {
            let to = &mut acc[(oi * n + i) * inner..][..inner];
            let from = &src[(oi * k + r) * inner..][..inner];
            to.iter_mut().zip(from).for_each(|(a, &s)| {
                let add = alpha.mul(s.up());
                *a = round(a.add(if one_d { round(add) } else { add }));
            });
        }
    }
    write_out(&mut out, &acc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half::f16;

    /// Unravels a row-major linear index.
    fn unravel(mut lin: usize, shape: &[usize]) -> Vec<usize> {
        let mut idx = vec![0; shape.len()];
        for d in (0..shape.len()).rev() {
            idx[d] = lin % shape[d];
            lin /= shape[d];
        }
        idx
    }

    fn ravel(idx: &[usize], shape: &[usize]) -> usize {
        idx.iter().zip(shape).fold(0, |acc, (&i, &s)| acc * s + i)
    }

    fn run<T: Element>(
        shape: &[usize],
        k: impl FnOnce(Dst<'_, T>) -> KResult<()>,
    ) -> KResult<Vec<T>> {
        let l = Layout::contiguous(shape);
        let mut buf = vec![T::default(); l.numel()];
        k(Dst::new(&mut buf, &l))?;
        Ok(buf)
    }

    /// A logical [3, 4] f64 input stored transposed, with its row-major values.
    fn transposed_3x4() -> (Vec<f64>, Layout, Vec<f64>) {
        let store: Vec<f64> = (0..12).map(|v| v as f64 * 1.5 - 4.0).collect();
        let layout = Layout::contiguous(&[4, 3]).transpose(0, 1).unwrap();
        let logical = (0..12).map(|p| store[(p % 4) * 3 + p / 4]).collect();
        (store, layout, logical)
    }

    #[test]
    fn index_select_both_dims_of_transposed_input() {
        let (store, layout, logical) = transposed_3x4();
        let index = vec![2i64, 0, 2];
        let il = Layout::contiguous(&[3]);
        for d in 0..2 {
            let shape = index_select_meta(&[3, 4], d as i64, &[3])
                .unwrap()
                .remove(0);
            let got = run::<f64>(&shape, |o| {
                index_select(
                    Src::new(&store, &layout),
                    d as i64,
                    Src::new(&index, &il),
                    o,
                )
            })
            .unwrap();
            let want: Vec<f64> = (0..shape.iter().product())
                .map(|p| {
                    let mut at = unravel(p, &shape);
                    at[d] = index[at[d]] as usize;
                    logical[ravel(&at, &[3, 4])]
                })
                .collect();
            assert_eq!(got, want, "dim {d}");
        }
    }

    #[test]
    fn index_select_broadcast_index_int_and_zero_dim() {
        // Index [1] expanded to [4] through stride 0.
        let one = vec![1i64];
        let il = Layout::contiguous(&[1]).expand(&[4]).unwrap();
        let x = vec![10i32, 20, 30, 40, 50, 60];
        let xl = Layout::contiguous(&[2, 3]);
        let got = run::<i32>(&[2, 4], |o| {
            index_select(Src::new(&x, &xl), -1, Src::new(&one, &il), o)
        })
        .unwrap();
        assert_eq!(got, vec![20, 20, 20, 20, 50, 50, 50, 50]);

        let s = vec![f16::from_f64(2.5)];
        let sl = Layout::contiguous(&[]);
        let zero = vec![0i64];
        let zl = Layout::contiguous(&[]);
        assert_eq!(
            index_select_meta(&[], 0, &[]).unwrap(),
            vec![Vec::<usize>::new()]
        );
        let got = run::<f16>(&[], |o| {
            index_select(Src::new(&s, &sl), 0, Src::new(&zero, &zl), o)
        })
        .unwrap();
        assert_eq!(got[0].to_f64(), 2.5);

        let e: Vec<i64> = vec![];
        let el = Layout::contiguous(&[0]);
        assert_eq!(
            run::<i32>(&[2, 0], |o| index_select(
                Src::new(&x, &xl),
                1,
                Src::new(&e, &el),
                o
            ))
            .unwrap(),
            vec![]
        );
    }

    #[test]
    fn index_select_large_parallel() {
        let (r, c) = (400, 100);
        let x: Vec<f32> = (0..r * c).map(|v| v as f32).collect();
        let xl = Layout::contiguous(&[r, c]);
        let index: Vec<i64> = (0..c as i64).rev().collect();
        let il = Layout::contiguous(&[c]);
        let got = run::<f32>(&[r, c], |o| {
            index_select(Src::new(&x, &xl), 1, Src::new(&index, &il), o)
        })
        .unwrap();
        let want: Vec<f32> = (0..r * c)
            .map(|p| ((p / c) * c + (c - 1 - p % c)) as f32)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn index_select_errors() {
        assert_eq!(
            index_select_meta(&[3], 0, &[1, 1]).unwrap_err().to_string(),
            "index_select(): Index is supposed to be a vector"
        );
        assert_eq!(
            index_select_meta(&[], 0, &[2]).unwrap_err().to_string(),
            "index_select(): Index to scalar can have only 1 value, got 2 value(s)"
        );
        let x = vec![1.0f64; 3];
        let xl = Layout::contiguous(&[3]);
        for bad in [3i64, -1] {
            let i = vec![0i64, bad];
            let il = Layout::contiguous(&[2]);
            let e = run::<f64>(&[2], |o| {
                index_select(Src::new(&x, &xl), 0, Src::new(&i, &il), o)
            })
            .unwrap_err()
            .to_string();
            assert_eq!(e, "index out of range in self");
        }
    }

    /// Naive gather on logical values: `out[p] = self[p with p[d] = index[p]]`.
    fn naive_gather(
        self_shape: &[usize],
        values: &[f64],
        d: usize,
        index_shape: &[usize],
        index: &[i64],
    ) -> Vec<f64> {
        (0..index.len())
            .map(|p| {
                let mut at = unravel(p, index_shape);
                at[d] = index[p] as usize;
                values[ravel(&at, self_shape)]
            })
            .collect()
    }

    #[test]
    fn gather_from_transposed_input_with_smaller_index() {
        let (store, layout, logical) = transposed_3x4();
        let index = vec![3i64, 0, 1, 1, 2, 0];
        let il = Layout::contiguous(&[2, 3]);
        for d in 0..2 {
            let index: Vec<i64> = index.iter().map(|&i| i % [3, 4][d]).collect();
            let got = run::<f64>(&[2, 3], |o| {
                gather(
                    Src::new(&store, &layout),
                    d as i64,
                    Src::new(&index, &il),
                    false,
                    o,
                )
            });
            assert_eq!(
                got.unwrap(),
                naive_gather(&[3, 4], &logical, d, &[2, 3], &index),
                "dim {d}"
            );
        }
        // A transposed index.
        let it = Layout::contiguous(&[3, 2]).transpose(0, 1).unwrap();
        let logical_index: Vec<i64> = (0..6).map(|p| index[(p % 3) * 2 + p / 3]).collect();
        let got = run::<f64>(&[2, 3], |o| {
            gather(
                Src::new(&store, &layout),
                1,
                Src::new(&index, &it),
                false,
                o,
            )
        })
        .unwrap();
        assert_eq!(
            got,
            naive_gather(&[3, 4], &logical, 1, &[2, 3], &logical_index)
        );
    }

    #[test]
    fn gather_f16_zero_dim_empty_and_errors() {
        let x: Vec<f16> = [1.0, 2.0, 3.0].iter().map(|&v| f16::from_f64(v)).collect();
        let xl = Layout::contiguous(&[3]);
        let i = vec![2i64, 2, 0];
        let il = Layout::contiguous(&[3]);
        let got = run::<f16>(&[3], |o| {
            gather(Src::new(&x, &xl), 0, Src::new(&i, &il), false, o)
        })
        .unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_f64()).collect::<Vec<_>>(),
            vec![3.0, 3.0, 1.0]
        );

        let s = vec![7u8];
        let sl = Layout::contiguous(&[]);
        let z = vec![0i64];
        assert_eq!(
            run::<u8>(&[], |o| gather(
                Src::new(&s, &sl),
                0,
                Src::new(&z, &sl),
                false,
                o
            ))
            .unwrap(),
            vec![7]
        );
        let e: Vec<i64> = vec![];
        let el = Layout::contiguous(&[0, 5]);
        assert_eq!(
            gather_meta(&[3], 0, &[0, 5], false).unwrap(),
            vec![vec![0, 5]]
        );
        assert_eq!(
            run::<f16>(&[0, 5], |o| gather(
                Src::new(&x, &xl),
                0,
                Src::new(&e, &el),
                false,
                o
            ))
            .unwrap(),
            vec![]
        );

        let bad = vec![3i64];
        let bl = Layout::contiguous(&[1]);
        let err = run::<f16>(&[1], |o| {
            gather(Src::new(&x, &xl), 0, Src::new(&bad, &bl), false, o)
        })
        .unwrap_err();
        assert_eq!(err.kind(), crate::ErrorKind::Index);
        assert_eq!(
            err.to_string(),
            "index 3 is out of bounds for dimension 0 with size 3"
        );
        assert_eq!(
            gather_meta(&[3, 4], 0, &[2], false)
                .unwrap_err()
                .to_string(),
            "Index tensor must have the same number of dimensions as input tensor"
        );
        assert_eq!(
            gather_meta(&[3, 4], 0, &[2, 5], false).unwrap_err().to_string(),
            "Size does not match at dimension 1 expected index [2, 5] to be smaller than self [3, 4] apart from dimension 0"
        );
    }

    #[test]
    fn scatter_add_with_repeats_transposed_self_and_broadcast_src() {
        let (store, layout, logical) = transposed_3x4();
        let index = vec![0i64, 2, 0, 1, 1, 1];
        let il = Layout::contiguous(&[2, 3]);
        // src is a [1, 3] row expanded to [2, 3] (stride 0 along dim 0).
        let row = vec![0.5f64, -1.0, 2.0];
        let sl = Layout::contiguous(&[1, 3]).expand(&[2, 3]).unwrap();
        let src_logical: Vec<f64> = (0..6).map(|p| row[p % 3]).collect();
        for d in 0..2 {
            let got = run::<f64>(&[3, 4], |o| {
                scatter_add(
                    Src::new(&store, &layout),
                    d as i64,
                    Src::new(&index, &il),
                    Src::new(&row, &sl),
                    o,
                )
            })
            .unwrap();
            let mut want = logical.clone();
            for p in 0..6 {
                let mut at = unravel(p, &[2, 3]);
                at[d] = index[p] as usize;
                want[ravel(&at, &[3, 4])] += src_logical[p];
            }
            assert_eq!(got, want, "dim {d}");
        }
    }

    #[test]
    fn scatter_add_int_f16_empty_and_errors() {
        let x = vec![1i64, 2, 3];
        let xl = Layout::contiguous(&[3]);
        let i = vec![2i64, 2];
        let il = Layout::contiguous(&[2]);
        let s = vec![10i64, 20, 30];
        let got = run::<i64>(&[3], |o| {
            scatter_add(
                Src::new(&x, &xl),
                0,
                Src::new(&i, &il),
                Src::new(&s, &xl),
                o,
            )
        })
        .unwrap();
        assert_eq!(got, vec![1, 2, 33]);

        // f16 accumulates in f32: 2048 + 1 + 1 is exact in f32, and rounds once at the end.
        let h = vec![f16::from_f64(2048.0)];
        let hl = Layout::contiguous(&[1]);
        let ones = vec![f16::from_f64(1.0); 2];
        let zeros = vec![0i64; 2];
        let got = run::<f16>(&[1], |o| {
            scatter_add(
                Src::new(&h, &hl),
                0,
                Src::new(&zeros, &il),
                Src::new(&ones, &il),
                o,
            )
        });
        assert_eq!(got.unwrap()[0].to_f64(), 2050.0);

        let e: Vec<i64> = vec![];
        let el = Layout::contiguous(&[0]);
        let got = run::<i64>(&[3], |o| {
            scatter_add(
                Src::new(&x, &xl),
                0,
                Src::new(&e, &el),
                Src::new(&s, &xl),
                o,
            )
        })
        .unwrap();
        assert_eq!(got, x);

        let bad = vec![-1i64];
        let bl = Layout::contiguous(&[1]);
        let err = run::<i64>(&[3], |o| {
            scatter_add(
                Src::new(&x, &xl),
                0,
                Src::new(&bad, &bl),
                Src::new(&s, &xl),
                o,
            )
        });
        assert_eq!(
            err.unwrap_err().to_string(),
            "index -1 is out of bounds for dimension 0 with size 3"
        );
        assert_eq!(
            scatter_add_meta(&[3, 4], 1, &[4, 2], &[4, 2]).unwrap_err().to_string(),
            "Expected index [4, 2] to be smaller than self [3, 4] apart from dimension 1 and to be smaller size than src [4, 2]"
        );
        // Along `dim` itself the index may be longer than self (only src bounds it).
        assert_eq!(
            scatter_add_meta(&[3, 4], 1, &[2, 5], &[2, 5]).unwrap(),
            vec![vec![3, 4]]
        );
        assert_eq!(
            scatter_add_meta(&[3, 4], 1, &[2, 5], &[2, 4]).unwrap_err().to_string(),
            "Expected index [2, 5] to be smaller than self [3, 4] apart from dimension 1 and to be smaller size than src [2, 4]"
        );
        assert_eq!(
            scatter_add_meta(&[3, 4], 1, &[2, 2], &[1, 4]).unwrap_err().to_string(),
            "Expected index [2, 2] to be smaller than self [3, 4] apart from dimension 1 and to be smaller size than src [1, 4]"
        );
        assert_eq!(
            scatter_add_meta(&[3, 4], 0, &[2], &[2])
                .unwrap_err()
                .to_string(),
            "Index tensor must have the same number of dimensions as self tensor"
        );
        assert_eq!(
            scatter_add_meta(&[3, 4], 0, &[2, 2], &[4])
                .unwrap_err()
                .to_string(),
            "Index tensor must have the same number of dimensions as src tensor"
        );
    }

    #[test]
    fn index_add_with_alpha_on_transposed_self() {
        let (store, layout, logical) = transposed_3x4();
        let index = vec![1i64, 1, 0];
        let il = Layout::contiguous(&[3]);
        // source [3, 3] for dim 1 (self [3, 4]), stored contiguous.
        let source: Vec<f64> = (0..9).map(|v| v as f64).collect();
        let sl = Layout::contiguous(&[3, 3]);
        let got = run::<f64>(&[3, 4], |o| {
            index_add(
                Src::new(&store, &layout),
                1,
                Src::new(&index, &il),
                Src::new(&source, &sl),
                2.0,
                o,
            )
        })
        .unwrap();
        let mut want = logical.clone();
        for i in 0..3 {
            for r in 0..3 {
                want[i * 4 + index[r] as usize] += 2.0 * source[i * 3 + r];
            }
        }
        assert_eq!(got, want);
    }

    #[test]
    fn index_add_int_f16_zero_dim_and_errors() {
        let x = vec![1i32, 2, 3, 4];
        let xl = Layout::contiguous(&[2, 2]);
        let i = vec![1i64];
        let il = Layout::contiguous(&[1]);
        let s = vec![10i32, 20];
        let sl = Layout::contiguous(&[1, 2]);
        let got = run::<i32>(&[2, 2], |o| {
            index_add(
                Src::new(&x, &xl),
                0,
                Src::new(&i, &il),
                Src::new(&s, &sl),
                -1.0,
                o,
            )
        });
        assert_eq!(got.unwrap(), vec![1, 2, -7, -16]);

        let h = vec![f16::from_f64(1.0)];
        let zl = Layout::contiguous(&[]);
        let z = vec![0i64];
        let got = run::<f16>(&[], |o| {
            index_add(
                Src::new(&h, &zl),
                0,
                Src::new(&z, &zl),
                Src::new(&h, &zl),
                0.5,
                o,
            )
        });
        assert_eq!(got.unwrap()[0].to_f64(), 1.5);

        let bad = vec![2i64];
        let err = run::<i32>(&[2, 2], |o| {
            index_add(
                Src::new(&x, &xl),
                0,
                Src::new(&bad, &il),
                Src::new(&s, &sl),
                1.0,
                o,
            )
        });
        assert_eq!(err.unwrap_err().to_string(), "index out of range in self");
        assert_eq!(
            index_add_meta(&[2, 2], 0, &[1, 1], &[1, 2], 1.0)
                .unwrap_err()
                .to_string(),
            "index_add_(): Index is supposed to be a vector"
        );
        assert_eq!(
            index_add_meta(&[2, 2], 1, &[1], &[2], 1.0)
                .unwrap_err()
                .to_string(),
            "index_add_(): Indexing dim 1 is out of bounds of the source tensor with dim 1"
        );
        assert_eq!(
            index_add_meta(&[2, 2], 0, &[2], &[1, 2], 1.0)
                .unwrap_err()
                .to_string(),
            "index_add_(): Number of indices (2) should be equal to source.size(dim) (1)"
        );
        assert_eq!(
            index_add_meta(&[2, 2], 0, &[1], &[1, 3], 1.0).unwrap_err().to_string(),
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [2, 2] source.shape = [1, 3]"
        );
    }

    #[test]
    fn scatter_reduce_mean_of_integers_rounds_down() {
        // Position 0: self 1 with -2 and -4 (sum -5, count 3), position 1 untouched,
        // position 2: -7 alone without self.
        let x = vec![1i32, 5, 9];
        let xl = Layout::contiguous(&[3]);
        let idx = vec![0i64, 0, 2];
        let src = vec![-2i32, -4, -7];
        let il = Layout::contiguous(&[3]);
        let mean = |include_self| {
            run::<i32>(&[3], |o| {
                scatter_reduce(
                    Src::new(&x, &xl),
                    0,
                    Src::new(&idx, &il),
                    Src::new(&src, &il),
                    "mean",
                    include_self,
                    o,
                )
            })
            .unwrap()
        };
        assert_eq!(mean(true), vec![-2, 5, 1]);
        assert_eq!(mean(false), vec![-3, 5, -7]);
        assert_eq!(floor_div(-5, 3), -2);
        assert_eq!(floor_div(5, 3), 1);
        assert_eq!(floor_div(-6, 3), -2);
    }

    #[test]
    fn scatter_reduce_amax_without_self_and_with_nan() {
        let x = vec![10f32, 20., 30.];
        let xl = Layout::contiguous(&[3]);
        let idx = vec![0i64, 0, 1];
        let src = vec![-1f32, -3., f32::NAN];
        let il = Layout::contiguous(&[3]);
        let got = run::<f32>(&[3], |o| {
            scatter_reduce(
                Src::new(&x, &xl),
                0,
                Src::new(&idx, &il),
                Src::new(&src, &il),
                "amax",
                false,
                o,
            )
        })
        .unwrap();
        assert_eq!(got[0], -1.0);
        assert!(got[1].is_nan());
        assert_eq!(got[2], 30.0);
        assert_eq!(
            scatter_reduce_meta(&[3], 0, &[3], &[3], "max", true)
                .unwrap_err()
                .to_string(),
            "reduce argument must be either sum, prod, mean, amax or amin, got max"
        );
        assert_eq!(
            scatter_src_reduce_meta(&[3], 0, &[3], &[3], "sum")
                .unwrap_err()
                .to_string(),
            "reduce argument must be either add or multiply."
        );
        let b = vec![true, false];
        let bl = Layout::contiguous(&[2]);
        let bi = vec![0i64];
        let bil = Layout::contiguous(&[1]);
        let e = run::<bool>(&[2], |o| {
            scatter_reduce(
                Src::new(&b, &bl),
                0,
                Src::new(&bi, &bil),
                Src::new(&b, &bl),
                "mean",
                true,
                o,
            )
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("not implemented for 'Bool'"), "{e}");
    }
}
