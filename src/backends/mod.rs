//! The backends, one folder each: the memory and kernels of one kind of device, reached
//! through the [`crate::tensor::Backend`] trait (`crate::dispatch::backend` picks one).

pub(crate) mod cpu;
pub mod cuda;
pub(crate) mod meta;
