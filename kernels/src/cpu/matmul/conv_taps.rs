//! The im2col gather for convolutions whose output rows are short (ResNet's 16, 8, 4 and 2
//! wide stages) or strided: a table of where every column of a block reads under every
//! kernel offset, built once per block, then one masked AVX2 gather per 8 columns of each
//! im2col row. The run-by-run copy of [`super::conv`] works out a span per output row and
//! kernel offset; on a 2-wide row that arithmetic cost ~15 cycles per value gathered,
//! more than the kernel's multiply-adds on it.

use super::conv::{Cols, Images};
use super::fma::Fma;
use crate::cpu::fold::Geometry;
use std::arch::x86_64::{
    _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_loadu_si256, _mm256_mask_i32gather_ps,
    _mm256_set1_epi32, _mm256_setzero_ps, _mm256_storeu_ps,
};

/// Lanes per gather.
const LANES: usize = 8;
/// A table's width is a multiple of this: whole panels of the `f32` kernel.
const ROUND: usize = 16;

/// Output rows narrower than this take the table (stride-1 layers at least this wide copy
/// whole runs, which beats a gather).
const SHORT_ROW: usize = 32;

/// Whether a convolution's im2col rows are gathered through a [`TapTable`]: short or
/// strided output rows, and every offset inside one image batch fits an `i32` lane.
pub(super) fn use_table(g: &Geometry, x: &Images<'_>) -> bool {
    let short = g.blocks[2] < SHORT_ROW || g.stride[2] != 1;
    // The largest offset a table holds (from a channel's start): the last image's last
    // element of that channel.
    let reach = (g.batch.saturating_sub(1))
        .saturating_mul(x.sb)
        .saturating_add(
            (0..3)
                .map(|d| g.size[d].saturating_sub(1).saturating_mul(x.ss[d]))
                .fold(0usize, usize::saturating_add),
        );
    short && reach < i32::MAX as usize
}

/// Offsets of a block's columns under each kernel offset: `offs[kk * width + qi]` is where
/// column `qi` reads under kernel offset `kk`, from its channel's start (`x.offset + c *
/// sc`), or -1 in the padding. `width` is the column count rounded up to a whole panel (16);
/// the extra columns are -1, so they gather zeros (a ragged panel's padding).
pub(super) struct TapTable {
    offs: Vec<i32>,
    width: usize,
}

impl TapTable {
    /// The table of `cols` (`use_table` has held for `g` and `x`).
    pub(super) fn new(g: &Geometry, x: &Images<'_>, cols: Cols) -> TapTable {
        let width = cols.count.next_multiple_of(ROUND);
        let taps = g.kernel_len();
        let mut offs = vec![-1i32; taps * width];
        let positions = g.block_len();
        let [_, bh, bw] = g.blocks;
        let [_, k1, k2] = g.kernel;
        for qi in 0..cols.count {
            let (b, qq) = ((cols.first + qi) / positions, (cols.first + qi) % positions);
            let (ow, oh, od) = (qq % bw, (qq / bw) % bh, qq / (bw * bh));
            for kk in 0..taps {
                let (kd, kh, kw) = (kk / (k1 * k2), (kk / k2) % k1, kk % k2);
                if let (Some(i), Some(j), Some(m)) = (
                    g.source(0, od, kd),
                    g.source(1, oh, kh),
                    g.source(2, ow, kw),
                ) {
                    // Below i32::MAX: `use_table` bounded every such offset.
                    offs[kk * width + qi] =
                        (b * x.sb + i * x.ss[0] + j * x.ss[1] + m * x.ss[2]) as i32;
                }
            }
        }
        TapTable { offs, width }
    }

    /// Im2col row `l` (channel `l / K`, kernel offset `l % K`) at the block's columns
    /// `c0 .. c0 + out.len()` (`c0` and `out.len()` multiples of 8, within the rounded
    /// width) into `out`. The block's images are in bounds of `x.data` (the caller's check).
    #[inline(always)]
    pub(super) fn gather(
        &self,
        isa: Fma<f32>,
        g: &Geometry,
        x: &Images<'_>,
        l: usize,
        c0: usize,
        out: &mut [f32],
    ) {
        let (c, kk) = (l / g.kernel_len(), l % g.kernel_len());
        let offs = &self.offs[kk * self.width + c0..][..out.len()];
        let base = x.offset + c * x.sc;
        // SAFETY: `isa` proves AVX2. Every non-negative offset is an element of image `b`,
        // channel `c`, which the caller checked is inside `x.data` (so `base + off` is in
        // bounds); negative lanes are masked off and read nothing. Both slices have
        // `out.len()` elements, a multiple of 8.
        unsafe { gather8(isa, x.data, base, offs, out) }
    }
}

/// `out[i] = data[base + offs[i]]`, or 0 where `offs[i] < 0`, 8 lanes at a time.
///
/// # Safety
/// AVX2 present; `offs.len() == out.len()`, a multiple of 8; `base + offs[i]` in bounds of
/// `data` for every `offs[i] >= 0`.
#[target_feature(enable = "avx2")]
unsafe fn gather8(_isa: Fma<f32>, data: &[f32], base: usize, offs: &[i32], out: &mut [f32]) {
    debug_assert!(offs.len() == out.len() && out.len().is_multiple_of(LANES));
    debug_assert!(base < data.len());
    // SAFETY: `base` is in bounds (the caller's contract), so the pointer stays inside
    // `data`'s allocation.
    let from = unsafe { data.as_ptr().add(base) };
    let neg = _mm256_set1_epi32(-1);
    for (o, s) in out.chunks_exact_mut(LANES).zip(offs.chunks_exact(LANES)) {
        // SAFETY: `s` and `o` hold 8 lanes each (chunks_exact); the gather reads only the
        // lanes whose offset is >= 0, each in bounds by the caller's contract, and AVX2 is
        // present (also the caller's contract).
        unsafe {
            let idx = _mm256_loadu_si256(s.as_ptr().cast());
            let mask = _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, neg));
            let v = _mm256_mask_i32gather_ps::<4>(_mm256_setzero_ps(), from, idx, mask);
            _mm256_storeu_ps(o.as_mut_ptr(), v);
        }
    }
}
