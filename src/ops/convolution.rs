//! Convolutions as `im2col` + GEMM (the backward is `col2im` + GEMM, through autograd), or,
//! for one group in a float dtype on the CPU, kiln's `_conv_forward` kernel (no column matrix):
//! `conv1d`/`2d`/`3d`, their `padding=` string forms, `conv_transpose1d`/`2d`; and the
//! batching and window helpers pooling shares.

use crate::ops::backward::i64s;
use crate::{DType, Error, Result, Tensor};
use kiln_kernels::cpu::fold::Geometry;

/// `v` written out for `n` dims (one value is repeated), or PyTorch's error.
pub(crate) fn expand_param(op: &str, name: &str, v: &[i64], n: usize) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v.to_vec()),
        _ => Err(Error::value(
            op,
            format!("expected {name} to be a single integer value or a list of {n} values to match the convolution dimensions, but got {name}={v:?}"),
        )),
    }
}

/// `input` as a batched image (`[B, C, *S]`) and whether it already was.
pub(crate) fn batched(op: &str, input: &Tensor, n: usize) -> Result<(Tensor, bool)> {
    if input.dim() == n + 2 {
        Ok((input.clone(), true))
    } else if input.dim() == n + 1 {
        Ok((input.unsqueeze(0)?, false))
    } else {
        Err(Error::shape(
            op,
            format!(
                "Expected {}D (unbatched) or {}D (batched) input to {op}, but got input of size: {:?}",
                n + 1,
                n + 2,
                input.shape()
            ),
        ))
    }
}

/// The product of `v` (sizes or a kernel), or `op`'s error when it overflows int64: an empty
/// tensor may have dims whose product does.
pub(crate) fn product(op: &str, what: &str, v: &[i64]) -> Result<i64> {
    v.iter()
        .try_fold(1i64, |acc, &x| acc.checked_mul(x))
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("the product of {what} {v:?} overflows int64 (numel: integer multiplication overflow)"),
            )
        })
}

pub(crate) fn unbatched(t: Tensor, was_batched: bool) -> Result<Tensor> {
    if was_batched {
        Ok(t)
    } else {
        t.squeeze_dim(0)
    }
}

/// `bias` shaped to broadcast over `[B, C, *S]` with `n` spatial dims.
fn channel_view(bias: &Tensor, n: usize) -> Result<Tensor> {
    let mut shape = vec![1i64, -1];
    shape.extend(std::iter::repeat_n(1, n));
    bias.reshape(&shape)
}

/// The block counts of a sliding-window op over `x` (batched), as the output's spatial shape.
pub(crate) fn blocks(
    op: &str,
    shape: &[usize],
    k: &[i64],
    d: &[i64],
    p: &[i64],
    s: &[i64],
) -> Result<Vec<i64>> {
    let g = Geometry::new(op, shape, k, d, p, s).map_err(|m| Error::op(op, m))?;
    Ok(g.blocks[3 - k.len()..].iter().map(|&b| b as i64).collect())
}

/// Whether a grouped convolution with `cg` input and `og` output channels per group runs
/// group by group on `_conv_forward` (a GEMM per group over channel views) rather than on
/// `_conv_grouped` (a direct loop): for wide groups only. [16,C,28,28] 3x3 pad 1, forward +
/// backward, 2 threads (session 22):
///
/// | C, channels per group | per group | direct | im2col + batched GEMM |
/// |---|---:|---:|---:|
/// | 128, 4 | 194 ms | 26 ms | 36 ms |
/// | 128, 8 | 77 ms | 44 ms | 51 ms |
/// | 256, 16 | 106 ms | 175 ms | — |
/// | 128, 32 | 41 ms | 199 ms | — |
fn grouped_per_slice(cg: usize, og: usize) -> bool {
    cg >= 16 && og >= 16
}

/// PyTorch's dtype checks of a convolution: the bias must have the input's dtype, bool has
/// no kernel, and the weight must have the input's dtype (integer convolutions compute in
/// their own dtype, as PyTorch's CPU kernels do).
fn check_conv_dtypes(op: &str, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<()> {
    if let Some(b) = bias {
        if b.dtype() != x.dtype() {
            return Err(Error::dtype(
                op,
                format!(
                    "Input type ({}) and bias type ({}) should be the same",
                    x.dtype().cpp_type_name(),
                    b.dtype().cpp_type_name()
                ),
            ));
        }
    }
    if x.dtype() == DType::Bool {
        let kernel = if op.starts_with("conv3d") {
            "compute_columns3d"
        } else {
            "slow_conv2d_cpu"
        };
        return Err(Error::dtype(
            op,
            format!("\"{kernel}\" not implemented for 'Bool'"),
        ));
    }
    check_weight_dtype(op, x, weight)
}

/// The weight must have the input's dtype ("expected scalar type Float but found Double").
fn check_weight_dtype(op: &str, x: &Tensor, weight: &Tensor) -> Result<()> {
    if weight.dtype() != x.dtype() {
        return Err(Error::dtype(
            op,
            format!(
                "expected scalar type {} but found {}",
                x.dtype().scalar_type_name(),
                weight.dtype().scalar_type_name()
            ),
        ));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn conv(
    op: &str,
    n: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let (x, was_batched) = batched(op, input, n)?;
    if weight.dim() != n + 2 {
        return Err(Error::shape(
            op,
            format!(
                "expected a {}-d weight [out_channels, in_channels / groups, *kernel_size], but got weight of size {:?}",
                n + 2,
                weight.shape()
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::value(op, "non-positive groups is not supported"));
    }
    let g = groups as usize;
    let (o, cg, c) = (weight.shape()[0], weight.shape()[1], x.shape()[1]);
    let expected = cg.checked_mul(g);
    if expected != Some(c) {
        let expected = expected.map_or(format!("{cg} x {groups}"), |e| e.to_string());
        return Err(Error::shape(
            op,
            format!(
                "Given groups={groups}, weight of size {:?}, expected input{:?} to have {expected} channels, but got {c} channels instead",
                weight.shape(),
                x.shape(),
            ),
        ));
    }
    if o % g != 0 {
        return Err(Error::shape(
            op,
            format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {:?} instead",
                weight.shape()
            ),
        ));
    }
    if let Some(b) = bias {
        if b.dim() != 1 || b.numel() != o {
            return Err(Error::shape(
                op,
                format!(
                    "Given weight of size {:?}, expected bias to be 1-dimensional with {o} elements, but got bias of size {:?} instead",
                    weight.shape(),
                    b.shape()
                ),
            ));
        }
    }
    check_conv_dtypes(op, &x, weight, bias)?;
    let (s, p, d) = (
        expand_param(op, "stride", stride, n)?,
        expand_param(op, "padding", padding, n)?,
        expand_param(op, "dilation", dilation, n)?,
    );
    let k = i64s(&weight.shape()[2..]);
    let out_size = blocks(op, x.shape(), &k, &d, &p, &s)?;
    // One group on the CPU: kiln's own forward, which never builds the columns below (an
    // implicit GEMM for f32; bf16 and f16 run it widened and round once). The meta device
    // takes the same op, so its strides are the CPU's (channels-last ones too).
    let cpu = [Some(&x), Some(weight), bias]
        .into_iter()
        .flatten()
        .all(|t| matches!(t.device(), crate::Device::Cpu | crate::Device::Meta));
    let float = matches!(
        x.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16
    );
    if g == 1 && cpu && float {
        let y = crate::_conv_forward(&x, weight, bias, &s, &p, &d)?;
        return unbatched(y, was_batched);
    }
    // Groups on the CPU: the same op per group over channel slices of the input and the
    // weight (views, no copies), joined along channels; no column matrix either.
    if g > 1 && cpu && float && grouped_per_slice(cg, o / g) {
        let og = o / g;
        let mut parts = Vec::with_capacity(g);
        for j in 0..g {
            let xj = x.narrow(1, (j * cg) as i64, cg as i64)?;
            let wj = weight.narrow(0, (j * og) as i64, og as i64)?;
            let bj = bias
                .map(|b| b.narrow(0, (j * og) as i64, og as i64))
                .transpose()?;
            parts.push(crate::_conv_forward(&xj, &wj, bj.as_ref(), &s, &p, &d)?);
        }
        return unbatched(crate::cat_with(&parts, 1)?, was_batched);
    }
    // Narrow groups (depthwise ones too) on the CPU: kiln's direct grouped loop.
    if g > 1 && cpu && float {
        let y = crate::_conv_grouped(&x, weight, bias, &s, &p, &d, groups)?;
        return unbatched(y, was_batched);
    }
    // An empty weight may have dims whose product overflows.
    let cgkk = product(op, "weight sizes", &i64s(&weight.shape()[1..]))?;
    let batch = x.shape()[0] as i64;
    let cols = crate::im2col(&x, &k, &d, &p, &s)?;
    let l = cols.shape()[cols.dim() - 1] as i64;
    let mut shape = vec![batch, o as i64];
    shape.extend(&out_size);
    let half = matches!(x.dtype(), DType::F16 | DType::BF16);
    let y = match bias {
        // f16/bf16 with a bias: each (image, group) product is one `addmm` that sums its
        // bias into the f32 accumulators, so the output is rounded once (a product and then
        // an add would round twice), on the half-precision GEMM with no widened copies.
        Some(b) if half => {
            let (gi, og) = (g as i64, (o / g) as i64);
            let w = weight.reshape([gi, og, cgkk])?;
            let cols = cols.reshape([batch, gi, cgkk, l])?;
            let b = b.reshape([gi, og, 1])?;
            let mut parts = Vec::with_capacity(batch as usize * g);
            for bi in 0..batch {
                let image = cols.select(0, bi)?;
                for j in 0..gi {
                    let (bj, wj) = (b.select(0, j)?, w.select(0, j)?);
                    parts.push(bj.addmm(&wj, &image.select(0, j)?)?);
                }
            }
            crate::stack(&parts)?.reshape(&shape)?
        }
        _ => {
            let y = if g == 1 {
                weight.reshape([o as i64, cgkk])?.matmul(&cols)?
            } else {
                let w = weight.reshape([g as i64, (o / g) as i64, cgkk])?;
                w.matmul(&cols.reshape([batch, g as i64, cgkk, l])?)?
            };
            let y = y.reshape(&shape)?;
            match bias {
                Some(b) => y.add(&channel_view(b, n)?)?,
                None => y,
            }
        }
    };
    unbatched(y, was_batched)
}

/// `conv1d(input, weight, bias, stride, padding, dilation, groups)`.
pub fn conv1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv(
        "conv1d", 1, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv2d(input, weight, bias, stride, padding, dilation, groups)`.
pub fn conv2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv(
        "conv2d", 2, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv3d(input, weight, bias, stride, padding, dilation, groups)`.
pub fn conv3d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv(
        "conv3d", 3, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// Convolution with PyTorch's string padding: `"valid"` is no padding; `"same"` pads so the
/// output has the input's size (stride 1 only), `dilation·(k-1)` in all, the odd element on
/// the right, as PyTorch's `_convolution_mode`.
#[allow(clippy::too_many_arguments)]
fn conv_mode(
    op: &str,
    n: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let zero = vec![0i64; n];
    // The padded call goes through the public `conv<n>d`, so an autocast region that has no
    // policy for the string-padding form (CUDA's) still lowers it, as PyTorch's
    // `_convolution_mode` reaches an autocast convolution.
    let public = |x: &Tensor, pad: &[i64]| match n {
        1 => crate::conv1d_with(x, weight, bias, stride, pad, dilation, groups),
        2 => crate::conv2d_with(x, weight, bias, stride, pad, dilation, groups),
        _ => crate::conv3d_with(x, weight, bias, stride, pad, dilation, groups),
    };
    match padding {
        "valid" => public(input, &zero),
        "same" => {
            let (s, d) = (
                expand_param(op, "stride", stride, n)?,
                expand_param(op, "dilation", dilation, n)?,
            );
            if s.iter().any(|&v| v != 1) {
                return Err(Error::value(
                    op,
                    "padding='same' is not supported for strided convolutions",
                ));
            }
            if weight.dim() != n + 2 {
                // The unpadded call reports the weight's shape error.
                return conv(op, n, input, weight, bias, stride, &zero, dilation, groups);
            }
            let k = &weight.shape()[2..];
            let total: Vec<i64> = (0..n).map(|i| d[i] * (k[i] as i64 - 1)).collect();
            let left: Vec<i64> = total.iter().map(|t| t / 2).collect();
            // F.pad lists the last dim first: the extra element of an odd total goes right.
            let extra: Vec<i64> = (0..n)
                .rev()
                .flat_map(|i| [0, total[i] - 2 * left[i]])
                .collect();
            let x = if extra.iter().any(|&e| e != 0) {
                crate::pad_with(input, &extra, "constant", None)?
            } else {
                input.clone()
            };
            public(&x, &left)
        }
        other => Err(Error::value(
            op,
            format!("Invalid padding string: '{other}'"),
        )),
    }
}

/// `conv1d(input, weight, bias, stride, padding: str, dilation, groups)`.
#[allow(clippy::too_many_arguments)]
pub fn conv1d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_mode(
        "conv1d", 1, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv2d(input, weight, bias, stride, padding: str, dilation, groups)`.
#[allow(clippy::too_many_arguments)]
pub fn conv2d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_mode(
        "conv2d", 2, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv3d(input, weight, bias, stride, padding: str, dilation, groups)`.
#[allow(clippy::too_many_arguments)]
pub fn conv3d_padding(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_mode(
        "conv3d", 3, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// Transposed convolution: each input position scatters `weight` into the output, i.e.
/// GEMM into columns, then `col2im`.
#[allow(clippy::too_many_arguments)]
fn conv_transpose(
    op: &str,
    n: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    let (x, was_batched) = batched(op, input, n)?;
    if weight.dim() != n + 2 {
        return Err(Error::shape(
            op,
            format!(
                "expected a {}-d weight [in_channels, out_channels / groups, *kernel_size], but got weight of size {:?}",
                n + 2,
                weight.shape()
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::value(op, "non-positive groups is not supported"));
    }
    let g = groups;
    let (cin, og, c) = (
        weight.shape()[0] as i64,
        weight.shape()[1] as i64,
        x.shape()[1] as i64,
    );
    if c != cin || cin % g != 0 {
        return Err(Error::shape(
            op,
            format!(
                "Given transposed=1, weight of size {:?}, expected input{:?} to have {cin} channels, but got {c} channels instead",
                weight.shape(),
                x.shape()
            ),
        ));
    }
    // PyTorch's CPU kernel covers the float dtypes and int64; the bias is added into the
    // output in place, so it must cast to the input's dtype.
    if x.dtype() == DType::Bool || (x.dtype().is_integral() && x.dtype() != DType::I64) {
        return Err(Error::dtype(
            op,
            format!(
                "\"slow_conv_transpose2d_out_cpu\" not implemented for '{}'",
                x.dtype().scalar_type_name()
            ),
        ));
    }
    check_weight_dtype(op, &x, weight)?;
    if let Some(b) = bias {
        let result = x.dtype().promote(b.dtype());
        if result.is_floating_point() && !x.dtype().is_floating_point() {
            return Err(Error::dtype(
                op,
                format!(
                    "result type {} can't be cast to the desired output type {}",
                    result.scalar_type_name(),
                    x.dtype().scalar_type_name()
                ),
            ));
        }
    }
    let (s, p, d, op_) = (
        expand_param(op, "stride", stride, n)?,
        expand_param(op, "padding", padding, n)?,
        expand_param(op, "dilation", dilation, n)?,
        expand_param(op, "output_padding", output_padding, n)?,
    );
    if (0..n).any(|i| op_[i] < 0 || (op_[i] >= s[i] && op_[i] >= d[i])) {
        return Err(Error::value(
            op,
            format!("output padding must be smaller than either stride or dilation, but got output_padding={op_:?}, stride={s:?}, dilation={d:?}"),
        ));
    }
    if let Some(bad) = s.iter().chain(&d).find(|&&v| v <= 0) {
        return Err(Error::value(
            op,
            format!("stride and dilation should be greater than zero, but got stride={s:?}, dilation={d:?} ({bad})"),
        ));
    }
    if let Some(bad) = p.iter().find(|&&v| v < 0) {
        return Err(Error::value(
            op,
            format!("negative padding is not supported, but got padding={p:?} ({bad})"),
        ));
    }
    let k = i64s(&weight.shape()[2..]);
    let kk = product(op, "kernel sizes", &k)?;
    let spatial = &x.shape()[2..];
    // In i128: each term may be near i64's limits.
    let wide: Vec<i128> = (0..n)
        .map(|i| {
            let (s, p, d, k, o) = (
                s[i] as i128,
                p[i] as i128,
                d[i] as i128,
                k[i] as i128,
                op_[i] as i128,
            );
            (spatial[i] as i128 - 1) * s - 2 * p + d * (k - 1) + o + 1
        })
        .collect();
    if wide.iter().any(|&v| v <= 0) {
        return Err(Error::shape(
            op,
            format!(
                "the output size {wide:?} computed from input {:?} is too small",
                x.shape()
            ),
        ));
    }
    let out_size = wide
        .iter()
        .map(|&v| i64::try_from(v).ok())
        .collect::<Option<Vec<i64>>>()
        .ok_or_else(|| {
            Error::shape(
                op,
                format!(
                    "the output size {wide:?} computed from input {:?} overflows int64",
                    x.shape()
                ),
            )
        })?;
    let batch = x.shape()[0] as i64;
    let lin = product(op, "input spatial sizes", &i64s(spatial))?;
    // weight [Cin, Og, *k] as [G, Cin/G, Og*K], transposed to [G, Og*K, Cin/G].
    let ogkk = product(op, "weight sizes", &[og, kk])?;
    let w = weight.reshape([g, cin / g, ogkk])?.transpose(-1, -2)?;
    let xs = x.reshape([batch, g, cin / g, lin])?;
    let rows = product(op, "groups x weight sizes", &[g, ogkk])?;
    let cols = w.matmul(&xs)?.reshape([batch, rows, lin])?;
    let mut y = if (0..n).all(|i| op_[i] < s[i]) || spatial.contains(&0) {
        // The output (with its padding) holds exactly `spatial` blocks.
        crate::col2im(&cols, &out_size, &k, &d, &p, &s)?
    } else {
        // An output padding of a stride or more (allowed when below the dilation) would
        // fit more blocks than the input has: scatter into the unpadded frame the input's
        // blocks span, `(size - 1) * stride + dilation * (kernel - 1) + 1`, then read the
        // output out of it, from `padding` on; past the frame's end it is zero.
        // In i128: it is the output size plus `2 * padding - output_padding`.
        let frame = (0..n)
            .map(|i| {
                let f =
                    (spatial[i] as i128 - 1) * s[i] as i128 + d[i] as i128 * (k[i] as i128 - 1) + 1;
                i64::try_from(f).ok()
            })
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| {
                Error::value(
                    op,
                    format!(
                        "the span of the input {:?}'s blocks overflows int64",
                        x.shape()
                    ),
                )
            })?;
        let zeros = vec![0i64; n];
        let mut y = crate::col2im(&cols, &frame, &k, &d, &zeros, &s)?;
        let mut tail = vec![0i64; 2 * n];
        for i in 0..n {
            let start = p[i].min(frame[i]);
            let len = out_size[i].min(frame[i] - start);
            y = y.narrow((2 + i) as i64, start, len)?;
            // `pad` lists the last dim first.
            tail[2 * (n - 1 - i) + 1] = out_size[i] - len;
        }
        if tail.iter().any(|&v| v != 0) {
            y = crate::pad(&y, tail)?;
        }
        y
    };
    if let Some(b) = bias {
        y = y.add(&channel_view(&b.to_dtype(y.dtype())?, n)?)?;
    }
    unbatched(y, was_batched)
}

/// `conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// `conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}
