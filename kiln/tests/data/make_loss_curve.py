"""Reference loss curves for kiln/tests/loss_curve.rs, from PyTorch.

A small MLP (6-16-16-3, tanh and relu) is trained for 10 steps on fixed data with each
optimizer below, from the same initial weights; the weights, the data and every step's loss
are written to loss_curve.json. Run with torch installed:

    python kiln/tests/data/make_loss_curve.py
"""
import json
import math
import os

import torch
from torch import nn

torch.manual_seed(0)
torch.set_default_dtype(torch.float32)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.tanh(self.fc1(x)))))


# Data from a formula, so kiln can rebuild it without an RNG: 32 points, 3 classes.
n = 32
x = torch.tensor(
    [[math.sin(0.7 * i + 0.3 * j) + 0.1 * j for j in range(6)] for i in range(n)],
    dtype=torch.float32,
)
y = torch.tensor([(i * 7 + i // 3) % 3 for i in range(n)], dtype=torch.int64)

init = Net()
init_state = {k: v.clone() for k, v in init.state_dict().items()}

optimizers = {
    "sgd": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.05, amsgrad=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-3, momentum=0.5, centered=True),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.05),
}

curves = {}
for name, make in optimizers.items():
    net = Net()
    net.load_state_dict(init_state)
    opt = make(net.parameters())
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    curves[name] = losses

out = {
    "torch_version": torch.__version__,
    "x": x.flatten().tolist(),
    "x_shape": list(x.shape),
    "y": y.tolist(),
    "init": {k: {"shape": list(v.shape), "data": v.flatten().tolist()} for k, v in init_state.items()},
    "losses": curves,
}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "loss_curve.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
print(json.dumps(curves, indent=1))
