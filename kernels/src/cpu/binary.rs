//! Scalar functions of pointwise binary and ternary ops, on compute types.

use crate::{Arith, FloatMath, KResult};

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
pub fn clamp_check(min: Option<f64>, max: Option<f64>) -> KResult<()> {
    if min.is_none() && max.is_none() {
        return Err("torch.clamp: At least one of 'min' or 'max' must not be None".into());
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
                self.wrapping_pow(e as u32)
            }
        }
    )*};
}
int_pow!(u8, i8, i16, i32, i64);
