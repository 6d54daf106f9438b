//! The gradient reducer (PyTorch's `Reducer`, reducer.cpp): post-accumulate-grad hooks mark
//! parameters ready during backward, each gradient copied into its bucket scaled by 1 / world
//! size; a bucket whose parameters are all ready is all-reduced asynchronously, in bucket order so every rank
//! submits the same collectives in the same order; once the last bucket is launched, the
//! reducer waits for every reduction and writes the averages back into the `.grad`s.
//! With `gradient_as_bucket_view` each `.grad` is instead made a view of its place in the
//! bucket, so the averages need no copying back, and a `.grad` that is already that view
//! (zeroed in place, or accumulated into under `no_sync`) needs no copying in.

use super::broadcast::slot;
use super::buckets::{assign_buckets, ParamSpec, FIRST_BUCKET_BYTES};
use super::graph::{accumulator_id, reachable_nodes};
use crate::{ProcessGroup, ReduceOp, Work};
use kiln_core::autograd::HookHandle;
use kiln_core::{no_grad, Error, Result, Tensor};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

const OP: &str = "DistributedDataParallel";

/// The reducer's handle: owns the hooks and removes them on drop.
pub(crate) struct Reducer {
    inner: Arc<Inner>,
    hooks: Vec<HookHandle>,
}

/// A bucket: its parameters (indices into `Inner::params`, definition order) and the flat
/// buffer their gradients are reduced in.
struct Bucket {
    vars: Vec<usize>,
    flat: Tensor,
}

struct Inner {
    group: ProcessGroup,
    /// The parameters that require grad, each once, in `parameters()` order.
    params: Vec<Tensor>,
    names: Vec<String>,
    buckets: Vec<Bucket>,
    /// Per parameter: its bucket, and its gradient's place in that bucket's flat buffer.
    bucket_of: Vec<usize>,
    views: Vec<Tensor>,
    /// Per parameter: the id of its accumulator node (for the unused-parameter search).
    accumulators: HashMap<usize, usize>,
    find_unused: bool,
    /// `.grad`s are views into the buckets (PyTorch's `gradient_as_bucket_view`).
    grad_as_view: bool,
    state: Mutex<State>,
}

/// One iteration's bookkeeping, reset by `prepare_for_backward`.
#[derive(Default)]
struct State {
    /// Hooks act only between a synchronised forward and the end of its reduction (not
    /// under `no_sync`, not after the reduction).
    expect_hooks: bool,
    /// Some parameter was marked ready and the reduction has not finished yet.
    require_finalize: bool,
    ready: Vec<bool>,
    /// Per bucket: parameters not ready yet.
    pending: Vec<usize>,
    /// The next bucket to launch: buckets go out in order.
    next_bucket: usize,
    works: Vec<Work>,
    /// Parameters the forward's graph does not reach (find_unused_parameters), marked
    /// ready by the first hook of the backward, as PyTorch does (marking them in forward
    /// could launch a bucket's all-reduce before a collective of the forward on one rank
    /// and after it on another).
    unused: Vec<usize>,
    marked_unused: bool,
    /// find_unused_parameters: which parameters got a gradient in this backward.
    locally_used: Vec<bool>,
    /// A failure inside a hook, reported by the next forward (hooks cannot return one).
    error: Option<Error>,
}

/// Whether `g` is exactly `view` (same storage, offset, shape and strides): a `.grad`
/// that is a parameter's bucket view.
fn is_view(g: &Tensor, view: &Tensor) -> bool {
    g.shares_storage_with(view)
        && g.storage_offset() == view.storage_offset()
        && g.shape() == view.shape()
        && g.strides() == view.strides()
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Reducer {
    /// Buckets `params` (each once, in `parameters()` order, all requiring grad) and hooks
    /// them. `names` are for errors.
    pub(crate) fn new(
        group: ProcessGroup,
        params: Vec<Tensor>,
        names: Vec<String>,
        bucket_cap_bytes: usize,
        find_unused: bool,
        grad_as_view: bool,
    ) -> Result<Reducer> {
        let specs: Vec<ParamSpec> = params
            .iter()
            .map(|p| ParamSpec {
                numel: p.numel(),
                dtype: p.dtype(),
                device: p.device(),
            })
            .collect();
        let assignment = assign_buckets(&specs, FIRST_BUCKET_BYTES, bucket_cap_bytes);
        let mut bucket_of = vec![0; params.len()];
        let mut views: Vec<Option<Tensor>> = vec![None; params.len()];
        let mut buckets = Vec::with_capacity(assignment.len());
        for (b, vars) in assignment.into_iter().enumerate() {
            let first = &params[vars[0]];
            let numel: usize = vars.iter().map(|&v| params[v].numel()).sum();
            let flat = Tensor::empty_on([numel], first.dtype(), first.device())?;
            let mut offset = 0;
            for &v in &vars {
                bucket_of[v] = b;
                views[v] = Some(slot(&flat, offset, &params[v])?);
                offset += params[v].numel();
            }
            buckets.push(Bucket { vars, flat });
        }
        let views = views
            .into_iter()
            .map(|v| v.expect("every parameter is in one bucket (assign_buckets)"))
            .collect::<Vec<Tensor>>();
        if grad_as_view {
            // A `.grad` that exists already moves into its bucket (PyTorch's
            // `initialize_bucket_views`).
            let _g = no_grad();
            for (p, view) in params.iter().zip(&views) {
                if let Some(g) = p.grad() {
                    view.copy_(&g)?;
                    p.set_grad(Some(view.clone()))?;
                }
            }
        }
        let mut accumulators = HashMap::new();
        for (i, p) in params.iter().enumerate() {
            if let Some(id) = accumulator_id(p) {
                accumulators.insert(id, i);
            }
        }
        let n = params.len();
        let inner = Arc::new(Inner {
            group,
            params,
            names,
            buckets,
            bucket_of,
            views,
            accumulators,
            find_unused,
            grad_as_view,
            state: Mutex::new(State {
                ready: vec![false; n],
                locally_used: vec![false; n],
                ..State::default()
            }),
        });
        let mut hooks = Vec::with_capacity(n);
        for (i, p) in inner.params.iter().enumerate() {
            // Weak: the parameter owns the hook, and the reducer owns the parameter.
            let weak: Weak<Inner> = Arc::downgrade(&inner);
            let hook = p.register_post_accumulate_grad_hook(move |_| {
                if let Some(inner) = weak.upgrade() {
                    inner.autograd_hook(i);
                }
            });
            match hook {
                Ok(h) => hooks.push(h),
                Err(e) => {
                    hooks.iter().for_each(HookHandle::remove);
                    return Err(e);
                }
            }
        }
        Ok(Reducer { inner, hooks })
    }

    /// Parameter names by bucket, in launch order.
    pub(crate) fn bucket_names(&self) -> Vec<Vec<String>> {
        self.inner
            .buckets
            .iter()
            .map(|b| {
                b.vars
                    .iter()
                    .map(|&v| self.inner.names[v].clone())
                    .collect()
            })
            .collect()
    }

    /// The parameters it reduces, in `parameters()` order.
    pub(crate) fn params(&self) -> &[Tensor] {
        &self.inner.params
    }

    /// How many buckets of the current backward have had their all-reduce launched.
    pub(crate) fn buckets_launched(&self) -> usize {
        lock(&self.inner.state).next_bucket
    }

    /// Before a forward with grad enabled: fails if the previous backward's reduction never
    /// finished (a parameter got no gradient), or failed.
    pub(crate) fn ensure_prior_reduction_finished(&self) -> Result<()> {
        let mut st = lock(&self.inner.state);
        if let Some(e) = st.error.take() {
            return Err(Error::distributed(
                OP,
                format!("the gradient reduction of the previous backward failed: {e}"),
            ));
        }
        if st.require_finalize {
            return Err(self.inner.unfinished_error(&st));
        }
        Ok(())
    }

    /// After a synchronised forward: expect every parameter's hook in the coming backward;
    /// with find_unused_parameters, those the outputs' graph does not reach are marked
    /// ready by the first hook.
    pub(crate) fn prepare_for_backward(&self, outputs: &[Tensor]) {
        let inner = &self.inner;
        let unused = if inner.find_unused {
            let seen = reachable_nodes(outputs);
            let mut used = vec![false; inner.params.len()];
            for (id, &i) in &inner.accumulators {
                used[i] = seen.contains(id);
            }
            (0..used.len()).filter(|&i| !used[i]).collect()
        } else {
            Vec::new()
        };
        let mut st = lock(&inner.state);
        st.expect_hooks = true;
        st.ready.iter_mut().for_each(|r| *r = false);
        st.locally_used.iter_mut().for_each(|r| *r = false);
        st.pending = inner.buckets.iter().map(|b| b.vars.len()).collect();
        st.next_bucket = 0;
        st.works.clear();
        st.unused = unused;
        st.marked_unused = false;
    }
}

impl Drop for Reducer {
    fn drop(&mut self) {
        for h in &self.hooks {
            h.remove();
        }
    }
}

impl Inner {
    /// A parameter's gradient has been accumulated (its post-accumulate-grad hook).
    fn autograd_hook(&self, index: usize) {
        let mut st = lock(&self.state);
        if !st.expect_hooks {
            return;
        }
        if let Err(e) = self.on_gradient(&mut st, index) {
            st.expect_hooks = false;
            st.error.get_or_insert(e);
        }
    }

    fn on_gradient(&self, st: &mut State, index: usize) -> Result<()> {
        st.locally_used[index] = true;
        if !st.marked_unused {
            st.marked_unused = true;
            for u in std::mem::take(&mut st.unused) {
                self.mark_ready(st, u)?;
            }
        }
        self.mark_ready(st, index)
    }

    /// Copies the parameter's gradient (zeros if it has none) into its bucket, scaled by
    /// 1 / world size (in place when the gradient is its bucket view already); launches
    /// the buckets that are complete and next in line; after the last, finishes the
    /// reduction.
    fn mark_ready(&self, st: &mut State, index: usize) -> Result<()> {
        if st.ready[index] {
            return Err(Error::distributed(
                OP,
                format!(
                    "Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use of a module parameter outside the `forward` function. Please make sure model parameters are not shared across multiple concurrent forward-backward passes, or try to use _set_static_graph() as a workaround if this module graph does not change during training loop.2) Reused parameters in multiple reentrant backward passes. For example, if you use multiple `checkpoint` functions to wrap the same part of your model, it would result in the same set of parameters been used by different reentrant backward passes multiple times, and hence marking a variable ready multiple times. DDP does not support such use cases in default. You can try to use _set_static_graph() as a workaround if your module graph does not change over iterations.\nParameter at index {index} with name {} has been marked as ready twice. This means that multiple autograd engine  hooks have fired for this particular parameter during this iteration.",
                    self.names[index]
                ),
            ));
        }
        st.ready[index] = true;
        st.require_finalize = true;
        {
            let _g = no_grad();
            let view = &self.views[index];
            let param = &self.params[index];
            let n = self.group.size();
            match param.grad() {
                Some(g) if is_view(&g, view) => {
                    if n > 1 {
                        view.mul_scalar_(1.0 / n as f64)?;
                    }
                }
                // Scaled by 1/n while copied, as PyTorch's reducer does: one pass over the
                // gradient instead of a copy and a division of the whole bucket.
                Some(g) => {
                    if n > 1 {
                        let scale = Tensor::scalar_tensor(1.0 / n as f64, g.dtype())?;
                        kiln_core::mul_out(&g, &scale, view)?;
                    } else {
                        view.copy_(&g)?;
                    }
                    if self.grad_as_view {
                        param.set_grad(Some(view.clone()))?;
                    }
                }
                None => {
                    view.zero_()?;
                }
            };
        }
        let b = self.bucket_of[index];
        st.pending[b] -= 1;
        if st.pending[b] == 0 && b == st.next_bucket {
            self.launch_ready_buckets(st)?;
        }
        if st.next_bucket == self.buckets.len() {
            self.finalize(st)?;
        }
        Ok(())
    }

    /// Launches, in order, every bucket from `next_bucket` on whose parameters are all ready.
    fn launch_ready_buckets(&self, st: &mut State) -> Result<()> {
        while st.next_bucket < self.buckets.len() && st.pending[st.next_bucket] == 0 {
            let flat = &self.buckets[st.next_bucket].flat;
            st.works
                .push(self.group.all_reduce_async(flat, ReduceOp::Sum)?);
            st.next_bucket += 1;
        }
        Ok(())
    }

    /// Waits for every bucket and writes the averages into the `.grad`s. With
    /// find_unused_parameters, a parameter no rank used keeps its `.grad` as it was
    /// (`None` stays `None`), as PyTorch leaves globally unused parameters alone.
    fn finalize(&self, st: &mut State) -> Result<()> {
        st.expect_hooks = false;
        st.require_finalize = false;
        let used_globally = if self.find_unused {
            // Every rank launches this right after its last bucket.
            let map: Vec<i32> = st.locally_used.iter().map(|&u| i32::from(u)).collect();
            let map = Tensor::from_vec(map, &[st.locally_used.len()])?;
            st.works
                .push(self.group.all_reduce_async(&map, ReduceOp::Sum)?);
            Some(map)
        } else {
            None
        };
        let mut first_error = None;
        for w in st.works.drain(..) {
            if let Err(e) = w.wait() {
                first_error.get_or_insert(e);
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let used_globally = match used_globally {
            Some(map) => Some(map.to_vec::<i32>()?),
            None => None,
        };
        let _g = no_grad();
        for (i, p) in self.params.iter().enumerate() {
            if used_globally.as_ref().is_some_and(|m| m[i] == 0) {
                continue;
            }
            let view = &self.views[i];
            match p.grad() {
                Some(g) if self.grad_as_view => {
                    if !is_view(&g, view) {
                        return Err(Error::distributed(
                            OP,
                            format!(
                                "Detected at least one parameter gradient is not the expected DDP bucket view with gradient_as_bucket_view=True (parameter `{}`): its `.grad` was replaced during backward",
                                self.names[i]
                            ),
                        ));
                    }
                }
                Some(g) => {
                    g.copy_(view)?;
                }
                None if self.grad_as_view => {
                    p.set_grad(Some(view.clone()))?;
                }
                None => {
                    let g = Tensor::empty_on(p.shape(), p.dtype(), p.device())?;
                    g.copy_(view)?;
                    p.set_grad(Some(g))?;
                }
            }
        }
        Ok(())
    }

    /// PyTorch's error for a reduction that never finished, with the parameters that got
    /// no gradient.
    fn unfinished_error(&self, st: &State) -> Error {
        let unmarked: Vec<usize> = (0..self.params.len()).filter(|&i| !st.ready[i]).collect();
        let names: Vec<&str> = unmarked.iter().map(|&i| self.names[i].as_str()).collect();
        let indices: Vec<String> = unmarked.iter().map(|i| i.to_string()).collect();
        let rank = self.group.rank();
        let base = "Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss. ";
        let advice = if self.find_unused {
            "Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` outputs participate in computing loss. You can fix this by making sure all `forward` function outputs participate in calculating loss."
        } else {
            "You can enable unused parameter detection by passing the keyword argument `find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs participate in calculating loss."
        };
        Error::distributed(
            OP,
            format!(
                "{base}{advice} \nIf you already have done the above, then the distributed data parallel module wasn't able to locate the output tensors in the return value of your module's `forward` function. Please include the loss function and the structure of the return value of `forward` of your module when reporting this issue (e.g. list, dict, iterable).\nParameters which did not receive grad for rank {rank}: {}\nParameter indices which did not receive grad for rank {rank}: {}",
                names.join(", "),
                indices.join(" ")
            ),
        )
    }
}
