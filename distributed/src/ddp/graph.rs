//! `find_unused_parameters`: which parameters the autograd graph of a forward's outputs
//! reaches (PyTorch's `Reducer::search_unused_parameters`).

use kiln_core::autograd::Node;
use kiln_core::Tensor;
use std::collections::HashSet;
use std::sync::Arc;

/// A node's identity: its address (nodes live as long as a graph or leaf holds them).
pub(crate) fn node_id(node: &Arc<dyn Node>) -> usize {
    Arc::as_ptr(node) as *const () as usize
}

/// The ids of every node reachable from `outputs` through `next_functions`, the outputs'
/// own nodes included (a parameter returned as an output reaches its accumulator).
pub(crate) fn reachable_nodes(outputs: &[Tensor]) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let mut queue: Vec<Arc<dyn Node>> = Vec::new();
    for t in outputs {
        if let Some(edge) = t.gradient_edge() {
            if seen.insert(node_id(&edge.node)) {
                queue.push(edge.node);
            }
        }
    }
    while let Some(node) = queue.pop() {
        for (next, _) in node.next_functions().into_iter().flatten() {
            if seen.insert(node_id(&next)) {
                queue.push(next);
            }
        }
    }
    seen
}

/// The accumulator node of a leaf that requires grad (made on first use and kept for the
/// leaf's life, so its id names the leaf in any graph).
pub(crate) fn accumulator_id(param: &Tensor) -> Option<usize> {
    param.gradient_edge().map(|e| node_id(&e.node))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_parameters_an_output_depends_on_are_reached() -> kiln_core::Result<()> {
        let a = Tensor::from([1f64, 2.]).requires_grad_(true)?;
        let b = Tensor::from([3f64, 4.]).requires_grad_(true)?;
        let unused = Tensor::from([5f64]).requires_grad_(true)?;
        let out = a.mul(&b)?.sum()?;
        let seen = reachable_nodes(&[out]);
        assert!(seen.contains(&accumulator_id(&a).unwrap()));
        assert!(seen.contains(&accumulator_id(&b).unwrap()));
        assert!(!seen.contains(&accumulator_id(&unused).unwrap()));
        Ok(())
    }

    #[test]
    fn a_parameter_returned_as_output_is_reached() -> kiln_core::Result<()> {
        let a = Tensor::from([1f64]).requires_grad_(true)?;
        let seen = reachable_nodes(std::slice::from_ref(&a));
        assert!(seen.contains(&accumulator_id(&a).unwrap()));
        Ok(())
    }
}
