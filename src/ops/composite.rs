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
            a.unsqueeze(0)?.mm(&b.unsqueeze(1)?)?.reshape(())
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
            // Broadcasting two (expanded) batches can give more matrices than an int64 counts.
            let nb = kiln_kernels::layout::checked_numel(&batch)
                .filter(|&nb| i64::try_from(nb).is_ok())
                .ok_or_else(|| batch_overflow(&batch, a, b))?;
            let mut ea = i64s(&batch);
            ea.extend([n as i64, k as i64]);
            let mut eb = i64s(&batch);
            eb.extend([k2 as i64, m as i64]);
            let a3 = a2.expand(&ea)?.reshape([nb as i64, n as i64, k as i64])?;
            let b3 = b2.expand(&eb)?.reshape([nb as i64, k as i64, m as i64])?;
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

fn batch_overflow(batch: &[usize], a: &Tensor, b: &Tensor) -> Error {
    Error::op(
        "matmul",
        format!(
            "the broadcast batch {batch:?} of {:?} and {:?} overflows int64 (numel: integer multiplication overflow)",
            a.shape(),
            b.shape()
        ),
    )
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
    if size.iter().any(|&s| s < 0)
        || kiln_kernels::layout::broadcast_shapes(&target, t.shape())
            .ok()
            .as_deref()
            != Some(t.shape())
    {
        return Err(Error::op(
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
        return t.reshape([1]);
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
        Err(Error::op(
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

// ---------------------------------------------------------------------------------------
// Shapes and products
// ---------------------------------------------------------------------------------------

/// `tril`/`triu`: keep element `(i, j)` of each trailing matrix when `j - i` is at most
/// (`lower`) or at least `diagonal`.
fn triangle(op: &str, t: &Tensor, diagonal: i64, lower: bool) -> Result<Tensor> {
    if t.dim() < 2 {
        return Err(Error::op(
            op,
            format!("{op}: input tensor must have at least 2 dimensions"),
        ));
    }
    let (r, c) = (t.shape()[t.dim() - 2], t.shape()[t.dim() - 1]);
    let rows = Tensor::arange(0, r as i64, 1, DType::I64)?.reshape([r as i64, 1])?;
    let cols = Tensor::arange(0, c as i64, 1, DType::I64)?.reshape([1, c as i64])?;
    let offset = cols.sub(&rows)?;
    let keep = if lower {
        offset.le_scalar(diagonal)?
    } else {
        offset.ge_scalar(diagonal)?
    };
    let keep = keep.to_device(t.device())?;
    t.where_cond(&keep, &t.zeros_like()?)
}

/// `tril(diagonal)`: the lower triangle of the last two dims.
pub fn tril(t: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle("tril", t, diagonal, true)
}

/// `triu(diagonal)`: the upper triangle of the last two dims.
pub fn triu(t: &Tensor, diagonal: i64) -> Result<Tensor> {
    triangle("triu", t, diagonal, false)
}

/// `max(other)`: PyTorch's alias of `maximum`.
pub fn max_other(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::maximum(t, other)
}

/// `min(other)`: PyTorch's alias of `minimum`.
pub fn min_other(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    crate::minimum(t, other)
}

/// `expand_as(other)`: `expand(other.shape())`.
pub fn expand_as(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    t.expand(i64s(other.shape()))
}

/// `swapaxes(axis0, axis1)`: NumPy's name for `transpose`.
pub fn swapaxes(t: &Tensor, axis0: i64, axis1: i64) -> Result<Tensor> {
    t.transpose(axis0, axis1)
}

/// `repeat(repeats)`: the tensor tiled `repeats[d]` times along each dim (leading 1s are
/// added when `repeats` is longer), as one expand of an interleaved view and a reshape.
pub fn repeat(t: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    if repeats.len() < t.dim() {
        return Err(Error::op(
            "repeat",
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        ));
    }
    if let Some(r) = repeats.iter().find(|&&r| r < 0) {
        return Err(Error::op(
            "repeat",
            format!("Trying to create tensor with negative dimension {r}: {repeats:?}"),
        ));
    }
    let pad = repeats.len() - t.dim();
    let sizes: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(t.shape().iter().map(|&s| s as i64))
        .collect();
    let paired: Vec<i64> = sizes.iter().flat_map(|&s| [1, s]).collect();
    let expanded: Vec<i64> = repeats
        .iter()
        .zip(&sizes)
        .flat_map(|(&r, &s)| [r, s])
        .collect();
    let out = repeats
        .iter()
        .zip(&sizes)
        .map(|(&r, &s)| r.checked_mul(s))
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| {
            Error::op(
                "repeat",
                format!(
                    "repeats {repeats:?} of a tensor of size {:?} overflow int64 (numel: integer multiplication overflow)",
                    t.shape()
                ),
            )
        })?;
    t.reshape(&paired)?.expand(&expanded)?.reshape(&out)
}

/// `tile(dims)`: `repeat` with `dims` padded with leading 1s to the tensor's rank.
pub fn tile(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let pad = t.dim().saturating_sub(dims.len());
    let full: Vec<i64> = std::iter::repeat_n(1, pad)
        .chain(dims.iter().copied())
        .collect();
    repeat(t, &full)
}

/// `dot(tensor)`: the inner product of two 1-D tensors of one dtype.
pub fn dot(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    if t.dim() != 1 || other.dim() != 1 {
        return Err(Error::op(
            "dot",
            format!(
                "1D tensors expected, but got {}D and {}D tensors",
                t.dim(),
                other.dim()
            ),
        ));
    }
    if t.numel() != other.numel() {
        return Err(Error::op(
            "dot",
            format!(
                "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
                t.numel(),
                other.numel(),
                t.numel(),
                other.numel()
            ),
        ));
    }
    if t.dtype() != other.dtype() {
        return Err(Error::op(
            "dot",
            format!(
                "dot : expected both vectors to have same dtype, but found {} and {}",
                t.dtype().scalar_type_name(),
                other.dtype().scalar_type_name()
            ),
        ));
    }
    t.mul(other)?.sum()
}

/// `outer(vec2)`: `self[i] * vec2[j]`.
pub fn outer(t: &Tensor, vec2: &Tensor) -> Result<Tensor> {
    for (name, v) in [("self", t), ("vec2", vec2)] {
        if v.dim() != 1 {
            return Err(Error::op(
                "outer",
                format!("outer: Expected 1-D argument {name}, but got {}-D", v.dim()),
            ));
        }
    }
    t.unsqueeze(1)?.mul(&vec2.unsqueeze(0)?)
}

/// `addmm(mat1, mat2, beta, alpha)`: `beta * self + alpha * (mat1 @ mat2)`, with `self`
/// broadcast to the product's shape; `beta = 0` ignores `self` (NaN included), as PyTorch.
pub fn addmm(
    t: &Tensor,
    mat1: &Tensor,
    mat2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    let p = mat1.mm(mat2)?;
    let dtype = p.dtype().promote(t.dtype());
    let beta = crate::ops::nn::integral_coefficient("addmm", beta, dtype)?;
    let alpha = crate::ops::nn::integral_coefficient("addmm", alpha, dtype)?;
    let p = if alpha.to::<f64>() == 1.0 {
        p
    } else {
        p.mul_scalar(alpha)?
    };
    let base = t.expand(i64s(p.shape()))?;
    if beta.to::<f64>() == 0.0 {
        return p.add(&base.zeros_like()?);
    }
    p.add(&base.mul_scalar(beta)?)
}
