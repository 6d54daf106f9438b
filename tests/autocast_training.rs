//! Mixed-precision training: the digits CNN and the tiny transformer (the examples' models
//! and optimizer: AdamW, one-cycle learning rate), 100 steps with the forward pass under
//! autocast against the same 100 steps in float32 from the same seed: on the CPU under bf16,
//! and on a GPU (`-- --ignored`, run by `scripts/gpu-run`) under f16 with a `GradScaler`.
//! The trained models are then evaluated alike, in float32 on held-out data (half logits
//! would add their own rounding to a small loss): the final loss must be no more than 2%
//! above float32's and the accuracy no more than 0.5 points below it.
//!
//! One-sided on purpose: after 100 steps the tiny transformer is still in its steep descent,
//! where rounding differences move the final loss by several percent, and every bf16 run
//! tried came out at or *below* float32 (seeds 0-3 with the fused attention: 0.1331 vs
//! 0.1398, 0.0795 vs 0.0823, 0.0735 vs 0.1083 and one within 2%; seeds 0-2 with the
//! composite attention: 0.1396 vs 0.1398, 0.0855 vs 0.0945, 0.0759 vs 0.0823). A
//! mixed-precision run that trains better is not what this test guards against.

#[path = "../examples/common/mod.rs"]
mod common;

use common::models::Cnn;
use common::tiny_gpt::{batch, TinyGpt, LENGTH, VOCAB};
use kiln::amp::GradScaler;
use kiln::data::{DataLoader, TensorDataset};
use kiln::nn::{functional as F, Forward, Module};
use kiln::optim::lr_scheduler::{LRScheduler, OneCycleLR, OneCycleOptions};
use kiln::optim::{AdamOptions, AdamW, Optimizer};
use kiln::{no_grad, DType, Device, Result, Tensor};

const STEPS: usize = 100;

/// Each run reseeds kiln's global generator and draws from it (initialisation, shuffling,
/// dropout, batches): runs of the tests must not interleave.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How a run computes: float32, or autocast to `dtype` (with loss scaling when `scaled`).
#[derive(Clone, Copy)]
struct Mode {
    device: Device,
    autocast: Option<DType>,
    scaled: bool,
}

impl Mode {
    fn f32(device: Device) -> Self {
        Mode {
            device,
            autocast: None,
            scaled: false,
        }
    }

    fn region(&self) -> Result<Option<kiln::amp::AutocastGuard>> {
        self.autocast
            .map(|d| kiln::autocast(self.device, d))
            .transpose()
    }
}

/// The examples' optimizer, AdamW with a one-cycle learning rate over the 100 steps, and a
/// loss scaler (a disabled one, a pass-through, unless the mode scales).
struct Trainer {
    opt: AdamW,
    sched: OneCycleLR,
    scaler: GradScaler,
}

impl Trainer {
    fn new(params: Vec<Tensor>, mode: Mode) -> Result<Self> {
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
        let scaler = GradScaler::builder(mode.device)
            .enabled(mode.scaled)
            .build()?;
        Ok(Trainer { opt, sched, scaler })
    }

    fn step(&mut self, loss: &Tensor) -> Result<f64> {
        assert_eq!(loss.dtype(), DType::F32, "the losses are `fp32` ops");
        self.opt.zero_grad()?;
        self.scaler.scale(loss)?.backward()?;
        self.scaler.step(&mut self.opt)?;
        self.scaler.update()?;
        self.sched.step(&mut self.opt)?;
        loss.item::<f64>()
    }
}

/// `(test loss, test accuracy in %)` after training.
fn digits_cnn(mode: Mode) -> Result<(f64, f64)> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    kiln::manual_seed(0);
    let ((x_train, y_train), (x_test, y_test)) = common::digits_split(mode.device)?;
    let mut model = Cnn::new()?;
    model.to_device(mode.device)?;
    let loader = DataLoader::builder(TensorDataset::new((x_train, y_train))?)
        .batch_size(64)
        .shuffle(true)
        .seed(0)
        .build()?;
    let mut trainer = Trainer::new(model.parameters(), mode)?;
    let mut steps = 0;
    'train: loop {
        for b in &loader {
            let (x, y) = b?;
            let loss = {
                let _r = mode.region()?;
                let logits = model.forward(&x)?;
                if let Some(d) = mode.autocast {
                    assert_eq!(logits.dtype(), d, "the head runs in the region's dtype");
                }
                F::cross_entropy(&logits, &y)?
            };
            trainer.step(&loss)?;
            steps += 1;
            if steps == STEPS {
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
fn tiny_transformer(mode: Mode) -> Result<(f64, f64)> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    kiln::manual_seed(0);
    let mut model = TinyGpt::new()?;
    model.to_device(mode.device)?;
    let mut trainer = Trainer::new(model.parameters(), mode)?;
    for _ in 0..STEPS {
        let (x, y) = batch(64, mode.device)?;
        let loss = {
            let _r = mode.region()?;
            let logits = model.forward(&x)?;
            F::cross_entropy(&logits.reshape([-1, VOCAB as i64])?, &y.reshape([-1])?)?
        };
        trainer.step(&loss)?;
    }
    model.eval();
    let _g = no_grad();
    let (x, y) = batch(2000, mode.device)?;
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

/// Trains with `run` in float32 and in `mixed`, and compares.
fn compare(what: &str, run: fn(Mode) -> Result<(f64, f64)>, mixed: Mode) -> Result<()> {
    let (l32, a32) = run(Mode::f32(mixed.device))?;
    let (lmp, amp) = run(mixed)?;
    eprintln!("{what}: float32 loss {l32:.4} acc {a32:.2}%, mixed loss {lmp:.4} acc {amp:.2}%");
    assert!(
        lmp <= 1.02 * l32,
        "{what}: the mixed-precision loss {lmp:.4} is more than 2% above float32's {l32:.4}"
    );
    assert!(
        amp >= a32 - 0.5,
        "{what}: the mixed-precision accuracy {amp:.2}% is more than 0.5 points below float32's {a32:.2}%"
    );
    Ok(())
}

fn cpu_bf16() -> Mode {
    Mode {
        device: Device::Cpu,
        autocast: Some(DType::BF16),
        scaled: false,
    }
}

/// f16 autocast with a GradScaler on the first GPU, or `None` (the test is then skipped).
fn cuda_f16() -> Option<Mode> {
    if !kiln::cuda::is_available() {
        eprintln!("skipped: no CUDA GPU");
        return None;
    }
    Some(Mode {
        device: Device::Cuda(0),
        autocast: Some(DType::F16),
        scaled: true,
    })
}

#[test]
fn digits_cnn_trains_under_bf16_autocast_as_in_float32() -> Result<()> {
    compare("digits CNN, CPU bf16", digits_cnn, cpu_bf16())
}

#[test]
fn tiny_transformer_trains_under_bf16_autocast_as_in_float32() -> Result<()> {
    compare("tiny transformer, CPU bf16", tiny_transformer, cpu_bf16())
}

#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test autocast_training -- --ignored"]
fn cuda_digits_cnn_trains_under_f16_autocast_with_grad_scaler_as_in_float32() -> Result<()> {
    match cuda_f16() {
        Some(mode) => compare("digits CNN, CUDA f16 + GradScaler", digits_cnn, mode),
        None => Ok(()),
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo test --features cuda --test autocast_training -- --ignored"]
fn cuda_tiny_transformer_trains_under_f16_autocast_with_grad_scaler_as_in_float32() -> Result<()> {
    match cuda_f16() {
        Some(mode) => compare(
            "tiny transformer, CUDA f16 + GradScaler",
            tiny_transformer,
            mode,
        ),
        None => Ok(()),
    }
}
