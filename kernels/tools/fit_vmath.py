"""Fits the polynomial coefficients of kernels/src/cpu/vmath.rs (the f32 kernels).

Each fit is a weighted minimax fit (Lawson's iteratively reweighted least squares) of a
polynomial to a target computed in 50-digit arithmetic by mpmath, on dense nodes of the
reduced range the kernel evaluates it on. The coefficients are then rounded to f32 and the
whole reduced formula is evaluated in float32 to estimate the error it adds.

Run: /work/torchenv/bin/python kernels/tools/fit_vmath.py   (numpy + mpmath)
The printed `const` lines are what vmath.rs holds. The kernels' accuracy is checked against
float64 references by vmath.rs's own tests, not by this script.
"""

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def lawson(basis, y, w, iters=400):
    """Coefficients c minimising max |w * (basis @ c - y)|."""
    n = len(y)
    v = np.full(n, 1.0 / n)
    c = None
    for _ in range(iters):
        sv = np.sqrt(v) * w
        c, *_ = np.linalg.lstsq(basis * sv[:, None], y * sv, rcond=None)
        e = np.abs(w * (basis @ c - y))
        v = v * e
        v /= v.sum()
    return c, float(np.abs(w * (basis @ c - y)).max())


def nodes(lo, hi, n=6000):
    """Chebyshev nodes on [lo, hi] plus a uniform grid."""
    k = np.arange(n)
    cheb = 0.5 * (lo + hi) + 0.5 * (hi - lo) * np.cos((2 * k + 1) * np.pi / (2 * n))
    return np.unique(np.concatenate([cheb, np.linspace(lo, hi, n)]))


def mpf_array(f, xs):
    return np.array([float(f(mp.mpf(float(x)))) for x in xs])


def show(name, c):
    c32 = [np.float32(v) for v in c]
    print(f"// {name}")
    for i, v in enumerate(c32):
        print(f"const {name}{i}: f32 = {np.format_float_positional(v, unique=True) if abs(v) >= 1e-4 else np.format_float_scientific(v, unique=True)};")
    return c32


def horner32(c32, x):
    x = np.float32(x)
    acc = np.float32(c32[-1])
    for v in reversed(c32[:-1]):
        acc = np.float32(acc * x + v)
    return acc


def report(label, got32, want):
    got = got32.astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    print(f"#   {label}: max error in f32 evaluation {np.max(np.abs(got - want) / ulp):.3f} ulp")


# e^r = 1 + r + r^2 E(r) on |r| <= ln2/2 (plus rounding slack).
R = float(mp.log(2)) / 2 * 1.002
r = nodes(-R, R)
r = r[np.abs(r) > 1e-6]
y = mpf_array(lambda v: (mp.exp(v) - 1 - v) / v**2, r)
w = r**2 / np.exp(r)
c, err = lawson(np.stack([r**k for k in range(5)], 1), y, w)
print(f"# exp: relative fit error {err:.3e}")
e32 = show("EXP_P", c)
r32 = r.astype(np.float32)
got = np.float32(1) + r32 + r32 * r32 * horner32(e32, r32)
report("exp core", got, mpf_array(mp.exp, r32))

# log(1 + f) = f - f^2/2 + f^3 L(f) on f in [sqrt(1/2) - 1, sqrt(2) - 1].
lo, hi = float(mp.sqrt(0.5) - 1), float(mp.sqrt(2) - 1)
f = nodes(lo, hi)
f = f[np.abs(f) > 1e-6]
y = mpf_array(lambda v: (mp.log1p(v) - v + v**2 / 2) / v**3, f)
w = np.abs(f**3 / np.log1p(f))
for deg in (8, 7):
    c, err = lawson(np.stack([f**k for k in range(deg + 1)], 1), y, w)
    print(f"# log1p core degree {deg}: relative fit error {err:.3e}")
l32 = show("LOG_P", c)
f32 = f.astype(np.float32)
got = f32 + (np.float32(-0.5) * f32 * f32 + f32 * f32 * f32 * horner32(l32, f32))
report("log1p core", got, mpf_array(mp.log1p, f32))

# tanh(x) = x + x^3 T(x^2) on |x| < 0.625.
x = nodes(1e-4, 0.625)
s = x * x
y = mpf_array(lambda v: (mp.tanh(v) - v) / v**3, x)
w = np.abs(x**3 / np.tanh(x))
for deg in (5, 4):
    c, err = lawson(np.stack([s**k for k in range(deg + 1)], 1), y, w)
    print(f"# tanh small degree {deg}: relative fit error {err:.3e}")
t32 = show("TANH_P", c)
x32 = x.astype(np.float32)
got = x32 + x32 * (x32 * x32) * horner32(t32, x32 * x32)
report("tanh small", got, mpf_array(mp.tanh, x32))

# erf(x) = x + x Q(x^2) on |x| < ERF_SPLIT (Q(0) = 2/sqrt(pi) - 1: the leading x is exact).
SPLIT = 1.0
x = nodes(1e-4, SPLIT)
s = x * x
y = mpf_array(lambda v: mp.erf(v) / v - 1, x)
w = x / mpf_array(mp.erf, x)
for deg in (7, 6):
    c, err = lawson(np.stack([s**k for k in range(deg + 1)], 1), y, w)
    print(f"# erf small degree {deg}: relative fit error {err:.3e}")
q32 = show("ERF_Q", c)
x32 = x.astype(np.float32)
got = x32 + x32 * horner32(q32, x32 * x32)
report("erf small", got, mpf_array(mp.erf, x32))

# erfc(t) = exp(-t^2) u S(v), u = 1/t, on t in [ERF_SPLIT, 10.5] (erfc underflows f32
# beyond), S a polynomial in v = (2u - (UMAX + UMIN)) / (UMAX - UMIN), which maps u's range to
# [-1, 1] so that its terms shrink and f32 evaluation stays accurate.
TMAX = 10.5
t = nodes(SPLIT, TMAX)
u = 1 / t
umin, umax = 1 / TMAX, 1 / SPLIT
print(f"const ERFC_V_SCALE: f32 = {np.float32(2 / (umax - umin))};")
print(f"const ERFC_V_SHIFT: f32 = {np.float32((umax + umin) / (umax - umin))};")
v = (2 * u - (umax + umin)) / (umax - umin)
y = mpf_array(lambda q: mp.erfc(q) * q * mp.exp(q * q), t)
for deg in (9, 10):
    c, err = lawson(np.stack([v**k for k in range(deg + 1)], 1), y, 1 / y)
    print(f"# erfc large degree {deg}: relative fit error {err:.3e}")
s32 = show("ERFC_S", c)
v32 = (np.float32(2 / (umax - umin)) * u.astype(np.float32) - np.float32((umax + umin) / (umax - umin)))
got = horner32(s32, v32)
print(f"#   erfc S(v): max relative error in f32 evaluation {np.max(np.abs(got - y) / y):.3e}")
