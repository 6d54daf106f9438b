//! Typed launchers, one per kernel family of the non-pointwise modules, generated from the
//! kernels' C signatures (`cuda_launchers.rs`, see kiln-codegen's `gen/cuda_kernels.rs`):
//! hand-written code in `ops/` computes operands and launch shapes and calls these, so the
//! argument list of every launch is checked against the kernel by the Rust compiler.

#[allow(unused_imports)]
use super::args::{KilnFold, KilnStr, KilnTensor};
use super::kernels;
use super::runtime::{driver_error, Gpu};
#[allow(unused_imports)]
use crate::{DType, Result, Scalar};
use cudarc::driver::{LaunchConfig, PushKernelArg};

include!(concat!(env!("OUT_DIR"), "/cuda_launchers.rs"));
