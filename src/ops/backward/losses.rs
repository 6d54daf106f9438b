//! Gradients of losses: the derivatives of the loss backward kernels (double backward), and of
//! the float inputs PyTorch leaves without a gradient (loss weights, targets).

use super::shaping::reshape_to;
use crate::{DType, Result, Scalar, Tensor};

/// The number of terms a pointwise loss of `self` and `target` has (what a mean divides by).
fn loss_terms(self_sizes: &[usize], target_sizes: &[usize]) -> Result<usize> {
    kiln_kernels::layout::broadcast_shapes(self_sizes, target_sizes)
        .map(|s| kiln_kernels::cpu::loss::element_count(&s))
        .map_err(|m| crate::Error::op("backward", m))
}

/// `g`, divided by `n` for a mean (`reduction` 1).
fn mean_scaled(g: Tensor, reduction: i64, n: usize) -> Result<Tensor> {
    if reduction == 1 {
        g.div_scalar(n as f64)
    } else {
        Ok(g)
    }
}

/// `mse_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `2 g`, over the terms for a mean.
pub fn mse_loss_double_backward(
    g: &Tensor,
    self_sizes: &[usize],
    target_sizes: &[usize],
    reduction: i64,
) -> Result<Tensor> {
    mean_scaled(
        g.mul_scalar(2)?,
        reduction,
        loss_terms(self_sizes, target_sizes)?,
    )
}

/// `smooth_l1_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `g / beta` where `|x - t| < beta`, else 0; 0 for `beta = 0`.
pub fn smooth_l1_loss_double_backward(
    g: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
) -> Result<Tensor> {
    let d = input.sub(target)?;
    if beta == 0.0 {
        return g.mul(&d)?.zeros_like();
    }
    let inside = d.abs()?.lt_scalar(beta)?.to_dtype(g.dtype())?;
    let n = loss_terms(input.shape(), target.shape())?;
    mean_scaled(g.mul(&inside)?.div_scalar(beta)?, reduction, n)
}

/// `huber_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `g` where `|x - t| <= delta`, else 0.
pub fn huber_loss_double_backward(
    g: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
) -> Result<Tensor> {
    let inside = input
        .sub(target)?
        .abs()?
        .le_scalar(delta)?
        .to_dtype(g.dtype())?;
    let n = loss_terms(input.shape(), target.shape())?;
    mean_scaled(g.mul(&inside)?, reduction, n)
}

/// `binary_cross_entropy`'s derivative in `target`: `grad w (ln(1 - x) - ln x)`
/// (PyTorch's `-logit(x)`).
pub fn binary_cross_entropy_target_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let mut g = input.neg()?.log1p()?.sub(&input.log()?)?.mul(grad)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, target.numel())
}

/// `binary_cross_entropy`'s derivative in `weight`: each term without its weight, times
/// `grad`.
pub fn binary_cross_entropy_weight_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    let terms = crate::binary_cross_entropy_with(input, target, None, 0)?;
    mean_scaled(terms.mul(grad)?, reduction, input.numel())
}

/// `binary_cross_entropy_backward`'s derivative in `self`: its result is
/// `go w (x - t) / (x (1 - x))`, whose derivative in `x` is
/// `go w (x² - 2 x t + t) / (x (1 - x))²` (PyTorch's, with its `1e-12` guards).
pub fn binary_cross_entropy_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = kiln_kernels::cpu::loss::BCE_EPSILON;
    let numerator = input
        .mul(input)?
        .sub(&input.mul(target)?.mul_scalar(2)?)?
        .add(target)?;
    let (a, b) = (input.add_scalar(eps)?, input.neg()?.add_scalar(1.0 + eps)?);
    let denominator = a.mul(&a)?.mul(&b.mul(&b)?)?;
    let mut g = numerator.div(&denominator)?.mul(&grad.mul(grad_output)?)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, input.numel())
}

/// `binary_cross_entropy_backward`'s derivative in `target`:
/// `-grad go w / max(x (1 - x), 1e-12)`.
pub fn binary_cross_entropy_double_backward_target(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = kiln_kernels::cpu::loss::BCE_EPSILON;
    let denominator = input
        .neg()?
        .add_scalar(1)?
        .mul(input)?
        .clamp_with(Some(Scalar::Float(eps)), None)?;
    let mut g = grad.mul(grad_output)?.neg()?.div(&denominator)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, input.numel())
}

/// The targets with `ignore_index` replaced by class 0, and a float mask (in `dtype`) of
/// the targets kept.
fn nll_kept(target: &Tensor, ignore_index: i64, dtype: DType) -> Result<(Tensor, Tensor)> {
    let keep = target.ne_scalar(ignore_index)?;
    let safe = target.where_cond(&keep, &target.zeros_like()?)?;
    Ok((safe, keep.to_dtype(dtype)?))
}

/// `t`'s entry at each target's class: target-shaped.
fn nll_pick(t: &Tensor, safe: &Tensor) -> Result<Tensor> {
    let cd = crate::ops::losses::class_dim(t);
    t.gather(cd, &safe.unsqueeze(cd)?)?.squeeze_dim(cd)
}

/// Sums `coef` (target-shaped) into a tensor of `weight`'s shape, at each target's class.
fn nll_per_class(weight: &Tensor, safe: &Tensor, coef: &Tensor) -> Result<Tensor> {
    weight.zeros_like()?.to_dtype(coef.dtype())?.index_add(
        0,
        &safe.reshape([-1])?,
        &coef.reshape([-1])?,
    )
}

fn missing_weight() -> crate::Error {
    crate::Error::value(
        "backward",
        "kiln internal error: a weight gradient was asked of an nll_loss without weight",
    )
}

/// `nll_loss_forward`'s derivative in `self`: `nll_loss_backward` of the loss's gradient
/// (`total_weight`, the second output, does not depend on `self`).
pub fn nll_loss_forward_self_backward(
    grads: &[Option<Tensor>],
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    match grads.first().and_then(Option::as_ref) {
        Some(g) => crate::nll_loss_backward(
            g,
            input,
            target,
            weight,
            reduction,
            ignore_index,
            total_weight,
        ),
        None => input.zeros_like(),
    }
}

/// `nll_loss_forward`'s derivative in `weight`, from both outputs. With `p` the input at a
/// kept target's class and `g` the loss's gradient, class `c` collects over its targets:
/// `-g p` (per target for a batched `none`), `g (-p - output) / total_weight` for `mean`;
/// and `total_weight`'s gradient once per target (its sum of weights; it is 0, a constant,
/// for a batched `none`).
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_forward_weight_backward(
    grads: &[Option<Tensor>],
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let weight = weight.ok_or_else(missing_weight)?;
    let (safe, keep) = nll_kept(target, ignore_index, input.dtype())?;
    let mut coef = keep.zeros_like()?;
    if let Some(g) = grads.first().and_then(Option::as_ref) {
        let p = nll_pick(input, &safe)?;
        let per = if reduction == 1 {
            p.add(output)?.neg()?.mul(g)?.div(total_weight)?
        } else {
            p.mul(g)?.neg()?
        };
        coef = coef.add(&per)?;
    }
    let batched_none = reduction == 0 && input.dim() >= 2;
    if let (Some(gt), false) = (grads.get(1).and_then(Option::as_ref), batched_none) {
        coef = coef.add(gt)?;
    }
    nll_per_class(weight, &safe, &coef.mul(&keep)?)
}

/// `nll_loss_backward`'s derivative in `grad_output`: the result is linear in it, so the
/// same picking of `grad` at each kept target (`-w[t] grad`), per target for a batched
/// `none`, else summed (over `total_weight` for `mean`).
pub fn nll_loss_backward_grad_output_backward(
    grad: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    grad_output_sizes: &[usize],
) -> Result<Tensor> {
    let (per, _) = crate::nll_loss_forward(grad, target, weight, 0, ignore_index)?;
    let g = match reduction {
        0 => per,
        1 => per.sum()?.div(total_weight)?,
        _ => per.sum()?,
    };
    reshape_to(&g, grad_output_sizes)
}

/// `nll_loss_backward`'s derivative in `weight`: class `c` collects `-grad[t] go` over its
/// kept targets (over `total_weight` for `mean`), `grad[t]` being `grad` at the target's
/// class.
pub fn nll_loss_backward_weight_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let weight = weight.ok_or_else(missing_weight)?;
    let (safe, keep) = nll_kept(target, ignore_index, grad.dtype())?;
    let go = if reduction == 0 && grad.dim() >= 2 {
        grad_output.clone()
    } else {
        grad_output.reshape(())?
    };
    let mut coef = nll_pick(grad, &safe)?.mul(&go)?.neg()?.mul(&keep)?;
    if reduction == 1 {
        coef = coef.div(&total_weight.reshape(())?)?;
    }
    nll_per_class(weight, &safe, &coef)
}

/// `nll_loss_backward`'s derivative in `total_weight`: for `mean` the result is
/// `c / total_weight`, so `-Σ grad · result / total_weight`; otherwise 0.
pub fn nll_loss_backward_total_weight_backward(
    grad: &Tensor,
    result: &Tensor,
    total_weight: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    if reduction != 1 {
        return total_weight.zeros_like();
    }
    let g = grad
        .mul(result)?
        .sum()?
        .neg()?
        .div(&total_weight.reshape(())?)?;
    reshape_to(&g, total_weight.shape())
}
