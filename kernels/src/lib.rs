//! kiln's kernels: hand-written loops over typed, strided buffers.
//!
//! This crate knows about buffers, layouts and element types — never about `Tensor` or
//! autograd. A kernel receives read views ([`Src`]) of its inputs and a write view ([`Dst`])
//! of a preallocated output; the caller guarantees the output does not alias an input.

pub mod box_muller;
pub mod cpu;
pub mod dtype;
pub mod element;
pub mod error;
pub mod layout;
pub mod linalg;
pub mod memory_format;
pub mod parallel;
pub mod philox;
pub mod random;
pub mod special;
pub mod view;

pub use dtype::DType;
pub use element::{Arith, Bits, Classify, Element, FloatMath, Libm, Modular, Rounding, Shift};
pub use error::{ErrorKind, KernelError};
pub use half;
pub use layout::{Dims, Layout};
pub use memory_format::MemoryFormat;
pub use view::{Dst, Src};

/// A kernel's result: its error says its [`ErrorKind`] and what is wrong; the caller adds
/// the op name.
pub type KResult<T> = Result<T, KernelError>;
