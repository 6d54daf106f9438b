//! conv2d forward and forward+backward, kiln beside candle in the same run:
//! input [32, 3, 64, 64], weight [16, 3, 3, 3], padding 1, f32 on the CPU.
//! Run: `cargo bench --manifest-path benches/peers/Cargo.toml --bench conv`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};

const X: [usize; 4] = [32, 3, 64, 64];
const W: [usize; 4] = [16, 3, 3, 3];

fn kiln_conv(c: &mut Criterion) {
    use kiln::{DType, Tensor};
    kiln::manual_seed(0);
    let x = Tensor::randn(&X, DType::F32).unwrap();
    let w = Tensor::randn(&W, DType::F32)
        .unwrap()
        .mul_scalar(0.2)
        .unwrap();
    let mut g = c.benchmark_group("conv2d_fwd");
    g.sample_size(20);
    g.bench_function("kiln", |b| {
        b.iter(|| black_box(kiln::conv2d_with(&x, &w, None, &[1], &[1], &[1], 1).unwrap()))
    });
    let (cx, cw) = candle_inputs(&x, &w);
    g.bench_function("candle", |b| {
        b.iter(|| black_box(cx.conv2d(&cw, 1, 1, 1, 1).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("conv2d_fwd_bwd");
    g.sample_size(10);
    let xg = x.detach().requires_grad_(true).unwrap();
    let wg = w.detach().requires_grad_(true).unwrap();
    g.bench_function("kiln", |b| {
        b.iter(|| {
            // Fresh gradients each step, as candle's `backward` returns.
            xg.set_grad(None).unwrap();
            wg.set_grad(None).unwrap();
            let y = kiln::conv2d_with(&xg, &wg, None, &[1], &[1], &[1], 1).unwrap();
            y.sum().unwrap().backward().unwrap();
            black_box((xg.grad(), wg.grad()))
        })
    });
    let vx = candle_core::Var::from_tensor(&cx).unwrap();
    let vw = candle_core::Var::from_tensor(&cw).unwrap();
    g.bench_function("candle", |b| {
        b.iter(|| {
            let y = vx.as_tensor().conv2d(vw.as_tensor(), 1, 1, 1, 1).unwrap();
            black_box(y.sum_all().unwrap().backward().unwrap())
        })
    });
    g.finish();
}

/// The same values as candle tensors.
fn candle_inputs(x: &kiln::Tensor, w: &kiln::Tensor) -> (candle_core::Tensor, candle_core::Tensor) {
    let dev = candle_core::Device::Cpu;
    let cx = candle_core::Tensor::from_vec(x.to_vec::<f32>().unwrap(), &X, &dev).unwrap();
    let cw = candle_core::Tensor::from_vec(w.to_vec::<f32>().unwrap(), &W, &dev).unwrap();
    (cx, cw)
}

criterion_group!(benches, kiln_conv);
criterion_main!(benches);
