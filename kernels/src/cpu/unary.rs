//! Scalar functions of pointwise unary ops, on compute types. The pointwise loops in
//! [`super::pointwise`] map them over strided buffers.

use crate::{Arith, FloatMath};

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
        other => Err(format!(
            "approximate argument must be either none or tanh, got '{other}'"
        )),
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
