"""Write tests/vectors/models_resnet.json: torchvision's ResNet-18/34/50 state_dict
names, shapes and dtypes (parameters and buffers, in order), and the outputs of a
ResNet-18 (num_classes=10) on a 4x3x64x64 input in eval and in training mode, given
weights that the reader rebuilds from numpy (so the fixture stays small: no 45 MB of
weights).

Run from the repository root with PyTorch and torchvision installed (never a test
dependency):

    .torch-venv/bin/python tests/vectors/generate_models.py

Weights: every state_dict entry, in order, is drawn by ``weights_for`` below from a
numpy generator seeded with the CRC32 of its name; tests/python/test_models.py holds a
copy of that function (numpy only). Schema (not the generic vector format, so the
generic readers skip it):
``{"architectures": {arch: [[name, shape, dtype], ...]},
   "resnet18": {"input": tensor, "target": [int], "eval_logits": tensor,
                "train_logits": tensor, "train_loss": float,
                "running": {name: tensor}, "grads": {name: tensor}}}``
(everything float32 except ``grads``: float64 gradients of the float64 model).
with ``tensor = {"shape": [...], "data": [float32 as shortest decimal]}``.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

OUT = Path(__file__).resolve().parent / "models_resnet.json"


def weights_for(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """Deterministic, well-scaled values for one state_dict entry (float32, or int64
    for num_batches_tracked)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name.endswith("num_batches_tracked"):
        return np.array(3, dtype=np.int64)
    if name.endswith("running_var"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if name.endswith(("running_mean", "bias")):
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    if len(shape) == 1:  # batch norm weight
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = int(np.prod(shape[1:]))
    return (np.sqrt(2.0 / fan_in) * rng.standard_normal(shape)).astype(np.float32)


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    """Shortest decimals that read back as the same float32 (or float64) values."""
    data = t.detach().reshape(-1).numpy()
    return {"shape": list(t.shape), "data": [float(str(v)) for v in data]}


def main() -> None:
    torch.set_num_threads(1)
    architectures = {}
    for arch in ("resnet18", "resnet34", "resnet50"):
        model = getattr(torchvision.models, arch)()
        architectures[arch] = [
            [name, list(t.shape), str(t.dtype).removeprefix("torch.")]
            for name, t in model.state_dict().items()
        ]

    model = torchvision.models.resnet18(num_classes=10)
    state = {
        name: torch.from_numpy(weights_for(name, tuple(t.shape)))
        for name, t in model.state_dict().items()
    }
    model.load_state_dict(state, strict=True)
    rng = np.random.default_rng(zlib.crc32(b"input"))
    x = torch.from_numpy(rng.standard_normal((4, 3, 64, 64)).astype(np.float32))
    target = torch.tensor([3, 7, 0, 9])

    model.eval()
    with torch.no_grad():
        eval_logits = model(x)

    model.train()
    train_logits = model(x)
    loss = F.cross_entropy(train_logits, target)
    loss.backward()
    sd = model.state_dict()
    running = {
        name: tensor_json(sd[name])
        for name in (
            "bn1.running_mean",
            "bn1.running_var",
            "layer4.1.bn2.running_mean",
            "layer4.1.bn2.running_var",
            "layer2.0.downsample.1.running_var",
        )
    }
    running["bn1.num_batches_tracked"] = {"shape": [], "data": [int(sd["bn1.num_batches_tracked"])]}
    # The gradients below the training-mode batch norms are ill-conditioned (float32
    # PyTorch itself is 1e-2 away from float64 on conv1.weight), so they are computed,
    # and checked, in float64.
    model.zero_grad()
    model.load_state_dict(state, strict=True)
    model.double()
    F.cross_entropy(model(x.double()), target).backward()
    params = dict(model.named_parameters())
    grads = {
        name: tensor_json(params[name].grad)
        for name in (
            "conv1.weight",
            "layer1.0.bn1.weight",
            "layer4.1.bn2.bias",
            "fc.weight",
            "fc.bias",
        )
    }
    out = {
        "architectures": architectures,
        "resnet18": {
            "input": tensor_json(x),
            "target": target.tolist(),
            "eval_logits": tensor_json(eval_logits),
            "train_logits": tensor_json(train_logits),
            "train_loss": float(loss.detach()),
            "running": running,
            "grads": grads,
        },
    }
    OUT.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
