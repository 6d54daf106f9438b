"""PyTorch reads a checkpoint kiln wrote (data/tests/safetensors.rs,
every_dtype_round_trips_through_a_file).

    KILN_CHECKPOINT_OUT=/tmp/kiln.safetensors cargo test -p kiln-data --test safetensors every_dtype
    /work/torchenv/bin/python data/tests/data/check_kiln_checkpoint.py /tmp/kiln.safetensors

The test writes, for every kiln dtype d, t_<d> = arange(6).reshape(3, 2).T cast to d (bool:
odd), each from a non-contiguous view, plus a float32 scalar -1.25, an empty float16 [0, 4]
tensor and metadata {"epoch": "3"}. Output of one run: check_kiln_checkpoint.out.
"""
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file

path = sys.argv[1]
state = load_file(path)
with safe_open(path, framework="pt") as f:
    metadata = f.metadata()
assert metadata == {"epoch": "3"}, metadata

dtypes = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "int16": torch.int16,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
base = torch.arange(6).reshape(3, 2).t()
for name, dtype in dtypes.items():
    t = state[f"t_{name}"]
    want = (base % 2 == 1) if dtype == torch.bool else base.to(dtype)
    assert t.dtype == dtype and t.shape == (2, 3), (name, t.dtype, t.shape)
    assert torch.equal(t, want), (name, t, want)
    print(f"t_{name}: {t.dtype} {list(t.shape)} {t.flatten().tolist()}")
assert state["scalar"].shape == () and state["scalar"].item() == -1.25
assert state["empty"].shape == (0, 4) and state["empty"].dtype == torch.float16
print(f"scalar: {state['scalar'].item()}, empty: {list(state['empty'].shape)} {state['empty'].dtype}")
print(f"metadata: {metadata}")
print(f"OK: torch {torch.__version__} read {len(state)} tensors written by kiln")
