//! The distributed tests, run by `mpirun`: `cargo test -p kiln-distributed --features mpi`
//! starts this binary, which launches itself under `mpirun --oversubscribe -np 2` and
//! `-np 4`; each rank then runs every test below in the same order. A test returns `Err`
//! (or panics) on failure; each rank prints its own verdicts, and the ranks agree on the
//! exit code.
//!
//! Filter: `cargo test -p kiln-distributed --features mpi --test mpi -- all_reduce` runs
//! the tests whose names contain a word; `KILN_MPI_NP=2` picks one world size.

#[path = "mpi/checkpoint.rs"]
mod checkpoint;
#[path = "mpi/collectives.rs"]
mod collectives;
#[path = "mpi/common.rs"]
mod common;
#[path = "mpi/ddp.rs"]
mod ddp;
#[path = "mpi/harness.rs"]
mod harness;
#[path = "mpi/sync_bn.rs"]
mod sync_bn;

use harness::Test;
use kiln_distributed as dist;

fn tests() -> Vec<Test> {
    let mut all = Vec::new();
    all.extend(collectives::TESTS.iter().copied());
    all.extend(sync_bn::TESTS.iter().copied());
    all.extend(ddp::DEVICE_TESTS.iter().copied());
    all.extend(ddp::TESTS.iter().copied());
    all.extend(checkpoint::TESTS.iter().copied());
    all
}

fn main() {
    if harness::under_mpirun() {
        std::process::exit(rank_main());
    }
    if !harness::launch("mpi", "KILN_MPI_NP", &[2, 4], &[]) {
        std::process::exit(1);
    }
}

fn rank_main() -> i32 {
    let opts = dist::InitOptions::new(dist::Backend::Mpi).timeout(common::TIMEOUT);
    if let Err(e) = dist::init_process_group_with(opts) {
        eprintln!("init_process_group failed: {e}");
        return 1;
    }
    let (rank, size) = common::ctx();
    let (passed, failed) = harness::run(&tests(), rank, size);
    // Every rank exits with the same verdict.
    let total = kiln_core::Tensor::from([failed as i64]);
    let agreed = dist::all_reduce(&total, dist::ReduceOp::Sum).and_then(|_| total.item::<i64>());
    let code = harness::verdict(
        "mpi",
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
