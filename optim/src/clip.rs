//! Gradient clipping (PyTorch's `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_`).

use kiln_core::{linalg_vector_norm_with, no_grad, stack, DType, Error, Result, Tensor};

/// Scales the gradients of `params` in place so that their total `norm_type`-norm (the norm
/// of all gradients viewed as one vector; `f64::INFINITY` for the max-norm) is at most
/// `max_norm`, and returns that total norm before clipping, as a 0-d tensor (PyTorch's
/// `clip_grad_norm_(parameters, max_norm, norm_type=2.0)`). Parameters without a gradient
/// are skipped; with none at all the result is 0. A tensor passed more than once counts
/// once (PyTorch counts it, and scales its gradient, once per listing).
pub fn clip_grad_norm_(params: &[Tensor], max_norm: f64, norm_type: f64) -> Result<Tensor> {
    clip_grad_norm_with(params, max_norm, norm_type, false)
}

/// [`clip_grad_norm_`] with `error_if_nonfinite`: fail, leaving the gradients alone, when
/// the total norm is NaN or infinite.
pub fn clip_grad_norm_with(
    params: &[Tensor],
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor> {
    let _g = no_grad();
    let mut grads: Vec<Tensor> = Vec::with_capacity(params.len());
    for g in params.iter().filter_map(|p| p.grad()) {
        if !grads.iter().any(|h| h.is_same(&g)) {
            grads.push(g);
        }
    }
    if grads.is_empty() {
        return Tensor::scalar_tensor(0.0, DType::F32);
    }
    let dtype = grads[0].dtype();
    let device = grads[0].device();
    let norms = grads
        .iter()
        .map(|g| {
            linalg_vector_norm_with(g, norm_type, None, false, None)?
                .to_dtype(dtype)?
                .to_device(device)
        })
        .collect::<Result<Vec<_>>>()?;
    let total = linalg_vector_norm_with(&stack(&norms)?, norm_type, None, false, None)?;
    if error_if_nonfinite {
        let t = total
            .to_dtype(DType::F64)?
            .to_device(kiln_core::Device::Cpu)?
            .item::<f64>()?;
        if !t.is_finite() {
            return Err(Error::value(
                "clip_grad_norm_",
                format!("The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`"),
            ));
        }
    }
    let coef = total
        .full_like(max_norm)?
        .div(&total.add_scalar(1e-6)?)?
        .clamp_with(None, Some(1.0.into()))?;
    for g in &grads {
        g.mul_(&coef.to_device(g.device())?.to_dtype(g.dtype())?)?;
    }
    Ok(total)
}

/// Clamps every gradient of `params` into `[-clip_value, clip_value]` in place (PyTorch's
/// `clip_grad_value_`). Parameters without a gradient are skipped.
pub fn clip_grad_value_(params: &[Tensor], clip_value: f64) -> Result<()> {
    let _g = no_grad();
    for g in params.iter().filter_map(|p| p.grad()) {
        g.clamp_with_(Some((-clip_value).into()), Some(clip_value.into()))?;
    }
    Ok(())
}
