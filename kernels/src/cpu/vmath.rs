//! Vectorised transcendental functions over slices: the CPU slice kernels that a pointwise
//! op names with `vectorized:` in native_functions.yaml, and the softmax row kernels.
//!
//! Every function here is written once, per element, branch-free (a `select` instead of an
//! `if` where the two sides differ), in plain Rust on `f32`/`f64` with integer bit tricks:
//! Cody–Waite range reduction, a polynomial fitted by `kernels/tools/fit_vmath.py`, and the
//! exponent field built directly. A loop applying such a function over a slice is then
//! auto-vectorised by LLVM. [`multiversion!`] compiles each loop three times — for AVX-512F,
//! for AVX2 + FMA, and for the target's baseline (SSE2 on x86-64, NEON on aarch64) — and the
//! public function picks the best copy the running CPU supports (detected once, see
//! [`Isa::best`]). The FMA copies contract `a * b + c` into one fused operation ([`mla32`]);
//! the others round twice, so results may differ between CPUs in the last place (as
//! PyTorch's do between its CPU capabilities), each copy within the bounds tested below.
//! (Debug builds compile this crate at opt-level 1, which does not vectorise: the speed is
//! a release property; the results are the same.)
//!
//! The public functions are non-generic, so they compile once, in this crate.
//!
//! Accuracy: the largest error measured over sweeps of every input binade (every 509th f32;
//! 2^22 random and 2^20 gridded f64) plus runs of consecutive values around each threshold,
//! on every instruction set (the tests assert a bound a little above each). f32 results
//! against float64 references:
//!
//! | f32       | max ulp | f32             | max ulp |
//! |-----------|---------|-----------------|---------|
//! | `exp`     | 0.98    | `sigmoid`       | 2.26    |
//! | `expm1`   | 1.46    | `silu`          | 2.79    |
//! | `log`     | 0.89    | `erf`           | 1.15    |
//! | `log1p`   | 1.44    | `gelu`          | 4.96    |
//! | `tanh`    | 1.25    | `gelu` (tanh)   | 2.64 †  |
//!
//! f64 results in the sweep ("sweep") against references that are rounded doubles
//! themselves, so in whole ulps that include the reference's own error: std's functions
//! (within about an ulp; glibc's `tanh` within 2), `libm::erf`, and for `gelu` double-double
//! evaluations in the tests (within about an ulp). The new f64 functions also against exact
//! values ("exact": 60-digit mpmath at about 400 inputs each, from
//! `kernels/tools/vmath64_reference.py`), in fractions of an ulp. Where the instruction sets
//! differ, the FMA copies' figure comes first and the baseline's (x86-64 without FMA) after
//! the slash:
//!
//! | f64       | sweep | exact | f64             | sweep | exact       |
//! |-----------|-------|-------|-----------------|-------|-------------|
//! | `exp`     | 1     |       | `tanh`          | 2     | 1.14        |
//! | `log`     | 1     |       | `erf`           | 1     | 0.78        |
//! | `sigmoid` | 2     |       | `gelu`          | 4 / 5 | 2.30        |
//! | `silu`    | 3     |       | `gelu` (tanh)   | 3     | 1.44 / 1.97 |
//! | `expm1`   | 2     | 1.52  |                 |       |             |
//! | `log1p`   | 1     | 0.97  |                 |       |             |
//!
//! Subnormal results included (`exp` rounds into them once). † beyond twice the condition
//! number for x < 0: the tanh form rounds its argument `√(2/π)(x + 0.044715x³)` first, as
//! PyTorch's f32 formula does, and the function magnifies that by up to ~x² in the tail.
//! The f64 tanh form carries that argument in double-double instead, so its figures are
//! plain errors against the formula with √(2/π) and 0.044715 taken exactly. (PyTorch's f64
//! CPU kernels evaluate `0.5x(1 + tanh u)` and `0.5x(1 + erf(x/√2))` as written, which
//! cancel in the negative tail: there they keep only an absolute accuracy of about 1e-16,
//! where these keep a few ulps down to underflow.)
//! Special values follow IEEE: NaN in, NaN out; `exp(-inf) = 0`, `exp(inf) = inf`,
//! `log(0) = -inf`, `log(x < 0) = NaN`, `log1p(-1) = -inf`, `expm1(-inf) = -1`, and so on;
//! the f64 `tanh`, `expm1`, `log1p`, `erf` and `gelu` keep the sign of a zero.

use std::sync::atomic::{AtomicU8, Ordering};

// ---------------------------------------------------------------------------------------
// Instruction sets and dispatch
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    Baseline,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
}

/// An instruction set the running CPU supports. Only [`Isa::best`] and [`Isa::supported`]
/// make one, after checking the CPU's features, so holding an `Isa` proves its copy of a
/// kernel may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Isa(Level);

/// The detected level, cached: 0 = not yet detected, else `1 + index` in [`Isa::supported`].
static DETECTED: AtomicU8 = AtomicU8::new(0);

impl Isa {
    /// Every instruction set this CPU supports, best last.
    pub(crate) fn supported() -> Vec<Isa> {
        #[allow(unused_mut)]
        let mut all = vec![Isa(Level::Baseline)];
        #[cfg(target_arch = "x86_64")]
        {
            let fma = is_x86_feature_detected!("fma");
            if fma && is_x86_feature_detected!("avx2") {
                all.push(Isa(Level::Avx2));
                if is_x86_feature_detected!("avx512f") {
                    all.push(Isa(Level::Avx512));
                }
            }
        }
        all
    }

    /// The best instruction set this CPU supports (detected on the first call).
    #[inline]
    pub(crate) fn best() -> Isa {
        let d = DETECTED.load(Ordering::Relaxed);
        if d != 0 {
            return Isa::supported_at(d - 1);
        }
        let n = Isa::supported().len() as u8;
        DETECTED.store(n, Ordering::Relaxed);
        Isa::supported_at(n - 1)
    }

    /// The `i`-th entry of [`Isa::supported`], without detecting again: only called with an
    /// index that detection produced.
    fn supported_at(i: u8) -> Isa {
        match i {
            #[cfg(target_arch = "x86_64")]
            1 => Isa(Level::Avx2),
            #[cfg(target_arch = "x86_64")]
            2 => Isa(Level::Avx512),
            _ => Isa(Level::Baseline),
        }
    }
}

/// Whether the baseline copy may fuse multiply-adds: only where the target guarantees an
/// FMA instruction (aarch64 always has one; an x86-64 build has one only when compiled for
/// it), since `mul_add` is a slow library call otherwise.
const BASE_FMA: bool = cfg!(any(target_feature = "fma", target_arch = "aarch64"));

/// Defines `fn $name(isa: Isa, args...)` that runs `$body::<FMA>(args...)` compiled for the
/// instruction set `isa` names. `$body` is an `#[inline(always)]` function generic over
/// `const F: bool` (fused multiply-add or not), so each copy below is the same source
/// compiled, and vectorised, for its own target features.
macro_rules! multiversion {
    ($(#[$attr:meta])* $vis:vis fn $name:ident($($p:ident: $ty:ty),* $(,)?) => $body:ident) => {
        $(#[$attr])*
        $vis fn $name(isa: Isa, $($p: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx512f,avx2,fma")]
            fn avx512($($p: $ty),*) {
                $body::<true>($($p),*)
            }
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = "avx2,fma")]
            fn avx2($($p: $ty),*) {
                $body::<true>($($p),*)
            }
            match isa.0 {
                // SAFETY: an `Isa` of this level exists only once `Isa::supported` has seen
                // the CPU report AVX-512F, AVX2 and FMA, the features `avx512` is built with.
                #[cfg(target_arch = "x86_64")]
                Level::Avx512 => unsafe { avx512($($p),*) },
                // SAFETY: as above, for AVX2 and FMA.
                #[cfg(target_arch = "x86_64")]
                Level::Avx2 => unsafe { avx2($($p),*) },
                Level::Baseline => $body::<BASE_FMA>($($p),*),
            }
        }
    };
}

/// `out[i] = f(a[i])`: the loop LLVM vectorises once `f` is inlined.
#[inline(always)]
fn map<T: Copy>(a: &[T], out: &mut [T], f: impl Fn(T) -> T) {
    for (o, &x) in out.iter_mut().zip(a) {
        *o = f(x);
    }
}

/// Defines, for each `name: type => lane`, a module `name` whose `run(isa, a, out)` maps
/// `lane::<F>` over a slice and whose `run_(isa, x)` does so in place (see
/// [`multiversion!`]).
macro_rules! map_kernels {
    ($($name:ident: $t:ty => $lane:ident;)*) => {$(
        mod $name {
            use super::*;
            #[inline(always)]
            fn body<const F: bool>(a: &[$t], out: &mut [$t]) {
                // The loop written out (not `map(a, out, $lane::<F>)`): a function item is
                // called through a shim that LLVM may decline to inline once it is large.
                for (o, &x) in out.iter_mut().zip(a) {
                    *o = $lane::<F>(x);
                }
            }
            multiversion!(pub(super) fn run(a: &[$t], out: &mut [$t]) => body);
            #[inline(always)]
            fn body_<const F: bool>(x: &mut [$t]) {
                for v in x.iter_mut() {
                    *v = $lane::<F>(*v);
                }
            }
            multiversion!(pub(super) fn run_(x: &mut [$t]) => body_);
        }
    )*};
}

map_kernels! {
    exp32_k: f32 => exp32;
    expm1_32_k: f32 => expm1_32;
    log32_k: f32 => log32;
    log1p32_k: f32 => log1p32;
    tanh32_k: f32 => tanh32;
    sigmoid32_k: f32 => sigmoid32;
    silu32_k: f32 => silu32;
    erf32_k: f32 => erf32;
    gelu32_k: f32 => gelu32;
    gelu_tanh32_k: f32 => gelu_tanh32;
    exp64_k: f64 => exp64;
    log64_k: f64 => log64;
    sigmoid64_k: f64 => sigmoid64;
    silu64_k: f64 => silu64;
    expm1_64_k: f64 => expm1_64;
    log1p64_k: f64 => log1p64;
    tanh64_k: f64 => tanh64;
    erf64_k: f64 => erf64;
    gelu64_k: f64 => gelu64;
    gelu_tanh64_k: f64 => gelu_tanh64;
}

fn check_len(a: usize, out: usize) {
    assert_eq!(
        a, out,
        "kiln internal error: a slice kernel got an input of {a} and an output of {out} elements"
    );
}

// ---------------------------------------------------------------------------------------
// The slice kernels
// ---------------------------------------------------------------------------------------

/// `out[i] = e^a[i]`. The slices must have equal lengths.
pub fn exp_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    exp32_k::run(Isa::best(), a, out)
}

/// `x[i] = e^x[i]` in place.
pub fn exp_f32_(x: &mut [f32]) {
    exp32_k::run_(Isa::best(), x)
}

/// `out[i] = e^a[i] - 1`, accurate near 0. The slices must have equal lengths.
pub fn expm1_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    expm1_32_k::run(Isa::best(), a, out)
}

/// `x[i] = e^x[i] - 1` in place.
pub fn expm1_f32_(x: &mut [f32]) {
    expm1_32_k::run_(Isa::best(), x)
}

/// `out[i] = ln a[i]`. The slices must have equal lengths.
pub fn log_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    log32_k::run(Isa::best(), a, out)
}

/// `x[i] = ln x[i]` in place.
pub fn log_f32_(x: &mut [f32]) {
    log32_k::run_(Isa::best(), x)
}

/// `out[i] = ln(1 + a[i])`, accurate near 0. The slices must have equal lengths.
pub fn log1p_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    log1p32_k::run(Isa::best(), a, out)
}

/// `x[i] = ln(1 + x[i])` in place.
pub fn log1p_f32_(x: &mut [f32]) {
    log1p32_k::run_(Isa::best(), x)
}

/// `out[i] = tanh a[i]`. The slices must have equal lengths.
pub fn tanh_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    tanh32_k::run(Isa::best(), a, out)
}

/// `x[i] = tanh x[i]` in place.
pub fn tanh_f32_(x: &mut [f32]) {
    tanh32_k::run_(Isa::best(), x)
}

/// `out[i] = 1 / (1 + e^-a[i])`. The slices must have equal lengths.
pub fn sigmoid_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    sigmoid32_k::run(Isa::best(), a, out)
}

/// `x[i] = 1 / (1 + e^-x[i])` in place.
pub fn sigmoid_f32_(x: &mut [f32]) {
    sigmoid32_k::run_(Isa::best(), x)
}

/// `out[i] = a[i] * sigmoid(a[i])`. The slices must have equal lengths.
pub fn silu_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    silu32_k::run(Isa::best(), a, out)
}

/// `x[i] = x[i] * sigmoid(x[i])` in place.
pub fn silu_f32_(x: &mut [f32]) {
    silu32_k::run_(Isa::best(), x)
}

/// `out[i] = erf a[i]`. The slices must have equal lengths.
pub fn erf_f32(a: &[f32], out: &mut [f32]) {
    check_len(a.len(), out.len());
    erf32_k::run(Isa::best(), a, out)
}

/// `x[i] = erf x[i]` in place.
pub fn erf_f32_(x: &mut [f32]) {
    erf32_k::run_(Isa::best(), x)
}

/// `out[i] = gelu(a[i])`: `x Φ(x)` exactly, or PyTorch's tanh formula when `approximate` is
/// `"tanh"` (the op's check function has already rejected other strings than `"none"`).
/// The slices must have equal lengths.
pub fn gelu_f32(a: &[f32], out: &mut [f32], approximate: &str) {
    check_len(a.len(), out.len());
    if approximate == "tanh" {
        gelu_tanh32_k::run(Isa::best(), a, out)
    } else {
        gelu32_k::run(Isa::best(), a, out)
    }
}

/// `x[i] = gelu(x[i])` in place, as [`gelu_f32`].
pub fn gelu_f32_(x: &mut [f32], approximate: &str) {
    if approximate == "tanh" {
        gelu_tanh32_k::run_(Isa::best(), x)
    } else {
        gelu32_k::run_(Isa::best(), x)
    }
}

/// `out[i] = e^a[i]`. The slices must have equal lengths.
pub fn exp_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    exp64_k::run(Isa::best(), a, out)
}

/// `x[i] = e^x[i]` in place.
pub fn exp_f64_(x: &mut [f64]) {
    exp64_k::run_(Isa::best(), x)
}

/// `out[i] = ln a[i]`. The slices must have equal lengths.
pub fn log_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    log64_k::run(Isa::best(), a, out)
}

/// `x[i] = ln x[i]` in place.
pub fn log_f64_(x: &mut [f64]) {
    log64_k::run_(Isa::best(), x)
}

/// `out[i] = 1 / (1 + e^-a[i])`. The slices must have equal lengths.
pub fn sigmoid_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    sigmoid64_k::run(Isa::best(), a, out)
}

/// `x[i] = 1 / (1 + e^-x[i])` in place.
pub fn sigmoid_f64_(x: &mut [f64]) {
    sigmoid64_k::run_(Isa::best(), x)
}

/// `out[i] = a[i] * sigmoid(a[i])`. The slices must have equal lengths.
pub fn silu_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    silu64_k::run(Isa::best(), a, out)
}

/// `x[i] = x[i] * sigmoid(x[i])` in place.
pub fn silu_f64_(x: &mut [f64]) {
    silu64_k::run_(Isa::best(), x)
}

/// `out[i] = e^a[i] - 1`, accurate near 0. The slices must have equal lengths.
pub fn expm1_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    expm1_64_k::run(Isa::best(), a, out)
}

/// `x[i] = e^x[i] - 1` in place.
pub fn expm1_f64_(x: &mut [f64]) {
    expm1_64_k::run_(Isa::best(), x)
}

/// `out[i] = ln(1 + a[i])`, accurate near 0. The slices must have equal lengths.
pub fn log1p_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    log1p64_k::run(Isa::best(), a, out)
}

/// `x[i] = ln(1 + x[i])` in place.
pub fn log1p_f64_(x: &mut [f64]) {
    log1p64_k::run_(Isa::best(), x)
}

/// `out[i] = tanh a[i]`. The slices must have equal lengths.
pub fn tanh_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    tanh64_k::run(Isa::best(), a, out)
}

/// `x[i] = tanh x[i]` in place.
pub fn tanh_f64_(x: &mut [f64]) {
    tanh64_k::run_(Isa::best(), x)
}

/// `out[i] = erf a[i]`. The slices must have equal lengths.
pub fn erf_f64(a: &[f64], out: &mut [f64]) {
    check_len(a.len(), out.len());
    erf64_k::run(Isa::best(), a, out)
}

/// `x[i] = erf x[i]` in place.
pub fn erf_f64_(x: &mut [f64]) {
    erf64_k::run_(Isa::best(), x)
}

/// `out[i] = gelu(a[i])`, as [`gelu_f32`]. The slices must have equal lengths.
pub fn gelu_f64(a: &[f64], out: &mut [f64], approximate: &str) {
    check_len(a.len(), out.len());
    if approximate == "tanh" {
        gelu_tanh64_k::run(Isa::best(), a, out)
    } else {
        gelu64_k::run(Isa::best(), a, out)
    }
}

/// `x[i] = gelu(x[i])` in place, as [`gelu_f32`].
pub fn gelu_f64_(x: &mut [f64], approximate: &str) {
    if approximate == "tanh" {
        gelu_tanh64_k::run_(Isa::best(), x)
    } else {
        gelu64_k::run_(Isa::best(), x)
    }
}

// ---------------------------------------------------------------------------------------
// Softmax rows
// ---------------------------------------------------------------------------------------

/// What the row kernels need of `f32` and `f64`.
trait Lane:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    const NEG_INFINITY: Self;
    const ZERO: Self;
    const ONE: Self;
    fn ln(self) -> Self;
}

impl Lane for f32 {
    const NEG_INFINITY: f32 = f32::NEG_INFINITY;
    const ZERO: f32 = 0.0;
    const ONE: f32 = 1.0;
    fn ln(self) -> f32 {
        f32::ln(self)
    }
}

impl Lane for f64 {
    const NEG_INFINITY: f64 = f64::NEG_INFINITY;
    const ZERO: f64 = 0.0;
    const ONE: f64 = 1.0;
    fn ln(self) -> f64 {
        f64::ln(self)
    }
}

/// Independent accumulators a reduction keeps (two AVX-512 or four AVX2 registers of f32),
/// so that it vectorises and its additions overlap.
const ACC: usize = 32;

/// The largest element, ignoring NaNs (`-inf` for none).
#[inline(always)]
fn max_lanes<T: Lane>(x: &[T]) -> T {
    let mut m = [T::NEG_INFINITY; ACC];
    let mut chunks = x.chunks_exact(ACC);
    for c in &mut chunks {
        for i in 0..ACC {
            m[i] = if c[i] > m[i] { c[i] } else { m[i] };
        }
    }
    for (i, &v) in chunks.remainder().iter().enumerate() {
        m[i] = if v > m[i] { v } else { m[i] };
    }
    m.iter()
        .fold(T::NEG_INFINITY, |a, &b| if b > a { b } else { a })
}

/// The sum of the elements, in [`ACC`] interleaved partial sums.
#[inline(always)]
fn sum_lanes<T: Lane>(x: &[T]) -> T {
    let mut s = [T::ZERO; ACC];
    let mut chunks = x.chunks_exact(ACC);
    for c in &mut chunks {
        for i in 0..ACC {
            s[i] = s[i] + c[i];
        }
    }
    for (i, &v) in chunks.remainder().iter().enumerate() {
        s[i] = s[i] + v;
    }
    let mut width = ACC;
    while width > 1 {
        width /= 2;
        for i in 0..width {
            s[i] = s[i] + s[i + width];
        }
    }
    s[0]
}

/// Softmax (or log-softmax when `LOG`) of each `n`-element row of `x` into `out`: a max
/// pass, an exp pass writing `e^(x - max)` into `out`, a sum pass over `out`, then either a
/// scale pass (`out *= 1 / sum`) or, for log-softmax, `out = (x - max) - ln sum`. A row of
/// a few thousand elements stays in L1 across the passes. A NaN anywhere in a row makes the
/// whole row NaN (through the sum), as in PyTorch.
#[inline(always)]
fn softmax_rows<T: Lane, const LOG: bool>(x: &[T], out: &mut [T], n: usize, exp: impl Fn(T) -> T) {
    if n == 0 {
        return;
    }
    for (xr, or) in x.chunks_exact(n).zip(out.chunks_exact_mut(n)) {
        let max = max_lanes(xr);
        map(xr, or, |v| exp(v - max));
        let sum = sum_lanes(or);
        if LOG {
            let log_sum = sum.ln();
            map(xr, or, |v| (v - max) - log_sum);
        } else {
            let inv = T::ONE / sum;
            or.iter_mut().for_each(|v| *v = *v * inv);
        }
    }
}

macro_rules! row_kernels {
    ($($name:ident: $t:ty, $log:expr => $lane:ident;)*) => {$(
        mod $name {
            use super::*;
            #[inline(always)]
            fn body<const F: bool>(x: &[$t], out: &mut [$t], n: usize) {
                softmax_rows::<$t, $log>(x, out, n, |v| $lane::<F>(v))
            }
            multiversion!(pub(super) fn run(x: &[$t], out: &mut [$t], n: usize) => body);
        }
    )*};
}

row_kernels! {
    softmax32_k: f32, false => exp32;
    log_softmax32_k: f32, true => exp32;
    softmax64_k: f64, false => exp64;
    log_softmax64_k: f64, true => exp64;
}

fn check_rows(x: usize, out: usize, n: usize) {
    check_len(x, out);
    assert!(
        n == 0 || x.is_multiple_of(n),
        "kiln internal error: {x} elements are not rows of {n}"
    );
}

/// Softmax of each `n`-element row of `x` into `out` (equal lengths, a multiple of `n`).
pub fn softmax_f32(x: &[f32], out: &mut [f32], n: usize) {
    check_rows(x.len(), out.len(), n);
    softmax32_k::run(Isa::best(), x, out, n)
}

/// Log-softmax of each `n`-element row of `x` into `out` (equal lengths, a multiple of `n`).
pub fn log_softmax_f32(x: &[f32], out: &mut [f32], n: usize) {
    check_rows(x.len(), out.len(), n);
    log_softmax32_k::run(Isa::best(), x, out, n)
}

/// Softmax of each `n`-element row of `x` into `out` (equal lengths, a multiple of `n`).
pub fn softmax_f64(x: &[f64], out: &mut [f64], n: usize) {
    check_rows(x.len(), out.len(), n);
    softmax64_k::run(Isa::best(), x, out, n)
}

/// Log-softmax of each `n`-element row of `x` into `out` (equal lengths, a multiple of `n`).
pub fn log_softmax_f64(x: &[f64], out: &mut [f64], n: usize) {
    check_rows(x.len(), out.len(), n);
    log_softmax64_k::run(Isa::best(), x, out, n)
}

// ---------------------------------------------------------------------------------------
// f32 lanes
// ---------------------------------------------------------------------------------------

/// `a * b + c`, fused into one rounding when `F`.
#[inline(always)]
fn mla32<const F: bool>(a: f32, b: f32, c: f32) -> f32 {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// `c[0] + c[1] x + c[2] x² + ...` by Horner's rule.
#[inline(always)]
fn poly32<const F: bool, const N: usize>(x: f32, c: &[f32; N]) -> f32 {
    let mut acc = c[N - 1];
    for i in (0..N - 1).rev() {
        acc = mla32::<F>(acc, x, c[i]);
    }
    acc
}

// Coefficients from kernels/tools/fit_vmath.py (weighted minimax fits, rounded to f32).

/// `e^r = 1 + r + r² P(r)` on |r| ≤ ln2 / 2.
const EXP_P: [f32; 5] = [0.49999994, 0.1666652, 0.0416684, 0.008368852, 0.001381432];
/// `ln(1 + f) = f - f²/2 + f³ P(f)` on f ∈ [√½ - 1, √2 - 1].
const LOG_P: [f32; 8] = [
    0.3333333,
    -0.2500082,
    0.20001227,
    -0.16623357,
    0.14201757,
    -0.13160184,
    0.12761582,
    -0.07634501,
];
/// `tanh x = x + x³ P(x²)` on |x| < [`TANH_SPLIT`].
const TANH_P: [f32; 5] = [
    -0.3333328,
    0.13331442,
    -0.053739715,
    0.020639086,
    -0.005704985,
];
const TANH_SPLIT: f32 = 0.625;
/// `erf x = x + x Q(x²)` on |x| < [`ERF_SPLIT`].
const ERF_Q: [f32; 7] = [
    0.12837917,
    -0.37612626,
    0.112835854,
    -0.026853813,
    0.005188328,
    -0.00080101995,
    7.853878e-05,
];
const ERF_SPLIT: f32 = 1.0;
/// `erfc t = e^(-t²) u S(v)` for t ∈ [[`ERF_SPLIT`], [`ERFC_TMAX`]], `u = 1/t` and `v` the
/// affine map of u's range onto [-1, 1].
const ERFC_S: [f32; 11] = [
    0.50275815,
    -0.076875806,
    -0.0043124165,
    0.009187388,
    -0.0040823133,
    0.0009652694,
    8.75356e-05,
    -0.00029579972,
    0.00019358197,
    -2.1756754e-05,
    -2.0283494e-05,
];
/// Beyond it erfc rounds to 0 in f32.
const ERFC_TMAX: f32 = 10.5;
const ERFC_UMIN: f32 = 1.0 / ERFC_TMAX;
const ERFC_V_SCALE: f32 = 2.0 / (1.0 / ERF_SPLIT - ERFC_UMIN);
const ERFC_V_SHIFT: f32 = (1.0 / ERF_SPLIT + ERFC_UMIN) / (1.0 / ERF_SPLIT - ERFC_UMIN);

/// 1.5 · 2^23: adding it to |v| < 2^22 rounds v to an integer, held in the low mantissa bits.
const SHIFT32: f32 = 12582912.0;
/// ln 2 = LN2_HI + LN2_LO, LN2_HI with 9 significant bits so that `n * LN2_HI` is exact.
const LN2_HI32: f32 = 355.0 / 512.0;
const LN2_LO32: f32 = -2.1219444e-4;
/// The bits of √½, the bottom of the reduced range of `log`.
const SQRT_HALF_BITS32: i32 = 0x3f35_04f3;

/// `2^k` for k ∈ [-126, 127], built in the exponent field.
#[inline(always)]
fn pow2_32(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) << 23) as u32)
}

/// `e^x` as `(p, a, b)` with e^x = p·a·b: x = n ln2 + r with |r| ≤ ln2/2, p = e^r, and
/// a·b = 2^n as two powers of two of about half n each, so that multiplying p (or p times a
/// moderate factor) by `a` then `b` rounds once even where the result is subnormal, and
/// overflows to inf past f32::MAX. Down to x = -150 the parts are exact, so that a product
/// `c·p·a·b` with c up to 2^40 is still right where it underflows.
#[inline(always)]
fn exp32_parts<const F: bool>(x: f32) -> (f32, f32, f32) {
    // Clamped so that n stays in [-217, 128], where both halves of 2^n are normal floats;
    // NaN passes both comparisons.
    let x = if x > 89.0 { 89.0 } else { x };
    let x = if x < -150.0 { -150.0 } else { x };
    let z = mla32::<F>(x, std::f32::consts::LOG2_E, SHIFT32);
    let n = z - SHIFT32;
    let k = (z.to_bits() as i32).wrapping_sub(SHIFT32.to_bits() as i32);
    let r = mla32::<F>(n, -LN2_HI32, x);
    let r = mla32::<F>(n, -LN2_LO32, r);
    let p = mla32::<F>(r * r, poly32::<F, 5>(r, &EXP_P), r) + 1.0;
    let half = k >> 1;
    (p, pow2_32(half), pow2_32(k.wrapping_sub(half)))
}

/// `e^x` (see [`exp32_parts`]).
#[inline(always)]
fn exp32<const F: bool>(x: f32) -> f32 {
    let (p, a, b) = exp32_parts::<F>(x);
    p * a * b
}

/// `e^x - 1`: with x = n ln2 + r as in [`exp32_parts`], e^x - 1 = 2^n (e^r - 1) + (2^n - 1),
/// where e^r - 1 = r + r² P(r) has no cancellation and 2^n - 1 is exact for the n that
/// matter (beyond, the -1 or the e^r - 1 term vanishes in rounding).
#[inline(always)]
fn expm1_32<const F: bool>(x: f32) -> f32 {
    // -30 already gives -1; above 80 the -1 is below half an ulp of e^x.
    let xc = if x > 80.0 { 80.0 } else { x };
    let xc = if xc < -30.0 { -30.0 } else { xc };
    let z = mla32::<F>(xc, std::f32::consts::LOG2_E, SHIFT32);
    let n = z - SHIFT32;
    let k = (z.to_bits() as i32).wrapping_sub(SHIFT32.to_bits() as i32);
    let r = mla32::<F>(n, -LN2_HI32, xc);
    let r = mla32::<F>(n, -LN2_LO32, r);
    let em1 = mla32::<F>(r * r, poly32::<F, 5>(r, &EXP_P), r);
    let t = pow2_32(k);
    let y = mla32::<F>(t, em1, t - 1.0);
    if x > 80.0 {
        exp32::<F>(x)
    } else if x == 0.0 {
        // ±0 itself: the reduction above gives +0 for -0.
        x
    } else {
        y
    }
}

/// `ln(1 + x)`: `ln u + (x - (u - 1)) / u` with u = 1 + x rounded, the second term putting
/// back what the rounding of u lost (exactly 0 when it lost nothing).
#[inline(always)]
fn log1p32<const F: bool>(x: f32) -> f32 {
    let u = 1.0 + x;
    let y = log32::<F>(u) + (x - (u - 1.0)) / u;
    // u = 0 (x = -1) gives -inf, u = inf gives inf, not the correction's NaN; a tiny x keeps
    // its sign (ln(1 + -0) = -0).
    let y = if u == 0.0 { f32::NEG_INFINITY } else { y };
    let y = if x == f32::INFINITY { x } else { y };
    if u == 1.0 {
        x
    } else {
        y
    }
}

/// `ln x`: x = 2^e m with m ∈ [√½, √2), ln x = e ln2 + ln(1 + f), f = m - 1 exact.
#[inline(always)]
fn log32<const F: bool>(x: f32) -> f32 {
    // Subnormals are scaled into the normal range first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8388608.0 } else { x };
    let bias = if tiny { -23.0 } else { 0.0 };
    let ix = (xs.to_bits() as i32).wrapping_sub(SQRT_HALF_BITS32);
    let e = (ix >> 23) as f32 + bias;
    let m = f32::from_bits(((ix & 0x007f_ffff) + SQRT_HALF_BITS32) as u32);
    let f = m - 1.0;
    let f2 = f * f;
    let tail = mla32::<F>(f2 * f, poly32::<F, 8>(f, &LOG_P), -0.5 * f2);
    let y = mla32::<F>(e, LN2_LO32, tail) + f;
    let y = mla32::<F>(e, LN2_HI32, y);
    let y = if x == 0.0 { f32::NEG_INFINITY } else { y };
    let y = if x < 0.0 || x.is_nan() { f32::NAN } else { y };
    if x == f32::INFINITY {
        f32::INFINITY
    } else {
        y
    }
}

/// `tanh x`: a polynomial near 0, else `1 - 2 / (e^2|x| + 1)` with x's sign.
#[inline(always)]
fn tanh32<const F: bool>(x: f32) -> f32 {
    let ax = x.abs();
    let s = x * x;
    // The sign put back: at -0, `-0 · p + -0` with p < 0 rounds to +0.
    let small = mla32::<F>(x * s, poly32::<F, 5>(s, &TANH_P), x).copysign(x);
    let q = exp32::<F>(ax + ax);
    let large = (1.0 - 2.0 / (q + 1.0)).copysign(x);
    if ax < TANH_SPLIT {
        small
    } else {
        large
    }
}

/// `1 / (1 + e^-x)`, as `e^x / (1 + e^x)` for negative x so that no cancellation or
/// overflow occurs on either side.
#[inline(always)]
fn sigmoid32<const F: bool>(x: f32) -> f32 {
    let e = exp32::<F>(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// `x * sigmoid(x)`, in the same form as [`sigmoid32`]; x multiplies e^x's parts before
/// they are scaled, so a subnormal e^x loses nothing.
#[inline(always)]
fn silu32<const F: bool>(x: f32) -> f32 {
    let (p, a, b) = exp32_parts::<F>(-x.abs());
    // Below -120 the result is 0; -inf gives NaN, as x·sigmoid(x) does in PyTorch.
    let neg = if x < -120.0 { x * 0.0 } else { x * p * a * b };
    let num = if x < 0.0 { neg } else { x };
    num / mla32::<F>(p * a, b, 1.0)
}

/// `t²` is `hi + residual` exactly; this is the residual (`hi` = `t * t` rounded).
#[inline(always)]
fn square_residual32<const F: bool>(t: f32, hi: f32) -> f32 {
    if F {
        t.mul_add(t, -hi)
    } else {
        // Dekker's product: t split into two 12-bit halves whose products are exact.
        let c = t * 4097.0;
        let th = c - (c - t);
        let tl = t - th;
        ((th * th - hi) + 2.0 * th * tl) + tl * tl
    }
}

/// `erfc t = m·a·b` for t ≥ [`ERF_SPLIT`] (any t ≥ 0 gives finite parts), as
/// [`exp32_parts`] gives e^x, from `t` and `t² = hi + lo` exactly.
#[inline(always)]
fn erfc_tail32<const F: bool>(t: f32, hi: f32, lo: f32) -> (f32, f32, f32) {
    let u = 1.0 / t;
    let s = poly32::<F, 11>(mla32::<F>(u, ERFC_V_SCALE, -ERFC_V_SHIFT), &ERFC_S);
    // e^-(hi + lo) = e^-hi (1 - lo): the rounding of t² would otherwise cost up to t² ulp.
    let (p, a, b) = exp32_parts::<F>(-hi);
    (mla32::<F>(-lo, p, p) * (u * s), a, b)
}

/// `x²` as `(hi, lo)`, hi + lo = x² exactly, for |x| below 2^60.
#[inline(always)]
fn square32<const F: bool>(x: f32) -> (f32, f32) {
    let hi = x * x;
    (hi, square_residual32::<F>(x, hi))
}

/// `erf x`: an odd polynomial near 0, else `1 - erfc |x|` with x's sign.
#[inline(always)]
fn erf32<const F: bool>(x: f32) -> f32 {
    let t = x.abs();
    let small = mla32::<F>(x, poly32::<F, 7>(x * x, &ERF_Q), x);
    let tc = if t > ERFC_TMAX { ERFC_TMAX } else { t };
    let (hi, lo) = square32::<F>(tc);
    let (m, a, b) = erfc_tail32::<F>(tc, hi, lo);
    let large = (1.0 - m * a * b).copysign(x);
    if t < ERF_SPLIT {
        small
    } else {
        large
    }
}

/// `x Φ(x)` with Φ(x) = (1 + erf(x/√2)) / 2, taken as erfc(|x|/√2) / 2 for negative x below
/// the split so that the tail keeps its relative accuracy. The tail's `t² = x²/2` comes from
/// x exactly, not from the rounded x/√2, whose error would be multiplied by t².
#[inline(always)]
fn gelu32<const F: bool>(x: f32) -> f32 {
    let y = x * std::f32::consts::FRAC_1_SQRT_2;
    let t = y.abs();
    // 1 + erf y = (1 + y) + y Q(y²): for negative y both terms are positive, so Φ does not
    // cancel near the split.
    let small = 0.5 * mla32::<F>(y, poly32::<F, 7>(y * y, &ERF_Q), 1.0 + y);
    // Beyond |x| = 15 the tail is 0 in f32.
    let xc = x.abs();
    let xc = if xc > 15.0 { 15.0 } else { xc };
    let (hi, lo) = square32::<F>(xc);
    let (m, a, b) = erfc_tail32::<F>(xc * std::f32::consts::FRAC_1_SQRT_2, 0.5 * hi, 0.5 * lo);
    // Below -15 the result is 0; -inf gives NaN, as PyTorch's x·Φ(x) does.
    let large = if x < -15.0 {
        x * 0.0
    } else if x < 0.0 {
        (0.5 * x * m) * a * b
    } else {
        x * mla32::<F>(-0.5 * m * a, b, 1.0)
    };
    if t < ERF_SPLIT {
        x * small
    } else {
        large
    }
}

/// PyTorch's `0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))`, computed as the equal
/// `x sigmoid(2u)` (u the tanh argument) so that the negative tail does not cancel.
#[inline(always)]
fn gelu_tanh32<const F: bool>(x: f32) -> f32 {
    const K: f32 = 0.797_884_6; // √(2/π)
    let u = K * mla32::<F>(0.044715 * x * x, x, x);
    let (p, a, b) = exp32_parts::<F>(-2.0 * u.abs());
    // Below u = -60 the result is 0; -inf gives NaN, as PyTorch's formula does.
    let neg = if u < -60.0 { x * 0.0 } else { x * p * a * b };
    let num = if u < 0.0 { neg } else { x };
    num / mla32::<F>(p * a, b, 1.0)
}

// ---------------------------------------------------------------------------------------
// f64 lanes
// ---------------------------------------------------------------------------------------

/// `a * b + c`, fused into one rounding when `F`.
#[inline(always)]
fn mla64<const F: bool>(a: f64, b: f64, c: f64) -> f64 {
    if F {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

#[inline(always)]
fn poly64<const F: bool, const N: usize>(x: f64, c: &[f64; N]) -> f64 {
    let mut acc = c[N - 1];
    for i in (0..N - 1).rev() {
        acc = mla64::<F>(acc, x, c[i]);
    }
    acc
}

/// `1/k!` for k = 2..=13: `e^r = 1 + r + r² P(r)` by Taylor's series, whose first omitted
/// term is below 2^-57 for |r| ≤ ln2/2.
const EXP64_P: [f64; 12] = {
    let mut c = [0.0; 12];
    let mut fact = 2.0;
    let mut j = 0;
    while j < 12 {
        c[j] = 1.0 / fact;
        fact *= (j + 3) as f64;
        j += 1;
    }
    c
};

/// `2 / (2j + 3)` for j = 0..10: `2 atanh(s) = 2s + s R`, `R = z P(z)`, z = s², by Taylor's
/// series, whose first omitted term is below 2^-60 relative for |s| ≤ 3 - 2√2.
const LOG64_P: [f64; 10] = {
    let mut c = [0.0; 10];
    let mut j = 0;
    while j < 10 {
        c[j] = 2.0 / (2 * j + 3) as f64;
        j += 1;
    }
    c
};

/// 1.5 · 2^52.
const SHIFT64: f64 = 6755399441055744.0;
/// ln 2 = LN2_HI + LN2_LO, LN2_HI with 32 significant bits so that `n * LN2_HI` is exact.
const LN2_HI64: f64 = 0.693_147_180_369_123_8;
const LN2_LO64: f64 = 1.908_214_929_270_587_7e-10;
const SQRT_HALF_BITS64: i64 = 0x3fe6_a09e_667f_3bcd;

/// `2^k` for k ∈ [-1022, 1023], built in the exponent field.
#[inline(always)]
fn pow2_64(k: i64) -> f64 {
    f64::from_bits((k.wrapping_add(1023) << 52) as u64)
}

/// `k as f64` for |k| < 2^51 through the exponent trick (a plain conversion of 64-bit
/// integers does not vectorise before AVX-512DQ).
#[inline(always)]
fn i64_to_f64(k: i64) -> f64 {
    f64::from_bits(k.wrapping_add(SHIFT64.to_bits() as i64) as u64) - SHIFT64
}

/// `e^x` as `(q, a, b)` with e^x = (1 + q)·a·b, as [`exp32_parts`] in double precision but
/// leaving out the final `1 +`, so that a caller can fold a factor `1 + δ` into q, or
/// multiply by `1 + q` in one fused operation, before the sum rounds.
#[inline(always)]
fn exp64_parts_m1<const F: bool>(x: f64) -> (f64, f64, f64) {
    // n stays in [-1443, 1025], where both halves of 2^n are normal.
    let x = if x > 710.0 { 710.0 } else { x };
    let x = if x < -1000.0 { -1000.0 } else { x };
    let z = mla64::<F>(x, std::f64::consts::LOG2_E, SHIFT64);
    let n = z - SHIFT64;
    let k = (z.to_bits() as i64).wrapping_sub(SHIFT64.to_bits() as i64);
    let r = mla64::<F>(n, -LN2_HI64, x);
    let r = mla64::<F>(n, -LN2_LO64, r);
    let q = mla64::<F>(r * r, poly64::<F, 12>(r, &EXP64_P), r);
    let half = k >> 1;
    (q, pow2_64(half), pow2_64(k.wrapping_sub(half)))
}

/// `e^x` as `(p, a, b)`, as [`exp32_parts`] in double precision.
#[inline(always)]
fn exp64_parts<const F: bool>(x: f64) -> (f64, f64, f64) {
    let (q, a, b) = exp64_parts_m1::<F>(x);
    (q + 1.0, a, b)
}

/// `e^x` (see [`exp64_parts`]).
#[inline(always)]
fn exp64<const F: bool>(x: f64) -> f64 {
    let (p, a, b) = exp64_parts::<F>(x);
    p * a * b
}

/// `ln x`: x = 2^e m with m ∈ [√½, √2), f = m - 1, s = f / (2 + f), and
/// ln(1 + f) = f - s (f - R) = f - f²/2 + s (f²/2 + R), which keeps the exact `f` as the
/// leading term.
#[inline(always)]
fn log64<const F: bool>(x: f64) -> f64 {
    let tiny = x < f64::MIN_POSITIVE;
    let xs = if tiny { x * 4503599627370496.0 } else { x };
    let bias = if tiny { -52.0 } else { 0.0 };
    let ix = (xs.to_bits() as i64).wrapping_sub(SQRT_HALF_BITS64);
    let e = i64_to_f64(ix >> 52) + bias;
    let m = f64::from_bits(((ix & 0x000f_ffff_ffff_ffff) + SQRT_HALF_BITS64) as u64);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let r = z * poly64::<F, 10>(z, &LOG64_P);
    let hfsq = 0.5 * f * f;
    let y = mla64::<F>(
        e,
        LN2_HI64,
        -((hfsq - mla64::<F>(s, hfsq + r, e * LN2_LO64)) - f),
    );
    let y = if x == 0.0 { f64::NEG_INFINITY } else { y };
    let y = if x < 0.0 || x.is_nan() { f64::NAN } else { y };
    if x == f64::INFINITY {
        f64::INFINITY
    } else {
        y
    }
}

/// As [`sigmoid32`].
#[inline(always)]
fn sigmoid64<const F: bool>(x: f64) -> f64 {
    let e = exp64::<F>(-x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// As [`silu32`].
#[inline(always)]
fn silu64<const F: bool>(x: f64) -> f64 {
    let (p, a, b) = exp64_parts::<F>(-x.abs());
    let neg = if x < -800.0 { x * 0.0 } else { x * p * a * b };
    let num = if x < 0.0 { neg } else { x };
    num / mla64::<F>(p * a, b, 1.0)
}

/// `e^x - 1`, as [`expm1_32`] in double precision.
#[inline(always)]
fn expm1_64<const F: bool>(x: f64) -> f64 {
    // -40 already gives -1 (below -37.43 the e^x is under half an ulp of it); above 700 the
    // -1 is far below an ulp of e^x, and 2^n would leave the normal range.
    let xc = if x > 700.0 { 700.0 } else { x };
    let xc = if xc < -40.0 { -40.0 } else { xc };
    let z = mla64::<F>(xc, std::f64::consts::LOG2_E, SHIFT64);
    let n = z - SHIFT64;
    let k = (z.to_bits() as i64).wrapping_sub(SHIFT64.to_bits() as i64);
    let r = mla64::<F>(n, -LN2_HI64, xc);
    let r = mla64::<F>(n, -LN2_LO64, r);
    let em1 = mla64::<F>(r * r, poly64::<F, 12>(r, &EXP64_P), r);
    let t = pow2_64(k);
    let y = mla64::<F>(t, em1, t - 1.0);
    let y = if x > 700.0 { exp64::<F>(x) } else { y };
    // e^-0 - 1 = -0 (the sum above gives +0).
    if x == 0.0 {
        x
    } else {
        y
    }
}

/// `ln(1 + x)`, as [`log1p32`] in double precision.
#[inline(always)]
fn log1p64<const F: bool>(x: f64) -> f64 {
    let u = 1.0 + x;
    let y = log64::<F>(u) + (x - (u - 1.0)) / u;
    let y = if u == 0.0 { f64::NEG_INFINITY } else { y };
    let y = if x == f64::INFINITY { x } else { y };
    if u == 1.0 {
        x
    } else {
        y
    }
}

// Coefficients from kernels/tools/fit_vmath.py (Chebyshev fits in 50-digit arithmetic, rounded
// to f64).

/// `tanh x = x + x³ P(x²)` on |x| < [`TANH64_SPLIT`].
const TANH64_P: [f64; 12] = [
    -0.3333333333333333,
    0.13333333333332784,
    -0.05396825396776892,
    0.021869488516262917,
    -0.008863235072514497,
    0.0035921215331209864,
    -0.0014557739915529411,
    0.0005896505450491733,
    -0.00023753434644555109,
    9.238038310966219e-05,
    -3.085723133899485e-05,
    6.231659588344987e-06,
];
/// Just above atanh(1/2): from here on `1 - 2 / (e^2x + 1)` is at least 1/2, so the
/// subtraction loses at most a bit.
const TANH64_SPLIT: f64 = 0.55;

/// `erf x = x + x Q(x²)` on |x| < 1.
const ERF64_Q: [f64; 14] = [
    0.1283791670955126,
    -0.3761263890318388,
    0.11283791670959249,
    -0.02686617064576326,
    0.005223977631033594,
    -0.0008548327338041519,
    0.00012055344871249448,
    -1.4925961374510895e-05,
    1.646781539310826e-06,
    -1.643881338925926e-07,
    1.5445042746231504e-08,
    -1.590872128968154e-09,
    2.1321642813323778e-10,
    -2.3148023611396037e-11,
];
/// Beyond it erf rounds to ±1 in f64 (erfc 5.92 = 2^-54).
const ERF64_TMAX: f64 = 6.0;

/// `erfcx t = e^(t²) erfc t = A(t - 0.75)` for t < [`ERFCX64_T1`], the constant term
/// being `ERFCX64_A[0] + ERFCX64_A0_LO` (one double would err by half its ulp, up to 1.5
/// ulps of the smaller values erfcx takes further on).
const ERFCX64_A0_LO: f64 = -5.313074071028544e-17;
const ERFCX64_A: [f64; 21] = [
    0.5069376502931449,
    -0.3679726916557953,
    0.23095813155129846,
    -0.12983606199488723,
    0.0667905425275557,
    -0.03189726203942735,
    0.014289198666238446,
    -0.006051532301914343,
    0.002437637357469973,
    -0.0009385120143487501,
    0.00034675068172153653,
    -0.00012335465629818214,
    4.237242472545197e-05,
    -1.4087421935797114e-05,
    4.543789168520922e-06,
    -1.426509390778343e-06,
    4.345893419719696e-07,
    -1.257930330255442e-07,
    3.703481183422713e-08,
    -1.3273968528279244e-08,
    3.4956579742491815e-09,
];
/// `erfcx t = B(y) / (t + 2)`, y = (t - 2) / (t + 2), for t from [`ERFCX64_T1`] to 27.45.
const ERFCX64_B: [f64; 21] = [
    1.021582705242023,
    -0.6871606844138106,
    0.27947209255604527,
    -0.03644223150684725,
    -0.021510661887999313,
    0.006479185058951256,
    0.0030906119776289926,
    -0.0008372952275017596,
    -0.0006630735704917,
    3.434392331322795e-05,
    0.00014459799556448743,
    3.4127008391358253e-05,
    -2.3711951405834585e-05,
    -6.080656381537674e-06,
    -2.8639646063808373e-05,
    5.36597351634878e-05,
    -6.123780365095534e-05,
    5.553614888820965e-05,
    -3.3013404801662063e-05,
    1.0861614573665262e-05,
    -1.5076444288340822e-06,
];
const ERFCX64_T1: f64 = 1.5;
/// Below it gelu's `x Φ(x)` rounds to 0 (from -38.7386 on); erfc's fit covers |x| / √2.
const GELU64_XMAX: f64 = 38.75;
/// 1/√2 - FRAC_1_SQRT_2.
const FRAC_1_SQRT_2_LO: f64 = -4.833646656726457e-17;

/// `a b` as `(hi, lo)`, hi + lo = a b exactly, for a product whose parts stay normal (and
/// without FMA, |a|, |b| below 2^995).
#[inline(always)]
fn two_prod64<const F: bool>(a: f64, b: f64) -> (f64, f64) {
    let hi = a * b;
    if F {
        (hi, a.mul_add(b, -hi))
    } else {
        // Dekker's product: each factor split into two 26-bit halves whose products are
        // exact.
        let split = |v: f64| {
            let c = v * 134217729.0;
            let h = c - (c - v);
            (h, v - h)
        };
        let ((ah, al), (bh, bl)) = (split(a), split(b));
        (hi, ((ah * bh - hi) + ah * bl + al * bh) + al * bl)
    }
}

/// `a + b` as `(hi, lo)`, hi + lo = a + b exactly (Knuth's two-sum).
#[inline(always)]
fn two_sum64(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `erfc t = m·a·b` for 0 ≤ t ≤ 27.45, as [`exp64_parts`] gives e^x, from t = th + tl
/// (tl below an ulp of th) and `t² = hi + lo` exactly: erfcx t from one of two fits (the
/// coefficients picked per lane, one Horner loop), times e^-(hi + lo) = e^-hi (1 - lo).
#[inline(always)]
fn erfc64_parts<const F: bool>(th: f64, tl: f64, hi: f64, lo: f64) -> (f64, f64, f64) {
    let near = th < ERFCX64_T1;
    // t + 2 = pa + pb and t - 2 = ma + mb, exact but for the rounding of adding tl (a
    // two-sum, and a fast one for th - 2, exact anyway below th = 4), then d = 1 / (t + 2) by
    // a Newton step from the rounded quotient, and y = (t - 2) d: each lands within about
    // half an ulp, where rounding each step would cost an ulp or two of erfc in the tail.
    let (pa, pb) = two_sum64(th, 2.0);
    let pb = pb + tl;
    let ma = th - 2.0;
    let mb = (-2.0 - (ma - th)) + tl;
    let d = 1.0 / pa;
    let e = mla64::<F>(-pa, d, 1.0) - pb * d;
    let d = mla64::<F>(d, e, d);
    let v = if near {
        (th - 0.75) + tl
    } else {
        mla64::<F>(ma, d, mb * d)
    };
    let mut acc = if near { ERFCX64_A[20] } else { ERFCX64_B[20] };
    for i in (1..20).rev() {
        let c = if near { ERFCX64_A[i] } else { ERFCX64_B[i] };
        acc = mla64::<F>(acc, v, c);
    }
    let acc = if near {
        mla64::<F>(acc, v, ERFCX64_A0_LO) + ERFCX64_A[0]
    } else {
        mla64::<F>(acc, v, ERFCX64_B[0])
    };
    // e^-hi (1 - lo) = (1 + q) (1 - lo) = 1 + q1; erfcx (1 + q1) rounds once.
    let (q, a, b) = exp64_parts_m1::<F>(-hi);
    let q1 = mla64::<F>(-lo, q, q - lo);
    let m = mla64::<F>(acc, q1, acc);
    (if near { m } else { m * d }, a, b)
}

/// `tanh x`: a polynomial near 0, else `1 - 2 / (e^2|x| + 1)`, with x's sign.
#[inline(always)]
fn tanh64<const F: bool>(x: f64) -> f64 {
    let ax = x.abs();
    let s = ax * ax;
    let small = mla64::<F>(ax * s, poly64::<F, 12>(s, &TANH64_P), ax);
    let q = exp64::<F>(ax + ax);
    let large = 1.0 - 2.0 / (q + 1.0);
    let y = if ax < TANH64_SPLIT { small } else { large };
    y.copysign(x)
}

/// `erf x`: an odd polynomial below 1, else `1 - erfc |x|`, with x's sign.
#[inline(always)]
fn erf64<const F: bool>(x: f64) -> f64 {
    let t = x.abs();
    let small = mla64::<F>(t, poly64::<F, 14>(t * t, &ERF64_Q), t);
    let tc = if t > ERF64_TMAX { ERF64_TMAX } else { t };
    let (hi, lo) = two_prod64::<F>(tc, tc);
    let (m, a, b) = erfc64_parts::<F>(tc, 0.0, hi, lo);
    let large = mla64::<F>(-m * a, b, 1.0);
    let y = if t < 1.0 { small } else { large };
    y.copysign(x)
}

/// `x Φ(x)` with Φ(x) = erfc(-x/√2) / 2: `x erfc(|x|/√2) / 2` for negative x, else
/// `x (1 - erfc(x/√2) / 2)`, which keep their relative accuracy on either side. The
/// `t² = x²/2` in erfc comes from x exactly, not from the rounded x/√2, whose error the
/// factor e^-t² would multiply by t².
#[inline(always)]
fn gelu64<const F: bool>(x: f64) -> f64 {
    let ax = x.abs();
    let xc = if ax > GELU64_XMAX { GELU64_XMAX } else { ax };
    let (hi, lo) = two_prod64::<F>(xc, xc);
    // t = xc / √2 as th + tl (tl exact with FMA, else only the part from 1/√2's own rounding).
    let th = xc * std::f64::consts::FRAC_1_SQRT_2;
    let tl = mla64::<F>(xc, std::f64::consts::FRAC_1_SQRT_2, -th) + xc * FRAC_1_SQRT_2_LO;
    let (m, a, b) = erfc64_parts::<F>(th, tl, 0.5 * hi, 0.5 * lo);
    // Below the cut the result is 0; -inf gives NaN, as PyTorch's x·Φ(x) does.
    if x < -GELU64_XMAX {
        x * 0.0
    } else if x < 0.0 {
        (0.5 * x * m) * a * b
    } else {
        x * mla64::<F>(-0.5 * m * a, b, 1.0)
    }
}

/// `2√(2/π)` and 0.044715 (the tanh form's constants) as sums of two doubles.
const GELU_K2_HI: f64 = 1.5957691216057308;
const GELU_K2_LO: f64 = -9.96930880911092e-17;
const GELU_C_HI: f64 = 0.044715;
const GELU_C_LO: f64 = 2.1960211427085595e-18;
/// Below it the tanh form rounds to 0 (from -21.85 on); above it to x.
const GELU_TANH64_XMAX: f64 = 22.0;

/// PyTorch's tanh formula `0.5 x (1 + tanh u)`, u = √(2/π)(x + 0.044715x³), as the equal
/// `x / (1 + e^-2u)` (for negative x, `x e^2u / (1 + e^2u)` in effect, without cancellation).
/// `2u` is computed in double-double: e^-2u turns an absolute error in 2u into a relative
/// one, and 2u reaches 745 before the result underflows, so rounding it once would cost up
/// to hundreds of ulps in the negative tail.
#[inline(always)]
fn gelu_tanh64<const F: bool>(x: f64) -> f64 {
    let xc = if x > GELU_TANH64_XMAX {
        GELU_TANH64_XMAX
    } else {
        x
    };
    let xc = if xc < -GELU_TANH64_XMAX {
        -GELU_TANH64_XMAX
    } else {
        xc
    };
    // x² = sh + sl; 0.044715 x² = ah + al; 1 + 0.044715 x² = bh + bl; x (1 + 0.044715 x²) =
    // qh + ql; 2u = wh + wl.
    let (sh, sl) = two_prod64::<F>(xc, xc);
    let (ah, al) = two_prod64::<F>(GELU_C_HI, sh);
    let al = al + mla64::<F>(GELU_C_HI, sl, GELU_C_LO * sh);
    let (bh, bl) = two_sum64(1.0, ah);
    let bl = bl + al;
    let (qh, ql) = two_prod64::<F>(xc, bh);
    let ql = mla64::<F>(xc, bl, ql);
    let (wh, wl) = two_prod64::<F>(GELU_K2_HI, qh);
    let wl = wl + mla64::<F>(GELU_K2_HI, ql, GELU_K2_LO * qh);
    // e^-|2u| = e^-|wh| e^∓wl = (1 + q) (1 ∓ wl) a b = (1 + q1) a b.
    let (q, a, b) = exp64_parts_m1::<F>(-wh.abs());
    let zl = if x < 0.0 { wl } else { -wl };
    let q1 = mla64::<F>(zl, q, q + zl);
    let p = 1.0 + q1;
    // Below the cut the result is 0; -inf gives NaN, as PyTorch's formula does.
    let neg = if x < -GELU_TANH64_XMAX {
        x * 0.0
    } else {
        mla64::<F>(x, q1, x) * a * b
    };
    let num = if x < 0.0 { neg } else { x };
    num / mla64::<F>(p * a, b, 1.0)
}

#[cfg(test)]
mod tests {
    //! Every kernel against float64 references (std's functions, `libm::erf`/`erfc`,
    //! double-double evaluations for f64 gelu), on every instruction set this CPU has, over
    //! sweeps of the whole input range, and the newer f64 kernels also against exact values
    //! (`vmath64_reference.txt`); the measured maxima print with `--nocapture`.
    use super::*;
    use std::f64::consts::SQRT_2;

    type Kernel32 = fn(Isa, &[f32], &mut [f32]);

    /// Whether error `e` is worse than `worst` (a NaN error is the worst).
    fn worse(e: f64, worst: f64) -> bool {
        e.is_nan() || e > worst
    }
    type Kernel64 = fn(Isa, &[f64], &mut [f64]);

    const TWO_128: f64 = 3.402_823_669_209_385e38;

    /// The spacing of f32 values in the binade of `y` (2^-149 below 2^-126; 2^104 from
    /// 2^127 on, infinity counting as 2^128).
    fn ulp32(y: f64) -> f64 {
        let a = y.abs().min(TWO_128);
        let e = ((a.to_bits() >> 52) & 0x7ff) as i32 - 1023;
        2f64.powi(e.clamp(-126, 127) - 23)
    }

    /// The spacing of f64 values in the binade of `y`.
    fn ulp64(y: f64) -> f64 {
        let a = y.abs();
        if a.is_infinite() {
            return 2f64.powi(1023 - 52);
        }
        let e = ((a.to_bits() >> 52) & 0x7ff) as i64 - 1023;
        // 2^(e - 52), built in the exponent field (2^-1074, the subnormal spacing, below).
        let e = e.clamp(-1022, 1023) - 52;
        if e < -1022 {
            f64::from_bits(1 << (e + 1074))
        } else {
            f64::from_bits(((e + 1023) as u64) << 52)
        }
    }

    /// The error of `got` in f32 ulps of the reference `want`; a NaN must meet a NaN, and an
    /// infinity counts as 2^128 (so f32::MAX for an overflowing reference is 1 ulp off).
    fn err32(got: f32, want: f64) -> f64 {
        if want.is_nan() || got.is_nan() {
            return if want.is_nan() && got.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        let cap = |v: f64| v.clamp(-TWO_128, TWO_128);
        (cap(got as f64) - cap(want)).abs() / ulp32(want)
    }

    /// As [`err32`] in f64 ulps.
    fn err64(got: f64, want: f64) -> f64 {
        if want.is_nan() || got.is_nan() {
            return if want.is_nan() && got.is_nan() {
                0.0
            } else {
                f64::INFINITY
            };
        }
        if want.is_infinite() || got.is_infinite() {
            return if want == got { 0.0 } else { f64::INFINITY };
        }
        (got - want).abs() / ulp64(want)
    }

    /// Every 509th f32 bit pattern (both signs, every binade, subnormals, infinities and
    /// NaNs), the special values, and 4000 consecutive floats around each of `around`.
    fn inputs32(around: &[f32]) -> Vec<f32> {
        let mut v: Vec<f32> = (0..=u32::MAX).step_by(509).map(f32::from_bits).collect();
        v.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            -f32::from_bits(1),
            f32::MAX,
            f32::MIN,
            1.0,
            -1.0,
        ]);
        for &c in around {
            let b = c.to_bits();
            for d in 0..2000 {
                v.push(f32::from_bits(b.wrapping_add(d)));
                v.push(f32::from_bits(b.wrapping_sub(d)));
            }
        }
        v
    }

    /// Runs `kernel` on every instruction set over `xs` and returns the worst
    /// `(error in ulps, x)` of each, with errors measured by `score(x, got, reference)`.
    fn sweep32(
        name: &str,
        kernel: Kernel32,
        xs: &[f32],
        reference: &[f64],
        score: impl Fn(f32, f32, f64) -> f64,
    ) -> f64 {
        let mut worst_all: f64 = 0.0;
        for isa in Isa::supported() {
            let mut got = vec![0f32; xs.len()];
            // Odd-length pieces exercise the vector loops' remainders too.
            for (a, o) in xs.chunks(1021).zip(got.chunks_mut(1021)) {
                kernel(isa, a, o);
            }
            let (mut worst, mut at) = (0f64, 0f32);
            for ((&x, &g), &r) in xs.iter().zip(&got).zip(reference) {
                let e = score(x, g, r);
                if worse(e, worst) {
                    worst = e;
                    at = x;
                }
            }
            eprintln!("{name} ({isa:?}): max error {worst:.3} ulp at x = {at:e}");
            if worse(worst, worst_all) {
                worst_all = worst;
            }
        }
        worst_all
    }

    fn check32(name: &str, kernel: Kernel32, f: fn(f64) -> f64, around: &[f32], bound: f64) {
        let xs = inputs32(around);
        let reference: Vec<f64> = xs.iter().map(|&x| f(x as f64)).collect();
        let worst = sweep32(name, kernel, &xs, &reference, |_, g, r| err32(g, r));
        assert!(worst <= bound, "{name}: {worst} ulp > {bound}");
    }

    #[test]
    fn exp_f32_within_1_5_ulp() {
        // Overflow (ln f32::MAX), the last normal and the last subnormal results, and 0.
        let around = [88.72284, -87.33655, -103.27893, -103.972_08, 0.0, 1e-3];
        check32("exp f32", exp32_k::run, f64::exp, &around, 1.5);
    }

    #[test]
    fn log_f32_within_1_5_ulp() {
        let (r2, h) = (std::f32::consts::SQRT_2, std::f32::consts::FRAC_1_SQRT_2);
        let around = [1.0, h, r2, f32::MIN_POSITIVE, 2.0, 0.5];
        check32("log f32", log32_k::run, f64::ln, &around, 1.5);
    }

    #[test]
    fn expm1_and_log1p_f32() {
        let around = [
            0.0,
            0.346_573_6,
            -0.346_573_6,
            80.0,
            88.72284,
            -17.0,
            1e-4,
            -1e-4,
        ];
        check32("expm1 f32", expm1_32_k::run, f64::exp_m1, &around, 2.0);
        let around = [0.0, -1.0, 1e-4, -1e-4, 0.414_213_57, -0.292_893_2, 1e7];
        check32("log1p f32", log1p32_k::run, f64::ln_1p, &around, 2.0);
    }

    #[test]
    fn tanh_f32_within_2_5_ulp() {
        let around = [TANH_SPLIT, -TANH_SPLIT, 9.0, 1e-3];
        check32("tanh f32", tanh32_k::run, f64::tanh, &around, 2.5);
    }

    #[test]
    fn sigmoid_and_silu_f32() {
        let around = [0.0, 88.0, -88.0, -103.5, 16.6, -16.6];
        check32(
            "sigmoid f32",
            sigmoid32_k::run,
            |x| 1.0 / (1.0 + (-x).exp()),
            &around,
            2.5,
        );
        check32(
            "silu f32",
            silu32_k::run,
            |x| x / (1.0 + (-x).exp()),
            &around,
            3.0,
        );
    }

    #[test]
    fn erf_f32_within_2_ulp() {
        let around = [ERF_SPLIT, -ERF_SPLIT, 3.9, 1e-3, 0.0];
        check32("erf f32", erf32_k::run, libm::erf, &around, 2.0);
    }

    /// `x f'(x) / f(x)` by a central difference: how many ulps of output error one ulp of
    /// error in x (or in an intermediate of x's size) brings.
    fn condition(f: impl Fn(f64) -> f64, x: f64) -> f64 {
        let h = 1e-6 * x.abs().max(1e-300);
        let d = (f(x + h) - f(x - h)) / (2.0 * h);
        (x * d / f(x)).abs()
    }

    /// With `conditioned`, errors at negative x count beyond `2 condition(x)` ulps: the tanh
    /// form rounds u = √(2/π)(x + 0.044715x³) before e^(-2u) (as PyTorch's f32 formula
    /// does), and those few ulps are multiplied by the function's condition number, which
    /// grows like x² in the tail (9.5 at x = -3).
    fn check_gelu(name: &str, kernel: Kernel32, f: fn(f64) -> f64, conditioned: bool, bound: f64) {
        let xs = inputs32(&[0.0, SQRT_2 as f32, -SQRT_2 as f32, -3.0, -10.0, 5.0]);
        let reference: Vec<f64> = xs.iter().map(|&x| f(x as f64)).collect();
        let worst = sweep32(name, kernel, &xs, &reference, |x, g, r| {
            let e = err32(g, r);
            if conditioned && x < 0.0 && r != 0.0 && r.is_finite() {
                (e - 2.0 * condition(f, x as f64)).max(0.0)
            } else {
                e
            }
        });
        assert!(worst <= bound, "{name}: {worst} > {bound}");
    }

    #[test]
    fn gelu_f32_both_forms() {
        check_gelu(
            "gelu f32",
            gelu32_k::run,
            |x| x * 0.5 * libm::erfc(-x / SQRT_2),
            false,
            5.5,
        );
        // PyTorch's tanh formula, as the equal x / (1 + e^(-2u)), which float64 evaluates
        // without cancellation in the negative tail.
        check_gelu(
            "gelu tanh f32 (beyond twice the condition number for x < 0)",
            gelu_tanh32_k::run,
            |x| {
                let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                x / (1.0 + (-2.0 * u).exp())
            },
            true,
            4.0,
        );
    }

    /// 2^22 f64 bit patterns from a xorshift generator, the special values, a dense grid of
    /// `grid`, and 2000 consecutive doubles around each of `around`.
    fn inputs64(grid: (f64, f64), around: &[f64]) -> Vec<f64> {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut v: Vec<f64> = (0..1 << 22)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                f64::from_bits(s)
            })
            .collect();
        let n = 1 << 20;
        v.extend((0..=n).map(|i| grid.0 + (grid.1 - grid.0) * i as f64 / n as f64));
        v.extend([
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            f64::MIN_POSITIVE,
            f64::from_bits(1),
            f64::MAX,
            f64::MIN,
        ]);
        for &c in around {
            let b = c.to_bits();
            for d in 0..1000 {
                v.push(f64::from_bits(b.wrapping_add(d)));
                v.push(f64::from_bits(b.wrapping_sub(d)));
            }
        }
        v
    }

    fn check64(
        name: &str,
        kernel: Kernel64,
        f: fn(f64) -> f64,
        grid: (f64, f64),
        around: &[f64],
        bound: f64,
    ) {
        let xs = inputs64(grid, around);
        let reference: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        let mut worst_all: f64 = 0.0;
        for isa in Isa::supported() {
            let mut got = vec![0f64; xs.len()];
            for (a, o) in xs.chunks(1021).zip(got.chunks_mut(1021)) {
                kernel(isa, a, o);
            }
            let (mut worst, mut at) = (0f64, 0f64);
            for ((&x, &g), &r) in xs.iter().zip(&got).zip(&reference) {
                let e = err64(g, r);
                if worse(e, worst) {
                    worst = e;
                    at = x;
                }
            }
            eprintln!("{name} ({isa:?}): max error {worst:.3} ulp at x = {at:e}");
            if worse(worst, worst_all) {
                worst_all = worst;
            }
        }
        // The reference is itself within about 1 ulp, which the bound includes.
        assert!(worst_all <= bound, "{name}: {worst_all} ulp > {bound}");
    }

    #[test]
    fn exp_f64_within_1_5_ulp() {
        let around = [
            709.782_712_893_384,
            -708.396_418_532_264_1,
            -745.133_219_101_941_1,
        ];
        check64(
            "exp f64",
            exp64_k::run,
            f64::exp,
            (-750.0, 712.0),
            &around,
            1.5,
        );
    }

    #[test]
    fn log_f64_within_1_5_ulp() {
        let around = [
            1.0,
            std::f64::consts::FRAC_1_SQRT_2,
            SQRT_2,
            f64::MIN_POSITIVE,
        ];
        check64("log f64", log64_k::run, f64::ln, (0.0, 4.0), &around, 1.5);
    }

    #[test]
    fn sigmoid_and_silu_f64() {
        let around = [0.0, 36.0, -36.0, -708.0];
        // e^x / (1 + e^x) below 0: 1 / (1 + e^-x) would overflow to 0 before the result
        // leaves the subnormal range.
        let sig = |x: f64| {
            if x < 0.0 {
                x.exp() / (1.0 + x.exp())
            } else {
                1.0 / (1.0 + (-x).exp())
            }
        };
        check64(
            "sigmoid f64",
            sigmoid64_k::run,
            sig,
            (-750.0, 40.0),
            &around,
            2.5,
        );
        // Where e^x is subnormal, x e^(x/2) e^(x/2) rounds once, as the result.
        let silu = |x: f64| {
            if x < -700.0 {
                let h = (x / 2.0).exp();
                x * h * h / (1.0 + h * h)
            } else {
                x / (1.0 + (-x).exp())
            }
        };
        check64(
            "silu f64",
            silu64_k::run,
            silu,
            (-750.0, 40.0),
            &around,
            3.0,
        );
    }

    #[test]
    fn expm1_f64_within_2_5_ulp() {
        let ln2_2 = std::f64::consts::LN_2 / 2.0;
        let around = [
            0.0,
            1e-5,
            -1e-5,
            ln2_2,
            -ln2_2,
            700.0,
            709.782_712_893_384,
            -37.43,
        ];
        check64(
            "expm1 f64",
            expm1_64_k::run,
            f64::exp_m1,
            (-45.0, 712.0),
            &around,
            2.5,
        );
    }

    #[test]
    fn log1p_f64_within_1_5_ulp() {
        let around = [
            0.0,
            -1.0,
            1e-5,
            -1e-5,
            SQRT_2 - 1.0,
            std::f64::consts::FRAC_1_SQRT_2 - 1.0,
            1e7,
        ];
        check64(
            "log1p f64",
            log1p64_k::run,
            f64::ln_1p,
            (-1.0, 4.0),
            &around,
            1.5,
        );
    }

    #[test]
    fn tanh_f64_within_2_5_ulp() {
        let around = [TANH64_SPLIT, -TANH64_SPLIT, 19.06, 1e-3, 0.0];
        check64(
            "tanh f64",
            tanh64_k::run,
            f64::tanh,
            (-20.0, 20.0),
            &around,
            2.5,
        );
    }

    #[test]
    fn erf_f64_within_1_5_ulp() {
        let around = [1.0, -1.0, ERFCX64_T1, -ERFCX64_T1, 5.92, 1e-3, 0.0];
        check64(
            "erf f64",
            erf64_k::run,
            libm::erf,
            (-7.0, 7.0),
            &around,
            1.5,
        );
    }

    /// `a b` as an exact sum of two doubles (by a fused multiply-add, in software where the
    /// CPU has none).
    fn prod_dd(a: f64, b: f64) -> (f64, f64) {
        let p = a * b;
        (p, a.mul_add(b, -p))
    }

    /// A double-double `hi + lo` (|lo| ≤ half an ulp of hi), for the references below:
    /// about 104 bits, so that a reference built from a few of them rounds once, at the end.
    #[derive(Clone, Copy)]
    struct Dd(f64, f64);

    impl Dd {
        fn new(hi: f64, lo: f64) -> Dd {
            let s = hi + lo;
            Dd(s, lo - (s - hi))
        }
        fn add(self, b: Dd) -> Dd {
            let s = self.0 + b.0;
            let v = s - self.0;
            let e = (self.0 - (s - v)) + (b.0 - v);
            Dd::new(s, e + self.1 + b.1)
        }
        fn neg(self) -> Dd {
            Dd(-self.0, -self.1)
        }
        fn mul(self, b: Dd) -> Dd {
            let (p, e) = prod_dd(self.0, b.0);
            Dd::new(p, e + self.0 * b.1 + self.1 * b.0)
        }
        fn div(self, b: Dd) -> Dd {
            let q = self.0 / b.0;
            let r = self.add(b.mul(Dd(q, 0.0)).neg());
            Dd::new(q, r.0 / b.0)
        }
    }

    /// erf t for 0 ≤ t < 2 by its Maclaurin series, in double-double.
    fn erf_dd(t: Dd) -> Dd {
        const TWO_OVER_RT_PI: Dd = Dd(std::f64::consts::FRAC_2_SQRT_PI, 1.533545961316588e-17);
        let mt2 = t.mul(t).neg();
        let (mut term, mut sum) = (t, t);
        for n in 1..80 {
            term = term.mul(mt2).div(Dd(n as f64, 0.0));
            sum = sum.add(term.div(Dd((2 * n + 1) as f64, 0.0)));
            if term.0.abs() < 1e-36 * sum.0.abs() {
                break;
            }
        }
        sum.mul(TWO_OVER_RT_PI)
    }

    /// e^(t²) erfc t for t ≥ 2, in double-double, by its continued fraction
    /// 1 / (√π (t + (1/2)/(t + 1/(t + (3/2)/(t + ...))))), the inner levels in f64 (their
    /// errors shrink by t² or more at each level outwards) and the last three in
    /// double-double.
    fn erfcx_dd(t: Dd) -> Dd {
        const RT_PI: Dd = Dd(1.772453850905516, -7.666586499825799e-17);
        let n = 20 + (240.0 / (t.0 * t.0)) as usize;
        let mut f = t.0;
        for k in (4..n).rev() {
            f = t.0 + (k as f64 / 2.0) / f;
        }
        let mut f = Dd(f, 0.0);
        for k in (1..4).rev() {
            f = t.add(Dd(k as f64 / 2.0, 0.0).div(f));
        }
        Dd(1.0, 0.0).div(RT_PI.mul(f))
    }

    /// `x Φ(x)` = `x erfc(-x/√2) / 2` to within an ulp: x/√2 in double-double; erfc from the
    /// Maclaurin series of erf below 2, else from the continued fraction times
    /// e^(-t²) = e^(-hi) (1 - lo), t² = hi + lo; only that e^(-hi) (std's) and the last
    /// rounding are not carried to double-double.
    fn gelu_ref(x: f64) -> f64 {
        const R: Dd = Dd(std::f64::consts::FRAC_1_SQRT_2, -4.833646656726457e-17);
        if x.is_nan() || x < -40.0 {
            // Below -38.74 the result rounds to 0 (and -inf gives NaN, as PyTorch).
            return x * 0.0;
        }
        if x > 40.0 {
            return x;
        }
        let half_x = Dd(0.5 * x, 0.0);
        let u = Dd(x, 0.0).mul(R);
        let t = if u.0 < 0.0 { u.neg() } else { u };
        if t.0 < 2.0 {
            // 2Φ(x) = 1 + erf(x/√2).
            let e = erf_dd(u);
            return half_x.mul(Dd(1.0, 0.0).add(e)).0;
        }
        let t2 = t.mul(t);
        let ex = erfcx_dd(t);
        let with_lo = |e: f64| Dd(e, 0.0).mul(Dd(1.0, -t2.1));
        if x > 0.0 {
            // 2Φ(x) = 2 - erfc(x/√2).
            let erfc = ex.mul(with_lo((-t2.0).exp()));
            return half_x.mul(Dd(2.0, 0.0).add(erfc.neg())).0;
        }
        if t2.0 < 708.0 {
            half_x.mul(ex).mul(with_lo((-t2.0).exp())).0
        } else {
            // e^-hi is subnormal: the result rounds once, at the last factor.
            let h = (-0.5 * t2.0).exp();
            half_x.mul(ex).mul(with_lo(h)).0 * h
        }
    }

    /// PyTorch's tanh formula `0.5 x (1 + tanh u)`, u = √(2/π)(x + 0.044715x³), as
    /// `x / (1 + e^-2u)`, in double-double (x³ first, then 0.044715x³, then x + that, then
    /// times 2√(2/π)), e^∓2u from std's exp of the leading part times 1 ∓ the rest.
    fn gelu_tanh_ref(x: f64) -> f64 {
        // 2√(2/π) and 0.044715 as sums of two doubles.
        const K: Dd = Dd(1.5957691216057308, -9.96930880911092e-17);
        const C: Dd = Dd(0.044715, 2.1960211427085595e-18);
        if x.is_nan() || x < -25.0 {
            // Below -21.85 the result rounds to 0 (and -inf gives NaN, as PyTorch).
            return x * 0.0;
        }
        if x > 25.0 {
            return x;
        }
        let xd = Dd(x, 0.0);
        let w = K.mul(xd.add(C.mul(xd.mul(xd).mul(xd))));
        let one = Dd(1.0, 0.0);
        if x >= 0.0 {
            let e = Dd((-w.0).exp(), 0.0).mul(Dd(1.0, -w.1));
            return xd.div(one.add(e)).0;
        }
        // x e^2u / (1 + e^2u).
        if w.0 > -708.0 {
            let e = Dd(w.0.exp(), 0.0).mul(Dd(1.0, w.1));
            xd.mul(e).div(one.add(e)).0
        } else {
            let h = (0.5 * w.0).exp();
            xd.mul(Dd(h, 0.0)).mul(Dd(1.0, w.1)).0 * h
        }
    }

    #[test]
    fn gelu_f64_both_forms() {
        let around = [
            0.0,
            SQRT_2,
            -SQRT_2,
            ERFCX64_T1 * SQRT_2,
            -ERFCX64_T1 * SQRT_2,
            -38.7386,
            -37.6,
            -8.49,
            8.29,
        ];
        check64(
            "gelu f64",
            gelu64_k::run,
            gelu_ref,
            (-40.0, 10.0),
            &around,
            6.0,
        );
        check64(
            "gelu tanh f64",
            gelu_tanh64_k::run,
            gelu_tanh_ref,
            (-23.0, 10.0),
            &[0.0, -21.85, -20.0, -1.0, 1.0, 22.0],
            4.0,
        );
    }

    /// The f64 kernels against exact values (60-digit mpmath, as a correctly rounded double
    /// plus the remainder, written by kernels/tools/vmath64_reference.py) at about 400 inputs
    /// each, spread over each range and packed near its thresholds: the errors in fractions
    /// of an ulp, free of any reference's own rounding.
    #[test]
    fn vmath64_against_exact_values() {
        let bounds: [(&str, Kernel64, f64); 6] = [
            ("tanh", tanh64_k::run, 1.5),
            ("expm1", expm1_64_k::run, 2.0),
            ("log1p", log1p64_k::run, 1.5),
            ("erf", erf64_k::run, 1.5),
            ("gelu", gelu64_k::run, 4.5),
            ("gelu_tanh", gelu_tanh64_k::run, 3.0),
        ];
        let hex = |s: &str| f64::from_bits(u64::from_str_radix(s, 16).unwrap());
        let rows: Vec<(&str, f64, f64, f64)> = include_str!("vmath64_reference.txt")
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(' ').collect();
                (f[0], hex(f[1]), hex(f[2]), hex(f[3]))
            })
            .collect();
        for (name, kernel, bound) in bounds {
            let mine: Vec<_> = rows.iter().filter(|r| r.0 == name).collect();
            assert!(mine.len() > 300, "{name}: {} reference values", mine.len());
            let xs: Vec<f64> = mine.iter().map(|r| r.1).collect();
            for isa in Isa::supported() {
                let mut got = vec![0f64; xs.len()];
                kernel(isa, &xs, &mut got);
                let (mut worst, mut at) = (0f64, 0f64);
                for (&g, r) in got.iter().zip(&mine) {
                    let (x, hi, lo) = (r.1, r.2, r.3);
                    // g - hi is exact wherever the error is small (Sterbenz).
                    let e = ((g - hi) - lo).abs() / ulp64(hi);
                    if worse(e, worst) {
                        worst = e;
                        at = x;
                    }
                }
                eprintln!("{name} f64 ({isa:?}) vs exact: max error {worst:.3} ulp at x = {at:e}");
                assert!(worst <= bound, "{name} f64 {isa:?}: {worst} ulp > {bound}");
            }
        }
    }

    /// Zeros keep their sign, infinities and the ends of each range give their limits, NaN
    /// stays NaN: bit for bit, on every instruction set.
    #[test]
    fn special_values_f64() {
        let nan = f64::NAN;
        let (inf, ninf) = (f64::INFINITY, f64::NEG_INFINITY);
        let common = [(0.0, 0.0), (-0.0, -0.0), (nan, nan)];
        type Case<'a> = (&'a str, Kernel64, &'a [(f64, f64)]);
        let cases: [Case<'_>; 6] = [
            (
                "tanh",
                tanh64_k::run,
                &[(inf, 1.0), (ninf, -1.0), (20.0, 1.0), (-20.0, -1.0)],
            ),
            (
                "expm1",
                expm1_64_k::run,
                &[
                    (inf, inf),
                    (ninf, -1.0),
                    (710.0, inf),
                    (-40.0, -1.0),
                    (-1e300, -1.0),
                ],
            ),
            (
                "log1p",
                log1p64_k::run,
                &[
                    (-1.0, ninf),
                    (-2.0, nan),
                    (ninf, nan),
                    (inf, inf),
                    (-1.0 - 1e-15, nan),
                ],
            ),
            (
                "erf",
                erf64_k::run,
                &[(inf, 1.0), (ninf, -1.0), (6.0, 1.0), (-30.0, -1.0)],
            ),
            (
                "gelu",
                gelu64_k::run,
                &[
                    (inf, inf),
                    (ninf, nan),
                    (-50.0, -0.0),
                    (50.0, 50.0),
                    (-1e300, -0.0),
                ],
            ),
            (
                "gelu tanh",
                gelu_tanh64_k::run,
                &[
                    (inf, inf),
                    (ninf, nan),
                    (-30.0, -0.0),
                    (30.0, 30.0),
                    (1e300, 1e300),
                ],
            ),
        ];
        for isa in Isa::supported() {
            for (name, kernel, extra) in cases {
                for &(x, want) in common.iter().chain(extra) {
                    let mut got = [0f64];
                    kernel(isa, &[x], &mut got);
                    let ok =
                        got[0].to_bits() == want.to_bits() || (got[0].is_nan() && want.is_nan());
                    assert!(
                        ok,
                        "{name} f64 {isa:?} at {x:e}: got {:e}, want {want:e}",
                        got[0]
                    );
                }
            }
        }
    }

    /// `f(±0) = ±0` for the f32 functions that pass through the origin, as PyTorch gives
    /// (and the odd ones at `-0` are where a polynomial `x + x·p(x²)` with a negative
    /// leading coefficient rounds `-0 + +0` to `+0`).
    #[test]
    fn signed_zeros_f32() {
        let cases: [(&str, Kernel32); 7] = [
            ("tanh", tanh32_k::run),
            ("expm1", expm1_32_k::run),
            ("log1p", log1p32_k::run),
            ("erf", erf32_k::run),
            ("silu", silu32_k::run),
            ("gelu", gelu32_k::run),
            ("gelu tanh", gelu_tanh32_k::run),
        ];
        for isa in Isa::supported() {
            for (name, kernel) in cases {
                for x in [0f32, -0.0] {
                    let mut got = [1f32];
                    kernel(isa, &[x], &mut got);
                    assert_eq!(
                        got[0].to_bits(),
                        x.to_bits(),
                        "{name} f32 {isa:?} at {x:?}: got {:?}",
                        got[0]
                    );
                }
            }
        }
    }

    /// The in-place forms compute exactly what the mapping forms do (which the tests above
    /// check against references).
    #[test]
    fn in_place_forms_match_the_mapping_ones() {
        type InPlace32 = fn(Isa, &mut [f32]);
        type InPlace64 = fn(Isa, &mut [f64]);
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let x32: Vec<f32> = (0..=u32::MAX).step_by(65521).map(f32::from_bits).collect();
        let pairs32: [(&str, Kernel32, InPlace32); 10] = [
            ("exp", exp32_k::run, exp32_k::run_),
            ("expm1", expm1_32_k::run, expm1_32_k::run_),
            ("log", log32_k::run, log32_k::run_),
            ("log1p", log1p32_k::run, log1p32_k::run_),
            ("tanh", tanh32_k::run, tanh32_k::run_),
            ("sigmoid", sigmoid32_k::run, sigmoid32_k::run_),
            ("silu", silu32_k::run, silu32_k::run_),
            ("erf", erf32_k::run, erf32_k::run_),
            ("gelu", gelu32_k::run, gelu32_k::run_),
            ("gelu tanh", gelu_tanh32_k::run, gelu_tanh32_k::run_),
        ];
        let x64: Vec<f64> = (0..=u64::MAX)
            .step_by(1 << 48)
            .map(f64::from_bits)
            .collect();
        let pairs64: [(&str, Kernel64, InPlace64); 10] = [
            ("exp", exp64_k::run, exp64_k::run_),
            ("log", log64_k::run, log64_k::run_),
            ("sigmoid", sigmoid64_k::run, sigmoid64_k::run_),
            ("silu", silu64_k::run, silu64_k::run_),
            ("expm1", expm1_64_k::run, expm1_64_k::run_),
            ("log1p", log1p64_k::run, log1p64_k::run_),
            ("tanh", tanh64_k::run, tanh64_k::run_),
            ("erf", erf64_k::run, erf64_k::run_),
            ("gelu", gelu64_k::run, gelu64_k::run_),
            ("gelu tanh", gelu_tanh64_k::run, gelu_tanh64_k::run_),
        ];
        for isa in Isa::supported() {
            for (name, map, in_place) in pairs32 {
                let mut a = vec![0f32; x32.len()];
                map(isa, &x32, &mut a);
                let mut b = x32.clone();
                in_place(isa, &mut b);
                for ((&x, &a), &b) in x32.iter().zip(&a).zip(&b) {
                    assert!(
                        same(a as f64, b as f64),
                        "{name} f32 {isa:?} at {x:e}: {a} vs {b}"
                    );
                }
            }
            for (name, map, in_place) in pairs64 {
                let mut a = vec![0f64; x64.len()];
                map(isa, &x64, &mut a);
                let mut b = x64.clone();
                in_place(isa, &mut b);
                for ((&x, &a), &b) in x64.iter().zip(&a).zip(&b) {
                    assert!(same(a, b), "{name} f64 {isa:?} at {x:e}: {a} vs {b}");
                }
            }
        }
        let mut y = [0.5f32, -2.0];
        gelu_f32_(&mut y, "tanh");
        let mut z = [0f32; 2];
        gelu_f32(&[0.5, -2.0], &mut z, "tanh");
        assert_eq!(y, z);
        let mut y = [0.5f64, -2.0];
        gelu_f64_(&mut y, "tanh");
        let mut z = [0f64; 2];
        gelu_f64(&[0.5, -2.0], &mut z, "tanh");
        assert_eq!(y, z);
    }

    #[test]
    fn public_functions_use_the_best_isa_and_check_lengths() {
        let best = *Isa::supported().last().unwrap();
        assert_eq!(Isa::best(), best);
        let a = [0.0f32, 1.0, -1.0];
        let mut o = [0f32; 3];
        exp_f32(&a, &mut o);
        assert_eq!(o[0], 1.0);
        assert!((o[1] as f64 - 1f64.exp()).abs() < 3e-7);
        gelu_f32(&a, &mut o, "tanh");
        assert_eq!(o[0], 0.0);
        assert!(std::panic::catch_unwind(|| exp_f32(&[1.0], &mut [0.0, 0.0])).is_err());
    }

    /// Softmax and log-softmax of rows, against float64 loops over the same f32 inputs.
    #[test]
    fn softmax_rows_match_a_float64_loop() {
        for isa in Isa::supported() {
            for n in [1usize, 3, 31, 32, 33, 100, 1024] {
                let rows = 5;
                let x: Vec<f32> = (0..rows * n)
                    .map(|i| ((i * 7919) % 1009) as f32 * 0.05 - 20.0)
                    .collect();
                let (mut s, mut l) = (vec![0f32; x.len()], vec![0f32; x.len()]);
                softmax32_k::run(isa, &x, &mut s, n);
                log_softmax32_k::run(isa, &x, &mut l, n);
                let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
                let (mut s64, mut l64) = (vec![0f64; x.len()], vec![0f64; x.len()]);
                softmax64_k::run(isa, &x64, &mut s64, n);
                log_softmax64_k::run(isa, &x64, &mut l64, n);
                for r in 0..rows {
                    let row = &x64[r * n..][..n];
                    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = row.iter().map(|v| (v - m).exp()).sum();
                    for (j, &v) in row.iter().enumerate() {
                        let (ws, wl) = ((v - m).exp() / sum, v - m - sum.ln());
                        let i = r * n + j;
                        // `v - max` rounds in f32 (relative 2^-24), which e^ multiplies by
                        // |v - max|; then the exp, sum and scale add a few ulps.
                        let tol = ws * (5e-7 + 6e-8 * (v - m).abs()) + 1e-40;
                        assert!(
                            ((s[i] as f64) - ws).abs() <= tol,
                            "{isa:?} n={n} {} {ws}",
                            s[i]
                        );
                        assert!(((l[i] as f64) - wl).abs() <= 2e-6 * (1.0 + wl.abs()));
                        assert!((s64[i] - ws).abs() <= 1e-14 * ws + 1e-300);
                        assert!((l64[i] - wl).abs() <= 1e-13 * (1.0 + wl.abs()));
                    }
                }
            }
            // A NaN poisons its row only; an all -inf row is NaN; +inf gives NaN (inf - inf).
            let x = [
                1.0,
                f32::NAN,
                0.0,
                2.0,
                f32::NEG_INFINITY,
                f32::NEG_INFINITY,
            ];
            let mut o = [0f32; 6];
            softmax32_k::run(isa, &x, &mut o, 2);
            assert!(o[0].is_nan() && o[1].is_nan() && o[4].is_nan() && o[5].is_nan());
            assert!((o[2] as f64 - 1.0 / (1.0 + 2f64.exp())).abs() < 1e-7);
            let x = [f32::INFINITY, 0.0];
            softmax32_k::run(isa, &x, &mut o[..2], 2);
            assert!(o[0].is_nan() && o[1].is_nan());
        }
        // Zero-length rows are nothing to do.
        softmax_f32(&[], &mut [], 0);
    }
}
