//! Storage: one typed buffer shared by a tensor and all its views, with the version counter
//! that in-place ops bump and saved tensors check.

use crate::{DType, Device};
use half::{bf16, f16};
use kiln_kernels::Element;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A CPU buffer of one dtype.
#[derive(Clone, Debug)]
pub enum CpuBuffer {
    Bool(Vec<bool>),
    U8(Vec<u8>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    F16(Vec<f16>),
    BF16(Vec<bf16>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

/// An [`Element`] that knows its [`CpuBuffer`] variant.
pub trait BufferElement: Element {
    /// Wraps a vector as a buffer.
    fn wrap(v: Vec<Self>) -> CpuBuffer;
    /// The buffer's elements; `None` when the buffer holds another dtype.
    fn slice(b: &CpuBuffer) -> Option<&[Self]>;
    /// The buffer's elements, mutably.
    fn slice_mut(b: &mut CpuBuffer) -> Option<&mut [Self]>;
}

macro_rules! buffer_element {
    ($($t:ty => $v:ident),*) => {
        $(impl BufferElement for $t {
            fn wrap(v: Vec<Self>) -> CpuBuffer { CpuBuffer::$v(v) }
            fn slice(b: &CpuBuffer) -> Option<&[Self]> {
                match b { CpuBuffer::$v(v) => Some(v), _ => None }
            }
            fn slice_mut(b: &mut CpuBuffer) -> Option<&mut [Self]> {
                match b { CpuBuffer::$v(v) => Some(v), _ => None }
            }
        })*

        impl CpuBuffer {
            /// The dtype of the elements.
            pub fn dtype(&self) -> DType {
                match self { $(CpuBuffer::$v(_) => <$t as Element>::DTYPE),* }
            }
            /// Number of elements.
            pub fn len(&self) -> usize {
                match self { $(CpuBuffer::$v(v) => v.len()),* }
            }
            /// True when the buffer holds no element.
            pub fn is_empty(&self) -> bool {
                self.len() == 0
            }
        }
    };
}
buffer_element!(bool => Bool, u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64,
                f16 => F16, bf16 => BF16, f32 => F32, f64 => F64);

impl CpuBuffer {
    /// A buffer of `len` zeros (false for bool).
    pub fn zeros(dtype: DType, len: usize) -> CpuBuffer {
        kiln_kernels::with_dtype!(dtype, T, { T::wrap(vec![T::default(); len]) })
    }
}

/// A tensor's memory. Views share one `Storage` through an `Arc`.
#[derive(Debug)]
pub struct Storage {
    buf: RwLock<CpuBuffer>,
    version: AtomicU64,
    device: Device,
}

impl Storage {
    /// Wraps a buffer.
    pub fn new(buf: CpuBuffer) -> Self {
        Storage {
            buf: RwLock::new(buf),
            version: AtomicU64::new(0),
            device: Device::Cpu,
        }
    }

    /// The device the buffer lives on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Locks for reading. A poisoned lock only means another thread panicked mid-kernel;
    /// the buffer is still a valid buffer of its dtype, so kiln carries on.
    pub fn read(&self) -> RwLockReadGuard<'_, CpuBuffer> {
        self.buf.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Locks for writing.
    pub fn write(&self) -> RwLockWriteGuard<'_, CpuBuffer> {
        self.buf.write().unwrap_or_else(|e| e.into_inner())
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
