"""Joins the JSON lines of benches/gpu.rs (kiln) and benches/gpu_torch.py (PyTorch) into a
Markdown table, one row per benchmark, with kiln's speed relative to PyTorch's.

    python3 benches/gpu_table.py kiln.json torch.json

The ratio is always speed over speed, so > 1 means kiln is faster: kiln / PyTorch for
throughput rows (TFLOP/s, GB/s), PyTorch / kiln for time rows (ms). Standard library only.
"""

import json
import sys


def load(path):
    """(meta, rows by name) from one JSON-lines file; a missing file reads as empty."""
    meta, rows = {}, {}
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                obj = json.loads(line)
                if obj.get("kind") == "meta":
                    meta = obj
                else:
                    rows[obj["name"]] = obj
    except FileNotFoundError:
        print(f"(no file {path})", file=sys.stderr)
    return meta, rows


def cell(row):
    if row is None:
        return "—"
    if row.get("value") is None:
        return "error"
    return f"{row['value']:.4g}"


def ratio(kiln, torch):
    """kiln's speed over PyTorch's, or '—' when either side has no value."""
    if not kiln or not torch or kiln.get("value") is None or torch.get("value") is None:
        return "—"
    k, t = kiln["value"], torch["value"]
    if k <= 0 or t <= 0:
        return "—"
    r = k / t if kiln["kind"] == "throughput" else t / k
    return f"{r:.2f}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gpu_table.py KILN.json TORCH.json")
    kiln_meta, kiln = load(sys.argv[1])
    torch_meta, torch = load(sys.argv[2])

    device = torch_meta.get("device_name") or kiln_meta.get("device") or "unknown device"
    line = f"Device: {device}"
    if torch_meta.get("torch"):
        line += f"; PyTorch {torch_meta['torch']}"
    if kiln_meta.get("quick") or torch_meta.get("quick"):
        line += "; --quick sizes (a smoke run, not a measurement)"
    print(line + "\n")

    print("| row | shape | unit | kiln | PyTorch | kiln speed / PyTorch speed (>1: kiln faster) |")
    print("| --- | --- | --- | ---: | ---: | ---: |")
    names = list(kiln) + [n for n in torch if n not in kiln]
    for name in names:
        k, t = kiln.get(name), torch.get(name)
        any_row = k or t
        shape = (k or {}).get("shape") or (t or {}).get("shape") or ""
        print(f"| {name} | {shape} | {any_row['unit']} | {cell(k)} | {cell(t)} | {ratio(k, t)} |")

    print()
    for side, rows in (("kiln", kiln), ("PyTorch", torch)):
        warm = sum(r.get("warmup_s") or 0.0 for r in rows.values())
        print(f"{side}: {warm:.1f} s of warm-up in all rows")
    print("(kiln's warm-up on CUDA includes compiling its kernels with NVRTC on first use.)")

    errors = [(side, r) for side, rows in (("kiln", kiln), ("PyTorch", torch))
              for r in rows.values() if r.get("error")]
    if errors:
        print()
        for side, r in errors:
            print(f"- {side} {r['name']}: {r['error'].splitlines()[0]}")


if __name__ == "__main__":
    main()
