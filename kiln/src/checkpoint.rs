//! Checkpoints as safetensors files: a model's `state_dict()` (the same file
//! `safetensors.torch.save_file(model.state_dict(), path)` writes, and PyTorch reads back) and
//! an optimizer's state, whose tensors go in the file and hyper-parameters in its
//! `__metadata__` strings.
//!
//! ```no_run
//! use kiln::nn::{Linear, Module};
//! use kiln::optim::{Adam, AdamOptions, Optimizer};
//! let mut model = Linear::new(4, 2)?;
//! let mut opt = Adam::new(model.parameters(), AdamOptions::default())?;
//! kiln::checkpoint::save(&model.state_dict(), "model.safetensors")?;
//! kiln::checkpoint::save_optimizer(&opt.state_dict()?, "adam.safetensors")?;
//! model.load_state_dict(&kiln::checkpoint::load("model.safetensors")?, true)?;
//! opt.load_state_dict(&kiln::checkpoint::load_optimizer("adam.safetensors")?)?;
//! # Ok::<(), kiln::Error>(())
//! ```

use kiln_core::Result;
use kiln_data::safetensors::{self, Metadata};
use kiln_nn::StateDict;
use kiln_optim::OptimizerState;
use std::path::Path;

/// Writes a state dict to `path` (PyTorch's `safetensors.torch.save_file`).
pub fn save(state: &StateDict, path: impl AsRef<Path>) -> Result<()> {
    safetensors::save_file(state, path, None)
}

/// Reads a state dict from `path` (PyTorch's `safetensors.torch.load_file`); every header
/// field and offset is checked, so a truncated or hostile file is an `Err`.
pub fn load(path: impl AsRef<Path>) -> Result<StateDict> {
    safetensors::load_file(path)
}

/// Writes an optimizer's state: its tensors (`state.<i>.<name>`) and, as metadata, its
/// param groups' hyper-parameters.
pub fn save_optimizer(state: &OptimizerState, path: impl AsRef<Path>) -> Result<()> {
    let metadata: Metadata = state
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    safetensors::save_file(&state.tensors, path, Some(&metadata))
}

/// Reads an optimizer's state written by [`save_optimizer`], for `load_state_dict`.
pub fn load_optimizer(path: impl AsRef<Path>) -> Result<OptimizerState> {
    let (tensors, metadata) = safetensors::load_file_with_metadata(path)?;
    Ok(OptimizerState {
        tensors,
        metadata: metadata.unwrap_or_default().into_iter().collect(),
    })
}
