//! The backward pass: count dependencies from the roots, then run each node once all the
//! gradients flowing into it have arrived, reducing each gradient to its input's shape and
//! dtype before handing it on.

use super::{grad_mode::set_grad_enabled, Edge, Node, OutputMeta};
use crate::{Error, Result, Tensor};
use std::collections::HashMap;
use std::sync::Arc;

type Key = *const ();

fn key(n: &Arc<dyn Node>) -> Key {
    Arc::as_ptr(n) as *const ()
}

/// Adds `g` into slot `nr` of a node's input buffer.
fn accumulate(buf: &mut Vec<Option<Tensor>>, nr: usize, g: Tensor) -> Result<()> {
    if buf.len() <= nr {
        buf.resize(nr + 1, None);
    }
    buf[nr] = Some(match buf[nr].take() {
        Some(prev) => prev.add(&g)?,
        None => g,
    });
    Ok(())
}

/// Sums a broadcast gradient back to the shape of the tensor it is for (an output of the
/// node it flows into) and casts it to that tensor's dtype.
/// A 0-d gradient for an input on another device (a CPU scalar tensor used in a GPU op) is
/// moved there, as PyTorch's engine does; any other device mismatch is an error.
fn conform(g: Tensor, meta: &OutputMeta, index: usize) -> Result<Tensor> {
    let g = if g.shape() != meta.shape.as_slice() {
        g.sum_to_size(crate::ops::backward::i64s(&meta.shape))?
    } else {
        g
    };
    let g = if g.device() == meta.device {
        g
    } else if g.dim() == 0 {
        g.to_device(meta.device)?
    } else {
        return Err(Error::Autograd(format!(
            "invalid gradient at index {index} - expected device {} but got {}",
            meta.device,
            g.device()
        )));
    };
    if g.dtype() != meta.dtype {
        g.to_dtype(meta.dtype)
    } else {
        Ok(g)
    }
}

fn root_edges(roots: &[Tensor], grads: &[Option<Tensor>]) -> Result<Vec<(Edge, Tensor)>> {
    if roots.len() != grads.len() {
        return Err(Error::Autograd(format!(
            "grad_tensors should have the same length as tensors: got {} and {}",
            grads.len(),
            roots.len()
        )));
    }
    let mut out = Vec::with_capacity(roots.len());
    for (i, (r, g)) in roots.iter().zip(grads).enumerate() {
        let Some(edge) = r.gradient_edge() else {
            return Err(Error::Autograd(format!(
                "element {i} of tensors does not require grad and does not have a grad_fn"
            )));
        };
        let g = match g {
            Some(g) => {
                if g.shape() != r.shape() {
                    return Err(Error::Autograd(format!(
                        "Mismatch in shape: grad_output[{i}] has a shape of {:?} and output[{i}] has a shape of {:?}.",
                        g.shape(),
                        r.shape()
                    )));
                }
                g.clone()
            }
            None => {
                if r.numel() != 1 {
                    return Err(Error::Autograd(
                        "grad can be implicitly created only for scalar outputs".into(),
                    ));
                }
                r.ones_like()?
            }
        };
        out.push((edge, g));
    }
    Ok(out)
}

/// Walks the graph. With `captures`, gradients arriving at those (node, input) slots are
/// returned instead of being accumulated into leaves.
fn run(
    roots: Vec<(Edge, Tensor)>,
    keep_graph: bool,
    create_graph: bool,
    captures: Option<&[Option<Edge>]>,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = set_grad_enabled(create_graph);
    // Backward runs each op in the dtypes its forward recorded, never autocast.
    let _autocast = crate::amp::suspend_autocast();

    // Dependencies: how many edges from reachable nodes point at each node.
    let mut deps: HashMap<Key, usize> = HashMap::new();
    let mut stack: Vec<Arc<dyn Node>> = Vec::new();
    let mut seen: HashMap<Key, ()> = HashMap::new();
    for (e, _) in &roots {
        if seen.insert(key(&e.node), ()).is_none() {
            stack.push(e.node.clone());
        }
    }
    while let Some(n) = stack.pop() {
        for e in n.base().next_edges.iter().flatten() {
            *deps.entry(key(&e.node)).or_insert(0) += 1;
            if seen.insert(key(&e.node), ()).is_none() {
                stack.push(e.node.clone());
            }
        }
    }

    let mut buffers: HashMap<Key, Vec<Option<Tensor>>> = HashMap::new();
    let mut ready: Vec<Arc<dyn Node>> = Vec::new();
    for (e, g) in roots {
        accumulate(buffers.entry(key(&e.node)).or_default(), e.input_nr, g)?;
        if deps.get(&key(&e.node)).copied().unwrap_or(0) == 0
            && !ready.iter().any(|r| key(r) == key(&e.node))
        {
            ready.push(e.node.clone());
        }
    }

    let mut captured: Vec<Option<Tensor>> =
        captures.map(|c| vec![None; c.len()]).unwrap_or_default();
    while let Some(node) = ready.pop() {
        let mut buf = buffers.remove(&key(&node)).unwrap_or_default();
        node.base().run_pre_hooks(&mut buf)?;
        if let Some(caps) = captures {
            // A leaf's own hooks see its gradient before `grad()` returns it, as in PyTorch.
            if let (Some(leaf), Some(Some(g))) = (node.leaf(), buf.first().cloned()) {
                buf[0] = Some(super::AccumulateGrad::run_leaf_hooks(&leaf, g)?);
            }
            for (slot, cap) in caps.iter().enumerate() {
                if let Some(c) = cap {
                    if key(&c.node) == key(&node) {
                        captured[slot] = buf.get(c.input_nr).cloned().flatten();
                    }
                }
            }
            if node.leaf().is_some() {
                continue;
            }
        }
        let outs = node.apply(buf)?;
        if !keep_graph {
            node.release_variables();
        }
        let base = node.base();
        // Leaves that became ready run next (PyTorch gives AccumulateGrad the highest
        // priority): a gradient lands in `.grad` as soon as it is complete, so hooks on it
        // (DDP's bucket launches) fire early instead of after the depth-first walk of the
        // rest of the graph.
        let mut ready_leaves = Vec::new();
        for (i, edge) in base.next_edges.iter().enumerate() {
            let Some(e) = edge else { continue };
            if let Some(g) = outs.get(i).cloned().flatten() {
                let g = match e.node.output_meta(e.input_nr) {
                    Some(meta) => conform(g, &meta, i)?,
                    None => g,
                };
                accumulate(buffers.entry(key(&e.node)).or_default(), e.input_nr, g)?;
            }
            let d = deps
                .get_mut(&key(&e.node))
                .expect("counted during discovery");
            *d -= 1;
            if *d == 0 {
                if e.node.leaf().is_some() {
                    ready_leaves.push(e.node.clone());
                } else {
                    ready.push(e.node.clone());
                }
            }
        }
        ready.extend(ready_leaves);
    }
    Ok(captured)
}

/// Accumulates gradients of `roots` into the leaves' `.grad`.
pub fn backward(
    roots: &[Tensor],
    grads: &[Option<Tensor>],
    retain_graph: bool,
    create_graph: bool,
) -> Result<()> {
    run(root_edges(roots, grads)?, retain_graph, create_graph, None).map(|_| ())
}

/// Options for [`grad`] beyond outputs, inputs and output gradients.
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Keep saved tensors so the graph can be walked again.
    pub retain_graph: bool,
    /// Record the backward pass itself, for higher-order derivatives.
    pub create_graph: bool,
    /// Return `None` for inputs the outputs do not depend on instead of failing.
    pub allow_unused: bool,
}

/// Gradients of `outputs` with respect to `inputs` (PyTorch's `torch.autograd.grad`), without
/// touching any `.grad`.
///
/// ```
/// use kiln::autograd::{grad, GradOptions};
/// let x = kiln::Tensor::from([3f64]).requires_grad_(true)?;
/// let y = x.mul(&x)?.mul(&x)?;                        // x³
/// let opts = GradOptions { create_graph: true, ..Default::default() };
/// let dy = grad(&[y], &[x.clone()], &[None], opts)?;  // 3x² = 27
/// let d2y = grad(&[dy[0].clone().unwrap()], &[x], &[None], GradOptions::default())?; // 6x
/// assert_eq!(d2y[0].as_ref().unwrap().item::<f64>()?, 18.0);
/// # Ok::<(), kiln::Error>(())
/// ```
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: &[Option<Tensor>],
    opts: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    let grad_outputs: Vec<Option<Tensor>> = if grad_outputs.is_empty() {
        vec![None; outputs.len()]
    } else {
        grad_outputs.to_vec()
    };
    let mut captures = Vec::with_capacity(inputs.len());
    for (i, t) in inputs.iter().enumerate() {
        match t.gradient_edge() {
            Some(e) => captures.push(Some(e)),
            None => {
                return Err(Error::Autograd(format!(
                    "One of the differentiated Tensors (input {i}) does not require grad"
                )))
            }
        }
    }
    let roots = root_edges(outputs, &grad_outputs)?;
    let keep = opts.retain_graph || opts.create_graph;
    let got = run(roots, keep, opts.create_graph, Some(&captures))?;
    if !opts.allow_unused {
        if let Some(i) = got.iter().position(|g| g.is_none()) {
            return Err(Error::Autograd(format!(
                "One of the differentiated Tensors (input {i}) appears to not have been used in the graph. Set allow_unused=true if this is the desired behavior."
            )));
        }
    }
    Ok(got)
}
