//! A cuBLAS handle, one per device, kept by the device's `Gpu` and used by `ops::matmul`.

use cudarc::cublas::{result as blas, sys};

/// A cuBLAS handle bound to a device's stream.
pub(crate) struct Blas(pub(crate) sys::cublasHandle_t);

// SAFETY: a cuBLAS handle may be used from any thread as long as calls on it are not
// concurrent; kiln only uses it under the `Gpu::blas` mutex.
unsafe impl Send for Blas {}

impl Drop for Blas {
    fn drop(&mut self) {
        // SAFETY: the handle came from `create_handle` and is dropped once.
        let _ = unsafe { blas::destroy_handle(self.0) };
    }
}
