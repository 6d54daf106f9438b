//! Gradients of indexing ops: `index_select`, `gather`, `scatter_reduce`, `masked_fill`.

use super::shaping::zeros_like_grad;
use crate::autograd::{Node, NodeBase};
use crate::{Result, Tensor};
use std::sync::Arc;

/// Backward of `index_select`: scatter the rows back.
pub fn index_select_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    zeros_like_grad(grad, sizes)?.index_add(dim, index, grad)
}

/// Backward of `gather`: scatter-add into zeros.
pub fn gather_backward(grad: &Tensor, sizes: &[usize], dim: i64, index: &Tensor) -> Result<Tensor> {
    zeros_like_grad(grad, sizes)?.scatter_add(dim, index, grad)
}

/// PyTorch's `DelayedError` node: passes no gradient on, failing with its message instead.
struct DelayedError {
    base: NodeBase,
    message: &'static str,
}

impl Node for DelayedError {
    fn name(&self) -> &'static str {
        "DelayedError"
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(&self, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(crate::Error::Autograd(self.message.to_string()))
    }
}

/// `t`'s values, whose backward fails with `message`: for a gradient that is right but
/// whose own derivative the formula that built it does not give.
fn delayed_error(t: &Tensor, message: &'static str) -> Tensor {
    if !t.requires_grad() {
        return t.clone();
    }
    let out = t.detach();
    out.set_grad_fn(
        Arc::new(DelayedError {
            base: NodeBase::new(&[Some(t)], &[&out]),
            message,
        }),
        0,
    );
    out
}

/// `src` cut down to the part `index` covers: scatter ops read no more of it.
fn covered(src: &Tensor, index: &Tensor) -> Result<Tensor> {
    let mut s = src.clone();
    if src.dim() == index.dim() {
        for (d, (&n, &k)) in src.shape().iter().zip(index.shape()).enumerate() {
            if k < n {
                s = s.narrow(d as i64, 0, k as i64)?;
            }
        }
    }
    Ok(s)
}

/// An index-shaped gradient for `src`, padded with zeros to `src`'s shape where `src` is
/// larger than the index (its uncovered elements do not reach the result).
fn pad_to(g: Tensor, sizes: &[usize]) -> Result<Tensor> {
    if g.shape() == sizes || g.dim() != sizes.len() {
        return Ok(g);
    }
    let pad: Vec<i64> = (0..sizes.len())
        .rev()
        .flat_map(|d| [0, (sizes[d] - g.shape()[d]) as i64])
        .collect();
    crate::pad(&g, &pad)
}

/// Backward of `scatter_reduce` with `mean`: the number of values averaged into each slot.
fn scatter_mean_count(
    grad: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    include_self: bool,
) -> Result<Tensor> {
    let start = if include_self {
        grad.ones_like()?
    } else {
        grad.zeros_like()?
    };
    let n = start.scatter_add(dim, index, &src.ones_like()?.to_dtype(grad.dtype())?)?;
    n.masked_fill(&n.eq_scalar(0)?, 1)
}

/// Backward of `scatter_reduce` with `amax`/`amin`: which elements of `self` and of `src`
/// equal their slot's result, and `grad` shared evenly among them.
fn scatter_extremum_split(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    result: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let value = result.gather(dim, index)?;
    let self_is = self_.eq(result)?.to_dtype(self_.dtype())?;
    let src_is = src.eq(&value)?.to_dtype(self_.dtype())?;
    let n = self_is.scatter_add(dim, index, &src_is)?;
    Ok((self_is, src_is, grad.div(&n)?))
}

fn unknown_reduce(reduce: &str) -> crate::Error {
    crate::Error::value(
        "scatter_reduce",
        format!(
            "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}."
        ),
    )
}

/// Backward of `scatter_reduce` for `self` (PyTorch's `scatter_reduce_backward`): `sum`
/// passes `grad`; `prod` multiplies it by the product of the other values (computed with
/// `self`'s zeros as ones, so a zero gets the product of the rest); `mean` divides it by
/// the count; `amax`/`amin` share it evenly among the values equal to the result. Without
/// `include_self`, `self` took no part at scattered positions and gets zero there.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward_self(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<Tensor> {
    if index.numel() == 0 {
        return Ok(grad.clone());
    }
    let src = covered(src, index)?;
    let g = match reduce {
        "sum" => grad.clone(),
        "prod" => {
            let masked_self = self_.masked_fill(&self_.eq_scalar(0)?, 1)?;
            let others = masked_self.scatter_reduce_with(dim, index, &src, "prod", include_self)?;
            grad.mul(&others)?.div(&masked_self)?
        }
        "mean" => grad.div(&scatter_mean_count(grad, dim, index, &src, include_self)?)?,
        "amax" | "amin" => {
            let (self_is, _, share) =
                scatter_extremum_split(grad, self_, dim, index, &src, result)?;
            self_is.mul(&share)?
        }
        other => return Err(unknown_reduce(other)),
    };
    if include_self {
        Ok(g)
    } else {
        g.scatter_value(dim, index, 0)
    }
}

/// Backward of `scatter_reduce` for `src` (PyTorch's `scatter_reduce_backward`), of the
/// index's shape and zero-padded to `src`'s. `prod` divides `grad * result` by the element,
/// except where the element is its slot's only zero of `src`: there it takes the product of
/// the others directly.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward_src(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<Tensor> {
    if index.numel() == 0 {
        return src.zeros_like()?.to_dtype(grad.dtype());
    }
    let part = covered(src, index)?;
    let g = match reduce {
        "sum" => grad.gather(dim, index)?,
        "prod" => {
            let zero = part.eq_scalar(0)?;
            let zeros_in_slot = self_
                .zeros_like()?
                .scatter_add(dim, index, &zero.to_dtype(self_.dtype())?)?
                .gather(dim, index)?;
            let single = zero.logical_and(&zeros_in_slot.eq_scalar(1)?)?;
            let others = self_.scatter_reduce_with(
                dim,
                index,
                &part.masked_fill(&single, 1)?,
                "prod",
                include_self,
            )?;
            let at_zero = grad.mul(&others)?.gather(dim, index)?;
            let elsewhere = grad
                .mul(result)?
                .gather(dim, index)?
                .div(&part.masked_fill(&zero, 1)?)?;
            let g = at_zero.where_cond(&single, &elsewhere)?;
            // With two zeros in a slot each one's gradient is 0 (right), but the formula's
            // own derivative misses their mixed term: PyTorch's DelayedError, which fails
            // only if a second backward reaches it.
            if crate::autograd::is_grad_enabled()
                && zeros_in_slot.gt_scalar(1)?.any()?.item::<bool>()?
            {
                delayed_error(
                    &g,
                    "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same position in self",
                )
            } else {
                g
            }
        }
        "mean" => {
            let n = scatter_mean_count(grad, dim, index, &part, include_self)?;
            grad.gather(dim, index)?.div(&n.gather(dim, index)?)?
        }
        "amax" | "amin" => {
            let (_, src_is, share) =
                scatter_extremum_split(grad, self_, dim, index, &part, result)?;
            src_is.mul(&share.gather(dim, index)?)?
        }
        other => return Err(unknown_reduce(other)),
    };
    pad_to(g, src.shape())
}

/// Backward of `masked_fill` for `self`: zero where the mask filled.
pub fn masked_fill_backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    grad.masked_fill(mask, 0)
}
