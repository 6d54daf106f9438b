"""PyTorch's side of `cargo bench --bench amp`, on the same machine: the tiny transformer's
and the 2-layer d256 encoder's training steps in float32 and under CPU bf16 autocast. Prints the median time of each, in
milliseconds. (Half-precision mm alone: benches/mm_half_torch.py.)

Run: python3 benches/amp_torch.py [--threads N]   (CPU wheel; default threads = cores, as
kiln's default; with N, set KILN_NUM_THREADS=N on kiln's side)
"""

import argparse
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

LENGTH, VOCAB, D = 6, 3, 48
BLOCK = 2 * LENGTH - 1


class TinyGpt(nn.Module):
    """The model of examples/common/tiny_gpt.rs."""

    def __init__(self):
        super().__init__()
        self.tok_emb = nn.Embedding(VOCAB, D)
        self.pos_emb = nn.Parameter(torch.zeros(1, BLOCK, D).normal_(0, 0.02))
        layer = lambda: nn.TransformerEncoderLayer(
            D, 4, 4 * D, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.blocks = nn.ModuleList([layer(), layer()])
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, idx):
        t = idx.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(t)
        x = self.tok_emb(idx) + self.pos_emb[:, :t]
        for b in self.blocks:
            x = b(x, src_mask=mask, is_causal=True)
        return self.head(self.ln_f(x))


def median_ms(f, warmup=5, runs=50, min_s=2.0):
    for _ in range(warmup):
        f()
    times, start = [], time.perf_counter()
    while len(times) < runs or time.perf_counter() - start < min_s:
        s = time.perf_counter()
        f()
        times.append(time.perf_counter() - s)
    return 1e3 * statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch.set_num_threads")
    torch.set_num_threads(p.parse_args().threads)
    torch.manual_seed(0)
    seq = torch.randint(0, VOCAB, (64, LENGTH))
    srt = seq.sort(1).values
    x = torch.cat([seq, srt[:, :-1]], 1)
    y = torch.cat([torch.full((64, LENGTH - 1), -100), srt], 1).reshape(-1)
    print(f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads")
    for mixed in (False, True):
        torch.manual_seed(0)
        model = TinyGpt()
        opt = torch.optim.AdamW(model.parameters())

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed):
                loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

        name = "bf16_autocast" if mixed else "f32"
        print(f"tiny_transformer_train_step/{name}: {median_ms(step):.3f} ms")
    # The encoder of benches/amp.rs's second group (issue 27's row).
    x = torch.randn(32, 128, 256)
    for mixed in (False, True):
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
        model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        opt = torch.optim.Adam(model.parameters())

        def step():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=mixed):
                loss = model(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()

        name = "bf16_autocast" if mixed else "f32"
        print(f"encoder_train_step/{name}: {median_ms(step, runs=10, min_s=3.0):.3f} ms")
    # benches/amp.rs's third group: conv2d forward with a bias, f32 and bf16.
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(16, 64, 56, 56).to(dtype)
            w = torch.randn(64, 64, 3, 3).to(dtype)
            b = torch.randn(64).to(dtype)
            ms = median_ms(lambda: F.conv2d(x, w, b, padding=1), runs=10, min_s=2.0)
            print(f"conv2d_bias_forward/{str(dtype).split('.')[1]}: {ms:.3f} ms")
    # Its fourth: the same convolution forward and backward (gradients of the output's sum).
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(16, 64, 56, 56).to(dtype).requires_grad_()
        w = torch.randn(64, 64, 3, 3).to(dtype).requires_grad_()
        b = torch.randn(64).to(dtype).requires_grad_()

        def fwd_bwd():
            y = F.conv2d(x, w, b, padding=1)
            torch.autograd.grad(y.sum(), (x, w, b))

        ms = median_ms(fwd_bwd, runs=10, min_s=2.0)
        print(f"conv2d_bias_forward_backward/{str(dtype).split('.')[1]}: {ms:.3f} ms")


if __name__ == "__main__":
    main()
