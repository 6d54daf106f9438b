//! Which backend serves a device: the one place that names them all.

use crate::backends::{cpu::CpuBackend, cuda::CudaBackend, meta::MetaBackend};
use crate::tensor::Backend;
use crate::{Device, Error, Result};

/// The backend of `device`'s kind. Without the `cuda` feature, CUDA's is a stub whose every
/// method fails with PyTorch's "not compiled with CUDA" error.
#[inline]
pub(crate) fn backend(device: Device) -> &'static dyn Backend {
    match device {
        Device::Cpu => &CpuBackend,
        Device::Cuda(_) => &CudaBackend,
        Device::Meta => &MetaBackend,
    }
}

impl Device {
    /// Fails unless this device can hold tensors in this build on this machine.
    pub fn ensure_available(self) -> Result<()> {
        match backend(self).unavailable_reason(self) {
            None => Ok(()),
            Some(why) => Err(Error::Device(format!("cannot use device {self}: {why}"))),
        }
    }

    /// Waits for all work queued on this device (PyTorch's `torch.cuda.synchronize`; a
    /// no-op on the CPU and meta devices, whose ops finish before they return).
    pub fn synchronize(self) -> Result<()> {
        self.ensure_available()?;
        backend(self).synchronize(self)
    }
}
