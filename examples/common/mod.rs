//! What the examples share: the digits data and models, the `--device` flag, and a
//! progress bar.
#![allow(dead_code)] // each example uses part of this

pub mod models;
pub mod tiny_gpt;

use flate2::read::GzDecoder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use kiln::{Device, Result, Tensor};
use std::io::{IsTerminal, Read};
use std::time::Instant;

const DIGITS: &[u8] = include_bytes!("../data/digits.csv.gz");

/// The UCI handwritten digits: pixels scaled to [0, 1] as float32 `[n, 64]` (8×8 images),
/// labels as int64 `[n]`.
pub fn load_digits() -> Result<(Tensor, Tensor)> {
    let mut text = String::new();
    GzDecoder::new(DIGITS)
        .read_to_string(&mut text)
        .map_err(|e| kiln::Error::Io {
            context: "reading digits.csv.gz".into(),
            source: e,
        })?;
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let vals: Vec<f32> = line
            .split(',')
            .map(|v| v.trim().parse::<f32>().unwrap_or(0.0))
            .collect();
        xs.extend(vals[..64].iter().map(|v| v / 16.0));
        ys.push(vals[64] as i64);
    }
    let n = ys.len();
    Ok((Tensor::from_vec(xs, &[n, 64])?, Tensor::from_vec(ys, &[n])?))
}

/// The digits split 80/20 with a permutation from kiln's global generator (seed it first),
/// moved to `device`: `((x_train, y_train), (x_test, y_test))`.
pub fn digits_split(device: Device) -> Result<((Tensor, Tensor), (Tensor, Tensor))> {
    let (x, y) = load_digits()?;
    let n = x.shape()[0];
    let n_train = n * 8 / 10;
    let perm = Tensor::randperm(n)?;
    let part = |start: usize, len: usize| -> Result<(Tensor, Tensor)> {
        let idx = perm.narrow(0, start as i64, len as i64)?;
        Ok((
            x.index_select(0, &idx)?.to_device(device)?,
            y.index_select(0, &idx)?.to_device(device)?,
        ))
    };
    Ok((part(0, n_train)?, part(n_train, n - n_train)?))
}

/// The value after `flag` on the command line (`--save out.safetensors`), if given.
pub fn arg_value(flag: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == flag)?;
    args.get(i + 1).cloned()
}

/// The number of rows of `logits` `[n, classes]` whose argmax equals `labels` `[n]`.
pub fn correct(logits: &Tensor, labels: &Tensor) -> Result<i64> {
    logits
        .argmax_with(Some(1), false)?
        .eq(labels)?
        .sum()?
        .item::<i64>()
}

/// `--device cpu` (default) or `--device cuda[:i]`.
pub fn device_arg() -> Result<Device> {
    let given = std::env::args().any(|a| a == "--device");
    let value = match arg_value("--device") {
        Some(v) => v,
        None if given => String::new(), // `--device` with nothing after it
        None => "cpu".into(),
    };
    match value.as_str() {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::Cuda(0)),
        v => match v.strip_prefix("cuda:").and_then(|i| i.parse().ok()) {
            Some(i) => Ok(Device::Cuda(i)),
            None => Err(kiln::Error::Device(format!(
                "--device: expected cpu, cuda or cuda:<index>, got '{v}'"
            ))),
        },
    }
}

/// A training progress bar: epoch, batch, running loss and samples/s. Drawn only when
/// stdout is a terminal, so logs and CI output stay clean.
pub struct Progress {
    bar: ProgressBar,
    epochs: usize,
    start: Instant,
    samples: usize,
}

impl Progress {
    pub fn new(epochs: usize, batches_per_epoch: usize) -> Self {
        let bar = ProgressBar::new((epochs * batches_per_epoch) as u64);
        if std::io::stdout().is_terminal() {
            bar.set_draw_target(ProgressDrawTarget::stdout());
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} batches  {msg}")
                    .expect("valid template"),
            );
        } else {
            bar.set_draw_target(ProgressDrawTarget::hidden());
        }
        Progress {
            bar,
            epochs,
            start: Instant::now(),
            samples: 0,
        }
    }

    /// One batch of `samples` done with loss `loss` in epoch `epoch` (1-based).
    pub fn batch(&mut self, epoch: usize, batch: usize, samples: usize, loss: f64) {
        self.samples += samples;
        let rate = self.samples as f64 / self.start.elapsed().as_secs_f64().max(1e-9);
        self.bar.set_message(format!(
            "epoch {epoch}/{}  batch {batch}  loss {loss:.4}  {rate:.0} samples/s",
            self.epochs
        ));
        self.bar.inc(1);
    }

    /// Prints a line above the bar (or plainly when there is no bar).
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            println!("{}", line.as_ref());
        } else {
            self.bar.println(line);
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
