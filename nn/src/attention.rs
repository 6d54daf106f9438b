//! `MultiheadAttention`, as `nn.MultiheadAttention` / `F.multi_head_attention_forward`.

use crate::init;
use crate::linear::Linear;
use crate::Module;
use kiln_core::{DType, Error, Result, Tensor};

/// `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
/// add_zero_attn=False, kdim=None, vdim=None, batch_first=False)`.
///
/// Parameters carry PyTorch's names: `in_proj_weight` `[3E, E]` and `in_proj_bias` `[3E]`
/// (or `q_proj_weight`, `k_proj_weight`, `v_proj_weight` when `kdim`/`vdim` differ from
/// `embed_dim`), `bias_k`/`bias_v` `[1, 1, E]` with `add_bias_kv`, and the `out_proj` Linear.
/// Initialised as PyTorch: xavier_uniform projections, zero biases, xavier_normal `bias_k/v`.
#[derive(Module)]
#[module(crate = crate)]
pub struct MultiheadAttention {
    pub in_proj_weight: Option<Tensor>,
    pub q_proj_weight: Option<Tensor>,
    pub k_proj_weight: Option<Tensor>,
    pub v_proj_weight: Option<Tensor>,
    pub in_proj_bias: Option<Tensor>,
    pub bias_k: Option<Tensor>,
    pub bias_v: Option<Tensor>,
    pub out_proj: Linear,
    pub embed_dim: usize,
    pub kdim: usize,
    pub vdim: usize,
    pub num_heads: usize,
    pub head_dim: usize,
    pub dropout: f64,
    pub batch_first: bool,
    pub add_zero_attn: bool,
    pub training: bool,
}

/// Constructor options of [`MultiheadAttention`], PyTorch's defaults via `Default`.
#[derive(Clone, Copy, Debug)]
pub struct MultiheadAttentionOptions {
    pub dropout: f64,
    pub bias: bool,
    pub add_bias_kv: bool,
    pub add_zero_attn: bool,
    /// `None` = `embed_dim`.
    pub kdim: Option<usize>,
    /// `None` = `embed_dim`.
    pub vdim: Option<usize>,
    pub batch_first: bool,
    pub dtype: DType,
}

impl Default for MultiheadAttentionOptions {
    fn default() -> Self {
        MultiheadAttentionOptions {
            dropout: 0.0,
            bias: true,
            add_bias_kv: false,
            add_zero_attn: false,
            kdim: None,
            vdim: None,
            batch_first: false,
            dtype: DType::F32,
        }
    }
}

/// The optional arguments of [`MultiheadAttention::forward`], PyTorch's defaults via
/// `Default` (`need_weights=True`, `average_attn_weights=True`).
#[derive(Clone, Copy, Debug)]
pub struct AttentionArgs<'a> {
    /// `(N, S)` (or `(S)` unbatched): bool, `true` = ignore that key; or float, added.
    pub key_padding_mask: Option<&'a Tensor>,
    pub need_weights: bool,
    /// `(L, S)` or `(N·num_heads, L, S)`: bool, `true` = not allowed to attend; or float, added.
    pub attn_mask: Option<&'a Tensor>,
    pub average_attn_weights: bool,
    /// A hint that `attn_mask` is the causal mask; as in PyTorch it needs `attn_mask`.
    pub is_causal: bool,
}

impl Default for AttentionArgs<'_> {
    fn default() -> Self {
        AttentionArgs {
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
        }
    }
}

const NAME: &str = "MultiheadAttention";

fn param(shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::empty(shape, dtype)
}

impl MultiheadAttention {
    /// `MultiheadAttention(embed_dim, num_heads)` with PyTorch's defaults, float32.
    pub fn new(embed_dim: usize, num_heads: usize) -> Result<Self> {
        Self::with_options(embed_dim, num_heads, MultiheadAttentionOptions::default())
    }

    pub fn with_options(
        embed_dim: usize,
        num_heads: usize,
        o: MultiheadAttentionOptions,
    ) -> Result<Self> {
        if embed_dim == 0 || num_heads == 0 {
            return Err(Error::value(
                NAME,
                format!("embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={num_heads} instead"),
            ));
        }
        if !embed_dim.is_multiple_of(num_heads) {
            return Err(Error::value(
                NAME,
                "embed_dim must be divisible by num_heads",
            ));
        }
        if !(0.0..=1.0).contains(&o.dropout) {
            return Err(Error::value(
                NAME,
                format!(
                    "dropout probability has to be between 0 and 1, but got {}",
                    o.dropout
                ),
            ));
        }
        let kdim = o.kdim.unwrap_or(embed_dim);
        let vdim = o.vdim.unwrap_or(embed_dim);
        let e = embed_dim;
        let dt = o.dtype;
        let same = kdim == e && vdim == e;
        let grad = |t: Tensor| t.requires_grad_(true);
        let (in_proj_weight, q, k, v) = if same {
            let w = param(&[3 * e, e], dt)?;
            init::xavier_uniform_(&w, 1.0)?;
            (Some(grad(w)?), None, None, None)
        } else {
            let q = param(&[e, e], dt)?;
            let k = param(&[e, kdim], dt)?;
            let v = param(&[e, vdim], dt)?;
            for w in [&q, &k, &v] {
                init::xavier_uniform_(w, 1.0)?;
            }
            (None, Some(grad(q)?), Some(grad(k)?), Some(grad(v)?))
        };
        let in_proj_bias = if o.bias {
            let b = param(&[3 * e], dt)?;
            init::zeros_(&b)?;
            Some(grad(b)?)
        } else {
            None
        };
        let out_proj = Linear::with_options(e, e, o.bias, dt)?;
        if let Some(b) = &out_proj.bias {
            let _g = kiln_core::no_grad();
            init::zeros_(b)?;
        }
        let (bias_k, bias_v) = if o.add_bias_kv {
            let bk = param(&[1, 1, e], dt)?;
            let bv = param(&[1, 1, e], dt)?;
            init::xavier_normal_(&bk, 1.0)?;
            init::xavier_normal_(&bv, 1.0)?;
            (Some(grad(bk)?), Some(grad(bv)?))
        } else {
            (None, None)
        };
        Ok(MultiheadAttention {
            in_proj_weight,
            q_proj_weight: q,
            k_proj_weight: k,
            v_proj_weight: v,
            in_proj_bias,
            bias_k,
            bias_v,
            out_proj,
            embed_dim: e,
            kdim,
            vdim,
            num_heads,
            head_dim: e / num_heads,
            dropout: o.dropout,
            batch_first: o.batch_first,
            add_zero_attn: o.add_zero_attn,
            training: true,
        })
    }

    /// The q, k, v projection weights (views of `in_proj_weight` when packed).
    fn proj_weights(&self) -> Result<[Tensor; 3]> {
        let e = self.embed_dim as i64;
        match &self.in_proj_weight {
            Some(w) => Ok([
                w.narrow(0, 0, e)?,
                w.narrow(0, e, e)?,
                w.narrow(0, 2 * e, e)?,
            ]),
            None => match (
                &self.q_proj_weight,
                &self.k_proj_weight,
                &self.v_proj_weight,
            ) {
                (Some(q), Some(k), Some(v)) => Ok([q.clone(), k.clone(), v.clone()]),
                _ => Err(Error::value(
                    NAME,
                    "needs in_proj_weight or all of q_proj_weight, k_proj_weight, v_proj_weight",
                )),
            },
        }
    }

    /// Attention of `query` over `key`/`value`. Shapes: `(L, N, E)` / `(S, N, kdim)` /
    /// `(S, N, vdim)` (`(N, L, E)`… with `batch_first`), or unbatched `(L, E)`…. Returns the
    /// output (the query's layout) and, with `need_weights`, the attention weights `(N, L, S)`
    /// (`(N, num_heads, L, S)` unless `average_attn_weights`; no `N` unbatched).
    pub fn forward(
        &self,
        query: &Tensor,
        key: &Tensor,
        value: &Tensor,
        args: AttentionArgs<'_>,
    ) -> Result<(Tensor, Option<Tensor>)> {
        let batched = match query.dim() {
            3 => true,
            2 => false,
            d => {
                return Err(Error::shape(
                    NAME,
                    format!("query should be unbatched 2D or batched 3D tensor but received {d}-D query tensor"),
                ))
            }
        };
        let want = query.dim();
        let kind = if batched {
            "batched (3-D)"
        } else {
            "unbatched (2-D)"
        };
        if key.dim() != want || value.dim() != want {
            return Err(Error::shape(
                NAME,
                format!(
                    "For {kind} `query`, expected `key` and `value` to be {want}-D but found {}-D and {}-D tensors respectively",
                    key.dim(),
                    value.dim()
                ),
            ));
        }
        if let Some(m) = args.key_padding_mask {
            if m.dim() != want - 1 {
                return Err(Error::shape(
                    NAME,
                    format!(
                        "For {kind} `query`, expected `key_padding_mask` to be `None` or {}-D but found {}-D tensor instead",
                        want - 1,
                        m.dim()
                    ),
                ));
            }
        }
        if let Some(m) = args.attn_mask {
            if m.dim() != 2 && m.dim() != 3 {
                return Err(Error::shape(
                    NAME,
                    format!(
                        "For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {}-D tensor instead",
                        m.dim()
                    ),
                ));
            }
        }
        if args.is_causal && args.attn_mask.is_none() {
            return Err(Error::value(
                NAME,
                "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.",
            ));
        }
        let (mut q, mut k, mut v) = (query.clone(), key.clone(), value.clone());
        if batched && self.batch_first {
            q = q.transpose(0, 1)?;
            k = k.transpose(0, 1)?;
            v = v.transpose(0, 1)?;
        }
        let mut kpm = args.key_padding_mask.cloned();
        if !batched {
            q = q.unsqueeze(1)?;
            k = k.unsqueeze(1)?;
            v = v.unsqueeze(1)?;
            kpm = kpm.map(|m| m.unsqueeze(0)).transpose()?;
        }
        let (tgt_len, bsz, e) = (q.shape()[0], q.shape()[1], q.shape()[2]);
        if e != self.embed_dim {
            return Err(Error::shape(
                NAME,
                format!(
                    "was expecting embedding dimension of {}, but got {e} (query of shape {:?})",
                    self.embed_dim,
                    query.shape()
                ),
            ));
        }
        if k.shape()[..2] != v.shape()[..2] || k.shape()[1] != bsz {
            return Err(Error::shape(
                NAME,
                format!(
                    "key shape {:?} does not match value shape {:?} (query of shape {:?})",
                    key.shape(),
                    value.shape(),
                    query.shape()
                ),
            ));
        }
        if k.shape()[2] != self.kdim || v.shape()[2] != self.vdim {
            return Err(Error::shape(
                NAME,
                format!(
                    "expected key and value embedding dimensions {} and {}, but got key of shape {:?} and value of shape {:?}",
                    self.kdim,
                    self.vdim,
                    key.shape(),
                    value.shape()
                ),
            ));
        }
        let dtype = q.dtype();
        let canonical = |m: Tensor, what: &str| -> Result<Tensor> {
            if m.dtype() == DType::Bool {
                Tensor::full_on(m.shape(), 0.0, dtype, m.device())?
                    .masked_fill(&m, f64::NEG_INFINITY)
            } else if m.is_floating_point() {
                Ok(m)
            } else {
                Err(Error::dtype(
                    NAME,
                    format!(
                        "only bool and floating types of {what} are supported, got {}",
                        m.dtype()
                    ),
                ))
            }
        };
        let mut kpm = kpm.map(|m| canonical(m, "key_padding_mask")).transpose()?;
        let heads = self.num_heads;
        let mut attn_mask = match args.attn_mask {
            None => None,
            Some(m) => {
                let m = canonical(m.clone(), "attn_mask")?;
                let src = k.shape()[0];
                if m.dim() == 2 {
                    if m.shape() != [tgt_len, src] {
                        return Err(Error::shape(
                            NAME,
                            format!(
                                "The shape of the 2D attn_mask is {:?}, but should be {:?}.",
                                m.shape(),
                                [tgt_len, src]
                            ),
                        ));
                    }
                    Some(m.unsqueeze(0)?)
                } else {
                    if m.shape() != [bsz * heads, tgt_len, src] {
                        return Err(Error::shape(
                            NAME,
                            format!(
                                "The shape of the 3D attn_mask is {:?}, but should be {:?}.",
                                m.shape(),
                                [bsz * heads, tgt_len, src]
                            ),
                        ));
                    }
                    Some(m)
                }
            }
        };

        // Input projections.
        let [wq, wk, wv] = self.proj_weights()?;
        let ed = self.embed_dim as i64;
        let (bq, bk, bv) = match &self.in_proj_bias {
            Some(b) => (
                Some(b.narrow(0, 0, ed)?),
                Some(b.narrow(0, ed, ed)?),
                Some(b.narrow(0, 2 * ed, ed)?),
            ),
            None => (None, None, None),
        };
        q = kiln_core::linear_with(&q, &wq, bq.as_ref())?;
        k = kiln_core::linear_with(&k, &wk, bk.as_ref())?;
        v = kiln_core::linear_with(&v, &wv, bv.as_ref())?;

        // One column of masks for each key appended below.
        let pad_col = |m: Option<Tensor>| m.map(|m| kiln_core::pad(&m, [0, 1])).transpose();
        if let (Some(bias_k), Some(bias_v)) = (&self.bias_k, &self.bias_v) {
            k = kiln_core::cat_with(&[k, bias_k.repeat([1, bsz as i64, 1])?], 0)?;
            v = kiln_core::cat_with(&[v, bias_v.repeat([1, bsz as i64, 1])?], 0)?;
            attn_mask = pad_col(attn_mask)?;
            kpm = pad_col(kpm)?;
        }

        // (len, N, E) -> (N·heads, len, head_dim).
        let hd = self.head_dim as i64;
        let bh = (bsz * heads) as i64;
        let split = |t: &Tensor| -> Result<Tensor> {
            t.reshape([t.shape()[0] as i64, bh, hd])?.transpose(0, 1)
        };
        q = split(&q)?;
        k = split(&k)?;
        v = split(&v)?;
        if self.add_zero_attn {
            let z = Tensor::full_on([bsz * heads, 1, self.head_dim], 0.0, dtype, k.device())?;
            k = kiln_core::cat_with(&[k, z.clone()], 1)?;
            v = kiln_core::cat_with(&[v, z], 1)?;
            attn_mask = pad_col(attn_mask)?;
            kpm = pad_col(kpm)?;
        }
        let src_len = k.shape()[1];
        if let Some(m) = kpm {
            if m.shape() != [bsz, src_len] {
                return Err(Error::shape(
                    NAME,
                    format!(
                        "expecting key_padding_mask shape of {:?}, but got {:?}",
                        [bsz, src_len],
                        m.shape()
                    ),
                ));
            }
            let m = m
                .reshape([bsz as i64, 1, 1, src_len as i64])?
                .expand([-1, heads as i64, -1, -1])?
                .reshape([bh, 1, src_len as i64])?;
            attn_mask = Some(match attn_mask {
                None => m,
                Some(a) => a.add(&m)?,
            });
        }
        let dropout_p = if self.training { self.dropout } else { 0.0 };

        let (out, weights) = if args.need_weights {
            let q_scaled = q.mul_scalar((1.0 / hd as f64).sqrt())?;
            let kt = k.transpose(-2, -1)?;
            let mut w = match &attn_mask {
                Some(m) => m
                    .expand([bh, tgt_len as i64, src_len as i64])?
                    .baddbmm(&q_scaled, &kt)?,
                None => q_scaled.bmm(&kt)?,
            };
            w = w.softmax(-1)?;
            if dropout_p > 0.0 {
                w = kiln_core::dropout(&w, dropout_p, true)?;
            }
            let out = w.bmm(&v)?.transpose(0, 1)?;
            let mut w = w.reshape([bsz as i64, heads as i64, tgt_len as i64, src_len as i64])?;
            if args.average_attn_weights {
                w = w.mean_dim(&[1])?;
            }
            (out, Some(w))
        } else {
            let m = match &attn_mask {
                Some(m) if m.shape()[0] == 1 => Some(m.unsqueeze(0)?),
                Some(m) => Some(m.reshape([bsz as i64, heads as i64, -1, src_len as i64])?),
                None => None,
            };
            let four = |t: &Tensor| t.reshape([bsz as i64, heads as i64, -1, hd]);
            let o = kiln_core::scaled_dot_product_attention_with(
                &four(&q)?,
                &four(&k)?,
                &four(&v)?,
                m.as_ref(),
                dropout_p,
                false,
                None,
                false,
            )?;
            // (N, heads, L, hd) -> (L, N, heads, hd)
            (o.permute(&[2, 0, 1, 3])?, None)
        };
        let out = out.reshape([tgt_len as i64, bsz as i64, ed])?;
        let mut out = self.out_proj_forward(&out)?;
        let mut weights = weights;
        if batched {
            if self.batch_first {
                out = out.transpose(0, 1)?;
            }
        } else {
            out = out.squeeze_dim(1)?;
            weights = weights.map(|w| w.squeeze_dim(0)).transpose()?;
        }
        Ok((out, weights))
    }

    fn out_proj_forward(&self, x: &Tensor) -> Result<Tensor> {
        kiln_core::linear_with(x, &self.out_proj.weight, self.out_proj.bias.as_ref())
    }
}
