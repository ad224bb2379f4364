"""Write tests/vectors/nn_models.json: the seed notes' LeNet (``TheModelClass``) and a
ResNet basic block, run by PyTorch in float32 with fixed inputs and parameters: the
forward result, the loss, every parameter's (and the input's) gradient, and the batch
norm running statistics after the training-mode forward.

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_nn_models.py

Deterministic: inputs and parameters come from numpy generators seeded with the CRC32
of the case name, and PyTorch runs on one thread. Read by
``tests/python/test_nn_models.py``, which builds the same networks from
``rustgrad.nn.functional`` alone. Schema: ``{"cases": [case, ...]}``, a case holding
``name``, ``tensors`` (name -> {"data", "shape", "dtype"}: the input, the target and
the parameters) and ``expected`` (name -> tensor: outputs, loss, ``grad.<name>`` and
``running_mean.<i>`` / ``running_var.<i>``).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "nn_models.json"


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    t = t.detach()
    data = t.reshape(-1).numpy()
    if t.dtype == torch.float32:
        # The shortest decimal that reads back as the same float32.
        values = [float(str(v)) for v in data]
    else:
        values = data.tolist()
    return {
        "data": values,
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
    }


def normal(rng: np.random.Generator, shape: list[int], scale: float) -> torch.Tensor:
    # Four decimals keep the file small; the values are exact in the JSON either way.
    return torch.tensor(np.round(rng.normal(0.0, scale, shape), 4), dtype=torch.float32)


def lenet_case() -> dict[str, Any]:
    name = "lenet_the_model_class"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    shapes = {
        "conv1.weight": ([6, 3, 5, 5], 0.2),
        "conv1.bias": ([6], 0.1),
        "conv2.weight": ([16, 6, 5, 5], 0.1),
        "conv2.bias": ([16], 0.1),
        "fc1.weight": ([120, 400], 0.05),
        "fc1.bias": ([120], 0.05),
        "fc2.weight": ([84, 120], 0.1),
        "fc2.bias": ([84], 0.05),
        "fc3.weight": ([10, 84], 0.1),
        "fc3.bias": ([10], 0.05),
    }
    params = {k: normal(rng, s, sc).requires_grad_() for k, (s, sc) in shapes.items()}
    x = normal(rng, [4, 3, 32, 32], 1.0).requires_grad_()
    target = torch.tensor(rng.integers(0, 10, 4), dtype=torch.int64)
    p = params
    h = F.max_pool2d(F.relu(F.conv2d(x, p["conv1.weight"], p["conv1.bias"])), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["conv2.weight"], p["conv2.bias"])), 2)
    h = h.view(-1, 16 * 5 * 5)
    h = F.relu(F.linear(h, p["fc1.weight"], p["fc1.bias"]))
    h = F.relu(F.linear(h, p["fc2.weight"], p["fc2.bias"]))
    logits = F.linear(h, p["fc3.weight"], p["fc3.bias"])
    loss = F.cross_entropy(logits, target)
    loss.backward()
    tensors = {"input": tensor_json(x), "target": tensor_json(target)}
    tensors.update({k: tensor_json(v) for k, v in params.items()})
    expected = {"logits": tensor_json(logits), "loss": tensor_json(loss)}
    expected["grad.input"] = tensor_json(x.grad)
    expected.update({f"grad.{k}": tensor_json(v.grad) for k, v in params.items()})
    return {"name": name, "tensors": tensors, "expected": expected}


def basic_block_case() -> dict[str, Any]:
    name = "resnet_basic_block_training"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    c = 8
    params = {
        "conv1.weight": normal(rng, [c, c, 3, 3], 0.2).requires_grad_(),
        "bn1.weight": (1.0 + normal(rng, [c], 0.1)).requires_grad_(),
        "bn1.bias": normal(rng, [c], 0.1).requires_grad_(),
        "conv2.weight": normal(rng, [c, c, 3, 3], 0.2).requires_grad_(),
        "bn2.weight": (1.0 + normal(rng, [c], 0.1)).requires_grad_(),
        "bn2.bias": normal(rng, [c], 0.1).requires_grad_(),
    }
    running = {
        "running_mean.1": normal(rng, [c], 0.1),
        "running_var.1": 1.0 + normal(rng, [c], 0.1).abs(),
        "running_mean.2": normal(rng, [c], 0.1),
        "running_var.2": 1.0 + normal(rng, [c], 0.1).abs(),
    }
    x = normal(rng, [4, c, 10, 10], 1.0).requires_grad_()
    grad_output = normal(rng, [4, c, 10, 10], 1.0)
    tensors = {"input": tensor_json(x), "grad_output": tensor_json(grad_output)}
    tensors.update({k: tensor_json(v) for k, v in params.items()})
    tensors.update({k: tensor_json(v) for k, v in running.items()})
    p = params
    out = F.conv2d(x, p["conv1.weight"], padding=1)
    out = F.batch_norm(
        out,
        running["running_mean.1"],
        running["running_var.1"],
        p["bn1.weight"],
        p["bn1.bias"],
        training=True,
        momentum=0.1,
        eps=1e-5,
    )
    out = F.relu(out)
    out = F.conv2d(out, p["conv2.weight"], padding=1)
    out = F.batch_norm(
        out,
        running["running_mean.2"],
        running["running_var.2"],
        p["bn2.weight"],
        p["bn2.bias"],
        training=True,
        momentum=0.1,
        eps=1e-5,
    )
    out = F.relu(out + x)
    out.backward(grad_output)
    expected = {"output": tensor_json(out)}
    expected["grad.input"] = tensor_json(x.grad)
    expected.update({f"grad.{k}": tensor_json(v.grad) for k, v in params.items()})
    expected.update({k: tensor_json(v) for k, v in running.items()})
    return {"name": name, "tensors": tensors, "expected": expected}


def main() -> None:
    torch.set_num_threads(1)
    cases = [lenet_case(), basic_block_case()]
    lines = ",\n".join(json.dumps(c) for c in cases)
    OUT.write_text('{"cases": [\n' + lines + "\n]}\n")


if __name__ == "__main__":
    main()
