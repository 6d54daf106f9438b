"""Reference numbers for nn/tests/layers.rs and nn/tests/losses.rs, from real PyTorch.

Run: /path/to/python nn/tests/data/gen_layers.py  (writes layers_ref.txt next to this file)

Every case builds a PyTorch layer in float64, overwrites its parameters and buffers with
deterministic values, runs forward on deterministic inputs, backpropagates a deterministic
cotangent and records: the state_dict (`state.<key>`), inputs (`in0`, `in1`), the cotangent
(`cot`), the output (`out`), input gradients (`grad.in0`, …) and parameter gradients
(`grad.<param>`). BatchNorm cases also record running statistics after one and two training
steps and the eval-mode output. One line per tensor:
    <case> <key> <f64|i64> <shape as AxBxC or 'scalar'> <values…>
"""
import math, os
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layers_ref.txt")
lines = []


def det(shape, seed, scale=1.0, offset=0.0):
    n = math.prod(shape)
    v = torch.sin(torch.arange(n, dtype=torch.float64) * 0.731 + seed * 1.37 + 0.3) * scale + offset
    return v.reshape(shape)


def emit(case, key, t):
    t = t.detach()
    dt = "i64" if t.dtype in (torch.int64, torch.int32) else "f64"
    shape = "x".join(str(s) for s in t.shape) if t.dim() > 0 else "scalar"
    vals = " ".join(repr(int(x)) if dt == "i64" else repr(float(x)) for x in t.reshape(-1).tolist())
    lines.append(f"{case} {key} {dt} {shape} {vals}".rstrip())


def set_state(m, seed=10):
    with torch.no_grad():
        for i, (k, p) in enumerate(m.named_parameters()):
            if k == "weight" and isinstance(m, nn.Embedding):
                p.copy_(det(p.shape, seed + i))
                if m.padding_idx is not None:
                    p[m.padding_idx].zero_()
            else:
                p.copy_(det(p.shape, seed + i, 0.5))


def run(case, m, inputs, grad_inputs=None, call=None, float_inputs=None):
    """inputs: tensors; grad_inputs: indices of inputs to differentiate (default: float ones)."""
    set_state(m)
    for k, v in m.state_dict().items():
        emit(case, f"state.{k}", v)
    ins = []
    for i, x in enumerate(inputs):
        x = x.clone()
        emit(case, f"in{i}", x)
        if x.is_floating_point() and (grad_inputs is None or i in grad_inputs):
            x.requires_grad_(True)
        ins.append(x)
    out = call(m, *ins) if call else m(*ins)
    idx = None
    if isinstance(out, tuple):
        out, idx = out
    emit(case, "out", out)
    if idx is not None:
        emit(case, "idx", idx)
    cot = det(out.shape, 99)
    emit(case, "cot", cot)
    if out.requires_grad:
        (out * cot).sum().backward()
        for i, x in enumerate(ins):
            if x.requires_grad:
                emit(case, f"grad.in{i}", x.grad)
        for k, p in m.named_parameters():
            if p.grad is not None:
                emit(case, f"grad.{k}", p.grad)
    return m, ins


x3 = lambda *s: det(s, 1, 2.0)

# --- bilinear, conv ----------------------------------------------------------------------
run("bilinear", nn.Bilinear(3, 4, 2), [x3(5, 3), det((5, 4), 2)])
run("bilinear_nobias", nn.Bilinear(2, 3, 4, bias=False), [x3(2, 2), det((2, 3), 2)])
run("conv1d", nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), [x3(2, 4, 9)])
run("conv1d_same", nn.Conv1d(3, 4, 4, padding="same", dilation=2), [x3(2, 3, 10)])
run("conv2d", nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0)), [x3(2, 3, 7, 6)])
run("conv2d_groups", nn.Conv2d(4, 4, 3, groups=4, bias=False, dilation=2, padding=2), [x3(1, 4, 6, 6)])
run("conv2d_valid", nn.Conv2d(2, 3, 3, padding="valid"), [x3(2, 2, 5, 5)])
run("conv2d_reflect", nn.Conv2d(2, 3, 3, padding=1, padding_mode="reflect"), [x3(1, 2, 5, 4)])
run("conv2d_circular", nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="circular"), [x3(1, 2, 4, 5)])
run("conv2d_replicate_same", nn.Conv2d(2, 2, 4, padding="same", padding_mode="replicate"), [x3(1, 2, 5, 6)])
run("conv2d_same_even", nn.Conv2d(2, 3, (4, 3), padding="same", dilation=(1, 2)), [x3(2, 2, 5, 6)])
run("conv_transpose1d_unbatched", nn.ConvTranspose1d(2, 3, 4, stride=3, bias=False), [x3(2, 5)])
run("conv2d_unbatched", nn.Conv2d(3, 2, 2), [x3(3, 4, 5)])
run("conv3d", nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=(1, 0, 1)), [x3(1, 2, 3, 5, 3)])
run("conv_transpose1d", nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2), [x3(2, 4, 5)])
run("conv_transpose2d", nn.ConvTranspose2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)), [x3(2, 3, 4, 5)])
run("conv_transpose2d_output_size", nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1), [x3(1, 2, 3, 4)],
    call=lambda m, x: m(x, output_size=[6, 8]))

# --- pooling -----------------------------------------------------------------------------
run("max_pool1d", nn.MaxPool1d(3, stride=2, padding=1), [x3(2, 3, 10)])
run("max_pool1d_indices", nn.MaxPool1d(2, return_indices=True), [x3(2, 3, 9)])
run("max_pool2d", nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2), ceil_mode=True), [x3(2, 3, 7, 8)])
run("max_pool2d_indices", nn.MaxPool2d(2, return_indices=True), [x3(1, 2, 5, 4)])
run("avg_pool1d", nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False), [x3(2, 3, 10)])
run("avg_pool2d", nn.AvgPool2d(3, stride=2, padding=1), [x3(2, 3, 7, 6)])
run("avg_pool2d_divisor", nn.AvgPool2d(2, divisor_override=3), [x3(1, 2, 4, 6)])
run("adaptive_avg_pool1d", nn.AdaptiveAvgPool1d(4), [x3(2, 3, 10)])
run("adaptive_avg_pool2d", nn.AdaptiveAvgPool2d((3, None)), [x3(2, 3, 7, 5)])
run("adaptive_max_pool1d", nn.AdaptiveMaxPool1d(4, return_indices=True), [x3(2, 3, 10)])
run("adaptive_max_pool2d", nn.AdaptiveMaxPool2d((3, 2)), [x3(2, 3, 7, 5)])

# --- normalization -----------------------------------------------------------------------
def batchnorm(case, m, a, b):
    m, _ = run(case, m, [a])
    for k, v in m.state_dict().items():
        if "running" in k or "num_batches" in k:
            emit(case, f"step1.{k}", v)
    emit(case, "in1", b)
    out2 = m(b)
    emit(case, "out2", out2)
    for k, v in m.state_dict().items():
        if "running" in k or "num_batches" in k:
            emit(case, f"step2.{k}", v)
    m.eval()
    emit(case, "out_eval", m(a))


def fresh_stats(m, seed):
    with torch.no_grad():
        if m.running_mean is not None:
            m.running_mean.copy_(det(m.running_mean.shape, seed, 0.3))
            m.running_var.copy_(det(m.running_var.shape, seed + 1, 0.3, 1.0))
            m.num_batches_tracked.fill_(3)
    return m




def bn(case, m, a, b):
    # set non-trivial running stats before the state is emitted
    orig = set_state

    def st(mm, seed=10):
        orig(mm, seed)
        fresh_stats(mm, 20)

    globals()["set_state"] = st
    try:
        batchnorm(case, m, a, b)
    finally:
        globals()["set_state"] = orig


bn("batch_norm1d", nn.BatchNorm1d(3), x3(4, 3), det((4, 3), 5, 1.5, 0.5))
bn("batch_norm1d_3d", nn.BatchNorm1d(3, momentum=0.3, eps=1e-3), x3(2, 3, 4), det((2, 3, 4), 5))
bn("batch_norm2d", nn.BatchNorm2d(3), x3(2, 3, 3, 4), det((2, 3, 3, 4), 6, 1.2, -0.3))
bn("batch_norm2d_cma", nn.BatchNorm2d(2, momentum=None), x3(2, 2, 3, 3), det((3, 2, 2, 2), 7))
bn("batch_norm2d_noaffine", nn.BatchNorm2d(2, affine=False), x3(2, 2, 2, 3), det((2, 2, 2, 3), 8))
bn("batch_norm2d_notrack", nn.BatchNorm2d(2, track_running_stats=False), x3(2, 2, 2, 3), det((2, 2, 2, 3), 8))
run("group_norm", nn.GroupNorm(2, 4), [x3(2, 4, 3, 3)])
run("group_norm_noaffine", nn.GroupNorm(3, 3, eps=1e-3, affine=False), [x3(2, 3, 5)])
run("rms_norm", nn.RMSNorm([3, 4]), [x3(2, 3, 4)])
run("rms_norm_eps", nn.RMSNorm(4, eps=1e-3, elementwise_affine=False), [x3(3, 4)])

# --- embedding ---------------------------------------------------------------------------
idx = torch.tensor([[0, 2, 5, 2], [2, 1, 3, 1]])
run("embedding", nn.Embedding(6, 3), [idx])
run("embedding_padding", nn.Embedding(6, 3, padding_idx=2), [idx])
run("embedding_padding_neg", nn.Embedding(6, 3, padding_idx=-1), [idx])
run("embedding_freq", nn.Embedding(6, 3, scale_grad_by_freq=True), [idx])
m, _ = run("embedding_max_norm", nn.Embedding(6, 3, max_norm=1.0), [idx])
emit("embedding_max_norm", "after.weight", m.weight)
m, _ = run("embedding_max_norm_l1_pad", nn.Embedding(6, 3, padding_idx=1, max_norm=0.8, norm_type=1.0), [idx])
emit("embedding_max_norm_l1_pad", "after.weight", m.weight)

# --- activations -------------------------------------------------------------------------
a = lambda: [det((3, 5), 3, 4.0)]
for name, m in [
    ("relu", nn.ReLU()), ("leaky_relu", nn.LeakyReLU(0.2)), ("leaky_relu_default", nn.LeakyReLU()),
    ("gelu", nn.GELU()), ("gelu_tanh", nn.GELU(approximate="tanh")), ("silu", nn.SiLU()),
    ("sigmoid", nn.Sigmoid()), ("tanh", nn.Tanh()), ("softmax", nn.Softmax(dim=1)),
    ("log_softmax", nn.LogSoftmax(dim=0)), ("softmin", nn.Softmin(dim=-1)), ("elu", nn.ELU(0.7)),
    ("selu", nn.SELU()), ("celu", nn.CELU(1.3)), ("softplus", nn.Softplus(beta=2.0, threshold=3.0)),
    ("hardtanh", nn.Hardtanh(-2.0, 1.5)), ("hardswish", nn.Hardswish()), ("hardsigmoid", nn.Hardsigmoid()),
    ("mish", nn.Mish()), ("relu6", nn.ReLU6()), ("softsign", nn.Softsign()), ("tanhshrink", nn.Tanhshrink()),
    ("threshold", nn.Threshold(0.4, -3.0)), ("log_sigmoid", nn.LogSigmoid()),
    ("hardshrink", nn.Hardshrink(0.6)), ("softshrink", nn.Softshrink(0.6)),
]:
    run(name, m, a())
run("glu", nn.GLU(dim=0), [det((4, 3), 3, 2.0)])
run("prelu", nn.PReLU(), [det((2, 3, 4), 3, 3.0)])
run("prelu_channels", nn.PReLU(3), [det((2, 3, 4), 3, 3.0)])
run("flatten", nn.Flatten(), [x3(2, 3, 2, 2)])
run("flatten_range", nn.Flatten(0, 1), [x3(2, 3, 2)])
run("unflatten", nn.Unflatten(1, (2, -1)), [x3(2, 6, 2)])
run("identity", nn.Identity(), [x3(2, 3)])

# --- losses ------------------------------------------------------------------------------
p = det((4, 5), 3, 2.0)
t = det((4, 5), 4, 1.5)
for red in ["mean", "sum", "none"]:
    run(f"mse_{red}", nn.MSELoss(reduction=red), [p, t])
    run(f"l1_{red}", nn.L1Loss(reduction=red), [p, t])
run("smooth_l1", nn.SmoothL1Loss(beta=0.5), [p, t])
run("smooth_l1_sum", nn.SmoothL1Loss(reduction="sum"), [p, t])
run("huber", nn.HuberLoss(delta=0.7), [p, t])
run("huber_none", nn.HuberLoss(reduction="none", delta=1.2), [p, t])
prob = torch.sigmoid(p)
tprob = torch.sigmoid(det((4, 5), 4, 3.0))
run("bce", nn.BCELoss(), [prob, tprob])
bce_w = nn.BCELoss(weight=det((5,), 6, 0.5, 1.0), reduction="sum")
run("bce_weight", bce_w, [prob, tprob])
run("bce_logits", nn.BCEWithLogitsLoss(), [p, tprob])
run("bce_logits_weights", nn.BCEWithLogitsLoss(weight=det((5,), 6, 0.5, 1.0), pos_weight=det((5,), 7, 0.5, 1.5)), [p, tprob])
logp = F.log_softmax(p, dim=1)
tgt = torch.tensor([1, 4, -100, 0])
run("nll", nn.NLLLoss(), [logp, torch.tensor([1, 4, 2, 0])])
run("nll_weight_ignore", nn.NLLLoss(weight=det((5,), 6, 0.5, 1.0), ignore_index=-100), [logp, tgt])
run("nll_sum_ignore3", nn.NLLLoss(reduction="sum", ignore_index=3), [logp, torch.tensor([3, 1, 3, 2])])
run("cross_entropy", nn.CrossEntropyLoss(), [p, torch.tensor([1, 4, 2, 0])])
run("cross_entropy_full", nn.CrossEntropyLoss(weight=det((5,), 6, 0.5, 1.0), ignore_index=4, label_smoothing=0.1), [p, torch.tensor([1, 4, 2, 0])])
run("cross_entropy_none", nn.CrossEntropyLoss(reduction="none", label_smoothing=0.2), [p, torch.tensor([1, 3, 2, 0])])
run("cross_entropy_probs", nn.CrossEntropyLoss(), [p, F.softmax(t, dim=1)], grad_inputs=[0])
run("cross_entropy_spatial", nn.CrossEntropyLoss(), [det((2, 3, 4), 3, 2.0), torch.tensor([[0, 2, 1, 2], [1, 1, 0, 2]])])
run("kl_div_batchmean", nn.KLDivLoss(reduction="batchmean"), [logp, F.softmax(t, dim=1)], grad_inputs=[0])
run("kl_div_log_target_sum", nn.KLDivLoss(reduction="sum", log_target=True), [logp, F.log_softmax(t, dim=1)], grad_inputs=[0])
run("kl_div_mean", nn.KLDivLoss(), [logp, F.softmax(t, dim=1)], grad_inputs=[0])

with open(OUT, "w") as f:
    f.write(f"# generated by gen_layers.py with torch {torch.__version__}\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} tensors to {OUT}")
