//! The OpInfo matrix: every operator × device × dtype × check, enumerated at run time, as
//! PyTorch instantiates its device-generic tests. The generator writes one `OpInfo` per op
//! from native_functions.yaml into the table `OPINFOS` (see `cargo run -p kiln-codegen --
//! show <op>`); `opinfo/runner.rs` turns it into cases named `forward/exp/f32/cpu`, the
//! checks are in `opinfo/harness.rs`, inputs in `opinfo/samples.rs` (family files under
//! `opinfo/samples/`), float64 references in `opinfo/refs.rs` (and `opinfo/refs/`).
//!
//! A `harness = false` test binary: `cargo test --test opinfo -- exp` runs the cases whose
//! name contains `exp`; `-- --list` lists them. It ends with `opinfo: N passed, M failed, K
//! skipped` (CUDA cases count as skipped on a machine without a CUDA device) and exits
//! non-zero when a case fails.

#[path = "opinfo/autocast.rs"]
mod autocast;
#[path = "opinfo/harness.rs"]
mod harness;
#[path = "opinfo/refs.rs"]
mod refs;
#[path = "opinfo/runner.rs"]
mod runner;
#[path = "opinfo/samples.rs"]
mod samples;

use harness::*;
use kiln::{DType, Result, Scalar, Tensor};

include!(concat!(env!("OUT_DIR"), "/opinfo.rs"));

// Floors for the operator counts (issue 7 asks for 220 names), checked at compile time.
const _: () = assert!(OPERATOR_NAME_COUNT >= 220 && OPERATOR_COUNT >= 290);

fn main() -> std::process::ExitCode {
    runner::main(OPINFOS)
}
