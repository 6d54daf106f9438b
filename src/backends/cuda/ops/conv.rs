//! The convolution kernels on CUDA (`_conv_forward`, `_conv_grouped` and their gradients):
//! im2col and batched cuBLAS products from tensor ops, written into the allocated output;
//! one group is the grouped composite with `groups = 1`. `conv1d/2d/3d` do not call them on
//! CUDA (they keep their composite); they keep the ops whole on every backend.

use crate::ops::backward::i64s;
use crate::{Result, Tensor};

/// `_conv_forward` on CUDA: `_conv_grouped`'s composite with one group.
#[allow(clippy::too_many_arguments)]
pub fn conv_forward(
    op: &str,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    out: &Tensor,
) -> Result<()> {
    conv_grouped(op, input, weight, bias, stride, padding, dilation, 1, out)
}

/// `_conv_weight_backward` on CUDA: `_conv_grouped_weight_backward`'s with one group.
#[allow(clippy::too_many_arguments)]
pub fn conv_weight_backward(
    op: &str,
    grad_output: &Tensor,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    out: &Tensor,
) -> Result<()> {
    let (k, s, p, d) = (kernel_size, stride, padding, dilation);
    conv_grouped_weight_backward(op, grad_output, input, k, s, p, d, 1, out)
}

/// `_conv_grouped` on CUDA: im2col, then one batched cuBLAS product of each group's weight
/// rows with its columns.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped(
    _op: &str,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    out: &Tensor,
) -> Result<()> {
    let _plain = crate::no_grad();
    let k = i64s(&weight.shape()[2..]);
    let (b, o) = (input.shape()[0] as i64, weight.shape()[0] as i64);
    let cols = crate::im2col(input, &k, dilation, padding, stride)?;
    let (rows, l) = (cols.shape()[1] as i64 / groups, cols.shape()[2] as i64);
    let w = weight.reshape([groups, o / groups, rows])?;
    let mut y = w
        .matmul(&cols.reshape([b, groups, rows, l])?)?
        .reshape([b, o, l])?;
    if let Some(bias) = bias {
        y = y.add(&bias.reshape([o, 1])?)?;
    }
    out.copy_(&y.reshape(out.shape())?)?;
    Ok(())
}

/// `_conv_grouped_input_backward` on CUDA: each group's weight rows transposed times its
/// output gradient, folded back by col2im.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_input_backward(
    _op: &str,
    grad_output: &Tensor,
    weight: &Tensor,
    input_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    out: &Tensor,
) -> Result<()> {
    let _plain = crate::no_grad();
    let k = i64s(&weight.shape()[2..]);
    let (b, o) = (grad_output.shape()[0] as i64, grad_output.shape()[1] as i64);
    let rows: i64 = i64s(&weight.shape()[1..]).iter().product();
    let l: i64 = i64s(&grad_output.shape()[2..]).iter().product();
    let w = weight
        .reshape([groups, o / groups, rows])?
        .transpose(1, 2)?;
    let gy = grad_output.reshape([b, groups, o / groups, l])?;
    let cols = w.matmul(&gy)?.reshape([b, groups * rows, l])?;
    let dx = crate::col2im(&cols, &input_size[2..], &k, dilation, padding, stride)?;
    out.copy_(&dx)?;
    Ok(())
}

/// `_conv_grouped_weight_backward` on CUDA: each group's output gradient times its columns
/// transposed, summed over the batch.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_weight_backward(
    _op: &str,
    grad_output: &Tensor,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    out: &Tensor,
) -> Result<()> {
    let _plain = crate::no_grad();
    let (b, o) = (grad_output.shape()[0] as i64, grad_output.shape()[1] as i64);
    let cols = crate::im2col(input, kernel_size, dilation, padding, stride)?;
    let (rows, l) = (cols.shape()[1] as i64 / groups, cols.shape()[2] as i64);
    let gy = grad_output.reshape([b, groups, o / groups, l])?;
    let cols = cols.reshape([b, groups, rows, l])?.transpose(2, 3)?;
    let per_image = gy.matmul(&cols)?;
    out.copy_(&per_image.sum_dim(&[0])?.reshape(out.shape())?)?;
    Ok(())
}
