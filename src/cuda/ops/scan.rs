//! cumsum, cumprod, logcumsumexp, cummax and cummin on CUDA (kernels/cuda/scan.cu.j2): each
//! tensor is viewed with the scanned dim last, one thread per line. (sort is in sort.rs.)

use super::{gpu_of, grid, operand_with};
use crate::cuda::runtime::driver_error;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::PushKernelArg;

/// `t`'s layout with `dim` moved last (0-d as `[1]`), and the number of lines.
pub(super) fn lines(op: &str, t: &Tensor, dim: i64) -> Result<(Layout, usize, usize)> {
    let l = t.layout();
    if l.ndim() == 0 {
        let one = Layout {
            sizes: smallvec::smallvec![1],
            strides: smallvec::smallvec![1],
            offset: l.offset,
        };
        return Ok((one, 1, 1));
    }
    let d = kiln_kernels::layout::wrap_dim(dim, l.ndim()).map_err(|m| Error::op(op, m))?;
    let order: Vec<usize> = (0..l.ndim()).filter(|&k| k != d).chain([d]).collect();
    let layout = Layout {
        sizes: order.iter().map(|&k| l.sizes[k]).collect(),
        strides: order.iter().map(|&k| l.strides[k]).collect(),
        offset: l.offset,
    };
    let n = l.sizes[d];
    let count = l.numel().checked_div(n).unwrap_or(0);
    Ok((layout, count, n))
}

/// Launches `<kind>_<dtype>(outs..., in, lines, n[, descending])`.
fn launch(
    op: &str,
    kind: &str,
    dtype: DType,
    input: &Tensor,
    outs: &[&Tensor],
    dim: i64,
    descending: Option<bool>,
) -> Result<()> {
    let (layout, count, n) = lines(op, input, dim)?;
    if count == 0 || n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, input)?;
    let x = operand_with(op, input, &layout)?;
    let ks = outs
        .iter()
        .map(|o| operand_with(op, o, &lines(op, o, dim)?.0))
        .collect::<Result<Vec<_>>>()?;
    let f = gpu.function("scan", &format!("{kind}_{}", dtype.short_name()))?;
    let (c, nn) = (count as i64, n as i64);
    let mut b = gpu.stream.launch_builder(&f);
    for k in &ks {
        b.arg(k);
    }
    b.arg(&x).arg(&c).arg(&nn);
    let desc = descending.unwrap_or(false);
    if descending.is_some() {
        b.arg(&desc);
    }
    // SAFETY: matches `<kind>_<T>(KilnTensor outs..., KilnTensor in, long long lines, long
    // long n[, bool descending])` in scan.cu.j2; every view is a permutation of a valid
    // layout with `lines * n` elements, outputs are fresh tensors of the input's shape.
    unsafe { b.launch(grid(count)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

pub fn cumsum(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    launch(op, "cumsum", self_.dtype(), self_, &[out], dim, None)
}

pub fn cumprod(
    op: &str,
    self_: &Tensor,
    dim: i64,
    _dtype: Option<DType>,
    out: &Tensor,
) -> Result<()> {
    launch(op, "cumprod", self_.dtype(), self_, &[out], dim, None)
}

pub fn logcumsumexp(op: &str, self_: &Tensor, dim: i64, out: &Tensor) -> Result<()> {
    launch(op, "logcumsumexp", self_.dtype(), self_, &[out], dim, None)
}

pub fn cummax(op: &str, self_: &Tensor, dim: i64, values: &Tensor, indices: &Tensor) -> Result<()> {
    launch(
        op,
        "cummax",
        self_.dtype(),
        self_,
        &[values, indices],
        dim,
        None,
    )
}

pub fn cummin(op: &str, self_: &Tensor, dim: i64, values: &Tensor, indices: &Tensor) -> Result<()> {
    launch(
        op,
        "cummin",
        self_.dtype(),
        self_,
        &[values, indices],
        dim,
        None,
    )
}
