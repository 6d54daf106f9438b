//! The fused attention ops on CUDA: the CPU kernel's math from tensor ops (cuBLAS batched
//! products and the softmax kernels), written into the allocated outputs. CUDA's
//! `scaled_dot_product_attention` does not call them; they keep the op whole on every backend.

use crate::ops::attention::{math_forward, saved_grads};
use crate::{Error, Result, Tensor};

fn check_dropout(op: &str, dropout_p: f64) -> Result<()> {
    if dropout_p != 0.0 {
        return Err(Error::value(
            op,
            format!("the flash-attention kernel has no dropout; dropout_p must be 0, but got {dropout_p}"),
        ));
    }
    Ok(())
}

/// `_scaled_dot_product_flash_attention_for_cpu` on CUDA.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention(
    op: &str,
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    dropout_p: f64,
    is_causal: bool,
    attn_mask: Option<&Tensor>,
    scale: Option<f64>,
    output: &Tensor,
    logsumexp: &Tensor,
) -> Result<()> {
    check_dropout(op, dropout_p)?;
    let _plain = crate::no_grad();
    let (out, lse) = math_forward(query, key, value, attn_mask, is_causal, scale)?;
    output.copy_(&out)?;
    logsumexp.copy_(&lse)?;
    Ok(())
}

/// `_scaled_dot_product_flash_attention_for_cpu_backward` on CUDA: from the saved `out`
/// and `logsumexp`, as the CPU kernel (and PyTorch's) compute it.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention_backward(
    op: &str,
    grad_out: &Tensor,
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    out: &Tensor,
    logsumexp: &Tensor,
    dropout_p: f64,
    is_causal: bool,
    attn_mask: Option<&Tensor>,
    scale: Option<f64>,
    grad_query: &Tensor,
    grad_key: &Tensor,
    grad_value: &Tensor,
) -> Result<()> {
    check_dropout(op, dropout_p)?;
    let _plain = crate::no_grad();
    let (dq, dk, dv) = saved_grads(
        grad_out, query, key, value, out, logsumexp, attn_mask, is_causal, scale,
    )?;
    grad_query.copy_(&dq)?;
    grad_key.copy_(&dk)?;
    grad_value.copy_(&dv)?;
    Ok(())
}
