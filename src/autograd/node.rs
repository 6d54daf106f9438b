//! The graph's vocabulary: a [`Node`] turns the gradients of its outputs into gradients of its
//! inputs and names, through [`Edge`]s, the nodes those inputs came from.

use crate::tensor::{AutogradMeta, TensorImpl};
use crate::{DType, Device, Error, Result, Tensor};
use kiln_kernels::Dims;
use smallvec::SmallVec;
use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A gradient hook: sees a gradient and may replace it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Option<Tensor> + Send + Sync>;

/// A leaf's post-accumulate-grad hook: sees the leaf once its `.grad` holds the new sum.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) + Send + Sync>;

/// Where an input's gradient goes: input `input_nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    pub node: Arc<dyn Node>,
    pub input_nr: usize,
}

/// Shape, dtype and device of one forward output of a node. The gradient arriving for that
/// output is summed, cast or moved to match before the node runs, so a backward formula may
/// return a broadcast or wider gradient. (PyTorch keeps the same per node, as the
/// `input_metadata` of its backward inputs.) Most ops have one output, and recording one
/// meta rather than one per input keeps the node small enough to build without copies.
#[derive(Clone, Debug)]
pub struct OutputMeta {
    pub shape: Dims,
    pub dtype: DType,
    pub device: Device,
}

impl OutputMeta {
    /// The metadata of `t`.
    #[inline]
    pub fn of(t: &Tensor) -> Self {
        OutputMeta {
            shape: kiln_kernels::layout::dims(t.shape()),
            dtype: t.dtype(),
            device: t.device(),
        }
    }
}

/// A node's gradient hooks, by the output whose gradient they see.
type PreHooks = Mutex<Vec<(usize, Hook)>>;

/// What every node has: its edges, its outputs' metadata and the hooks on its incoming
/// grads. Most nodes have one or two inputs and one output: those are stored inline, and
/// the hooks list is made on first use, so recording an op allocates only the node itself.
#[derive(Default)]
pub struct NodeBase {
    pub next_edges: SmallVec<[Option<Edge>; 2]>,
    pub output_metas: SmallVec<[OutputMeta; 1]>,
    pre_hooks: OnceLock<Box<PreHooks>>,
}

impl NodeBase {
    /// A base for a node whose differentiable inputs are `inputs` (None where an input is not
    /// a tensor that requires grad) and whose forward outputs are `outputs`.
    pub fn new(inputs: &[Option<&Tensor>], outputs: &[&Tensor]) -> Self {
        let mut base = NodeBase::default();
        base.record(inputs, outputs);
        base
    }

    /// Appends `inputs`' edges and `outputs`' metadata, as [`NodeBase::new`] does, where the
    /// base lies: recorded ops build their node in its allocation and fill it there, rather
    /// than moving a base built on the stack (see `arc_init`).
    #[inline]
    pub fn record(&mut self, inputs: &[Option<&Tensor>], outputs: &[&Tensor]) {
        // The slots are made first and the edges stored into them: pushing each
        // `Option<Edge>` went through a stack copy read back before its stores landed. Most
        // nodes' slots are made at once: pushed, each bumped the length in memory, a chain
        // of reads of the store before. (`push` loops, not `collect`: `SmallVec`'s `Extend`
        // is not inlined.)
        let first = self.next_edges.len();
        if first == 0 && inputs.len() <= 2 {
            self.next_edges = SmallVec::from_buf_and_len([None, None], inputs.len());
        } else {
            for _ in inputs {
                self.next_edges.push(None);
            }
        }
        for (slot, t) in self.next_edges[first..].iter_mut().zip(inputs) {
            if let Some(e) = t.and_then(|t| t.gradient_edge()) {
                *slot = Some(e);
            }
        }
        // Each meta is pushed empty and filled where it lies: built on the stack and moved,
        // its shape was read back with wide loads before its word stores had landed.
        for t in outputs {
            self.output_metas.push(OutputMeta {
                shape: Dims::new(),
                dtype: t.dtype(),
                device: t.device(),
            });
            let m = self.output_metas.last_mut().expect("just pushed");
            for &d in t.shape() {
                m.shape.push(d);
            }
        }
    }

    /// True when input `i`'s gradient is needed.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.next_edges.get(i).is_some_and(|e| e.is_some())
    }

    /// Adds a hook on the gradient arriving for output `output_nr`.
    pub fn add_pre_hook(&self, output_nr: usize, hook: Hook) {
        self.pre_hooks
            .get_or_init(Box::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((output_nr, hook));
    }

    /// Runs the hooks on incoming gradients.
    pub(crate) fn run_pre_hooks(&self, grads: &mut [Option<Tensor>]) -> Result<()> {
        let Some(hooks) = self.pre_hooks.get() else {
            return Ok(());
        };
        let hooks = hooks.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for (nr, hook) in hooks {
            if let Some(Some(g)) = grads.get(nr) {
                if let Some(new) = hook(g) {
                    check_hook_result(g, &new)?;
                    grads[nr] = Some(new);
                }
            }
        }
        Ok(())
    }
}

/// [`RELEASING`] states.
const IDLE: u8 = 0;
const DRAINING: u8 = 1;
/// Draining, and [`PENDING`] may hold nodes: the drain looks at the list only then.
const DRAINING_MORE: u8 = 2;

thread_local! {
    /// Whether the outermost [`release`] on this thread is draining [`PENDING`].
    static RELEASING: Cell<u8> = const { Cell::new(IDLE) };
    /// Nodes whose release that outermost call has taken over.
    static PENDING: RefCell<Vec<Arc<dyn Node>>> = const { RefCell::new(Vec::new()) };
}

/// Lets go of a reference to `node` without recursing when that frees it. Freeing a node
/// drops its edges and its saved tensors, whose `grad_fn`s are the nodes before it, and
/// so on down a chain a million ops long: that overflowed the stack. So the nodes a drop
/// would free are handed to a per-thread work list drained by the outermost call (PyTorch's
/// `deleteNode`). Every owner of a graph's nodes — a node's edges, a tensor's `grad_fn` —
/// lets go through here.
pub(crate) fn release(node: Arc<dyn Node>) {
    // Not the last reference: letting go cannot free it. (If another thread lets go of its
    // own at the same moment, this drop may free the node after all: one level of
    // recursion, whose own releases come back here.)
    if Arc::strong_count(&node) > 1 {
        return;
    }
    match RELEASING.try_with(|r| r.replace(DRAINING)) {
        Ok(IDLE) => {
            /// Ends the drain even if a node's drop unwinds.
            struct Done;
            impl Drop for Done {
                fn drop(&mut self) {
                    let _ = RELEASING.try_with(|r| r.set(IDLE));
                }
            }
            let _done = Done;
            let mut next = Some(node);
            while let Some(n) = next {
                // Freeing `n` may hand more nodes to `PENDING` (most frees hand none: the
                // list is not touched then).
                drop(n);
                next = if RELEASING.with(Cell::get) == DRAINING_MORE {
                    PENDING
                        .try_with(|p| {
                            let mut p = p.borrow_mut();
                            let n = p.pop();
                            if p.is_empty() {
                                RELEASING.with(|r| r.set(DRAINING));
                            }
                            n
                        })
                        .ok()
                        .flatten()
                } else {
                    None
                };
            }
        }
        Ok(_) => {
            let mut node = Some(node);
            // Left in `node` (and dropped recursively) only when the thread is exiting.
            if PENDING
                .try_with(|p| p.borrow_mut().extend(node.take()))
                .is_ok()
            {
                RELEASING.with(|r| r.set(DRAINING_MORE));
            }
        }
        // The thread is exiting and its locals are gone: drop recursively.
        Err(_) => drop(node),
    }
}

/// A tensor lets go of its `grad_fn` through [`release`], so freeing the last tensor of a
/// long graph does not recurse down it. (Implemented here rather than beside the struct so
/// that the tensor core needs none of the graph's teardown.)
impl Drop for AutogradMeta {
    fn drop(&mut self) {
        if let Some(f) = self.grad_fn.take() {
            release(f);
        }
    }
}

/// PyTorch's `check_variable_result`: a hook may replace a gradient, but not with one of
/// another shape or dtype.
fn check_hook_result(original: &Tensor, result: &Tensor) -> Result<()> {
    if original.dtype() != result.dtype() {
        return Err(Error::Autograd(format!(
            "hook has changed the type of value (was {} got {})",
            original.dtype(),
            result.dtype()
        )));
    }
    if original.shape() != result.shape() {
        return Err(Error::Autograd(format!(
            "hook has changed the size of value (was {:?} got {:?})",
            original.shape(),
            result.shape()
        )));
    }
    Ok(())
}

/// A node lets go of the nodes its edges point to through [`release`].
impl Drop for NodeBase {
    fn drop(&mut self) {
        for slot in self.next_edges.iter_mut() {
            if let Some(e) = slot.take() {
                release(e.node);
            }
        }
    }
}

/// A backward function in the graph, named like PyTorch's (`MulBackward0`).
pub trait Node: Send + Sync {
    /// The node's name, as shown in `grad_fn=<...>`.
    fn name(&self) -> &'static str;
    /// Edges, metadata and hooks.
    fn base(&self) -> &NodeBase;
    /// Gradients of the inputs from the gradients of the outputs (`None` = zero / not needed).
    fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;
    /// Frees saved tensors once the graph has been walked without `retain_graph`.
    fn release_variables(&self) {}
    /// For [`AccumulateGrad`]: the leaf it accumulates into, while that leaf lives.
    fn leaf(&self) -> Option<Tensor> {
        None
    }
    /// What the gradient arriving for output `nr` must look like; `None`: taken as it comes.
    fn output_meta(&self, nr: usize) -> Option<OutputMeta> {
        self.base().output_metas.get(nr).cloned()
    }
}

impl dyn Node {
    /// The nodes this one sends gradients to (PyTorch's `next_functions`).
    pub fn next_functions(&self) -> Vec<Option<(Arc<dyn Node>, usize)>> {
        self.base()
            .next_edges
            .iter()
            .map(|e| e.as_ref().map(|e| (e.node.clone(), e.input_nr)))
            .collect()
    }
}

impl std::fmt::Debug for dyn Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{}>", self.name())
    }
}

/// The sink of a leaf's gradient: adds it into the leaf's `.grad`.
///
/// The leaf owns its accumulator (made on first use, kept for its life) and the accumulator
/// holds the leaf weakly: PyTorch has it the other way round, which frees the accumulator
/// with each graph and builds a new one for every parameter on every step. Here a graph
/// keeps the accumulator but not the leaf; a gradient reaching the accumulator of a leaf
/// dropped meanwhile is discarded (nothing could read it).
pub struct AccumulateGrad {
    base: NodeBase,
    variable: Weak<TensorImpl>,
}

impl AccumulateGrad {
    /// Its metadata stays empty: the leaf's is read from the leaf, live.
    pub(crate) fn new(variable: &Tensor) -> Self {
        AccumulateGrad {
            base: NodeBase::default(),
            variable: Arc::downgrade(&variable.0),
        }
    }

    /// Runs the leaf's hooks on a gradient arriving for it.
    pub(crate) fn run_leaf_hooks(variable: &Tensor, mut g: Tensor) -> Result<Tensor> {
        let hooks = variable.meta().hooks.clone();
        for h in hooks {
            if let Some(new) = h(&g) {
                check_hook_result(&g, &new)?;
                g = new;
            }
        }
        Ok(g)
    }
}

/// PyTorch's "gradient layout contract" (`utils::obeys_layout_contract`): a leaf's `.grad`
/// has the leaf's strides when the leaf is non-overlapping and dense (contiguous or a
/// permutation of contiguous, e.g. a weight used as `w.t()`), and is contiguous otherwise,
/// so optimizer steps run over matching dense layouts.
fn obeys_layout_contract(g: &Tensor, variable: &Tensor) -> bool {
    let vl = variable.layout();
    if vl.is_non_overlapping_and_dense() {
        let gl = g.layout();
        gl.sizes
            .iter()
            .zip(gl.strides.iter().zip(&vl.strides))
            .all(|(&s, (gs, vs))| s == 1 || gs == vs)
    } else {
        g.is_contiguous()
    }
}

/// A copy of `g` laid out as the contract asks (`clone_obey_contract`): with `variable`'s
/// strides when it is non-overlapping and dense, contiguous otherwise. Recorded when grad
/// mode is on (create_graph), so the accumulated grad stays differentiable.
fn clone_obey_contract(g: &Tensor, variable: &Tensor) -> Result<Tensor> {
    let vl = variable.layout();
    let out = Tensor::alloc_on("AccumulateGrad", g.shape(), g.dtype(), g.device())?;
    let out = if vl.is_non_overlapping_and_dense() {
        out.with_layout(crate::Layout {
            sizes: vl.sizes.clone(),
            strides: vl.strides.clone(),
            offset: 0,
        })
    } else {
        out
    };
    out.copy_(g)?;
    Ok(out)
}

impl Node for AccumulateGrad {
    fn name(&self) -> &'static str {
        "AccumulateGrad"
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let (Some(g), Some(variable)) = (grads.into_iter().next().flatten(), self.leaf()) else {
            return Ok(vec![]);
        };
        let g = AccumulateGrad::run_leaf_hooks(&variable, g)?;
        let _serial = variable
            .0
            .accumulating
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let prev = variable.meta().grad.take();
        let new = match prev {
            // Under create_graph the sum stays in the graph.
            Some(p) if crate::autograd::is_grad_enabled() || p.requires_grad() => p.add(&g)?,
            // Otherwise in place, as PyTorch's `variable_grad += new_grad`: a `.grad` the
            // caller holds (or DistributedDataParallel's bucket view) sees the sum, and no
            // buffer is allocated.
            Some(p) => {
                if let Err(e) = p.add_(&g) {
                    variable.meta().grad = Some(p);
                    return Err(e);
                }
                p
            }
            None if crate::autograd::is_grad_enabled() => {
                if obeys_layout_contract(&g, &variable) {
                    g
                } else {
                    clone_obey_contract(&g, &variable)?
                }
            }
            None => {
                // Steal the incoming buffer only when nothing else can see it (PyTorch's
                // use_count check): another leaf's `.grad` or the caller's tensor may share
                // it, and optimizers and gradient clipping write `.grad` in place.
                let unshared = Arc::strong_count(&g.0) == 1 && Arc::strong_count(g.storage()) == 1;
                if unshared && obeys_layout_contract(&g, &variable) {
                    g.detach()
                } else {
                    let _g = crate::no_grad();
                    clone_obey_contract(&g, &variable)?.detach()
                }
            }
        };
        variable.meta().grad = Some(new);
        drop(_serial);
        // Outside every lock: a hook reads `.grad` (and may write it in place), as
        // DistributedDataParallel's does to launch a bucket's all-reduce.
        let hooks: SmallVec<[PostAccumulateHook; 1]> = variable
            .meta()
            .post_accumulate_hooks
            .iter()
            .map(|(_, h)| h.clone())
            .collect();
        for h in hooks {
            h(&variable);
        }
        Ok(vec![])
    }
    fn leaf(&self) -> Option<Tensor> {
        self.variable.upgrade().map(Tensor)
    }
    fn output_meta(&self, _nr: usize) -> Option<OutputMeta> {
        self.leaf().map(|l| OutputMeta::of(&l))
    }
}
