"""PyTorch's autocast policy for each of kiln's operators, read from PyTorch itself.

Run once with PyTorch installed (no GPU needed: CUDA's policy is exercised on fake CUDA
tensors), from the repository root:

    python scripts/amp/autocast_table.py > tests/data/autocast_pytorch.tsv

For every op of native_functions.yaml that PyTorch registers an autocast kernel for (CPU or
CUDA), it calls the op inside an autocast region (CPU: bfloat16, CUDA: float16) three ways and
records the output dtype: every floating input float32 (`f32`), every floating input in the
region's low dtype (`low`), and the first floating input low with the rest float32 (`mixed`).
From those it names the policy: `lower` (float32 in, low out), `fp32` (low in, float32 out),
`banned` (the op refuses to run), else `promote`. An op with a policy on one device type only
gets a row for the other too, `none:<class>`: PyTorch runs it as it is there (for a composite
such as `cross_entropy_loss`, its inner ops cast), and `<class>` is what the dtypes look like
(left out where inputs all in the low dtype are refused). On CUDA these come from fake
tensors, which check dtypes but not which dtypes a real kernel has. kiln's tests compare the `autocast:` keys
of native_functions.yaml and the dtypes kiln's ops return inside a region with this table.
"""

import re
import sys

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

LOW = {"cpu": torch.bfloat16, "cuda": torch.float16}
NAMES = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16", torch.float64: "f64"}


class Maker:
    """Floating inputs in the probe's dtypes; integer inputs are int64 whatever the probe."""

    def __init__(self, device, first, rest):
        self.device, self.first, self.rest, self.n = device, first, rest, 0

    def __call__(self, *shape, lo=0.5, hi=1.5):
        dtype = self.first if self.n == 0 else self.rest
        self.n += 1
        return (torch.rand(*shape, device=self.device) * (hi - lo) + lo).to(dtype)

    def long(self, *shape, high=3):
        return torch.randint(0, high, shape, device=self.device)


def diag_heavy(a):
    """`a` plus 3 on the diagonal, in `a`'s own dtype (a float32 identity would promote it)."""
    return a + 3 * torch.eye(a.shape[0], device=a.device, dtype=a.dtype)


# One call per op, on small inputs; `t` makes floating tensors in the probe's dtypes.
SAMPLES = {
    "pow.Tensor_Tensor": lambda t: torch.pow(t(3), t(3)),
    "pow.Tensor_Scalar": lambda t: torch.pow(t(3), 2.0),
    "exp": lambda t: torch.exp(t(3)),
    "log": lambda t: torch.log(t(3)),
    "log1p": lambda t: torch.log1p(t(3)),
    "rsqrt": lambda t: torch.rsqrt(t(3)),
    "expm1": lambda t: torch.expm1(t(3)),
    "log2": lambda t: torch.log2(t(3)),
    "log10": lambda t: torch.log10(t(3)),
    "reciprocal": lambda t: torch.reciprocal(t(3)),
    "tan": lambda t: torch.tan(t(3)),
    "asin": lambda t: torch.asin(t(3, lo=0.1, hi=0.9)),
    "acos": lambda t: torch.acos(t(3, lo=0.1, hi=0.9)),
    "sinh": lambda t: torch.sinh(t(3)),
    "cosh": lambda t: torch.cosh(t(3)),
    "softplus": lambda t: F.softplus(t(3)),
    "atan2": lambda t: torch.atan2(t(3), t(3)),
    "erfinv": lambda t: torch.erfinv(t(3, lo=0.1, hi=0.9)),
    "logsumexp": lambda t: torch.logsumexp(t(2, 3), 1),
    "dot": lambda t: torch.dot(t(3), t(3)),
    "addmm": lambda t: torch.addmm(t(2, 2), t(2, 3), t(3, 2)),
    "mse_loss": lambda t: F.mse_loss(t(4), t(4)),
    "l1_loss": lambda t: F.l1_loss(t(4), t(4)),
    "smooth_l1_loss": lambda t: F.smooth_l1_loss(t(4), t(4)),
    "huber_loss": lambda t: F.huber_loss(t(4), t(4)),
    "kl_div": lambda t: F.kl_div(t(4), t(4), reduction="sum"),
    "cosine_similarity": lambda t: F.cosine_similarity(t(2, 3), t(2, 3)),
    "margin_ranking_loss": lambda t: F.margin_ranking_loss(t(4), t(4), t(4)),
    "hinge_embedding_loss": lambda t: F.hinge_embedding_loss(t(4), t(4)),
    "soft_margin_loss": lambda t: F.soft_margin_loss(t(4), t(4)),
    "cosine_embedding_loss": lambda t: F.cosine_embedding_loss(t(2, 3), t(2, 3), t(2)),
    "triplet_margin_loss": lambda t: F.triplet_margin_loss(t(2, 3), t(2, 3), t(2, 3)),
    "poisson_nll_loss": lambda t: F.poisson_nll_loss(t(4), t(4)),
    "multi_margin_loss": lambda t: F.multi_margin_loss(t(2, 3), t.long(2)),
    "multilabel_margin_loss": lambda t: F.multilabel_margin_loss(t(2, 3), t.long(2, 3)),
    "sum": lambda t: torch.sum(t(3)),
    "sum.dim_IntList": lambda t: torch.sum(t(2, 3), 1),
    "cumsum": lambda t: torch.cumsum(t(3), 0),
    "cumprod": lambda t: torch.cumprod(t(3), 0),
    "prod": lambda t: torch.prod(t(3)),
    "prod.dim_int": lambda t: torch.prod(t(2, 3), 1),
    "softmax.int": lambda t: torch.softmax(t(2, 3), 1),
    "log_softmax.int": lambda t: torch.log_softmax(t(2, 3), 1),
    "mm": lambda t: torch.mm(t(2, 3), t(3, 2)),
    "bmm": lambda t: torch.bmm(t(2, 2, 3), t(2, 3, 2)),
    "matmul": lambda t: torch.matmul(t(2, 3), t(3, 2)),
    "cat": lambda t: torch.cat([t(2), t(2)]),
    "stack": lambda t: torch.stack([t(2), t(2)]),
    "scatter_add": lambda t: torch.scatter_add(t(3), 0, t.long(2), t(2)),
    "index_put": lambda t: torch.index_put(t(3), (t.long(2),), t(2)),
    "trace": lambda t: torch.trace(t(3, 3)),
    "addcmul": lambda t: torch.addcmul(t(3), t(3), t(3)),
    "addcdiv": lambda t: torch.addcdiv(t(3), t(3), t(3)),
    "prelu": lambda t: F.prelu(t(2, 3), t(1)),
    "linalg_vector_norm": lambda t: torch.linalg.vector_norm(t(3)),
    "norm.Scalar": lambda t: torch.ops.aten.norm.Scalar(t(3), 2),
    "norm.ScalarOpt_dim": lambda t: torch.ops.aten.norm.ScalarOpt_dim(t(2, 3), 2, [1]),
    "conv1d": lambda t: F.conv1d(t(1, 2, 5), t(3, 2, 3)),
    "conv2d": lambda t: F.conv2d(t(1, 2, 5, 5), t(3, 2, 3, 3)),
    "conv3d": lambda t: F.conv3d(t(1, 2, 4, 4, 4), t(3, 2, 3, 3, 3)),
    "conv1d.padding": lambda t: F.conv1d(t(1, 2, 5), t(3, 2, 3), padding="same"),
    "conv2d.padding": lambda t: F.conv2d(t(1, 2, 5, 5), t(3, 2, 3, 3), padding="same"),
    "conv3d.padding": lambda t: F.conv3d(t(1, 2, 4, 4, 4), t(3, 2, 3, 3, 3), padding="same"),
    "conv_transpose1d": lambda t: F.conv_transpose1d(t(1, 2, 5), t(2, 3, 3)),
    "conv_transpose2d.input": lambda t: F.conv_transpose2d(t(1, 2, 5, 5), t(2, 3, 3, 3)),
    "linear": lambda t: F.linear(t(2, 3), t(4, 3), t(4)),
    "bilinear": lambda t: F.bilinear(t(2, 3), t(2, 3), t(4, 3, 3), t(4)),
    "mv": lambda t: torch.mv(t(2, 3), t(3)),
    "addmv": lambda t: torch.addmv(t(2), t(2, 3), t(3)),
    "baddbmm": lambda t: torch.baddbmm(t(2, 2, 2), t(2, 2, 3), t(2, 3, 2)),
    "addbmm": lambda t: torch.addbmm(t(2, 2), t(2, 2, 3), t(2, 3, 2)),
    "upsample_nearest1d": lambda t: torch.ops.aten.upsample_nearest1d(t(1, 2, 3), [6]),
    "upsample_nearest2d": lambda t: torch.ops.aten.upsample_nearest2d(t(1, 2, 3, 3), [6, 6]),
    "upsample_bilinear2d": lambda t: torch.ops.aten.upsample_bilinear2d(t(1, 2, 3, 3), [6, 6], False),
    "scaled_dot_product_attention": lambda t: F.scaled_dot_product_attention(t(1, 2, 4), t(1, 2, 4), t(1, 2, 4)),
    "layer_norm": lambda t: F.layer_norm(t(2, 3), [3], t(3), t(3)),
    "group_norm": lambda t: F.group_norm(t(2, 4, 3), 2, t(4), t(4)),
    "rms_norm": lambda t: F.rms_norm(t(2, 3), [3], t(3)),
    "native_layer_norm": lambda t: torch.native_layer_norm(t(2, 3), [3], t(3), t(3), 1e-5)[0],
    "nll_loss": lambda t: F.nll_loss(t(2, 3), t.long(2)),
    "cross_entropy_loss": lambda t: F.cross_entropy(t(2, 3), t.long(2)),
    "binary_cross_entropy": lambda t: F.binary_cross_entropy(t(4, lo=0.1, hi=0.9), t(4, lo=0.0, hi=1.0)),
    "binary_cross_entropy_with_logits": lambda t: F.binary_cross_entropy_with_logits(t(4), t(4)),
    "cdist": lambda t: torch.cdist(t(2, 3), t(4, 3)),
    "linalg_inv": lambda t: torch.linalg.inv(diag_heavy(t(2, 2))),
    "linalg_solve": lambda t: torch.linalg.solve(diag_heavy(t(2, 2)), t(2)),
    "linalg_cholesky": lambda t: torch.linalg.cholesky(diag_heavy(t(2, 2) * 0.1)),
    "linalg_qr": lambda t: torch.linalg.qr(t(3, 2))[0],
    "vdot": lambda t: torch.vdot(t(3), t(3)),
    "tensordot": lambda t: torch.tensordot(t(2, 3), t(3, 2), dims=1),
    "einsum": lambda t: torch.einsum("ij,jk->ik", t(2, 3), t(3, 2)),
}


def registered(op):
    """The autocast dispatch keys PyTorch registers a kernel for on `aten::<op>`."""
    dump = torch._C._dispatch_dump(f"aten::{op}")
    return [
        dev
        for dev, key in (("cpu", "AutocastCPU"), ("cuda", "AutocastCUDA"))
        if re.search(rf"^{key}: registered", dump, re.M)
    ]


def probe(op, device, first, rest):
    make = Maker(device, first, rest)
    torch.manual_seed(0)
    # The switches `torch.autocast` flips, flipped directly: its context manager turns
    # itself off for CUDA on a machine without a GPU.
    torch.set_autocast_enabled(device, True)
    torch.set_autocast_dtype(device, LOW[device])
    torch.autocast_increment_nesting()
    try:
        return NAMES[SAMPLES[op](make).dtype]
    except RuntimeError as e:
        if "unsafe to autocast" in str(e):
            return "error"
        if "dtype" in str(e):
            # An op PyTorch does not cast that takes one dtype (`dot` given bf16 and f32).
            return "dtype_error"
        raise
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled(device, False)


def row(op, device, registered):
    low = LOW[device]
    f32 = probe(op, device, torch.float32, torch.float32)
    lowp = probe(op, device, low, low)
    mixed = probe(op, device, low, torch.float32)
    if "error" in (f32, lowp, mixed):
        policy = "banned"
    elif f32 == NAMES[low]:
        policy = "lower"
    elif lowp == "f32":
        policy = "fp32"
    else:
        policy = "promote"
    if not registered:
        if lowp == "dtype_error":
            # Inputs of one dtype refused: PyTorch's composite casts one operand and not
            # another (`linalg_solve` on CUDA), a quirk, not a policy to hold kiln to.
            return None
        policy = f"none:{policy}"
    return f"{op}\t{device}\t{policy}\t{f32}\t{lowp}\t{mixed}"


def main():
    ops = [l.split("func: ")[1].split("(")[0] for l in open("native_functions.yaml") if l.startswith("- func: ")]
    print(f"# PyTorch {torch.__version__} autocast, from scripts/amp/autocast_table.py; CPU region bf16, CUDA region f16")
    print("# op\tdevice\tpolicy\tout(f32 inputs)\tout(low inputs)\tout(first low, rest f32)")
    missing = []
    for op in ops:
        devices = registered(op)
        if devices and op not in SAMPLES:
            missing.append(op)
            continue
        # Both device types once the op has a policy on one: where PyTorch registers none,
        # the op runs as it is (a composite's inner ops casting), and the row says `none:`
        # with the dtype class that gives.
        for device in devices and ("cpu", "cuda"):
            if device == "cuda" and device not in devices and op.startswith("linalg_"):
                # Fake tensors check dtypes, not which dtypes a real kernel has: PyTorch's
                # CUDA factorisations have no f16 kernel, so a row would claim what a GPU
                # refuses.
                continue
            if device == "cuda":
                # CUDA's policy needs CUDA tensors, not a GPU: fake ones carry the device.
                with FakeTensorMode(allow_non_fake_inputs=True):
                    r = row(op, device, device in devices)
            else:
                r = row(op, device, device in devices)
            if r is not None:
                print(r)
    if missing:
        sys.exit(f"no sample for ops PyTorch autocasts: {missing}")


if __name__ == "__main__":
    main()
