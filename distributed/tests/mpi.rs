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
#[path = "mpi/sync_bn.rs"]
mod sync_bn;

use kiln_distributed as dist;
use std::process::Command;

type Test = (&'static str, fn() -> kiln_core::Result<()>);

fn tests() -> Vec<Test> {
    let mut all = Vec::new();
    all.extend(collectives::TESTS.iter().copied());
    all.extend(sync_bn::TESTS.iter().copied());
    all.extend(ddp::TESTS.iter().copied());
    all.extend(checkpoint::TESTS.iter().copied());
    all
}

fn main() {
    if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
        std::process::exit(rank_main());
    }
    launch();
}

/// Runs this binary under mpirun for each world size; fails if any run fails.
fn launch() {
    let exe = std::env::current_exe().expect("the test binary's path");
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let sizes: Vec<usize> = match std::env::var("KILN_MPI_NP") {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => vec![2, 4],
    };
    let mut failed = Vec::new();
    for np in sizes {
        println!("mpi: running the distributed tests on {np} ranks");
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
        eprintln!("mpi: the distributed tests failed on {failed:?} ranks");
        std::process::exit(1);
    }
    println!("mpi: all distributed tests passed");
}

fn rank_main() -> i32 {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let opts = dist::InitOptions::new(dist::Backend::Mpi).timeout(common::TIMEOUT);
    if let Err(e) = dist::init_process_group_with(opts) {
        eprintln!("init_process_group failed: {e}");
        return 1;
    }
    let (rank, size) = (dist::rank().unwrap(), dist::world_size().unwrap());
    let (mut passed, mut failed) = (0, 0);
    for (name, test) in tests() {
        if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let outcome = std::panic::catch_unwind(test);
        match outcome {
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
    // Every rank exits with the same verdict.
    let total = kiln_core::Tensor::from([failed as i64]);
    let agreed = dist::all_reduce(&total, dist::ReduceOp::Sum).and_then(|_| total.item::<i64>());
    let any_failed = agreed.map_or(true, |n| n > 0);
    if rank == 0 {
        println!(
            "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out (mpi, {size} ranks, rank 0)",
            if any_failed { "FAILED" } else { "ok" }
        );
    }
    if let Err(e) = dist::destroy_process_group() {
        eprintln!("destroy_process_group failed on rank {rank}: {e}");
        return 1;
    }
    i32::from(any_failed)
}
