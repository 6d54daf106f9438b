//! Operators: the generated API (`include!`d from `OUT_DIR`), plus the hand-written Rust the
//! YAML points at — explicit ops (views, dtype conversion), composites in one file per operator
//! family, and the backward helpers (`backward/`, one file per family).

pub(crate) mod amp;
pub(crate) mod attention;
pub(crate) mod backward;
pub(crate) mod conversion;
pub(crate) mod convolution;
pub(crate) mod create;
pub(crate) mod dropout;
pub(crate) mod elementwise;
pub(crate) mod embedding;
pub(crate) mod explicit;
pub(crate) mod indexing;
pub(crate) mod inplace;
pub(crate) mod linalg;
pub(crate) mod linear;
pub(crate) mod losses;
pub(crate) mod matmul;
pub(crate) mod normalization;
pub mod operators;
pub(crate) mod optim;
pub(crate) mod padding;
pub(crate) mod pixel_shuffle;
pub(crate) mod pooling;
pub(crate) mod random;
pub(crate) mod reducing;
pub(crate) mod repeat;
pub(crate) mod selection;
pub(crate) mod shaping;
pub(crate) mod sorting;
pub(crate) mod split_join;
pub(crate) mod subscript;

/// Whether `t`'s values can be read: false on the meta device. A composite skips the checks
/// only values could fail (an index out of range, a zero divisor) when they cannot, as
/// PyTorch's meta functions do; every shape and dtype check still runs.
pub(crate) fn has_values(t: &crate::Tensor) -> bool {
    !t.device().is_meta()
}

// Generated code keeps one allow: a generated function takes its PyTorch schema's arguments,
// however many (conv_transpose2d takes 8, native_batch_norm_backward 10). Narrower allows
// (`non_snake_case` for `op__softmax`, `unused_imports` on a method-only op's re-export)
// sit on the generated items that need them.
#[allow(clippy::too_many_arguments)]
mod generated {
    use crate::autograd::{self, Node, NodeBase, SavedTensor};
    use crate::dispatch::launch;
    use crate::ops::backward::*;
    use crate::tensor::promotion::Operand;
    use crate::{DType, Device, Error, Result, Scalar, Tensor};
    use kiln_kernels::Element;
    use std::sync::{Arc, Weak};

    include!(concat!(env!("OUT_DIR"), "/ops.rs"));
}

pub use generated::*;
pub use optim::{_fused_adagrad_, _fused_adam_, _fused_adamw_, _fused_rmsprop_, _fused_sgd_};
