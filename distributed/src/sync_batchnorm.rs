//! `SyncBatchNorm` (PyTorch's `torch.nn.SyncBatchNorm`): batch norm whose training
//! statistics are those of the whole process group's batch, and
//! [`convert_sync_batchnorm`], which makes the `BatchNorm` layers of an existing model do the
//! same.
//!
//! How the statistics travel: each rank computes its batch's per-channel mean and sum of
//! squared deviations (two passes, so no `E[x²] - E[x]²` cancellation) and its count; one
//! differentiable all-gather ([`functional::all_gather`]) gives every rank every rank's
//! triple, and each rank combines them (Chan's parallel formula), so ranks may have
//! different batch sizes, an empty one included. Autograd differentiates the whole
//! computation: the all-gather's backward is a reduce-scatter that sums every rank's
//! gradient of the statistics, which is what PyTorch's backward all-reduces (`sum_dy`,
//! `sum_dy_xmu`). As there, `weight` and `bias` get this rank's gradient only
//! (DistributedDataParallel sums them), and every rank must take part in forward and
//! backward alike.
//!
//! Why a plug-in rather than a tree rewrite: PyTorch's `convert_sync_batchnorm` swaps child
//! modules of any type for new ones, which Rust's typed module fields cannot do (a field of
//! type `BatchNorm2d` holds a `BatchNorm2d`). So `nn`'s [`BatchNorm`] has a slot for a
//! [`BatchNormSync`] that its training forward defers to, and module walks reach that slot
//! (`VisitorMut::batch_norm_sync`), as `train()` reaches every `training` flag.
//! [`convert_sync_batchnorm`] fills the slot in every layer of a model: nothing else about
//! the layer changes, so its parameters and buffers keep their values *and* identity
//! (optimizers and `state_dict` keys stay valid; PyTorch also moves the very same tensors
//! into its new module), and its checkpoints stay those of a `BatchNorm`. Code that builds
//! a model for distributed training from the start can use [`SyncBatchNorm`] itself (any
//! input of 2 or more dims, as PyTorch's), made from a `BatchNorm` with
//! [`SyncBatchNorm::from_batch_norm`] or from options; its `state_dict` has the same keys.

use crate::functional;
use crate::group::{default_group, is_initialized, ProcessGroup};
use kiln_core::{no_grad, DType, Error, Result, Tensor};
use kiln_nn::module::{BufferField, ModuleField, Visitor, VisitorMut};
use kiln_nn::{BatchNorm, BatchNormOptions, BatchNormSync, Forward, Module, TensorKind};
use std::sync::{Arc, Mutex};

const OP: &str = "SyncBatchNorm";

/// Batch norm in training mode over every rank's `input` together (PyTorch's
/// `sync_batch_norm.apply`): the mean and biased variance of the group's whole batch
/// normalise this rank's `input` (`[N, C, *]`, `N` may differ between ranks and be 0);
/// `running_mean` / `running_var` are updated in place, identically on every rank, with the
/// batch mean and the unbiased variance over the global count. A group of one rank runs
/// plain `batch_norm`. Every rank of `group` must call it, with the same number of
/// channels and dtype.
#[allow(clippy::too_many_arguments)]
pub fn sync_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    momentum: f64,
    eps: f64,
    group: &ProcessGroup,
) -> Result<Tensor> {
    if group.size() == 1 {
        return kiln_core::batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            true,
            momentum,
            eps,
            true,
        );
    }
    check_arguments(input, weight, bias, running_mean, running_var)?;
    let c = input.shape()[1];
    let local_count = input.numel().checked_div(c).unwrap_or(0);
    // Half inputs are normalised in float32, as the fused kernels do.
    let compute = match input.dtype() {
        DType::F16 | DType::BF16 => DType::F32,
        d => d,
    };
    let x = input.to_dtype(compute)?;
    let dims: Vec<i64> = std::iter::once(0).chain(2..input.dim() as i64).collect();
    let mut per_channel = vec![1i64; input.dim()];
    per_channel[1] = c as i64;

    // This rank's (mean, sum of squared deviations, count) per channel; an empty batch
    // gives zeros, still in the graph so that its backward joins the collective.
    let local_mean = x.sum_dim(&dims)?.div_scalar(local_count.max(1) as f64)?;
    let local_m2 = x
        .sub(&local_mean.reshape(&per_channel)?)?
        .square()?
        .sum_dim(&dims)?;
    let count = Tensor::full_on([1], local_count as f64, compute, x.device())?;
    let stats = kiln_core::cat(&[local_mean, local_m2, count])?;
    let gathered = functional::all_gather(&stats, Some(group))?; // [ranks, 2C + 1]

    let counts = gathered.narrow(1, 2 * c as i64, 1)?.detach(); // [ranks, 1]
    let total = {
        let _g = no_grad();
        counts.to_dtype(DType::F64)?.sum()?.item::<f64>()?
    };
    if total == 0.0 {
        // Every rank's batch is empty (the same answer on every rank): as `batch_norm`.
        return kiln_core::batch_norm(input, weight, bias, None, None, true, momentum, eps, true);
    }
    if total <= 1.0 {
        return Err(Error::value(
            OP,
            format!(
                "Expected more than 1 value per channel when training, got {total} over the process group (input size {:?} on this rank)",
                input.shape()
            ),
        ));
    }
    let means = gathered.narrow(1, 0, c as i64)?; // [ranks, C]
    let m2s = gathered.narrow(1, c as i64, c as i64)?;
    let mean = means.mul(&counts)?.sum_dim(&[0])?.div_scalar(total)?;
    let spread = means
        .sub(&mean.unsqueeze(0)?)?
        .square()?
        .mul(&counts)?
        .sum_dim(&[0])?;
    let m2 = m2s.sum_dim(&[0])?.add(&spread)?;
    let invstd = m2.div_scalar(total)?.add_scalar(eps)?.rsqrt()?;

    update_running_stats(running_mean, &mean, momentum)?;
    let unbiased = {
        let _g = no_grad();
        m2.detach().div_scalar(total - 1.0)?
    };
    update_running_stats(running_var, &unbiased, momentum)?;

    let scale = match weight {
        Some(w) => invstd.mul(w)?,
        None => invstd,
    };
    let mut y = x
        .sub(&mean.reshape(&per_channel)?)?
        .mul(&scale.reshape(&per_channel)?)?;
    if let Some(b) = bias {
        y = y.add(&b.reshape(&per_channel)?)?;
    }
    y.to_dtype(input.dtype())
}

/// Serialises the read-modify-write of running statistics, so that threads sharing a
/// layer lose no update (as `BatchNorm` promises); the update is a few `[C]` ops.
static RUNNING_STATS: Mutex<()> = Mutex::new(());

/// `stat = (1 - momentum) * stat + momentum * batch`, in place, outside autograd.
fn update_running_stats(stat: Option<&Tensor>, batch: &Tensor, momentum: f64) -> Result<()> {
    let Some(stat) = stat else { return Ok(()) };
    let _g = no_grad();
    let _held = RUNNING_STATS.lock().unwrap_or_else(|e| e.into_inner());
    let new = stat
        .to_dtype(batch.dtype())?
        .mul_scalar(1.0 - momentum)?
        .add(&batch.detach().mul_scalar(momentum)?)?;
    stat.copy_(&new)?;
    Ok(())
}

/// PyTorch's checks, on this rank, before anything is sent.
fn check_arguments(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
) -> Result<()> {
    if input.dim() < 2 {
        return Err(Error::shape(
            OP,
            format!("expected at least 2D input (got {}D input)", input.dim()),
        ));
    }
    if !input.dtype().is_floating_point() {
        return Err(Error::dtype(
            OP,
            format!(
                "expected a floating-point input, got {}",
                input.dtype().scalar_type_name()
            ),
        ));
    }
    let c = input.shape()[1];
    for (name, t) in [
        ("weight", weight),
        ("bias", bias),
        ("running_mean", running_mean),
        ("running_var", running_var),
    ] {
        if let Some(t) = t {
            if t.shape() != [c] {
                return Err(Error::shape(
                    OP,
                    format!(
                        "{name} should have shape [{c}] for input of size {:?}, got {:?}",
                        input.shape(),
                        t.shape()
                    ),
                ));
            }
            if t.device() != input.device() {
                return Err(Error::device(
                    OP,
                    format!(
                        "Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                        input.device(),
                        t.device()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The group a layer synchronises over: its own, else the default group, else none (no
/// process group set up: the layer runs plain batch norm, as PyTorch's does when
/// `torch.distributed` is not initialized).
fn active_group(group: Option<&ProcessGroup>) -> Result<Option<ProcessGroup>> {
    match group {
        Some(g) => Ok(Some(g.clone())),
        None if is_initialized() => default_group().map(Some),
        None => Ok(None),
    }
}

/// Training-mode batch norm for `group` when there is one, else plain batch norm.
#[allow(clippy::too_many_arguments)]
fn batch_norm_on(
    group: Option<&ProcessGroup>,
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    match active_group(group)? {
        Some(g) => sync_batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            momentum,
            eps,
            &g,
        ),
        None => kiln_core::batch_norm(
            input,
            weight,
            bias,
            running_mean,
            running_var,
            true,
            momentum,
            eps,
            true,
        ),
    }
}

/// The [`BatchNormSync`] that [`convert_sync_batchnorm`] plugs into `BatchNorm` layers:
/// their training statistics over `process_group` (the default group when `None`, looked up
/// at each forward pass).
#[derive(Clone, Debug, Default)]
pub struct GroupBatchNormSync {
    pub process_group: Option<ProcessGroup>,
}

impl BatchNormSync for GroupBatchNormSync {
    fn batch_norm(
        &self,
        input: &Tensor,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        momentum: f64,
        eps: f64,
    ) -> Result<Tensor> {
        batch_norm_on(
            self.process_group.as_ref(),
            input,
            weight,
            bias,
            running_mean,
            running_var,
            momentum,
            eps,
        )
    }
}

/// PyTorch's `SyncBatchNorm.convert_sync_batchnorm(module, process_group)`: every
/// [`BatchNorm`] (1d, 2d, 3d) in `module`'s tree computes its training statistics over
/// `process_group` (the default group when `None`) from now on. The layers are changed in
/// place, so their parameters and buffers are the same tensors (values and identity) and
/// `state_dict` keys are unchanged; evaluation is untouched. Returns how many layers were
/// converted. Call it on every rank, before training.
///
/// ```no_run
/// use kiln_distributed::{self as dist, convert_sync_batchnorm};
/// use kiln_nn::{BatchNorm2d, Sequential};
/// dist::init_process_group(dist::Backend::Mpi)?;
/// let mut model = Sequential::new().add(BatchNorm2d::new(8)?);
/// assert_eq!(convert_sync_batchnorm(&mut model, None)?, 1);
/// # Ok::<(), kiln_core::Error>(())
/// ```
pub fn convert_sync_batchnorm<M: Module + ?Sized>(
    module: &mut M,
    process_group: Option<ProcessGroup>,
) -> Result<usize> {
    struct Plug {
        sync: Arc<dyn BatchNormSync>,
        converted: usize,
    }
    impl VisitorMut for Plug {
        fn tensor(&mut self, _: &str, _: TensorKind, _: &mut Tensor) -> Result<()> {
            Ok(())
        }
        fn batch_norm_sync(&mut self, slot: &mut Option<Arc<dyn BatchNormSync>>) {
            *slot = Some(self.sync.clone());
            self.converted += 1;
        }
    }
    let mut plug = Plug {
        sync: Arc::new(GroupBatchNormSync { process_group }),
        converted: 0,
    };
    module.visit_mut(&mut plug)?;
    Ok(plug.converted)
}

/// PyTorch's `nn.SyncBatchNorm(num_features, eps, momentum, affine, track_running_stats,
/// process_group)`: batch norm over inputs of any rank ≥ 2 (`[N, C, *]`) whose training
/// statistics are the whole group's ([`sync_batch_norm`]). In evaluation, with a group of
/// one rank, or without a process group set up, it is plain batch norm. Parameters and
/// buffers are `BatchNorm`'s, under the same names (`weight`, `bias`, `running_mean`,
/// `running_var`, `num_batches_tracked`), so checkpoints load either way.
pub struct SyncBatchNorm {
    pub weight: Option<Tensor>,
    pub bias: Option<Tensor>,
    pub running_mean: Option<Tensor>,
    pub running_var: Option<Tensor>,
    pub num_batches_tracked: Option<Tensor>,
    pub num_features: usize,
    pub options: BatchNormOptions,
    pub training: bool,
    /// The group whose batch the statistics cover; `None`: the default group.
    pub process_group: Option<ProcessGroup>,
}

impl SyncBatchNorm {
    /// A float32 layer with PyTorch's defaults, over the default group.
    pub fn new(num_features: usize) -> Result<Self> {
        Self::with_options(num_features, BatchNormOptions::default(), None)
    }

    /// A layer with `options` over `process_group` (the default group when `None`).
    pub fn with_options(
        num_features: usize,
        options: BatchNormOptions,
        process_group: Option<ProcessGroup>,
    ) -> Result<Self> {
        let dt = options.dtype;
        if !dt.is_floating_point() {
            return Err(Error::dtype(
                OP,
                format!("dtype must be floating point, got {dt}"),
            ));
        }
        let bn = BatchNorm::<1>::with_options(num_features, options)?;
        Ok(Self::from_batch_norm(bn, process_group))
    }

    /// The `SyncBatchNorm` of a `BatchNorm1d/2d/3d` (one layer of PyTorch's
    /// `convert_sync_batchnorm`): it takes `bn`'s parameters and buffers themselves (same
    /// tensors, so optimizers holding them stay valid), its options and its mode.
    pub fn from_batch_norm<const D: usize>(
        bn: BatchNorm<D>,
        process_group: Option<ProcessGroup>,
    ) -> Self {
        SyncBatchNorm {
            weight: bn.weight,
            bias: bn.bias,
            running_mean: bn.running_mean,
            running_var: bn.running_var,
            num_batches_tracked: bn.num_batches_tracked,
            num_features: bn.num_features,
            options: bn.options,
            training: bn.training,
            process_group,
        }
    }

    /// `reset_running_stats()`: zeros / ones / 0.
    pub fn reset_running_stats(&self) -> Result<()> {
        let _g = no_grad();
        if let Some(m) = &self.running_mean {
            m.zero_()?;
        }
        if let Some(v) = &self.running_var {
            v.fill_(1.0)?;
        }
        if let Some(n) = &self.num_batches_tracked {
            n.zero_()?;
        }
        Ok(())
    }

    fn check_input(&self, input: &Tensor) -> Result<()> {
        if input.dim() < 2 {
            return Err(Error::shape(
                OP,
                format!("expected at least 2D input (got {}D input)", input.dim()),
            ));
        }
        if input.shape()[1] != self.num_features {
            return Err(Error::shape(
                OP,
                format!(
                    "expected input with {} channels (num_features) in dim 1, got input of size {:?}",
                    self.num_features,
                    input.shape()
                ),
            ));
        }
        Ok(())
    }
}

impl Module for SyncBatchNorm {
    fn visit(&self, v: &mut dyn Visitor) {
        self.weight.visit_field("weight", v);
        self.bias.visit_field("bias", v);
        self.running_mean.visit_buffer("running_mean", v);
        self.running_var.visit_buffer("running_var", v);
        self.num_batches_tracked
            .visit_buffer("num_batches_tracked", v);
        v.training(self.training);
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        self.weight.visit_field_mut("weight", v)?;
        self.bias.visit_field_mut("bias", v)?;
        self.running_mean.visit_buffer_mut("running_mean", v)?;
        self.running_var.visit_buffer_mut("running_var", v)?;
        self.num_batches_tracked
            .visit_buffer_mut("num_batches_tracked", v)?;
        v.training(&mut self.training);
        Ok(())
    }
    fn optional_state_keys(&self) -> &'static [&'static str] {
        &["num_batches_tracked"]
    }
}

impl Forward for SyncBatchNorm {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.check_input(input)?;
        let o = &self.options;
        let mut factor = o.momentum.unwrap_or(0.0);
        if self.training && o.track_running_stats {
            if let Some(n) = &self.num_batches_tracked {
                let _g = no_grad();
                n.add_scalar_(1)?;
                if o.momentum.is_none() {
                    factor = 1.0 / n.item::<i64>()? as f64;
                }
            }
        }
        let bn_training =
            self.training || (self.running_mean.is_none() && self.running_var.is_none());
        let use_stats = !self.training || o.track_running_stats;
        let (rm, rv) = if use_stats {
            (self.running_mean.as_ref(), self.running_var.as_ref())
        } else {
            (None, None)
        };
        // PyTorch synchronises only in training (in evaluation without running statistics
        // each rank normalises by its own batch).
        if bn_training && self.training {
            return batch_norm_on(
                self.process_group.as_ref(),
                input,
                self.weight.as_ref(),
                self.bias.as_ref(),
                rm,
                rv,
                factor,
                o.eps,
            );
        }
        kiln_core::batch_norm(
            input,
            self.weight.as_ref(),
            self.bias.as_ref(),
            rm,
            rv,
            bn_training,
            factor,
            o.eps,
            true,
        )
    }
}
