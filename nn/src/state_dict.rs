//! `StateDict`: tensors by PyTorch's dotted names, in registration order, and what a
//! non-strict load left unmatched. Loading one into a module is the module's (a visitor in
//! `module.rs`, beside the ones that collect and convert its tensors).
//!
//! State-dict hooks (PyTorch's `register_state_dict_pre_hook`, `register_state_dict_post_hook`,
//! `register_load_state_dict_pre_hook`, `register_load_state_dict_post_hook`) are registered
//! on a [`crate::Hooked`] module. They run from the walks here: each is a [`Visitor`] that
//! offers a [`StateDictWalk`], and a hooked module's `visit` runs its hooks of the walk's
//! phase before its children are visited (pre-hooks) and after (post-hooks), with its
//! dotted prefix, so they run in PyTorch's order: parents' pre-hooks before children's,
//! children's post-hooks before parents'.

use crate::module::{TensorKind, Visitor};
use indexmap::IndexMap;
use kiln_core::{Error, Tensor};

/// An ordered map from dotted names (`encoder.layers.0.linear1.weight`) to tensors, like the
/// `OrderedDict` PyTorch's `state_dict()` returns.
#[derive(Clone, Default, Debug)]
pub struct StateDict(IndexMap<String, Tensor>);

impl StateDict {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn insert(&mut self, name: impl Into<String>, t: Tensor) -> Option<Tensor> {
        self.0.insert(name.into(), t)
    }
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.0.get(name)
    }
    pub fn remove(&mut self, name: &str) -> Option<Tensor> {
        self.0.shift_remove(name)
    }
    pub fn contains_key(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(|k| k.as_str())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<(String, Tensor)> for StateDict {
    fn from_iter<I: IntoIterator<Item = (String, Tensor)>>(iter: I) -> Self {
        StateDict(iter.into_iter().collect())
    }
}

impl IntoIterator for StateDict {
    type Item = (String, Tensor);
    type IntoIter = indexmap::map::IntoIter<String, Tensor>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// What a non-strict `load_state_dict` did not match (PyTorch's `_IncompatibleKeys`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IncompatibleKeys {
    pub missing_keys: Vec<String>,
    pub unexpected_keys: Vec<String>,
}

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
    path: Vec<String>,
    pub(crate) state: StateDict,
    pub(crate) keys: IncompatibleKeys,
    pub(crate) error: Option<Error>,
    pub(crate) count: usize,
}

impl StateDictWalk {
    fn new(phase: Phase, state: StateDict, keys: IncompatibleKeys) -> Self {
        StateDictWalk {
            phase,
            path: Vec::new(),
            state,
            keys,
            error: None,
            count: 0,
        }
    }

    /// The dotted prefix of the module being visited, with its trailing dot.
    pub(crate) fn prefix(&self) -> String {
        self.path.iter().map(|p| format!("{p}.")).collect()
    }

    pub(crate) fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }
}

impl Visitor for StateDictWalk {
    fn tensor(&mut self, name: &str, _: TensorKind, t: &Tensor) {
        if self.phase == Phase::Save {
            let key = format!("{}{name}", self.prefix());
            self.state.insert(key, t.clone());
        }
    }
    fn enter(&mut self, name: &str) {
        self.path.push(name.to_string());
    }
    fn leave(&mut self) {
        self.path.pop();
    }
    fn state_dict_walk(&mut self) -> Option<&mut StateDictWalk> {
        Some(self)
    }
}

/// `state_dict()` with the save hooks: every tensor under each of its names.
pub(crate) fn save(m: &(impl crate::Module + ?Sized)) -> StateDict {
    let mut w = StateDictWalk::new(Phase::Save, StateDict::new(), IncompatibleKeys::default());
    m.visit(&mut w);
    w.state
}

/// Runs the load pre-hooks on `state`, which they may edit (rename old keys, say).
pub(crate) fn load_pre(
    m: &(impl crate::Module + ?Sized),
    state: StateDict,
) -> kiln_core::Result<StateDict> {
    let mut w = StateDictWalk::new(Phase::LoadPre, state, IncompatibleKeys::default());
    m.visit(&mut w);
    match w.error {
        Some(e) => Err(e),
        None => Ok(w.state),
    }
}

/// Whether any module has load post-hooks.
pub(crate) fn has_load_post_hooks(m: &(impl crate::Module + ?Sized)) -> bool {
    let mut w = StateDictWalk::new(
        Phase::CountLoadPost,
        StateDict::new(),
        IncompatibleKeys::default(),
    );
    m.visit(&mut w);
    w.count > 0
}

/// Runs the load post-hooks on `keys`, which they may edit (excuse a missing key, say).
pub(crate) fn load_post(
    m: &(impl crate::Module + ?Sized),
    keys: IncompatibleKeys,
) -> kiln_core::Result<IncompatibleKeys> {
    let mut w = StateDictWalk::new(Phase::LoadPost, StateDict::new(), keys);
    m.visit(&mut w);
    match w.error {
        Some(e) => Err(e),
        None => Ok(w.keys),
    }
}
