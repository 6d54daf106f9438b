//! What an op with an `autocast:` policy casts inside a region: PyTorch's `CastPolicy`
//! (`autocast_mode.h`), worked out once per call from the inputs.

use super::autocast::{
    active, cache_enabled, cached, device_bit, region_dtype, SuspendGuard, CPU, CUDA,
};
use crate::{DType, Error, Result, Tensor};

/// An op's cast policy on one device type, as `native_functions.yaml`'s `autocast:` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastPolicy {
    /// `lower`: floating float32 inputs run in the region's dtype (matmuls, convolutions).
    Lower,
    /// `fp32`: floating inputs run in float32 (losses, norms, `exp`, `log`, …).
    Fp32,
    /// `fp32_set_opt_dtype`: an unset `dtype` argument becomes float32 (`sum`, `softmax`).
    Fp32SetOptDtype,
    /// `promote`: floating inputs run in the widest floating dtype among them (`cat`).
    Promote,
    /// `banned`: the op refuses to run in a region.
    Banned,
}

/// The casts of one call: the device type whose region applies, the dtype eligible inputs go
/// to, and whether an unset `dtype` becomes float32.
#[doc(hidden)]
pub struct CastPlan {
    bit: u8,
    to: Option<DType>,
    set_opt_dtype: bool,
    cache: bool,
}

impl CastPlan {
    /// The plan for `op` called with `inputs` (its tensor arguments in schema order), or
    /// `None` when no region applies: the op's device type (CUDA if any input is on CUDA,
    /// else the CPU, as PyTorch's dispatch picks) has no enabled region or no policy.
    pub fn new(
        op: &str,
        inputs: &[&Tensor],
        cpu: Option<CastPolicy>,
        cuda: Option<CastPolicy>,
    ) -> Result<Option<CastPlan>> {
        let bits = inputs
            .iter()
            .filter_map(|t| device_bit(t.device()))
            .fold(0, |a, b| a | b);
        let bit = if bits & CUDA != 0 {
            CUDA
        } else if bits & CPU != 0 {
            CPU
        } else {
            return Ok(None);
        };
        if !active(bit) {
            return Ok(None);
        }
        let Some(policy) = (if bit == CPU { cpu } else { cuda }) else {
            return Ok(None);
        };
        let low = region_dtype(bit);
        let eligible = |t: &Tensor| is_eligible(t, bit);
        let (to, set_opt_dtype) = match policy {
            CastPolicy::Lower => (Some(low), false),
            CastPolicy::Fp32 => (Some(DType::F32), false),
            CastPolicy::Fp32SetOptDtype => (None, inputs.first().is_some_and(|t| eligible(t))),
            CastPolicy::Promote => (Some(promote_type(op, low, inputs, bit)?), false),
            CastPolicy::Banned => return Err(banned(op)),
        };
        Ok(Some(CastPlan {
            bit,
            to,
            set_opt_dtype,
            cache: policy == CastPolicy::Lower && cache_enabled(),
        }))
    }

    /// `t` as the op takes it: eligible tensors in the plan's dtype (a weight's cast from the
    /// region's cache), others as they are.
    pub fn cast(&self, t: &Tensor) -> Result<Tensor> {
        let Some(to) = self.to else {
            return Ok(t.clone());
        };
        if !is_eligible(t, self.bit) || t.dtype() == to {
            return Ok(t.clone());
        }
        // PyTorch caches the casts of leaves that require grad (the weights), which every
        // use in a region would otherwise cast again.
        if self.cache
            && t.dtype() == DType::F32
            && t.requires_grad()
            && t.is_leaf()
            && t.view_base().is_none()
        {
            return cached(t, || t.to_dtype(to));
        }
        t.to_dtype(to)
    }

    /// `fp32_set_opt_dtype`: float32 for an unset `dtype` when the first input is eligible.
    pub fn opt_dtype(&self, dtype: Option<DType>) -> Option<DType> {
        if self.set_opt_dtype && dtype.is_none() {
            Some(DType::F32)
        } else {
            dtype
        }
    }

    /// Autocast off for this device type while the op runs, so the ops it is made of are not
    /// cast again (PyTorch excludes the autocast dispatch key there).
    pub fn suspend(&self) -> SuspendGuard {
        SuspendGuard::new(self.bit)
    }
}

/// PyTorch's `is_eligible`: a floating tensor on the region's device type, not float64.
fn is_eligible(t: &Tensor, bit: u8) -> bool {
    device_bit(t.device()) == Some(bit) && t.is_floating_point() && t.dtype() != DType::F64
}

/// PyTorch's `promote_type`: float32 if any eligible input is float32, else the region's
/// dtype; float64 inputs are left out.
fn promote_type(op: &str, low: DType, inputs: &[&Tensor], bit: u8) -> Result<DType> {
    let mut current = low;
    for t in inputs.iter().filter(|t| is_eligible(t, bit)) {
        let next = t.dtype();
        if current == DType::F32 || next == DType::F32 {
            current = DType::F32;
        } else if next != low {
            return Err(Error::dtype(
                op,
                format!(
                    "Unexpected floating ScalarType in at::autocast::prioritize: {} in a {} autocast region",
                    next.scalar_type_name(),
                    low.scalar_type_name()
                ),
            ));
        }
    }
    Ok(current)
}

/// PyTorch's error for an op banned from autocast.
fn banned(op: &str) -> Error {
    Error::dtype(
        op,
        format!(
            "torch.nn.functional.{op} and torch.nn.BCELoss are unsafe to autocast.\n\
             Many models use a sigmoid layer right before the binary cross entropy layer.\n\
             In this case, combine the two layers using torch.nn.functional.{op}_with_logits\n\
             or torch.nn.BCEWithLogitsLoss.  {op}_with_logits and BCEWithLogits are\n\
             safe to autocast."
        ),
    )
}
