//! The structs CUDA kernels take by value, laid out as their C twins in
//! kernels/cuda/prelude.cuh and the templates (checked by NVRTC in `ops`' layout test).

use crate::{Error, Result};
use cudarc::driver::DeviceRepr;

/// PyTorch's CUDA limit on dimensions (`MAX_DIMS`); must match `KILN_MAX_DIMS` in
/// kernels/cuda/prelude.cuh.
pub(crate) const MAX_DIMS: usize = 25;

/// `struct KilnTensor` of kernels/cuda/prelude.cuh, byte for byte.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct KilnTensor {
    pub(crate) data: u64,
    pub(crate) ndim: i32,
    pub(crate) sizes: [i64; MAX_DIMS],
    pub(crate) strides: [i64; MAX_DIMS],
}

// SAFETY: `KilnTensor` is `repr(C)`, plain old data, and laid out exactly as the C struct the
// kernels take by value (u64, int + 4 bytes padding, two arrays of 25 long longs).
unsafe impl DeviceRepr for KilnTensor {}

/// `struct KilnStr` of prelude.cuh: a string argument of at most 15 bytes.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct KilnStr {
    s: [u8; 16],
}

// SAFETY: plain bytes, laid out as `struct KilnStr { char s[16]; }`.
unsafe impl DeviceRepr for KilnStr {}

impl KilnStr {
    pub(crate) fn new(op: &str, s: &str) -> Result<KilnStr> {
        if s.len() > 15 || s.as_bytes().contains(&0) {
            return Err(Error::value(
                op,
                format!("string argument '{s}' is too long for a CUDA kernel (15 bytes at most)"),
            ));
        }
        let mut b = [0u8; 16];
        b[..s.len()].copy_from_slice(s.as_bytes());
        Ok(KilnStr { s: b })
    }
}

/// `struct KilnFold` of fold.cu.j2, field for field.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct KilnFold {
    pub(crate) size: [i64; 3],
    pub(crate) kernel: [i64; 3],
    pub(crate) dilation: [i64; 3],
    pub(crate) padding: [i64; 3],
    pub(crate) stride: [i64; 3],
    pub(crate) blocks: [i64; 3],
    pub(crate) channels: i64,
}

// SAFETY: `KilnFold` is `repr(C)` plain old data laid out exactly as the C struct (19 long
// longs, no padding), which the kernels take by value.
unsafe impl DeviceRepr for KilnFold {}
