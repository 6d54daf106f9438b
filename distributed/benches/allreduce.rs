//! all_reduce bandwidth: kiln's `all_reduce` against `MPI_Allreduce` called directly
//! (rsmpi, separate send and receive buffers), same ranks, same run, alternating so both
//! see the same machine. Run: `cargo bench -p kiln-distributed --features mpi --bench
//! allreduce` (it launches itself under `mpirun -np 2`; `KILN_MPI_NP` picks another size).
//!
//! Not criterion: its adaptive iteration counts differ between ranks, and every rank must
//! run the same collectives. Each size runs a fixed number of rounds; a round is one
//! direct call and one kiln call, each timed on rank 0 between barriers; the table shows
//! median algorithm bandwidth (bytes / time) and kiln's ratio to the direct call.

// The tests' mpirun flags (and helpers this bench does not use).
#[path = "../tests/mpi/common.rs"]
#[allow(dead_code)]
mod common;

use kiln_core::{DType, Tensor};
use kiln_distributed::{self as dist, ReduceOp};
use mpi::collective::SystemOperation;
use mpi::traits::*;
use std::process::Command;
use std::time::Instant;

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        if let Err(e) = rank_main() {
            eprintln!("allreduce bench failed: {e}");
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
        .arg(exe)
        .status()
        .expect("mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev)");
    std::process::exit(status.code().unwrap_or(1));
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn rank_main() -> kiln_core::Result<()> {
    dist::init_process_group(dist::Backend::Mpi)?;
    let (rank, size) = (dist::rank()?, dist::world_size()?);
    // MPI runs `MPI_THREAD_SERIALIZED`: a direct call from this thread is allowed while no
    // kiln collective is in flight (each kiln call below is waited for).
    let world = mpi::topology::SimpleCommunicator::world();
    if rank == 0 {
        println!("all_reduce (sum, f32) on {size} ranks: median algorithm bandwidth");
        println!("| size | MPI_Allreduce direct | kiln all_reduce | kiln / direct |");
        println!("| ---: | ---: | ---: | ---: |");
    }
    for (mib, rounds) in [(1usize, 200usize), (16, 30), (256, 5)] {
        let n = mib * (1 << 20) / 4;
        let send = vec![1.0f32; n];
        let mut recv = vec![0.0f32; n];
        let mut t = Tensor::ones(&[n][..], DType::F32)?;
        let (mut direct, mut kiln) = (Vec::new(), Vec::new());
        for round in 0..rounds + 1 {
            dist::barrier()?;
            let s = Instant::now();
            world.all_reduce_into(&send[..], &mut recv[..], SystemOperation::sum());
            let d = s.elapsed().as_secs_f64();
            t = Tensor::ones(&[n][..], DType::F32)?;
            dist::barrier()?;
            let s = Instant::now();
            dist::all_reduce(&t, ReduceOp::Sum)?;
            let k = s.elapsed().as_secs_f64();
            // Round 0 warms both up (page faults, connections).
            if round > 0 {
                direct.push(d);
                kiln.push(k);
            }
        }
        // Sums of ones: the result is checked, so the bench cannot time a no-op.
        let got = t.narrow(0, n as i64 - 1, 1)?.item::<f32>()?;
        assert_eq!(got, size as f32, "kiln's all_reduce");
        assert_eq!(recv[0], size as f32);
        let bytes = (n * 4) as f64;
        let (d, k) = (bytes / median(direct) / 1e9, bytes / median(kiln) / 1e9);
        if rank == 0 {
            println!("| {mib} MiB | {d:.2} GB/s | {k:.2} GB/s | {:.2} |", k / d);
        }
    }
    drop(world);
    dist::destroy_process_group()
}
