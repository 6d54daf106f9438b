"""Reference numbers for nn/tests/layer_edge_cases.rs, from real PyTorch.

Run: /path/to/python nn/tests/data/gen_layer_edge_cases.py
(writes layer_edge_cases_ref.txt next to this file)

Cases:
- Embedding with max_norm and scale_grad_by_freq (and padding_idx): the weight before
  (`weight0`), the ids (`ids`), the output (`out`), the weight after the in-place
  renormalisation (`weight1`), the cotangent (`cot`) and the weight's gradient (`grad`).
- BatchNorm1d trained K times on one fixed batch with momentum 0.1 (what N threads x M
  passes must reach when no update is lost): `running_mean`, `running_var`,
  `num_batches_tracked` (the batch is a formula, written out in the Rust test too).

One line per tensor, as layers_ref.txt:
    <case> <key> <f64|i64> <shape as AxBxC or 'scalar'> <values...>
"""
import math, os
import torch
import torch.nn as nn

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_edge_cases_ref.txt")
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


def embedding_case(name, num, dim, ids, padding_idx, max_norm, norm_type, freq, seed):
    w0 = det([num, dim], seed, scale=1.5)
    m = nn.Embedding(num, dim, padding_idx=padding_idx, max_norm=max_norm,
                     norm_type=norm_type, scale_grad_by_freq=freq, dtype=torch.float64)
    with torch.no_grad():
        m.weight.copy_(w0)
    ids = torch.tensor(ids, dtype=torch.int64)
    out = m(ids)
    cot = det(list(out.shape), seed + 1)
    (out * cot).sum().backward()
    emit(name, "weight0", w0)
    emit(name, "ids", ids)
    emit(name, "out", out)
    emit(name, "weight1", m.weight)
    emit(name, "cot", cot)
    emit(name, "grad", m.weight.grad)


# Repeated ids, a padding row read twice, rows above and below max_norm, rows never read.
embedding_case("emb_l2_freq_pad", 7, 3, [[1, 3, 1, 0], [5, 0, 3, 1]], 0, 1.0, 2.0, True, 3)
# L1 norm, negative padding_idx, int ids all distinct but one.
embedding_case("emb_l1_freq_negpad", 6, 4, [2, 4, 2, 5, 0], -1, 0.8, 1.0, True, 5)
# max_norm alone (no gradient scaling) with a higher norm_type.
embedding_case("emb_p3_nofreq", 5, 2, [[4, 4], [1, 2]], None, 0.9, 3.0, False, 7)
# scale_grad_by_freq alone.
embedding_case("emb_freq_only", 5, 2, [3, 3, 3, 1, 0, 1], None, None, 2.0, True, 9)

# BatchNorm1d: K training passes over one batch, x[i, c] = (7i + 3c) % 11 + c / 2 for
# i < 2048 (exact in float64; the Rust test builds the same batch).
K = 4 * 16
bn = nn.BatchNorm1d(3, momentum=0.1, dtype=torch.float64)
x = torch.tensor([[(7 * i + 3 * c) % 11 + c / 2 for c in range(3)] for i in range(2048)],
                 dtype=torch.float64)
for _ in range(K):
    bn(x)
emit("bn_shared", "running_mean", bn.running_mean)
emit("bn_shared", "running_var", bn.running_var)
emit("bn_shared", "num_batches_tracked", bn.num_batches_tracked)

with open(OUT, "w") as f:
    f.write(f"# written by gen_layer_edge_cases.py with torch {torch.__version__}\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} lines to {OUT}")
