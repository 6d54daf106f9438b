//! Reductions composed from `sum`, `max.dim` and pointwise ops. `amax`, `amin` and
//! `linalg_vector_norm` are explicit (their derivatives.yaml formulas split the gradient
//! among ties and give 0 at a zero norm, as PyTorch's do); the rest are implicit composites.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Scalar, Tensor};
use kiln_kernels::layout::wrap_dim;

/// The dims a reduction over `dim` covers (every dim when empty), wrapped and distinct.
pub(crate) fn reduction_dims(op: &str, t: &Tensor, dim: &[i64]) -> Result<Vec<usize>> {
    let nd = t.dim();
    if dim.is_empty() {
        return Ok((0..nd).collect());
    }
    check_dim_bitset(op, nd)?;
    let mut out = Vec::with_capacity(dim.len());
    for &d in dim {
        let w = wrap_dim(d, nd).map_err(|m| Error::op(op, m))?;
        if out.contains(&w) {
            return Err(Error::op(
                op,
                format!("dim {w} appears multiple times in the list of dims"),
            ));
        }
        out.push(w);
    }
    Ok(out)
}

/// ATen's `dim_list_to_bitset`: a reduction over a list of dims takes tensors of at most 64
/// dims.
pub(crate) fn check_dim_bitset(op: &str, nd: usize) -> Result<()> {
    if nd > 64 {
        return Err(Error::op(
            op,
            "only tensors with up to 64 dims are supported",
        ));
    }
    Ok(())
}

/// `t`'s shape with `dims` removed.
fn without(t: &Tensor, dims: &[usize]) -> Vec<i64> {
    (0..t.dim())
        .filter(|d| !dims.contains(d))
        .map(|d| t.shape()[d] as i64)
        .collect()
}

fn extreme(op: &str, t: &Tensor, dim: &[i64], keepdim: bool, max: bool) -> Result<Tensor> {
    let _no_grad = crate::no_grad(); // the generated wrapper records the derivative
    let dims = reduction_dims(op, t, dim)?;
    if t.dim() == 0 {
        return t.clone_tensor();
    }
    if let Some(&d) = dims.iter().find(|&&d| t.shape()[d] == 0) {
        return Err(Error::op(
            op,
            format!("{op}(): Expected reduction dim {d} to have non-zero size."),
        ));
    }
    let mut r = t.clone();
    for &d in &dims {
        r = if max {
            r.max_dim_with(d as i64, true)?.0
        } else {
            r.min_dim_with(d as i64, true)?.0
        };
    }
    if keepdim {
        Ok(r)
    } else {
        r.reshape(without(t, &dims))
    }
}

/// `amax(dim, keepdim)`: the maximum over `dim` (every dim when empty).
pub fn amax(t: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    extreme("amax", t, dim, keepdim, true)
}

/// `amin(dim, keepdim)`: the minimum over `dim` (every dim when empty).
pub fn amin(t: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    extreme("amin", t, dim, keepdim, false)
}

/// `aminmax(dim, keepdim)`: `(amin, amax)` over one dim or all.
pub fn aminmax(t: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let dims: Vec<i64> = dim.into_iter().collect();
    if !dims.is_empty() {
        check_dim_bitset("aminmax", t.dim())?;
    }
    Ok((
        crate::amin_with(t, &dims, keepdim)?,
        crate::amax_with(t, &dims, keepdim)?,
    ))
}

/// `nansum(dim, keepdim, dtype)`: `sum` with NaNs counted as 0.
pub fn nansum(
    t: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let x = if t.dtype().is_floating_point() {
        t.zeros_like()?.where_cond(&t.isnan()?, t)?
    } else {
        t.clone()
    };
    crate::sum_dim_with(&x, dim.unwrap_or(&[]), keepdim, dtype)
}

/// `nanmean(dim, keepdim, dtype)`: the mean of the non-NaN elements.
pub fn nanmean(
    t: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    if !t.dtype().is_floating_point() {
        return Err(Error::op(
            "nanmean",
            format!(
                "nanmean(): expected input to have floating point or complex dtype but got {}",
                t.dtype().scalar_type_name()
            ),
        ));
    }
    let dims = dim.unwrap_or(&[]);
    let count = crate::sum_dim_with(&t.isnan()?.logical_not()?, dims, keepdim, None)?;
    nansum(t, dim, keepdim, dtype)?.div(&count)
}

/// `count_nonzero(dim)`: the number of nonzero elements over `dim` (every dim when empty).
pub fn count_nonzero_dims(t: &Tensor, dim: &[i64]) -> Result<Tensor> {
    reduction_dims("count_nonzero", t, dim)?;
    crate::sum_dim_with(&t.ne_scalar(0)?, dim, false, None)
}

/// `count_nonzero(dim)`: over one dim, or all.
pub fn count_nonzero(t: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    let dims: Vec<i64> = dim.into_iter().collect();
    count_nonzero_dims(t, &dims)
}

/// `var_mean(dim, correction, keepdim)`: `(var, mean)` in one call.
pub fn var_mean(
    t: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let v = crate::var_with(t, dim, correction, keepdim)?;
    let m = crate::mean_dim_with(t, dim.unwrap_or(&[]), keepdim, None)?;
    Ok((v, m))
}

/// `std_mean(dim, correction, keepdim)`: `(std, mean)` in one call.
pub fn std_mean(
    t: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    let s = crate::std_with(t, dim, correction, keepdim)?;
    let m = crate::mean_dim_with(t, dim.unwrap_or(&[]), keepdim, None)?;
    Ok((s, m))
}

/// `linalg.vector_norm(ord, dim, keepdim, dtype)`: `(Σ|x|^ord)^(1/ord)` over `dim` (every dim
/// when None); `ord = ±inf` is the largest / smallest `|x|`, `ord = 0` counts nonzeros.
/// Half inputs accumulate in float32.
pub fn linalg_vector_norm(
    t: &Tensor,
    ord: Scalar,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<DType>,
) -> Result<Tensor> {
    let op = "linalg_vector_norm";
    let _no_grad = crate::no_grad(); // the generated wrapper records the derivative
    if !t.dtype().is_floating_point() {
        return Err(Error::op(
            op,
            format!(
                "linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
                t.dtype().scalar_type_name()
            ),
        ));
    }
    let out_dtype = dtype.unwrap_or(t.dtype());
    let x = match out_dtype {
        DType::F16 | DType::BF16 => t.to_dtype(DType::F32)?,
        d => t.to_dtype(d)?,
    };
    let dims = dim.unwrap_or(&[]);
    reduction_dims(op, t, dims)?;
    let a = x.abs()?;
    let p = ord.to::<f64>();
    let r = if p.is_infinite() {
        if t.numel() == 0 {
            return Err(Error::op(
                op,
                "linalg.vector_norm cannot compute the inf norm on an empty tensor because the operation does not have an identity",
            ));
        }
        if p > 0.0 {
            amax(&a, dims, keepdim)?
        } else {
            amin(&a, dims, keepdim)?
        }
    } else if p == 0.0 {
        crate::sum_dim_with(&a.ne_scalar(0)?, dims, keepdim, None)?.to_dtype(a.dtype())?
    } else if p == 1.0 {
        crate::sum_dim_with(&a, dims, keepdim, None)?
    } else if p == 2.0 {
        crate::sum_dim_with(&a.mul(&a)?, dims, keepdim, None)?.sqrt()?
    } else {
        crate::sum_dim_with(&a.pow_scalar(p)?, dims, keepdim, None)?.pow_scalar(1.0 / p)?
    };
    r.to_dtype(out_dtype)
}

/// `norm(p)`: the `p`-norm of all elements.
pub fn norm(t: &Tensor, p: Scalar) -> Result<Tensor> {
    crate::linalg_vector_norm_with(t, p, None, false, None)
}

/// `norm(p, dim, keepdim)`: the `p`-norm (2 when None) over `dim`.
pub fn norm_dim(t: &Tensor, p: Option<Scalar>, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    crate::linalg_vector_norm_with(t, p.unwrap_or(Scalar::Int(2)), Some(dim), keepdim, None)
}

/// Backward of `amax`/`amin`: the gradient split evenly among the elements equal to the
/// extreme.
pub fn extreme_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<Tensor> {
    let dims = reduction_dims("amax_backward", self_, dim)?;
    let (g, r) = kept(grad, result, &dims, keepdim)?;
    let hits = self_.eq(&r)?.to_dtype(grad.dtype())?;
    let count = crate::sum_dim_with(&hits, &i64s(&dims), true, None)?;
    g.mul(&hits)?.div(&count)
}

/// `grad` and `result` with the reduced dims put back as size 1.
fn kept(grad: &Tensor, result: &Tensor, dims: &[usize], keepdim: bool) -> Result<(Tensor, Tensor)> {
    if keepdim {
        return Ok((grad.clone(), result.clone()));
    }
    let (mut g, mut r) = (grad.clone(), result.clone());
    let mut sorted = dims.to_vec();
    sorted.sort_unstable();
    for &d in &sorted {
        g = g.unsqueeze(d as i64)?;
        r = r.unsqueeze(d as i64)?;
    }
    Ok((g, r))
}

/// Backward of `linalg_vector_norm`: `sign(x) |x|^(p-1) / norm^(p-1)` times the gradient,
/// 0 where the norm is 0; for ±inf the extreme's rule with signs; 0 for `ord = 0`.
pub fn norm_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    ord: Scalar,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let dims = reduction_dims("linalg_vector_norm_backward", self_, dim.unwrap_or(&[]))?;
    let (g, r) = kept(grad, result, &dims, keepdim)?;
    let (g, r) = (g.to_dtype(self_.dtype())?, r.to_dtype(self_.dtype())?);
    let p = ord.to::<f64>();
    let x = self_;
    let scale = if p == 0.0 {
        return x.zeros_like();
    } else if p.is_infinite() {
        let hits = x.abs()?.eq(&r)?.to_dtype(x.dtype())?;
        let count = crate::sum_dim_with(&hits, &i64s(&dims), true, None)?;
        x.sign()?.mul(&hits)?.div(&count)?
    } else if p == 1.0 {
        x.sign()?
    } else if p == 2.0 {
        x.div(&r)?
    } else {
        x.sign()?
            .mul(&x.abs()?.pow_scalar(p - 1.0)?)?
            .div(&r.pow_scalar(p - 1.0)?)?
    };
    let zero = r.eq_scalar(0)?;
    let scale = scale.zeros_like()?.where_cond(&zero, &scale)?;
    scale.mul(&g)
}
