"""Reference numbers for kiln-optim's tests/shared_parameters.rs (tied weights), from real
PyTorch in float64.

Run: /work/torchenv/bin/python optim/tests/data/gen_shared_parameters.py
Writes optim/tests/data/shared_parameters_ref.txt: one record per line, `name v1 v2 ...`
(floats printed with repr, so they parse back exactly).

The model: emb = Embedding(6, 4); proj = Linear(4, 4); head = Linear(4, 6, bias=False) with
head.weight = emb.weight (a language model's tied head), values set below. Input tokens
[0, 3, 5, 3, 1], targets [1, 2, 0, 4, 5];
loss = cross_entropy(head(tanh(proj(emb(tokens)))), targets) * 4.
Records:
  num_parameters            sum(p.numel() for p in model.parameters()) (shared counted once)
  clip.total_norm           clip_grad_norm_(model.parameters(), max_norm=1.0)
  clip.grad.<name>          each parameter's grad after clipping (row-major)
  adamw.<step>.<name>       each parameter after AdamW(model.parameters(), lr=0.1) step
                            <step> (1-based), one backward per step
"""
import math
import os
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
out = []


def rec(name, vals):
    out.append(name + " " + " ".join(repr(float(v)) for v in vals))


class Tied(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(6, 4)
        self.proj = torch.nn.Linear(4, 4)
        self.head = torch.nn.Linear(4, 6, bias=False)
        self.head.weight = self.emb.weight
        with torch.no_grad():
            self.emb.weight.copy_(torch.tensor([math.sin(0.9 * i + 0.3) for i in range(24)]).reshape(6, 4))
            self.proj.weight.copy_(torch.tensor([math.cos(0.7 * i) * 0.5 for i in range(16)]).reshape(4, 4))
            self.proj.bias.copy_(torch.tensor([-0.2, 0.1, 0.05, 0.3]))

    def forward(self, tokens):
        return self.head(torch.tanh(self.proj(self.emb(tokens))))


tokens = torch.tensor([0, 3, 5, 3, 1])
targets = torch.tensor([1, 2, 0, 4, 5])


def loss_of(m):
    return F.cross_entropy(m(tokens), targets) * 4


m = Tied()
names = [n for n, _ in m.named_parameters()]
assert names == ["emb.weight", "proj.weight", "proj.bias"], names
assert list(m.state_dict().keys()) == ["emb.weight", "proj.weight", "proj.bias", "head.weight"]
rec("num_parameters", [sum(p.numel() for p in m.parameters())])

loss_of(m).backward()
total = torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=1.0)
rec("clip.total_norm", [total])
for n, p in m.named_parameters():
    rec(f"clip.grad.{n}", p.grad.flatten())

m = Tied()
opt = torch.optim.AdamW(m.parameters(), lr=0.1)
for step in range(1, 4):
    opt.zero_grad()
    loss_of(m).backward()
    opt.step()
    for n, p in m.named_parameters():
        rec(f"adamw.{step}.{n}", p.detach().flatten())

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shared_parameters_ref.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print(f"wrote {len(out)} records to {path}")
