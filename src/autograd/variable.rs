//! The autograd side of `Tensor`: `requires_grad`, `grad`, `grad_fn`, `backward`, hooks.

use super::{engine, AccumulateGrad, Edge, Node};
use crate::{Error, Result, Tensor};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Tensor {
    /// True when ops on this tensor record history: a leaf marked by the user, or the output of
    /// a recorded op.
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.0.requires_grad.load(Ordering::Acquire)
    }

    /// Marks a leaf as requiring grad (PyTorch's `requires_grad_`); returns a handle to the
    /// same tensor, so it chains (`Tensor::randn(..)?.requires_grad_(true)?`) and works on a
    /// tensor held by reference (a parameter inside a module).
    ///
    /// ```
    /// let w = kiln::Tensor::from([1f64, 2.]).requires_grad_(true)?;
    /// assert!(w.requires_grad() && w.is_leaf());
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn requires_grad_(&self, requires_grad: bool) -> Result<Tensor> {
        {
            let mut m = self.meta();
            if m.grad_fn.is_some() {
                if !requires_grad {
                    return Err(Error::Autograd(
                        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().".into(),
                    ));
                }
                return Ok(self.clone());
            }
            if requires_grad && !self.dtype().is_floating_point() {
                return Err(Error::Autograd(format!(
                    "only Tensors of floating point dtype can require gradients (got {})",
                    self.dtype()
                )));
            }
            m.requires_grad = requires_grad;
            let flag = requires_grad || m.grad_fn.is_some();
            self.0.requires_grad.store(flag, Ordering::Release);
        }
        Ok(self.clone())
    }

    /// True for tensors not produced by a recorded op.
    pub fn is_leaf(&self) -> bool {
        !self.0.has_grad_fn.load(Ordering::Acquire)
    }

    /// The accumulated gradient of a leaf.
    pub fn grad(&self) -> Option<Tensor> {
        self.meta().grad.clone()
    }

    /// Replaces (or with `None`, clears) the accumulated gradient, which must match this
    /// tensor's shape and dtype (PyTorch's checks on assigning `.grad`).
    pub fn set_grad(&self, grad: Option<Tensor>) -> Result<()> {
        if let Some(g) = &grad {
            if g.is_same(self) {
                return Err(Error::Autograd(
                    "can't assign Variable as its own grad".into(),
                ));
            }
            if g.dtype() != self.dtype() {
                return Err(Error::Autograd(format!(
                    "attempting to assign a gradient with dtype '{}' to a tensor with dtype '{}'. Please ensure that the gradient and the tensor have the same dtype",
                    g.dtype(),
                    self.dtype()
                )));
            }
            if g.device() != self.device() {
                return Err(Error::Autograd(format!(
                    "attempting to assign a gradient with device '{}' to a tensor with device '{}'. Please ensure that the gradient and the tensor are on the same device",
                    g.device(),
                    self.device()
                )));
            }
            if g.shape() != self.shape() {
                return Err(Error::Autograd(format!(
                    "attempting to assign a gradient of size '{:?}' to a tensor of size '{:?}'. Please ensure that the gradient and the tensor are the same size",
                    g.shape(),
                    self.shape()
                )));
            }
        }
        self.meta().grad = grad;
        Ok(())
    }

    /// Clears `.grad` (PyTorch's `set_to_none=True` behaviour).
    pub fn zero_grad(&self) {
        self.meta().grad = None;
    }

    /// Marks this tensor as superseded: its owner (a module converted by `Module::to_dtype`
    /// or `Module::to_device`) now holds a converted copy instead, so an optimizer still
    /// holding this handle would update a tensor nothing uses. Optimizers check
    /// [`Tensor::is_superseded`] before stepping. PyTorch converts parameters in place
    /// (`param.data = ...`); kiln's tensors keep their dtype and storage for life (what
    /// lets every op read them without a lock), so conversion makes a new tensor and marks
    /// the old one.
    pub fn mark_superseded(&self) {
        self.meta().superseded = true;
    }

    /// True once [`Tensor::mark_superseded`] was called on this tensor (or a handle to it).
    pub fn is_superseded(&self) -> bool {
        self.meta().superseded
    }

    /// The node that produced this tensor.
    pub fn grad_fn(&self) -> Option<Arc<dyn Node>> {
        self.meta().grad_fn.clone()
    }

    /// Records that this tensor is output `output_nr` of `node`.
    // Inlined into each recorded op, where the node is still a thin pointer: called, the
    // `Arc<dyn Node>` was spilled across the lock as two words and read back as one, a
    // store-forwarding stall on every recorded op.
    #[inline]
    pub fn set_grad_fn(&self, node: Arc<dyn Node>, output_nr: usize) {
        let mut m = self.meta();
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
        self.0.has_grad_fn.store(true, Ordering::Release);
        self.0.requires_grad.store(true, Ordering::Release);
    }

    /// This tensor (a fresh handle, cut from any graph) made to send its gradients along
    /// `edge`: to a node's output, or with `leaf`, to a leaf's accumulator (so gradients
    /// reach that leaf's `.grad`). What a saved tensor unpacked through hooks gets, as
    /// PyTorch's `SavedVariable` gives the unpacked data the saved variable's `grad_fn` or
    /// grad accumulator.
    pub(crate) fn with_edge(self, edge: Edge, leaf: bool) -> Tensor {
        if leaf {
            // A fresh handle's cell is empty.
            let _ = self.0.accumulator.set(edge.node);
            self.meta().requires_grad = true;
            self.0.requires_grad.store(true, Ordering::Release);
        } else {
            self.set_grad_fn(edge.node, edge.input_nr);
        }
        self
    }

    /// A tensor sharing storage with this one but cut from the graph.
    pub fn detach(&self) -> Tensor {
        self.with_layout(self.layout().clone())
    }

    /// Where a gradient for this tensor must be sent, or `None` when it needs none.
    // Inlined into every recorded op: returned through memory, the edge was read back
    // before its stores had landed (a store-forwarding stall on each input).
    #[inline]
    pub fn gradient_edge(&self) -> Option<Edge> {
        if !self.requires_grad() {
            return None;
        }
        if !self.0.has_grad_fn.load(Ordering::Acquire) {
            // A leaf that requires grad: its accumulator, without the autograd lock.
            let acc = self
                .0
                .accumulator
                .get_or_init(|| Arc::new(AccumulateGrad::new(self)) as Arc<dyn Node>);
            return Some(Edge {
                node: acc.clone(),
                input_nr: 0,
            });
        }
        let m = self.meta();
        m.grad_fn.as_ref().map(|f| Edge {
            node: f.clone(),
            input_nr: m.output_nr,
        })
    }

    /// Registers a hook run on this tensor's gradient when it is computed; the hook may
    /// return a replacement.
    pub fn register_hook(
        &self,
        hook: impl Fn(&Tensor) -> Option<Tensor> + Send + Sync + 'static,
    ) -> Result<()> {
        let hook: super::Hook = Arc::new(hook);
        let (grad_fn, nr, requires) = {
            let m = self.meta();
            (m.grad_fn.clone(), m.output_nr, m.requires_grad)
        };
        match grad_fn {
            Some(f) => f.base().add_pre_hook(nr, hook),
            None if requires => self.meta().hooks.push(hook),
            None => {
                return Err(Error::Autograd(
                    "cannot register a hook on a tensor that doesn't require gradient".into(),
                ))
            }
        }
        Ok(())
    }

    /// Registers a hook run after a gradient has been accumulated into this leaf's `.grad`
    /// (PyTorch's `register_post_accumulate_grad_hook`): the hook gets the leaf, whose
    /// `grad()` holds the new sum. DistributedDataParallel launches its all-reduces from
    /// these. The handle removes it.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// let w = kiln::Tensor::from([1f64, 2.]).requires_grad_(true)?;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let s = seen.clone();
    /// w.register_post_accumulate_grad_hook(move |p| {
    ///     s.lock().unwrap().push(p.grad().unwrap().to_vec::<f64>().unwrap())
    /// })?;
    /// w.mul(&kiln::Tensor::from(3f64))?.sum()?.backward()?;
    /// assert_eq!(*seen.lock().unwrap(), vec![vec![3.0, 3.0]]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: impl Fn(&Tensor) + Send + Sync + 'static,
    ) -> Result<HookHandle> {
        let mut m = self.meta();
        if m.grad_fn.is_some() {
            return Err(Error::Autograd(
                "post accumulate grad hooks cannot be registered on non-leaf tensors".into(),
            ));
        }
        if !m.requires_grad {
            return Err(Error::Autograd(
                "cannot register a hook on a tensor that doesn't require gradient".into(),
            ));
        }
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        m.post_accumulate_hooks.push((id, Arc::new(hook)));
        Ok(HookHandle {
            tensor: Arc::downgrade(&self.0),
            id,
        })
    }

    /// Backpropagates from this scalar tensor (implicit gradient of one).
    ///
    /// ```
    /// let x = kiln::Tensor::from([1f64, 2., 3.]).requires_grad_(true)?;
    /// x.mul(&x)?.sum()?.backward()?;
    /// assert_eq!(x.grad().unwrap().to_vec::<f64>()?, vec![2., 4., 6.]);
    /// # Ok::<(), kiln::Error>(())
    /// ```
    pub fn backward(&self) -> Result<()> {
        self.backward_with(None, false, false)
    }

    /// Backpropagates with an explicit output gradient, `retain_graph` and `create_graph`.
    pub fn backward_with(
        &self,
        gradient: Option<&Tensor>,
        retain_graph: bool,
        create_graph: bool,
    ) -> Result<()> {
        engine::backward(
            std::slice::from_ref(self),
            &[gradient.cloned()],
            retain_graph || create_graph,
            create_graph,
        )
    }
}

/// Removes a post-accumulate-grad hook (PyTorch's `RemovableHandle`). Dropping the handle
/// keeps the hook.
#[derive(Debug)]
pub struct HookHandle {
    tensor: std::sync::Weak<crate::tensor::TensorImpl>,
    id: u64,
}

impl HookHandle {
    /// Unregisters the hook; a no-op once the tensor is gone or the hook removed.
    pub fn remove(&self) {
        if let Some(t) = self.tensor.upgrade() {
            Tensor(t)
                .meta()
                .post_accumulate_hooks
                .retain(|(id, _)| *id != self.id);
        }
    }
}
