//! Matrix products on AVX2 + FMA (+ F16C) in `f32` arithmetic: `f16` and `bf16` inputs are
//! widened to `f32` while they are packed (a panel at a time, in cache; `bf16` by a shift,
//! `f16` by `VCVTPH2PS`), `f32` inputs copied, then multiplied by an `f32` FMA microkernel,
//! summed in `f32` over the whole `k` and written once per output element (the half types
//! rounded once, as PyTorch does). Every x86-64 CPU of the last decade has these
//! instructions; AVX512-BF16 CPUs take [`super::avx512bf16`] for `bf16`, and CPUs with
//! AVX-512 keep the `gemm` crate's 512-bit kernels for `f32` (see `super::packed_f32_gemm`).
//!
//! The microkernel keeps a `6 x 16` tile of `C` in 12 ymm accumulators: per `k` it loads two
//! ymm of `B`, broadcasts 6 values of `A` and issues 12 FMAs (96 multiply-adds), enough
//! independent sums to cover the FMA latency on both FMA ports. Blocking and threads:
//! [`super::packed`].

use super::packed::{Kernel, Of};
use super::Mat;
use crate::half::{bf16, f16};
use std::arch::x86_64::{
    __m128i, __m256, _mm256_add_ps, _mm256_broadcast_ss, _mm256_castsi256_ps,
    _mm256_cvtepu16_epi32, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_permute2f128_ps, _mm256_setzero_ps, _mm256_shuffle_ps, _mm256_slli_epi32,
    _mm256_storeu_ps, _mm256_unpackhi_ps, _mm256_unpacklo_ps, _mm_loadu_si128,
};
use std::marker::PhantomData;
use std::sync::OnceLock;

const MR: usize = 6;
const NR: usize = 16;

/// How a [`Source`] becomes `f32` in a vector register.
#[derive(PartialEq, Eq)]
pub(super) enum Widening {
    /// Already `f32`: loaded as it is.
    None,
    /// `bf16`: the high half of an `f32`, so a shift.
    Shift,
    /// `f16`: `VCVTPH2PS`.
    Convert,
}

/// An input type of this kernel: `f32`, or a half type widened while packing.
pub(super) trait Source: Copy + Send + Sync + 'static {
    const WIDENING: Widening;
    /// The exact `f32` value.
    fn widen(self) -> f32;
}

impl Source for f32 {
    const WIDENING: Widening = Widening::None;
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }
}

impl Source for bf16 {
    const WIDENING: Widening = Widening::Shift;
    #[inline(always)]
    fn widen(self) -> f32 {
        f32::from_bits(u32::from(self.to_bits()) << 16)
    }
}

impl Source for f16 {
    const WIDENING: Widening = Widening::Convert;
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }
}

/// Proof that the running CPU has AVX2, FMA and F16C, for products of `H`: only
/// [`Fma::detect`] makes one, so holding it lets the `target_feature` code run.
pub(super) struct Fma<H>(Of<H>);

impl<H> Clone for Fma<H> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<H> Copy for Fma<H> {}

impl<H: Source> Fma<H> {
    /// The token when the CPU has the instructions; detected once.
    pub(super) fn detect() -> Option<Fma<H>> {
        static OK: OnceLock<bool> = OnceLock::new();
        let ok = *OK.get_or_init(|| {
            is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
        });
        ok.then_some(Fma(PhantomData))
    }
}

impl<H: Source> Kernel for Fma<H> {
    type In = H;
    type Word = f32;
    const MR: usize = MR;
    const NR: usize = NR;
    const K_PER_WORD: usize = 1;
    // A block of a `B` panel: 256 x 16 f32, 16 KiB of L1; the task's block of `A`, up to
    // 126 x 256 f32 (126 KiB), in L2 beside the `B` panels streaming through.
    const KC: usize = 256;
    const A_BLOCK_BYTES: usize = 1 << 17;
    const MAX_MC: usize = 24 * MR;

    fn pack_b_panel(self, b: Mat<'_, H>, k: usize, n: usize, pj: usize, dst: &mut [f32]) {
        let j0 = pj * NR;
        let cols = NR.min(n - j0);
        if cols < NR {
            // The last panel: its padding columns are not written below.
            dst.fill(0.0);
        }
        if b.cs == 1 {
            // Rows of `b` are contiguous: one row of the panel per `k`.
            for (l, row) in dst.chunks_exact_mut(NR).enumerate() {
                let src = &b.data[b.offset + l * b.rs + j0..][..cols];
                // SAFETY: `self` proves AVX2/FMA/F16C.
                unsafe { widen_row(self, src, &mut row[..cols]) };
            }
            return;
        }
        if b.rs == 1 {
            // Columns of `b` are contiguous (a transposed weight, as in `linear`'s `x @ Wᵀ`):
            // widen a column, then spread it down the panel.
            let mut col = vec![0f32; k];
            for c in 0..cols {
                let src = &b.data[b.offset + (j0 + c) * b.cs..][..k];
                // SAFETY: as above.
                unsafe { widen_row(self, src, &mut col) };
                for (row, &v) in dst.chunks_exact_mut(NR).zip(&col) {
                    row[c] = v;
                }
            }
            return;
        }
        for (l, row) in dst.chunks_exact_mut(NR).enumerate() {
            for (c, w) in row[..cols].iter_mut().enumerate() {
                *w = b.get(l, j0 + c).widen();
            }
        }
    }

    fn pack_a_block(self, a: Mat<'_, H>, k: usize, r0: usize, rows: usize, dst: &mut [f32]) {
        if a.rs == 1 && a.cs != 1 {
            // Columns of `a` contiguous (a weight gradient's `gradᵀ @ x`): each column's run
            // of the block's rows is read once, in order, and spread over the micro-panels.
            // SAFETY: `self` proves AVX2/FMA/F16C; `a` is bounds-checked by the caller.
            unsafe { pack_a_columns(self, a, r0, rows, k, dst) };
            return;
        }
        for (pi, panel) in dst.chunks_exact_mut(k * MR).enumerate() {
            let i0 = r0 + pi * MR;
            let valid = MR.min(r0 + rows - i0);
            if a.cs == 1 {
                // Rows of `a` contiguous (`x @ Wᵀ`, `grad @ W`): 8 values of `k` from each
                // row, transposed in registers.
                let row = |r: usize| &a.data[a.offset + (i0 + r) * a.rs..][..k];
                let rows: [&[H]; MR] =
                    std::array::from_fn(|r| if r < valid { row(r) } else { &[] });
                // SAFETY: `self` proves AVX2/FMA/F16C; `rows[..valid]` hold `k` values each.
                unsafe { pack_a_rows(self, &rows[..valid], k, panel) };
            } else {
                for (l, words) in panel.chunks_exact_mut(MR).enumerate() {
                    for (r, w) in words.iter_mut().enumerate() {
                        *w = if r < valid {
                            a.get(i0 + r, l).widen()
                        } else {
                            0.0
                        };
                    }
                }
            }
        }
    }

    fn tile(self, a: &[f32], b: &[f32], tile: &mut [f32], accumulate: bool) {
        let kc = a.len() / MR;
        assert!(b.len() >= kc * NR && tile.len() == MR * NR);
        // SAFETY: `self` proves AVX2 and FMA; `a` holds `kc * MR` values, `b` at least
        // `kc * NR` and `tile` `MR * NR` (asserted).
        unsafe {
            microkernel(
                kc,
                a.as_ptr(),
                b.as_ptr(),
                NR,
                tile.as_mut_ptr(),
                NR,
                accumulate,
            )
        }
    }
}

impl Fma<f32> {
    /// `c = a @ b` for one `6 x 16` tile whose `b` rows and `c` rows lie `ldb` and `ldc`
    /// words apart (Winograd's transformed tiles, [`super::winograd`], multiplied where they
    /// were written instead of packed again): `a` is `kc` groups of 6, `b` row `l` is
    /// `b[l * ldb ..][..16]`, `c` row `r` is `c[r * ldc ..][..16]`.
    pub(super) fn tile_strided(self, a: &[f32], b: &[f32], ldb: usize, c: &mut [f32], ldc: usize) {
        let kc = a.len() / MR;
        assert!(kc > 0 && b.len() >= (kc - 1) * ldb + NR && c.len() >= (MR - 1) * ldc + NR);
        // SAFETY: `self` proves AVX2 and FMA; the reads of `a` and `b` and the writes of `c`
        // stay inside the slices (asserted).
        unsafe { microkernel(kc, a.as_ptr(), b.as_ptr(), ldb, c.as_mut_ptr(), ldc, false) }
    }

    /// One micro-panel of `A` from up to 6 rows of `k` values each (missing rows pack as
    /// zeros): `panel[l * 6 + r] = rows[r][l]`, `panel` holding `6 * k`.
    pub(super) fn pack_rows(self, rows: &[&[f32]], k: usize, panel: &mut [f32]) {
        // SAFETY: `self` proves AVX2/FMA/F16C; `pack_a_rows` checks the lengths.
        unsafe { pack_a_rows(self, rows, k, panel) }
    }

    /// One panel of `B` from up to 16 rows of `k` values each, each row becoming a column
    /// (missing ones zeros): `panel[l * 16 + j] = cols[j][l]`, `panel` holding `16 * k`.
    pub(super) fn pack_columns(self, cols: &[&[f32]], k: usize, panel: &mut [f32]) {
        // SAFETY: `self` proves AVX2/FMA/F16C; `interleave` checks the lengths.
        unsafe { interleave::<f32, NR>(self, cols, k, panel) }
    }

    /// `c (+)= a @ b` for one `6 x 16` tile at `c`, its rows `ldc` words apart: `a` is `kc`
    /// groups of 6, `b` `kc` rows of 16 (a packed panel).
    ///
    /// # Safety
    /// `c + r * ldc` must be valid for reading and writing 16 `f32` for each `r < 6`, and
    /// nothing else may access those elements during the call.
    pub(super) unsafe fn tile_at(
        self,
        a: &[f32],
        b: &[f32],
        c: *mut f32,
        ldc: usize,
        accumulate: bool,
    ) {
        let kc = a.len() / MR;
        assert!(b.len() >= kc * NR);
        // SAFETY: `self` proves AVX2 and FMA; `a` and `b` hold what the kernel reads
        // (asserted), and `c` is the caller's contract.
        unsafe { microkernel(kc, a.as_ptr(), b.as_ptr(), NR, c, ldc, accumulate) }
    }
}

/// Eight `H` at `p` as eight `f32`.
///
/// # Safety
/// The CPU must have AVX2 and F16C; `p` must be valid for reading 8 `H`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load8<H: Source>(p: *const H) -> __m256 {
    if H::WIDENING == Widening::None {
        // SAFETY: 8 readable f32 (32 bytes) at `p` (the caller's contract); unaligned load.
        return unsafe { _mm256_loadu_ps(p.cast::<f32>()) };
    }
    // SAFETY: 8 readable 2-byte values (16 bytes) at `p`; unaligned load.
    let v = unsafe { _mm_loadu_si128(p.cast::<__m128i>()) };
    if H::WIDENING == Widening::Convert {
        _mm256_cvtph_ps(v)
    } else {
        // bf16 is the high half of an f32: zero-extend each to 32 bits, shift up.
        _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(v)))
    }
}

/// `dst = src` widened to `f32`, for the shorter of the two.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn widen_row<H: Source>(_isa: Fma<H>, src: &[H], dst: &mut [f32]) {
    let len = src.len().min(dst.len());
    let body = len / 8 * 8;
    for (s, d) in src[..body]
        .chunks_exact(8)
        .zip(dst[..body].chunks_exact_mut(8))
    {
        // SAFETY: `s` is 8 `H`, `d` 8 `f32` (32 bytes); the CPU has the features.
        unsafe { _mm256_storeu_ps(d.as_mut_ptr(), load8(s.as_ptr())) };
    }
    for (o, x) in dst[body..len].iter_mut().zip(&src[body..len]) {
        *o = x.widen();
    }
}

/// One micro-panel of `A` from up to `MR` contiguous rows (`rows[r]` holds row `r`'s `k`
/// values; missing rows pack as zeros): `panel[l * MR + r] = rows[r][l]`.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn pack_a_rows<H: Source>(isa: Fma<H>, rows: &[&[H]], k: usize, panel: &mut [f32]) {
    // SAFETY: the caller's contract.
    unsafe { interleave::<H, MR>(isa, rows, k, panel) }
}

/// `panel[l * W + r] = rows[r][l]` for `l < k`, `r < W` (zeros for missing rows): 8 values
/// of `k` from each of 8 rows at a time, transposed in registers.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn interleave<H: Source, const W: usize>(
    _isa: Fma<H>,
    rows: &[&[H]],
    k: usize,
    panel: &mut [f32],
) {
    assert!(rows.len() <= W && rows.iter().all(|r| r.len() >= k) && panel.len() == k * W);
    let body = k / 8 * 8;
    for g in (0..body).step_by(8) {
        for h in (0..W).step_by(8) {
            let mut v = [_mm256_setzero_ps(); 8];
            for (v, row) in v.iter_mut().zip(rows.iter().skip(h)) {
                // SAFETY: `g + 8 <= k <= row.len()`.
                *v = unsafe { load8(row.as_ptr().add(g)) };
            }
            // Column `l` of the 8 x 8 block: value `l` of rows `h ..` (zeros past the rows).
            for (l, col) in transpose8(v).into_iter().enumerate() {
                let at = (g + l) * W + h;
                if at + 8 <= panel.len() {
                    // SAFETY: 8 f32 at `at` lie in `panel`; for `W < h + 8` the ones past
                    // `W` are rewritten by the next column (or group, or the tail below).
                    unsafe { _mm256_storeu_ps(panel.as_mut_ptr().add(at), col) };
                } else {
                    let mut t = [0f32; 8];
                    // SAFETY: `t` holds 8 f32.
                    unsafe { _mm256_storeu_ps(t.as_mut_ptr(), col) };
                    let n = (W - h).min(8);
                    panel[at..at + n].copy_from_slice(&t[..n]);
                }
            }
        }
    }
    for l in body..k {
        for r in 0..W {
            panel[l * W + r] = rows.get(r).map_or(0.0, |row| row[l].widen());
        }
    }
}

/// The transpose of an 8 x 8 block of `f32` held as 8 rows.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
    let t0 = _mm256_unpacklo_ps(r[0], r[1]);
    let t1 = _mm256_unpackhi_ps(r[0], r[1]);
    let t2 = _mm256_unpacklo_ps(r[2], r[3]);
    let t3 = _mm256_unpackhi_ps(r[2], r[3]);
    let t4 = _mm256_unpacklo_ps(r[4], r[5]);
    let t5 = _mm256_unpackhi_ps(r[4], r[5]);
    let t6 = _mm256_unpacklo_ps(r[6], r[7]);
    let t7 = _mm256_unpackhi_ps(r[6], r[7]);
    let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
    let s1 = _mm256_shuffle_ps::<0xee>(t0, t2);
    let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
    let s3 = _mm256_shuffle_ps::<0xee>(t1, t3);
    let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
    let s5 = _mm256_shuffle_ps::<0xee>(t4, t6);
    let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
    let s7 = _mm256_shuffle_ps::<0xee>(t5, t7);
    [
        _mm256_permute2f128_ps::<0x20>(s0, s4),
        _mm256_permute2f128_ps::<0x20>(s1, s5),
        _mm256_permute2f128_ps::<0x20>(s2, s6),
        _mm256_permute2f128_ps::<0x20>(s3, s7),
        _mm256_permute2f128_ps::<0x31>(s0, s4),
        _mm256_permute2f128_ps::<0x31>(s1, s5),
        _mm256_permute2f128_ps::<0x31>(s2, s6),
        _mm256_permute2f128_ps::<0x31>(s3, s7),
    ]
}

/// The micro-panels of `A` for rows `r0 .. r0 + rows` of an `a` whose columns are
/// contiguous (`a.rs == 1`): `dst[p * k * MR + l * MR + r] = a[r0 + p * MR + r][l]`, rows
/// past the block zero.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `a` bounds-checked for the rows and `k` columns.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn pack_a_columns<H: Source>(
    _isa: Fma<H>,
    a: Mat<'_, H>,
    r0: usize,
    rows: usize,
    k: usize,
    dst: &mut [f32],
) {
    // Columns per pass: the pass reads `LB` column runs (in L1 after the first panel) and
    // writes `LB * MR` consecutive values of each panel. Going column by column over all
    // panels instead would write to panels a multiple of 4 KiB apart, all in one L1 set.
    const LB: usize = 64;
    let panel_len = k * MR;
    assert_eq!(dst.len(), rows.div_ceil(MR) * panel_len);
    for lb in (0..k).step_by(LB) {
        for (pi, panel) in dst.chunks_exact_mut(panel_len).enumerate() {
            let i = pi * MR;
            let valid = MR.min(rows - i);
            for l in lb..k.min(lb + LB) {
                let col = &a.data[a.offset + l * a.cs + r0 + i..];
                let at = l * MR;
                if valid == MR && l + 1 < k && col.len() >= 8 {
                    // SAFETY: 8 values readable at `col` (2 past the panel's rows, inside
                    // `a.data`); 8 f32 at `at` in `panel` (`l + 1 < k`), the 2 past `MR`
                    // rewritten by column `l + 1`.
                    unsafe { _mm256_storeu_ps(panel.as_mut_ptr().add(at), load8(col.as_ptr())) };
                } else {
                    for r in 0..MR {
                        panel[at + r] = if r < valid { col[r].widen() } else { 0.0 };
                    }
                }
            }
        }
    }
}

/// One `6 x 16` tile over `kc` values of `k`: `tile (+)= a @ b`, `a` being `kc` groups of 6
/// values (one per row), `b` `kc` rows of 16, `ldb` words apart, and the tile's rows `ldt`
/// words apart.
///
/// # Safety
/// The CPU must have AVX2 and FMA; `a` must be valid for reading `kc * 6` `f32`, `b` for
/// 16 at each of `b + l * ldb` (`l < kc`), `tile` for reading and writing 16 at each of
/// `tile + r * ldt` (`r < 6`).
#[target_feature(enable = "avx2,fma")]
unsafe fn microkernel(
    kc: usize,
    a: *const f32,
    b: *const f32,
    ldb: usize,
    tile: *mut f32,
    ldt: usize,
    accumulate: bool,
) {
    // The sums start from zero and the tile is read only at the end, so the first FMAs
    // do not wait on the tile's loads (it may be out of L1).
    let mut acc = [[_mm256_setzero_ps(); 2]; MR];
    for l in 0..kc {
        // SAFETY: `l < kc`, so row `l` of `b` (16 f32 at `b + l * ldb`) and group `l` of `a` (6 f32) lie
        // inside what the caller made readable.
        unsafe {
            let bp = b.add(l * ldb);
            let (b0, b1) = (_mm256_loadu_ps(bp), _mm256_loadu_ps(bp.add(8)));
            let ap = a.add(l * MR);
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = _mm256_broadcast_ss(&*ap.add(r));
                acc[0] = _mm256_fmadd_ps(x, b0, acc[0]);
                acc[1] = _mm256_fmadd_ps(x, b1, acc[1]);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row `r` of the tile is 16 f32 at `tile + r * ldt` (the caller's contract).
        unsafe {
            let (p0, p1) = (tile.add(r * ldt), tile.add(r * ldt + 8));
            if accumulate {
                _mm256_storeu_ps(p0, _mm256_add_ps(acc[0], _mm256_loadu_ps(p0)));
                _mm256_storeu_ps(p1, _mm256_add_ps(acc[1], _mm256_loadu_ps(p1)));
            } else {
                _mm256_storeu_ps(p0, acc[0]);
                _mm256_storeu_ps(p1, acc[1]);
            }
        }
    }
}
