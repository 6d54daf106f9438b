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

use common::tiny_gpt::{batch, TinyGpt, LENGTH, VOCAB};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, Result, Tensor};
use std::time::Instant;

const STEPS: usize = 400;
const BATCH: usize = 64;

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
