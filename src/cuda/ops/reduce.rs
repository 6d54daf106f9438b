//! Reductions on CUDA: the input viewed as [kept dims..., reduced dims...] without a copy,
//! one block per output element (kernels/cuda/reduce.cu.j2).

use super::{gpu_of, operand_with, rows};
use crate::cuda::runtime::driver_error;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::PushKernelArg;

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

/// Launches `<kind>_<dtype>(out, in, outer, R)`.
fn value_reduce(op: &str, kind: &str, t: &Tensor, reduced: &[usize], out: &Tensor) -> Result<()> {
    let (layout, outer, r) = split(t, reduced);
    if outer == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let input = operand_with(op, t, &layout)?;
    let o = operand_with(op, out, &Layout::contiguous(&[outer]))?;
    let f = gpu.function("reduce", &format!("{kind}_{}", t.dtype().short_name()))?;
    let (outer_i, r_i) = (outer as i64, r as i64);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&o).arg(&input).arg(&outer_i).arg(&r_i);
    // SAFETY: `<kind>_<T>(KilnTensor out, KilnTensor in, long long outer, long long R)`; `in`
    // is a permutation of `t`'s valid layout with outer*R elements, `out` is a fresh
    // contiguous tensor of `outer` elements of T.
    unsafe { b.launch(rows(outer)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

/// Launches `arg<kind>_<dtype>(values, with_values, indices, in, outer, R)`.
fn arg_reduce(
    op: &str,
    kind: &str,
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
    let f = gpu.function("reduce", &format!("arg{kind}_{}", t.dtype().short_name()))?;
    let (outer_i, r_i) = (outer as i64, r as i64);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&vals)
        .arg(&with_values)
        .arg(&idx)
        .arg(&input)
        .arg(&outer_i)
        .arg(&r_i);
    // SAFETY: matches `arg<kind>_<T>`; `values` is only written when `with_values` is true,
    // in which case it is a fresh contiguous tensor of `outer` elements of T; `indices` is a
    // fresh contiguous int64 tensor of `outer` elements.
    unsafe { b.launch(rows(outer)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

pub fn sum_all(op: &str, self_: &Tensor, _dtype: Option<DType>, out: &Tensor) -> Result<()> {
    value_reduce(op, "sum", self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
}

pub fn sum_dim(
    op: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    _keepdim: bool,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    value_reduce(op, "sum", self_, &dims(op, self_, dim)?, out)
}

pub fn max_all(op: &str, self_: &Tensor, out: &Tensor) -> Result<()> {
    value_reduce(op, "max", self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
}

pub fn min_all(op: &str, self_: &Tensor, out: &Tensor) -> Result<()> {
    value_reduce(op, "min", self_, &(0..self_.dim()).collect::<Vec<_>>(), out)
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
    arg_reduce(op, "max", self_, &d, Some(values), indices)
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
    arg_reduce(op, "min", self_, &d, Some(values), indices)
}

pub fn argmax(
    op: &str,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, dim.as_ref().map(std::slice::from_ref))?;
    arg_reduce(op, "max", self_, &d, None, out)
}

pub fn argmin(
    op: &str,
    self_: &Tensor,
    dim: Option<i64>,
    _keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    let d = dims(op, self_, dim.as_ref().map(std::slice::from_ref))?;
    arg_reduce(op, "min", self_, &d, None, out)
}
