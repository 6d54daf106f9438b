//! Mixed precision on the CPU: the tiny transformer's training step (2 layers, d_model 48,
//! batch 64 × 11 tokens, AdamW) and a 2-layer encoder's (d_model 256, batch 32 × 128, Adam)
//! in float32 and under bf16 autocast, and a convolution's forward (and backward) in f32 and
//! bf16. `benches/amp_torch.py`
//! times the same with PyTorch on the same machine; the two go side by side in BENCHMARKS.md.
//! (Half-precision `mm` alone: `cargo bench --bench ops -- mm_half_`.)
//! Run: `cargo bench --bench amp` (then `python3 benches/amp_torch.py`).

#[path = "../examples/common/tiny_gpt.rs"]
mod tiny_gpt;

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use kiln::nn::{
    functional as F, Forward, Module, TransformerEncoder, TransformerEncoderLayer,
    TransformerLayerOptions,
};
use kiln::optim::{Adam, AdamOptions, AdamW, Optimizer};
use kiln::{DType, Device};
use tiny_gpt::{batch, TinyGpt, VOCAB};

fn transformer_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("tiny_transformer_train_step");
    for mixed in [false, true] {
        kiln::manual_seed(0);
        let model = TinyGpt::new().unwrap();
        let mut opt = AdamW::new(model.parameters(), AdamOptions::default()).unwrap();
        let (x, y) = batch(64, Device::Cpu).unwrap();
        let y = y.reshape([-1]).unwrap();
        let name = if mixed { "bf16_autocast" } else { "f32" };
        g.bench_function(name, |b| {
            b.iter(|| {
                let loss = {
                    let _r = mixed.then(|| kiln::autocast(Device::Cpu, DType::BF16).unwrap());
                    let logits = model.forward(&x).unwrap();
                    F::cross_entropy(&logits.reshape([-1, VOCAB as i64]).unwrap(), &y).unwrap()
                };
                opt.zero_grad().unwrap();
                loss.backward().unwrap();
                opt.step().unwrap();
                black_box(loss)
            })
        });
    }
    g.finish();
}

/// The encoder of issue 27's table, where the matrices are large enough for the bf16 GEMM to
/// matter: 2 layers, d_model 256, 4 heads, feed-forward 1024, batch 32 × 128, Adam, loss the
/// mean square of the output (no dropout, so both precisions run the same graph).
fn encoder_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("encoder_train_step");
    g.sample_size(10);
    for mixed in [false, true] {
        kiln::manual_seed(0);
        let layer = TransformerEncoderLayer::with_options(
            256,
            4,
            TransformerLayerOptions {
                dim_feedforward: 1024,
                dropout: 0.0,
                batch_first: true,
                ..Default::default()
            },
        )
        .unwrap();
        let model = TransformerEncoder::new(layer, 2, None).unwrap();
        let mut opt = Adam::new(model.parameters(), AdamOptions::default()).unwrap();
        let x = kiln::Tensor::randn([32, 128, 256], DType::F32).unwrap();
        let name = if mixed { "bf16_autocast" } else { "f32" };
        g.bench_function(name, |b| {
            b.iter(|| {
                let loss = {
                    let _r = mixed.then(|| kiln::autocast(Device::Cpu, DType::BF16).unwrap());
                    model.forward(&x).unwrap().square().unwrap().mean().unwrap()
                };
                opt.zero_grad().unwrap();
                loss.backward().unwrap();
                opt.step().unwrap();
                black_box(loss)
            })
        });
    }
    g.finish();
}

/// Issue 27's convolution, forward with a bias, in f32 and in bf16 (the dtype autocast's
/// `lower` gives it): [16,64,56,56] × [64,64,3,3], padding 1.
fn conv_forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("conv2d_bias_forward");
    g.sample_size(10);
    for dtype in [DType::F32, DType::BF16] {
        kiln::manual_seed(0);
        let to = |t: kiln::Tensor| t.to_dtype(dtype).unwrap();
        let x = to(kiln::Tensor::randn([16, 64, 56, 56], DType::F32).unwrap());
        let w = to(kiln::Tensor::randn([64, 64, 3, 3], DType::F32).unwrap());
        let b = to(kiln::Tensor::randn([64], DType::F32).unwrap());
        let _g = kiln::no_grad();
        g.bench_function(format!("{dtype:?}").to_lowercase(), |bench| {
            bench.iter(|| {
                black_box(F::conv2d_with(&x, &w, Some(&b), [1, 1], [1, 1], [1, 1], 1).unwrap())
            })
        });
    }
    g.finish();
}

/// The same convolution's forward and backward (input, weight and bias gradients of the
/// output's sum), in f32 and in bf16: what a training step spends on it.
fn conv_forward_backward(c: &mut Criterion) {
    use kiln::autograd::{grad, GradOptions};
    let mut g = c.benchmark_group("conv2d_bias_forward_backward");
    g.sample_size(10);
    for dtype in [DType::F32, DType::BF16] {
        kiln::manual_seed(0);
        let leaf = |s: &[usize]| {
            let t = kiln::Tensor::randn(s.to_vec(), DType::F32).unwrap();
            t.to_dtype(dtype).unwrap().requires_grad_(true).unwrap()
        };
        let (x, w, b) = (leaf(&[16, 64, 56, 56]), leaf(&[64, 64, 3, 3]), leaf(&[64]));
        let inputs = [x.clone(), w.clone(), b.clone()];
        g.bench_function(format!("{dtype:?}").to_lowercase(), |bench| {
            bench.iter(|| {
                let y = F::conv2d_with(&x, &w, Some(&b), [1, 1], [1, 1], [1, 1], 1).unwrap();
                let loss = y.sum().unwrap();
                black_box(grad(&[loss], &inputs, &[], GradOptions::default()).unwrap())
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    transformer_step,
    encoder_step,
    conv_forward,
    conv_forward_backward
);
criterion_main!(benches);
