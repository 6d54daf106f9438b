//! What both max-pooling layouts share: one window dim's geometry ([`Slide`]) and the
//! parallel loop over output planes or rows ([`each_plane`]). The row-major kernels are in
//! [`super::pool`], the channels-last ones in [`super::pool_nhwc`].

use crate::parallel::{fan_out, par_chunks_mut2, Chunks2Fn};
use crate::Element;

/// Planes per parallel task are chosen so a task reads at least this many elements.
const TASK_WORK: usize = 1 << 14;

/// One spatial dim of `_max_pool2d`: kernel, stride, padding, dilation, input and output size.
#[derive(Clone, Copy)]
pub(crate) struct Slide {
    pub(crate) k: usize,
    pub(crate) s: usize,
    pub(crate) p: usize,
    pub(crate) d: usize,
    pub(crate) size: usize,
    pub(crate) out: usize,
}

impl Slide {
    /// The in-range taps of window `i`: the first one's position and their count. A window
    /// with no tap in range has count 0 and the position PyTorch reports for it.
    #[inline]
    pub(crate) fn taps(&self, i: usize) -> (usize, usize) {
        let start = (i * self.s) as isize - self.p as isize;
        // Skip the taps in the left padding.
        let skip = if start < 0 {
            (-start as usize).div_ceil(self.d)
        } else {
            0
        };
        let first = start + (skip * self.d) as isize;
        if skip >= self.k || first as usize >= self.size {
            return (first.max(0) as usize, 0);
        }
        let first = first as usize;
        let count = ((self.size - 1 - first) / self.d + 1).min(self.k - skip);
        (first, count)
    }
}

/// Runs `pool(p, values, indices)` for each plane `p` of the outputs (`cells` each), planes
/// split over the pool when the planes' `work` (elements read each) adds up.
pub(crate) fn each_plane<T: Element>(
    v: &mut [T],
    ix: &mut [i64],
    cells: usize,
    work: usize,
    pool: Chunks2Fn<'_, T, i64>,
) {
    let count = v.len() / cells;
    let per = (TASK_WORK / work.max(1)).max(1);
    if fan_out(count > 1 && count * work >= TASK_WORK) {
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
}
