//! kiln's hot paths beside candle-core in the same run (issue 9's table), f32 on the CPU, plus
//! the machine's limits measured in that run: a memory copy (bandwidth) and a register-only
//! FMA loop (peak FLOP/s).
//! Run: `cargo bench --manifest-path benches/peers/Cargo.toml --bench ops`.
//! Both libraries use every core (kiln's pool and candle's rayon pool both default to
//! `available_parallelism`); set `KILN_NUM_THREADS` / `RAYON_NUM_THREADS` to pin them.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

const BIG: usize = 16 << 20;

fn kiln_rand(shape: &[usize]) -> kiln::Tensor {
    kiln::Tensor::rand(shape, kiln::DType::F32).unwrap()
}

fn candle_rand(shape: &[usize]) -> candle_core::Tensor {
    candle_core::Tensor::rand(0f32, 1f32, shape, &candle_core::Device::Cpu).unwrap()
}

fn configure<'a>(
    c: &'a mut Criterion,
    name: &str,
) -> criterion::BenchmarkGroup<'a, criterion::measurement::WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    g
}

/// Elementwise ops over 16 Mi f32: bytes moved are two reads and one write for add, one of
/// each for exp; the limit is a plain memory copy of one 64 MiB buffer (one read, one write).
fn elementwise(c: &mut Criterion) {
    let (ka, kb) = (kiln_rand(&[BIG]), kiln_rand(&[BIG]));
    let (ca, cb) = (candle_rand(&[BIG]), candle_rand(&[BIG]));

    let mut g = configure(c, "add_f32_16M");
    g.throughput(Throughput::Bytes((3 * 4 * BIG) as u64));
    g.bench_function("kiln", |b| b.iter(|| black_box(ka.add(&kb).unwrap())));
    g.bench_function("candle", |b| b.iter(|| black_box((&ca + &cb).unwrap())));
    g.finish();

    let mut g = configure(c, "exp_f32_16M");
    g.throughput(Throughput::Bytes((2 * 4 * BIG) as u64));
    g.bench_function("kiln", |b| b.iter(|| black_box(ka.exp().unwrap())));
    g.bench_function("candle", |b| b.iter(|| black_box(ca.exp().unwrap())));
    let src = vec![1f32; BIG];
    let mut dst = vec![0f32; BIG];
    g.bench_function("limit_memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    g.finish();

    let mut g = configure(c, "sum_f32_16M");
    g.throughput(Throughput::Bytes((4 * BIG) as u64));
    g.bench_function("kiln", |b| b.iter(|| black_box(ka.sum().unwrap())));
    g.bench_function("candle", |b| b.iter(|| black_box(ca.sum_all().unwrap())));
    g.finish();
}

/// `x.t().contiguous()` of a 4096 × 4096 f32 matrix: one strided read, one dense write.
fn transpose_copy(c: &mut Criterion) {
    let n = 4096;
    let (k, cd) = (kiln_rand(&[n, n]), candle_rand(&[n, n]));
    let mut g = configure(c, "transpose_copy_f32_4096");
    g.throughput(Throughput::Bytes((2 * 4 * n * n) as u64));
    g.bench_function("kiln", |b| {
        b.iter(|| black_box(k.t().unwrap().contiguous().unwrap()))
    });
    g.bench_function("candle", |b| {
        b.iter(|| black_box(cd.t().unwrap().contiguous().unwrap()))
    });
    g.finish();
}

/// Softmax over the last dim of [4096, 1024]; candle's fastest path is
/// `candle_nn::ops::softmax_last_dim` (a fused kernel).
fn softmax(c: &mut Criterion) {
    let (k, cd) = (kiln_rand(&[4096, 1024]), candle_rand(&[4096, 1024]));
    let mut g = configure(c, "softmax_f32_4096x1024");
    g.throughput(Throughput::Bytes((2 * 4 * 4096 * 1024) as u64));
    g.bench_function("kiln", |b| b.iter(|| black_box(k.softmax(-1).unwrap())));
    g.bench_function("candle", |b| {
        b.iter(|| black_box(candle_nn::ops::softmax_last_dim(&cd).unwrap()))
    });
    g.finish();
}

/// f32 matmul of two n × n matrices; the limit is the FMA peak of every core.
fn matmul(c: &mut Criterion) {
    for n in [1024usize, 256] {
        let (ka, kb) = (kiln_rand(&[n, n]), kiln_rand(&[n, n]));
        let (ca, cb) = (candle_rand(&[n, n]), candle_rand(&[n, n]));
        let mut g = configure(c, &format!("matmul_f32_{n}"));
        g.throughput(Throughput::Elements((2 * n * n * n) as u64));
        g.bench_function("kiln", |b| b.iter(|| black_box(ka.mm(&kb).unwrap())));
        g.bench_function("candle", |b| b.iter(|| black_box(ca.matmul(&cb).unwrap())));
        g.finish();
    }
}

/// The cost of one call on a tiny tensor: what dispatch, allocation and autograd add.
fn overhead(c: &mut Criterion) {
    let mut g = configure(c, "add_f32_1_element");
    let (ka, kb) = (kiln_rand(&[1]), kiln_rand(&[1]));
    g.bench_function(BenchmarkId::new("kiln", "no_grad"), |b| {
        b.iter(|| black_box(ka.add(&kb).unwrap()))
    });
    let kg = kiln_rand(&[1]);
    kg.requires_grad_(true).unwrap();
    g.bench_function(BenchmarkId::new("kiln", "requires_grad"), |b| {
        b.iter(|| black_box(kg.add(&kb).unwrap()))
    });
    let (ca, cb) = (candle_rand(&[1]), candle_rand(&[1]));
    g.bench_function(BenchmarkId::new("candle", "no_grad"), |b| {
        b.iter(|| black_box((&ca + &cb).unwrap()))
    });
    let cv = candle_core::Var::from_tensor(&candle_rand(&[1])).unwrap();
    g.bench_function(BenchmarkId::new("candle", "requires_grad"), |b| {
        b.iter(|| black_box((cv.as_tensor() + &cb).unwrap()))
    });
    g.finish();
}

/// The machine's FMA peak: independent register FMA chains on every core (AVX-512 when the
/// CPU has it, else AVX2+FMA), in FLOP (2 per lane per FMA).
fn fma_peak(c: &mut Criterion) {
    let mut g = configure(c, "limit_fma_peak");
    // Long enough (~15 ms) that starting the threads is noise.
    const ITERS: usize = 1 << 22;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let lanes = fma::lanes();
    g.throughput(Throughput::Elements(
        (threads * ITERS * fma::CHAINS * lanes * 2) as u64,
    ));
    g.bench_function("all_cores", |b| {
        b.iter(|| {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| black_box(fma::run(ITERS)));
                }
            })
        })
    });
    g.finish();
}

mod fma {
    pub const CHAINS: usize = 16;

    pub fn lanes() -> usize {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                return 16;
            }
            if is_x86_feature_detected!("fma") {
                return 8;
            }
        }
        1
    }

    pub fn run(iters: usize) -> f32 {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F (checked above).
                return unsafe { avx512(iters) };
            }
            if is_x86_feature_detected!("fma") {
                // SAFETY: the CPU has FMA and AVX (checked above).
                return unsafe { avx2(iters) };
            }
        }
        let mut acc = [1f32; CHAINS];
        for _ in 0..iters {
            for a in &mut acc {
                *a = a.mul_add(0.999_999, 1e-7);
            }
        }
        acc.iter().sum()
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512(iters: usize) -> f32 {
        use std::arch::x86_64::*;
        let m = _mm512_set1_ps(0.999_999);
        let a = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm512_fmadd_ps(*x, m, a);
            }
        }
        let mut s = _mm512_setzero_ps();
        for x in acc {
            s = _mm512_add_ps(s, x);
        }
        _mm512_reduce_add_ps(s)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx,fma")]
    unsafe fn avx2(iters: usize) -> f32 {
        use std::arch::x86_64::*;
        let m = _mm256_set1_ps(0.999_999);
        let a = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(1.0); CHAINS];
        for _ in 0..iters {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, m, a);
            }
        }
        let mut out = [0f32; 8];
        let mut s = _mm256_setzero_ps();
        for x in acc {
            s = _mm256_add_ps(s, x);
        }
        _mm256_storeu_ps(out.as_mut_ptr(), s);
        out.iter().sum()
    }
}

criterion_group!(
    benches,
    fma_peak,
    matmul,
    elementwise,
    transpose_copy,
    softmax,
    overhead
);
criterion_main!(benches);
