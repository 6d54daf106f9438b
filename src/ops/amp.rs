//! Gradient scaling for mixed precision: PyTorch's `_amp_foreach_non_finite_check_and_unscale_`
//! and `_amp_update_scale_`, what `kiln::amp::GradScaler` calls once per step.
//!
//! Declared in native_functions.yaml with their PyTorch schemas, which mutate arguments
//! that are neither `self` nor `out` (`Tensor(a!)[] self, Tensor(b!) found_inf`;
//! `Tensor(b!) growth_tracker`; torchgen's "mutable" kind): the generator accepts such an op
//! as a CompositeImplicitAutograd function, called as it is, with no derivative and no
//! generated in-place or out= form. The functions here check their arguments, with
//! PyTorch's messages, and run on the device's backend as
//! fused steps (`FusedStep::AmpUnscale`, `AmpUpdateScale`): on the CPU the kernels in
//! `kiln_kernels::cpu::amp`, on CUDA those of kernels/cuda/amp.cu.j2, which keep every
//! scalar on the device.

use crate::dispatch::backend;
use crate::tensor::{AmpScaleUpdate, FusedStep};
use crate::{autograd, DType, Error, Result, Tensor};

const UNSCALE: &str = "_amp_foreach_non_finite_check_and_unscale_";
const UPDATE: &str = "_amp_update_scale_";

/// A scalar argument of the op: `numel() == 1` and float32, else PyTorch's message.
fn check_scalar(op: &str, t: &Tensor, name: &str, dtype: DType) -> Result<()> {
    if t.numel() != 1 {
        return Err(Error::shape(
            op,
            format!("{name} must be a 1-element tensor."),
        ));
    }
    if t.dtype() != dtype {
        let kind = if dtype == DType::I32 {
            "an int"
        } else {
            "a float"
        };
        return Err(Error::dtype(op, format!("{name} must be {kind} tensor.")));
    }
    Ok(())
}

fn check_device(op: &str, t: &Tensor, name: &str, device: crate::Device) -> Result<()> {
    if t.device() != device {
        return Err(Error::device(
            op,
            format!(
                "{name} is on {}, expected {device} (the device of the first tensor)",
                t.device()
            ),
        ));
    }
    Ok(())
}

/// Refuses to write a tensor autograd records: these ops have no derivative.
fn check_not_recorded(op: &str, t: &Tensor, name: &str) -> Result<()> {
    if autograd::is_grad_enabled() && t.requires_grad() {
        return Err(Error::autograd(
            op,
            format!("{name} requires grad and would be written in place by an op with no derivative; call it under no_grad on tensors that do not require grad"),
        ));
    }
    Ok(())
}

/// PyTorch's `torch._amp_foreach_non_finite_check_and_unscale_`: multiplies every tensor of
/// `self_` (the scaled gradients) by `inv_scale` in place, in one pass each (in float32 for
/// f16/bf16), and sets `found_inf` to 1.0 if any element of any of them was inf or NaN
/// (leaving it as it was otherwise). `found_inf` and `inv_scale` are 1-element float32
/// tensors; every tensor is on one device; the gradients are floating point, of any mix of
/// dtypes and layouts (but no gradient may overlap itself, as an expanded one does).
///
/// ```
/// use kiln::Tensor;
/// let g = Tensor::from([2.0f32, f32::INFINITY, 6.0]);
/// let found_inf = Tensor::from([0.0f32]);
/// kiln::_amp_foreach_non_finite_check_and_unscale_(&[g.clone()], &found_inf, &Tensor::from([0.5f32]))?;
/// assert_eq!(g.to_vec::<f32>()?, [1.0, f32::INFINITY, 3.0]);
/// assert_eq!(found_inf.item::<f32>()?, 1.0);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn foreach_non_finite_check_and_unscale(
    self_: &[Tensor],
    found_inf: &Tensor,
    inv_scale: &Tensor,
) -> Result<()> {
    let op = UNSCALE;
    check_scalar(op, inv_scale, "inv_scale", DType::F32)?;
    check_scalar(op, found_inf, "found_inf", DType::F32)?;
    let device = found_inf.device();
    check_device(op, inv_scale, "inv_scale", device)?;
    check_not_recorded(op, found_inf, "found_inf")?;
    // Check everything before writing anything.
    for (i, g) in self_.iter().enumerate() {
        check_device(op, g, &format!("self[{i}]"), device)?;
        if !g.is_floating_point() {
            return Err(crate::dispatch::launch::not_implemented(op, g.dtype()));
        }
        if g.layout().has_internal_overlap() {
            return Err(Error::value(
                op,
                format!("unsupported operation: more than one element of self[{i}] refers to a single memory location (an expanded tensor); clone it first"),
            ));
        }
        if g.shares_storage_with(found_inf) || g.shares_storage_with(inv_scale) {
            return Err(Error::value(
                op,
                format!("self[{i}] shares memory with found_inf or inv_scale"),
            ));
        }
        check_not_recorded(op, g, &format!("self[{i}]"))?;
    }
    if device.is_meta() || self_.is_empty() {
        return Ok(());
    }
    // A scale that aliases the flag is read from a copy, so no kernel reads memory another
    // thread of it writes.
    let inv_scale = if inv_scale.shares_storage_with(found_inf) {
        let _g = autograd::no_grad();
        inv_scale.clone_tensor()?
    } else {
        inv_scale.clone()
    };
    let b = backend(device);
    for g in self_ {
        b.fused_step(op, &[g, found_inf, &inv_scale], FusedStep::AmpUnscale)?;
        g.storage().bump_version();
    }
    found_inf.storage().bump_version();
    Ok(())
}

/// PyTorch's `torch._amp_update_scale_`: updates the loss scale `self_` (1-element float32)
/// and `growth_tracker` (1-element int32) in place from `found_inf` (1-element float32,
/// nonzero when some gradient held an inf or NaN this step): on an inf, `scale *=
/// scale_backoff_factor` and the tracker is reset; otherwise the tracker counts the step and,
/// on reaching `growth_interval`, `scale *= scale_growth_factor` (kept only if finite in
/// float32) and the tracker is reset. Returns `self_`.
///
/// ```
/// use kiln::{DType, Tensor};
/// let scale = Tensor::from([4.0f32]);
/// let tracker = Tensor::from([2i32]);
/// kiln::_amp_update_scale_(&scale, &tracker, &Tensor::from([0.0f32]), 2.0, 0.5, 3)?;
/// assert_eq!((scale.item::<f32>()?, tracker.item::<i32>()?), (8.0, 0));
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn update_scale(
    self_: &Tensor,
    growth_tracker: &Tensor,
    found_inf: &Tensor,
    scale_growth_factor: f64,
    scale_backoff_factor: f64,
    growth_interval: i64,
) -> Result<Tensor> {
    let op = UPDATE;
    let device = self_.device();
    check_device(op, growth_tracker, "growth_tracker", device)?;
    check_device(op, found_inf, "found_inf", device)?;
    check_scalar(op, growth_tracker, "growth_tracker", DType::I32)?;
    check_scalar(op, self_, "current_scale", DType::F32)?;
    check_scalar(op, found_inf, "found_inf", DType::F32)?;
    check_not_recorded(op, self_, "current_scale")?;
    check_not_recorded(op, growth_tracker, "growth_tracker")?;
    if self_.shares_storage_with(growth_tracker) {
        return Err(Error::value(
            op,
            "current_scale and growth_tracker share memory",
        ));
    }
    if device.is_meta() {
        return Ok(self_.clone());
    }
    let h = AmpScaleUpdate {
        growth_factor: scale_growth_factor,
        backoff_factor: scale_backoff_factor,
        growth_interval,
    };
    backend(device).fused_step(
        op,
        &[self_, growth_tracker, found_inf],
        FusedStep::AmpUpdateScale(&h),
    )?;
    self_.storage().bump_version();
    growth_tracker.storage().bump_version();
    Ok(self_.clone())
}
