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
//!
//! [`functional`] has the collectives autograd differentiates through (PyTorch's
//! `torch.distributed.nn.functional`); [`SyncBatchNorm`] and [`convert_sync_batchnorm`]
//! compute batch norm's statistics over the whole group's batch.
//!
//! With `Backend::Nccl` each rank drives one GPU (its local rank on the host modulo the GPU
//! count) and the collectives take CUDA tensors on that GPU; they run on kiln's own stream
//! for the device, in order with kiln's kernels. NCCL's dtypes are kiln's but int16. libnccl
//! (2.10 or newer) is loaded at run time under the name `libnccl.so`: where only NCCL's
//! `libnccl.so.2` is installed (its packages and wheels), link it as `libnccl.so` in a
//! folder on `LD_LIBRARY_PATH`. Without a GPU or libnccl, `init_process_group` says which
//! is missing.

mod backends;
mod collectives;
mod ddp;
// Without a backend feature nothing reads a job: the API still checks its arguments and
// then reports the missing backend.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod engine;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod fingerprint;
pub mod functional;
mod group;
#[cfg(feature = "mpi")]
mod mpi;
#[cfg(feature = "nccl")]
mod nccl;
mod reduce_op;
mod sync_batchnorm;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod work;

pub use collectives::*;
pub use ddp::{DdpOptions, DistributedDataParallel, ForwardOutput, NoSync};
pub use group::{
    default_group, destroy_process_group, init_process_group, init_process_group_with,
    is_initialized, new_group, new_group_with_timeout, rank, world_size, Backend, InitOptions,
    ProcessGroup,
};
pub use reduce_op::ReduceOp;
pub use sync_batchnorm::{
    convert_sync_batchnorm, sync_batch_norm, GroupBatchNormSync, SyncBatchNorm,
};
pub use work::Work;
