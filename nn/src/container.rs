//! Containers: `Sequential`, `ModuleList`, `ModuleDict`. Children are named `0`, `1`, … (or
//! by their keys), as PyTorch names them.

use crate::module::{Forward, Module, ModuleField, Visitor, VisitorMut};
use kiln_core::{Result, Tensor};

/// A module with a one-tensor forward: what `Sequential` holds.
pub trait Layer: Module + Forward {}
impl<T: Module + Forward> Layer for T {}

impl Module for Box<dyn Layer> {
    fn visit(&self, v: &mut dyn Visitor) {
        (**self).visit(v)
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        (**self).visit_mut(v)
    }
    fn type_name(&self) -> &'static str {
        (**self).type_name()
    }
    fn optional_state_keys(&self) -> &'static [&'static str] {
        (**self).optional_state_keys()
    }
}

impl Forward for Box<dyn Layer> {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        (**self).forward(input)
    }
}

/// Layers applied in order (`nn.Sequential`).
///
/// ```
/// use kiln_nn::{Forward, Linear, Sequential};
/// let net = Sequential::new().add(Linear::new(4, 8)?).add(Linear::new(8, 2)?);
/// assert_eq!(net.forward(&kiln_core::Tensor::ones(&[1, 4], kiln_core::DType::F32)?)?.shape(), &[1, 2]);
/// # Ok::<(), kiln_core::Error>(())
/// ```
#[derive(Default)]
pub struct Sequential {
    layers: Vec<Box<dyn Layer>>,
}

impl Sequential {
    pub fn new() -> Self {
        Self::default()
    }
    /// Appends a layer (builder form of `append`).
    #[allow(clippy::should_implement_trait)]
    pub fn add<L: Layer + 'static>(mut self, layer: L) -> Self {
        self.layers.push(Box::new(layer));
        self
    }
    /// Appends a layer.
    pub fn push<L: Layer + 'static>(&mut self, layer: L) {
        self.layers.push(Box::new(layer));
    }
    pub fn len(&self) -> usize {
        self.layers.len()
    }
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
    pub fn get(&self, i: usize) -> Option<&dyn Layer> {
        self.layers.get(i).map(|l| &**l)
    }
}

impl Module for Sequential {
    fn visit(&self, v: &mut dyn Visitor) {
        for (i, l) in self.layers.iter().enumerate() {
            l.visit_field(&i.to_string(), v);
        }
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        for (i, l) in self.layers.iter_mut().enumerate() {
            l.visit_field_mut(&i.to_string(), v)?;
        }
        Ok(())
    }
}

impl Forward for Sequential {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        let mut x = input.clone();
        for l in &self.layers {
            x = l.forward(&x)?;
        }
        Ok(x)
    }
}

/// Modules in a list (`nn.ModuleList`): children `0`, `1`, …; indexing and iteration
/// through `Deref` to the `Vec`.
pub struct ModuleList<M = Box<dyn Layer>>(pub Vec<M>);

impl<M> Default for ModuleList<M> {
    fn default() -> Self {
        ModuleList(Vec::new())
    }
}

impl<M> ModuleList<M> {
    pub fn new() -> Self {
        Self::default()
    }
}

impl<M> FromIterator<M> for ModuleList<M> {
    fn from_iter<I: IntoIterator<Item = M>>(iter: I) -> Self {
        ModuleList(iter.into_iter().collect())
    }
}

impl<M> std::ops::Deref for ModuleList<M> {
    type Target = Vec<M>;
    fn deref(&self) -> &Vec<M> {
        &self.0
    }
}

impl<M> std::ops::DerefMut for ModuleList<M> {
    fn deref_mut(&mut self) -> &mut Vec<M> {
        &mut self.0
    }
}

impl<M: Module> Module for ModuleList<M> {
    fn visit(&self, v: &mut dyn Visitor) {
        for (i, m) in self.0.iter().enumerate() {
            m.visit_field(&i.to_string(), v);
        }
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        for (i, m) in self.0.iter_mut().enumerate() {
            m.visit_field_mut(&i.to_string(), v)?;
        }
        Ok(())
    }
}

/// Modules by name, in insertion order (`nn.ModuleDict`).
pub struct ModuleDict<M = Box<dyn Layer>> {
    entries: Vec<(String, M)>,
}

impl<M> Default for ModuleDict<M> {
    fn default() -> Self {
        ModuleDict {
            entries: Vec::new(),
        }
    }
}

impl<M> ModuleDict<M> {
    pub fn new() -> Self {
        Self::default()
    }
    /// Inserts or replaces `name` (a replaced module keeps its position, as in PyTorch).
    pub fn insert(&mut self, name: impl Into<String>, m: M) {
        let name = name.into();
        match self.entries.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = m,
            None => self.entries.push((name, m)),
        }
    }
    pub fn get(&self, name: &str) -> Option<&M> {
        self.entries.iter().find(|(k, _)| k == name).map(|(_, m)| m)
    }
    pub fn get_mut(&mut self, name: &str) -> Option<&mut M> {
        self.entries
            .iter_mut()
            .find(|(k, _)| k == name)
            .map(|(_, m)| m)
    }
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(k, _)| k.as_str())
    }
    pub fn iter(&self) -> impl Iterator<Item = (&str, &M)> {
        self.entries.iter().map(|(k, m)| (k.as_str(), m))
    }
    pub fn len(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<M: Module> Module for ModuleDict<M> {
    fn visit(&self, v: &mut dyn Visitor) {
        for (k, m) in &self.entries {
            m.visit_field(k, v);
        }
    }
    fn visit_mut(&mut self, v: &mut dyn VisitorMut) -> Result<()> {
        for (k, m) in &mut self.entries {
            m.visit_field_mut(k, v)?;
        }
        Ok(())
    }
}
