//! Saved-tensor hooks (PyTorch's `torch.autograd.graph.saved_tensors_hooks`): while a guard
//! is alive on a thread, every tensor an op on that thread saves for backward is handed to
//! the innermost hooks' `pack`, and the node keeps what `pack` returns instead of the
//! tensor; backward gets the tensor back from `unpack`. Activation checkpointing is built on
//! them (the pack keeps nothing, the unpack recomputes), and so would offloading saved
//! tensors to another device be.
//!
//! What the node keeps besides the packed value is the saved tensor's place in the graph
//! (its `grad_fn`, or for a leaf that requires grad, the accumulator its gradients go to),
//! so the unpacked tensor carries the original's history: double backward through unpacked
//! tensors reaches the same nodes and leaves as without hooks. Unpacked tensors are not
//! checked for in-place modification (the values come from the hook, not from the
//! original's storage).

use super::grad_mode::no_grad;
use crate::{Result, Tensor};
use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What a pack hook returns: anything, as long as it can travel with the graph.
pub type Packed = Box<dyn Any + Send + Sync>;

/// A pair of hooks for tensors saved for backward.
pub trait SavedTensorHooks: Send + Sync {
    /// Called when an op saves `t` (grad mode off, and no hooks active while it runs).
    fn pack(&self, t: &Tensor) -> Packed;
    /// Called when backward needs the tensor back; must return one of the saved tensor's
    /// shape and dtype (see the module doc).
    fn unpack(&self, packed: &Packed) -> Result<Tensor>;
}

/// Hooks from two closures (what [`saved_tensors_hooks`] registers).
struct FnHooks<P, U> {
    pack: P,
    unpack: U,
}

impl<P, U> SavedTensorHooks for FnHooks<P, U>
where
    P: Fn(&Tensor) -> Packed + Send + Sync,
    U: Fn(&Packed) -> Result<Tensor> + Send + Sync,
{
    fn pack(&self, t: &Tensor) -> Packed {
        (self.pack)(t)
    }
    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        (self.unpack)(packed)
    }
}

thread_local! {
    /// The hooks registered on this thread, innermost last; `None` entries disable hooks
    /// (while a pack hook runs).
    static STACK: RefCell<Vec<Option<Arc<dyn SavedTensorHooks>>>> = const { RefCell::new(Vec::new()) };
}

/// Guards alive on any thread: when zero, saving a tensor skips the thread-local lookup.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);

/// Keeps hooks registered on this thread until dropped. Not `Send`: the registration is
/// per thread.
#[must_use = "the hooks are unregistered when the guard is dropped"]
pub struct SavedTensorsHooksGuard {
    _not_send: PhantomData<*const ()>,
}

impl Drop for SavedTensorsHooksGuard {
    fn drop(&mut self) {
        STACK.with(|s| s.borrow_mut().pop());
        ACTIVE.fetch_sub(1, Ordering::Release);
    }
}

/// Registers `pack`/`unpack` for tensors saved on this thread while the guard lives
/// (PyTorch's `torch.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook)`); nested
/// registrations replace outer ones until they end.
///
/// ```
/// use kiln::autograd::{saved_tensors_hooks, Packed};
/// use kiln::Tensor;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// let x = Tensor::from([1f64, 2.]).requires_grad_(true)?;
/// let packed = Arc::new(AtomicUsize::new(0));
/// let count = packed.clone();
/// let y = {
///     // Keeps each saved tensor as it is, counting them.
///     let _h = saved_tensors_hooks(
///         move |t| {
///             count.fetch_add(1, Ordering::Relaxed);
///             Box::new(t.clone()) as Packed
///         },
///         |p| Ok(p.downcast_ref::<Tensor>().expect("a tensor").clone()),
///     );
///     x.mul(&x)?
/// };
/// assert!(packed.load(Ordering::Relaxed) > 0);
/// y.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, [2.0, 4.0]);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn saved_tensors_hooks(
    pack: impl Fn(&Tensor) -> Packed + Send + Sync + 'static,
    unpack: impl Fn(&Packed) -> Result<Tensor> + Send + Sync + 'static,
) -> SavedTensorsHooksGuard {
    register(Arc::new(FnHooks { pack, unpack }))
}

/// Registers `hooks` on this thread until the guard drops.
pub fn register(hooks: Arc<dyn SavedTensorHooks>) -> SavedTensorsHooksGuard {
    push(Some(hooks))
}

fn push(entry: Option<Arc<dyn SavedTensorHooks>>) -> SavedTensorsHooksGuard {
    STACK.with(|s| s.borrow_mut().push(entry));
    ACTIVE.fetch_add(1, Ordering::Release);
    SavedTensorsHooksGuard {
        _not_send: PhantomData,
    }
}

/// The innermost hooks registered on this thread, if any.
#[inline]
pub(crate) fn current() -> Option<Arc<dyn SavedTensorHooks>> {
    if ACTIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    STACK.with(|s| s.borrow().last().cloned().flatten())
}

/// Runs `hooks.pack(t)` with grad mode off and hooks disabled, so the ops a pack hook runs
/// neither record nor pack.
pub(crate) fn pack(hooks: &dyn SavedTensorHooks, t: &Tensor) -> Packed {
    let _off = push(None);
    let _g = no_grad();
    hooks.pack(t)
}
