//! Trains a 64-128-10 MLP on the UCI handwritten digits with `kiln::nn`, `kiln::optim` and a
//! `kiln::data::DataLoader`: Adam (lr 1e-3), batches of 64, 30 epochs, seed 0, an 80/20
//! split. Prints the loss per epoch, the final test accuracy and the time taken.
//!
//! Run: `cargo run --release --example digits`, or on a GPU:
//! `cargo run --release --features cuda --example digits -- --device cuda`

mod common;

use common::models::Mlp;
use kiln::data::{DataLoader, TensorDataset};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::{Adam, AdamOptions, Optimizer};
use kiln::{no_grad, Result};
use std::time::Instant;

fn main() -> Result<()> {
    let device = common::device_arg()?;
    let start = Instant::now();
    kiln::manual_seed(0);
    let ((x_train, y_train), (x_test, y_test)) = common::digits_split(device)?;
    let (n_train, n_test) = (x_train.shape()[0], x_test.shape()[0]);
    println!("digits: {n_train} train / {n_test} test samples on {device}");

    let mut model = Mlp::new()?;
    model.to_device(device)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamOptions {
            lr: 1e-3,
            ..Default::default()
        },
    )?;
    let loader = DataLoader::builder(TensorDataset::new((x_train, y_train))?)
        .batch_size(64)
        .shuffle(true)
        .seed(0)
        .build()?;

    let epochs = 30;
    let mut progress = common::Progress::new(epochs, loader.len());
    for epoch in 1..=epochs {
        let (mut total, mut batches) = (0.0, 0);
        for batch in &loader {
            let (x, y) = batch?;
            let loss = F::cross_entropy(&model.forward(&x)?, &y)?;
            opt.zero_grad()?;
            loss.backward()?;
            opt.step()?;
            let l = loss.item::<f64>()?;
            total += l;
            batches += 1;
            progress.batch(epoch, batches, x.shape()[0], l);
        }
        progress.println(format!(
            "epoch {epoch:2}  loss {:.4}",
            total / batches as f64
        ));
    }
    progress.finish();

    let _guard = no_grad();
    let correct = common::correct(&model.forward(&x_test)?, &y_test)?;
    println!(
        "test accuracy {:.2}% ({correct}/{n_test})",
        100.0 * correct as f64 / n_test as f64
    );
    println!("time {:.2}s", start.elapsed().as_secs_f64());
    Ok(())
}
