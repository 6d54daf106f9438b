//! CUDA's side of the [`Backend`] trait; without the `cuda` feature, a stub whose every
//! method is PyTorch's "not compiled with CUDA" error, so callers need no `#[cfg]`.

use crate::tensor::{Backend, FusedStep};
use crate::{DType, Device, Result, Tensor};
use kiln_kernels::random::Distribution;

/// CUDA devices' [`Backend`].
pub(crate) struct CudaBackend;

#[cfg(feature = "cuda")]
impl Backend for CudaBackend {
    fn unavailable_reason(&self, device: Device) -> Option<String> {
        super::unavailable_reason(device.index())
    }

    fn alloc(
        &self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
        _zeroed: bool,
    ) -> Result<Tensor> {
        // Always zeroed: a memset is queued on the stream and costs next to nothing.
        super::ops::alloc(op, shape, dtype, device.index())
    }

    fn copy(&self, op: &str, src: &Tensor, dst: &Tensor) -> Result<()> {
        super::ops::copy(op, src, dst)
    }

    fn to_host(&self, t: &Tensor, dtype: DType) -> Result<Tensor> {
        super::ops::transfer(t, dtype, Device::Cpu)
    }

    fn upload(&self, host: &Tensor, dtype: DType, device: Device) -> Result<Tensor> {
        super::ops::transfer(host, dtype, device)
    }

    fn fill_random(
        &self,
        op: &str,
        out: &Tensor,
        dist: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<()> {
        super::ops::random::fill(op, out, dist, seed, offset)
    }

    fn fused_step(&self, op: &str, group: &[&Tensor], step: FusedStep<'_>) -> Result<()> {
        use super::ops::optim;
        match step {
            FusedStep::Adam(h) => optim::fused_adam(op, group, h),
            FusedStep::Sgd(h) => optim::fused_sgd(op, group, h),
            FusedStep::Rmsprop(h) => optim::fused_rmsprop(op, group, h),
            FusedStep::Adagrad(h) => optim::fused_adagrad(op, group, h),
            FusedStep::AmpUnscale => super::ops::amp::unscale(op, group),
            FusedStep::AmpUpdateScale(h) => super::ops::amp::update_scale(op, group, h),
        }
    }

    fn synchronize(&self, device: Device) -> Result<()> {
        super::synchronize(device.index())
    }
}

#[cfg(not(feature = "cuda"))]
impl Backend for CudaBackend {
    fn unavailable_reason(&self, device: Device) -> Option<String> {
        super::unavailable_reason(device.index())
    }

    fn alloc(&self, _: &str, _: &[usize], _: DType, device: Device, _: bool) -> Result<Tensor> {
        Err(not_compiled(device))
    }

    fn copy(&self, _: &str, _: &Tensor, dst: &Tensor) -> Result<()> {
        Err(not_compiled(dst.device()))
    }

    fn to_host(&self, t: &Tensor, _: DType) -> Result<Tensor> {
        Err(not_compiled(t.device()))
    }

    fn upload(&self, _: &Tensor, _: DType, device: Device) -> Result<Tensor> {
        Err(not_compiled(device))
    }

    fn fill_random(&self, _: &str, out: &Tensor, _: Distribution, _: u64, _: u64) -> Result<()> {
        Err(not_compiled(out.device()))
    }

    fn fused_step(&self, _: &str, group: &[&Tensor], _: FusedStep<'_>) -> Result<()> {
        Err(not_compiled(group[0].device()))
    }

    fn synchronize(&self, device: Device) -> Result<()> {
        Err(not_compiled(device))
    }
}

/// The error of every CUDA call in a build without the `cuda` feature.
#[cfg(not(feature = "cuda"))]
fn not_compiled(device: Device) -> crate::Error {
    crate::Error::Device(format!(
        "cannot use device {device}: {}",
        super::unavailable_reason(device.index()).unwrap_or_default()
    ))
}
