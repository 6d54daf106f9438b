"""Reference behaviour of PyTorch's learning-rate schedulers and optimizers on degenerate
arguments (zero / negative periods, T_max=0, total_iters=0, gamma edge cases, huge OneCycleLR
lengths, ...), for kiln-optim's tests/degenerate_args.rs.

Run: /work/torchenv/bin/python optim/tests/data/gen_degenerate_args.py
Writes optim/tests/data/degenerate_args_ref.txt, one record per line:
  lr.<case> v0 v1 ...        the group's lr after construction, then after each step()
  mom.<case> v0 v1 ...       the momentum likewise (OneCycleLR)
  err.<case> <k> <Type>: <message>
                             construction (k = 0) or step k raised this; the lr./mom. record
                             of the same case holds the values before it
Every case starts from SGD([w], lr=0.1, momentum=0.9) over one float64 parameter.
"""
import math
import os
import torch
from torch.optim import SGD
from torch.optim import lr_scheduler as L

torch.set_default_dtype(torch.float64)
out = []
STEPS = 8


def num(v):
    return repr(float(v))


def optimizer():
    w = torch.zeros(2, requires_grad=True)
    return SGD([w], lr=0.1, momentum=0.9)


def run(case, make, steps=STEPS, metrics=None):
    opt = optimizer()
    lrs, moms = [], []

    def snap():
        lrs.append(opt.param_groups[0]["lr"])
        moms.append(opt.param_groups[0]["momentum"])

    err = None
    try:
        sched = make(opt)
        snap()
        for k in range(1, steps + 1):
            if metrics is None:
                sched.step()
            else:
                sched.step(metrics[k - 1])
            snap()
    except (ValueError, ZeroDivisionError, RuntimeError, OverflowError) as e:
        err = f"{len(lrs)} {type(e).__name__}: {e}"
    if lrs:
        out.append(f"lr.{case} " + " ".join(num(v) for v in lrs))
        if case.startswith("onecycle"):
            out.append(f"mom.{case} " + " ".join(num(v) for v in moms))
    if err is not None:
        out.append(f"err.{case} {err}")


# StepLR
run("step.size0", lambda o: L.StepLR(o, step_size=0, gamma=0.5))
run("step.size_neg2", lambda o: L.StepLR(o, step_size=-2, gamma=0.5))
run("step.gamma0", lambda o: L.StepLR(o, step_size=2, gamma=0.0))
run("step.gamma_neg", lambda o: L.StepLR(o, step_size=1, gamma=-0.5))
run("step.gamma_big", lambda o: L.StepLR(o, step_size=3, gamma=1.5))
# MultiStepLR
run("multistep.neg_zero_dup", lambda o: L.MultiStepLR(o, milestones=[-1, 0, 2, 2, 5], gamma=0.5))
run("multistep.unsorted", lambda o: L.MultiStepLR(o, milestones=[4, 1], gamma=0.5))
run("multistep.empty", lambda o: L.MultiStepLR(o, milestones=[], gamma=0.5))
run("multistep.gamma0", lambda o: L.MultiStepLR(o, milestones=[3], gamma=0.0))
# ExponentialLR
run("exp.gamma0", lambda o: L.ExponentialLR(o, gamma=0.0))
run("exp.gamma_neg", lambda o: L.ExponentialLR(o, gamma=-0.5))
run("exp.gamma1", lambda o: L.ExponentialLR(o, gamma=1.0))
# CosineAnnealingLR
run("cos.tmax0", lambda o: L.CosineAnnealingLR(o, T_max=0))
run("cos.tmax_neg3", lambda o: L.CosineAnnealingLR(o, T_max=-3, eta_min=0.01))
run("cos.tmax1", lambda o: L.CosineAnnealingLR(o, T_max=1, eta_min=0.01))
run("cos.eta_above_base", lambda o: L.CosineAnnealingLR(o, T_max=3, eta_min=0.5))
# LinearLR
run("linear.iters0", lambda o: L.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=0))
run("linear.iters_neg2", lambda o: L.LinearLR(o, start_factor=0.5, end_factor=0.25, total_iters=-2))
run("linear.iters1", lambda o: L.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=1))
run("linear.end0", lambda o: L.LinearLR(o, start_factor=1.0, end_factor=0.0, total_iters=4))
run("linear.start0", lambda o: L.LinearLR(o, start_factor=0.0))
run("linear.start_big", lambda o: L.LinearLR(o, start_factor=1.5))
run("linear.end_neg", lambda o: L.LinearLR(o, end_factor=-0.1))
run("linear.end_big", lambda o: L.LinearLR(o, end_factor=1.5))
# SequentialLR
run("seq.milestone0", lambda o: L.SequentialLR(
    o, [L.ExponentialLR(o, gamma=0.5), L.LinearLR(o, start_factor=0.5, total_iters=2)], milestones=[0]))
run("seq.milestone_neg", lambda o: L.SequentialLR(
    o, [L.ExponentialLR(o, gamma=0.5), L.StepLR(o, step_size=2, gamma=0.1)], milestones=[-2]))
run("seq.empty", lambda o: L.SequentialLR(o, [], milestones=[]))
run("seq.count", lambda o: L.SequentialLR(o, [L.ExponentialLR(o, gamma=0.5)], milestones=[1]))
# OneCycleLR
run("onecycle.huge_epochs", lambda o: L.OneCycleLR(o, max_lr=1.0, epochs=2**62, steps_per_epoch=4), steps=4)
run("onecycle.total1", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=1), steps=2)
run("onecycle.pct0", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=0.0), steps=6)
run("onecycle.pct1", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1.0), steps=6)
run("onecycle.pct_half_total2", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=2, pct_start=0.5))
run("onecycle.three_phase_pct0", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=4, pct_start=0.0, three_phase=True), steps=5)
run("onecycle.three_phase_quarter", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=4, pct_start=0.25, three_phase=True))
run("onecycle.div0", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=5, div_factor=0.0))
run("onecycle.final_div0", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=5, final_div_factor=0.0))
run("onecycle.total0", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=0))
run("onecycle.epochs0", lambda o: L.OneCycleLR(o, max_lr=1.0, epochs=0, steps_per_epoch=3))
run("onecycle.spe_neg", lambda o: L.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=-1))
run("onecycle.pct_big", lambda o: L.OneCycleLR(o, max_lr=1.0, total_steps=5, pct_start=1.5))
run("onecycle.no_length", lambda o: L.OneCycleLR(o, max_lr=1.0))
# ReduceLROnPlateau (metric stays flat at 1.0)
flat = [1.0] * STEPS
run("plateau.factor1", lambda o: L.ReduceLROnPlateau(o, factor=1.0), metrics=flat)
run("plateau.factor_neg", lambda o: L.ReduceLROnPlateau(o, factor=-0.5, patience=0), metrics=flat)
run("plateau.factor_nan", lambda o: L.ReduceLROnPlateau(o, factor=float("nan"), patience=0), metrics=flat)
run("plateau.patience_neg", lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=-1), metrics=flat)
run("plateau.cooldown_neg", lambda o: L.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=-1), metrics=flat)
run("plateau.min_lrs_len", lambda o: L.ReduceLROnPlateau(o, min_lr=[0.0, 0.0]), metrics=flat)


# ReduceLROnPlateau after a param group was added: a scalar min_lr extends to it; a list
# (here two values for two groups) fails. Records the added group's lr after each step.
def plateau_added_group(case, min_lr):
    opt = optimizer()
    if isinstance(min_lr, list):
        opt.add_param_group({"params": [torch.zeros(1, requires_grad=True)]})
    sched = L.ReduceLROnPlateau(opt, factor=0.5, patience=0, min_lr=min_lr)
    opt.add_param_group({"params": [torch.zeros(1, requires_grad=True)], "lr": 0.4})
    lrs = []
    try:
        for k in range(1, 4):
            sched.step(1.0)
            lrs.append(opt.param_groups[-1]["lr"])
        out.append(f"lr.{case} " + " ".join(num(v) for v in lrs))
    except RuntimeError as e:
        out.append(f"err.{case} {len(lrs) + 1} {type(e).__name__}: {e}")


plateau_added_group("plateau.added_group_scalar", 0.0)
plateau_added_group("plateau.added_group_list", [0.0, 0.0])


# Optimizers: an empty parameter list; empty groups (accepted).
def opt_case(case, make):
    try:
        make()
        out.append(f"ok.{case}")
    except ValueError as e:
        out.append(f"err.{case} 0 {type(e).__name__}: {e}")


w = torch.zeros(2, requires_grad=True)
for name in ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]:
    cls = getattr(torch.optim, name)
    opt_case(f"{name}.empty_list", lambda: cls([]))
    opt_case(f"{name}.empty_group", lambda: cls([{"params": []}]))
    opt_case(f"{name}.add_empty_group", lambda: cls([w]).add_param_group({"params": []}))
opt_case("Adam.empty_list_bad_lr", lambda: torch.optim.Adam([], lr=-1.0))

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "degenerate_args_ref.txt")
with open(path, "w") as f:
    f.write("\n".join(out) + "\n")
print(f"wrote {len(out)} records to {path}")
