//! Max pooling of channels-last images (`[B, C, H, W]` stored as `[B, H, W, C]`): each
//! output pixel reduces its window tap by tap across all `C` channels at once (one
//! contiguous run per tap, so the compare-select loop vectorises over channels), and the
//! backward adds each pixel's gradients at its channels' chosen taps. Same results and
//! indices (flat into the `H × W` plane) as the plane-by-plane kernels of [`super::pool`].

use super::pool_window::{each_plane, Slide};
use crate::parallel::{fan_out, par_chunks_mut};
use crate::{Arith, Element, Src};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicI64};

/// Output pixels per task are chosen so a task reads at least this many elements.
const TASK_WORK: usize = 1 << 14;

/// `_max_pool2d` into channels-last `v` and `ix` (`[B, oh, ow, C]` in memory) from `x`
/// (any strides; a channels-last one reads each tap's channels as one run). PyTorch's
/// rules as the plane kernel: padding taps skipped, a NaN wins, the first of equal maxima
/// is reported, an empty window gives `-inf` at its first position.
pub(super) fn max_pool2d<T: Element>(
    x: &Src<'_, T>,
    [ry, rx]: [Slide; 2],
    v: &mut [T],
    ix: &mut [i64],
) {
    let l = x.layout;
    let (c, w) = (l.sizes[1], rx.size);
    let [sb, sc, sh, sw] = [l.strides[0], l.strides[1], l.strides[2], l.strides[3]];
    let lowest = T::Compute::from_f64(f64::NEG_INFINITY);
    let row_len = rx.out * c;
    // One output row (`ow` pixels of `C`) per call.
    let pool = |row: usize, vs: &mut [T], is: &mut [i64]| {
        let (b, i) = (row / ry.out, row % ry.out);
        let (r0, nr) = ry.taps(i);
        let mut best = vec![lowest; c];
        let mut arg = vec![0i64; c];
        for j in 0..rx.out {
            let (c0, nc) = rx.taps(j);
            let (vp, ip) = (&mut vs[j * c..][..c], &mut is[j * c..][..c]);
            if nr == 0 || nc == 0 {
                vp.fill(T::down(lowest));
                ip.fill((r0 * w + c0) as i64);
                continue;
            }
            for a in 0..nr {
                for bb in 0..nc {
                    let (y, z) = (r0 + a * ry.d, c0 + bb * rx.d);
                    let base = l.offset + b * sb + y * sh + z * sw;
                    let flat = (y * w + z) as i64;
                    if a == 0 && bb == 0 {
                        for (ch, (bv, ag)) in best.iter_mut().zip(arg.iter_mut()).enumerate() {
                            *bv = x.data[base + ch * sc].up();
                            *ag = flat;
                        }
                        continue;
                    }
                    if sc == 1 {
                        let src = &x.data[base..base + c];
                        for ((bv, ag), &s) in best.iter_mut().zip(arg.iter_mut()).zip(src) {
                            let val = s.up();
                            let take = (val > *bv) | val.is_nan();
                            *bv = if take { val } else { *bv };
                            *ag = if take { flat } else { *ag };
                        }
                    } else {
                        for (ch, (bv, ag)) in best.iter_mut().zip(arg.iter_mut()).enumerate() {
                            let val = x.data[base + ch * sc].up();
                            if val > *bv || val.is_nan() {
                                (*bv, *ag) = (val, flat);
                            }
                        }
                    }
                }
            }
            for ((o, oi), (&bv, &ag)) in vp.iter_mut().zip(ip.iter_mut()).zip(best.iter().zip(&arg))
            {
                *o = T::down(bv);
                *oi = ag;
            }
        }
    };
    each_plane(v, ix, row_len, row_len * ry.k * rx.k, &pool);
}

/// `_max_pool2d_backward` into a channels-last input gradient `out` (`[B, H, W, C]` in
/// memory): each image zeroed, then every output cell's gradient added at its channel's
/// chosen tap, summed in the compute type and rounded once. `Err(index)` for the first
/// index outside the `H × W` plane.
pub(super) fn max_pool2d_backward<T: Element>(
    g: &Src<'_, T>,
    ix: &Src<'_, i64>,
    plane: usize,
    out: &mut [T],
) -> Result<(), i64> {
    let gl = g.layout;
    let (c, oh, ow) = (gl.sizes[1], gl.sizes[2], gl.sizes[3]);
    let image = plane * c;
    let (bad, bad_at) = (AtomicBool::new(false), AtomicI64::new(0));
    let scatter = |b: usize, dst: &mut [T]| {
        let mut acc = vec![T::Compute::zero(); image];
        let il = ix.layout;
        for i in 0..oh {
            for j in 0..ow {
                for ch in 0..c {
                    let ga = gl.offset
                        + b * gl.strides[0]
                        + ch * gl.strides[1]
                        + i * gl.strides[2]
                        + j * gl.strides[3];
                    let ia = il.offset
                        + b * il.strides[0]
                        + ch * il.strides[1]
                        + i * il.strides[2]
                        + j * il.strides[3];
                    let at = ix.data[ia];
                    match usize::try_from(at).ok().filter(|&p| p < plane) {
                        Some(p) => {
                            let slot = &mut acc[p * c + ch];
                            *slot = slot.add(g.data[ga].up());
                        }
                        None => {
                            if !bad.swap(true, Relaxed) {
                                bad_at.store(at, Relaxed);
                            }
                        }
                    }
                }
            }
        }
        for (o, &a) in dst.iter_mut().zip(&acc) {
            *o = T::down(a);
        }
    };
    let work = image + oh * ow * c;
    if fan_out(out.len() > image && out.len() / image * work >= TASK_WORK) {
        par_chunks_mut(out, image, &|b, dst| scatter(b, dst));
    } else {
        for (b, dst) in out.chunks_mut(image).enumerate() {
            scatter(b, dst);
        }
    }
    if bad.into_inner() {
        return Err(bad_at.into_inner());
    }
    Ok(())
}
