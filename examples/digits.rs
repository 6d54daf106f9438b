//! Trains a 64-128-10 MLP on the UCI handwritten digits with kiln's ops and autograd:
//! cross-entropy from `log_softmax` + `gather`, Adam written out below, a fixed seed and an
//! 80/20 split. Prints the loss per epoch and the final test accuracy.
//!
//! Run: `cargo run --release --example digits`, or on a GPU:
//! `cargo run --release --features cuda --example digits -- --device cuda`

use flate2::read::GzDecoder;
use kiln::{no_grad, DType, Device, Result, Tensor};
use std::io::Read;
use std::time::Instant;

const DATA: &[u8] = include_bytes!("data/digits.csv.gz");

/// Pixels scaled to [0, 1] as float32 `[n, 64]`, labels as int64 `[n]`.
fn load() -> Result<(Tensor, Tensor)> {
    let mut text = String::new();
    GzDecoder::new(DATA)
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

/// A linear layer initialised like PyTorch's `nn.Linear`: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
fn linear(fan_in: usize, fan_out: usize, device: Device) -> Result<(Tensor, Tensor)> {
    let bound = 1.0 / (fan_in as f64).sqrt();
    let w = Tensor::rand([fan_in, fan_out], DType::F32)?
        .mul_scalar(2.0 * bound)?
        .sub_scalar(bound)?
        .to_device(device)?;
    let b = Tensor::rand([fan_out], DType::F32)?
        .mul_scalar(2.0 * bound)?
        .sub_scalar(bound)?
        .to_device(device)?;
    Ok((w.requires_grad_(true)?, b.requires_grad_(true)?))
}

/// Mean cross-entropy of `logits` `[n, 10]` against int64 `labels` `[n]`.
fn cross_entropy(logits: &Tensor, labels: &Tensor) -> Result<Tensor> {
    let logp = logits.log_softmax(1)?;
    logp.gather(1, &labels.unsqueeze(1)?)?.mean()?.neg()
}

/// Adam (Kingma & Ba), as `torch.optim.Adam` with default betas and eps.
struct Adam {
    params: Vec<Tensor>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    lr: f64,
    step: i32,
}

impl Adam {
    fn new(params: Vec<Tensor>, lr: f64) -> Result<Self> {
        let m = params
            .iter()
            .map(|p| p.zeros_like())
            .collect::<Result<_>>()?;
        let v = params
            .iter()
            .map(|p| p.zeros_like())
            .collect::<Result<_>>()?;
        Ok(Adam {
            params,
            m,
            v,
            lr,
            step: 0,
        })
    }

    fn step(&mut self) -> Result<()> {
        let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8);
        self.step += 1;
        let _guard = no_grad();
        for ((p, m), v) in self.params.iter().zip(&self.m).zip(&self.v) {
            let Some(g) = p.grad() else { continue };
            m.mul_scalar_(b1)?.add_(&g.mul_scalar(1.0 - b1)?)?;
            v.mul_scalar_(b2)?.add_(&g.mul(&g)?.mul_scalar(1.0 - b2)?)?;
            let m_hat = m.div_scalar(1.0 - b1.powi(self.step))?;
            let v_hat = v.div_scalar(1.0 - b2.powi(self.step))?;
            p.sub_(
                &m_hat
                    .div(&v_hat.sqrt()?.add_scalar(eps)?)?
                    .mul_scalar(self.lr)?,
            )?;
        }
        Ok(())
    }

    fn zero_grad(&self) {
        self.params.iter().for_each(|p| p.zero_grad());
    }
}

/// `--device cpu` (default) or `--device cuda[:i]`.
fn device_arg() -> Result<Device> {
    let args: Vec<String> = std::env::args().collect();
    let value = match args.iter().position(|a| a == "--device") {
        Some(i) => args.get(i + 1).map(String::as_str).unwrap_or(""),
        None => "cpu",
    };
    match value {
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

fn main() -> Result<()> {
    let device = device_arg()?;
    let start = Instant::now();
    kiln::manual_seed(0);
    let (x, y) = load()?;
    let (x, y) = (x.to_device(device)?, y.to_device(device)?);
    let n = x.shape()[0];
    let perm = Tensor::randperm(n)?.to_device(device)?;
    let n_train = n * 8 / 10;
    let (train_idx, test_idx) = (
        perm.narrow(0, 0, n_train as i64)?,
        perm.narrow(0, n_train as i64, (n - n_train) as i64)?,
    );
    let (x_train, y_train) = (
        x.index_select(0, &train_idx)?,
        y.index_select(0, &train_idx)?,
    );
    let (x_test, y_test) = (x.index_select(0, &test_idx)?, y.index_select(0, &test_idx)?);
    println!(
        "digits: {n_train} train / {} test samples on {device}",
        n - n_train
    );

    let (w1, b1) = linear(64, 128, device)?;
    let (w2, b2) = linear(128, 10, device)?;
    let forward =
        |x: &Tensor| -> Result<Tensor> { x.matmul(&w1)?.add(&b1)?.relu()?.matmul(&w2)?.add(&b2) };
    let mut opt = Adam::new(vec![w1.clone(), b1.clone(), w2.clone(), b2.clone()], 1e-3)?;

    let batch = 64;
    for epoch in 1..=30 {
        let order = Tensor::randperm(n_train)?.to_device(device)?;
        let (mut total, mut batches) = (0.0, 0);
        for s in (0..n_train).step_by(batch) {
            let len = batch.min(n_train - s) as i64;
            let idx = order.narrow(0, s as i64, len)?;
            let loss = cross_entropy(
                &forward(&x_train.index_select(0, &idx)?)?,
                &y_train.index_select(0, &idx)?,
            )?;
            opt.zero_grad();
            loss.backward()?;
            opt.step()?;
            total += loss.item::<f64>()?;
            batches += 1;
        }
        println!("epoch {epoch:2}  loss {:.4}", total / batches as f64);
    }

    let _guard = no_grad();
    let pred = forward(&x_test)?.argmax_with(Some(1), false)?;
    let correct = pred.eq(&y_test)?.sum()?.item::<i64>()?;
    let acc = correct as f64 / (n - n_train) as f64;
    println!(
        "test accuracy {:.2}% ({correct}/{})",
        100.0 * acc,
        n - n_train
    );
    println!("time {:.2}s", start.elapsed().as_secs_f64());
    Ok(())
}
