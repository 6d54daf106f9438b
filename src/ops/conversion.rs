//! Conversions: `to` (a dtype, a device, another tensor's dtype and device) and `contiguous`,
//! over `_to_copy` and `clone`.

use crate::{DType, Device, Error, MemoryFormat, Result, Tensor};

/// `contiguous()`: the tensor itself when already contiguous, else a copy.
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        t.clone_tensor()
    }
}

/// `to(dtype)`: `self` itself when the dtype already matches (PyTorch returns the same
/// tensor, so an in-place op on the result reaches `self`'s history), else a recorded copy.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t.clone())
    } else {
        t.to_copy_with(Some(dtype), None)
    }
}

/// `to(device)`: `t` itself when it is already on `device`, else a copy there.
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        Ok(t.clone())
    } else {
        t.to_copy_with(None, Some(device))
    }
}

/// `to(other)`: converted to `other`'s dtype and moved to its device.
pub fn to_other(t: &Tensor, other: &Tensor, non_blocking: bool, copy: bool) -> Result<Tensor> {
    let _ = non_blocking; // copies are synchronous
    let r = t.to_dtype(other.dtype())?.to_device(other.device())?;
    if copy && r.shares_storage_with(t) {
        return r.clone_tensor();
    }
    Ok(r)
}

/// Memory formats (`torch.channels_last`): how a dense image batch is laid out, kept by the
/// ops that produce one from another (convolution, pooling, batch norm, pointwise ops).
impl Tensor {
    /// `suggest_memory_format()`: `ChannelsLast` (`ChannelsLast3d` for 5-d) when the strides
    /// rank like a channels-last layout's, else `Contiguous`.
    pub fn suggest_memory_format(&self) -> MemoryFormat {
        self.layout().suggest_memory_format()
    }

    /// `is_contiguous(memory_format=format)`: dense in `format`'s dim order.
    /// `MemoryFormat::Preserve` is not a layout and gives an error, as in PyTorch.
    pub fn is_contiguous_as(&self, format: MemoryFormat) -> Result<bool> {
        if format == MemoryFormat::Preserve {
            return Err(Error::value(
                "is_contiguous",
                "preserve memory format is unsupported by the contiguous operator",
            ));
        }
        Ok(self.layout().is_contiguous_in(format))
    }

    /// `contiguous(memory_format=format)`: the tensor itself when it is already dense in
    /// `format`'s order, else a copy laid out so (recorded, so gradients flow back). A
    /// channels-last format on the wrong rank is an error, as in PyTorch.
    pub fn contiguous_as(&self, format: MemoryFormat) -> Result<Tensor> {
        let op = "contiguous";
        if self.is_contiguous_as(format)? {
            return Ok(self.clone());
        }
        if let Some(m) = format.rank_error(self.dim()) {
            return Err(Error::shape(op, m));
        }
        match format.dim_order(self.dim()) {
            // The dims in memory order, made row-major, then viewed back: one copy.
            Some(order) if format != MemoryFormat::Contiguous => {
                let to: Vec<i64> = order.iter().map(|&d| d as i64).collect();
                let mut back = vec![0i64; order.len()];
                for (i, &d) in order.iter().enumerate() {
                    back[d] = i as i64;
                }
                self.permute(&to)?.contiguous()?.permute(&back)
            }
            _ => self.contiguous(),
        }
    }

    /// `to(memory_format=format)`: [`Tensor::contiguous_as`], except that `Preserve` returns
    /// the tensor itself.
    pub fn to_memory_format(&self, format: MemoryFormat) -> Result<Tensor> {
        match format {
            MemoryFormat::Preserve => Ok(self.clone()),
            f => self.contiguous_as(f),
        }
    }
}
