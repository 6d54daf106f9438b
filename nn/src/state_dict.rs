//! `StateDict`: tensors by PyTorch's dotted names, in registration order, and what a
//! non-strict load left unmatched. Loading one into a module is the module's (a visitor in
//! `module.rs`, beside the ones that collect and convert its tensors, and the walks that run
//! state-dict hooks).

use indexmap::IndexMap;
use kiln_core::Tensor;

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
