#!/usr/bin/env python3
"""Prints the last run of benches/peers (`cargo bench --bench ops`, `conv`, `mlp`, and
`torch_peers.py` for PyTorch) as kiln / peer ratios.

Reads criterion's estimates (target/criterion/<group>/<bench>/new/estimates.json, where
torch_peers.py writes PyTorch's too): the median of each benchmark, and for every group the
ratio of kiln's median to candle's and to PyTorch's (below 1: kiln is faster).
"""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parent / "target" / "criterion"
rows = {}
for est in sorted(root.glob("*/**/new/estimates.json")):
    rel = est.parent.parent.relative_to(root).parts
    group, bench = rel[0], "/".join(rel[1:])
    median = json.loads(est.read_text())["median"]["point_estimate"]
    rows.setdefault(group, {})[bench] = median
    bm = json.loads((est.parent / "benchmark.json").read_text())
    tp = bm.get("throughput")
    if tp:
        rows[group].setdefault("_tp", tp)

def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"

filt = sys.argv[1:] 
for group, benches in rows.items():
    if filt and not any(f in group for f in filt):
        continue
    tp = benches.pop("_tp", None)
    line = [group]
    for b, ns in benches.items():
        extra = ""
        if tp and "Bytes" in tp:
            extra = f" ({tp['Bytes'] / ns:.1f} GB/s)"
        elif tp and "Elements" in tp:
            extra = f" ({tp['Elements'] / ns:.1f} G/s)"
        line.append(f"{b} {fmt(ns)}{extra}")
    for variant in ("", "/no_grad", "/requires_grad"):
        k = benches.get("kiln" + variant)
        for peer in ("candle", "torch"):
            p = benches.get(peer + variant)
            if k and p:
                line.append(f"ratio{variant} kiln/{peer} = {k / p:.3f}")
    print(" | ".join(line))
