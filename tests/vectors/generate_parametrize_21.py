"""Generate tests/vectors/parametrize_21.json: PyTorch 2.15's parametrized modules
(issue 21) -- ``nn.utils.parametrizations.weight_norm`` / ``spectral_norm`` /
``orthogonal`` and the legacy ``nn.utils.weight_norm`` / ``spectral_norm`` -- as state
dicts with an input, the output and the gradients of the input and of every state-dict
parameter.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_parametrize_21.py

Each case is ``{"name", "module", "kwargs", "wrap", "wrap_kwargs", "mode", "state_dict",
"state_dict_after", "input", "output", "grads"}``: ``module`` is an ``nn`` class built
with ``kwargs``, ``wrap`` the function applied to it (``parametrizations.weight_norm``,
...), ``mode`` ``"train"`` or ``"eval"``; ``state_dict`` is loaded before the forward
(tensors as ``{"data", "shape", "dtype"}``, keys in PyTorch's order) and
``state_dict_after`` is the state dict after it (a training forward of the spectral norm
updates its ``u`` / ``v`` buffers); ``grads`` maps each parameter's state-dict key to its
gradient after ``output.backward(grad_output)``, and ``"input"`` to the input's. The
parametrized originals are perturbed away from their registration values (an orthogonal
map's ``original`` starts at ``-I``) so that every map is exercised.
"""

from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils import parametrizations as P

OUT = Path(__file__).resolve().parent / "parametrize_21.json"


def spec(t: torch.Tensor) -> dict[str, Any]:
    return {
        "data": t.detach().reshape(-1).tolist(),
        "shape": list(t.shape),
        "dtype": str(t.dtype)[6:],
    }


WRAPS = {
    "parametrizations.weight_norm": P.weight_norm,
    "parametrizations.spectral_norm": P.spectral_norm,
    "parametrizations.orthogonal": P.orthogonal,
    "weight_norm": torch.nn.utils.weight_norm,
    "spectral_norm": torch.nn.utils.spectral_norm,
}

# (name, module class, kwargs, input shape, wrap, wrap kwargs, mode)
CASES: list[tuple[str, str, dict[str, Any], tuple[int, ...], str, dict[str, Any], str]] = []
for dtype in ("float64", "float32"):
    CASES += [
        (
            f"wn_linear_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 3},
            (2, 4),
            "parametrizations.weight_norm",
            {},
            "train",
        ),
        (
            f"wn_linear_dim1_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 3},
            (2, 4),
            "parametrizations.weight_norm",
            {"dim": 1},
            "train",
        ),
        (
            f"wn_linear_dimNone_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 3},
            (2, 4),
            "parametrizations.weight_norm",
            {"dim": None},
            "train",
        ),
        (
            f"wn_conv1d_{dtype}",
            "Conv1d",
            {"in_channels": 2, "out_channels": 3, "kernel_size": 2},
            (1, 2, 5),
            "parametrizations.weight_norm",
            {},
            "train",
        ),
        (
            f"sn_linear_eval_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 4},
            (3, 5),
            "parametrizations.spectral_norm",
            {},
            "eval",
        ),
        (
            f"sn_linear_train_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 4},
            (3, 5),
            "parametrizations.spectral_norm",
            {"n_power_iterations": 2},
            "train",
        ),
        (
            f"sn_conv2d_eval_{dtype}",
            "Conv2d",
            {"in_channels": 2, "out_channels": 3, "kernel_size": 2},
            (1, 2, 3, 3),
            "parametrizations.spectral_norm",
            {},
            "eval",
        ),
        (
            f"sn_convT1d_train_{dtype}",
            "ConvTranspose1d",
            {"in_channels": 3, "out_channels": 2, "kernel_size": 2},
            (1, 3, 4),
            "parametrizations.spectral_norm",
            {},
            "train",
        ),
        (
            f"orth_square_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 4, "bias": False},
            (2, 4),
            "parametrizations.orthogonal",
            {},
            "train",
        ),
        (
            f"orth_tall_householder_{dtype}",
            "Linear",
            {"in_features": 3, "out_features": 5},
            (2, 3),
            "parametrizations.orthogonal",
            {},
            "train",
        ),
        (
            f"orth_wide_householder_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 3},
            (2, 5),
            "parametrizations.orthogonal",
            {},
            "train",
        ),
        (
            f"orth_wide_matrix_exp_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 3},
            (2, 5),
            "parametrizations.orthogonal",
            {"orthogonal_map": "matrix_exp"},
            "train",
        ),
        (
            f"orth_square_cayley_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 4},
            (2, 4),
            "parametrizations.orthogonal",
            {"orthogonal_map": "cayley"},
            "train",
        ),
        (
            f"orth_tall_cayley_{dtype}",
            "Linear",
            {"in_features": 2, "out_features": 4},
            (3, 2),
            "parametrizations.orthogonal",
            {"orthogonal_map": "cayley"},
            "train",
        ),
        (
            f"orth_householder_no_trivialization_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 4},
            (2, 4),
            "parametrizations.orthogonal",
            {"orthogonal_map": "householder", "use_trivialization": False},
            "train",
        ),
        (
            f"legacy_wn_linear_{dtype}",
            "Linear",
            {"in_features": 4, "out_features": 3},
            (2, 4),
            "weight_norm",
            {},
            "train",
        ),
        (
            f"legacy_wn_conv2d_dim1_{dtype}",
            "Conv2d",
            {"in_channels": 2, "out_channels": 3, "kernel_size": 2},
            (1, 2, 3, 3),
            "weight_norm",
            {"dim": 1},
            "train",
        ),
        (
            f"legacy_sn_linear_eval_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 4},
            (3, 5),
            "spectral_norm",
            {},
            "eval",
        ),
        (
            f"legacy_sn_linear_train_{dtype}",
            "Linear",
            {"in_features": 5, "out_features": 4},
            (3, 5),
            "spectral_norm",
            {"n_power_iterations": 3},
            "train",
        ),
    ]


def run(name, cls, kwargs, shape, wrap, wrap_kwargs, mode) -> dict[str, Any]:
    torch.manual_seed(zlib.crc32(name.encode()))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    dtype = torch.float64 if name.endswith("float64") else torch.float32
    module = getattr(nn, cls)(**kwargs).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = WRAPS[wrap](module, **wrap_kwargs)
    with torch.no_grad():
        for _key, p in module.named_parameters():
            p.add_(torch.tensor(rng.uniform(-0.3, 0.3, size=tuple(p.shape)), dtype=dtype))
    module.train(mode == "train")
    state = {k: spec(v) for k, v in module.state_dict().items()}
    x = torch.tensor(rng.uniform(-1.0, 1.0, size=shape), dtype=dtype).requires_grad_()
    out = module(x)
    grad_output = torch.tensor(rng.uniform(-1.0, 1.0, size=tuple(out.shape)), dtype=dtype)
    out.backward(grad_output)
    params = dict(module.named_parameters())
    grads = {k: spec(p.grad) for k, p in params.items()}
    grads["input"] = spec(x.grad)
    return {
        "name": name,
        "module": cls,
        "kwargs": kwargs,
        "wrap": wrap,
        "wrap_kwargs": wrap_kwargs,
        "mode": mode,
        "class_name": type(module).__name__,
        "state_dict": state,
        "state_dict_after": {k: spec(v) for k, v in module.state_dict().items()},
        "input": spec(x),
        "output": spec(out),
        "grad_output": spec(grad_output),
        "grads": grads,
    }


def main() -> None:
    results = [run(*case) for case in CASES]
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": results}) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
