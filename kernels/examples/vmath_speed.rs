//! Kernel-level speed of the vectorised slice functions (no tensor, no allocation, one
//! thread): ns per element and GB/s (one read and one write per element) over slices that
//! stay in L2 (64 Ki elements) and over 16 Mi elements, beside a plain loop of std's scalar
//! functions and a copy.
//! Run: `cargo run --release -p kiln-kernels --example vmath_speed`.

use kiln_kernels::cpu::vmath;
use std::hint::black_box;
use std::time::Instant;

type SliceFn = fn(&[f32], &mut [f32]);

/// Best of `reps` timings of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    for n in [1usize << 16, 1 << 24] {
        let reps = if n < 1 << 20 { 2000 } else { 10 };
        let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01 - 5.0).collect();
        let pos: Vec<f32> = x.iter().map(|v| v.abs() + 0.1).collect();
        let mut o = vec![0f32; n];
        let report = |name: &str, s: f64| {
            println!(
                "{n:>9} {name:<24} {:8.3} ns/elem {:7.1} GB/s",
                s * 1e9 / n as f64,
                8.0 * n as f64 / s / 1e9
            );
        };
        report("copy", best(reps, || o.copy_from_slice(black_box(&x))));
        report(
            "std f32::exp loop",
            best(reps, || {
                o.iter_mut()
                    .zip(black_box(&x))
                    .for_each(|(o, v)| *o = v.exp())
            }),
        );
        let kernels: [(&str, SliceFn); 7] = [
            ("vmath exp_f32", vmath::exp_f32),
            ("vmath tanh_f32", vmath::tanh_f32),
            ("vmath sigmoid_f32", vmath::sigmoid_f32),
            ("vmath silu_f32", vmath::silu_f32),
            ("vmath erf_f32", vmath::erf_f32),
            ("vmath log_f32 (x > 0)", vmath::log_f32),
            ("vmath gelu_f32", |a, o| vmath::gelu_f32(a, o, "none")),
        ];
        for (name, k) in kernels {
            let input = if name.contains("log") { &pos } else { &x };
            report(name, best(reps, || k(black_box(input), &mut o)));
        }
        report(
            "vmath gelu_f32 tanh",
            best(reps, || vmath::gelu_f32(black_box(&x), &mut o, "tanh")),
        );
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        let mut o64 = vec![0f64; n];
        report(
            "vmath exp_f64 (16 B)",
            best(reps, || vmath::exp_f64(black_box(&x64), &mut o64)),
        );
        report(
            "vmath softmax_f32 rows 1024",
            best(reps, || vmath::softmax_f32(black_box(&x), &mut o, 1024)),
        );
    }
}
