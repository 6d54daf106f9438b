//! What the distributed tests share: mpirun's arguments, the short timeout, and reference
//! data every rank can compute for every other rank.

use kiln_core::{DType, Error, Result, Tensor};
use kiln_distributed::{self as dist, ReduceOp};
use std::time::Duration;

/// Collectives in the tests fail after this (the default is 30 minutes).
pub const TIMEOUT: Duration = Duration::from_secs(20);

/// `mpirun` flags for `np` ranks on whatever cores this machine has (CI: 2 cores, 4 ranks),
/// as root in a container.
pub fn mpirun_args(np: usize) -> Vec<String> {
    let mut a: Vec<String> = [
        "--oversubscribe",
        "--allow-run-as-root",
        "--bind-to",
        "none",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // Containers often forbid the cross-memory attach Open MPI's shared-memory transport
    // tries first.
    a.extend(["--mca", "btl_vader_single_copy_mechanism", "none"].map(String::from));
    a.extend(["-np".to_string(), np.to_string()]);
    a
}

/// A test failure naming what differed.
pub fn fail(msg: impl Into<String>) -> Error {
    Error::value("test", msg.into())
}

/// Rank `rank`'s deterministic value at index `i`, small enough that sums and products of
/// four ranks are exact in every dtype (f16 and i8 included).
pub fn value(rank: usize, i: usize, dtype: DType) -> f64 {
    match dtype {
        DType::Bool => (rank + i).is_multiple_of(3) as u8 as f64,
        DType::U8 => ((rank * 7 + i * 3) % 3) as f64,
        _ => ((rank * 7 + i * 3) % 5) as f64 - 2.0,
    }
}

/// Rank `rank`'s input tensor of `shape`, built from `value`.
pub fn input(rank: usize, shape: &[usize], dtype: DType) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f64> = (0..n).map(|i| value(rank, i, dtype)).collect();
    Tensor::from_vec(v, shape)?.to_dtype(dtype)
}

/// Checks `t` against `expect` exactly (values are small integers, exact in every dtype).
pub fn assert_values(what: &str, t: &Tensor, expect: &[f64]) -> Result<()> {
    let got = t.to_dtype(DType::F64)?.to_vec::<f64>()?;
    if got.len() != expect.len()
        || got
            .iter()
            .zip(expect)
            .any(|(a, b)| !(a == b || (a - b).abs() <= 1e-3 * b.abs()))
    {
        return Err(fail(format!("{what}: got {got:?}, expected {expect:?}")));
    }
    Ok(())
}

/// This rank and the world's size.
pub fn ctx() -> (usize, usize) {
    (dist::rank().unwrap(), dist::world_size().unwrap())
}

/// The reduction of every rank's value at `i`, computed in f64 (exact for these values).
pub fn reference(op: ReduceOp, dtype: DType, i: usize, size: usize) -> f64 {
    let vals: Vec<f64> = (0..size).map(|r| value(r, i, dtype)).collect();
    if dtype == DType::Bool {
        let any = vals.iter().any(|&v| v != 0.0);
        let all = vals.iter().all(|&v| v != 0.0);
        return match op {
            ReduceOp::Sum | ReduceOp::Max => any as u8 as f64,
            _ => all as u8 as f64,
        };
    }
    let sum: f64 = vals.iter().sum();
    match op {
        ReduceOp::Sum => sum,
        ReduceOp::Avg if dtype.is_floating_point() => sum / size as f64,
        ReduceOp::Avg => (sum / size as f64).trunc(),
        ReduceOp::Product => vals.iter().product(),
        ReduceOp::Min => vals.iter().cloned().fold(f64::INFINITY, f64::min),
        ReduceOp::Max => vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
    }
}

/// `Ok` when `r` failed with an error containing `needle`.
pub fn expect_err(what: &str, r: Result<()>, needle: &str) -> Result<()> {
    match r {
        Ok(()) => Err(fail(format!(
            "{what}: succeeded, expected an error containing {needle:?}"
        ))),
        Err(e) if e.to_string().contains(needle) => Ok(()),
        Err(e) => Err(fail(format!(
            "{what}: error {e:?} does not contain {needle:?}"
        ))),
    }
}
