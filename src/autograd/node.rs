//! The graph's vocabulary: a [`Node`] turns the gradients of its outputs into gradients of its
//! inputs and names, through [`Edge`]s, the nodes those inputs came from.

use crate::tensor::TensorImpl;
use crate::{DType, Device, Error, Result, Tensor};
use kiln_kernels::Dims;
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::{Arc, Mutex, Weak};

/// A gradient hook: sees a gradient and may replace it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Option<Tensor> + Send + Sync>;

/// Where an input's gradient goes: input `input_nr` of `node`.
#[derive(Clone)]
pub struct Edge {
    pub node: Arc<dyn Node>,
    pub input_nr: usize,
}

/// Shape and dtype of a node input, so the engine can reduce a broadcast gradient and cast
/// it back before passing it on.
#[derive(Clone, Debug)]
pub struct InputMeta {
    pub shape: Dims,
    pub dtype: DType,
    pub device: Device,
}

/// What every node has: its edges, its inputs' metadata and the hooks on its incoming grads.
/// Most nodes have one or two inputs: those are stored inline, so recording an op allocates
/// only the node itself.
#[derive(Default)]
pub struct NodeBase {
    pub next_edges: SmallVec<[Option<Edge>; 2]>,
    pub input_metas: SmallVec<[InputMeta; 2]>,
    pre_hooks: Mutex<Vec<(usize, Hook)>>,
}

impl NodeBase {
    /// A base for a node whose differentiable inputs are `inputs` (None where an input is not
    /// a tensor that requires grad).
    pub fn new(inputs: &[Option<&Tensor>]) -> Self {
        // `push` loops rather than `collect`: `SmallVec`'s `Extend` is not inlined, and this
        // runs for every recorded op.
        let mut next_edges = SmallVec::new();
        let mut input_metas = SmallVec::new();
        for t in inputs {
            next_edges.push(t.and_then(|t| t.gradient_edge()));
            input_metas.push(match t {
                Some(t) => InputMeta {
                    shape: Dims::from_slice(t.shape()),
                    dtype: t.dtype(),
                    device: t.device(),
                },
                None => InputMeta {
                    shape: Dims::new(),
                    dtype: DType::F32,
                    device: Device::Cpu,
                },
            });
        }
        NodeBase {
            next_edges,
            input_metas,
            pre_hooks: Mutex::new(Vec::new()),
        }
    }

    /// True when input `i`'s gradient is needed.
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.next_edges.get(i).is_some_and(|e| e.is_some())
    }

    /// Adds a hook on the gradient arriving for output `output_nr`.
    pub fn add_pre_hook(&self, output_nr: usize, hook: Hook) {
        self.pre_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((output_nr, hook));
    }

    /// Runs the hooks on incoming gradients.
    pub(crate) fn run_pre_hooks(&self, grads: &mut [Option<Tensor>]) -> Result<()> {
        let hooks = self
            .pre_hooks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
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

thread_local! {
    /// Edges whose release an outer [`NodeBase`] drop on this thread has taken over.
    static DEFERRED: RefCell<Option<Vec<Edge>>> = const { RefCell::new(None) };
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

/// Frees a graph iteratively, as PyTorch's `deleteNode` does: dropping a node's edges would
/// drop the next node, and so on down a chain a million ops long, overflowing the stack. The
/// first node dropped on a thread drains a work list; nodes freed while it runs hand it their
/// edges instead of dropping them, so the depth of the graph never becomes stack depth.
impl Drop for NodeBase {
    fn drop(&mut self) {
        // Dropping the edges frees no node that has edges of its own (the common case: the
        // next nodes are shared, or are leaves' accumulators), so it cannot recurse: drop
        // them here. (Another thread may release its share meanwhile, making a drop below
        // free a node after all; that node's own drop then runs the loop, one level down.)
        let deep = self
            .next_edges
            .iter()
            .flatten()
            .any(|e| Arc::strong_count(&e.node) == 1 && !e.node.base().next_edges.is_empty());
        if !deep {
            return;
        }
        let mut edges: SmallVec<[Edge; 4]> = std::mem::take(&mut self.next_edges)
            .into_iter()
            .flatten()
            .collect();
        if edges.is_empty() {
            return;
        }
        let outer_loop_runs = DEFERRED.try_with(|d| {
            let mut d = d.borrow_mut();
            match d.as_mut() {
                Some(pending) => {
                    pending.extend(edges.drain(..));
                    true
                }
                None => {
                    *d = Some(Vec::new());
                    false
                }
            }
        });
        // `Err`: the thread is exiting and its locals are gone; drop recursively.
        if outer_loop_runs != Ok(false) {
            return;
        }
        while !edges.is_empty() {
            // Dropping these may free nodes, whose own edges land in `DEFERRED`.
            drop(std::mem::take(&mut edges));
            edges = DEFERRED.with(|d| {
                d.borrow_mut()
                    .as_mut()
                    .map(|v| SmallVec::from_vec(std::mem::take(v)))
                    .unwrap_or_default()
            });
        }
        DEFERRED.with(|d| *d.borrow_mut() = None);
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
    /// Its input metadata stays empty: nothing reads it (an accumulator has no outputs to
    /// conform) and the leaf's shape is read from the leaf.
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
            // Under create_graph the sum stays in the graph; otherwise detach it.
            Some(p) => p.add(&g)?,
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
        Ok(vec![])
    }
    fn leaf(&self) -> Option<Tensor> {
        self.variable.upgrade().map(Tensor)
    }
}
