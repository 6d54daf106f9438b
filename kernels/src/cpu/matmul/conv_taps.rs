//! Where a convolution's operands lie ([`Images`], [`Weight`], [`OutPtr`]) and its im2col
//! columns read ([`Cols`]), and the gather for
//! convolutions whose output rows are short (ResNet's 32, 16, 8, 4 and 2 wide stages) or
//! strided: a table of where every column of a block reads under every kernel offset, built
//! once per block, then per 8 columns of an im2col row one masked load (columns reading
//! consecutive elements) or one masked AVX2 gather. The run-by-run copy of [`super::conv`]
//! works out a span per output row and kernel offset; on a 2-wide row that arithmetic cost
//! ~15 cycles per value gathered, more than the kernel's multiply-adds on it.

use super::fma::Fma;
use super::packed::Kernel;
use crate::cpu::fold::Geometry;
use std::arch::x86_64::{
    _mm256_castsi256_ps, _mm256_cmpgt_epi32, _mm256_loadu_si256, _mm256_mask_i32gather_ps,
    _mm256_maskload_ps, _mm256_set1_epi32, _mm256_setzero_ps, _mm256_storeu_ps,
};

/// Where an image batch's elements are: element `(b, c, d, h, w)` (missing leading spatial
/// dims of size 1) is `data[offset + b * sb + c * sc + d * ss[0] + h * ss[1] + w * ss[2]]`.
#[derive(Clone, Copy)]
pub(crate) struct Images<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub sb: usize,
    pub sc: usize,
    pub ss: [usize; 3],
}

/// A convolution weight `[O, C, *kernel]` whose kernel dims flatten to one stride: element
/// `(o, c, kk)` (`kk` the flattened kernel offset) is `data[offset + o * so + c * sc + kk *
/// sk]`. A transposed view (the input gradient's `[C, O, *kernel]`) is packed as it is,
/// without a row-major copy first.
#[derive(Clone, Copy)]
pub(crate) struct Weight<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    pub so: usize,
    pub sc: usize,
    pub sk: usize,
}

/// An output written by parallel tasks (blocks of columns, or of tiles), each its own
/// elements.
pub(super) struct OutPtr(pub(super) *mut f32, pub(super) usize);
// SAFETY: tasks write disjoint elements through it (see `conv::column_block` and
// `winograd::run_block`), and the buffer
// outlives them (the parallel loop returns before the borrow that made it ends).
unsafe impl Sync for OutPtr {}

/// Blocks of `width` columns (a multiple of `unit`) over `columns`, and their count: with
/// few blocks, narrower ones (still a multiple of `unit`) in a multiple of the thread count,
/// so no thread waits on a straggler. The convolution forwards split their columns
/// (positions, Winograd's tiles, or the channels-last path's rows) this way.
pub(super) fn balanced_blocks(columns: usize, width: usize, unit: usize) -> (usize, usize) {
    let threads = crate::parallel::num_threads();
    let blocks = columns.div_ceil(width);
    if blocks >= 4 * threads {
        return (width, blocks);
    }
    let width = columns
        .div_ceil(blocks.next_multiple_of(threads))
        .next_multiple_of(unit);
    (width, columns.div_ceil(width))
}

/// A block of the batch's columns: positions `first .. first + count` of all images' output
/// positions in a row (image `b`'s position `q` is column `b * L + q`).
#[derive(Clone, Copy)]
pub(super) struct Cols {
    pub first: usize,
    pub count: usize,
}

/// Lanes per gather.
const LANES: usize = 8;
/// Columns per panel of the `f32` kernel; a table's width is a multiple of it.
const PANEL: usize = <Fma<f32> as Kernel>::NR;

/// Output rows narrower than this take the table. At 56 wide (a [16,64,56,56] 3x3 layer,
/// 2 threads) the table's masked loads beat copying the runs (36-38 vs 41-45 ms); wider
/// stride-1 rows keep the run copies, whose per-run cost is spread over more columns.
const SHORT_ROW: usize = 64;

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
///
/// `runs[g]` says how lane group `g` (8 columns of one kernel offset) reads: where a group's
/// in-image columns read consecutive elements (`offs[i] = start + i`: stride-1 rows, and
/// consecutive rows of an image when the input is as wide as the output), it is that
/// `start`, and the group is one masked load instead of a gather (a Zen 3 gather of 8
/// lanes costs about as much as 8 loads); else [`GATHER`].
pub(super) struct TapTable {
    offs: Vec<i32>,
    runs: Vec<i32>,
    width: usize,
}

/// A lane group whose columns do not read consecutive elements.
const GATHER: i32 = i32::MIN;

impl TapTable {
    /// The table of `cols` (`use_table` has held for `g` and `x`).
    pub(super) fn new(g: &Geometry, x: &Images<'_>, cols: Cols) -> TapTable {
        let width = cols.count.next_multiple_of(PANEL);
        let taps = g.kernel_len();
        let mut offs = vec![-1i32; taps * width];
        let positions = g.block_len();
        let [_, bh, bw] = g.blocks;
        // Per spatial dim `d`: `part[d][o * k_d + k]`, the offset along `d` of output
        // position `o` under kernel offset `k`, or -1 in the padding (one lookup per entry
        // instead of a division and a bounds test per dim).
        let part: [Vec<i64>; 3] = std::array::from_fn(|d| {
            (0..g.blocks[d] * g.kernel[d])
                .map(|ok| {
                    g.source(d, ok / g.kernel[d], ok % g.kernel[d])
                        .map_or(-1, |p| (p * x.ss[d]) as i64)
                })
                .collect()
        });
        let [k0, k1, k2] = g.kernel;
        for qi in 0..cols.count {
            let (b, qq) = ((cols.first + qi) / positions, (cols.first + qi) % positions);
            let (ow, oh, od) = (qq % bw, (qq / bw) % bh, qq / (bw * bh));
            let image = (b * x.sb) as i64;
            for kd in 0..k0 {
                let p0 = part[0][od * k0 + kd];
                for kh in 0..k1 {
                    let p1 = part[1][oh * k1 + kh];
                    for kw in 0..k2 {
                        let p2 = part[2][ow * k2 + kw];
                        if p0 >= 0 && p1 >= 0 && p2 >= 0 {
                            // Below i32::MAX: `use_table` bounded every such offset.
                            offs[((kd * k1 + kh) * k2 + kw) * width + qi] =
                                (image + p0 + p1 + p2) as i32;
                        }
                    }
                }
            }
        }
        let runs = offs.chunks_exact(LANES).map(consecutive).collect();
        TapTable { offs, runs, width }
    }

    /// Im2col row `l` (channel `l / K`, kernel offset `l % K`) at the block's first
    /// `16 * panels` columns (within the rounded width), 16 columns per panel: panel `p`'s
    /// into `out[p * step ..][..16]` (`step` 16 for a plain row, the panel size for the
    /// kernel's `B` panels). The block's images are in bounds of `x.data` (the caller's
    /// check).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gather(
        &self,
        isa: Fma<f32>,
        g: &Geometry,
        x: &Images<'_>,
        l: usize,
        panels: usize,
        out: &mut [f32],
        step: usize,
    ) {
        let (c, kk) = (l / g.kernel_len(), l % g.kernel_len());
        let cols = panels * PANEL;
        let offs = &self.offs[kk * self.width..][..cols];
        let runs = &self.runs[kk * self.width / LANES..][..cols / LANES];
        assert!(panels == 0 || (panels - 1) * step + PANEL <= out.len());
        let base = x.offset + c * x.sc;
        // SAFETY: `isa` proves AVX2. Every non-negative offset is an element of image `b`,
        // channel `c`, which the caller checked is inside `x.data` (so `base + off` is in
        // bounds); negative lanes are masked off and read nothing. `offs` has `16 *
        // panels` lanes, `runs` one per 8 of them, and `out` room for every panel
        // (asserted).
        unsafe { gather_panels(isa, x.data, base, offs, runs, out, step) }
    }
}

/// A lane group's [`TapTable`] run start: `start` if every in-image lane `i` reads
/// `start + i` (an all-padding group: 0), else [`GATHER`].
fn consecutive(offs: &[i32]) -> i32 {
    let mut start = None;
    for (i, &o) in offs.iter().enumerate() {
        if o >= 0 {
            let s = o - i as i32;
            match start {
                None => start = Some(s),
                Some(t) if t != s => return GATHER,
                Some(_) => {}
            }
        }
    }
    start.unwrap_or(0)
}

/// `out[p * step + j] = data[base + offs[16 * p + j]]` (0 where that offset is < 0), 8
/// lanes at a time: a masked load for a group of consecutive elements (`runs`), else a
/// masked gather.
///
/// # Safety
/// AVX2 present; `offs.len() == 8 * runs.len()`, a multiple of 16; `out` holds `(offs.len()
/// / 16 - 1) * step + 16` elements; `base + offs[i]` in bounds of `data` for every
/// `offs[i] >= 0`; `runs` as [`TapTable`] builds them from `offs`.
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn gather_panels(
    _isa: Fma<f32>,
    data: &[f32],
    base: usize,
    offs: &[i32],
    runs: &[i32],
    out: &mut [f32],
    step: usize,
) {
    debug_assert!(offs.len() == runs.len() * LANES && offs.len().is_multiple_of(PANEL));
    debug_assert!(base < data.len());
    // SAFETY: `base` is in bounds (the caller's contract), so the pointer stays inside
    // `data`'s allocation.
    let from = unsafe { data.as_ptr().add(base) };
    let to = out.as_mut_ptr();
    let neg = _mm256_set1_epi32(-1);
    for (gi, (s, &start)) in offs.chunks_exact(LANES).zip(runs).enumerate() {
        let at = (gi / 2) * step + (gi % 2) * LANES;
        // SAFETY: `s` holds 8 lanes (chunks_exact) and `out` room for 8 at `at` (the
        // caller's contract). Only lanes whose offset is >= 0 are read, each in bounds by
        // the caller's contract: the masked load's lane `i` reads `from + start + i`, which
        // is `from + s[i]` for those lanes (how `runs` was built), and its masked-off lanes
        // read nothing, so the address arithmetic is wrapping (it may point before `data`
        // for a group that starts in the padding). AVX2 is present (the caller's contract).
        unsafe {
            let idx = _mm256_loadu_si256(s.as_ptr().cast());
            let lanes = _mm256_cmpgt_epi32(idx, neg);
            let v = if start == GATHER {
                _mm256_mask_i32gather_ps::<4>(
                    _mm256_setzero_ps(),
                    from,
                    idx,
                    _mm256_castsi256_ps(lanes),
                )
            } else {
                _mm256_maskload_ps(from.wrapping_offset(start as isize), lanes)
            };
            _mm256_storeu_ps(to.add(at), v);
        }
    }
}
