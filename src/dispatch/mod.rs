//! The layer between the operators and the backends: which backend serves a device, tensor
//! memory on any device through it, and the launch helpers generated dispatch calls
//! (promotion, broadcasting, output allocation, de-aliasing, the in-place and `out=` rules).

pub(crate) mod backend;
pub(crate) mod launch;
pub(crate) mod memory;

pub(crate) use crate::backends::cpu::access::{
    dst, elems, elems_mut, src, with_buffers, with_dense, OutBufs,
};
pub(crate) use backend::backend;
