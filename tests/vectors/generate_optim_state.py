"""Generates tests/vectors/optim_state.json: optimizer state_dicts saved by PyTorch.

For each optimizer, PyTorch runs SAVED_STEPS steps over two float64 parameters with
fixed gradients and saves ``optimizer.state_dict()`` (tensors as ``{"dtype", "shape",
"data"}``, everything else as JSON) with the parameter values at that point; then it
runs RESUMED_STEPS more steps with the recorded gradients, whose parameter values are
the expected results of a rustgrad optimizer that loads the state and resumes.
Checkpoint loading comes in a later issue, hence JSON rather than a ``.pt`` file.
Read by tests/python/test_optim.py (the generic vector readers skip optim*.json).

Run with PyTorch installed (never a test dependency):
    /work/main/.torch-venv/bin/python tests/vectors/generate_optim_state.py
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

SAVED_STEPS = 4
RESUMED_STEPS = 3
SHAPES = [(2, 3), (4,)]

CONFIGS: list[tuple[str, dict]] = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01}),
    ("Adamax", {"lr": 0.02}),
    ("NAdam", {"lr": 0.02, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.02, "betas": (0.9, 0.5)}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.5}),
    ("Adadelta", {"lr": 0.5}),
]


def encode(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return {
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "data": value.detach().reshape(-1).tolist(),
        }
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def case(index: int, name: str, kwargs: dict) -> dict:
    rng = np.random.default_rng(2000 + index)
    params = [torch.tensor(rng.standard_normal(s), requires_grad=True) for s in SHAPES]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)

    def run(steps: int) -> tuple[list, list]:
        grads, after = [], []
        for _ in range(steps):
            step_grads = [rng.standard_normal(p.shape) for p in params]
            for p, g in zip(params, step_grads):
                p.grad = torch.tensor(g)
            opt.step()
            grads.append([g.ravel().tolist() for g in step_grads])
            after.append([p.detach().reshape(-1).tolist() for p in params])
        return grads, after

    run(SAVED_STEPS)
    state_dict = copy.deepcopy(opt.state_dict())
    saved = encode(state_dict)
    saved_params = [p.detach().reshape(-1).tolist() for p in params]
    # The expected values come from a fresh PyTorch optimizer that loads the state, as
    # the rustgrad one will (loading casts state such as NAdam's float32 mu_product to
    # the parameters' dtype, so this can differ from continuing without a reload).
    params = [p.detach().clone().requires_grad_(True) for p in params]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)
    opt.load_state_dict(state_dict)
    grads, expected = run(RESUMED_STEPS)
    return {
        "optimizer": name,
        "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()},
        "shapes": [list(s) for s in SHAPES],
        "params": saved_params,
        "state_dict": saved,
        "grads": grads,
        "expected": expected,
    }


def main() -> None:
    out = {
        "torch_version": torch.__version__,
        "cases": [case(i, n, kw) for i, (n, kw) in enumerate(CONFIGS)],
    }
    path = Path(__file__).with_name("optim_state.json")
    path.write_text(json.dumps(out, indent=None, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({len(out['cases'])} cases)")


if __name__ == "__main__":
    main()
