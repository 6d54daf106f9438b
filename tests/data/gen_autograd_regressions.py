"""Reference numbers for tests/autograd_regressions.rs, from real PyTorch.

Run: /path/to/python tests/data/gen_autograd_regressions.py
(writes autograd_regressions_ref.txt next to this file; the test reads it with include_str!)

Cases:
- `lcse.*`: logcumsumexp forward and gradient for inputs spanning -1000..1000 (float64) or
  -100..100 (float32), some with -inf entries (a line starting with -inf has an undefined
  gradient there: PyTorch gives NaN), and cotangents holding exact zeros, along every dim.
- `lcse_inf`: logcumsumexp forward with +inf entries.
- `inplace_out.*`: `y = x * 2; y.<op>_(); y.sum().backward()` for in-place ops that save their
  own result, and the double backward `g = dy/dx (create_graph); (g * g).sum().backward()`.
- `ties.*`: sort / topk / kthvalue / mode of integer rows with ties (values and indices).
One line per tensor:
    <case> <key> <f64|i64> <shape as AxBxC or 'scalar'> <values…>
"""
import math, os
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "autograd_regressions_ref.txt")
lines = []


def det(shape, seed, scale=1.0, offset=0.0, dtype=torch.float64):
    n = math.prod(shape)
    v = torch.sin(torch.arange(n, dtype=torch.float64) * 0.731 + seed * 1.37 + 0.3) * scale + offset
    return v.reshape(shape).to(dtype)


def emit(case, key, t):
    t = t.detach()
    dt = "i64" if t.dtype in (torch.int64, torch.int32) else "f64"
    shape = "x".join(str(s) for s in t.shape) if t.dim() > 0 else "scalar"
    vals = " ".join(repr(int(x)) if dt == "i64" else repr(float(x)) for x in t.reshape(-1).tolist())
    lines.append(f"{case} {key} {dt} {shape} {vals}".rstrip())


def cotangent(shape, seed, dtype):
    g = det(shape, seed, 3.0, dtype=torch.float64)
    # Exact zeros at every 4th element.
    g.reshape(-1)[::4] = 0.0
    return g.to(dtype)


def lcse_case(name, x, g, dims):
    emit(name, "x", x)
    emit(name, "g", g)
    for d in dims:
        xx = x.clone().requires_grad_(True)
        r = torch.logcumsumexp(xx, d)
        r.backward(g)
        emit(name, f"out{d}", r)
        emit(name, f"grad{d}", xx.grad)


# float64, -1000..1000, no infinities.
x = det([5, 5, 5], 1, 1000.0)
lcse_case("lcse.wide", x, cotangent([5, 5, 5], 2, torch.float64), [0, 1, 2])
# float64 with -inf entries: x[0, 0, :] (a whole line along dim 0's start for dim 2),
# x[:, 1, 0] and scattered others.
x = det([5, 5, 5], 3, 1000.0)
x[0, 0, :] = -math.inf
x[:, 1, 0] = -math.inf
x.reshape(-1)[7::11] = -math.inf
lcse_case("lcse.neginf", x, cotangent([5, 5, 5], 4, torch.float64), [0, 1, 2])
# Cotangents of one sign.
x = det([4, 6], 5, 800.0)
lcse_case("lcse.pos", x, det([4, 6], 6, 1.0, 1.5), [0, 1])
lcse_case("lcse.neg", x, det([4, 6], 7, 1.0, -1.5), [0, 1])
# float32 spanning -100..100 (exp overflows float32 beyond 88).
x = det([3, 7], 8, 100.0, dtype=torch.float32)
lcse_case("lcse.f32", x, cotangent([3, 7], 9, torch.float32), [0, 1])
# Forward with +inf entries.
x = torch.tensor([math.inf, math.inf, 1.0, -math.inf, 2.0], dtype=torch.float64)
emit("lcse_inf", "x", x)
emit("lcse_inf", "out0", torch.logcumsumexp(x, 0))
x = torch.tensor([-math.inf, math.inf, -math.inf, 3.0], dtype=torch.float64)
emit("lcse_inf2", "x", x)
emit("lcse_inf2", "out0", torch.logcumsumexp(x, 0))

# In-place ops saving their own result.
x0 = torch.tensor([0.3, -0.7, 1.2, 0.05], dtype=torch.float64)
for op in ["exp_", "sigmoid_", "tanh_", "sqrt_", "reciprocal_", "rsqrt_", "expm1_", "relu_"]:
    xin = x0.abs() + 0.1 if op in ("sqrt_", "rsqrt_") else x0
    x = xin.clone().requires_grad_(True)
    y = x * 2
    getattr(y, op)()
    y.sum().backward()
    emit(f"inplace_out.{op}", "x", xin)
    emit(f"inplace_out.{op}", "y", y)
    emit(f"inplace_out.{op}", "grad", x.grad)
    x = xin.clone().requires_grad_(True)
    y = x * 2
    getattr(y, op)()
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (g * g).sum().backward()
    emit(f"inplace_out.{op}", "gradgrad", x.grad)
# pow_ with a scalar exponent (saves the original self).
x = x0.clone().requires_grad_(True)
y = x * 2
y.pow_(3)
y.sum().backward()
emit("inplace_out.pow3", "x", x0)
emit("inplace_out.pow3", "grad", x.grad)

# Ties on integer inputs.
row = torch.tensor([[3, 1, 3, 2, 1, 3, 2, 1], [5, 5, 5, 5, 0, 0, 5, 0]], dtype=torch.int64)
emit("ties", "x", row)
v, i = torch.sort(row, dim=1)
emit("ties", "sort.values", v)
emit("ties", "sort.indices", i)
v, i = torch.sort(row, dim=1, descending=True)
emit("ties", "sortd.values", v)
emit("ties", "sortd.indices", i)
v, i = torch.sort(row, dim=1, stable=True)
emit("ties", "sorts.indices", i)
v, i = torch.sort(row, dim=1, descending=True, stable=True)
emit("ties", "sortsd.indices", i)
v, i = torch.topk(row, 3, dim=1)
emit("ties", "topk.values", v)
emit("ties", "topk.indices", i)
v, i = torch.topk(row, 3, dim=1, largest=False)
emit("ties", "topks.values", v)
emit("ties", "topks.indices", i)
for k in (1, 2, 4, 6):
    v, i = torch.kthvalue(row, k, dim=1)
    emit("ties", f"kthvalue{k}.values", v)
    emit("ties", f"kthvalue{k}.indices", i)
v, i = torch.mode(row, dim=1)
emit("ties", "mode.values", v)
emit("ties", "mode.indices", i)

with open(OUT, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT} (torch {torch.__version__})")
