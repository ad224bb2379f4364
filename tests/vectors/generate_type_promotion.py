"""type_promotion.json: torch.promote_types, torch.can_cast and torch.result_type.

Run with ``.torch-venv/bin/python tests/vectors/generate_type_promotion.py`` from the
repository root. Every ordered pair of the ten dtypes for ``promote_types`` and
``can_cast``; ``result_type`` for every pair of operands drawn from a tensor with dims
and a 0-d tensor of each dtype and the Python numbers ``True``, ``3``, ``300`` and
``2.5`` (both orders), under the default dtypes float32 and float64 (Note [Wrapped
scalars]). Read by ``tests/python/test_type_promotion.py``. Deterministic.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).with_name("type_promotion.json")
DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
]
NUMBERS: list[Any] = [True, 3, 300, 2.5]


def name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def operands() -> list[dict[str, Any]]:
    specs: list[dict[str, Any]] = []
    for d in DTYPES:
        specs.append({"tensor": d, "dim": 1})
        specs.append({"tensor": d, "dim": 0})
    specs += [{"number": n} for n in NUMBERS]
    return specs


def make(spec: dict[str, Any]) -> Any:
    if "number" in spec:
        return spec["number"]
    dtype = getattr(torch, spec["tensor"])
    return torch.ones(2, dtype=dtype) if spec["dim"] else torch.tensor(1, dtype=dtype)


def main() -> None:
    dt = {d: getattr(torch, d) for d in DTYPES}
    promote = [[a, b, name(torch.promote_types(dt[a], dt[b]))] for a in DTYPES for b in DTYPES]
    cast = [[a, b, torch.can_cast(dt[a], dt[b])] for a in DTYPES for b in DTYPES]
    result = []
    for default in ("float32", "float64"):
        torch.set_default_dtype(dt[default])
        for a, b in itertools.product(operands(), repeat=2):
            out = name(torch.result_type(make(a), make(b)))
            result.append({"a": a, "b": b, "default": default, "dtype": out})
    torch.set_default_dtype(torch.float32)
    lines = [json.dumps(c, sort_keys=True) for c in result]
    OUT.write_text(
        '{"promote_types": '
        + json.dumps(promote)
        + ',\n"can_cast": '
        + json.dumps(cast)
        + ',\n"result_type": [\n'
        + ",\n".join(lines)
        + "\n]}\n"
    )
    print(f"{OUT}: {len(promote)} + {len(cast)} + {len(result)} cases")


if __name__ == "__main__":
    main()
