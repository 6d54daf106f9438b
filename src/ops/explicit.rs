//! Ops written in Rust over tensors, whose derivative still comes from derivatives.yaml
//! (PyTorch's CompositeExplicitAutograd): views, which only compute a new layout, and dtype
//! conversion. No autograd here — the generated wrapper records it.

use crate::{DType, Device, Error, Layout, Result, Tensor};
use kiln_kernels::KResult;

/// `t`'s storage seen through `layout`, once the layout is known to count and stay inside
/// the storage (views of a valid tensor always do; the check guards the arithmetic).
fn view_with(op: &str, t: &Tensor, layout: KResult<Layout>) -> Result<Tensor> {
    let layout = layout.map_err(|m| Error::op(op, m))?;
    layout
        .check_in_bounds(t.storage().len())
        .map_err(|m| Error::op(op, m))?;
    Ok(t.with_layout(layout))
}

/// `view(size)`: same storage, new shape; fails when the strides cannot express it.
pub fn view(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    let sizes = Layout::infer_size(size, t.numel()).map_err(|m| Error::op("view", m))?;
    match t.layout().view(&sizes) {
        Some(l) => view_with("view", t, Ok(l)),
        None => Err(Error::shape(
            "view",
            "view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
        )),
    }
}

/// `reshape(shape)`: a view when possible, else a contiguous copy.
pub fn reshape(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    let sizes = Layout::infer_size(shape, t.numel()).map_err(|m| Error::op("reshape", m))?;
    match t.layout().view(&sizes) {
        Some(l) => view_with("reshape", t, Ok(l)),
        None => Ok(t.fresh_copy()?.with_layout(Layout::contiguous(&sizes))),
    }
}

/// `permute(dims)`.
pub fn permute(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    view_with("permute", t, t.layout().permute(dims))
}

/// `transpose(dim0, dim1)`.
pub fn transpose(t: &Tensor, dim0: i64, dim1: i64) -> Result<Tensor> {
    view_with("transpose", t, t.layout().transpose(dim0, dim1))
}

/// `t()`: transpose of a tensor with at most 2 dims.
pub fn t(t: &Tensor) -> Result<Tensor> {
    if t.dim() > 2 {
        return Err(Error::shape(
            "t",
            format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                t.dim()
            ),
        ));
    }
    if t.dim() < 2 {
        return Ok(t.with_layout(t.layout().clone()));
    }
    view_with("t", t, t.layout().transpose(0, 1))
}

/// `unsqueeze(dim)`.
pub fn unsqueeze(t: &Tensor, dim: i64) -> Result<Tensor> {
    view_with("unsqueeze", t, t.layout().unsqueeze(dim))
}

/// `squeeze()`: drops every size-1 dim.
pub fn squeeze(t: &Tensor) -> Result<Tensor> {
    view_with("squeeze", t, t.layout().squeeze(None))
}

/// `squeeze(dim)`: drops `dim` if it has size 1.
pub fn squeeze_dim(t: &Tensor, dim: i64) -> Result<Tensor> {
    view_with("squeeze", t, t.layout().squeeze(Some(&[dim])))
}

/// `expand(size)`.
pub fn expand(t: &Tensor, size: &[i64], _implicit: bool) -> Result<Tensor> {
    view_with("expand", t, t.layout().expand(size))
}

/// `narrow(dim, start, length)`.
pub fn narrow(t: &Tensor, dim: i64, start: i64, length: i64) -> Result<Tensor> {
    view_with("narrow", t, t.layout().narrow(dim, start, length))
}

/// `select(dim, index)`.
pub fn select(t: &Tensor, dim: i64, index: i64) -> Result<Tensor> {
    view_with("select", t, t.layout().select(dim, index))
}

/// `slice(dim, start, end, step)`.
pub fn slice(
    t: &Tensor,
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    view_with("slice", t, t.layout().slice(dim, start, end, step))
}

/// `as_strided(size, stride, storage_offset)`: any geometry inside the storage.
pub fn as_strided(
    t: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    if size.len() != stride.len() {
        return Err(Error::shape(
            "as_strided",
            format!(
                "mismatch in length of strides and shape ({} vs {})",
                stride.len(),
                size.len()
            ),
        ));
    }
    if let Some(&s) = size.iter().find(|&&s| s < 0) {
        return Err(Error::shape(
            "as_strided",
            format!("Trying to create tensor with negative dimension {s}: {size:?}"),
        ));
    }
    if stride.iter().any(|&s| s < 0) {
        return Err(Error::not_implemented(
            "as_strided",
            format!("as_strided: Negative strides are not supported at the moment, got strides: {stride:?}"),
        ));
    }
    let offset = storage_offset.unwrap_or(t.storage_offset() as i64);
    if offset < 0 {
        return Err(Error::value(
            "as_strided",
            format!("Tensor: invalid storage offset {offset}"),
        ));
    }
    let layout = Layout {
        sizes: size.iter().map(|&s| s as usize).collect(),
        strides: stride.iter().map(|&s| s as usize).collect(),
        offset: offset as usize,
    };
    view_with("as_strided", t, Ok(layout))
}

/// `_to_copy(dtype, device)`: a converted copy in fresh storage, even when nothing changes.
pub fn to_copy(t: &Tensor, dtype: Option<DType>, device: Option<Device>) -> Result<Tensor> {
    t.copy_to(dtype.unwrap_or(t.dtype()), device.unwrap_or(t.device()))
}

/// `contiguous()` for a view: the data copied into row-major order.
pub fn clone(t: &Tensor) -> Result<Tensor> {
    t.fresh_copy()
}

/// A size list with no negative entry, as `usize`s.
fn non_negative(op: &str, sizes: &[i64]) -> Result<Vec<usize>> {
    match sizes.iter().find(|&&s| s < 0) {
        Some(s) => Err(Error::shape(
            op,
            format!("Trying to create tensor with negative dimension {s}: {sizes:?}"),
        )),
        None => Ok(sizes.iter().map(|&s| s as usize).collect()),
    }
}

/// The gradient of a slice: zeros of the input's shape with `grad` in the sliced part.
pub fn slice_backward(
    grad: &Tensor,
    input_sizes: &[i64],
    dim: i64,
    start: i64,
    end: i64,
    step: i64,
) -> Result<Tensor> {
    let sizes = non_negative("slice_backward", input_sizes)?;
    let out = Tensor::alloc_on("slice_backward", &sizes, grad.dtype(), grad.device())?;
    let part = view_with(
        "slice_backward",
        &out,
        out.layout().slice(dim, Some(start), Some(end), step),
    )?;
    part.copy_data_from(grad)?;
    Ok(out)
}

/// The gradient of a select: zeros of the input's shape with `grad` at `index`.
pub fn select_backward(grad: &Tensor, input_sizes: &[i64], dim: i64, index: i64) -> Result<Tensor> {
    let sizes = non_negative("select_backward", input_sizes)?;
    let out = Tensor::alloc_on("select_backward", &sizes, grad.dtype(), grad.device())?;
    let part = view_with("select_backward", &out, out.layout().select(dim, index))?;
    part.copy_data_from(grad)?;
    Ok(out)
}

/// `as_strided_scatter(self, src, size, stride, storage_offset)`: a copy of `self` (as
/// contiguous storage) with the elements `as_strided(size, stride, storage_offset)` selects
/// replaced by `src`.
pub fn as_strided_scatter(
    t: &Tensor,
    src: &Tensor,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let out = t.fresh_copy()?;
    let region = as_strided(&out, size, stride, storage_offset)?;
    if region.shape() != src.shape() {
        return Err(Error::shape(
            "as_strided_scatter",
            format!("expected src to have a size equal to the slice of self. src size = {:?}, slice size = {:?}", src.shape(), region.shape()),
        ));
    }
    region.copy_data_from(src)?;
    Ok(out)
}
