//! Ops written in Rust from other public ops (PyTorch's CompositeImplicitAutograd): autograd
//! comes from the ops they call, so they have no derivatives.yaml entry.

use crate::ops::backward::i64s;
use crate::{DType, Device, Error, Result, Scalar, Tensor};

/// `matmul`: PyTorch's rank cases — dot, matrix-vector, vector-matrix, matrix-matrix, and
/// batched with broadcasting of the batch dims.
pub fn matmul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let (da, db) = (a.dim(), b.dim());
    if da == 0 || db == 0 {
        return Err(Error::op(
            "matmul",
            format!(
                "both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
            ),
        ));
    }
    match (da, db) {
        (1, 1) => {
            if a.shape()[0] != b.shape()[0] {
                return Err(Error::op(
                    "matmul",
                    format!(
                        "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                        a.shape()[0], b.shape()[0], a.shape()[0], b.shape()[0]
                    ),
                ));
            }
            a.unsqueeze(0)?.mm(&b.unsqueeze(1)?)?.reshape(&[])
        }
        (2, 1) => a.mm(&b.unsqueeze(1)?)?.squeeze_dim(1),
        (1, 2) => a.unsqueeze(0)?.mm(b)?.squeeze_dim(0),
        (2, 2) => a.mm(b),
        _ => {
            // Batched: promote vectors to matrices, broadcast batch dims, bmm, then drop the
            // dims the vectors added.
            let a2 = if da == 1 { a.unsqueeze(0)? } else { a.clone() };
            let b2 = if db == 1 { b.unsqueeze(1)? } else { b.clone() };
            let (ba, bb) = (&a2.shape()[..a2.dim() - 2], &b2.shape()[..b2.dim() - 2]);
            let batch = kiln_kernels::layout::broadcast_shapes(ba, bb)
                .map_err(|m| Error::op("matmul", m))?;
            let (n, k) = (a2.shape()[a2.dim() - 2], a2.shape()[a2.dim() - 1]);
            let (k2, m) = (b2.shape()[b2.dim() - 2], b2.shape()[b2.dim() - 1]);
            if k != k2 {
                return Err(Error::op(
                    "matmul",
                    format!("mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})"),
                ));
            }
            let nb: usize = batch.iter().product();
            let mut ea = i64s(&batch);
            ea.extend([n as i64, k as i64]);
            let mut eb = i64s(&batch);
            eb.extend([k2 as i64, m as i64]);
            let a3 = a2.expand(&ea)?.reshape(&[nb as i64, n as i64, k as i64])?;
            let b3 = b2.expand(&eb)?.reshape(&[nb as i64, k as i64, m as i64])?;
            let mut out_shape = i64s(&batch);
            out_shape.extend([n as i64, m as i64]);
            let mut out = a3.bmm(&b3)?.reshape(&out_shape)?;
            if da == 1 {
                out = out.squeeze_dim(-2)?;
            }
            if db == 1 {
                out = out.squeeze_dim(-1)?;
            }
            Ok(out)
        }
    }
}

/// `stack(tensors, dim)`: `cat` of the tensors each unsqueezed at `dim`.
pub fn stack(tensors: &[Tensor], dim: i64) -> Result<Tensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::op("stack", "stack expects a non-empty TensorList"))?;
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            return Err(Error::op(
                "stack",
                format!("stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}", first.shape(), t.shape()),
            ));
        }
    }
    let d = kiln_kernels::layout::wrap_dim(dim, first.dim() + 1)
        .map_err(|m| Error::op("stack", m))? as i64;
    let parts: Vec<Tensor> = tensors
        .iter()
        .map(|t| t.unsqueeze(d))
        .collect::<Result<_>>()?;
    crate::cat_with(&parts, d)
}

fn mean_check(t: &Tensor, dtype: Option<DType>) -> Result<()> {
    let d = dtype.unwrap_or(t.dtype());
    if !d.is_floating_point() {
        return Err(Error::op(
            "mean",
            format!(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                d.scalar_type_name()
            ),
        ));
    }
    Ok(())
}

/// Half-precision means accumulate and divide in float32 and round once, as PyTorch does.
fn mean_accumulator(t: &Tensor, dtype: Option<DType>) -> (Option<DType>, Option<DType>) {
    let d = dtype.unwrap_or(t.dtype());
    if matches!(d, DType::F16 | DType::BF16) {
        (Some(DType::F32), Some(d))
    } else {
        (dtype, None)
    }
}

/// `mean()`: sum / numel.
pub fn mean(t: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    mean_check(t, dtype)?;
    let (acc, back) = mean_accumulator(t, dtype);
    let m = t.sum_with(acc)?.div_scalar(t.numel() as f64)?;
    match back {
        Some(d) => m.to_dtype(d),
        None => Ok(m),
    }
}

/// `mean(dim, keepdim)`.
pub fn mean_dim(
    t: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    mean_check(t, dtype)?;
    let (acc, back) = mean_accumulator(t, dtype);
    let s = crate::sum_dim_with(t, dim.unwrap_or(&[]), keepdim, acc)?;
    let count = (t.numel().max(1) / s.numel().max(1)) as f64;
    let count = if t.numel() == 0 { 0.0 } else { count };
    let m = s.div_scalar(count)?;
    match back {
        Some(d) => m.to_dtype(d),
        None => Ok(m),
    }
}

/// `softmax(dim, dtype)`: optional cast, then `_softmax`.
pub fn softmax(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(d) => t.to_dtype(d)?,
        None => t.clone(),
    };
    x._softmax(dim, false)
}

/// `log_softmax(dim, dtype)`: optional cast, then `_log_softmax`.
pub fn log_softmax(t: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let x = match dtype {
        Some(d) => t.to_dtype(d)?,
        None => t.clone(),
    };
    x._log_softmax(dim, false)
}

/// `sum_to_size(size)`: sums broadcast dims away so the result has `size`.
pub fn sum_to_size(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    let target: Vec<usize> = size.iter().map(|&s| s.max(0) as usize).collect();
    if kiln_kernels::layout::broadcast_shapes(&target, t.shape())
        .ok()
        .as_deref()
        != Some(t.shape())
    {
        return Err(Error::op(
            "sum_to_size",
            format!("size {size:?} is not expandable to size {:?}", t.shape()),
        ));
    }
    let lead = t.dim() - target.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &s) in target.iter().enumerate() {
        if s == 1 && t.shape()[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    if dims.is_empty() {
        return Ok(t.clone());
    }
    let s = crate::sum_dim_with(t, &dims, true, None)?;
    if lead > 0 {
        s.reshape(size)
    } else {
        Ok(s)
    }
}

/// `contiguous()`: the tensor itself when already contiguous, else a copy.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        t.clone_tensor()
    }
}

/// `to(dtype)`: `self` itself when the dtype already matches (PyTorch returns the same
/// tensor, so an in-place op on the result reaches `self`'s history), else a recorded copy.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t.clone())
    } else {
        t.to_copy_with(Some(dtype), None)
    }
}

/// `to(device)`: `t` itself when it is already on `device`, else a copy there.
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        Ok(t.clone())
    } else {
        t.to_copy_with(None, Some(device))
    }
}

/// `flatten(start_dim, end_dim)` as a reshape.
pub fn flatten(t: &Tensor, start_dim: i64, end_dim: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        return t.reshape(&[1]);
    }
    let wrap = |d| kiln_kernels::layout::wrap_dim(d, t.dim()).map_err(|m| Error::op("flatten", m));
    let (s, e) = (wrap(start_dim)?, wrap(end_dim)?);
    if s > e {
        return Err(Error::op(
            "flatten",
            "flatten() has invalid args: start_dim cannot come after end_dim",
        ));
    }
    let mut shape = i64s(&t.shape()[..s]);
    shape.push(t.shape()[s..=e].iter().product::<usize>() as i64);
    shape.extend(i64s(&t.shape()[e + 1..]));
    t.reshape(&shape)
}

/// `unflatten(dim, sizes)` as a reshape.
pub fn unflatten(t: &Tensor, dim: i64, sizes: &[i64]) -> Result<Tensor> {
    if sizes.is_empty() {
        return Err(Error::op("unflatten", "unflatten: sizes must be non-empty"));
    }
    if t.dim() == 0 {
        return Err(Error::op(
            "unflatten",
            format!("dimension specified as {dim} but tensor has no dimensions"),
        ));
    }
    let d = kiln_kernels::layout::wrap_dim(dim, t.dim()).map_err(|m| Error::op("unflatten", m))?;
    let n = t.shape()[d];
    let inner = crate::Layout::infer_size(sizes, n).map_err(|_| {
        Error::op(
            "unflatten",
            format!("unflatten: Provided sizes {sizes:?} don't multiply up to the size of dim {dim} ({n}) in the input tensor"),
        )
    })?;
    let mut shape = i64s(&t.shape()[..d]);
    shape.extend(i64s(&inner));
    shape.extend(i64s(&t.shape()[d + 1..]));
    t.reshape(&shape)
}

/// `relu6(x) = hardtanh(x, 0, 6)`, as PyTorch defines it.
pub fn relu6(t: &Tensor) -> Result<Tensor> {
    crate::hardtanh_with(t, 0, 6)
}

/// `selu`: `elu` with the self-normalising constants of Klambauer et al. (2017).
pub fn selu(t: &Tensor) -> Result<Tensor> {
    const ALPHA: f64 = 1.673_263_242_354_377_3;
    const SCALE: f64 = 1.050_700_987_355_480_5;
    crate::elu_with(t, ALPHA, SCALE, 1)
}

/// `celu(x, alpha) = elu(x, alpha, 1, 1 / alpha)`; PyTorch rejects `alpha == 0`.
pub fn celu(t: &Tensor, alpha: Scalar) -> Result<Tensor> {
    let a = alpha.to::<f64>();
    if a == 0.0 {
        return Err(Error::op("celu", "ZeroDivisionError"));
    }
    crate::elu_with(t, alpha, 1, 1.0 / a)
}
