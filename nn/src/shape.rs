//! `Flatten`, `Unflatten`, `Identity`.

use crate::module::Forward;
use crate::Module;
use kiln_core::{Result, Tensor};

/// `nn.Flatten(start_dim=1, end_dim=-1)`: a view merging dims `start_dim..=end_dim`.
#[derive(Module, Clone, Copy, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Flatten {
    pub start_dim: i64,
    pub end_dim: i64,
}

impl Flatten {
    pub fn new(start_dim: i64, end_dim: i64) -> Self {
        Flatten { start_dim, end_dim }
    }
}

impl Default for Flatten {
    /// `Flatten()`: keeps the batch dim.
    fn default() -> Self {
        Flatten::new(1, -1)
    }
}

impl Forward for Flatten {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::flatten_with(input, self.start_dim, self.end_dim)
    }
}

/// `nn.Unflatten(dim, unflattened_size)`: splits `dim` into `unflattened_size` (one entry
/// may be -1).
#[derive(Module, Clone, Debug, PartialEq)]
#[module(crate = crate)]
pub struct Unflatten {
    pub dim: i64,
    pub unflattened_size: Vec<i64>,
}

impl Unflatten {
    pub fn new(dim: i64, unflattened_size: &[i64]) -> Self {
        Unflatten {
            dim,
            unflattened_size: unflattened_size.to_vec(),
        }
    }
}

impl Forward for Unflatten {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        kiln_core::unflatten(input, self.dim, &self.unflattened_size)
    }
}

/// `nn.Identity()`: returns its input (the same tensor, as PyTorch).
#[derive(Module, Clone, Copy, Debug, Default, PartialEq)]
#[module(crate = crate)]
pub struct Identity;

impl Forward for Identity {
    fn forward(&self, input: &Tensor) -> Result<Tensor> {
        Ok(input.clone())
    }
}
