//! Module hooks (PyTorch's `register_forward_pre_hook`, `register_forward_hook`,
//! `register_full_backward_pre_hook`, `register_full_backward_hook`, and the state-dict
//! hooks `register_state_dict_pre_hook`, `register_state_dict_post_hook`,
//! `register_load_state_dict_pre_hook`, `register_load_state_dict_post_hook`), with handles
//! that remove them.
//!
//! # Design
//!
//! kiln's modules are plain structs with no shared base class to hold hook dictionaries, so
//! hooks live in a wrapper: [`Hooked<M>`] owns a module and a [`Hooks<M>`] table. It is a
//! [`Module`] that visits exactly what `M` visits (the same parameter and buffer names: a
//! state dict is unchanged by wrapping) and a [`Forward`] that does what PyTorch's
//! `Module.__call__` does around `forward`:
//!
//! 1. forward pre-hooks, in registration order, each seeing the module and the input and
//!    returning `Some(new input)` to replace it;
//! 2. when there are backward hooks and grad mode is on, the input is passed through an
//!    identity autograd node (PyTorch's `BackwardHookFunction`), if it requires grad;
//! 3. the module's own `forward`;
//! 4. forward hooks, in order, seeing the module, the input and the output and returning
//!    `Some(new output)` to replace it;
//! 5. with backward hooks, the output is passed through a second identity node.
//!
//! In backward, the output's identity node runs first: it hands the output gradients
//! (`grad_output`) to the backward pre-hooks, which may replace them, and keeps them. The
//! input's identity node runs once the module's own backward has produced the input
//! gradient (`grad_input`): it calls the full backward hooks with `(grad_input,
//! grad_output)`, and a hook may return replacement `grad_input`s, which flow on. When the
//! input does not require grad there is no input node: the backward hooks run from the
//! output node with `grad_input = [None]`, and may not replace it (PyTorch's rules and
//! messages, and its order, which `nn/tests/hooks.rs` checks against
//! `scripts/hooks_reference.py`). The hooks a forward call saw are the ones its backward
//! runs, even if some were removed in between, as in PyTorch.
//!
//! Gradients come as slices, one entry per tensor input or output, `None` where there is
//! none, like PyTorch's tuples (one entry each for a [`Forward`] module). Forward hooks get
//! the module (`&M`); backward hooks do not, since backward runs after the borrow of the
//! module has ended: capture what they need.
//!
//! State-dict hooks run from `Hooked`'s `visit` when the walk is a state-dict one (see
//! the walks in `module.rs`): `state_dict()` runs the save pre-hooks with the module's dotted prefix
//! (`"1.0."`), then collects the module's tensors, then the save post-hooks, which may edit
//! the dict built so far; `load_state_dict` first runs the load pre-hooks on a copy of the
//! dict it was given (to rename an old checkpoint's keys, say), and after writing the values
//! the load post-hooks on the keys left unmatched (to excuse some). Two differences from
//! PyTorch: a load pre-hook sees the whole dict, not the part under its prefix, and the
//! load post-hooks all run after the whole load, seeing every unmatched key.
//!
//! The table is shared: [`Hooked::hooks`] hands out a handle to it, so hooks can be added
//! or removed after the wrapped module has gone into a `Sequential`.
//!
//! ```
//! use kiln_core::{DType, Tensor};
//! use kiln_nn::{Forward, Hooked, Linear};
//! let fc = Hooked::new(Linear::new(4, 2)?);
//! let handle = fc.register_forward_hook(|_fc, _input, output| Ok(Some(output.relu()?)));
//! let y = fc.forward(&Tensor::randn([3, 4], DType::F32)?)?;
//! assert!(y.to_vec::<f32>()?.iter().all(|&v| v >= 0.0));
//! handle.remove();
//! # Ok::<(), kiln_core::Error>(())
//! ```

use crate::module::Phase;
use crate::module::{Forward, Module, Visitor, VisitorMut};
use crate::state_dict::{IncompatibleKeys, StateDict};
use kiln_core::autograd::{is_grad_enabled, Node, NodeBase};
use kiln_core::{Error, Result, Tensor};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// `hook(module, input)`: `Some(x)` replaces the input.
pub type ForwardPreHook<M> = Arc<dyn Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// `hook(module, input, output)`: `Some(y)` replaces the output.
pub type ForwardHook<M> = Arc<dyn Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// `hook(grad_output)`: `Some(grads)` (as many) replaces the gradients of the outputs.
pub type BackwardPreHook =
    Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
/// `hook(grad_input, grad_output)`: `Some(grads)` (as many) replaces the gradients of the
/// inputs.
pub type BackwardHook = Arc<
    dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
        + Send
        + Sync,
>;

/// `hook(module, prefix)`, before `state_dict()` collects the module's tensors.
pub type StateDictPreHook<M> = Arc<dyn Fn(&M, &str) + Send + Sync>;
/// `hook(module, state_dict, prefix)`, after `state_dict()` collected the module's tensors
/// (and its children's): may edit the dict.
pub type StateDictPostHook<M> = Arc<dyn Fn(&M, &mut StateDict, &str) + Send + Sync>;
/// `hook(module, state_dict, prefix)`, before `load_state_dict` checks or writes anything:
/// may edit (a copy of) the dict being loaded.
pub type LoadStateDictPreHook<M> =
    Arc<dyn Fn(&M, &mut StateDict, &str) -> Result<()> + Send + Sync>;
/// `hook(module, incompatible_keys)`, after `load_state_dict` wrote the values: may edit
/// the keys left unmatched (a strict load fails only on those left).
pub type LoadStateDictPostHook<M> =
    Arc<dyn Fn(&M, &mut IncompatibleKeys) -> Result<()> + Send + Sync>;

/// One registered hook.
enum Entry<M> {
    ForwardPre(ForwardPreHook<M>),
    Forward(ForwardHook<M>),
    BackwardPre(BackwardPreHook),
    Backward(BackwardHook),
    StateDictPre(StateDictPreHook<M>),
    StateDictPost(StateDictPostHook<M>),
    LoadPre(LoadStateDictPreHook<M>),
    LoadPost(LoadStateDictPostHook<M>),
}

impl<M> Clone for Entry<M> {
    fn clone(&self) -> Self {
        match self {
            Entry::ForwardPre(h) => Entry::ForwardPre(h.clone()),
            Entry::Forward(h) => Entry::Forward(h.clone()),
            Entry::BackwardPre(h) => Entry::BackwardPre(h.clone()),
            Entry::Backward(h) => Entry::Backward(h.clone()),
            Entry::StateDictPre(h) => Entry::StateDictPre(h.clone()),
            Entry::StateDictPost(h) => Entry::StateDictPost(h.clone()),
            Entry::LoadPre(h) => Entry::LoadPre(h.clone()),
            Entry::LoadPost(h) => Entry::LoadPost(h.clone()),
        }
    }
}

/// The hooks of one module, by id, in registration order.
struct Table<M> {
    entries: Mutex<Vec<(u64, Entry<M>)>>,
}

impl<M> Table<M> {
    fn lock(&self) -> MutexGuard<'_, Vec<(u64, Entry<M>)>> {
        // A panicking hook cannot leave the list half-updated (pushes and retains only).
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What a [`RemovableHandle`] removes from.
trait RemoveById: Send + Sync {
    fn remove(&self, id: u64);
}

impl<M> RemoveById for Table<M> {
    fn remove(&self, id: u64) {
        self.lock().retain(|(i, _)| *i != id);
    }
}

/// Removes a hook (PyTorch's `RemovableHandle`). Dropping the handle keeps the hook.
pub struct RemovableHandle {
    table: Weak<dyn RemoveById>,
    id: u64,
}

impl RemovableHandle {
    /// Unregisters the hook; a no-op once it is removed or its module is gone.
    pub fn remove(&self) {
        if let Some(t) = self.table.upgrade() {
            t.remove(self.id);
        }
    }
}

impl std::fmt::Debug for RemovableHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemovableHandle({})", self.id)
    }
}

/// A shared handle to a module's hook table: registering through any clone adds to the
/// same module's hooks.
pub struct Hooks<M> {
    table: Arc<Table<M>>,
}

impl<M> Clone for Hooks<M> {
    fn clone(&self) -> Self {
        Hooks {
            table: self.table.clone(),
        }
    }
}

impl<M> Default for Hooks<M> {
    fn default() -> Self {
        Hooks {
            table: Arc::new(Table {
                entries: Mutex::new(Vec::new()),
            }),
        }
    }
}

impl<M: 'static> Hooks<M> {
    fn add(&self, entry: Entry<M>) -> RemovableHandle {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        self.table.lock().push((id, entry));
        let table: Arc<dyn RemoveById> = self.table.clone();
        RemovableHandle {
            table: Arc::downgrade(&table),
            id,
        }
    }

    /// Registers `hook(module, input)`, run before `forward`; `Some(x)` replaces the input.
    pub fn register_forward_pre_hook(
        &self,
        hook: impl Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::ForwardPre(Arc::new(hook)))
    }

    /// Registers `hook(module, input, output)`, run after `forward`; `Some(y)` replaces
    /// the output.
    pub fn register_forward_hook(
        &self,
        hook: impl Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::Forward(Arc::new(hook)))
    }

    /// Registers `hook(grad_output)`, run in backward when the gradients of the module's
    /// outputs are known, before the module's own backward; `Some(grads)` replaces them.
    pub fn register_full_backward_pre_hook(
        &self,
        hook: impl Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::BackwardPre(Arc::new(hook)))
    }

    /// Registers `hook(grad_input, grad_output)`, run in backward once the gradients of the
    /// module's inputs are computed; `Some(grads)` replaces `grad_input`.
    pub fn register_full_backward_hook(
        &self,
        hook: impl Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
            + Send
            + Sync
            + 'static,
    ) -> RemovableHandle {
        self.add(Entry::Backward(Arc::new(hook)))
    }

    /// Registers `hook(module, prefix)`, run by `state_dict()` before it collects this
    /// module's tensors (PyTorch's `register_state_dict_pre_hook`).
    pub fn register_state_dict_pre_hook(
        &self,
        hook: impl Fn(&M, &str) + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::StateDictPre(Arc::new(hook)))
    }

    /// Registers `hook(module, state_dict, prefix)`, run by `state_dict()` once this
    /// module's tensors and its children's are in the dict; it may edit the dict (PyTorch's
    /// `register_state_dict_post_hook`).
    pub fn register_state_dict_post_hook(
        &self,
        hook: impl Fn(&M, &mut StateDict, &str) + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::StateDictPost(Arc::new(hook)))
    }

    /// Registers `hook(module, state_dict, prefix)`, run by `load_state_dict` before it
    /// checks or writes anything; it may edit (a copy of) the dict, e.g. rename an old
    /// checkpoint's keys (PyTorch's `register_load_state_dict_pre_hook`).
    pub fn register_load_state_dict_pre_hook(
        &self,
        hook: impl Fn(&M, &mut StateDict, &str) -> Result<()> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::LoadPre(Arc::new(hook)))
    }

    /// Registers `hook(module, incompatible_keys)`, run by `load_state_dict` after it wrote
    /// the values; it may remove keys from the unmatched lists, and a strict load fails only
    /// on those left (PyTorch's `register_load_state_dict_post_hook`).
    pub fn register_load_state_dict_post_hook(
        &self,
        hook: impl Fn(&M, &mut IncompatibleKeys) -> Result<()> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.add(Entry::LoadPost(Arc::new(hook)))
    }
}

impl<M> Hooks<M> {
    fn snapshot(&self) -> Vec<Entry<M>> {
        self.table.lock().iter().map(|(_, e)| e.clone()).collect()
    }
}

/// A module with hooks (see the module doc): transparent to visitors, so its parameters keep
/// their names, and running its hooks around `forward`.
pub struct Hooked<M> {
    module: M,
    hooks: Hooks<M>,
}

impl<M> Hooked<M> {
    /// Wraps `module`, with no hooks yet.
    pub fn new(module: M) -> Self {
        Hooked {
            module,
            hooks: Hooks::default(),
        }
    }

    /// A handle to this module's hook table, to register or remove hooks after the module
    /// has moved (into a `Sequential`, say).
    pub fn hooks(&self) -> Hooks<M> {
        self.hooks.clone()
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.module
    }

    /// The wrapped module, mutably.
    pub fn inner_mut(&mut self) -> &mut M {
        &mut self.module
    }

    /// The wrapped module, its hooks dropped.
    pub fn into_inner(self) -> M {
        self.module
    }
}

impl<M: 'static> Hooked<M> {
    /// [`Hooks::register_forward_pre_hook`].
    pub fn register_forward_pre_hook(
        &self,
        hook: impl Fn(&M, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.hooks.register_forward_pre_hook(hook)
    }

    /// [`Hooks::register_forward_hook`].
    pub fn register_forward_hook(
        &self,
        hook: impl Fn(&M, &Tensor, &Tensor) -> Result<Option<Tensor>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.hooks.register_forward_hook(hook)
    }

    /// [`Hooks::register_full_backward_pre_hook`].
    pub fn register_full_backward_pre_hook(
        &self,
        hook: impl Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync + 'static,
    ) -> RemovableHandle {
        self.hooks.register_full_backward_pre_hook(hook)
    }

    /// [`Hooks::register_full_backward_hook`].
    pub fn register_full_backward_hook(
        &self,
        hook: impl Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>>
            + Send
            + Sync
            + 'static,
    ) -> RemovableHandle {
        self.hooks.register_full_backward_hook(hook)
    }
}

impl<M> std::ops::Deref for Hooked<M> {
    type Target = M;
    fn deref(&self) -> &M {
        &self.module
    }
}

impl<M> std::ops::DerefMut for Hooked<M> {
    fn deref_mut(&mut self) -> &mut M {
        &mut self.module
    }
}

impl<M: Module> Module for Hooked<M> {
    fn visit(&self, v: &mut dyn Visitor) {
        // Outside a state-dict walk, or with no hooks, this is the module's own visit.
        let entries = match v.state_dict_walk() {
            Some(_) => self.hooks.snapshot(),
            None => Vec::new(),
        };
        if let Some(w) = v.state_dict_walk().filter(|_| !entries.is_empty()) {
            let prefix = w.prefix();
            for e in &entries {
                match (w.phase, e) {
                    (Phase::Save, Entry::StateDictPre(h)) => h(&self.module, &prefix),
                    (Phase::LoadPre, Entry::LoadPre(h)) if w.error.is_none() => {
                        if let Err(e) = h(&self.module, &mut w.state, &prefix) {
                            w.fail(e);
                        }
                    }
                    (Phase::CountLoadPost, Entry::LoadPost(_)) => w.count += 1,
                    _ => {}
                }
            }
        }
        self.module.visit(v);
        if let Some(w) = v.state_dict_walk().filter(|_| !entries.is_empty()) {
            let prefix = w.prefix();
            for e in &entries {
                match (w.phase, e) {
                    (Phase::Save, Entry::StateDictPost(h)) => {
                        h(&self.module, &mut w.state, &prefix)
                    }
                    (Phase::LoadPost, Entry::LoadPost(h)) if w.error.is_none() => {
                        if let Err(e) = h(&self.module, &mut w.keys) {
                            w.fail(e);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        self.module.visit_mut(v)
    }
    fn type_name(&self) -> &'static str {
        self.module.type_name()
    }
    fn optional_state_keys(&self) -> &'static [&'static str] {
        self.module.optional_state_keys()
    }
}

impl<M: Forward> Forward for Hooked<M> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let entries = self.hooks.snapshot();
        let mut x = input.clone();
        for e in &entries {
            if let Entry::ForwardPre(h) = e {
                if let Some(new) = h(&self.module, &x)? {
                    x = new;
                }
            }
        }
        let backward = BackwardHookState::new(&entries);
        if let Some(b) = &backward {
            x = b.wrap_input(&x);
        }
        let mut y = self.module.forward(&x)?;
        for e in &entries {
            if let Entry::Forward(h) = e {
                if let Some(new) = h(&self.module, &x, &y)? {
                    y = new;
                }
            }
        }
        if let Some(b) = &backward {
            y = b.wrap_output(&y);
        }
        Ok(y)
    }
}

/// One forward call's backward hooks (PyTorch's `torch.utils.hooks.BackwardHook`): the
/// hooks it saw, whether its input got an identity node, and the output gradients the
/// output node passes to the input node.
struct BackwardHookState {
    pre_hooks: Vec<BackwardPreHook>,
    hooks: Vec<BackwardHook>,
    /// Whether the input required grad and went through an identity node.
    input_wrapped: Mutex<bool>,
    /// Set by the output node, taken by the input node.
    grad_outputs: Mutex<Option<Vec<Option<Tensor>>>>,
}

/// Which side of the module an identity node is on.
#[derive(Clone, Copy)]
enum Side {
    Input,
    Output,
}

impl BackwardHookState {
    /// The state for a forward call, when it has backward hooks to run and grad mode is on.
    fn new<M>(entries: &[Entry<M>]) -> Option<Arc<Self>> {
        let mut pre_hooks = Vec::new();
        let mut hooks = Vec::new();
        for e in entries {
            match e {
                Entry::BackwardPre(h) => pre_hooks.push(h.clone()),
                Entry::Backward(h) => hooks.push(h.clone()),
                _ => {}
            }
        }
        if (pre_hooks.is_empty() && hooks.is_empty()) || !is_grad_enabled() {
            return None;
        }
        Some(Arc::new(BackwardHookState {
            pre_hooks,
            hooks,
            input_wrapped: Mutex::new(false),
            grad_outputs: Mutex::new(None),
        }))
    }

    fn wrap_input(self: &Arc<Self>, x: &Tensor) -> Tensor {
        if !x.requires_grad() {
            return x.clone();
        }
        *lock(&self.input_wrapped) = true;
        self.wrap(x, Side::Input)
    }

    fn wrap_output(self: &Arc<Self>, y: &Tensor) -> Tensor {
        if !y.requires_grad() {
            return y.clone();
        }
        self.wrap(y, Side::Output)
    }

    /// `t` through an identity node on `side`.
    fn wrap(self: &Arc<Self>, t: &Tensor, side: Side) -> Tensor {
        let node: Arc<dyn Node> = Arc::new(BackwardHookFunctionBackward {
            base: NodeBase::new(&[Some(t)], &[t]),
            state: self.clone(),
            side,
        });
        let out = t.detach();
        out.set_grad_fn(node, 0);
        out
    }

    /// The output node's work: backward pre-hooks, then keep the grad_outputs for the input
    /// node, or, when the input has no node, run the backward hooks now.
    fn on_grad_output(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let mut grads = grads;
        for h in &self.pre_hooks {
            if let Some(new) = h(&grads)? {
                if new.len() != grads.len() {
                    return Err(Error::autograd(
                        "backward_pre_hook",
                        format!(
                            "Backward pre hook returned an invalid number of grad_output, got {}, but expected {}",
                            new.len(),
                            grads.len()
                        ),
                    ));
                }
                grads = new;
            }
        }
        if *lock(&self.input_wrapped) {
            *lock(&self.grad_outputs) = Some(grads.clone());
        } else {
            let grad_inputs = vec![None];
            for h in &self.hooks {
                if let Some(res) = h(&grad_inputs, &grads)? {
                    if res.iter().any(Option::is_some) {
                        return Err(Error::autograd(
                            "backward_hook",
                            "Backward hook for Modules where no input requires gradient should always return None or None for all gradients.",
                        ));
                    }
                }
            }
        }
        Ok(grads)
    }

    /// The input node's work: the backward hooks with `(grad_input, grad_output)`.
    fn on_grad_input(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // No grad_output: the gradient reached the input without passing through the
        // output (PyTorch skips the hooks then too).
        let Some(grad_outputs) = lock(&self.grad_outputs).take() else {
            return Ok(grads);
        };
        let mut grads = grads;
        for h in &self.hooks {
            if let Some(new) = h(&grads, &grad_outputs)? {
                if new.len() != grads.len() {
                    return Err(Error::autograd(
                        "backward_hook",
                        format!(
                            "Backward hook returned an invalid number of grad_input, got {}, but expected {}",
                            new.len(),
                            grads.len()
                        ),
                    ));
                }
                grads = new;
            }
        }
        Ok(grads)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The identity node wrapping a hooked module's input or output (PyTorch's
/// `BackwardHookFunctionBackward`): passes gradients through, running the hooks.
struct BackwardHookFunctionBackward {
    base: NodeBase,
    state: Arc<BackwardHookState>,
    side: Side,
}

impl Node for BackwardHookFunctionBackward {
    fn name(&self) -> &'static str {
        "BackwardHookFunctionBackward"
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let mut grads = grads;
        grads.resize(1, None);
        match self.side {
            Side::Output => self.state.on_grad_output(grads),
            Side::Input => self.state.on_grad_input(grads),
        }
    }
}
