"""Generates tests/vectors/optim_half.json: PyTorch optimizers on float16/bfloat16 params.

For every optimizer configuration of generate_optim.py and both half dtypes, PyTorch's
single-tensor path (``foreach=False``, what it runs on CPU) takes STEPS steps over
three parameters of the half dtype whose gradients are fixed random arrays of that
dtype, and records the parameters after every step, the ``state_dict()`` after
SAVED_STEPS steps and after the last step (to compare the state, buffers in the
parameter's dtype), and the trajectory and final state of a fresh optimizer that loads
the saved state and resumes. Shapes: 128 and 64 elements (whole vectors of
ATen's vectorised loop, with AVX2 and with AVX512) and 15 (its scalar loop). Read by
tests/python/test_optim_half.py (the generic vector readers skip optim*.json).

Run with PyTorch installed (never a test dependency):
    /work/main/.torch-venv/bin/python tests/vectors/generate_optim_half.py
"""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

STEPS = 6
SAVED_STEPS = 3
SHAPES = [(8, 16), (64,), (3, 5)]
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def configs() -> list[tuple[str, dict]]:
    """The optimizer configurations of generate_optim.py."""
    path = Path(__file__).with_name("generate_optim.py")
    spec = importlib.util.spec_from_file_location("generate_optim", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CONFIGS


def floats(t: torch.Tensor) -> list:
    """The values as JSON numbers; NaN and infinities (float16 Adam with eps = 1e-8,
    which is 0 in float16, divides 0 by 0) as the strings "nan", "inf", "-inf"."""
    return [x if np.isfinite(x) else str(x) for x in t.detach().double().ravel().tolist()]


def encode(value: Any) -> Any:
    """A state_dict value as JSON: tensors as ``{"dtype", "shape", "data"}``."""
    if isinstance(value, torch.Tensor):
        return {
            "dtype": str(value.dtype).removeprefix("torch."),
            "shape": list(value.shape),
            "data": floats(value),
        }
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def case(index: int, name: str, kwargs: dict, dtype_name: str) -> dict:
    dtype = DTYPES[dtype_name]
    rng = np.random.default_rng(5000 + index)
    init = [torch.tensor(rng.standard_normal(s)).to(dtype) for s in SHAPES]
    grads = [[torch.tensor(rng.standard_normal(s)).to(dtype) for s in SHAPES] for _ in range(STEPS)]
    params = [x.clone().requires_grad_() for x in init]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)
    expected, saved = [], None
    for step, step_grads in enumerate(grads):
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        opt.step()
        expected.append([floats(p) for p in params])
        if step + 1 == SAVED_STEPS:
            saved = copy.deepcopy(opt.state_dict())
            saved_params = [p.detach().clone() for p in params]
    final_state = encode(opt.state_dict())
    # A fresh optimizer loads the saved state and resumes: load_state_dict casts the
    # state to the parameters' dtype (NAdam's float32 mu_product becomes a half tensor),
    # so the resumed trajectory is PyTorch's own, not the uninterrupted one.
    params = [x.clone().requires_grad_() for x in saved_params]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)
    opt.load_state_dict(copy.deepcopy(saved))
    resumed = []
    for step_grads in grads[SAVED_STEPS:]:
        for p, g in zip(params, step_grads):
            p.grad = g.clone()
        opt.step()
        resumed.append([floats(p) for p in params])
    return {
        "optimizer": name,
        "dtype": dtype_name,
        "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()},
        "shapes": [list(s) for s in SHAPES],
        "init": [floats(x) for x in init],
        "grads": [[floats(g) for g in step] for step in grads],
        "expected": expected,
        "final_state": final_state,
        "saved_steps": SAVED_STEPS,
        "saved_state": encode(saved),
        "resumed": resumed,
        "resumed_state": encode(opt.state_dict()),
    }


def main() -> None:
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float32)
    cases = [
        case(i, name, kwargs, dtype_name)
        for dtype_name in DTYPES
        for i, (name, kwargs) in enumerate(configs())
    ]
    out = {"torch_version": torch.__version__, "cases": cases}
    path = Path(__file__).with_name("optim_half.json")
    path.write_text(json.dumps(out, separators=(",", ":"), allow_nan=False) + "\n")
    print(f"wrote {path} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
