//! kiln: a tensor library with PyTorch's semantics, whose operators are declared in YAML.
//!
//! ```
//! use kiln::Tensor;
//! let x = Tensor::from([[1f32, 2.], [3., 4.]]).requires_grad_(true)?;
//! let y = x.matmul(&x)?.sum()?;
//! y.backward()?;
//! assert_eq!(x.grad().unwrap().shape(), &[2, 2]);
//! # Ok::<(), kiln::Error>(())
//! ```

#[macro_use]
pub mod amp;
mod arc_init;
pub mod autograd;
mod backends;
mod dispatch;
mod error;
pub mod ops;
pub mod tensor;
pub mod utils;
mod warning;

pub use backends::cuda;

pub use amp::autocast;
pub use autograd::{enable_grad, no_grad};
pub use error::{Error, ErrorKind, KernelError, Result};
pub use kiln_kernels::MemoryFormat;
pub use ops::create::TensorData;
pub use ops::operators::ScalarOperand;
pub use ops::random::{get_rng_state, manual_seed, set_rng_state, Generator, RngState};
pub use ops::subscript::{Ellipsis, IntoIndices, NewAxis, SliceRange, TensorIndexer};
pub use ops::*;
pub use tensor::{BufferElement, DType, Device, DimElem, IntoDims, Layout, Scalar, Tensor};
pub use warning::{catch_warnings, warn};

/// The CPU backend's buffer cache (see [`tensor::cache`]): large freed buffers are reused
/// by later allocations of the same dtype and size class; and its memory statistics (see
/// [`tensor::memory_stats`]): bytes of live tensor storage, now and at peak.
pub mod cpu {
    pub use crate::tensor::cache::{
        allocation_count, cached_bytes, empty_cache, limit as cache_limit,
        set_limit as set_cache_limit,
    };
    pub use crate::tensor::memory_stats::{
        max_memory_allocated, memory_allocated, reset_peak_memory_stats,
    };
}

/// Sets how many threads kiln's kernels use (PyTorch's `torch.set_num_threads`); the
/// default is `KILN_NUM_THREADS` or the number of cores. Kernels called from a worker of
/// another rayon pool run on that worker alone, so kiln never waits on work it did not start.
pub fn set_num_threads(threads: usize) -> Result<()> {
    kiln_kernels::parallel::set_num_threads(threads).map_err(|m| Error::op("set_num_threads", m))
}

/// How many threads kiln's kernels use (PyTorch's `torch.get_num_threads`).
pub fn get_num_threads() -> usize {
    kiln_kernels::parallel::num_threads()
}

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
