//! Activation checkpointing (PyTorch's `torch.utils.checkpoint`): trade compute for memory
//! by not keeping a function's intermediate activations for backward, and recomputing them
//! when backward needs them.
//!
//! This is PyTorch's non-reentrant variant (`use_reentrant=False`), built on saved-tensor
//! hooks ([`crate::autograd::saved_hooks`]). [`checkpoint`]`(f, inputs)` keeps the inputs
//! and runs `f` recording its graph as usual, but with hooks whose pack keeps nothing of a
//! saved tensor but its position (and shape and dtype, to check the recomputation). The
//! first time backward unpacks one of them, the hooks:
//!
//! 1. put back the state that was current at forward ([`ForwardState`]: the global
//!    generator's [`RngState`], so dropout draws the same masks, and the autocast regions),
//!    remembering the current one;
//! 2. re-run `f` with grad enabled on detached copies of the inputs (each requiring grad as
//!    its original did), keeping what it saves, by position; then put the state back;
//! 3. hand out the recomputed tensors, each once.
//!
//! Backward itself runs through the graph recorded at forward, so the gradients are exactly
//! (bitwise) those of running `f` plainly, and everything backward can do works through a
//! checkpoint: [`crate::autograd::grad`] (nothing is accumulated into a `.grad` by the
//! recomputation), `create_graph` (double backward: unpacked tensors carry the original
//! history, and a second walk recomputes again), `retain_graph`, inputs that do not require
//! grad, parameters captured by `f`, non-differentiable outputs, and nesting (an inner
//! checkpoint's inputs are saved tensors of the outer one). Errors, each naming
//! `checkpoint`: an input modified in place between forward and backward, and a
//! recomputation that saves other tensors than the forward did (PyTorch's messages). With
//! grad mode off, `checkpoint(f, inputs)` is `f(inputs)`.
//!
//! The generator is always preserved (PyTorch's default `preserve_rng_state=True`); kiln has
//! one generator for every device, so there is no separate CUDA state to stash.

use crate::amp::{AutocastState, AutocastStateGuard};
use crate::autograd::saved_hooks::{self, Packed, SavedTensorHooks};
use crate::autograd::{enable_grad, is_grad_enabled, SavedTensor};
use crate::ops::random::{get_rng_state, set_rng_state, RngState};
use crate::{DType, Error, Result, Tensor};
use std::sync::{Arc, Mutex, MutexGuard};

/// A checkpointed function of several tensors: the same tensors go in at forward and at
/// recomputation, and it must save the same tensors (as many, of the same shapes and
/// dtypes) both times.
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
    // The inputs are saved before the hooks go on: an enclosing checkpoint's hooks pack them.
    let frame = Arc::new(Frame {
        f: f.clone(),
        inputs: inputs
            .iter()
            .map(|t| (SavedTensor::input(t, "input"), t.requires_grad()))
            .collect(),
        state: ForwardState::capture(),
        saved: Mutex::new(Vec::new()),
        recomputed: Mutex::new(Vec::new()),
    });
    let _hooks = saved_hooks::register(Arc::new(Pack(frame)));
    f(inputs)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One checkpointed call: what its recomputation needs, and what it recomputed. Alive as
/// long as a tensor packed by its hooks is.
struct Frame {
    f: CheckpointFn,
    /// The inputs, saved as an op saves them (so modifying one in place before backward is
    /// caught), and whether each required grad at forward.
    inputs: Vec<(SavedTensor, bool)>,
    state: ForwardState,
    /// Shape and dtype of each tensor the forward saved, by position.
    saved: Mutex<Vec<(Vec<usize>, DType)>>,
    /// The recomputation's saved tensors, by position; each is taken by its one unpack.
    recomputed: Mutex<Vec<Option<Tensor>>>,
}

impl Frame {
    /// The recomputed tensor at `index`, recomputing first when it is not there (the first
    /// unpack of a walk, or again for another walk).
    fn unpack(&self, index: usize) -> Result<Tensor> {
        let ready = lock(&self.recomputed)
            .get(index)
            .is_some_and(Option::is_some);
        if !ready {
            self.recompute()?;
        }
        let t = lock(&self.recomputed)
            .get_mut(index)
            .and_then(Option::take)
            .ok_or_else(|| {
                Error::autograd(OP, format!("no recomputed tensor at position {index}"))
            })?;
        let (shape, dtype) = lock(&self.saved)[index].clone();
        if t.shape() != shape.as_slice() || t.dtype() != dtype {
            return Err(Error::autograd(
                OP,
                format!(
                    "Recomputed values for the following tensors have different metadata than during the forward pass.\ntensor at position {index}:\nsaved metadata: {{'shape': {shape:?}, 'dtype': {dtype}}}\nrecomputed metadata: {{'shape': {:?}, 'dtype': {}}}",
                    t.shape(),
                    t.dtype()
                ),
            ));
        }
        Ok(t)
    }

    /// Runs `f` again in the forward's state and keeps every tensor it saves.
    fn recompute(&self) -> Result<()> {
        let mut detached = Vec::with_capacity(self.inputs.len());
        for (saved, requires_grad) in &self.inputs {
            let d = saved.unpack(OP)?.detach();
            detached.push(if *requires_grad {
                d.requires_grad_(true)?
            } else {
                d
            });
        }
        let record = Arc::new(Record::default());
        {
            let _state = self.state.enter()?;
            let _g = enable_grad();
            let _hooks = saved_hooks::register(record.clone());
            // Only what it saves is wanted; its outputs and graph are let go here.
            (self.f)(&detached)?;
        }
        let got = std::mem::take(&mut *lock(&record.0));
        let expected = lock(&self.saved).len();
        if got.len() != expected {
            return Err(Error::autograd(
                OP,
                format!(
                    "A different number of tensors was saved during the original forward and recomputation.\nNumber of tensors saved during forward: {expected}\nNumber of tensors saved during recomputation: {}",
                    got.len()
                ),
            ));
        }
        *lock(&self.recomputed) = got.into_iter().map(Some).collect();
        Ok(())
    }
}

/// The forward's hooks: a saved tensor is kept as its position in the frame.
struct Pack(Arc<Frame>);

impl SavedTensorHooks for Pack {
    fn pack(&self, t: &Tensor) -> Packed {
        let mut saved = lock(&self.0.saved);
        saved.push((t.shape().to_vec(), t.dtype()));
        Box::new(saved.len() - 1)
    }

    fn unpack(&self, packed: &Packed) -> Result<Tensor> {
        match packed.downcast_ref::<usize>() {
            Some(&index) => self.0.unpack(index),
            None => Err(Error::autograd(OP, "a saved tensor packed by other hooks")),
        }
    }
}

/// The recomputation's hooks: every saved tensor, in order.
#[derive(Default)]
struct Record(Mutex<Vec<Tensor>>);

impl SavedTensorHooks for Record {
    fn pack(&self, t: &Tensor) -> Packed {
        lock(&self.0).push(t.detach());
        Box::new(())
    }

    fn unpack(&self, _: &Packed) -> Result<Tensor> {
        // The recomputation's graph is dropped unwalked.
        Err(Error::autograd(
            OP,
            "a tensor saved during recomputation was unpacked",
        ))
    }
}
