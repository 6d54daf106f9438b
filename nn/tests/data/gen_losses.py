"""Reference numbers for the margin, embedding and likelihood losses in nn/tests/losses.rs,
from real PyTorch.

Run: /path/to/python nn/tests/data/gen_losses.py  (writes losses_ref.txt next to this file)

Same format and helpers as gen_layers.py: each case runs a PyTorch loss module in float64
on deterministic inputs, backpropagates a deterministic cotangent and records the
state_dict (`state.<key>`), inputs (`in0`, `in1`, ...), cotangent (`cot`), output (`out`) and
input gradients (`grad.in0`, ...). One line per tensor:
    <case> <key> <f64|i64> <shape as AxBxC or 'scalar'> <values...>
"""
import math, os
import torch
import torch.nn as nn

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses_ref.txt")
lines = []


def det(shape, seed, scale=1.0, offset=0.0):
    n = math.prod(shape)
    v = torch.sin(torch.arange(n, dtype=torch.float64) * 0.731 + seed * 1.37 + 0.3) * scale + offset
    return v.reshape(shape)


def emit(case, key, t):
    t = t.detach()
    dt = "i64" if t.dtype in (torch.int64, torch.int32) else "f64"
    shape = "x".join(str(s) for s in t.shape) if t.dim() > 0 else "scalar"
    vals = " ".join(repr(int(x)) if dt == "i64" else repr(float(x)) for x in t.reshape(-1).tolist())
    lines.append(f"{case} {key} {dt} {shape} {vals}".rstrip())


def run(case, m, inputs, grad_inputs=None):
    """inputs: tensors; grad_inputs: indices of inputs to differentiate (default: float ones)."""
    for k, v in m.state_dict().items():
        emit(case, f"state.{k}", v)
    ins = []
    for i, x in enumerate(inputs):
        x = x.clone()
        emit(case, f"in{i}", x)
        if x.is_floating_point() and (grad_inputs is None or i in grad_inputs):
            x.requires_grad_(True)
        ins.append(x)
    out = m(*ins)
    emit(case, "out", out)
    cot = det(out.shape, 99)
    emit(case, "cot", cot)
    (out * cot).sum().backward()
    for i, x in enumerate(ins):
        if x.requires_grad:
            emit(case, f"grad.in{i}", x.grad)


def signs(shape, seed, dtype=torch.float64):
    return torch.where(det(shape, seed) > 0, 1, -1).to(dtype)


x1, x2 = det((6,), 1, 2.0), det((6,), 2, 2.0)
run("margin_ranking", nn.MarginRankingLoss(), [x1, x2, signs((6,), 3)])
run("margin_ranking_sum", nn.MarginRankingLoss(margin=0.5, reduction="sum"), [x1, x2, signs((6,), 4)])
run("margin_ranking_none", nn.MarginRankingLoss(margin=0.3, reduction="none"),
    [det((2, 3), 5, 2.0), det((2, 3), 6, 2.0), signs((2, 3), 7)])

p = det((4, 5), 3, 2.0)
run("hinge_embedding", nn.HingeEmbeddingLoss(), [p, signs((4, 5), 8, torch.int64)])
run("hinge_embedding_none", nn.HingeEmbeddingLoss(margin=0.5, reduction="none"),
    [p, signs((4, 5), 9)], grad_inputs=[0])
run("soft_margin", nn.SoftMarginLoss(), [p, signs((4, 5), 10)], grad_inputs=[0])
run("soft_margin_sum", nn.SoftMarginLoss(reduction="sum"), [det((7,), 11, 3.0), signs((7,), 12)], grad_inputs=[0])

run("cosine_embedding", nn.CosineEmbeddingLoss(margin=0.2),
    [det((4, 5), 13), det((4, 5), 14), signs((4,), 15, torch.int64)])
run("cosine_embedding_unbatched", nn.CosineEmbeddingLoss(margin=-0.5, reduction="none"),
    [det((5,), 16), det((5,), 17), torch.tensor(-1)])

run("triplet", nn.TripletMarginLoss(), [det((4, 5), 18), det((4, 5), 19), det((4, 5), 20)])
run("triplet_swap_p1", nn.TripletMarginLoss(margin=2.0, p=1.0, swap=True, reduction="none"),
    [det((4, 5), 21), det((4, 5), 22), det((4, 5), 23)])

counts = torch.tensor([[0.0, 1.0, 2.0, 3.0, 5.0], [0.5, 1.5, 4.0, 0.0, 7.0]])
run("poisson_nll", nn.PoissonNLLLoss(), [det((2, 5), 24), counts])
run("poisson_nll_full_rates", nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-3, reduction="sum"),
    [det((2, 5), 25, 0.9, 1.0), counts], grad_inputs=[0])

mu, y = det((4, 3), 26), det((4, 3), 27)
run("gaussian_nll", nn.GaussianNLLLoss(), [mu, y, det((4, 3), 28, 0.4, 0.6)])
run("gaussian_nll_homo", nn.GaussianNLLLoss(full=True, reduction="sum"), [mu, y, det((4,), 29, 0.4, 0.6)])
run("gaussian_nll_homo_last1", nn.GaussianNLLLoss(reduction="none"), [mu, y, det((4, 1), 30, 0.4, 0.6)])
# Entries below eps: clamped in value, the gradient passes through.
run("gaussian_nll_clamp", nn.GaussianNLLLoss(eps=0.1, reduction="none"), [mu, y, det((4, 3), 31).abs() * 0.3])

bits = (det((4, 5), 32) > 0).to(torch.float64)
run("multilabel_soft_margin", nn.MultiLabelSoftMarginLoss(), [p, bits], grad_inputs=[0])
run("multilabel_soft_margin_weight", nn.MultiLabelSoftMarginLoss(weight=det((5,), 33, 0.5, 1.0), reduction="none"),
    [p, bits], grad_inputs=[0])

cls = torch.tensor([1, 4, 2, 0])
run("multi_margin", nn.MultiMarginLoss(), [p, cls])
run("multi_margin_p2_weight", nn.MultiMarginLoss(p=2, margin=0.7, weight=det((5,), 34, 0.5, 1.0), reduction="none"),
    [p, cls])

run("multilabel_margin", nn.MultiLabelMarginLoss(), [p, torch.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 0, 4], [-1, 2, 0, 0, 0], [4, 4, 1, -1, 0]])])
run("multilabel_margin_unbatched", nn.MultiLabelMarginLoss(reduction="none"), [det((5,), 35), torch.tensor([2, 1, -1, 3, 0])])

with open(OUT, "w") as f:
    f.write(f"# generated by gen_losses.py with torch {torch.__version__}\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} tensors to {OUT}")
