//! The gradient scaler's two updates on CUDA (kernels/cuda/amp.cu.j2; `crate::ops::amp`
//! checks the arguments): the unscale is one launch per gradient that also raises
//! `found_inf` on the device, and the scale update one thread, so a step under a
//! `GradScaler` never copies a scalar to the host until `step` reads `found_inf` once.

use super::{gpu_of, grid, operand, operand_with};
use crate::backends::cuda::launchers::amp as kernels;
use crate::tensor::AmpScaleUpdate;
use crate::{Layout, Result, Tensor};

/// A 1-element tensor as the kernels read it: its one element, at its offset.
fn scalar(op: &str, t: &Tensor) -> Result<super::KilnTensor> {
    let layout = Layout {
        sizes: smallvec::smallvec![1],
        strides: smallvec::smallvec![1],
        offset: t.storage_offset(),
    };
    operand_with(op, t, &layout)
}

/// `[grad, found_inf, inv_scale]`.
pub(crate) fn unscale(op: &str, group: &[&Tensor]) -> Result<()> {
    let (g, found_inf, inv_scale) = (group[0], group[1], group[2]);
    let n = g.numel();
    if n == 0 {
        return Ok(());
    }
    let gpu = gpu_of(op, g)?;
    let (kg, kf, ki) = (
        operand(op, g)?,
        scalar(op, found_inf)?,
        scalar(op, inv_scale)?,
    );
    // SAFETY: `amp_unscale_<T>(g, found_inf, inv_scale, long long n)`: `g` is a live tensor
    // of n elements of T on this device with no internal overlap, `found_inf` and
    // `inv_scale` one float each there; the op checked that `g` shares no memory with
    // either and that `found_inf` does not alias `inv_scale` (so the read of the scale does
    // not race the flag's write).
    unsafe { kernels::amp_unscale(&gpu, op, g.dtype(), grid(n), &kg, &kf, &ki, n as i64) }
}

/// `[scale, growth_tracker, found_inf]`.
pub(crate) fn update_scale(op: &str, group: &[&Tensor], h: &AmpScaleUpdate) -> Result<()> {
    let gpu = gpu_of(op, group[0])?;
    let (ks, kt, kf) = (
        scalar(op, group[0])?,
        scalar(op, group[1])?,
        scalar(op, group[2])?,
    );
    // SAFETY: `amp_update_scale(scale, tracker, found_inf, double, double, long long)`: one
    // float, one int and one float on this device, scale and tracker distinct memory
    // (checked by the op); one thread reads and writes them.
    unsafe {
        kernels::amp_update_scale(
            &gpu,
            op,
            grid(1),
            &ks,
            &kt,
            &kf,
            h.growth_factor,
            h.backoff_factor,
            h.growth_interval,
        )
    }
}
