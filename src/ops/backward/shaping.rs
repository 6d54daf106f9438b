//! Gradients of shape, view and copy ops (`permute`, `cat`, `as_strided`, `narrow`, slicing,
//! `_to_copy`), and the helpers every family's formulas use: `i64s`, `reshape_to`, `sum_to`.

use crate::{DType, Device, Result, Tensor};

/// A possibly negative dim as an index (the forward op already validated it).
fn wrap(dim: i64, ndim: usize) -> Result<usize> {
    kiln_kernels::layout::wrap_dim(dim, ndim).map_err(|m| crate::Error::op("backward", m))
}

/// usize sizes as the i64 list view/reshape take.
pub fn i64s(sizes: &[usize]) -> Vec<i64> {
    sizes.iter().map(|&s| s as i64).collect()
}

/// `grad` reshaped to `sizes` (backward of any reshaping view).
pub fn reshape_to(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    grad.reshape(i64s(sizes))
}

/// `grad` summed down to `sizes` (backward of `expand`).
pub fn sum_to(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    grad.sum_to_size(i64s(sizes))
}

/// Backward of `permute(dims)`: permute by the inverse permutation.
pub fn permute_backward(grad: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = dims.len() as i64;
    let mut inv = vec![0i64; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inv[(if d < 0 { d + n } else { d }) as usize] = i as i64;
    }
    grad.permute(&inv)
}

/// Backward of `cat`: each input gets its slice of `grad`.
pub fn cat_backward(grad: &Tensor, sizes: &[Vec<usize>], dim: i64) -> Result<Vec<Tensor>> {
    let d = if dim < 0 {
        dim + grad.dim() as i64
    } else {
        dim
    };
    let mut offset = 0i64;
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        // A 1-D empty input took no part in `cat` (PyTorch's legacy rule), whatever `dim` was.
        if s.len() == 1 && s[0] == 0 {
            out.push(zeros_like_grad(grad, &[0])?);
            continue;
        }
        let len = s[d as usize] as i64;
        out.push(grad.narrow(d, offset, len)?);
        offset += len;
    }
    Ok(out)
}

/// Zeros of `sizes` with `grad`'s dtype, on `grad`'s device.
pub(super) fn zeros_like_grad(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    Tensor::alloc_on("zeros", sizes, grad.dtype(), grad.device())
}

/// Backward of `_to_copy`: the gradient cast back to the input's dtype, on its device.
pub fn to_copy_backward(grad: &Tensor, dtype: DType, device: Device) -> Result<Tensor> {
    grad.to_dtype(dtype)?.to_device(device)
}

/// Backward of `as_strided`, for inputs whose elements do not overlap in memory: route each
/// output element's gradient to the storage slot it read, then read the input's slots back.
pub fn as_strided_backward(
    grad: &Tensor,
    input_sizes: &[usize],
    input_strides: &[usize],
    input_offset: usize,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let flat = |sizes: &[usize], strides: &[usize], offset: usize| -> Vec<i64> {
        let l = crate::Layout {
            sizes: sizes.into(),
            strides: strides.into(),
            offset,
        };
        let mut v = Vec::with_capacity(l.numel());
        kiln_kernels::cpu::strided::for_each_offset(&l, |o| v.push(o as i64));
        v
    };
    let out_sizes: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    let out_strides: Vec<usize> = stride.iter().map(|&s| s as usize).collect();
    let out_idx = flat(
        &out_sizes,
        &out_strides,
        storage_offset.map(|o| o as usize).unwrap_or(input_offset),
    );
    let in_idx = flat(input_sizes, input_strides, input_offset);
    let extent = out_idx
        .iter()
        .chain(&in_idx)
        .copied()
        .max()
        .map(|m| m + 1)
        .unwrap_or(0) as usize;
    let n_out = out_idx.len();
    let n_in = in_idx.len();
    let storage = zeros_like_grad(grad, &[extent])?.index_add(
        0,
        &Tensor::from_vec(out_idx, &[n_out])?.to_device(grad.device())?,
        &grad.reshape([-1])?,
    )?;
    storage
        .index_select(
            0,
            &Tensor::from_vec(in_idx, &[n_in])?.to_device(grad.device())?,
        )?
        .reshape(i64s(input_sizes))
}

/// Backward of `narrow`: zeros with `grad` in the narrowed part.
pub fn narrow_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    start: i64,
    length: i64,
) -> Result<Tensor> {
    let d = wrap(dim, sizes.len())?;
    let start = if start < 0 {
        start + sizes[d] as i64
    } else {
        start
    };
    crate::slice_backward(grad, i64s(sizes), dim, start, start + length, 1)
}

/// Backward of `slice`: normalises the bounds as the view did, then `slice_backward`.
pub fn slice_view_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let d = wrap(dim, sizes.len())?;
    let size = sizes[d] as i64;
    let clamp = |v: i64| {
        if v < 0 {
            (v + size).max(0)
        } else {
            v.min(size)
        }
    };
    let s = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(size)).max(s);
    crate::slice_backward(grad, i64s(sizes), dim, s, e, step)
}
