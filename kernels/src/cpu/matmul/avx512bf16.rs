//! `bf16` matrix product on AVX512-BF16: `VDPBF16PS` multiplies pairs of `bf16` and adds
//! both products into one `f32` lane, so the product is accumulated in `f32` and rounded to
//! `bf16` once per output element (round-to-nearest-even), as PyTorch does.
//!
//! Layout. `VDPBF16PS zmm_acc, zmm_a, zmm_b` adds `a[2i] * b[2i] + a[2i+1] * b[2i+1]` into
//! lane `i`. A lane here is one output column, so
//! - `B` is packed into panels of [`NR`] columns: for each pair of rows `(2p, 2p + 1)` the
//!   32-bit words `b[2p][j] | b[2p+1][j] << 16`, for the panel's `NR` columns in order, i.e.
//!   two zmm loads per pair of `k`;
//! - `A` is packed into micro-panels of [`MR`] rows: for each pair the words
//!   `a[i][2p] | a[i][2p+1] << 16` of the panel's `MR` rows, each broadcast to all lanes.
//!
//! An odd `k` pads the last pair with a zero; rows past `m` and columns past `n` are zero
//! padding too, so the microkernel always computes a full `MR x NR` tile and only the valid
//! part is written back. Packing reads the inputs through their strides (transposed,
//! sliced, stride-0 views are packed in place; there is no separate contiguous copy).
//!
//! The microkernel keeps a `12 x 32` tile of `C` in 24 zmm accumulators: per pair of `k` it
//! loads two zmm of `B`, broadcasts 12 words of `A` and issues 24 `VDPBF16PS` (768
//! multiply-adds). Blocking and threads: [`super::packed`].
//!
//! `VDPBF16PS` treats `bf16` subnormal inputs as zero and flushes subnormal `f32` sums (as
//! oneDNN's kernels that PyTorch calls on such CPUs do).

use super::packed::Kernel;
use super::Mat;
use crate::half::bf16;
use std::arch::x86_64::{
    __m512bh, __m512i, _mm512_dpbf16_ps, _mm512_loadu_ps, _mm512_loadu_si512,
    _mm512_permutex2var_epi16, _mm512_set1_epi32, _mm512_setzero_ps, _mm512_storeu_ps,
    _mm512_storeu_si512,
};
use std::sync::OnceLock;

const MR: usize = 12;
const NR: usize = 32;

/// Proof that the running CPU has AVX-512F and AVX512-BF16: only [`Avx512Bf16::detect`]
/// makes one, so holding it lets the `target_feature` microkernel run.
#[derive(Clone, Copy, Debug)]
pub(super) struct Avx512Bf16(());

impl Avx512Bf16 {
    /// The token when the CPU supports the kernel and `KILN_DISABLE_AVX512_BF16` is unset
    /// (or `0`); detected once. Setting the variable forces the portable path (widening to
    /// `f32`), e.g. to compare or to test it on a machine that has the instructions.
    pub(super) fn detect() -> Option<Avx512Bf16> {
        static OK: OnceLock<bool> = OnceLock::new();
        let ok = *OK.get_or_init(|| {
            let disabled =
                std::env::var("KILN_DISABLE_AVX512_BF16").is_ok_and(|v| !v.is_empty() && v != "0");
            !disabled && Self::cpu_has()
        });
        ok.then_some(Avx512Bf16(()))
    }

    /// Whether the CPU has the instructions, whatever the environment says (AVX512-BW for
    /// the packing's 16-bit shuffles: every CPU with AVX512-BF16 has it).
    pub(super) fn cpu_has() -> bool {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512bf16")
    }

    /// The token, ignoring `KILN_DISABLE_AVX512_BF16` (tests use it to run both paths).
    #[cfg(test)]
    pub(super) fn detect_ignoring_env() -> Option<Avx512Bf16> {
        Self::cpu_has().then_some(Avx512Bf16(()))
    }
}

impl Kernel for Avx512Bf16 {
    type In = bf16;
    type Word = u32;
    const MR: usize = MR;
    const NR: usize = NR;
    const K_PER_WORD: usize = 2;
    // A block of a `B` panel: 128 pairs x 32 words, 16 KiB.
    const KC: usize = 128;
    const A_BLOCK_BYTES: usize = 1 << 18;
    const MAX_MC: usize = 16 * MR;

    fn pack_b_panel(self, b: Mat<'_, bf16>, k: usize, n: usize, pj: usize, dst: &mut [u32]) {
        pack_b_panel(self, b, k, n, pj, dst);
    }

    fn pack_a_block(self, a: Mat<'_, bf16>, k: usize, r0: usize, rows: usize, dst: &mut [u32]) {
        pack_a_block(a, k, r0, rows, dst);
    }

    fn tile(self, a: &[u32], b: &[u32], tile: &mut [f32], accumulate: bool) {
        // SAFETY: `self` proves the CPU has AVX-512F and AVX512-BF16.
        unsafe { microkernel(a, b, tile, accumulate) }
    }
}

/// Two `bf16` as one 32-bit word: `lo` in the low half, as `VDPBF16PS` pairs them.
#[inline(always)]
fn pair(lo: bf16, hi: bf16) -> u32 {
    u32::from(lo.to_bits()) | (u32::from(hi.to_bits()) << 16)
}

/// Packs panel `pj` of `b` (`k x n`): `kp` pairs of rows, each `NR` words (columns past `n`
/// and the row past an odd `k` zero). `dst` is `kp * NR` words.
pub(super) fn pack_b_panel(
    isa: Avx512Bf16,
    b: Mat<'_, bf16>,
    k: usize,
    n: usize,
    pj: usize,
    dst: &mut [u32],
) {
    let j0 = pj * NR;
    let cols = NR.min(n - j0);
    let zero = bf16::ZERO;
    if cols < NR {
        // The last panel: its padding columns are not written below.
        dst.fill(0);
    }
    if b.cs == 1 {
        // Rows of `b` are contiguous: zip two row slices.
        let row_of = |l: usize| &b.data[b.offset + l * b.rs + j0..][..cols];
        for (p, row) in dst.chunks_exact_mut(NR).enumerate() {
            let (l0, l1) = (2 * p, 2 * p + 1);
            let r0 = row_of(l0);
            if l1 < k && cols == NR {
                // SAFETY: `isa` proves AVX-512F/BW; both rows and `row` are NR long.
                unsafe { interleave(isa, r0, row_of(l1), row) };
            } else if l1 < k {
                let r1 = row_of(l1);
                for ((w, &x), &y) in row.iter_mut().zip(r0).zip(r1) {
                    *w = pair(x, y);
                }
            } else {
                for (w, &x) in row.iter_mut().zip(r0) {
                    *w = pair(x, zero);
                }
            }
        }
        return;
    }
    if b.rs == 1 {
        // Columns of `b` are contiguous (a transposed weight, as in `linear`'s `x @ Wᵀ`):
        // each column's pairs are adjacent, so walk each column once.
        for c in 0..cols {
            let column = &b.data[b.offset + (j0 + c) * b.cs..][..k];
            let (pairs, rest) = column.as_chunks::<2>();
            for (p, &[x, y]) in pairs.iter().enumerate() {
                dst[p * NR + c] = pair(x, y);
            }
            if let [x] = rest {
                dst[pairs.len() * NR + c] = pair(*x, zero);
            }
        }
        return;
    }
    for (p, row) in dst.chunks_exact_mut(NR).enumerate() {
        let (l0, l1) = (2 * p, 2 * p + 1);
        for (c, w) in row[..cols].iter_mut().enumerate() {
            let hi = if l1 < k { b.get(l1, j0 + c) } else { zero };
            *w = pair(b.get(l0, j0 + c), hi);
        }
    }
}

/// `dst[j] = pair(lo[j], hi[j])` for the NR = 32 columns of a panel: two 16-bit shuffles
/// across the two rows instead of 32 scalar pairs.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW; `lo`, `hi` and `dst` hold NR elements.
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn interleave(_isa: Avx512Bf16, lo: &[bf16], hi: &[bf16], dst: &mut [u32]) {
    // Word j takes `lo[j]` in its low half and `hi[j]` in its high half: in 16-bit lanes,
    // lo0 hi0 lo1 hi1 …, lanes 32.. of the index naming the second operand.
    const FIRST: [u16; 32] = {
        let mut t = [0u16; 32];
        let mut i = 0;
        while i < 16 {
            t[2 * i] = i as u16;
            t[2 * i + 1] = 32 + i as u16;
            i += 1;
        }
        t
    };
    const SECOND: [u16; 32] = {
        let mut t = [0u16; 32];
        let mut i = 0;
        while i < 16 {
            t[2 * i] = 16 + i as u16;
            t[2 * i + 1] = 48 + i as u16;
            i += 1;
        }
        t
    };
    assert!(lo.len() >= NR && hi.len() >= NR && dst.len() >= NR);
    // SAFETY: each load reads 64 bytes = 32 bf16 of `lo`/`hi` (NR = 32, asserted), each
    // store writes 64 bytes = 16 words of `dst` (32 asserted); unaligned forms throughout.
    unsafe {
        let a = _mm512_loadu_si512(lo.as_ptr().cast());
        let b = _mm512_loadu_si512(hi.as_ptr().cast());
        let i0 = _mm512_loadu_si512(FIRST.as_ptr().cast());
        let i1 = _mm512_loadu_si512(SECOND.as_ptr().cast());
        _mm512_storeu_si512(dst.as_mut_ptr().cast(), _mm512_permutex2var_epi16(a, i0, b));
        _mm512_storeu_si512(
            dst.as_mut_ptr().add(16).cast(),
            _mm512_permutex2var_epi16(a, i1, b),
        );
    }
}

/// Packs rows `r0 .. r0 + rows` of `a` (`m x k`) into `rows.div_ceil(MR)` micro-panels of
/// `kp * MR` words each (rows past the block and the column past an odd `k` zero).
fn pack_a_block(a: Mat<'_, bf16>, k: usize, r0: usize, rows: usize, dst: &mut [u32]) {
    let kp = k.div_ceil(2);
    let zero = bf16::ZERO;
    for (pi, panel) in dst.chunks_exact_mut(kp * MR).enumerate() {
        let i0 = r0 + pi * MR;
        let valid = MR.min(r0 + rows - i0);
        if valid < MR {
            // The last micro-panel: its padding rows are not written below.
            panel.fill(0);
        }
        if a.cs == 1 {
            // Rows of `a` are contiguous: walk each row's pairs once.
            for r in 0..valid {
                let row = &a.data[a.offset + (i0 + r) * a.rs..][..k];
                let (pairs, rest) = row.as_chunks::<2>();
                for (words, &[x, y]) in panel.chunks_exact_mut(MR).zip(pairs) {
                    words[r] = pair(x, y);
                }
                if let [x] = rest {
                    panel[pairs.len() * MR + r] = pair(*x, zero);
                }
            }
            continue;
        }
        if a.rs == 1 {
            // Columns of `a` are contiguous (a transposed operand, as in a weight
            // gradient's `xᵀ @ grad`): interleave two column slices per pair.
            let col = |l: usize| &a.data[a.offset + l * a.cs + i0..][..valid];
            for (p, words) in panel.chunks_exact_mut(MR).enumerate() {
                let (l0, l1) = (2 * p, 2 * p + 1);
                let lo = col(l0);
                if l1 < k {
                    let hi = col(l1);
                    for ((w, &x), &y) in words.iter_mut().zip(lo).zip(hi) {
                        *w = pair(x, y);
                    }
                } else {
                    for (w, &x) in words.iter_mut().zip(lo) {
                        *w = pair(x, zero);
                    }
                }
            }
            continue;
        }
        for (p, words) in panel.chunks_exact_mut(MR).enumerate() {
            let (l0, l1) = (2 * p, 2 * p + 1);
            for (r, w) in words[..valid].iter_mut().enumerate() {
                let hi = if l1 < k { a.get(i0 + r, l1) } else { zero };
                *w = pair(a.get(i0 + r, l0), hi);
            }
        }
    }
}

/// One `MR x NR` tile: `tile = A_panel @ B_panel` (or `tile += ...` when `accumulate`) over
/// `a.len() / MR` pairs of `k`, in `f32`. `a` is a block of a packed micro-panel of `A`
/// (`MR` words per pair), `b` the same pairs of a packed panel of `B` (`NR` words per pair).
///
/// # Safety
/// The CPU must support AVX-512F and AVX512-BF16 (an [`Avx512Bf16`] token proves it).
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn microkernel(a: &[u32], b: &[u32], tile: &mut [f32], accumulate: bool) {
    assert_eq!(a.len() / MR, b.len() / NR);
    assert_eq!(tile.len(), MR * NR);
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    if accumulate {
        for (row, acc) in tile.chunks_exact(NR).zip(&mut acc) {
            // SAFETY: `row` is NR = 32 f32, so the loads at elements 0 and 16 (64 bytes
            // each) lie inside it.
            unsafe {
                acc[0] = _mm512_loadu_ps(row.as_ptr());
                acc[1] = _mm512_loadu_ps(row.as_ptr().add(16));
            }
        }
    }
    for (ap, bp) in a.chunks_exact(MR).zip(b.chunks_exact(NR)) {
        // SAFETY: `bp` is NR = 32 words (128 bytes), so both unaligned 64-byte loads, at
        // words 0 and 16, lie inside it; AVX-512F is enabled on this function.
        let (b0, b1) = unsafe {
            (
                _mm512_loadu_si512(bp.as_ptr().cast::<__m512i>()),
                _mm512_loadu_si512(bp.as_ptr().add(16).cast::<__m512i>()),
            )
        };
        let (b0, b1) = (as_bh(b0), as_bh(b1));
        for (r, acc) in acc.iter_mut().enumerate() {
            let av = as_bh(_mm512_set1_epi32(ap[r] as i32));
            acc[0] = _mm512_dpbf16_ps(acc[0], av, b0);
            acc[1] = _mm512_dpbf16_ps(acc[1], av, b1);
        }
    }
    for (row, acc) in tile.chunks_exact_mut(NR).zip(&acc) {
        // SAFETY: `row` is NR = 32 f32, so the stores at elements 0 and 16 (64 bytes each)
        // lie inside it.
        unsafe {
            _mm512_storeu_ps(row.as_mut_ptr(), acc[0]);
            _mm512_storeu_ps(row.as_mut_ptr().add(16), acc[1]);
        }
    }
}

/// The same 512 bits read as 32 `bf16`.
#[inline(always)]
fn as_bh(v: __m512i) -> __m512bh {
    // SAFETY: both are plain 64-byte vectors with no invalid bit patterns.
    unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
}
