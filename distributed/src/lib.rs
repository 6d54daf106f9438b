//! kiln's `distributed` (PyTorch's `torch.distributed`): process groups and collectives over
//! MPI (CPU tensors) and NCCL (CUDA tensors), `DistributedDataParallel` and `SyncBatchNorm`.
//! Used as `kiln::distributed`.
//!
//! Every process of a job is started by `mpirun` and calls [`init_process_group`] once;
//! ranks and the world's size come from MPI. Collectives run on a [`ProcessGroup`] (the
//! default one from `init_process_group`, or one from [`new_group`]) or, as free
//! functions, on the default group:
//!
//! ```no_run
//! use kiln_distributed::{self as dist, Backend, ReduceOp};
//! dist::init_process_group(Backend::Mpi)?;
//! let t = kiln_core::Tensor::from([dist::rank()? as f32]);
//! dist::all_reduce(&t, ReduceOp::Sum)?; // every rank: 0 + 1 + ... + (world_size - 1)
//! dist::destroy_process_group()?;
//! # Ok::<(), kiln_core::Error>(())
//! ```
//!
//! [`DistributedDataParallel`] wraps a module for data-parallel training: each rank runs
//! its share of the batch, and backward leaves every rank's gradients averaged over all
//! ranks, reduced in buckets while backward still runs (PyTorch's
//! `torch.nn.parallel.DistributedDataParallel`).
//!
//! The backends are features, so a plain build needs neither MPI nor CUDA: `mpi` (Open MPI
//! through the `mpi` crate) and `nccl` (NCCL through cudarc, bootstrapped over MPI). A
//! collective that the other ranks never reach fails after the group's timeout instead of
//! hanging; ranks that call different collectives, or pass tensors of different shapes or
//! dtypes, all get an error.

mod backends;
mod collectives;
mod ddp;
mod engine;
mod fingerprint;
mod group;
#[cfg(feature = "mpi")]
mod mpi;
mod reduce_op;
mod work;

pub use collectives::*;
pub use ddp::{DdpOptions, DistributedDataParallel, ForwardOutput, NoSync};
pub use group::{
    default_group, destroy_process_group, init_process_group, init_process_group_with,
    is_initialized, new_group, new_group_with_timeout, rank, world_size, Backend, InitOptions,
    ProcessGroup,
};
pub use reduce_op::ReduceOp;
pub use work::Work;
