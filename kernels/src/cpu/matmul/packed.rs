//! The blocked driver of kiln's own packed GEMM kernels ([`super::avx512bf16`],
//! [`super::fma`]): `c = a @ b` with every output element summed in `f32` over the whole `k`
//! and written once (rounded once to a half type, stored as `f32`, or added to an `f32`
//! bias by `addmm`).
//!
//! A kernel packs `B` into panels of `NR` columns and `A` into micro-panels of `MR` rows, as
//! "words" (an `f32`, or a pair of `bf16` for `VDPBF16PS`), and multiplies one micro-panel by
//! one panel into an `MR x NR` tile of `f32`. Packing reads the inputs through their strides
//! (transposed, sliced and stride-0 views are packed in place; no contiguous copy first) and
//! converts as it goes, so no widened copy of either input is ever made.
//!
//! Blocking. `B` is packed once for the product; the rows of `C` are split into blocks of
//! `mc` rows, one block per task on kiln's pool. A task walks `k` in blocks of `KC` words:
//! it packs its rows' `mc x KC` block of `A` (sized to stay in L2), then for each panel of
//! `B` multiplies that panel's `KC`-word block (in L1) by each of its micro-panels of `A`,
//! adding into the task's `f32` tiles, which are written out after the last `k` block.
//! Blocking `k` keeps `mc` (the reuse of each `B` block from L1) the same whatever `k` is;
//! a block of `A` for the whole `k` shrank to a micro-panel or two at `k = 2048`. The packed
//! buffers are 64-byte aligned (no vector load of `B` splits a cache line) and reused per
//! thread rather than allocated and zeroed per product.

use super::{Mat, PARALLEL_FLOPS};
use crate::parallel::{fan_out, num_threads, par_chunks_mut};
use std::cell::Cell;
use std::marker::PhantomData;

/// A 4-byte packed word in which every bit pattern is a valid value.
///
/// # Safety
/// Implementors must be 4 bytes with alignment at most 4, valid for every bit pattern.
pub(super) unsafe trait Word: Copy + Send + Sync + 'static {}
// SAFETY: 4-byte plain integer / float.
unsafe impl Word for u32 {}
// SAFETY: as above.
unsafe impl Word for f32 {}

/// A packed GEMM kernel: its tile, its blocking and its packing. A value of the type is the
/// proof that the running CPU has the kernel's instructions (only a detection makes one).
pub(super) trait Kernel: Copy + Send + Sync {
    /// The element type of `A` and `B`.
    type In: Copy + Send + Sync + 'static;
    /// One packed word.
    type Word: Word;
    /// Rows of `C` per tile.
    const MR: usize;
    /// Columns of `C` per tile.
    const NR: usize;
    /// Values of `k` per word (2 when a word holds a pair).
    const K_PER_WORD: usize;
    /// Words of `k` per block: a block of a `B` panel, `KC * NR` words, stays in L1 while
    /// the task's micro-panels of `A` stream past it.
    const KC: usize;
    /// Target size in bytes of one task's packed `mc x KC` block of `A` (in L2).
    const A_BLOCK_BYTES: usize;
    /// Most rows in one task's block (a multiple of `MR`).
    const MAX_MC: usize;

    /// Packs panel `pj` of `b` (`k x n`, columns `pj * NR ..`) into `dst`: `k.div_ceil(
    /// K_PER_WORD)` rows of `NR` words. Every word is written: columns past `n`, and the
    /// value past an odd `k` in a pair, as zeros.
    fn pack_b_panel(
        self,
        b: Mat<'_, Self::In>,
        k: usize,
        n: usize,
        pj: usize,
        dst: &mut [Self::Word],
    );

    /// Packs rows `r0 .. r0 + rows` of `a` (`m x k`) into `rows.div_ceil(MR)` micro-panels
    /// of `k.div_ceil(K_PER_WORD) * MR` words. Every word is written (rows past the block as
    /// zeros).
    fn pack_a_block(
        self,
        a: Mat<'_, Self::In>,
        k: usize,
        r0: usize,
        rows: usize,
        dst: &mut [Self::Word],
    );

    /// `tile = a @ b` (`tile += a @ b` when `accumulate`) for one micro-panel block `a`
    /// (`MR` words per `k` word) and the same `k` words of a panel `b` (`NR` per word);
    /// `tile` is `MR x NR`, row-major.
    fn tile(self, a: &[Self::Word], b: &[Self::Word], tile: &mut [f32], accumulate: bool);
}

/// How the driver writes each output element's `f32` sum into `C`'s elements: a half type
/// stores its sums rounded once (`mm`); [`Assign`] stores `f32` sums as they are and
/// [`Accumulate`] adds them to an `f32` output that already holds a bias (`addmm`, whose
/// caller rounds once after for the half types).
pub(super) trait Out {
    /// The element type of `C`.
    type Elem: Send;
    /// Writes a row of a tile's sums (`out.len()` of them).
    fn store_row(out: &mut [Self::Elem], sums: &[f32]);
}

impl Out for half::bf16 {
    type Elem = half::bf16;
    #[inline(always)]
    fn store_row(out: &mut [half::bf16], sums: &[f32]) {
        crate::cpu::narrow::f32_to_bf16(&sums[..out.len()], out);
    }
}

impl Out for half::f16 {
    type Elem = half::f16;
    #[inline(always)]
    fn store_row(out: &mut [half::f16], sums: &[f32]) {
        crate::cpu::narrow::f32_to_f16(&sums[..out.len()], out);
    }
}

/// `c = a @ b` into `f32`.
pub(super) enum Assign {}

impl Out for Assign {
    type Elem = f32;
    #[inline(always)]
    fn store_row(out: &mut [f32], sums: &[f32]) {
        out.copy_from_slice(&sums[..out.len()]);
    }
}

/// `c += a @ b` into `f32`.
pub(super) enum Accumulate {}

impl Out for Accumulate {
    type Elem = f32;
    #[inline(always)]
    fn store_row(out: &mut [f32], sums: &[f32]) {
        out.iter_mut().zip(sums).for_each(|(o, &v)| *o += v);
    }
}

/// `c = a @ b`, `c` a row-major `m x n` buffer; `m, k, n > 0` and both views bounds-checked
/// by the caller.
pub(super) fn gemm<K: Kernel, O: Out>(
    kern: K,
    m: usize,
    k: usize,
    n: usize,
    a: Mat<'_, K::In>,
    b: Mat<'_, K::In>,
    c: &mut [O::Elem],
) {
    debug_assert_eq!(c.len(), m * n);
    let nr = K::NR;
    let kw = k.div_ceil(K::K_PER_WORD);
    let panels = n.div_ceil(nr);
    let big = fan_out(m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FLOPS);

    with_scratch::<K::Word, _>(Slot::B, panels * kw * nr, |packed_b| {
        let pack_b = |pj: usize, dst: &mut [K::Word]| kern.pack_b_panel(b, k, n, pj, dst);
        if big && panels > 1 {
            par_chunks_mut(packed_b, kw * nr, &pack_b);
        } else {
            packed_b
                .chunks_exact_mut(kw * nr)
                .enumerate()
                .for_each(|(pj, dst)| pack_b(pj, dst));
        }
        let packed_b = &*packed_b;

        // On one thread too, row blocks of L2 size (and tiles of a bounded size), in turn.
        let mc = rows_per_task::<K>(m, kw, if big { num_threads() } else { 1 });
        let task =
            |blk: usize, cb: &mut [O::Elem]| block::<K, O>(kern, a, k, blk * mc, packed_b, n, cb);
        if big && m > mc {
            par_chunks_mut(c, mc * n, &task);
        } else {
            c.chunks_mut(mc * n)
                .enumerate()
                .for_each(|(blk, cb)| task(blk, cb));
        }
    });
}

/// One task: `cb` (rows `r0 ..` of `C`, `n` columns) from `a` and all of packed `B`.
fn block<K: Kernel, O: Out>(
    kern: K,
    a: Mat<'_, K::In>,
    k: usize,
    r0: usize,
    packed_b: &[K::Word],
    n: usize,
    cb: &mut [O::Elem],
) {
    let (mr, nr, kpw) = (K::MR, K::NR, K::K_PER_WORD);
    let kw = k.div_ceil(kpw);
    let rows = cb.len() / n;
    let (apanels, panels) = (rows.div_ceil(mr), n.div_ceil(nr));
    let tsize = mr * nr;
    let kcmax = K::KC.min(kw);
    with_scratch::<K::Word, _>(Slot::A, apanels * kcmax * mr, |packed_a| {
        // The f32 tiles of the whole block (`rows x n`), kept across the k blocks; each is
        // overwritten by the first k block, so their old contents do not matter.
        with_scratch::<f32, _>(Slot::Tiles, apanels * panels * tsize, |tiles| {
            for p0 in (0..kw).step_by(K::KC) {
                let kcw = K::KC.min(kw - p0);
                // Columns `l0 ..` of `a`: the same strides from a later offset.
                let l0 = p0 * kpw;
                let sub = Mat {
                    data: a.data,
                    offset: a.offset + l0 * a.cs,
                    rs: a.rs,
                    cs: a.cs,
                };
                let packed_a = &mut packed_a[..apanels * kcw * mr];
                kern.pack_a_block(sub, (kcw * kpw).min(k - l0), r0, rows, packed_a);
                for jl in 0..panels {
                    let bs = &packed_b[jl * kw * nr + p0 * nr..][..kcw * nr];
                    for (pi, as_) in packed_a.chunks_exact(kcw * mr).enumerate() {
                        let t = &mut tiles[(jl * apanels + pi) * tsize..][..tsize];
                        kern.tile(as_, bs, t, p0 > 0);
                    }
                }
            }
            // Each output element written once, from its f32 sum over the whole k.
            for jl in 0..panels {
                let j0 = jl * nr;
                let cols = nr.min(n - j0);
                for pi in 0..apanels {
                    let i0 = pi * mr;
                    let t = &tiles[(jl * apanels + pi) * tsize..][..tsize];
                    for (r, trow) in t.chunks_exact(nr).take(rows - i0).enumerate() {
                        O::store_row(&mut cb[(i0 + r) * n + j0..][..cols], trow);
                    }
                }
            }
        });
    });
}

/// How many rows of `C` one task takes: its packed `A` block near `A_BLOCK_BYTES`, a
/// multiple of `MR`, and the blocks spread evenly over `threads`.
fn rows_per_task<K: Kernel>(m: usize, kw: usize, threads: usize) -> usize {
    let row_bytes = 4 * K::KC.min(kw).max(1);
    let fit = (K::A_BLOCK_BYTES / row_bytes / K::MR * K::MR).clamp(K::MR, K::MAX_MC);
    let tasks = m.div_ceil(fit).next_multiple_of(threads.max(1));
    m.div_ceil(tasks).next_multiple_of(K::MR)
}

/// 64 bytes, the unit of the packed buffers (a cache line, so aligned loads stay in one).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u32; 16]);

/// Which of a thread's buffers.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    B = 0,
    A = 1,
    Tiles = 2,
}

/// Buffers larger than this are freed after use rather than kept for the next product.
const KEEP_BYTES: usize = 32 << 20;

thread_local! {
    static SCRATCH: [Cell<Vec<Line>>; 3] =
        const { [Cell::new(Vec::new()), Cell::new(Vec::new()), Cell::new(Vec::new())] };
}

/// Runs `f` on `len` words of this thread's `slot` buffer (contents unspecified: the
/// packers write every word, the first `k` block every tile). A nested use of the same slot on this thread (a stolen task
/// while waiting) finds it taken and gets a fresh buffer, so nothing is shared.
pub(super) fn with_scratch<W: Word, R>(slot: Slot, len: usize, f: impl FnOnce(&mut [W]) -> R) -> R {
    let lines_needed = len.div_ceil(16);
    let mut lines = SCRATCH.with(|s| s[slot as usize].take());
    if lines.len() < lines_needed {
        lines = vec![Line([0; 16]); lines_needed];
    }
    // SAFETY: `lines` holds at least `len` 4-byte words (16 per line), initialised; `W` is
    // 4 bytes, alignment ≤ 64, and valid for every bit pattern (`Word`'s contract); the
    // slice borrows `lines` mutably and exclusively for the call.
    let words = unsafe { std::slice::from_raw_parts_mut(lines.as_mut_ptr().cast::<W>(), len) };
    let r = f(words);
    if lines.len() * 64 <= KEEP_BYTES {
        SCRATCH.with(|s| s[slot as usize].set(lines));
    }
    r
}

/// Marks a kernel type as generic over an element without holding one.
pub(super) type Of<T> = PhantomData<fn() -> T>;
