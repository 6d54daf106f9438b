//! Losses and distances (PyTorch's CompositeImplicitAutograd): `reduction` is PyTorch's
//! `at::Reduction`, 0 none, 1 mean, 2 sum.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Scalar, Tensor};

// ---------------------------------------------------------------------------------------
// Losses (`reduction` is PyTorch's `at::Reduction`: 0 none, 1 mean, 2 sum)
// ---------------------------------------------------------------------------------------

fn reduce_loss(op: &str, loss: Tensor, reduction: i64) -> Result<Tensor> {
    match reduction {
        0 => Ok(loss),
        1 => loss.mean(),
        2 => loss.sum(),
        r => Err(Error::op(
            op,
            format!("{r} is not a valid value for reduction"),
        )),
    }
}

/// The elementwise difference of a loss's input and target, which must broadcast.
fn loss_diff(input: &Tensor, target: &Tensor) -> Result<Tensor> {
    input.sub(target)
}

/// `mse_loss(target, reduction)`: `(input - target)^2`.
pub fn mse_loss(t: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    let d = loss_diff(t, target)?;
    reduce_loss("mse_loss", d.mul(&d)?, reduction)
}

/// `l1_loss(target, reduction)`: `|input - target|`.
pub fn l1_loss(t: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    reduce_loss("l1_loss", loss_diff(t, target)?.abs()?, reduction)
}

/// `smooth_l1_loss(target, reduction, beta)`: `0.5 d^2 / beta` where `|d| < beta`, else
/// `|d| - 0.5 beta`; `beta = 0` is the L1 loss.
pub fn smooth_l1_loss(t: &Tensor, target: &Tensor, reduction: i64, beta: f64) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(Error::op(
            "smooth_l1_loss",
            "smooth_l1_loss does not support negative values for beta.",
        ));
    }
    let a = loss_diff(t, target)?.abs()?;
    if beta == 0.0 {
        return reduce_loss("smooth_l1_loss", a, reduction);
    }
    let quadratic = a.mul(&a)?.mul_scalar(0.5 / beta)?;
    let linear = a.sub_scalar(0.5 * beta)?;
    let loss = quadratic.where_cond(&a.lt_scalar(beta)?, &linear)?;
    reduce_loss("smooth_l1_loss", loss, reduction)
}

/// `huber_loss(target, reduction, delta)`: `0.5 d^2` where `|d| <= delta`, else
/// `delta (|d| - 0.5 delta)`.
pub fn huber_loss(t: &Tensor, target: &Tensor, reduction: i64, delta: f64) -> Result<Tensor> {
    if delta <= 0.0 {
        return Err(Error::op(
            "huber_loss",
            "huber_loss does not support non-positive values for delta.",
        ));
    }
    let a = loss_diff(t, target)?.abs()?;
    let quadratic = a.mul(&a)?.mul_scalar(0.5)?;
    let linear = a.sub_scalar(0.5 * delta)?.mul_scalar(delta)?;
    let loss = quadratic.where_cond(&a.le_scalar(delta)?, &linear)?;
    reduce_loss("huber_loss", loss, reduction)
}

/// `kl_div(target, reduction, log_target)` with `self` holding log-probabilities:
/// `target * (log target - self)`, 0 where `target` is 0; with `log_target`,
/// `exp(target) * (target - self)`.
pub fn kl_div(t: &Tensor, target: &Tensor, reduction: i64, log_target: bool) -> Result<Tensor> {
    let loss = if log_target {
        target.exp()?.mul(&target.sub(t)?)?
    } else {
        let positive = target.gt_scalar(0)?;
        // log of the positive targets only, so a zero target contributes 0 and no NaN
        // reaches the gradient.
        let safe = target.where_cond(&positive, &target.ones_like()?)?;
        let terms = target.mul(&safe.log()?.sub(t)?)?;
        terms.where_cond(&positive, &terms.zeros_like()?)?
    };
    reduce_loss("kl_div", loss, reduction)
}

/// `cosine_similarity(x2, dim, eps)`: `x1 . x2 / sqrt(max(|x1|^2 |x2|^2, eps^2))` along
/// `dim`, after broadcasting the two.
pub fn cosine_similarity(x1: &Tensor, x2: &Tensor, dim: i64, eps: f64) -> Result<Tensor> {
    let prod = x1.mul(x2)?;
    let (x1, x2) = (&x1.expand_as(&prod)?, &x2.expand_as(&prod)?);
    let dot = crate::sum_dim_with(&prod, &[dim], false, None)?;
    let n1 = crate::sum_dim_with(&x1.mul(x1)?, &[dim], false, None)?;
    let n2 = crate::sum_dim_with(&x2.mul(x2)?, &[dim], false, None)?;
    let denom = n1
        .mul(&n2)?
        .clamp_with(Some((eps * eps).into()), None)?
        .sqrt()?;
    dot.div(&denom)
}

/// `pairwise_distance(x2, p, eps, keepdim)`: the p-norm of `x1 - x2 + eps` along the last
/// dim.
pub fn pairwise_distance(
    x1: &Tensor,
    x2: &Tensor,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> Result<Tensor> {
    let d = x1.sub(x2)?.add_scalar(eps)?.abs()?;
    let last = [-1i64];
    if p == 2.0 {
        return crate::sum_dim_with(&d.mul(&d)?, &last, keepdim, None)?.sqrt();
    }
    if p == 1.0 {
        return crate::sum_dim_with(&d, &last, keepdim, None);
    }
    crate::sum_dim_with(&d.pow_scalar(p)?, &last, keepdim, None)?.pow_scalar(1.0 / p)
}
