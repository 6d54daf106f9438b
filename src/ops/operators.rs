//! Rust's arithmetic operators on `Tensor`, as Python's on `torch.Tensor`.
//!
//! | Rust | PyTorch | calls |
//! |---|---|---|
//! | `&a + &b`, `a + b` | `a + b` | [`Tensor::add`] |
//! | `&a - &b` | `a - b` | [`Tensor::sub`] |
//! | `&a * &b` | `a * b` | [`Tensor::mul`] |
//! | `&a / &b` | `a / b` (true division) | [`Tensor::div`] |
//! | `&a % &b` | `a % b` | [`Tensor::remainder`] |
//! | `-&a` | `-a` | [`Tensor::neg`] |
//! | `&a + 2.0`, `2.0 + &a` | `a + 2.0`, `2.0 + a` | [`Tensor::add_scalar`] |
//! | `&a - 2.0` | `a - 2.0` | [`Tensor::sub_scalar`] |
//! | `2.0 - &a` | `2.0 - a` (`torch.rsub`) | `a.neg()?.add_scalar(2.0)` |
//! | `&a * 2.0`, `2.0 * &a` | `a * 2.0` | [`Tensor::mul_scalar`] |
//! | `&a / 2.0` | `a / 2.0` | [`Tensor::div_scalar`] |
//! | `2.0 / &a` | `2.0 / a` | `a.reciprocal()?.mul_scalar(2.0)`, as PyTorch's `__rtruediv__` |
//! | `&a % 2.0` | `a % 2.0` | [`Tensor::remainder_scalar`] |
//! | `a += &b`, `a += 2.0` (also `-=`, `*=`, `/=`, `%=`) | `a += b` | [`Tensor::add_`], … |
//!
//! A scalar on the right may be `f64`, `f32`, `i64` or `i32` ([`ScalarOperand`]); on the left,
//! `f64` or `i64` (write `f64::from(x) * &t` or `&t * x` for an `f32` `x`), so that bare
//! literals need no suffix on either side. Scalars are Python numbers to promotion
//! (PyTorch's "wrapped numbers"), so `int64_tensor * 2.5` is a float32 tensor and
//! `float16_tensor * 2.0` stays float16. Each operand may be borrowed or owned. Results have
//! the autograd history the named op records.
//!
//! # Panics
//!
//! An operator cannot return a `Result`, so on an error (shapes that do not broadcast, a dtype
//! the op rejects, an in-place result that cannot be cast back, tensors on two devices) it
//! panics with the message the fallible method returns, e.g.
//! `"add: The size of tensor a (3) must match the size of tensor b (4) at non-singleton
//! dimension 0"`. Call the methods above (`a.add(&b)?`) where the input is not known to be valid.

use crate::{Scalar, Tensor};
use std::ops::{
    Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Rem, RemAssign, Sub, SubAssign,
};

/// Unwraps an operator's result, panicking with the op's own message.
#[track_caller]
fn ok(r: crate::Result<Tensor>) -> Tensor {
    r.unwrap_or_else(|e| panic!("{e}"))
}

/// `Tensor ⊕ Tensor` for every borrowed/owned pairing, and `Tensor ⊕= Tensor`.
macro_rules! tensor_tensor {
    ($Trait:ident, $method:ident, $op:ident, $Assign:ident, $assign:ident, $op_:ident) => {
        impl $Trait<&Tensor> for &Tensor {
            type Output = Tensor;
            /// Panics with the op's error message; see the module docs.
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$op(self, rhs))
            }
        }
        impl $Trait<Tensor> for &Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$op(self, &rhs))
            }
        }
        impl $Trait<&Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: &Tensor) -> Tensor {
                ok(Tensor::$op(&self, rhs))
            }
        }
        impl $Trait<Tensor> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: Tensor) -> Tensor {
                ok(Tensor::$op(&self, &rhs))
            }
        }
        impl $Assign<&Tensor> for Tensor {
            /// In place through the op's `_` form (PyTorch's `a += b`); panics with its
            /// error message, e.g. when the result's dtype cannot be cast back into `self`.
            #[track_caller]
            fn $assign(&mut self, rhs: &Tensor) {
                ok(self.$op_(rhs));
            }
        }
        impl $Assign<Tensor> for Tensor {
            #[track_caller]
            fn $assign(&mut self, rhs: Tensor) {
                ok(self.$op_(&rhs));
            }
        }
    };
}

tensor_tensor!(Add, add, add, AddAssign, add_assign, add_);
tensor_tensor!(Sub, sub, sub, SubAssign, sub_assign, sub_);
tensor_tensor!(Mul, mul, mul, MulAssign, mul_assign, mul_);
tensor_tensor!(Div, div, div, DivAssign, div_assign, div_);
tensor_tensor!(Rem, rem, remainder, RemAssign, rem_assign, remainder_);

/// The scalar types the operators take on a tensor's right: `f64`, `f32`, `i64`, `i32`.
///
/// The operators are generic over it so that a literal (`&t * 2.5`, `&t + 1`) needs no
/// suffix even when a method is called on the result (`(&t * 2.5).sum()`).
pub trait ScalarOperand: Into<Scalar> + Copy + sealed::Sealed {}

mod sealed {
    pub trait Sealed {}
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl ScalarOperand for $t {}
    )*};
}
scalar_operand!(f64, f32, i64, i32);

/// `Tensor ⊕ scalar` and `Tensor ⊕= scalar`.
macro_rules! tensor_scalar {
    ($Trait:ident, $method:ident, $op:ident, $Assign:ident, $assign:ident, $op_:ident) => {
        impl<S: ScalarOperand> $Trait<S> for &Tensor {
            type Output = Tensor;
            /// Panics with the op's error message; see the module docs.
            #[track_caller]
            fn $method(self, rhs: S) -> Tensor {
                ok(Tensor::$op(self, rhs))
            }
        }
        impl<S: ScalarOperand> $Trait<S> for Tensor {
            type Output = Tensor;
            #[track_caller]
            fn $method(self, rhs: S) -> Tensor {
                ok(Tensor::$op(&self, rhs))
            }
        }
        impl<S: ScalarOperand> $Assign<S> for Tensor {
            #[track_caller]
            fn $assign(&mut self, rhs: S) {
                ok(self.$op_(rhs));
            }
        }
    };
}

tensor_scalar!(Add, add, add_scalar, AddAssign, add_assign, add_scalar_);
tensor_scalar!(Sub, sub, sub_scalar, SubAssign, sub_assign, sub_scalar_);
tensor_scalar!(Mul, mul, mul_scalar, MulAssign, mul_assign, mul_scalar_);
tensor_scalar!(Div, div, div_scalar, DivAssign, div_assign, div_scalar_);
tensor_scalar!(
    Rem,
    rem,
    remainder_scalar,
    RemAssign,
    rem_assign,
    remainder_scalar_
);

/// `scalar - t`: PyTorch's `rsub`, i.e. `-t + scalar` (a bool tensor is rejected by `neg`).
fn rsub(t: &Tensor, s: impl Into<Scalar>) -> crate::Result<Tensor> {
    t.neg()?.add_scalar(s)
}

/// `scalar / t`: PyTorch's `__rtruediv__`, `t.reciprocal() * scalar`.
fn rdiv(t: &Tensor, s: impl Into<Scalar>) -> crate::Result<Tensor> {
    t.reciprocal()?.mul_scalar(s)
}

/// `scalar ⊕ Tensor` (`2.0 * &a`, `1.0 - &a`), for `f64` and `i64` only: with a second float
/// or int type a bare literal on the left would have no type until too late to call a method
/// on the result (`(2.0 * &a).sum()`), and Rust allows no impl generic over the left operand.
macro_rules! scalar_tensor {
    ($($s:ty),*) => {$(
        impl Add<&Tensor> for $s {
            type Output = Tensor;
            /// Panics with the op's error message; see the module docs.
            #[track_caller]
            fn add(self, rhs: &Tensor) -> Tensor {
                ok(rhs.add_scalar(self))
            }
        }
        impl Add<Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn add(self, rhs: Tensor) -> Tensor {
                ok(rhs.add_scalar(self))
            }
        }
        impl Sub<&Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn sub(self, rhs: &Tensor) -> Tensor {
                ok(rsub(rhs, self))
            }
        }
        impl Sub<Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn sub(self, rhs: Tensor) -> Tensor {
                ok(rsub(&rhs, self))
            }
        }
        impl Mul<&Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn mul(self, rhs: &Tensor) -> Tensor {
                ok(rhs.mul_scalar(self))
            }
        }
        impl Mul<Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn mul(self, rhs: Tensor) -> Tensor {
                ok(rhs.mul_scalar(self))
            }
        }
        impl Div<&Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn div(self, rhs: &Tensor) -> Tensor {
                ok(rdiv(rhs, self))
            }
        }
        impl Div<Tensor> for $s {
            type Output = Tensor;
            #[track_caller]
            fn div(self, rhs: Tensor) -> Tensor {
                ok(rdiv(&rhs, self))
            }
        }
    )*};
}

scalar_tensor!(f64, i64);

impl Neg for &Tensor {
    type Output = Tensor;
    /// [`Tensor::neg`]; panics with its error message (a bool tensor); see the module docs.
    #[track_caller]
    fn neg(self) -> Tensor {
        ok(Tensor::neg(self))
    }
}

impl Neg for Tensor {
    type Output = Tensor;
    /// [`Tensor::neg`]; panics with its error message (a bool tensor); see the module docs.
    #[track_caller]
    fn neg(self) -> Tensor {
        ok(Tensor::neg(&self))
    }
}
