//! The launcher and runner the mpirun test binaries share (tests/mpi.rs, tests/nccl.rs):
//! the binary starts itself under `mpirun` for each world size, and each rank runs the
//! tests in one order, prints its verdicts, and exits with the verdict all ranks agree on.

use crate::common;
use std::process::Command;

pub type Test = (&'static str, fn() -> kiln_core::Result<()>);

/// Whether this process is a rank mpirun started.
pub fn under_mpirun() -> bool {
    std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some()
}

/// The name filters given on the command line (libtest's own `--flags` ignored).
pub fn filters() -> Vec<String> {
    std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect()
}

/// Runs this binary under mpirun for each world size in `$sizes_var` (comma-separated) or
/// `default`, with the variables `env` set in every rank; false if any run failed.
pub fn launch(label: &str, sizes_var: &str, default: &[usize], env: &[(&str, &str)]) -> bool {
    let exe = std::env::current_exe().expect("the test binary's path");
    let sizes: Vec<usize> = match std::env::var(sizes_var) {
        Ok(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        Err(_) => default.to_vec(),
    };
    let mut failed = Vec::new();
    for np in sizes {
        println!("{label}: running the tests on {np} rank(s)");
        let mut cmd = Command::new("mpirun");
        cmd.args(common::mpirun_args(np));
        for (k, v) in env {
            cmd.env(k, v).args(["-x", k]);
        }
        let status = cmd
            .arg(&exe)
            .args(filters())
            .status()
            .unwrap_or_else(|e| panic!("cannot run mpirun (install Open MPI: apt-get install openmpi-bin libopenmpi-dev): {e}"));
        if !status.success() {
            failed.push(np);
        }
    }
    if !failed.is_empty() {
        eprintln!("{label}: the tests failed on {failed:?} ranks");
        return false;
    }
    println!("{label}: all tests passed");
    true
}

/// Runs the tests whose names contain a filter; prints each verdict (rank 0 the passes,
/// every rank its failures). Returns (passed, failed) on this rank.
pub fn run(tests: &[Test], rank: usize, size: usize) -> (usize, usize) {
    let filters = filters();
    let (mut passed, mut failed) = (0, 0);
    for &(name, test) in tests {
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
    (passed, failed)
}

/// libtest's summary line (CI totals it), printed by rank 0; the exit code.
pub fn verdict(
    label: &str,
    rank: usize,
    size: usize,
    passed: usize,
    failed: usize,
    any_failed: bool,
) -> i32 {
    if rank == 0 {
        println!(
            "test result: {}. {passed} passed; {failed} failed; 0 ignored; 0 measured; 0 filtered out ({label}, {size} ranks, rank 0)",
            if any_failed { "FAILED" } else { "ok" }
        );
    }
    i32::from(any_failed)
}
