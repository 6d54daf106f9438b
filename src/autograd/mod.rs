//! The tape-based autograd engine: nodes, edges, saved tensors, grad modes, hooks, the
//! backward pass and finite-difference checks.
//!
//! Reading order: [`node`] (the graph's vocabulary), [`saved`] (what nodes keep),
//! [`variable`] (the `Tensor` side: `requires_grad`, `grad`, `backward`), [`engine`] (the
//! walk), [`gradcheck`].

pub mod engine;
mod grad_mode;
pub mod gradcheck;
pub mod node;
mod saved;
pub mod saved_hooks;
mod variable;

pub use engine::{grad, GradOptions};
pub use grad_mode::{
    enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard,
};
pub use gradcheck::{gradcheck, gradgradcheck, GradcheckOptions};
pub use node::{AccumulateGrad, Edge, Hook, Node, NodeBase, OutputMeta, PostAccumulateHook};
pub use saved::{InplaceTarget, SavedTensor};
pub use saved_hooks::{saved_tensors_hooks, Packed, SavedTensorHooks, SavedTensorsHooksGuard};
pub use variable::HookHandle;
