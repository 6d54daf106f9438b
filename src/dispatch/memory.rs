//! Tensors' memory on any device, through the backend trait: allocation, copies between
//! tensors, transfers between devices, reading elements out.

use super::backend::backend;
use crate::tensor::BufferElement;
use crate::{DType, Device, Error, Result, Tensor};

/// PyTorch's error for tensors on two devices.
pub(crate) fn device_mix(op: &str, a: Device, b: Device) -> Error {
    Error::device(
        op,
        format!(
            "Expected all tensors to be on the same device, but found at least two devices, {a} and {b}!"
        ),
    )
}

impl Tensor {
    /// A fresh contiguous tensor of zeros on `device`.
    #[inline]
    pub(crate) fn alloc_on(
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        match device {
            // The CPU directly: the most frequent call of all.
            Device::Cpu => Tensor::alloc(op, shape, dtype),
            _ => backend(device).alloc(op, shape, dtype, device, true),
        }
    }

    /// A fresh contiguous tensor on `device` whose every element the caller overwrites
    /// (PyTorch's `empty`; see [`Tensor::alloc_empty`]).
    #[inline]
    pub(crate) fn alloc_empty_on(
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        match device {
            Device::Cpu => Tensor::alloc_empty(op, shape, dtype),
            _ => backend(device).alloc(op, shape, dtype, device, false),
        }
    }

    /// The elements in row-major order, converted to `T` (like PyTorch's `tolist()`).
    ///
    /// ```
    /// let x = kiln::Tensor::from([1i64, 2, 3]);
    /// assert_eq!(x.to_vec::<f32>()?, vec![1.0, 2.0, 3.0]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn to_vec<T: BufferElement>(&self) -> Result<Vec<T>> {
        match self.device() {
            Device::Cpu => crate::backends::cpu::to_vec(self),
            device => {
                device.ensure_available()?;
                backend(device).to_host(self, self.dtype())?.to_vec()
            }
        }
    }

    /// A copy on the CPU, or `self` when it is already there (PyTorch's `cpu()`).
    pub fn cpu(&self) -> Result<Tensor> {
        self.to_device(Device::Cpu)
    }

    /// A copy on `cuda:0`, or `self` when it is already there (PyTorch's `cuda()`).
    pub fn cuda(&self) -> Result<Tensor> {
        self.to_device(Device::Cuda(0))
    }

    /// The value of a one-element tensor, converted to `T` (PyTorch's `item()`).
    pub fn item<T: BufferElement>(&self) -> Result<T> {
        if self.numel() != 1 {
            return Err(Error::shape(
                "item",
                format!(
                    "a Tensor with {} elements cannot be converted to Scalar",
                    self.numel()
                ),
            ));
        }
        if self.device().is_meta() {
            return Err(Error::device(
                "item",
                "Tensor.item() cannot be called on meta tensors",
            ));
        }
        Ok(self.to_vec::<T>()?[0])
    }

    /// Copies `src` (broadcast to `self`'s shape, cast to `self`'s dtype) into `self`'s
    /// elements, without autograd and without bumping the version. Overlap-safe.
    pub(crate) fn copy_data_from(&self, src_t: &Tensor) -> Result<()> {
        let layout = src_t
            .layout()
            .broadcast_to(self.shape())
            .map_err(|m| Error::op("copy_", m))?;
        if src_t.device() != self.device() {
            return Err(device_mix("copy_", self.device(), src_t.device()));
        }
        let mut src_t = src_t.with_layout(layout);
        if src_t.shares_storage_with(self) && !self.device().is_meta() {
            src_t = src_t.fresh_copy()?;
        }
        backend(self.device()).copy("copy_", &src_t, self)
    }

    /// A contiguous copy in fresh storage, without autograd history.
    pub(crate) fn fresh_copy(&self) -> Result<Tensor> {
        let out = Tensor::alloc_empty_on("clone", self.shape(), self.dtype(), self.device())?;
        backend(self.device()).copy("clone", self, &out)?;
        Ok(out)
    }

    /// A contiguous copy of the data in fresh storage, cut from the graph.
    pub fn detached_copy(&self) -> Result<Tensor> {
        self.fresh_copy()
    }

    /// A contiguous copy with elements cast to `dtype` on `device`, without autograd history.
    pub(crate) fn copy_to(&self, dtype: DType, device: Device) -> Result<Tensor> {
        if device == self.device() {
            return self.cast_copy(dtype);
        }
        device
            .ensure_available()
            .map_err(|e| Error::device("to", e.to_string()))?;
        if device.is_meta() {
            // The same layout over a meta storage of the same length, as PyTorch's `to`
            // keeps a dense tensor's strides: a transposed input stays transposed.
            return Ok(Tensor::from_storage(
                std::sync::Arc::new(crate::tensor::Storage::meta(self.storage().len())),
                self.layout().clone(),
                dtype,
            ));
        }
        let l = self.layout();
        if !self.is_contiguous() && l.is_non_overlapping_and_dense() && self.numel() > 0 {
            // PyTorch's `to` keeps a dense tensor's strides (`preserve_format`): a transposed
            // tensor arrives transposed. Its dims in memory order are a contiguous view;
            // that is copied, and the copy given the original strides.
            let mut order: Vec<usize> = (0..l.sizes.len()).filter(|&d| l.sizes[d] > 1).collect();
            order.sort_by_key(|&d| std::cmp::Reverse(l.strides[d]));
            let sizes: Vec<usize> = order.iter().map(|&d| l.sizes[d]).collect();
            let mut memory_order = crate::Layout::contiguous(&sizes);
            memory_order.offset = l.offset;
            let moved = self.with_layout(memory_order).copy_to(dtype, device)?;
            return Ok(moved.with_layout(crate::Layout {
                sizes: l.sizes.clone(),
                strides: l.strides.clone(),
                offset: 0,
            }));
        }
        // Through the host: a backend knows its own memory and the CPU's.
        let host = backend(self.device()).to_host(self, dtype)?;
        backend(device).upload(&host, dtype, device)
    }

    /// A contiguous copy with elements cast to `dtype`, without autograd history.
    pub(crate) fn cast_copy(&self, dtype: DType) -> Result<Tensor> {
        let out = Tensor::alloc_empty_on("to", self.shape(), dtype, self.device())?;
        out.copy_data_from(self)?;
        Ok(out)
    }
}
