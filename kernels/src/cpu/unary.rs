//! Scalar functions of pointwise unary ops, on compute types. The pointwise loops in
//! [`super::pointwise`] map them over strided buffers.

use crate::KernelError;
use crate::{Arith, Bits, FloatMath, Libm, Rounding};

/// `-x`.
#[inline(always)]
pub fn neg<T: Arith>(x: T) -> T {
    x.neg()
}

/// `|x|`.
#[inline(always)]
pub fn abs<T: Arith>(x: T) -> T {
    x.abs()
}

/// `e^x`.
#[inline(always)]
pub fn exp<T: FloatMath>(x: T) -> T {
    x.exp()
}

/// Natural logarithm.
#[inline(always)]
pub fn log<T: FloatMath>(x: T) -> T {
    x.ln()
}

/// `ln(1 + x)`, accurate near zero.
#[inline(always)]
pub fn log1p<T: FloatMath>(x: T) -> T {
    x.ln_1p()
}

/// Square root.
#[inline(always)]
pub fn sqrt<T: FloatMath>(x: T) -> T {
    x.sqrt()
}

/// `1 / sqrt(x)`.
#[inline(always)]
pub fn rsqrt<T: FloatMath>(x: T) -> T {
    x.sqrt().recip()
}

/// Sine.
#[inline(always)]
pub fn sin<T: FloatMath>(x: T) -> T {
    x.sin()
}

/// Cosine.
#[inline(always)]
pub fn cos<T: FloatMath>(x: T) -> T {
    x.cos()
}

/// Hyperbolic tangent.
#[inline(always)]
pub fn tanh<T: FloatMath>(x: T) -> T {
    x.tanh()
}

/// `1 / (1 + e^-x)`.
#[inline(always)]
pub fn sigmoid<T: FloatMath>(x: T) -> T {
    T::one().div(T::one().add(x.neg().exp()))
}

/// `max(x, 0)`; NaN stays NaN.
#[inline(always)]
pub fn relu<T: Arith>(x: T) -> T {
    if x < T::zero() {
        T::zero()
    } else {
        x
    }
}

/// `x * Φ(x)`, exactly (`approximate = "none"`) or with PyTorch's tanh formula.
#[inline(always)]
pub fn gelu<T: FloatMath>(x: T, approximate: &str) -> T {
    let half = T::from_f64(0.5);
    if approximate == "tanh" {
        let k = T::from_f64(0.797_884_560_802_865_4); // sqrt(2/pi)
        let inner = k.mul(x.add(T::from_f64(0.044715).mul(x).mul(x).mul(x)));
        half.mul(x).mul(T::one().add(inner.tanh()))
    } else {
        half.mul(x)
            .mul(T::one().add(x.mul(T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf()))
    }
}

/// `x * sigmoid(x)`.
#[inline(always)]
pub fn silu<T: FloatMath>(x: T) -> T {
    x.mul(sigmoid(x))
}

/// The identity, for dtype conversions (`to`).
#[inline(always)]
pub fn identity<T>(x: T) -> T {
    x
}

/// Checks `gelu`'s `approximate` argument.
pub fn gelu_check(_compute: crate::DType, approximate: &str) -> crate::KResult<()> {
    match approximate {
        "none" | "tanh" => Ok(()),
        other => Err(KernelError::value(format!(
            "approximate argument must be either none or tanh, got '{other}'"
        ))),
    }
}

/// The error function.
#[inline(always)]
pub fn erf<T: FloatMath>(x: T) -> T {
    x.erf()
}

/// -1, 0 or 1 by the sign of `x`; NaN stays NaN.
#[inline(always)]
pub fn sign<T: Arith>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        T::zero().sub(T::one())
    } else {
        x
    }
}

/// `2^x`.
#[inline(always)]
pub fn exp2<T: Libm>(x: T) -> T {
    x.exp2()
}

/// `e^x - 1`, accurate near zero.
#[inline(always)]
pub fn expm1<T: Libm>(x: T) -> T {
    x.exp_m1()
}

/// Base-2 logarithm.
#[inline(always)]
pub fn log2<T: Libm>(x: T) -> T {
    x.log2()
}

/// Base-10 logarithm.
#[inline(always)]
pub fn log10<T: Libm>(x: T) -> T {
    x.log10()
}

/// `1 / x`.
#[inline(always)]
pub fn reciprocal<T: Libm>(x: T) -> T {
    x.recip()
}

/// Tangent.
#[inline(always)]
pub fn tan<T: Libm>(x: T) -> T {
    x.tan()
}

/// Arcsine.
#[inline(always)]
pub fn asin<T: Libm>(x: T) -> T {
    x.asin()
}

/// Arccosine.
#[inline(always)]
pub fn acos<T: Libm>(x: T) -> T {
    x.acos()
}

/// Arctangent.
#[inline(always)]
pub fn atan<T: Libm>(x: T) -> T {
    x.atan()
}

/// Hyperbolic sine.
#[inline(always)]
pub fn sinh<T: Libm>(x: T) -> T {
    x.sinh()
}

/// Hyperbolic cosine.
#[inline(always)]
pub fn cosh<T: Libm>(x: T) -> T {
    x.cosh()
}

/// Inverse hyperbolic sine.
#[inline(always)]
pub fn asinh<T: Libm>(x: T) -> T {
    x.asinh()
}

/// Inverse hyperbolic cosine.
#[inline(always)]
pub fn acosh<T: Libm>(x: T) -> T {
    x.acosh()
}

/// Inverse hyperbolic tangent.
#[inline(always)]
pub fn atanh<T: Libm>(x: T) -> T {
    x.atanh()
}

/// `1 - erf(x)`, accurate where erf is near 1.
#[inline(always)]
pub fn erfc<T: Libm>(x: T) -> T {
    x.erfc()
}

/// The inverse error function on (-1, 1); ±inf at ±1, NaN beyond.
#[inline(always)]
pub fn erfinv<T: Libm>(x: T) -> T {
    x.erfinv()
}

/// Bitwise not of integers; logical not of bools.
#[inline(always)]
pub fn bitwise_not<T: Bits>(x: T) -> T {
    x.not()
}

/// `x - trunc(x)`.
#[inline(always)]
pub fn frac<T: Libm + Rounding>(x: T) -> T {
    x.sub(x.trunc())
}

/// Largest integral value not above `x` (the identity on integers).
#[inline(always)]
pub fn floor<T: Rounding>(x: T) -> T {
    x.floor()
}

/// Smallest integral value not below `x`.
#[inline(always)]
pub fn ceil<T: Rounding>(x: T) -> T {
    x.ceil()
}

/// `x` rounded toward zero.
#[inline(always)]
pub fn trunc<T: Rounding>(x: T) -> T {
    x.trunc()
}

/// `x` rounded to the nearest integral value, halves to even (`torch.round`).
#[inline(always)]
pub fn round<T: Rounding>(x: T) -> T {
    x.round_even()
}

/// `x * x` (`torch.square`).
#[inline(always)]
pub fn square<T: Arith>(x: T) -> T {
    x.mul(x)
}

/// `x` where positive, else `x * negative_slope`.
#[inline(always)]
pub fn leaky_relu<T: FloatMath>(x: T, negative_slope: T) -> T {
    if x > T::zero() {
        x
    } else {
        x.mul(negative_slope)
    }
}

/// `x` clamped to `[min_val, max_val]`; NaN stays NaN. Integers too (the bounds converted to
/// the integer type, as PyTorch does); not bool.
#[inline(always)]
pub fn hardtanh<T: Arith>(x: T, min_val: T, max_val: T) -> T {
    if x <= min_val {
        min_val
    } else if x >= max_val {
        max_val
    } else {
        x
    }
}

/// `torch.nn.functional.hardtanh`'s checks: `min_val <= max_val`, and ATen's refusal of bool.
pub fn hardtanh_check(compute: crate::DType, min_val: f64, max_val: f64) -> crate::KResult<()> {
    if min_val > max_val {
        return Err(KernelError::value("min_val cannot be greater than max_val"));
    }
    if compute == crate::DType::Bool {
        return Err(KernelError::dtype("Bool inputs not supported for hardtanh"));
    }
    // hardtanh is ATen's clamp on integers: the same bound checks, the rest saturate.
    super::binary::clamp_bounds_check(compute, Some(min_val), Some(max_val))
}

/// `scale * x` where positive, else `scale * alpha * (e^(x * input_scale) - 1)`.
#[inline(always)]
pub fn elu<T: Libm>(x: T, alpha: T, scale: T, input_scale: T) -> T {
    if x > T::zero() || x.is_nan() {
        x.mul(scale)
    } else {
        x.mul(input_scale).exp_m1().mul(alpha).mul(scale)
    }
}

/// `log(1 + e^(beta x)) / beta`, or `x` once `beta x` exceeds `threshold`.
#[inline(always)]
pub fn softplus<T: FloatMath>(x: T, beta: T, threshold: T) -> T {
    let z = x.mul(beta);
    if z > threshold {
        x
    } else {
        z.exp().ln_1p().div(beta)
    }
}

/// `min(max(x + 3, 0), 6) / 6`; NaN stays NaN.
#[inline(always)]
pub fn hardsigmoid<T: FloatMath>(x: T) -> T {
    let (zero, six) = (T::zero(), T::from_f64(6.0));
    let y = x.add(T::from_f64(3.0));
    let y = if y < zero { zero } else { y };
    let y = if y > six { six } else { y };
    y.div(six)
}

/// `x * hardsigmoid(x)`.
#[inline(always)]
pub fn hardswish<T: FloatMath>(x: T) -> T {
    x.mul(hardsigmoid(x))
}

/// `x * tanh(softplus(x))`.
#[inline(always)]
pub fn mish<T: FloatMath>(x: T) -> T {
    x.mul(x.exp().ln_1p().tanh())
}
