//! index_select, gather, scatter, scatter_add, scatter_reduce (and scatter's `reduce=` form)
//! and index_add on CUDA (kernels/cuda/index.cu.j2). Indices are range-checked on the host
//! first (one small device-to-host copy), so a bad index is kiln's error with PyTorch's
//! message, not a device-side assert. Values meeting at one position combine through
//! atomics (native adds, compare-and-swap loops for the rest), in no fixed order.

use super::{copy, gpu_of, grid, operand_with, KilnTensor};
use crate::backends::cuda::launchers::index as kernels;
use crate::{DType, Error, Layout, Result, Tensor};
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
pub(super) fn check(index: &Tensor, size: usize, err: impl Fn(i64) -> String) -> Result<()> {
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

pub(super) fn with_op(op: &str, r: Result<()>) -> Result<()> {
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

/// `index_select_<T>`, `gather_<T>`, `scatter_<T>`, `scatter_add_<T>`: all take
/// `(KilnTensor a, KilnTensor b, KilnTensor c, int dim, long long n)`.
type Kernel = kernels::IndexSelect;

/// Launches `kernel` for `dtype` over `n` elements with operands `a`, `b`, `c`; the caller
/// has range-checked every index, so all addresses the kernel forms lie inside the
/// operands' storages.
#[allow(clippy::too_many_arguments)]
fn launch(
    op: &str,
    kernel: Kernel,
    dtype: DType,
    a: &Tensor,
    b: &Tensor,
    c: &Tensor,
    dim: usize,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, a)?;
    let (ka, kb, kc) = (operand(op, a)?, operand(op, b)?, operand(op, c)?);
    // SAFETY: operands of `dtype` (the index int64) in live device memory; indices checked
    // by the caller.
    unsafe {
        kernel(
            &gpu,
            op,
            dtype,
            grid(n),
            &ka,
            &kb,
            &kc,
            dim as i32,
            n as i64,
        )
    }
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
        kernels::index_select,
        self_.dtype(),
        out,
        self_,
        index,
        d,
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
        kernels::gather,
        self_.dtype(),
        out,
        self_,
        index,
        d,
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
    scatter_like(op, kernels::scatter_add, self_, dim, index, src, out)
}

pub fn scatter(
    op: &str,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    out: &Tensor,
) -> Result<()> {
    scatter_like(op, kernels::scatter, self_, dim, index, src, out)
}

/// `out = self`, then `kernel` writes (or adds) `src` at the indexed positions.
fn scatter_like(
    op: &str,
    kernel: Kernel,
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
        kernel,
        self_.dtype(),
        out,
        index,
        &src,
        d,
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
    let n = source.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, out)?;
    let (o, i, src) = (operand(op, out)?, operand(op, index)?, operand(op, source)?);
    // SAFETY: `out` and `source` of `self`'s dtype, `index` int64, in live device memory;
    // every index was checked to lie in `out`'s dim `d`, and the meta function checked that
    // `source` fits `out` outside it.
    unsafe {
        kernels::index_add(
            &gpu,
            op,
            self_.dtype(),
            grid(n),
            &o,
            &i,
            &src,
            d as i32,
            crate::Scalar::Float(alpha),
            n as i64,
        )
    }
}

/// `src` read at the index's coordinates: it may be larger than `index` (PyTorch allows
/// it), so a view with the index's sizes and `src`'s strides.
fn index_view(src: &Tensor, index: &Tensor) -> Tensor {
    let mut l = at_least_1d(src.layout());
    l.sizes = at_least_1d(index.layout()).sizes;
    src.with_layout(l)
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
    let (dt, dim, nn) = (self_.dtype(), d as i32, n as i64);
    let gpu = gpu_of(op, out)?;
    let (o, i) = (operand(op, out)?, operand(op, index)?);
    if !include_self {
        // SAFETY: `out` of dtype `dt` and the int64 `index` in live device memory; every
        // index was checked to lie in `out`'s dim `d`, and the meta function checked that
        // `index` fits `out` outside it.
        unsafe { kernels::scatter_reduce_init(&gpu, op, dt, grid(n), &o, &i, dim, code, nn) }?;
    }
    let s = operand(op, &src)?;
    // SAFETY: indices checked as above, and `src` is viewed with the index's sizes, which the
    // meta function checked fit inside `src`.
    unsafe { kernels::scatter_reduce(&gpu, op, dt, grid(n), &o, &i, &s, dim, code, nn) }?;
    if r == ScatterReduce::Mean {
        let count = Tensor::full_on(
            out.shape(),
            i64::from(include_self),
            DType::I64,
            out.device(),
        )?;
        let c = operand(op, &count)?;
        // SAFETY: `count` is a fresh int64 tensor of `out`'s shape, indices checked as above.
        unsafe { kernels::scatter_count(&gpu, op, grid(n), &c, &i, dim, nn) }?;
        let m = out.numel();
        // SAFETY: over the `m` elements of `out` (dtype `dt`) and of `count`, which has its
        // shape.
        unsafe { kernels::scatter_mean(&gpu, op, dt, grid(m), &o, &c, m as i64) }?;
    }
    Ok(())
}
