//! Transformer blocks: `TransformerEncoderLayer`, `TransformerDecoderLayer` and their stacks
//! `TransformerEncoder`, `TransformerDecoder`, with PyTorch's submodule names so state dicts
//! load either way.

use crate::attention::{AttentionArgs, MultiheadAttention, MultiheadAttentionOptions};
use crate::dropout::Dropout;
use crate::linear::Linear;
use crate::module::Forward;
use crate::normalization::LayerNorm;
use crate::Module;
use kiln_core::{DType, Result, Tensor};

/// The feed-forward activation (`activation="relu"` or `"gelu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Activation {
    #[default]
    Relu,
    Gelu,
}

impl Activation {
    fn apply(self, x: &Tensor) -> Result<Tensor> {
        match self {
            Activation::Relu => x.relu(),
            Activation::Gelu => x.gelu(),
        }
    }
}

/// Options of the encoder/decoder layers; `Default` is PyTorch's (`dim_feedforward=2048,
/// dropout=0.1, activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
/// bias=True`, float32).
#[derive(Clone, Copy, Debug)]
pub struct TransformerLayerOptions {
    pub dim_feedforward: usize,
    pub dropout: f64,
    pub activation: Activation,
    pub layer_norm_eps: f64,
    pub batch_first: bool,
    pub norm_first: bool,
    pub bias: bool,
    pub dtype: DType,
}

impl Default for TransformerLayerOptions {
    fn default() -> Self {
        TransformerLayerOptions {
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: Activation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
            dtype: DType::F32,
        }
    }
}

/// `Transformer.generate_square_subsequent_mask(sz)`: a float `[sz, sz]` mask with `-inf`
/// above the diagonal and `0` elsewhere.
pub fn generate_square_subsequent_mask(sz: usize, dtype: DType) -> Result<Tensor> {
    Tensor::full([sz, sz], f64::NEG_INFINITY, dtype)?.triu_with(1)
}

fn mha(d_model: usize, nhead: usize, o: &TransformerLayerOptions) -> Result<MultiheadAttention> {
    MultiheadAttention::with_options(
        d_model,
        nhead,
        MultiheadAttentionOptions {
            dropout: o.dropout,
            bias: o.bias,
            batch_first: o.batch_first,
            dtype: o.dtype,
            ..Default::default()
        },
    )
}

fn norm(d_model: usize, o: &TransformerLayerOptions) -> Result<LayerNorm> {
    LayerNorm::with_options(&[d_model], o.layer_norm_eps, true, o.bias, o.dtype)
}

/// `nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
/// activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)`:
/// self-attention then a feed-forward block, each with a residual and a LayerNorm (after, or
/// before with `norm_first`).
#[derive(Module)]
#[module(crate = crate)]
pub struct TransformerEncoderLayer {
    pub self_attn: MultiheadAttention,
    pub linear1: Linear,
    pub dropout: Dropout,
    pub linear2: Linear,
    pub norm1: LayerNorm,
    pub norm2: LayerNorm,
    pub dropout1: Dropout,
    pub dropout2: Dropout,
    pub d_model: usize,
    pub nhead: usize,
    #[module(skip)]
    pub options: TransformerLayerOptions,
}

impl TransformerEncoderLayer {
    /// PyTorch's defaults, float32.
    pub fn new(d_model: usize, nhead: usize) -> Result<Self> {
        Self::with_options(d_model, nhead, TransformerLayerOptions::default())
    }

    pub fn with_options(d_model: usize, nhead: usize, o: TransformerLayerOptions) -> Result<Self> {
        Ok(TransformerEncoderLayer {
            self_attn: mha(d_model, nhead, &o)?,
            linear1: Linear::with_options(d_model, o.dim_feedforward, o.bias, o.dtype)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::with_options(o.dim_feedforward, d_model, o.bias, o.dtype)?,
            norm1: norm(d_model, &o)?,
            norm2: norm(d_model, &o)?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            d_model,
            nhead,
            options: o,
        })
    }

    /// An independent copy with the same parameter values (`copy.deepcopy`).
    pub fn deep_clone(&self) -> Result<Self> {
        let mut m = Self::with_options(self.d_model, self.nhead, self.options)?;
        m.load_state_dict(&self.state_dict(), true)?;
        m.train(self.is_training());
        Ok(m)
    }

    /// `forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)`.
    pub fn forward_with(
        &self,
        src: &Tensor,
        src_mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
        is_causal: bool,
    ) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self.self_attn.forward(
                x,
                x,
                x,
                AttentionArgs {
                    key_padding_mask: src_key_padding_mask,
                    need_weights: false,
                    attn_mask: src_mask,
                    average_attn_weights: true,
                    is_causal,
                },
            )?;
            self.dropout1.forward(&y)
        };
        let ff = |x: &Tensor| -> Result<Tensor> {
            let h = self.options.activation.apply(&self.linear1.forward(x)?)?;
            let y = self.linear2.forward(&self.dropout.forward(&h)?)?;
            self.dropout2.forward(&y)
        };
        let mut x = src.clone();
        if self.options.norm_first {
            x = x.add(&sa(&self.norm1.forward(&x)?)?)?;
            x = x.add(&ff(&self.norm2.forward(&x)?)?)?;
        } else {
            x = self.norm1.forward(&x.add(&sa(&x)?)?)?;
            x = self.norm2.forward(&x.add(&ff(&x)?)?)?;
        }
        Ok(x)
    }
}

impl Forward for TransformerEncoderLayer {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_with(src, None, None, false)
    }
}

/// The optional arguments of the decoder's forward, all off by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct DecoderArgs<'a> {
    pub tgt_mask: Option<&'a Tensor>,
    pub memory_mask: Option<&'a Tensor>,
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    pub memory_key_padding_mask: Option<&'a Tensor>,
    pub tgt_is_causal: bool,
    pub memory_is_causal: bool,
}

/// `nn.TransformerDecoderLayer(d_model, nhead, …)` (same options as the encoder layer):
/// self-attention, attention over `memory`, feed-forward.
#[derive(Module)]
#[module(crate = crate)]
pub struct TransformerDecoderLayer {
    pub self_attn: MultiheadAttention,
    pub multihead_attn: MultiheadAttention,
    pub linear1: Linear,
    pub dropout: Dropout,
    pub linear2: Linear,
    pub norm1: LayerNorm,
    pub norm2: LayerNorm,
    pub norm3: LayerNorm,
    pub dropout1: Dropout,
    pub dropout2: Dropout,
    pub dropout3: Dropout,
    pub d_model: usize,
    pub nhead: usize,
    #[module(skip)]
    pub options: TransformerLayerOptions,
}

impl TransformerDecoderLayer {
    /// PyTorch's defaults, float32.
    pub fn new(d_model: usize, nhead: usize) -> Result<Self> {
        Self::with_options(d_model, nhead, TransformerLayerOptions::default())
    }

    pub fn with_options(d_model: usize, nhead: usize, o: TransformerLayerOptions) -> Result<Self> {
        Ok(TransformerDecoderLayer {
            self_attn: mha(d_model, nhead, &o)?,
            multihead_attn: mha(d_model, nhead, &o)?,
            linear1: Linear::with_options(d_model, o.dim_feedforward, o.bias, o.dtype)?,
            dropout: Dropout::new(o.dropout)?,
            linear2: Linear::with_options(o.dim_feedforward, d_model, o.bias, o.dtype)?,
            norm1: norm(d_model, &o)?,
            norm2: norm(d_model, &o)?,
            norm3: norm(d_model, &o)?,
            dropout1: Dropout::new(o.dropout)?,
            dropout2: Dropout::new(o.dropout)?,
            dropout3: Dropout::new(o.dropout)?,
            d_model,
            nhead,
            options: o,
        })
    }

    /// An independent copy with the same parameter values (`copy.deepcopy`).
    pub fn deep_clone(&self) -> Result<Self> {
        let mut m = Self::with_options(self.d_model, self.nhead, self.options)?;
        m.load_state_dict(&self.state_dict(), true)?;
        m.train(self.is_training());
        Ok(m)
    }

    /// `forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask, tgt_is_causal, memory_is_causal)`.
    pub fn forward(&self, tgt: &Tensor, memory: &Tensor, a: DecoderArgs<'_>) -> Result<Tensor> {
        let sa = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self.self_attn.forward(
                x,
                x,
                x,
                AttentionArgs {
                    key_padding_mask: a.tgt_key_padding_mask,
                    need_weights: false,
                    attn_mask: a.tgt_mask,
                    average_attn_weights: true,
                    is_causal: a.tgt_is_causal,
                },
            )?;
            self.dropout1.forward(&y)
        };
        let ca = |x: &Tensor| -> Result<Tensor> {
            let (y, _) = self.multihead_attn.forward(
                x,
                memory,
                memory,
                AttentionArgs {
                    key_padding_mask: a.memory_key_padding_mask,
                    need_weights: false,
                    attn_mask: a.memory_mask,
                    average_attn_weights: true,
                    is_causal: a.memory_is_causal,
                },
            )?;
            self.dropout2.forward(&y)
        };
        let ff = |x: &Tensor| -> Result<Tensor> {
            let h = self.options.activation.apply(&self.linear1.forward(x)?)?;
            let y = self.linear2.forward(&self.dropout.forward(&h)?)?;
            self.dropout3.forward(&y)
        };
        let mut x = tgt.clone();
        if self.options.norm_first {
            x = x.add(&sa(&self.norm1.forward(&x)?)?)?;
            x = x.add(&ca(&self.norm2.forward(&x)?)?)?;
            x = x.add(&ff(&self.norm3.forward(&x)?)?)?;
        } else {
            x = self.norm1.forward(&x.add(&sa(&x)?)?)?;
            x = self.norm2.forward(&x.add(&ca(&x)?)?)?;
            x = self.norm3.forward(&x.add(&ff(&x)?)?)?;
        }
        Ok(x)
    }
}

/// `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `num_layers` independent
/// copies of `encoder_layer` (`layers.0`, `layers.1`, …) and an optional final `norm`.
#[derive(Module)]
#[module(crate = crate)]
pub struct TransformerEncoder {
    pub layers: Vec<TransformerEncoderLayer>,
    pub norm: Option<LayerNorm>,
}

impl TransformerEncoder {
    pub fn new(
        encoder_layer: TransformerEncoderLayer,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        let layers = (0..num_layers)
            .map(|_| encoder_layer.deep_clone())
            .collect::<Result<_>>()?;
        Ok(TransformerEncoder { layers, norm })
    }

    /// `forward(src, mask=None, src_key_padding_mask=None, is_causal=None)`.
    pub fn forward_with(
        &self,
        src: &Tensor,
        mask: Option<&Tensor>,
        src_key_padding_mask: Option<&Tensor>,
        is_causal: bool,
    ) -> Result<Tensor> {
        let mut x = src.clone();
        for l in &self.layers {
            x = l.forward_with(&x, mask, src_key_padding_mask, is_causal)?;
        }
        match &self.norm {
            Some(n) => n.forward(&x),
            None => Ok(x),
        }
    }
}

impl Forward for TransformerEncoder {
    fn forward(&self, src: &Tensor) -> Result<Tensor> {
        self.forward_with(src, None, None, false)
    }
}

/// `nn.TransformerDecoder(decoder_layer, num_layers, norm=None)`.
#[derive(Module)]
#[module(crate = crate)]
pub struct TransformerDecoder {
    pub layers: Vec<TransformerDecoderLayer>,
    pub norm: Option<LayerNorm>,
}

impl TransformerDecoder {
    pub fn new(
        decoder_layer: TransformerDecoderLayer,
        num_layers: usize,
        norm: Option<LayerNorm>,
    ) -> Result<Self> {
        let layers = (0..num_layers)
            .map(|_| decoder_layer.deep_clone())
            .collect::<Result<_>>()?;
        Ok(TransformerDecoder { layers, norm })
    }

    /// `forward(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
    /// memory_key_padding_mask, tgt_is_causal, memory_is_causal)`.
    pub fn forward(&self, tgt: &Tensor, memory: &Tensor, a: DecoderArgs<'_>) -> Result<Tensor> {
        let mut x = tgt.clone();
        for l in &self.layers {
            x = l.forward(&x, memory, a)?;
        }
        match &self.norm {
            Some(n) => n.forward(&x),
            None => Ok(x),
        }
    }
}

/// The optional arguments of [`Transformer::forward`], all off by default.
#[derive(Clone, Copy, Debug, Default)]
pub struct TransformerArgs<'a> {
    pub src_mask: Option<&'a Tensor>,
    pub tgt_mask: Option<&'a Tensor>,
    pub memory_mask: Option<&'a Tensor>,
    pub src_key_padding_mask: Option<&'a Tensor>,
    pub tgt_key_padding_mask: Option<&'a Tensor>,
    pub memory_key_padding_mask: Option<&'a Tensor>,
    pub src_is_causal: bool,
    pub tgt_is_causal: bool,
    pub memory_is_causal: bool,
}

/// `nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
/// dim_feedforward=2048, dropout=0.1, activation=relu, layer_norm_eps=1e-5,
/// batch_first=False, norm_first=False, bias=True)`: an encoder and a decoder stack, each
/// with a final LayerNorm (`encoder.norm`, `decoder.norm`). As PyTorch, every parameter with
/// more than one dimension is re-initialised with xavier_uniform.
#[derive(Module)]
#[module(crate = crate)]
pub struct Transformer {
    pub encoder: TransformerEncoder,
    pub decoder: TransformerDecoder,
    pub d_model: usize,
    pub nhead: usize,
    pub batch_first: bool,
}

impl Transformer {
    /// PyTorch's defaults (512, 8 heads, 6 + 6 layers), float32.
    pub fn new() -> Result<Self> {
        Self::with_options(512, 8, 6, 6, TransformerLayerOptions::default())
    }

    pub fn with_options(
        d_model: usize,
        nhead: usize,
        num_encoder_layers: usize,
        num_decoder_layers: usize,
        o: TransformerLayerOptions,
    ) -> Result<Self> {
        let enc_layer = TransformerEncoderLayer::with_options(d_model, nhead, o)?;
        let encoder =
            TransformerEncoder::new(enc_layer, num_encoder_layers, Some(norm(d_model, &o)?))?;
        let dec_layer = TransformerDecoderLayer::with_options(d_model, nhead, o)?;
        let decoder =
            TransformerDecoder::new(dec_layer, num_decoder_layers, Some(norm(d_model, &o)?))?;
        let t = Transformer {
            encoder,
            decoder,
            d_model,
            nhead,
            batch_first: o.batch_first,
        };
        for p in t.parameters() {
            if p.dim() > 1 {
                let _g = kiln_core::no_grad();
                crate::init::xavier_uniform_(&p, 1.0)?;
            }
        }
        Ok(t)
    }

    /// `forward(src, tgt, src_mask, tgt_mask, memory_mask, src_key_padding_mask,
    /// tgt_key_padding_mask, memory_key_padding_mask, src_is_causal, tgt_is_causal,
    /// memory_is_causal)`: encodes `src`, decodes `tgt` against it.
    pub fn forward(&self, src: &Tensor, tgt: &Tensor, a: TransformerArgs<'_>) -> Result<Tensor> {
        let batched = src.dim() == 3;
        let bdim = if self.batch_first { 0 } else { 1 };
        if batched && tgt.dim() == 3 && src.shape()[bdim] != tgt.shape()[bdim] {
            return Err(kiln_core::Error::shape(
                "Transformer",
                format!(
                    "the batch number of src and tgt must be equal (src of shape {:?}, tgt of shape {:?})",
                    src.shape(),
                    tgt.shape()
                ),
            ));
        }
        if !batched && src.dim() != tgt.dim() {
            return Err(kiln_core::Error::shape(
                "Transformer",
                format!(
                    "the batch number of src and tgt must be equal (src of shape {:?}, tgt of shape {:?})",
                    src.shape(),
                    tgt.shape()
                ),
            ));
        }
        let last = |t: &Tensor| t.shape().last().copied();
        if last(src) != Some(self.d_model) || last(tgt) != Some(self.d_model) {
            return Err(kiln_core::Error::shape(
                "Transformer",
                format!(
                    "the feature number of src and tgt must be equal to d_model ({}), got src of shape {:?} and tgt of shape {:?}",
                    self.d_model,
                    src.shape(),
                    tgt.shape()
                ),
            ));
        }
        let memory =
            self.encoder
                .forward_with(src, a.src_mask, a.src_key_padding_mask, a.src_is_causal)?;
        self.decoder.forward(
            tgt,
            &memory,
            DecoderArgs {
                tgt_mask: a.tgt_mask,
                memory_mask: a.memory_mask,
                tgt_key_padding_mask: a.tgt_key_padding_mask,
                memory_key_padding_mask: a.memory_key_padding_mask,
                tgt_is_causal: a.tgt_is_causal,
                memory_is_causal: a.memory_is_causal,
            },
        )
    }
}
