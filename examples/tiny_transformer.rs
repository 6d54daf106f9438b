//! A 2-layer decoder-only (causal) transformer that learns to sort, minGPT's toy task:
//! sequences of 6 digits from {0, 1, 2}; the model reads the sequence followed by its sorted
//! version and is trained to predict the sorted half, one token at a time. Batches are drawn
//! from kiln's seeded generator (`Tensor::randint`, `sort`), so no data ships with it.
//!
//! Model: token embedding + learned positions, 2 pre-norm `TransformerEncoderLayer`s
//! (GELU, a causal mask), a final LayerNorm and a linear head; AdamW with a one-cycle
//! learning rate. Prints the token accuracy on 2000 fresh sequences (teacher-forced, the
//! training objective), the share of sequences sorted right when the model writes the
//! sorted half itself (greedy decoding), and the time taken.
//!
//! Run: `cargo run --release --example tiny_transformer`, or on a GPU:
//! `cargo run --release --features cuda --example tiny_transformer -- --device cuda`

mod common;

use kiln::nn::{
    functional as F, generate_square_subsequent_mask, Activation, Embedding, Forward, LayerNorm,
    Linear, Module, TransformerEncoderLayer, TransformerLayerOptions,
};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, DType, Device, Result, Tensor};
use std::time::Instant;

/// Digits per sequence, and the vocabulary {0, 1, 2}.
const LENGTH: usize = 6;
const VOCAB: usize = 3;
/// The model sees `seq ++ sorted(seq)` without its last token.
const BLOCK: usize = 2 * LENGTH - 1;
const D_MODEL: usize = 48;
const STEPS: usize = 400;
const BATCH: usize = 64;

#[derive(Module)]
struct TinyGpt {
    tok_emb: Embedding,
    /// Learned positional embedding `[1, BLOCK, D_MODEL]`.
    pos_emb: Tensor,
    blocks: Vec<TransformerEncoderLayer>,
    ln_f: LayerNorm,
    head: Linear,
}

impl TinyGpt {
    fn new() -> Result<Self> {
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
fn batch(n: usize, device: Device) -> Result<(Tensor, Tensor)> {
    let seq = Tensor::randint(0, VOCAB as i64, [n, LENGTH], DType::I64)?;
    let (sorted, _) = seq.sort()?;
    let input = kiln::cat_with(&[seq, sorted.narrow(1, 0, LENGTH as i64 - 1)?], 1)?;
    let ignored = Tensor::full([n, LENGTH - 1], -100i64, DType::I64)?;
    let target = kiln::cat_with(&[ignored, sorted], 1)?;
    Ok((input.to_device(device)?, target.to_device(device)?))
}

fn main() -> Result<()> {
    let device = common::device_arg()?;
    let start = Instant::now();
    kiln::manual_seed(0);
    let mut model = TinyGpt::new()?;
    model.to_device(device)?;
    println!(
        "sorting {LENGTH} digits from 0..{VOCAB}: {} parameters on {device}",
        model.num_parameters()
    );
    let mut opt = AdamW::new(
        model.parameters(),
        AdamOptions {
            lr: 3e-3,
            weight_decay: 0.01,
            ..Default::default()
        },
    )?;
    let mut sched = OneCycleLR::new(
        &mut opt,
        OneCycleOptions {
            max_lr: 3e-3,
            total_steps: Some(STEPS as i64),
            ..Default::default()
        },
    )?;

    let mut progress = common::Progress::new(1, STEPS);
    let mut running = 0.0;
    for step in 1..=STEPS {
        let (x, y) = batch(BATCH, device)?;
        let logits = model.forward(&x)?;
        let loss = F::cross_entropy(&logits.reshape([-1, VOCAB as i64])?, &y.reshape([-1])?)?;
        opt.zero_grad()?;
        loss.backward()?;
        opt.step()?;
        sched.step(&mut opt)?;
        let l = loss.item::<f64>()?;
        running += l;
        progress.batch(1, step, BATCH, l);
        if step % 50 == 0 {
            progress.println(format!("step {step:3}  loss {:.4}", running / 50.0));
            running = 0.0;
        }
    }
    progress.finish();

    model.eval();
    let _guard = no_grad();
    let n_test = 2000;
    let (x, y) = batch(n_test, device)?;
    // Teacher-forced: every sorted-half token predicted from the true prefix.
    let pred = model.forward(&x)?.argmax_with(Some(2), false)?;
    let half = |t: &Tensor| t.narrow(1, LENGTH as i64 - 1, LENGTH as i64);
    let correct = half(&pred)?.eq(&half(&y)?)?.sum()?.item::<i64>()?;
    let tokens = n_test * LENGTH;
    println!(
        "token accuracy {:.2}% ({correct}/{tokens})",
        100.0 * correct as f64 / tokens as f64
    );
    // Greedy decoding: the model writes the sorted half from the unsorted one alone.
    let mut seq = x.narrow(1, 0, LENGTH as i64)?;
    for _ in 0..LENGTH {
        let logits = model.forward(&seq)?;
        let last = logits.select(1, -1)?.argmax_with(Some(1), true)?;
        seq = kiln::cat_with(&[seq, last], 1)?;
    }
    let generated = seq.narrow(1, LENGTH as i64, LENGTH as i64)?;
    let sorted = half(&y)?;
    let right = generated
        .eq(&sorted)?
        .sum_dim(&[1])?
        .eq_scalar(LENGTH as i64)?
        .sum()?
        .item::<i64>()?;
    println!(
        "sequences sorted by greedy decoding {:.2}% ({right}/{n_test})",
        100.0 * right as f64 / n_test as f64
    );
    println!("time {:.2}s", start.elapsed().as_secs_f64());
    Ok(())
}
