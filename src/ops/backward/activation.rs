//! Gradients of activations (`threshold`, `sigmoid`, `tanh`, `silu`, `gelu`, `hardtanh`, `elu`,
//! `softplus`, `hardsigmoid`, `hardswish`, `mish`) and the double backward of softmax.

use crate::{Result, Scalar, Tensor};

/// `_softmax_backward_data`'s derivative in `output`: its result is `y (go - Σ go y)`, so
/// `grad · ∂/∂y` is `grad go - grad Σ go y - go Σ grad y` (PyTorch's
/// `softmax_double_backward`).
pub fn softmax_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let go_y = output.mul(grad_output)?.sum_dim_with(&[dim], true, None)?;
    let grad_y = output.mul(grad)?.sum_dim_with(&[dim], true, None)?;
    grad_output
        .mul(grad)?
        .sub(&go_y.mul(grad)?)?
        .sub(&grad_output.mul(&grad_y)?)
}

/// `_log_softmax_backward_data`'s derivative in `grad_output`: its result is
/// `go - exp(y) Σ go`, so `grad - Σ grad exp(y)`.
pub fn log_softmax_double_backward_grad_output(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let s = grad.mul(&output.exp()?)?.sum_dim_with(&[dim], true, None)?;
    grad.sub(&s)
}

/// `_log_softmax_backward_data`'s derivative in `output`: `-grad exp(y) Σ go`.
pub fn log_softmax_double_backward_output(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let s = grad_output.sum_dim_with(&[dim], true, None)?;
    s.mul(&output.exp()?)?.mul(grad)?.neg()
}

/// Backward of `sigmoid`: `grad * y * (1 - y)`.
pub fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(&result.neg()?.add_scalar(1)?)?)
}

/// Backward of `tanh`: `grad * (1 - y²)`.
pub fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(result)?.neg()?.add_scalar(1)?)
}

/// Backward of `silu`: `grad * s * (1 + x (1 - s))` with `s = sigmoid(x)`.
pub fn silu_backward(grad: &Tensor, input: &Tensor) -> Result<Tensor> {
    let s = input.sigmoid()?;
    let inner = input.mul(&s.neg()?.add_scalar(1)?)?.add_scalar(1)?;
    grad.mul(&s.mul(&inner)?)
}

/// Backward of `gelu`, exact or tanh-approximated.
pub fn gelu_backward(grad: &Tensor, input: &Tensor, approximate: &str) -> Result<Tensor> {
    if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let x2 = input.mul(input)?;
        let inner = input
            .mul(&x2.mul_scalar(0.044715)?.add_scalar(1)?)?
            .mul_scalar(k)?;
        let t = inner.tanh()?;
        let dinner = x2
            .mul_scalar(3.0 * 0.044715)?
            .add_scalar(1)?
            .mul_scalar(k)?;
        let left = t.add_scalar(1)?.mul_scalar(0.5)?;
        let right = input
            .mul(&t.mul(&t)?.neg()?.add_scalar(1)?)?
            .mul(&dinner)?
            .mul_scalar(0.5)?;
        return grad.mul(&left.add(&right)?);
    }
    let cdf = input
        .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?
        .erf()?
        .add_scalar(1)?
        .mul_scalar(0.5)?;
    let pdf = input
        .mul(input)?
        .mul_scalar(-0.5)?
        .exp()?
        .mul_scalar(1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
    grad.mul(&cdf.add(&input.mul(&pdf)?)?)
}

/// `grad` where `lo < x < hi`, else 0 (`hardtanh`'s gradient).
pub fn hardtanh_backward(grad: &Tensor, x: &Tensor, lo: Scalar, hi: Scalar) -> Result<Tensor> {
    let inside = x.gt_scalar(lo)?.logical_and(&x.lt_scalar(hi)?)?;
    grad.where_cond(&inside, &grad.zeros_like()?)
}

/// `elu`'s gradient: `scale` where `x > 0`, else `scale * alpha * input_scale * e^(x *
/// input_scale)`.
pub fn elu_backward(
    grad: &Tensor,
    x: &Tensor,
    alpha: Scalar,
    scale: Scalar,
    input_scale: Scalar,
) -> Result<Tensor> {
    let (a, s, i) = (
        alpha.to::<f64>(),
        scale.to::<f64>(),
        input_scale.to::<f64>(),
    );
    let negative = grad.mul(&x.mul_scalar(i)?.exp()?)?.mul_scalar(a * s * i)?;
    grad.mul_scalar(s)?.where_cond(&x.gt_scalar(0)?, &negative)
}

/// `softplus`'s gradient: `sigmoid(beta x)`, or 1 past the threshold.
pub fn softplus_backward(
    grad: &Tensor,
    x: &Tensor,
    beta: Scalar,
    threshold: Scalar,
) -> Result<Tensor> {
    let z = x.mul_scalar(beta)?;
    grad.where_cond(&z.gt_scalar(threshold)?, &grad.mul(&z.sigmoid()?)?)
}

/// `hardsigmoid`'s gradient: 1/6 on (-3, 3), else 0.
pub fn hardsigmoid_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let inside = x.gt_scalar(-3)?.logical_and(&x.lt_scalar(3)?)?;
    grad.mul_scalar(1.0 / 6.0)?
        .where_cond(&inside, &grad.zeros_like()?)
}

/// `hardswish`'s gradient: 0 below -3, 1 above 3, `x / 3 + 1/2` between (PyTorch's
/// boundaries).
pub fn hardswish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let middle = grad.mul(&x.mul_scalar(1.0 / 3.0)?.add_scalar(0.5)?)?;
    let upper = grad.where_cond(&x.gt_scalar(3)?, &middle)?;
    grad.zeros_like()?.where_cond(&x.lt_scalar(-3)?, &upper)
}

/// `mish`'s gradient: `t + x sigmoid(x) (1 - t^2)` with `t = tanh(softplus(x))`.
pub fn mish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let t = crate::softplus(x)?.tanh()?;
    let dt = t.mul(&t)?.neg()?.add_scalar(1)?;
    grad.mul(&t.add(&x.mul(&x.sigmoid()?)?.mul(&dt)?)?)
}
