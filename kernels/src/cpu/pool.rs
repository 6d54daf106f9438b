//! Adaptive max pooling: the maximum of each adaptive window and where it came from, in one
//! pass over each `(batch, channel)` plane. Output cell `i` of a dim of size `n` pooled to
//! `out` covers `floor(i·n/out) .. ceil((i+1)·n/out)`, so windows may overlap by one.

use crate::cpu::shape::{contiguous_out, row_major};
use crate::parallel::{fan_out, par_chunks_mut2};
use crate::KernelError;
use crate::{Arith, Dst, Element, KResult, Src};

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
    let per = (TASK_WORK / plane.max(1)).max(1);
    if fan_out(count > 1 && count * plane >= TASK_WORK) {
        par_chunks_mut2(v, ix, per * cells, &|t, vs, is| {
            for (q, (vc, ic)) in vs.chunks_mut(cells).zip(is.chunks_mut(cells)).enumerate() {
                pool(t * per + q, vc, ic);
            }
        });
    } else {
        for (p, (vc, ic)) in v.chunks_mut(cells).zip(ix.chunks_mut(cells)).enumerate() {
            pool(p, vc, ic);
        }
    }
    Ok(())
}
