"""PyTorch's CPU matrix product in f32, bf16 and f16 at 1024 and 2048, for comparison with
`cargo bench --bench ops -- mm_half` (run both in the same session, same thread count).

Usage: python benches/mm_half_torch.py [--threads 2] [--repeats 5] [--f16]
       [--sizes 1024 2048] [--dtypes f32 bf16]
(`--sizes 64 256 1024 2048 --dtypes f32` is the f32 table beside `cargo bench --bench ops --
mm_f32_`; f16 is opt-in: PyTorch 2.x on a CPU without AVX512-FP16/AMX multiplies it at well under
1 GFLOP/s, minutes per 2048 product.)
Prints the best and median GFLOP/s (2 n^3 per product) of `repeats` timed runs.
"""

import argparse
import statistics
import time

import torch


def rate(a, b, n, repeats):
    for _ in range(2):
        torch.mm(a, b)
    times = []
    for _ in range(repeats):
        inner = max(1, int(0.5 / max(1e-9, _once(a, b))))
        t0 = time.perf_counter()
        for _ in range(inner):
            torch.mm(a, b)
        times.append((time.perf_counter() - t0) / inner)
    flops = 2 * n**3
    return flops / min(times) / 1e9, flops / statistics.median(times) / 1e9


def _once(a, b):
    t0 = time.perf_counter()
    torch.mm(a, b)
    return time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--f16", action="store_true")
    p.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048])
    p.add_argument("--dtypes", nargs="+", default=["f32", "bf16"])
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"cpu capability {torch.backends.cpu.get_cpu_capability()}")
    names = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
    for n in args.sizes:
        dtypes = [names[d] for d in args.dtypes] + ([torch.float16] if args.f16 else [])
        for dtype in dtypes:
            a = torch.rand(n, n).to(dtype)
            b = torch.rand(n, n).to(dtype)
            best, med = rate(a, b, n, args.repeats)
            print(f"mm_{n}/{str(dtype).removeprefix('torch.'):9s} "
                  f"best {best:7.1f} GFLOP/s  median {med:7.1f} GFLOP/s")


if __name__ == "__main__":
    main()
