//! The `Module` trait: a tree of named parameters, buffers and child modules, walked by
//! visitors. A layer (or `#[derive(Module)]`) writes the two `visit` methods; everything a
//! PyTorch user calls on a module (`named_parameters`, `state_dict`, `train`, `to`, …) is
//! built on them.

use crate::batch_norm_sync::BatchNormSync;
use crate::state_dict::{IncompatibleKeys, StateDict};
use kiln_core::{no_grad, DType, Device, Error, MemoryFormat, Result, Tensor};
use std::sync::Arc;

/// What a tensor in a module is: trained by an optimizer, or state that travels with the
/// module (running statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorKind {
    Parameter,
    Buffer,
}

/// Reads a module tree. `enter`/`leave` bracket a child's tensors so visitors can build
/// PyTorch's dotted names (`layers.0.weight`).
pub trait Visitor {
    fn tensor(&mut self, name: &str, kind: TensorKind, t: &Tensor);
    /// The module's `training` flag, when it has one.
    fn training(&mut self, _training: bool) {}
    /// A child module `name` is next; return false to skip its contents (the default walks
    /// into it, bracketed by `enter` / `leave`).
    fn child(&mut self, _name: &str, _m: &dyn Module) -> bool {
        true
    }
    fn enter(&mut self, _name: &str) {}
    fn leave(&mut self) {}
    /// The state dict being saved or loaded, when this walk is one: what a
    /// [`crate::Hooked`] module's state-dict hooks run on (the walks at the end of this file).
    fn state_dict_walk(&mut self) -> Option<&mut StateDictWalk> {
        None
    }
}

/// Rewrites a module tree: replaces tensors (`to`), flips `training`, plugs a statistics
/// synchroniser into batch norms (`convert_sync_batchnorm`).
pub trait VisitorMut {
    fn tensor(&mut self, name: &str, kind: TensorKind, t: &mut Tensor) -> Result<()>;
    fn training(&mut self, _training: &mut bool) {}
    /// A batch norm layer's synchroniser slot (see [`BatchNormSync`]).
    fn batch_norm_sync(&mut self, _sync: &mut Option<Arc<dyn BatchNormSync>>) {}
    fn enter(&mut self, _name: &str) {}
    fn leave(&mut self) {}
}

/// A module's forward pass for the common one-tensor-in, one-tensor-out case (what
/// `Sequential` chains). Layers with other signatures (LSTM, attention) have inherent
/// `forward` methods too.
pub trait Forward {
    fn forward(&self, input: &Tensor) -> Result<Tensor>;
}

/// PyTorch's `nn.Module`: the structure of a model. Derive it (`#[derive(Module)]`) or write
/// the two visit methods; the rest are provided.
pub trait Module {
    /// Calls `v` on every parameter, buffer and child, in declaration order.
    fn visit(&self, v: &mut dyn Visitor);
    /// As [`Module::visit`], with mutable access.
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()>;

    /// `(dotted name, parameter)` pairs, as `named_parameters()`: a tensor registered in
    /// several places (a head tied to an embedding) is listed once, under the first name it
    /// is reached by (PyTorch's `remove_duplicate=True`).
    fn named_parameters(&self) -> Vec<(String, Tensor)> {
        collect(self, Some(TensorKind::Parameter))
    }
    /// The parameters, as `parameters()` (clones share storage and `.grad`), each tensor
    /// once.
    fn parameters(&self) -> Vec<Tensor> {
        self.named_parameters()
            .into_iter()
            .map(|(_, t)| t)
            .collect()
    }
    /// `(dotted name, buffer)` pairs, as `named_buffers()`, each tensor once.
    fn named_buffers(&self) -> Vec<(String, Tensor)> {
        collect(self, Some(TensorKind::Buffer))
    }
    /// Parameters and buffers by dotted name (PyTorch's `state_dict()`), sharing storage with
    /// the module. A shared tensor appears under each of its names. State-dict hooks of
    /// [`crate::Hooked`] modules in the tree run as it is built.
    fn state_dict(&self) -> StateDict {
        save_state(self)
    }
    /// Copies `state` into the module's tensors in place (PyTorch's `load_state_dict`): shapes
    /// must match; dtypes are cast to the module's. With `strict`, missing or unexpected keys
    /// are an error; without, they are returned. Load pre-hooks of [`crate::Hooked`] modules
    /// may edit (a copy of) `state` first, and load post-hooks the keys left unmatched: a
    /// strict load then fails only on the keys the hooks leave, after writing the values,
    /// as in PyTorch (without post-hooks, a strict load that fails writes nothing).
    fn load_state_dict(&mut self, state: &StateDict, strict: bool) -> Result<IncompatibleKeys> {
        load_into(self, state, strict)
    }
    /// Sets training mode on this module and every child (`train(mode)`).
    fn train(&mut self, mode: bool) {
        struct SetMode(bool);
        impl VisitorMut for SetMode {
            fn tensor(&mut self, _: &str, _: TensorKind, _: &mut Tensor) -> Result<()> {
                Ok(())
            }
            fn training(&mut self, t: &mut bool) {
                *t = self.0;
            }
        }
        // Flipping flags cannot fail.
        let _ = self.visit_mut(&mut SetMode(mode));
    }
    /// `train(false)`.
    fn eval(&mut self) {
        self.train(false)
    }
    /// Whether the module is in training mode: true unless a layer in it says otherwise
    /// (modules start in training mode, as in PyTorch).
    fn is_training(&self) -> bool {
        struct Mode(bool);
        impl Visitor for Mode {
            fn tensor(&mut self, _: &str, _: TensorKind, _: &Tensor) {}
            fn training(&mut self, t: bool) {
                self.0 &= t;
            }
        }
        let mut m = Mode(true);
        self.visit(&mut m);
        m.0
    }
    /// Clears every parameter's `.grad` (`zero_grad(set_to_none=True)`).
    fn zero_grad(&self) {
        for p in self.parameters() {
            let _ = p.set_grad(None);
        }
    }
    /// Moves every parameter and buffer to `device` (`module.to(device)`). Parameters stay
    /// leaves that require grad, and a parameter registered in several places stays one
    /// tensor. Build optimizers after moving: the old parameters are marked
    /// ([`Tensor::is_superseded`]) and an optimizer still holding them fails to step.
    fn to_device(&mut self, device: Device) -> Result<()> {
        convert(self, |t| t.to_device(device))
    }
    /// Moves every parameter and buffer to `device` without copying their values (PyTorch's
    /// `module.to_empty(device=...)`): new zero-filled tensors of the same shapes and dtypes.
    /// With the meta device, build a model without memory, then `to_empty(Device::Cpu)` and
    /// initialise or load a checkpoint into it.
    fn to_empty(&mut self, device: Device) -> Result<()> {
        convert(self, |t| Tensor::empty_on(t.shape(), t.dtype(), device))
    }
    /// Casts floating-point parameters and buffers to `dtype` (`module.to(dtype)`); integer
    /// buffers (`num_batches_tracked`) keep theirs, as in PyTorch. As with
    /// [`Module::to_device`], build optimizers after converting.
    fn to_dtype(&mut self, dtype: DType) -> Result<()> {
        if !dtype.is_floating_point() {
            return Err(Error::dtype(
                "Module.to",
                format!("nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype}"),
            ));
        }
        convert(self, |t| {
            if t.is_floating_point() {
                t.to_dtype(dtype)
            } else {
                Ok(t.clone())
            }
        })
    }
    /// Lays out every 4-d and 5-d parameter and buffer in `format` where the format
    /// applies to its rank (`module.to(memory_format=torch.channels_last)` converts the
    /// 4-d ones), others left as they are. Convolutions then keep channels-last
    /// activations channels-last. As with [`Module::to_device`], build optimizers after
    /// converting.
    fn to_memory_format(&mut self, format: MemoryFormat) -> Result<()> {
        convert(self, |t| {
            if matches!(t.dim(), 4 | 5) && format.dim_order(t.dim()).is_some() {
                t.to_memory_format(format)
            } else {
                Ok(t.clone())
            }
        })
    }
    /// The number of parameter elements, a shared parameter counted once.
    fn num_parameters(&self) -> usize {
        self.parameters().iter().map(|p| p.numel()).sum()
    }
    /// Calls `f` with each direct child and its name, in order (PyTorch's
    /// `named_children()`; a callback because children are borrowed from the walk).
    fn for_each_child(&self, f: &mut dyn FnMut(&str, &dyn Module)) {
        // A `Vec` of modules is not a module itself, so its elements are reported as
        // children named `field.i`; `enter` / `leave` only fire for such lists here.
        struct Children<'f> {
            f: &'f mut dyn FnMut(&str, &dyn Module),
            path: Path,
        }
        impl Visitor for Children<'_> {
            fn tensor(&mut self, _: &str, _: TensorKind, _: &Tensor) {}
            fn child(&mut self, name: &str, m: &dyn Module) -> bool {
                (self.f)(&self.path.join(name), m);
                false
            }
            fn enter(&mut self, name: &str) {
                self.path.push(name);
            }
            fn leave(&mut self) {
                self.path.pop();
            }
        }
        self.visit(&mut Children {
            f,
            path: Path::default(),
        });
    }
    /// The names of the direct children, in order (the keys of `named_children()`).
    fn children_names(&self) -> Vec<String> {
        let mut names = Vec::new();
        self.for_each_child(&mut |n, _| names.push(n.to_string()));
        names
    }
    /// Calls `f` with every module below this one and its dotted name, parents before their
    /// children (PyTorch's `named_modules()` without the root itself).
    fn for_each_module(&self, f: &mut dyn FnMut(&str, &dyn Module)) {
        fn walk(m: &dyn Module, prefix: &str, f: &mut dyn FnMut(&str, &dyn Module)) {
            m.for_each_child(&mut |name, child| {
                let full = if prefix.is_empty() {
                    name.to_string()
                } else {
                    format!("{prefix}.{name}")
                };
                f(&full, child);
                walk(child, &full, f);
            });
        }
        self.for_each_child(&mut |name, child| {
            f(name, child);
            walk(child, name, f);
        });
    }
    /// The Rust type of the module (for printing model structure).
    fn type_name(&self) -> &'static str {
        std::any::type_name::<Self>()
    }
    /// Names of this module's own tensors (not its children's) that `load_state_dict` lets
    /// a state dict leave out, keeping the module's current value there: what PyTorch's
    /// `_load_from_state_dict` overrides fill in. BatchNorm's `num_batches_tracked` is one
    /// (checkpoints written before PyTorch added it lack it). None by default.
    fn optional_state_keys(&self) -> &'static [&'static str] {
        &[]
    }
}

/// A dotted-name builder shared by the visitors here.
#[derive(Default)]
struct Path(Vec<String>);

impl Path {
    fn push(&mut self, name: &str) {
        self.0.push(name.to_string());
    }
    fn pop(&mut self) {
        self.0.pop();
    }
    fn join(&self, leaf: &str) -> String {
        let mut s = String::new();
        for p in &self.0 {
            s.push_str(p);
            s.push('.');
        }
        s.push_str(leaf);
        s
    }
}

fn collect<M: Module + ?Sized>(m: &M, kind: Option<TensorKind>) -> Vec<(String, Tensor)> {
    struct Collect {
        path: Path,
        kind: Option<TensorKind>,
        out: Vec<(String, Tensor)>,
    }
    impl Visitor for Collect {
        fn tensor(&mut self, name: &str, kind: TensorKind, t: &Tensor) {
            // `named_parameters` / `named_buffers` list a shared tensor once; `state_dict`
            // (kind `None`) keeps every name.
            let listed = self.kind.is_some() && self.out.iter().any(|(_, u)| u.is_same(t));
            if self.kind.is_none_or(|k| k == kind) && !listed {
                self.out.push((self.path.join(name), t.clone()));
            }
        }
        fn enter(&mut self, name: &str) {
            self.path.push(name);
        }
        fn leave(&mut self) {
            self.path.pop();
        }
    }
    let mut c = Collect {
        path: Path::default(),
        kind,
        out: Vec::new(),
    };
    m.visit(&mut c);
    c.out
}

/// Replaces every tensor with `f(tensor)`, keeping parameters leaves with their
/// `requires_grad`. A parameter registered in several places is converted once and stays
/// shared (PyTorch converts parameters in place, `param.data = ...`); buffers are replaced
/// one by one, as PyTorch's `_apply` does. A replaced parameter is marked superseded, so an
/// optimizer built before the conversion fails to step instead of updating a tensor the
/// model no longer uses.
fn convert<M: Module + ?Sized>(m: &mut M, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<()> {
    struct Convert<F> {
        f: F,
        /// `(old, new)` for each parameter replaced so far.
        done: Vec<(Tensor, Tensor)>,
    }
    impl<F: Fn(&Tensor) -> Result<Tensor>> VisitorMut for Convert<F> {
        fn tensor(&mut self, _: &str, kind: TensorKind, t: &mut Tensor) -> Result<()> {
            if kind == TensorKind::Parameter {
                if let Some((_, new)) = self.done.iter().find(|(old, _)| old.is_same(t)) {
                    *t = new.clone();
                    return Ok(());
                }
            }
            let _g = no_grad();
            let converted = (self.f)(t)?;
            // A no-op conversion (already that dtype / device) keeps the tensor itself.
            if !converted.is_same(t) {
                let new = converted.detach();
                let rg = t.requires_grad();
                if rg {
                    new.requires_grad_(true)?;
                }
                if kind == TensorKind::Parameter {
                    t.mark_superseded();
                    self.done.push((t.clone(), new.clone()));
                }
                *t = new;
            }
            Ok(())
        }
    }
    m.visit_mut(&mut Convert {
        f,
        done: Vec::new(),
    })
}

/// Copies `state` into `m`'s tensors with PyTorch's checks and messages: every shape is
/// checked before anything is written, so a failed strict load leaves the module as it was.
fn load_into<M: Module + ?Sized>(
    m: &mut M,
    state: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys> {
    let state = &load_pre(m, state.clone())?;
    let post_hooks = has_load_post_hooks(m);
    struct Load<'a> {
        path: Path,
        state: &'a StateDict,
        optional: &'a [String],
        seen: Vec<String>,
        missing: Vec<String>,
        errors: Vec<String>,
    }
    impl VisitorMut for Load<'_> {
        fn tensor(&mut self, name: &str, _: TensorKind, t: &mut Tensor) -> Result<()> {
            let key = self.path.join(name);
            match self.state.get(&key) {
                None if self.optional.contains(&key) => {}
                None => self.missing.push(key),
                Some(src) => {
                    self.seen.push(key.clone());
                    if src.shape() != t.shape() {
                        self.errors.push(format!(
                            "size mismatch for {key}: copying a param with shape {:?} from checkpoint, the shape in current model is {:?}.",
                            src.shape(),
                            t.shape()
                        ));
                    } else {
                        let _g = no_grad();
                        let src = src.to_device(t.device())?;
                        if let Err(e) = t.copy_(&src) {
                            self.errors.push(format!(
                                "While copying the parameter named \"{key}\", an exception occurred: {e}"
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
        fn enter(&mut self, name: &str) {
            self.path.push(name);
        }
        fn leave(&mut self) {
            self.path.pop();
        }
    }
    // Check every shape before writing anything, so a failed strict load leaves the module
    // as it was.
    let expected: StateDict = collect(m, None).into_iter().collect();
    let mut errors = Vec::new();
    for (k, t) in expected.iter() {
        if let Some(src) = state.get(k) {
            if src.shape() != t.shape() {
                errors.push(format!(
                    "size mismatch for {k}: copying a param with shape {:?} from checkpoint, the shape in current model is {:?}.",
                    src.shape(),
                    t.shape()
                ));
            }
        }
    }
    // Keys a module lets a state dict leave out (its `optional_state_keys`), by full name.
    let mut optional: Vec<String> = m
        .optional_state_keys()
        .iter()
        .map(|k| k.to_string())
        .collect();
    m.for_each_module(&mut |prefix, child| {
        optional.extend(
            child
                .optional_state_keys()
                .iter()
                .map(|k| format!("{prefix}.{k}")),
        )
    });
    let missing: Vec<String> = expected
        .keys()
        .filter(|k| !state.contains_key(k) && !optional.iter().any(|o| o == k))
        .map(String::from)
        .collect();
    let unexpected: Vec<String> = state
        .keys()
        .filter(|k| !expected.contains_key(k))
        .map(String::from)
        .collect();
    if strict && !post_hooks {
        key_errors(&mut errors, &missing, &unexpected);
    }
    if !errors.is_empty() {
        return Err(load_error(errors));
    }
    let mut load = Load {
        path: Path::default(),
        state,
        optional: &optional,
        seen: Vec::new(),
        missing: Vec::new(),
        errors: Vec::new(),
    };
    m.visit_mut(&mut load)?;
    if !load.errors.is_empty() {
        return Err(load_error(load.errors));
    }
    let keys = IncompatibleKeys {
        missing_keys: load.missing,
        unexpected_keys: unexpected,
    };
    if !post_hooks {
        return Ok(keys);
    }
    let keys = load_post(m, keys)?;
    if strict {
        let mut errors = Vec::new();
        key_errors(&mut errors, &keys.missing_keys, &keys.unexpected_keys);
        if !errors.is_empty() {
            return Err(load_error(errors));
        }
    }
    Ok(keys)
}

/// PyTorch's strict-load messages for missing and unexpected keys, put first.
fn key_errors(errors: &mut Vec<String>, missing: &[String], unexpected: &[String]) {
    if !missing.is_empty() {
        errors.insert(
            0,
            format!("Missing key(s) in state_dict: {}.", quoted(missing)),
        );
    }
    if !unexpected.is_empty() {
        let at = usize::from(!missing.is_empty());
        errors.insert(
            at,
            format!("Unexpected key(s) in state_dict: {}.", quoted(unexpected)),
        );
    }
}

fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("\"{k}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn load_error(errors: Vec<String>) -> Error {
    Error::value(
        "load_state_dict",
        format!("Error(s) in loading state_dict:\n\t{}", errors.join("\n\t")),
    )
}

/// How a field of a derived module is visited: tensors are parameters, modules are children,
/// `Option`s and `Vec`s of either are walked, plain data (`usize`, `f64`, `bool`, …) is
/// skipped. `#[module(skip)]` skips any other field; `#[module(buffer)]` makes a tensor a buffer.
pub trait ModuleField {
    fn visit_field(&self, name: &str, v: &mut dyn Visitor);
    fn visit_field_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()>;
}

impl<M: Module> ModuleField for M {
    fn visit_field(&self, name: &str, v: &mut dyn Visitor) {
        if v.child(name, self) {
            v.enter(name);
            self.visit(v);
            v.leave();
        }
    }
    fn visit_field_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        v.enter(name);
        let r = self.visit_mut(v);
        v.leave();
        r
    }
}

impl ModuleField for Tensor {
    fn visit_field(&self, name: &str, v: &mut dyn Visitor) {
        v.tensor(name, TensorKind::Parameter, self)
    }
    fn visit_field_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        v.tensor(name, TensorKind::Parameter, self)
    }
}

impl<T: ModuleField> ModuleField for Option<T> {
    fn visit_field(&self, name: &str, v: &mut dyn Visitor) {
        if let Some(x) = self {
            x.visit_field(name, v)
        }
    }
    fn visit_field_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        match self {
            Some(x) => x.visit_field_mut(name, v),
            None => Ok(()),
        }
    }
}

impl<T: ModuleField> ModuleField for Vec<T> {
    fn visit_field(&self, name: &str, v: &mut dyn Visitor) {
        v.enter(name);
        for (i, x) in self.iter().enumerate() {
            x.visit_field(&i.to_string(), v);
        }
        v.leave();
    }
    fn visit_field_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        v.enter(name);
        let mut r = Ok(());
        for (i, x) in self.iter_mut().enumerate() {
            r = x.visit_field_mut(&i.to_string(), v);
            if r.is_err() {
                break;
            }
        }
        v.leave();
        r
    }
}

macro_rules! plain_fields {
    ($($t:ty),*) => {$(
        impl ModuleField for $t {
            fn visit_field(&self, _: &str, _: &mut dyn Visitor) {}
            fn visit_field_mut(&mut self, _: &str, _: &mut dyn VisitorMut) -> Result<()> {
                Ok(())
            }
        }
    )*};
}
plain_fields!(
    bool, u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, String, DType, Device
);

/// Visits a buffer field (`#[module(buffer)]`): a `Tensor` or `Option<Tensor>`.
pub trait BufferField {
    fn visit_buffer(&self, name: &str, v: &mut dyn Visitor);
    fn visit_buffer_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()>;
}

impl BufferField for Tensor {
    fn visit_buffer(&self, name: &str, v: &mut dyn Visitor) {
        v.tensor(name, TensorKind::Buffer, self)
    }
    fn visit_buffer_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        v.tensor(name, TensorKind::Buffer, self)
    }
}

impl BufferField for Option<Tensor> {
    fn visit_buffer(&self, name: &str, v: &mut dyn Visitor) {
        if let Some(t) = self {
            v.tensor(name, TensorKind::Buffer, t)
        }
    }
    fn visit_buffer_mut(&mut self, name: &str, v: &mut dyn VisitorMut) -> Result<()> {
        match self {
            Some(t) => v.tensor(name, TensorKind::Buffer, t),
            None => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// State-dict walks: what runs the state-dict hooks. Here beside `Visitor` (which a walk is,
// and which offers it to a hooked module), not in `state_dict.rs`, so the two files do not
// import each other.
//
// State-dict hooks (PyTorch's `register_state_dict_pre_hook`, `register_state_dict_post_hook`,
// `register_load_state_dict_pre_hook`, `register_load_state_dict_post_hook`) are registered on
// a `Hooked` module. Each walk below is a `Visitor` that offers a `StateDictWalk`, and a hooked
// module's `visit` runs its hooks of the walk's phase before its children are visited
// (pre-hooks) and after (post-hooks), with its dotted prefix, so they run in PyTorch's order:
// parents' pre-hooks before children's, children's post-hooks before parents'.
// ---------------------------------------------------------------------------------------------

/// Which hooks a state-dict walk runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `state_dict()`: save pre-hooks, then the module's tensors, then save post-hooks.
    Save,
    /// `load_state_dict`, before anything is checked or written: load pre-hooks.
    LoadPre,
    /// `load_state_dict`, after the values are written: load post-hooks.
    LoadPost,
    /// Counting the modules with load post-hooks (a strict load with any writes before it
    /// checks the keys, so the hooks can excuse some, as in PyTorch).
    CountLoadPost,
}

/// What a hooked module sees of a state-dict walk: the phase, its dotted prefix (`"1.0."`,
/// `""` at the root), the state dict being saved or loaded, the keys a load left
/// unmatched, and the first error a hook returned.
pub struct StateDictWalk {
    pub(crate) phase: Phase,
    path: Path,
    pub(crate) state: StateDict,
    pub(crate) keys: IncompatibleKeys,
    pub(crate) error: Option<Error>,
    pub(crate) count: usize,
}

impl StateDictWalk {
    fn new(phase: Phase, state: StateDict, keys: IncompatibleKeys) -> Self {
        StateDictWalk {
            phase,
            path: Path::default(),
            state,
            keys,
            error: None,
            count: 0,
        }
    }

    /// The dotted prefix of the module being visited, with its trailing dot.
    pub(crate) fn prefix(&self) -> String {
        self.path.join("")
    }

    pub(crate) fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }
}

impl Visitor for StateDictWalk {
    fn tensor(&mut self, name: &str, _: TensorKind, t: &Tensor) {
        if self.phase == Phase::Save {
            self.state.insert(self.path.join(name), t.clone());
        }
    }
    fn enter(&mut self, name: &str) {
        self.path.push(name);
    }
    fn leave(&mut self) {
        self.path.pop();
    }
    fn state_dict_walk(&mut self) -> Option<&mut StateDictWalk> {
        Some(self)
    }
}

/// `state_dict()` with the save hooks: every tensor under each of its names.
fn save_state(m: &(impl Module + ?Sized)) -> StateDict {
    let mut w = StateDictWalk::new(Phase::Save, StateDict::new(), IncompatibleKeys::default());
    m.visit(&mut w);
    w.state
}

/// Runs the load pre-hooks on `state`, which they may edit (rename old keys, say).
fn load_pre(m: &(impl Module + ?Sized), state: StateDict) -> Result<StateDict> {
    let mut w = StateDictWalk::new(Phase::LoadPre, state, IncompatibleKeys::default());
    m.visit(&mut w);
    match w.error {
        Some(e) => Err(e),
        None => Ok(w.state),
    }
}

/// Whether any module has load post-hooks.
fn has_load_post_hooks(m: &(impl Module + ?Sized)) -> bool {
    let mut w = StateDictWalk::new(
        Phase::CountLoadPost,
        StateDict::new(),
        IncompatibleKeys::default(),
    );
    m.visit(&mut w);
    w.count > 0
}

/// Runs the load post-hooks on `keys`, which they may edit (excuse a missing key, say).
fn load_post(m: &(impl Module + ?Sized), keys: IncompatibleKeys) -> Result<IncompatibleKeys> {
    let mut w = StateDictWalk::new(Phase::LoadPost, StateDict::new(), keys);
    m.visit(&mut w);
    match w.error {
        Some(e) => Err(e),
        None => Ok(w.keys),
    }
}
