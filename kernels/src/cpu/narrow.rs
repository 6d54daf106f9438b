//! `f32` ↔ `bf16` and `f32` ↔ `f16` over slices. To bf16, branch-free so it vectorises: the rounding of every cast to
//! bf16 (autocast's casts, `opmath` results, `addmm`'s one rounding). Bit for bit
//! `half::bf16::from_f32` (round to nearest, ties to even; NaN stays a quiet NaN; subnormals
//! kept), which is a branchy scalar. Not `VCVTNEPS2BF16`: it flushes subnormals.

use half::{bf16, f16};

/// One element: the bits of the nearest bf16, ties to even.
#[inline(always)]
fn one(x: f32) -> u16 {
    let b = x.to_bits();
    let nan = (b & 0x7fff_ffff) > 0x7f80_0000;
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let quiet = ((b >> 16) | 0x40) as u16;
    if nan {
        quiet
    } else {
        rounded
    }
}

fn portable(src: &[f32], dst: &mut [bf16]) {
    for (o, &x) in dst.iter_mut().zip(src) {
        *o = bf16::from_bits(one(x));
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
fn avx512(src: &[f32], dst: &mut [bf16]) {
    portable(src, dst)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn avx2(src: &[f32], dst: &mut [bf16]) {
    portable(src, dst)
}

/// `dst[i] = bf16(src[i])` for the shorter of the two.
pub fn f32_to_bf16(src: &[f32], dst: &mut [bf16]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static LEVEL: OnceLock<u8> = OnceLock::new();
        let level = *LEVEL.get_or_init(|| {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
                2
            } else if is_x86_feature_detected!("avx2") {
                1
            } else {
                0
            }
        });
        match level {
            // SAFETY: the CPU has the features each function is compiled for (checked above).
            2 => return unsafe { avx512(src, dst) },
            // SAFETY: as above.
            1 => return unsafe { avx2(src, dst) },
            _ => {}
        }
    }
    portable(src, dst)
}

/// `dst[i] = f32(src[i])`, exact (a shift; NaNs quieted, as `half`): the widening of every bf16 → f32 cast, as a
/// plain loop compiled for the CPU's widest vectors.
pub fn bf16_to_f32(src: &[bf16], dst: &mut [f32]) {
    fn plain(src: &[bf16], dst: &mut [f32]) {
        for (o, &x) in dst.iter_mut().zip(src) {
            let w = u32::from(x.to_bits()) << 16;
            // A signalling NaN comes out quiet, as `half`'s scalar conversion makes it.
            let nan = (w & 0x7fff_ffff) > 0x7f80_0000;
            *o = f32::from_bits(if nan { w | 0x0040_0000 } else { w });
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx512bw")]
    fn avx512(src: &[bf16], dst: &mut [f32]) {
        plain(src, dst)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2(src: &[bf16], dst: &mut [f32]) {
        plain(src, dst)
    }
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has the features `avx512` is compiled for (checked just above).
            return unsafe { avx512(src, dst) };
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: as above, for `avx2`.
            return unsafe { avx2(src, dst) };
        }
    }
    plain(src, dst)
}

/// Whether the CPU converts between `f16` and `f32` in hardware (F16C, 8 lanes at a time).
#[cfg(target_arch = "x86_64")]
fn has_f16c() -> bool {
    use std::sync::OnceLock;
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| is_x86_feature_detected!("avx") && is_x86_feature_detected!("f16c"))
}

/// `dst[i] = f32(src[i])`, exact, for the shorter of the two: `VCVTPH2PS` where the CPU has
/// F16C (the same value as `half`'s conversion, NaN payloads included), else `half`'s.
pub fn f16_to_f32(src: &[f16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has AVX and F16C (checked just above).
        return unsafe { f16c::widen(src, dst) };
    }
    dst.iter_mut().zip(src).for_each(|(o, x)| *o = x.to_f32());
}

/// `dst[i] = f16(src[i])`, rounded to nearest even, for the shorter of the two:
/// `VCVTPS2PH` where the CPU has F16C (bit for bit `half::f16::from_f32`: overflow to
/// infinity, subnormals kept, NaN quieted), else `half`'s.
pub fn f32_to_f16(src: &[f32], dst: &mut [f16]) {
    #[cfg(target_arch = "x86_64")]
    if has_f16c() {
        // SAFETY: the CPU has AVX and F16C (checked just above).
        return unsafe { f16c::narrow(src, dst) };
    }
    dst.iter_mut()
        .zip(src)
        .for_each(|(o, &x)| *o = f16::from_f32(x));
}

/// Elements per task of the widening and narrowing below when they fan out.
const CHUNK: usize = 1 << 15;

/// `dst[i] = f32(src[i])` for the shorter of the two, exact for every element type kiln
/// widens (bf16 and f16 vectorised), over the pool when long: the widened copies that let
/// a half-precision op run an `f32` kernel.
pub(crate) fn widen_to_f32<T: crate::Element>(src: &[T], dst: &mut [f32]) {
    use crate::element::same_type;
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let one = |at: usize, d: &mut [f32]| {
        let s = &src[at..at + d.len()];
        if let Some(s) = same_type::<T, bf16>(s) {
            bf16_to_f32(s, d)
        } else if let Some(s) = same_type::<T, f16>(s) {
            f16_to_f32(s, d)
        } else {
            d.iter_mut().zip(s).for_each(|(o, &x)| *o = x.cast::<f32>());
        }
    };
    in_chunks(dst, &one);
}

/// `dst[i] = src[i]` rounded once to `T` (to nearest, ties to even) for the shorter of the
/// two, over the pool when long: the one rounding of a half-precision result computed in
/// `f32`.
pub(crate) fn narrow_from_f32<T: crate::Element>(src: &[f32], dst: &mut [T]) {
    use crate::element::same_type_mut;
    let n = src.len().min(dst.len());
    let (src, dst) = (&src[..n], &mut dst[..n]);
    let one = |at: usize, d: &mut [T]| {
        let s = &src[at..at + d.len()];
        if let Some(d) = same_type_mut::<T, bf16>(d) {
            f32_to_bf16(s, d)
        } else if let Some(d) = same_type_mut::<T, f16>(d) {
            f32_to_f16(s, d)
        } else {
            d.iter_mut()
                .zip(s)
                .for_each(|(o, &x)| *o = T::from_f64(f64::from(x)));
        }
    };
    in_chunks(dst, &one);
}

/// `one(at, piece)` over `dst` in [`CHUNK`]-element pieces (`at` each piece's start), spread
/// over the pool when `dst` is long.
fn in_chunks<D: Send>(dst: &mut [D], one: &(dyn Fn(usize, &mut [D]) + Sync)) {
    if crate::parallel::fan_out(dst.len() >= 2 * CHUNK) {
        crate::parallel::par_chunks_mut(dst, CHUNK, &|t, d| one(t * CHUNK, d));
    } else {
        one(0, dst);
    }
}

#[cfg(target_arch = "x86_64")]
mod f16c {
    use half::f16;
    use std::arch::x86_64::{
        __m128i, _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps,
        _mm_loadu_si128, _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };

    #[target_feature(enable = "avx,f16c")]
    pub(super) fn widen(src: &[f16], dst: &mut [f32]) {
        let len = src.len().min(dst.len());
        let (src, dst) = (&src[..len], &mut dst[..len]);
        let body = len / 8 * 8;
        for (s, d) in src[..body]
            .chunks_exact(8)
            .zip(dst[..body].chunks_exact_mut(8))
        {
            // SAFETY: `s` is 8 f16 (16 bytes) and `d` 8 f32 (32 bytes); unaligned forms.
            unsafe {
                let h = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
                _mm256_storeu_ps(d.as_mut_ptr(), _mm256_cvtph_ps(h));
            }
        }
        for (o, x) in dst[body..].iter_mut().zip(&src[body..]) {
            *o = x.to_f32();
        }
    }

    #[target_feature(enable = "avx,f16c")]
    pub(super) fn narrow(src: &[f32], dst: &mut [f16]) {
        let len = src.len().min(dst.len());
        let (src, dst) = (&src[..len], &mut dst[..len]);
        let body = len / 8 * 8;
        for (s, d) in src[..body]
            .chunks_exact(8)
            .zip(dst[..body].chunks_exact_mut(8))
        {
            // SAFETY: `s` is 8 f32 (32 bytes) and `d` 8 f16 (16 bytes); unaligned forms.
            unsafe {
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(_mm256_loadu_ps(s.as_ptr()));
                _mm_storeu_si128(d.as_mut_ptr().cast::<__m128i>(), h);
            }
        }
        for (o, &x) in dst[body..].iter_mut().zip(&src[body..]) {
            *o = f16::from_f32(x);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_half_on_edge_values_and_a_sweep() {
        let mut xs = vec![
            0.0f32,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001), // signalling NaN
            f32::MAX,
            f32::MIN_POSITIVE,
            f32::from_bits(1),           // smallest subnormal
            f32::from_bits(0x0000_8000), // a tie below the smallest bf16 subnormal
            f32::from_bits(0x3f80_8000), // 1 + half an ulp: a tie, to even (1)
            f32::from_bits(0x3f81_8000), // a tie, to even (up)
            f32::from_bits(0x7f7f_ffff), // rounds to inf
        ];
        // Every 4099th bit pattern: all exponents, signs and rounding cases.
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i.wrapping_mul(4099))));
        let mut got = vec![bf16::ZERO; xs.len()];
        f32_to_bf16(&xs, &mut got);
        let mut port = vec![bf16::ZERO; xs.len()];
        portable(&xs, &mut port);
        for ((x, g), p) in xs.iter().zip(&got).zip(&port) {
            let want = bf16::from_f32(*x);
            assert_eq!(g.to_bits(), want.to_bits(), "{x:e} ({:#010x})", x.to_bits());
            assert_eq!(p.to_bits(), want.to_bits(), "portable, {x:e}");
        }
        // And back: every bf16 widens exactly, NaN payloads included.
        let all: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let mut wide = vec![0f32; all.len()];
        bf16_to_f32(&all, &mut wide);
        for (b, w) in all.iter().zip(&wide) {
            assert_eq!(w.to_bits(), b.to_f32().to_bits(), "{b}");
        }
    }

    #[test]
    fn f16_conversions_match_half_on_edge_values_and_a_sweep() {
        let mut xs = vec![
            0.0f32,
            -0.0,
            1.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7f80_0001), // signalling NaN
            f32::from_bits(0x7fc0_1234), // quiet NaN with a payload
            f32::MAX,
            65504.0,                     // largest f16
            65520.0,                     // halfway to the next: rounds to inf
            f32::from_bits(0x3380_0000), // 2^-24, smallest f16 subnormal
            f32::from_bits(0x3300_0000), // 2^-25, a tie below it: to even (0)
            f32::from_bits(0x3f80_1000), // 1 + half an f16 ulp: a tie, to even (1)
            f32::from_bits(0x3f80_3000), // a tie, to even (up)
        ];
        // Every 4099th bit pattern, and lengths that leave a remainder after 8-wide steps.
        xs.extend((0..u32::MAX / 4099).map(|i| f32::from_bits(i.wrapping_mul(4099))));
        for len in [xs.len(), 13, 7, 0] {
            let mut got = vec![f16::ZERO; len];
            f32_to_f16(&xs[..len], &mut got);
            for (x, g) in xs.iter().zip(&got) {
                let want = f16::from_f32(*x);
                assert_eq!(g.to_bits(), want.to_bits(), "{x:e} ({:#010x})", x.to_bits());
            }
        }
        // And back: every f16 widens exactly, NaN payloads included.
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut wide = vec![0f32; all.len() + 3];
        f16_to_f32(&all, &mut wide);
        for (h, w) in all.iter().zip(&wide) {
            assert_eq!(
                w.to_bits(),
                h.to_f32().to_bits(),
                "{h} ({:#06x})",
                h.to_bits()
            );
        }
        assert_eq!(
            wide[all.len()..],
            [0.0; 3],
            "only the shorter length is written"
        );
    }
}
