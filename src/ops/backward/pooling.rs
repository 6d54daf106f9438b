//! Gradients of max pooling (`_max_pool2d`, `adaptive_max_pool2d`) and the sizes the `im2col` / `col2im`
//! formulas need.

use super::shaping::{i64s, zeros_like_grad};
use crate::{Result, Tensor};

/// Backward of `_max_pool2d` and `adaptive_max_pool2d`: each cell's gradient added at the
/// flat `H × W` index its maximum came from (overlapping windows may pick one element twice).
pub fn max_indices_backward(grad: &Tensor, sizes: &[usize], indices: &Tensor) -> Result<Tensor> {
    let lead = sizes.len() - 2;
    let g_sizes = grad.shape();
    let mut cells = i64s(&sizes[..lead]);
    cells.push((g_sizes[lead] * g_sizes[lead + 1]) as i64);
    let mut plane = sizes[..lead].to_vec();
    plane.push(sizes[lead] * sizes[lead + 1]);
    zeros_like_grad(grad, &plane)?
        .scatter_add(-1, &indices.reshape(&cells)?, &grad.reshape(&cells)?)?
        .reshape(i64s(sizes))
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
