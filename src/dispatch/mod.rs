//! The layer between the tensor types and the backends: the [`Backend`] trait every device
//! implements, buffer access for kernels, and the launch helpers generated dispatch calls
//! (promotion, broadcasting, output allocation, de-aliasing, the in-place and `out=` rules).

pub(crate) mod access;
pub(crate) mod launch;

pub(crate) use access::{dst, elems, elems_mut, src, with_buffers, with_dense};
