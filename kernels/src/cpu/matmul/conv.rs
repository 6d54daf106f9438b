//! Convolution forward as an implicit GEMM on kiln's `f32` FMA kernel ([`super::fma`]): for
//! each image, `out = W @ cols + bias`, where `cols` (`C*K x L`, im2col's columns: one row
//! per input channel and kernel offset, one column per output position) is never built.
//! Each block of `ncb` output positions (up to 256, fewer for wide layers) packs its
//! `KC x ncb` block of columns straight from the image into the kernel's panel layout (up to
//! 256 KiB, in L2), multiplies it by the packed weight (packed once per call, walked in
//! groups of micro-panels that stay in L2) into `f32` tiles, and writes its `O x ncb` block
//! of the output, bias added, after the last `k` block. A full im2col of a [16,64,56,56] 3x3
//! convolution was 116 MB written and read back once per forward.
//!
//! The columns of all images are taken side by side (a layer with few output positions per
//! image, as ResNet's last stages at 2 x 2, still fills the 16-wide panels), and the blocks
//! of columns are split over the pool.

use super::conv_taps::{balanced_blocks, use_table, Cols, OutPtr, TapTable};
pub(crate) use super::conv_taps::{Images, Weight};
use super::fma::Fma;
use super::packed::{with_scratch, Kernel, Slot};
use super::{Mat, PARALLEL_FLOPS};
use crate::cpu::fold::Geometry;
use crate::parallel::{fan_out, par_for};

type K = Fma<f32>;
const MR: usize = <K as Kernel>::MR;
const NR: usize = <K as Kernel>::NR;
const KC: usize = <K as Kernel>::KC;
/// Most output positions per block: 16 panels, so a `KC x NCB` block of columns is 256 KiB.
const MAX_NCB: usize = 16 * NR;
/// Target size of a block's `f32` tiles.
const TILE_BYTES: usize = 128 << 10;
/// Weight micro-panels per group: 20 x 6 rows x 256 of `k`, 120 KiB.
const MC_PANELS: usize = 20;

/// `out[b, o, q] = sum_l w[o, l] * cols_b[l, q] + bias[o]` for every image `b` of `x`, with
/// `w` an `o x C*K` [`Weight`], `out` row-major `[B, o, L]`, or `[B, L, o]` when
/// `channels_last`. False (nothing written) when
/// the CPU lacks AVX2 + FMA. The caller has checked the shapes (`g` from `x`'s sizes, `w`
/// of `o` rows of `C*K`, `bias` of `o`, `out` of `B * o * L`) and that `x` and `w` are in
/// bounds.
pub(crate) fn conv_forward_f32(
    g: &Geometry,
    x: Images<'_>,
    w: Weight<'_>,
    o: usize,
    bias: Option<&[f32]>,
    channels_last: bool,
    out: &mut [f32],
) -> bool {
    let Some(isa) = Fma::<f32>::detect() else {
        return false;
    };
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    if out.is_empty() {
        return true;
    }
    if ck == 0 {
        // An empty contraction: the bias alone.
        for (i, v) in out.iter_mut().enumerate() {
            let oi = if channels_last { i % o } else { (i / q) % o };
            *v = bias.map_or(0.0, |b| b[oi]);
        }
        return true;
    }
    if channels_last && super::winograd::applies_channels_last(g, &x, o) {
        super::winograd::forward_channels_last(isa, g, x, w, o, bias, out);
        return true;
    }
    if super::conv_nhwc::applies(g, &x, channels_last) {
        super::conv_nhwc::forward(isa, g, x, w, o, bias, out);
        return true;
    }
    if super::winograd::applies(g, &x, o, channels_last) {
        super::winograd::forward(isa, g, x, w, o, bias, out);
        return true;
    }
    // The weight's micro-panels, one set per k block: block `l0 ..` starts at
    // `apanels * MR * l0` and holds `apanels` micro-panels of `kcw * MR` values.
    let apanels = o.div_ceil(MR);
    with_scratch(Slot::A, apanels * MR * ck, |apack: &mut [f32]| {
        if cfg!(any(test, debug_assertions)) {
            // A word the packer misses reads NaN, not the last call's value.
            apack.fill(f32::NAN);
        }
        forward_packed(isa, g, x, apack, w, o, bias, channels_last, out)
    });
    true
}

/// [`conv_forward_f32`] with `apack` (`o` rounded up to `MR`, times `C*K`) to pack the
/// weight into.
#[allow(clippy::too_many_arguments)]
fn forward_packed(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    apack: &mut [f32],
    w: Weight<'_>,
    o: usize,
    bias: Option<&[f32]>,
    channels_last: bool,
    out: &mut [f32],
) {
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    let apanels = o.div_ceil(MR);
    pack_weight(isa, g, w, o, apack);
    let apack = &apack[..];
    // Output positions per block: the block's f32 tiles (`o x ncb`) within 128 KiB, so a
    // wide layer (512 channels) takes 64 positions at a time and a narrow one 256.
    let ncb = ((TILE_BYTES / 4 / (apanels * MR)) / NR * NR).clamp(NR, MAX_NCB);
    let batch = out.len() / (o * q);
    let (ncb, blocks) = balanced_blocks(batch * q, ncb, NR);
    let out = OutPtr(out.as_mut_ptr(), out.len());
    let block = |blk: usize| {
        // Both 64-byte aligned, so no vector load of the packed columns splits a cache line.
        with_scratch(
            Slot::B,
            (ncb / NR) * panel_stride(KC.min(ck)),
            |bpack: &mut [f32]| {
                with_scratch(Slot::Tiles, apanels * ncb * MR, |tiles: &mut [f32]| {
                    let cols = Cols {
                        first: blk * ncb,
                        count: ncb.min(batch * q - blk * ncb),
                    };
                    let dst = Dest {
                        out: &out,
                        channels_last,
                    };
                    column_block(isa, g, x, cols, apack, apanels, bias, bpack, tiles, dst)
                })
            },
        )
    };
    let flops = (o * q).saturating_mul(ck).saturating_mul(batch);
    if fan_out(blocks > 1 && flops >= PARALLEL_FLOPS) {
        par_for(blocks, &block);
    } else {
        (0..blocks).for_each(block);
    }
}

/// Words from one panel of packed columns to the next: `kcw` rows of `NR`, plus one cache
/// line, so that a row's 16 panels (written one after another as the row is gathered) fall
/// in different L1 sets; `256 * 16` words apart they all fell in one and evicted each other.
fn panel_stride(kcw: usize) -> usize {
    kcw * NR + NR
}

/// The weight's micro-panels for every `k` block into `apack`: block `l0 ..` at
/// `apanels * MR * l0`, its micro-panel `p` at `p * kcw * MR` from there, holding rows `p *
/// MR ..` (zeros past `o`). Micro-panels in parallel for a large weight (a 512 x 4608 one
/// packed on one thread was a fifth of its convolution on two).
fn pack_weight(isa: K, g: &Geometry, w: Weight<'_>, o: usize, apack: &mut [f32]) {
    let (ck, taps) = (g.channels * g.kernel_len(), g.kernel_len());
    let apanels = o.div_ceil(MR);
    assert!(apack.len() >= apanels * MR * ck);
    let dst = &OutPtr(apack.as_mut_ptr(), apack.len());
    let row_major = w.sk == 1 && w.sc == taps;
    let panel = |p: usize| {
        let valid = MR.min(o - p * MR);
        for l0 in (0..ck).step_by(KC) {
            let kcw = KC.min(ck - l0);
            let at = apanels * MR * l0 + p * kcw * MR;
            // SAFETY: in bounds (asserted above: `at + kcw * MR <= apanels * MR * (l0 +
            // kcw) <= apack.len()`); micro-panel `p` of each block is written by this task
            // alone, and nothing else touches `apack` until the tasks return.
            let out = unsafe { std::slice::from_raw_parts_mut(dst.0.add(at), kcw * MR) };
            if row_major {
                let sub = Mat {
                    data: w.data,
                    offset: w.offset + l0,
                    rs: w.so,
                    cs: 1,
                };
                isa.pack_a_block(sub, kcw, p * MR, valid, out);
                continue;
            }
            // `(c, kk)` of column `l0 + li`, stepped rather than divided per column.
            let (mut c, mut kk) = (l0 / taps, l0 % taps);
            let rows = w.offset + p * MR * w.so;
            for words in out.chunks_exact_mut(MR) {
                let at = rows + c * w.sc + kk * w.sk;
                // (A stride-0 row dim, an expanded weight, takes the per-row loop: `step_by`
                // would yield one value for the six rows.)
                if valid == MR && w.so > 0 {
                    let src = &w.data[at..=at + (MR - 1) * w.so];
                    for (v, &x) in words.iter_mut().zip(src.iter().step_by(w.so)) {
                        *v = x;
                    }
                } else {
                    for (r, v) in words.iter_mut().enumerate() {
                        *v = if r < valid {
                            w.data[at + r * w.so]
                        } else {
                            0.0
                        };
                    }
                }
                kk += 1;
                if kk == taps {
                    (c, kk) = (c + 1, 0);
                }
            }
        }
    };
    if fan_out(o * ck >= 1 << 16 && apanels > 1) {
        par_for(apanels, &panel);
    } else {
        (0..apanels).for_each(panel);
    }
}

/// Where a block's output goes: the output buffer, `[B, o, L]` or (`channels_last`)
/// `[B, L, o]`.
#[derive(Clone, Copy)]
struct Dest<'a> {
    out: &'a OutPtr,
    channels_last: bool,
}

/// The output columns `cols` (every channel), bias added.
#[allow(clippy::too_many_arguments)]
fn column_block(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    cols: Cols,
    apack: &[f32],
    apanels: usize,
    bias: Option<&[f32]>,
    bpack: &mut [f32],
    tiles: &mut [f32],
    dst: Dest<'_>,
) {
    let out = dst.out;
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    let o = out.1 / (g.batch * q);
    let panels = cols.count.div_ceil(NR);
    let taps = use_table(g, &x).then(|| TapTable::new(g, &x, cols));
    for l0 in (0..ck).step_by(KC) {
        let kcw = KC.min(ck - l0);
        let ps = panel_stride(kcw);
        let bp = &mut bpack[..panels * ps];
        match &taps {
            Some(taps) => {
                for li in 0..kcw {
                    taps.gather(isa, g, &x, l0 + li, panels, &mut bp[li * NR..], ps);
                }
            }
            None => pack_columns(g, x, l0, kcw, cols, bp),
        }
        let ap = &apack[apanels * MR * l0..][..apanels * kcw * MR];
        // Micro-panels of the weight in groups of `MC_PANELS` (a group's k block in L2),
        // each group against every panel of columns (one panel in L1).
        for p0 in (0..apanels).step_by(MC_PANELS) {
            let group = &ap[p0 * kcw * MR..(p0 + MC_PANELS).min(apanels) * kcw * MR];
            for (jl, bs) in bp.chunks_exact(ps).enumerate() {
                let bs = &bs[..kcw * NR];
                for (gi, as_) in group.chunks_exact(kcw * MR).enumerate() {
                    let t = &mut tiles[(jl * apanels + p0 + gi) * MR * NR..][..MR * NR];
                    isa.tile(as_, bs, t, l0 > 0);
                }
            }
        }
    }
    if dst.channels_last {
        // Column `c` of the block is output position `cols.first + c` of the batch, whose
        // `o` channels are one run of the output.
        let at = cols.first * o;
        assert!(at + cols.count * o <= out.1);
        // SAFETY: in bounds (asserted); positions `cols.first ..` belong to this block
        // alone, so no other task writes these elements, and nothing else reads or writes
        // the output while the blocks run.
        let run = unsafe { std::slice::from_raw_parts_mut(out.0.add(at), cols.count * o) };
        for (c, px) in run.chunks_exact_mut(o).enumerate() {
            let tile_col = (c / NR) * apanels * MR * NR + c % NR;
            for (oi, v) in px.iter_mut().enumerate() {
                let t = tiles[tile_col + (oi / MR) * MR * NR + (oi % MR) * NR];
                *v = t + bias.map_or(0.0, |b| b[oi]);
            }
        }
        return;
    }
    // Each run of columns inside one image goes to `out[b, oi, q ..]`, a panel's part of it
    // at a time (contiguous in the tile's row).
    let mut c = 0;
    while c < cols.count {
        let (b, q0) = ((cols.first + c) / q, (cols.first + c) % q);
        let run = (q - q0).min(cols.count - c);
        for oi in 0..o {
            let (pi, r) = (oi / MR, oi % MR);
            let bv = bias.map_or(0.0, |bias| bias[oi]);
            let at = (b * o + oi) * q + q0;
            assert!(at + run <= out.1);
            let mut t = 0;
            while t < run {
                let cc = c + t;
                let seg = (NR - cc % NR).min(run - t);
                let src = &tiles[((cc / NR) * apanels + pi) * MR * NR + r * NR + cc % NR..][..seg];
                // SAFETY: in bounds (asserted); columns `b * L + q0 ..` belong to this block
                // alone, so no other task writes `out[b, oi, q0 + t ..]`, and nothing else
                // reads or writes the output while the blocks run.
                let dst = unsafe { std::slice::from_raw_parts_mut(out.0.add(at + t), seg) };
                dst.iter_mut().zip(src).for_each(|(d, &v)| *d = v + bv);
                t += seg;
            }
        }
        c += run;
    }
}

/// A run of a block's columns along one output row of one image: block columns `qi ..
/// qi + len` are image `b`'s positions `(od, oh, ow ..)`.
#[derive(Clone, Copy, Default)]
struct Run {
    qi: usize,
    len: usize,
    b: usize,
    od: usize,
    oh: usize,
    ow: usize,
}

/// Columns `cols` of rows `l0 .. l0 + kcw` of the batch's im2col matrix (every image's
/// columns side by side), in the kernel's panel layout: column `qi` (from `cols.first`) of
/// row `li` (from `l0`) at
/// `dst[(qi / NR) * panel_stride(kcw) + li * NR + qi % NR]`; a ragged last panel's extra
/// columns zero.
/// Each run is written straight into the panels, split where it crosses one (a small image's
/// rows are often exactly one panel wide).
fn pack_columns(g: &Geometry, x: Images<'_>, l0: usize, kcw: usize, cols: Cols, dst: &mut [f32]) {
    let ncols = cols.count;
    let panels = ncols.div_ceil(NR);
    let ps = panel_stride(kcw);
    debug_assert_eq!(dst.len(), panels * ps);
    let mut runs = [Run::default(); MAX_NCB];
    let runs = block_runs(g, cols, &mut runs);
    let ragged = ncols % NR;
    for li in 0..kcw {
        let tap = Tap::of(g, l0 + li);
        for run in runs {
            let span = tap.span(g, x, run);
            let mut t = 0;
            while t < run.len {
                let q = run.qi + t;
                let seg = (NR - q % NR).min(run.len - t);
                let out = &mut dst[(q / NR) * ps + li * NR + q % NR..][..seg];
                span.write(x.data, t, out);
                t += seg;
            }
        }
        if ragged != 0 {
            dst[(panels - 1) * ps + li * NR + ragged..][..NR - ragged].fill(0.0);
        }
    }
}

/// The runs of the columns `cols` (each inside one output row of one image), written to
/// `runs`; the filled part returned.
fn block_runs<'r>(g: &Geometry, cols: Cols, runs: &'r mut [Run; MAX_NCB]) -> &'r [Run] {
    let positions = g.block_len();
    let [_, bh, bw] = g.blocks;
    let (mut n, mut qi) = (0, 0);
    while qi < cols.count {
        let (b, qq) = ((cols.first + qi) / positions, (cols.first + qi) % positions);
        let (ow, oh, od) = (qq % bw, (qq / bw) % bh, qq / (bw * bh));
        let len = (bw - ow).min(cols.count - qi);
        runs[n] = Run {
            qi,
            len,
            b,
            od,
            oh,
            ow,
        };
        n += 1;
        qi += len;
    }
    &runs[..n]
}

/// Row `l` of the im2col matrix: input channel `c` under kernel offset `(kd, kh, kw)`.
#[derive(Clone, Copy)]
struct Tap {
    c: usize,
    kd: usize,
    kh: usize,
    kw: usize,
}

/// Where a run of an im2col row reads: its columns `lo .. hi` take
/// `data[from + (t - lo) * step]` for column `t` (`step` 0 for a broadcast row), the others
/// lie in the padding and are 0.
#[derive(Clone, Copy)]
struct Span {
    lo: usize,
    hi: usize,
    from: usize,
    step: usize,
}

impl Tap {
    fn of(g: &Geometry, l: usize) -> Tap {
        let [_, k1, k2] = g.kernel;
        let (c, kk) = (l / g.kernel_len(), l % g.kernel_len());
        Tap {
            c,
            kd: kk / (k1 * k2),
            kh: (kk / k2) % k1,
            kw: kk % k2,
        }
    }

    /// This row's [`Span`] over `run`. Inlined: it runs once per row and run, and a small
    /// image's runs are short.
    #[inline(always)]
    fn span(&self, g: &Geometry, x: Images<'_>, run: &Run) -> Span {
        let (Some(i), Some(j)) = (g.source(0, run.od, self.kd), g.source(1, run.oh, self.kh))
        else {
            return Span {
                lo: 0,
                hi: 0,
                from: 0,
                step: 0,
            };
        };
        let r = x.offset + run.b * x.sb + self.c * x.sc + i * x.ss[0] + j * x.ss[1];
        // Input column of output column `ow + t`: `start + t * sw`; in the image for `t`
        // in `lo .. hi`, padding outside.
        let sw = g.stride[2] as isize;
        let start =
            (run.ow * g.stride[2] + self.kw * g.dilation[2]) as isize - g.padding[2] as isize;
        let len = run.len as isize;
        // Stride 1 (most layers) without the divisions, which cost more than a short run.
        let (lo, hi) = if sw == 1 {
            let lo = (-start).clamp(0, len);
            (
                lo as usize,
                (g.size[2] as isize - start).clamp(lo, len) as usize,
            )
        } else {
            let lo = (((-start).max(0) + sw - 1) / sw).min(len);
            let hi = (g.size[2] as isize - start + sw - 1) / sw;
            (lo as usize, hi.clamp(lo, len) as usize)
        };
        if hi == lo {
            return Span {
                lo: 0,
                hi: 0,
                from: 0,
                step: 0,
            };
        }
        Span {
            lo,
            hi,
            from: r + (start + lo as isize * sw) as usize * x.ss[2],
            step: g.stride[2] * x.ss[2],
        }
    }
}

impl Span {
    /// Columns `t0 .. t0 + out.len()` of the run into `out`.
    #[inline(always)]
    fn write(&self, data: &[f32], t0: usize, out: &mut [f32]) {
        let n = out.len();
        let lo = self.lo.clamp(t0, t0 + n) - t0;
        let hi = self.hi.clamp(t0 + lo, t0 + n) - t0;
        out[..lo].fill(0.0);
        if hi > lo {
            let from = self.from + (t0 + lo - self.lo) * self.step;
            let dst = &mut out[lo..hi];
            match self.step {
                1 => dst.copy_from_slice(&data[from..from + (hi - lo)]),
                0 => dst.fill(data[from]),
                step => {
                    let src = &data[from..=from + (hi - lo - 1) * step];
                    for (v, &s) in dst.iter_mut().zip(src.iter().step_by(step)) {
                        *v = s;
                    }
                }
            }
        }
        out[hi..].fill(0.0);
    }
}

/// Row `l` of the im2col matrix over the columns the `runs` cover: `row[run.qi ..]` holds
/// the image's values under kernel offset `l % K` of channel `l / K` (0 in the padding).
fn gather_row(g: &Geometry, x: Images<'_>, l: usize, runs: &[Run], row: &mut [f32]) {
    let tap = Tap::of(g, l);
    for run in runs {
        tap.span(g, x, run)
            .write(x.data, 0, &mut row[run.qi..run.qi + run.len]);
    }
}

/// `dw[o, l] = sum over images b and positions q of gy[b, o, q] * cols_b[l, q]`: the weight
/// gradient of [`conv_forward_f32`] for the output gradient `gy` (row-major `[B, o, L]`),
/// `dw` row-major `o x C*K`. Computed as `dwᵀ = cols @ gyᵀ` (rows of `dwᵀ` split over the
/// pool, or for a small `dw` the positions), `k` being the batch's positions taken `KC` at
/// a time across images (a 2 x 2 image alone would make `k` blocks of 4): each block's
/// columns gathered into the kernel's micro-panels, `gyᵀ` packed from `gy`'s rows, and each
/// tile written straight into `dw`'s columns. False (nothing written) when the CPU lacks AVX2 + FMA; shapes checked by the
/// caller.
pub(crate) fn conv_weight_grad_f32(
    g: &Geometry,
    x: Images<'_>,
    gy: &[f32],
    o: usize,
    dw: &mut [f32],
) -> bool {
    let Some(isa) = Fma::<f32>::detect() else {
        return false;
    };
    let (ck, q) = (g.channels * g.kernel_len(), g.block_len());
    if dw.is_empty() {
        return true;
    }
    let positions = g.batch * q;
    if positions == 0 {
        dw.fill(0.0);
        return true;
    }
    let panels = o.div_ceil(NR);
    let table = use_table(g, &x);
    // Rows of `dwᵀ` per task: all of them on one thread, else an even split in micro-panels.
    let big = fan_out((ck * o).saturating_mul(positions) >= PARALLEL_FLOPS);
    let threads = if big {
        crate::parallel::num_threads()
    } else {
        1
    };
    // Many position blocks and a small `dw` (every layer of the small CNN and of ResNet's
    // first stages): each task takes a share of the positions for all of `dw` into its own
    // copy, summed at the end. Split by rows of `dwᵀ` instead, every task packed `gyᵀ` and
    // built the tap table for every block, which took a fifth of the small CNN's step.
    let blocks = positions.div_ceil(KC);
    let by_positions =
        threads > 1 && blocks >= 2 * threads && (ck * o).saturating_mul(threads) <= 1 << 22;
    let (mc, tasks, per) = if by_positions {
        (ck, threads, blocks.div_ceil(threads))
    } else {
        let mc = ck.div_ceil(threads).next_multiple_of(MR);
        (mc, ck.div_ceil(mc), blocks)
    };
    let mut partial = vec![0f32; if by_positions { tasks * o * ck } else { 0 }];
    let (out, part) = (
        &OutPtr(dw.as_mut_ptr(), dw.len()),
        &OutPtr(partial.as_mut_ptr(), partial.len()),
    );
    let task = |t: usize| {
        let (r0, rows, blk0, out_at) = if by_positions {
            (0, ck, t * per, t * o * ck)
        } else {
            (t * mc, mc.min(ck - t * mc), 0, 0)
        };
        let (out, limit) = if by_positions {
            (part, out_at + o * ck)
        } else {
            (out, out.1)
        };
        let first = blk0 * KC;
        let last = positions.min((blk0 + per) * KC);
        if first >= last {
            // No positions left for this task: its copy of `dw` stays zero.
            return;
        }
        let apanels = rows.div_ceil(MR);
        with_scratch(Slot::A, apanels * MR * KC, |apack: &mut [f32]| {
            with_scratch(Slot::B, panels * NR * KC, |bpack: &mut [f32]| {
                with_scratch(
                    Slot::Tiles,
                    apanels * panels * MR * NR,
                    |tiles: &mut [f32]| {
                        for p0 in (first..last).step_by(KC) {
                            let kcw = KC.min(last - p0);
                            let cols = Cols {
                                first: p0,
                                count: kcw,
                            };
                            let taps = table.then(|| TapTable::new(g, &x, cols));
                            let ap = &mut apack[..apanels * kcw * MR];
                            pack_cols_as_a(isa, g, x, r0, rows, cols, taps.as_ref(), ap);
                            let bp = &mut bpack[..panels * kcw * NR];
                            pack_gy_t(gy, o, q, cols, bp);
                            for (jl, bs) in bp.chunks_exact(kcw * NR).enumerate() {
                                for (pi, as_) in ap.chunks_exact(kcw * MR).enumerate() {
                                    let t = &mut tiles[(jl * apanels + pi) * MR * NR..][..MR * NR];
                                    isa.tile(as_, bs, t, p0 > first);
                                }
                            }
                        }
                        // Tile (rows `l` of `dwᵀ`, columns `oi`) into `dw[oi, l ..]`: runs
                        // of up to `MR` contiguous values.
                        // Panel by panel of channels, so consecutive tiles fill the same 16
                        // rows' lines (the next run of each row is the next tile's).
                        for (jl, pi) in
                            (0..panels).flat_map(|j| (0..apanels).map(move |pi| (j, pi)))
                        {
                            let t = &tiles[(jl * apanels + pi) * MR * NR..][..MR * NR];
                            let (l0, lr) = (r0 + pi * MR, MR.min(rows - pi * MR));
                            for j in 0..NR.min(o - jl * NR) {
                                let at = out_at + (jl * NR + j) * ck + l0;
                                assert!(at + lr <= limit && limit <= out.1);
                                // SAFETY: in bounds (asserted); this task alone writes
                                // columns `r0 .. r0 + rows` of `dw` (or its own copy of
                                // `dw`), and nothing else reads or writes it while the
                                // tasks run.
                                let dst =
                                    unsafe { std::slice::from_raw_parts_mut(out.0.add(at), lr) };
                                for (r, d) in dst.iter_mut().enumerate() {
                                    *d = t[r * NR + j];
                                }
                            }
                        }
                    },
                )
            })
        })
    };
    if big && tasks > 1 {
        par_for(tasks, &task);
    } else {
        (0..tasks).for_each(task);
    }
    if by_positions {
        // The tasks' shares in a fixed order, so the result does not depend on timing.
        dw.copy_from_slice(&partial[..o * ck]);
        for share in partial.chunks_exact(o * ck).skip(1) {
            for (d, &v) in dw.iter_mut().zip(share) {
                *d += v;
            }
        }
    }
    true
}

/// `gyᵀ` at the positions `cols` (across images) as the kernel's `B` panels:
/// `dst[pj * n * NR + qi * NR + j]` is `gy[b, pj * NR + j, qq]` for column `qi`'s image `b`
/// and position `qq`, `n = cols.count`; channels past `o` zero. Reads `gy`'s rows in runs.
fn pack_gy_t(gy: &[f32], o: usize, q: usize, cols: Cols, dst: &mut [f32]) {
    let n = cols.count;
    let panels = o.div_ceil(NR);
    if !o.is_multiple_of(NR) {
        dst[(panels - 1) * n * NR..].fill(0.0);
    }
    let mut c = 0;
    while c < n {
        let (b, q0) = ((cols.first + c) / q, (cols.first + c) % q);
        let run = (q - q0).min(n - c);
        for oi in 0..o {
            let src = &gy[(b * o + oi) * q + q0..][..run];
            let panel = &mut dst[(oi / NR) * n * NR..][..n * NR];
            let j = oi % NR;
            for (v, &s) in panel[c * NR + j..].iter_mut().step_by(NR).zip(src) {
                *v = s;
            }
        }
        c += run;
    }
}

/// Rows `r0 .. r0 + rows` of the im2col matrix over the columns `cols` (at most `KC`), as
/// the kernel's `A` micro-panels: `dst[p * n * MR + qi * MR + r]` is row `r0 + p * MR + r`
/// at column `qi`, `n = cols.count`; rows past the block zero. Gathered through `taps` when
/// given, else run by run.
#[allow(clippy::too_many_arguments)]
fn pack_cols_as_a(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    r0: usize,
    rows: usize,
    cols: Cols,
    taps: Option<&TapTable>,
    dst: &mut [f32],
) {
    let n = cols.count;
    let mut runs = [Run::default(); MAX_NCB];
    let runs = match taps {
        Some(_) => &[][..],
        None => block_runs(g, cols, &mut runs),
    };
    let mut gathered = [[0f32; KC]; MR];
    for (p, panel) in dst.chunks_exact_mut(n * MR).enumerate() {
        let valid = MR.min(rows - p * MR);
        for (r, row) in gathered.iter_mut().enumerate() {
            if r >= valid {
                row[..n].fill(0.0);
            } else if let Some(taps) = taps {
                taps.gather(isa, g, &x, r0 + p * MR + r, n.div_ceil(NR), row, NR);
            } else {
                gather_row(g, x, r0 + p * MR + r, runs, row);
            }
        }
        for (qi, group) in panel.chunks_exact_mut(MR).enumerate() {
            for (r, v) in group.iter_mut().enumerate() {
                *v = gathered[r][qi];
            }
        }
    }
}
