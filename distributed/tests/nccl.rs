//! The NCCL backend's tests: `cargo test -p kiln-distributed --features nccl --test nccl`.
//!
//! Without a GPU (CI): `init_process_group(Backend::Nccl)` must fail, in this process,
//! with an error that names what is missing (the GPU, and libnccl when it is missing too),
//! without starting MPI; the GPU tests are then reported as skipped. With a GPU, this binary
//! launches itself under `mpirun -np 1` (`KILN_NCCL_NP=1,2` picks world sizes; each rank
//! takes GPU `local rank % device count`), and every rank runs every collective on CUDA
//! tensors against a CPU reference. Filter by name like the MPI tests:
//! `... --test nccl -- all_reduce`.

#[path = "nccl/collectives.rs"]
mod collectives;
#[path = "mpi/common.rs"]
#[allow(dead_code)]
mod common;

use kiln_distributed as dist;
use std::process::Command;

type Test = (&'static str, fn() -> kiln_core::Result<()>);

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        std::process::exit(rank_main());
    }
    if kiln_core::cuda::device_count() == 0 {
        std::process::exit(without_gpu());
    }
    launch();
}

/// The check that runs everywhere: no GPU means a clear error, and MPI left untouched.
fn without_gpu() -> i32 {
    let e = match dist::init_process_group(dist::Backend::Nccl) {
        Ok(()) => {
            println!("test init_without_a_gpu_fails_naming_the_gpu ... FAILED: init_process_group(Nccl) succeeded without a GPU");
            return 1;
        }
        Err(e) => e.to_string(),
    };
    let mut failures = Vec::new();
    for want in [
        "init_process_group",
        "NCCL backend cannot run",
        "needs a CUDA GPU",
    ] {
        if !e.contains(want) {
            failures.push(format!("'{want}' not in the error"));
        }
    }
    if dist::is_initialized() {
        failures.push("the default group is set after a failed init".into());
    }
    if failures.is_empty() {
        println!("test init_without_a_gpu_fails_naming_the_gpu ... ok\n  (the error: {e})");
    } else {
        println!(
            "test init_without_a_gpu_fails_naming_the_gpu ... FAILED: {}\n  (the error: {e})",
            failures.join("; ")
        );
    }
    println!(
        "nccl: SKIPPED the {} GPU tests: this machine has no CUDA GPU (on a GPU machine: scripts/nccl-gpu-check here, then scripts/nccl-gpu-run there)",
        collectives::TESTS.len()
    );
    i32::from(!failures.is_empty())
}

/// Runs this binary under mpirun for each world size; fails if any run fails.
fn launch() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sizes: Vec<usize> = match std::env::var("KILN_NCCL_NP") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![1],
    };
    let mut failed = Vec::new();
    for np in sizes {
        println!("nccl: running the NCCL tests on {np} rank(s)");
        let status = Command::new("mpirun")
            .args(common::mpirun_args(np))
            .arg(&exe)
            .args(&args)
            .status()
            .unwrap_or_else(|e| panic!("cannot run mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev): {e}"));
        if !status.success() {
            failed.push(np);
        }
    }
    if !failed.is_empty() {
        eprintln!("nccl: the NCCL tests failed on {failed:?} ranks");
        std::process::exit(1);
    }
    println!("nccl: all NCCL tests passed");
}

fn rank_main() -> i32 {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let opts = dist::InitOptions::new(dist::Backend::Nccl).timeout(common::TIMEOUT);
    if let Err(e) = dist::init_process_group_with(opts) {
        let e = e.to_string();
        if e.contains("needs libnccl") && !e.contains("needs a CUDA GPU") {
            println!(
                "nccl: SKIPPED the GPU tests: this machine has a GPU but no usable libnccl:\n  {e}"
            );
            return 0;
        }
        eprintln!("init_process_group(Nccl) failed: {e}");
        return 1;
    }
    let (rank, size) = (dist::rank().unwrap(), dist::world_size().unwrap());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in collectives::TESTS.iter().copied() {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        match std::panic::catch_unwind(test) {
            Ok(Ok(())) => {
                passed += 1;
                if rank == 0 {
                    println!("test {name} (np {size}) ... ok");
                }
            }
            Ok(Err(e)) => {
                failed += 1;
                println!("test {name} (np {size}) ... FAILED on rank {rank}: {e}");
            }
            Err(p) => {
                failed += 1;
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                println!("test {name} (np {size}) ... FAILED on rank {rank}: panicked: {msg}");
            }
        }
    }
    // Every rank exits with the same verdict (over NCCL itself).
    let agreed = collectives::on_gpu(&kiln_core::Tensor::from([failed as i64])).and_then(|t| {
        dist::all_reduce(&t, dist::ReduceOp::Sum)?;
        t.to_device(kiln_core::Device::Cpu)?.item::<i64>()
    });
    let any_failed = agreed.map_or(true, |n| n > 0);
    if rank == 0 {
        println!(
            "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out (nccl, {size} ranks, rank 0)",
            if any_failed { "FAILED" } else { "ok" }
        );
    }
    if let Err(e) = dist::destroy_process_group() {
        eprintln!("destroy_process_group failed on rank {rank}: {e}");
        return 1;
    }
    i32::from(any_failed)
}
