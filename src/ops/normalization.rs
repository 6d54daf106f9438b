//! Normalization layers. The public composites (`batch_norm`, `layer_norm`, `group_norm`,
//! `instance_norm`, `rms_norm`) check their arguments with PyTorch's messages and call the
//! fused kernels of `native_batch_norm`, `native_layer_norm`, `native_group_norm` and
//! `_fused_rms_norm` (kernels/src/cpu/norm.rs, kernels/cuda/norm.cu.j2), which compute in
//! float32 for half inputs. `native_batch_norm` updates the running statistics in place,
//! outside autograd, as PyTorch does. Their gradient formulas are in `backward/normalization.rs`.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Tensor};

/// The product of `sizes`, saturating (an empty tensor may have huge other dims).
pub(crate) fn prod(sizes: &[usize]) -> usize {
    sizes.iter().fold(1usize, |a, &b| a.saturating_mul(b))
}

fn check_float(op: &str, t: &Tensor) -> Result<()> {
    if t.dtype().is_floating_point() {
        Ok(())
    } else {
        Err(Error::dtype(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ))
    }
}

/// Checks that `input` ends with `normalized_shape`.
fn trailing_dims(op: &str, input: &Tensor, normalized_shape: &[i64]) -> Result<()> {
    let (k, nd) = (normalized_shape.len(), input.dim());
    if k == 0 || k > nd || i64s(&input.shape()[nd - k..]) != normalized_shape {
        let expected: Vec<String> = normalized_shape.iter().map(|v| v.to_string()).collect();
        return Err(Error::shape(
            op,
            format!(
                "Given normalized_shape={normalized_shape:?}, expected input with shape [*, {}], but got input of size{:?}",
                expected.join(", "),
                input.shape()
            ),
        ));
    }
    Ok(())
}

fn check_channels(op: &str, name: &str, v: Option<&Tensor>, c: usize) -> Result<()> {
    match v {
        Some(t) if t.numel() != c => Err(Error::shape(
            op,
            format!("{name} should contain {c} elements not {}", t.numel()),
        )),
        _ => Ok(()),
    }
}

/// Locks serialising running-statistic updates, picked by the statistic's storage: a
/// read-modify-write of one statistic by two threads (a BatchNorm shared between them) must
/// not lose either update. Only the small `[C]` update runs under the lock, and no code
/// takes two of these at once.
static STAT_LOCKS: [std::sync::Mutex<()>; 64] = [const { std::sync::Mutex::new(()) }; 64];

/// `stat = (1 - momentum) * stat + momentum * batch` in place, outside autograd, with
/// the kernel's arithmetic (in `batch`'s dtype, the opmath one: `1 - momentum` rounded
/// there, then the two products rounded and added), atomic with respect to other updates of
/// `stat`. The write leaves `stat`'s version alone, as PyTorch's kernel does (autograd may
/// have saved it).
fn update_stat(stat: &Tensor, batch: &Tensor, momentum: f64) -> Result<()> {
    let _g = crate::no_grad();
    let dt = batch.dtype();
    let keep = if dt == DType::F64 {
        1.0 - momentum
    } else {
        (1.0f32 - momentum as f32) as f64
    };
    let batch = batch.detach().reshape(i64s(stat.shape()))?;
    let key = std::sync::Arc::as_ptr(stat.storage()) as usize;
    let lock = &STAT_LOCKS[(key >> 6) % STAT_LOCKS.len()];
    let _held = lock.lock().unwrap_or_else(|e| e.into_inner());
    let new = stat
        .to_dtype(dt)?
        .mul_scalar(keep)?
        .add_with(&batch, momentum)?;
    stat.copy_data_from(&new)
}

/// `batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
/// cudnn_enabled)`: normalizes each channel (dim 1) over the batch and spatial dims. In
/// training the batch statistics are used and the running ones updated (the variance
/// unbiased); in evaluation the running statistics are used. `native_batch_norm` computes it.
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
    if input.numel() == 0 {
        // PyTorch returns a copy (not a view, not a fresh empty tensor, so the graph stays
        // connected) times `weight[0]` plus `bias[0]`, before any other check; the running
        // statistics are left alone.
        let mut out = input.clone_tensor()?;
        if let Some(w) = weight {
            out = out.mul(&w.select(0, 0)?)?;
        }
        if let Some(b) = bias {
            out = out.add(&b.select(0, 0)?)?;
        }
        return Ok(out);
    }
    check_float(op, input)?;
    if input.dim() < 2 {
        return Err(Error::shape(
            op,
            format!("expected 2D or higher input (got {}D input)", input.dim()),
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
    if training && input.numel() / c.max(1) == 1 {
        return Err(Error::shape(
            op,
            format!(
                "Expected more than 1 value per channel when training, got input size {:?}",
                input.shape()
            ),
        ));
    }
    if !training && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::value(
            op,
            "running_mean and running_var must be defined in evaluation mode",
        ));
    }
    let (y, _, _) = crate::native_batch_norm(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    Ok(y)
}

/// `native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum,
/// eps) -> (out, save_mean, save_invstd)`: batch norm by the fused kernel of
/// `_native_batch_norm_legit_functional`; in training the running statistics it returns are
/// written into `running_mean` / `running_var` in place (no autograd), as PyTorch's kernel
/// updates them. `save_mean` / `save_invstd` are the batch's (opmath dtype, `[C]`) in
/// training and `[0]` in evaluation.
#[allow(clippy::too_many_arguments)]
pub fn native_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    // In training the kernel is given zeros for the running statistics and momentum 1, so
    // the "new running statistics" it returns are exactly the batch mean and unbiased
    // variance (`0 * 0 + 1 * batch`); `update_stat` then folds them into the real ones in
    // one locked step. (Handing the kernel the real statistics and writing its result back
    // would drop an update another thread made in between.)
    let fresh = |t: Option<&Tensor>| t.map(|t| t.zeros_like()).transpose();
    let (zero_mean, zero_var) = if training {
        (fresh(running_mean)?, fresh(running_var)?)
    } else {
        (None, None)
    };
    let (rm, rv, m) = if training {
        (zero_mean.as_ref(), zero_var.as_ref(), 1.0)
    } else {
        (running_mean, running_var, momentum)
    };
    let (out, save_mean, save_invstd, batch_mean, batch_var) = {
        let _g = crate::no_grad();
        crate::_native_batch_norm_legit_functional(input, weight, bias, rm, rv, training, m, eps)?
    };
    // An empty batch leaves the running statistics as they are (the kernel's rule).
    if training && input.numel() > 0 {
        for (stat, value) in [(running_mean, &batch_mean), (running_var, &batch_var)] {
            if let Some(s) = stat {
                update_stat(s, value, momentum)?;
            }
        }
    }
    Ok((out, save_mean, save_invstd))
}

/// `layer_norm(input, normalized_shape, weight, bias, eps, cudnn_enable)`: normalizes over
/// the trailing `normalized_shape` dims (`native_layer_norm`).
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
    trailing_dims(op, input, normalized_shape)?;
    for (name, v) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = v {
            if i64s(t.shape()) != normalized_shape {
                return Err(Error::shape(
                    op,
                    format!("Expected {name} to be of same shape as normalized_shape, but got {name} of shape {:?} and normalized_shape = {normalized_shape:?}", t.shape()),
                ));
            }
        }
    }
    let (y, _, _) = crate::native_layer_norm(input, normalized_shape, weight, bias, eps)?;
    Ok(y)
}

/// `group_norm(input, num_groups, weight, bias, eps, cudnn_enabled)`: normalizes each group
/// of channels over the group's channels and the spatial dims (`native_group_norm`).
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
        return Err(Error::shape(
            op,
            format!(
                "Expected at least 2 dimensions for input tensor but received {}",
                input.dim()
            ),
        ));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    if c == 0 {
        return Err(Error::shape(
            op,
            "Expected number of channels to be greater than 0, got 0",
        ));
    }
    if num_groups <= 0 {
        return Err(Error::value(
            op,
            format!("Expected num groups to be greater than 0, got {num_groups}"),
        ));
    }
    if c as i64 % num_groups != 0 {
        return Err(Error::shape(
            op,
            format!(
                "Expected number of channels in input to be divisible by num_groups, but got input of shape {:?} and num_groups={num_groups}",
                input.shape()
            ),
        ));
    }
    for (name, v) in [("weight", weight), ("bias", bias)] {
        check_channels(op, name, v, c)?;
    }
    let hxw = prod(&input.shape()[2..]);
    if hxw == 0 {
        return Err(Error::shape(op, "Expected HxW to be greater than 0, got 0"));
    }
    // Any C-element parameter shape is accepted here, as before; the kernel takes vectors.
    let flat = |v: Option<&Tensor>| v.map(|t| t.reshape([-1])).transpose();
    let (w, b) = (flat(weight)?, flat(bias)?);
    let (y, _, _) = crate::native_group_norm(
        input,
        w.as_ref(),
        b.as_ref(),
        n as i64,
        c as i64,
        hxw as i64,
        num_groups,
        eps,
    )?;
    Ok(y)
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
        return Err(Error::shape(
            op,
            format!(
                "expected an input with at least 3 dims [N, C, *], got {:?}",
                input.shape()
            ),
        ));
    }
    let (n, c) = (input.shape()[0], input.shape()[1]);
    let mut shape = vec![1i64, n.saturating_mul(c) as i64];
    shape.extend(i64s(&input.shape()[2..]));
    let x = input.reshape(&shape)?;
    let repeat = |v: Option<&Tensor>| -> Result<Option<Tensor>> {
        v.map(|t| t.repeat([n as i64])).transpose()
    };
    let (rm, rv) = (repeat(running_mean)?, repeat(running_var)?);
    // As PyTorch: the affine parameters repeated per instance go into the one batch norm
    // (a half input is then rounded once, not again after a separate scale and shift).
    let (w, b) = (repeat(weight)?, repeat(bias)?);
    let y = batch_norm(
        &x,
        w.as_ref(),
        b.as_ref(),
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
            let mean = crate::mean_dim_with(&r.reshape([n as i64, c as i64])?, &[0], false, None)?;
            s.copy_data_from(&mean)?;
        }
    }
    y.reshape(i64s(input.shape()))
}

/// `rms_norm(input, normalized_shape, weight, eps)`: `x / sqrt(mean(x²) + eps) * weight`
/// over the trailing dims (`_fused_rms_norm`); `eps` defaults to the input dtype's machine
/// epsilon.
pub fn rms_norm(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    eps: Option<f64>,
) -> Result<Tensor> {
    let op = "rms_norm";
    check_float(op, input)?;
    trailing_dims(op, input, normalized_shape)?;
    let eps = eps.unwrap_or(match input.dtype() {
        DType::F16 => 0.0009765625,
        DType::BF16 => 0.0078125,
        DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    });
    let (y, _) = crate::_fused_rms_norm(input, normalized_shape, weight, Some(eps))?;
    Ok(y)
}
