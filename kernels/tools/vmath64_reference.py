"""Writes kernels/src/cpu/vmath64_reference.txt: exact values of the f64 functions of
vmath.rs (tanh, expm1, log1p, erf, gelu both forms) at a few thousand inputs, for the test
that measures the kernels' errors against them (`vmath64_against_exact_values`).

Each line is `name x y_hi y_lo` with the f64 bit patterns in hex: x the input, y_hi the
correctly rounded result and y_lo the correctly rounded remainder (true value - y_hi), so
that the test measures fractions of an ulp. Values come from mpmath at 60 digits. Inputs:
uniform and log-uniform samples over each function's range plus runs near its
thresholds (the kernels' splits, underflow and overflow points), from a fixed seed.

Run: /work/torchenv/bin/python kernels/tools/vmath64_reference.py   (numpy + mpmath)
"""

import os
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 60
K = mp.sqrt(2 / mp.pi)
C = mp.mpf("0.044715")  # PyTorch's constant, as the decimal it is written as

FUNCS = {
    "tanh": mp.tanh,
    "expm1": mp.expm1,
    "log1p": mp.log1p,
    "erf": mp.erf,
    "gelu": lambda x: x / 2 * mp.erfc(-x / mp.sqrt(2)),
    "gelu_tanh": lambda x: x / (1 + mp.exp(-2 * K * (x + C * x**3))),
}

rng = np.random.default_rng(20240611)


def uni(lo, hi, n):
    return list(rng.uniform(lo, hi, n))


def logu(lo, hi, n, sign=1):
    return list(sign * np.exp(rng.uniform(np.log(lo), np.log(hi), n)))


def near(c, n, width=1e-3):
    return list(c + rng.uniform(-width, width, n) * max(abs(c), 1.0))


SQRT2 = float(mp.sqrt(2))
INPUTS = {
    "tanh": uni(-20, 20, 150) + uni(-0.6, 0.6, 100) + near(0.55, 40) + near(-0.55, 40)
    + logu(1e-300, 1e-2, 40) + logu(1e-300, 1e-2, 20, -1) + near(19.06, 20),
    "expm1": uni(-45, 710, 100) + uni(-1.1, 1.1, 120) + logu(1e-300, 1e-3, 30)
    + logu(1e-300, 1e-3, 30, -1) + near(0.3466, 30) + near(-0.3466, 30) + uni(700, 709.78, 30)
    + uni(-38, -36.5, 20),
    "log1p": uni(-1, -0.9, 40) + uni(-0.5, 1.5, 140) + logu(1e-300, 1e-3, 30)
    + logu(1e-300, 1e-3, 30, -1) + logu(1, 1e300, 50) + near(0.41421, 30) + near(-0.29289, 30)
    + logu(1e-16, 1e-1, 20, -1),
    "erf": uni(-7, 7, 150) + uni(-1.2, 1.2, 100) + near(1.0, 30) + near(-1.0, 30)
    + near(1.5, 30) + near(-1.5, 30) + logu(1e-300, 1e-2, 30) + logu(1e-300, 1e-2, 20, -1)
    + uni(5.5, 6.1, 20),
    "gelu": uni(-39, 6, 200) + uni(-2.5, 2.5, 100) + near(1.5 * SQRT2, 30)
    + near(-1.5 * SQRT2, 30) + uni(-38.8, -37.4, 40) + logu(1e-300, 1e-2, 30)
    + logu(1e-300, 1e-2, 20, -1),
    "gelu_tanh": uni(-22.5, 10, 200) + uni(-3, 3, 100) + uni(-21.9, -21.5, 30)
    + logu(1e-300, 1e-2, 30) + logu(1e-300, 1e-2, 20, -1) + uni(-12, -5, 50),
}


def bits(v):
    return struct.pack(">d", v).hex()


def round_f64(y):
    """The f64 nearest to the mpf y (ties to even), subnormals included."""
    if y == 0:
        return 0.0
    if abs(y) < mp.mpf(2) ** -1022:
        return float(mp.nint(y * mp.mpf(2) ** 1074)) * 2.0**-1074
    with mp.workprec(53):
        return float(+y)


def main():
    lines = []
    for name, xs in INPUTS.items():
        f = FUNCS[name]
        for x in xs:
            x = float(x)
            y = f(mp.mpf(x))
            hi = round_f64(y)
            lo = round_f64(y - mp.mpf(hi))
            lines.append(f"{name} {bits(x)} {bits(hi)} {bits(lo)}\n")
    path = os.path.join(os.path.dirname(__file__), "..", "src", "cpu", "vmath64_reference.txt")
    with open(path, "w") as out:
        out.writelines(lines)
    print(f"{len(lines)} values written to {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
