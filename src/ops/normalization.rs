//! Normalization layers as composites: batch, layer, group, instance and RMS norm. The
//! statistics are computed in float32 for half inputs (as PyTorch's kernels accumulate);
//! running statistics are updated in place, outside autograd, as PyTorch does.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Tensor};

/// Half inputs in float32; the dtype to return in.
fn widened(t: &Tensor) -> Result<(Tensor, DType)> {
    match t.dtype() {
        DType::F16 | DType::BF16 => Ok((t.to_dtype(DType::F32)?, t.dtype())),
        d => Ok((t.clone(), d)),
    }
}

fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::op(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ))
    }
}

/// The trailing dims `normalized_shape` names, once `input` is known to end with that shape.
fn trailing_dims(op: &str, input: &Tensor, normalized_shape: &[i64]) -> Result<Vec<i64>> {
    let (k, nd) = (normalized_shape.len(), input.dim());
    if k == 0 || k > nd || i64s(&input.shape()[nd - k..]) != normalized_shape {
        let expected: Vec<String> = normalized_shape.iter().map(|v| v.to_string()).collect();
        return Err(Error::op(
            op,
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{:?}",
                expected.join(", "),
                input.shape()
            ),
        ));
    }
    Ok((nd - k..nd).map(|d| d as i64).collect())
}

/// `[1, C, 1, ...]` view of a per-channel vector for an input of `nd` dims.
fn per_channel(v: &Tensor, nd: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; nd.max(2)];
    shape[1] = -1;
    v.reshape(&shape)
}

fn check_channels(op: &str, name: &str, v: Option<&Tensor>, c: usize) -> Result<()> {
    match v {
        Some(t) if t.numel() != c => Err(Error::op(
            op,
            format!("{name} should contain {c} elements not {}", t.numel()),
        )),
        _ => Ok(()),
    }
}

/// `x * weight + bias`, each optional, shaped by `view`.
fn affine(
    x: Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    view: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let x = match weight {
        Some(w) => x.mul(&view(w)?)?,
        None => x,
    };
    match bias {
        Some(b) => x.add(&view(b)?),
        None => Ok(x),
    }
}

/// Writes `(1 - momentum) * stat + momentum * value` into `stat` (no autograd).
fn update_running(stat: &Tensor, value: &Tensor, momentum: f64) -> Result<()> {
    let _g = crate::no_grad();
    let v = value
        .detach()
        .to_dtype(stat.dtype())?
        .reshape(&i64s(stat.shape()))?;
    let next = stat
        .mul_scalar(1.0 - momentum)?
        .add(&v.mul_scalar(momentum)?)?;
    stat.copy_data_from(&next)
}

/// `batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
/// cudnn_enabled)`: normalizes each channel (dim 1) over the batch and spatial dims. In
/// training the batch statistics are used and the running ones updated (the variance
/// unbiased); in evaluation the running statistics are used.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let _ = cudnn_enabled;
    let op = "batch_norm";
    check_float(op, input)?;
    if input.dim() < 2 {
        return Err(Error::op(
            op,
            format!(
                "batch_norm: expected 2D or higher input (got {}D input)",
                input.dim()
            ),
        ));
    }
    let c = input.shape()[1];
    for (name, v) in [
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ] {
        check_channels(op, name, v, c)?;
    }
    let (x, dtype) = widened(input)?;
    let nd = x.dim();
    let dims: Vec<i64> = (0..nd as i64).filter(|&d| d != 1).collect();
    let (mean, var) = if training {
        let per = input.numel() / c.max(1);
        if per == 1 {
            return Err(Error::op(
                op,
                format!(
                    "Expected more than 1 value per channel when training, got input size {:?}",
                    input.shape()
                ),
            ));
        }
        let mean = crate::mean_dim_with(&x, &dims, true, None)?;
        let var = crate::var_with(&x, Some(&dims), Some(crate::Scalar::Int(0)), true)?;
        if let Some(rm) = running_mean {
            update_running(rm, &mean, momentum)?;
        }
        if let Some(rv) = running_var {
            let unbiased = per as f64 / (per as f64 - 1.0).max(1.0);
            update_running(rv, &var.mul_scalar(unbiased)?, momentum)?;
        }
        (mean, var)
    } else {
        match (running_mean, running_var) {
            (Some(m), Some(v)) => (
                per_channel(&m.to_dtype(x.dtype())?, nd)?,
                per_channel(&v.to_dtype(x.dtype())?, nd)?,
            ),
            _ => {
                return Err(Error::op(
                    op,
                    "running_mean and running_var must be defined in evaluation mode",
                ))
            }
        }
    };
    let y = x.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
    let y = affine(y, weight, bias, |v| {
        per_channel(&v.to_dtype(x.dtype())?, nd)
    })?;
    y.to_dtype(dtype)
}

/// `layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)`: normalizes over
/// the trailing `normalized_shape` dims.
pub fn layer_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    cudnn_enable: bool,
) -> Result<Tensor> {
    let _ = cudnn_enable;
    let op = "layer_norm";
    check_float(op, input)?;
    let dims = trailing_dims(op, input, normalized_shape)?;
    for (name, v) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = v {
            if i64s(t.shape()) != normalized_shape {
                return Err(Error::op(
                    op,
                    format!("Expected {name} to be of same shape as normalized_shape, but got {name} of shape {:?} and normalized_shape = {normalized_shape:?}", t.shape()),
                ));
            }
        }
    }
    let (x, dtype) = widened(input)?;
    let mean = crate::mean_dim_with(&x, &dims, true, None)?;
    let var = crate::var_with(&x, Some(&dims), Some(crate::Scalar::Int(0)), true)?;
    let y = x.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
    affine(y, weight, bias, |v| v.to_dtype(x.dtype()))?.to_dtype(dtype)
}

/// `group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)`: normalizes each group
/// of channels over the group's channels and the spatial dims.
pub fn group_norm(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let _ = cudnn_enabled;
    let op = "group_norm";
    check_float(op, input)?;
    if input.dim() < 2 {
        return Err(Error::op(
            op,
            format!(
                "Expected at least 2 dimensions for input tensor but received {}",
                input.dim()
            ),
        ));
    }
    let (n, c) = (input.shape()[0] as i64, input.shape()[1] as i64);
    if num_groups <= 0 || c % num_groups != 0 {
        return Err(Error::op(
            op,
            format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={num_groups}",
                input.shape()
            ),
        ));
    }
    for (name, v) in [("weight", weight), ("bias", bias)] {
        check_channels(op, name, v, c as usize)?;
    }
    let (x, dtype) = widened(input)?;
    let per_group = (input.numel() as i64 / n.max(1)) / num_groups;
    let g = x.reshape(&[n, num_groups, per_group])?;
    let mean = crate::mean_dim_with(&g, &[2], true, None)?;
    let var = crate::var_with(&g, Some(&[2]), Some(crate::Scalar::Int(0)), true)?;
    let y = g.sub(&mean)?.mul(&var.add_scalar(eps)?.rsqrt()?)?;
    let y = y.reshape(&i64s(input.shape()))?;
    let nd = input.dim();
    affine(y, weight, bias, |v| {
        per_channel(&v.to_dtype(x.dtype())?, nd)
    })?
    .to_dtype(dtype)
}

/// `instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
/// eps, cudnn_enabled)`: batch norm of each sample on its own (the running statistics are
/// updated with the mean over the batch).
#[allow(clippy::too_many_arguments)]
pub fn instance_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    let op = "instance_norm";
    if input.dim() < 3 {
        return Err(Error::op(
            op,
            format!(
                "instance_norm: expected an input with at least 3 dims [N, C, *], got {:?}",
                input.shape()
            ),
        ));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    let mut shape = vec![1i64, (n * c) as i64];
    shape.extend(i64s(&input.shape()[2..]));
    let x = input.reshape(&shape)?;
    let repeat = |v: Option<&Tensor>| -> Result<Option<Tensor>> {
        v.map(|t| t.repeat(&[n as i64])).transpose()
    };
    let (rm, rv) = (repeat(running_mean)?, repeat(running_var)?);
    let y = batch_norm(
        &x,
        None,
        None,
        rm.as_ref(),
        rv.as_ref(),
        use_input_stats,
        momentum,
        eps,
        cudnn_enabled,
    )?;
    // Fold the per-instance running statistics back into the per-channel ones.
    for (stat, rep) in [(running_mean, &rm), (running_var, &rv)] {
        if let (Some(s), Some(r)) = (stat, rep) {
            let _g = crate::no_grad();
            let mean = crate::mean_dim_with(&r.reshape(&[n as i64, c as i64])?, &[0], false, None)?;
            s.copy_data_from(&mean)?;
        }
    }
    let y = y.reshape(&i64s(input.shape()))?;
    let nd = input.dim();
    affine(y, weight, bias, |v| {
        per_channel(&v.to_dtype(input.dtype())?, nd)
    })
}

/// `rms_norm(input, normalized_shape, weight, eps)`: `x / sqrt(mean(x²) + eps) * weight`
/// over the trailing dims; `eps` defaults to the dtype's machine epsilon.
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    let op = "rms_norm";
    check_float(op, input)?;
    let dims = trailing_dims(op, input, normalized_shape)?;
    let eps = eps.unwrap_or(match input.dtype() {
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    });
    let (x, dtype) = widened(input)?;
    let ms = crate::mean_dim_with(&x.mul(&x)?, &dims, true, None)?;
    let y = x.mul(&ms.add_scalar(eps)?.rsqrt()?)?;
    affine(y, weight, None, |v| v.to_dtype(x.dtype()))?.to_dtype(dtype)
}
