//! Convolution forward on channels-last images as an implicit GEMM whose rows are output
//! positions: `out[p, o] = sum over (tap, c) of x[source(p, tap), c] * w[o, c, tap] +
//! bias[o]`. In a channels-last image each row of that product is, per kernel offset
//! ("tap"), one contiguous run of the `C` channels (or zeros in the padding), so a block of
//! rows is packed by plain loads and 8 x 8 register transposes, and each `6 x 16` tile of
//! the product is a run of 16 output channels of 6 positions, written where it belongs in
//! the channels-last output. The row-major path ([`super::conv`]) makes the weight the rows
//! and the positions the columns: on a channels-last image every column value there was an
//! AVX2 gather, the output a transposed scatter, and a channels-last weight a transposed
//! copy first (together ~40 % of a channels-last ResNet-18 forward).
//!
//! The weight (`K x O`, `K = taps * C` in tap-major order) is packed once per call into the
//! microkernel's 16-wide panels per `k` block of 256. Blocks of up to 96 rows (all images'
//! positions in a row, so a 2 x 2 late stage still fills the 6-row micro-panels) are split
//! over the pool, and, when there are too few of them for the threads, the output channels
//! too.

use super::conv_taps::{balanced_blocks, Images, OutPtr, Weight};
use super::fma::Fma;
use super::packed::{with_scratch, Kernel, Slot};
use super::PARALLEL_FLOPS;
use crate::cpu::fold::Geometry;
use crate::parallel::{fan_out, num_threads, par_for};

type K = Fma<f32>;
const MR: usize = <K as Kernel>::MR;
const NR: usize = <K as Kernel>::NR;
const KC: usize = <K as Kernel>::KC;
/// Most rows per block: 16 micro-panels, whose `k` block (96 x 256 `f32`, 96 KiB) stays in
/// L2 while the weight's panels stream past it.
const MB: usize = 16 * MR;
/// Fewest input channels: below it a tap's run is shorter than one vector, and the gather
/// of the row-major path does as well.
const MIN_CHANNELS: usize = 8;
/// Zeros to pack for a row whose tap falls in the padding (a run is at most one `k` block).
static ZEROS: [f32; KC] = [0.0; KC];

/// Whether `conv_forward_f32` takes this path: a channels-last output from an input whose
/// channels are contiguous, with enough of them.
pub(crate) fn applies(g: &Geometry, x: &Images<'_>, channels_last: bool) -> bool {
    channels_last && x.sc == 1 && g.channels >= MIN_CHANNELS
}

/// `out[p, o] = sum_l rows[p, l] * w[o, l] + bias[o]` for every output position `p` of the
/// batch (`out` channels-last, `[B, *L, o]`), where `applies` held. The caller has checked
/// the shapes and that `x` and `w` are in bounds, and that `C * K > 0`.
pub(super) fn forward(
    isa: K,
    g: &Geometry,
    x: Images<'_>,
    w: Weight<'_>,
    o: usize,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let k = g.channels * g.kernel_len();
    let m = g.batch * g.block_len();
    assert!(k > 0 && out.len() == m * o);
    let opanels = o.div_ceil(NR);
    with_scratch(Slot::A, opanels * NR * k, |bpack: &mut [f32]| {
        pack_weight(isa, g, w, o, bpack);
        let bpack = &bpack[..];
        let (rows, row_blocks) = balanced_blocks(m, MB, MR);
        // Too few blocks of rows for the threads: split the output channels too (each task
        // packs its rows again, cheap beside the product when rows are few).
        let groups = if row_blocks >= 2 * num_threads() {
            1
        } else {
            (2 * num_threads()).div_ceil(row_blocks).min(opanels)
        };
        let per_group = opanels.div_ceil(groups);
        let groups = opanels.div_ceil(per_group);
        let out = OutPtr(out.as_mut_ptr(), out.len());
        let task = |t: usize| {
            let (rb, gi) = (t / groups, t % groups);
            let first = rb * rows;
            let block = Block {
                first,
                rows: rows.min(m - first),
                panels: gi * per_group..((gi + 1) * per_group).min(opanels),
            };
            run_block(isa, g, &x, bpack, o, bias, block, &out);
        };
        let tasks = row_blocks * groups;
        if fan_out(tasks > 1 && m.saturating_mul(o).saturating_mul(k) >= PARALLEL_FLOPS) {
            par_for(tasks, &task);
        } else {
            (0..tasks).for_each(task);
        }
    });
}

/// One task's share: rows `first .. first + rows` of the product, for the output channels
/// of the weight's panels `panels` (16 channels each).
struct Block {
    first: usize,
    rows: usize,
    panels: std::ops::Range<usize>,
}

/// The weight as the microkernel's `B` panels: `k` block `l0 ..` at `opanels * NR * l0`,
/// its panel `j` at `j * kcw * NR` from there, row `l` of it holding `w[j * 16 + jj, c,
/// tap]` for `l0 + l = tap * C + c` (zeros past `o`). Panels in parallel for a large weight.
fn pack_weight(isa: K, g: &Geometry, w: Weight<'_>, o: usize, bpack: &mut [f32]) {
    let (c, k) = (g.channels, g.channels * g.kernel_len());
    // A channels-last weight (`[O, *kernel, C]` in memory): each output channel's `k`
    // values are one run, so panels are packed by register transposes.
    let contiguous = w.sc == 1 && (w.sk == c || g.kernel_len() == 1);
    let opanels = o.div_ceil(NR);
    assert!(bpack.len() >= opanels * NR * k);
    let dst = &OutPtr(bpack.as_mut_ptr(), bpack.len());
    let panel = |j: usize| {
        let cols = NR.min(o - j * NR);
        for l0 in (0..k).step_by(KC) {
            let kcw = KC.min(k - l0);
            let at = opanels * NR * l0 + j * kcw * NR;
            // SAFETY: in bounds (asserted above: `at + kcw * NR <= opanels * NR * (l0 +
            // kcw) <= bpack.len()`); panel `j` of each block is written by this task alone,
            // and nothing else touches `bpack` until the tasks return.
            let panel = unsafe { std::slice::from_raw_parts_mut(dst.0.add(at), kcw * NR) };
            if contiguous {
                // Row `l` of the product's `k` is word `l` of each output channel's weight.
                let rows: [&[f32]; NR] = std::array::from_fn(|jj| {
                    let start = w.offset + (j * NR + jj.min(cols - 1)) * w.so + l0;
                    &w.data[start..][..kcw]
                });
                isa.pack_columns(&rows[..cols], kcw, panel);
                continue;
            }
            // `(tap, c)` of row `l0 + l`, stepped rather than divided per row.
            let (mut tap, mut ci) = (l0 / c, l0 % c);
            for row in panel.chunks_exact_mut(NR) {
                let base = w.offset + j * NR * w.so + ci * w.sc + tap * w.sk;
                for (jj, v) in row.iter_mut().enumerate() {
                    *v = if jj < cols {
                        w.data[base + jj * w.so]
                    } else {
                        0.0
                    };
                }
                ci += 1;
                if ci == c {
                    (tap, ci) = (tap + 1, 0);
                }
            }
        }
    };
    if fan_out(o * k >= 1 << 16 && opanels > 1) {
        par_for(opanels, &panel);
    } else {
        (0..opanels).for_each(panel);
    }
}

/// Where row `p` of `block` reads under each tap: `offs[p * taps + tap]` from `x.offset`
/// (its channel 0), or `None` in the padding.
fn row_offsets(g: &Geometry, x: &Images<'_>, block: &Block) -> Vec<Option<usize>> {
    let taps = g.kernel_len();
    let positions = g.block_len();
    let [_, bh, bw] = g.blocks;
    let [_, k1, k2] = g.kernel;
    let mut offs = Vec::with_capacity(block.rows * taps);
    for p in block.first..block.first + block.rows {
        let (b, q) = (p / positions, p % positions);
        let at = [q / (bw * bh), (q / bw) % bh, q % bw];
        for tap in 0..taps {
            let kk = [tap / (k1 * k2), (tap / k2) % k1, tap % k2];
            let off = (0..3).try_fold(b * x.sb, |acc, d| {
                g.source(d, at[d], kk[d]).map(|s| acc + s * x.ss[d])
            });
            offs.push(off);
        }
    }
    offs
}

/// The product's rows and channels of `block`, bias added, into `out`.
#[allow(clippy::too_many_arguments)]
fn run_block(
    isa: K,
    g: &Geometry,
    x: &Images<'_>,
    bpack: &[f32],
    o: usize,
    bias: Option<&[f32]>,
    block: Block,
    out: &OutPtr,
) {
    let (c, taps) = (g.channels, g.kernel_len());
    let k = c * taps;
    let opanels = o.div_ceil(NR);
    let mpanels = block.rows.div_ceil(MR);
    let offs = row_offsets(g, x, &block);
    assert!((block.first + block.rows) * o <= out.1);
    with_scratch(Slot::B, mpanels * MR * KC.min(k), |apack: &mut [f32]| {
        for l0 in (0..k).step_by(KC) {
            let kcw = KC.min(k - l0);
            let apack = &mut apack[..mpanels * MR * kcw];
            for (i, panel) in apack.chunks_exact_mut(MR * kcw).enumerate() {
                let valid = MR.min(block.rows - i * MR);
                pack_rows(isa, x, &offs[i * MR * taps..], c, taps, valid, l0, panel);
            }
            let bk = &bpack[opanels * NR * l0..];
            for j in block.panels.clone() {
                let bp = &bk[j * kcw * NR..][..kcw * NR];
                let cols = NR.min(o - j * NR);
                for (i, ap) in apack.chunks_exact(MR * kcw).enumerate() {
                    let valid = MR.min(block.rows - i * MR);
                    let at = (block.first + i * MR) * o + j * NR;
                    if valid == MR && cols == NR {
                        // SAFETY: rows `block.first + i * 6 ..` (6 of them, inside the
                        // block) at channels `j * 16 ..` (16, inside `o`) lie in `out`
                        // (asserted above); this block's rows and channels are written by
                        // this task alone, and nothing else reads or writes the output
                        // while the tasks run.
                        unsafe { isa.tile_at(ap, bp, out.0.add(at), o, l0 > 0) };
                    } else {
                        edge_tile(isa, ap, bp, out, at, o, valid, cols, l0 > 0);
                    }
                }
            }
        }
    });
    if let Some(bias) = bias {
        let span = block.panels.start * NR..(block.panels.end * NR).min(o);
        for p in block.first..block.first + block.rows {
            // SAFETY: row `p` of the block, channels `span`, lie in `out` (asserted above)
            // and belong to this task alone, as above.
            let row = unsafe {
                std::slice::from_raw_parts_mut(out.0.add(p * o + span.start), span.len())
            };
            row.iter_mut()
                .zip(&bias[span.clone()])
                .for_each(|(v, b)| *v += b);
        }
    }
}

/// A tile with fewer than 6 rows or 16 channels left: through a whole tile on the stack.
#[allow(clippy::too_many_arguments)]
fn edge_tile(
    isa: K,
    ap: &[f32],
    bp: &[f32],
    out: &OutPtr,
    at: usize,
    o: usize,
    rows: usize,
    cols: usize,
    accumulate: bool,
) {
    let mut t = [0f32; MR * NR];
    for r in 0..rows {
        // SAFETY: rows `..rows` and channels `..cols` of the tile lie in `out` and belong to
        // the calling task alone (see `run_block`).
        let row = unsafe { std::slice::from_raw_parts_mut(out.0.add(at + r * o), cols) };
        if accumulate {
            t[r * NR..][..cols].copy_from_slice(row);
        }
    }
    isa.tile(ap, bp, &mut t, accumulate);
    for r in 0..rows {
        // SAFETY: as above.
        let row = unsafe { std::slice::from_raw_parts_mut(out.0.add(at + r * o), cols) };
        row.copy_from_slice(&t[r * NR..][..cols]);
    }
}

/// One micro-panel of rows (`valid` of 6; `offs` from its first row's) over the `k` block
/// from `l0` (`panel.len() / 6` values of `k`): per tap, each row's run of channels,
/// transposed into the panel.
#[allow(clippy::too_many_arguments)]
fn pack_rows(
    isa: K,
    x: &Images<'_>,
    offs: &[Option<usize>],
    c: usize,
    taps: usize,
    valid: usize,
    l0: usize,
    panel: &mut [f32],
) {
    let end = l0 + panel.len() / MR;
    let mut l = l0;
    while l < end {
        let (tap, c0) = (l / c, l % c);
        let run = (c - c0).min(end - l);
        let rows: [&[f32]; MR] = std::array::from_fn(|r| match offs.get(r * taps + tap) {
            Some(Some(off)) if r < valid => &x.data[x.offset + off + c0..][..run],
            _ => &ZEROS[..run],
        });
        isa.pack_rows(&rows[..valid], run, &mut panel[(l - l0) * MR..][..run * MR]);
        l += run;
    }
}
