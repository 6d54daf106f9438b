//! `f32` ↔ `bf16` over slices. To bf16, branch-free so it vectorises: the rounding of every cast to
//! bf16 (autocast's casts, `opmath` results, `addmm`'s one rounding). Bit for bit
//! `half::bf16::from_f32` (round to nearest, ties to even; NaN stays a quiet NaN; subnormals
//! kept), which is a branchy scalar. Not `VCVTNEPS2BF16`: it flushes subnormals.

use half::bf16;

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
    if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("avx512bw") {
        // SAFETY: the CPU has the features `avx512` is compiled for (checked just above).
        return unsafe { avx512(src, dst) };
    }
    plain(src, dst)
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
}
