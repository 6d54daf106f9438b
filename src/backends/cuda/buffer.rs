//! Device memory of one storage: a block from the device's caching allocator.

use super::alloc::size_class;
use super::runtime::{self, driver_error, Gpu};
use crate::{DType, Error, Result};
use std::sync::Arc;

/// `len` elements of `dtype` on a CUDA device.
pub(crate) struct CudaBuffer {
    ptr: u64,
    class: usize,
    dtype: DType,
    len: usize,
    gpu: Arc<Gpu>,
}

impl std::fmt::Debug for CudaBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaBuffer({} x {}, cuda:{})",
            self.len, self.dtype, self.gpu.ordinal
        )
    }
}

impl CudaBuffer {
    /// `len` zeros (false for bool) on `cuda:ordinal`.
    pub fn zeros(op: &str, ordinal: usize, dtype: DType, len: usize) -> Result<CudaBuffer> {
        let gpu = runtime::gpu(ordinal)?;
        let bytes = len.checked_mul(dtype.size_in_bytes()).ok_or_else(|| {
            Error::out_of_memory(
                op,
                format!("CUDA out of memory. Tried to allocate {len} elements of {dtype}"),
            )
        })?;
        gpu.ctx.bind_to_thread().map_err(|e| driver_error(op, e))?;
        let class = size_class(bytes);
        let ptr = runtime::lock_alloc(&gpu)
            .take(class)
            .map_err(|m| Error::op(op, m))?;
        let buf = CudaBuffer {
            ptr,
            class,
            dtype,
            len,
            gpu,
        };
        // SAFETY: `ptr` heads a live block of at least `bytes` bytes on this device, and the
        // memset is queued on the stream every later use of the buffer runs on.
        unsafe {
            cudarc::driver::result::memset_d8_async(ptr, 0, bytes, buf.gpu.stream.cu_stream())
        }
        .map_err(|e| driver_error(op, e))?;
        Ok(buf)
    }
}

impl crate::tensor::DeviceMemory for CudaBuffer {
    fn ptr(&self) -> u64 {
        self.ptr
    }
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        runtime::lock_alloc(&self.gpu).give(self.ptr, self.class);
    }
}
