//! Automatic mixed precision: autocast regions ([`autocast`]) in which the ops that
//! `native_functions.yaml` gives an `autocast:` policy cast their inputs at entry, as PyTorch's
//! `torch.autocast` does. The policies live in the YAML; the generator emits each op's
//! `autocast_call`, which asks [`CastPlan`] what to cast. `GradScaler` is in `kiln-optim`
//! (it steps optimizers).

mod autocast;
mod cast_plan;

pub use autocast::{
    autocast, clear_autocast_cache, get_autocast_dtype, is_autocast_cache_enabled,
    is_autocast_enabled, Autocast, AutocastGuard, AutocastState, AutocastStateGuard,
};
pub use cast_plan::CastPolicy;

#[doc(hidden)] // for the generated code
pub use autocast::{armed as autocast_armed, suspend_all as suspend_autocast, SuspendGuard};
#[doc(hidden)] // for the generated code
pub use cast_plan::CastPlan;
