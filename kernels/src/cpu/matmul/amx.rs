//! `bf16` matrix product on Intel AMX (Sapphire Rapids and later): `TDPBF16PS` multiplies a
//! 16 x 32 tile of `A` by a 32 x 16 tile of `B` (as 16 pairs of rows) into a 16 x 16 `f32`
//! tile of `C`, 16 x the work of one `VDPBF16PS`. Sums are `f32` over the whole `k` and
//! rounded to `bf16` once per output element by the driver ([`super::packed`]), as with
//! [`super::avx512bf16`], whose `B` packing this kernel shares.
//!
//! Tiles. The kernel's `32 x 32` block of `C` is four tile registers (`tmm0..3`); per step
//! of 16 pairs of `k` it loads two tiles of `A` (`tmm4`, `tmm5`: rows 0–15 and 16–31) and
//! two of `B` (`tmm6`, `tmm7`: columns 0–15 and 16–31) and issues four `TDPBF16PS`.
//! - `B` is packed as for AVX512-BF16: per pair of rows, 32 words `b[2p][j] | b[2p+1][j] <<
//!   16`. That is AMX's pair-interleaved ("VNNI") `B` layout already: a tile is 16 such rows
//!   of 16 words, read with a 128-byte stride (the panel's 32 words per pair).
//! - `A` is packed row by row: each of a micro-panel's 32 rows holds its `k` block's pairs
//!   in order, so a tile's row is 16 consecutive words (64 bytes) and the stride is the
//!   block's pairs.
//! - A `k` block whose pairs are not a multiple of 16 ends with a step whose tiles are
//!   copied, zero-padded, into local buffers (the tile shapes are fixed per configuration).
//!
//! The instructions are emitted by `asm!` (Rust's AMX intrinsics and target features are not
//! stable); only the tile registers, which the compiler never allocates, are touched besides
//! the named operands. Linux hands AMX's 8 KiB of tile state to a process only on request
//! (`arch_prctl(ARCH_REQ_XCOMP_PERM)`), made once by [`Amx::detect`]; the tile configuration
//! is checked, and loaded where it differs, before each block.
//!
//! `TDPBF16PS` treats `bf16` subnormal inputs as zero and flushes subnormal sums, as
//! `VDPBF16PS` does (and oneDNN's AMX kernels, which PyTorch calls on these CPUs).

use super::avx512bf16::{pack_b_panel, Avx512Bf16};
use super::packed::Kernel;
use super::Mat;
use crate::half::bf16;
use std::arch::asm;
use std::sync::OnceLock;

/// Rows of `C` per kernel block: two tiles of 16.
const MR: usize = 32;
/// Columns of `C` per kernel block: two tiles of 16.
const NR: usize = 32;
/// Pairs of `k` per tile step (a tile row of `A` is 64 bytes: 32 `bf16`).
const STEP: usize = 16;

/// Proof that the CPU has AMX-TILE and AMX-BF16, that Linux granted this process the tile
/// state, and (for the shared `B` packing) AVX512-BF16: only [`Amx::detect`] makes one.
#[derive(Clone, Copy, Debug)]
pub(super) struct Amx(Avx512Bf16);

impl Amx {
    /// The token when the CPU and the OS support the kernel and neither `KILN_DISABLE_AMX`
    /// nor `KILN_DISABLE_AVX512_BF16` is set (to anything but `0`); detected once. Setting
    /// the first selects the AVX512-BF16 kernel, e.g. to compare the two on one machine.
    pub(super) fn detect() -> Option<Amx> {
        static OK: OnceLock<bool> = OnceLock::new();
        let ok = *OK.get_or_init(|| {
            let disabled =
                std::env::var("KILN_DISABLE_AMX").is_ok_and(|v| !v.is_empty() && v != "0");
            !disabled && granted()
        });
        let isa = Avx512Bf16::detect()?;
        ok.then_some(Amx(isa))
    }

    /// The token whatever the environment says (tests run both bf16 kernels with it).
    #[cfg(test)]
    pub(super) fn detect_ignoring_env() -> Option<Amx> {
        let isa = Avx512Bf16::detect_ignoring_env()?;
        granted().then_some(Amx(isa))
    }
}

/// Whether the CPU has AMX-BF16 and Linux granted this process the tile state (asked once).
fn granted() -> bool {
    static GRANTED: OnceLock<bool> = OnceLock::new();
    *GRANTED.get_or_init(|| cpu_has_amx_bf16() && request_tile_state())
}

/// CPUID leaf 7: AMX-BF16 (EDX bit 22) and AMX-TILE (bit 24); and the OS enables the tile
/// configuration and data in XCR0 (bits 17 and 18), read only when CPUID says OSXSAVE.
fn cpu_has_amx_bf16() -> bool {
    use std::arch::x86_64::__cpuid_count;
    // SAFETY: CPUID is available on every x86-64 CPU; leaf 0 gives the highest leaf. (Newer
    // Rust declares it safe; the MSRV's needs the block.)
    #[allow(unused_unsafe)]
    let max_leaf = unsafe { __cpuid_count(0, 0) }.eax;
    if max_leaf < 7 {
        return false;
    }
    // SAFETY: leaves 1 and 7 exist (checked above).
    #[allow(unused_unsafe)]
    let (l1, l7) = unsafe { (__cpuid_count(1, 0), __cpuid_count(7, 0)) };
    let osxsave = l1.ecx & (1 << 27) != 0;
    let amx = l7.edx & (1 << 22) != 0 && l7.edx & (1 << 24) != 0;
    if !(osxsave && amx) {
        return false;
    }
    let (lo, _hi): (u32, u32);
    // SAFETY: XGETBV with ECX = 0 reads XCR0; CPUID.1:ECX.OSXSAVE (checked) says the OS
    // enabled it.
    unsafe {
        asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") _hi, options(nomem, nostack, preserves_flags));
    }
    lo & (0b11 << 17) == 0b11 << 17
}

/// Asks Linux for the AMX tile data state (`arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)`); without it the first tile instruction kills the process. Granted
/// per process, so once is enough. Other systems: no AMX.
fn request_tile_state() -> bool {
    #[cfg(target_os = "linux")]
    {
        const SYS_ARCH_PRCTL: usize = 158;
        const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
        const XFEATURE_XTILEDATA: usize = 18;
        let ret: isize;
        // SAFETY: a plain system call: it reads two integer arguments and clobbers RCX and
        // R11 (declared), touching no memory of ours.
        unsafe {
            asm!(
                "syscall",
                inlateout("rax") SYS_ARCH_PRCTL as isize => ret,
                in("rdi") ARCH_REQ_XCOMP_PERM,
                in("rsi") XFEATURE_XTILEDATA,
                lateout("rcx") _,
                lateout("r11") _,
                options(nostack),
            );
        }
        ret == 0
    }
    #[cfg(not(target_os = "linux"))]
    false
}

impl Kernel for Amx {
    type In = bf16;
    type Word = u32;
    const MR: usize = MR;
    const NR: usize = NR;
    const K_PER_WORD: usize = 2;
    // A block of a `B` panel: 256 pairs x 32 words, 32 KiB (L1 is 48 KiB on these CPUs).
    const KC: usize = 256;
    // A task's `A` block: up to 512 rows x 256 pairs, in a 2 MiB L2.
    const A_BLOCK_BYTES: usize = 1 << 19;
    const MAX_MC: usize = 16 * MR;

    fn pack_b_panel(self, b: Mat<'_, bf16>, k: usize, n: usize, pj: usize, dst: &mut [u32]) {
        pack_b_panel(self.0, b, k, n, pj, dst);
    }

    fn pack_a_block(self, a: Mat<'_, bf16>, k: usize, r0: usize, rows: usize, dst: &mut [u32]) {
        pack_a_block(a, k, r0, rows, dst);
    }

    fn tile(self, a: &[u32], b: &[u32], tile: &mut [f32], accumulate: bool) {
        tiles(a, b, tile, accumulate);
    }
}

/// Packs rows `r0 .. r0 + rows` of `a` (`m x k`) into `rows.div_ceil(MR)` micro-panels of
/// `MR` rows of `kp = k.div_ceil(2)` words each, row-major (rows past the block and the
/// value past an odd `k` zero).
fn pack_a_block(a: Mat<'_, bf16>, k: usize, r0: usize, rows: usize, dst: &mut [u32]) {
    let kp = k.div_ceil(2);
    let zero = bf16::ZERO;
    let pair = |lo: bf16, hi: bf16| u32::from(lo.to_bits()) | (u32::from(hi.to_bits()) << 16);
    for (pi, panel) in dst.chunks_exact_mut(kp * MR).enumerate() {
        let i0 = r0 + pi * MR;
        let valid = MR.min(r0 + rows - i0);
        panel[valid * kp..].fill(0);
        for (r, words) in panel.chunks_exact_mut(kp).take(valid).enumerate() {
            if a.cs == 1 {
                // A contiguous row: its bf16 pairs are the words, in order.
                let row = &a.data[a.offset + (i0 + r) * a.rs..][..k];
                let (pairs, rest) = row.as_chunks::<2>();
                for (w, &[x, y]) in words.iter_mut().zip(pairs) {
                    *w = pair(x, y);
                }
                if let [x] = rest {
                    words[pairs.len()] = pair(*x, zero);
                }
            } else {
                for (p, w) in words.iter_mut().enumerate() {
                    let (l0, l1) = (2 * p, 2 * p + 1);
                    let hi = if l1 < k { a.get(i0 + r, l1) } else { zero };
                    *w = pair(a.get(i0 + r, l0), hi);
                }
            }
        }
    }
}

/// The tile configuration: palette 1, all eight tiles 16 rows of 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

const CONFIG: TileConfig = {
    let mut c = [0u8; 64];
    c[0] = 1; // palette
    let mut t = 0;
    while t < 8 {
        c[16 + 2 * t] = 64; // bytes per row (u16, little-endian)
        c[48 + t] = 16; // rows
        t += 1;
    }
    TileConfig(c)
};

/// Loads [`CONFIG`] unless this thread's tiles already have it. Tile state is per thread
/// and any code in the process may configure it (another library's AMX kernels, with other
/// tile shapes): the loads and stores below read and write as many bytes as the current
/// configuration says, so it is checked before every use (`STTILECFG`, a 64-byte store, is
/// cheap beside a block's 64 tile products), not trusted from an earlier call.
fn configure() {
    let mut now = TileConfig([0xff; 64]);
    // SAFETY: the CPU has AMX and the process holds the tile state (the `Amx` token that
    // reached the caller proves both). STTILECFG writes the thread's 64-byte configuration
    // (zeros when there is none) to `now`, which is 64 bytes.
    unsafe { asm!("sttilecfg [{}]", in(reg) &mut now, options(nostack)) };
    if now.0 != CONFIG.0 {
        // SAFETY: as above; LDTILECFG reads the 64 bytes of CONFIG, a valid palette-1
        // configuration (reserved bytes zero).
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
    }
}

/// Loads another tile configuration on this thread (8 rows of 32 bytes per tile), as
/// another library's AMX kernels might, so a test can check that the next product
/// reconfigures rather than running with it.
#[cfg(test)]
pub(super) fn configure_as_another_library(_token: Amx) {
    let mut c = [0u8; 64];
    c[0] = 1;
    for t in 0..8 {
        c[16 + 2 * t] = 32;
        c[48 + t] = 8;
    }
    let other = TileConfig(c);
    // SAFETY: the token proves AMX and the tile state; LDTILECFG reads 64 bytes of a valid
    // palette-1 configuration.
    unsafe { asm!("ldtilecfg [{}]", in(reg) &other, options(nostack, readonly)) };
}

/// `tile = a @ b` (`tile += a @ b` when `accumulate`) for one micro-panel block `a` (`MR`
/// rows of `kp` words) and the same `kp` pairs of a panel `b` (`NR` words per pair); `tile`
/// is `MR x NR` `f32`, row-major. Only an [`Amx`] token's holder reaches here.
fn tiles(a: &[u32], b: &[u32], tile: &mut [f32], accumulate: bool) {
    let kp = a.len() / MR;
    assert!(a.len() == kp * MR && b.len() == kp * NR && tile.len() == MR * NR);
    configure();
    let c = tile.as_mut_ptr();
    let c_stride = NR * 4;
    // SAFETY: the tiles are configured (above). `c` is 32 x 32 f32 (asserted), so the four
    // 16 x 16 tiles at rows 0/16 and columns 0/16, 128 bytes apart per row, lie inside it.
    unsafe {
        if accumulate {
            asm!(
                "tileloadd tmm0, [{c} + {s}*1]",
                "tileloadd tmm1, [{c} + {s}*1 + 64]",
                "tileloadd tmm2, [{c16} + {s}*1]",
                "tileloadd tmm3, [{c16} + {s}*1 + 64]",
                c = in(reg) c,
                c16 = in(reg) c.add(16 * NR),
                s = in(reg) c_stride,
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                options(nostack, readonly),
            );
        } else {
            asm!(
                "tilezero tmm0",
                "tilezero tmm1",
                "tilezero tmm2",
                "tilezero tmm3",
                out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
                options(nomem, nostack),
            );
        }
    }
    let full = kp / STEP;
    for s in 0..full {
        // SAFETY: step `s` < kp / 16 reads words `16 s .. 16 s + 16` of each of A's 32 rows
        // (row stride kp words) and pairs `16 s .. 16 s + 16` of B's panel (32 words each),
        // all inside `a` (32 kp words) and `b` (32 kp words).
        unsafe {
            step(
                a.as_ptr().add(s * STEP),
                kp * 4,
                b.as_ptr().add(s * STEP * NR),
            )
        };
    }
    let rest = kp - full * STEP;
    if rest > 0 {
        // The last pairs, zero-padded to a whole step.
        let mut at = [0u32; MR * STEP];
        let mut bt = [0u32; STEP * NR];
        for (r, dst) in at.chunks_exact_mut(STEP).enumerate() {
            dst[..rest].copy_from_slice(&a[r * kp + full * STEP..][..rest]);
        }
        bt[..rest * NR].copy_from_slice(&b[full * STEP * NR..]);
        // SAFETY: `at` is 32 rows of 16 words (stride 64 bytes), `bt` 16 pairs of 32 words.
        unsafe { step(at.as_ptr(), STEP * 4, bt.as_ptr()) };
    }
    // SAFETY: as for the loads above; the stores write the same four tiles of `tile`.
    unsafe {
        asm!(
            "tilestored [{c} + {s}*1], tmm0",
            "tilestored [{c} + {s}*1 + 64], tmm1",
            "tilestored [{c16} + {s}*1], tmm2",
            "tilestored [{c16} + {s}*1 + 64], tmm3",
            c = in(reg) c,
            c16 = in(reg) c.add(16 * NR),
            s = in(reg) c_stride,
            options(nostack),
        );
    }
}

/// One step of 16 pairs: `C[0..4] += A[0..2] x B[0..2]` on the tile registers.
///
/// # Safety
/// The tiles must be configured. `a` points at 32 rows of 16 words, `a_stride` bytes apart;
/// `b` at 16 rows of 32 words, 128 bytes apart.
#[inline(always)]
unsafe fn step(a: *const u32, a_stride: usize, b: *const u32) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!(
            "tileloadd tmm4, [{a} + {sa}*1]",
            "tileloadd tmm5, [{a16} + {sa}*1]",
            "tileloadd tmm6, [{b} + {sb}*1]",
            "tileloadd tmm7, [{b} + {sb}*1 + 64]",
            "tdpbf16ps tmm0, tmm4, tmm6",
            "tdpbf16ps tmm1, tmm4, tmm7",
            "tdpbf16ps tmm2, tmm5, tmm6",
            "tdpbf16ps tmm3, tmm5, tmm7",
            a = in(reg) a,
            a16 = in(reg) a.cast::<u8>().add(16 * a_stride),
            sa = in(reg) a_stride,
            b = in(reg) b,
            sb = in(reg) NR * 4,
            out("tmm0") _, out("tmm1") _, out("tmm2") _, out("tmm3") _,
            out("tmm4") _, out("tmm5") _, out("tmm6") _, out("tmm7") _,
            options(nostack, readonly),
        );
    }
}
