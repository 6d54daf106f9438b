//! Storage: one typed buffer shared by a tensor and all its views, with the version counter
//! that in-place ops bump and saved tensors check; and where CPU buffers come from (the
//! cache, else fresh zeroed memory).

use super::buffer::{zeroed_vec, BufferElement, CpuBuffer};
use super::cache;
use super::memory_stats;
use crate::{DType, Device, Error, Result};
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// PyTorch's allocation failure, for a buffer of `bytes`.
pub(crate) fn out_of_memory(op: &str, bytes: u128) -> Error {
    Error::out_of_memory(
        op,
        format!("DefaultCPUAllocator: not enough memory: you tried to allocate {bytes} bytes."),
    )
}

impl CpuBuffer {
    /// A buffer of `len` zeros (false for bool), or `op`'s out-of-memory error. A large
    /// buffer comes from the cache (see [`super::cache`]) when one is free, zero-filled.
    pub fn zeros(op: &str, dtype: DType, len: usize) -> Result<CpuBuffer> {
        if let Some(mut buf) = cache::take(dtype, len) {
            cache::count_allocation();
            buf.fill_zero();
            return Ok(buf);
        }
        CpuBuffer::fresh(op, dtype, len)
    }

    /// A buffer of `len` elements for a kernel that overwrites every one of them (PyTorch's
    /// `empty`): a cached buffer keeps whatever values of its dtype it held, a fresh one
    /// holds zeros. Never uninitialised memory. Debug builds fill it with NaN (or an integer
    /// pattern) so tests catch a kernel that leaves an element unwritten.
    #[cfg_attr(not(debug_assertions), allow(unused_mut))]
    #[inline]
    pub fn empty(op: &str, dtype: DType, len: usize) -> Result<CpuBuffer> {
        let mut buf = match cache::take(dtype, len) {
            Some(buf) => {
                cache::count_allocation();
                buf
            }
            None => CpuBuffer::fresh(op, dtype, len)?,
        };
        #[cfg(debug_assertions)]
        buf.poison();
        Ok(buf)
    }

    /// A newly allocated zeroed buffer, with the capacity of its cache size class.
    #[inline]
    fn fresh(op: &str, dtype: DType, len: usize) -> Result<CpuBuffer> {
        let cap = cache::class_len(len, dtype.size_in_bytes());
        kiln_kernels::with_dtype!(dtype, T, {
            if len <= T::INLINE {
                return Ok(T::inline_zeros(len));
            }
            cache::count_allocation();
            zeroed_vec::<T>(len, cap)
                .map(T::wrap)
                .map_err(|bytes| out_of_memory(op, bytes))
        })
    }

    /// A buffer of `len` values `f(i)`, allocated fallibly like [`CpuBuffer::zeros`].
    pub(crate) fn from_fn<T: BufferElement>(
        op: &str,
        len: usize,
        f: impl FnMut(usize) -> T,
    ) -> Result<CpuBuffer> {
        let mut buf = CpuBuffer::empty(op, T::DTYPE, len)?;
        let s = T::slice_mut(&mut buf).expect("allocated with T's dtype");
        s.iter_mut().enumerate().for_each({
            let mut f = f;
            move |(i, x)| *x = f(i)
        });
        Ok(buf)
    }
}

/// The memory behind a storage, on one backend.
#[derive(Debug)]
pub(crate) enum Buffer {
    Cpu(CpuBuffer),
    /// Memory on an accelerator, owned by its backend, which alone reads or writes it: the
    /// tensor core knows only its address (a `Box`, so this type names no backend).
    Device(Box<dyn DeviceMemory>),
    /// A meta tensor's: a length and no memory.
    Meta,
}

/// An accelerator backend's memory block, as the tensor core sees it. Dropping it returns
/// the block to its backend (e.g. the CUDA caching allocator).
pub(crate) trait DeviceMemory: Send + Sync + std::fmt::Debug {
    /// The device address of element 0.
    fn ptr(&self) -> u64;
}

/// A tensor's memory. Views share one `Storage` through an `Arc`.
#[derive(Debug)]
pub struct Storage {
    buf: RwLock<Buffer>,
    /// Elements in `buf`: fixed for the storage's life, so readable without the lock.
    len: usize,
    version: AtomicU64,
    device: Device,
}

impl Drop for Storage {
    /// Hands a CPU buffer to the cache, which keeps it for the next allocation of its dtype
    /// and size class or frees it.
    fn drop(&mut self) {
        let buf = self.buf.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Buffer::Cpu(b) = buf {
            memory_stats::record_free(self.len * b.dtype().size_in_bytes());
            // Most buffers are too small to keep: dropped where they lie, not moved out.
            if cache::keeps(b) {
                cache::give(std::mem::replace(b, CpuBuffer::Bool(SmallVec::new())));
            }
        }
    }
}

impl Storage {
    /// Wraps a CPU buffer (counted by [`memory_stats`] until the storage drops).
    #[inline]
    pub fn new(buf: CpuBuffer) -> Self {
        memory_stats::record_alloc(buf.len() * buf.dtype().size_in_bytes());
        Storage {
            len: buf.len(),
            buf: RwLock::new(Buffer::Cpu(buf)),
            version: AtomicU64::new(0),
            device: Device::Cpu,
        }
    }

    /// Wraps `len` elements of an accelerator's memory on `device`.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn on_device(mem: Box<dyn DeviceMemory>, len: usize, device: Device) -> Self {
        Storage {
            len,
            device,
            buf: RwLock::new(Buffer::Device(mem)),
            version: AtomicU64::new(0),
        }
    }

    /// A meta storage of `len` elements: no memory behind it.
    pub(crate) fn meta(len: usize) -> Self {
        Storage {
            len,
            device: Device::Meta,
            buf: RwLock::new(Buffer::Meta),
            version: AtomicU64::new(0),
        }
    }

    /// Number of elements in the buffer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the buffer lives on.
    #[inline]
    pub fn device(&self) -> Device {
        self.device
    }

    /// Locks for reading. A poisoned lock only means another thread panicked mid-kernel;
    /// the buffer is still a valid buffer of its dtype, so kiln carries on.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Buffer> {
        self.buf.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks for writing.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Buffer> {
        self.buf.write().unwrap_or_else(|e| e.into_inner())
    }

    /// [`Storage::read`] if it can be had without waiting.
    #[inline]
    pub(crate) fn try_read(&self) -> Option<RwLockReadGuard<'_, Buffer>> {
        match self.buf.try_read() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// [`Storage::write`] if it can be had without waiting.
    #[inline]
    pub(crate) fn try_write(&self) -> Option<RwLockWriteGuard<'_, Buffer>> {
        match self.buf.try_write() {
            Ok(g) => Some(g),
            Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// The device address of element 0 of an accelerator's storage.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn device_ptr(&self) -> Option<u64> {
        match &*self.read() {
            Buffer::Device(b) => Some(b.ptr()),
            Buffer::Cpu(_) | Buffer::Meta => None,
        }
    }

    /// The version counter: how many in-place writes this storage has seen.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Records an in-place write.
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tensor;

    fn spilled(b: &CpuBuffer) -> bool {
        macro_rules! each {
            ($($v:ident),*) => { match b { $(CpuBuffer::$v(v) => v.spilled()),* } };
        }
        each!(Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64)
    }

    #[test]
    fn buffers_of_up_to_sixteen_bytes_are_inline_and_zeroed() {
        for dtype in DType::ALL {
            let inline = 16 / dtype.size_in_bytes();
            let b = CpuBuffer::zeros("test", dtype, inline).unwrap();
            assert!(!spilled(&b), "{dtype} x {inline}");
            assert_eq!(b.len(), inline);
            let b = CpuBuffer::empty("test", dtype, inline + 1).unwrap();
            assert!(spilled(&b), "{dtype} x {}", inline + 1);
            assert_eq!(b.len(), inline + 1);
        }
        let z = CpuBuffer::zeros("test", DType::F64, 2).unwrap();
        assert_eq!(f64::slice(&z).unwrap(), &[0.0, 0.0]);
    }

    #[test]
    fn small_vectors_wrap_inline() {
        let b = f32::wrap(vec![1.0, 2.0, 3.0]);
        assert!(!spilled(&b));
        assert_eq!(f32::slice(&b).unwrap(), &[1.0, 2.0, 3.0]);
        let b = f32::wrap(vec![1.0; 5]);
        assert!(spilled(&b));
    }

    #[test]
    fn in_place_ops_through_views_of_an_inline_buffer() -> crate::Result<()> {
        // Two elements of f64 fill the inline space; a view of each aliases the other's
        // storage.
        let x = Tensor::from([1f64, 2.]);
        let (a, b) = (x.narrow(0, 0, 1)?, x.narrow(0, 1, 1)?);
        a.add_(&b)?; // x[0] += x[1]
        b.mul_(&a)?; // x[1] *= x[0]
        x.add_(&x.flip(&[0])?)?; // reads what it writes
        assert_eq!(x.to_vec::<f64>()?, vec![3. + 6., 6. + 3.]);
        Ok(())
    }
}
