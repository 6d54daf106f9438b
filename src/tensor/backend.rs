//! The seam between the tensor core and the devices. Everything a tensor needs from a device
//! — memory, copies, transfers, random fills, the fused optimizer steps, waiting for queued
//! work — goes through [`Backend`]; `crate::dispatch::backend` picks the implementation for a
//! [`Device`], one per folder of `src/backends/`. The tensor core names no backend.
//!
//! Adding a backend: one module implementing this trait, one arm in
//! `crate::dispatch::backend`, one key in the YAML's dispatch table, and its kernels.

use super::{DType, Device, Tensor};
use crate::Result;
use kiln_kernels::cpu::optim::{AdagradStep, AdamStep, RmspropStep, SgdStep};
use kiln_kernels::random::Distribution;

/// One fused optimizer update and its hyperparameters (see `crate::ops::optim`), or one of
/// the gradient scaler's two updates (see `crate::ops::amp`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum FusedStep<'a> {
    Adam(&'a AdamStep),
    Sgd(&'a SgdStep),
    Rmsprop(&'a RmspropStep),
    Adagrad(&'a AdagradStep),
    /// `[grad, found_inf, inv_scale]`: `grad *= inv_scale` in place, and `found_inf = 1`
    /// if `grad` held an inf or NaN (left as it was otherwise).
    AmpUnscale,
    /// `[scale, growth_tracker, found_inf]`: the loss-scale update.
    AmpUpdateScale(&'a AmpScaleUpdate),
}

/// The loss-scale update's factors (`_amp_update_scale_`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AmpScaleUpdate {
    pub growth_factor: f64,
    pub backoff_factor: f64,
    pub growth_interval: i64,
}

/// A device kind's implementation of what the tensor core needs from it.
pub(crate) trait Backend: Sync {
    /// Why `device` cannot hold tensors in this build or on this machine; `None` when it can.
    fn unavailable_reason(&self, device: Device) -> Option<String>;

    /// A fresh contiguous `shape` tensor of `dtype` on `device`: zeros when `zeroed`, else
    /// memory every element of which the caller overwrites (PyTorch's `empty`).
    fn alloc(
        &self,
        op: &str,
        shape: &[usize],
        dtype: DType,
        device: Device,
        zeroed: bool,
    ) -> Result<Tensor>;

    /// Copies `src` into `dst`'s elements, casting to `dst`'s dtype. Both are on this
    /// backend's device, `src` already has `dst`'s shape (broadcast views allowed) and does
    /// not overlap it.
    fn copy(&self, op: &str, src: &Tensor, dst: &Tensor) -> Result<()>;

    /// A contiguous CPU copy of `t` (on this backend) as `dtype`.
    fn to_host(&self, t: &Tensor, dtype: DType) -> Result<Tensor>;

    /// A contiguous copy of the CPU tensor `host` (already of `dtype`) on `device`.
    fn upload(&self, host: &Tensor, dtype: DType, device: Device) -> Result<Tensor>;

    /// Overwrites `out` (contiguous, fresh) with draw `(seed, offset)` of `dist`, element `i`
    /// being the same value on every backend.
    fn fill_random(
        &self,
        op: &str,
        out: &Tensor,
        dist: Distribution,
        seed: u64,
        offset: u64,
    ) -> Result<()>;

    /// One parameter's fused optimizer update. `group` is the parameter, its gradient and its
    /// state tensors, all checked to share the parameter's shape, dtype, device and strides.
    fn fused_step(&self, op: &str, group: &[&Tensor], step: FusedStep<'_>) -> Result<()>;

    /// Waits for the work queued on `device`.
    fn synchronize(&self, device: Device) -> Result<()>;
}
