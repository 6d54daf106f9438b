//! CPU kernels, one file per op family.

pub mod amp;
pub mod attention;
pub mod binary;
pub mod compare;
pub mod conv;
pub mod conv_grouped;
pub mod fold;
pub mod index;
pub mod loss;
pub mod matmul;
pub mod narrow;
pub mod norm;
pub mod optim;
pub mod pointwise;
pub mod pool;
mod pool_nhwc;
mod pool_window;
pub mod reduce;
pub mod scan;
mod scratch;
pub mod shape;
pub mod softmax;
pub mod strided;
pub mod transpose;
pub mod unary;
pub mod upsample;
pub mod vmath;
