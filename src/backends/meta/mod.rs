//! The meta backend (PyTorch's meta device): tensors with a shape, dtype and strides and no
//! memory. Every op on them runs its argument checks, promotion, broadcasting and shape
//! function and no kernel, so a model's shapes can be worked out without allocating its
//! activations. Reading a meta tensor's values is an error, as in PyTorch.

use crate::tensor::{Backend, FusedStep};
use crate::{DType, Device, Error, Result, Tensor};
use kiln_kernels::random::Distribution;

/// The meta device's [`Backend`]: memory is a length, and every write is a no-op.
pub(crate) struct MetaBackend;

impl Backend for MetaBackend {
    fn unavailable_reason(&self, _: Device) -> Option<String> {
        None
    }

    fn alloc(&self, op: &str, shape: &[usize], dtype: DType, _: Device, _: bool) -> Result<Tensor> {
        Tensor::alloc_meta(op, shape, dtype)
    }

    fn copy(&self, _: &str, _: &Tensor, _: &Tensor) -> Result<()> {
        Ok(())
    }

    fn to_host(&self, _: &Tensor, _: DType) -> Result<Tensor> {
        Err(Error::not_implemented(
            "to",
            "Cannot copy out of meta tensor; no data!",
        ))
    }

    fn upload(&self, host: &Tensor, dtype: DType, _: Device) -> Result<Tensor> {
        Tensor::alloc_meta("to", host.shape(), dtype)
    }

    fn fill_random(&self, _: &str, _: &Tensor, _: Distribution, _: u64, _: u64) -> Result<()> {
        Ok(())
    }

    fn fused_step(&self, _: &str, _: &[&Tensor], _: FusedStep<'_>) -> Result<()> {
        Ok(())
    }

    fn synchronize(&self, _: Device) -> Result<()> {
        Ok(())
    }
}
