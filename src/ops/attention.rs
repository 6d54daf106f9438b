//! Attention: `scaled_dot_product_attention`. On the CPU without dropout it is the fused
//! kernel (`_scaled_dot_product_flash_attention_for_cpu`, kernels/src/cpu/attention.rs);
//! otherwise it is composed from matmuls, a softmax and dropout in the opmath dtype. The
//! tensor-op form of the fused kernel's math ([`math_forward`], [`math_grads`]) also serves
//! its CUDA entry and its double backward.

use crate::dispatch::launch::opmath_dtype as opmath;
use crate::ops::dropout::dropout;
use crate::{DType, Error, Result, Tensor};

/// `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
/// enable_gqa)`: `softmax(q kᵀ · scale + mask) v`. A bool mask marks the positions that take
/// part; a float mask is added. A query row with every position masked gives zeros, as in
/// PyTorch. With `enable_gqa`, key/value heads are shared by groups of query heads.
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
    let (dq, dk, dv) = (query.dtype(), key.dtype(), value.dtype());
    if dq != dk || dq != dv {
        return Err(Error::dtype(
            op,
            format!(
                "Expected query, key, and value to have the same dtype, but got query.dtype: {} key.dtype: {} and value.dtype: {} instead.",
                dq.scalar_type_name(),
                dk.scalar_type_name(),
                dv.scalar_type_name()
            ),
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
    let floating = dq.is_floating_point();
    // The fused kernel has no dropout and gives no gradient to the mask (PyTorch's CPU
    // flash-attention conditions).
    let mask_grad =
        attn_mask.is_some_and(|m| m.requires_grad() && crate::autograd::is_grad_enabled());
    if query.device() == crate::Device::Cpu && floating && dropout_p == 0.0 && !mask_grad {
        return fused(query, &k, &v, attn_mask, is_causal, scale);
    }
    // The composite path computes in the opmath dtype and rounds once.
    let half = matches!(dq, DType::F16 | DType::BF16);
    let wide = |t: &Tensor| {
        if half {
            t.to_dtype(DType::F32)
        } else {
            Ok(t.clone())
        }
    };
    let mask = attn_mask
        .map(|m| additive_mask(m, opmath(dq)))
        .transpose()?;
    let s = scores(&wide(query)?, &wide(&k)?, mask.as_ref(), is_causal, scale)?;
    let mut w = safe_softmax(&s)?;
    if dropout_p > 0.0 {
        w = dropout(&w, dropout_p, true)?;
    }
    let out = w.matmul(&wide(&v)?)?;
    if half {
        out.to_dtype(dq)
    } else {
        Ok(out)
    }
}

/// A mask as an additive float mask in `dtype`: a bool mask's `false` is `-inf`.
fn additive_mask(m: &Tensor, dtype: DType) -> Result<Tensor> {
    if m.dtype() == DType::Bool {
        let z = Tensor::full_on((), 0.0, dtype, m.device())?;
        return z.masked_fill(&m.logical_not()?, f64::NEG_INFINITY);
    }
    m.to_dtype(dtype)
}

/// The fused kernel over `[B, H, L, E]` views: the batch dims of query, key, value (and the
/// mask) broadcast, then fold into two.
fn fused(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    let split = |t: &Tensor| {
        let s = t.shape();
        (s[..s.len() - 2].to_vec(), [s[s.len() - 2], s[s.len() - 1]])
    };
    let (bq, [l, e]) = split(query);
    let (bk, [sl, _]) = split(key);
    let (bv, [_, ev]) = split(value);
    let op = "scaled_dot_product_attention";
    let broadcast = |a: &[usize], b: &[usize]| {
        kiln_kernels::layout::broadcast_shapes(a, b)
            .map(|d| d.to_vec())
            .map_err(|_| {
                Error::shape(
                    op,
                    format!(
                        "the batch dims of query {:?}, key {:?} and value {:?} do not broadcast",
                        query.shape(),
                        key.shape(),
                        value.shape()
                    ),
                )
            })
    };
    // A mask's own batch dims broadcast too, as they would against the scores.
    let bm = attn_mask.map_or(vec![], |m| m.shape()[..m.dim().saturating_sub(2)].to_vec());
    let batch = broadcast(&broadcast(&broadcast(&bq, &bk)?, &bv)?, &bm)?;
    let to4 = |t: &Tensor, tail: [usize; 2]| -> Result<Tensor> {
        let mut full = batch.clone();
        full.extend(tail);
        let t = t.expand(full.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
        let [a, b] = tail.map(|d| d as i64);
        match batch.len() {
            0 => t.reshape([1, 1, a, b]),
            1 => t.unsqueeze(1),
            2 => Ok(t),
            n => t.reshape([-1, batch[n - 1] as i64, a, b]),
        }
    };
    let mask = attn_mask
        .map(|m| {
            let m = additive_mask(m, opmath(query.dtype()))?;
            // The kernel broadcasts a mask against [B, H, L, S] from the trailing dims, so
            // one without batch dims, or with the two the operands keep, goes as it is;
            // one batch dim goes to B (H is the 1 inserted above); else expand and fold.
            match (batch.len(), m.dim()) {
                (_, 0..=2) | (2, 3..=4) => Ok(m),
                (1, 3) => m.unsqueeze(1),
                _ => to4(&m, [l, sl]),
            }
        })
        .transpose()?;
    let (out, _) = crate::_scaled_dot_product_flash_attention_for_cpu_with(
        &to4(query, [l, e])?,
        &to4(key, [sl, e])?,
        &to4(value, [sl, ev])?,
        0.0,
        is_causal,
        mask.as_ref(),
        scale,
    )?;
    let mut shape: Vec<i64> = batch.iter().map(|&d| d as i64).collect();
    shape.extend([l as i64, ev as i64]);
    out.reshape(shape)
}

/// `q kᵀ · scale + mask`, with `-inf` above the diagonal when causal (PyTorch's top-left
/// `tril`), in the operands' dtype.
fn scores(
    q: &Tensor,
    k: &Tensor,
    mask: Option<&Tensor>,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<Tensor> {
    let e = q.shape()[q.dim() - 1];
    let s = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let mut scores = q.matmul(&k.transpose(-2, -1)?)?.mul_scalar(s)?;
    let (l, sl) = (
        scores.shape()[scores.dim() - 2],
        scores.shape()[scores.dim() - 1],
    );
    if is_causal {
        let drop = Tensor::ones([l, sl], DType::Bool)?
            .tril()?
            .logical_not()?
            .to_device(scores.device())?;
        scores = scores.masked_fill(&drop, f64::NEG_INFINITY)?;
    }
    if let Some(m) = mask {
        scores = scores.add(m)?;
    }
    Ok(scores)
}

/// Softmax over the last dim, zero on a row whose every score is `-inf` (PyTorch's
/// `_safe_softmax`). Such rows are set to 0 before the softmax, so neither the values nor
/// the gradients see a NaN.
fn safe_softmax(s: &Tensor) -> Result<Tensor> {
    if s.shape()[s.dim() - 1] == 0 {
        // No keys: nothing to normalise (and no maximum to take).
        return Ok(s.clone());
    }
    let dead = s.amax_with(&[-1], true)?.eq_scalar(f64::NEG_INFINITY)?;
    let w = s.masked_fill(&dead, 0.0)?.softmax(-1)?;
    w.masked_fill(&dead, 0.0)
}

/// The fused kernel's forward from tensor ops: `(output, logsumexp)` of `[B, H, L, *]`
/// operands in the opmath dtype (the output rounded back to the operands' dtype), a fully
/// masked row giving zeros and `-inf`. Its CUDA entry.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn math_forward(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<(Tensor, Tensor)> {
    let dt = q.dtype();
    let w = |t: &Tensor| t.to_dtype(opmath(dt));
    let s = scores(&w(q)?, &w(k)?, mask, is_causal, scale)?;
    let lse = if s.shape()[s.dim() - 1] == 0 {
        // No keys: every row is fully masked (zeros out, `-inf` logsumexp).
        s.sum_dim(&[-1])?.fill_(f64::NEG_INFINITY)?
    } else {
        s.logsumexp_with(&[-1], false)?
    };
    let out = safe_softmax(&s)?.matmul(&w(v)?)?.to_dtype(dt)?;
    Ok((out, lse))
}

/// The gradients of query, key and value of the fused kernel from tensor ops, for the
/// gradients `g` of its output and `g_lse` of its logsumexp, recomputing the probabilities:
/// differentiable (the double backward).
#[allow(clippy::too_many_arguments)]
pub(crate) fn math_grads(
    g: Option<&Tensor>,
    g_lse: Option<&Tensor>,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<(Tensor, Tensor, Tensor)> {
    let dt = q.dtype();
    let w = |t: &Tensor| t.to_dtype(opmath(dt));
    let (qw, kw, vw) = (w(q)?, w(k)?, w(v)?);
    let p = safe_softmax(&scores(&qw, &kw, mask, is_causal, scale)?)?;
    let mut ds = p.zeros_like()?;
    let mut dv = vw.zeros_like()?;
    if let Some(g) = g {
        let g = w(g)?;
        dv = p.transpose(-2, -1)?.matmul(&g)?;
        let dp = g.matmul(&vw.transpose(-2, -1)?)?;
        let row = dp.mul(&p)?.sum_dim_with(&[-1], true, None)?;
        ds = p.mul(&dp.sub(&row)?)?;
    }
    if let Some(gl) = g_lse {
        // d lse_i / d s_ij = p_ij.
        ds = ds.add(&p.mul(&w(gl)?.unsqueeze(-1)?)?)?;
    }
    query_key_grads(&ds, &qw, &kw, dv, scale, dt)
}

/// The backward kernel's gradients from tensor ops, as the CPU kernel computes them: the
/// probabilities from the saved `logsumexp` (`exp(s - lse)`, zero on a fully masked row)
/// and the softmax gradient's row term from the saved output (`Σ dO · O`), so the result is
/// the op's for whatever `out` and `logsumexp` it is given. The CUDA entry of the backward.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn saved_grads(
    g: &Tensor,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    out: &Tensor,
    lse: &Tensor,
    mask: Option<&Tensor>,
    is_causal: bool,
    scale: Option<f64>,
) -> Result<(Tensor, Tensor, Tensor)> {
    let dt = q.dtype();
    let w = |t: &Tensor| t.to_dtype(opmath(dt));
    let (qw, kw, vw, gw) = (w(q)?, w(k)?, w(v)?, w(g)?);
    let lse = w(lse)?.unsqueeze(-1)?;
    let dead = lse.eq_scalar(f64::NEG_INFINITY)?;
    let p = scores(&qw, &kw, mask, is_causal, scale)?
        .sub(&lse.masked_fill(&dead, 0.0)?)?
        .exp()?
        .masked_fill(&dead, 0.0)?;
    let dv = p.transpose(-2, -1)?.matmul(&gw)?;
    let dp = gw.matmul(&vw.transpose(-2, -1)?)?;
    let delta = gw.mul(&w(out)?)?.sum_dim_with(&[-1], true, None)?;
    let ds = p.mul(&dp.sub(&delta)?)?;
    query_key_grads(&ds, &qw, &kw, dv, scale, dt)
}

/// The common tail of the two backward forms: `dq = ds @ k · scale`, `dk = dsᵀ @ q · scale`
/// from the scores' gradient `ds` (all in the compute type), and the three back in `dt`.
fn query_key_grads(
    ds: &Tensor,
    qw: &Tensor,
    kw: &Tensor,
    dv: Tensor,
    scale: Option<f64>,
    dt: DType,
) -> Result<(Tensor, Tensor, Tensor)> {
    let e = qw.shape()[qw.dim() - 1];
    let sc = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let dq = ds.matmul(kw)?.mul_scalar(sc)?;
    let dk = ds.transpose(-2, -1)?.matmul(qw)?.mul_scalar(sc)?;
    Ok((dq.to_dtype(dt)?, dk.to_dtype(dt)?, dv.to_dtype(dt)?))
}

#[cfg(test)]
mod tests {
    //! The tensor-op forms (the CUDA entries of the fused ops) against the CPU kernels, in
    //! float64, with a saved output that is not the forward's (the backward must use it).
    use super::{math_forward, saved_grads};
    use crate::{DType, Result, Tensor};

    fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
        assert_eq!(a.shape(), b.shape());
        let (a, b) = (a.to_vec::<f64>().unwrap(), b.to_vec::<f64>().unwrap());
        a.iter()
            .zip(&b)
            .map(|(x, y)| if x == y { 0.0 } else { (x - y).abs() })
            .fold(0.0, f64::max)
    }

    #[test]
    fn tensor_op_forms_equal_the_cpu_kernels() -> Result<()> {
        let r = |s: &[usize]| Tensor::randn(s.to_vec(), DType::F64);
        let mask = r(&[5, 6])?;
        for (causal, mask, scale) in [
            (false, None, None),
            (true, None, Some(0.3)),
            (false, Some(&mask), None),
        ] {
            let (q, k, v) = (r(&[2, 3, 5, 4])?, r(&[2, 3, 6, 4])?, r(&[2, 3, 6, 3])?);
            let (out, lse) = crate::_scaled_dot_product_flash_attention_for_cpu_with(
                &q, &k, &v, 0.0, causal, mask, scale,
            )?;
            let (mo, ml) = math_forward(&q, &k, &v, mask, causal, scale)?;
            assert!(
                max_diff(&out, &mo) < 1e-12 && max_diff(&lse, &ml) < 1e-12,
                "forward, causal {causal}"
            );
            let (g, saved_out) = (r(&[2, 3, 5, 3])?, r(&[2, 3, 5, 3])?);
            let want = crate::_scaled_dot_product_flash_attention_for_cpu_backward_with(
                &g, &q, &k, &v, &saved_out, &lse, 0.0, causal, mask, scale,
            )?;
            let got = saved_grads(&g, &q, &k, &v, &saved_out, &lse, mask, causal, scale)?;
            for (w, g) in [(&want.0, &got.0), (&want.1, &got.1), (&want.2, &got.2)] {
                assert!(
                    max_diff(w, g) < 1e-12,
                    "backward, causal {causal}: {}",
                    max_diff(w, g)
                );
            }
        }
        // No keys: zeros and -inf forward; zero gradients.
        let (q, k, v) = (r(&[1, 1, 2, 3])?, r(&[1, 1, 0, 3])?, r(&[1, 1, 0, 3])?);
        let (o, l) = math_forward(&q, &k, &v, None, false, None)?;
        assert_eq!(o.to_vec::<f64>()?, vec![0.0; 6]);
        assert_eq!(l.to_vec::<f64>()?, vec![f64::NEG_INFINITY; 2]);
        let (dq, dk, dv) = saved_grads(&r(&[1, 1, 2, 3])?, &q, &k, &v, &o, &l, None, false, None)?;
        assert_eq!(dq.to_vec::<f64>()?, vec![0.0; 6]);
        assert_eq!(
            (dk.shape(), dv.shape()),
            (&[1, 1, 0, 3][..], &[1, 1, 0, 3][..])
        );
        Ok(())
    }
}
