//! index_select, gather, scatter, scatter_add and index_add on CUDA (kernels/cuda/index.cu.j2).
//! Indices are range-checked on the host first (one small device-to-host copy), so a bad
//! index is kiln's error with PyTorch's message, not a device-side assert.

use super::{copy, gpu_of, grid, operand_with, KilnTensor};
use crate::cuda::runtime::driver_error;
use crate::{Error, Layout, Result, Tensor};
use cudarc::driver::PushKernelArg;

/// A 0-d layout seen as one element along one dim, as PyTorch's indexing kernels treat it.
fn at_least_1d(l: &Layout) -> Layout {
    if l.ndim() > 0 {
        return l.clone();
    }
    Layout {
        sizes: vec![1],
        strides: vec![1],
        offset: l.offset,
    }
}

fn operand(op: &str, t: &Tensor) -> Result<KilnTensor> {
    operand_with(op, t, &at_least_1d(t.layout()))
}

/// Fails with `err(i)` on the first index outside `0..size`.
fn check(index: &Tensor, size: usize, err: impl Fn(i64) -> String) -> Result<()> {
    let bad = index
        .to_vec::<i64>()?
        .into_iter()
        .find(|&i| usize::try_from(i).map_or(true, |u| u >= size));
    match bad {
        Some(i) => Err(Error::Op {
            op: String::new(),
            msg: err(i),
        }),
        None => Ok(()),
    }
}

fn with_op(op: &str, r: Result<()>) -> Result<()> {
    r.map_err(|e| match e {
        Error::Op { op: o, msg } if o.is_empty() => Error::op(op, msg),
        other => other,
    })
}

fn dim_size(op: &str, t: &Tensor, dim: i64) -> Result<(usize, usize)> {
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op(op, m))?;
    Ok((d, if t.dim() == 0 { 1 } else { t.shape()[d] }))
}

fn oob(dim: usize, size: usize) -> impl Fn(i64) -> String {
    move |i| format!("index {i} is out of bounds for dimension {dim} with size {size}")
}

/// Launches `<name>_<dtype>(KilnTensor a, KilnTensor b, KilnTensor c, int dim, [alpha,] n)`.
#[allow(clippy::too_many_arguments)]
fn launch(
    op: &str,
    name: &str,
    dtype: crate::DType,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    dim: usize,
    alpha: Option<f64>,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, a)?;
    let (ka, kb, kc) = (operand(op, a)?, operand(op, b)?, operand(op, c)?);
    let f = gpu.function("index", &format!("{name}_{}", dtype.short_name()))?;
    let (d, nn) = (dim as i32, n as i64);
    let params = super::scalar_param(dtype, crate::Scalar::Float(alpha.unwrap_or(1.0)));
    let mut builder = gpu.stream.launch_builder(&f);
    builder.arg(&ka).arg(&kb).arg(&kc).arg(&d);
    if alpha.is_some() {
        super::push(&mut builder, &params);
    }
    builder.arg(&nn);
    // SAFETY: the operands match the kernel's (KilnTensor x3, int dim, [T alpha,] long long
    // n) signature; every index was checked to be in range above, so all addresses the
    // kernel forms lie inside the operands' storages.
    unsafe { builder.launch(grid(n)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

pub fn index_select(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let (d, size) = dim_size(op, self_, dim)?;
    with_op(
        op,
        check(index, size, |_| "index out of range in self".into()),
    )?;
    launch(
        op,
        "index_select",
        self_.dtype(),
        out,
        self_,
        index,
        d,
        None,
        out.numel(),
    )
}

pub fn gather(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    _sparse_grad: bool,
    out: &Tensor,
) -> Result<()> {
    let (d, size) = dim_size(op, self_, dim)?;
    with_op(op, check(index, size, oob(d, size)))?;
    launch(
        op,
        "gather",
        self_.dtype(),
        out,
        self_,
        index,
        d,
        None,
        index.numel(),
    )
}

pub fn scatter_add(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    scatter_like(op, "scatter_add", self_, dim, index, src, out)
}

pub fn scatter(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    scatter_like(op, "scatter", self_, dim, index, src, out)
}

/// `out = self`, then kernel `name` writes (or adds) `src` at the indexed positions.
fn scatter_like(
    op: &str,
    name: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    let (d, size) = dim_size(op, self_, dim)?;
    with_op(op, check(index, size, oob(d, size)))?;
    copy(op, self_, out)?;
    // `src` may be larger than `index` (PyTorch allows it): read it at the index's
    // coordinates through a view with the index's sizes and `src`'s strides.
    let mut l = at_least_1d(src.layout());
    l.sizes = at_least_1d(index.layout()).sizes;
    let src = src.with_layout(l);
    launch(
        op,
        name,
        self_.dtype(),
        out,
        index,
        &src,
        d,
        None,
        index.numel(),
    )
}

pub fn index_add(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    source: &Tensor,
    alpha: f64,
    out: &Tensor,
) -> Result<()> {
    let (d, size) = dim_size(op, self_, dim)?;
    with_op(
        op,
        check(index, size, |_| "index out of range in self".into()),
    )?;
    copy(op, self_, out)?;
    launch(
        op,
        "index_add",
        self_.dtype(),
        out,
        index,
        source,
        d,
        Some(alpha),
        source.numel(),
    )
}
