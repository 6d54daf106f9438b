//! The backends, one folder each: the memory and kernels of one kind of device, reached
//! through [`crate::dispatch::Backend`].

pub mod cuda;
