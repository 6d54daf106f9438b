//! CPU kernels, one file per op family.

pub mod binary;
pub mod compare;
pub mod pointwise;
pub mod strided;
pub mod unary;
pub mod reduce;
pub mod softmax;
pub mod matmul;
pub mod index;
pub mod shape;
