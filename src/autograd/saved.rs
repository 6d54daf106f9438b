//! Tensors a node keeps for its backward formula, checked against in-place modification,
//! or handed to the saved-tensor hooks active when they were saved.

use super::saved_hooks::{self, Packed, SavedTensorHooks};
use super::{Edge, Node};
use crate::{Error, Result, Tensor};
use std::sync::{Arc, Mutex, Weak};

/// The tensor an in-place op writes, as the op's recording sees it.
#[derive(Clone, Copy)]
pub struct InplaceTarget<'a> {
    /// The op's `self`.
    pub tensor: &'a Tensor,
    /// Whether the op has already written it (recorded after the write, as on a tensor that
    /// is not a view) or is about to (on a view: recorded first, then written through).
    pub written: bool,
}

/// A tensor saved for backward, with the storage version at save time.
///
/// An op's own output is saved without its `grad_fn` (which is the saving node: keeping it
/// would be a reference cycle) and gets it back, through a weak pointer, when unpacked.
pub struct SavedTensor {
    data: Mutex<Option<Slot>>,
    version: u64,
    output_of: Option<(Weak<dyn Node>, usize)>,
    name: &'static str,
}

/// What a saved tensor keeps.
enum Slot {
    Tensor(Tensor),
    /// What the saved-tensor hooks' `pack` returned, the hooks to unpack it with, and where
    /// the tensor's gradients went (its edge, and whether that is a leaf's accumulator).
    Packed {
        packed: Packed,
        hooks: Arc<dyn SavedTensorHooks>,
        edge: Option<(Edge, bool)>,
    },
}

/// `t` as a slot: handed to the active hooks, if any. `own_output`: `t` is the saving op's
/// output, whose history is kept apart (`output_of`).
#[inline]
fn slot(t: &Tensor, own_output: bool) -> Slot {
    match saved_hooks::current() {
        None if own_output => Slot::Tensor(t.detach()),
        None => Slot::Tensor(t.clone()),
        Some(hooks) => {
            let edge = if own_output {
                None
            } else {
                t.gradient_edge().map(|e| (e, t.is_leaf()))
            };
            Slot::Packed {
                packed: saved_hooks::pack(hooks.as_ref(), t),
                hooks,
                edge,
            }
        }
    }
}

impl SavedTensor {
    /// Saves an input of the op.
    pub fn input(t: &Tensor, name: &'static str) -> Self {
        SavedTensor {
            data: Mutex::new(Some(slot(t, false))),
            version: t.version(),
            output_of: None,
            name,
        }
    }

    /// Saves an input of an op, which is in-place on `target` when that is given.
    ///
    /// An input sharing `target`'s storage (`y.mul_(&y)`, or a view of `y` or its base) was
    /// read before this very op overwrote it, so it is recorded at the version before the
    /// write: using it in backward then fails like any other in-place modification (as in
    /// PyTorch). It is saved without its history: its `grad_fn` (or its view base's) is
    /// about to become this op's node, and holding it would make the node own itself, a
    /// reference cycle that leaked the whole graph. (PyTorch's `SavedVariable` saves an op's
    /// own output the same way, see [`SavedTensor::output`].) Nothing is lost: its version
    /// never matches again, since the op's write moved it on, so it is never unpacked.
    pub fn input_beside(t: &Tensor, name: &'static str, target: Option<InplaceTarget<'_>>) -> Self {
        match target {
            Some(target) if target.tensor.shares_storage_with(t) => {
                let version = t.version();
                // Never unpacked (see above), so never handed to hooks either.
                SavedTensor {
                    data: Mutex::new(Some(Slot::Tensor(t.detach()))),
                    version: if target.written {
                        version.saturating_sub(1)
                    } else {
                        version
                    },
                    output_of: None,
                    name,
                }
            }
            _ => SavedTensor::input(t, name),
        }
    }

    /// Saves an output of the op (call before the output's `grad_fn` is set; the node it will
    /// be set to is passed as `node`).
    pub fn output(t: &Tensor, node: Weak<dyn Node>, output_nr: usize, name: &'static str) -> Self {
        SavedTensor {
            data: Mutex::new(Some(slot(t, true))),
            version: t.version(),
            output_of: Some((node, output_nr)),
            name,
        }
    }

    /// The saved tensor, or PyTorch's errors when it was freed or modified in place.
    pub fn unpack(&self, node_name: &str) -> Result<Tensor> {
        let guard = self.data.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            None => Err(Error::Autograd(
                "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=true if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.".into(),
            )),
            Some(Slot::Tensor(t)) => {
                if t.version() != self.version {
                    return Err(Error::Autograd(format!(
                        "one of the variables needed for gradient computation has been modified by an inplace operation: [{}{:?}] (saved as '{}' by {node_name}), which is output 0 of its node; it is at version {}; expected version {} instead.",
                        t.dtype().scalar_type_name(),
                        t.shape(),
                        self.name,
                        t.version(),
                        self.version
                    )));
                }
                Ok(self.with_history(t, None))
            }
            Some(Slot::Packed { packed, hooks, edge }) => {
                let t = hooks.unpack(packed)?;
                Ok(self.with_history(&t, Some(edge)))
            }
        }
    }

    /// A handle to `t` with the saved tensor's history: the saving op's node for its own
    /// output; for a packed tensor, the edge it had when saved (none: no history); else
    /// `t`'s own.
    fn with_history(&self, t: &Tensor, packed: Option<&Option<(Edge, bool)>>) -> Tensor {
        if let Some((node, nr)) = &self.output_of {
            let out = t.detach();
            if let Some(node) = node.upgrade() {
                out.set_grad_fn(node, *nr);
            }
            return out;
        }
        match packed {
            None => t.clone(),
            Some(None) => t.detach(),
            Some(Some((edge, leaf))) => t.detach().with_edge(edge.clone(), *leaf),
        }
    }

    /// Frees the tensor.
    pub fn release(&self) {
        *self.data.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
