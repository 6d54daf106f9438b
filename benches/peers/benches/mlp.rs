//! One training step of an MLP 784-1024-1024-10 (ReLU, cross-entropy, SGD lr 0.01) on a
//! batch of 256, kiln's nn + optim beside candle-nn in the same run, f32 on the CPU.
//! Run: `cargo bench --manifest-path benches/peers/Cargo.toml --bench mlp`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};

const B: usize = 256;
const DIMS: [usize; 4] = [784, 1024, 1024, 10];

fn mlp_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("mlp_train_step");
    g.sample_size(20);

    {
        use kiln::nn::{Forward, Linear, Module, ReLU, Sequential};
        use kiln::optim::{Optimizer, SGDOptions, SGD};
        use kiln::{DType, Tensor};
        kiln::manual_seed(0);
        let net = Sequential::new()
            .add(Linear::new(DIMS[0], DIMS[1]).unwrap())
            .add(ReLU)
            .add(Linear::new(DIMS[1], DIMS[2]).unwrap())
            .add(ReLU)
            .add(Linear::new(DIMS[2], DIMS[3]).unwrap());
        let mut opt = SGD::new(
            net.parameters(),
            SGDOptions {
                lr: 0.01,
                ..Default::default()
            },
        )
        .unwrap();
        let x = Tensor::randn(&[B, DIMS[0]], DType::F32).unwrap();
        let y = Tensor::randint(0, 10, &[B], DType::I64).unwrap();
        g.bench_function("kiln", |b| {
            b.iter(|| {
                opt.zero_grad().unwrap();
                let loss =
                    kiln::nn::functional::cross_entropy(&net.forward(&x).unwrap(), &y).unwrap();
                loss.backward().unwrap();
                opt.step().unwrap();
                black_box(loss)
            })
        });
    }

    {
        use candle_core::{DType, Device, Module, Tensor};
        use candle_nn::{linear, Optimizer, VarBuilder, VarMap, SGD};
        let dev = Device::Cpu;
        let varmap = VarMap::new();
        let vb = VarBuilder::from_varmap(&varmap, DType::F32, &dev);
        let l1 = linear(DIMS[0], DIMS[1], vb.pp("l1")).unwrap();
        let l2 = linear(DIMS[1], DIMS[2], vb.pp("l2")).unwrap();
        let l3 = linear(DIMS[2], DIMS[3], vb.pp("l3")).unwrap();
        let mut opt = SGD::new(varmap.all_vars(), 0.01).unwrap();
        let x = Tensor::randn(0f32, 1f32, (B, DIMS[0]), &dev).unwrap();
        let y =
            Tensor::from_vec((0..B as u32).map(|i| i % 10).collect::<Vec<_>>(), B, &dev).unwrap();
        g.bench_function("candle", |b| {
            b.iter(|| {
                let h = l1.forward(&x).unwrap().relu().unwrap();
                let h = l2.forward(&h).unwrap().relu().unwrap();
                let logits = l3.forward(&h).unwrap();
                let loss = candle_nn::loss::cross_entropy(&logits, &y).unwrap();
                opt.backward_step(&loss).unwrap();
                black_box(loss)
            })
        });
    }
    g.finish();
}

criterion_group!(benches, mlp_step);
criterion_main!(benches);
