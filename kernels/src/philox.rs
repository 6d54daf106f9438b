//! Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), the
//! counter-based generator PyTorch's CUDA backend uses, and the conversions from its output
//! to kiln's distributions.
//!
//! Element `i` of the `offset`-th draw from a generator seeded with `seed` is a pure function
//! of `(seed, offset, i)`: the 128-bit counter is `(i, offset)` and the 64-bit key is `seed`.
//! So a draw needs no state shared between elements (any thread or GPU block can produce any
//! element), and CPU and CUDA produce the same numbers. kernels/cuda/random.cu.j2 repeats the
//! arithmetic below line for line; keep the two in step.

use crate::box_muller;

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// One Philox4x32 round.
fn round(c: [u32; 4], k: [u32; 2]) -> [u32; 4] {
    let p0 = u64::from(M0) * u64::from(c[0]);
    let p1 = u64::from(M1) * u64::from(c[2]);
    let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
    let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
    [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0]
}

/// Philox4x32 with 10 rounds: four 32-bit words for one counter under one key.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (round(counter, key), key);
    for _ in 1..10 {
        k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        c = round(c, k);
    }
    c
}

/// The four words for element `i` of draw `offset` under `seed`.
pub fn block(seed: u64, offset: u64, i: u64) -> [u32; 4] {
    philox4x32_10(
        [
            i as u32,
            (i >> 32) as u32,
            offset as u32,
            (offset >> 32) as u32,
        ],
        [seed as u32, (seed >> 32) as u32],
    )
}

/// Uniform in `[0, 1)` on a grid of `2^-bits` (`bits <= 24`), from the top bits of `x`.
/// With `bits` at most the target type's precision every value is exact, so rounding to
/// that type can never produce 1.0.
pub fn uniform_f32(x: u32, bits: u32) -> f32 {
    // 2^-bits built from its exponent bits, so it is exact on every platform.
    (x >> (32 - bits)) as f32 * f32::from_bits((127 - bits) << 23)
}

/// Uniform in `[0, 1)` on a grid of `2^-53`, from two words.
pub fn uniform_f64(x0: u32, x1: u32) -> f64 {
    let bits = ((u64::from(x1) << 32) | u64::from(x0)) >> 11;
    bits as f64 * (-53f64).exp2()
}

/// A standard normal sample in f32 (Box–Muller on 24-bit uniforms; the first uniform is
/// taken from `(0, 1]` so its log is finite). The log and cosine are `box_muller`'s, not
/// libm's, so a GPU computes the same bits.
pub fn normal_f32(w: [u32; 4]) -> f32 {
    let u1 = ((w[0] >> 8) + 1) as f32 * (-24f32).exp2();
    let u2 = (w[1] >> 8) as f32 * (-24f32).exp2();
    (-2.0 * box_muller::ln_f32(u1)).sqrt() * box_muller::cos_2pi_f32(u2)
}

/// A standard normal sample in f64 (Box–Muller on 53-bit uniforms), as [`normal_f32`].
pub fn normal_f64(w: [u32; 4]) -> f64 {
    let u1 = uniform_f64(w[0], w[1]) + (-53f64).exp2();
    let u2 = uniform_f64(w[2], w[3]);
    (-2.0 * box_muller::ln_f64(u1)).sqrt() * box_muller::cos_2pi_f64(u2)
}

/// An integer in `[low, low + range)` (`range > 0`; wrapping arithmetic lets the range span
/// all of i64), from the first two words taken modulo `range` as PyTorch's `random_` does.
pub fn int_in(w: [u32; 4], low: i64, range: u64) -> i64 {
    let x = (u64::from(w[1]) << 32) | u64::from(w[0]);
    low.wrapping_add((x % range) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known-answer vectors published with Random123 (kat_vectors, philox4x32 with 10 rounds).
    #[test]
    fn matches_random123_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn uniform_grids_stay_below_one() {
        assert_eq!(uniform_f32(u32::MAX, 24), 1.0 - (-24f32).exp2());
        assert_eq!(uniform_f32(u32::MAX, 11), 1.0 - (-11f32).exp2());
        assert_eq!(uniform_f32(0, 8), 0.0);
        assert_eq!(uniform_f64(u32::MAX, u32::MAX), 1.0 - (-53f64).exp2());
    }

    #[test]
    fn normal_extremes_are_finite() {
        assert!(normal_f32([0; 4]).is_finite());
        assert!(normal_f64([0; 4]).is_finite());
        assert_eq!(normal_f32([u32::MAX, 0, 0, 0]), 0.0);
    }

    #[test]
    fn int_in_covers_the_full_i64_range() {
        assert_eq!(int_in([0, 0, 0, 0], i64::MIN, u64::MAX), i64::MIN);
        assert_eq!(int_in([5, 0, 0, 0], -2, 3), 0);
    }
}
