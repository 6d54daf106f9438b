//! A probe for per-op overhead, beside the criterion bench (`ops`, `add_f32_1_element`):
//! the best of 15 runs of 200,000 one-element adds, so it reads steadily on a busy machine.
//!
//!     cargo run --release --manifest-path benches/peers/Cargo.toml --example overhead
//!
//! With an argument it loops forever for a profiler: `perf` (add), `perfg` (add recording
//! autograd), `perfe` (allocating an empty tensor).
use std::hint::black_box;
use std::time::Instant;
fn time(mut f: impl FnMut()) -> f64 {
    let n = 200_000;
    let mut best = f64::MAX;
    for _ in 0..15 {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        best = best.min(t.elapsed().as_nanos() as f64 / n as f64);
    }
    best
}
fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    let a = kiln::Tensor::from([1f32]);
    let b = kiln::Tensor::from([2f32]);
    let g = kiln::Tensor::from([3f32]);
    g.requires_grad_(true).unwrap();
    if which == "perf" {
        loop {
            black_box(a.add(&b).unwrap());
        }
    }
    if which == "perfg" {
        loop {
            black_box(g.add(&b).unwrap());
        }
    }
    if which == "perfe" {
        loop {
            black_box(kiln::Tensor::empty([1usize], kiln::DType::F32).unwrap());
        }
    }
    println!(
        "kiln no_grad   {:.0} ns",
        time(|| {
            black_box(a.add(&b).unwrap());
        })
    );
    println!(
        "kiln grad      {:.0} ns",
        time(|| {
            black_box(g.add(&b).unwrap());
        })
    );
    println!(
        "kiln empty     {:.0} ns",
        time(|| {
            black_box(kiln::Tensor::empty([1usize], kiln::DType::F32).unwrap());
        })
    );
    let dev = candle_core::Device::Cpu;
    println!(
        "candle zeros   {:.0} ns",
        time(|| {
            black_box(candle_core::Tensor::zeros(1, candle_core::DType::F32, &dev).unwrap());
        })
    );
    let ca = candle_core::Tensor::new(&[1f32], &dev).unwrap();
    let cb = candle_core::Tensor::new(&[2f32], &dev).unwrap();
    let cv = candle_core::Var::from_tensor(&ca).unwrap();
    println!(
        "candle no_grad {:.0} ns",
        time(|| {
            black_box((&ca + &cb).unwrap());
        })
    );
    println!(
        "candle grad    {:.0} ns",
        time(|| {
            black_box((cv.as_tensor() + &cb).unwrap());
        })
    );
}
