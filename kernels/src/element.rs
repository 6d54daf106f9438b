//! Element types and the arithmetic traits kernels are generic over.
//!
//! Half-precision types compute in `f32` (PyTorch's "opmath" type): a kernel written on
//! [`Element::Compute`] loads, computes in the wider type and rounds once on store.

use crate::DType;
use half::{bf16, f16};
use std::any::TypeId;

/// A type a tensor can store. One impl per [`DType`].
pub trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + Default + 'static {
    /// The dtype tag of this element type.
    const DTYPE: DType;
    /// The type arithmetic is carried out in (`f32` for `f16`/`bf16`, the type itself otherwise).
    type Compute: Arith;
    /// Widens to the compute type.
    fn up(self) -> Self::Compute;
    /// Rounds a compute value back to this type.
    fn down(c: Self::Compute) -> Self;
    /// Converts to f64 (exact for every type except i64 beyond 2^53).
    fn to_f64(self) -> f64;
    /// Converts to i64 (floats truncate toward zero, saturating).
    fn to_i64(self) -> i64;
    /// Converts from f64 with Rust `as` semantics (saturating for integers).
    fn from_f64(v: f64) -> Self;
    /// Converts from i64 with wrapping semantics for narrower integers, like a C cast.
    fn from_i64(v: i64) -> Self;

    /// Casts to another element type, as `Tensor::to_dtype` does.
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        if Self::DTYPE == DType::Bool || U::DTYPE == DType::Bool {
            // Anything non-zero is true; true is one.
            return if U::DTYPE == DType::Bool {
                U::from_i64((self.to_f64() != 0.0) as i64)
            } else {
                U::from_f64(self.to_f64())
            };
        }
        if Self::DTYPE.is_floating_point() || U::DTYPE.is_floating_point() {
            U::from_f64(self.to_f64())
        } else {
            U::from_i64(self.to_i64())
        }
    }
}

/// Arithmetic on compute types. Integers wrap on overflow, as in PyTorch.
pub trait Arith: Copy + Send + Sync + PartialOrd + std::fmt::Debug + 'static {
    /// Additive identity.
    fn zero() -> Self;
    /// Multiplicative identity.
    fn one() -> Self;
    /// `self + o` (logical or for bool).
    fn add(self, o: Self) -> Self;
    /// `self - o`.
    fn sub(self, o: Self) -> Self;
    /// `self * o` (logical and for bool).
    fn mul(self, o: Self) -> Self;
    /// `self / o`; integer division by zero gives zero instead of trapping.
    fn div(self, o: Self) -> Self;
    /// `-self`.
    fn neg(self) -> Self;
    /// `|self|`.
    fn abs(self) -> Self;
    /// True if the value is NaN (never for integers).
    fn is_nan(self) -> bool;
    /// Converts a Python-style float scalar into this type.
    fn from_f64(v: f64) -> Self;
    /// Converts a Python-style int scalar into this type.
    fn from_i64(v: i64) -> Self;
    /// Converts to f64.
    fn to_f64(self) -> f64;
}

/// Transcendental functions, for the floating compute types (`f32`, `f64`).
pub trait FloatMath: Arith {
    fn exp(self) -> Self;
    fn ln(self) -> Self;
    fn ln_1p(self) -> Self;
    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tanh(self) -> Self;
    fn erf(self) -> Self;
    fn powf(self, e: Self) -> Self;
    fn recip(self) -> Self;
    fn infinity() -> Self;
}

macro_rules! float_arith {
    ($t:ty, $erf:path) => {
        impl Arith for $t {
            #[inline(always)]
            fn zero() -> Self {
                0.0
            }
            #[inline(always)]
            fn one() -> Self {
                1.0
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self - o
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self * o
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                self / o
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
        impl FloatMath for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            #[inline(always)]
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            #[inline(always)]
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn recip(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn infinity() -> Self {
                <$t>::INFINITY
            }
        }
    };
}
float_arith!(f32, libm::erff);
float_arith!(f64, libm::erf);

macro_rules! int_arith {
    ($t:ty, $abs:expr) => {
        impl Arith for $t {
            #[inline(always)]
            fn zero() -> Self {
                0
            }
            #[inline(always)]
            fn one() -> Self {
                1
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline(always)]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline(always)]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline(always)]
            fn div(self, o: Self) -> Self {
                if o == 0 {
                    0
                } else {
                    self.wrapping_div(o)
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                self.wrapping_neg()
            }
            #[inline(always)]
            fn abs(self) -> Self {
                let f: fn($t) -> $t = $abs;
                f(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                false
            }
            // Through i64 so out-of-range floats wrap like PyTorch's CPU casts (300.0 → 44u8).
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                (v as i64) as $t
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
int_arith!(u8, |x| x);
int_arith!(i8, |x: i8| x.wrapping_abs());
int_arith!(i16, |x: i16| x.wrapping_abs());
int_arith!(i32, |x: i32| x.wrapping_abs());
int_arith!(i64, |x: i64| x.wrapping_abs());

impl Arith for bool {
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
    fn add(self, o: Self) -> Self {
        self || o
    }
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    fn mul(self, o: Self) -> Self {
        self && o
    }
    fn div(self, o: Self) -> Self {
        self && o
    }
    fn neg(self) -> Self {
        self
    }
    fn abs(self) -> Self {
        self
    }
    fn is_nan(self) -> bool {
        false
    }
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
}

/// The rest of C's `<math.h>` for the floating compute types, each the std (or `libm`)
/// function of the same name; pointwise kernels in `cpu::unary` and `cpu::binary` use them.
pub trait Libm: FloatMath {
    fn exp2(self) -> Self;
    fn exp_m1(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn erfc(self) -> Self;
    fn atan2(self, x: Self) -> Self;
    fn hypot(self, o: Self) -> Self;
    fn is_infinite(self) -> bool;
    /// `|self|` with the sign bit of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// The inverse error function.
    fn erfinv(self) -> Self;
}

macro_rules! libm_impl {
    ($t:ty, $erfc:path) => {
        impl Libm for $t {
            #[inline(always)]
            fn exp2(self) -> Self {
                <$t>::exp2(self)
            }
            #[inline(always)]
            fn exp_m1(self) -> Self {
                <$t>::exp_m1(self)
            }
            #[inline(always)]
            fn log2(self) -> Self {
                <$t>::log2(self)
            }
            #[inline(always)]
            fn log10(self) -> Self {
                <$t>::log10(self)
            }
            #[inline(always)]
            fn tan(self) -> Self {
                <$t>::tan(self)
            }
            #[inline(always)]
            fn asin(self) -> Self {
                <$t>::asin(self)
            }
            #[inline(always)]
            fn acos(self) -> Self {
                <$t>::acos(self)
            }
            #[inline(always)]
            fn atan(self) -> Self {
                <$t>::atan(self)
            }
            #[inline(always)]
            fn sinh(self) -> Self {
                <$t>::sinh(self)
            }
            #[inline(always)]
            fn cosh(self) -> Self {
                <$t>::cosh(self)
            }
            #[inline(always)]
            fn asinh(self) -> Self {
                <$t>::asinh(self)
            }
            #[inline(always)]
            fn acosh(self) -> Self {
                <$t>::acosh(self)
            }
            #[inline(always)]
            fn atanh(self) -> Self {
                <$t>::atanh(self)
            }
            #[inline(always)]
            fn erfc(self) -> Self {
                $erfc(self)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                <$t>::atan2(self, x)
            }
            #[inline(always)]
            fn hypot(self, o: Self) -> Self {
                <$t>::hypot(self, o)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn copysign(self, sign: Self) -> Self {
                <$t>::copysign(self, sign)
            }
            #[inline(always)]
            fn erfinv(self) -> Self {
                crate::special::erfinv(self as f64) as $t
            }
        }
    };
}
libm_impl!(f32, libm::erfcf);
libm_impl!(f64, libm::erfc);

/// Rounding to an integral value, for every numeric compute type: the identity on
/// integers, as PyTorch's `floor`/`ceil`/`round`/`trunc` of an integer tensor.
pub trait Rounding: Copy {
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn trunc(self) -> Self;
    /// Halves go to the even neighbour (`torch.round`).
    fn round_even(self) -> Self;
}

macro_rules! rounding_float {
    ($($t:ty),*) => {$(
        impl Rounding for $t {
            #[inline(always)]
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                <$t>::trunc(self)
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
        }
    )*};
}
rounding_float!(f32, f64);

macro_rules! rounding_int {
    ($($t:ty),*) => {$(
        impl Rounding for $t {
            #[inline(always)]
            fn floor(self) -> Self {
                self
            }
            #[inline(always)]
            fn ceil(self) -> Self {
                self
            }
            #[inline(always)]
            fn trunc(self) -> Self {
                self
            }
            #[inline(always)]
            fn round_even(self) -> Self {
                self
            }
        }
    )*};
}
rounding_int!(u8, i8, i16, i32, i64);

/// `fmod` (sign of the dividend) and Python's `remainder` (sign of the divisor), for every
/// numeric compute type. An integer divided by zero gives 0: Rust's `%` would panic, and
/// PyTorch itself raises on CPU but leaves the result undefined on CUDA.
pub trait Modular: Copy {
    fn fmod(self, o: Self) -> Self;
    fn remainder(self, o: Self) -> Self;
}

macro_rules! modular_float {
    ($($t:ty),*) => {$(
        impl Modular for $t {
            #[inline(always)]
            fn fmod(self, o: Self) -> Self {
                self % o
            }
            #[inline(always)]
            fn remainder(self, o: Self) -> Self {
                let r = self % o;
                if r != 0.0 && ((r < 0.0) != (o < 0.0)) {
                    r + o
                } else {
                    r
                }
            }
        }
    )*};
}
modular_float!(f32, f64);

macro_rules! modular_signed {
    ($($t:ty),*) => {$(
        impl Modular for $t {
            #[inline(always)]
            fn fmod(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_rem(o) }
            }
            #[inline(always)]
            fn remainder(self, o: Self) -> Self {
                let r = self.fmod(o);
                if r != 0 && ((r < 0) != (o < 0)) {
                    r.wrapping_add(o)
                } else {
                    r
                }
            }
        }
    )*};
}
modular_signed!(i8, i16, i32, i64);

impl Modular for u8 {
    #[inline(always)]
    fn fmod(self, o: Self) -> Self {
        self.checked_rem(o).unwrap_or(0)
    }
    #[inline(always)]
    fn remainder(self, o: Self) -> Self {
        self.fmod(o)
    }
}

/// Bitwise and/or/xor/not of integers; logical for bools (PyTorch's `bitwise_*`).
pub trait Bits: Copy {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
}

macro_rules! bits_impl {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)]
            fn and(self, o: Self) -> Self {
                self & o
            }
            #[inline(always)]
            fn or(self, o: Self) -> Self {
                self | o
            }
            #[inline(always)]
            fn xor(self, o: Self) -> Self {
                self ^ o
            }
            #[inline(always)]
            fn not(self) -> Self {
                !self
            }
        }
    )*};
}
bits_impl!(bool, u8, i8, i16, i32, i64);

/// Shifts of integers with PyTorch's rule for shift counts outside `0..bits`: a left shift
/// gives 0, a right shift fills with the sign bit.
pub trait Shift: Copy {
    fn shl(self, o: Self) -> Self;
    fn shr(self, o: Self) -> Self;
}

macro_rules! shift_impl {
    ($($t:ty),*) => {$(
        impl Shift for $t {
            #[inline(always)]
            fn shl(self, o: Self) -> Self {
                let bits = <$t>::BITS as i64;
                let n = o as i64;
                if (0..bits).contains(&n) {
                    self.wrapping_shl(n as u32)
                } else {
                    0
                }
            }
            #[inline(always)]
            fn shr(self, o: Self) -> Self {
                let bits = <$t>::BITS as i64;
                let n = o as i64;
                if (0..bits).contains(&n) {
                    self >> n as u32
                } else if <$t>::MIN == 0 {
                    0
                } else {
                    self >> (bits - 1) as u32
                }
            }
        }
    )*};
}
shift_impl!(u8, i8, i16, i32, i64);

/// Whether a value is infinite: never for integers and bools.
pub trait Classify: Arith {
    fn is_inf(self) -> bool;
}

macro_rules! classify_exact {
    ($($t:ty),*) => {$(
        impl Classify for $t {
            #[inline(always)]
            fn is_inf(self) -> bool {
                false
            }
        }
    )*};
}
classify_exact!(bool, u8, i8, i16, i32, i64);

impl Classify for f32 {
    #[inline(always)]
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

impl Classify for f64 {
    #[inline(always)]
    fn is_inf(self) -> bool {
        self.is_infinite()
    }
}

macro_rules! plain_element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            type Compute = $t;
            #[inline(always)]
            fn up(self) -> $t {
                self
            }
            #[inline(always)]
            fn down(c: $t) -> $t {
                c
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                Arith::to_f64(self)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> $t {
                <$t as Arith>::from_f64(v)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> $t {
                <$t as Arith>::from_i64(v)
            }
        }
    };
}
plain_element!(u8, U8);
plain_element!(i8, I8);
plain_element!(i16, I16);
plain_element!(i32, I32);
plain_element!(i64, I64);
plain_element!(f32, F32);
plain_element!(f64, F64);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    type Compute = bool;
    #[inline(always)]
    fn up(self) -> bool {
        self
    }
    #[inline(always)]
    fn down(c: bool) -> bool {
        c
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn from_f64(v: f64) -> bool {
        v != 0.0
    }
    fn from_i64(v: i64) -> bool {
        v != 0
    }
}

macro_rules! half_element {
    ($t:ty, $dt:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$dt;
            type Compute = f32;
            #[inline(always)]
            fn up(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn down(c: f32) -> $t {
                <$t>::from_f32(c)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                <$t>::to_f64(self)
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                <$t>::to_f32(self) as i64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> $t {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> $t {
                <$t>::from_f64(v as f64)
            }
        }
    };
}
half_element!(f16, F16);
half_element!(bf16, BF16);

/// The element type of a `DType` variant name: `element_type!(F32)` is `f32`. The one table
/// from dtype names to Rust types; [`with_dtype!`] and kiln's generated dispatch use it.
#[macro_export]
macro_rules! element_type {
    (Bool) => {
        bool
    };
    (U8) => {
        u8
    };
    (I8) => {
        i8
    };
    (I16) => {
        i16
    };
    (I32) => {
        i32
    };
    (I64) => {
        i64
    };
    (F16) => {
        $crate::half::f16
    };
    (BF16) => {
        $crate::half::bf16
    };
    (F32) => {
        f32
    };
    (F64) => {
        f64
    };
}

/// Calls `$body` with the type alias `$T` bound to the element type of `$dtype` — the one
/// place a runtime dtype becomes a static type for every dtype.
#[macro_export]
macro_rules! with_dtype {
    ($dtype:expr, $T:ident, $body:block) => {
        $crate::with_dtype!(@arms $dtype, $T, $body, [Bool, U8, I8, I16, I32, I64, F16, BF16, F32, F64])
    };
    (@arms $dtype:expr, $T:ident, $body:block, [$($d:ident),*]) => {
        match $dtype {
            $($crate::DType::$d => {
                type $T = $crate::element_type!($d);
                $body
            })*
        }
    };
}

/// Reinterprets a slice of `T` as a slice of `U` when they are the same type.
pub(crate) fn same_type<T: 'static, U: 'static>(s: &[T]) -> Option<&[U]> {
    if TypeId::of::<T>() != TypeId::of::<U>() {
        return None;
    }
    // SAFETY: `T` and `U` are the same type (equal `TypeId`s), so this is the identity cast:
    // same pointer, length, alignment and lifetime.
    Some(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<U>(), s.len()) })
}

/// Mutable counterpart of [`same_type`].
pub(crate) fn same_type_mut<T: 'static, U: 'static>(s: &mut [T]) -> Option<&mut [U]> {
    if TypeId::of::<T>() != TypeId::of::<U>() {
        return None;
    }
    // SAFETY: as in `same_type`; the unique borrow of `s` moves into the returned slice.
    Some(unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<U>(), s.len()) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_c_semantics() {
        assert_eq!(300i64.cast::<u8>(), 44);
        assert_eq!((-1.7f64).cast::<i32>(), -1);
        assert!(0.5f32.cast::<bool>());
        assert_eq!(true.cast::<f32>(), 1.0);
        assert_eq!(f16::from_f32(2.5).cast::<f64>(), 2.5);
    }
}
