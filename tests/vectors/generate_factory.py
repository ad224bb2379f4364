"""Generate tests/vectors/factory.json: PyTorch's linspace, logspace and eye, bit for bit.

Run from the repository root with the separate PyTorch environment (generate.py calls
it too):

    .torch-venv/bin/python tests/vectors/generate_factory.py

Each case is a call (`op`, `args`, `kwargs` with `dtype` as a name) and PyTorch's
result: `shape`, `dtype` and `bits`, the elements in row-major order as the hex of their
IEEE bits (`%08x` float32, `%016x` float64) or as integers (int64). Read by
tests/python/test_factories.py and crates/engine/tests/factory.rs.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parent / "factory.json"
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def bits(t: torch.Tensor) -> list[Any]:
    values = t.flatten().tolist()
    if t.dtype == torch.float32:
        return [f"{struct.unpack('<I', struct.pack('<f', v))[0]:08x}" for v in values]
    if t.dtype == torch.float64:
        return [f"{struct.unpack('<Q', struct.pack('<d', v))[0]:016x}" for v in values]
    return [int(v) for v in values]


def case(name: str, op: str, args: list[Any], dtype: str, **kwargs: Any) -> dict[str, Any]:
    out = getattr(torch, op)(*args, dtype=DTYPES[dtype], **kwargs)
    return {
        "name": name,
        "op": op,
        "args": args,
        "kwargs": {**kwargs, "dtype": dtype},
        "shape": list(out.shape),
        "dtype": dtype,
        "bits": bits(out),
    }


def cases() -> list[dict[str, Any]]:
    out = []
    spans = [
        (0, 1, 5),
        (-3.7, 12.25, 11),
        (1e-3, 7.5, 101),
        (10, -10, 7),
        (0.1, 0.7, 1),
        (2.5, 2.5, 4),
        (-1e6, 3.3e5, 1000),
        (0, 1, 0),
        (3, 100, 17),
    ]
    for i, (start, end, steps) in enumerate(spans):
        for dtype in ["float32", "float64", "int64"]:
            out.append(case(f"linspace_{i}_{dtype}", "linspace", [start, end, steps], dtype))
    for i, (start, end, steps, base) in enumerate(
        [
            (0, 2, 3, 10.0),
            (-2.5, 3.75, 9, 2.0),
            (0.5, 1.5, 50, 10.0),
            (1, 4, 4, 3.0),
            (0, 1, 1, 10.0),
        ]
    ):
        for dtype in ["float32", "float64", "int64"]:
            out.append(
                case(f"logspace_{i}_{dtype}", "logspace", [start, end, steps], dtype, base=base)
            )
    for n, m in [(3, None), (2, 5), (4, 1), (0, 3)]:
        for dtype in ["float32", "int64"]:
            args = [n] if m is None else [n, m]
            out.append(case(f"eye_{n}_{m}_{dtype}", "eye", args, dtype))
    return out


def main() -> None:
    all_cases = cases()
    names = [c["name"] for c in all_cases]
    assert len(names) == len(set(names)), "duplicate case names"
    lines = [json.dumps(c, allow_nan=False) for c in all_cases]
    text = '{"cases": [\n' + ",\n".join(lines) + "\n]}\n"
    OUT.write_text(text)
    print(f"{OUT.name}: {len(all_cases)} cases, {len(text)} bytes")


if __name__ == "__main__":
    main()
