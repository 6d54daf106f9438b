//! `torch.nn.functional` ops as composites (PyTorch's CompositeImplicitAutograd):
//! convolutions and pooling as `im2col` + GEMM (the backward is `col2im` + GEMM, through
//! autograd), linear layers, pixel shuffling, embedding, dropout and attention. `embedding_bag`
//! is explicit (its backward helpers are here too), over `index_select` and `index_add`.

use crate::ops::backward::i64s;
use crate::ops::shaping::{host_vec, index};
use crate::{DType, Device, Error, Result, Scalar, Tensor};
use kiln_kernels::cpu::fold::Geometry;

/// `v` written out for `n` dims (one value is repeated), or PyTorch's error.
fn expand_param(op: &str, name: &str, v: &[i64], n: usize) -> Result<Vec<i64>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        k if k == n => Ok(v.to_vec()),
        _ => Err(Error::op(
            op,
            format!("expected {name} to be a single integer value or a list of {n} values to match the convolution dimensions, but got {name}={v:?}"),
        )),
    }
}

/// `input` as a batched image (`[B, C, *S]`) and whether it already was.
fn batched(op: &str, input: &Tensor, n: usize) -> Result<(Tensor, bool)> {
    if input.dim() == n + 2 {
        Ok((input.clone(), true))
    } else if input.dim() == n + 1 {
        Ok((input.unsqueeze(0)?, false))
    } else {
        Err(Error::op(
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
fn product(op: &str, what: &str, v: &[i64]) -> Result<i64> {
    v.iter()
        .try_fold(1i64, |acc, &x| acc.checked_mul(x))
        .ok_or_else(|| {
            Error::op(
                op,
                format!("the product of {what} {v:?} overflows int64 (numel: integer multiplication overflow)"),
            )
        })
}

fn unbatched(t: Tensor, was_batched: bool) -> Result<Tensor> {
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
fn blocks(op: &str, x: &Tensor, k: &[i64], d: &[i64], p: &[i64], s: &[i64]) -> Result<Vec<i64>> {
    let g = Geometry::new(op, x.shape(), k, d, p, s).map_err(|m| Error::op(op, m))?;
    Ok(g.blocks[3 - k.len()..].iter().map(|&b| b as i64).collect())
}

// ---------------------------------------------------------------------------------------
// Convolution
// ---------------------------------------------------------------------------------------

/// The C++ type name PyTorch's convolution messages print for a dtype.
fn cpp_type_name(dtype: DType) -> &'static str {
    match dtype {
        DType::Bool => "bool",
        DType::U8 => "unsigned char",
        DType::I8 => "signed char",
        DType::I16 => "short int",
        DType::I32 => "int",
        DType::I64 => "long int",
        DType::F16 => "c10::Half",
        DType::BF16 => "c10::BFloat16",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// PyTorch's dtype checks of a convolution: the bias must have the input's dtype, bool has
/// no kernel, and the weight must have the input's dtype (integer convolutions compute in
/// their own dtype, as PyTorch's CPU kernels do).
fn check_conv_dtypes(op: &str, x: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<()> {
    if let Some(b) = bias {
        if b.dtype() != x.dtype() {
            return Err(Error::op(
                op,
                format!(
                    "Input type ({}) and bias type ({}) should be the same",
                    cpp_type_name(x.dtype()),
                    cpp_type_name(b.dtype())
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
        return Err(Error::op(
            op,
            format!("\"{kernel}\" not implemented for 'Bool'"),
        ));
    }
    check_weight_dtype(op, x, weight)
}

/// The weight must have the input's dtype ("expected scalar type Float but found Double").
fn check_weight_dtype(op: &str, x: &Tensor, weight: &Tensor) -> Result<()> {
    if weight.dtype() != x.dtype() {
        return Err(Error::op(
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
        return Err(Error::op(
            op,
            format!(
                "expected a {}-d weight [out_channels, in_channels / groups, *kernel_size], but got weight of size {:?}",
                n + 2,
                weight.shape()
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::op(op, "non-positive groups is not supported"));
    }
    let g = groups as usize;
    let (o, cg, c) = (weight.shape()[0], weight.shape()[1], x.shape()[1]);
    let expected = cg.checked_mul(g);
    if expected != Some(c) {
        let expected = expected.map_or(format!("{cg} x {groups}"), |e| e.to_string());
        return Err(Error::op(
            op,
            format!(
                "Given groups={groups}, weight of size {:?}, expected input{:?} to have {expected} channels, but got {c} channels instead",
                weight.shape(),
                x.shape(),
            ),
        ));
    }
    if o % g != 0 {
        return Err(Error::op(
            op,
            format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {:?} instead",
                weight.shape()
            ),
        ));
    }
    if let Some(b) = bias {
        if b.dim() != 1 || b.numel() != o {
            return Err(Error::op(
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
    let out_size = blocks(op, &x, &k, &d, &p, &s)?;
    // An empty weight may have dims whose product overflows.
    let cgkk = product(op, "weight sizes", &i64s(&weight.shape()[1..]))?;
    let batch = x.shape()[0] as i64;
    let cols = crate::im2col(&x, &k, &d, &p, &s)?;
    let l = cols.shape()[cols.dim() - 1] as i64;
    let y = if g == 1 {
        weight.reshape([o as i64, cgkk])?.matmul(&cols)?
    } else {
        let w = weight.reshape([g as i64, (o / g) as i64, cgkk])?;
        w.matmul(&cols.reshape([batch, g as i64, cgkk, l])?)?
    };
    let mut shape = vec![batch, o as i64];
    shape.extend(&out_size);
    let mut y = y.reshape(&shape)?;
    if let Some(b) = bias {
        y = y.add(&channel_view(b, n)?)?;
    }
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
    match padding {
        "valid" => conv(op, n, input, weight, bias, stride, &zero, dilation, groups),
        "same" => {
            let (s, d) = (
                expand_param(op, "stride", stride, n)?,
                expand_param(op, "dilation", dilation, n)?,
            );
            if s.iter().any(|&v| v != 1) {
                return Err(Error::op(
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
            conv(op, n, &x, weight, bias, stride, &left, dilation, groups)
        }
        other => Err(Error::op(op, format!("Invalid padding string: '{other}'"))),
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
        return Err(Error::op(
            op,
            format!(
                "expected a {}-d weight [in_channels, out_channels / groups, *kernel_size], but got weight of size {:?}",
                n + 2,
                weight.shape()
            ),
        ));
    }
    if groups <= 0 {
        return Err(Error::op(op, "non-positive groups is not supported"));
    }
    let g = groups;
    let (cin, og, c) = (
        weight.shape()[0] as i64,
        weight.shape()[1] as i64,
        x.shape()[1] as i64,
    );
    if c != cin || cin % g != 0 {
        return Err(Error::op(
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
        return Err(Error::op(
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
            return Err(Error::op(
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
        return Err(Error::op(
            op,
            format!("output padding must be smaller than either stride or dilation, but got output_padding={op_:?}, stride={s:?}, dilation={d:?}"),
        ));
    }
    if let Some(bad) = s.iter().chain(&d).find(|&&v| v <= 0) {
        return Err(Error::op(
            op,
            format!("stride and dilation should be greater than zero, but got stride={s:?}, dilation={d:?} ({bad})"),
        ));
    }
    if let Some(bad) = p.iter().find(|&&v| v < 0) {
        return Err(Error::op(
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
        return Err(Error::op(
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
            Error::op(
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
                Error::op(
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

// ---------------------------------------------------------------------------------------
// Pooling
// ---------------------------------------------------------------------------------------

/// The padding `pad` list (last dim first) that adds `before[d]` / `after[d]` to each of
/// the `n` spatial dims.
fn pad_list(before: &[i64], after: &[i64]) -> Vec<i64> {
    (0..before.len())
        .rev()
        .flat_map(|d| [before[d], after[d]])
        .collect()
}

/// Checked pooling parameters: kernel, stride (default: the kernel), padding, dilation.
struct Pool {
    k: Vec<i64>,
    s: Vec<i64>,
    p: Vec<i64>,
    d: Vec<i64>,
}

impl Pool {
    fn new(
        op: &str,
        n: usize,
        kernel: &[i64],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
    ) -> Result<Pool> {
        let k = expand_param(op, "kernel_size", kernel, n)?;
        let s = if stride.is_empty() {
            k.clone()
        } else {
            expand_param(op, "stride", stride, n)?
        };
        let p = expand_param(op, "padding", padding, n)?;
        let d = expand_param(op, "dilation", dilation, n)?;
        if k.iter().chain(&s).chain(&d).any(|&v| v <= 0) {
            return Err(Error::op(
                op,
                format!("kernel_size, stride and dilation must be greater than zero, but got kernel_size={k:?}, stride={s:?}, dilation={d:?}"),
            ));
        }
        for i in 0..n {
            // In i128: a huge kernel or dilation must not overflow the span.
            let span = d[i] as i128 * (k[i] as i128 - 1) + 1;
            if p[i] < 0 || p[i] as i128 > span / 2 {
                return Err(Error::op(
                    op,
                    format!(
                        "pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}",
                        p[i], k[i], d[i]
                    ),
                ));
            }
        }
        Ok(Pool { k, s, p, d })
    }

    /// Extra padding after each dim so `ceil_mode` windows fit (PyTorch drops a last window
    /// that would start in the right padding).
    fn ceil_extra(&self, spatial: &[usize], ceil_mode: bool) -> Vec<i64> {
        (0..self.k.len())
            .map(|i| {
                if !ceil_mode {
                    return 0;
                }
                // In i128: the parameters may be anywhere in i64.
                let (size, k, s, p, d) = (
                    spatial[i] as i128,
                    self.k[i] as i128,
                    self.s[i] as i128,
                    self.p[i] as i128,
                    self.d[i] as i128,
                );
                let span = d * (k - 1) + 1;
                let avail = size + 2 * p - span;
                if avail < 0 {
                    return 0;
                }
                let mut out = (avail + s - 1) / s + 1;
                if (out - 1) * s >= size + p {
                    out -= 1;
                }
                // Less than one stride, so it fits in i64.
                ((out - 1) * s + span - (size + 2 * p)).max(0) as i64
            })
            .collect()
    }

    /// The padding after each dim: `padding` plus the `ceil_mode` extra, or `op`'s error when
    /// that overflows.
    fn after(&self, op: &str, spatial: &[usize], ceil_mode: bool) -> Result<(Vec<i64>, Vec<i64>)> {
        let extra = self.ceil_extra(spatial, ceil_mode);
        let after = self
            .p
            .iter()
            .zip(&extra)
            .zip(spatial)
            // The padded size, `size + padding + after`, must fit too.
            .map(|((&p, &e), &n)| {
                let after = p.checked_add(e)?;
                (n as i64).checked_add(p)?.checked_add(after)?;
                Some(after)
            })
            .collect::<Option<Vec<i64>>>()
            .ok_or_else(|| {
                Error::op(
                    op,
                    format!(
                        "the input of spatial size {spatial:?} padded by {:?} (and the ceil_mode overhang {extra:?}) overflows int64",
                        self.p
                    ),
                )
            })?;
        Ok((extra, after))
    }
}

/// PyTorch's pooling check that every dim but an optional batch dim is non-empty (an input
/// of `n + 1` dims has no batch dim). `as_2d`: a 1-d op that runs as its 2-d form over the
/// input with a size-1 dim inserted before the last, as PyTorch's `avg_pool1d` does, reports
/// that shape and the 2-d wording.
fn check_pool_input(op: &str, n: usize, input: &Tensor, as_2d: bool) -> Result<()> {
    let shape = input.shape();
    let first = if shape.len() == n + 2 { 1 } else { 0 };
    if (shape.len() != n + 1 && shape.len() != n + 2) || !shape[first..].contains(&0) {
        return Ok(());
    }
    let (mut shown, mut dims) = (shape.to_vec(), n);
    if as_2d {
        shown.insert(shown.len() - 1, 1);
        dims += 1;
    }
    Err(Error::op(
        op,
        format!(
            "Expected {}D or {}D (batch mode) tensor with optional 0 dim batch size for input, but got:{shown:?}",
            dims + 1,
            dims + 2
        ),
    ))
}

/// The lowest value of a dtype, which never wins a max.
fn lowest(dtype: DType) -> f64 {
    if dtype.is_floating_point() {
        f64::NEG_INFINITY
    } else {
        match dtype {
            DType::U8 | DType::Bool => 0.0,
            DType::I8 => i8::MIN as f64,
            DType::I16 => i16::MIN as f64,
            DType::I32 => i32::MIN as f64,
            _ => i64::MIN as f64,
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn max_pool(
    op: &str,
    n: usize,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    check_pool_input(op, n, input, false)?;
    let (x, was_batched) = batched(op, input, n)?;
    let pool = Pool::new(op, n, kernel_size, stride, padding, dilation)?;
    let spatial: Vec<usize> = x.shape()[2..].to_vec();
    let (_, after) = pool.after(op, &spatial, ceil_mode)?;
    let xp = crate::pad_with(
        &x,
        pad_list(&pool.p, &after),
        "constant",
        Some(lowest(x.dtype())),
    )?;
    let zeros = vec![0i64; n];
    let out_size = blocks(op, &xp, &pool.k, &pool.d, &zeros, &pool.s)?;
    let (b, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
    let kk = product(op, "kernel_size", &pool.k)?;
    // Flat indices into a plane: its size must fit (an empty input may have huge dims).
    product(op, "input spatial sizes", &i64s(&spatial))?;
    let cols = crate::im2col(&xp, &pool.k, &pool.d, &zeros, &pool.s)?;
    let l = cols.shape()[2] as i64;
    let (values, at) = cols.reshape([b, c, kk, l])?.max_dim(2)?;
    // Flat input index of each winner: the block's origin plus the kernel offset, per dim.
    let dev = x.device();
    let mut flat = Tensor::zeros([1], DType::I64)?.to_device(dev)?;
    let mut k_rest = at;
    let mut l_rest = Tensor::arange(0, l, 1, DType::I64)?.to_device(dev)?;
    let mut scale = 1i64;
    for i in (0..n).rev() {
        let (ki, li) = (
            k_rest.remainder_scalar(pool.k[i])?,
            l_rest.remainder_scalar(out_size[i])?,
        );
        k_rest = k_rest
            .sub(&ki)?
            .div_scalar(pool.k[i])?
            .to_dtype(DType::I64)?;
        l_rest = l_rest
            .sub(&li)?
            .div_scalar(out_size[i])?
            .to_dtype(DType::I64)?;
        let pos = li
            .mul_scalar(pool.s[i])?
            .add(&ki.mul_scalar(pool.d[i])?)?
            .sub_scalar(pool.p[i])?;
        flat = flat.add(&pos.mul_scalar(scale)?)?;
        scale *= spatial[i] as i64;
    }
    let mut shape = vec![b, c];
    shape.extend(&out_size);
    let values = unbatched(values.reshape(&shape)?, was_batched)?;
    let indices = unbatched(flat.reshape(&shape)?, was_batched)?;
    Ok((values, indices))
}

/// `max_pool1d(kernel_size, stride, padding, dilation, ceil_mode)`.
pub fn max_pool1d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool(
        "max_pool1d",
        1,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?
    .0)
}

/// `max_pool2d(kernel_size, stride, padding, dilation, ceil_mode)`.
pub fn max_pool2d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    Ok(max_pool(
        "max_pool2d",
        2,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?
    .0)
}

/// `max_pool2d_with_indices(...)`: the maxima and their flat indices into each input plane.
pub fn max_pool2d_with_indices(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<(Tensor, Tensor)> {
    max_pool(
        "max_pool2d_with_indices",
        2,
        t,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )
}

#[allow(clippy::too_many_arguments)]
fn avg_pool(
    op: &str,
    n: usize,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    check_pool_input(op, n, input, n == 1)?;
    // PyTorch's CPU kernel (`avg_pool2d`, which `avg_pool1d` calls) covers the float dtypes
    // and int64, which averages in int64 and divides with C++'s truncating division.
    let dt = input.dtype();
    if dt == DType::Bool || (dt.is_integral() && dt != DType::I64) {
        return Err(Error::op(
            op,
            format!(
                "\"avg_pool2d\" not implemented for '{}'",
                dt.scalar_type_name()
            ),
        ));
    }
    let integral = dt == DType::I64;
    let divide = |sums: &Tensor, by: &Tensor| {
        if integral {
            sums.div_mode(by, Some("trunc"))
        } else {
            sums.div(by)
        }
    };
    let (x, was_batched) = batched(op, input, n)?;
    let pool = Pool::new(op, n, kernel_size, stride, padding, &[1])?;
    if divisor_override == Some(0) {
        return Err(Error::op(op, "divisor must be not zero"));
    }
    let spatial: Vec<usize> = x.shape()[2..].to_vec();
    let (extra, after) = pool.after(op, &spatial, ceil_mode)?;
    let xp = crate::pad(&x, pad_list(&pool.p, &after))?;
    let (ones, zeros) = (vec![1i64; n], vec![0i64; n]);
    let out_size = blocks(op, &xp, &pool.k, &ones, &zeros, &pool.s)?;
    let (b, c) = (x.shape()[0] as i64, x.shape()[1] as i64);
    let kk = product(op, "kernel_size", &pool.k)?;
    let cols = crate::im2col(&xp, &pool.k, &ones, &zeros, &pool.s)?;
    let l = cols.shape()[2] as i64;
    let sums = crate::sum_dim_with(&cols.reshape([b, c, kk, l])?, &[2], false, None)?;
    let avg = match divisor_override {
        Some(dv) if integral => divide(
            &sums,
            &Tensor::full_on(Vec::<i64>::new(), Scalar::Int(dv), DType::I64, x.device())?,
        )?,
        Some(dv) => sums.div_scalar(dv)?,
        None => {
            // Each window's divisor: its positions inside the input (and, with
            // count_include_pad, inside the padding), never the ceil_mode overhang.
            let mut region_shape = vec![1usize, 1];
            let (lo, hi): (Vec<i64>, Vec<i64>) = if count_include_pad {
                region_shape.extend(
                    spatial
                        .iter()
                        .zip(&pool.p)
                        .map(|(&s, &p)| s + 2 * p as usize),
                );
                (vec![0; n], extra.clone())
            } else {
                region_shape.extend(&spatial);
                (pool.p.clone(), after.clone())
            };
            let region = Tensor::ones(&region_shape, x.dtype())?.to_device(x.device())?;
            let region = crate::pad(&region, pad_list(&lo, &hi))?;
            let counts = crate::im2col(&region, &pool.k, &ones, &zeros, &pool.s)?;
            let counts = crate::sum_dim_with(&counts.reshape([1, 1, kk, l])?, &[2], false, None)?;
            divide(&sums, &counts)?
        }
    };
    let mut shape = vec![b, c];
    shape.extend(&out_size);
    unbatched(avg.reshape(&shape)?, was_batched)
}

/// `avg_pool1d(kernel_size, stride, padding, ceil_mode, count_include_pad)`.
pub fn avg_pool1d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Tensor> {
    avg_pool(
        "avg_pool1d",
        1,
        t,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        None,
    )
}

/// `avg_pool2d(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    t: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<Tensor> {
    avg_pool(
        "avg_pool2d",
        2,
        t,
        kernel_size,
        stride,
        padding,
        ceil_mode,
        count_include_pad,
        divisor_override,
    )
}

/// The `[out, size]` matrix averaging each adaptive window: output `i` covers
/// `floor(i * size / out) .. ceil((i + 1) * size / out)`.
fn adaptive_matrix(
    op: &str,
    out: usize,
    size: usize,
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    // `i * size` and `(i + 1) * size` below are at most `out * size`.
    let len = out.checked_mul(size).ok_or_else(|| {
        Error::op(
            op,
            format!("{op}: an output size of {out} over an input of {size} overflows"),
        )
    })?;
    let mut m = host_vec(op, len)?;
    m.resize(len, 0.0f64);
    for i in 0..out {
        let (start, end) = (i * size / out, ((i + 1) * size).div_ceil(out));
        for j in start..end {
            m[i * size + j] = 1.0 / (end - start) as f64;
        }
    }
    Tensor::from_vec(m, &[out, size])?
        .to_dtype(dtype)?
        .to_device(device)
}

fn adaptive_avg_pool(op: &str, n: usize, t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    if output_size.len() != n || output_size.iter().any(|&o| o < 0) {
        return Err(Error::op(
            op,
            format!("{op}: output_size must be {n} non-negative values, but got {output_size:?}"),
        ));
    }
    if t.dim() != n + 1 && t.dim() != n + 2 {
        return Err(Error::op(
            op,
            format!(
                "{op}(): Expected {}D or {}D tensor, but got {:?}",
                n + 1,
                n + 2,
                t.shape()
            ),
        ));
    }
    if !t.dtype().is_floating_point() {
        return Err(Error::op(
            op,
            format!(
                "\"{op}\" not implemented for '{}'",
                t.dtype().scalar_type_name()
            ),
        ));
    }
    let mut y = t.clone();
    for (i, &out) in output_size.iter().enumerate() {
        let dim = (t.dim() - n + i) as i64;
        let size = t.shape()[dim as usize];
        if size == 0 {
            return Err(Error::op(
                op,
                format!("{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {:?}", t.shape()),
            ));
        }
        let m = adaptive_matrix(op, out as usize, size, t.dtype(), t.device())?;
        // Contract dim `dim` with the matrix: move it last, multiply by mᵀ, move it back.
        y = y
            .movedim(&[dim], &[-1])?
            .matmul(&m.t()?)?
            .movedim(&[-1], &[dim])?;
    }
    Ok(y)
}

/// `adaptive_avg_pool1d(output_size)`.
pub fn adaptive_avg_pool1d(t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    adaptive_avg_pool("adaptive_avg_pool1d", 1, t, output_size)
}

/// `adaptive_avg_pool2d(output_size)`: separable, as a matrix product per spatial dim.
pub fn adaptive_avg_pool2d(t: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    adaptive_avg_pool("adaptive_avg_pool2d", 2, t, output_size)
}

/// `adaptive_max_pool1d(output_size)`: `adaptive_max_pool2d` over a height-1 image, as
/// PyTorch does; the indices are positions along the length.
pub fn adaptive_max_pool1d(t: &Tensor, output_size: &[i64]) -> Result<(Tensor, Tensor)> {
    let op = "adaptive_max_pool1d";
    if t.dim() != 2 && t.dim() != 3 {
        return Err(Error::op(
            op,
            format!(
                "Expected 2 to 3 dimensions, but got {}-dimensional tensor for argument #1 'self' (while checking arguments for adaptive_max_pool1d)",
                t.dim()
            ),
        ));
    }
    if output_size.len() != 1 {
        return Err(Error::op(
            op,
            format!(
                "adaptive_max_pool1d() argument 'output_size' should contain one int (got {})",
                output_size.len()
            ),
        ));
    }
    let (v, i) = crate::adaptive_max_pool2d(&t.unsqueeze(-2)?, &[1, output_size[0]])?;
    Ok((v.squeeze_dim(-2)?, i.squeeze_dim(-2)?))
}

// ---------------------------------------------------------------------------------------
// Linear layers and batched products
// ---------------------------------------------------------------------------------------

/// `linear(input, weight, bias)`: `input @ weightᵀ + bias`.
pub fn linear(input: &Tensor, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
    if weight.dim() != 2 && weight.dim() != 1 {
        return Err(Error::op(
            "linear",
            format!(
                "linear(): weight must be 1-D or 2-D, but got weight of size {:?}",
                weight.shape()
            ),
        ));
    }
    let y = input.matmul(&weight.t()?)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}

/// `bilinear(input1, input2, weight, bias)`: `y_k = x1ᵀ W_k x2 + b_k`.
pub fn bilinear(
    input1: &Tensor,
    input2: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<Tensor> {
    let op = "bilinear";
    if weight.dim() != 3 {
        return Err(Error::op(
            op,
            format!(
                "bilinear(): weight must be 3-D, but got {:?}",
                weight.shape()
            ),
        ));
    }
    let (o, i1, i2) = (
        weight.shape()[0] as i64,
        weight.shape()[1],
        weight.shape()[2] as i64,
    );
    let (d1, d2) = (input1.dim(), input2.dim());
    if d1 == 0 || d2 == 0 || input1.shape()[d1 - 1] != i1 || input2.shape()[d2 - 1] as i64 != i2 {
        return Err(Error::op(
            op,
            format!(
                "bilinear(): input sizes {:?} and {:?} do not match weight {:?}",
                input1.shape(),
                input2.shape(),
                weight.shape()
            ),
        ));
    }
    // x1 @ W viewed as [I1, O*I2], then a dot with x2 per output feature.
    let w = weight.permute(&[1, 0, 2])?.reshape([i1 as i64, o * i2])?;
    let mut lead = i64s(&input1.shape()[..d1 - 1]);
    lead.extend([o, i2]);
    let t = input1.matmul(&w)?.reshape(&lead)?;
    let y = crate::sum_dim_with(&t.mul(&input2.unsqueeze(-2)?)?, &[-1], false, None)?;
    match bias {
        Some(b) => y.add(b),
        None => Ok(y),
    }
}

fn scaled(t: Tensor, by: Scalar) -> Result<Tensor> {
    if by.to::<f64>() == 1.0 {
        Ok(t)
    } else {
        t.mul_scalar(by)
    }
}

/// A coefficient (`alpha`, `beta`) of an integer product: PyTorch converts it to the
/// product's dtype, truncating a float (`1.9` is 1), and rejects one out of int64's range.
pub(crate) fn integral_coefficient(op: &str, c: Scalar, dtype: DType) -> Result<Scalar> {
    match c {
        Scalar::Float(f) if dtype.is_integral() => {
            c.check_fits(DType::I64).map_err(|m| Error::op(op, m))?;
            Ok(Scalar::Int(f as i64))
        }
        _ => Ok(c),
    }
}

/// `beta * base + alpha * product`, where `beta = 0` ignores `base` (NaN included). An
/// integer product keeps its dtype: float coefficients are truncated, as PyTorch's are.
fn blend(op: &str, base: &Tensor, product: Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let dtype = product.dtype().promote(base.dtype());
    let beta = integral_coefficient(op, beta, dtype)?;
    let alpha = integral_coefficient(op, alpha, dtype)?;
    let p = scaled(product, alpha)?;
    let base = base.expand(i64s(p.shape()))?;
    if beta.to::<f64>() == 0.0 {
        return p.add(&base.zeros_like()?);
    }
    p.add(&scaled(base.clone(), beta)?)
}

/// `mv(vec)`: matrix × vector.
pub fn mv(t: &Tensor, vec: &Tensor) -> Result<Tensor> {
    if t.dim() != 2 || vec.dim() != 1 {
        return Err(Error::op(
            "mv",
            format!(
                "vector + matrix @ vector expected, got 1, {}, {}",
                t.dim(),
                vec.dim()
            ),
        ));
    }
    t.matmul(vec)
}

/// `addmv(mat, vec, beta, alpha)`: `beta * self + alpha * (mat @ vec)`.
pub fn addmv(
    t: &Tensor,
    mat: &Tensor,
    vec: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    blend("addmv", t, mv(mat, vec)?, beta, alpha)
}

fn check_batches(op: &str, b1: &Tensor, b2: &Tensor) -> Result<()> {
    if b1.dim() != 3 || b2.dim() != 3 {
        return Err(Error::op(
            op,
            format!(
                "batch1 must be a 3D tensor, batch2 must be a 3D tensor, but got {:?} and {:?}",
                b1.shape(),
                b2.shape()
            ),
        ));
    }
    Ok(())
}

/// `baddbmm(batch1, batch2, beta, alpha)`: `beta * self + alpha * (batch1 @ batch2)`.
pub fn baddbmm(
    t: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_batches("baddbmm", batch1, batch2)?;
    blend("baddbmm", t, batch1.bmm(batch2)?, beta, alpha)
}

/// `addbmm(batch1, batch2, beta, alpha)`: `beta * self + alpha * Σ_b batch1[b] @ batch2[b]`.
pub fn addbmm(
    t: &Tensor,
    batch1: &Tensor,
    batch2: &Tensor,
    beta: Scalar,
    alpha: Scalar,
) -> Result<Tensor> {
    check_batches("addbmm", batch1, batch2)?;
    let p = crate::sum_dim_with(&batch1.bmm(batch2)?, &[0], false, None)?;
    blend("addbmm", t, p, beta, alpha)
}

// ---------------------------------------------------------------------------------------
// Pixel shuffling (resampling proper is kernels/src/cpu/upsample.rs)
// ---------------------------------------------------------------------------------------

/// `pixel_shuffle(upscale_factor)`: `[*, C·r², H, W]` → `[*, C, H·r, W·r]`.
pub fn pixel_shuffle(t: &Tensor, upscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_shuffle";
    if t.dim() < 3 {
        return Err(Error::op(
            op,
            format!("pixel_shuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)", t.dim()),
        ));
    }
    let r = upscale_factor;
    if r <= 0 {
        return Err(Error::op(
            op,
            format!("pixel_shuffle expects a positive upscale_factor, but got {r}"),
        ));
    }
    let nd = t.dim();
    let (c, h, w) = (
        t.shape()[nd - 3] as i64,
        t.shape()[nd - 2] as i64,
        t.shape()[nd - 1] as i64,
    );
    // r² beyond int64 divides only an empty channel dim.
    let rr = r.checked_mul(r);
    if rr.map_or(c != 0, |rr| c % rr != 0) {
        return Err(Error::op(
            op,
            format!("pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by {}", rr.map_or(format!("{r}^2"), |rr| rr.to_string())),
        ));
    }
    let (hr, wr) = match (h.checked_mul(r), w.checked_mul(r)) {
        (Some(hr), Some(wr)) => (hr, wr),
        _ => {
            return Err(Error::op(
                op,
                format!("pixel_shuffle: the output size [{h} x {r}, {w} x {r}] overflows int64"),
            ))
        }
    };
    let out_c = rr.map_or(0, |rr| c / rr);
    let lead = i64s(&t.shape()[..nd - 3]);
    let mut shape = lead.clone();
    shape.extend([out_c, r, r, h, w]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 3, b + 1, b + 4, b + 2]);
    let mut out = lead;
    out.extend([out_c, hr, wr]);
    t.reshape(&shape)?.permute(&perm)?.reshape(&out)
}

/// `pixel_unshuffle(downscale_factor)`: `[*, C, H·r, W·r]` → `[*, C·r², H, W]`.
pub fn pixel_unshuffle(t: &Tensor, downscale_factor: i64) -> Result<Tensor> {
    let op = "pixel_unshuffle";
    if t.dim() < 3 {
        return Err(Error::op(
            op,
            format!("pixel_unshuffle expects input to have at least 3 dimensions, but got input with {} dimension(s)", t.dim()),
        ));
    }
    let r = downscale_factor;
    if r <= 0 {
        return Err(Error::op(
            op,
            format!("pixel_unshuffle expects a positive downscale_factor, but got {r}"),
        ));
    }
    let nd = t.dim();
    let (c, h, w) = (
        t.shape()[nd - 3] as i64,
        t.shape()[nd - 2] as i64,
        t.shape()[nd - 1] as i64,
    );
    if h % r != 0 || w % r != 0 {
        return Err(Error::op(
            op,
            format!("pixel_unshuffle expects height and width to be divisible by downscale_factor, but input has height {h} and width {w} and downscale_factor={r}"),
        ));
    }
    let lead = i64s(&t.shape()[..nd - 3]);
    let mut shape = lead.clone();
    shape.extend([c, h / r, r, w / r, r]);
    let b = lead.len() as i64;
    let mut perm: Vec<i64> = (0..b).collect();
    perm.extend([b, b + 2, b + 4, b + 1, b + 3]);
    let cr = c
        .checked_mul(r)
        .and_then(|v| v.checked_mul(r))
        .ok_or_else(|| {
            Error::op(
                op,
                format!("pixel_unshuffle: the output channels {c} x {r}^2 overflow int64"),
            )
        })?;
    let mut out = lead;
    out.extend([cr, h / r, w / r]);
    t.reshape(&shape)?.permute(&perm)?.reshape(&out)
}

// ---------------------------------------------------------------------------------------
// Embedding, dropout, attention
// ---------------------------------------------------------------------------------------

/// `embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)`: rows of `weight`;
/// the row at `padding_idx` gets no gradient.
pub fn embedding(
    weight: &Tensor,
    indices: &Tensor,
    padding_idx: i64,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> Result<Tensor> {
    let op = "embedding";
    if scale_grad_by_freq || sparse {
        return Err(Error::op(
            op,
            "scale_grad_by_freq and sparse gradients are not supported by kiln (it has no sparse tensors)",
        ));
    }
    if weight.dim() != 2 {
        return Err(Error::op(op, "'weight' must be 2-D"));
    }
    if indices.dtype() != DType::I64 && indices.dtype() != DType::I32 {
        return Err(Error::op(
            op,
            format!(
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead",
                indices.dtype().scalar_type_name()
            ),
        ));
    }
    let idx = indices.to_dtype(DType::I64)?.reshape([-1])?;
    let mut shape = i64s(indices.shape());
    shape.push(weight.shape()[1] as i64);
    let rows = weight.index_select(0, &idx)?;
    let n = weight.shape()[0] as i64;
    let pad = if padding_idx < 0 {
        padding_idx + n
    } else {
        padding_idx
    };
    // -1 is aten's "no padding row" (F.embedding maps its negative indices before calling).
    let rows = if padding_idx != -1 {
        if !(0..n).contains(&pad) {
            return Err(Error::op(op, "Padding_idx must be within num_embeddings"));
        }
        // The padding row's value without its gradient.
        let frozen = weight.detach().index_select(0, &idx)?;
        let hit = idx.eq_scalar(pad)?.unsqueeze(1)?;
        frozen.where_cond(&hit, &rows)?
    } else {
        rows
    };
    rows.reshape(&shape)
}

/// `embedding_bag`'s `mode`: PyTorch's MODE_SUM, MODE_MEAN and MODE_MAX.
const BAG_SUM: i64 = 0;
const BAG_MEAN: i64 = 1;
const BAG_MAX: i64 = 2;

/// PyTorch's `checkScalarTypes` for an int64/int32 argument of `embedding_bag`.
fn check_index_dtype(op: &str, name: &str, t: &Tensor) -> Result<()> {
    if matches!(t.dtype(), DType::I64 | DType::I32) {
        return Ok(());
    }
    Err(Error::op(
        op,
        format!(
            "Expected tensor for argument #1 '{name}' to have one of the following scalar types: Long, Int; but got {} instead",
            t.dtype().scalar_type_name()
        ),
    ))
}

/// `embedding_bag(weight, indices, offsets, scale_grad_by_freq, mode, sparse,
/// per_sample_weights, include_last_offset, padding_idx)`: PyTorch's `aten::embedding_bag`.
/// Bag `b` holds `indices[offsets[b]..offsets[b + 1]]` (the last bag runs to the end, or with
/// `include_last_offset` the last offset closes it); each bag's rows of `weight` are summed
/// (mode 0, scaled by `per_sample_weights` if given), averaged (1) or maxed per column (2),
/// `padding_idx` left out, and an empty bag gives zeros. Returns `(output [bags, D],
/// offset2bag [N], bag_size [bags], max_indices)`, the last three in the index dtype:
/// `offset2bag` is each index's bag, `bag_size` the rows each bag reduced (zeros in sum
/// mode, as PyTorch's CPU kernel gives), `max_indices` the row each maximum came from in max
/// mode (`[bags, D]`) and a copy of `bag_size` otherwise. Sums and means of f16/bf16 weights
/// accumulate in float32. Explicit: the gradient to `weight` (dense) and to
/// `per_sample_weights` comes from derivatives.yaml.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag(
    weight: &Tensor,
    indices: &Tensor,
    offsets: &Tensor,
    _scale_grad_by_freq: bool,
    mode: i64,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor, Tensor)> {
    let op = "embedding_bag";
    let _no_grad = crate::no_grad(); // the generated wrapper records EmbeddingBagBackward0
    if sparse {
        return Err(Error::op(
            op,
            "sparse gradients are not supported by kiln (it has no sparse tensors)",
        ));
    }
    check_index_dtype(op, "indices", indices)?;
    check_index_dtype(op, "offsets", offsets)?;
    if !weight.dtype().is_floating_point() {
        return Err(Error::op(
            op,
            format!(
                "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, Float, Double; but got {} instead",
                weight.dtype().scalar_type_name()
            ),
        ));
    }
    if weight.dim() != 2 {
        return Err(Error::op(
            op,
            format!(
                "weight has to be a 2D Tensor, but got Tensor of dimension {}",
                weight.dim()
            ),
        ));
    }
    match indices.dim() {
        1 => {}
        2 => return Err(Error::op(op, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences (embedding_bag_functional takes it that way). However, found offsets of type Tensor")),
        d => {
            return Err(Error::op(
                op,
                format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"),
            ))
        }
    }
    if offsets.dim() != 1 {
        return Err(Error::op(
            op,
            format!(
                "offsets has to be a 1D Tensor, but got Tensor of dimension {}",
                offsets.dim()
            ),
        ));
    }
    if !(BAG_SUM..=BAG_MAX).contains(&mode) {
        return Err(Error::op(
            op,
            format!("mode has to be one of sum (0), mean (1) or max (2), but got {mode}"),
        ));
    }
    let (num, d) = (weight.shape()[0], weight.shape()[1]);
    let pad = match padding_idx {
        Some(p) if p < -(num as i64) || p >= num as i64 => {
            return Err(Error::op(
                op,
                format!(
                    "padding_idx must be within the number of embeddings, -{num} through {}, but got {p}",
                    num as i64 - 1
                ),
            ))
        }
        Some(p) if p < 0 => Some(p + num as i64),
        other => other,
    };
    let mut operands = vec![weight, indices, offsets];
    operands.extend(per_sample_weights);
    let device = crate::dispatch::launch::device_of(op, &operands)?;
    let idx = indices.to_vec::<i64>()?;
    let offs = offsets.to_vec::<i64>()?;
    let n = idx.len();
    if let (Some(&first), Some(&last)) = (offs.first(), offs.last()) {
        if first != 0 {
            return Err(Error::op(op, format!("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from position 0. However, got {first}")));
        }
        if last > n as i64 {
            return Err(Error::op(
                op,
                format!("offsets[-1] can not be greater than input's length {n} but got offsets[-1] of {last}"),
            ));
        }
    }
    if let Some(i) = (1..offs.len()).find(|&i| offs[i] < offs[i - 1]) {
        return Err(Error::op(
            op,
            format!(
                "offsets has to be non-decreasing, but offsets[{i}] = {} is less than offsets[{}] = {}",
                offs[i],
                i - 1,
                offs[i - 1]
            ),
        ));
    }
    if include_last_offset && offs.is_empty() {
        return Err(Error::op(
            op,
            "include_last_offset: number of offset should be at least 1",
        ));
    }
    let bags = offs.len() - include_last_offset as usize;
    if include_last_offset && offs[bags] != n as i64 {
        return Err(Error::op(
            op,
            format!(
                "with include_last_offset, the last offset closes the last bag and has to be the length of indices {n}, but got {}",
                offs[bags]
            ),
        ));
    }
    if bags == 0 && n > 0 {
        return Err(Error::op(
            op,
            format!("offsets holds no bag, so the {n} indices belong to none"),
        ));
    }
    if let Some(p) = per_sample_weights {
        if mode != BAG_SUM {
            return Err(Error::op(
                op,
                "embedding_bag: per_sample_weights only supported with mode='sum'",
            ));
        }
        if p.dtype() != weight.dtype() {
            return Err(Error::op(
                op,
                format!(
                    "Expected tensor for argument #1 'weight' to have the same type as tensor for argument #1 'per_sample_weights'; but type {} does not equal {}",
                    weight.dtype().scalar_type_name(),
                    p.dtype().scalar_type_name()
                ),
            ));
        }
        if p.shape() != [n] {
            return Err(Error::op(
                op,
                format!(
                    "embedding_bag: per_sample_weights ({:?}) has to be 1D and as long as indices ({n})",
                    p.shape()
                ),
            ));
        }
    }
    if let Some(&bad) = idx.iter().find(|&&i| i < 0 || i >= num as i64) {
        return Err(Error::op(
            op,
            format!("embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be {bad}"),
        ));
    }

    // Each index's bag, and the indices each bag reduces (padding left out).
    let mut offset2bag: Vec<i64> = host_vec(op, n)?;
    for b in 0..bags {
        let end = offs.get(b + 1).map_or(n, |&e| e as usize);
        offset2bag.extend(std::iter::repeat_n(b as i64, end - offs[b] as usize));
    }
    let kept: Vec<usize> = (0..n).filter(|&i| Some(idx[i]) != pad).collect();
    let mut sizes = vec![0i64; bags];
    for &i in &kept {
        sizes[offset2bag[i] as usize] += 1;
    }
    let out_index = if indices.dtype() == DType::I32 && offsets.dtype() == DType::I32 {
        DType::I32
    } else {
        DType::I64
    };
    let as_index = |v: Vec<i64>| index(v, device)?.to_dtype(out_index);
    let bag_size = if mode == BAG_SUM {
        vec![0; bags]
    } else {
        sizes.clone()
    };
    let (output, max_indices) = if mode == BAG_MAX {
        let (out, source) = embedding_bag_max(weight, &idx, &offset2bag, &kept, &sizes, device)?;
        (out, source.to_dtype(out_index)?)
    } else {
        let compute = match weight.dtype() {
            DType::F16 | DType::BF16 => DType::F32,
            other => other,
        };
        let pick = |f: &dyn Fn(usize) -> i64| index(kept.iter().map(|&i| f(i)).collect(), device);
        let mut rows = weight
            .to_dtype(compute)?
            .index_select(0, &pick(&|i| idx[i])?)?;
        if let Some(p) = per_sample_weights {
            let scale = p
                .to_dtype(compute)?
                .index_select(0, &pick(&|i| i as i64)?)?;
            rows = rows.mul(&scale.unsqueeze(1)?)?;
        }
        let mut out = Tensor::alloc_on(op, &[bags, d], compute, device)?.index_add(
            0,
            &pick(&|i| offset2bag[i])?,
            &rows,
        )?;
        if mode == BAG_MEAN {
            let counts: Vec<f64> = sizes.iter().map(|&c| c.max(1) as f64).collect();
            let counts = Tensor::from_vec(counts, &[bags, 1])?
                .to_device(device)?
                .to_dtype(compute)?;
            out = out.div(&counts)?;
        }
        (out.to_dtype(weight.dtype())?, as_index(bag_size.clone())?)
    };
    Ok((
        output,
        as_index(offset2bag)?,
        as_index(bag_size)?,
        max_indices,
    ))
}

/// Max mode of `embedding_bag`: each bag's kept rows, padded with -inf to the longest bag,
/// reduced by `max.dim` (the first maximum on ties, as PyTorch's strict `>`); an empty bag
/// gives zeros and row 0. Returns the output and the rows its maxima came from (int64,
/// `[bags, D]`). Memory: bags x longest bag x D elements.
fn embedding_bag_max(
    weight: &Tensor,
    idx: &[i64],
    offset2bag: &[i64],
    kept: &[usize],
    sizes: &[i64],
    device: Device,
) -> Result<(Tensor, Tensor)> {
    let op = "embedding_bag";
    let (bags, d) = (sizes.len(), weight.shape()[1]);
    let longest = sizes.iter().copied().max().unwrap_or(0) as usize;
    if longest == 0 {
        return Ok((
            Tensor::alloc_on(op, &[bags, d], weight.dtype(), device)?,
            Tensor::alloc_on(op, &[bags, d], DType::I64, device)?,
        ));
    }
    let slots = bags
        .checked_mul(longest)
        .ok_or_else(|| crate::ops::shaping::size_overflow(op, "bags x longest bag"))?;
    let mut rows: Vec<i64> = host_vec(op, slots)?;
    rows.resize(slots, 0);
    let mut empty: Vec<bool> = host_vec(op, slots)?;
    empty.resize(slots, true);
    let mut fill = vec![0usize; bags];
    for &i in kept {
        let b = offset2bag[i] as usize;
        rows[b * longest + fill[b]] = idx[i];
        empty[b * longest + fill[b]] = false;
        fill[b] += 1;
    }
    let gathered = weight
        .index_select(0, &index(rows.clone(), device)?)?
        .reshape(i64s(&[bags, longest, d]))?;
    let empty = Tensor::from_vec(empty, &[bags, longest, 1])?.to_device(device)?;
    let (values, at) = gathered
        .masked_fill(&empty, f64::NEG_INFINITY)?
        .max_dim(1)?;
    let source = index(rows, device)?
        .reshape(i64s(&[bags, longest]))?
        .gather(1, &at)?;
    let filled: Vec<bool> = sizes.iter().map(|&s| s > 0).collect();
    let filled = Tensor::from_vec(filled, &[bags, 1])?.to_device(device)?;
    let zero = Tensor::alloc_on(op, &[], weight.dtype(), device)?;
    Ok((values.where_cond(&filled, &zero)?, source))
}

/// Backward of `embedding_bag` for `weight` (PyTorch's `_embedding_bag_dense_backward`):
/// max mode sends each output element's gradient to the row its maximum came from (none from
/// an empty bag); sum and mean send each bag's gradient to every row it reduced (padding left
/// out), scaled by the row's per-sample weight or by 1 / bag size, and with
/// `scale_grad_by_freq` by 1 / how often the row occurs in `indices`. Half gradients
/// accumulate in float32.
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_backward(
    grad: &Tensor,
    indices: &Tensor,
    offset2bag: &Tensor,
    bag_size: &Tensor,
    max_indices: &Tensor,
    weight_sizes: &[usize],
    scale_grad_by_freq: bool,
    mode: i64,
    per_sample_weights: &[Tensor],
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let op = "embedding_bag_backward";
    let (num, d) = (weight_sizes[0], weight_sizes[1]);
    let g = match grad.dtype() {
        DType::F16 | DType::BF16 => grad.to_dtype(DType::F32)?,
        _ => grad.clone(),
    };
    let device = g.device();
    let zero = Tensor::alloc_on(op, &[], g.dtype(), device)?;
    let weight_grad = if mode == BAG_MAX {
        let filled = bag_size.gt_scalar(0)?.unsqueeze(1)?;
        let cols = Tensor::arange(0i64, d as i64, 1i64, DType::I64)?.to_device(device)?;
        let target = max_indices
            .to_dtype(DType::I64)?
            .mul_scalar(d as i64)?
            .add(&cols)?;
        Tensor::alloc_on(op, &[num * d], g.dtype(), device)?
            .index_add(
                0,
                &target.reshape([-1])?,
                &g.where_cond(&filled, &zero)?.reshape([-1])?,
            )?
            .reshape(i64s(weight_sizes))?
    } else {
        let idx = indices.to_dtype(DType::I64)?;
        let bags = offset2bag.to_dtype(DType::I64)?;
        let mut scale: Option<Tensor> = per_sample_weights
            .first()
            .map(|p| p.to_dtype(g.dtype()))
            .transpose()?;
        let times = |s: Option<Tensor>, by: Tensor| -> Result<Option<Tensor>> {
            Ok(Some(match s {
                Some(s) => s.mul(&by)?,
                None => by,
            }))
        };
        if mode == BAG_MEAN {
            let inv = bag_size
                .to_dtype(g.dtype())?
                .clamp_with(Some(Scalar::Int(1)), None)?
                .reciprocal()?
                .index_select(0, &bags)?;
            scale = times(scale, inv)?;
        }
        if scale_grad_by_freq {
            let ones = Tensor::ones([idx.numel()], g.dtype())?.to_device(device)?;
            let counts = Tensor::alloc_on(op, &[num], g.dtype(), device)?
                .index_add(0, &idx, &ones)?
                .index_select(0, &idx)?;
            scale = times(scale, counts.reciprocal()?)?;
        }
        let mut rows = g.index_select(0, &bags)?;
        if let Some(s) = scale {
            rows = rows.mul(&s.unsqueeze(1)?)?;
        }
        if let Some(p) = padding_idx {
            let p = if p < 0 { p + num as i64 } else { p };
            rows = rows.where_cond(&idx.ne_scalar(p)?.unsqueeze(1)?, &zero)?;
        }
        Tensor::alloc_on(op, weight_sizes, g.dtype(), device)?.index_add(0, &idx, &rows)?
    };
    weight_grad.to_dtype(grad.dtype())
}

/// Backward of `embedding_bag` for `per_sample_weights` (sum mode): each index's bag
/// gradient dotted with its row of `weight`, 0 at `padding_idx`.
pub fn embedding_bag_per_sample_weights_backward(
    grad: &Tensor,
    weight: &Tensor,
    indices: &Tensor,
    offset2bag: &Tensor,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let idx = indices.to_dtype(DType::I64)?;
    let dots = grad
        .index_select(0, &offset2bag.to_dtype(DType::I64)?)?
        .mul(&weight.index_select(0, &idx)?)?
        .sum_dim(&[1])?;
    match padding_idx {
        Some(p) => {
            let p = if p < 0 {
                p + weight.shape()[0] as i64
            } else {
                p
            };
            let zero =
                Tensor::alloc_on("embedding_bag_backward", &[], dots.dtype(), dots.device())?;
            dots.where_cond(&idx.ne_scalar(p)?, &zero)
        }
        None => Ok(dots),
    }
}

/// `torch.nn.functional.embedding_bag(input, weight, offsets, ...)`: the first output of
/// [`embedding_bag`], with F's argument order, `mode` as "sum", "mean" or "max", and its
/// checks. A 2-D `input` (offsets `None`) is a batch of equal-length bags, one per row; a 1-D
/// one needs `offsets`. (F's `max_norm` / `norm_type`, which renormalise `weight` in place,
/// are not taken.)
#[allow(clippy::too_many_arguments)]
pub fn embedding_bag_functional(
    input: &Tensor,
    weight: &Tensor,
    offsets: Option<&Tensor>,
    scale_grad_by_freq: bool,
    mode: &str,
    sparse: bool,
    per_sample_weights: Option<&Tensor>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> Result<Tensor> {
    let op = "embedding_bag";
    if let Some(p) = per_sample_weights {
        if p.shape() != input.shape() {
            return Err(Error::op(
                op,
                format!(
                    "embedding_bag: If per_sample_weights ({:?}) is not None, then it must have the same shape as the input ({:?})",
                    p.shape(),
                    input.shape()
                ),
            ));
        }
    }
    if weight.dim() != 2 {
        return Err(Error::op(
            op,
            format!(
                "weight has to be a 2D Tensor, but got Tensor of dimension {}",
                weight.dim()
            ),
        ));
    }
    let (input, offsets, per_sample_weights) = match input.dim() {
        2 => {
            if offsets.is_some() {
                return Err(Error::op(op, "if input is 2D, then offsets has to be None, as input is treated is a mini-batch of fixed length sequences. However, found offsets of type Tensor"));
            }
            let (rows, len) = (input.shape()[0], input.shape()[1]);
            let starts: Vec<i64> = (0..rows).map(|r| (r * len) as i64).collect();
            let offsets = Tensor::from_vec(starts, &[rows])?
                .to_dtype(input.dtype())?
                .to_device(input.device())?;
            let psw = per_sample_weights.map(|p| p.reshape([-1])).transpose()?;
            (input.reshape([-1])?, offsets, psw)
        }
        1 => {
            let Some(offsets) = offsets else {
                return Err(Error::op(op, "offsets has to be a 1D Tensor but got None"));
            };
            if offsets.dim() != 1 {
                return Err(Error::op(op, "offsets has to be a 1D Tensor"));
            }
            (input.clone(), offsets.clone(), per_sample_weights.cloned())
        }
        d => {
            return Err(Error::op(
                op,
                format!("input has to be 1D or 2D Tensor, but got Tensor of dimension {d}"),
            ))
        }
    };
    let mode_enum = match mode {
        "sum" => BAG_SUM,
        "mean" => BAG_MEAN,
        "max" if scale_grad_by_freq => {
            return Err(Error::op(
                op,
                "max mode does not support scaling the gradient by the frequency",
            ))
        }
        "max" if sparse => return Err(Error::op(op, "max mode does not support sparse weights")),
        "max" => BAG_MAX,
        _ => return Err(Error::op(op, "mode has to be one of sum, mean or max")),
    };
    if per_sample_weights.is_some() && mode_enum != BAG_SUM {
        return Err(Error::op(
            op,
            format!("embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got mode='{mode}'). Please open a feature request on GitHub."),
        ));
    }
    Ok(crate::embedding_bag_with(
        weight,
        &input,
        &offsets,
        scale_grad_by_freq,
        mode_enum,
        sparse,
        per_sample_weights.as_ref(),
        include_last_offset,
        padding_idx,
    )?
    .0)
}

/// `dropout(p, train)`: zeroes each element with probability `p` (from the global generator)
/// and scales the rest by `1 / (1 - p)`; the identity when not training.
pub fn dropout(t: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::op(
            "dropout",
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ));
    }
    if !train || p == 0.0 {
        return Ok(t.clone());
    }
    if p == 1.0 {
        return t.mul(&t.zeros_like()?);
    }
    let compute = if t.dtype().is_floating_point() {
        t.dtype()
    } else {
        DType::F32
    };
    let keep = Tensor::rand_on(t.shape(), compute, t.device())?.ge_scalar(p)?;
    t.mul(&keep.to_dtype(t.dtype())?)?.div_scalar(1.0 - p)
}

/// `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale,
/// enable_gqa)`: `softmax(q kᵀ · scale + mask) v`. A bool mask marks the positions that take
/// part; a float mask is added. With `enable_gqa`, key/value heads are shared by groups of
/// query heads.
#[allow(clippy::too_many_arguments)]
pub fn scaled_dot_product_attention(
    query: &Tensor,
    key: &Tensor,
    value: &Tensor,
    attn_mask: Option<&Tensor>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> Result<Tensor> {
    let op = "scaled_dot_product_attention";
    if query.dim() < 2 || key.dim() < 2 || value.dim() < 2 {
        return Err(Error::op(
            op,
            "query, key and value must have at least 2 dimensions",
        ));
    }
    if is_causal && attn_mask.is_some() {
        return Err(Error::op(
            op,
            "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True",
        ));
    }
    let e = query.shape()[query.dim() - 1];
    if key.shape()[key.dim() - 1] != e {
        return Err(Error::op(
            op,
            format!(
                "Expected query and key to have the same embedding size, but got {:?} and {:?}",
                query.shape(),
                key.shape()
            ),
        ));
    }
    let (mut k, mut v) = (key.clone(), value.clone());
    if enable_gqa && query.dim() >= 3 && key.dim() >= 3 {
        let (hq, hk) = (query.shape()[query.dim() - 3], key.shape()[key.dim() - 3]);
        if hk == 0 || hq % hk != 0 {
            return Err(Error::op(
                op,
                format!(
                    "number of query heads ({hq}) must be a multiple of key/value heads ({hk})"
                ),
            ));
        }
        let rep = (hq / hk) as i64;
        k = k.repeat_interleave_with(rep, Some(-3), None)?;
        v = v.repeat_interleave_with(rep, Some(-3), None)?;
    }
    let s = scale.unwrap_or(1.0 / (e as f64).sqrt());
    let mut scores = query.matmul(&k.transpose(-2, -1)?)?.mul_scalar(s)?;
    let (l, sl) = (
        scores.shape()[scores.dim() - 2],
        scores.shape()[scores.dim() - 1],
    );
    let neg_inf = |like: &Tensor| -> Result<Tensor> {
        Tensor::full_on((), f64::NEG_INFINITY, like.dtype(), like.device())
    };
    if is_causal {
        let keep = Tensor::ones([l, sl], DType::Bool)?
            .tril()?
            .to_device(scores.device())?;
        scores = scores.where_cond(&keep, &neg_inf(&scores)?)?;
    }
    if let Some(m) = attn_mask {
        scores = if m.dtype() == DType::Bool {
            scores.where_cond(m, &neg_inf(&scores)?)?
        } else {
            scores.add(m)?
        };
    }
    let mut w = scores.softmax(-1)?;
    if dropout_p > 0.0 {
        w = dropout(&w, dropout_p, true)?;
    }
    w.matmul(&v)
}
