//! Operators: the generated API (`include!`d from `OUT_DIR`), plus the hand-written Rust the
//! YAML points at — explicit ops (views, dtype conversion), composites, backward helpers.

pub(crate) mod backward;
pub(crate) mod composite;
pub(crate) mod elementwise;
pub(crate) mod explicit;
pub(crate) mod indexing;
pub(crate) mod launch;
pub(crate) mod linalg;
pub(crate) mod losses;
pub(crate) mod nn;
pub(crate) mod normalization;
pub(crate) mod optim;
pub(crate) mod reducing;
pub(crate) mod shaping;
pub(crate) mod sorting;

// Generated code keeps one allow: a generated function takes its PyTorch schema's arguments,
// however many (conv_transpose2d takes 8, native_batch_norm_backward 10). Narrower allows
// (`non_snake_case` for `op__softmax`, `unused_imports` on a method-only op's re-export)
// sit on the generated items that need them.
#[allow(clippy::too_many_arguments)]
mod generated {
    use crate::autograd::{self, Node, NodeBase, SavedTensor};
    use crate::ops::backward::*;
    use crate::ops::launch;
    use crate::tensor::promotion::Operand;
    use crate::{DType, Device, Error, Result, Scalar, Tensor};
    use kiln_kernels::Element;
    use std::sync::{Arc, Weak};

    include!(concat!(env!("OUT_DIR"), "/ops.rs"));
}

pub use generated::*;
pub use optim::{_fused_adagrad_, _fused_adam_, _fused_adamw_, _fused_rmsprop_, _fused_sgd_};
