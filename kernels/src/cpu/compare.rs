//! Scalar functions of comparison ops: compute-type inputs, `bool` output.

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
