//! Reductions on CUDA: the input viewed as [kept dims..., reduced dims...] without a copy,
//! one block per output element, or, for few outputs of many elements each, one block per
//! piece of an output and a second pass over the pieces' partials (kernels/cuda/reduce.cu.j2).

use super::{alloc, gpu_of, operand_with, rows, KilnTensor};
use crate::backends::cuda::launchers::reduce as kernels;
use crate::{DType, Error, Layout, Result, Tensor};

/// `<kind>_<T>(out, part, in, outer, R, pieces, len)`.
type Pass = kernels::Sum;
/// `<kind>_fin_<T>(out, part, outer, pieces)`.
type Finish = kernels::SumFin;
/// `arg<kind>_<T>(values, with_values, indices, part_v, part_i, in, outer, R, pieces, len)`.
type ArgPass = kernels::Argmax;
/// `arg<kind>_fin_<T>(values, with_values, indices, part_v, part_i, outer, pieces)`.
type ArgFinish = kernels::ArgmaxFin;

/// A value reduction: its two kernels, and whether it accumulates as a sum does.
struct Value(Pass, Finish, bool);
const SUM: Value = Value(kernels::sum, kernels::sum_fin, true);
const MAX: Value = Value(kernels::max, kernels::max_fin, false);
const MIN: Value = Value(kernels::min, kernels::min_fin, false);
/// An index reduction's two kernels.
struct Arg(ArgPass, ArgFinish);
const ARGMAX: Arg = Arg(kernels::argmax, kernels::argmax_fin);
const ARGMIN: Arg = Arg(kernels::argmin, kernels::argmin_fin);

/// Blocks a split reduction aims at: several per SM of a 132-SM H100, enough to hide
/// memory latency.
const TARGET_BLOCKS: usize = 1024;
/// The shortest piece worth a block of its own: 32 elements per thread of 256.
const MIN_PIECE: usize = 8192;

/// `(pieces, len)`: each output's `r` elements split into `pieces` pieces of `len` (the last
/// shorter, none empty); `(1, r)` when `outer` outputs already fill the GPU or `r` is short.
fn pieces(outer: usize, r: usize) -> (usize, usize) {
    let want = (TARGET_BLOCKS / outer.max(1)).min(r / MIN_PIECE);
    if want < 2 {
        return (1, r);
    }
    let len = r.div_ceil(want);
    (r.div_ceil(len), len)
}

/// The dtype sums accumulate in (`acc_type` of the CUDA code generator).
fn sum_acc(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 | DType::F32 => DType::F32,
        DType::F64 => DType::F64,
        _ => DType::I64,
    }
}

/// The dtype kernels compute in (`kiln_compute` of prelude.cuh).
fn compute(d: DType) -> DType {
    match d {
        DType::F16 | DType::BF16 => DType::F32,
        other => other,
    }
}

/// A fresh contiguous [outer * pieces] partials buffer of `dtype` and its operand.
fn partials(op: &str, like: &Tensor, n: usize, dtype: DType) -> Result<(Tensor, KilnTensor)> {
    let t = alloc(op, &[n], dtype, like.device().index())?;
    let k = operand_with(op, &t, &Layout::contiguous(&[n]))?;
    Ok((t, k))
}

/// `t`'s layout permuted so the `reduced` dims come last, with (outer, R) element counts.
fn split(t: &Tensor, reduced: &[usize]) -> (Layout, usize, usize) {
    let l = t.layout();
    let kept: Vec<usize> = (0..l.ndim()).filter(|d| !reduced.contains(d)).collect();
    let order: Vec<usize> = kept.iter().chain(reduced).copied().collect();
    let layout = Layout {
        sizes: order.iter().map(|&d| l.sizes[d]).collect(),
        strides: order.iter().map(|&d| l.strides[d]).collect(),
        offset: l.offset,
    };
    let outer = kept.iter().map(|&d| l.sizes[d]).product();
    let r = reduced.iter().map(|&d| l.sizes[d]).product();
    (layout, outer, r)
}

/// The reduced dims: `dim` wrapped, or every dim when `dim` is `None` or empty.
fn dims(op: &str, t: &Tensor, dim: Option<&[i64]>) -> Result<Vec<usize>> {
    match dim {
        // A 0-d tensor accepts dim 0 / -1 but has no dim to reduce: its one element is the
        // whole reduction.
        Some(_) if t.dim() == 0 => Ok(vec![]),
        Some(ds) if !ds.is_empty() => {
            let mut v = ds
                .iter()
                .map(|&d| kiln_kernels::layout::wrap_dim(d, t.dim()).map_err(|m| Error::op(op, m)))
                .collect::<Result<Vec<_>>>()?;
            v.sort_unstable();
            v.dedup();
            Ok(v)
        }
        _ => Ok((0..t.dim()).collect()),
    }
}

/// Launches `<kind>_<dtype>(out, part, in, outer, R, pieces, len)` and, when split,
/// `<kind>_fin_<dtype>(out, part, outer, pieces)`.
fn value_reduce(op: &str, kind: Value, t: &Tensor, reduced: &[usize], out: &Tensor) -> Result<()> {
    let (layout, outer, r) = split(t, reduced);
    if outer == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let input = operand_with(op, t, &layout)?;
    let o = operand_with(op, out, &Layout::contiguous(&[outer]))?;
    let dt = t.dtype();
    let (p, len) = pieces(outer, r);
    let acc = if kind.2 {
        sum_acc(t.dtype())
    } else {
        compute(t.dtype())
    };
    // Unsplit, the kernel never writes `part`; `out` stands in.
    let (part, kp) = if p > 1 {
        let (pt, kp) = partials(op, out, outer * p, acc)?;
        (Some(pt), kp)
    } else {
        (None, o)
    };
    let (outer_i, r_i, p_i, len_i) = (outer as i64, r as i64, p as i64, len as i64);
    // SAFETY: `<kind>_<T>(KilnTensor out, KilnTensor part, KilnTensor in, long long outer,
    // long long R, long long pieces, long long len)`; `in` is a permutation of `t`'s valid
    // layout with outer*R elements, `out` a fresh contiguous tensor of `outer` elements of T;
    // when pieces > 1, `part` is a fresh contiguous buffer of outer*pieces elements of the
    // accumulator type and pieces * len >= R > (pieces - 1) * len.
    unsafe {
        (kind.0)(
            &gpu,
            op,
            dt,
            rows(outer * p),
            &o,
            &kp,
            &input,
            outer_i,
            r_i,
            p_i,
            len_i,
        )
    }?;
    if part.is_some() {
        // SAFETY: `<kind>_fin_<T>(KilnTensor out, KilnTensor part, long long outer, long long
        // pieces)`; `part` holds the outer*pieces partials the launch above writes first (same
        // stream), `out` as above.
        unsafe { (kind.1)(&gpu, op, dt, rows(outer), &o, &kp, outer_i, p_i) }?;
    }
    Ok(())
}

/// Launches `arg<kind>_<dtype>(values, with_values, indices, part_v, part_i, in, outer, R,
/// pieces, len)` and, when split, `arg<kind>_fin_<dtype>(values, with_values, indices,
/// part_v, part_i, outer, pieces)`.
fn arg_reduce(
    op: &str,
    kind: Arg,
    t: &Tensor,
    reduced: &[usize],
    values: Option<&Tensor>,
    indices: &Tensor,
) -> Result<()> {
    let (layout, outer, r) = split(t, reduced);
    if outer == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, indices)?;
    let input = operand_with(op, t, &layout)?;
    let flat = Layout::contiguous(&[outer]);
    let idx = operand_with(op, indices, &flat)?;
    let vals = operand_with(op, values.unwrap_or(indices), &flat)?;
    let with_values = values.is_some();
    let dt = t.dtype();
    let (p, len) = pieces(outer, r);
    // Unsplit, the kernel never writes the partials; `indices` stands in.
    let (part, kv, ki) = if p > 1 {
        let (pv, kv) = partials(op, indices, outer * p, compute(t.dtype()))?;
        let (pi, ki) = partials(op, indices, outer * p, DType::I64)?;
        (Some((pv, pi)), kv, ki)
    } else {
        (None, idx, idx)
    };
    let (outer_i, r_i, p_i, len_i) = (outer as i64, r as i64, p as i64, len as i64);
    // SAFETY: matches `arg<kind>_<T>`; `values` is only written when `with_values` is true,
    // in which case it is a fresh contiguous tensor of `outer` elements of T; `indices` is a
    // fresh contiguous int64 tensor of `outer` elements; when pieces > 1 the kernel writes
    // only `part_v` / `part_i`, fresh contiguous buffers of outer*pieces compute-type values
    // and int64 indices, and pieces * len >= R > (pieces - 1) * len.
    unsafe {
        (kind.0)(
            &gpu,
            op,
            dt,
            rows(outer * p),
            &vals,
            with_values,
            &idx,
            &kv,
            &ki,
            &input,
            outer_i,
            r_i,
            p_i,
            len_i,
        )
    }?;
    if part.is_some() {
        // SAFETY: matches `arg<kind>_fin_<T>`; `part_v` / `part_i` hold the outer*pieces
        // partials the launch above writes first (same stream); outputs as above.
        unsafe {
            (kind.1)(
                &gpu,
                op,
                dt,
                rows(outer),
                &vals,
                with_values,
                &idx,
                &kv,
                &ki,
                outer_i,
                p_i,
            )
        }?;
    }
    Ok(())
}

pub fn sum_all(op: &str, self_: &Tensor, _dtype: Option<DType>, out: &Tensor) -> Result<()> {
    value_reduce(op, SUM, self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
}

pub fn sum_dim(
    op: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    value_reduce(op, SUM, self_, &dims(op, self_, dim)?, out)
}

pub fn max_all(op: &str, self_: &Tensor, out: &Tensor) -> Result<()> {
    value_reduce(op, MAX, self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
}

pub fn min_all(op: &str, self_: &Tensor, out: &Tensor) -> Result<()> {
    value_reduce(op, MIN, self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
}

pub fn max_dim(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _keepdim: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, Some(&[dim]))?;
    arg_reduce(op, ARGMAX, self_, &d, Some(values), indices)
}

pub fn min_dim(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _keepdim: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, Some(&[dim]))?;
    arg_reduce(op, ARGMIN, self_, &d, Some(values), indices)
}

pub fn argmax(
    op: &str,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, dim.as_ref().map(std::slice::from_ref))?;
    arg_reduce(op, ARGMAX, self_, &d, None, out)
}

pub fn argmin(
    op: &str,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, dim.as_ref().map(std::slice::from_ref))?;
    arg_reduce(op, ARGMIN, self_, &d, None, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_split_only_few_long_reductions_and_leave_none_empty() {
        assert_eq!(pieces(1, 100), (1, 100));
        assert_eq!(pieces(1, 0), (1, 0));
        assert_eq!(pieces(0, 1 << 24), (1024, 1 << 14));
        assert_eq!(pieces(512, 1 << 24), (2, 1 << 23));
        assert_eq!(pieces(513, 1 << 24), (1, 1 << 24));
        assert_eq!(pieces(3, 1 << 20), (128, 1 << 13));
        for (outer, r) in [(1, 16_385), (1, (1 << 24) + 1), (3, 1_000_003), (7, 99_999)] {
            let (p, len) = pieces(outer, r);
            assert!(p >= 2 && p * outer <= TARGET_BLOCKS, "{outer} x {r}: {p}");
            assert!(
                p * len >= r && (p - 1) * len < r,
                "{outer} x {r}: {p} x {len}"
            );
        }
    }
}
