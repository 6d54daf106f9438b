//! CUDA devices: whether one is usable, how many there are.
//!
//! The backend itself (NVRTC-compiled kernels, cuBLAS, the caching allocator) is behind the
//! `cuda` cargo feature. Without the feature, or on a machine without a GPU, kiln still
//! builds and runs: asking for `Device::Cuda(i)` is then an error that says which of the two
//! is missing.

/// True when kiln was built with the `cuda` feature and a CUDA device is present.
pub fn is_available() -> bool {
    device_count() > 0
}

/// Number of CUDA devices kiln can use (0 without the `cuda` feature or without a GPU).
pub fn device_count() -> usize {
    0
}

/// Why `cuda:index` cannot hold tensors, or `None` when it can.
pub(crate) fn unavailable_reason(index: usize) -> Option<String> {
    let _ = index;
    Some("Torch not compiled with CUDA enabled (kiln was built without the `cuda` feature)".into())
}
