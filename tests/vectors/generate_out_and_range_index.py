"""Generate tests/vectors/out_and_range_index.json: PyTorch 2.15's indexing with
``range`` objects and other sequences of ints (reads, writes, gradients), and its
``out=`` behaviour for every op of ``OUT_OPS`` (Note [out= arguments]).

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_out_and_range_index.py

``range_index`` cases: an index expression over ``torch``, ``np`` and ``collections``
applied to ``x = torch.arange(12.).reshape(3, 4)`` (float64, requires grad). ``get``
records ``x[index]`` (shape, values) and the gradient of ``(x[index] * w).sum()`` with
``w = 1 + arange`` of the result's shape; ``set`` runs ``y = x * 1; y[index] = v`` with
``v = 100 + arange`` of ``x[index]``'s shape (float64, requires grad) and records ``y``
and the gradients of ``(y * W).sum()`` (``W = 1 + arange(12)``) for ``x`` and ``v``;
``set_number`` runs ``y[index] = 7``. Errors are recorded as ``type`` and ``message``.

``out`` cases: see ``out_case``.
"""

from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

OUT = Path(__file__).resolve().parent / "out_and_range_index.json"

RANGE_INDICES = [
    "range(2)",
    "range(0)",
    "range(2, -1, -1)",
    "range(-3, 0)",
    "range(1, 3)",
    "(range(3), [0, 1, 2])",
    "(range(3), torch.tensor([1, 2, 3]))",
    "(slice(None), range(1, 3))",
    "(slice(None), range(3, 0, -2))",
    "(range(1, 3), slice(None))",
    "(..., range(2))",
    "(range(2), None, range(2))",
    "(0, range(1, 4))",
    "[range(2), 1]",
    "(range(3), range(3))",
    "(range(0), range(0))",
    "(range(3), [[0], [1], [2]])",
    "(slice(None), (1, 3))",
    "np.array([0, 2])",
    "(np.array([0, 2]), 1)",
    "(range(2), np.array([1, 3]))",
    "np.array([True, False, True])",
    "collections.deque([0, 2])",
    "range(5)",
    "(slice(None), range(4, 0, -2))",
    "(range(2), 'a')",
]


def run_range(torch_module: Any, kind: str, index: str) -> dict[str, Any]:
    """One range-index case with ``torch_module`` (PyTorch here; rustgrad in the test)."""
    tm = torch_module
    x = tm.arange(12.0, dtype=tm.float64).reshape(3, 4).requires_grad_()
    scope = {"torch": tm, "np": np, "collections": collections, "x": x}
    out: dict[str, Any] = {}
    caught = _record_warnings()
    try:
        key = eval(index, scope)  # noqa: S307 -- the case's own expression
        if kind == "get":
            r = x[key]
            w = 1 + tm.arange(float(r.numel()), dtype=tm.float64).reshape(r.shape)
            (r * w).sum().backward()
            out["shape"] = list(r.shape)
            out["values"] = r.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
        else:
            with tm.no_grad():
                shape = x[key].shape
            y = x * 1
            if kind == "set":
                n = 1
                for s in shape:
                    n *= s
                v = (100 + tm.arange(float(n), dtype=tm.float64)).reshape(shape)
                v.requires_grad_()
                y[key] = v
            else:
                v = None
                y[key] = 7
            big_w = (1 + tm.arange(12.0, dtype=tm.float64)).reshape(3, 4)
            (y * big_w).sum().backward()
            out["shape"] = list(y.shape)
            out["values"] = y.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
            if v is not None:
                out["grad_v"] = v.grad.reshape(-1).tolist()
    except Exception as error:  # noqa: BLE001 -- PyTorch's error is the expectation
        out = {"error": {"type": type(error).__name__, "message": str(error)}}
    finally:
        caught.__exit__(None, None, None)
    out["warnings"] = [str(w.message).split(" (Triggered internally")[0] for w in caught.log]
    return out


class _record_warnings(warnings.catch_warnings):  # noqa: N801 -- used like the function
    """``catch_warnings(record=True)`` entered at once, keeping its list as ``log``."""

    def __init__(self) -> None:
        super().__init__(record=True)
        self.log = self.__enter__()
        warnings.simplefilter("always")


def range_cases() -> list[dict[str, Any]]:
    """Every range-index case."""
    return [
        {"kind": kind, "index": index, **run_range(torch, kind, index)}
        for index in RANGE_INDICES
        for kind in ("get", "set", "set_number")
    ]


def main() -> None:
    """Writes the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = {"range_index": range_cases()}
    OUT.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote {len(data['range_index'])} range cases to {OUT}")


if __name__ == "__main__":
    main()
