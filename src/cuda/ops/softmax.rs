//! softmax and log_softmax on CUDA: input and output viewed with the softmax dim last,
//! one block per row (kernels/cuda/softmax.cu.j2).

use super::{gpu_of, operand_with, rows};
use crate::cuda::runtime::driver_error;
use crate::{Error, Layout, Result, Tensor};
use cudarc::driver::PushKernelArg;

/// `l` with dim `d` moved last.
fn dim_last(l: &Layout, d: usize) -> Layout {
    let order: Vec<usize> = (0..l.ndim()).filter(|&i| i != d).chain([d]).collect();
    Layout {
        sizes: order.iter().map(|&i| l.sizes[i]).collect(),
        strides: order.iter().map(|&i| l.strides[i]).collect(),
        offset: l.offset,
    }
}

fn run(op: &str, t: &Tensor, dim: i64, log: bool, out: &Tensor) -> Result<()> {
    let n = t.numel();
    if n == 0 {
        return Ok(());
    }
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op(op, m))?;
    let r = if t.dim() == 0 { 1 } else { t.shape()[d] };
    let outer = n / r;
    let gpu = gpu_of(op, out)?;
    let (input, output) = if t.dim() == 0 {
        (
            operand_with(op, t, t.layout())?,
            operand_with(op, out, out.layout())?,
        )
    } else {
        (
            operand_with(op, t, &dim_last(t.layout(), d))?,
            operand_with(op, out, &dim_last(out.layout(), d))?,
        )
    };
    let f = gpu.function("softmax", &format!("softmax_{}", t.dtype().short_name()))?;
    let (outer_i, r_i) = (outer as i64, r as i64);
    let mut b = gpu.stream.launch_builder(&f);
    b.arg(&output).arg(&input).arg(&outer_i).arg(&r_i).arg(&log);
    // SAFETY: `softmax_<T>(KilnTensor out, KilnTensor in, long long rows, long long R, bool
    // log_out)`; both views hold rows*R elements of T, `out` is fresh storage.
    unsafe { b.launch(rows(outer)) }.map_err(|e| driver_error(op, e))?;
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
