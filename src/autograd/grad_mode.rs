//! Thread-local grad mode and its guards (`no_grad`, `enable_grad`).

use std::cell::Cell;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
}

/// True when ops record autograd history on this thread.
pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}

/// Restores the previous grad mode when dropped.
#[must_use = "grad mode reverts when the guard is dropped"]
pub struct GradModeGuard {
    prev: bool,
}

impl Drop for GradModeGuard {
    fn drop(&mut self) {
        GRAD_ENABLED.with(|g| g.set(self.prev));
    }
}

/// Sets grad mode until the returned guard drops.
pub fn set_grad_enabled(enabled: bool) -> GradModeGuard {
    let prev = GRAD_ENABLED.with(|g| g.replace(enabled));
    GradModeGuard { prev }
}

/// Disables history recording until the guard drops (PyTorch's `torch.no_grad()`).
///
/// ```
/// let w = kiln::Tensor::from([1f32, 2.]).requires_grad_(true)?;
/// let y = { let _g = kiln::no_grad(); w.mul(&w)? };
/// assert!(!y.requires_grad());
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn no_grad() -> GradModeGuard {
    set_grad_enabled(false)
}

/// Re-enables history recording inside a `no_grad` region.
pub fn enable_grad() -> GradModeGuard {
    set_grad_enabled(true)
}

/// kiln's inference mode is `no_grad`: no history is recorded.
pub fn inference_mode() -> GradModeGuard {
    set_grad_enabled(false)
}
