//! kiln: a tensor library with PyTorch's semantics, whose operators are declared in YAML.
//!
//! This crate is the one to depend on. It re-exports the tensor core (`Tensor`, the
//! operators, autograd) and adds the training stack under PyTorch's names:
//! [`nn`] (`torch.nn`), [`optim`] (`torch.optim`), [`data`] (`torch.utils.data`) and
//! [`distributed`] (`torch.distributed`; its MPI backend behind the `mpi` feature).
//! [`prelude`] imports the names most programs use; [`checkpoint`] saves and loads models and
//! optimizers as safetensors files (activation checkpointing, PyTorch's
//! `torch.utils.checkpoint`, is the core's [`utils::checkpoint`]; module hooks are
//! [`nn::Hooked`]).

pub use kiln_core::*;
pub use kiln_data as data;
pub use kiln_distributed as distributed;
pub use kiln_nn as nn;
pub use kiln_optim as optim;

pub mod checkpoint;
pub mod prelude;

/// Mixed precision (PyTorch's `torch.amp`): autocast regions ([`autocast`], also
/// `kiln::autocast`) and [`amp::GradScaler`], dynamic loss scaling.
///
/// ```
/// use kiln::amp::GradScaler;
/// let scaler = GradScaler::new(kiln::Device::Cpu);   // torch.amp.GradScaler("cpu")
/// assert_eq!(scaler.get_scale()?, 65536.0);
/// # Ok::<(), kiln::Error>(())
/// ```
pub mod amp {
    pub use kiln_core::amp::*;
    pub use kiln_optim::{GradScaler, GradScalerBuilder, GradScalerState};
}
