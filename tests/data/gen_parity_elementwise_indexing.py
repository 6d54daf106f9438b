"""Reference values for tests/parity_elementwise_indexing.rs (issue 21, elementwise and
indexing parity items), printed from real PyTorch.

Run:  /path/to/python-with-torch tests/data/gen_parity_elementwise_indexing.py
(written against PyTorch 2.15, CPU). The Rust test holds the printed numbers and error
texts literally; rerun this script and compare when PyTorch is upgraded.
"""
import torch

torch.set_printoptions(precision=17)


def show(name, f):
    try:
        r = f()
        if isinstance(r, tuple):
            for i, x in enumerate(r):
                print(f"{name}[{i}]", x.dtype, list(x.shape), x.flatten().tolist())
        else:
            print(name, r.dtype, list(r.shape), r.flatten().tolist())
    except Exception as e:  # noqa: BLE001
        print(name, "raises", type(e).__name__, str(e))


def grads(name, f, *inputs):
    out = f(*inputs)
    g = torch.arange(out.numel(), dtype=out.dtype).reshape(out.shape)
    gs = torch.autograd.grad(out, inputs, g, allow_unused=True)
    for i, x in enumerate(gs):
        print(f"{name} grad[{i}]", list(x.shape), x.flatten().tolist())


# 1. logit with eps > 0.5: x < lo ? lo : (x > hi ? hi : x), lo = eps, hi = 1 - eps.
x = torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9], dtype=torch.float64, requires_grad=True)
for eps in (0.6, 0.4, 0.5):
    show(f"logit eps={eps}", lambda: torch.logit(x, eps))
    grads(f"logit eps={eps}", lambda x: torch.logit(x, eps), x)
show("logit f32 eps=0.6", lambda: torch.logit(x.detach().float(), 0.6))

# 2. hardtanh / relu6 on integers, square on bool.
i = torch.tensor([-3, 0, 2, 5, 9])
show("hardtanh i64", lambda: torch.nn.functional.hardtanh(i))
show("hardtanh i64 -2 4", lambda: torch.nn.functional.hardtanh(i, -2, 4))
show("hardtanh i32 -1.5 1.5", lambda: torch.nn.functional.hardtanh(i.int(), -1.5, 1.5))
show("relu6 i64", lambda: torch.nn.functional.relu6(i))
show("relu6 u8", lambda: torch.nn.functional.relu6(torch.tensor([253, 0, 2, 5, 9], dtype=torch.uint8)))
show("hardtanh bool", lambda: torch.nn.functional.hardtanh(torch.tensor([True, False])))
show("square bool", lambda: torch.square(torch.tensor([True, False])))
show("square_ bool", lambda: torch.tensor([True, False]).square_())
show("square i8", lambda: torch.square(torch.tensor([3, -4], dtype=torch.int8)))

# 2b. Integer bounds outside the dtype's range saturate (hardtanh, relu6, clamp).
u = torch.tensor([0, 1, 2, 200], dtype=torch.uint8)
c = torch.tensor([-3, 0, 5, 100], dtype=torch.int8)
show("hardtanh u8", lambda: torch.nn.functional.hardtanh(u))
show("hardtanh u8 -5 300", lambda: torch.nn.functional.hardtanh(u, -5, 300))
show("relu6 u8", lambda: torch.nn.functional.relu6(u))
show("hardtanh i8 -200 50", lambda: torch.nn.functional.hardtanh(c, -200, 50))
show("clamp u8 -1 1", lambda: torch.clamp(u, -1, 1))
show("clamp u8 max=-1", lambda: torch.clamp(u, max=-1))
show("clamp i8 -200 300", lambda: torch.clamp(c, -200, 300))
show("clamp_ i8 min=-200 max=4", lambda: c.clone().clamp_(-200, 4))

# 3. hardtanh with min > max (torch.nn.functional.hardtanh's check).
show("hardtanh min>max", lambda: torch.nn.functional.hardtanh(torch.randn(3), 2.0, 1.0))
show("hardtanh_ min>max", lambda: torch.nn.functional.hardtanh(torch.randn(3), 2.0, 1.0, inplace=True))
show("hardtanh min==max", lambda: torch.nn.functional.hardtanh(torch.tensor([-3.0, 0.0, 3.0]), 1.0, 1.0))

# 4. take_along_dim: with a dim, indices are taken modulo the size.
a = torch.arange(12.0).reshape(3, 4)
show("tad neg", lambda: torch.take_along_dim(a, torch.tensor([[-1, 0], [-4, 1], [2, -2]]), 1))
show("tad wrap", lambda: torch.take_along_dim(a, torch.tensor([[5], [-9], [4]]), 1))
show("tad dim0", lambda: torch.take_along_dim(a, torch.tensor([[-4], [-9], [4]]), 0))
ag = a.clone().double().requires_grad_()
grads("tad neg", lambda t: torch.take_along_dim(t, torch.tensor([[-1, 3], [-4, 5], [2, -2]]), 1), ag)
show("tad none neg", lambda: torch.take_along_dim(a, torch.tensor([1, -1])))
show("tad none i32", lambda: torch.take_along_dim(a, torch.tensor([1, 11], dtype=torch.int32)))
show("tad i32 dim", lambda: torch.take_along_dim(a, torch.tensor([[1]], dtype=torch.int32), 1))
show("tad zero size", lambda: torch.take_along_dim(torch.empty(3, 0), torch.tensor([[0]]), 1))
show("tad 0-d", lambda: torch.take_along_dim(torch.tensor(5.0), torch.tensor(0), 0))
show("tad 0-d -1", lambda: torch.take_along_dim(torch.tensor(5.0), torch.tensor(0), -1))

# 5. gather / scatter accept an empty index of any dtype.
for dt in (torch.float32, torch.bool, torch.int16, torch.uint8, torch.int8):
    show(f"gather empty {dt}", lambda: torch.gather(a, 1, torch.empty(3, 0, dtype=dt)))
    show(f"gather empty 0,5 {dt}", lambda: torch.gather(a, 1, torch.empty(0, 5, dtype=dt)))
    show(f"scatter empty {dt}", lambda: torch.scatter(a, 1, torch.empty(3, 0, dtype=dt), torch.ones(3, 0)))
    show(f"scatter_add empty {dt}", lambda: torch.scatter_add(a, 1, torch.empty(3, 0, dtype=dt), torch.ones(3, 0)))
show("gather i16", lambda: torch.gather(a, 1, torch.zeros(3, 1, dtype=torch.int16)))

# 6. masked_fill(Tensor value) and masked_scatter broadcast self to the mask's shape.
s = torch.arange(5.0, dtype=torch.float64, requires_grad=True)
m = torch.eye(5, dtype=torch.bool)
v = torch.tensor(-1.0, dtype=torch.float64, requires_grad=True)
show("masked_fill tensor", lambda: torch.masked_fill(s, m, v))
grads("masked_fill tensor", lambda s, v: torch.masked_fill(s, m, v), s, v)
show("masked_fill scalar", lambda: torch.masked_fill(s, m, -1.0))
src = torch.arange(10.0, dtype=torch.float64).mul(10).requires_grad_()
show("masked_scatter", lambda: torch.masked_scatter(s, m, src))
grads("masked_scatter", lambda s, src: torch.masked_scatter(s, m, src), s, src)
show("masked_scatter col", lambda: torch.masked_scatter(
    torch.arange(5.0).reshape(5, 1), torch.tensor([True, False, True]), torch.arange(20.0).add(100)))
show("masked_fill_ grows", lambda: s.detach().clone().masked_fill_(m, -1.0))
show("masked_fill tensor bad", lambda: torch.masked_fill(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.bool), torch.tensor(1.0)))
show("masked_scatter bad", lambda: torch.masked_scatter(torch.ones(2, 3), torch.ones(4, 3, dtype=torch.bool), torch.arange(20.0)))

# 7. roll of a 0-d tensor along a dim.
show("roll 0-d 0", lambda: torch.roll(torch.tensor(3.0), 1, 0))
show("roll 0-d -1", lambda: torch.roll(torch.tensor(3.0), 1, -1))
show("roll 0-d flat", lambda: torch.roll(torch.tensor(3.0), 1))
show("roll empty bad dim", lambda: torch.roll(torch.empty(0, 3), 1, 5))

# 8. sum_to_size: an empty size sums everything (int64 for integers and bool).
show("sum_to_size 0-d bool", lambda: torch.tensor(True).sum_to_size([]))
show("sum_to_size 0-d i32", lambda: torch.tensor(3, dtype=torch.int32).sum_to_size([]))
show("sum_to_size 0-d u8", lambda: torch.tensor(3, dtype=torch.uint8).sum_to_size([]))
show("sum_to_size [1] u8", lambda: torch.tensor([3], dtype=torch.uint8).sum_to_size([1]))
show("sum_to_size [[1]] bool", lambda: torch.tensor([[True]]).sum_to_size([1]))

# 9. prod of empty floats (differentiable), prod of bool with dtype=bool.
e = torch.empty(0, dtype=torch.float64, requires_grad=True)
show("prod empty", lambda: torch.prod(e))
print("prod empty grad", list(torch.autograd.grad(torch.prod(e), e)[0].shape))
e2 = torch.empty(2, 0, dtype=torch.float64, requires_grad=True)
show("prod_dim empty", lambda: torch.prod(e2, 1))
print("prod_dim empty grad", list(torch.autograd.grad(torch.prod(e2, 1).sum(), e2)[0].shape))
b = torch.tensor([[True, False], [True, True]])
show("prod bool dim bool", lambda: torch.prod(b, 1, dtype=torch.bool))
show("prod bool bool", lambda: torch.prod(b, dtype=torch.bool))
show("prod u8 dim bool", lambda: torch.prod(torch.tensor([2, 3], dtype=torch.uint8), 0, dtype=torch.bool))
show("prod f32 dim bool", lambda: torch.prod(torch.tensor([1e-30, 1e-30]), 0, dtype=torch.bool))

# 10. more than 64 dims with a dim list.
x65 = torch.ones([1] * 65)
show("amax 65 dim", lambda: torch.amax(x65, 0))
show("amin 65 dim", lambda: torch.amin(x65, -1))
show("aminmax 65 dim", lambda: torch.aminmax(x65, dim=0))
show("amax 65 all", lambda: torch.amax(x65))
show("aminmax 65 all", lambda: torch.aminmax(x65))

# median propagates NaN (issue 22 follow-up): the first NaN of a line and its index.
nan = float("nan")
m = torch.tensor([[1, nan, 2, 0], [5, 4, nan, nan], [1, 2, 3, 4], [nan, 1, nan, 2]])
show("median_dim nan", lambda: torch.median(m, 1))
show("median_dim nan keepdim", lambda: torch.median(m.t(), 0, keepdim=True))
show("median nan", lambda: torch.median(m))
show("median no nan", lambda: torch.median(m[2]))
mg = m.clone().requires_grad_(True)
grads("median_dim nan", lambda x: torch.median(x, 1)[0], mg)
