"""Generates tests/vectors/nn_loss_slices.json: class-index losses on views, by PyTorch.

Issue 19, item 6: ``F.cross_entropy(logits[:2], target)`` and the other calls below
take a contiguous slice of a larger tensor (a non-zero storage offset), a transposed
view or a slice of ``log_softmax``'s output. Each case holds the base tensors (logits
and target), a recipe naming the view taken of each, the loss's keyword arguments, and
PyTorch's loss and the gradient of ``(loss * w).sum()`` with respect to the logits'
base (``w`` recorded), so a reader checks the values and that nothing outside the view
gets a gradient. float64, float32, float16 and bfloat16. Read by
tests/python/test_loss_slices.py (the generic vector readers skip nn_*.json).

Run with PyTorch installed (never a test dependency):
    /work/main/.torch-venv/bin/python tests/vectors/generate_nn_loss_slices.py
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
import torch.nn.functional as F

# name -> (logits base shape, target base shape and class count or None for
# probabilities, logits view, target view, the loss of (view, target view, kwargs)).
Recipe = tuple[tuple, Any, Callable, Callable, Callable]


def ce(x: Any, t: Any, kw: dict) -> Any:
    return F.cross_entropy(x, t, **kw)


def nll(x: Any, t: Any, kw: dict) -> Any:
    return F.nll_loss(x, t, **kw)


RECIPES: dict[str, Recipe] = {
    # The issue's own call: the first rows of a larger batch.
    "ce_first_rows": ((5, 4), ((5,), 4), lambda x: x[:2], lambda t: t[:2], ce),
    "ce_middle_rows": ((6, 5), ((6,), 5), lambda x: x[2:5], lambda t: t[1:4], ce),
    "nll_of_log_softmax_rows": (
        (4, 3),
        ((4,), 3),
        lambda x: F.log_softmax(x, 1)[1:3],
        lambda t: t[2:],
        nll,
    ),
    "nll_rows": ((5, 3), ((5,), 3), lambda x: x[3:], lambda t: t[:2], nll),
    "ce_spatial_rows": ((4, 3, 2, 3), ((4, 2, 3), 3), lambda x: x[1:3], lambda t: t[2:], ce),
    "nll_spatial_rows": (
        (3, 4, 5),
        ((3, 5), 4),
        lambda x: F.log_softmax(x, 1)[1:],
        lambda t: t[:2],
        nll,
    ),
    "ce_unbatched_slice": ((9,), ((3,), 4), lambda x: x[3:7], lambda t: t[1], ce),
    "ce_transposed": ((4, 6), ((7,), 4), lambda x: x.t()[1:4], lambda t: t[2:5], ce),
    "ce_strided_rows": ((8, 3), ((4,), 3), lambda x: x[1::2], lambda t: t, ce),
    "ce_probabilities_rows": ((5, 3), None, lambda x: x[1:4], lambda t: t[2:5], ce),
}

KWARGS: list[dict] = [
    {},
    {"reduction": "sum"},
    {"reduction": "none"},
    {"ignore_index": 1},
    {"label_smoothing": 0.2},
    {"weight": "one per class"},  # drawn per case
]


def case(name: str, recipe: Recipe, kw: dict, dtype: torch.dtype) -> dict | None:
    xshape, target, xview, tview, loss_fn = recipe
    rng = np.random.default_rng(zlib.crc32(f"{name}{sorted(kw.items())}{dtype}".encode()))
    x = torch.tensor(rng.normal(0.0, 2.0, xshape), dtype=dtype, requires_grad=True)
    if target is None:
        t = torch.tensor(rng.uniform(0.0, 1.0, (7, 3)), dtype=dtype)
    else:
        tshape, classes = target
        t = torch.tensor(rng.integers(0, classes, tshape), dtype=torch.int64)
    xv, tv = xview(x), tview(t)
    classes = xv.shape[1] if xv.dim() > 1 else xv.shape[0]
    kwargs = dict(kw)
    if "weight" in kwargs:
        kwargs["weight"] = torch.tensor(rng.uniform(0.5, 2.0, classes), dtype=dtype)
    if "ignore_index" in kwargs and target is None:
        return None
    if loss_fn is nll and "label_smoothing" in kwargs:
        return None
    loss = loss_fn(xv, tv, kwargs)
    w = torch.tensor(rng.normal(0.0, 1.0, tuple(loss.shape)), dtype=dtype)
    (grad,) = torch.autograd.grad((loss * w).sum(), x)
    name_kw = ",".join(f"{k}={v}" for k, v in kw.items()) or "default"
    return {
        "name": f"{name}-{name_kw}-{str(dtype).removeprefix('torch.')}",
        "recipe": name,
        "dtype": str(dtype).removeprefix("torch."),
        "x": {"shape": list(x.shape), "data": x.detach().double().ravel().tolist()},
        "target": {
            "shape": list(t.shape),
            "dtype": str(t.dtype).removeprefix("torch."),
            "data": t.double().ravel().tolist() if t.is_floating_point() else t.ravel().tolist(),
        },
        "kwargs": {
            k: (v.double().tolist() if isinstance(v, torch.Tensor) else v)
            for k, v in kwargs.items()
        },
        "loss": {"shape": list(loss.shape), "data": loss.detach().double().ravel().tolist()},
        "w": w.double().ravel().tolist(),
        "grad": grad.double().ravel().tolist(),
    }


def main() -> None:
    torch.set_num_threads(1)
    cases = [
        c
        for dtype in (torch.float64, torch.float32, torch.float16, torch.bfloat16)
        for name, recipe in RECIPES.items()
        for kw in KWARGS
        if (c := case(name, recipe, kw, dtype)) is not None
    ]
    path = Path(__file__).with_name("nn_loss_slices.json")
    path.write_text(json.dumps({"torch_version": torch.__version__, "cases": cases}) + "\n")
    print(f"wrote {path} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
