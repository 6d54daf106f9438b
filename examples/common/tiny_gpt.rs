//! The tiny transformer of `tiny_transformer`: a 2-layer causal decoder that learns to sort
//! short digit sequences, and its batches (shared with the autocast training test).

use kiln::nn::{
    generate_square_subsequent_mask, Activation, Embedding, Forward, LayerNorm, Linear, Module,
    TransformerEncoderLayer, TransformerLayerOptions,
};
use kiln::{DType, Device, Result, Tensor};

/// Digits per sequence, and the vocabulary {0, 1, 2}.
pub const LENGTH: usize = 6;
pub const VOCAB: usize = 3;
/// The model sees `seq ++ sorted(seq)` without its last token.
pub const BLOCK: usize = 2 * LENGTH - 1;
pub const D_MODEL: usize = 48;

#[derive(Module)]
pub struct TinyGpt {
    tok_emb: Embedding,
    /// Learned positional embedding `[1, BLOCK, D_MODEL]`.
    pos_emb: Tensor,
    blocks: Vec<TransformerEncoderLayer>,
    ln_f: LayerNorm,
    head: Linear,
}

impl TinyGpt {
    pub fn new() -> Result<Self> {
        let options = TransformerLayerOptions {
            dim_feedforward: 4 * D_MODEL,
            dropout: 0.0,
            activation: Activation::Gelu,
            batch_first: true,
            norm_first: true,
            ..Default::default()
        };
        Ok(TinyGpt {
            tok_emb: Embedding::new(VOCAB, D_MODEL)?,
            pos_emb: Tensor::zeros([1, BLOCK, D_MODEL], DType::F32)?
                .normal_(0.0, 0.02)?
                .requires_grad_(true)?,
            blocks: (0..2)
                .map(|_| TransformerEncoderLayer::with_options(D_MODEL, 4, options))
                .collect::<Result<_>>()?,
            ln_f: LayerNorm::new(&[D_MODEL])?,
            head: Linear::new(D_MODEL, VOCAB)?,
        })
    }
}

impl Forward for TinyGpt {
    /// Tokens `[n, t]` (int64, `t ≤ BLOCK`) to next-token logits `[n, t, VOCAB]`.
    fn forward(&self, idx: &Tensor) -> Result<Tensor> {
        let t = idx.shape()[1];
        let mask = generate_square_subsequent_mask(t, DType::F32)?.to_device(idx.device())?;
        let mut x = self
            .tok_emb
            .forward(idx)?
            .add(&self.pos_emb.narrow(1, 0, t as i64)?)?;
        for block in &self.blocks {
            x = block.forward_with(&x, Some(&mask), None, true)?;
        }
        self.head.forward(&self.ln_f.forward(&x)?)
    }
}

/// `n` random sequences: inputs `[n, BLOCK]` and targets `[n, BLOCK]`, the targets being the
/// sorted half at the last `LENGTH` positions and -100 (ignored) before.
pub fn batch(n: usize, device: Device) -> Result<(Tensor, Tensor)> {
    let seq = Tensor::randint(0, VOCAB as i64, [n, LENGTH], DType::I64)?;
    let (sorted, _) = seq.sort()?;
    let input = kiln::cat_with(&[seq, sorted.narrow(1, 0, LENGTH as i64 - 1)?], 1)?;
    let ignored = Tensor::full([n, LENGTH - 1], -100i64, DType::I64)?;
    let target = kiln::cat_with(&[ignored, sorted], 1)?;
    Ok((input.to_device(device)?, target.to_device(device)?))
}
