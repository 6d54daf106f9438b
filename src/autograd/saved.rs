//! Tensors a node keeps for its backward formula, checked against in-place modification.

use super::Node;
use crate::{Error, Result, Tensor};
use std::sync::{Mutex, Weak};

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
    data: Mutex<Option<Tensor>>,
    version: u64,
    output_of: Option<(Weak<dyn Node>, usize)>,
    name: &'static str,
}

impl SavedTensor {
    /// Saves an input of the op.
    pub fn input(t: &Tensor, name: &'static str) -> Self {
        SavedTensor {
            data: Mutex::new(Some(t.clone())),
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
                SavedTensor {
                    data: Mutex::new(Some(t.detach())),
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
            data: Mutex::new(Some(t.detach())),
            version: t.version(),
            output_of: Some((node, output_nr)),
            name,
        }
    }

    /// The saved tensor, or PyTorch's errors when it was freed or modified in place.
    pub fn unpack(&self, node_name: &str) -> Result<Tensor> {
        let guard = self.data.lock().unwrap_or_else(|e| e.into_inner());
        let Some(t) = guard.as_ref() else {
            return Err(Error::Autograd(
                "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=true if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.".into(),
            ));
        };
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
        match &self.output_of {
            Some((node, nr)) => {
                let out = t.detach();
                if let Some(node) = node.upgrade() {
                    out.set_grad_fn(node, *nr);
                }
                Ok(out)
            }
            None => Ok(t.clone()),
        }
    }

    /// Frees the tensor.
    pub fn release(&self) {
        *self.data.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}
