//! `_conv_forward`: a batched convolution with one group (1-, 2- or 3-d), the CPU's own
//! forward for `conv1d/2d/3d`, and `_conv_weight_backward`, its weight gradient. `f32` on AVX2 + FMA runs as an implicit GEMM that never
//! builds im2col's column matrix (`matmul/conv.rs`), or for 3x3 stride-1 layers by Winograd's
//! F(2x2, 3x3) (`matmul/winograd.rs`); other CPUs and `f64` build one image's
//! columns at a time and multiply them with `mm`'s kernels. `bf16` and `f16` widen their
//! operands to `f32` (see `Wide`), take the `f32` path and round once.

use crate::cpu::fold::{image_strides, Geometry};
use crate::cpu::scratch;
use crate::cpu::shape::{contiguous_out, dense_out, row_major};
use crate::element::same_type;
use crate::KernelError;
use crate::{Arith, Dst, Element, KResult, Src};

const OP: &str = "_conv_forward";

/// The geometry of `input` `[B, C, *S]` under `weight` `[O, C, *K]`, checked.
fn geometry(
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> KResult<Geometry> {
    let n = weight.len().wrapping_sub(2);
    if !(1..=3).contains(&n) || input.len() != n + 2 {
        return Err(KernelError::shape(format!(
            "{OP}: expected a batched input [B, C, *S] and a weight [O, C, *K] with 1 to 3 spatial dims, but got input of size {input:?} and weight of size {weight:?}"
        )));
    }
    if input[1] != weight[1] {
        return Err(KernelError::shape(format!(
            "Given groups=1, weight of size {weight:?}, expected input{input:?} to have {} channels, but got {} channels instead",
            weight[1], input[1]
        )));
    }
    if let Some(b) = bias {
        if b != [weight[0]] {
            return Err(KernelError::shape(format!(
                "Given weight of size {weight:?}, expected bias to be 1-dimensional with {} elements, but got bias of size {b:?} instead",
                weight[0]
            )));
        }
    }
    let kernel: Vec<i64> = weight[2..].iter().map(|&k| k as i64).collect();
    if kernel.contains(&0) {
        return Err(KernelError::shape(format!(
            "{OP}: weight of size {weight:?} has an empty kernel"
        )));
    }
    Geometry::new(OP, input, &kernel, dilation, padding, stride)
}

/// Output shape of `_conv_forward`: `[B, O, *blocks]`.
pub fn conv_forward_meta(
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    let g = geometry(input, weight, bias, stride, padding, dilation)?;
    let mut shape = vec![g.batch, weight[0]];
    shape.extend(&g.blocks[3 - g.dims..]);
    Ok(vec![shape])
}

/// `_conv_forward(input, weight, bias, stride, padding, dilation)`: `out[b, o, q] = sum over
/// channels and kernel offsets of weight * input (0 in the padding) + bias[o]`, summed in the
/// compute type. Any strides for every operand.
pub fn conv_forward<T: Element>(
    input: Src<'_, T>,
    weight: Src<'_, T>,
    bias: Option<Src<'_, T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let g = geometry(
        &input.layout.sizes,
        &weight.layout.sizes,
        bias.as_ref().map(|b| &b.layout.sizes[..]),
        stride,
        padding,
        dilation,
    )?;
    let o = weight.layout.sizes[0];
    // A channels-last output (`memory_format:` in the YAML) is `[B, *L, O]` in memory.
    let (out, channels_last) = dense_out(&mut out)?;
    if out.is_empty() {
        return Ok(());
    }
    if is_half::<T>() {
        let (x, w) = (Wide::of(&input), Wide::of(&weight));
        let b = bias.as_ref().map(Wide::of);
        let mut sums = scratch::take(out.len());
        let (x, w) = (x.src(), w.src());
        forward_into(
            &g,
            o,
            x,
            w,
            b.as_ref().map(Wide::src),
            channels_last,
            &mut sums,
        )?;
        crate::cpu::narrow::narrow_from_f32(&sums, out);
        scratch::give(sums);
        return Ok(());
    }
    forward_into(&g, o, input, weight, bias, channels_last, out)
}

/// Whether `T` is bf16 or f16, whose convolutions widen to `f32` (see [`Wide`]).
pub(crate) fn is_half<T: Element>() -> bool {
    matches!(T::DTYPE, crate::DType::F16 | crate::DType::BF16)
}

/// A bf16 or f16 operand widened to `f32`. A half-precision convolution runs the `f32`
/// kernels on these and rounds its output once: the sums are `f32` as PyTorch's (oneDNN's)
/// are, the implicit GEMM never builds the 9x larger column matrix that the half GEMM
/// would need, and on CPUs without bf16 instructions the `f32` kernel is the fastest one.
/// The copy keeps the view's strides (a channels-last input stays channels-last) unless
/// the view spans much more of its buffer than it has elements; then it is row-major.
pub(crate) struct Wide {
    data: Vec<f32>,
    layout: crate::Layout,
}

impl Wide {
    pub(crate) fn of<T: Element>(src: &Src<'_, T>) -> Wide {
        let l = src.layout;
        let n = l.numel();
        let end = l.storage_extent().unwrap_or(0).max(l.offset);
        if n > 0 && end - l.offset <= 2 * n + 64 {
            let mut data = scratch::take(end - l.offset);
            crate::cpu::narrow::widen_to_f32(&src.data[l.offset..end], &mut data);
            let layout = crate::Layout {
                offset: 0,
                ..l.clone()
            };
            return Wide { data, layout };
        }
        Wide::dense(src)
    }

    /// A row-major widened copy, for a view the `f32` kernel reads row-major anyway.
    fn dense<T: Element>(src: &Src<'_, T>) -> Wide {
        let dense = row_major(src);
        let mut data = scratch::take(dense.len());
        crate::cpu::narrow::widen_to_f32(&dense, &mut data);
        Wide {
            data,
            layout: crate::Layout::contiguous(&src.layout.sizes),
        }
    }

    pub(crate) fn src(&self) -> Src<'_, f32> {
        Src::new(&self.data, &self.layout)
    }
}

impl Drop for Wide {
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.data));
    }
}

/// [`conv_forward`] into its dense output (`channels_last` says which of the two layouts).
fn forward_into<T: Element>(
    g: &Geometry,
    o: usize,
    input: Src<'_, T>,
    weight: Src<'_, T>,
    bias: Option<Src<'_, T>>,
    channels_last: bool,
    out: &mut [T],
) -> KResult<()> {
    let bias = bias.as_ref().map(row_major);
    let (sb, sc, ss) = image_strides(g, &input.layout.strides);
    #[cfg(target_arch = "x86_64")]
    if let (Some(data), Some(wdata), Some(out)) = (
        same_type::<T, f32>(input.data),
        same_type::<T, f32>(weight.data),
        crate::element::same_type_mut::<T, f32>(out),
    ) {
        let x = crate::cpu::matmul::conv::Images {
            data,
            offset: input.layout.offset,
            sb,
            sc,
            ss,
        };
        // The weight as it lies when its kernel dims flatten (a transposed view too), else
        // a row-major copy (see `weight_rows`). The channels-last path reads a
        // channels-last weight as it lies too: its packer wants channels innermost.
        let nhwc = crate::cpu::matmul::conv_nhwc::applies(g, &x, channels_last);
        let copy;
        let taps = g.kernel_len();
        let w = match kernel_stride(&weight.layout.sizes, &weight.layout.strides) {
            Some(sk) if nhwc || !channels_inner(g, &weight, sk) => {
                crate::cpu::matmul::conv::Weight {
                    data: wdata,
                    offset: weight.layout.offset,
                    so: weight.layout.strides[0],
                    sc: weight.layout.strides[1],
                    sk,
                }
            }
            sk => {
                copy = weight_rows(g, &weight, o, sk);
                crate::cpu::matmul::conv::Weight {
                    data: same_type::<T, f32>(&copy[..])
                        .ok_or_else(|| KernelError::dtype(format!("{OP}: weight not f32")))?,
                    offset: 0,
                    so: g.channels * taps,
                    sc: taps,
                    sk: 1,
                }
            }
        };
        let bias = match &bias {
            Some(b) => Some(same_type::<T, f32>(b).ok_or_else(|| {
                KernelError::dtype(format!("{OP}: bias must have the input's dtype"))
            })?),
            None => None,
        };
        if crate::cpu::matmul::conv::conv_forward_f32(g, x, w, o, bias, channels_last, out) {
            return Ok(());
        }
    }
    // One image's columns at a time, then `W @ cols` by `mm`'s kernels, then the bias.
    let w = row_major(&weight);
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    let mut cols = vec![T::default(); ck * q];
    // A channels-last output takes each image's `[O, L]` product transposed.
    let mut product = vec![T::default(); if channels_last { o * q } else { 0 }];
    for (b, out_b) in out.chunks_exact_mut(o * q).enumerate() {
        let base = input.layout.offset + b * sb;
        for (l, row) in cols.chunks_exact_mut(q).enumerate() {
            for (qi, v) in row.iter_mut().enumerate() {
                *v = column_value(g, input.data, base, (sc, ss), l, qi);
            }
        }
        let dst = if channels_last {
            &mut product[..]
        } else {
            &mut *out_b
        };
        crate::cpu::matmul::gemm_dense(o, ck, q, &w, &cols, dst)?;
        if let Some(bias) = &bias {
            for (row, &bv) in dst.chunks_exact_mut(q).zip(bias.iter()) {
                row.iter_mut()
                    .for_each(|v| *v = T::down(v.up().add(bv.up())));
            }
        }
        if channels_last {
            for (oi, row) in product.chunks_exact(q).enumerate() {
                for (qi, &v) in row.iter().enumerate() {
                    out_b[qi * o + oi] = v;
                }
            }
        }
    }
    Ok(())
}

/// Whether a weight whose kernel offsets step by `sk` has its channels innermost (a
/// channels-last weight): the packer, which reads a row's words in `(c, kk)` order, would
/// step through it element by element (a quarter of a channels-last ResNet forward).
fn channels_inner<T: Element>(g: &Geometry, weight: &Src<'_, T>, sk: usize) -> bool {
    weight.layout.strides[1] == 1 && g.channels > 1 && g.kernel_len() > 1 && sk >= g.channels
}

/// A row-major `[O, C * K]` copy of the weight: block by block through the transposing
/// copy for a channels-last one (`sk`, its kernel stride, given), else element by element.
fn weight_rows<'a, T: Element>(
    g: &Geometry,
    weight: &Src<'a, T>,
    o: usize,
    sk: Option<usize>,
) -> std::borrow::Cow<'a, [T]> {
    let (c, taps, l) = (g.channels, g.kernel_len(), weight.layout);
    match sk {
        Some(sk) if channels_inner(g, weight, sk) => {
            let mut rows = vec![T::default(); o * c * taps];
            for oi in 0..o {
                let b = crate::cpu::transpose::Block {
                    rows: c,
                    len: taps,
                    src: l.offset + oi * l.strides[0],
                    src_stride: sk,
                    dst: oi * c * taps,
                    dst_stride: taps,
                };
                crate::cpu::transpose::transpose(weight.data, &mut rows, b);
            }
            std::borrow::Cow::Owned(rows)
        }
        _ => row_major(weight),
    }
}

/// The one stride of a weight's flattened kernel offset (`[O, C, *kernel]`), if its kernel
/// dims flatten to one (size-1 dims aside).
fn kernel_stride(sizes: &[usize], strides: &[usize]) -> Option<usize> {
    let mut sk = None;
    let mut span = 1;
    for (&n, &st) in sizes[2..].iter().zip(&strides[2..]).rev() {
        if n == 1 {
            continue;
        }
        match sk {
            None => sk = Some(st),
            Some(s) if st == s * span => {}
            Some(_) => return None,
        }
        span *= n;
    }
    Some(sk.unwrap_or(1))
}

/// Element `(l, qi)` of one image's im2col matrix (the image at `base` in `input`): channel
/// `l / K` under kernel offset `l % K` at output position `qi`, 0 in the padding. The
/// portable paths' gather; the strides are the channel's and the three spatial ones.
fn column_value<T: Element>(
    g: &Geometry,
    data: &[T],
    base: usize,
    (sc, ss): (usize, [usize; 3]),
    l: usize,
    qi: usize,
) -> T {
    let (c, kk) = (l / g.kernel_len(), l % g.kernel_len());
    let (kd, kh, kw) = (
        kk / (g.kernel[1] * g.kernel[2]),
        (kk / g.kernel[2]) % g.kernel[1],
        kk % g.kernel[2],
    );
    let (ow, oh, od) = (
        qi % g.blocks[2],
        (qi / g.blocks[2]) % g.blocks[1],
        qi / (g.blocks[2] * g.blocks[1]),
    );
    match (
        g.source(0, od, kd),
        g.source(1, oh, kh),
        g.source(2, ow, kw),
    ) {
        (Some(i), Some(j), Some(k)) => data[base + c * sc + i * ss[0] + j * ss[1] + k * ss[2]],
        _ => T::default(),
    }
}

/// Output shape of `_conv_weight_backward`: the weight's, `[O, C, *kernel_size]`.
pub fn conv_weight_backward_meta(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    let (g, o) = weight_grad_geometry(grad_output, input, kernel_size, stride, padding, dilation)?;
    let mut shape = vec![o, g.channels];
    shape.extend(&g.kernel[3 - g.dims..]);
    Ok(vec![shape])
}

/// The geometry of `_conv_weight_backward` and the output channels, checked against the
/// output gradient's shape.
fn weight_grad_geometry(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
) -> KResult<(Geometry, usize)> {
    const OP: &str = "_conv_weight_backward";
    if kernel_size.iter().any(|&k| k <= 0) || input.len() != kernel_size.len() + 2 {
        return Err(KernelError::shape(format!(
            "{OP}: expected a batched input [B, C, *S] with one dim per kernel size, but got input of size {input:?} and kernel_size={kernel_size:?}"
        )));
    }
    let g = Geometry::new(OP, input, kernel_size, dilation, padding, stride)?;
    let mut want = vec![g.batch, grad_output.get(1).copied().unwrap_or(0)];
    want.extend(&g.blocks[3 - g.dims..]);
    if grad_output != want.as_slice() {
        let spatial: Vec<String> = g.blocks[3 - g.dims..]
            .iter()
            .map(|v| v.to_string())
            .collect();
        return Err(KernelError::shape(format!(
            "{OP}: expected grad_output of size [{}, O, {}] for input of size {input:?} and kernel_size={kernel_size:?}, but got grad_output of size {grad_output:?}",
            g.batch,
            spatial.join(", ")
        )));
    }
    Ok((g, grad_output[1]))
}

/// `_conv_weight_backward(grad_output, input, kernel_size, stride, padding, dilation)`: the
/// gradient of `_conv_forward`'s weight, `dw[o, c, k] = sum over images and output positions
/// of grad_output * the input under kernel offset k`, summed in the compute type.
pub fn conv_weight_backward<T: Element>(
    grad_output: Src<'_, T>,
    input: Src<'_, T>,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let (g, o) = weight_grad_geometry(
        &grad_output.layout.sizes,
        &input.layout.sizes,
        kernel_size,
        stride,
        padding,
        dilation,
    )?;
    let dw = contiguous_out(&mut out)?;
    if dw.is_empty() {
        return Ok(());
    }
    if is_half::<T>() {
        // The output gradient row-major at once: `weight_grad_into` would copy it again.
        let (gy, x) = (Wide::dense(&grad_output), Wide::of(&input));
        let mut sums = scratch::take(dw.len());
        weight_grad_into(&g, o, gy.src(), x.src(), &mut sums)?;
        crate::cpu::narrow::narrow_from_f32(&sums, dw);
        scratch::give(sums);
        return Ok(());
    }
    weight_grad_into(&g, o, grad_output, input, dw)
}

/// [`conv_weight_backward`] into its row-major output.
fn weight_grad_into<T: Element>(
    g: &Geometry,
    o: usize,
    grad_output: Src<'_, T>,
    input: Src<'_, T>,
    dw: &mut [T],
) -> KResult<()> {
    let gy = row_major(&grad_output);
    let (sb, sc, ss) = image_strides(g, &input.layout.strides);
    #[cfg(target_arch = "x86_64")]
    if let (Some(data), Some(gy), Some(dw)) = (
        same_type::<T, f32>(input.data),
        same_type::<T, f32>(&gy[..]),
        crate::element::same_type_mut::<T, f32>(dw),
    ) {
        let x = crate::cpu::matmul::conv::Images {
            data,
            offset: input.layout.offset,
            sb,
            sc,
            ss,
        };
        if crate::cpu::matmul::conv::conv_weight_grad_f32(g, x, gy, o, dw) {
            return Ok(());
        }
    }
    // Each image's columns, transposed, then `grad_output_b @ colsᵀ` summed over images.
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    let mut sums = vec![<T::Compute as Arith>::zero(); o * ck];
    let (mut cols_t, mut part) = (vec![T::default(); q * ck], vec![T::default(); o * ck]);
    for b in 0..g.batch {
        let base = input.layout.offset + b * sb;
        for l in 0..ck {
            for qi in 0..q {
                cols_t[qi * ck + l] = column_value(g, input.data, base, (sc, ss), l, qi);
            }
        }
        crate::cpu::matmul::gemm_dense(o, q, ck, &gy[b * o * q..][..o * q], &cols_t, &mut part)?;
        sums.iter_mut()
            .zip(&part)
            .for_each(|(s, v)| *s = s.add(v.up()));
    }
    dw.iter_mut().zip(&sums).for_each(|(d, &s)| *d = T::down(s));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Layout;

    /// Multiples of 1/64 in [-2, 2): every product and sum below is exact in f32.
    fn values(len: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                ((x >> 40) % 256) as f64 / 64.0 - 2.0
            })
            .collect()
    }

    #[derive(Clone, Copy)]
    struct Case {
        b: usize,
        c: usize,
        hw: [usize; 2],
        o: usize,
        k: [usize; 2],
        stride: [usize; 2],
        pad: [usize; 2],
        dil: [usize; 2],
        bias: bool,
        channels_last: bool,
    }

    /// The convolution in f64 by its definition, `x` logical `[B, C, H, W]` row-major.
    fn reference(t: &Case, x: &[f64], w: &[f64], bias: &[f64]) -> Vec<f64> {
        let [h, wd] = t.hw;
        let out_len =
            |d: usize, n: usize| (n + 2 * t.pad[d] - t.dil[d] * (t.k[d] - 1) - 1) / t.stride[d] + 1;
        let (oh, ow) = (out_len(0, h), out_len(1, wd));
        let mut out = Vec::with_capacity(t.b * t.o * oh * ow);
        for b in 0..t.b {
            for o in 0..t.o {
                for i in 0..oh {
                    for j in 0..ow {
                        let mut s = if t.bias { bias[o] } else { 0.0 };
                        for c in 0..t.c {
                            for ki in 0..t.k[0] {
                                for kj in 0..t.k[1] {
                                    let y = (i * t.stride[0] + ki * t.dil[0]) as isize
                                        - t.pad[0] as isize;
                                    let z = (j * t.stride[1] + kj * t.dil[1]) as isize
                                        - t.pad[1] as isize;
                                    if y < 0 || z < 0 || y as usize >= h || z as usize >= wd {
                                        continue;
                                    }
                                    let xv = x[((b * t.c + c) * h + y as usize) * wd + z as usize];
                                    s += xv * w[((o * t.c + c) * t.k[0] + ki) * t.k[1] + kj];
                                }
                            }
                        }
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    /// The input of a case as `T`, contiguous or channels-last.
    fn input<T: Element>(t: &Case, x: &[f64]) -> (Vec<T>, Layout) {
        let [h, wd] = t.hw;
        let sizes = [t.b, t.c, h, wd];
        // Channels-last: the same logical tensor with strides [H*W*C, 1, W*C, C].
        if t.channels_last {
            let mut buf = vec![T::default(); x.len()];
            for b in 0..t.b {
                for c in 0..t.c {
                    for i in 0..h {
                        for j in 0..wd {
                            buf[((b * h + i) * wd + j) * t.c + c] =
                                T::from_f64(x[((b * t.c + c) * h + i) * wd + j]);
                        }
                    }
                }
            }
            let l = Layout {
                sizes: sizes.iter().copied().collect(),
                strides: [h * wd * t.c, 1, wd * t.c, t.c].into_iter().collect(),
                offset: 0,
            };
            (buf, l)
        } else {
            (
                x.iter().map(|&v| T::from_f64(v)).collect(),
                Layout::contiguous(&sizes),
            )
        }
    }

    /// How the forward's weight is laid out.
    #[derive(Clone, Copy, PartialEq)]
    enum WeightLayout {
        Contiguous,
        /// A transposed view of a `[C, O, *kernel]` buffer, as the input gradient passes it.
        Transposed,
        /// Output channel 0's weight expanded over every output channel (stride 0), its
        /// channels every other one of a buffer twice as wide.
        Expanded,
        /// Channels-last: a `[O, *kernel, C]` buffer (strides `[K*C, 1, kw*C, C]`), as
        /// `Module::to_memory_format` leaves a convolution's weight.
        ChannelsLast,
    }

    /// The forward with the weight laid out as `layout` (for `Expanded`, `w`'s rows must be
    /// equal).
    fn run<T: Element>(
        t: &Case,
        x: &[f64],
        w: &[f64],
        bias: &[f64],
        layout: WeightLayout,
    ) -> Vec<f64> {
        let (xbuf, xl) = input::<T>(t, x);
        let kk = t.k[0] * t.k[1];
        let (wbuf, wl): (Vec<T>, Layout) = if layout == WeightLayout::Expanded {
            let mut buf = vec![T::default(); 2 * t.c * kk];
            for c in 0..t.c {
                for k in 0..kk {
                    buf[2 * c * kk + k] = T::from_f64(w[c * kk + k]);
                }
            }
            let l = Layout {
                sizes: [t.o, t.c, t.k[0], t.k[1]].into_iter().collect(),
                strides: [0, 2 * kk, t.k[1], 1].into_iter().collect(),
                offset: 0,
            };
            (buf, l)
        } else if layout == WeightLayout::ChannelsLast {
            let mut buf = vec![T::default(); w.len()];
            for o in 0..t.o {
                for c in 0..t.c {
                    for k in 0..kk {
                        buf[(o * kk + k) * t.c + c] = T::from_f64(w[(o * t.c + c) * kk + k]);
                    }
                }
            }
            let l = Layout {
                sizes: [t.o, t.c, t.k[0], t.k[1]].into_iter().collect(),
                strides: [kk * t.c, 1, t.k[1] * t.c, t.c].into_iter().collect(),
                offset: 0,
            };
            (buf, l)
        } else if layout == WeightLayout::Transposed {
            let mut buf = vec![T::default(); w.len()];
            for o in 0..t.o {
                for c in 0..t.c {
                    for k in 0..kk {
                        buf[(c * t.o + o) * kk + k] = T::from_f64(w[(o * t.c + c) * kk + k]);
                    }
                }
            }
            let l = Layout {
                sizes: [t.o, t.c, t.k[0], t.k[1]].into_iter().collect(),
                strides: [kk, t.o * kk, t.k[1], 1].into_iter().collect(),
                offset: 0,
            };
            (buf, l)
        } else {
            (
                w.iter().map(|&v| T::from_f64(v)).collect(),
                Layout::contiguous(&[t.o, t.c, t.k[0], t.k[1]]),
            )
        };
        let bl = Layout::contiguous(&[t.o]);
        let bbuf: Vec<T> = bias.iter().map(|&v| T::from_f64(v)).collect();
        let i64s = |v: [usize; 2]| v.map(|x| x as i64);
        let (st, pd, dl) = (i64s(t.stride), i64s(t.pad), i64s(t.dil));
        let bias_l = t.bias.then_some(&bl);
        let shape = conv_forward_meta(
            &xl.sizes,
            &wl.sizes,
            bias_l.map(|l| &l.sizes[..]),
            &st,
            &pd,
            &dl,
        )
        .unwrap()
        .remove(0);
        // The output follows the input's layout, as the op allocates it (`memory_format:`).
        let lo = if t.channels_last {
            Layout::in_format(&shape, crate::MemoryFormat::ChannelsLast)
        } else {
            Layout::contiguous(&shape)
        };
        let mut out = vec![T::default(); lo.numel()];
        conv_forward(
            Src::new(&xbuf, &xl),
            Src::new(&wbuf, &wl),
            bias_l.map(|l| Src::new(&bbuf, l)),
            &st,
            &pd,
            &dl,
            Dst::new(&mut out, &lo),
        )
        .unwrap();
        // Read back in logical `[B, O, *L]` order through the strides.
        let (o, q) = (shape[1], shape[2] * shape[3]);
        let mut logical = Vec::with_capacity(out.len());
        for b in 0..shape[0] {
            for oi in 0..o {
                for qi in 0..q {
                    let at = b * lo.strides[0]
                        + oi * lo.strides[1]
                        + (qi / shape[3]) * lo.strides[2]
                        + (qi % shape[3]) * lo.strides[3];
                    logical.push(out[at].to_f64());
                }
            }
        }
        logical
    }

    /// The defaults the cases below override: stride and dilation 1, no padding, no bias,
    /// a contiguous input.
    const PLAIN: Case = Case {
        b: 1,
        c: 1,
        hw: [1, 1],
        o: 1,
        k: [1, 1],
        stride: [1, 1],
        pad: [0, 0],
        dil: [1, 1],
        bias: false,
        channels_last: false,
    };

    #[test]
    fn conv_forward_and_weight_grad_equal_the_definition() {
        let cases = [
            // Channels-last input (the gathered path), stride, dilation, a bias.
            Case {
                b: 3,
                c: 5,
                hw: [9, 11],
                o: 7,
                k: [3, 2],
                stride: [2, 1],
                pad: [1, 1],
                dil: [1, 2],
                bias: true,
                channels_last: true,
            },
            // Contiguous rows, padding on one dim only.
            Case {
                b: 2,
                c: 3,
                hw: [8, 13],
                o: 5,
                k: [3, 3],
                pad: [2, 0],
                dil: [2, 1],
                ..PLAIN
            },
            // Two k blocks (C*K = 270), blocks of columns that span images.
            Case {
                b: 2,
                c: 30,
                hw: [20, 20],
                o: 13,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            },
            // 2x2 images, 130 output channels (two groups of weight micro-panels).
            Case {
                b: 5,
                c: 40,
                hw: [2, 2],
                o: 130,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            },
            // Output rows 68 wide at stride 1 (copied runs, not the tap table), dilated.
            Case {
                b: 3,
                c: 4,
                hw: [4, 70],
                o: 9,
                k: [2, 3],
                pad: [1, 1],
                dil: [1, 2],
                bias: true,
                ..PLAIN
            },
            // The same run by run on a channels-last input (strided runs).
            Case {
                b: 2,
                c: 5,
                hw: [3, 66],
                o: 7,
                k: [3, 3],
                pad: [1, 1],
                channels_last: true,
                ..PLAIN
            },
            // A weight large enough to be packed in parallel (130 x 576).
            Case {
                b: 2,
                c: 64,
                hw: [3, 3],
                o: 130,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            },
            // 2304 positions (9 blocks of 256): on 2 to 4 threads the weight gradient splits
            // them between tasks and sums the tasks' copies.
            Case {
                b: 4,
                c: 8,
                hw: [24, 24],
                o: 20,
                k: [3, 3],
                pad: [1, 1],
                ..PLAIN
            },
            // Stride 2 on contiguous rows, a 1x1 kernel.
            Case {
                b: 4,
                c: 6,
                hw: [7, 9],
                o: 8,
                k: [1, 1],
                stride: [2, 2],
                ..PLAIN
            },
        ];
        for (i, t) in cases.iter().enumerate() {
            let x = values(t.b * t.c * t.hw[0] * t.hw[1], 3 * i as u64 + 1);
            let w = values(t.o * t.c * t.k[0] * t.k[1], 3 * i as u64 + 2);
            let bias = values(t.o, 3 * i as u64 + 3);
            let want = reference(t, &x, &w, &bias);
            use WeightLayout::*;
            assert_eq!(
                run::<f32>(t, &x, &w, &bias, Contiguous),
                want,
                "f32, case {i}"
            );
            assert_eq!(
                run::<f64>(t, &x, &w, &bias, Contiguous),
                want,
                "f64, case {i}"
            );
            assert_eq!(
                run::<f32>(t, &x, &w, &bias, Transposed),
                want,
                "f32, transposed weight, case {i}"
            );
            assert_eq!(
                run::<f32>(t, &x, &w, &bias, ChannelsLast),
                want,
                "f32, channels-last weight, case {i}"
            );
            // Every output channel with channel 0's weight, through a stride-0 view.
            let ck = t.c * kk_of(t);
            let w0: Vec<f64> = (0..t.o).flat_map(|_| w[..ck].iter().copied()).collect();
            assert_eq!(
                run::<f32>(t, &x, &w0, &bias, Expanded),
                reference(t, &x, &w0, &bias),
                "f32, expanded weight, case {i}"
            );
            // The weight gradient for an output gradient `gy`, by its definition.
            let gy = values(want.len(), 3 * i as u64 + 4);
            let want_dw = reference_dw(t, &x, &gy);
            assert_eq!(
                run_dw::<f32>(t, &x, &gy),
                want_dw,
                "f32 weight grad, case {i}"
            );
            assert_eq!(
                run_dw::<f64>(t, &x, &gy),
                want_dw,
                "f64 weight grad, case {i}"
            );
            // bf16 and f16 (every value here is exact in both) sum in f32, exactly here,
            // and round once: the definition rounded to the type.
            use half::{bf16, f16};
            let bf =
                |v: &[f64]| -> Vec<f64> { v.iter().map(|&x| bf16::from_f64(x).to_f64()).collect() };
            let hf =
                |v: &[f64]| -> Vec<f64> { v.iter().map(|&x| f16::from_f64(x).to_f64()).collect() };
            for layout in [Contiguous, Transposed, ChannelsLast] {
                assert_eq!(
                    run::<bf16>(t, &x, &w, &bias, layout),
                    bf(&want),
                    "bf16, case {i}"
                );
            }
            assert_eq!(
                run::<bf16>(t, &x, &w0, &bias, Expanded),
                bf(&reference(t, &x, &w0, &bias)),
                "bf16, expanded weight, case {i}"
            );
            assert_eq!(
                run::<f16>(t, &x, &w, &bias, Contiguous),
                hf(&want),
                "f16, case {i}"
            );
            assert_eq!(
                run_dw::<bf16>(t, &x, &gy),
                bf(&want_dw),
                "bf16 weight grad, case {i}"
            );
            assert_eq!(
                run_dw::<f16>(t, &x, &gy),
                hf(&want_dw),
                "f16 weight grad, case {i}"
            );
        }
    }

    fn kk_of(t: &Case) -> usize {
        t.k[0] * t.k[1]
    }

    /// `dw[o, c, ki, kj] = sum over b, i, j of gy[b, o, i, j] * x[b, c, i*s + ki*d - p, ...]`.
    fn reference_dw(t: &Case, x: &[f64], gy: &[f64]) -> Vec<f64> {
        let [h, wd] = t.hw;
        let out_len =
            |d: usize, n: usize| (n + 2 * t.pad[d] - t.dil[d] * (t.k[d] - 1) - 1) / t.stride[d] + 1;
        let (oh, ow) = (out_len(0, h), out_len(1, wd));
        let mut dw = vec![0.0; t.o * t.c * t.k[0] * t.k[1]];
        for b in 0..t.b {
            for o in 0..t.o {
                for c in 0..t.c {
                    for ki in 0..t.k[0] {
                        for kj in 0..t.k[1] {
                            let mut s = 0.0;
                            for i in 0..oh {
                                for j in 0..ow {
                                    let y = (i * t.stride[0] + ki * t.dil[0]) as isize
                                        - t.pad[0] as isize;
                                    let z = (j * t.stride[1] + kj * t.dil[1]) as isize
                                        - t.pad[1] as isize;
                                    if y < 0 || z < 0 || y as usize >= h || z as usize >= wd {
                                        continue;
                                    }
                                    s += gy[((b * t.o + o) * oh + i) * ow + j]
                                        * x[((b * t.c + c) * h + y as usize) * wd + z as usize];
                                }
                            }
                            dw[((o * t.c + c) * t.k[0] + ki) * t.k[1] + kj] += s;
                        }
                    }
                }
            }
        }
        dw
    }

    fn run_dw<T: Element>(t: &Case, x: &[f64], gy: &[f64]) -> Vec<f64> {
        let [h, wd] = t.hw;
        let sizes = [t.b, t.c, h, wd];
        let (xbuf, xl) = input::<T>(t, x);
        let out_len =
            |d: usize, n: usize| (n + 2 * t.pad[d] - t.dil[d] * (t.k[d] - 1) - 1) / t.stride[d] + 1;
        let gshape = [t.b, t.o, out_len(0, sizes[2]), out_len(1, sizes[3])];
        // The output gradient in the input's layout, as the forward's output is.
        let (gl, gbuf) = if t.channels_last {
            let l = Layout::in_format(&gshape, crate::MemoryFormat::ChannelsLast);
            let mut buf = vec![T::default(); gy.len()];
            let q = gshape[2] * gshape[3];
            for (i, &v) in gy.iter().enumerate() {
                let (b, oi, qi) = (i / (t.o * q), (i / q) % t.o, i % q);
                buf[(b * q + qi) * t.o + oi] = T::from_f64(v);
            }
            (l, buf)
        } else {
            let buf: Vec<T> = gy.iter().map(|&v| T::from_f64(v)).collect();
            (Layout::contiguous(&gshape), buf)
        };
        let i64s = |v: [usize; 2]| v.map(|x| x as i64);
        let (k, st, pd, dl) = (i64s(t.k), i64s(t.stride), i64s(t.pad), i64s(t.dil));
        let shape = conv_weight_backward_meta(&gl.sizes, &xl.sizes, &k, &st, &pd, &dl)
            .unwrap()
            .remove(0);
        let lo = Layout::contiguous(&shape);
        let mut out = vec![T::default(); lo.numel()];
        conv_weight_backward(
            Src::new(&gbuf, &gl),
            Src::new(&xbuf, &xl),
            &k,
            &st,
            &pd,
            &dl,
            Dst::new(&mut out, &lo),
        )
        .unwrap();
        out.iter().map(|v| v.to_f64()).collect()
    }

    /// The forward of channels-last batches of 8 or more channels (`matmul/conv_nhwc.rs`),
    /// and their weight gradient from a channels-last output gradient, against the
    /// definition: exact on these values.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn channels_last_convolutions_equal_the_definition() {
        let cl = |t: Case| Case {
            channels_last: true,
            ..t
        };
        let cases = [
            // Two k blocks (C*K = 360) split inside a tap, 37 output channels (a ragged
            // panel), 297 rows (row blocks and a ragged micro-panel), a bias.
            cl(Case {
                b: 3,
                c: 40,
                hw: [9, 11],
                o: 37,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            }),
            // Stride, dilation, padding on one dim, 8 channels (the fewest taken).
            cl(Case {
                b: 2,
                c: 8,
                hw: [7, 9],
                o: 20,
                k: [3, 2],
                stride: [2, 1],
                pad: [1, 0],
                dil: [1, 2],
                bias: true,
                ..PLAIN
            }),
            // 2x2 images, 64 rows: too few row blocks, so the output channels are split.
            cl(Case {
                b: 16,
                c: 24,
                hw: [2, 2],
                o: 70,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            }),
            // A 1x1 kernel at stride 2 (ResNet's downsampling).
            cl(Case {
                b: 4,
                c: 12,
                hw: [5, 6],
                o: 16,
                k: [1, 1],
                stride: [2, 2],
                ..PLAIN
            }),
            // A tap's channels longer than a k block (300 > 256).
            cl(Case {
                b: 2,
                c: 300,
                hw: [3, 3],
                o: 18,
                k: [2, 2],
                pad: [0, 1],
                ..PLAIN
            }),
        ];
        for (i, t) in cases.iter().enumerate() {
            let x = values(t.b * t.c * t.hw[0] * t.hw[1], 7 * i as u64 + 1);
            let w = values(t.o * t.c * kk_of(t), 7 * i as u64 + 2);
            let bias = values(t.o, 7 * i as u64 + 3);
            // The case must take the path it is here for.
            let g = geometry(
                &[t.b, t.c, t.hw[0], t.hw[1]],
                &[t.o, t.c, t.k[0], t.k[1]],
                None,
                &t.stride.map(|s| s as i64),
                &t.pad.map(|p| p as i64),
                &t.dil.map(|d| d as i64),
            )
            .unwrap();
            let (_, xl) = input::<f32>(t, &x);
            let (sb, sc, ss) = image_strides(&g, &xl.strides);
            let images = crate::cpu::matmul::conv::Images {
                data: &[],
                offset: 0,
                sb,
                sc,
                ss,
            };
            assert!(
                crate::cpu::matmul::conv_nhwc::applies(&g, &images, true),
                "case {i} does not take the channels-last path"
            );
            let want = reference(t, &x, &w, &bias);
            use WeightLayout::*;
            for layout in [Contiguous, Transposed, ChannelsLast] {
                let name = match layout {
                    Contiguous => "contiguous",
                    Transposed => "transposed",
                    _ => "channels-last",
                };
                assert_eq!(
                    run::<f32>(t, &x, &w, &bias, layout),
                    want,
                    "{name} weight, case {i}"
                );
            }
            let w0: Vec<f64> = (0..t.o)
                .flat_map(|_| w[..t.c * kk_of(t)].iter().copied())
                .collect();
            assert_eq!(
                run::<f32>(t, &x, &w0, &bias, Expanded),
                reference(t, &x, &w0, &bias),
                "expanded weight, case {i}"
            );
            let gy = values(want.len(), 7 * i as u64 + 4);
            assert_eq!(
                run_dw::<f32>(t, &x, &gy),
                reference_dw(t, &x, &gy),
                "weight grad, case {i}"
            );
        }
    }

    /// 3x3 stride-1 layers that take Winograd's F(2x2, 3x3) (`matmul/winograd.rs`): equal to
    /// the definition within rounding. The transforms' sums do not stay exact on these
    /// values, so the bound is a few `f32` ulps of the sum of `|w x|` terms (a misplaced
    /// patch or tile is off by whole terms).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn winograd_convolutions_equal_the_definition_within_rounding() {
        let cases = [
            // Odd output sizes both ways, a bias, tile rows split between blocks.
            Case {
                b: 3,
                c: 16,
                hw: [13, 29],
                o: 19,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            },
            // No padding, even sizes, 16 rows exactly (no partial micro-panel of `U`).
            Case {
                b: 2,
                c: 24,
                hw: [10, 12],
                o: 18,
                k: [3, 3],
                ..PLAIN
            },
            // One-pixel-wide images padded by 2 across: rows of two tiles, many images.
            Case {
                b: 40,
                c: 17,
                hw: [2, 1],
                o: 22,
                k: [3, 3],
                pad: [1, 2],
                bias: true,
                ..PLAIN
            },
            // The benchmark's 56-wide rows.
            Case {
                b: 2,
                c: 32,
                hw: [3, 56],
                o: 40,
                k: [3, 3],
                pad: [1, 1],
                bias: true,
                ..PLAIN
            },
        ];
        for (i, t) in cases.iter().enumerate() {
            let x = values(t.b * t.c * t.hw[0] * t.hw[1], 5 * i as u64 + 1);
            let w = values(t.o * t.c * 9, 5 * i as u64 + 2);
            let bias = values(t.o, 5 * i as u64 + 3);
            // The case must take the path it is here for.
            let g = geometry(
                &[t.b, t.c, t.hw[0], t.hw[1]],
                &[t.o, t.c, 3, 3],
                None,
                &[1],
                &t.pad.map(|p| p as i64),
                &[1],
            )
            .unwrap();
            let (sb, sc, ss) = image_strides(
                &g,
                &[t.c * t.hw[0] * t.hw[1], t.hw[0] * t.hw[1], t.hw[1], 1],
            );
            let images = crate::cpu::matmul::conv::Images {
                data: &[],
                offset: 0,
                sb,
                sc,
                ss,
            };
            assert!(
                crate::cpu::matmul::winograd::applies(&g, &images, t.o, false),
                "case {i} is not a Winograd case"
            );
            let want = reference(t, &x, &w, &bias);
            let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
            let scale = reference(t, &abs(&x), &abs(&w), &abs(&bias));
            let check = |got: Vec<f64>, what: &str| {
                assert_eq!(got.len(), want.len());
                for (j, ((g, w), s)) in got.iter().zip(&want).zip(&scale).enumerate() {
                    assert!(
                        (g - w).abs() <= 1e-6 * s,
                        "{what}, case {i}, element {j}: {g} vs {w} (terms {s})"
                    );
                }
            };
            use WeightLayout::*;
            check(run::<f32>(t, &x, &w, &bias, Contiguous), "f32");
            // As the input gradient passes its flipped weight.
            check(
                run::<f32>(t, &x, &w, &bias, Transposed),
                "f32, transposed weight",
            );
            check(
                run::<f32>(t, &x, &w, &bias, ChannelsLast),
                "f32, channels-last weight",
            );
            // A channels-last batch, through row-major copies.
            let tc = Case {
                channels_last: true,
                ..*t
            };
            let (sb, sc, ss) = image_strides(&g, &input::<f32>(&tc, &x).1.strides);
            let images = crate::cpu::matmul::conv::Images {
                sb,
                sc,
                ss,
                ..images
            };
            assert!(
                crate::cpu::matmul::winograd::applies_channels_last(&g, &images, t.o),
                "case {i} is not a channels-last Winograd case"
            );
            for layout in [Contiguous, ChannelsLast] {
                check(
                    run::<f32>(&tc, &x, &w, &bias, layout),
                    "channels-last input",
                );
            }
            let w0: Vec<f64> = (0..t.o)
                .flat_map(|_| w[..t.c * 9].iter().copied())
                .collect();
            let want0 = reference(t, &x, &w0, &bias);
            for (g, w) in run::<f32>(t, &x, &w0, &bias, Expanded).iter().zip(&want0) {
                assert!((g - w).abs() <= 1e-6 * scale.iter().fold(0.0, |a: f64, b| a.max(*b)));
            }
        }
    }
}
