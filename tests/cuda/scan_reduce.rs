//! The parallel CUDA scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and the split
//! full reductions (sum, max, min, argmax/argmin, max/min(dim), any/all) against float64
//! and integer loops written here. The sizes reach every launch shape: lines of at most 32
//! (a thread per line), 33..256 or many lines (a warp per line, chunks of 128), longer
//! lines (a block per line, chunks of 1024), and reductions whose few outputs are split
//! into pieces over many blocks. Ignored without a GPU: run with `-- --ignored`.

use kiln::{DType, Device, Result, Tensor};

/// The device, or `None` (the test passes) on a machine without one.
fn gpu() -> Option<Device> {
    kiln::cuda::is_available().then_some(Device::Cuda(0))
}

/// A small deterministic generator (splitmix64), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    fn float(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform integer in [lo, hi).
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo) as u64) as i64
    }
}

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];
const INTS: [DType; 5] = [DType::U8, DType::I8, DType::I16, DType::I32, DType::I64];

/// Relative rounding of a dtype's stored results, with a margin.
fn eps_out(d: DType) -> f64 {
    match d {
        DType::F16 => 2f64.powi(-10),
        DType::BF16 => 2f64.powi(-7),
        DType::F32 => 2f64.powi(-23),
        _ => 2f64.powi(-52),
    }
}

/// Relative rounding of the type a dtype computes in (float for the 16-bit floats).
fn eps_acc(d: DType) -> f64 {
    if d == DType::F64 {
        2f64.powi(-52)
    } else {
        2f64.powi(-23)
    }
}

/// `v` wrapped to integer dtype `d`, as the kernels' arithmetic wraps.
fn wrap(d: DType, v: i64) -> i64 {
    match d {
        DType::U8 => v as u8 as i64,
        DType::I8 => v as i8 as i64,
        DType::I16 => v as i16 as i64,
        DType::I32 => v as i32 as i64,
        _ => v,
    }
}

/// A float tensor of `shape` with the values `v` rounded to `d`, and the rounded values.
fn floats(v: Vec<f64>, shape: &[usize], d: DType) -> Result<(Tensor, Vec<f64>)> {
    let t = Tensor::from_vec(v, shape)?.to_dtype(d)?;
    let r = t.to_vec::<f64>()?;
    Ok((t, r))
}

// ---- references along the last dim of row-major [lines, n] data ----

fn ref_cumsum(x: &[f64], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for line in x.chunks(n) {
        let mut acc = 0.0;
        for &v in line {
            acc += v;
            out.push(acc);
        }
    }
    out
}

/// The running sums of |x| (the scale of a reordered float sum's rounding).
fn ref_abs_cumsum(x: &[f64], n: usize) -> Vec<f64> {
    ref_cumsum(&x.iter().map(|v| v.abs()).collect::<Vec<_>>(), n)
}

fn ref_cumprod(x: &[f64], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for line in x.chunks(n) {
        let mut acc = 1.0;
        for &v in line {
            acc *= v;
            out.push(acc);
        }
    }
    out
}

fn ref_int_scan(x: &[i64], n: usize, d: DType, prod: bool) -> Vec<i64> {
    let mut out = Vec::with_capacity(x.len());
    for line in x.chunks(n) {
        let mut acc = if prod { 1i64 } else { 0 };
        for &v in line {
            acc = wrap(
                d,
                if prod {
                    acc.wrapping_mul(v)
                } else {
                    acc.wrapping_add(v)
                },
            );
            out.push(acc);
        }
    }
    out
}

/// log(exp(a) + exp(b)) with the CPU kernel's inf / NaN rules, in f64.
fn log_add_exp(a: f64, b: f64) -> f64 {
    let (hi, lo) = if a > b || b.is_nan() { (a, b) } else { (b, a) };
    if lo == f64::NEG_INFINITY || (hi == f64::INFINITY && !lo.is_nan()) {
        return hi;
    }
    hi + (lo - hi).exp().ln_1p()
}

fn ref_logcumsumexp(x: &[f64], n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(x.len());
    for line in x.chunks(n) {
        let mut acc = f64::NEG_INFINITY;
        for (k, &v) in line.iter().enumerate() {
            acc = if k == 0 { v } else { log_add_exp(acc, v) };
            out.push(acc);
        }
    }
    out
}

/// cummax / cummin: a later element equal to the extreme takes over; a NaN, once seen,
/// stays (a later NaN takes over).
fn ref_cum_extreme(x: &[f64], n: usize, max: bool) -> (Vec<f64>, Vec<i64>) {
    let (mut vals, mut idx) = (Vec::with_capacity(x.len()), Vec::with_capacity(x.len()));
    for line in x.chunks(n) {
        let (mut best, mut at) = (0.0, 0i64);
        for (k, &v) in line.iter().enumerate() {
            let better = if max { v >= best } else { v <= best };
            if k == 0 || v.is_nan() || (!best.is_nan() && better) {
                best = v;
                at = k as i64;
            }
            vals.push(best);
            idx.push(at);
        }
    }
    (vals, idx)
}

// ---- comparisons ----

/// `got` matches `want` within `tol(i)` at each i; NaN matches NaN, inf the same inf.
fn assert_close(what: &str, got: &[f64], want: &[f64], tol: impl Fn(usize) -> f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = if w.is_nan() || w.is_infinite() {
            g.is_nan() && w.is_nan() || g == w
        } else {
            (g - w).abs() <= tol(i)
        };
        assert!(
            ok,
            "{what}: element {i}: got {g}, want {w} (tol {})",
            tol(i)
        );
    }
}

fn assert_exact(what: &str, got: &[f64], want: &[f64]) {
    assert_close(what, got, want, |_| 0.0);
}

/// cumsum of `x` ([lines, n] of dtype d, values `v`) against the f64 loop: exact when
/// `exact` (integer-valued data whose sums every order computes exactly), else within the
/// rounding of a reordered sum: the output's rounding plus, per rounding on the element's
/// dependency chain, an accumulator ulp of the running sum of |x|. A chunked scan's chain
/// has at most about 20 roundings per chunk of 128 or more elements before it.
fn check_cumsum(what: &str, x: &Tensor, v: &[f64], n: usize, exact: bool) -> Result<()> {
    let d = x.dtype();
    let got = x.cumsum(1)?.to_vec::<f64>()?;
    let want = ref_cumsum(v, n);
    if exact {
        assert_exact(what, &got, &want);
    } else {
        let scale = ref_abs_cumsum(v, n);
        assert_close(what, &got, &want, |i| {
            let chain = 24.0 * ((i % n) / 128 + 1) as f64;
            eps_out(d) * want[i].abs() + chain * eps_acc(d) * scale[i]
        });
    }
    Ok(())
}

fn check_extremes(what: &str, x: &Tensor, v: &[f64], n: usize) -> Result<()> {
    for max in [true, false] {
        let (vals, idx) = if max { x.cummax(1)? } else { x.cummin(1)? };
        let (want_v, want_i) = ref_cum_extreme(v, n, max);
        let name = format!("{what} {}", if max { "cummax" } else { "cummin" });
        assert_exact(&name, &vals.to_vec::<f64>()?, &want_v);
        assert_eq!(idx.dtype(), DType::I64);
        let got_i = idx.to_vec::<i64>()?;
        if let Some(i) = (0..got_i.len()).find(|&i| got_i[i] != want_i[i]) {
            panic!("{name}: index {i}: got {}, want {}", got_i[i], want_i[i]);
        }
    }
    Ok(())
}

fn check_logcumsumexp(what: &str, x: &Tensor, v: &[f64], n: usize) -> Result<()> {
    let d = x.dtype();
    let got = x.logcumsumexp(1)?.to_vec::<f64>()?;
    let want = ref_logcumsumexp(v, n);
    // Each result passes through a few dozen log-add-exps at most (a chunk's items, the
    // shuffle and warp steps, one per earlier chunk), each off by a few ulps of its size.
    let steps = 64.0 + (n / 1024) as f64;
    assert_close(what, &got, &want, |i| {
        eps_out(d) * want[i].abs() + 4.0 * steps * eps_acc(d) * (want[i].abs() + 1.0)
    });
    Ok(())
}

/// Line lengths for each launch shape and chunk boundary: a thread (<= 32), a warp (chunks
/// of 128), a block (chunks of 1024).
const LENGTHS: [usize; 16] = [
    1, 2, 31, 32, 33, 127, 128, 129, 255, 256, 257, 1000, 1024, 1025, 2049, 100_000,
];

#[test]
#[ignore = "needs a CUDA device"]
fn cumulative_ops_match_loops_at_every_line_length() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let mut rng = Rng(1);
    for &n in &LENGTHS {
        let lines = 3;
        let shape = [lines, n];
        // Integer-valued f32 and f64: every summation order is exact.
        let iv: Vec<f64> = (0..lines * n).map(|_| rng.int(-3, 4) as f64).collect();
        for d in [DType::F32, DType::F64] {
            let (x, v) = floats(iv.clone(), &shape, d)?;
            check_cumsum(
                &format!("cumsum {d:?} ints n={n}"),
                &x.to_device(dev)?,
                &v,
                n,
                true,
            )?;
        }
        // Random floats: a reordered sum, within its rounding.
        let fv: Vec<f64> = (0..lines * n).map(|_| rng.float(-1.0, 1.0)).collect();
        let (x, v) = floats(fv.clone(), &shape, DType::F32)?;
        let xg = x.to_device(dev)?;
        check_cumsum(&format!("cumsum f32 n={n}"), &xg, &v, n, false)?;
        check_logcumsumexp(&format!("logcumsumexp f32 n={n}"), &xg, &v, n)?;
        let (x64, v64) = floats(fv, &shape, DType::F64)?;
        check_logcumsumexp(
            &format!("logcumsumexp f64 n={n}"),
            &x64.to_device(dev)?,
            &v64,
            n,
        )?;
        // Products of +-1, +-2 and +-0.5 are powers of two: exact in any order while every
        // partial product is in range, which holding each line's running exponent within
        // +-30 ensures (a partial product's exponent is a difference of two of them).
        let mut pv = Vec::with_capacity(lines * n);
        for _ in 0..lines {
            let mut e = 0;
            for _ in 0..n {
                let (x, de) = match rng.int(0, 8) {
                    0 if e < 30 => (2.0, 1),
                    1 if e > -30 => (0.5, -1),
                    2 => (-1.0, 0),
                    3 if e < 30 => (-2.0, 1),
                    4 if e > -30 => (-0.5, -1),
                    _ => (1.0, 0),
                };
                e += de;
                pv.push(x);
            }
        }
        let (x, v) = floats(pv, &shape, DType::F64)?;
        let got = x.to_device(dev)?.cumprod(1)?.to_vec::<f64>()?;
        assert_exact(&format!("cumprod f64 n={n}"), &got, &ref_cumprod(&v, n));
        // Many ties: small integers.
        let tv: Vec<f64> = (0..lines * n).map(|_| rng.int(0, 8) as f64).collect();
        let (x, v) = floats(tv, &shape, DType::F32)?;
        check_extremes(&format!("f32 n={n}"), &x.to_device(dev)?, &v, n)?;
        // Integers wrap alike in any order. Odd factors keep products from wrapping to 0.
        let iv: Vec<i64> = (0..lines * n)
            .map(|_| rng.int(-1 << 40, 1 << 40) | 1)
            .collect();
        let x = Tensor::from_vec(iv.clone(), &shape)?.to_device(dev)?;
        let got = x.cumsum(1)?.to_vec::<i64>()?;
        assert_eq!(
            got,
            ref_int_scan(&iv, n, DType::I64, false),
            "cumsum i64 n={n}"
        );
        let got = x.cumprod(1)?.to_vec::<i64>()?;
        assert_eq!(
            got,
            ref_int_scan(&iv, n, DType::I64, true),
            "cumprod i64 n={n}"
        );
    }
    Ok(())
}

/// One line of 2^20 elements: integer-valued f32 (sums stay below 2^24, so exact), random
/// floats within a reordered sum's rounding, int64, and the extremes.
#[test]
#[ignore = "needs a CUDA device"]
fn a_line_of_a_million_elements_scans() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let n = 1 << 20;
    let mut rng = Rng(2);
    let iv: Vec<f64> = (0..n).map(|_| rng.int(0, 4) as f64).collect();
    let (x, v) = floats(iv, &[1, n], DType::F32)?;
    let xg = x.to_device(dev)?;
    check_cumsum("cumsum f32 ints 2^20", &xg, &v, n, true)?;
    check_extremes("f32 ints 2^20", &xg, &v, n)?;
    let fv: Vec<f64> = (0..n).map(|_| rng.float(0.0, 1.0)).collect();
    let (x, v) = floats(fv, &[1, n], DType::F32)?;
    check_cumsum("cumsum f32 2^20", &x.to_device(dev)?, &v, n, false)?;
    let iv: Vec<i64> = (0..n).map(|_| rng.int(-1 << 50, 1 << 50)).collect();
    let x = Tensor::from_vec(iv.clone(), &[1, n])?.to_device(dev)?;
    assert_eq!(
        x.cumsum(1)?.to_vec::<i64>()?,
        ref_int_scan(&iv, n, DType::I64, false),
        "cumsum i64 2^20"
    );
    // prod goes through cumprod: +-1 keeps the sign exact over the whole line.
    let sv: Vec<f64> = (0..n)
        .map(|_| if rng.int(0, 2) == 0 { -1.0 } else { 1.0 })
        .collect();
    let (x, v) = floats(sv, &[n], DType::F32)?;
    let want: f64 = v.iter().product();
    assert_eq!(
        x.to_device(dev)?.prod()?.item::<f64>()?,
        want,
        "prod of 2^20 signs"
    );
    Ok(())
}

/// Many short lines (a thread each up to 32, a warp each from 4096 lines) and many long
/// lines below that count (a block each).
#[test]
#[ignore = "needs a CUDA device"]
fn many_lines_scan() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let mut rng = Rng(3);
    for (lines, n) in [
        (20_000, 1),
        (5000, 7),
        (5000, 32),
        (5000, 33),
        (4096, 300),
        (4095, 300),
    ] {
        let shape = [lines, n];
        let iv: Vec<f64> = (0..lines * n).map(|_| rng.int(-5, 6) as f64).collect();
        let (x, v) = floats(iv, &shape, DType::F32)?;
        let xg = x.to_device(dev)?;
        check_cumsum(&format!("cumsum f32 [{lines}, {n}]"), &xg, &v, n, true)?;
        check_extremes(&format!("f32 [{lines}, {n}]"), &xg, &v, n)?;
        let fv: Vec<f64> = (0..lines * n).map(|_| rng.float(-3.0, 3.0)).collect();
        let (x, v) = floats(fv, &shape, DType::F64)?;
        check_logcumsumexp(
            &format!("logcumsumexp f64 [{lines}, {n}]"),
            &x.to_device(dev)?,
            &v,
            n,
        )?;
    }
    Ok(())
}

/// Scans along dim 0 of a 2-D tensor and along the dims of a permuted 3-D one (strided
/// lines), against the loops on the scanned dim moved last.
#[test]
#[ignore = "needs a CUDA device"]
fn strided_and_permuted_lines_scan() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let mut rng = Rng(4);
    let base2 = Tensor::from_vec(
        (0..3000 * 5).map(|_| rng.int(-4, 5) as f64).collect(),
        &[3000, 5],
    )?;
    let base3 = Tensor::from_vec(
        (0..7 * 50 * 9).map(|_| rng.int(-4, 5) as f64).collect(),
        &[7, 50, 9],
    )?;
    let cases = [
        (base2.to_dtype(DType::F32)?, 0i64),
        (base2.to_dtype(DType::F32)?.t()?, 1),
        (base3.to_dtype(DType::F32)?.permute(&[2, 0, 1])?, 0),
        (base3.to_dtype(DType::F32)?.permute(&[2, 0, 1])?, 1),
        (base3.to_dtype(DType::F32)?.permute(&[2, 0, 1])?, 2),
    ];
    for (k, (x, dim)) in cases.iter().enumerate() {
        let last = x.dim() as i64 - 1;
        // The same transpose on input and results keeps elements matched and moves the
        // scanned dim last.
        let moved = |t: &Tensor| -> Result<Tensor> { t.cpu()?.transpose(*dim, last)?.contiguous() };
        let xm = moved(x)?;
        let n = xm.shape()[xm.dim() - 1];
        let v = xm.to_vec::<f64>()?;
        let xg = x.to_device(dev)?;
        let what = format!("case {k} dim {dim}");
        let got = moved(&xg.cumsum(*dim)?)?.to_vec::<f64>()?;
        assert_exact(&format!("{what} cumsum"), &got, &ref_cumsum(&v, n));
        for max in [true, false] {
            let (vals, idx) = if max {
                xg.cummax(*dim)?
            } else {
                xg.cummin(*dim)?
            };
            let (want_v, want_i) = ref_cum_extreme(&v, n, max);
            assert_exact(
                &format!("{what} cum extreme values"),
                &moved(&vals)?.to_vec::<f64>()?,
                &want_v,
            );
            assert_eq!(
                moved(&idx)?.to_vec::<i64>()?,
                want_i,
                "{what} cum extreme indices"
            );
        }
    }
    Ok(())
}

/// Every dtype each op lists in native_functions.yaml, at a thread's, a warp's and a
/// block's line length.
#[test]
#[ignore = "needs a CUDA device"]
fn cumulative_ops_cover_every_dtype() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let mut rng = Rng(5);
    for n in [31, 200, 3000] {
        let shape = [2, n];
        for d in INTS {
            // Ranges that overflow every narrow type along the line, so wrapping counts.
            let (lo, hi) = if d == DType::U8 {
                (0, 256)
            } else {
                (-128, 128)
            };
            // Odd values: products stay nonzero modulo 2^bits.
            let iv: Vec<i64> = (0..2 * n).map(|_| rng.int(lo, hi) | 1).collect();
            let x = Tensor::from_vec(iv.clone(), &shape)?
                .to_dtype(d)?
                .to_device(dev)?;
            let got = x.cumsum_with(1, Some(d))?;
            assert_eq!(got.dtype(), d);
            assert_eq!(
                got.to_vec::<i64>()?,
                ref_int_scan(&iv, n, d, false),
                "cumsum {d:?} n={n}"
            );
            let got = x.cumprod_with(1, Some(d))?.to_vec::<i64>()?;
            assert_eq!(got, ref_int_scan(&iv, n, d, true), "cumprod {d:?} n={n}");
            let tv: Vec<i64> = (0..2 * n).map(|_| rng.int(0, 6)).collect();
            let x = Tensor::from_vec(tv.clone(), &shape)?.to_dtype(d)?;
            let v: Vec<f64> = tv.iter().map(|&t| t as f64).collect();
            check_extremes(&format!("{d:?} n={n}"), &x.to_device(dev)?, &v, n)?;
        }
        for d in FLOATS {
            let fv: Vec<f64> = (0..2 * n).map(|_| rng.float(-1.0, 1.0)).collect();
            let (x, v) = floats(fv, &shape, d)?;
            let xg = x.to_device(dev)?;
            check_cumsum(&format!("cumsum {d:?} n={n}"), &xg, &v, n, false)?;
            check_logcumsumexp(&format!("logcumsumexp {d:?} n={n}"), &xg, &v, n)?;
            // Factors near 1 keep the products in range of every float type.
            let pv: Vec<f64> = (0..2 * n).map(|_| rng.float(0.99, 1.01)).collect();
            let (x, v) = floats(pv, &shape, d)?;
            let got = x.to_device(dev)?.cumprod(1)?.to_vec::<f64>()?;
            let want = ref_cumprod(&v, n);
            // Relative: the output's rounding plus an accumulator ulp per factor.
            assert_close(&format!("cumprod {d:?} n={n}"), &got, &want, |i| {
                (eps_out(d) + (n as f64 + 2.0) * eps_acc(d)) * want[i].abs()
            });
            let tv: Vec<f64> = (0..2 * n).map(|_| rng.int(-3, 4) as f64).collect();
            let (x, v) = floats(tv, &shape, d)?;
            check_extremes(&format!("{d:?} n={n}"), &x.to_device(dev)?, &v, n)?;
        }
        let bv: Vec<f64> = (0..2 * n).map(|_| rng.int(0, 2) as f64).collect();
        let (x, v) = floats(bv, &shape, DType::Bool)?;
        check_extremes(&format!("bool n={n}"), &x.to_device(dev)?, &v, n)?;
    }
    Ok(())
}

/// NaN, +inf and -inf in cummax / cummin (values and indices) and logcumsumexp, placed at
/// line starts, chunk boundaries and ends, at each launch shape's length.
#[test]
#[ignore = "needs a CUDA device"]
fn nan_and_inf_in_scans() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let (nan, inf) = (f64::NAN, f64::INFINITY);
    let mut rng = Rng(6);
    for n in [5, 31, 100, 129, 1000, 5000] {
        let lines = 8;
        let mut v: Vec<f64> = (0..lines * n).map(|_| rng.int(-3, 4) as f64).collect();
        let mut put = |line: usize, k: usize, x: f64| {
            if k < n {
                v[line * n + k] = x;
            }
        };
        // Line 0: untouched. 1: a NaN at the start. 2: NaNs mid-line and at a chunk
        // boundary (a later NaN takes over). 3: +inf then NaN. 4: -inf everywhere but one
        // element. 5: +inf twice (the later one takes over for cummax). 6: all NaN.
        // 7: -inf at the start, +inf at the end.
        put(1, 0, nan);
        for k in [n / 2, 128, 1024, n - 1] {
            put(2, k, nan);
        }
        put(3, 1, inf);
        put(3, n - 1, nan);
        for k in 0..n {
            put(4, k, -inf);
        }
        put(4, n / 3, 1.5);
        put(5, 0, inf);
        put(5, n / 2, inf);
        for k in 0..n {
            put(6, k, nan);
        }
        put(7, 0, -inf);
        put(7, n - 1, inf);
        for d in FLOATS {
            let (x, vv) = floats(v.clone(), &[lines, n], d)?;
            let xg = x.to_device(dev)?;
            check_extremes(&format!("{d:?} nan/inf n={n}"), &xg, &vv, n)?;
            check_logcumsumexp(&format!("logcumsumexp {d:?} nan/inf n={n}"), &xg, &vv, n)?;
        }
    }
    Ok(())
}

// ---- full reductions ----

/// The index of the first NaN, else of the first extreme.
fn ref_arg(v: &[f64], max: bool) -> (f64, i64) {
    if let Some(i) = v.iter().position(|x| x.is_nan()) {
        return (f64::NAN, i as i64);
    }
    let mut bi = 0;
    for (i, &x) in v.iter().enumerate() {
        if (max && x > v[bi]) || (!max && x < v[bi]) {
            bi = i;
        }
    }
    (v[bi], bi as i64)
}

fn same(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

/// sum / max / min / argmax / argmin of the whole tensor `x` (values `v`) on the device,
/// against the loops; sums within `tol`.
fn check_full(what: &str, xg: &Tensor, v: &[f64], tol: f64) -> Result<()> {
    let s = xg.sum()?.item::<f64>()?;
    let want: f64 = v.iter().sum();
    assert!(
        (s - want).abs() <= tol || same(s, want),
        "{what} sum: got {s}, want {want} (tol {tol})"
    );
    for max in [true, false] {
        let (wv, wi) = ref_arg(v, max);
        let got = if max { xg.max()? } else { xg.min()? }.item::<f64>()?;
        assert!(same(got, wv), "{what} max={max}: got {got}, want {wv}");
        let gi = if max { xg.argmax()? } else { xg.argmin()? }.item::<i64>()?;
        assert_eq!(gi, wi, "{what} argmax={max}");
    }
    Ok(())
}

/// 2^24 f32 elements of 0, 1 and 2: every sum order is exact (all partial sums are
/// integers below 2^24), the two 2s tie for the max across pieces and the 0s for the min
/// after a run of 1s, so argmax / argmin must find the first; then NaNs (the first wins).
#[test]
#[ignore = "needs a CUDA device"]
fn full_reductions_of_sixteen_million_floats() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let n = 1usize << 24;
    let mut rng = Rng(7);
    let mut v: Vec<f32> = (0..n).map(|_| (rng.next() % 2) as f32).collect();
    let first_zero = 3 * 16_384 + 77;
    for x in v.iter_mut().take(first_zero) {
        *x = 1.0;
    }
    v[first_zero] = 0.0;
    v[n / 2 + 12_345] = 2.0;
    v[n - 100] = 2.0;
    let v64: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    assert_eq!(ref_arg(&v64, true).1, (n / 2 + 12_345) as i64);
    assert_eq!(ref_arg(&v64, false).1, first_zero as i64);
    let x = Tensor::from_vec(v.clone(), &[n])?.to_device(dev)?;
    check_full("f32 2^24", &x, &v64, 0.0)?;
    // As [4096, 4096] with every dim reduced: the same full reduction through a 2-D view.
    let x2 = x.reshape([4096, 4096])?;
    assert_eq!(x2.sum()?.item::<f64>()?, v64.iter().sum::<f64>());
    assert_eq!(x2.argmax()?.item::<i64>()?, ref_arg(&v64, true).1);
    v[n - 3] = f32::NAN;
    v[n / 4 + 7] = f32::NAN;
    let v64: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let x = Tensor::from_vec(v, &[n])?.to_device(dev)?;
    check_full("f32 2^24 with NaN", &x, &v64, 0.0)?;
    // Random floats: a reordered sum within float rounding of the sum of |x|.
    let v: Vec<f64> = (0..1usize << 22).map(|_| rng.float(-1.0, 1.0)).collect();
    let (x, v) = floats(v, &[1 << 22], DType::F32)?;
    let scale: f64 = v.iter().map(|x| x.abs()).sum();
    check_full(
        "f32 2^22 random",
        &x.to_device(dev)?,
        &v,
        64.0 * eps_acc(DType::F32) * scale,
    )?;
    Ok(())
}

/// f16 / bf16 (partials in float), f64, i64 (exact, past 2^53), i32 and u8 (summed as i64).
#[test]
#[ignore = "needs a CUDA device"]
fn full_reductions_of_every_kind_of_dtype() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let n = 1usize << 21;
    let mut rng = Rng(8);
    for d in [DType::F16, DType::BF16, DType::F64] {
        let v: Vec<f64> = (0..n).map(|_| rng.float(-1.0, 1.0)).collect();
        let (x, v) = floats(v, &[n], d)?;
        let want: f64 = v.iter().sum();
        let scale: f64 = v.iter().map(|x| x.abs()).sum();
        let tol = eps_out(d) * want.abs() + 64.0 * eps_acc(d) * scale;
        check_full(&format!("{d:?} 2^21"), &x.to_device(dev)?, &v, tol)?;
    }
    let v: Vec<i64> = (0..n).map(|_| rng.int(-1 << 45, 1 << 45)).collect();
    let x = Tensor::from_vec(v.clone(), &[n])?.to_device(dev)?;
    let want = v.iter().fold(0i64, |a, &b| a.wrapping_add(b));
    assert_eq!(x.sum()?.item::<i64>()?, want, "i64 sum");
    let imax = (0..n)
        .max_by_key(|&i| (v[i], std::cmp::Reverse(i)))
        .unwrap();
    let imin = (0..n).min_by_key(|&i| (v[i], i)).unwrap();
    assert_eq!(x.max()?.item::<i64>()?, v[imax], "i64 max");
    assert_eq!(x.min()?.item::<i64>()?, v[imin], "i64 min");
    assert_eq!(x.argmax()?.item::<i64>()?, imax as i64, "i64 argmax");
    assert_eq!(x.argmin()?.item::<i64>()?, imin as i64, "i64 argmin");
    for d in [DType::I32, DType::U8] {
        let v: Vec<i64> = (0..n).map(|_| rng.int(0, 200)).collect();
        let x = Tensor::from_vec(v.clone(), &[n])?
            .to_dtype(d)?
            .to_device(dev)?;
        let s = x.sum()?;
        assert_eq!(s.dtype(), DType::I64);
        assert_eq!(s.item::<i64>()?, v.iter().sum::<i64>(), "{d:?} sum");
        assert_eq!(
            x.max()?.item::<i64>()?,
            *v.iter().max().unwrap(),
            "{d:?} max"
        );
        let first_max = v.iter().position(|x| x == v.iter().max().unwrap()).unwrap();
        assert_eq!(x.argmax()?.item::<i64>()?, first_max as i64, "{d:?} argmax");
    }
    Ok(())
}

/// any / all of 2^22 bools (through a sum of the nonzeros).
#[test]
#[ignore = "needs a CUDA device"]
fn any_and_all_of_long_bool_tensors() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let n = 1usize << 22;
    for (k, (fill, odd, want_any, want_all)) in [
        (true, None, true, true),
        (true, Some(n - 1), true, false),
        (false, None, false, false),
        (false, Some(n / 2 + 1), true, false),
    ]
    .into_iter()
    .enumerate()
    {
        let mut v = vec![fill; n];
        if let Some(i) = odd {
            v[i] = !fill;
        }
        let x = Tensor::from_vec(v, &[n])?.to_device(dev)?;
        assert_eq!(x.any()?.item::<bool>()?, want_any, "case {k} any");
        assert_eq!(x.all()?.item::<bool>()?, want_all, "case {k} all");
        // max / min of bools are any / all too.
        assert_eq!(x.max()?.item::<bool>()?, want_any, "case {k} max");
        assert_eq!(x.min()?.item::<bool>()?, want_all, "case {k} min");
    }
    Ok(())
}

/// Few outputs of many elements each: [3, 2^20] reduced along dim 1 (contiguous rows) and
/// [2^20, 3] along dim 0 (strided columns), sums and max/min(dim) with ties and NaN.
#[test]
#[ignore = "needs a CUDA device"]
fn few_outputs_of_long_reductions() -> Result<()> {
    let Some(dev) = gpu() else { return Ok(()) };
    let r = 1usize << 20;
    let mut rng = Rng(9);
    // Row 0: small integers (exact sums, ties: the first extreme wins). Row 1: a NaN late.
    // Row 2: random floats.
    let mut rows: Vec<Vec<f64>> = vec![
        (0..r).map(|_| rng.int(-8, 9) as f64).collect(),
        (0..r).map(|_| rng.int(-8, 9) as f64).collect(),
        (0..r).map(|_| rng.float(-1.0, 1.0)).collect(),
    ];
    rows[1][r - 5000] = f64::NAN;
    rows[1][r - 10] = f64::NAN;
    let flat: Vec<f64> = rows.concat();
    let (x, v) = floats(flat, &[3, r], DType::F32)?;
    let rows: Vec<&[f64]> = v.chunks(r).collect();
    let xg = x.to_device(dev)?;
    for (k, xv) in [xg.clone(), xg.t()?.contiguous()?].into_iter().enumerate() {
        // k = 0: reduce dim 1 of [3, r]; k = 1: dim 0 of the [r, 3] copy.
        let dim = 1 - k as i64;
        let sums = xv.sum_dim(&[dim])?.to_vec::<f64>()?;
        for (j, row) in rows.iter().enumerate() {
            let want: f64 = row.iter().sum();
            let scale: f64 = row.iter().map(|x| x.abs()).sum();
            let tol = 64.0 * eps_acc(DType::F32) * scale;
            assert!(
                same(sums[j], want) || (sums[j] - want).abs() <= tol,
                "layout {k} row {j} sum: got {}, want {want}",
                sums[j]
            );
        }
        for max in [true, false] {
            let (vals, idx) = if max {
                xv.max_dim(dim)?
            } else {
                xv.min_dim(dim)?
            };
            let (vals, idx) = (vals.to_vec::<f64>()?, idx.to_vec::<i64>()?);
            let am = if max {
                xv.argmax_with(Some(dim), false)?
            } else {
                xv.argmin_with(Some(dim), false)?
            };
            let am = am.to_vec::<i64>()?;
            for (j, row) in rows.iter().enumerate() {
                let (wv, wi) = ref_arg(row, max);
                assert!(
                    same(vals[j], wv),
                    "layout {k} row {j} max={max}: {} vs {wv}",
                    vals[j]
                );
                assert_eq!(idx[j], wi, "layout {k} row {j} max_dim={max} index");
                assert_eq!(am[j], wi, "layout {k} row {j} argmax={max}");
            }
        }
    }
    Ok(())
}
