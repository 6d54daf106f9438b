//! The natural log and `cos(2π·u)` that Box–Muller needs (`philox::normal_f32`/`normal_f64`),
//! built only from operations IEEE 754 rounds correctly (`+ − × ÷`, integer↔float
//! conversions, bit manipulation) in a fixed order, so the CPU and a GPU give the same bits.
//! A platform's libm does not: Rust's `ln`/`cos` and CUDA's `logf`/`cosf`/`log`/`cos` differ
//! by an ulp here and there, and one flipped rounding of an f16 sample is 4.9e-4 relative.
//!
//! kernels/cuda/random.cu.j2 repeats the arithmetic below line for line, each operation an
//! explicit round-to-nearest intrinsic (`__fmul_rn`, `__dadd_rn`, ...) so CUDA can never fuse
//! a multiply and an add into one FMA (Rust never does); keep the two in step.
//!
//! Accuracy on Box–Muller's inputs (tests below: exhaustive for f32, 2^22 points for f64,
//! against f64 and double-double references): under 0.83 ulp for `ln`, 0.72 for `cos`.

/// `ln(x)` for positive normal finite `x` (Box–Muller passes `[2^-24, 1]`): fdlibm's `logf`
/// (as in musl), `x = 2^k·m` with `m` in `[√2/2, √2)`, `ln m = 2 atanh(f / (2 + f))` for
/// `f = m − 1` by a minimax polynomial.
pub fn ln_f32(x: f32) -> f32 {
    const LN2_HI: f32 = f32::from_bits(0x3f31_7180); // ln 2, top 17 bits: k·LN2_HI is exact
    const LN2_LO: f32 = f32::from_bits(0x3717_f7d1); // ln 2 − LN2_HI
    const LG1: f32 = f32::from_bits(0x3f2a_aaaa); // 0.66666662693
    const LG2: f32 = f32::from_bits(0x3ecc_ce13); // 0.40000972152
    const LG3: f32 = f32::from_bits(0x3e91_e9ee); // 0.28498786688
    const LG4: f32 = f32::from_bits(0x3e78_9e26); // 0.24279078841

    // Exponent and mantissa, the mantissa moved into [√2/2, √2) (0x3f3504f3 is √2/2).
    let ix = x.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = (ix >> 23) as i32 - 0x7f;
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * LG4);
    let t2 = z * (LG1 + w * LG3);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    let v = s * (hfsq + r);
    let v = v + dk * LN2_LO;
    let v = v - hfsq;
    let v = v + f;
    v + dk * LN2_HI
}

/// `ln(x)` for positive normal finite `x` (Box–Muller passes `[2^-53, 1]`): fdlibm's `log`
/// (as in musl), the f64 form of [`ln_f32`].
pub fn ln_f64(x: f64) -> f64 {
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // k·LN2_HI is exact
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const LG1: f64 = f64::from_bits(0x3fe5_5555_5555_5593); // 6.666666666666735130e-01
    const LG2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04); // 3.999999999940941908e-01
    const LG3: f64 = f64::from_bits(0x3fd2_4924_9422_9359); // 2.857142874366239149e-01
    const LG4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af); // 2.222219843214978396e-01
    const LG5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de); // 1.818357216161805012e-01
    const LG6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f); // 1.531383769920937332e-01
    const LG7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244); // 1.479819860511658591e-01

    // The high word carries the exponent; 0x3fe6a09e is the high word of √2/2.
    let bits = x.to_bits();
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (hx >> 20) as i32 - 0x3ff;
    let hm = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits((u64::from(hm) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = f64::from(k);
    let v = s * (hfsq + r);
    let v = v + dk * LN2_LO;
    let v = v - hfsq;
    let v = v + f;
    v + dk * LN2_HI
}

// Taylor coefficients of cos(2πc) and sin(2πc) in powers of c, (−1)^j (2π)^n / n! rounded to
// nearest (mpmath); the first sine coefficient is 2π − 6 (the 6 is applied exactly, see
// `sin_2pi_poly_f32`), and `NEG_K*` is −(2π² − 16) (the 16 is applied exactly, see
// `cos_2pi_poly_f32`). The truncation error is below 0.03 ulp on [0, 1/8].
const NEG_K32: f32 = f32::from_bits(0xc06f_4f32); // −3.7392087
const NEG_K64: f64 = f64::from_bits(0xc00d_e9e6_4df2_2ef3); // −3.7392088021787173
const C32: [f32; 5] = [
    f32::from_bits(0xc19d_e9e6), // c^2: −19.739208
    f32::from_bits(0x4281_e0f8), // c^4: 64.939392
    f32::from_bits(0xc2aa_e9e4), // c^6: −85.456818
    f32::from_bits(0x4270_fa83), // c^8: 60.244640
    f32::from_bits(0xc1d3_68f9), // c^10: −26.426256
];
const S32: [f32; 5] = [
    f32::from_bits(0x3e90_fdaa), // c^1: 2π − 6 = 0.28318530
    f32::from_bits(0xc225_5de7), // c^3: −41.341702
    f32::from_bits(0x42a3_35e3), // c^5: 81.605247
    f32::from_bits(0xc299_6966), // c^7: −76.705856
    f32::from_bits(0x4228_3c1a), // c^9: 42.058693
];
const C64: [f64; 8] = [
    f64::from_bits(0xc033_bd3c_c9be_45de), // c^2: −19.739208802178716
    f64::from_bits(0x4050_3c1f_081b_5ac4), // c^4: 64.9393940226683
    f64::from_bits(0xc055_5d3c_7e3c_bffa), // c^6: −85.45681720669373
    f64::from_bits(0x404e_1f50_6891_babb), // c^8: 60.24464137187666
    f64::from_bits(0xc03a_6d1f_2a20_4a8c), // c^10: −26.4262567833744
    f64::from_bits(0x401f_9d38_a376_3cc3), // c^12: 7.903536371318469
    f64::from_bits(0xbffb_6e24_f44b_128f), // c^14: −1.714390711088672
    f64::from_bits(0x3fd2_0c62_c2f2_d7f5), // c^16: 0.28200596845579123
];
const S64: [f64; 9] = [
    f64::from_bits(0x3fd2_1fb5_4442_d184), // c^1: 2π − 6 = 0.28318530717958645
    f64::from_bits(0xc044_abbc_e625_be53), // c^3: −41.34170224039976
    f64::from_bits(0x4054_66bc_6775_aae2), // c^5: 81.60524927607506
    f64::from_bits(0xc053_2d2c_ce62_bd86), // c^7: −76.70585975306139
    f64::from_bits(0x4045_0783_487e_e782), // c^9: 42.058693944897655
    f64::from_bits(0xc02e_3074_fde8_871f), // c^11: −15.09464257682299
    f64::from_bits(0x400e_8f43_4d01_8d63), // c^13: 3.819952584848282
    f64::from_bits(0xbfe6_fadb_9f15_5744), // c^15: −0.7181223017785006
    f64::from_bits(0x3fba_aec3_2af9_3359), // c^17: 0.10422916220813984
];

/// `c²` exactly, as `hi + lo` (Dekker's product with Veltkamp's split; no FMA needed).
fn square_f32(c: f32) -> (f32, f32) {
    let t = c * 4097.0; // 2^12 + 1
    let hi = t - (t - c);
    let lo = c - hi;
    let p = c * c;
    let e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo;
    (p, e)
}

/// `cos(2πc)` for `c` in `[0, 1/8]`: `1 − 2π²c² + c⁴·(...)` with `c²` exact and
/// `2π² = 16 + K`: `16c²` is exact and the rounding error of `1 − 16c²` is recovered exactly
/// (Fast2Sum), so only small terms round before the last addition.
fn cos_2pi_poly_f32(c: f32) -> f32 {
    let (zh, zl) = square_f32(c);
    let a = 16.0 * zh;
    let w = 1.0 - a;
    let werr = (1.0 - w) - a;
    let q = C32[3] + zh * C32[4];
    let q = C32[2] + zh * q;
    let q = C32[1] + zh * q;
    let q = zh * q;
    let tail = werr + (zh * (q + NEG_K32) + C32[0] * zl);
    w + tail
}

/// `sin(2πc)` for `c` in `[0, 1/8]`: `6c + c·(2π − 6 + ...)`, where `6c` is exact for `c` on
/// Box–Muller's grid (at most 21 significant bits), so the rounding of 2π costs nothing.
fn sin_2pi_poly_f32(c: f32) -> f32 {
    let z = c * c;
    let p = S32[3] + z * S32[4];
    let p = S32[2] + z * p;
    let p = S32[1] + z * p;
    let p = S32[0] + z * p;
    c * 6.0 + c * p
}

/// `cos(2πu)` for `u` in `[0, 1]` on the 2^-24 grid Box–Muller uses (off it, `6c` in
/// `sin_2pi_poly_f32` may round: a little less accurate). The range reduction works on `u`
/// itself and is exact
/// (each subtraction is of two numbers within a factor of two of each other), so there is no
/// rounded 2π to multiply by: `u` to `[0, 1/2]` by periodicity and symmetry, to `[0, 1/4]` by
/// `cos(2πa) = −cos(2π(1/2 − a))`, then `cos` on `[0, 1/8]` or `sin(2π(1/4 − b))` above it.
pub fn cos_2pi_f32(u: f32) -> f32 {
    let a = if u > 0.5 { 1.0 - u } else { u };
    let (b, negate) = if a > 0.25 {
        (0.5 - a, true)
    } else {
        (a, false)
    };
    let r = if b > 0.125 {
        sin_2pi_poly_f32(0.25 - b)
    } else {
        cos_2pi_poly_f32(b)
    };
    if negate {
        -r
    } else {
        r
    }
}

/// `c²` exactly, as `hi + lo`, as [`square_f32`].
fn square_f64(c: f64) -> (f64, f64) {
    let t = c * 134_217_729.0; // 2^27 + 1
    let hi = t - (t - c);
    let lo = c - hi;
    let p = c * c;
    let e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo;
    (p, e)
}

/// `cos(2πc)` for `c` in `[0, 1/8]`, as [`cos_2pi_poly_f32`].
fn cos_2pi_poly_f64(c: f64) -> f64 {
    let (zh, zl) = square_f64(c);
    let a = 16.0 * zh;
    let w = 1.0 - a;
    let werr = (1.0 - w) - a;
    let q = C64[6] + zh * C64[7];
    let q = C64[5] + zh * q;
    let q = C64[4] + zh * q;
    let q = C64[3] + zh * q;
    let q = C64[2] + zh * q;
    let q = C64[1] + zh * q;
    let q = zh * q;
    let tail = werr + (zh * (q + NEG_K64) + C64[0] * zl);
    w + tail
}

/// `sin(2πc)` for `c` in `[0, 1/8]`; `6c` is exact for `c` on the 2^-53 grid.
fn sin_2pi_poly_f64(c: f64) -> f64 {
    let z = c * c;
    let p = S64[7] + z * S64[8];
    let p = S64[6] + z * p;
    let p = S64[5] + z * p;
    let p = S64[4] + z * p;
    let p = S64[3] + z * p;
    let p = S64[2] + z * p;
    let p = S64[1] + z * p;
    let p = S64[0] + z * p;
    c * 6.0 + c * p
}

/// `cos(2πu)` for `u` in `[0, 1]` on the 2^-53 grid, as [`cos_2pi_f32`].
pub fn cos_2pi_f64(u: f64) -> f64 {
    let a = if u > 0.5 { 1.0 - u } else { u };
    let (b, negate) = if a > 0.25 {
        (0.5 - a, true)
    } else {
        (a, false)
    };
    let r = if b > 0.125 {
        sin_2pi_poly_f64(0.25 - b)
    } else {
        cos_2pi_poly_f64(b)
    };
    if negate {
        -r
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `|got − want|` in ulps of f32 at `want`.
    fn ulps_f32(got: f32, want: f64) -> f64 {
        let e = (want.abs() as f32).max(f32::MIN_POSITIVE);
        let ulp = f64::from(e.next_up()) - f64::from(e);
        (f64::from(got) - want).abs() / ulp
    }

    /// `|got − want|` in ulps of f64 at `want.0`, `want` a double-double.
    fn ulps_f64(got: f64, want: (f64, f64)) -> f64 {
        let e = want.0.abs().max(f64::MIN_POSITIVE);
        let ulp = e.next_up() - e;
        ((got - want.0) - want.1).abs() / ulp
    }

    // Double-double arithmetic (Dekker/Knuth, exact products from `mul_add`): a reference
    // for f64 cos/sin good to ~1e-30.
    fn two_sum(a: f64, b: f64) -> (f64, f64) {
        let s = a + b;
        let bb = s - a;
        (s, (a - (s - bb)) + (b - bb))
    }
    fn dd_add(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        let (s, e) = two_sum(a.0, b.0);
        two_sum(s, e + a.1 + b.1)
    }
    fn dd_mul(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
        let p = a.0 * b.0;
        let e = a.0.mul_add(b.0, -p) + (a.0 * b.1 + a.1 * b.0);
        two_sum(p, e)
    }
    fn dd_div_small(a: (f64, f64), d: f64) -> (f64, f64) {
        let q = a.0 / d;
        let r = (a.0 - q * d - q.mul_add(d, -(q * d))) + a.1;
        two_sum(q, r / d)
    }
    /// `cos 2πc` as a double-double, `c` exact, by Taylor series.
    fn dd_cos_2pi(c: f64) -> (f64, f64) {
        const TAU: (f64, f64) = (
            f64::from_bits(0x4019_21fb_5444_2d18),
            f64::from_bits(0x3cb1_a626_3314_5c07),
        );
        let x = dd_mul(TAU, (c, 0.0));
        let x2 = dd_mul(x, x);
        let (mut cos, mut term) = ((0.0, 0.0), (1.0, 0.0)); // term: (−1)^n x^2n / (2n)!
        for n in 1..30 {
            cos = dd_add(cos, term);
            let t = dd_div_small(dd_mul(term, x2), f64::from((2 * n - 1) * (2 * n)));
            term = (-t.0, -t.1);
        }
        cos
    }

    /// `e^y` as a double-double, for `y` in about `[-40, 40]`: `2^k·e^r`, `|r| <= ln2/2`.
    fn dd_exp(y: f64) -> (f64, f64) {
        const LN2: (f64, f64) = (
            f64::from_bits(0x3fe6_2e42_fefa_39ef),
            f64::from_bits(0x3c7a_bc9e_3b39_803f),
        );
        let k = (y / LN2.0).round();
        let kl = dd_mul((k, 0.0), LN2);
        let r = dd_add((y, 0.0), (-kl.0, -kl.1));
        let (mut sum, mut term) = ((0.0, 0.0), (1.0, 0.0));
        for n in 1..40 {
            sum = dd_add(sum, term);
            term = dd_div_small(dd_mul(term, r), f64::from(n));
        }
        let scale = 2f64.powi(k as i32);
        (sum.0 * scale, sum.1 * scale)
    }

    /// `ln x` as a double-double: libm's `ln` plus one Newton step on `e^y = x`.
    fn dd_ln(x: f64) -> (f64, f64) {
        let y = x.ln();
        let p = dd_mul((x, 0.0), dd_exp(-y));
        let d = (p.0 - 1.0) + p.1;
        two_sum(y, d)
    }

    /// The references against values from mpmath at 300 bits.
    #[test]
    fn the_double_double_references_are_right() {
        let close = |got: (f64, f64), hi: f64, lo: f64| {
            assert_eq!(got.0, hi);
            assert!((got.1 - lo).abs() <= 1e-31 * hi.abs(), "{got:?} vs {lo}");
        };
        close(
            dd_ln(0.75),
            -0.287_682_072_451_780_9,
            -2.607_160_616_442_564e-17,
        );
        close(
            dd_ln(0.1),
            -2.302_585_092_994_045_5,
            -1.715_024_362_805_798_5e-16,
        );
        close(
            dd_ln(3.0 * (-53f64).exp2()),
            -35.638_188_281_008_99,
            1.677_794_382_799_368_6e-15,
        );
        close(
            dd_cos_2pi(0.1),
            0.809_016_994_374_947_5,
            -4.766_175_266_906_226e-17,
        );
        close(
            dd_cos_2pi(0.123),
            0.715_936_483_021_831_2,
            -4.629_156_546_839_008e-17,
        );
    }

    /// The CUDA mirror uses the same constants: every `from_bits` pattern here appears in
    /// kernels/cuda/random.cu.j2 (as `0x...u` or `0x...ull`).
    #[test]
    fn the_cuda_mirror_has_every_constant() {
        let rust = include_str!("box_muller.rs")
            .split("#[cfg(test)]")
            .next()
            .unwrap();
        let cuda = include_str!("../cuda/random.cu.j2");
        let mut n = 0;
        for part in rust.split("from_bits(0x").skip(1) {
            let hex: String = part
                .chars()
                .take_while(|c| c.is_ascii_hexdigit() || *c == '_')
                .filter(|c| *c != '_')
                .collect();
            let suffix = if hex.len() == 8 { "u" } else { "ull" };
            assert!(
                cuda.contains(&format!("0x{hex}{suffix}")),
                "0x{hex} not in random.cu.j2"
            );
            n += 1;
        }
        assert_eq!(n, 44);
    }

    /// Every u1 = k·2^-24, k in 1..=2^24, that `normal_f32` takes the log of.
    #[test]
    fn ln_f32_is_within_an_ulp_on_the_whole_box_muller_grid() {
        let mut worst = (0.0, 0.0f32);
        for k in 1..=(1u32 << 24) {
            let x = k as f32 * (-24f32).exp2();
            let e = ulps_f32(ln_f32(x), f64::from(x).ln());
            if e > worst.0 {
                worst = (e, x);
            }
        }
        eprintln!("ln_f32: worst (ulps, at) {worst:?}");
        assert!(worst.0 < 1.0, "{worst:?}");
        assert_eq!(ln_f32(1.0), 0.0);
    }

    /// Every u2 = k·2^-24, k in 0..2^24, that `normal_f32` takes the cosine of.
    #[test]
    fn cos_2pi_f32_is_within_an_ulp_on_the_whole_box_muller_grid() {
        let mut worst = (0.0, 0.0f32);
        for k in 0..(1u32 << 24) {
            let u = k as f32 * (-24f32).exp2();
            if k % (1 << 22) == 0 {
                continue; // the quarter points, exact: checked below
            }
            let want = (std::f64::consts::TAU * f64::from(u)).cos();
            let e = ulps_f32(cos_2pi_f32(u), want);
            if e > worst.0 {
                worst = (e, u);
            }
        }
        eprintln!("cos_2pi_f32: worst (ulps, at) {worst:?}");
        assert!(worst.0 < 1.0, "{worst:?}");
        // The quarter points are exact.
        assert_eq!(cos_2pi_f32(0.0), 1.0);
        assert_eq!(cos_2pi_f32(0.25), 0.0);
        assert_eq!(cos_2pi_f32(0.5), -1.0);
        assert_eq!(cos_2pi_f32(0.75), 0.0);
    }

    /// A dense sample of the 2^-53 grid: 2^22 points spread over (0, 1] log-uniformly (every
    /// binade) plus the ends, against a double-double reference.
    #[test]
    fn ln_f64_is_within_an_ulp_on_a_dense_sample() {
        let mut worst = (0.0, 0.0f64);
        let mut x = 1u64;
        let mut check = |k: u64| {
            let x = k as f64 * (-53f64).exp2();
            let e = if x == 1.0 {
                ln_f64(x).abs()
            } else {
                ulps_f64(ln_f64(x), dd_ln(x))
            };
            if e > worst.0 {
                worst = (e, x);
            }
        };
        for i in 0..(1u64 << 22) {
            // A 64-bit LCG for the mantissa bits, a sweep over the exponent.
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let binade = i % 53;
            check((1u64 << binade) | ((x >> 11) & ((1u64 << binade) - 1)));
        }
        for k in [1, 2, 3, (1 << 53) - 1, 1 << 53, (1 << 52) + 1, 1 << 52] {
            check(k);
        }
        eprintln!("ln_f64: worst (ulps, at) {worst:?}");
        assert!(worst.0 < 1.0, "{worst:?}");
        assert_eq!(ln_f64(1.0), 0.0);
    }

    /// A dense sample of u2 on the 2^-53 grid (2^22 points, uniform plus every binade near
    /// the quarter points where the result is tiny), against a double-double reference.
    #[test]
    fn cos_2pi_f64_is_within_an_ulp_on_a_dense_sample() {
        let mut worst = (0.0, 0.0f64);
        let mut check = |k: u64| {
            let u = k as f64 * (-53f64).exp2();
            // The reference reduces exactly as cos_2pi_f64 does, but in double-double.
            let a = if u > 0.5 { 1.0 - u } else { u };
            let want = if a == 0.25 { (0.0, 0.0) } else { dd_cos_2pi(a) };
            let e = ulps_f64(cos_2pi_f64(u), want);
            if e > worst.0 {
                worst = (e, u);
            }
        };
        let mut x = 7u64;
        for i in 0..(1u64 << 21) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            check(x >> 11);
            // Offsets of every size from the quarter points 1/4 and 3/4.
            let d = ((x >> 11) >> (i % 51 + 3)).max(1);
            check(if i % 2 == 0 {
                (1 << 51) - d
            } else {
                (3 << 51) + d
            });
        }
        eprintln!("cos_2pi_f64: worst (ulps, at) {worst:?}");
        assert!(worst.0 < 1.0, "{worst:?}");
        assert_eq!(cos_2pi_f64(0.0), 1.0);
        assert_eq!(cos_2pi_f64(0.25), 0.0);
        assert_eq!(cos_2pi_f64(0.5), -1.0);
    }
}
