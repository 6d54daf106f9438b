//! index_select, gather, scatter, scatter_add, scatter_reduce (and scatter's `reduce=` form)
//! and index_add on CUDA (kernels/cuda/index.cu.j2). Indices are range-checked on the host
//! first (one small device-to-host copy), so a bad index is kiln's error with PyTorch's
//! message, not a device-side assert. Values meeting at one position combine through
//! atomics (native adds, compare-and-swap loops for the rest), in no fixed order.

use super::{copy, gpu_of, grid, operand_with, KilnTensor, Param};
use crate::backends::cuda::runtime::driver_error;
use crate::{DType, Error, Layout, Result, Tensor};
use cudarc::driver::PushKernelArg;
use kiln_kernels::cpu::index::ScatterReduce;

/// A 0-d layout seen as one element along one dim, as PyTorch's indexing kernels treat it.
fn at_least_1d(l: &Layout) -> Layout {
    if l.ndim() > 0 {
        return l.clone();
    }
    Layout {
        sizes: smallvec::smallvec![1],
        strides: smallvec::smallvec![1],
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
            kind: crate::ErrorKind::Index,
            msg: err(i),
        }),
        None => Ok(()),
    }
}

fn with_op(op: &str, r: Result<()>) -> Result<()> {
    r.map_err(|e| match e {
        Error::Op { op: o, kind, msg } if o.is_empty() => Error::new(kind, op, msg),
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
    let src = index_view(src, index);
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

/// `src` read at the index's coordinates: it may be larger than `index` (PyTorch allows
/// it), so a view with the index's sizes and `src`'s strides.
fn index_view(src: &Tensor, index: &Tensor) -> Tensor {
    let mut l = at_least_1d(src.layout());
    l.sizes = at_least_1d(index.layout()).sizes;
    src.with_layout(l)
}

/// Launches `name(params...)` of the index module over `n` elements, on `on`'s device.
///
/// # Safety
///
/// `params` must match the kernel's parameter list in kernels/cuda/index.cu.j2, and every
/// address the kernel forms from them must lie inside its operand's storage.
unsafe fn launch_params(
    op: &str,
    name: &str,
    on: &Tensor,
    params: &[Param],
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, on)?;
    let f = gpu.function("index", name)?;
    let mut b = gpu.stream.launch_builder(&f);
    for p in params {
        super::push(&mut b, p);
    }
    // SAFETY: the caller's contract (parameters and addresses).
    unsafe { b.launch(grid(n)) }.map_err(|e| driver_error(op, e))?;
    Ok(())
}

fn tensor_param(op: &str, t: &Tensor) -> Result<Param> {
    Ok(Param::Tensor(Box::new(operand(op, t)?)))
}

// The launcher contract: `op`, the schema's six arguments, the output.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    out: &Tensor,
) -> Result<()> {
    let r = ScatterReduce::parse(reduce).map_err(|m| Error::op(op, m))?;
    reduce_into(op, self_, dim, index, src, r, include_self, out)
}

pub fn scatter_src_reduce(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    out: &Tensor,
) -> Result<()> {
    let r = ScatterReduce::parse_legacy(reduce).map_err(|m| Error::op(op, m))?;
    reduce_into(op, self_, dim, index, src, r, true, out)
}

/// `out = self`; without `include_self` the scattered-to positions are reset to the
/// reduction's identity; then every `src` value combines atomically into its position, and
/// `mean` divides by per-position counts (gathered atomically too).
#[allow(clippy::too_many_arguments)]
fn reduce_into(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    r: ScatterReduce,
    include_self: bool,
    out: &Tensor,
) -> Result<()> {
    if r == ScatterReduce::Mean && self_.dtype() == DType::Bool {
        // PyTorch's mean ends in div(..., rounding_mode="floor"), which has no bool kernel.
        return Err(Error::dtype(
            op,
            "\"div_floor_cuda\" not implemented for 'Bool'",
        ));
    }
    let (d, size) = dim_size(op, self_, dim)?;
    with_op(op, check(index, size, oob(d, size)))?;
    copy(op, self_, out)?;
    let n = index.numel();
    if n == 0 {
        return Ok(());
    }
    let src = index_view(src, index);
    let code: i32 = match r {
        ScatterReduce::Sum | ScatterReduce::Mean => 0,
        ScatterReduce::Prod => 1,
        ScatterReduce::Amax => 2,
        ScatterReduce::Amin => 3,
    };
    let dt = self_.dtype().short_name();
    let dim_p = || Param::I32(d as i32);
    if !include_self {
        let params = [
            tensor_param(op, out)?,
            tensor_param(op, index)?,
            dim_p(),
            Param::I32(code),
            Param::I64(n as i64),
        ];
        // SAFETY: `scatter_reduce_init_<T>(KilnTensor out, KilnTensor index, int dim, int op,
        // long long n)`; every index was checked to lie in `out`'s dim `d`, and the meta
        // function checked that `index` fits `out` outside it.
        unsafe { launch_params(op, &format!("scatter_reduce_init_{dt}"), out, &params, n) }?;
    }
    let params = [
        tensor_param(op, out)?,
        tensor_param(op, index)?,
        tensor_param(op, &src)?,
        dim_p(),
        Param::I32(code),
        Param::I64(n as i64),
    ];
    // SAFETY: `scatter_reduce_<T>(KilnTensor out, KilnTensor index, KilnTensor src, int dim,
    // int op, long long n)`; indices checked as above, and `src` is viewed with the index's
    // sizes, which the meta function checked fit inside `src`.
    unsafe { launch_params(op, &format!("scatter_reduce_{dt}"), out, &params, n) }?;
    if r == ScatterReduce::Mean {
        let count = Tensor::full_on(
            out.shape(),
            i64::from(include_self),
            DType::I64,
            out.device(),
        )?;
        let params = [
            tensor_param(op, &count)?,
            tensor_param(op, index)?,
            dim_p(),
            Param::I64(n as i64),
        ];
        // SAFETY: `scatter_count(KilnTensor count, KilnTensor index, int dim, long long n)`;
        // `count` is a fresh int64 tensor of `out`'s shape, indices checked as above.
        unsafe { launch_params(op, "scatter_count", out, &params, n) }?;
        let m = out.numel();
        let params = [
            tensor_param(op, out)?,
            tensor_param(op, &count)?,
            Param::I64(m as i64),
        ];
        // SAFETY: `scatter_mean_<T>(KilnTensor out, KilnTensor count, long long n)` over the
        // `m` elements of `out` and of `count`, which has its shape.
        unsafe { launch_params(op, &format!("scatter_mean_{dt}"), out, &params, m) }?;
    }
    Ok(())
}
