"""Fits the polynomial coefficients of kernels/src/cpu/vmath.rs: the f32 kernels', then the
f64 kernels' (tanh, erf, erfc; f64 exp and log use Taylor coefficients computed in the Rust
source).

Each f32 fit is a weighted minimax fit (Lawson's iteratively reweighted least squares) of a
polynomial to a target computed in 50-digit arithmetic by mpmath, on dense nodes of the
reduced range the kernel evaluates it on. The coefficients are then rounded to f32 and the
whole reduced formula is evaluated in float32 to estimate the error it adds. The f64 fits
are described where they start, below.

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


# ---------------------------------------------------------------------------------------
# f64 kernels. Near-minimax fits in 50-digit arithmetic: the Chebyshev interpolant of the
# target at N Chebyshev points, truncated at a fixed degree, converted to monomials in the
# kernel's own variable exactly, then rounded to f64 a coefficient at a time with the rest
# refitted (round_refit). (A Lawson fit in numpy's float64 stalls near 1e-16, above the
# error these need.) The error of the rounded polynomial evaluated in float64 (Horner,
# without fused multiply-adds) is then estimated on random points; the kernels' own errors
# are measured by vmath.rs's tests, against exact values from vmath64_reference.py among
# others.
# ---------------------------------------------------------------------------------------


def cheb_mono(f, lo, hi, deg, N=80, split0=False):
    """Degree-`deg` Chebyshev interpolant of f on [lo, hi] as monomial coefficients in the
    variable itself, rounded to f64 (see round_refit), and the size of the first dropped
    Chebyshev coefficient."""
    lo, hi = mp.mpf(lo), mp.mpf(hi)
    th = [mp.pi * (j + mp.mpf(0.5)) / N for j in range(N)]
    fs = [f((hi + lo) / 2 + (hi - lo) / 2 * mp.cos(a)) for a in th]
    c = [2 * sum(fs[j] * mp.cos(n * th[j]) for j in range(N)) / N for n in range(N)]
    c[0] /= 2
    dropped = max(abs(x) for x in c[deg + 1 :])
    # T_n(z) as polynomials in v, z = a v + b, by T_n = 2 z T_{n-1} - T_{n-2}.
    a, b = 2 / (hi - lo), -(hi + lo) / (hi - lo)

    def times_z(p):
        r = [mp.mpf(0)] * (len(p) + 1)
        for i, x in enumerate(p):
            r[i] += b * x
            r[i + 1] += a * x
        return r

    out = [mp.mpf(0)] * (deg + 1)
    t_prev, t_cur = [mp.mpf(1)], [b, a]
    for n in range(deg + 1):
        if n == 0:
            tn = t_prev
        elif n == 1:
            tn = t_cur
        else:
            t_next = [2 * x for x in times_z(t_cur)]
            for i, x in enumerate(t_prev):
                t_next[i] -= x
            t_prev, t_cur = t_cur, t_next
            tn = t_cur
        for i, x in enumerate(tn):
            out[i] += c[n] * x
    return round_refit(f, lo, hi, out, split0), float(dropped)


def round_refit(f, lo, hi, c, split0=False, N=120):
    """Rounds the monomial coefficients c to f64 one at a time from the constant term up,
    refitting the ones not yet rounded (least squares, relative, at N Chebyshev points) so
    that they absorb each rounding error instead of letting them add up. With `split0` the
    constant term is kept as a sum of two doubles (returned first, as a pair): a lone
    rounded constant would err by half its ulp, a full ulp relative to the smaller values
    the polynomial takes elsewhere on the interval, which no other term can make up for."""
    th = [mp.pi * (j + mp.mpf(0.5)) / N for j in range(N)]
    v = [(hi + lo) / 2 + (hi - lo) / 2 * mp.cos(a) for a in th]
    fv = [f(x) for x in v]
    c = list(c)
    c0 = None
    for i in range(len(c)):
        if i == 0 and split0:
            c0 = (float(c[0]), float(c[0] - mp.mpf(float(c[0]))))
            c[0] = mp.mpf(c0[0]) + mp.mpf(c0[1])
        else:
            c[i] = mp.mpf(float(c[i]))
        free = range(i + 1, len(c))
        if not free:
            break
        rows = [[v[k] ** j / fv[k] for j in free] for k in range(N)]
        rhs = [(fv[k] - sum(c[j] * v[k] ** j for j in range(i + 1))) / fv[k] for k in range(N)]
        sol, _ = mp.qr_solve(mp.matrix(rows), mp.matrix(rhs))
        for n, j in enumerate(free):
            c[j] = sol[n]
    out = [float(x) for x in c]
    if split0:
        out[0] = c0
    return out


def show64(name, c, dropped):
    print(f"# {name}: first dropped Chebyshev coefficient {dropped:.2e}")
    if isinstance(c[0], tuple):
        print(f"const {name}0_LO: f64 = {c[0][1]!r};")
        c = [c[0][0]] + c[1:]
    body = "".join(f"    {float(v)!r},\n" for v in c)
    print(f"const {name}: [f64; {len(c)}] = [\n{body}];")


def horner64(c, x):
    """Horner's rule in float64; a split constant term (hi, lo) is added as the kernel does,
    lo into the last product and hi last."""
    acc = np.full_like(x, c[-1])
    for v in reversed(c[1:-1]):
        acc = acc * x + v
    if isinstance(c[0], tuple):
        return (acc * x + c[0][1]) + c[0][0]
    return acc * x + c[0]


def exact_error(label, c, f, xs):
    """The error of the rounded coefficients themselves (evaluated exactly), in units of
    2^-53 relative: the floor under the float64 evaluation's."""
    worst = 0.0
    for x in xs:
        x = mp.mpf(float(x))
        acc = mp.mpf(0)
        for v in reversed(c[1:]):
            acc = acc * x + mp.mpf(v)
        c0 = mp.mpf(c[0][0]) + mp.mpf(c[0][1]) if isinstance(c[0], tuple) else mp.mpf(c[0])
        want = f(x)
        worst = max(worst, abs(float((acc * x + c0 - want) / want)) * 2.0**53)
    print(f"#   {label}: coefficients' own error {worst:.3f} x 2^-53 relative")


def report64(label, got, want):
    want = np.asarray(want, dtype=np.float64)
    e = np.abs(got - want) / np.spacing(np.abs(want))
    print(f"#   {label}: max error in f64 evaluation {e.max():.2f} ulp (reference rounded to f64)")


rng = np.random.default_rng(1)

# tanh x = x + x^3 P(x^2) on |x| < 0.55 (TANH64_SPLIT; above atanh(1/2) = 0.5493 the other
# form 1 - 2 / (e^2x + 1) keeps its result in [1/2, 1]).
SPLIT64 = 0.55
P, dropped = cheb_mono(
    lambda s: (mp.tanh(mp.sqrt(s)) - mp.sqrt(s)) / mp.sqrt(s) ** 3 if s > 0 else mp.mpf(-1) / 3,
    0, mp.mpf(SPLIT64) ** 2, 11)
show64("TANH64_P", P, dropped)
x = rng.uniform(0, SPLIT64, 20000)
report64("tanh small", x + x * (x * x) * horner64(P, x * x), mpf_array(mp.tanh, x))

# erf x = x + x Q(x^2) on |x| < 1 (ERF_SPLIT).
Q, dropped = cheb_mono(
    lambda s: mp.erf(mp.sqrt(s)) / mp.sqrt(s) - 1 if s > 0 else 2 / mp.sqrt(mp.pi) - 1, 0, 1, 13)
show64("ERF64_Q", Q, dropped)
x = rng.uniform(0, 1, 20000)
report64("erf small", x + x * horner64(Q, x * x), mpf_array(mp.erf, x))

# erfcx t = e^(t^2) erfc t on [0, TMAX] in two pieces of one degree, so that the kernel picks
# each coefficient per lane (a blend) and runs one Horner loop:
#   t < 1.5:  erfcx t = A(t - 0.75), A's constant term a sum of two doubles
#   t >= 1.5: erfcx t = B(y) / (t + 2), y = (t - 2) / (t + 2) in [-1/7, (TMAX - 2) / (TMAX + 2)]
# TMAX: gelu's x Phi(x) rounds to 0 below x = -38.7386 (t = 27.392); the kernel clamps |x| to
# 38.75.
T1, KY, TMAX = mp.mpf(1.5), mp.mpf(2), mp.mpf("27.45")
erfcx = lambda t: mp.erfc(t) * mp.exp(t * t)
fA = lambda v: erfcx(v + T1 / 2)
A, dropped = cheb_mono(fA, -T1 / 2, T1 / 2, 20, split0=True)
show64("ERFCX64_A", A, dropped)
exact_error("A", A, fA, np.linspace(-0.75, 0.75, 301))
fB = lambda y: (lambda t: erfcx(t) * (t + KY))(KY * (1 + y) / (1 - y))
ylo, yhi = (T1 - KY) / (T1 + KY), (TMAX - KY) / (TMAX + KY)
B, dropped = cheb_mono(fB, ylo, yhi, 20)
show64("ERFCX64_B", B, dropped)
exact_error("B", B, fB, np.linspace(float(ylo), float(yhi), 301))
t = np.concatenate([rng.uniform(0, 1.5, 4000), rng.uniform(1.5, 6, 4000), rng.uniform(1.5, 27.45, 4000)])
d = 1 / (t + 2)
got = np.where(t < 1.5, horner64(A, t - 0.75), d * horner64(B, (t - 2) * d))
report64("erfcx", got, mpf_array(erfcx, t))
