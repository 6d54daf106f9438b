//! Max pooling in one pass over each `(batch, channel)` plane: the maximum of each window
//! and its flat index into the plane. `max_pool2d` slides a (strided, padded, dilated)
//! window; adaptive pooling's output cell `i` of a dim of size `n` pooled to `out` covers
//! `floor(i·n/out) .. ceil((i+1)·n/out)`, so windows may overlap by one.

use crate::cpu::pool_window::{each_plane, Slide};
use crate::cpu::shape::{contiguous_out, dense_out, row_major};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::KernelError;
use crate::{Arith, Dst, Element, KResult, Src};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64};

/// Planes per parallel task are chosen so a task reads at least this many elements.
const TASK_WORK: usize = 1 << 14;

/// `[planes, h, w]` of a 3-d (unbatched) or 4-d (batched) image, with PyTorch's checks.
fn planes(op: &str, sizes: &[usize], output_size: &[i64]) -> KResult<(Vec<usize>, [usize; 3])> {
    if sizes.len() != 3 && sizes.len() != 4 {
        return Err(KernelError::shape(format!(
            "{op}(): Expected 3D or 4D tensor, but got: {sizes:?}"
        )));
    }
    if output_size.len() != 2 {
        return Err(KernelError::shape(format!(
            "{op}(): internal error: output_size must be 2, but got {}",
            output_size.len()
        )));
    }
    if output_size.iter().any(|&o| o < 0) {
        return Err(KernelError::value(format!(
            "{op}: elements of output_size must be greater than or equal to 0 but received {output_size:?}"
        )));
    }
    let lead = sizes.len() - 2;
    // Dim 0 (batch, or channels of an unbatched image) may be empty.
    for (i, &s) in sizes.iter().enumerate().skip(1) {
        if s == 0 {
            return Err(KernelError::shape(format!(
                "{op}(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {sizes:?} with dimension {i} being empty"
            )));
        }
    }
    let (h, w) = (sizes[lead], sizes[lead + 1]);
    let mut shape = sizes[..lead].to_vec();
    shape.extend(output_size.iter().map(|&o| o as usize));
    let count = sizes[..lead].iter().product();
    Ok((shape, [count, h, w]))
}

pub fn adaptive_max_pool2d_meta(self_: &[usize], output_size: &[i64]) -> KResult<Vec<Vec<usize>>> {
    let (shape, _) = planes("adaptive_max_pool2d", self_, output_size)?;
    Ok(vec![shape.clone(), shape])
}

/// The input rows `start .. end` that output cell `i` of `out` pools over `size` rows.
fn window(i: usize, out: usize, size: usize) -> (usize, usize) {
    (i * size / out, ((i + 1) * size).div_ceil(out))
}

/// `adaptive_max_pool2d(output_size)`: values and flat indices into each `h × w` plane. A NaN
/// wins its window (the first one seen), as in PyTorch; among equal maxima the first in
/// row-major order is reported.
pub fn adaptive_max_pool2d<T: Element>(
    self_: Src<'_, T>,
    output_size: &[i64],
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let (_, [count, h, w]) = planes("adaptive_max_pool2d", &self_.layout.sizes, output_size)?;
    let (oh, ow) = (output_size[0] as usize, output_size[1] as usize);
    let cells = oh * ow;
    let v = contiguous_out(&mut values)?;
    let ix = contiguous_out(&mut indices)?;
    if count == 0 || cells == 0 {
        return Ok(());
    }
    let x = row_major(&self_);
    let plane = h * w;
    // One `(batch, channel)` plane of the output: `vs`/`is` hold its `oh × ow` cells.
    let pool = |p: usize, vs: &mut [T], is: &mut [i64]| {
        let src = &x[p * plane..(p + 1) * plane];
        for i in 0..oh {
            let (h0, h1) = window(i, oh, h);
            for j in 0..ow {
                let (w0, w1) = window(j, ow, w);
                let mut best = (src[h0 * w + w0].up(), h0 * w + w0);
                'scan: for r in h0..h1 {
                    for c in w0..w1 {
                        let k = r * w + c;
                        let val = src[k].up();
                        if val.is_nan() {
                            best = (val, k);
                            break 'scan;
                        }
                        if val > best.0 {
                            best = (val, k);
                        }
                    }
                }
                vs[i * ow + j] = T::down(best.0);
                is[i * ow + j] = best.1 as i64;
            }
        }
    };
    each_plane(v, ix, cells, plane, &pool);
    Ok(())
}

/// `_max_pool2d`'s checked geometry: `[planes, h, w]` and the two dims.
fn slides(
    sizes: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_size: &[i64],
) -> KResult<(usize, [Slide; 2])> {
    const OP: &str = "_max_pool2d";
    if sizes.len() != 4 {
        return Err(KernelError::shape(format!(
            "{OP}: expected a batched input [B, C, H, W], but got {sizes:?}"
        )));
    }
    let lists = [
        ("kernel_size", kernel_size),
        ("stride", stride),
        ("padding", padding),
        ("dilation", dilation),
        ("output_size", output_size),
    ];
    for (name, v) in lists {
        if v.len() != 2 {
            return Err(KernelError::value(format!(
                "{OP}: {name} must have 2 elements, but got {v:?}"
            )));
        }
    }
    if kernel_size
        .iter()
        .chain(stride)
        .chain(dilation)
        .any(|&v| v <= 0)
        || padding.iter().chain(output_size).any(|&v| v < 0)
    {
        return Err(KernelError::value(format!(
            "{OP}: kernel_size, stride and dilation must be positive and padding and output_size non-negative, but got kernel_size={kernel_size:?}, stride={stride:?}, padding={padding:?}, dilation={dilation:?}, output_size={output_size:?}"
        )));
    }
    let mut dims = [Slide {
        k: 1,
        s: 1,
        p: 0,
        d: 1,
        size: 0,
        out: 0,
    }; 2];
    for i in 0..2 {
        let (k, s, p, d, o) = (
            kernel_size[i] as i128,
            stride[i] as i128,
            padding[i] as i128,
            dilation[i] as i128,
            output_size[i] as i128,
        );
        let size = sizes[2 + i] as i128;
        let span = d * (k - 1) + 1;
        if 2 * p > span {
            return Err(KernelError::value(format!(
                "{OP}: pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation={d}"
            )));
        }
        // Every window starts inside the input or its left padding (as ceil_mode ensures),
        // and the reach of the last one fits in isize.
        if o > 0
            && (size == 0 || (o - 1) * s >= size + p || (o - 1) * s + span > isize::MAX as i128)
        {
            return Err(KernelError::shape(format!(
                "{OP}: output_size {output_size:?} does not fit the input {sizes:?} with kernel_size={kernel_size:?}, stride={stride:?}, padding={padding:?}, dilation={dilation:?}"
            )));
        }
        dims[i] = Slide {
            k: k as usize,
            s: s as usize,
            p: p as usize,
            d: d as usize,
            size: size as usize,
            out: o as usize,
        };
    }
    Ok((sizes[0] * sizes[1], dims))
}

pub fn max_pool2d_meta(
    self_: &[usize],
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_size: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    let (_, [y, x]) = slides(self_, kernel_size, stride, padding, dilation, output_size)?;
    let shape = vec![self_[0], self_[1], y.out, x.out];
    Ok(vec![shape.clone(), shape])
}

/// `_max_pool2d`: the maximum of each window of a batched image and its flat index into the
/// `H × W` plane, with PyTorch's CPU rules: taps in the padding are skipped, a NaN wins (the
/// last one seen), among equal maxima the first in row-major order is reported, and a window
/// of `-inf` reports its first in-range tap.
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d<T: Element>(
    self_: Src<'_, T>,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    output_size: &[i64],
    mut values: Dst<'_, T>,
    mut indices: Dst<'_, i64>,
) -> KResult<()> {
    let (count, [ry, rx]) = slides(
        &self_.layout.sizes,
        kernel_size,
        stride,
        padding,
        dilation,
        output_size,
    )?;
    let cells = ry.out * rx.out;
    // Channels-last outputs (`memory_format:` in the YAML) pool every channel of a pixel
    // at once.
    let (v, v_last) = dense_out(&mut values)?;
    let (ix, ix_last) = dense_out(&mut indices)?;
    if count == 0 || cells == 0 {
        return Ok(());
    }
    if v_last != ix_last {
        return Err(KernelError::shape(
            "internal error: _max_pool2d's values and indices must share a layout",
        ));
    }
    if v_last {
        crate::cpu::pool_nhwc::max_pool2d(&self_, [ry, rx], v, ix);
        return Ok(());
    }
    let x = row_major(&self_);
    let (h, w) = (ry.size, rx.size);
    let plane = h * w;
    if [ry, rx]
        .iter()
        .all(|r| r.k == 2 && r.s == 2 && r.p == 0 && r.d == 1 && 2 * r.out <= r.size)
    {
        // The CNN pool (2x2, stride 2, every window inside the image).
        let pool = |p: usize, vs: &mut [T], is: &mut [i64]| {
            pool_2x2(&x[p * plane..(p + 1) * plane], w, rx.out, vs, is)
        };
        each_plane(v, ix, cells, cells * 4, &pool);
        return Ok(());
    }
    // The column taps of every output column, computed once, and the columns whose every
    // tap is inside the row: those run tap by tap across the row (no per-window loop).
    let cols: Vec<(usize, usize)> = (0..rx.out).map(|j| rx.taps(j)).collect();
    let reach = (rx.k - 1) * rx.d;
    let inner_lo = rx.p.div_ceil(rx.s).min(rx.out);
    // (Kernels of more than 2^16 taps, absurd but legal, scan window by window.)
    let inner_hi = if w + rx.p > reach && ry.k.saturating_mul(rx.k) <= 1 << 16 {
        ((w - 1 + rx.p - reach) / rx.s + 1).clamp(inner_lo, rx.out)
    } else {
        inner_lo
    };
    let lowest = T::Compute::from_f64(f64::NEG_INFINITY);
    // Tap `ta · kw + tb`'s offset from its window's first tap, for the inner columns' indices.
    let taps = if inner_hi > inner_lo { ry.k * rx.k } else { 0 };
    let offsets: Vec<usize> = (0..taps)
        .map(|t| (t / rx.k) * ry.d * w + (t % rx.k) * rx.d)
        .collect();
    let pool = |p: usize, vs: &mut [T], is: &mut [i64]| {
        let src = &x[p * plane..(p + 1) * plane];
        let inner = inner_hi - inner_lo;
        let (mut best, mut next, mut row) = (
            vec![lowest; inner],
            vec![lowest; inner],
            vec![lowest; inner],
        );
        let (mut tap, mut next_tap) = (vec![0u32; inner], vec![0u32; inner]);
        for i in 0..ry.out {
            let (r0, nr) = ry.taps(i);
            let (vrow, irow) = (
                &mut vs[i * rx.out..][..rx.out],
                &mut is[i * rx.out..][..rx.out],
            );
            for (j, &(c0, nc)) in cols.iter().enumerate() {
                if (inner_lo..inner_hi).contains(&j) {
                    continue;
                }
                if nr == 0 || nc == 0 {
                    vrow[j] = T::down(lowest);
                    irow[j] = (r0 * w + c0) as i64;
                    continue;
                }
                let mut top = (src[r0 * w + c0].up(), r0 * w + c0);
                for a in 0..nr {
                    let row = (r0 + a * ry.d) * w;
                    for b in 0..nc {
                        let k = row + c0 + b * rx.d;
                        let val = src[k].up();
                        if val > top.0 || val.is_nan() {
                            top = (val, k);
                        }
                    }
                }
                vrow[j] = T::down(top.0);
                irow[j] = top.1 as i64;
            }
            if nr == 0 || best.is_empty() {
                for j in inner_lo..inner_hi {
                    vrow[j] = T::down(lowest);
                    irow[j] = (r0 * w + cols[j].0) as i64;
                }
                continue;
            }
            // Taps in row-major order, each across the inner columns: a strict `>` keeps the
            // first of equal maxima and a NaN always takes over, as the per-window scan does.
            // The tap's row is gathered contiguous first so the compare-select loop below
            // vectorises (a branch per tap mispredicts half the time on real data).
            for ta in 0..nr {
                for tb in 0..rx.k {
                    let start = (r0 + ta * ry.d) * w + inner_lo * rx.s - rx.p + tb * rx.d;
                    match rx.s {
                        1 => gather_lanes::<T, 1>(&src[start..], 1, &mut row),
                        2 => gather_lanes::<T, 2>(&src[start..], 2, &mut row),
                        step => gather_lanes::<T, 0>(&src[start..], step, &mut row),
                    }
                    let t = (ta * rx.k + tb) as u32;
                    if t == 0 {
                        best.copy_from_slice(&row);
                        tap.fill(0);
                        continue;
                    }
                    // Into the other buffers, then swapped: selects written back in place
                    // become per-lane conditional stores, which do not vectorise.
                    let lanes = best.iter().zip(&tap).zip(&row);
                    for ((nb, nt), ((&b, &tp), &v)) in
                        next.iter_mut().zip(next_tap.iter_mut()).zip(lanes)
                    {
                        let take = (v > b) | v.is_nan();
                        *nb = if take { v } else { b };
                        *nt = if take { t } else { tp };
                    }
                    std::mem::swap(&mut best, &mut next);
                    std::mem::swap(&mut tap, &mut next_tap);
                }
            }
            let first = r0 * w + inner_lo * rx.s - rx.p;
            for (j, (o, &t)) in irow[inner_lo..inner_hi].iter_mut().zip(&tap).enumerate() {
                *o = (first + j * rx.s + offsets[t as usize]) as i64;
            }
            for (o, &b) in vrow[inner_lo..inner_hi].iter_mut().zip(&best) {
                *o = T::down(b);
            }
        }
    };
    each_plane(v, ix, cells, cells * ry.k * rx.k, &pool);
    Ok(())
}

/// One plane of a 2x2 stride-2 max pool whose windows all lie inside the `w`-wide image
/// `src`: output `(i, j)` from rows `2i`, `2i + 1`, columns `2j`, `2j + 1`. Taps in
/// row-major order under the general scan's rule (a strict `>`, and a NaN takes over), as
/// selects, so the loop vectorises: the general kernel's per-tap passes over 16-wide rows
/// cost 1.5 ns per input element in the small CNN (10 % of its step).
fn pool_2x2<T: Element>(src: &[T], w: usize, ow: usize, vs: &mut [T], is: &mut [i64]) {
    for (i, (vrow, irow)) in vs
        .chunks_exact_mut(ow)
        .zip(is.chunks_exact_mut(ow))
        .enumerate()
    {
        let top = &src[2 * i * w..][..2 * ow];
        let bottom = &src[(2 * i + 1) * w..][..2 * ow];
        let (t0, b0) = ((2 * i * w) as i64, ((2 * i + 1) * w) as i64);
        for (j, ((v, ix), (t, b))) in vrow
            .iter_mut()
            .zip(irow.iter_mut())
            .zip(top.chunks_exact(2).zip(bottom.chunks_exact(2)))
            .enumerate()
        {
            let col = 2 * j as i64;
            let (mut best, mut at) = (t[0].up(), t0 + col);
            for (val, k) in [
                (t[1].up(), t0 + col + 1),
                (b[0].up(), b0 + col),
                (b[1].up(), b0 + col + 1),
            ] {
                let take = (val > best) | val.is_nan();
                best = if take { val } else { best };
                at = if take { k } else { at };
            }
            *v = T::down(best);
            *ix = at;
        }
    }
}

/// `row[j] = src[j · step]` for every lane `j`, widened. `S` is the step when it is known
/// at compile time (1 and 2, the common pooling strides: LLVM then vectorises the loads,
/// de-interleaving a stride of 2), else 0 and `step` is read at run time.
#[inline(always)]
fn gather_lanes<T: Element, const S: usize>(src: &[T], step: usize, row: &mut [T::Compute]) {
    let s = if S == 0 { step } else { S };
    let Some(last) = row.len().checked_sub(1) else {
        return;
    };
    // `last + 1` chunks, the last one of a single element: no bounds check per lane.
    for (r, c) in row.iter_mut().zip(src[..last * s + 1].chunks(s)) {
        *r = c[0].up();
    }
}

/// `_max_pool2d_backward`'s shapes: `grad_output` and `indices` are the same `[B, C, oh, ow]`,
/// the input gradient is `[B, C, *input_size]`.
pub fn max_pool2d_backward_meta(
    grad_output: &[usize],
    indices: &[usize],
    input_size: &[i64],
) -> KResult<Vec<Vec<usize>>> {
    const OP: &str = "_max_pool2d_backward";
    if grad_output.len() != 4 || indices != grad_output {
        return Err(KernelError::shape(format!(
            "{OP}: expected grad_output and indices of one batched shape [B, C, oh, ow], but got grad_output {grad_output:?} and indices {indices:?}"
        )));
    }
    if input_size.len() != 2 || input_size.iter().any(|&s| s <= 0) {
        return Err(KernelError::value(format!(
            "{OP}: input_size must be two positive sizes [H, W], but got {input_size:?}"
        )));
    }
    let mut shape = grad_output[..2].to_vec();
    shape.extend(input_size.iter().map(|&s| s as usize));
    Ok(vec![shape])
}

/// `_max_pool2d_backward`: each plane of the input gradient is zeroed, then every output
/// cell's gradient is added at the flat `H × W` index its maximum came from (overlapping
/// windows may pick one element more than once). One pass per plane, planes in parallel.
pub fn max_pool2d_backward<T: Element>(
    grad_output: Src<'_, T>,
    indices: Src<'_, i64>,
    input_size: &[i64],
    mut out: Dst<'_, T>,
) -> KResult<()> {
    let sizes = &grad_output.layout.sizes;
    max_pool2d_backward_meta(sizes, &indices.layout.sizes, input_size)?;
    let plane = (input_size[0] * input_size[1]) as usize;
    let cells = sizes[2] * sizes[3];
    let (o, channels_last) = dense_out(&mut out)?;
    if o.is_empty() {
        return Ok(());
    }
    if channels_last {
        return crate::cpu::pool_nhwc::max_pool2d_backward(&grad_output, &indices, plane, o)
            .map_err(|i| bad_index(i, input_size));
    }
    let g = row_major(&grad_output);
    let ix = row_major(&indices);
    // The first bad index seen (a flag and the value, as no sentinel is out of range).
    let (bad, bad_at) = (AtomicBool::new(false), AtomicI64::new(0));
    // Half types add in their compute type (f32), rounded once per element; f32 and f64
    // add in place.
    let in_place = std::any::TypeId::of::<T>() == std::any::TypeId::of::<T::Compute>();
    let report = |i: i64| {
        if !bad.swap(true, Relaxed) {
            bad_at.store(i, Relaxed);
        }
    };
    let scatter = |p: usize, dst: &mut [T]| {
        let (gs, is) = (&g[p * cells..][..cells], &ix[p * cells..][..cells]);
        if in_place {
            dst.fill(T::down(T::Compute::zero()));
            for (&v, &i) in gs.iter().zip(is) {
                match usize::try_from(i).ok().and_then(|i| dst.get_mut(i)) {
                    Some(slot) => *slot = T::down(slot.up().add(v.up())),
                    None => report(i),
                }
            }
        } else {
            let mut acc = vec![T::Compute::zero(); plane];
            for (&v, &i) in gs.iter().zip(is) {
                match usize::try_from(i).ok().and_then(|i| acc.get_mut(i)) {
                    Some(slot) => *slot = slot.add(v.up()),
                    None => report(i),
                }
            }
            for (o, &a) in dst.iter_mut().zip(&acc) {
                *o = T::down(a);
            }
        }
    };
    let count = o.len() / plane;
    let per = (TASK_WORK / (plane + cells)).max(1);
    if fan_out(count > 1 && count * (plane + cells) >= TASK_WORK) {
        par_chunks_mut(o, per * plane, &|t, chunk| {
            for (q, dst) in chunk.chunks_mut(plane).enumerate() {
                scatter(t * per + q, dst);
            }
        });
    } else {
        for (p, dst) in o.chunks_mut(plane).enumerate() {
            scatter(p, dst);
        }
    }
    if bad.into_inner() {
        return Err(bad_index(bad_at.into_inner(), input_size));
    }
    Ok(())
}

/// `_max_pool2d_backward`'s error for an index outside the `H × W` plane.
fn bad_index(i: i64, input_size: &[i64]) -> KernelError {
    let (h, w) = (input_size[0], input_size[1]);
    KernelError::index(format!(
        "_max_pool2d_backward: index {i} is out of bounds for an input plane of {h} x {w} = {} elements",
        h * w
    ))
}
