//! Gradients of max pooling (`_max_pool2d`, `adaptive_max_pool2d`) and the sizes the `im2col` / `col2im`
//! formulas need.

use super::shaping::i64s;
use crate::{Result, Tensor};

/// Backward of `_max_pool2d` and `adaptive_max_pool2d`: each cell's gradient added at the
/// flat `H × W` index its maximum came from (overlapping windows may pick one element twice),
/// by `_max_pool2d_backward`; an unbatched `[C, H, W]` image runs as a batch of one.
pub fn max_indices_backward(grad: &Tensor, sizes: &[usize], indices: &Tensor) -> Result<Tensor> {
    let lead = sizes.len() - 2;
    let input_size = i64s(&sizes[lead..]);
    if lead == 2 {
        return crate::_max_pool2d_backward(grad, indices, &input_size);
    }
    crate::_max_pool2d_backward(&grad.unsqueeze(0)?, &indices.unsqueeze(0)?, &input_size)?
        .squeeze_dim(0)
}

/// Backward of `_max_pool2d_backward` for its `grad_output`: each cell reads the input
/// gradient's gradient at the index its window picked.
pub fn max_indices_double_backward(grad: &Tensor, indices: &Tensor) -> Result<Tensor> {
    let (s, g) = (indices.shape(), grad.shape());
    let (b, c) = (s[0] as i64, s[1] as i64);
    let cells = [b, c, (s[2] * s[3]) as i64];
    grad.reshape([b, c, (g[2] * g[3]) as i64])?
        .gather(-1, &indices.reshape(cells)?)?
        .reshape(i64s(indices.shape()))
}

/// The spatial sizes of an image of `sizes` whose kernel is `kernel_size` (its last dims).
pub fn self_spatial(sizes: &[usize], kernel_size: &[i64]) -> Vec<i64> {
    i64s(&sizes[sizes.len() - kernel_size.len()..])
}

/// `kernel_size` written out for `n` spatial dims (one value is repeated).
pub fn full_kernel(kernel_size: &[i64], n: usize) -> Vec<i64> {
    if kernel_size.len() == 1 {
        vec![kernel_size[0]; n]
    } else {
        kernel_size.to_vec()
    }
}
