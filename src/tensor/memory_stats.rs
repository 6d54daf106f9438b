//! Live CPU tensor memory, for measuring what a model needs (PyTorch's
//! `torch.cuda.memory_allocated` / `max_memory_allocated` / `reset_peak_memory_stats`, for
//! kiln's CPU backend).
//!
//! What is counted: the bytes of every live CPU [`Storage`](super::Storage), its element
//! count times the element size, from the moment the storage is made until it is dropped.
//! Views share their storage and count nothing of their own. Freed buffers waiting in the
//! buffer cache ([`super::cache`]) are not counted (that is [`super::cache::cached_bytes`]),
//! nor the size-class slack of a cached allocation, nor the handles, autograd nodes and
//! small bookkeeping around tensors. Tensors of up to 16 bytes, held inline, count their
//! bytes too. Two relaxed atomic updates per storage made or dropped: cheap enough to be
//! always on.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Bytes of live CPU storage.
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
/// The most [`ALLOCATED`] has been since the program started or the last reset.
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Counts a CPU storage of `bytes` coming alive.
#[inline]
pub(crate) fn record_alloc(bytes: usize) {
    let now = ALLOCATED.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(now, Relaxed);
}

/// Counts a CPU storage of `bytes` being dropped.
#[inline]
pub(crate) fn record_free(bytes: usize) {
    ALLOCATED.fetch_sub(bytes, Relaxed);
}

/// Bytes of CPU tensor storage alive now (PyTorch's `memory_allocated()`, for the CPU).
///
/// ```
/// use kiln::{cpu, DType, Tensor};
/// let x = Tensor::zeros([1000], DType::F32)?;      // 4000 bytes
/// assert!(cpu::memory_allocated() >= 4000);
/// assert!(cpu::max_memory_allocated() >= cpu::memory_allocated());
/// # drop(x);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn memory_allocated() -> usize {
    ALLOCATED.load(Relaxed)
}

/// The most bytes of CPU tensor storage alive at once since the program started or the last
/// [`reset_peak_memory_stats`] (PyTorch's `max_memory_allocated()`, for the CPU).
pub fn max_memory_allocated() -> usize {
    PEAK.load(Relaxed).max(ALLOCATED.load(Relaxed))
}

/// Starts a new peak from the memory alive now (PyTorch's `reset_peak_memory_stats()`), so
/// [`max_memory_allocated`] measures the code that follows.
pub fn reset_peak_memory_stats() {
    PEAK.store(ALLOCATED.load(Relaxed), Relaxed);
}
