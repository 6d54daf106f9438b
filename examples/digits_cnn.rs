//! A small CNN on the UCI handwritten digits (8×8 images): two 3×3 convolutions with batch
//! norm, max-pooling, dropout and a linear head, trained with AdamW and a one-cycle learning
//! rate for 15 epochs. Prints the loss per epoch, the test accuracy (in `eval()` mode) and
//! the time taken; `--save PATH` writes the trained weights as a safetensors checkpoint
//! (readable by `safetensors.torch.load_file`).
//!
//! Run: `cargo run --release --example digits_cnn -- --save digits_cnn.safetensors`, or on
//! a GPU: `cargo run --release --features cuda --example digits_cnn -- --device cuda`

mod common;

use common::models::Cnn;
use kiln::data::{DataLoader, TensorDataset};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, Result};
use std::time::Instant;

fn main() -> Result<()> {
    let device = common::device_arg()?;
    let save = common::arg_value("--save");
    let start = Instant::now();
    kiln::manual_seed(0);
    let ((x_train, y_train), (x_test, y_test)) = common::digits_split(device)?;
    let (n_train, n_test) = (x_train.shape()[0], x_test.shape()[0]);
    println!("digits: {n_train} train / {n_test} test samples on {device}");

    let mut model = Cnn::new()?;
    model.to_device(device)?;
    println!("model: {} parameters", model.num_parameters());
    let loader = DataLoader::builder(TensorDataset::new((x_train, y_train))?)
        .batch_size(64)
        .shuffle(true)
        .seed(0)
        .build()?;
    let epochs = 15;
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
            total_steps: Some((epochs * loader.len()) as i64),
            ..Default::default()
        },
    )?;

    let mut progress = common::Progress::new(epochs, loader.len());
    for epoch in 1..=epochs {
        model.train(true);
        let (mut total, mut batches) = (0.0, 0);
        for batch in &loader {
            let (x, y) = batch?;
            let loss = F::cross_entropy(&model.forward(&x)?, &y)?;
            opt.zero_grad()?;
            loss.backward()?;
            opt.step()?;
            sched.step(&mut opt)?;
            let l = loss.item::<f64>()?;
            total += l;
            batches += 1;
            progress.batch(epoch, batches, x.shape()[0], l);
        }
        model.eval();
        let acc = {
            let _guard = no_grad();
            common::correct(&model.forward(&x_test)?, &y_test)? as f64 / n_test as f64
        };
        progress.println(format!(
            "epoch {epoch:2}  loss {:.4}  test accuracy {:.2}%",
            total / batches as f64,
            100.0 * acc
        ));
    }
    progress.finish();

    model.eval();
    let _guard = no_grad();
    let correct = common::correct(&model.forward(&x_test)?, &y_test)?;
    println!(
        "test accuracy {:.2}% ({correct}/{n_test})",
        100.0 * correct as f64 / n_test as f64
    );
    println!("time {:.2}s", start.elapsed().as_secs_f64());
    if let Some(path) = save {
        kiln::checkpoint::save(&model.state_dict(), &path)?;
        println!("saved {} tensors to {path}", model.state_dict().len());
    }
    Ok(())
}
