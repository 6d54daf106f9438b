//! Scalar functions of comparison ops: compute-type inputs, `bool` output.

use crate::{Arith, Classify};

/// `a == b`.
#[inline(always)]
pub fn eq<T: PartialOrd>(a: T, b: T) -> bool {
    a == b
}

/// `a != b`.
#[inline(always)]
pub fn ne<T: PartialOrd>(a: T, b: T) -> bool {
    a != b
}

/// `a < b`.
#[inline(always)]
pub fn lt<T: PartialOrd>(a: T, b: T) -> bool {
    a < b
}

/// `a <= b`.
#[inline(always)]
pub fn le<T: PartialOrd>(a: T, b: T) -> bool {
    a <= b
}

/// `a > b`.
#[inline(always)]
pub fn gt<T: PartialOrd>(a: T, b: T) -> bool {
    a > b
}

/// `a >= b`.
#[inline(always)]
pub fn ge<T: PartialOrd>(a: T, b: T) -> bool {
    a >= b
}

/// `x != x`: NaN (never for integers and bools).
#[inline(always)]
pub fn isnan<T: Arith>(x: T) -> bool {
    x.is_nan()
}

/// `±inf`.
#[inline(always)]
pub fn isinf<T: Classify>(x: T) -> bool {
    x.is_inf()
}

/// Neither NaN nor infinite.
#[inline(always)]
pub fn isfinite<T: Classify>(x: T) -> bool {
    !x.is_nan() && !x.is_inf()
}

/// `x == 0` (`torch.logical_not`).
#[inline(always)]
pub fn logical_not<T: Arith>(x: T) -> bool {
    x == T::zero()
}

/// `(a != 0) && (b != 0)`.
#[inline(always)]
pub fn logical_and<T: Arith>(a: T, b: T) -> bool {
    a != T::zero() && b != T::zero()
}

/// `(a != 0) || (b != 0)`.
#[inline(always)]
pub fn logical_or<T: Arith>(a: T, b: T) -> bool {
    a != T::zero() || b != T::zero()
}

/// `(a != 0) != (b != 0)`.
#[inline(always)]
pub fn logical_xor<T: Arith>(a: T, b: T) -> bool {
    (a != T::zero()) != (b != T::zero())
}
