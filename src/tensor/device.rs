//! Where a tensor's storage lives.

use std::fmt;

/// A compute device. CUDA is part of the type from the start so that code written against
/// kiln today keeps compiling when the CUDA backend lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
    #[default]
    Cpu,
    Cuda(usize),
    /// PyTorch's meta device: tensors with a shape, dtype and strides but no storage. Every
    /// op runs its checks and shape computation and no kernel, so a whole model's shapes
    /// can be worked out without memory.
    Meta,
}

impl Device {
    /// True for `Device::Cuda(_)`.
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }

    /// True for `Device::Meta`.
    #[inline]
    pub fn is_meta(self) -> bool {
        matches!(self, Device::Meta)
    }

    /// The device index (0 for the CPU), as PyTorch's `device.index`.
    pub fn index(self) -> usize {
        match self {
            Device::Cpu | Device::Meta => 0,
            Device::Cuda(i) => i,
        }
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(i) => write!(f, "cuda:{i}"),
            Device::Meta => f.write_str("meta"),
        }
    }
}
