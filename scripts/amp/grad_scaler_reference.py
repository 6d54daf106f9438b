"""Reference run of PyTorch's torch.amp.GradScaler("cpu") for kiln-optim's tests/grad_scaler.rs.

Run from the repository root: /work/torchenv/bin/python scripts/amp/grad_scaler_reference.py
Writes optim/tests/data/grad_scaler_reference.txt, one record per line, `name v0 v1 ...`:
  config           init_scale growth_factor backoff_factor growth_interval lr momentum steps
  x, y, w0, b0     the inputs [4, 3], targets [4, 2], initial weight [2, 3] and bias [2]
  inject.<k>       at step k, after backward: param (0 = weight, 1 = bias), flat index, value
                   written into that parameter's (scaled) gradient
  step.<k>         scale before the step, 1 if the optimizer stepped else 0, scale after
                   update(), growth tracker after update()
  unscale.<k>      at step k the script calls scaler.unscale_(opt) itself, then records the
                   weight's unscaled gradient (flat)
  w.<k>, b.<k>     the parameters after step k
  state            state_dict() at the end: scale growth_factor backoff_factor
                   growth_interval _growth_tracker
The model: loss = mean((x @ w.T + b - y) ** 2), float32, SGD(lr, momentum). Step 3 gets an
inf and step 7 a NaN, so both are skipped; growth_interval 3 makes the scale grow after
steps 2 and 6 and back off at 3 and 7.
"""
import os
import torch

INIT_SCALE, GROWTH, BACKOFF, INTERVAL = 2.0**10, 2.0, 0.5, 3
LR, MOMENTUM, STEPS = 0.1, 0.9, 10
INJECT = {3: (0, 1, float("inf")), 7: (1, 1, float("nan"))}
EXPLICIT_UNSCALE = {1, 5}

out = []


def rec(name, values):
    out.append(name + " " + " ".join(repr(float(v)) for v in values))


x = torch.tensor(
    [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75], [-2.0, 1.0, 0.5], [0.125, -0.5, 1.25]]
)
y = torch.tensor([[1.0, -1.0], [0.5, 2.0], [-1.5, 0.25], [2.0, 0.0]])
w = torch.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]], requires_grad=True)
b = torch.tensor([0.05, -0.05], requires_grad=True)
rec("config", [INIT_SCALE, GROWTH, BACKOFF, INTERVAL, LR, MOMENTUM, STEPS])
rec("x", x.flatten().tolist())
rec("y", y.flatten().tolist())
rec("w0", w.detach().flatten().tolist())
rec("b0", b.detach().flatten().tolist())
for k, (p, i, v) in INJECT.items():
    rec(f"inject.{k}", [p, i, v])

opt = torch.optim.SGD([w, b], lr=LR, momentum=MOMENTUM)
scaler = torch.amp.GradScaler(
    "cpu",
    init_scale=INIT_SCALE,
    growth_factor=GROWTH,
    backoff_factor=BACKOFF,
    growth_interval=INTERVAL,
)
for k in range(STEPS):
    opt.zero_grad()
    loss = ((x @ w.T + b - y) ** 2).mean()
    scale_before = scaler.get_scale()
    scaler.scale(loss).backward()
    if k in INJECT:
        p, i, v = INJECT[k]
        with torch.no_grad():
            [w, b][p].grad.view(-1)[i] = v
    if k in EXPLICIT_UNSCALE:
        scaler.unscale_(opt)
        rec(f"unscale.{k}", w.grad.flatten().tolist())
    before = [w.detach().clone(), b.detach().clone()]
    scaler.step(opt)
    stepped = not (torch.equal(before[0], w) and torch.equal(before[1], b))
    scaler.update()
    rec(f"step.{k}", [scale_before, int(stepped), scaler.get_scale(), scaler._get_growth_tracker()])
    rec(f"w.{k}", w.detach().flatten().tolist())
    rec(f"b.{k}", b.detach().flatten().tolist())
sd = scaler.state_dict()
rec("state", [sd[k] for k in ["scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"]])

path = os.path.join("optim", "tests", "data", "grad_scaler_reference.txt")
with open(path, "w") as f:
    f.write(f"# written by scripts/amp/grad_scaler_reference.py with torch {torch.__version__}\n")
    f.write("\n".join(out) + "\n")
print(f"wrote {path}")
