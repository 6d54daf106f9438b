//! Gradients of the fused attention kernel (`_scaled_dot_product_flash_attention_for_cpu`).

use super::normalization::{grad_at, Grads3, Grads4};
use crate::ops::attention::math_grads;
use crate::{Error, Result, Tensor};

/// The query, key and value gradients: the backward kernel for an output gradient alone;
/// under `create_graph`, or with a gradient of the logsumexp, the same math from
/// differentiable tensor ops.
#[allow(clippy::too_many_arguments)]
pub(crate) fn flash_attention_grads(
    grads: &[Option<Tensor>],
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    output: &Tensor,
    logsumexp: &Tensor,
    is_causal: bool,
    attn_mask: Option<&Tensor>,
    scale: Option<f64>,
) -> Result<Grads3> {
    let (g, g_lse) = (grad_at(grads, 0), grad_at(grads, 1));
    if g.is_none() && g_lse.is_none() {
        return Ok((None, None, None));
    }
    let (dq, dk, dv) = match g {
        Some(g) if g_lse.is_none() && !crate::autograd::is_grad_enabled() => {
            crate::_scaled_dot_product_flash_attention_for_cpu_backward_with(
                g, query, key, value, output, logsumexp, 0.0, is_causal, attn_mask, scale,
            )?
        }
        _ => math_grads(g, g_lse, query, key, value, attn_mask, is_causal, scale)?,
    };
    Ok((Some(dq), Some(dk), Some(dv)))
}

/// The backward kernel has no derivative of its own, as in PyTorch: a double backward
/// through attention recomputes from tensor ops instead (see [`flash_attention_grads`]).
pub(crate) fn flash_attention_double_backward() -> Result<Grads4> {
    Err(Error::not_implemented(
        "_scaled_dot_product_flash_attention_for_cpu_backward",
        "the derivative for '_scaled_dot_product_flash_attention_for_cpu_backward' is not implemented (a double backward through scaled_dot_product_attention recomputes from tensor ops instead)",
    ))
}
