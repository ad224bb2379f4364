"""Generate tests/vectors/preserved_strides.json: the strides PyTorch 2.15 gives
``clone()``, ``empty_like``, ``zeros_like``, ``ones_like``, ``full_like`` and
``rand_like`` (``memory_format=torch.preserve_format``) of permuted, sliced, expanded
and size-1 views (Note [Preserved strides]).

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_preserved_strides.py

Each case is a Python expression ``view`` over ``b = torch.arange(96.).reshape(4, 4,
6)`` and ``c = torch.arange(16.).reshape(4, 4)``, a function name ``fn`` and
``dtype`` (the ``dtype=`` argument of the factory, or null), with PyTorch's result
``stride``, ``shape`` and ``dtype``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parent / "preserved_strides.json"
VIEWS = [
    "c",
    "c.t()",
    "c[:, :3]",
    "c[:, :3].t()",
    "c[::2]",
    "c[:, ::2].t()",
    "c[:3, :1]",
    "c[:1, :3].t()",
    "c[1:2, 1:2]",
    "c[:, :0].t()",
    "b.permute(2, 0, 1)",
    "b[:, 1:3].permute(2, 0, 1)",
    "b[..., ::2].transpose(0, 1)",
    "b[1:, :, :5].permute(1, 2, 0)",
    "b[:, 0]",
    "b.transpose(0, 2)[::2]",
    "b[:, :, 1:].permute(0, 2, 1)[1:]",
    "b[::2, ::3, ::2].permute(1, 0, 2)",
    "torch.arange(3.).reshape(3, 1).expand(3, 4)",
    "torch.arange(3.).reshape(3, 1).expand(3, 4).t()",
    "torch.arange(4.).reshape(1, 4).expand(3, 4).t()",
    "b[:, :1].expand(4, 3, 6).permute(2, 1, 0)",
]
FUNCTIONS = {
    "clone": "v.clone()",
    "empty_like": "torch.empty_like(v)",
    "zeros_like": "torch.zeros_like(v)",
    "ones_like": "torch.ones_like(v)",
    "full_like": "torch.full_like(v, 2.5)",
    "rand_like": "torch.rand_like(v)",
    "zeros_like_int64": "torch.zeros_like(v, dtype=torch.int64)",
    "full_like_float64": "torch.full_like(v, 7, dtype=torch.float64)",
}


def cases() -> list[dict[str, Any]]:
    """Every (view, function) pair."""
    b = torch.arange(96.0).reshape(4, 4, 6)
    c = torch.arange(16.0).reshape(4, 4)
    out = []
    for view in VIEWS:
        for name, call in FUNCTIONS.items():
            v = eval(view, {"torch": torch, "b": b, "c": c})  # noqa: S307 -- own expression
            r = eval(call, {"torch": torch, "v": v})  # noqa: S307
            out.append(
                {
                    "view": view,
                    "fn": name,
                    "call": call,
                    "shape": list(r.shape),
                    "stride": list(r.stride()),
                    "dtype": str(r.dtype)[6:],
                }
            )
    return out


def main() -> None:
    """Writes the file."""
    all_cases = cases()
    OUT.write_text(json.dumps({"cases": all_cases}) + "\n")
    print(f"wrote {len(all_cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
