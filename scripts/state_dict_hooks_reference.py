"""Reference for kiln's state-dict hooks (nn/tests/state_dict_hooks.rs): the order in which
PyTorch calls state_dict pre/post hooks and load_state_dict pre/post hooks on a nested
Sequential, the prefixes they get, the keys a save post-hook sees, and what a load returns
when hooks rename keys or excuse missing ones.

Run with any PyTorch 2.x (CPU is enough):
    /work/torchenv/bin/python scripts/state_dict_hooks_reference.py > nn/tests/data/state_dict_hooks_ref.txt

Each line: `<scenario> <event> <module> <key>=<value>...`; lists are comma-separated.
A load pre-hook's keys are logged at the root only (PyTorch hands a child the part of the
dict under its prefix, kiln the whole dict), and a load post-hook's lists only in the final
result (PyTorch's earlier hooks see the lists as far as the load has got).
"""

import torch
from torch import nn


def build():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 1)))


def modules(m):
    return [("root", m), ("0", m[0]), ("1", m[1]), ("1.0", m[1][0])]


def main():
    lines = []

    # A: the order of every hook, with a non-strict load of a dict that lacks one key and
    # has one too many.
    m = build()
    for name, mod in modules(m):
        mod.register_state_dict_pre_hook(
            lambda mod, prefix, keep_vars, n=name: lines.append(f"A save_pre {n} prefix={prefix}"))
        mod.register_state_dict_post_hook(
            lambda mod, sd, prefix, meta, n=name: lines.append(
                f"A save_post {n} prefix={prefix} keys={','.join(sd)}"))

        def load_pre(mod, sd, prefix, meta, strict, mk, uk, em, n=name):
            keys = f" keys={','.join(sd)}" if n == "root" else ""
            lines.append(f"A load_pre {n} prefix={prefix}{keys}")
        mod.register_load_state_dict_pre_hook(load_pre)
        mod.register_load_state_dict_post_hook(
            lambda mod, ik, n=name: lines.append(f"A load_post {n}"))
    sd = m.state_dict()
    lines.append(f"A result keys={','.join(sd)}")
    sd = dict(sd)
    sd["extra"] = torch.zeros(1)
    del sd["1.0.bias"]
    r = m.load_state_dict(sd, strict=False)
    lines.append(f"A result missing={','.join(r.missing_keys)} unexpected={','.join(r.unexpected_keys)}")

    # B: an old checkpoint: a load pre-hook renames `1.0.w` to `1.0.weight`, and a load
    # post-hook excuses the missing `1.0.bias`, so a strict load succeeds.
    m = build()
    old = {k: v for k, v in m.state_dict().items() if k != "1.0.bias"}
    old["1.0.w"] = old.pop("1.0.weight")

    def rename(mod, sd, prefix, *rest):
        if prefix + "w" in sd:
            sd[prefix + "weight"] = sd.pop(prefix + "w")
    m[1][0].register_load_state_dict_pre_hook(rename)

    def excuse(mod, ik):
        if "1.0.bias" in ik.missing_keys:
            ik.missing_keys.remove("1.0.bias")
    m[1][0].register_load_state_dict_post_hook(excuse)
    r = m.load_state_dict(old, strict=True)
    lines.append(f"B result missing={','.join(r.missing_keys)} unexpected={','.join(r.unexpected_keys)}")

    # C: a save post-hook drops one key and adds another.
    m = build()

    def edit(mod, sd, prefix, meta):
        del sd[prefix + "bias"]
        sd[prefix + "scale"] = torch.ones(1)
    m[0].register_state_dict_post_hook(edit)
    lines.append(f"C result keys={','.join(m.state_dict())}")

    print("\n".join(lines))


if __name__ == "__main__":
    main()
