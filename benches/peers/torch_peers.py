#!/usr/bin/env python3
"""PyTorch's column of the peer benchmarks (benches/peers: `--bench ops`, `conv`, `mlp`).

The same groups, shapes and f32 data as the Rust benches, timed the way criterion times them
there (a warm-up, then samples of a fixed iteration count; the median per-iteration time),
written where criterion writes its own estimates, as bench `torch` of each group
(`target/criterion/<group>/torch/new/estimates.json`), so `table.py` prints PyTorch beside
kiln and candle, with the kiln / PyTorch ratio. Run it right after the Rust benches, on the
same machine and thread count:

    python3 -m pip install torch --index-url https://download.pytorch.org/whl/cpu
    cargo bench --manifest-path benches/peers/Cargo.toml --bench ops   # and conv, mlp
    python3 benches/peers/torch_peers.py [--threads N] [group filter ...]
    python3 benches/peers/table.py

Threads: PyTorch's intra-op pool is set to --threads, else KILN_NUM_THREADS, else every core
(what kiln's and candle's pools default to).
"""
import argparse
import json
import os
import pathlib
import statistics
import time

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent / "target" / "criterion"
BIG = 16 << 20


def measure(fn, samples=20, warm_up=1.0, measurement=3.0):
    """criterion's scheme, simplified: warm up for `warm_up` s to estimate one call, then
    `samples` samples of equal iteration counts filling `measurement` s; the median of the
    per-iteration times, in ns."""
    t0 = time.perf_counter()
    calls = 0
    while time.perf_counter() - t0 < warm_up:
        fn()
        calls += 1
    per_call = (time.perf_counter() - t0) / calls
    iters = max(1, int(measurement / samples / per_call))
    times = []
    for _ in range(samples):
        s = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - s) / iters)
    return statistics.median(times) * 1e9


def write(group, bench, ns):
    d = ROOT / group / bench / "new"
    d.mkdir(parents=True, exist_ok=True)
    (d / "estimates.json").write_text(json.dumps({"median": {"point_estimate": ns}}))
    # The group's throughput, as the Rust benches declared it (table.py reads it per group).
    tp = None
    for b in sorted((ROOT / group).glob("*/**/new/benchmark.json")):
        tp = json.loads(b.read_text()).get("throughput")
        if tp:
            break
    (d / "benchmark.json").write_text(json.dumps({"throughput": tp}))
    print(f"{group}/{bench}: {ns / 1e6:.4g} ms")


def rand(*shape):
    return torch.rand(*shape, dtype=torch.float32)


def ops(sel):
    a, b = rand(BIG), rand(BIG)
    if sel("add_f32_16M"):
        write("add_f32_16M", "torch", measure(lambda: torch.add(a, b)))
    if sel("exp_f32_16M"):
        write("exp_f32_16M", "torch", measure(lambda: torch.exp(a)))
    if sel("sum_f32_16M"):
        write("sum_f32_16M", "torch", measure(lambda: torch.sum(a)))
    if sel("transpose_copy_f32_4096"):
        m = rand(4096, 4096)
        write("transpose_copy_f32_4096", "torch", measure(lambda: m.t().contiguous()))
    if sel("softmax_f32_4096x1024"):
        s = rand(4096, 1024)
        write("softmax_f32_4096x1024", "torch", measure(lambda: torch.softmax(s, -1)))
    for n in (1024, 256):
        if sel(f"matmul_f32_{n}"):
            x, y = rand(n, n), rand(n, n)
            write(f"matmul_f32_{n}", "torch", measure(lambda: torch.mm(x, y)))
    if sel("add_f32_1_element"):
        x, y = rand(1), rand(1)
        write("add_f32_1_element", "torch/no_grad", measure(lambda: torch.add(x, y)))
        g = rand(1).requires_grad_(True)
        write("add_f32_1_element", "torch/requires_grad", measure(lambda: torch.add(g, y)))


def conv(sel):
    torch.manual_seed(0)
    x = torch.randn(32, 3, 64, 64)
    w = torch.randn(16, 3, 3, 3) * 0.2
    if sel("conv2d_fwd"):
        with torch.no_grad():
            write("conv2d_fwd", "torch", measure(lambda: F.conv2d(x, w, None, 1, 1)))
    if sel("conv2d_fwd_bwd"):
        xg = x.clone().requires_grad_(True)
        wg = w.clone().requires_grad_(True)

        def step():
            xg.grad = None
            wg.grad = None
            F.conv2d(xg, wg, None, 1, 1).sum().backward()

        write("conv2d_fwd_bwd", "torch", measure(step, samples=10))


def mlp(sel):
    if not sel("mlp_train_step"):
        return
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(784, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 10),
    )
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    x = torch.randn(256, 784)
    y = torch.randint(0, 10, (256,))

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(net(x), y)
        loss.backward()
        opt.step()

    write("mlp_train_step", "torch", measure(step))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int)
    p.add_argument("groups", nargs="*", help="only groups whose name contains one of these")
    args = p.parse_args()
    threads = args.threads or int(os.environ.get("KILN_NUM_THREADS", 0)) or os.cpu_count()
    torch.set_num_threads(threads)
    print(f"PyTorch {torch.__version__}, {threads} threads")

    def sel(group):
        return not args.groups or any(g in group for g in args.groups)

    ops(sel)
    conv(sel)
    mlp(sel)


if __name__ == "__main__":
    main()
