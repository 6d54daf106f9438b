//! softmax and log_softmax and their backward kernels on CUDA: every tensor viewed with the
//! softmax dim last, one block per row (kernels/cuda/softmax.cu.j2).

use super::{gpu_of, operand_with, rows, KilnTensor};
use crate::backends::cuda::launchers::softmax as kernels;
use crate::{DType, Error, Layout, Result, Tensor};

/// `l` with dim `d` moved last.
fn dim_last(l: &Layout, d: usize) -> Layout {
    let order: Vec<usize> = (0..l.ndim()).filter(|&i| i != d).chain([d]).collect();
    Layout {
        sizes: order.iter().map(|&i| l.sizes[i]).collect(),
        strides: order.iter().map(|&i| l.strides[i]).collect(),
        offset: l.offset,
    }
}

/// `t` as an operand with dim `d` last (a 0-d tensor as it is).
fn rows_operand(op: &str, t: &Tensor, d: usize) -> Result<KilnTensor> {
    if t.dim() == 0 {
        operand_with(op, t, t.layout())
    } else {
        operand_with(op, t, &dim_last(t.layout(), d))
    }
}

/// The wrapped dim and the `(rows, R)` split of `t` around it.
fn split(op: &str, t: &Tensor, dim: i64) -> Result<(usize, usize, usize)> {
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op(op, m))?;
    let r = if t.dim() == 0 { 1 } else { t.shape()[d] };
    Ok((d, t.numel() / r, r))
}

fn run(op: &str, t: &Tensor, dim: i64, log: bool, out: &Tensor) -> Result<()> {
    if t.numel() == 0 {
        return Ok(());
    }
    let (d, outer, r) = split(op, t, dim)?;
    let gpu = gpu_of(op, out)?;
    let (input, output) = (rows_operand(op, t, d)?, rows_operand(op, out, d)?);
    let (outer_i, r_i) = (outer as i64, r as i64);
    // SAFETY: `softmax_<T>(KilnTensor out, KilnTensor in, long long rows, long long R, bool
    // log_out)`; both views hold rows*R elements of T, `out` is fresh storage.
    unsafe {
        kernels::softmax(
            &gpu,
            op,
            t.dtype(),
            rows(outer),
            &output,
            &input,
            outer_i,
            r_i,
            log,
        )
    }?;
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_backward(
    op: &str,
    name: &str,
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: DType,
    log: bool,
    out: &Tensor,
) -> Result<()> {
    kiln_kernels::cpu::softmax::check_backward_input_dtype(grad_output.dtype(), input_dtype, name)
        .map_err(|m| Error::op(op, m))?;
    if out.numel() == 0 {
        return Ok(());
    }
    let (d, outer, r) = split(op, out, dim)?;
    let gpu = gpu_of(op, out)?;
    let (o, g, y) = (
        rows_operand(op, out, d)?,
        rows_operand(op, grad_output, d)?,
        rows_operand(op, output, d)?,
    );
    let (outer_i, r_i) = (outer as i64, r as i64);
    // SAFETY: `softmax_backward_<T>(KilnTensor out, KilnTensor grad, KilnTensor output, long
    // long rows, long long R, bool log_out)`; the three views hold rows*R elements of T (the
    // meta function checked grad_output and output share the shape), `out` is fresh storage.
    unsafe {
        kernels::softmax_backward(
            &gpu,
            op,
            out.dtype(),
            rows(outer),
            &o,
            &g,
            &y,
            outer_i,
            r_i,
            log,
        )
    }?;
    Ok(())
}

pub fn softmax(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    run(op, self_, dim, false, out)
}

pub fn log_softmax(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    run(op, self_, dim, true, out)
}

pub fn softmax_backward_data(
    op: &str,
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: DType,
    out: &Tensor,
) -> Result<()> {
    let name = "softmax backward";
    run_backward(op, name, grad_output, output, dim, input_dtype, false, out)
}

pub fn log_softmax_backward_data(
    op: &str,
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: DType,
    out: &Tensor,
) -> Result<()> {
    let name = "log_softmax backward";
    run_backward(op, name, grad_output, output, dim, input_dtype, true, out)
}
