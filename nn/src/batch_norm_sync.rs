//! The hook through which a [`crate::BatchNorm`] computes its training statistics over
//! several processes: its own file, so that `module` (whose `VisitorMut` reaches the slot)
//! and `normalization` (whose layers hold it) both depend on it and not on each other.

use kiln_core::{Result, Tensor};

/// Training-mode batch norm whose statistics span more than this process's batch: what
/// `kiln_distributed::convert_sync_batchnorm` plugs into a [`BatchNorm`](crate::BatchNorm)
/// to make it PyTorch's `SyncBatchNorm` (nn itself knows nothing of processes). A layer
/// holding one calls it for every forward pass in training that uses batch statistics, after
/// counting the pass in `num_batches_tracked`; evaluation never reaches it.
pub trait BatchNormSync: Send + Sync {
    /// Normalises `input` (`[N, C, *]`) with the mean and biased variance of the whole
    /// (distributed) batch, scales by `weight` and shifts by `bias`, and folds the batch's
    /// mean and unbiased variance into `running_mean` / `running_var` with `momentum`, as
    /// `batch_norm(..., training=true, ...)` does for one process.
    #[allow(clippy::too_many_arguments)]
    fn batch_norm(
        &self,
        input: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor>;
}
