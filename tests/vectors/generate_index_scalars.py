"""Generate tests/vectors/index_scalars.json: PyTorch 2.15's indexing with 0-d index
tensors of every dtype, bools beside advanced indices, and list indices that PyTorch
reads as tuples (Note [Index scalars]).

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_index_scalars.py

Each case is a Python statement list over ``torch`` (the module under test), ``x =
torch.arange(6.).reshape(3, 2)`` and ``i``, a 0-d tensor of ``dtype`` holding
``value``: ``get`` cases evaluate ``x[index]``, ``set`` cases run ``x[index] = 7`` on a
clone. Recorded: the result's ``shape`` and row-major ``values`` (the clone's values
for ``set``) or the ``error`` (``type``, ``message``), and the messages of the
``warnings`` the indexing emits.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parent / "index_scalars.json"
DTYPES = [
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "bool",
]
FORMS = [
    "i",
    "(i, 0)",
    "(0, i)",
    "(i,)",
    "[i]",
    "(i, None)",
    "(..., i)",
    "(i, [0, 1])",
    "(i, torch.tensor([1, 0]))",
    "[i, 1]",
    "[..., i]",
]
SET_FORMS = ["i", "(i, 0)", "(0, i)", "[i]", "(i, [1])"]
OTHER = [
    ("get", "(True, [0, 1])"),
    ("get", "(False, [0, 1])"),
    ("get", "(True, 1)"),
    ("get", "[0, None]"),
    ("get", "[slice(None), 0]"),
    ("get", "[[0, 1], [1, 0]]"),
    ("get", "[0, 1]"),
    ("get", "(1, (0,))"),
    ("get", "[1, (0,)]"),
    ("set", "[0, None]"),
    ("set", "(True, [0, 1])"),
]


def run(torch_module: Any, kind: str, index: str, dtype: str | None, value: int) -> dict:
    """Runs one case with ``torch_module`` (PyTorch here; rustgrad in the test)."""
    x = torch_module.arange(6.0).reshape(3, 2)
    scope = {"torch": torch_module, "x": x}
    if dtype is not None:
        scope["i"] = torch_module.tensor(value, dtype=getattr(torch_module, dtype))
    out: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if kind == "get":
                r = eval(f"x[{index}]", scope)  # noqa: S307 -- the case's own expression
            else:
                r = x.clone()
                scope["r"] = r
                exec(f"r[{index}] = 7", scope)  # noqa: S102
            out["shape"] = list(r.shape)
            out["values"] = r.reshape(-1).tolist()
        except Exception as error:  # noqa: BLE001 -- PyTorch's error is the expectation
            out["error"] = {"type": type(error).__name__, "message": str(error)}
    out["warnings"] = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return out


def cases() -> list[dict[str, Any]]:
    """Every case."""
    result = []
    for dtype in DTYPES:
        for value in (1, 0):
            for kind, forms in (("get", FORMS), ("set", SET_FORMS)):
                for index in forms:
                    case = {"kind": kind, "index": index, "dtype": dtype, "value": value}
                    result.append({**case, **run(torch, kind, index, dtype, value)})
    for kind, index in OTHER:
        case = {"kind": kind, "index": index, "dtype": None, "value": 0}
        result.append({**case, **run(torch, kind, index, None, 0)})
    return result


def main() -> None:
    """Writes the file."""
    all_cases = cases()
    OUT.write_text(json.dumps({"cases": all_cases}, indent=None) + "\n")
    print(f"wrote {len(all_cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
