//! `StateDict`: tensors by PyTorch's dotted names, in registration order; loading one into a
//! module with PyTorch's checks and messages.

use crate::module::{Module, Path, TensorKind, VisitorMut};
use indexmap::IndexMap;
use kiln_core::{no_grad, Error, Result, Tensor};

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

pub(crate) fn load_into<M: Module + ?Sized>(
    m: &mut M,
    state: &StateDict,
    strict: bool,
) -> Result<IncompatibleKeys> {
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
    let expected = m.state_dict();
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
    if strict {
        if !missing.is_empty() {
            errors.insert(
                0,
                format!("Missing key(s) in state_dict: {}.", quoted(&missing)),
            );
        }
        if !unexpected.is_empty() {
            let at = usize::from(!missing.is_empty());
            errors.insert(
                at,
                format!("Unexpected key(s) in state_dict: {}.", quoted(&unexpected)),
            );
        }
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
    Ok(IncompatibleKeys {
        missing_keys: load.missing,
        unexpected_keys: unexpected,
    })
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
