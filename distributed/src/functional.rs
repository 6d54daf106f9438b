//! Collectives that autograd differentiates through (PyTorch's
//! `torch.distributed.nn.functional`): they return a new tensor instead of writing their
//! argument, and their backward runs the collective that carries each rank's gradient back
//! to the ranks whose values made the result.
//!
//! The gradient is that of the sum of every rank's loss, as data-parallel training needs:
//! the output of [`all_reduce`] feeds every rank's loss, so each rank's input gets the sum of
//! all the ranks' gradients. Every rank of the group must therefore run the backward pass
//! through the same collectives in the same order, as it ran the forward (a rank that skips
//! one leaves the others waiting until the group's timeout, when they fail).
//!
//! ```no_run
//! use kiln_distributed::{self as dist, functional, ReduceOp};
//! dist::init_process_group(dist::Backend::Mpi)?;
//! let x = kiln_core::Tensor::from([1.0f64, 2.0]).requires_grad_(true)?;
//! let y = functional::all_reduce(&x, ReduceOp::Sum, None)?; // sum over the ranks
//! y.sum()?.backward()?; // x.grad = world_size (each rank's loss saw x once)
//! # Ok::<(), kiln_core::Error>(())
//! ```

use crate::group::{default_group, ProcessGroup};
use crate::ReduceOp;
use kiln_core::autograd::{is_grad_enabled, Node, NodeBase};
use kiln_core::{no_grad, Error, Result, Tensor};
use std::sync::Arc;

/// `all_reduce(tensor, op, group)`: the reduction of every rank's `tensor`, as a new tensor
/// (on `group`, or the default group when `None`). Differentiable for `Sum` (the backward
/// all-reduces the incoming gradients with `Sum`) and `Avg` (with `Avg`); the other
/// reductions work without autograd and fail when `tensor` requires grad.
pub fn all_reduce(tensor: &Tensor, op: ReduceOp, group: Option<&ProcessGroup>) -> Result<Tensor> {
    let name = "all_reduce";
    let group = resolve(group)?;
    let records = records(tensor);
    if records && !matches!(op, ReduceOp::Sum | ReduceOp::Avg) {
        return Err(Error::not_implemented(
            name,
            format!(
                "the gradient of all_reduce with ReduceOp.{} is not implemented: use SUM or AVG, or detach the input",
                op.name()
            ),
        ));
    }
    let out = copy_of(tensor)?;
    group.all_reduce(&out, op)?;
    Ok(record(
        tensor,
        out,
        Collective::AllReduce(op),
        &group,
        records,
    ))
}

/// `all_gather(tensor, group)`: every rank's `tensor` stacked in rank order along a new
/// dim 0 (`[group size, *tensor.shape]`; `unbind(0)` gives PyTorch's tuple). Every rank's
/// tensor must have the same shape and dtype. The backward sums the incoming gradients over
/// the ranks and gives each rank its own block (a reduce-scatter).
pub fn all_gather(tensor: &Tensor, group: Option<&ProcessGroup>) -> Result<Tensor> {
    let group = resolve(group)?;
    let records = records(tensor);
    let input = copy_of(tensor)?;
    let mut shape = vec![group.size()];
    shape.extend_from_slice(tensor.shape());
    let out = Tensor::full_on(shape, 0, tensor.dtype(), tensor.device())?;
    group.all_gather_into_tensor(&out, &input)?;
    Ok(record(tensor, out, Collective::AllGather, &group, records))
}

/// `reduce_scatter(tensor, group)`: `tensor` holds one block per rank along dim 0
/// (`[group size, *block]`); the result is the sum over the ranks of block `rank`. The
/// backward all-gathers the incoming gradients.
pub fn reduce_scatter(tensor: &Tensor, group: Option<&ProcessGroup>) -> Result<Tensor> {
    let name = "reduce_scatter";
    let group = resolve(group)?;
    if tensor.dim() == 0 || tensor.shape()[0] != group.size() {
        return Err(Error::shape(
            name,
            format!(
                "expected the input's dim 0 to be the group size {}, got input of size {:?}",
                group.size(),
                tensor.shape()
            ),
        ));
    }
    let records = records(tensor);
    let input = copy_of(tensor)?;
    let out = Tensor::full_on(&tensor.shape()[1..], 0, tensor.dtype(), tensor.device())?;
    group.reduce_scatter_tensor(&out, &input, ReduceOp::Sum)?;
    Ok(record(
        tensor,
        out,
        Collective::ReduceScatter,
        &group,
        records,
    ))
}

fn resolve(group: Option<&ProcessGroup>) -> Result<ProcessGroup> {
    match group {
        Some(g) => Ok(g.clone()),
        None => default_group(),
    }
}

/// Whether a call on `t` goes into the graph.
fn records(t: &Tensor) -> bool {
    is_grad_enabled() && t.requires_grad()
}

/// A contiguous copy of `t` outside the graph, for a collective to write or read.
fn copy_of(t: &Tensor) -> Result<Tensor> {
    let _g = no_grad();
    let out = Tensor::full_on(t.shape(), 0, t.dtype(), t.device())?;
    out.copy_(t)?;
    Ok(out)
}

/// `out` as the result of `collective` on `input`, with its backward node when `records`.
fn record(
    input: &Tensor,
    out: Tensor,
    collective: Collective,
    group: &ProcessGroup,
    records: bool,
) -> Tensor {
    if records {
        let node = CollectiveBackward {
            base: NodeBase::new(&[Some(input)], &[&out]),
            collective,
            group: group.clone(),
        };
        out.set_grad_fn(Arc::new(node), 0);
    }
    out
}

/// The forward collective a node differentiates.
#[derive(Clone, Copy, Debug)]
enum Collective {
    AllReduce(ReduceOp),
    AllGather,
    ReduceScatter,
}

/// The backward of a differentiable collective: the adjoint collective on the incoming
/// gradient, itself differentiable (double backward, `create_graph`).
struct CollectiveBackward {
    base: NodeBase,
    collective: Collective,
    group: ProcessGroup,
}

impl Node for CollectiveBackward {
    fn name(&self) -> &'static str {
        match self.collective {
            Collective::AllReduce(_) => "AllReduceBackward",
            Collective::AllGather => "AllGatherBackward",
            Collective::ReduceScatter => "ReduceScatterBackward",
        }
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        // Every rank takes part in the collective, even one whose loss did not reach this
        // output: zeros stand in for its gradient.
        let grad = match grads.into_iter().next().flatten() {
            Some(g) => g,
            None => {
                let meta = self
                    .base
                    .output_metas
                    .first()
                    .expect("a collective's node records its one output");
                Tensor::full_on(&meta.shape[..], 0, meta.dtype, meta.device)?
            }
        };
        let g = Some(&self.group);
        let input_grad = match self.collective {
            Collective::AllReduce(op) => all_reduce(&grad, op, g)?,
            Collective::AllGather => reduce_scatter(&grad, g)?,
            Collective::ReduceScatter => all_gather(&grad, g)?,
        };
        Ok(vec![Some(input_grad)])
    }
}
