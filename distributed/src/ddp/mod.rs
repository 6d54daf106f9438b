//! `DistributedDataParallel` (PyTorch's `torch.nn.parallel.DistributedDataParallel`): data
//! parallel training with one model replica per rank, gradients averaged across ranks while
//! backward runs.
//!
//! - [`DistributedDataParallel::new`] checks that every rank holds the same model, copies
//!   rank 0's parameters and buffers to every rank, buckets the parameters that require
//!   grad (`mod buckets`) and hooks them (`mod reducer`).
//! - Each forward ([`Forward::forward`] for `Tensor -> Tensor` models,
//!   [`DistributedDataParallel::forward_with`] for any other signature) first checks that the
//!   previous reduction finished and broadcasts rank 0's buffers, then runs the module, then
//!   arms the reducer for the backward (with `find_unused_parameters`, after finding the
//!   parameters the outputs' graph does not reach: `mod graph`).
//! - During backward every parameter's post-accumulate-grad hook copies its gradient into
//!   its bucket, scaled by 1 / world size; full buckets are all-reduced asynchronously,
//!   in bucket order, while backward goes on; the last one waits for all and writes the
//!   averages back into the `.grad`s. The optimizer then steps as usual, identically on
//!   every rank.
//!
//! Differences from PyTorch: buckets are assigned once, at construction, from the reverse
//! of `parameters()` (PyTorch may rebuild them after the first iteration from the order the
//! gradients arrived in); a bucket never exceeds `bucket_cap_mb` unless one parameter alone
//! does; there is no `static_graph`, communication hook or `join`; and a failure inside backward's hooks (a collective that timed out) is returned
//! by the next forward, because hooks cannot fail the backward that runs them.

mod broadcast;
mod buckets;
mod graph;
mod reducer;

use crate::{default_group, ProcessGroup};
use broadcast::{broadcast_coalesced, verify_same_model, BROADCAST_BUCKET_BYTES};
use kiln_core::autograd::is_grad_enabled;
use kiln_core::{Error, Result, Tensor};
use kiln_nn::{Forward, Module, ModuleField, Visitor, VisitorMut};
use reducer::Reducer;
use std::sync::atomic::{AtomicBool, Ordering};

const OP: &str = "DistributedDataParallel";

/// Options of [`DistributedDataParallel::new`], PyTorch's keyword arguments with their
/// defaults: `DdpOptions::default().bucket_cap_mb(1.0).find_unused_parameters(true)`.
#[derive(Clone, Debug)]
pub struct DdpOptions {
    /// Gradients are reduced in buckets of at most this many MiB (default 25).
    pub bucket_cap_mb: f64,
    /// Find, after each forward, the parameters its outputs do not depend on, and count
    /// them as reduced (default false: every parameter must get a gradient in every
    /// synchronised backward).
    pub find_unused_parameters: bool,
    /// Copy rank 0's buffers (BatchNorm's running statistics) to every rank before each
    /// forward (default true).
    pub broadcast_buffers: bool,
    /// Make each `.grad` a view of its place in the gradient bucket (default false): the
    /// reduced averages are then not copied back, which saves a pass over every gradient
    /// per step, and a `.grad` zeroed in place (`zero_grad(set_to_none = false)`) or
    /// accumulated into under `no_sync` is not copied in either. A `.grad` replaced during
    /// backward is an error.
    pub gradient_as_bucket_view: bool,
    /// The group to train over (default: the default group).
    pub process_group: Option<ProcessGroup>,
}

impl Default for DdpOptions {
    fn default() -> Self {
        DdpOptions {
            bucket_cap_mb: 25.0,
            find_unused_parameters: false,
            broadcast_buffers: true,
            gradient_as_bucket_view: false,
            process_group: None,
        }
    }
}

impl DdpOptions {
    /// Sets `bucket_cap_mb`.
    pub fn bucket_cap_mb(mut self, mb: f64) -> Self {
        self.bucket_cap_mb = mb;
        self
    }
    /// Sets `find_unused_parameters`.
    pub fn find_unused_parameters(mut self, on: bool) -> Self {
        self.find_unused_parameters = on;
        self
    }
    /// Sets `broadcast_buffers`.
    pub fn broadcast_buffers(mut self, on: bool) -> Self {
        self.broadcast_buffers = on;
        self
    }
    /// Sets `gradient_as_bucket_view`.
    pub fn gradient_as_bucket_view(mut self, on: bool) -> Self {
        self.gradient_as_bucket_view = on;
        self
    }
    /// Trains over `group` instead of the default group.
    pub fn process_group(mut self, group: ProcessGroup) -> Self {
        self.process_group = Some(group);
        self
    }
}

/// What a forward returns, as DDP sees it: the tensors in it, searched for the parameters
/// they depend on when `find_unused_parameters` is on (PyTorch's `_find_tensors`).
/// Implemented for `Tensor`, `()`, `Option`, `Vec`, arrays and tuples of up to four;
/// implement it for an output struct by listing its tensors.
pub trait ForwardOutput {
    /// Appends every tensor of the output to `out`.
    fn tensors(&self, out: &mut Vec<Tensor>);
}

impl ForwardOutput for Tensor {
    fn tensors(&self, out: &mut Vec<Tensor>) {
        out.push(self.clone());
    }
}

impl ForwardOutput for () {
    fn tensors(&self, _: &mut Vec<Tensor>) {}
}

impl<T: ForwardOutput> ForwardOutput for Option<T> {
    fn tensors(&self, out: &mut Vec<Tensor>) {
        if let Some(t) = self {
            t.tensors(out)
        }
    }
}

impl<T: ForwardOutput> ForwardOutput for Vec<T> {
    fn tensors(&self, out: &mut Vec<Tensor>) {
        self.iter().for_each(|t| t.tensors(out))
    }
}

impl<T: ForwardOutput, const N: usize> ForwardOutput for [T; N] {
    fn tensors(&self, out: &mut Vec<Tensor>) {
        self.iter().for_each(|t| t.tensors(out))
    }
}

macro_rules! tuple_output {
    ($($t:ident $i:tt),*) => {
        impl<$($t: ForwardOutput),*> ForwardOutput for ($($t,)*) {
            fn tensors(&self, out: &mut Vec<Tensor>) {
                $(self.$i.tensors(out);)*
            }
        }
    };
}
tuple_output!(A 0, B 1);
tuple_output!(A 0, B 1, C 2);
tuple_output!(A 0, B 1, C 2, D 3);

/// A module trained data-parallel across the ranks of a process group (PyTorch's
/// `DistributedDataParallel`).
///
/// Every rank builds the same model and wraps it; each feeds its own share of the batch;
/// after `loss.backward()` every rank's `.grad`s hold the average over all ranks, so the
/// optimizers (built on `ddp.parameters()` or the module's) step identically everywhere.
///
/// ```no_run
/// use kiln_distributed::{self as dist, DdpOptions, DistributedDataParallel};
/// use kiln_nn::{Forward, Linear, Module};
/// use kiln_optim::{Optimizer, SGDOptions, SGD};
/// # fn main() -> kiln_core::Result<()> {
/// dist::init_process_group(dist::Backend::Mpi)?; // under mpirun
/// let ddp = DistributedDataParallel::new(Linear::new(8, 1)?, DdpOptions::default())?;
/// let mut opt = SGD::new(ddp.parameters(), SGDOptions { lr: 0.1, ..Default::default() })?;
/// let x = kiln_core::Tensor::randn([4, 8], kiln_core::DType::F32)?; // this rank's share
/// let out = ddp.forward(&x)?;
/// let loss = out.mul(&out)?.sum()?;
/// loss.backward()?; // gradients all-reduced while backward runs
/// opt.step()?;
/// opt.zero_grad()?;
/// // A model whose forward takes something else:
/// let y = ddp.forward_with(|m| m.forward(&x))?;
/// # let _ = y;
/// # Ok(())
/// # }
/// ```
///
/// The wrapped module is reached through [`DistributedDataParallel::module`]; as a
/// [`Module`], DDP has it as its child `module`, so its state dict's keys start with
/// `module.` as in PyTorch. Do not replace the module's parameters after wrapping it
/// (`to_device`, `to_dtype`, assignment): the next forward fails; move or convert first.
pub struct DistributedDataParallel<M> {
    module: M,
    group: ProcessGroup,
    broadcast_buffers: bool,
    find_unused_parameters: bool,
    reducer: Reducer,
    /// False under [`DistributedDataParallel::no_sync`].
    require_backward_grad_sync: AtomicBool,
    /// Whether the last forward was a synchronised training one: buffers are broadcast
    /// before the next forward only then (PyTorch's `require_forward_param_sync`).
    require_forward_param_sync: AtomicBool,
    /// The module was borrowed mutably: check its parameters before the next forward.
    module_touched: AtomicBool,
}

impl<M: Module> DistributedDataParallel<M> {
    /// Wraps `module`: every rank of the group calls it with the same model (shapes and
    /// dtypes are checked across ranks), and each ends with rank 0's parameter and buffer
    /// values. Fails if no parameter requires grad (there would be nothing to reduce).
    pub fn new(module: M, options: DdpOptions) -> Result<Self> {
        let group = match options.process_group {
            Some(g) => g,
            None => default_group()?,
        };
        let mb = options.bucket_cap_mb;
        if !(mb.is_finite() && mb > 0.0) {
            return Err(Error::value(
                OP,
                format!("bucket_cap_mb must be a positive number of MiB, got {mb}"),
            ));
        }
        let cap_bytes = ((mb * 1024.0 * 1024.0) as usize).max(1);
        let named = module.named_parameters();
        let (names, params) = trained_parameters(&named);
        if params.is_empty() {
            return Err(Error::value(
                OP,
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
            ));
        }
        if let Some((name, _)) = named.iter().find(|(_, p)| !p.is_leaf()) {
            return Err(Error::value(
                OP,
                format!(
                    "parameter `{name}` is not a leaf tensor: DDP reduces the gradients of leaves"
                ),
            ));
        }
        // Rank 0's parameters and buffers everywhere (PyTorch's `_sync_module_states`).
        let mut states = named;
        states.extend(module.named_buffers());
        verify_same_model(&group, &states)?;
        let tensors: Vec<Tensor> = states.into_iter().map(|(_, t)| t).collect();
        broadcast_coalesced(&group, &tensors, 0, BROADCAST_BUCKET_BYTES)?;
        let reducer = Reducer::new(
            group.clone(),
            params,
            names,
            cap_bytes,
            options.find_unused_parameters,
            options.gradient_as_bucket_view,
        )?;
        Ok(DistributedDataParallel {
            module,
            group,
            broadcast_buffers: options.broadcast_buffers,
            find_unused_parameters: options.find_unused_parameters,
            reducer,
            require_backward_grad_sync: AtomicBool::new(true),
            require_forward_param_sync: AtomicBool::new(true),
            module_touched: AtomicBool::new(false),
        })
    }

    /// The wrapped module (PyTorch's `ddp.module`).
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The wrapped module, mutably. Its parameters must stay the same tensors (values may
    /// change, e.g. `load_state_dict`); the next forward checks.
    pub fn module_mut(&mut self) -> &mut M {
        *self.module_touched.get_mut() = true;
        &mut self.module
    }

    /// Unwraps the module; its gradient hooks are removed.
    pub fn into_inner(self) -> M {
        self.module
    }

    /// The group gradients are averaged over.
    pub fn process_group(&self) -> &ProcessGroup {
        &self.group
    }

    /// Turns gradient synchronisation off until the guard is dropped (PyTorch's `with
    /// ddp.no_sync():`): backward passes of forwards run meanwhile only accumulate into
    /// the local `.grad`s, and the next synchronised backward reduces the accumulated sums.
    /// Whether a backward synchronises is decided by its forward.
    ///
    /// ```no_run
    /// # use kiln_distributed::DistributedDataParallel;
    /// # use kiln_nn::{Forward, Linear};
    /// # fn f(ddp: &DistributedDataParallel<Linear>, micro: &[kiln_core::Tensor]) -> kiln_core::Result<()> {
    /// {
    ///     let _no_sync = ddp.no_sync();
    ///     ddp.forward(&micro[0])?.sum()?.backward()?; // local only
    /// }
    /// ddp.forward(&micro[1])?.sum()?.backward()?; // all-reduces both micro-batches' sum
    /// # Ok(()) }
    /// ```
    pub fn no_sync(&self) -> NoSync<'_> {
        let previous = self
            .require_backward_grad_sync
            .swap(false, Ordering::SeqCst);
        NoSync {
            flag: &self.require_backward_grad_sync,
            previous,
        }
    }

    /// Runs a forward of any signature with DDP's work around it: `f` gets the module and
    /// returns the outputs (anything [`ForwardOutput`]), e.g.
    /// `ddp.forward_with(|m| m.forward_pair(&a, &b))`. Before `f`: checks that the
    /// previous backward's reduction finished and broadcasts rank 0's buffers; after it,
    /// arms the gradient hooks for the coming backward (when grad mode is on and
    /// synchronisation is not turned off by [`DistributedDataParallel::no_sync`]).
    pub fn forward_with<T: ForwardOutput>(&self, f: impl FnOnce(&M) -> Result<T>) -> Result<T> {
        self.pre_forward()?;
        let out = f(&self.module)?;
        if is_grad_enabled() && self.require_backward_grad_sync.load(Ordering::SeqCst) {
            self.require_forward_param_sync
                .store(true, Ordering::SeqCst);
            let mut outputs = Vec::new();
            if self.find_unused_parameters {
                out.tensors(&mut outputs);
            }
            self.reducer.prepare_for_backward(&outputs);
        } else {
            self.require_forward_param_sync
                .store(false, Ordering::SeqCst);
        }
        Ok(out)
    }

    /// Parameter names by bucket, in the order their all-reduces are launched (the last
    /// layers' first), each parameter once.
    pub fn buckets(&self) -> Vec<Vec<String>> {
        self.reducer.bucket_names()
    }

    /// How many buckets of the current (or last) backward have had their all-reduce
    /// launched: all of them once a synchronised backward has finished.
    pub fn buckets_launched(&self) -> usize {
        self.reducer.buckets_launched()
    }

    fn pre_forward(&self) -> Result<()> {
        if self.module_touched.swap(false, Ordering::SeqCst) {
            self.check_parameters()?;
        }
        if is_grad_enabled() {
            self.reducer.ensure_prior_reduction_finished()?;
        }
        if self.broadcast_buffers && self.require_forward_param_sync.load(Ordering::SeqCst) {
            let buffers: Vec<Tensor> = self
                .module
                .named_buffers()
                .into_iter()
                .map(|(_, b)| b)
                .collect();
            if !buffers.is_empty() {
                broadcast_coalesced(&self.group, &buffers, 0, BROADCAST_BUCKET_BYTES)?;
            }
        }
        Ok(())
    }

    /// The module's parameters that require grad must still be the ones hooked.
    fn check_parameters(&self) -> Result<()> {
        let (_, now) = trained_parameters(&self.module.named_parameters());
        let hooked = self.reducer.params();
        if now.len() != hooked.len() || now.iter().zip(hooked).any(|(a, b)| !a.is_same(b)) {
            // Keep failing until fixed.
            self.module_touched.store(true, Ordering::SeqCst);
            return Err(Error::value(
                OP,
                "the wrapped module's parameters were replaced after DistributedDataParallel was built (to_device, to_dtype, assignment, or requires_grad changed): build DistributedDataParallel after moving or converting the module",
            ));
        }
        Ok(())
    }
}

/// The parameters that require grad, with their names: each tensor once, even from a
/// module whose `named_parameters` lists a tied parameter under each of its names (its hook
/// must fire once per backward).
fn trained_parameters(named: &[(String, Tensor)]) -> (Vec<String>, Vec<Tensor>) {
    let (mut names, mut params) = (Vec::new(), Vec::<Tensor>::new());
    for (name, p) in named {
        if p.requires_grad() && !params.iter().any(|q| q.is_same(p)) {
            names.push(name.clone());
            params.push(p.clone());
        }
    }
    (names, params)
}

/// Gradient synchronisation turned off while alive: [`DistributedDataParallel::no_sync`].
#[must_use = "synchronisation is turned back on when the guard is dropped"]
pub struct NoSync<'a> {
    flag: &'a AtomicBool,
    previous: bool,
}

impl Drop for NoSync<'_> {
    fn drop(&mut self) {
        self.flag.store(self.previous, Ordering::SeqCst);
    }
}

impl<M: Module + Forward> Forward for DistributedDataParallel<M> {
    /// The module's forward with DDP's work around it ([`DistributedDataParallel::forward_with`]).
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        self.forward_with(|m| m.forward(input))
    }
}

impl<M: Module> Module for DistributedDataParallel<M> {
    fn visit(&self, v: &mut dyn Visitor) {
        self.module.visit_field("module", v);
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        *self.module_touched.get_mut() = true;
        self.module.visit_field_mut("module", v)
    }
}
