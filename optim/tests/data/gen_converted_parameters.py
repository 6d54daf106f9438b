"""Reference numbers for kiln-optim's tests/converted_parameters.rs: an optimizer's state
carried across `model.double()` by rebuilding the optimizer and loading the old state
(PyTorch's load_state_dict casts state tensors to each parameter's dtype), from real PyTorch.

Run: /work/torchenv/bin/python optim/tests/data/gen_converted_parameters.py
Writes optim/tests/data/converted_parameters_ref.txt: `name v1 v2 ...` per line.

Linear(3, 2) in float32 with weight[i][j] = sin(i*3 + j + 1) / 2, bias = [0.1, -0.2];
x[i][j] = cos(0.5 * (i*3 + j)) for a [4, 3] batch; loss = mean((model(x) - 0.3) ** 2).
Adam(lr=0.1) takes 2 steps in float32; then model.double(), a new Adam(model.parameters(),
lr=0.1) loads the first one's state_dict and takes 2 more steps in float64.
Records:
  f32.<step>.weight / .bias    parameters after each float32 step (1, 2)
  f64.<step>.weight / .bias    after each float64 step (3, 4)
  f64.state_dtype_is_f64       1.0 when the loaded exp_avg is float64
"""
import math
import os
import torch

out = []


def rec(name, vals):
    out.append(name + " " + " ".join(repr(float(v)) for v in vals))


m = torch.nn.Linear(3, 2)
with torch.no_grad():
    m.weight.copy_(torch.tensor([[math.sin(i * 3 + j + 1) / 2 for j in range(3)] for i in range(2)]))
    m.bias.copy_(torch.tensor([0.1, -0.2]))
x = torch.tensor([[math.cos(0.5 * (i * 3 + j)) for j in range(3)] for i in range(4)])


def step(opt, dtype):
    opt.zero_grad()
    ((m(x.to(dtype)) - 0.3) ** 2).mean().backward()
    opt.step()


opt = torch.optim.Adam(m.parameters(), lr=0.1)
for s in (1, 2):
    step(opt, torch.float32)
    rec(f"f32.{s}.weight", m.weight.detach().flatten())
    rec(f"f32.{s}.bias", m.bias.detach())
m.double()
opt2 = torch.optim.Adam(m.parameters(), lr=0.1)
opt2.load_state_dict(opt.state_dict())
rec("f64.state_dtype_is_f64", [float(opt2.state[m.weight]["exp_avg"].dtype == torch.float64)])
for s in (3, 4):
    step(opt2, torch.float64)
    rec(f"f64.{s}.weight", m.weight.detach().flatten())
    rec(f"f64.{s}.bias", m.bias.detach())

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "converted_parameters_ref.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print(f"wrote {len(out)} records to {path}")
