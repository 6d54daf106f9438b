//! Gradients of `_conv_forward` (a batched convolution with one group) and of `_conv_grouped`
//! (few channels per group).

use crate::ops::backward::i64s;
use crate::{DType, Result, Tensor};

type Grads3 = (Option<Tensor>, Option<Tensor>, Option<Tensor>);

/// `(input, weight, bias)` gradients of `_conv_forward` for the output gradient `grad`
/// `[B, O, *L]`, built from differentiable ops (so double backward works):
/// - input: with stride 1 everywhere, a convolution of `grad` with the weight's channels
///   swapped and its kernel flipped, padded by `dilation * (k - 1) - padding` (the same fast
///   forward); otherwise `col2im(Wᵀ @ grad)`;
/// - weight: `_conv_weight_backward` (`grad @ im2col(input)ᵀ` summed over the batch);
/// - bias: `grad` summed over every dim but the channels.
pub fn conv_forward_grads(
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    mask: [bool; 3],
) -> Result<Grads3> {
    let n = weight.dim() - 2;
    let full = |v: &[i64]| -> Vec<i64> {
        if v.len() == 1 {
            vec![v[0]; n]
        } else {
            v.to_vec()
        }
    };
    let (st, pd, dl) = (full(stride), full(padding), full(dilation));
    let k = i64s(&weight.shape()[2..]);
    let (b, o, c) = (
        input.shape()[0] as i64,
        weight.shape()[0] as i64,
        input.shape()[1] as i64,
    );
    let ck = c * k.iter().product::<i64>();
    let g = grad.reshape([b, o, -1])?;
    let dx = if mask[0] {
        let back_pad: Vec<i64> = (0..n).map(|i| dl[i] * (k[i] - 1) - pd[i]).collect();
        if st.iter().all(|&s| s == 1) && back_pad.iter().all(|&p| p >= 0) {
            // Flipping every kernel dim reverses the flattened kernel: one gather of the
            // contiguous weight, then a transposed view (the kernel packs it anyway).
            let kk: i64 = k.iter().product();
            let rev = Tensor::arange_on(kk - 1, -1, -1, DType::I64, weight.device())?;
            let flipped = weight
                .reshape([o, -1, kk])?
                .index_select(2, &rev)?
                .reshape(i64s(weight.shape()))?
                .transpose(0, 1)?;
            Some(crate::_conv_forward(
                grad,
                &flipped,
                None,
                [1],
                &back_pad,
                &dl,
            )?)
        } else {
            let cols = weight.reshape([o, ck])?.t()?.matmul(&g)?;
            Some(crate::col2im(
                &cols,
                i64s(&input.shape()[2..]),
                &k,
                &dl,
                &pd,
                &st,
            )?)
        }
    } else {
        None
    };
    let dw = if mask[1] {
        Some(crate::_conv_weight_backward(
            grad, input, &k, &st, &pd, &dl,
        )?)
    } else {
        None
    };
    let db = if mask[2] {
        let dims: Vec<i64> = std::iter::once(0).chain(2..n as i64 + 2).collect();
        Some(grad.sum_dim(&dims)?)
    } else {
        None
    };
    Ok((dx, dw, db))
}

/// `(grad_output, input)` gradients of `_conv_weight_backward`, which is linear in each: for
/// a gradient `gw` of its output (a weight-shaped tensor), `grad_output` gets the forward
/// convolution of `input` with `gw`, and `input` gets that convolution's input gradient.
pub fn conv_weight_backward_grads(
    gw: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let dgy = if mask[0] {
        Some(crate::_conv_forward(
            input, gw, None, stride, padding, dilation,
        )?)
    } else {
        None
    };
    let dx = if mask[1] {
        let mask = [true, false, false];
        conv_forward_grads(grad_output, input, gw, stride, padding, dilation, mask)?.0
    } else {
        None
    };
    Ok((dgy, dx))
}

/// `(input, weight, bias)` gradients of `_conv_grouped`: the input's and the weight's are
/// their own kernels, the bias's the output gradient summed over all but channels.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_grads(
    grad: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mask: [bool; 3],
) -> Result<Grads3> {
    let dx = mask[0]
        .then(|| {
            let size = i64s(input.shape());
            crate::_conv_grouped_input_backward(
                grad, weight, &size, stride, padding, dilation, groups,
            )
        })
        .transpose()?;
    let dw = mask[1]
        .then(|| {
            let k = i64s(&weight.shape()[2..]);
            crate::_conv_grouped_weight_backward(grad, input, &k, stride, padding, dilation, groups)
        })
        .transpose()?;
    let db = mask[2]
        .then(|| {
            let dims: Vec<i64> = std::iter::once(0).chain(2..grad.dim() as i64).collect();
            grad.sum_dim(&dims)
        })
        .transpose()?;
    Ok((dx, dw, db))
}

/// `(grad_output, weight)` gradients of `_conv_grouped_input_backward`, which is linear in
/// each: for a gradient `gx` of its (input-shaped) output, `grad_output` gets the forward
/// convolution of `gx` with the weight, and the weight gets that convolution's weight
/// gradient.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_input_backward_grads(
    gx: &Tensor,
    grad_output: &Tensor,
    weight: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let dgy = mask[0]
        .then(|| crate::_conv_grouped(gx, weight, None, stride, padding, dilation, groups))
        .transpose()?;
    let dw = mask[1]
        .then(|| {
            let k = i64s(&weight.shape()[2..]);
            crate::_conv_grouped_weight_backward(
                grad_output,
                gx,
                &k,
                stride,
                padding,
                dilation,
                groups,
            )
        })
        .transpose()?;
    Ok((dgy, dw))
}

/// `(grad_output, input)` gradients of `_conv_grouped_weight_backward`, linear in each: for
/// a gradient `gw` of its (weight-shaped) output, `grad_output` gets the forward
/// convolution of the input with `gw`, and the input gets that convolution's input gradient.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_weight_backward_grads(
    gw: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mask: [bool; 2],
) -> Result<(Option<Tensor>, Option<Tensor>)> {
    let dgy = mask[0]
        .then(|| crate::_conv_grouped(input, gw, None, stride, padding, dilation, groups))
        .transpose()?;
    let dx = mask[1]
        .then(|| {
            let size = i64s(input.shape());
            crate::_conv_grouped_input_backward(
                grad_output,
                gw,
                &size,
                stride,
                padding,
                dilation,
                groups,
            )
        })
        .transpose()?;
    Ok((dgy, dx))
}
