//! Attention: `scaled_dot_product_attention`, composed from matmuls, a softmax and dropout.

use crate::ops::dropout::dropout;
use crate::{DType, Error, Result, Tensor};

/// `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
/// enable_gqa)`: `softmax(q kᵀ · scale + mask) v`. A bool mask marks the positions that take
/// part; a float mask is added. With `enable_gqa`, key/value heads are shared by groups of
/// query heads.
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    let op = "scaled_dot_product_attention";
    if query.dim() < 2 || key.dim() < 2 || value.dim() < 2 {
        return Err(Error::shape(
            op,
            "query, key and value must have at least 2 dimensions",
        ));
    }
    if is_causal && attn_mask.is_some() {
        return Err(Error::value(
            op,
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True",
        ));
    }
    let e = query.shape()[query.dim() - 1];
    if key.shape()[key.dim() - 1] != e {
        return Err(Error::shape(
            op,
            format!(
                "Expected query and key to have the same embedding size, but got {:?} and {:?}",
                query.shape(),
                key.shape()
            ),
        ));
    }
    let (mut k, mut v) = (key.clone(), value.clone());
    if enable_gqa && query.dim() >= 3 && key.dim() >= 3 {
        let (hq, hk) = (query.shape()[query.dim() - 3], key.shape()[key.dim() - 3]);
        if hk == 0 || hq % hk != 0 {
            return Err(Error::shape(
                op,
                format!(
                    "number of query heads ({hq}) must be a multiple of key/value heads ({hk})"
                ),
            ));
        }
        let rep = (hq / hk) as i64;
        k = k.repeat_interleave_with(rep, Some(-3), None)?;
        v = v.repeat_interleave_with(rep, Some(-3), None)?;
    }
    let s = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let mut scores = query.matmul(&k.transpose(-2, -1)?)?.mul_scalar(s)?;
    let (l, sl) = (
        scores.shape()[scores.dim() - 2],
        scores.shape()[scores.dim() - 1],
    );
    let neg_inf = |like: &Tensor| -> Result<Tensor> {
        Tensor::full_on((), f64::NEG_INFINITY, like.dtype(), like.device())
    };
    if is_causal {
        let keep = Tensor::ones([l, sl], DType::Bool)?
            .tril()?
            .to_device(scores.device())?;
        scores = scores.where_cond(&keep, &neg_inf(&scores)?)?;
    }
    if let Some(m) = attn_mask {
        scores = if m.dtype() == DType::Bool {
            scores.where_cond(m, &neg_inf(&scores)?)?
        } else {
            scores.add(m)?
        };
    }
    let mut w = scores.softmax(-1)?;
    if dropout_p > 0.0 {
        w = dropout(&w, dropout_p, true)?;
    }
    w.matmul(&v)
}
