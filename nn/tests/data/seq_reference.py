"""Reference numbers for kiln-nn's sequence layers (nn/tests/rnn.rs, nn/tests/attention.rs),
from PyTorch.

Run with a torch install: `python nn/tests/data/seq_reference.py` (writes seq_reference.txt
next to this file). Everything is float64 with dropout 0 / eval mode, so the Rust side can
compare tightly. Values are written with 12 significant digits; inputs and parameters are
rounded to that before use, so they are exactly what the Rust side loads. Each line is
`case/kind/name<TAB>shape<TAB>values`, where kind is `param` (the layer's state_dict, in its
order), `input`, `mask` (bool, as 0/1), `output` or `grad` (the gradient of the case's loss
with respect to an input or a parameter), or `key` (a state_dict key and shape, no values).
"""

import os
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
lines = []


def emit(case, kind, name, t):
    t = t.detach()
    if t.dtype == torch.bool:
        t = t.to(torch.float64)
    shape = ",".join(str(d) for d in t.shape)
    vals = " ".join("%.12g" % v for v in t.reshape(-1).tolist())
    lines.append(f"{case}/{kind}/{name}\t{shape}\t{vals}")


def round12(t):
    return torch.tensor([float("%.12g" % v) for v in t.reshape(-1).tolist()],
                        dtype=t.dtype).reshape(t.shape)


def randomize(m):
    # Deterministic, non-default values (so e.g. zero biases and unit LayerNorm weights are
    # exercised too).
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(round12(p.uniform_(-0.6, 0.6)))


def inputs(case, **ts):
    out = {}
    for k, t in ts.items():
        if t.dtype == torch.bool:
            emit(case, "mask", k, t)
            out[k] = t
        else:
            t = round12(t).requires_grad_(True)
            emit(case, "input", k, t)
            out[k] = t
    return out


def finish(case, m, outs, ins, loss_weights=None):
    for k, v in m.state_dict().items():
        emit(case, "param", k, v)
    loss = 0
    for i, (k, o) in enumerate(outs.items()):
        emit(case, "output", k, o)
        # sum(o * w) with fixed weights w = sin(1 + index), so every output element matters.
        w = torch.sin(torch.arange(o.numel(), dtype=torch.float64) + 1.0 + i).reshape(o.shape)
        loss = loss + (o * w).sum()
    loss.backward()
    for k, t in ins.items():
        if t.dtype != torch.bool:
            emit(case, "grad", k, t.grad)
    for k, p in m.named_parameters():
        emit(case, "grad", k, p.grad)


# ---- LayerNorm
m = nn.LayerNorm((3, 4))
randomize(m)
x = inputs("layer_norm", x=torch.randn(2, 3, 4))
finish("layer_norm", m, {"y": m(x["x"])}, x)

m = nn.LayerNorm(4, eps=1e-3, elementwise_affine=True, bias=False)
randomize(m)
x = inputs("layer_norm_nobias", x=torch.randn(3, 4))
finish("layer_norm_nobias", m, {"y": m(x["x"])}, x)

# ---- RNNs
m = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
randomize(m)
x = inputs("lstm", x=torch.randn(5, 2, 3), h0=torch.randn(4, 2, 4), c0=torch.randn(4, 2, 4))
o, (h, c) = m(x["x"], (x["h0"], x["c0"]))
finish("lstm", m, {"output": o, "h_n": h, "c_n": c}, x)

m = nn.LSTM(3, 5, proj_size=2, batch_first=True, bias=False)
randomize(m)
x = inputs("lstm_proj", x=torch.randn(2, 4, 3))
o, (h, c) = m(x["x"])
finish("lstm_proj", m, {"output": o, "h_n": h, "c_n": c}, x)

m = nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True)
randomize(m)
x = inputs("gru", x=torch.randn(2, 5, 3), h0=torch.randn(4, 2, 4))
o, h = m(x["x"], x["h0"])
finish("gru", m, {"output": o, "h_n": h}, x)

m = nn.GRU(3, 4)
randomize(m)
x = inputs("gru_unbatched", x=torch.randn(5, 3))
o, h = m(x["x"])
finish("gru_unbatched", m, {"output": o, "h_n": h}, x)

m = nn.RNN(3, 4, num_layers=2, nonlinearity="relu")
randomize(m)
x = inputs("rnn_relu", x=torch.randn(4, 2, 3))
o, h = m(x["x"])
finish("rnn_relu", m, {"output": o, "h_n": h}, x)

m = nn.LSTMCell(3, 4)
randomize(m)
x = inputs("lstm_cell", x=torch.randn(2, 3), h=torch.randn(2, 4), c=torch.randn(2, 4))
h, c = m(x["x"], (x["h"], x["c"]))
finish("lstm_cell", m, {"h": h, "c": c}, x)

m = nn.GRUCell(3, 4)
randomize(m)
x = inputs("gru_cell", x=torch.randn(2, 3), h=torch.randn(2, 4))
finish("gru_cell", m, {"h": m(x["x"], x["h"])}, x)

m = nn.RNNCell(3, 4)
randomize(m)
x = inputs("rnn_cell", x=torch.randn(3))
finish("rnn_cell", m, {"h": m(x["x"])}, x)

# ---- MultiheadAttention
causal4 = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)

m = nn.MultiheadAttention(8, 2)
randomize(m)
x = inputs("mha", q=torch.randn(4, 2, 8), k=torch.randn(6, 2, 8), v=torch.randn(6, 2, 8),
           kpm=torch.tensor([[False] * 6, [False] * 4 + [True] * 2]))
o, w = m(x["q"], x["k"], x["v"], key_padding_mask=x["kpm"])
finish("mha", m, {"output": o, "weights": w}, x)

m = nn.MultiheadAttention(8, 2)
randomize(m)
x = inputs("mha_self_causal", x=torch.randn(4, 2, 8), mask=causal4)
o, w = m(x["x"], x["x"], x["x"], attn_mask=x["mask"], average_attn_weights=False)
finish("mha_self_causal", m, {"output": o, "weights": w}, x)

m = nn.MultiheadAttention(8, 2, kdim=5, vdim=6, batch_first=True, add_bias_kv=True,
                          add_zero_attn=True)
randomize(m)
# the float mask covers the 3 keys + the bias_k column + the zero-attention column
x = inputs("mha_kv", q=torch.randn(2, 4, 8), k=torch.randn(2, 3, 5), v=torch.randn(2, 3, 6),
           mask=torch.randn(2 * 2, 4, 3))
o, _ = m(x["q"], x["k"], x["v"], attn_mask=x["mask"], need_weights=False)
finish("mha_kv", m, {"output": o}, x)

m = nn.MultiheadAttention(6, 3, bias=False)
randomize(m)
x = inputs("mha_unbatched", q=torch.randn(4, 6), k=torch.randn(5, 6), v=torch.randn(5, 6),
           kpm=torch.tensor([False, False, True, False, False]))
o, w = m(x["q"], x["k"], x["v"], key_padding_mask=x["kpm"])
finish("mha_unbatched", m, {"output": o, "weights": w}, x)

# ---- Transformer layers
m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
randomize(m)
x = inputs("enc_layer", x=torch.randn(4, 2, 8), mask=causal4,
           kpm=torch.tensor([[False] * 4, [False] * 3 + [True]]))
finish("enc_layer", m, {"y": m(x["x"], src_mask=x["mask"], src_key_padding_mask=x["kpm"])}, x)

m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu",
                               batch_first=True, norm_first=True)
randomize(m)
x = inputs("enc_layer_nf", x=torch.randn(2, 4, 8))
finish("enc_layer_nf", m, {"y": m(x["x"])}, x)

m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
randomize(m)
x = inputs("dec_layer", t=torch.randn(4, 2, 8), mem=torch.randn(5, 2, 8),
           tmask=nn.Transformer.generate_square_subsequent_mask(4),
           mkpm=torch.tensor([[False] * 5, [False] * 3 + [True] * 2]))
finish("dec_layer", m, {"y": m(x["t"], x["mem"], tgt_mask=x["tmask"],
                               memory_key_padding_mask=x["mkpm"])}, x)

m = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0, norm_first=True,
                               batch_first=True, activation="gelu")
randomize(m)
x = inputs("dec_layer_nf", t=torch.randn(2, 3, 8), mem=torch.randn(2, 5, 8))
finish("dec_layer_nf", m, {"y": m(x["t"], x["mem"])}, x)

layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
m = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8), enable_nested_tensor=False)
randomize(m)
x = inputs("encoder", x=torch.randn(3, 2, 8))
finish("encoder", m, {"y": m(x["x"])}, x)

layer = nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, dropout=0.0)
m = nn.TransformerDecoder(layer, 2)
randomize(m)
x = inputs("decoder", t=torch.randn(3, 2, 8), mem=torch.randn(4, 2, 8))
finish("decoder", m, {"y": m(x["t"], x["mem"])}, x)

m = nn.Transformer(8, 2, num_encoder_layers=1, num_decoder_layers=2, dim_feedforward=16,
                   dropout=0.0)
randomize(m)
x = inputs("transformer", src=torch.randn(5, 2, 8), tgt=torch.randn(3, 2, 8),
           tmask=torch.triu(torch.ones(3, 3, dtype=torch.bool), 1),
           skpm=torch.tensor([[False] * 5, [False] * 4 + [True]]))
finish("transformer", m, {"y": m(x["src"], x["tgt"], tgt_mask=x["tmask"],
                                 src_key_padding_mask=x["skpm"],
                                 memory_key_padding_mask=x["skpm"])}, x)

# ---- state_dict key lists of default-constructed layers (no values needed: shape only)
for case, m in [
    ("keys_mha_kv", nn.MultiheadAttention(8, 2, kdim=5, vdim=6, add_bias_kv=True)),
    ("keys_lstm", nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)),
    ("keys_gru", nn.GRU(3, 4, num_layers=2, bias=False)),
    ("keys_enc", nn.TransformerEncoderLayer(8, 2, bias=False)),
    ("keys_transformer", nn.Transformer(8, 2, num_encoder_layers=2, num_decoder_layers=1,
                                        dim_feedforward=16)),
]:
    for k, v in m.state_dict().items():
        lines.append(f"{case}/key/{k}\t{','.join(str(d) for d in v.shape)}\t")

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seq_reference.txt")
with open(out, "w") as f:
    f.write(f"# generated by seq_reference.py with torch {torch.__version__}\n")
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} records to {out}")
