"""PyTorch's side of the GPU comparison with kiln: the rows of benches/gpu.rs, with the same
shapes, dtypes, models, optimizers and timing method. Needs only torch.

    python3 benches/gpu_torch.py --device cuda --json torch.json
    python3 benches/gpu_table.py kiln.json torch.json

Flags: --device cuda|cuda:N|cpu (default cuda), --suite gpu|cpu (the GPU table's rows, or issue
27's CPU table; default cpu on --device cpu), --threads N (CPU threads, as KILN_NUM_THREADS for
kiln), --json PATH (one JSON object per row, written as each row completes), --quick (tiny
sizes: a smoke run on the CPU), --only TEXT (the rows whose name contains TEXT).

Float32 math is plain IEEE float32, as kiln's (cuBLAS with CUBLAS_COMPUTE_32F): TF32 is
turned off for matmul (PyTorch's default) and for cuDNN convolutions (on by default in
PyTorch). cudnn.benchmark stays off (the default). Optimizers are PyTorch's defaults (the
foreach implementation on CUDA), as a PyTorch user gets them.

Timing: 3 warm-up iterations, then 5 repeats (3 for steps over 50 ms, 1 over 1 s) of N
iterations, N chosen from the last warm-up iteration so a repeat takes about 50 ms; the
device is synchronized before and after each repeat; the median time per iteration is
reported.
"""

import argparse
import json
import math
import sys
import time
import traceback

import torch
import torch.nn.functional as F
from torch import nn

WARMUP = 3


class Bench:
    def __init__(self, device, quick):
        self.device = device
        self.quick = quick

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def time(self, step):
        """Times `step` as the module docstring describes; returns a dict of timing fields."""
        start = time.perf_counter()
        last = 0.0
        for _ in range(WARMUP):
            self.sync()
            t = time.perf_counter()
            step()
            self.sync()
            last = time.perf_counter() - t
        warmup_s = time.perf_counter() - start
        target = 0.01 if self.quick else 0.05
        iters = min(max(math.ceil(target / max(last, 1e-7)), 1), 2000)
        repeats = 1 if last > 1.0 else 3 if last > 0.05 else 5
        per_iter = []
        for _ in range(repeats):
            self.sync()
            t = time.perf_counter()
            for _ in range(iters):
                step()
            self.sync()
            per_iter.append((time.perf_counter() - t) / iters)
        per_iter.sort()
        return {
            "seconds": per_iter[len(per_iter) // 2],
            "iters": iters,
            "repeats": repeats,
            "warmup_s": warmup_s,
        }


# Each row returns (shape, work, timing); work is ("flops", n), ("bytes", n) or None (ms).


def matmul(b, dtype, n=4096):
    n = min(n, 128) if b.quick else n
    x = torch.randn(n, n, device=b.device).to(dtype)
    y = torch.randn(n, n, device=b.device).to(dtype)
    timing = b.time(lambda: torch.matmul(x, y))
    return f"{n}x{n}x{n}", ("flops", 2.0 * n**3), timing


def elements(b):
    """The element count of the bandwidth rows: 64M f32 (256 MB per tensor)."""
    return 1 << 16 if b.quick else 64 << 20


def copy(b):
    n = elements(b)
    src = torch.rand(n, device=b.device)
    dst = torch.rand(n, device=b.device)
    timing = b.time(lambda: dst.copy_(src))
    return f"{n}", ("bytes", 2.0 * 4 * n), timing


def add(b):
    n = elements(b)
    x = torch.rand(n, device=b.device)
    y = torch.rand(n, device=b.device)
    timing = b.time(lambda: torch.add(x, y))
    return f"{n}", ("bytes", 3.0 * 4 * n), timing


def exp(b):
    n = elements(b)
    x = torch.rand(n, device=b.device)
    timing = b.time(lambda: torch.exp(x))
    return f"{n}", ("bytes", 2.0 * 4 * n), timing


def softmax(b):
    n = 256 if b.quick else 4096
    x = torch.randn(n, n, device=b.device)
    timing = b.time(lambda: torch.softmax(x, -1))
    return f"{n}x{n}, dim -1", ("bytes", 2.0 * 4 * n * n), timing


def conv_setup(b):
    n, c, hw = (2, 8, 14) if b.quick else (16, 64, 56)
    return conv_layer(b, n, c, hw, 1)


def conv_layer(b, n, c, hw, groups):
    """A 3x3 pad-1 convolution of c channels in groups groups over [n, c, hw, hw]."""
    conv = nn.Conv2d(c, c, 3, padding=1, groups=groups).to(b.device)
    x = torch.randn(n, c, hw, hw, device=b.device)
    g = f", groups {groups}" if groups > 1 else ""
    return conv, x, f"[{n},{c},{hw},{hw}], {c}->{c} 3x3 pad 1{g}"


def grouped_setup(b, groups):
    """Issue 27's grouped layers: depthwise (groups 0 = c) and 32 groups of 4 at 28^2."""
    n, c, hw = (2, 16, 14) if b.quick else (16, 256, 28)
    if groups == 32:
        c //= 2
    return conv_layer(b, n, c, hw, c if groups == 0 else min(groups, c))


def conv_forward(b, setup=conv_setup):
    conv, x, shape = setup(b)

    def step():
        with torch.no_grad():
            conv(x)

    return f"{shape}, no_grad", None, b.time(step)


def conv_forward_backward(b, setup=conv_setup):
    """Forward, then backward from a fixed output gradient into the input, weight and bias
    (their .grad cleared each iteration, as zero_grad does)."""
    conv, x, shape = setup(b)
    # Padding 1 keeps the spatial size, so the output gradient has the input's shape.
    grad = torch.randn_like(x)
    x.requires_grad_(True)

    def step():
        conv.zero_grad()
        x.grad = None
        conv(x).backward(grad)

    return shape, None, b.time(step)


class Mlp(nn.Module):
    """examples/digits.rs's model."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(self.fc1(x).relu())


def train_step(model, opt, x, y, classes):
    """One optimizer step of `model` on (x, y) with cross entropy, as the examples train."""
    logits = model(x).reshape(-1, classes)
    loss = F.cross_entropy(logits, y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()


def mlp_step(b):
    """digits.rs's train step: 64-128-10 MLP, batch 64, Adam (lr 1e-3), on one fixed batch."""
    model = Mlp().to(b.device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(64, 64, device=b.device)
    y = torch.randint(0, 10, (64,), device=b.device)
    timing = b.time(lambda: train_step(model, opt, x, y, 10))
    return "batch 64, 64-128-10, Adam", None, timing


# examples/tiny_transformer.rs's model and sizes.
LENGTH, VOCAB, D_MODEL, BATCH = 6, 3, 48, 64
BLOCK = 2 * LENGTH - 1


class TinyGpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos_emb = nn.Parameter(torch.zeros(1, BLOCK, D_MODEL).normal_(0.0, 0.02))
        # The causal mask, made once and moved with the model (the kiln example builds it on
        # the CPU and copies it over in every forward; a host-to-device copy per step,
        # synchronous in PyTorch, would blur what the row measures).
        mask = nn.Transformer.generate_square_subsequent_mask(BLOCK)
        self.register_buffer("mask", mask, persistent=False)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                D_MODEL,
                4,
                dim_feedforward=4 * D_MODEL,
                dropout=0.0,
                activation="gelu",
                batch_first=True,
                norm_first=True,
            )
            for _ in range(2)
        )
        self.ln_f = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, idx):
        t = idx.shape[1]
        mask = self.mask[:t, :t]
        x = self.tok_emb(idx) + self.pos_emb[:, :t]
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        return self.head(self.ln_f(x))


def transformer_step(b):
    """tiny_transformer.rs's train step: batch 64 of 11 tokens, AdamW (lr 3e-3, weight decay
    0.01), on one fixed batch (the example draws a fresh one and steps a OneCycleLR schedule
    each step; neither is timed here)."""
    model = TinyGpt().to(b.device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    seq = torch.randint(0, VOCAB, (BATCH, LENGTH))
    srt, _ = seq.sort()
    x = torch.cat([seq, srt[:, : LENGTH - 1]], 1).to(b.device)
    y = torch.cat([torch.full((BATCH, LENGTH - 1), -100), srt], 1).to(b.device)
    timing = b.time(lambda: train_step(model, opt, x, y, VOCAB))
    shape = f"batch {BATCH}x{BLOCK} tokens, d_model {D_MODEL}, 2 layers, AdamW"
    return shape, None, timing


def conv3x3(cin, cout, stride):
    return nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """torchvision's BasicBlock."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = conv3x3(cin, cout, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv3x3(cout, cout, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.downsample is None else self.downsample(x)
        return F.relu(out + identity)


class ResNet18(nn.Module):
    """ResNet-18 (torchvision's layout): 7x7/2 stem, 3x3/2 max pool, four stages of two
    basic blocks (64, 128, 256, 512 channels), global average pool, a linear head."""

    def __init__(self, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        blocks, cin = [], 64
        for i, cout in enumerate([64, 128, 256, 512]):
            blocks += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.ModuleList(blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        for block in self.blocks:
            x = block(x)
        # AdaptiveAvgPool2d(1) + flatten.
        return self.fc(x.mean((2, 3)))


def resnet_step(b, n=32, hw=224, fmt=torch.contiguous_format):
    """A ResNet-18 train step: batch 32 of 3x224x224 (56x56 after the stem, 7x7 in the last
    stage), 1000 classes, SGD (lr 0.1, momentum 0.9, weight decay 1e-4), train-mode batch
    norm; the model and the images in memory format `fmt`. --quick: batch 2 of 3x32x32."""
    n, hw = (2, 32) if b.quick else (n, hw)
    classes = 1000
    model = ResNet18(classes).to(b.device).to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(n, 3, hw, hw, device=b.device).to(memory_format=fmt)
    y = torch.randint(0, classes, (n,), device=b.device)
    timing = b.time(lambda: train_step(model, opt, x, y, classes))
    note = ", channels_last" if fmt == torch.channels_last else ""
    return f"batch {n}x3x{hw}x{hw}, 1000 classes, SGD momentum{note}", None, timing


def resnet_eval(b, fmt=torch.contiguous_format):
    """A ResNet-18 forward in eval mode under no_grad, batch 16 of 3x64x64."""
    n, hw = (2, 32) if b.quick else (16, 64)
    model = ResNet18(1000).to(b.device).to(memory_format=fmt).eval()
    x = torch.randn(n, 3, hw, hw, device=b.device).to(memory_format=fmt)

    def step():
        with torch.no_grad():
            model(x)

    note = ", channels_last" if fmt == torch.channels_last else ""
    return f"batch {n}x3x{hw}x{hw}, eval, no_grad{note}", None, b.time(step)


class SmallCnn(nn.Module):
    """Issue 27's small CNN: two 3x3 convolutions (3->32->64, padding 1) each followed by ReLU
    and a 2x2 max pool, then a linear layer to 10 classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        return self.fc(x.flatten(1))


def small_cnn_step(b):
    """SmallCnn's train step: batch 64 of 3x32x32, SGD (lr 0.01)."""
    n = 4 if b.quick else 64
    model = SmallCnn().to(b.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(n, 3, 32, 32, device=b.device)
    y = torch.randint(0, 10, (n,), device=b.device)
    timing = b.time(lambda: train_step(model, opt, x, y, 10))
    return f"batch {n}x3x32x32, conv 3-32-64, SGD", None, timing


def mlp_784_step(b):
    """An MLP 784-1024-1024-10 (ReLU) train step: batch 256, SGD (lr 0.01)."""
    n, h = (8, 64) if b.quick else (256, 1024)
    model = nn.Sequential(nn.Linear(784, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(),
                          nn.Linear(h, 10)).to(b.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.rand(n, 784, device=b.device)
    y = torch.randint(0, 10, (n,), device=b.device)
    timing = b.time(lambda: train_step(model, opt, x, y, 10))
    return f"batch {n}, 784-{h}-{h}-10, SGD", None, timing


def encoder_step(b):
    """A 2-layer transformer encoder train step: d_model 256, 4 heads, feed-forward 1024, no
    dropout, batch 32 x 128 (batch first), Adam, the loss the mean square of the output."""
    n, length = (2, 16) if b.quick else (32, 128)
    layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0,
                                       batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(b.device)
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(n, length, 256, device=b.device)

    def step():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    return f"batch {n}x{length}, d 256, 4 heads, ff 1024, 2 layers, Adam", None, b.time(step)


def giga(run):
    """A matmul row in GFLOP/s: its work scaled by 1000 (value = work / s / 1e12)."""
    def row(b):
        shape, (kind, flops), timing = run(b)
        return shape, (kind, flops * 1e3), timing
    return row


# Issue 27's CPU table: its shapes, f32, GFLOP/s for the products.
CPU_ROWS = [
    ("matmul_f32_64", "GFLOP/s", giga(lambda b: matmul(b, torch.float32, 64))),
    ("matmul_f32_256", "GFLOP/s", giga(lambda b: matmul(b, torch.float32, 256))),
    ("matmul_f32_1024", "GFLOP/s", giga(lambda b: matmul(b, torch.float32, 1024))),
    ("matmul_f32_2048", "GFLOP/s", giga(lambda b: matmul(b, torch.float32, 2048))),
    ("conv2d_fwd", "ms", conv_forward),
    ("conv2d_fwd_bwd", "ms", conv_forward_backward),
    ("depthwise_fwd", "ms", lambda b: conv_forward(b, lambda b: grouped_setup(b, 0))),
    ("depthwise_fwd_bwd", "ms", lambda b: conv_forward_backward(b, lambda b: grouped_setup(b, 0))),
    ("grouped32_fwd_bwd", "ms", lambda b: conv_forward_backward(b, lambda b: grouped_setup(b, 32))),
    ("small_cnn_step", "ms", small_cnn_step),
    ("mlp_784_step", "ms", mlp_784_step),
    ("encoder_step", "ms", encoder_step),
    ("resnet18_64_step", "ms", lambda b: resnet_step(b, 16, 64)),
    ("resnet18_64_eval", "ms", resnet_eval),
    ("resnet18_64_step_cl", "ms", lambda b: resnet_step(b, 16, 64, torch.channels_last)),
    ("resnet18_64_eval_cl", "ms", lambda b: resnet_eval(b, torch.channels_last)),
]

# (name, unit, run): names and units are shared with benches/gpu.rs.
ROWS = [
    ("matmul_f32", "TFLOP/s", lambda b: matmul(b, torch.float32)),
    ("matmul_bf16", "TFLOP/s", lambda b: matmul(b, torch.bfloat16)),
    ("copy_f32", "GB/s", copy),
    ("add_f32", "GB/s", add),
    ("exp_f32", "GB/s", exp),
    ("softmax_f32", "GB/s", softmax),
    ("conv2d_fwd", "ms", conv_forward),
    ("conv2d_fwd_bwd", "ms", conv_forward_backward),
    ("mlp_digits_step", "ms", mlp_step),
    ("transformer_sort_step", "ms", transformer_step),
    ("resnet18_step", "ms", resnet_step),
]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (default cuda)")
    p.add_argument("--suite", choices=["gpu", "cpu"],
                   help="the rows: gpu (the GPU table) or cpu (issue 27's CPU table); "
                        "default cpu on --device cpu, else gpu")
    p.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads)")
    p.add_argument("--json", help="write one JSON object per row to this file")
    p.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke run")
    p.add_argument("--only", help="run only the rows whose name contains this")
    args = p.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            sys.exit("gpu_torch.py: CUDA is not available to this PyTorch")
        # "cuda" means cuda:0, as in kiln (set_device wants an index).
        device = torch.device("cuda", device.index or 0)
        torch.cuda.set_device(device)
        device_name = torch.cuda.get_device_name(device)
    else:
        device_name = "CPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)

    out = open(args.json, "w") if args.json else None

    def write(obj):
        if out:
            # Flushed per row, so a run cut short by a timeout keeps the rows it finished.
            out.write(json.dumps(obj) + "\n")
            out.flush()

    meta = {"kind": "meta", "impl": "torch", "device": str(device)}
    meta.update(device_name=device_name, torch=torch.__version__, quick=args.quick)
    write(meta)
    print(f"PyTorch {torch.__version__} on {device} ({device_name})"
          + (" (--quick sizes)" if args.quick else ""), flush=True)

    if args.threads:
        torch.set_num_threads(args.threads)
    suite = args.suite or ("cpu" if device.type == "cpu" else "gpu")
    rows = CPU_ROWS if suite == "cpu" else ROWS
    meta_threads = torch.get_num_threads()
    print(f"{meta_threads} CPU threads, suite {suite}", flush=True)
    bench = Bench(device, args.quick)
    start = time.perf_counter()
    failed = 0
    for name, unit, run in rows:
        if args.only and args.only not in name:
            continue
        kind = "time" if unit == "ms" else "throughput"
        row = {"name": name, "unit": unit, "kind": kind, "impl": "torch", "device": str(device)}
        try:
            shape, work, t = run(bench)
        except Exception as e:  # a failed row is reported and the run goes on
            traceback.print_exc()
            failed += 1
            print(f"{name:<22} FAILED: {e}", flush=True)
            write({**row, "value": None, "error": f"{type(e).__name__}: {e}"})
        else:
            s = t["seconds"]
            if work is None:
                value = s * 1e3
            elif work[0] == "flops":
                value = work[1] / s / 1e12
            else:
                value = work[1] / s / 1e9
            print(
                f"{name:<22} {value:>10.3f} {unit:<8} {s * 1e3:>9.3f} ms/iter  "
                f"{t['repeats']}x{t['iters']} iters, warm-up {t['warmup_s']:.1f} s  [{shape}]",
                flush=True,
            )
            write({**row, "value": value, "shape": shape, "ms": s * 1e3, "iters": t["iters"],
                   "repeats": t["repeats"], "warmup_s": t["warmup_s"]})
        if device.type == "cuda":
            torch.cuda.empty_cache()
    print(f"total {time.perf_counter() - start:.1f} s, {failed} row(s) failed", flush=True)
    if out:
        out.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
