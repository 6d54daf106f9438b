//! Gradients of reductions and scans: `sum`, the reductions that select values (`max`, `min`,
//! `median`, `kthvalue` …), `cumsum`, `logcumsumexp`, `cumprod`.

use super::shaping::{i64s, zeros_like_grad};
use crate::{Result, Tensor};

/// Reduced dims of a `dim` argument, wrapped, or all dims for `None`/empty.
fn reduced_dims(ndim: usize, dim: Option<&[i64]>) -> Vec<usize> {
    match dim {
        Some(d) if !d.is_empty() => {
            let mut v: Vec<usize> = d
                .iter()
                .map(|&x| {
                    if x < 0 {
                        (x + ndim.max(1) as i64) as usize
                    } else {
                        x as usize
                    }
                })
                .collect();
            v.sort_unstable();
            v
        }
        _ => (0..ndim).collect(),
    }
}

/// Backward of `sum`: re-insert reduced dims, then broadcast back to the input's shape.
pub fn sum_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let mut g = grad.clone();
    if !keepdim && !sizes.is_empty() {
        for d in reduced_dims(sizes.len(), dim) {
            g = g.unsqueeze(d as i64)?;
        }
    }
    g.expand(i64s(sizes))
}

/// Backward of `max()`/`min()` over all elements: the gradient is shared evenly among the
/// elements equal to the result (PyTorch's `evenly_distribute_backward`).
pub fn evenly_distribute_backward(grad: &Tensor, input: &Tensor, value: &Tensor) -> Result<Tensor> {
    let mask = input.eq(value)?.to_dtype(grad.dtype())?;
    let count = mask.sum()?;
    mask.mul(&grad.div(&count)?)
}

/// Backward of `max.dim`/`min.dim`: the gradient goes to the selected index.
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    sizes: &[usize],
    keepdim: bool,
) -> Result<Tensor> {
    let (mut g, mut idx) = (grad.clone(), indices.clone());
    if !keepdim && !sizes.is_empty() {
        g = g.unsqueeze(dim)?;
        idx = idx.unsqueeze(dim)?;
    }
    if sizes.is_empty() {
        return Ok(g);
    }
    zeros_like_grad(grad, sizes)?.scatter_add(dim, &idx, &g)
}

/// `t` summed from the end of `dim` backwards: the backward of `cumsum`.
pub fn reverse_cumsum(t: &Tensor, dim: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        return Ok(t.clone());
    }
    t.flip(&[dim])?.cumsum(dim)?.flip(&[dim])
}

/// Backward of `logcumsumexp` along `dim`: `∂/∂self_j = Σ_{i≥j} grad_i · exp(self_j − result_i)`.
///
/// Each factor `exp(self_j − result_i)` is at most 1 (`result_i` sums `exp(self_j)` among
/// others), but written as `exp(self_j) · exp(−result_i)` its two parts overflow and underflow
/// over a wide range of inputs (`inf · 0 = NaN` once they span a few hundred). So the sum is
/// taken in log space, as PyTorch's `logcumsumexp_backward` does: for the positive and the
/// negative entries of `grad` separately, `exp(self_j + LSE_{i≥j}(log|grad_i| − result_i))`,
/// the `LSE` a reverse `logcumsumexp`. Zero entries of `grad` are `-inf` there and drop out.
/// Where every element up to `j` is `-inf`, `result_j` is `-inf` too and the gradient is
/// undefined (`exp(-inf + inf)`): NaN, as in PyTorch.
///
/// Built from differentiable ops, so double backward works; `log|grad|` is taken of a tensor
/// with 1 in place of the entries not in the part, so its derivative stays finite at zeros.
pub fn logcumsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    if grad.numel() == 0 {
        return Ok(grad.clone());
    }
    let reverse_logcumsumexp = |t: &Tensor| -> Result<Tensor> {
        if t.dim() == 0 {
            return Ok(t.clone());
        }
        t.flip(&[dim])?.logcumsumexp(dim)?.flip(&[dim])
    };
    // `Σ_{i≥j} |grad_i| · exp(self_j − result_i)` over the entries where `mask` is true.
    let part = |mask: Tensor| -> Result<Tensor> {
        let outside = mask.logical_not()?;
        let log_grad = grad
            .abs()?
            .masked_fill(&outside, 1)?
            .log()?
            .masked_fill(&outside, f64::NEG_INFINITY)?;
        reverse_logcumsumexp(&log_grad.sub(result)?)?
            .add(self_)?
            .exp()
    };
    part(grad.gt_scalar(0)?)?.sub(&part(grad.lt_scalar(0)?)?)
}

/// Backward of `cumprod`: `Σ_{k≥i} grad_k · out_k / x_i` when no element is 0. With zeros,
/// per slice along `dim` with its first zero at `z` (O(n), as PyTorch's formula): positions
/// before `z` use that formula (`out_k` is 0 from `z` on); position `z` gets
/// `Σ_{k≥z} grad_k · cumprod(x with x_z = 1)_k`; positions after `z` get 0 (every product
/// through them holds `x_z`).
pub fn cumprod_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    result: &Tensor,
) -> Result<Tensor> {
    if self_.numel() == 0 || self_.dim() == 0 {
        return Ok(grad.clone());
    }
    let grad = grad.to_dtype(self_.dtype())?;
    let result = result.to_dtype(self_.dtype())?;
    let zero = self_.eq_scalar(0)?;
    if !zero.any()?.item::<bool>()? {
        return reverse_cumsum(&grad.mul(&result)?, dim)?.div(self_);
    }
    // Zeros seen up to and including each position.
    let seen = zero.cumsum(dim)?;
    let before = seen.eq_scalar(0)?;
    let first = seen.eq_scalar(1)?.logical_and(&zero)?;
    let one = self_.ones_like()?;
    let safe_x = self_.where_cond(&before, &one)?;
    let early = reverse_cumsum(&grad.mul(&result)?, dim)?.div(&safe_x)?;
    let without_z = one.where_cond(&first, self_)?.cumprod(dim)?;
    let at_z = reverse_cumsum(&grad.mul(&without_z)?, dim)?;
    let late = at_z.where_cond(&first, &self_.zeros_like()?)?;
    early.where_cond(&before, &late)
}
