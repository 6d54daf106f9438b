//! Gradients of pointwise math: `pow` (all three forms), `maximum` / `minimum`, `clamp`, `erf`.

use crate::{Result, Scalar, Tensor};

/// `d/dx x^e = e x^(e-1)`, zero where the exponent is zero.
pub fn pow_backward_self(grad: &Tensor, input: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let e1 = exponent.sub_scalar(1)?;
    let d = exponent.mul(&input.pow(&e1)?)?;
    let d = d.masked_fill(&exponent.eq_scalar(0)?, 0)?;
    grad.mul(&d)
}

/// `d/dx x^e` for a scalar exponent.
pub fn pow_backward_scalar(grad: &Tensor, input: &Tensor, exponent: Scalar) -> Result<Tensor> {
    if exponent.to_f64() == 0.0 {
        return grad.zeros_like();
    }
    let d = input
        .pow_scalar(Scalar::Float(exponent.to_f64() - 1.0))?
        .mul_scalar(exponent)?;
    grad.mul(&d)
}

/// `d/de x^e = x^e ln x`, zero where `x == 0` and `e >= 0` (PyTorch's convention).
pub fn pow_backward_exponent(grad: &Tensor, input: &Tensor, result: &Tensor) -> Result<Tensor> {
    let safe = input.masked_fill(&input.eq_scalar(0)?, 1)?;
    grad.mul(&result.mul(&safe.log()?)?)
}

/// Backward of `maximum`/`minimum` for the input `mine`: full gradient where it was chosen,
/// half on ties.
pub fn extremum_backward(
    grad: &Tensor,
    mine: &Tensor,
    theirs: &Tensor,
    is_max: bool,
) -> Result<Tensor> {
    let won = if is_max {
        mine.gt(theirs)?
    } else {
        mine.lt(theirs)?
    };
    let tie = mine.eq(theirs)?;
    let w = won
        .to_dtype(grad.dtype())?
        .add(&tie.to_dtype(grad.dtype())?.mul_scalar(0.5)?)?;
    grad.mul(&w)
}

/// Backward of `clamp`: the gradient passes where the input was inside the bounds.
pub fn clamp_backward(
    grad: &Tensor,
    input: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
    let mut keep = input.ge_scalar(f64::NEG_INFINITY)?;
    if let Some(lo) = min {
        keep = keep.mul(&input.ge_scalar(lo)?)?;
    }
    if let Some(hi) = max {
        keep = keep.mul(&input.le_scalar(hi)?)?;
    }
    grad.mul(&keep.to_dtype(grad.dtype())?)
}

/// `d/dx erf(x) = 2/sqrt(pi) e^(-x²)`.
pub fn erf_backward(grad: &Tensor, input: &Tensor) -> Result<Tensor> {
    let d = input
        .mul(input)?
        .neg()?
        .exp()?
        .mul_scalar(2.0 / std::f64::consts::PI.sqrt())?;
    grad.mul(&d)
}
