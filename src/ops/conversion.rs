//! Conversions: `to` (a dtype, a device, another tensor's dtype and device) and `contiguous`,
//! over `_to_copy` and `clone`.

use crate::{DType, Device, Result, Tensor};

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
