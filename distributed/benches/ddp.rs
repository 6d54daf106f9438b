//! DistributedDataParallel's cost: one training step of the MLP of the peer benchmark
//! (784-1024-1024-10, ReLU, cross-entropy, SGD lr 0.01, batch 256 per rank, f32) with DDP
//! against the same step without it, on every rank at once, alternating; DDP both as
//! PyTorch's default (gradients copied into the buckets and back) and with
//! `gradient_as_bucket_view` (the `.grad`s are the buckets' views: no copy back); and the
//! all-reduce of the same gradient bytes alone, to show how much of it the overlap with
//! backward hides.
//! Run: `cargo bench -p kiln-distributed --features mpi --bench ddp` (it launches itself
//! under `mpirun -np 2`, one kernel thread per rank; `KILN_MPI_NP` picks another size,
//! `KILN_BENCH_BUCKET_MB` another `bucket_cap_mb`).

// The tests' mpirun flags (and helpers this bench does not use).
#[path = "../tests/mpi/common.rs"]
#[allow(dead_code)]
mod common;

use kiln_core::{DType, Tensor};
use kiln_distributed::{self as dist, DdpOptions, DistributedDataParallel, ReduceOp};
use kiln_nn::{functional as F, Forward, Linear, Module, ReLU, Sequential};
use kiln_optim::{Optimizer, SGDOptions, SGD};
use std::process::Command;
use std::time::Instant;

const B: usize = 256;
const DIMS: [usize; 4] = [784, 1024, 1024, 10];
/// Blocks of consecutive steps, and steps per block.
const BLOCKS: usize = 7;
const STEPS: usize = 8;

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        if let Err(e) = rank_main() {
            eprintln!("ddp bench failed: {e}");
            std::process::exit(1);
        }
        return;
    }
    let np = std::env::var("KILN_MPI_NP")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let exe = std::env::current_exe().expect("the bench binary's path");
    let status = Command::new("mpirun")
        .args(common::mpirun_args(np))
        .args(["-x", "KILN_NUM_THREADS=1", "-x", "KILN_BENCH_BUCKET_MB"])
        .arg(exe)
        .status()
        .expect("mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)");
    std::process::exit(status.code().unwrap_or(1));
}

fn mlp() -> kiln_core::Result<Sequential> {
    Ok(Sequential::new()
        .add(Linear::new(DIMS[0], DIMS[1])?)
        .add(ReLU)
        .add(Linear::new(DIMS[1], DIMS[2])?)
        .add(ReLU)
        .add(Linear::new(DIMS[2], DIMS[3])?))
}

fn sgd(params: Vec<Tensor>) -> kiln_core::Result<SGD> {
    SGD::new(
        params,
        SGDOptions {
            lr: 0.01,
            ..Default::default()
        },
    )
}

fn step(model: &dyn Forward, opt: &mut SGD, x: &Tensor, y: &Tensor) -> kiln_core::Result<f64> {
    let s = Instant::now();
    opt.zero_grad()?;
    let loss = F::cross_entropy(&model.forward(x)?, y)?;
    loss.backward()?;
    opt.step()?;
    Ok(s.elapsed().as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rank_main() -> kiln_core::Result<()> {
    dist::init_process_group(dist::Backend::Mpi)?;
    let (rank, size) = (dist::rank()?, dist::world_size()?);
    kiln_core::manual_seed(rank as u64);
    let plain = mlp()?;
    let mut plain_opt = sgd(plain.parameters())?;
    let cap: f64 = std::env::var("KILN_BENCH_BUCKET_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(25.0);
    let ddp = DistributedDataParallel::new(mlp()?, DdpOptions::default().bucket_cap_mb(cap))?;
    let mut ddp_opt = sgd(ddp.parameters())?;
    let view = DistributedDataParallel::new(
        mlp()?,
        DdpOptions::default()
            .bucket_cap_mb(cap)
            .gradient_as_bucket_view(true),
    )?;
    let mut view_opt = sgd(view.parameters())?;
    let x = Tensor::randn(&[B, DIMS[0]][..], DType::F32)?;
    let y = Tensor::randint(0, 10, &[B][..], DType::I64)?;
    let grads: usize = ddp.parameters().iter().map(|p| p.numel()).sum();
    let flat = Tensor::zeros(&[grads][..], DType::F32)?;
    let (mut t_plain, mut t_lock, mut t_ddp, mut t_view, mut t_ar) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Blocks of STEPS consecutive steps, as a training loop runs them, alternating plain and
    // DDP; a block's time is per step. The first block of each warms up.
    for block in 0..=BLOCKS {
        dist::barrier()?;
        let p: f64 = (0..STEPS)
            .map(|_| step(&plain, &mut plain_opt, &x, &y))
            .sum::<kiln_core::Result<f64>>()?;
        dist::barrier()?;
        // The plain step with the ranks in lockstep (a barrier after each), as DDP keeps
        // them: what is left between this and DDP is DDP's own cost.
        let mut l = 0.0;
        for _ in 0..STEPS {
            let s = Instant::now();
            step(&plain, &mut plain_opt, &x, &y)?;
            dist::barrier()?;
            l += s.elapsed().as_secs_f64();
        }
        dist::barrier()?;
        let d: f64 = (0..STEPS)
            .map(|_| step(&ddp, &mut ddp_opt, &x, &y))
            .sum::<kiln_core::Result<f64>>()?;
        dist::barrier()?;
        let v: f64 = (0..STEPS)
            .map(|_| step(&view, &mut view_opt, &x, &y))
            .sum::<kiln_core::Result<f64>>()?;
        dist::barrier()?;
        let s = Instant::now();
        dist::all_reduce(&flat, ReduceOp::Sum)?;
        let a = s.elapsed().as_secs_f64();
        if block > 0 {
            t_plain.push(p / STEPS as f64);
            t_lock.push(l / STEPS as f64);
            t_ddp.push(d / STEPS as f64);
            t_view.push(v / STEPS as f64);
            t_ar.push(a);
        }
    }
    let (p, l, d, v, a) = (
        median(t_plain),
        median(t_lock),
        median(t_ddp),
        median(t_view),
        median(t_ar),
    );
    if rank == 0 {
        println!("MLP 784-1024-1024-10 train step, batch {B} per rank, {size} ranks x 1 thread, median of {BLOCKS} blocks of {STEPS} steps:");
        println!("| plain step | plain, lockstep | DDP step | (DDP - plain) / plain | (DDP - lockstep) / lockstep | DDP, gradient_as_bucket_view | (that - plain) / plain | all_reduce of the {:.1} MB of gradients alone |", grads as f64 * 4.0 / 1e6);
        println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        println!(
            "| {:.1} ms | {:.1} ms | {:.1} ms | {:.1}% | {:.1}% | {:.1} ms | {:.1}% | {:.1} ms |",
            p * 1e3,
            l * 1e3,
            d * 1e3,
            100.0 * (d - p) / p,
            100.0 * (d - l) / l,
            v * 1e3,
            100.0 * (v - p) / p,
            a * 1e3
        );
    }
    drop(ddp);
    drop(view);
    dist::destroy_process_group()
}
