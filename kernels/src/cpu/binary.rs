//! Scalar functions of pointwise binary and ternary ops, on compute types.

use crate::KernelError;
use crate::{Arith, Bits, DType, FloatMath, KResult, Libm, Modular, Shift};

/// `a + alpha * b`.
#[inline(always)]
pub fn add<T: Arith>(a: T, b: T, alpha: T) -> T {
    a.add(alpha.mul(b))
}

/// `a - alpha * b`.
#[inline(always)]
pub fn sub<T: Arith>(a: T, b: T, alpha: T) -> T {
    a.sub(alpha.mul(b))
}

/// `a * b`.
#[inline(always)]
pub fn mul<T: Arith>(a: T, b: T) -> T {
    a.mul(b)
}

/// True division (integers were promoted to float before the kernel runs).
#[inline(always)]
pub fn div<T: Arith>(a: T, b: T) -> T {
    a.div(b)
}

/// `a ** b`: `powf` for floats, repeated squaring for integers.
#[inline(always)]
pub fn pow<T: Arith + Pow>(a: T, b: T) -> T {
    a.pow(b)
}

/// `a ** e` for a Python-number exponent; the same kernel as [`pow`], with its own check.
#[inline(always)]
pub fn pow_scalar<T: Arith + Pow>(a: T, e: T) -> T {
    a.pow(e)
}

/// PyTorch's checks on a scalar exponent: an integer base takes no negative integer power,
/// and the exponent must fit the base's integer type (an integer computation means both
/// are integers: a float exponent would have promoted it to float).
pub fn pow_scalar_check(compute: DType, exponent: f64) -> KResult<()> {
    if compute.is_floating_point() {
        return Ok(());
    }
    if exponent < 0.0 {
        return Err(KernelError::value(
            "Integers to negative integer powers are not allowed.",
        ));
    }
    let (max, name) = match compute {
        DType::U8 => (u8::MAX as f64, "uint8_t"),
        DType::I8 => (i8::MAX as f64, "int8_t"),
        DType::I16 => (i16::MAX as f64, "int16_t"),
        DType::I32 => (i32::MAX as f64, "int"),
        _ => (f64::INFINITY, ""),
    };
    if exponent > max {
        return Err(KernelError::value(format!(
            "value cannot be converted to type {name} without overflow"
        )));
    }
    Ok(())
}

/// The larger of `a` and `b`, NaN if either is NaN.
#[inline(always)]
pub fn maximum<T: Arith>(a: T, b: T) -> T {
    if a.is_nan() || a > b {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, NaN if either is NaN.
#[inline(always)]
pub fn minimum<T: Arith>(a: T, b: T) -> T {
    if a.is_nan() || a < b {
        a
    } else {
        b
    }
}

/// `min(max(x, lo), hi)`; NaN stays NaN.
#[inline(always)]
pub fn clamp<T: Arith>(x: T, min: Option<T>, max: Option<T>) -> T {
    if x.is_nan() {
        return x;
    }
    let mut y = x;
    if let Some(lo) = min {
        if y < lo {
            y = lo;
        }
    }
    if let Some(hi) = max {
        if y > hi {
            y = hi;
        }
    }
    y
}

/// Checks `clamp`'s bounds.
pub fn clamp_check(compute: DType, min: Option<f64>, max: Option<f64>) -> KResult<()> {
    if min.is_none() && max.is_none() {
        return Err(KernelError::value(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    clamp_bounds_check(compute, min, max)
}

/// ATen's check of integer clamp bounds: a bound beyond the dtype's range on the side that
/// would change every element (a min above the largest value, a max below the smallest) is
/// an error; one beyond it on the other side clamps nothing and is saturated (`saturate:` in
/// the YAML) rather than wrapped.
pub fn clamp_bounds_check(compute: DType, min: Option<f64>, max: Option<f64>) -> KResult<()> {
    let (lo, hi) = match compute {
        DType::U8 => (0.0, u8::MAX as f64),
        DType::I8 => (i8::MIN as f64, i8::MAX as f64),
        DType::I16 => (i16::MIN as f64, i16::MAX as f64),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        _ => return Ok(()),
    };
    let name = compute.scalar_type_name();
    if let Some(m) = min.filter(|&m| m > hi) {
        return Err(KernelError::value(format!(
            "Clamp min value {m} is outside the representable range of {name}"
        )));
    }
    if let Some(m) = max.filter(|&m| m < lo) {
        return Err(KernelError::value(format!(
            "Clamp max value {m} is outside the representable range of {name}"
        )));
    }
    Ok(())
}

/// `condition ? a : b`.
#[inline(always)]
pub fn where_cond<T>(condition: bool, a: T, b: T) -> T {
    if condition {
        a
    } else {
        b
    }
}

/// `mask ? value : x`.
#[inline(always)]
pub fn masked_fill<T>(x: T, mask: bool, value: T) -> T {
    if mask {
        value
    } else {
        x
    }
}

/// `threshold_backward`: the gradient where `x > threshold`, else 0; `x <= threshold` is
/// false for a NaN, so a NaN lets the gradient through, as in PyTorch.
#[inline(always)]
pub fn threshold_backward<T: Arith>(grad: T, x: T, threshold: T) -> T {
    if x <= threshold {
        T::zero()
    } else {
        grad
    }
}

/// Exponentiation for compute types.
pub trait Pow {
    /// `self ** e`.
    fn pow(self, e: Self) -> Self;
}

impl Pow for f32 {
    #[inline(always)]
    fn pow(self, e: f32) -> f32 {
        FloatMath::powf(self, e)
    }
}
impl Pow for f64 {
    #[inline(always)]
    fn pow(self, e: f64) -> f64 {
        FloatMath::powf(self, e)
    }
}

macro_rules! int_pow {
    ($($t:ty),*) => {$(
        impl Pow for $t {
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn pow(self, e: $t) -> $t {
                if e < 0 {
                    // Only 1 and -1 have integer reciprocals.
                    return match self as i64 { 1 => 1, -1 => if (e as i64) % 2 == 0 { 1 } else { self }, _ => 0 };
                }
                // Square-and-multiply over the full exponent: `e as u32` would truncate
                // an exponent of 2^32 or more.
                let (mut base, mut e, mut acc) = (self, e as u64, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
        }
    )*};
}
int_pow!(u8, i8, i16, i32, i64);

/// The angle of the point `(b, a)`: `atan(a / b)` in the right quadrant.
#[inline(always)]
pub fn atan2<T: Libm>(a: T, b: T) -> T {
    a.atan2(b)
}

/// `sqrt(a^2 + b^2)` without overflow in the squares.
#[inline(always)]
pub fn hypot<T: Libm>(a: T, b: T) -> T {
    a.hypot(b)
}

/// `log(e^a + e^b)`, computed from the larger argument so it neither overflows nor loses
/// the smaller one; equal infinities return themselves (as PyTorch).
#[inline(always)]
pub fn logaddexp<T: Libm>(a: T, b: T) -> T {
    if a.is_infinite() && a == b {
        return a;
    }
    let (hi, lo) = if a > b || b.is_nan() { (a, b) } else { (b, a) };
    hi.add(lo.sub(hi).exp().ln_1p())
}

/// `fmod(a, b)`: the remainder of truncated division (the sign of `a`).
#[inline(always)]
pub fn fmod<T: Modular>(a: T, b: T) -> T {
    a.fmod(b)
}

/// `remainder(a, b)`: Python's `%`, the remainder of floored division (the sign of `b`).
#[inline(always)]
pub fn remainder<T: Modular>(a: T, b: T) -> T {
    a.remainder(b)
}

/// `|a|` with the sign of `b`.
#[inline(always)]
pub fn copysign<T: Libm>(a: T, b: T) -> T {
    a.copysign(b)
}

/// Bitwise (logical for bools) and.
#[inline(always)]
pub fn bitwise_and<T: Bits>(a: T, b: T) -> T {
    a.and(b)
}

/// Bitwise (logical for bools) or.
#[inline(always)]
pub fn bitwise_or<T: Bits>(a: T, b: T) -> T {
    a.or(b)
}

/// Bitwise (logical for bools) exclusive or.
#[inline(always)]
pub fn bitwise_xor<T: Bits>(a: T, b: T) -> T {
    a.xor(b)
}

/// `a << b`; 0 when `b` is outside `0..bits`.
#[inline(always)]
pub fn bitwise_left_shift<T: Shift>(a: T, b: T) -> T {
    a.shl(b)
}

/// `a >> b` (arithmetic for signed types); sign-filled when `b` is outside `0..bits`.
#[inline(always)]
pub fn bitwise_right_shift<T: Shift>(a: T, b: T) -> T {
    a.shr(b)
}
