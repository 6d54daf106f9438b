//! Speed of kiln's hot paths against a peer measured in the same run: a plain Rust loop over
//! `Vec<f32>` (what auto-vectorised code reaches) and `matrixmultiply` called directly.
//! Run: `cargo bench --bench ops`; ratios go in BENCHMARKS.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use kiln::{DType, Tensor};

const N: usize = 1 << 20;

fn elementwise(c: &mut Criterion) {
    let mut g = c.benchmark_group("add_f32_1M");
    let a = Tensor::rand([N], DType::F32).unwrap();
    let b = Tensor::rand([N], DType::F32).unwrap();
    g.bench_function("kiln", |bench| bench.iter(|| black_box(a.add(&b).unwrap())));
    let (va, vb) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    g.bench_function("plain_loop", |bench| {
        bench.iter(|| black_box(va.iter().zip(&vb).map(|(x, y)| x + y).collect::<Vec<f32>>()))
    });
    let m = Tensor::rand([1024, 1024], DType::F32).unwrap();
    let mt = m.t().unwrap();
    g.bench_function("kiln_transposed", |bench| {
        bench.iter(|| black_box(mt.add(&mt).unwrap()))
    });
    // One row-major and one transposed operand: one of them is necessarily read across.
    g.bench_function("kiln_mixed_transposed", |bench| {
        bench.iter(|| black_box(m.add(&mt).unwrap()))
    });
    let p = Tensor::rand([N], DType::F32).unwrap();
    g.bench_function("kiln_inplace", |bench| {
        bench.iter(|| black_box(p.add_(&b).unwrap()))
    });
    g.finish();

    let mut g = c.benchmark_group("exp_f32_1M");
    g.bench_function("kiln", |bench| bench.iter(|| black_box(a.exp().unwrap())));
    // In place: no fresh output, so no page faults; the kernel's own cost. (Repeated, the
    // values reach inf, which the branch-free kernel computes at the same speed.)
    let q = Tensor::rand([N], DType::F32).unwrap();
    g.bench_function("kiln_inplace", |bench| {
        bench.iter(|| black_box(q.exp_().unwrap()))
    });
    g.bench_function("plain_loop", |bench| {
        bench.iter(|| black_box(va.iter().map(|x| x.exp()).collect::<Vec<f32>>()))
    });
    g.finish();

    // f64 transcendental ops on 1M elements spread over [-4, 4] (log1p over [-0.9, 7.1]),
    // into fresh outputs: the same inputs on every run, so a kernel whose speed depends on
    // the values (a scalar libm loop) sees the same ones each time.
    let mut g = c.benchmark_group("unary_f64_1M");
    let step = 8.0 / N as f64;
    let x: Vec<f64> = (0..N)
        .map(|i| -4.0 + ((i * 7919) % N) as f64 * step)
        .collect();
    let u = Tensor::from_vec(x.clone(), &[N]).unwrap();
    let v = Tensor::from_vec(x.iter().map(|x| x + 3.1).collect::<Vec<f64>>(), &[N]).unwrap();
    g.bench_function("tanh", |bench| bench.iter(|| black_box(u.tanh().unwrap())));
    g.bench_function("expm1", |bench| {
        bench.iter(|| black_box(u.expm1().unwrap()))
    });
    g.bench_function("log1p", |bench| {
        bench.iter(|| black_box(v.log1p().unwrap()))
    });
    g.bench_function("erf", |bench| bench.iter(|| black_box(u.erf().unwrap())));
    g.bench_function("gelu", |bench| bench.iter(|| black_box(u.gelu().unwrap())));
    g.bench_function("gelu_tanh", |bench| {
        bench.iter(|| black_box(u.gelu_with("tanh").unwrap()))
    });
    // exp, vectorised already: the same fresh 8 MB output with a cheap kernel.
    g.bench_function("exp", |bench| bench.iter(|| black_box(u.exp().unwrap())));
    g.finish();

    let mut g = c.benchmark_group("sum_f32_1M");
    g.bench_function("kiln", |bench| bench.iter(|| black_box(a.sum().unwrap())));
    g.bench_function("plain_loop", |bench| {
        bench.iter(|| black_box(va.iter().sum::<f32>()))
    });
    g.finish();

    // Sums along one dim of a 2048 × 2048 matrix and of its transpose: the transposed input
    // reduced over its last dim reads columns of the stored matrix.
    let mut g = c.benchmark_group("sum_dim_f32_2048x2048");
    let m = Tensor::rand([2048, 2048], DType::F32).unwrap();
    let mt = m.t().unwrap();
    for (name, t, dim) in [
        ("last_dim", &m, 1),
        ("first_dim", &m, 0),
        ("transposed_last_dim", &mt, 1),
        ("transposed_first_dim", &mt, 0),
    ] {
        g.bench_function(name, |bench| {
            bench.iter(|| black_box(t.sum_dim(&[dim]).unwrap()))
        });
    }
    g.finish();
}

/// f32 products of two n x n matrices at the sizes issue 27 tracks; criterion's element rate
/// is the FLOP rate (`2 n^3`). PyTorch's figures for the same products:
/// `python3 benches/mm_half_torch.py --sizes 64 256 1024 2048 --dtypes f32`; the
/// `matrixmultiply` crate beside kiln at 256. Run: `cargo bench --bench ops -- mm_f32_`.
fn matmul(c: &mut Criterion) {
    for n in [64usize, 256, 1024, 2048] {
        let mut g = c.benchmark_group(format!("mm_f32_{n}"));
        if n >= 1024 {
            g.sample_size(10);
        }
        g.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        let a = Tensor::rand([n, n], DType::F32).unwrap();
        let b = Tensor::rand([n, n], DType::F32).unwrap();
        g.bench_function("kiln", |bench| bench.iter(|| black_box(a.mm(&b).unwrap())));
        if n == 256 {
            let (va, vb) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
            g.bench_function("matrixmultiply", |bench| {
                bench.iter(|| {
                    let mut out = vec![0f32; n * n];
                    // SAFETY: all three buffers hold n*n f32 and the strides describe
                    // row-major n×n.
                    unsafe {
                        matrixmultiply::sgemm(
                            n,
                            n,
                            n,
                            1.0,
                            va.as_ptr(),
                            n as isize,
                            1,
                            vb.as_ptr(),
                            n as isize,
                            1,
                            0.0,
                            out.as_mut_ptr(),
                            n as isize,
                            1,
                        );
                    }
                    black_box(out)
                })
            });
        }
        g.finish();
    }
}

/// Square products in `f32`, `bf16` and `f16` at 1024 and 2048: criterion's element rate is
/// the FLOP rate (`2 n^3` per product). PyTorch's figures for the same products:
/// `benches/mm_half_torch.py`. Run: `cargo bench --bench ops -- mm_half`.
fn matmul_half(c: &mut Criterion) {
    for n in [1024usize, 2048] {
        let mut g = c.benchmark_group(format!("mm_half_{n}"));
        g.sample_size(10);
        g.throughput(Throughput::Elements(2 * (n as u64).pow(3)));
        for (name, dtype) in [
            ("f32", DType::F32),
            ("bf16", DType::BF16),
            ("f16", DType::F16),
        ] {
            let a = Tensor::rand([n, n], DType::F32)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let b = Tensor::rand([n, n], DType::F32)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            g.bench_function(name, |bench| bench.iter(|| black_box(a.mm(&b).unwrap())));
        }
        g.finish();
    }
}

fn training_step(c: &mut Criterion) {
    // One forward + backward of the digits MLP on a batch of 64: the main job's inner loop.
    let x = Tensor::rand([64, 64], DType::F32).unwrap();
    let y = Tensor::randint(0, 10, [64], DType::I64).unwrap();
    let w1 = Tensor::rand([64, 128], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let w2 = Tensor::rand([128, 10], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    c.bench_function("mlp_step_batch64", |bench| {
        bench.iter(|| {
            let logits = x.matmul(&w1).unwrap().relu().unwrap().matmul(&w2).unwrap();
            let loss = logits
                .log_softmax(1)
                .unwrap()
                .gather(1, &y.unsqueeze(1).unwrap())
                .unwrap()
                .mean()
                .unwrap()
                .neg()
                .unwrap();
            loss.backward().unwrap();
            w1.zero_grad();
            w2.zero_grad();
        })
    });
}

fn normalization(c: &mut Criterion) {
    // layer_norm over the last dim of a [4096, 1024] batch with affine weight and bias, as in
    // a transformer block: forward alone, then forward + backward to all three inputs.
    let x = Tensor::randn([4096, 1024], DType::F32).unwrap();
    let w = Tensor::randn([1024], DType::F32).unwrap();
    let b = Tensor::randn([1024], DType::F32).unwrap();
    let mut g = c.benchmark_group("layer_norm_f32_4096x1024");
    g.bench_function("forward", |bench| {
        bench.iter(|| {
            black_box(kiln::layer_norm_with(&x, [1024], Some(&w), Some(&b), 1e-5, true).unwrap())
        })
    });
    let (xg, wg, bg) = (
        x.detach().requires_grad_(true).unwrap(),
        w.detach().requires_grad_(true).unwrap(),
        b.detach().requires_grad_(true).unwrap(),
    );
    let go = Tensor::randn([4096, 1024], DType::F32).unwrap();
    g.bench_function("forward_backward", |bench| {
        bench.iter(|| {
            let y = kiln::layer_norm_with(&xg, [1024], Some(&wg), Some(&bg), 1e-5, true).unwrap();
            y.backward_with(Some(&go), false, false).unwrap();
            xg.zero_grad();
            wg.zero_grad();
            bg.zero_grad();
        })
    });
    g.finish();
}

fn cross_entropy(c: &mut Criterion) {
    // F.cross_entropy on [4096, 1000] float32 logits with class-index targets: the forward
    // alone, and forward + backward down to the logits' gradient.
    let logits = Tensor::randn([4096, 1000], DType::F32)
        .unwrap()
        .requires_grad_(true)
        .unwrap();
    let target = Tensor::randint(0, 1000, [4096], DType::I64).unwrap();
    let mut g = c.benchmark_group("cross_entropy_f32_4096x1000");
    g.bench_function("forward", |bench| {
        bench.iter(|| black_box(kiln::cross_entropy_loss(&logits, &target).unwrap()))
    });
    g.bench_function("forward_backward", |bench| {
        bench.iter(|| {
            let loss = kiln::cross_entropy_loss(&logits, &target).unwrap();
            loss.backward().unwrap();
            logits.zero_grad();
        })
    });
    g.finish();
}

fn optimizer_step(c: &mut Criterion) {
    // One SGD (momentum 0.9), Adam, RMSprop (momentum 0.9, centered) and Adagrad step over
    // the parameters of an MLP 784-1024-1024-10 (1.86M float32 values, nn.Linear's [out, in]
    // weights and biases) with gradients in place: the fused kernels against the op-by-op (composite) update.
    use kiln::optim::{
        Adagrad, AdagradOptions, Adam, AdamOptions, Optimizer, RMSprop, RMSpropOptions, SGDOptions,
        SGD,
    };
    let shapes: [&[usize]; 6] = [
        &[1024, 784],
        &[1024],
        &[1024, 1024],
        &[1024],
        &[10, 1024],
        &[10],
    ];
    let params: Vec<Tensor> = shapes
        .iter()
        .map(|s| {
            let p = Tensor::randn(*s, DType::F32)
                .unwrap()
                .requires_grad_(true)
                .unwrap();
            p.set_grad(Some(Tensor::randn(*s, DType::F32).unwrap()))
                .unwrap();
            p
        })
        .collect();
    let mut g = c.benchmark_group("optimizer_step_mlp_784_1024_1024_10");
    for fused in [true, false] {
        let name = if fused { "fused" } else { "composite" };
        let mut sgd = SGD::new(
            params.clone(),
            SGDOptions {
                lr: 1e-6,
                momentum: 0.9,
                fused,
                ..Default::default()
            },
        )
        .unwrap();
        g.bench_function(format!("sgd_momentum_{name}"), |bench| {
            bench.iter(|| sgd.step().unwrap())
        });
        let mut adam = Adam::new(
            params.clone(),
            AdamOptions {
                lr: 1e-6,
                fused,
                ..Default::default()
            },
        )
        .unwrap();
        g.bench_function(format!("adam_{name}"), |bench| {
            bench.iter(|| adam.step().unwrap())
        });
        let mut rmsprop = RMSprop::new(
            params.clone(),
            RMSpropOptions {
                lr: 1e-6,
                momentum: 0.9,
                centered: true,
                fused,
                ..Default::default()
            },
        )
        .unwrap();
        g.bench_function(format!("rmsprop_centered_momentum_{name}"), |bench| {
            bench.iter(|| rmsprop.step().unwrap())
        });
        let mut adagrad = Adagrad::new(
            params.clone(),
            AdagradOptions {
                lr: 1e-6,
                fused,
                ..Default::default()
            },
        )
        .unwrap();
        g.bench_function(format!("adagrad_{name}"), |bench| {
            bench.iter(|| adagrad.step().unwrap())
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(std::time::Duration::from_secs(2)).warm_up_time(std::time::Duration::from_millis(500));
    targets = elementwise, matmul, matmul_half, training_step, normalization, cross_entropy, optimizer_step
}
criterion_main!(benches);
