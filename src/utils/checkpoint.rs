//! Activation checkpointing (PyTorch's `torch.utils.checkpoint`): trade compute for memory
//! by not keeping a function's intermediate activations for backward, and recomputing them
//! when backward reaches the function.
//!
//! [`checkpoint`]`(f, inputs)` runs `f` under `no_grad`, so none of its intermediates is
//! saved, and keeps only the inputs. Each differentiable output gets one
//! `CheckpointBackward` node whose backward:
//!
//! 1. puts back the state that was current at forward ([`ForwardState`]: the global
//!    generator's [`RngState`], so dropout draws the same masks), remembering the current one;
//! 2. re-runs `f` with grad enabled on detached copies of the inputs (each requiring grad as
//!    its original did), then puts the remembered state back;
//! 3. backpropagates the incoming gradients through the recomputed graph with
//!    [`backward`](crate::autograd::engine::backward): the gradients of parameters `f`
//!    captured (an nn `Linear`'s weight) accumulate into their `.grad` there, as in
//!    PyTorch, and those of the detached inputs are handed on to the original inputs.
//!
//! So the gradients are exactly (bitwise) those of running `f` plainly.
//!
//! How this relates to PyTorch's two variants: the recomputation is PyTorch's reentrant one
//! (a backward inside backward), with these non-reentrant behaviours:
//! - inputs need not require grad. When none does, the forward runs with grad enabled (the
//!   graph it builds is dropped as soon as `f` returns, so it costs one segment's
//!   activations, transiently) to learn whether `f` used parameters that require grad;
//!   if it did, the outputs get the node and those parameters their gradients. (PyTorch's
//!   reentrant variant silently gives them none; the non-reentrant one records the graph
//!   and discards what it saves.)
//! - non-tensor and non-differentiable outputs are fine: integer outputs get no node.
//! - nested checkpoints work (the inner one records its node during the outer
//!   recomputation).
//!
//! Not supported, each a [`crate::Error`] of kind `Autograd` naming `checkpoint` (the
//! reentrant variant's limits): [`crate::autograd::grad`] through a checkpoint (the
//! recomputation would accumulate into parameters' `.grad`, which `grad` must not touch) and
//! `create_graph` (double backward). Walking the graph twice needs `retain_graph`, as
//! anywhere. With grad mode off, `checkpoint(f, inputs)` is `f(inputs)`.
//!
//! The generator is always preserved (PyTorch's default `preserve_rng_state=True`); kiln has
//! one generator for every device, so there is no separate CUDA state to stash.

use crate::amp::{AutocastState, AutocastStateGuard};
use crate::autograd::engine::{self, is_capturing};
use crate::autograd::{enable_grad, is_grad_enabled, no_grad, Node, NodeBase, SavedTensor};
use crate::ops::random::{get_rng_state, set_rng_state, RngState};
use crate::{Error, Result, Tensor};
use std::sync::Arc;

/// A checkpointed function of several tensors: the same tensors go in at forward and at
/// recomputation, and it must return as many outputs both times.
pub type CheckpointFn = Arc<dyn Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync>;

/// One step of [`checkpoint_sequential`]: a layer's forward, one tensor in and out.
pub type SegmentFn = Arc<dyn Fn(&Tensor) -> Result<Tensor> + Send + Sync>;

const OP: &str = "checkpoint";

/// The state captured when a checkpointed function first runs and put back around its
/// recomputation, so the recomputation sees what the forward saw. This struct is the one
/// place it lives: the global generator's state and the autocast regions; any other
/// thread-local mode that changes what ops compute belongs here too, captured in
/// [`ForwardState::capture`] and set in [`ForwardState::enter`]. Grad mode is not among
/// them: the recomputation always records.
#[derive(Clone, Copy, Debug)]
pub struct ForwardState {
    rng: RngState,
    /// The autocast regions the forward ran in, so the recomputation casts alike.
    autocast: AutocastState,
}

impl ForwardState {
    /// The state current on this thread now.
    pub fn capture() -> Self {
        ForwardState {
            rng: get_rng_state(),
            autocast: AutocastState::capture(),
        }
    }

    /// Makes `self` current until the guard drops, which restores the state current before.
    pub fn enter(&self) -> Result<ForwardStateGuard> {
        let autocast = self.autocast.enter()?;
        let prev = get_rng_state();
        set_rng_state(self.rng);
        Ok(ForwardStateGuard {
            prev,
            _autocast: autocast,
        })
    }
}

/// Puts back the state that [`ForwardState::enter`] replaced.
#[must_use = "the state reverts when the guard is dropped"]
pub struct ForwardStateGuard {
    prev: RngState,
    _autocast: AutocastStateGuard,
}

impl Drop for ForwardStateGuard {
    fn drop(&mut self) {
        set_rng_state(self.prev);
    }
}

/// Runs `f(inputs)` without keeping its intermediate activations for backward; backward
/// recomputes them (PyTorch's `torch.utils.checkpoint.checkpoint`; see the module doc for
/// the semantics). The gradients of the inputs, and of the parameters `f` uses, equal a
/// plain run's bit for bit, dropout included.
///
/// ```
/// use kiln::utils::checkpoint;
/// use kiln::{DType, Tensor};
/// let x = Tensor::randn([4, 3], DType::F64)?.requires_grad_(true)?;
/// let w = Tensor::randn([3, 3], DType::F64)?.requires_grad_(true)?;
/// let wf = w.clone();
/// let y = checkpoint(move |xs| Ok(vec![xs[0].matmul(&wf)?.tanh()?]), &[x.clone()])?;
/// y[0].sum()?.backward()?;
/// assert!(x.grad().is_some() && w.grad().is_some());
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn checkpoint(
    f: impl Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>> {
    checkpoint_arc(Arc::new(f), inputs)
}

/// [`checkpoint`] for a function of one tensor returning one tensor.
pub fn checkpoint_one(
    f: impl Fn(&Tensor) -> Result<Tensor> + Send + Sync + 'static,
    input: &Tensor,
) -> Result<Tensor> {
    let out = checkpoint(move |xs| Ok(vec![f(&xs[0])?]), std::slice::from_ref(input))?;
    Ok(out.into_iter().next().expect("one output"))
}

/// Runs `functions` in order on `input`, in `segments` chunks of equal length (the last
/// takes the remainder), checkpointing every chunk but the last, which runs plainly since
/// backward needs its activations at once (PyTorch's `checkpoint_sequential`). Only the
/// inputs of the chunks are kept for backward.
///
/// ```
/// use kiln::utils::{checkpoint_sequential, SegmentFn};
/// use std::sync::Arc;
/// let x = kiln::Tensor::from([1f64, -2.]).requires_grad_(true)?;
/// let layers: Vec<SegmentFn> = vec![
///     Arc::new(|x| x.mul_scalar(3.0)),
///     Arc::new(|x| x.relu()),
///     Arc::new(|x| x.exp()),
/// ];
/// checkpoint_sequential(&layers, 2, &x)?.sum()?.backward()?;
/// assert_eq!(x.grad().unwrap().to_vec::<f64>()?[1], 0.0);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn checkpoint_sequential(
    functions: &[SegmentFn],
    segments: usize,
    input: &Tensor,
) -> Result<Tensor> {
    if segments == 0 || segments > functions.len() {
        return Err(Error::value(
            "checkpoint_sequential",
            format!(
                "segments must be between 1 and the number of functions ({}), but got {segments}",
                functions.len()
            ),
        ));
    }
    let size = functions.len() / segments;
    let mut x = input.clone();
    for chunk in 0..segments - 1 {
        let run: Vec<SegmentFn> = functions[chunk * size..(chunk + 1) * size].to_vec();
        x = checkpoint_one(move |x| run_all(&run, x), &x)?;
    }
    run_all(&functions[(segments - 1) * size..], &x)
}

fn run_all(functions: &[SegmentFn], input: &Tensor) -> Result<Tensor> {
    let mut x = input.clone();
    for f in functions {
        x = f(&x)?;
    }
    Ok(x)
}

/// [`checkpoint`] with the function already shared.
fn checkpoint_arc(f: CheckpointFn, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    if !is_grad_enabled() {
        return f(inputs);
    }
    let state = ForwardState::capture();
    let (outputs, differentiable): (Vec<Tensor>, Vec<bool>) =
        if inputs.iter().any(Tensor::requires_grad) {
            let outputs = {
                let _g = no_grad();
                f(inputs)?
            };
            let diff = outputs.iter().map(Tensor::is_floating_point).collect();
            (outputs, diff)
        } else {
            // No input carries a gradient: only parameters `f` captured can. Run with grad on
            // to see whether any did; the graph is dropped with these outputs.
            let outputs = f(inputs)?;
            let diff = outputs.iter().map(Tensor::requires_grad).collect();
            (outputs, diff)
        };
    // Fresh handles, cut from any history: an output may be an input itself, whose own
    // history must not change.
    let outputs: Vec<Tensor> = outputs.iter().map(Tensor::detach).collect();
    let mut node_output = Vec::with_capacity(outputs.len());
    let mut recorded: Vec<&Tensor> = Vec::new();
    for (o, &d) in outputs.iter().zip(&differentiable) {
        node_output.push(d.then_some(recorded.len()));
        if d {
            recorded.push(o);
        }
    }
    if recorded.is_empty() {
        return Ok(outputs);
    }
    let edges: Vec<Option<&Tensor>> = inputs.iter().map(Some).collect();
    let node: Arc<dyn Node> = Arc::new(CheckpointBackward {
        base: NodeBase::new(&edges, &recorded),
        f,
        inputs: inputs
            .iter()
            .map(|t| (SavedTensor::input(t, "input"), t.requires_grad()))
            .collect(),
        node_output: node_output.clone(),
        state,
    });
    for (o, nr) in outputs.iter().zip(node_output) {
        if let Some(nr) = nr {
            o.set_grad_fn(node.clone(), nr);
        }
    }
    Ok(outputs)
}

/// The node of a checkpointed call: holds the function, its inputs and the forward's state,
/// and recomputes in backward (see the module doc).
struct CheckpointBackward {
    base: NodeBase,
    f: CheckpointFn,
    /// Each input, and whether it required grad at forward.
    inputs: Vec<(SavedTensor, bool)>,
    /// For each output of `f`: which output of this node it is (`None`: not differentiable).
    node_output: Vec<Option<usize>>,
    state: ForwardState,
}

impl Node for CheckpointBackward {
    fn name(&self) -> &'static str {
        "CheckpointBackward"
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        if is_capturing() {
            return Err(Error::autograd(
                OP,
                "incompatible with autograd::grad (the recomputation accumulates into the .grad of the parameters the function uses); call backward() instead",
            ));
        }
        // The engine runs a node with grad mode on only under create_graph.
        if is_grad_enabled() {
            return Err(Error::autograd(
                OP,
                "create_graph (double backward) is not supported",
            ));
        }
        let mut detached = Vec::with_capacity(self.inputs.len());
        for (saved, requires_grad) in &self.inputs {
            let d = saved.unpack(self.name())?.detach();
            detached.push(if *requires_grad {
                d.requires_grad_(true)?
            } else {
                d
            });
        }
        let outputs = {
            let _state = self.state.enter()?;
            let _g = enable_grad();
            (self.f)(&detached)?
        };
        if outputs.len() != self.node_output.len() {
            return Err(Error::autograd(
                OP,
                format!(
                    "the recomputed function returned {} outputs, but the forward returned {}",
                    outputs.len(),
                    self.node_output.len()
                ),
            ));
        }
        let mut roots = Vec::new();
        let mut root_grads = Vec::new();
        for (o, nr) in outputs.iter().zip(&self.node_output) {
            let grad = nr.and_then(|nr| grads.get(nr).cloned().flatten());
            if let (Some(g), true) = (grad, o.requires_grad()) {
                roots.push(o.clone());
                root_grads.push(Some(g));
            }
        }
        if !roots.is_empty() {
            engine::backward(&roots, &root_grads, false, false)?;
        }
        Ok(detached
            .iter()
            .zip(&self.inputs)
            .map(|(d, (_, requires_grad))| if *requires_grad { d.grad() } else { None })
            .collect())
    }

    fn release_variables(&self) {
        for (saved, _) in &self.inputs {
            saved.release();
        }
    }
}
