//! The NCCL backend's tests: `cargo test -p kiln-distributed --features nccl --test nccl`.
//!
//! Without a GPU (CI): `init_process_group(Backend::Nccl)` must fail, in this process,
//! with an error that names what is missing (the GPU, and libnccl when it is missing too),
//! without starting MPI; the GPU tests are then reported as skipped. With a GPU, this binary
//! launches itself under `mpirun -np 1` (`KILN_NCCL_NP=1,2` picks world sizes; each rank
//! takes GPU `local rank % device count`), and every rank runs every collective on CUDA
//! tensors against a CPU reference. Then it launches 2 ranks sharing the GPU(s) over the
//! *MPI* backend (`KILN_NCCL_MPI_NP` picks other sizes), which stages CUDA tensors through
//! host memory: the same collectives, and DDP training on CUDA against a one-process CPU
//! reference (`mpi/ddp.rs`'s `DEVICE_TESTS`). Filter by name like the MPI tests:
//! `... --test nccl -- all_reduce`.

#[path = "nccl/collectives.rs"]
mod collectives;
#[path = "mpi/common.rs"]
#[allow(dead_code)]
mod common;
#[path = "mpi/ddp.rs"]
#[allow(dead_code)]
mod ddp;
#[path = "mpi/harness.rs"]
mod harness;

use harness::Test;
use kiln_distributed as dist;

/// Set in the ranks of the MPI-backend run.
const MPI_RUN: &str = "KILN_NCCL_TEST_MPI_BACKEND";

fn main() {
    if harness::under_mpirun() {
        let code = if std::env::var_os(MPI_RUN).is_some() {
            mpi_rank_main()
        } else {
            rank_main()
        };
        std::process::exit(code);
    }
    if kiln_core::cuda::device_count() == 0 {
        std::process::exit(without_gpu());
    }
    let nccl = harness::launch("nccl", "KILN_NCCL_NP", &[1], &[]);
    // NCCL wants a GPU per rank; MPI does not, so 2 ranks share one GPU here.
    let mpi = harness::launch(
        "mpi backend, CUDA tensors",
        "KILN_NCCL_MPI_NP",
        &[2],
        &[(MPI_RUN, "1")],
    );
    std::process::exit(i32::from(!(nccl && mpi)));
}

/// The tests of the MPI-backend run: every collective but NCCL's own errors, and DDP.
fn mpi_tests() -> Vec<Test> {
    let mut all: Vec<Test> = collectives::TESTS
        .iter()
        .copied()
        .filter(|(name, _)| !name.starts_with("nccl_"))
        .collect();
    all.extend(ddp::DEVICE_TESTS.iter().copied());
    all
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
        "nccl: SKIPPED the {} NCCL and {} MPI-backend GPU tests: this machine has no CUDA GPU (on a GPU machine: scripts/nccl-gpu-check here, then scripts/nccl-gpu-run there)",
        collectives::TESTS.len(),
        mpi_tests().len()
    );
    i32::from(!failures.is_empty())
}

fn rank_main() -> i32 {
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
    let (rank, size) = common::ctx();
    let tests: Vec<Test> = collectives::TESTS.to_vec();
    let (passed, failed) = harness::run(&tests, rank, size);
    // Every rank exits with the same verdict (over NCCL itself).
    let agreed = collectives::on_gpu(&kiln_core::Tensor::from([failed as i64])).and_then(|t| {
        dist::all_reduce(&t, dist::ReduceOp::Sum)?;
        t.to_device(kiln_core::Device::Cpu)?.item::<i64>()
    });
    finish("nccl", passed, failed, agreed)
}

/// A rank of the MPI-backend run: CUDA tensors over MPI, on GPU `local rank % device count`.
fn mpi_rank_main() -> i32 {
    let opts = dist::InitOptions::new(dist::Backend::Mpi).timeout(common::TIMEOUT);
    if let Err(e) = dist::init_process_group_with(opts) {
        eprintln!("init_process_group(Mpi) failed: {e}");
        return 1;
    }
    ddp::DEVICE
        .set(collectives::device())
        .expect("the DDP tests' device is set once");
    let (rank, size) = common::ctx();
    let (passed, failed) = harness::run(&mpi_tests(), rank, size);
    let total = kiln_core::Tensor::from([failed as i64]);
    let agreed = dist::all_reduce(&total, dist::ReduceOp::Sum).and_then(|_| total.item::<i64>());
    finish("mpi backend, CUDA tensors", passed, failed, agreed)
}

/// Prints the verdict every rank agreed on (a failed agreement counts as a failure) and
/// tears the group down; the exit code.
fn finish(label: &str, passed: usize, failed: usize, agreed: kiln_core::Result<i64>) -> i32 {
    let (rank, size) = common::ctx();
    let code = harness::verdict(
        label,
        rank,
        size,
        passed,
        failed,
        agreed.map_or(true, |n| n > 0),
    );
    if let Err(e) = dist::destroy_process_group() {
        eprintln!("destroy_process_group failed on rank {rank}: {e}");
        return 1;
    }
    code
}
