//! Mixed-precision training on the CPU: the digits CNN and the tiny transformer (the
//! examples' models and optimizer: AdamW, one-cycle learning rate), 100 steps with the forward pass under bf16 autocast against the same
//! 100 steps in float32 from the same seed. The trained models are then evaluated alike, in
//! float32 on held-out data (bf16 logits would add their own rounding to a small loss): the
//! final loss must be within 2% of float32's and the accuracy within 0.5 points.

#[path = "../examples/common/mod.rs"]
mod common;

use common::models::Cnn;
use common::tiny_gpt::{batch, TinyGpt, LENGTH, VOCAB};
use kiln::data::{DataLoader, TensorDataset};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, DType, Device, Result, Tensor};

const STEPS: usize = 100;

/// Each run reseeds kiln's global generator and draws from it (initialisation, shuffling,
/// dropout, batches): runs of the two tests must not interleave.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A bf16 autocast region when `mixed`, else nothing.
fn region(mixed: bool) -> Result<Option<kiln::amp::AutocastGuard>> {
    mixed
        .then(|| kiln::autocast(Device::Cpu, DType::BF16))
        .transpose()
}

/// The examples' optimizer: AdamW with a one-cycle learning rate over the 100 steps.
fn adamw(params: Vec<Tensor>) -> Result<(AdamW, OneCycleLR)> {
    let mut opt = AdamW::new(
        params,
        AdamOptions {
            lr: 3e-3,
            weight_decay: 0.01,
            ..Default::default()
        },
    )?;
    let sched = OneCycleLR::new(
        &mut opt,
        OneCycleOptions {
            max_lr: 3e-3,
            total_steps: Some(STEPS as i64),
            ..Default::default()
        },
    )?;
    Ok((opt, sched))
}

/// `(test loss, test accuracy in %)` after training.
fn digits_cnn(mixed: bool) -> Result<(f64, f64)> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    kiln::manual_seed(0);
    let ((x_train, y_train), (x_test, y_test)) = common::digits_split(Device::Cpu)?;
    let mut model = Cnn::new()?;
    let loader = DataLoader::builder(TensorDataset::new((x_train, y_train))?)
        .batch_size(64)
        .shuffle(true)
        .seed(0)
        .build()?;
    let (mut opt, mut sched) = adamw(model.parameters())?;
    let mut losses = Vec::new();
    'train: loop {
        for b in &loader {
            let (x, y) = b?;
            let loss = {
                let _r = region(mixed)?;
                let logits = model.forward(&x)?;
                if mixed {
                    assert_eq!(logits.dtype(), DType::BF16, "the head runs in bf16");
                }
                F::cross_entropy(&logits, &y)?
            };
            assert_eq!(loss.dtype(), DType::F32, "cross_entropy runs in float32");
            opt.zero_grad()?;
            loss.backward()?;
            opt.step()?;
            sched.step(&mut opt)?;
            losses.push(loss.item::<f64>()?);
            if losses.len() == STEPS {
                break 'train;
            }
        }
    }
    model.eval();
    let _g = no_grad();
    let logits = model.forward(&x_test)?;
    let loss = F::cross_entropy(&logits, &y_test)?.item::<f64>()?;
    let correct = common::correct(&logits, &y_test)?;
    Ok((loss, 100.0 * correct as f64 / x_test.shape()[0] as f64))
}

/// `(loss and teacher-forced token accuracy in % on 2000 fresh sequences)` after training.
fn tiny_transformer(mixed: bool) -> Result<(f64, f64)> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    kiln::manual_seed(0);
    let mut model = TinyGpt::new()?;
    let (mut opt, mut sched) = adamw(model.parameters())?;
    let mut losses = Vec::new();
    for _ in 0..STEPS {
        let (x, y) = batch(64, Device::Cpu)?;
        let loss = {
            let _r = region(mixed)?;
            let logits = model.forward(&x)?;
            F::cross_entropy(&logits.reshape([-1, VOCAB as i64])?, &y.reshape([-1])?)?
        };
        opt.zero_grad()?;
        loss.backward()?;
        opt.step()?;
        sched.step(&mut opt)?;
        losses.push(loss.item::<f64>()?);
    }
    model.eval();
    let _g = no_grad();
    let (x, y) = batch(2000, Device::Cpu)?;
    let logits = model.forward(&x)?;
    let loss = F::cross_entropy(&logits.reshape([-1, VOCAB as i64])?, &y.reshape([-1])?)?;
    let pred = logits.argmax_with(Some(2), false)?;
    let half = |t: &Tensor| t.narrow(1, LENGTH as i64 - 1, LENGTH as i64);
    let correct = half(&pred)?.eq(&half(&y)?)?.sum()?.item::<i64>()?;
    Ok((
        loss.item::<f64>()?,
        100.0 * correct as f64 / (2000 * LENGTH) as f64,
    ))
}

#[track_caller]
fn assert_close_run(what: &str, f32_run: (f64, f64), bf16_run: (f64, f64)) {
    let (l32, a32) = f32_run;
    let (l16, a16) = bf16_run;
    eprintln!(
        "{what}: float32 loss {l32:.4} acc {a32:.2}%, bf16 autocast loss {l16:.4} acc {a16:.2}%"
    );
    assert!(
        (l16 - l32).abs() <= 0.02 * l32,
        "{what}: bf16 autocast loss {l16:.4} is not within 2% of float32's {l32:.4}"
    );
    assert!(
        (a16 - a32).abs() <= 0.5,
        "{what}: bf16 autocast accuracy {a16:.2}% is not within 0.5 points of float32's {a32:.2}%"
    );
}

#[test]
fn digits_cnn_trains_under_bf16_autocast_as_in_float32() -> Result<()> {
    assert_close_run("digits CNN", digits_cnn(false)?, digits_cnn(true)?);
    Ok(())
}

#[test]
fn tiny_transformer_trains_under_bf16_autocast_as_in_float32() -> Result<()> {
    assert_close_run(
        "tiny transformer",
        tiny_transformer(false)?,
        tiny_transformer(true)?,
    );
    Ok(())
}
