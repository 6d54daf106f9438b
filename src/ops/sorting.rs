//! Order statistics and products built on the `sort` and `cumprod` kernels (PyTorch's
//! CompositeImplicitAutograd): gradients flow through `sort`'s and `cumprod`'s backward.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Tensor};
use kiln_kernels::layout::wrap_dim;

fn dim_size(op: &str, t: &Tensor, dim: i64) -> Result<(usize, usize)> {
    let d = wrap_dim(dim, t.dim()).map_err(|m| Error::op(op, m))?;
    Ok((d, if t.dim() == 0 { 1 } else { t.shape()[d] }))
}

/// `argsort(dim, descending)`: the indices that sort `self` along `dim`.
pub fn argsort(t: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    Ok(t.sort_with(dim, descending)?.1)
}

/// `msort()`: sorted along dim 0.
pub fn msort(t: &Tensor) -> Result<Tensor> {
    Ok(t.sort_with(0, false)?.0)
}

/// `topk(k, dim, largest, sorted)`: the `k` largest (smallest) elements along `dim` and
/// their indices, in sorted order (kiln always sorts them).
pub fn topk(t: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    let _ = sorted;
    let (_, n) = dim_size("topk", t, dim)?;
    if k < 0 || k as usize > n {
        return Err(Error::value("topk", "selected index k out of range"));
    }
    let (v, i) = t.sort_with(dim, largest)?;
    if t.dim() == 0 {
        return Ok((v, i));
    }
    Ok((v.narrow(dim, 0, k)?, i.narrow(dim, 0, k)?))
}

/// The `k`-th smallest (1-based) element along `dim` of a sort, with its index.
fn pick(op: &str, t: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let (_, n) = dim_size(op, t, dim)?;
    if k < 1 || k as usize > n {
        return Err(Error::value(
            op,
            format!("{op}(): selected number k out of range for dimension {dim}"),
        ));
    }
    let (v, i) = t.sort_with(dim, false)?;
    if t.dim() == 0 {
        return Ok((v, i));
    }
    let (v, i) = (v.narrow(dim, k - 1, 1)?, i.narrow(dim, k - 1, 1)?);
    if keepdim {
        Ok((v, i))
    } else {
        Ok((v.squeeze_dim(dim)?, i.squeeze_dim(dim)?))
    }
}

/// `kthvalue(k, dim, keepdim)`: the `k`-th smallest element along `dim` and its index.
pub fn kthvalue(t: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    pick("kthvalue", t, k, dim, keepdim)
}

/// `median(dim, keepdim)`: the lower median along `dim` (the `⌈n/2⌉`-th smallest) and its
/// index; NaN (the first one, and its index) for a line that holds one, as PyTorch.
pub fn median_dim(t: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let (_, n) = dim_size("median", t, dim)?;
    if n == 0 {
        return Err(Error::index(
            "median",
            format!("median(): Expected reduction dim {dim} to have non-zero size."),
        ));
    }
    if !t.dtype().is_floating_point() || t.dim() == 0 {
        return pick("median", t, n.div_ceil(2) as i64, dim, keepdim);
    }
    // PyTorch's median propagates NaN: a line holding one gives its first NaN and that
    // NaN's index. The stable sort puts a line's NaNs last in input order, so the first
    // sits at position n - (its NaN count); other lines take the lower median.
    let (v, i) = t.sort_with(dim, false)?;
    let nans = t.isnan()?.sum_dim_with(&[dim], true, Some(DType::I64))?;
    let lower = nans.zeros_like()?.add_scalar((n as i64 - 1) / 2)?;
    let at = nans
        .neg()?
        .add_scalar(n as i64)?
        .where_cond(&nans.gt_scalar(0)?, &lower)?;
    let (v, i) = (v.gather(dim, &at)?, i.gather(dim, &at)?);
    if keepdim {
        Ok((v, i))
    } else {
        Ok((v.squeeze_dim(dim)?, i.squeeze_dim(dim)?))
    }
}

/// `median()`: the lower median of all elements.
pub fn median(t: &Tensor) -> Result<Tensor> {
    if t.numel() == 0 {
        return Err(Error::shape(
            "median",
            "median() input tensor cannot be empty",
        ));
    }
    Ok(median_dim(&t.reshape([-1])?, 0, false)?.0)
}

/// The dtype products accumulate in: `dtype`, else int64 for integers and bools.
fn product_dtype(t: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if t.dtype().is_floating_point() {
        t.dtype()
    } else {
        DType::I64
    })
}

/// `prod(dim, keepdim, dtype)`: the product along `dim` (1 for an empty dim), the last
/// entry of `cumprod`.
pub fn prod_dim(t: &Tensor, dim: i64, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let (d, n) = dim_size("prod", t, dim)?;
    let acc = product_dtype(t, dtype);
    if acc == DType::Bool {
        // PyTorch casts to bool first and multiplies there (a logical and): the product of
        // 0s and 1s in int64, back to bool.
        let ones = t.to_dtype(DType::Bool)?.to_dtype(DType::I64)?;
        return prod_dim(&ones, dim, keepdim, Some(DType::I64))?.to_dtype(DType::Bool);
    }
    let r = if n == 0 {
        if acc.is_floating_point() {
            // 1, recorded through `sum` so the (empty) input gets its (empty) gradient.
            crate::sum_dim_with(t, &[dim], true, Some(acc))?.add_scalar(1)?
        } else {
            let mut shape = t.shape().to_vec();
            shape[d] = 1;
            Tensor::full_on(&shape, 1, acc, t.device())?
        }
    } else if t.dim() == 0 {
        return t.to_dtype(acc);
    } else {
        crate::cumprod_with(t, dim, Some(acc))?.narrow(dim, n as i64 - 1, 1)?
    };
    if keepdim {
        Ok(r)
    } else {
        r.squeeze_dim(d as i64)
    }
}

/// `prod(dtype)`: the product of all elements.
pub fn prod(t: &Tensor, dtype: Option<DType>) -> Result<Tensor> {
    let flat = t.reshape([-1])?;
    prod_dim(&flat, 0, false, dtype)?.reshape(i64s(&[]))
}
