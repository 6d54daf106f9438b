"""Reference checkpoints for data/tests/safetensors.rs, written by PyTorch.

Run from this directory with the torch venv:  /work/torchenv/bin/python make_checkpoint.py
Writes:
  tiny.safetensors   state_dict of a small conv/bn/linear model (safetensors.torch.save_file)
  tiny.json          its keys/shapes/dtypes in state_dict order, a fixed input and the
                     model's eval-mode output for it
  dtypes.safetensors one small tensor per dtype kiln has, plus __metadata__
  dtypes.json        their values (as float64/int lists) and the metadata
"""
import json

import torch
import torch.nn as nn
from safetensors.torch import save_file


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.fc1 = nn.Linear(2 * 4 * 4, 4)
        self.fc2 = nn.Linear(4, 3)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def main():
    torch.manual_seed(0)
    model = Tiny().double()
    # Non-trivial batch-norm statistics and affine parameters.
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, 1, 4, 4, dtype=torch.float64))
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-0.5, 0.5)
    model.eval()
    # float32 parameters, as a kiln model would hold them.
    model = model.float()
    state = model.state_dict()
    save_file(state, "tiny.safetensors")

    x = torch.randn(2, 1, 4, 4)
    with torch.no_grad():
        y = model(x)
    with open("tiny.json", "w") as f:
        json.dump(
            {
                "keys": list(state.keys()),
                "shapes": [list(t.shape) for t in state.values()],
                "dtypes": [str(t.dtype).removeprefix("torch.") for t in state.values()],
                "input_shape": list(x.shape),
                "input": x.flatten().tolist(),
                "output_shape": list(y.shape),
                "output": y.flatten().tolist(),
            },
            f,
            indent=1,
        )

    dtypes = {
        "f64": torch.tensor([[1.5, -2.25, 1e-300], [3.0, float("inf"), -0.0]], dtype=torch.float64),
        "f32": torch.tensor([1.5, -2.25, 3.4e38, 1e-45], dtype=torch.float32),
        "f16": torch.tensor([1.5, -2.25, 65504.0, 6e-8], dtype=torch.float16),
        "bf16": torch.tensor([1.5, -2.25, 3.0e38, 1.0e-38], dtype=torch.bfloat16),
        "i64": torch.tensor([[-(2**62), 2**62 + 1], [-1, 0]], dtype=torch.int64),
        "i32": torch.tensor([-(2**31), 2**31 - 1, 7], dtype=torch.int32),
        "i16": torch.tensor([-(2**15), 2**15 - 1, -3], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, 5], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 17], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True], dtype=torch.bool),
        "scalar": torch.tensor(2.5, dtype=torch.float32),
        "empty": torch.zeros(0, 3, dtype=torch.float32),
    }
    metadata = {"format": "pt", "note": "kiln reference"}
    save_file(dtypes, "dtypes.safetensors", metadata=metadata)
    with open("dtypes.json", "w") as f:
        json.dump(
            {
                "metadata": metadata,
                "tensors": {
                    k: {
                        "dtype": str(t.dtype).removeprefix("torch."),
                        "shape": list(t.shape),
                        # float64 / int64 values, exact for every dtype here.
                        "values": [
                            repr(v) if isinstance(v, float) else v
                            for v in (t.double() if t.is_floating_point() else t.long()).flatten().tolist()
                        ],
                    }
                    for k, t in dtypes.items()
                },
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main()
