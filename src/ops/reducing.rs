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
            return Err(Error::shape(
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
        return Err(Error::shape(
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
        return Err(Error::index(
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
        return Err(Error::dtype(
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
        return Err(Error::dtype(
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
            return Err(Error::shape(
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

fn mean_check(t: &Tensor, dtype: Option<DType>) -> Result<()> {
    let d = dtype.unwrap_or(t.dtype());
    if !d.is_floating_point() {
        return Err(Error::dtype(
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

/// `sum_to_size(size)`: sums broadcast dims away so the result has `size`.
pub fn sum_to_size(t: &Tensor, size: &[i64]) -> Result<Tensor> {
    let target: Vec<usize> = size.iter().map(|&s| s.max(0) as usize).collect();
    if size.iter().any(|&s| s < 0)
        || kiln_kernels::layout::broadcast_shapes(&target, t.shape())
            .ok()
            .as_deref()
            != Some(t.shape())
    {
        return Err(Error::shape(
            "sum_to_size",
            format!("size {size:?} is not expandable to size {:?}", t.shape()),
        ));
    }
    if target.is_empty() {
        // ATen's `sum_to` sums everything for an empty size, even a 0-d tensor (so integers
        // and bool come back int64, like `sum()`).
        return t.sum();
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

// ---------------------------------------------------------------------------------------
// Reductions built from sum and max
// ---------------------------------------------------------------------------------------

/// The number of elements each output of a reduction over `dims` (all when empty) reads.
fn reduced_count(op: &str, t: &Tensor, dims: &[i64]) -> Result<usize> {
    if dims.is_empty() {
        return Ok(t.numel());
    }
    // Distinct dims (PyTorch's error for a repeated one), so a non-empty tensor's product is
    // at most its numel. An empty tensor's other dims may multiply past usize: saturate (the
    // count is then 0 if a reduced dim is, and otherwise no output element uses it).
    let dims = crate::ops::reducing::reduction_dims(op, t, dims)?;
    Ok(dims
        .iter()
        .map(|&w| if t.dim() == 0 { 1 } else { t.shape()[w] })
        .fold(1usize, |n, s| n.saturating_mul(s)))
}

/// Half-precision inputs are reduced in float32 and cast back, as PyTorch's reduction
/// kernels accumulate them.
fn widened(t: &Tensor) -> Result<(Tensor, Option<DType>)> {
    match t.dtype() {
        DType::F16 | DType::BF16 => Ok((t.to_dtype(DType::F32)?, Some(t.dtype()))),
        _ => Ok((t.clone(), None)),
    }
}

fn narrowed(t: Tensor, back: Option<DType>) -> Result<Tensor> {
    match back {
        Some(d) => t.to_dtype(d),
        None => Ok(t),
    }
}

/// PyTorch's dtype check shared by `var` and `std`.
fn check_std_var(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            "std and var only support floating point and complex dtypes",
        ))
    }
}

/// `var(dim, correction, keepdim)`: the mean squared deviation, divided by
/// `max(N - correction, 0)` (correction defaults to 1, Bessel's).
pub fn var(
    t: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    check_std_var("var", t)?;
    let dims = dim.unwrap_or(&[]);
    let n = reduced_count("var", t, dims)? as f64;
    let (x, back) = widened(t)?;
    let mean = crate::mean_dim_with(&x, dims, true, None)?;
    let dev = x.sub(&mean)?;
    let squares = crate::sum_dim_with(&dev.mul(&dev)?, dims, keepdim, None)?;
    let c = correction.map_or(1.0, |c| c.to::<f64>());
    narrowed(squares.div_scalar((n - c).max(0.0))?, back)
}

/// `std(dim, correction, keepdim)`: the square root of [`var`].
pub fn std(
    t: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    check_std_var("std", t)?;
    let (x, back) = widened(t)?;
    narrowed(var(&x, dim, correction, keepdim)?.sqrt()?, back)
}

/// `logsumexp(dim, keepdim)`: `m + log(sum(exp(x - m)))` with `m` the (detached) maximum
/// over `dim`, so large values do not overflow; an infinite maximum is replaced by 0 as in
/// PyTorch. Integers are promoted to the default float dtype.
pub fn logsumexp(t: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = if t.dtype().is_floating_point() {
        t.clone()
    } else {
        t.to_dtype(DType::F32)?
    };
    let (x, back) = widened(&x)?;
    if x.numel() == 0 {
        let s = crate::sum_dim_with(&x.exp()?, dim, keepdim, None)?;
        return narrowed(s.log()?, back);
    }
    let mut m = x.detach();
    for &d in dim {
        m = m.max_dim_with(d, true)?.0;
    }
    if dim.is_empty() {
        m = m.max()?;
    }
    let m = m.where_cond(&m.isinf()?.logical_not()?, &m.zeros_like()?)?;
    let s = crate::sum_dim_with(&x.sub(&m)?.exp()?, dim, true, None)?;
    let r = s.log()?.add(&m)?;
    let r = if keepdim {
        r
    } else {
        r.reshape(crate::ops::backward::i64s(&reduced_shape(t, dim)))?
    };
    narrowed(r, back)
}

/// The shape of a reduction over `dims` (all when empty) without kept dims.
fn reduced_shape(t: &Tensor, dims: &[i64]) -> Vec<usize> {
    let nd = t.dim();
    let wrapped: Vec<usize> = dims
        .iter()
        .filter_map(|&d| kiln_kernels::layout::wrap_dim(d, nd).ok())
        .collect();
    (0..nd)
        .filter(|d| !dims.is_empty() && !wrapped.contains(d))
        .map(|d| t.shape()[d])
        .collect()
}

/// `all`/`any` answer in bool, or in uint8 for a uint8 input, as PyTorch.
fn truth_like(t: &Tensor, r: Tensor) -> Result<Tensor> {
    if t.dtype() == DType::U8 {
        r.to_dtype(DType::U8)
    } else {
        Ok(r)
    }
}

/// `all()`: whether every element is nonzero.
pub fn all(t: &Tensor) -> Result<Tensor> {
    truth_like(t, t.eq_scalar(0)?.sum()?.eq_scalar(0)?)
}

/// `any()`: whether some element is nonzero.
pub fn any(t: &Tensor) -> Result<Tensor> {
    truth_like(t, t.ne_scalar(0)?.sum()?.gt_scalar(0)?)
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
