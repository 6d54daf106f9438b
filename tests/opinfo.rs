//! The generated OpInfo matrix: every operator × dtype × check. The per-op test functions
//! are generated from native_functions.yaml (see `cargo run -p kiln-codegen -- show <op>`);
//! the checks are in `opinfo/harness.rs`, inputs in `opinfo/samples.rs`, float64 references
//! in `opinfo/refs.rs`.

#[path = "opinfo/harness.rs"]
mod harness;
#[path = "opinfo/refs.rs"]
mod refs;
#[path = "opinfo/samples.rs"]
mod samples;

use harness::*;
use kiln::{DType, Result, Scalar, Tensor};

include!(concat!(env!("OUT_DIR"), "/opinfo.rs"));

// The floor for the operator count, checked at compile time.
const _: () = assert!(OPERATOR_COUNT >= 45);
