//! `_conv_grouped`: a grouped convolution with few channels per group (depthwise ones have
//! one input channel per group), 1-, 2- or 3-d, as a direct loop; and its input and weight
//! gradients, `_conv_grouped_input_backward` and `_conv_grouped_weight_backward`. With a
//! handful of channels per group a GEMM has nothing to block over: im2col + a batched
//! product wrote a column matrix `K` times the input and multiplied it in `groups` tiny
//! products. Here each (image, group) copies its input channels once into zero-padded
//! planes ([`Padded`]), so that every tap of every output reads in bounds, and each block
//! of eight outputs of a row sums all its taps in registers (`avx2`, for f32 on AVX2 +
//! FMA; the generic loops serve f64 and other CPUs). The weight gradient keeps eight
//! lanes per tap along each row; the stride-1 input gradient is the forward on the
//! flipped, transposed weight, other strides gather per input row. The sums are in the
//! order of the loops, the same on any number of threads. `bf16` and `f16` widen to `f32`
//! as `_conv_forward` does and round once.

use crate::cpu::conv::{is_half, Wide};
use crate::cpu::fold::{image_strides, Geometry};
use crate::cpu::narrow::narrow_from_f32;
use crate::cpu::scratch;
use crate::cpu::shape::{contiguous_out, dense_out, row_major};
use crate::element::{same_type, same_type_mut};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Dst, Element, KResult, Src};

const OP: &str = "_conv_grouped";

/// The checked shape of a grouped convolution: the image geometry (three dims, leading 1s)
/// and the channel split.
struct Plan {
    g: Geometry,
    /// Input and output channels per group.
    cg: usize,
    og: usize,
    out_channels: usize,
}

impl Plan {
    /// Checks `input` `[B, C, *S]` against `weight` `[O, C / groups, *K]` with PyTorch's
    /// messages.
    fn new(
        op: &str,
        input: &[usize],
        weight: &[usize],
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        groups: i64,
    ) -> KResult<Plan> {
        let n = weight.len().wrapping_sub(2);
        if !(1..=3).contains(&n) || input.len() != n + 2 {
            return Err(KernelError::shape(format!(
                "{op}: expected a batched input [B, C, *S] and a weight [O, C / groups, *K] with 1 to 3 spatial dims, but got input of size {input:?} and weight of size {weight:?}"
            )));
        }
        if groups <= 0 {
            return Err(KernelError::value(format!(
                "{op}: non-positive groups is not supported"
            )));
        }
        let groups = groups as usize;
        let (o, cg) = (weight[0], weight[1]);
        if cg.checked_mul(groups) != Some(input[1]) {
            return Err(KernelError::shape(format!(
                "Given groups={groups}, weight of size {weight:?}, expected input{input:?} to have {} channels, but got {} channels instead",
                cg.saturating_mul(groups),
                input[1]
            )));
        }
        if o % groups != 0 {
            return Err(KernelError::shape(format!(
                "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size {weight:?} instead"
            )));
        }
        let kernel: Vec<i64> = weight[2..].iter().map(|&k| k as i64).collect();
        if kernel.contains(&0) {
            return Err(KernelError::shape(format!(
                "{op}: weight of size {weight:?} has an empty kernel"
            )));
        }
        let g = Geometry::new(op, input, &kernel, dilation, padding, stride)?;
        Ok(Plan {
            g,
            cg,
            og: o / groups,
            out_channels: o,
        })
    }

    fn output_shape(&self) -> Vec<usize> {
        let mut shape = vec![self.g.batch, self.out_channels];
        shape.extend(&self.g.blocks[3 - self.g.dims..]);
        shape
    }

    fn input_shape(&self) -> Vec<usize> {
        let mut shape = vec![self.g.batch, self.g.channels];
        shape.extend(&self.g.size[3 - self.g.dims..]);
        shape
    }

    fn weight_shape(&self) -> Vec<usize> {
        let mut shape = vec![self.out_channels, self.cg];
        shape.extend(&self.g.kernel[3 - self.g.dims..]);
        shape
    }

    /// `offset(d, k) = k * dilation - padding` along dim `d`: output position `q` reads
    /// input coordinate `q * stride + offset`.
    fn offset(&self, d: usize, k: usize) -> isize {
        (k * self.g.dilation[d]) as isize - self.g.padding[d] as isize
    }

    /// The output positions along dim `d` whose input coordinate under kernel offset `k`
    /// lies inside the image.
    fn span(&self, d: usize, k: usize) -> (usize, usize) {
        let (len, size, s) = (self.g.blocks[d], self.g.size[d], self.g.stride[d]);
        let off = self.offset(d, k);
        let lo = if off >= 0 {
            0
        } else {
            off.unsigned_abs().div_ceil(s)
        };
        let top = size as isize - 1 - off;
        let hi = if top < 0 {
            0
        } else {
            (top as usize / s + 1).min(len)
        };
        (lo.min(hi), hi)
    }

    /// The innermost dim's spans, one per kernel offset: `(lo, hi, offset)`.
    fn inner_spans(&self) -> Vec<(usize, usize, isize)> {
        (0..self.g.kernel[2])
            .map(|k| {
                let (lo, hi) = self.span(2, k);
                (lo, hi, self.offset(2, k))
            })
            .collect()
    }

    /// Multiply-adds of the whole convolution (the same for each of the three ops).
    fn work(&self) -> usize {
        self.g
            .batch
            .saturating_mul(self.out_channels)
            .saturating_mul(self.g.block_len())
            .saturating_mul(self.cg * self.g.kernel_len())
    }
}

/// Below this many multiply-adds a call stays on the calling thread.
const PARALLEL_WORK: usize = 1 << 16;

/// A real type the loops compute in (`f32`, `f64`). `madd::<true>` fuses the multiply-add.
trait Real: Copy + Default + Send + Sync + 'static {
    fn madd<const F: bool>(a: Self, b: Self, c: Self) -> Self;
    fn add(self, o: Self) -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            #[inline(always)]
            fn madd<const F: bool>(a: Self, b: Self, c: Self) -> Self {
                if F {
                    a.mul_add(b, c)
                } else {
                    a * b + c
                }
            }
            #[inline(always)]
            fn add(self, o: Self) -> Self {
                self + o
            }
        }
    };
}
real!(f32);
real!(f64);

/// Whether the AVX2 + FMA copies of the loops may run here.
#[cfg(target_arch = "x86_64")]
fn fma() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")
}

/// `row[i] += w * x[i]`.
#[inline(always)]
fn axpy<R: Real, const F: bool>(row: &mut [R], w: R, x: &[R]) {
    for (r, &v) in row.iter_mut().zip(x) {
        *r = R::madd::<F>(w, v, *r);
    }
}

/// An input image in memory: its buffer, offset and strides (batch, channel, three spatial
/// dims with leading 0s).
#[derive(Clone, Copy)]
struct Image<'a, R> {
    data: &'a [R],
    offset: usize,
    sb: usize,
    sc: usize,
    ss: [usize; 3],
}

impl<'a, R: Copy> Image<'a, R> {
    fn of(p: &Plan, src: Src<'a, R>) -> Image<'a, R> {
        let (sb, sc, ss) = image_strides(&p.g, &src.layout.strides);
        Image {
            data: src.data,
            offset: src.layout.offset,
            sb,
            sc,
            ss,
        }
    }
}

/// Defines `fn $name<R: Real>(args)` that runs `$body::<R, true>` compiled for AVX2 + FMA
/// where the CPU has them, else `$body::<R, false>` (the target's baseline).
macro_rules! versions {
    ($name:ident($($p:ident: $ty:ty),* $(,)?) => $body:ident) => {
        fn $name<R: Real>($($p: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn fused<R: Real>($($p: $ty),*) {
                $body::<R, true>($($p),*)
            }
            #[cfg(target_arch = "x86_64")]
            if fma() {
                // SAFETY: `fma()` saw the CPU report AVX2 and FMA, the features `fused` is
                // compiled with.
                return unsafe { fused::<R>($($p),*) };
            }
            $body::<R, false>($($p),*)
        }
    };
}

// ---------------------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------------------

pub fn conv_grouped_meta(
    input: &[usize],
    weight: &[usize],
    bias: Option<&[usize]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> KResult<Vec<Vec<usize>>> {
    let p = Plan::new(OP, input, weight, stride, padding, dilation, groups)?;
    check_bias(weight, bias)?;
    Ok(vec![p.output_shape()])
}

fn check_bias(weight: &[usize], bias: Option<&[usize]>) -> KResult<()> {
    match bias {
        Some(b) if b != [weight[0]] => Err(KernelError::shape(format!(
            "Given weight of size {weight:?}, expected bias to be 1-dimensional with {} elements, but got bias of size {b:?} instead",
            weight[0]
        ))),
        _ => Ok(()),
    }
}

/// `_conv_grouped(input, weight, bias, stride, padding, dilation, groups)`:
/// `out[b, o, q] = bias[o] + Σ over the input channels c of o's group and the kernel offsets
/// k of weight[o, c, k] * input[b, c, q * stride + k * dilation - padding]` (0 in the
/// padding). Any strides for every operand.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped<T: Element>(
    input: Src<'_, T>,
    weight: Src<'_, T>,
    bias: Option<Src<'_, T>>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let sizes = (&input.layout.sizes, &weight.layout.sizes);
    let p = Plan::new(OP, sizes.0, sizes.1, stride, padding, dilation, groups)?;
    check_bias(sizes.1, bias.as_ref().map(|b| &b.layout.sizes[..]))?;
    // A channels-last output (`memory_format:` in the YAML) is `[B, *L, O]` in memory.
    let (out, channels_last) = dense_out(&mut out)?;
    struct Forward<'p>(&'p Plan, bool);
    impl Body for Forward<'_> {
        fn run<R: Real>(&self, x: Src<'_, R>, w: Src<'_, R>, b: Option<Src<'_, R>>, out: &mut [R]) {
            let (w, b) = (row_major(&w), b.as_ref().map(row_major));
            forward(self.0, Image::of(self.0, x), &w, b.as_deref(), out, self.1);
        }
    }
    in_real(
        OP,
        [&input, &weight],
        bias.as_ref(),
        out,
        &Forward(&p, channels_last),
    )
}

/// A kernel's loops in the real type they compute in, for [`in_real`]: `R` is `f32` (for
/// f32, and for bf16 and f16 widened) or `f64`.
trait Body {
    fn run<R: Real>(&self, a: Src<'_, R>, b: Src<'_, R>, c: Option<Src<'_, R>>, out: &mut [R]);
}

/// Runs `body` on the operands in `T`'s compute type: f32 and f64 as they are, bf16 and
/// f16 widened to f32 (see [`Wide`]) into f32 sums rounded once into `out`.
fn in_real<T: Element>(
    op: &str,
    [a, b]: [&Src<'_, T>; 2],
    c: Option<&Src<'_, T>>,
    out: &mut [T],
    body: &impl Body,
) -> KResult<()> {
    if out.is_empty() {
        return Ok(());
    }
    if is_half::<T>() {
        let (a, b, c) = (Wide::of(a), Wide::of(b), c.map(Wide::of));
        let mut sums = scratch::take(out.len());
        body.run::<f32>(a.src(), b.src(), c.as_ref().map(Wide::src), &mut sums);
        narrow_from_f32(&sums, out);
        scratch::give(sums);
        return Ok(());
    }
    macro_rules! real {
        ($r:ty) => {
            if let (Some(ad), Some(bd), Some(out)) = (
                same_type::<T, $r>(a.data),
                same_type::<T, $r>(b.data),
                same_type_mut::<T, $r>(out),
            ) {
                let c = c.and_then(|c| Some(Src::new(same_type::<T, $r>(c.data)?, c.layout)));
                body.run::<$r>(Src::new(ad, a.layout), Src::new(bd, b.layout), c, out);
                return Ok(());
            }
        };
    }
    real!(f32);
    real!(f64);
    Err(KernelError::dtype(format!(
        "\"{op}\" not implemented for '{}'",
        T::DTYPE.scalar_type_name()
    )))
}

/// The forward into a dense `[B, O, *L]` `out`, parallel over (image, group) pairs: each
/// pads its group's input channels once and computes the group's output planes from them.
fn forward<R: Real>(
    p: &Plan,
    x: Image<'_, R>,
    w: &[R],
    bias: Option<&[R]>,
    out: &mut [R],
    channels_last: bool,
) {
    let unit = p.og * p.g.block_len();
    // `og` is at least 1: the output is not empty.
    let groups = p.out_channels / p.og;
    let body = |first: usize, chunk: &mut [R]| {
        let mut pad = Padded::new(p);
        for (i, planes) in chunk.chunks_exact_mut(unit).enumerate() {
            let (b, group) = ((first + i) / groups, (first + i) % groups);
            pad.fill(p, x, b, group);
            if !forward_group_f32(p, &pad, w, bias, group, planes) {
                forward_group(p, &pad, w, bias, group, planes);
            }
        }
    };
    let work = unit * p.cg * p.g.kernel_len();
    let layout = Out {
        channels: p.out_channels,
        positions: p.g.block_len(),
        channels_last,
    };
    layout.drive(p.work(), unit, work, out, &body);
}

/// A dense `[B, C, *L]` output of `C` channels at `positions` positions, written in units
/// of whole planes (consecutive channels of one image).
struct Out {
    channels: usize,
    positions: usize,
    /// `[B, *L, C]` in memory: each image's planes are computed row-major and transposed.
    channels_last: bool,
}

impl Out {
    /// Calls `units(first, block)` over `out` in blocks of whole `unit`-element units (the
    /// `first`-th unit first), parallel when the call's `work` (multiply-adds) is large,
    /// about 64 K per task of `unit_work` each. A channels-last output goes image by image
    /// through a row-major copy.
    fn drive<R: Real>(
        &self,
        work: usize,
        unit: usize,
        unit_work: usize,
        out: &mut [R],
        units: &(dyn Fn(usize, &mut [R]) + Sync),
    ) {
        let image = self.channels * self.positions;
        let large = fan_out(work >= PARALLEL_WORK);
        if self.channels_last {
            let per_image = image / unit;
            let body = |b: usize, dst: &mut [R]| {
                let mut planes = vec![R::default(); image];
                units(b * per_image, &mut planes);
                let block = crate::cpu::transpose::Block {
                    rows: self.positions,
                    len: self.channels,
                    src: 0,
                    src_stride: self.positions,
                    dst: 0,
                    dst_stride: self.channels,
                };
                crate::cpu::transpose::transpose(&planes, dst, block);
            };
            if large && out.len() > image {
                par_chunks_mut(out, image, &body);
            } else {
                for (b, dst) in out.chunks_exact_mut(image).enumerate() {
                    body(b, dst);
                }
            }
            return;
        }
        let count = out.len() / unit;
        let per = planes_per_task(unit_work, count);
        if large && per < count {
            par_chunks_mut(out, per * unit, &|t, chunk| units(t * per, chunk));
        } else {
            units(0, out);
        }
    }
}

/// Planes per parallel task, for planes of `per_plane` multiply-adds: about 64 K each,
/// and at least 4 tasks per thread when there are that many planes.
fn planes_per_task(per_plane: usize, planes: usize) -> usize {
    let by_work = (PARALLEL_WORK / per_plane.max(1)).max(1);
    let by_threads = (planes / (4 * crate::parallel::num_threads())).max(1);
    by_work.min(by_threads)
}

/// One group's input channels of one image, zero-padded by the convolution's padding, one
/// padded plane after another, with a tail so that an output row's last eight-lane block
/// may read past the row's end (those lanes are never stored).
struct Padded<R> {
    data: Vec<R>,
    /// Padded sizes of the three spatial dims.
    size: [usize; 3],
    /// Where each output row (of the `L0 × L1`) starts reading in a padded plane.
    starts: Vec<usize>,
}

impl<R: Real> Padded<R> {
    fn new(p: &Plan) -> Padded<R> {
        let size: [usize; 3] = std::array::from_fn(|d| p.g.size[d] + 2 * p.g.padding[d]);
        let plane: usize = size.iter().product();
        let [l0, l1, _] = p.g.blocks;
        let (s0, s1) = (p.g.stride[0] * size[1] * size[2], p.g.stride[1] * size[2]);
        let starts = (0..l0)
            .flat_map(|q0| (0..l1).map(move |q1| q0 * s0 + q1 * s1))
            .collect();
        Padded {
            data: vec![R::default(); p.cg * plane + 8 * p.g.stride[2] + 8],
            size,
            starts,
        }
    }

    fn plane(&self) -> usize {
        self.size.iter().product()
    }

    /// Copies image `b`'s channels of `group` into the padded planes (the padding stays 0).
    fn fill(&mut self, p: &Plan, x: Image<'_, R>, b: usize, group: usize) {
        let [_, s1, s2] = p.g.size;
        let [pd0, pd1, pd2] = p.g.padding;
        let [_, n1, n2] = self.size;
        let plane = self.plane();
        for ci in 0..p.cg {
            let src = x.offset + b * x.sb + (group * p.cg + ci) * x.sc;
            let dst = &mut self.data[ci * plane..][..plane];
            for (i0, i1) in (0..p.g.size[0]).flat_map(|i0| (0..s1).map(move |i1| (i0, i1))) {
                let row = &mut dst[((i0 + pd0) * n1 + i1 + pd1) * n2 + pd2..][..s2];
                let at = src + i0 * x.ss[0] + i1 * x.ss[1];
                if x.ss[2] == 1 {
                    // Eight at a time: rows are short, and a `memmove` call per row cost
                    // a tenth of a depthwise layer's forward + backward.
                    let src = &x.data[at..at + s2];
                    let (mut d8, s8) = (row.chunks_exact_mut(8), src.chunks_exact(8));
                    for (d, s) in (&mut d8).zip(s8.clone()) {
                        d.copy_from_slice(s);
                    }
                    for (d, &v) in d8.into_remainder().iter_mut().zip(s8.remainder()) {
                        *d = v;
                    }
                } else {
                    for (i2, v) in row.iter_mut().enumerate() {
                        *v = x.data[at + i2 * x.ss[2]];
                    }
                }
            }
        }
    }

    /// The offset of kernel tap `(ci, k0, k1, k2)` from an output position's window start.
    fn taps(&self, p: &Plan) -> Vec<usize> {
        let [_, n1, n2] = self.size;
        let [k0n, k1n, k2n] = p.g.kernel;
        let d = p.g.dilation;
        let mut taps = Vec::with_capacity(p.cg * p.g.kernel_len());
        for ci in 0..p.cg {
            for k0 in 0..k0n {
                for k1 in 0..k1n {
                    for k2 in 0..k2n {
                        taps.push(
                            ci * self.plane() + (k0 * d[0] * n1 + k1 * d[1]) * n2 + k2 * d[2],
                        );
                    }
                }
            }
        }
        taps
    }
}

/// [`avx2::forward_group`] when `R` is `f32`, the CPU has AVX2 and FMA and the innermost
/// stride is 1; false (nothing written) otherwise.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn forward_group_f32<R: Real>(
    p: &Plan,
    pad: &Padded<R>,
    w: &[R],
    bias: Option<&[R]>,
    group: usize,
    out: &mut [R],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (Some(pad), Some(w), Some(out)) = (
        (pad as &dyn std::any::Any).downcast_ref::<Padded<f32>>(),
        same_type::<R, f32>(w),
        same_type_mut::<R, f32>(out),
    ) {
        if p.g.stride[2] == 1 && fma() {
            let bias = bias.and_then(same_type::<R, f32>);
            // SAFETY: `fma()` saw the CPU report AVX2 and FMA, the features it is built with.
            return unsafe { avx2::forward_group(p, pad, w, bias, group, out) };
        }
    }
    false
}

versions!(forward_group(p: &Plan, pad: &Padded<R>, w: &[R], bias: Option<&[R]>, group: usize, out: &mut [R]) => forward_group_body);

/// A group's output planes from its padded input channels: each eight outputs of a row
/// sum every tap in registers, `acc += w * input` with no bounds to check.
#[inline(always)]
fn forward_group_body<R: Real, const F: bool>(
    p: &Plan,
    pad: &Padded<R>,
    w: &[R],
    bias: Option<&[R]>,
    group: usize,
    out: &mut [R],
) {
    let xpad = &pad.data[..];
    let offsets = pad.taps(p);
    let (l2, s2) = (p.g.blocks[2], p.g.stride[2]);
    let taps = offsets.len();
    let mut tw: Vec<(usize, R)> = Vec::with_capacity(taps);
    for (oj, plane) in out.chunks_exact_mut(p.g.block_len()).enumerate() {
        let o = group * p.og + oj;
        let bv = bias.map_or(R::default(), |b| b[o]);
        tw.clear();
        tw.extend(
            offsets
                .iter()
                .copied()
                .zip(w[o * taps..][..taps].iter().copied()),
        );
        for (row, &start) in plane.chunks_exact_mut(l2).zip(&pad.starts) {
            for j in (0..l2).step_by(8) {
                let mut acc = [bv; 8];
                let at = start + j * s2;
                if s2 == 1 {
                    for &(off, wv) in &tw {
                        let xs = &xpad[at + off..at + off + 8];
                        for i in 0..8 {
                            acc[i] = R::madd::<F>(wv, xs[i], acc[i]);
                        }
                    }
                } else {
                    for &(off, wv) in &tw {
                        let xs = &xpad[at + off..at + off + 7 * s2 + 1];
                        for i in 0..8 {
                            acc[i] = R::madd::<F>(wv, xs[i * s2], acc[i]);
                        }
                    }
                }
                let n = (l2 - j).min(8);
                row[j..j + n].copy_from_slice(&acc[..n]);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Input gradient
// ---------------------------------------------------------------------------------------

/// The plan of a gradient op: the forward's, from the output gradient's and the other
/// operand's sizes, with the output gradient checked against the forward's output.
#[allow(clippy::too_many_arguments)]
fn backward_plan(
    op: &str,
    grad_output: &[usize],
    input: &[usize],
    weight: &[usize],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> KResult<Plan> {
    let p = Plan::new(op, input, weight, stride, padding, dilation, groups)?;
    let expected = p.output_shape();
    if grad_output != expected {
        return Err(KernelError::shape(format!(
            "{op}: expected grad_output of size {expected:?} (input {input:?}, weight {weight:?}), but got {grad_output:?}"
        )));
    }
    Ok(p)
}

fn usizes(op: &str, what: &str, v: &[i64]) -> KResult<Vec<usize>> {
    v.iter()
        .map(|&x| usize::try_from(x))
        .collect::<Result<_, _>>()
        .map_err(|_| KernelError::value(format!("{op}: {what} must be non-negative, got {v:?}")))
}

const INPUT_OP: &str = "_conv_grouped_input_backward";

/// The plan of `_conv_grouped_input_backward`, from its arguments.
fn input_plan(
    grad_output: &[usize],
    weight: &[usize],
    input_size: &[i64],
    [stride, padding, dilation]: [&[i64]; 3],
    groups: i64,
) -> KResult<Plan> {
    let input = usizes(INPUT_OP, "input_size", input_size)?;
    backward_plan(
        INPUT_OP,
        grad_output,
        &input,
        weight,
        stride,
        padding,
        dilation,
        groups,
    )
}

pub fn conv_grouped_input_backward_meta(
    grad_output: &[usize],
    weight: &[usize],
    input_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> KResult<Vec<Vec<usize>>> {
    let geometry = [stride, padding, dilation];
    let p = input_plan(grad_output, weight, input_size, geometry, groups)?;
    Ok(vec![p.input_shape()])
}

/// `_conv_grouped_input_backward(grad_output, weight, input_size, ...)`: the gradient of
/// `_conv_grouped`'s input, `[B, C, *S]` = `input_size`: each input element gets
/// `Σ weight[o, c, k] * grad_output[b, o, q]` over the outputs `o` of its group and the
/// positions `q` and offsets `k` that read it.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_input_backward<T: Element>(
    grad_output: Src<'_, T>,
    weight: Src<'_, T>,
    input_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let (gs, ws) = (&grad_output.layout.sizes, &weight.layout.sizes);
    let p = input_plan(gs, ws, input_size, [stride, padding, dilation], groups)?;
    let (out, channels_last) = dense_out(&mut out)?;
    struct InputGrad<'p>(&'p Plan, bool);
    impl Body for InputGrad<'_> {
        fn run<R: Real>(
            &self,
            gy: Src<'_, R>,
            w: Src<'_, R>,
            _: Option<Src<'_, R>>,
            out: &mut [R],
        ) {
            input_grad(self.0, &row_major(&gy), &row_major(&w), out, self.1);
        }
    }
    let body = InputGrad(&p, channels_last);
    in_real(INPUT_OP, [&grad_output, &weight], None, out, &body)
}

/// The input gradient into a dense `[B, C, *S]` `out` from a dense `grad_output` and
/// weight, parallel over input planes.
fn input_grad<R: Real>(p: &Plan, gy: &[R], w: &[R], out: &mut [R], channels_last: bool) {
    if input_grad_as_forward(p, gy, w, out, channels_last) {
        return;
    }
    let plane: usize = p.g.size.iter().product();
    let (c, lplane) = (p.g.channels, p.g.block_len());
    let body = |first: usize, planes: &mut [R]| {
        for (i, dx) in planes.chunks_exact_mut(plane).enumerate() {
            let (b, ci) = ((first + i) / c, (first + i) % c);
            let (group, cl) = (ci / p.cg, ci % p.cg);
            let gy0 = (b * p.out_channels + group * p.og) * lplane;
            input_grad_plane(p, &gy[gy0..gy0 + p.og * lplane], w, group, cl, dx);
        }
    };
    let layout = Out {
        channels: c,
        positions: plane,
        channels_last,
    };
    layout.drive(
        p.work(),
        plane,
        lplane * p.og * p.g.kernel_len(),
        out,
        &body,
    );
}

/// With stride 1 along every dim and `dilation * (k - 1) >= padding`, the input gradient
/// is the forward convolution of the output gradient, padded by `dilation * (k - 1) -
/// padding`, with each group's weight transposed (`[C, og, *K]`) and its kernel flipped:
/// the fast forward then serves it. False (nothing written) otherwise.
fn input_grad_as_forward<R: Real>(
    p: &Plan,
    gy: &[R],
    w: &[R],
    out: &mut [R],
    channels_last: bool,
) -> bool {
    let g = &p.g;
    // No outputs (`og == 0`): the gradient is zeros, which the gather below writes.
    if p.og == 0
        || g.stride != [1, 1, 1]
        || (0..3).any(|d| g.dilation[d] * (g.kernel[d] - 1) < g.padding[d])
    {
        return false;
    }
    let back: Vec<i64> = (0..3)
        .map(|d| (g.dilation[d] * (g.kernel[d] - 1) - g.padding[d]) as i64)
        .skip(3 - g.dims)
        .collect();
    let dilation: Vec<i64> = g.dilation[3 - g.dims..].iter().map(|&v| v as i64).collect();
    let gy_shape = p.output_shape();
    let mut flipped_shape = vec![g.channels, p.og];
    flipped_shape.extend(&g.kernel[3 - g.dims..]);
    let groups = (p.out_channels / p.og) as i64;
    let Ok(q) = Plan::new(
        INPUT_OP,
        &gy_shape,
        &flipped_shape,
        &[1],
        &back,
        &dilation,
        groups,
    ) else {
        return false;
    };
    if q.output_shape() != p.input_shape() {
        return false;
    }
    let taps = g.kernel_len();
    let mut flipped = vec![R::default(); g.channels * p.og * taps];
    for (o, rows) in w.chunks_exact(p.cg * taps).enumerate() {
        let (group, oj) = (o / p.og, o % p.og);
        for (cl, ws) in rows.chunks_exact(taps).enumerate() {
            let c = group * p.cg + cl;
            let dst = &mut flipped[(c * p.og + oj) * taps..][..taps];
            for (d, &v) in dst.iter_mut().rev().zip(ws) {
                *d = v;
            }
        }
    }
    let layout = crate::Layout::contiguous(&gy_shape);
    forward(
        &q,
        Image::of(&q, Src::new(gy, &layout)),
        &flipped,
        None,
        out,
        channels_last,
    );
    true
}

versions!(input_grad_plane(p: &Plan, gy: &[R], w: &[R], group: usize, cl: usize, dx: &mut [R]) => input_grad_plane_body);

/// One input channel's gradient plane (`cl`-th channel of `group`), row by row: each
/// input row gathers the output rows that read it (outer dims), and scatters each of
/// those rows into itself along the innermost dim (contiguous at stride 1).
#[inline(always)]
fn input_grad_plane_body<R: Real, const F: bool>(
    p: &Plan,
    gy: &[R],
    w: &[R],
    group: usize,
    cl: usize,
    dx: &mut [R],
) {
    let [s1, s2] = [p.g.size[1], p.g.size[2]];
    let [l0, l1, l2] = p.g.blocks;
    let [k0n, k1n, k2n] = p.g.kernel;
    let taps = p.g.kernel_len();
    let spans = p.inner_spans();
    let lplane = l0 * l1 * l2;
    let st = p.g.stride;
    // The output position along dim `d` that reads input coordinate `i` under offset `k`.
    let reader = |d: usize, i: usize, k: usize| -> Option<usize> {
        let q = i as isize - p.offset(d, k);
        (q >= 0 && (q as usize).is_multiple_of(st[d]) && (q as usize / st[d]) < p.g.blocks[d])
            .then(|| q as usize / st[d])
    };
    dx.fill(R::default());
    for (r, row) in dx.chunks_exact_mut(s2).enumerate() {
        let (i0, i1) = (r / s1, r % s1);
        for oj in 0..p.og {
            let wk = &w[((group * p.og + oj) * p.cg + cl) * taps..][..taps];
            let gyo = &gy[oj * lplane..][..lplane];
            for k0 in 0..k0n {
                let Some(q0) = reader(0, i0, k0) else {
                    continue;
                };
                for k1 in 0..k1n {
                    let Some(q1) = reader(1, i1, k1) else {
                        continue;
                    };
                    let grow = &gyo[(q0 * l1 + q1) * l2..][..l2];
                    let wr = &wk[(k0 * k1n + k1) * k2n..][..k2n];
                    for (&wv, &(lo, hi, off)) in wr.iter().zip(&spans) {
                        if lo >= hi {
                            continue;
                        }
                        if st[2] == 1 {
                            let start = (lo as isize + off) as usize;
                            axpy::<R, F>(&mut row[start..start + hi - lo], wv, &grow[lo..hi]);
                        } else {
                            for (q2, &g) in grow[lo..hi].iter().enumerate() {
                                let i2 = (((q2 + lo) * st[2]) as isize + off) as usize;
                                row[i2] = R::madd::<F>(wv, g, row[i2]);
                            }
                        }
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Weight gradient
// ---------------------------------------------------------------------------------------

const WEIGHT_OP: &str = "_conv_grouped_weight_backward";

fn weight_plan(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> KResult<Plan> {
    let kernel = usizes(WEIGHT_OP, "kernel_size", kernel_size)?;
    if grad_output.len() != input.len() || grad_output.len() < 2 || groups <= 0 {
        return Err(KernelError::shape(format!(
            "{WEIGHT_OP}: expected grad_output [B, O, *L] and input [B, C, *S] with the same number of dims and positive groups, but got grad_output of size {grad_output:?}, input of size {input:?} and groups={groups}"
        )));
    }
    let mut weight = vec![grad_output[1], input[1] / groups as usize];
    weight.extend(&kernel);
    backward_plan(
        WEIGHT_OP,
        grad_output,
        input,
        &weight,
        stride,
        padding,
        dilation,
        groups,
    )
}

pub fn conv_grouped_weight_backward_meta(
    grad_output: &[usize],
    input: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> KResult<Vec<Vec<usize>>> {
    let p = weight_plan(
        grad_output,
        input,
        kernel_size,
        stride,
        padding,
        dilation,
        groups,
    )?;
    Ok(vec![p.weight_shape()])
}

/// `_conv_grouped_weight_backward(grad_output, input, kernel_size, ...)`: the gradient of
/// `_conv_grouped`'s weight, `[O, C / groups, *kernel_size]`: `dw[o, c, k] = Σ over images
/// and output positions q of grad_output[b, o, q] * input[b, c, q * stride + k * dilation -
/// padding]`, with `c` in `o`'s group.
#[allow(clippy::too_many_arguments)]
pub fn conv_grouped_weight_backward<T: Element>(
    grad_output: Src<'_, T>,
    input: Src<'_, T>,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let (gs, xs) = (&grad_output.layout.sizes, &input.layout.sizes);
    let p = weight_plan(gs, xs, kernel_size, stride, padding, dilation, groups)?;
    let out = contiguous_out(&mut out)?;
    struct WeightGrad<'p>(&'p Plan);
    impl Body for WeightGrad<'_> {
        fn run<R: Real>(
            &self,
            gy: Src<'_, R>,
            x: Src<'_, R>,
            _: Option<Src<'_, R>>,
            out: &mut [R],
        ) {
            weight_grad(self.0, &row_major(&gy), Image::of(self.0, x), out);
        }
    }
    in_real(
        WEIGHT_OP,
        [&grad_output, &input],
        None,
        out,
        &WeightGrad(&p),
    )
}

/// The weight gradient into a dense `[O, C / groups, *K]` `out`, parallel over groups
/// (each sums over the whole batch on its own, in a fixed order).
fn weight_grad<R: Real>(p: &Plan, gy: &[R], x: Image<'_, R>, out: &mut [R]) {
    let unit = p.og * p.cg * p.g.kernel_len();
    let body = |group: usize, dw: &mut [R]| {
        let mut pad = Padded::new(p);
        if !weight_grad_group_f32(p, gy, x, &mut pad, group, dw) {
            weight_grad_group(p, gy, x, &mut pad, group, dw);
        }
    };
    if fan_out(p.work() >= PARALLEL_WORK) && out.len() > unit {
        par_chunks_mut(out, unit, &body);
    } else {
        for (group, dw) in out.chunks_exact_mut(unit).enumerate() {
            body(group, dw);
        }
    }
}

/// [`avx2::weight_grad_group`] when `R` is `f32`, the CPU has AVX2 and FMA and the
/// innermost stride is 1; false (nothing written) otherwise.
#[cfg_attr(not(target_arch = "x86_64"), allow(unused_variables))]
fn weight_grad_group_f32<R: Real>(
    p: &Plan,
    gy: &[R],
    x: Image<'_, R>,
    pad: &mut Padded<R>,
    group: usize,
    dw: &mut [R],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let (Some(gy), Some(data), Some(pad), Some(dw)) = (
        same_type::<R, f32>(gy),
        same_type::<R, f32>(x.data),
        (pad as &mut dyn std::any::Any).downcast_mut::<Padded<f32>>(),
        same_type_mut::<R, f32>(dw),
    ) {
        if p.g.stride[2] == 1 && fma() {
            let x = Image {
                data,
                offset: x.offset,
                sb: x.sb,
                sc: x.sc,
                ss: x.ss,
            };
            // SAFETY: `fma()` saw the CPU report AVX2 and FMA, the features it is built with.
            return unsafe { avx2::weight_grad_group(p, gy, x, pad, group, dw) };
        }
    }
    false
}

versions!(weight_grad_group(p: &Plan, gy: &[R], x: Image<'_, R>, pad: &mut Padded<R>, group: usize, dw: &mut [R]) => weight_grad_group_body);

/// A group's weights `[og, cg, *K]`: per image, its input channels padded once; per output
/// channel and tap, eight lanes of `grad_output row · input row` kept in registers along
/// each row and summed over every image and row; the lanes are added up at the end. The
/// tail of a row past its last eight-lane block goes to the lanes one element at a time.
#[inline(always)]
fn weight_grad_group_body<R: Real, const F: bool>(
    p: &Plan,
    gy: &[R],
    x: Image<'_, R>,
    pad: &mut Padded<R>,
    group: usize,
    dw: &mut [R],
) {
    let offsets = pad.taps(p);
    let taps = offsets.len();
    let (l2, s2, lplane) = (p.g.blocks[2], p.g.stride[2], p.g.block_len());
    let full = l2 / 8 * 8;
    let mut lanes = vec![[R::default(); 8]; p.og * taps];
    for b in 0..p.g.batch {
        pad.fill(p, x, b, group);
        let xpad = &pad.data[..];
        for oj in 0..p.og {
            let gyo = &gy[(b * p.out_channels + group * p.og + oj) * lplane..][..lplane];
            let acc = &mut lanes[oj * taps..][..taps];
            for (grow, &start) in gyo.chunks_exact(l2).zip(&pad.starts) {
                for (lane, &off) in acc.iter_mut().zip(&offsets) {
                    let mut a = *lane;
                    for j in (0..full).step_by(8) {
                        let (g, at) = (&grow[j..j + 8], start + off + j * s2);
                        if s2 == 1 {
                            let xs = &xpad[at..at + 8];
                            for i in 0..8 {
                                a[i] = R::madd::<F>(g[i], xs[i], a[i]);
                            }
                        } else {
                            let xs = &xpad[at..at + 7 * s2 + 1];
                            for i in 0..8 {
                                a[i] = R::madd::<F>(g[i], xs[i * s2], a[i]);
                            }
                        }
                    }
                    for q2 in full..l2 {
                        let xv = xpad[start + off + q2 * s2];
                        a[q2 % 8] = R::madd::<F>(grow[q2], xv, a[q2 % 8]);
                    }
                    *lane = a;
                }
            }
        }
    }
    for (d, acc) in dw.iter_mut().zip(&lanes) {
        let (a, b) = (acc[0].add(acc[4]), acc[1].add(acc[5]));
        let (c, e) = (acc[2].add(acc[6]), acc[3].add(acc[7]));
        *d = a.add(c).add(b.add(e));
    }
}

/// The f32 loops on AVX2 + FMA, eight lanes per register, for a unit innermost stride.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Image, Padded, Plan};
    use std::arch::x86_64::*;

    /// One past the farthest element the blocks of any row read: `lanes` past the largest
    /// row start plus the farthest tap.
    fn reach(pad: &Padded<f32>, offsets: &[usize], lanes: usize) -> usize {
        pad.starts.iter().max().copied().unwrap_or(0)
            + offsets.iter().max().copied().unwrap_or(0)
            + lanes
    }

    /// [`super::forward_group_body`] with each row's eight outputs in one register. False
    /// (nothing written) if the padded buffer would not hold the last block's reads.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn forward_group(
        p: &Plan,
        pad: &Padded<f32>,
        w: &[f32],
        bias: Option<&[f32]>,
        group: usize,
        out: &mut [f32],
    ) -> bool {
        let offsets = pad.taps(p);
        let l2 = p.g.blocks[2];
        let blocks = l2.div_ceil(8);
        if reach(pad, &offsets, 8 * blocks) > pad.data.len() {
            return false;
        }
        let x = pad.data.as_ptr();
        let taps = offsets.len();
        let mut tw: Vec<(usize, f32)> = Vec::with_capacity(taps);
        for (oj, plane) in out.chunks_exact_mut(p.g.block_len()).enumerate() {
            let o = group * p.og + oj;
            tw.clear();
            tw.extend(
                offsets
                    .iter()
                    .copied()
                    .zip(w[o * taps..][..taps].iter().copied()),
            );
            let b = _mm256_set1_ps(bias.map_or(0.0, |b| b[o]));
            for (row, &start) in plane.chunks_exact_mut(l2).zip(&pad.starts) {
                for j in (0..l2).step_by(8) {
                    let mut acc = b;
                    for &(off, wv) in &tw {
                        // SAFETY: `start + off + j + 8 <= reach <= pad.data.len()`, checked
                        // above: `start` is at most the largest row start and `j < 8 * blocks`.
                        let xv = unsafe { _mm256_loadu_ps(x.add(start + off + j)) };
                        acc = _mm256_fmadd_ps(_mm256_set1_ps(wv), xv, acc);
                    }
                    let mut lanes = [0f32; 8];
                    // SAFETY: `lanes` holds eight f32s.
                    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc) };
                    let n = (l2 - j).min(8);
                    row[j..j + n].copy_from_slice(&lanes[..n]);
                }
            }
        }
        true
    }

    /// [`super::weight_grad_group_body`] with each tap's eight lanes in one register along
    /// a row; a row's tail past its last full block goes to a scalar sum per tap. False
    /// (nothing written) if the padded buffer would not hold the blocks' reads.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn weight_grad_group(
        p: &Plan,
        gy: &[f32],
        x: Image<'_, f32>,
        pad: &mut Padded<f32>,
        group: usize,
        dw: &mut [f32],
    ) -> bool {
        let offsets = pad.taps(p);
        let taps = offsets.len();
        let (l2, lplane) = (p.g.blocks[2], p.g.block_len());
        let full = l2 / 8 * 8;
        if reach(pad, &offsets, full) > pad.data.len()
            || gy.len() < p.g.batch * p.out_channels * lplane
        {
            return false;
        }
        let mut lanes = vec![_mm256_setzero_ps(); p.og * taps];
        let mut tails = vec![0f32; p.og * taps];
        for b in 0..p.g.batch {
            pad.fill(p, x, b, group);
            let xp = pad.data.as_ptr();
            for oj in 0..p.og {
                let gy0 = (b * p.out_channels + group * p.og + oj) * lplane;
                let (acc, tail) = (
                    &mut lanes[oj * taps..][..taps],
                    &mut tails[oj * taps..][..taps],
                );
                for (r, &start) in pad.starts.iter().enumerate() {
                    let grow = &gy[gy0 + r * l2..][..l2];
                    let g = grow.as_ptr();
                    for ((a, t), &off) in acc.iter_mut().zip(tail.iter_mut()).zip(&offsets) {
                        let mut v = *a;
                        for j in (0..full).step_by(8) {
                            // SAFETY: `j + 8 <= full <= l2 = grow.len()`, and `start + off +
                            // j + 8 <= reach <= pad.data.len()`, checked above.
                            let (gv, xv) = unsafe {
                                (
                                    _mm256_loadu_ps(g.add(j)),
                                    _mm256_loadu_ps(xp.add(start + off + j)),
                                )
                            };
                            v = _mm256_fmadd_ps(gv, xv, v);
                        }
                        *a = v;
                        for (q2, &gq) in grow.iter().enumerate().skip(full) {
                            *t = gq.mul_add(pad.data[start + off + q2], *t);
                        }
                    }
                }
            }
        }
        for ((d, a), &t) in dw.iter_mut().zip(&lanes).zip(&tails) {
            let mut v = [0f32; 8];
            // SAFETY: `v` holds eight f32s.
            unsafe { _mm256_storeu_ps(v.as_mut_ptr(), *a) };
            *d = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])) + t;
        }
        true
    }
}
