"""Reference numbers for kiln-optim's tests, computed with real PyTorch (float64).

Run: /work/torchenv/bin/python optim/tests/data/make_reference.py
Writes optim/tests/data/reference.txt: one record per line, `name v1 v2 ...` (floats
printed with repr, so they parse back exactly). Records:
  opt.<case>.<step>   W (3x4, row-major) then b (3) after step <step> (1-based)
  sched.<case>.lr     the lr after construction, then after each step()
  sched.<case>.mom    the momentum / beta1 likewise (OneCycleLR)
The problem: loss = mean((x @ W.t() + b - y)^2) with the fixed x, y, W0, b0 below.
"""
import math
import torch

torch.set_default_dtype(torch.float64)
out = []


def rec(name, vals):
    out.append(name + " " + " ".join(repr(float(v)) for v in vals))


def problem():
    W = torch.tensor([[math.sin(i * 4 + j + 1) * 0.5 for j in range(4)] for i in range(3)], requires_grad=True)
    b = torch.tensor([math.cos(i) * 0.3 for i in range(3)], requires_grad=True)
    x = torch.tensor([[math.cos(0.7 * (i * 4 + j)) for j in range(4)] for i in range(5)])
    y = torch.tensor([[math.sin(0.3 * (i * 3 + j)) for j in range(3)] for i in range(5)])
    return W, b, x, y


def run(case, make, steps=5):
    W, b, x, y = problem()
    opt = make([W, b])
    for s in range(1, steps + 1):
        opt.zero_grad()
        loss = ((x @ W.t() + b - y) ** 2).mean()
        loss.backward()
        opt.step()
        rec(f"opt.{case}.{s}", list(W.detach().flatten()) + list(b.detach()))


O = torch.optim
kw = dict(foreach=False)
run("sgd", lambda p: O.SGD(p, lr=0.1, **kw))
run("sgd_momentum", lambda p: O.SGD(p, lr=0.1, momentum=0.9, **kw))
run("sgd_damp_wd", lambda p: O.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01, **kw))
run("sgd_nesterov", lambda p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, **kw))
run("sgd_maximize", lambda p: O.SGD(p, lr=0.05, momentum=0.5, maximize=True, **kw))
run("adam", lambda p: O.Adam(p, lr=0.01, **kw))
run("adam_amsgrad_wd", lambda p: O.Adam(p, lr=0.01, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True, **kw))
run("adam_maximize", lambda p: O.Adam(p, lr=0.01, maximize=True, **kw))
run("adamw", lambda p: O.AdamW(p, lr=0.01, **kw))
run("adamw_amsgrad", lambda p: O.AdamW(p, lr=0.02, weight_decay=0.1, amsgrad=True, **kw))
run("rmsprop", lambda p: O.RMSprop(p, lr=0.01, **kw))
run("rmsprop_full", lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.01, **kw))
run("adagrad", lambda p: O.Adagrad(p, lr=0.1, **kw))
run("adagrad_full", lambda p: O.Adagrad(p, lr=0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1, **kw))
run("sgd_groups", lambda p: O.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.01, "momentum": 0.5}], lr=0.1, **kw))
run("adam_groups", lambda p: O.Adam([{"params": [p[0]], "lr": 0.05}, {"params": [p[1]]}], lr=0.01, **kw))


def sched(case, make_opt, make, steps=12, metrics=None, mom=False):
    w = torch.zeros(1, requires_grad=True)
    opt = make_opt([w])
    s = make(opt)
    lrs = [opt.param_groups[0]["lr"]]
    moms = []

    def m():
        g = opt.param_groups[0]
        return g["betas"][0] if "betas" in g else g["momentum"]

    if mom:
        moms.append(m())
    for i in range(steps):
        opt.step()
        if metrics is None:
            s.step()
        else:
            s.step(metrics[i])
        lrs.append(opt.param_groups[0]["lr"])
        if mom:
            moms.append(m())
    rec(f"sched.{case}.lr", lrs)
    if mom:
        rec(f"sched.{case}.mom", moms)


S = O.lr_scheduler
sgd = lambda p: O.SGD(p, lr=0.1, momentum=0.9)
adam = lambda p: O.Adam(p, lr=0.1)
sched("step", sgd, lambda o: S.StepLR(o, step_size=3, gamma=0.5))
sched("multistep", sgd, lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 8], gamma=0.3))
sched("exponential", sgd, lambda o: S.ExponentialLR(o, gamma=0.9))
sched("cosine", sgd, lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.01), steps=12)
sched("linear", sgd, lambda o: S.LinearLR(o, start_factor=0.25, end_factor=1.0, total_iters=4))
sched("linear_default", sgd, lambda o: S.LinearLR(o))
sched("onecycle_cos", sgd, lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=20), steps=19, mom=True)
sched("onecycle_linear", sgd, lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=20, anneal_strategy="linear", pct_start=0.25), steps=19, mom=True)
sched("onecycle_three", adam, lambda o: S.OneCycleLR(o, max_lr=0.5, epochs=4, steps_per_epoch=5, three_phase=True, div_factor=10.0, final_div_factor=100.0), steps=19, mom=True)
sched("onecycle_nomom", sgd, lambda o: S.OneCycleLR(o, max_lr=1.0, total_steps=10, cycle_momentum=False), steps=9)
metrics = [1.0, 0.9, 0.95, 0.95, 0.96, 0.97, 0.85, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
sched("plateau_min", sgd, lambda o: S.ReduceLROnPlateau(o, patience=2, cooldown=1, min_lr=0.002), steps=20, metrics=metrics)
sched("plateau_max_abs", sgd, lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.5, patience=1, threshold=0.05, threshold_mode="abs"), steps=20, metrics=metrics)


def seq(o):
    a = S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=3)
    b = S.CosineAnnealingLR(o, T_max=6, eta_min=0.0)
    return S.SequentialLR(o, [a, b], milestones=[3])


sched("sequential", sgd, seq, steps=12)


def seq2(o):
    a = S.ExponentialLR(o, gamma=0.5)
    b = S.StepLR(o, step_size=2, gamma=0.1)
    c = S.ConstantLR(o, factor=1.0, total_iters=1) if False else S.ExponentialLR(o, gamma=1.0)
    return S.SequentialLR(o, [a, b, c], milestones=[2, 6])


sched("sequential3", sgd, seq2, steps=10)

with open(__file__.replace("make_reference.py", "reference.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
print(len(out), "records")
