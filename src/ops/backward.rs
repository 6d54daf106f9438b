//! Helpers that backward formulas in derivatives.yaml call. They are built from public,
//! differentiable ops, so a backward pass run under `create_graph` is itself recorded and
//! double backward works.

use crate::autograd::{Node, NodeBase};
use crate::{DType, Device, Result, Scalar, Tensor};
use std::sync::Arc;

/// A possibly negative dim as an index (the forward op already validated it).
fn wrap(dim: i64, ndim: usize) -> Result<usize> {
    kiln_kernels::layout::wrap_dim(dim, ndim).map_err(|m| crate::Error::op("backward", m))
}

/// usize sizes as the i64 list view/reshape take.
pub fn i64s(sizes: &[usize]) -> Vec<i64> {
    sizes.iter().map(|&s| s as i64).collect()
}

/// `grad` reshaped to `sizes` (backward of any reshaping view).
pub fn reshape_to(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    grad.reshape(i64s(sizes))
}

/// `grad` summed down to `sizes` (backward of `expand`).
pub fn sum_to(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    grad.sum_to_size(i64s(sizes))
}

/// Backward of `permute(dims)`: permute by the inverse permutation.
pub fn permute_backward(grad: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let n = dims.len() as i64;
    let mut inv = vec![0i64; dims.len()];
    for (i, &d) in dims.iter().enumerate() {
        inv[(if d < 0 { d + n } else { d }) as usize] = i as i64;
    }
    grad.permute(&inv)
}

/// Reduced dims of a `dim` argument, wrapped, or all dims for `None`/empty.
fn reduced_dims(ndim: usize, dim: Option<&[i64]>) -> Vec<usize> {
    match dim {
        Some(d) if !d.is_empty() => {
            let mut v: Vec<usize> = d
                .iter()
                .map(|&x| {
                    if x < 0 {
                        (x + ndim.max(1) as i64) as usize
                    } else {
                        x as usize
                    }
                })
                .collect();
            v.sort_unstable();
            v
        }
        _ => (0..ndim).collect(),
    }
}

/// Backward of `sum`: re-insert reduced dims, then broadcast back to the input's shape.
pub fn sum_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<Tensor> {
    let mut g = grad.clone();
    if !keepdim && !sizes.is_empty() {
        for d in reduced_dims(sizes.len(), dim) {
            g = g.unsqueeze(d as i64)?;
        }
    }
    g.expand(i64s(sizes))
}

/// Backward of `max()`/`min()` over all elements: the gradient is shared evenly among the
/// elements equal to the result (PyTorch's `evenly_distribute_backward`).
pub fn evenly_distribute_backward(grad: &Tensor, input: &Tensor, value: &Tensor) -> Result<Tensor> {
    let mask = input.eq(value)?.to_dtype(grad.dtype())?;
    let count = mask.sum()?;
    mask.mul(&grad.div(&count)?)
}

/// Backward of `max.dim`/`min.dim`: the gradient goes to the selected index.
pub fn value_selecting_reduction_backward(
    grad: &Tensor,
    dim: i64,
    indices: &Tensor,
    sizes: &[usize],
    keepdim: bool,
) -> Result<Tensor> {
    let (mut g, mut idx) = (grad.clone(), indices.clone());
    if !keepdim && !sizes.is_empty() {
        g = g.unsqueeze(dim)?;
        idx = idx.unsqueeze(dim)?;
    }
    if sizes.is_empty() {
        return Ok(g);
    }
    zeros_like_grad(grad, sizes)?.scatter_add(dim, &idx, &g)
}

/// Backward of `adaptive_max_pool2d`: each cell's gradient added at the flat `H × W` index
/// its maximum came from (overlapping windows may pick one element twice).
pub fn adaptive_max_pool2d_backward(
    grad: &Tensor,
    sizes: &[usize],
    indices: &Tensor,
) -> Result<Tensor> {
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

/// `_softmax_backward_data`'s derivative in `output`: its result is `y (go - Σ go y)`, so
/// `grad · ∂/∂y` is `grad go - grad Σ go y - go Σ grad y` (PyTorch's
/// `softmax_double_backward`).
pub fn softmax_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let go_y = output.mul(grad_output)?.sum_dim_with(&[dim], true, None)?;
    let grad_y = output.mul(grad)?.sum_dim_with(&[dim], true, None)?;
    grad_output
        .mul(grad)?
        .sub(&go_y.mul(grad)?)?
        .sub(&grad_output.mul(&grad_y)?)
}

/// `_log_softmax_backward_data`'s derivative in `grad_output`: its result is
/// `go - exp(y) Σ go`, so `grad - Σ grad exp(y)`.
pub fn log_softmax_double_backward_grad_output(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    let s = grad.mul(&output.exp()?)?.sum_dim_with(&[dim], true, None)?;
    grad.sub(&s)
}

/// `_log_softmax_backward_data`'s derivative in `output`: `-grad exp(y) Σ go`.
pub fn log_softmax_double_backward_output(
    grad: &Tensor,
    grad_output: &Tensor,
    dim: i64,
    output: &Tensor,
) -> Result<Tensor> {
    let s = grad_output.sum_dim_with(&[dim], true, None)?;
    s.mul(&output.exp()?)?.mul(grad)?.neg()
}

/// Backward of `cat`: each input gets its slice of `grad`.
pub fn cat_backward(grad: &Tensor, sizes: &[Vec<usize>], dim: i64) -> Result<Vec<Tensor>> {
    let d = if dim < 0 {
        dim + grad.dim() as i64
    } else {
        dim
    };
    let mut offset = 0i64;
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        // A 1-D empty input took no part in `cat` (PyTorch's legacy rule), whatever `dim` was.
        if s.len() == 1 && s[0] == 0 {
            out.push(zeros_like_grad(grad, &[0])?);
            continue;
        }
        let len = s[d as usize] as i64;
        out.push(grad.narrow(d, offset, len)?);
        offset += len;
    }
    Ok(out)
}

/// Backward of `index_select`: scatter the rows back.
pub fn index_select_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    index: &Tensor,
) -> Result<Tensor> {
    zeros_like_grad(grad, sizes)?.index_add(dim, index, grad)
}

/// Backward of `gather`: scatter-add into zeros.
pub fn gather_backward(grad: &Tensor, sizes: &[usize], dim: i64, index: &Tensor) -> Result<Tensor> {
    zeros_like_grad(grad, sizes)?.scatter_add(dim, index, grad)
}

/// PyTorch's `DelayedError` node: passes no gradient on, failing with its message instead.
struct DelayedError {
    base: NodeBase,
    message: &'static str,
}

impl Node for DelayedError {
    fn name(&self) -> &'static str {
        "DelayedError"
    }
    fn base(&self) -> &NodeBase {
        &self.base
    }
    fn apply(&self, _grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        Err(crate::Error::Autograd(self.message.to_string()))
    }
}

/// `t`'s values, whose backward fails with `message`: for a gradient that is right but
/// whose own derivative the formula that built it does not give.
fn delayed_error(t: &Tensor, message: &'static str) -> Tensor {
    if !t.requires_grad() {
        return t.clone();
    }
    let out = t.detach();
    out.set_grad_fn(
        Arc::new(DelayedError {
            base: NodeBase::new(&[Some(t)], &[&out]),
            message,
        }),
        0,
    );
    out
}

/// `src` cut down to the part `index` covers: scatter ops read no more of it.
fn covered(src: &Tensor, index: &Tensor) -> Result<Tensor> {
    let mut s = src.clone();
    if src.dim() == index.dim() {
        for (d, (&n, &k)) in src.shape().iter().zip(index.shape()).enumerate() {
            if k < n {
                s = s.narrow(d as i64, 0, k as i64)?;
            }
        }
    }
    Ok(s)
}

/// An index-shaped gradient for `src`, padded with zeros to `src`'s shape where `src` is
/// larger than the index (its uncovered elements do not reach the result).
fn pad_to(g: Tensor, sizes: &[usize]) -> Result<Tensor> {
    if g.shape() == sizes || g.dim() != sizes.len() {
        return Ok(g);
    }
    let pad: Vec<i64> = (0..sizes.len())
        .rev()
        .flat_map(|d| [0, (sizes[d] - g.shape()[d]) as i64])
        .collect();
    crate::pad(&g, &pad)
}

/// Backward of `scatter_reduce` with `mean`: the number of values averaged into each slot.
fn scatter_mean_count(
    grad: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    include_self: bool,
) -> Result<Tensor> {
    let start = if include_self {
        grad.ones_like()?
    } else {
        grad.zeros_like()?
    };
    let n = start.scatter_add(dim, index, &src.ones_like()?.to_dtype(grad.dtype())?)?;
    n.masked_fill(&n.eq_scalar(0)?, 1)
}

/// Backward of `scatter_reduce` with `amax`/`amin`: which elements of `self` and of `src`
/// equal their slot's result, and `grad` shared evenly among them.
fn scatter_extremum_split(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    result: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let value = result.gather(dim, index)?;
    let self_is = self_.eq(result)?.to_dtype(self_.dtype())?;
    let src_is = src.eq(&value)?.to_dtype(self_.dtype())?;
    let n = self_is.scatter_add(dim, index, &src_is)?;
    Ok((self_is, src_is, grad.div(&n)?))
}

fn unknown_reduce(reduce: &str) -> crate::Error {
    crate::Error::op(
        "scatter_reduce",
        format!(
            "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got {reduce}."
        ),
    )
}

/// Backward of `scatter_reduce` for `self` (PyTorch's `scatter_reduce_backward`): `sum`
/// passes `grad`; `prod` multiplies it by the product of the other values (computed with
/// `self`'s zeros as ones, so a zero gets the product of the rest); `mean` divides it by
/// the count; `amax`/`amin` share it evenly among the values equal to the result. Without
/// `include_self`, `self` took no part at scattered positions and gets zero there.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward_self(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<Tensor> {
    if index.numel() == 0 {
        return Ok(grad.clone());
    }
    let src = covered(src, index)?;
    let g = match reduce {
        "sum" => grad.clone(),
        "prod" => {
            let masked_self = self_.masked_fill(&self_.eq_scalar(0)?, 1)?;
            let others = masked_self.scatter_reduce_with(dim, index, &src, "prod", include_self)?;
            grad.mul(&others)?.div(&masked_self)?
        }
        "mean" => grad.div(&scatter_mean_count(grad, dim, index, &src, include_self)?)?,
        "amax" | "amin" => {
            let (self_is, _, share) =
                scatter_extremum_split(grad, self_, dim, index, &src, result)?;
            self_is.mul(&share)?
        }
        other => return Err(unknown_reduce(other)),
    };
    if include_self {
        Ok(g)
    } else {
        g.scatter_value(dim, index, 0)
    }
}

/// Backward of `scatter_reduce` for `src` (PyTorch's `scatter_reduce_backward`), of the
/// index's shape and zero-padded to `src`'s. `prod` divides `grad * result` by the element,
/// except where the element is its slot's only zero of `src`: there it takes the product of
/// the others directly.
#[allow(clippy::too_many_arguments)]
pub fn scatter_reduce_backward_src(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    index: &Tensor,
    src: &Tensor,
    reduce: &str,
    include_self: bool,
    result: &Tensor,
) -> Result<Tensor> {
    if index.numel() == 0 {
        return src.zeros_like()?.to_dtype(grad.dtype());
    }
    let part = covered(src, index)?;
    let g = match reduce {
        "sum" => grad.gather(dim, index)?,
        "prod" => {
            let zero = part.eq_scalar(0)?;
            let zeros_in_slot = self_
                .zeros_like()?
                .scatter_add(dim, index, &zero.to_dtype(self_.dtype())?)?
                .gather(dim, index)?;
            let single = zero.logical_and(&zeros_in_slot.eq_scalar(1)?)?;
            let others = self_.scatter_reduce_with(
                dim,
                index,
                &part.masked_fill(&single, 1)?,
                "prod",
                include_self,
            )?;
            let at_zero = grad.mul(&others)?.gather(dim, index)?;
            let elsewhere = grad
                .mul(result)?
                .gather(dim, index)?
                .div(&part.masked_fill(&zero, 1)?)?;
            let g = at_zero.where_cond(&single, &elsewhere)?;
            // With two zeros in a slot each one's gradient is 0 (right), but the formula's
            // own derivative misses their mixed term: PyTorch's DelayedError, which fails
            // only if a second backward reaches it.
            if crate::autograd::is_grad_enabled()
                && zeros_in_slot.gt_scalar(1)?.any()?.item::<bool>()?
            {
                delayed_error(
                    &g,
                    "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are scattered to the same position in self",
                )
            } else {
                g
            }
        }
        "mean" => {
            let n = scatter_mean_count(grad, dim, index, &part, include_self)?;
            grad.gather(dim, index)?.div(&n.gather(dim, index)?)?
        }
        "amax" | "amin" => {
            let (_, src_is, share) =
                scatter_extremum_split(grad, self_, dim, index, &part, result)?;
            src_is.mul(&share.gather(dim, index)?)?
        }
        other => return Err(unknown_reduce(other)),
    };
    pad_to(g, src.shape())
}

/// `d/dx x^e = e x^(e-1)`, zero where the exponent is zero.
pub fn pow_backward_self(grad: &Tensor, input: &Tensor, exponent: &Tensor) -> Result<Tensor> {
    let e1 = exponent.sub_scalar(1)?;
    let d = exponent.mul(&input.pow(&e1)?)?;
    let d = d.masked_fill(&exponent.eq_scalar(0)?, 0)?;
    grad.mul(&d)
}

/// `d/dx x^e` for a scalar exponent.
pub fn pow_backward_scalar(grad: &Tensor, input: &Tensor, exponent: Scalar) -> Result<Tensor> {
    if exponent.to_f64() == 0.0 {
        return grad.zeros_like();
    }
    let d = input
        .pow_scalar(Scalar::Float(exponent.to_f64() - 1.0))?
        .mul_scalar(exponent)?;
    grad.mul(&d)
}

/// `d/de x^e = x^e ln x`, zero where `x == 0` and `e >= 0` (PyTorch's convention).
pub fn pow_backward_exponent(grad: &Tensor, input: &Tensor, result: &Tensor) -> Result<Tensor> {
    let safe = input.masked_fill(&input.eq_scalar(0)?, 1)?;
    grad.mul(&result.mul(&safe.log()?)?)
}

/// Backward of `maximum`/`minimum` for the input `mine`: full gradient where it was chosen,
/// half on ties.
pub fn extremum_backward(
    grad: &Tensor,
    mine: &Tensor,
    theirs: &Tensor,
    is_max: bool,
) -> Result<Tensor> {
    let won = if is_max {
        mine.gt(theirs)?
    } else {
        mine.lt(theirs)?
    };
    let tie = mine.eq(theirs)?;
    let w = won
        .to_dtype(grad.dtype())?
        .add(&tie.to_dtype(grad.dtype())?.mul_scalar(0.5)?)?;
    grad.mul(&w)
}

/// Backward of `clamp`: the gradient passes where the input was inside the bounds.
pub fn clamp_backward(
    grad: &Tensor,
    input: &Tensor,
    min: Option<Scalar>,
    max: Option<Scalar>,
) -> Result<Tensor> {
    let mut keep = input.ge_scalar(f64::NEG_INFINITY)?;
    if let Some(lo) = min {
        keep = keep.mul(&input.ge_scalar(lo)?)?;
    }
    if let Some(hi) = max {
        keep = keep.mul(&input.le_scalar(hi)?)?;
    }
    grad.mul(&keep.to_dtype(grad.dtype())?)
}

/// Backward of `relu`: the gradient where the output is positive.
pub fn threshold_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.gt_scalar(0)?.to_dtype(grad.dtype())?)
}

/// Backward of `sigmoid`: `grad * y * (1 - y)`.
pub fn sigmoid_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(&result.neg()?.add_scalar(1)?)?)
}

/// Backward of `tanh`: `grad * (1 - y²)`.
pub fn tanh_backward(grad: &Tensor, result: &Tensor) -> Result<Tensor> {
    grad.mul(&result.mul(result)?.neg()?.add_scalar(1)?)
}

/// Backward of `silu`: `grad * s * (1 + x (1 - s))` with `s = sigmoid(x)`.
pub fn silu_backward(grad: &Tensor, input: &Tensor) -> Result<Tensor> {
    let s = input.sigmoid()?;
    let inner = input.mul(&s.neg()?.add_scalar(1)?)?.add_scalar(1)?;
    grad.mul(&s.mul(&inner)?)
}

/// Backward of `gelu`, exact or tanh-approximated.
pub fn gelu_backward(grad: &Tensor, input: &Tensor, approximate: &str) -> Result<Tensor> {
    if approximate == "tanh" {
        let k = (2.0 / std::f64::consts::PI).sqrt();
        let x2 = input.mul(input)?;
        let inner = input
            .mul(&x2.mul_scalar(0.044715)?.add_scalar(1)?)?
            .mul_scalar(k)?;
        let t = inner.tanh()?;
        let dinner = x2
            .mul_scalar(3.0 * 0.044715)?
            .add_scalar(1)?
            .mul_scalar(k)?;
        let left = t.add_scalar(1)?.mul_scalar(0.5)?;
        let right = input
            .mul(&t.mul(&t)?.neg()?.add_scalar(1)?)?
            .mul(&dinner)?
            .mul_scalar(0.5)?;
        return grad.mul(&left.add(&right)?);
    }
    let cdf = input
        .mul_scalar(std::f64::consts::FRAC_1_SQRT_2)?
        .erf()?
        .add_scalar(1)?
        .mul_scalar(0.5)?;
    let pdf = input
        .mul(input)?
        .mul_scalar(-0.5)?
        .exp()?
        .mul_scalar(1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
    grad.mul(&cdf.add(&input.mul(&pdf)?)?)
}

/// `d/dx erf(x) = 2/sqrt(pi) e^(-x²)`.
pub fn erf_backward(grad: &Tensor, input: &Tensor) -> Result<Tensor> {
    let d = input
        .mul(input)?
        .neg()?
        .exp()?
        .mul_scalar(2.0 / std::f64::consts::PI.sqrt())?;
    grad.mul(&d)
}

/// Backward of `masked_fill` for `self`: zero where the mask filled.
pub fn masked_fill_backward(grad: &Tensor, mask: &Tensor) -> Result<Tensor> {
    grad.masked_fill(mask, 0)
}

/// Zeros of `sizes` with `grad`'s dtype, on `grad`'s device.
fn zeros_like_grad(grad: &Tensor, sizes: &[usize]) -> Result<Tensor> {
    Tensor::alloc_on("zeros", sizes, grad.dtype(), grad.device())
}

/// Backward of `_to_copy`: the gradient cast back to the input's dtype, on its device.
pub fn to_copy_backward(grad: &Tensor, dtype: DType, device: Device) -> Result<Tensor> {
    grad.to_dtype(dtype)?.to_device(device)
}

/// Backward of `as_strided`, for inputs whose elements do not overlap in memory: route each
/// output element's gradient to the storage slot it read, then read the input's slots back.
pub fn as_strided_backward(
    grad: &Tensor,
    input_sizes: &[usize],
    input_strides: &[usize],
    input_offset: usize,
    size: &[i64],
    stride: &[i64],
    storage_offset: Option<i64>,
) -> Result<Tensor> {
    let flat = |sizes: &[usize], strides: &[usize], offset: usize| -> Vec<i64> {
        let l = crate::Layout {
            sizes: sizes.into(),
            strides: strides.into(),
            offset,
        };
        let mut v = Vec::with_capacity(l.numel());
        kiln_kernels::cpu::strided::for_each_offset(&l, |o| v.push(o as i64));
        v
    };
    let out_sizes: Vec<usize> = size.iter().map(|&s| s as usize).collect();
    let out_strides: Vec<usize> = stride.iter().map(|&s| s as usize).collect();
    let out_idx = flat(
        &out_sizes,
        &out_strides,
        storage_offset.map(|o| o as usize).unwrap_or(input_offset),
    );
    let in_idx = flat(input_sizes, input_strides, input_offset);
    let extent = out_idx
        .iter()
        .chain(&in_idx)
        .copied()
        .max()
        .map(|m| m + 1)
        .unwrap_or(0) as usize;
    let n_out = out_idx.len();
    let n_in = in_idx.len();
    let storage = zeros_like_grad(grad, &[extent])?.index_add(
        0,
        &Tensor::from_vec(out_idx, &[n_out])?.to_device(grad.device())?,
        &grad.reshape([-1])?,
    )?;
    storage
        .index_select(
            0,
            &Tensor::from_vec(in_idx, &[n_in])?.to_device(grad.device())?,
        )?
        .reshape(i64s(input_sizes))
}

/// Backward of `narrow`: zeros with `grad` in the narrowed part.
pub fn narrow_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    start: i64,
    length: i64,
) -> Result<Tensor> {
    let d = wrap(dim, sizes.len())?;
    let start = if start < 0 {
        start + sizes[d] as i64
    } else {
        start
    };
    crate::slice_backward(grad, i64s(sizes), dim, start, start + length, 1)
}

/// Backward of `slice`: normalises the bounds as the view did, then `slice_backward`.
pub fn slice_view_backward(
    grad: &Tensor,
    sizes: &[usize],
    dim: i64,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
) -> Result<Tensor> {
    let d = wrap(dim, sizes.len())?;
    let size = sizes[d] as i64;
    let clamp = |v: i64| {
        if v < 0 {
            (v + size).max(0)
        } else {
            v.min(size)
        }
    };
    let s = clamp(start.unwrap_or(0));
    let e = clamp(end.unwrap_or(size)).max(s);
    crate::slice_backward(grad, i64s(sizes), dim, s, e, step)
}

/// `grad` where `lo < x < hi`, else 0 (`hardtanh`'s gradient).
pub fn hardtanh_backward(grad: &Tensor, x: &Tensor, lo: Scalar, hi: Scalar) -> Result<Tensor> {
    let inside = x.gt_scalar(lo)?.logical_and(&x.lt_scalar(hi)?)?;
    grad.where_cond(&inside, &grad.zeros_like()?)
}

/// `elu`'s gradient: `scale` where `x > 0`, else `scale * alpha * input_scale * e^(x *
/// input_scale)`.
pub fn elu_backward(
    grad: &Tensor,
    x: &Tensor,
    alpha: Scalar,
    scale: Scalar,
    input_scale: Scalar,
) -> Result<Tensor> {
    let (a, s, i) = (
        alpha.to::<f64>(),
        scale.to::<f64>(),
        input_scale.to::<f64>(),
    );
    let negative = grad.mul(&x.mul_scalar(i)?.exp()?)?.mul_scalar(a * s * i)?;
    grad.mul_scalar(s)?.where_cond(&x.gt_scalar(0)?, &negative)
}

/// `softplus`'s gradient: `sigmoid(beta x)`, or 1 past the threshold.
pub fn softplus_backward(
    grad: &Tensor,
    x: &Tensor,
    beta: Scalar,
    threshold: Scalar,
) -> Result<Tensor> {
    let z = x.mul_scalar(beta)?;
    grad.where_cond(&z.gt_scalar(threshold)?, &grad.mul(&z.sigmoid()?)?)
}

/// `hardsigmoid`'s gradient: 1/6 on (-3, 3), else 0.
pub fn hardsigmoid_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let inside = x.gt_scalar(-3)?.logical_and(&x.lt_scalar(3)?)?;
    grad.mul_scalar(1.0 / 6.0)?
        .where_cond(&inside, &grad.zeros_like()?)
}

/// `hardswish`'s gradient: 0 below -3, 1 above 3, `x / 3 + 1/2` between (PyTorch's
/// boundaries).
pub fn hardswish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let middle = grad.mul(&x.mul_scalar(1.0 / 3.0)?.add_scalar(0.5)?)?;
    let upper = grad.where_cond(&x.gt_scalar(3)?, &middle)?;
    grad.zeros_like()?.where_cond(&x.lt_scalar(-3)?, &upper)
}

/// `mish`'s gradient: `t + x sigmoid(x) (1 - t^2)` with `t = tanh(softplus(x))`.
pub fn mish_backward(grad: &Tensor, x: &Tensor) -> Result<Tensor> {
    let t = crate::softplus(x)?.tanh()?;
    let dt = t.mul(&t)?.neg()?.add_scalar(1)?;
    grad.mul(&t.add(&x.mul(&x.sigmoid()?)?.mul(&dt)?)?)
}
pub use crate::ops::normalization::{
    batch_norm_double_backward, batch_norm_grads, group_norm_double_backward, group_norm_grads,
    layer_norm_double_backward, layer_norm_grads, rms_norm_double_backward, rms_norm_grads,
};
pub use crate::ops::reducing::{extreme_backward, norm_backward};

/// `t` summed from the end of `dim` backwards: the backward of `cumsum`.
pub fn reverse_cumsum(t: &Tensor, dim: i64) -> Result<Tensor> {
    if t.dim() == 0 {
        return Ok(t.clone());
    }
    t.flip(&[dim])?.cumsum(dim)?.flip(&[dim])
}

/// Backward of `logcumsumexp` along `dim`: `∂/∂self_j = Σ_{i≥j} grad_i · exp(self_j − result_i)`.
///
/// Each factor `exp(self_j − result_i)` is at most 1 (`result_i` sums `exp(self_j)` among
/// others), but written as `exp(self_j) · exp(−result_i)` its two parts overflow and underflow
/// over a wide range of inputs (`inf · 0 = NaN` once they span a few hundred). So the sum is
/// taken in log space, as PyTorch's `logcumsumexp_backward` does: for the positive and the
/// negative entries of `grad` separately, `exp(self_j + LSE_{i≥j}(log|grad_i| − result_i))`,
/// the `LSE` a reverse `logcumsumexp`. Zero entries of `grad` are `-inf` there and drop out.
/// Where every element up to `j` is `-inf`, `result_j` is `-inf` too and the gradient is
/// undefined (`exp(-inf + inf)`): NaN, as in PyTorch.
///
/// Built from differentiable ops, so double backward works; `log|grad|` is taken of a tensor
/// with 1 in place of the entries not in the part, so its derivative stays finite at zeros.
pub fn logcumsumexp_backward(
    grad: &Tensor,
    self_: &Tensor,
    result: &Tensor,
    dim: i64,
) -> Result<Tensor> {
    if grad.numel() == 0 {
        return Ok(grad.clone());
    }
    let reverse_logcumsumexp = |t: &Tensor| -> Result<Tensor> {
        if t.dim() == 0 {
            return Ok(t.clone());
        }
        t.flip(&[dim])?.logcumsumexp(dim)?.flip(&[dim])
    };
    // `Σ_{i≥j} |grad_i| · exp(self_j − result_i)` over the entries where `mask` is true.
    let part = |mask: Tensor| -> Result<Tensor> {
        let outside = mask.logical_not()?;
        let log_grad = grad
            .abs()?
            .masked_fill(&outside, 1)?
            .log()?
            .masked_fill(&outside, f64::NEG_INFINITY)?;
        reverse_logcumsumexp(&log_grad.sub(result)?)?
            .add(self_)?
            .exp()
    };
    part(grad.gt_scalar(0)?)?.sub(&part(grad.lt_scalar(0)?)?)
}

/// Backward of `cumprod`: `Σ_{k≥i} grad_k · out_k / x_i` when no element is 0. With zeros,
/// per slice along `dim` with its first zero at `z` (O(n), as PyTorch's formula): positions
/// before `z` use that formula (`out_k` is 0 from `z` on); position `z` gets
/// `Σ_{k≥z} grad_k · cumprod(x with x_z = 1)_k`; positions after `z` get 0 (every product
/// through them holds `x_z`).
pub fn cumprod_backward(
    grad: &Tensor,
    self_: &Tensor,
    dim: i64,
    result: &Tensor,
) -> Result<Tensor> {
    if self_.numel() == 0 || self_.dim() == 0 {
        return Ok(grad.clone());
    }
    let grad = grad.to_dtype(self_.dtype())?;
    let result = result.to_dtype(self_.dtype())?;
    let zero = self_.eq_scalar(0)?;
    if !zero.any()?.item::<bool>()? {
        return reverse_cumsum(&grad.mul(&result)?, dim)?.div(self_);
    }
    // Zeros seen up to and including each position.
    let seen = zero.cumsum(dim)?;
    let before = seen.eq_scalar(0)?;
    let first = seen.eq_scalar(1)?.logical_and(&zero)?;
    let one = self_.ones_like()?;
    let safe_x = self_.where_cond(&before, &one)?;
    let early = reverse_cumsum(&grad.mul(&result)?, dim)?.div(&safe_x)?;
    let without_z = one.where_cond(&first, self_)?.cumprod(dim)?;
    let at_z = reverse_cumsum(&grad.mul(&without_z)?, dim)?;
    let late = at_z.where_cond(&first, &self_.zeros_like()?)?;
    early.where_cond(&before, &late)
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
pub use crate::ops::indexing::{
    index_backward, index_put_self_backward, index_put_values_backward,
};
pub use crate::ops::linalg::{
    cholesky_backward, det_backward, inv_backward, qr_backward, solve_backward_a, solve_backward_b,
};
pub use crate::ops::nn::{embedding_bag_backward, embedding_bag_per_sample_weights_backward};

// ---------------------------------------------------------------------------------------
// Losses: the derivatives of the backward kernels, and of the float inputs PyTorch leaves
// without a gradient (loss weights)
// ---------------------------------------------------------------------------------------

/// The number of terms a pointwise loss of `self` and `target` has (what a mean divides by).
fn loss_terms(self_sizes: &[usize], target_sizes: &[usize]) -> Result<usize> {
    kiln_kernels::layout::broadcast_shapes(self_sizes, target_sizes)
        .map(|s| kiln_kernels::cpu::loss::element_count(&s))
        .map_err(|m| crate::Error::op("backward", m))
}

/// `g`, divided by `n` for a mean (`reduction` 1).
fn mean_scaled(g: Tensor, reduction: i64, n: usize) -> Result<Tensor> {
    if reduction == 1 {
        g.div_scalar(n as f64)
    } else {
        Ok(g)
    }
}

/// `mse_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `2 g`, over the terms for a mean.
pub fn mse_loss_double_backward(
    g: &Tensor,
    self_sizes: &[usize],
    target_sizes: &[usize],
    reduction: i64,
) -> Result<Tensor> {
    mean_scaled(
        g.mul_scalar(2)?,
        reduction,
        loss_terms(self_sizes, target_sizes)?,
    )
}

/// `smooth_l1_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `g / beta` where `|x - t| < beta`, else 0; 0 for `beta = 0`.
pub fn smooth_l1_loss_double_backward(
    g: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
) -> Result<Tensor> {
    let d = input.sub(target)?;
    if beta == 0.0 {
        return g.mul(&d)?.zeros_like();
    }
    let inside = d.abs()?.lt_scalar(beta)?.to_dtype(g.dtype())?;
    let n = loss_terms(input.shape(), target.shape())?;
    mean_scaled(g.mul(&inside)?.div_scalar(beta)?, reduction, n)
}

/// `huber_loss_backward`'s derivative in `self` (minus it: in `target`), `g` being
/// `grad * grad_output`: `g` where `|x - t| <= delta`, else 0.
pub fn huber_loss_double_backward(
    g: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
) -> Result<Tensor> {
    let inside = input
        .sub(target)?
        .abs()?
        .le_scalar(delta)?
        .to_dtype(g.dtype())?;
    let n = loss_terms(input.shape(), target.shape())?;
    mean_scaled(g.mul(&inside)?, reduction, n)
}

/// `binary_cross_entropy`'s derivative in `target`: `grad w (ln(1 - x) - ln x)`
/// (PyTorch's `-logit(x)`).
pub fn binary_cross_entropy_target_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let mut g = input.neg()?.log1p()?.sub(&input.log()?)?.mul(grad)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, target.numel())
}

/// `binary_cross_entropy`'s derivative in `weight`: each term without its weight, times
/// `grad`.
pub fn binary_cross_entropy_weight_backward(
    grad: &Tensor,
    input: &Tensor,
    target: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    let terms = crate::binary_cross_entropy_with(input, target, None, 0)?;
    mean_scaled(terms.mul(grad)?, reduction, input.numel())
}

/// `binary_cross_entropy_backward`'s derivative in `self`: its result is
/// `go w (x - t) / (x (1 - x))`, whose derivative in `x` is
/// `go w (x² - 2 x t + t) / (x (1 - x))²` (PyTorch's, with its `1e-12` guards).
pub fn binary_cross_entropy_double_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = kiln_kernels::cpu::loss::BCE_EPSILON;
    let numerator = input
        .mul(input)?
        .sub(&input.mul(target)?.mul_scalar(2)?)?
        .add(target)?;
    let (a, b) = (input.add_scalar(eps)?, input.neg()?.add_scalar(1.0 + eps)?);
    let denominator = a.mul(&a)?.mul(&b.mul(&b)?)?;
    let mut g = numerator.div(&denominator)?.mul(&grad.mul(grad_output)?)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, input.numel())
}

/// `binary_cross_entropy_backward`'s derivative in `target`:
/// `-grad go w / max(x (1 - x), 1e-12)`.
pub fn binary_cross_entropy_double_backward_target(
    grad: &Tensor,
    grad_output: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let eps = kiln_kernels::cpu::loss::BCE_EPSILON;
    let denominator = input
        .neg()?
        .add_scalar(1)?
        .mul(input)?
        .clamp_with(Some(Scalar::Float(eps)), None)?;
    let mut g = grad.mul(grad_output)?.neg()?.div(&denominator)?;
    if let Some(w) = weight {
        g = g.mul(w)?;
    }
    mean_scaled(g, reduction, input.numel())
}

/// The targets with `ignore_index` replaced by class 0, and a float mask (in `dtype`) of
/// the targets kept.
fn nll_kept(target: &Tensor, ignore_index: i64, dtype: DType) -> Result<(Tensor, Tensor)> {
    let keep = target.ne_scalar(ignore_index)?;
    let safe = target.where_cond(&keep, &target.zeros_like()?)?;
    Ok((safe, keep.to_dtype(dtype)?))
}

/// `t`'s entry at each target's class: target-shaped.
fn nll_pick(t: &Tensor, safe: &Tensor) -> Result<Tensor> {
    let cd = crate::ops::losses::class_dim(t);
    t.gather(cd, &safe.unsqueeze(cd)?)?.squeeze_dim(cd)
}

/// Sums `coef` (target-shaped) into a tensor of `weight`'s shape, at each target's class.
fn nll_per_class(weight: &Tensor, safe: &Tensor, coef: &Tensor) -> Result<Tensor> {
    weight.zeros_like()?.to_dtype(coef.dtype())?.index_add(
        0,
        &safe.reshape([-1])?,
        &coef.reshape([-1])?,
    )
}

fn missing_weight() -> crate::Error {
    crate::Error::op(
        "backward",
        "kiln internal error: a weight gradient was asked of an nll_loss without weight",
    )
}

/// `nll_loss_forward`'s derivative in `self`: `nll_loss_backward` of the loss's gradient
/// (`total_weight`, the second output, does not depend on `self`).
pub fn nll_loss_forward_self_backward(
    grads: &[Option<Tensor>],
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    match grads.first().and_then(Option::as_ref) {
        Some(g) => crate::nll_loss_backward(
            g,
            input,
            target,
            weight,
            reduction,
            ignore_index,
            total_weight,
        ),
        None => input.zeros_like(),
    }
}

/// `nll_loss_forward`'s derivative in `weight`, from both outputs. With `p` the input at a
/// kept target's class and `g` the loss's gradient, class `c` collects over its targets:
/// `-g p` (per target for a batched `none`), `g (-p - output) / total_weight` for `mean`;
/// and `total_weight`'s gradient once per target (its sum of weights; it is 0, a constant,
/// for a batched `none`).
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_forward_weight_backward(
    grads: &[Option<Tensor>],
    input: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let weight = weight.ok_or_else(missing_weight)?;
    let (safe, keep) = nll_kept(target, ignore_index, input.dtype())?;
    let mut coef = keep.zeros_like()?;
    if let Some(g) = grads.first().and_then(Option::as_ref) {
        let p = nll_pick(input, &safe)?;
        let per = if reduction == 1 {
            p.add(output)?.neg()?.mul(g)?.div(total_weight)?
        } else {
            p.mul(g)?.neg()?
        };
        coef = coef.add(&per)?;
    }
    let batched_none = reduction == 0 && input.dim() >= 2;
    if let (Some(gt), false) = (grads.get(1).and_then(Option::as_ref), batched_none) {
        coef = coef.add(gt)?;
    }
    nll_per_class(weight, &safe, &coef.mul(&keep)?)
}

/// `nll_loss_backward`'s derivative in `grad_output`: the result is linear in it, so the
/// same picking of `grad` at each kept target (`-w[t] grad`), per target for a batched
/// `none`, else summed (over `total_weight` for `mean`).
pub fn nll_loss_backward_grad_output_backward(
    grad: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    grad_output_sizes: &[usize],
) -> Result<Tensor> {
    let (per, _) = crate::nll_loss_forward(grad, target, weight, 0, ignore_index)?;
    let g = match reduction {
        0 => per,
        1 => per.sum()?.div(total_weight)?,
        _ => per.sum()?,
    };
    reshape_to(&g, grad_output_sizes)
}

/// `nll_loss_backward`'s derivative in `weight`: class `c` collects `-grad[t] go` over its
/// kept targets (over `total_weight` for `mean`), `grad[t]` being `grad` at the target's
/// class.
pub fn nll_loss_backward_weight_backward(
    grad: &Tensor,
    grad_output: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let weight = weight.ok_or_else(missing_weight)?;
    let (safe, keep) = nll_kept(target, ignore_index, grad.dtype())?;
    let go = if reduction == 0 && grad.dim() >= 2 {
        grad_output.clone()
    } else {
        grad_output.reshape(())?
    };
    let mut coef = nll_pick(grad, &safe)?.mul(&go)?.neg()?.mul(&keep)?;
    if reduction == 1 {
        coef = coef.div(&total_weight.reshape(())?)?;
    }
    nll_per_class(weight, &safe, &coef)
}

/// `nll_loss_backward`'s derivative in `total_weight`: for `mean` the result is
/// `c / total_weight`, so `-Σ grad · result / total_weight`; otherwise 0.
pub fn nll_loss_backward_total_weight_backward(
    grad: &Tensor,
    result: &Tensor,
    total_weight: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    if reduction != 1 {
        return total_weight.zeros_like();
    }
    let g = grad
        .mul(result)?
        .sum()?
        .neg()?
        .div(&total_weight.reshape(())?)?;
    reshape_to(&g, total_weight.shape())
}
