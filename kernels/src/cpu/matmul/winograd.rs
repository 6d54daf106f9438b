//! 3x3 stride-1 convolutions (2-d, `f32`, row-major images) by Winograd's F(2x2, 3x3): each
//! 2x2 block of outputs ("tile") comes from its 4x4 input patch `d` and the 3x3 kernel `g` as
//! `Aᵀ [(G g Gᵀ) ⊙ (Bᵀ d B)] A`, so a tile costs 16 multiply-adds per input channel where the
//! direct convolution spends 36. Summed over input channels, the 16 elementwise products of
//! all tiles are 16 independent products `M[ξ] = U[ξ] (O x C) @ V[ξ] (C x tiles)`, run on
//! kiln's `f32` FMA microkernel ([`super::fma`]).
//!
//! Per call the weight is transformed once (`U`, packed as the microkernel's `A` panels).
//! Tiles are then taken in blocks (all images' tiles in a row, so ResNet's small late stages
//! still fill the microkernel's 16 columns) and blocks are split over the pool: a block's
//! input patches are transformed into `V` (each tile row's 4 input rows combined first, by
//! contiguous vector ops, then 8 tiles at a time across the row), multiplied, and the `O x
//! tiles` products transformed back into the output, bias added. Everything a block touches
//! (`V`, `M`) is sized to stay in L2.
//!
//! The transforms only add and halve, so the result differs from the direct sum by rounding
//! alone, a few `f32` ulps of the sum of `|w x|` terms (the tests bound it). NNPACK, which
//! PyTorch ships, makes the same trade for 3x3 layers (with larger tiles).

use super::conv_taps::{balanced_blocks, Images, OutPtr, Weight};
use super::fma::Fma;
use super::packed::{with_scratch, Kernel, Slot};
use super::PARALLEL_FLOPS;
use crate::cpu::fold::Geometry;
use crate::parallel::{fan_out, par_for};
use std::arch::x86_64::{
    __m256, _mm256_add_ps, _mm256_castpd_ps, _mm256_castps_pd, _mm256_loadu_ps,
    _mm256_permute2f128_ps, _mm256_permute4x64_pd, _mm256_set1_ps, _mm256_shuffle_ps,
    _mm256_storeu_ps, _mm256_sub_ps, _mm256_unpackhi_ps, _mm256_unpacklo_ps,
};
use std::sync::OnceLock;

type K = Fma<f32>;
const MR: usize = <K as Kernel>::MR;
const NR: usize = <K as Kernel>::NR;
/// Transformed values per tile (its 4x4 patch), the number of products `ξ`.
const XI: usize = 16;
/// Tiles per vector.
const LANES: usize = 8;
/// Spare columns past a block's last: a group of 8 tiles may run past its tile row.
const SPILL: usize = LANES;
/// Fewest input and output channels: below it the transforms cost more than they save.
const MIN_CHANNELS: usize = 16;
/// Fewest tiles in the batch, two blocks of 16: a 512-channel 2x2 layer at batch 16 (16
/// tiles, one block on one thread) took 8.8 ms against the direct kernel's 3.7-4.8 on two
/// threads, where a 256-channel 4x4 layer (64 tiles) took 2.0-2.2 ms against 2.8-3.4 and a
/// 128-channel 8x8 one 1.7 against 2.2.
const MIN_TILES: usize = 32;

/// Whether `conv_forward_f32` takes this path: a 2-d 3x3 convolution with stride and
/// dilation 1, contiguous input rows, a row-major output, and enough channels and tiles.
/// `KILN_CONV_WINOGRAD=0` turns it off (for comparisons).
pub(crate) fn applies(g: &Geometry, x: &Images<'_>, o: usize, channels_last: bool) -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    let enabled =
        *ENABLED.get_or_init(|| std::env::var("KILN_CONV_WINOGRAD").as_deref() != Ok("0"));
    enabled
        && g.dims == 2
        && g.kernel == [1, 3, 3]
        && g.stride == [1, 1, 1]
        && g.dilation == [1, 1, 1]
        && x.ss[2] == 1
        && !channels_last
        && g.channels >= MIN_CHANNELS
        && o >= MIN_CHANNELS
        && g.batch * g.blocks[1].div_ceil(2) * g.blocks[2].div_ceil(2) >= MIN_TILES
}

/// Most input and output values of a channels-last batch that Winograd takes through
/// row-major copies: 64 -> 64 channels at 16 x 16, batch 16 (2 threads, forward) ran in
/// 1.8 ms that way against 2.9 ms by [`super::conv_nhwc`], and 128 -> 128 at 8 x 8 in 2.0
/// against 2.6, while at 56 x 56 (6.4 M values, the copies out of cache and freshly
/// faulted in) it took 38 ms against 31.
const MAX_COPIED: usize = 1 << 20;

/// Whether `conv_forward_f32` takes Winograd for a channels-last batch, through row-major
/// copies ([`forward_channels_last`]): a dense `[B, H, W, C]` input whose row-major copy
/// would take it, small enough that the copies stay in cache.
pub(crate) fn applies_channels_last(g: &Geometry, x: &Images<'_>, o: usize) -> bool {
    let [_, h, w] = g.size;
    let c = g.channels;
    let dense = x.sc == 1 && x.ss[2] == c && x.ss[1] == w * c && x.sb == h * w * c;
    let copied = g.batch * (h * w * c + g.block_len() * o);
    dense && copied <= MAX_COPIED && applies(g, &row_major(&[], g), o, false)
}

/// A row-major `[B, C, H, W]` batch in `data`.
fn row_major<'a>(data: &'a [f32], g: &Geometry) -> Images<'a> {
    let [_, h, w] = g.size;
    Images {
        data,
        offset: 0,
        sb: g.channels * h * w,
        sc: h * w,
        ss: [h * w, w, 1],
    }
}

/// [`forward`] for a channels-last batch (where [`applies_channels_last`] held) into a
/// channels-last `out` (`[B, L, o]`): the input transposed into a row-major copy, the
/// row-major product transposed back. The transforms here run across image rows; at
/// ResNet's 16 x 16 and 8 x 8 stages the two copies cost under 0.2 ms of the 0.6-1.1 ms
/// Winograd saves over the channels-last implicit GEMM ([`super::conv_nhwc`]); at 4 x 4
/// (256 channels) the two tie.
pub(super) fn forward_channels_last(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    w: Weight<'_>,
    o: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    use crate::cpu::transpose::{transpose, Block};
    let (c, hw, q) = (g.channels, g.size[1] * g.size[2], g.block_len());
    let mut rows = vec![0f32; g.batch * c * hw];
    let each = |chunk: usize, body: &(dyn Fn(usize, &mut [f32]) + Sync), data: &mut [f32]| {
        if fan_out(data.len() >= 1 << 16 && g.batch > 1) {
            crate::parallel::par_chunks_mut(data, chunk, body);
        } else {
            data.chunks_mut(chunk)
                .enumerate()
                .for_each(|(i, d)| body(i, d));
        }
    };
    // Image `b`'s `[HW, C]` as `[C, HW]`.
    let to_rows = |b: usize, dst: &mut [f32]| {
        let block = Block {
            rows: c,
            len: hw,
            src: x.offset + b * x.sb,
            src_stride: c,
            dst: 0,
            dst_stride: hw,
        };
        transpose(x.data, dst, block);
    };
    each(c * hw, &to_rows, &mut rows);
    let mut product = vec![0f32; g.batch * o * q];
    forward(isa, g, row_major(&rows, g), w, o, bias, &mut product);
    // Image `b`'s `[o, L]` as `[L, o]`.
    let to_out = |b: usize, dst: &mut [f32]| {
        let block = Block {
            rows: q,
            len: o,
            src: b * o * q,
            src_stride: q,
            dst: 0,
            dst_stride: o,
        };
        transpose(&product, dst, block);
    };
    each(q * o, &to_out, out);
}

/// Sizes of one call.
struct Plan {
    c: usize,
    o: usize,
    /// Micro-panels of `U` per `ξ` (`o` rounded up to `MR`).
    opanels: usize,
    /// Input size and padding.
    h: usize,
    w: usize,
    ph: usize,
    pw: usize,
    /// Output size, and tiles down and across an image.
    oh: usize,
    ow: usize,
    tiles_h: usize,
    tiles_w: usize,
    tiles: usize,
    /// Tiles per block (a multiple of 16), and the row lengths of `V` and `M`.
    nb: usize,
    ld: usize,
    /// Width of a combined input row (see [`combine_rows`]).
    sw: usize,
}

impl Plan {
    fn per_image(&self) -> usize {
        self.tiles_h * self.tiles_w
    }
    /// Words of a block's `V` (`XI x c x ld`), then its 4 combined rows and a zero row.
    fn v_len(&self) -> usize {
        XI * self.c * self.ld
    }
    fn block_scratch(&self) -> usize {
        self.v_len() + 4 * self.sw + self.w
    }
    /// Words of a block's `M` (`XI x opanels*MR x ld`).
    fn m_len(&self) -> usize {
        XI * self.opanels * MR * self.ld
    }
}

/// The tile rows a block crosses: `(image, tile row, first tile, tiles, first column)`.
fn segments(p: &Plan, first: usize, count: usize) -> impl Iterator<Item = Segment> + '_ {
    let mut t = first;
    std::iter::from_fn(move || {
        if t >= first + count {
            return None;
        }
        let (n, rem) = (t / p.per_image(), t % p.per_image());
        let (th, tw) = (rem / p.tiles_w, rem % p.tiles_w);
        let len = (p.tiles_w - tw).min(first + count - t);
        let s = Segment {
            n,
            th,
            tw,
            len,
            col: t - first,
        };
        t += len;
        Some(s)
    })
}

/// Tiles `tw .. tw + len` of tile row `th` of image `n`, at columns `col ..` of a block.
#[derive(Clone, Copy)]
struct Segment {
    n: usize,
    th: usize,
    tw: usize,
    len: usize,
    col: usize,
}

/// `out[b, o, :, :] = conv3x3(x[b], w) + bias[o]` for every image, `out` row-major `[B, o,
/// OH, OW]`. The caller checked [`applies`] and the shapes (as for `conv_forward_f32`).
pub(super) fn forward(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    w: Weight<'_>,
    o: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let (oh, ow) = (g.blocks[1], g.blocks[2]);
    let (tiles_h, tiles_w) = (oh.div_ceil(2), ow.div_ceil(2));
    let tiles = g.batch * tiles_h * tiles_w;
    let c = g.channels;
    // A block's `V` and `M` (16 values per tile per channel each way) within ~384 KiB.
    let (nb, blocks) = balanced_blocks(tiles, (6144 / (c + o)).clamp(NR, 8 * NR) / NR * NR, NR);
    let p = Plan {
        c,
        o,
        opanels: o.div_ceil(MR),
        h: g.size[1],
        w: g.size[2],
        ph: g.padding[1],
        pw: g.padding[2],
        oh,
        ow,
        tiles_h,
        tiles_w,
        tiles,
        nb,
        ld: nb + SPILL,
        sw: 2 * tiles_w + 2 * LANES,
    };
    assert_eq!(out.len(), g.batch * o * oh * ow);
    let work = (XI * o * c).saturating_mul(tiles);
    let parallel = fan_out(blocks > 1 && work >= PARALLEL_FLOPS);
    with_scratch(Slot::A, XI * p.opanels * MR * c, |u: &mut [f32]| {
        transform_weight(&p, w, u, parallel);
        let u = &u[..];
        let out = OutPtr(out.as_mut_ptr(), out.len());
        let block = |blk: usize| {
            let (first, count) = (blk * p.nb, p.nb.min(p.tiles - blk * p.nb));
            with_scratch(Slot::B, p.block_scratch(), |vs: &mut [f32]| {
                with_scratch(Slot::Tiles, p.m_len(), |m: &mut [f32]| {
                    // SAFETY: `isa` proves AVX2 + FMA.
                    unsafe { run_block(isa, &p, x, u, bias, first, count, vs, m, &out) }
                })
            })
        };
        if parallel {
            par_for(blocks, &block);
        } else {
            (0..blocks).for_each(block);
        }
    });
}

/// `U[ξ] = (G g Gᵀ)[ξ]` for every `(o, c)`, with `G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1]`, packed as
/// the microkernel's `A`: `u[((ξ * opanels + p) * c + ci) * MR + r]` for output channel `p *
/// MR + r` (zeros past `o`). The 6 rows of a micro-panel are transformed side by side, so
/// each `ξ`'s 6 values are one store (one value at a time, this was 40 % of a 256-channel
/// 4x4 layer).
fn transform_weight(p: &Plan, w: Weight<'_>, u: &mut [f32], parallel: bool) {
    let dst = &OutPtr(u.as_mut_ptr(), u.len());
    assert_eq!(u.len(), XI * p.opanels * MR * p.c);
    let panel = |pi: usize| {
        let rows = MR.min(p.o - pi * MR);
        for ci in 0..p.c {
            let mut g = [[0f32; MR]; 9];
            for r in 0..rows {
                let base = w.offset + (pi * MR + r) * w.so + ci * w.sc;
                for (kk, g) in g.iter_mut().enumerate() {
                    g[r] = w.data[base + kk * w.sk];
                }
            }
            for (xi, t) in kernel_transform(&g).iter().enumerate() {
                let at = ((xi * p.opanels + pi) * p.c + ci) * MR;
                // SAFETY: `at + MR <= u.len()` (`xi < 16`, `pi < opanels`, `ci < c`: the
                // length asserted above); micro-panel `pi` of every `ξ` is written by this
                // task alone, and `u` outlives the loop.
                unsafe { std::ptr::copy_nonoverlapping(t.as_ptr(), dst.0.add(at), MR) };
            }
        }
    };
    if parallel && p.opanels > 1 {
        par_for(p.opanels, &panel);
    } else {
        (0..p.opanels).for_each(panel);
    }
}

/// `G g Gᵀ` (16 values, row-major) of 6 kernels at once: `g[3 i + j][r]` is kernel `r`'s
/// element `(i, j)`.
fn kernel_transform(g: &[[f32; MR]; 9]) -> [[f32; MR]; XI] {
    type Lanes = [f32; MR];
    // `[v0, (v0 + v1 + v2) / 2, (v0 - v1 + v2) / 2, v2]`, lane by lane.
    let col = |v0: &Lanes, v1: &Lanes, v2: &Lanes| -> [Lanes; 4] {
        [
            *v0,
            std::array::from_fn(|r| 0.5 * (v0[r] + v1[r] + v2[r])),
            std::array::from_fn(|r| 0.5 * (v0[r] - v1[r] + v2[r])),
            *v2,
        ]
    };
    // `G g`: each kernel column transformed (`gg[j][i]`), then each row of that.
    let gg: [[Lanes; 4]; 3] = std::array::from_fn(|j| col(&g[j], &g[3 + j], &g[6 + j]));
    let mut u = [[0f32; MR]; XI];
    for i in 0..4 {
        let row = col(&gg[0][i], &gg[1][i], &gg[2][i]);
        u[4 * i..4 * i + 4].copy_from_slice(&row);
    }
    u
}

/// One block of tiles: transform its patches into `V`, multiply, transform back into `out`.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `out` is the whole output, and this block's tiles are
/// written by this call alone.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_block(
    isa: K,
    p: &Plan,
    x: Images<'_>,
    u: &[f32],
    bias: Option<&[f32]>,
    first: usize,
    count: usize,
    vs: &mut [f32],
    m: &mut [f32],
    out: &OutPtr,
) {
    let (v, rest) = vs.split_at_mut(p.v_len());
    let (rows, zero) = rest.split_at_mut(4 * p.sw);
    zero.fill(0.0);
    for ci in 0..p.c {
        for s in segments(p, first, count) {
            combine_rows(p, x, s, ci, zero, rows);
            // SAFETY: the CPU has AVX2; the bounds are checked inside.
            unsafe { transform_patches(p, rows, s, ci, v) };
        }
    }
    let opad = p.opanels * MR;
    let cols = count.next_multiple_of(NR);
    for xi in 0..XI {
        for pi in 0..p.opanels {
            let a = &u[(xi * p.opanels + pi) * p.c * MR..][..p.c * MR];
            for j in (0..cols).step_by(NR) {
                let b = &v[xi * p.c * p.ld + j..];
                let c = &mut m[(xi * opad + pi * MR) * p.ld + j..];
                isa.tile_strided(a, b, p.ld, c, p.ld);
            }
        }
    }
    for oi in 0..p.o {
        let b = bias.map_or(0.0, |b| b[oi]);
        for s in segments(p, first, count) {
            // SAFETY: the CPU has AVX2; `out` as this function's contract.
            unsafe { untransform(p, m, oi, b, s, out) };
        }
    }
}

/// The 4 input rows of segment `s`'s tile row in channel `ci`, combined down the patch
/// (`Bᵀ d`, rows `d0 - d2, d1 + d2, d2 - d1, d1 - d3`) into `rows` (4 rows of `sw`): column
/// `xx` of a row holds input column `xx - pw`, zero outside the image.
fn combine_rows(p: &Plan, x: Images<'_>, s: Segment, ci: usize, zero: &[f32], rows: &mut [f32]) {
    let top = (2 * s.th) as isize - p.ph as isize;
    let input = |k: usize| -> &[f32] {
        let y = top + k as isize;
        if y < 0 || y as usize >= p.h {
            return &zero[..p.w];
        }
        let at = x.offset + s.n * x.sb + ci * x.sc + y as usize * x.ss[1];
        &x.data[at..at + p.w]
    };
    let (d0, d1, d2, d3) = (input(0), input(1), input(2), input(3));
    let (r0, rest) = rows.split_at_mut(p.sw);
    let (r1, rest) = rest.split_at_mut(p.sw);
    let (r2, r3) = rest.split_at_mut(p.sw);
    for r in [&mut *r0, &mut *r1, &mut *r2, &mut *r3] {
        r[..p.pw].fill(0.0);
        r[p.pw + p.w..].fill(0.0);
    }
    let span = p.pw..p.pw + p.w;
    for ((((((a, b), c), d), e0), e1), (e2, e3)) in d0
        .iter()
        .zip(d1)
        .zip(d2)
        .zip(d3)
        .zip(&mut r0[span.clone()])
        .zip(&mut r1[span.clone()])
        .zip(r2[span.clone()].iter_mut().zip(&mut r3[span]))
    {
        *e0 = a - c;
        *e1 = b + c;
        *e2 = c - b;
        *e3 = b - d;
    }
}

/// Even and odd lanes of `a` then `b`: `([a0 a2 a4 a6 b0 b2 b4 b6], [a1 a3 .. b7])`.
#[inline]
#[target_feature(enable = "avx2")]
fn deinterleave(a: __m256, b: __m256) -> (__m256, __m256) {
    // The shuffles leave 64-bit pairs in the order a, b, a, b; the permute puts them a, a,
    // b, b.
    let order = |v: __m256| _mm256_castpd_ps(_mm256_permute4x64_pd::<0xd8>(_mm256_castps_pd(v)));
    (
        order(_mm256_shuffle_ps::<0x88>(a, b)),
        order(_mm256_shuffle_ps::<0xdd>(a, b)),
    )
}

/// The patches of segment `s` in channel `ci`, combined across (`· B`) from the rows
/// [`combine_rows`] left, 8 tiles per vector, into `v[(ξ * c + ci) * ld + column]`. The
/// last group of a segment also writes up to 7 columns past it, which the next segment (or
/// nothing, past the block: [`SPILL`]) overwrites.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
unsafe fn transform_patches(p: &Plan, rows: &[f32], s: Segment, ci: usize, v: &mut [f32]) {
    let groups = s.len.div_ceil(LANES);
    // Reads reach `2 * (s.tw + 8 * (groups - 1)) + 18` words into a row, writes 8 words from
    // `s.col + 8 * (groups - 1)` in a row of `ld`.
    assert!(2 * s.tw + 16 * groups + 2 <= p.sw && rows.len() == 4 * p.sw);
    assert!(s.col + LANES * groups <= p.ld && v.len() == XI * p.c * p.ld);
    for i in 0..4 {
        let row = rows[i * p.sw..].as_ptr();
        for gi in 0..groups {
            let at = 2 * (s.tw + LANES * gi);
            // SAFETY: `at + 18 <= sw` words of this row are readable (asserted).
            let (e0, e1, e2, e3) = unsafe {
                let (e0, e1) = deinterleave(
                    _mm256_loadu_ps(row.add(at)),
                    _mm256_loadu_ps(row.add(at + 8)),
                );
                let (e2, e3) = deinterleave(
                    _mm256_loadu_ps(row.add(at + 2)),
                    _mm256_loadu_ps(row.add(at + 10)),
                );
                (e0, e1, e2, e3)
            };
            let t = [
                _mm256_sub_ps(e0, e2),
                _mm256_add_ps(e1, e2),
                _mm256_sub_ps(e2, e1),
                _mm256_sub_ps(e1, e3),
            ];
            for (j, t) in t.into_iter().enumerate() {
                let at = ((4 * i + j) * p.c + ci) * p.ld + s.col + LANES * gi;
                // SAFETY: 8 words at `at` lie in `v` (asserted: the column plus 8 is within
                // `ld`).
                unsafe { _mm256_storeu_ps(v.as_mut_ptr().add(at), t) };
            }
        }
    }
}

/// Output channel `oi` of segment `s`'s tiles from the products `m`: `Aᵀ M A` with `Aᵀ = [1 1
/// 1 0; 0 1 -1 -1]`, plus `bias`, 8 tiles (16 output columns of two rows) at a time.
///
/// # Safety
/// The CPU must have AVX2; `out` is the whole output and these elements are written by
/// this call alone.
#[target_feature(enable = "avx2")]
unsafe fn untransform(p: &Plan, m: &[f32], oi: usize, bias: f32, s: Segment, out: &OutPtr) {
    let opad = p.opanels * MR;
    let groups = s.len.div_ceil(LANES);
    assert!(s.col + LANES * groups <= p.ld && m.len() == XI * opad * p.ld && oi < p.o);
    let bias = _mm256_set1_ps(bias);
    for gi in 0..groups {
        let col = s.col + LANES * gi;
        // SAFETY: 8 words at `col` of each `ξ`'s row `oi` lie in `m` (asserted).
        let mv: [__m256; XI] = std::array::from_fn(|xi| unsafe {
            _mm256_loadu_ps(m.as_ptr().add((xi * opad + oi) * p.ld + col))
        });
        // Down the patch (`Aᵀ M`), then across (`· A`).
        let t0: [__m256; 4] =
            std::array::from_fn(|j| _mm256_add_ps(_mm256_add_ps(mv[j], mv[4 + j]), mv[8 + j]));
        let t1: [__m256; 4] =
            std::array::from_fn(|j| _mm256_sub_ps(_mm256_sub_ps(mv[4 + j], mv[8 + j]), mv[12 + j]));
        let across = |t: [__m256; 4]| {
            (
                _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[0], t[1]), t[2]), bias),
                _mm256_add_ps(_mm256_sub_ps(_mm256_sub_ps(t[1], t[2]), t[3]), bias),
            )
        };
        let tw = s.tw + LANES * gi;
        // Output columns of this group: two per tile, clipped at the row's end.
        let width = (2 * (s.len - LANES * gi).min(LANES)).min(p.ow - 2 * tw);
        for (dy, t) in [t0, t1].into_iter().enumerate() {
            let y = 2 * s.th + dy;
            if y >= p.oh {
                break;
            }
            let (left, right) = across(t);
            // Tile values side by side: [l0 r0 l1 r1 ...].
            let (lo, hi) = (
                _mm256_unpacklo_ps(left, right),
                _mm256_unpackhi_ps(left, right),
            );
            let halves = [
                _mm256_permute2f128_ps::<0x20>(lo, hi),
                _mm256_permute2f128_ps::<0x31>(lo, hi),
            ];
            let at = ((s.n * p.o + oi) * p.oh + y) * p.ow + 2 * tw;
            assert!(at + width <= out.1);
            if width == 2 * LANES {
                // SAFETY: 16 words at `at` lie in the output (asserted); this block's.
                unsafe {
                    _mm256_storeu_ps(out.0.add(at), halves[0]);
                    _mm256_storeu_ps(out.0.add(at + LANES), halves[1]);
                }
            } else {
                let mut buf = [0f32; 2 * LANES];
                // SAFETY: `buf` holds 16 words.
                unsafe {
                    _mm256_storeu_ps(buf.as_mut_ptr(), halves[0]);
                    _mm256_storeu_ps(buf.as_mut_ptr().add(LANES), halves[1]);
                }
                for (k, &val) in buf[..width].iter().enumerate() {
                    // SAFETY: as above, `width` words from `at`.
                    unsafe { *out.0.add(at + k) = val };
                }
            }
        }
    }
}
