"""Reference for kiln's module hooks (nn/tests/hooks.rs): the order in which PyTorch calls
forward pre-hooks, forward hooks, full backward pre-hooks and full backward hooks on a small
Sequential, what each sees (shapes, sums of tensors, None) and the gradients that result
when hooks replace inputs, outputs, grad_outputs and grad_inputs; then again after some
hooks are removed, and with an input that does not require grad.

Run with any PyTorch (CPU is enough):
    /work/torchenv/bin/python scripts/hooks_reference.py > nn/tests/data/hooks_ref.txt

Each line: `<scenario> <event> <module> <key>=<value>...`, sums as %.8e, `None` for a
missing gradient, shapes as AxB. Weights and inputs are sin/cos of their flat index, so the
Rust test builds the same ones without reading any file but this.
"""

import math

import torch
from torch import nn

torch.set_default_dtype(torch.float32)


def filled(shape, f, offset):
    n = math.prod(shape)
    return torch.tensor([f(i + offset) for i in range(n)], dtype=torch.float32).reshape(shape)


def fmt_sum(t):
    return "None" if t is None else "%.8e" % t.double().sum().item()


def fmt_shape(t):
    return "x".join(str(d) for d in t.shape)


def build():
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    with torch.no_grad():
        model[0].weight.copy_(filled([3, 4], lambda i: 0.5 * math.sin(i + 1), 0))
        model[0].bias.copy_(filled([3], lambda i: 0.5 * math.cos(i + 1), 0))
        model[2].weight.copy_(filled([2, 3], lambda i: 0.5 * math.sin(i + 1), 20))
        model[2].bias.copy_(filled([2], lambda i: 0.5 * math.cos(i + 1), 20))
    return model


def main():
    model = build()
    lines = []
    scenario = ["A"]

    def log(event, name, **kv):
        items = " ".join(f"{k}={v}" for k, v in kv.items())
        lines.append(f"{scenario[0]} {event} {name} {items}".rstrip())

    def fwd_pre(name, scale=None):
        def hook(module, args):
            (x,) = args
            log("forward_pre", name, input_shape=fmt_shape(x), input_sum=fmt_sum(x))
            if scale is not None:
                return (x * scale,)
        return hook

    def fwd(name, add=None):
        def hook(module, args, output):
            (x,) = args
            log("forward", name, input_sum=fmt_sum(x), output_shape=fmt_shape(output), output_sum=fmt_sum(output))
            if add is not None:
                return output + add
        return hook

    def bwd_pre(name, scale=None):
        def hook(module, grad_output):
            log("backward_pre", name, n=len(grad_output), grad_output_sum=fmt_sum(grad_output[0]))
            if scale is not None:
                return (grad_output[0] * scale,)
        return hook

    def bwd(name, scale=None):
        def hook(module, grad_input, grad_output):
            log("backward", name, n=len(grad_input), grad_input_sum=fmt_sum(grad_input[0]),
                grad_output_sum=fmt_sum(grad_output[0]))
            if scale is not None:
                return (grad_input[0] * scale,)
        return hook

    handles = {}
    handles["top.forward_pre"] = model.register_forward_pre_hook(fwd_pre("top"))
    handles["top.forward"] = model.register_forward_hook(fwd("top"))
    handles["top.backward"] = model.register_full_backward_hook(bwd("top"))
    handles["0.forward_pre"] = model[0].register_forward_pre_hook(fwd_pre("0", scale=2.0))
    handles["0.forward"] = model[0].register_forward_hook(fwd("0"))
    handles["0.backward_pre"] = model[0].register_full_backward_pre_hook(bwd_pre("0"))
    handles["0.backward"] = model[0].register_full_backward_hook(bwd("0"))
    handles["1.forward"] = model[1].register_forward_hook(fwd("1", add=1.0))
    handles["1.backward"] = model[1].register_full_backward_hook(bwd("1"))
    handles["2.forward_pre"] = model[2].register_forward_pre_hook(fwd_pre("2"))
    handles["2.backward_pre"] = model[2].register_full_backward_pre_hook(bwd_pre("2", scale=2.0))
    handles["2.backward"] = model[2].register_full_backward_hook(bwd("2", scale=0.5))

    def run(requires_grad):
        model.zero_grad(set_to_none=True)
        x = filled([2, 4], lambda i: math.sin(0.7 * i), 0).requires_grad_(requires_grad)
        out = model(x)
        log("output", "top", shape=fmt_shape(out), sum=fmt_sum(out))
        (out ** 2).sum().backward()
        for name, p in model.named_parameters():
            log("grad", name, sum=fmt_sum(p.grad))
        log("grad", "x", sum=fmt_sum(x.grad))

    run(True)
    scenario[0] = "B"
    for key in ["1.forward", "2.backward_pre", "2.backward"]:
        handles[key].remove()
    run(True)
    scenario[0] = "C"
    run(False)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
