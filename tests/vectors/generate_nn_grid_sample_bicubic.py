"""Write tests/vectors/nn_grid_sample_bicubic.json: PyTorch's ``F.grid_sample`` with
``mode="bicubic"`` (4-D, and 5-D, which PyTorch 2.15 samples tricubically) for every
padding mode and ``align_corners``, float64 and float32, with places inside and well
outside the input: the output, the input's and the grid's gradients and grad_fn; grids
with NaN and infinite places (non-finite values written as the strings "nan", "inf",
"-inf"); and the calls PyTorch rejects (exception type and message).

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_nn_grid_sample_bicubic.py

Deterministic: each case draws its inputs from a numpy generator seeded with the CRC32
of its name; PyTorch runs on one thread. Read by tests/python/test_grid_sample_bicubic.py.
Schema: ``cases`` as nn_spatial.json's (``inputs`` with ``data``/``shape``/``dtype``/
``requires_grad``; ``output``, ``grad_fn``, ``grad_output``, ``grads`` per input, None
where the input needs no gradient); ``errors``: ``shapes`` of ones inputs, ``dtype``,
``kwargs``, PyTorch's ``error`` type name and ``message``.
"""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "nn_grid_sample_bicubic.json"
DECIMALS = 4
DTYPES = {"float64": torch.float64, "float32": torch.float32}
PADDINGS = ("zeros", "border", "reflection")


def number(v: float) -> float | str:
    """A JSON value for ``v``: non-finite values as strings."""
    return v if math.isfinite(v) else str(v)


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    flat = t.detach().contiguous().reshape(-1).tolist()
    return {
        "data": [number(float(v)) for v in flat],
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
    }


def make_case(
    name: str,
    shapes: tuple[list[int], list[int]],
    dtype: str,
    kwargs: dict[str, Any],
    spread: float = 2.2,
    grads: tuple[bool, bool] = (True, True),
    specials: dict[int, float] | None = None,
) -> dict[str, Any]:
    """One call: the input from N(0, 1), the grid uniform in [-spread, spread] (places
    outside the input, several reflections away), ``specials`` overriding grid entries
    by flat index."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    x = np.round(rng.normal(0.0, 1.0, int(np.prod(shapes[0]))), DECIMALS)
    g = np.round(rng.uniform(-spread, spread, int(np.prod(shapes[1]))), DECIMALS)
    for i, v in (specials or {}).items():
        g[i] = v
    leaves = []
    for values, shape, grad in zip((x, g), shapes, grads):
        leaf = torch.tensor(values.tolist(), dtype=DTYPES[dtype]).reshape(shape)
        leaves.append(leaf.requires_grad_(grad))
    out = F.grid_sample(*leaves, mode="bicubic", **kwargs)
    go = np.round(rng.normal(0.0, 1.0, out.numel()), DECIMALS)
    grad_output = torch.tensor(go.tolist(), dtype=out.dtype).reshape(out.shape)
    out.backward(grad_output)
    return {
        "name": name,
        "kwargs": kwargs,
        "inputs": [{**tensor_json(leaf), "requires_grad": leaf.requires_grad} for leaf in leaves],
        "output": tensor_json(out),
        "grad_fn": out.grad_fn.name().removeprefix("torch::autograd::"),
        "grad_output": tensor_json(grad_output),
        "grads": [tensor_json(leaf.grad) if leaf.requires_grad else None for leaf in leaves],
    }


def cases() -> list[dict[str, Any]]:
    out = []
    for padding in PADDINGS:
        for ac in (False, True):
            tag = f"{padding}_{'ac' if ac else 'noac'}"
            kwargs = {"padding_mode": padding, "align_corners": ac}
            out.append(make_case(f"2d_{tag}", ([2, 3, 4, 5], [2, 3, 4, 2]), "float64", kwargs))
            out.append(make_case(f"2d_{tag}_f32", ([1, 2, 3, 4], [1, 3, 2, 2]), "float32", kwargs))
            out.append(
                make_case(f"3d_{tag}", ([1, 2, 3, 4, 3], [1, 2, 2, 3, 3]), "float64", kwargs)
            )
        kwargs = {"padding_mode": padding, "align_corners": False}
        out.append(
            make_case(f"3d_{padding}_f32", ([1, 1, 2, 3, 4], [1, 2, 2, 2, 3]), "float32", kwargs)
        )
        # Single-pixel dims (reflection's empty span with align_corners) and far places.
        for ac in (False, True):
            kw = {"padding_mode": padding, "align_corners": ac}
            name = f"2d_{padding}_{'ac' if ac else 'noac'}_single_row"
            out.append(make_case(name, ([1, 2, 1, 4], [1, 3, 2, 2]), "float64", kw))
        out.append(
            make_case(f"2d_{padding}_far", ([1, 1, 3, 4], [1, 4, 3, 2]), "float64", kwargs, 9.0)
        )
    kwargs = {"padding_mode": "border", "align_corners": False}
    out.append(
        make_case(
            "2d_input_only", ([1, 2, 3, 4], [1, 2, 3, 2]), "float64", kwargs, grads=(True, False)
        )
    )
    out.append(
        make_case(
            "2d_grid_only", ([1, 2, 3, 4], [1, 2, 3, 2]), "float64", kwargs, grads=(False, True)
        )
    )
    # Non-finite places: NaN reads pixel 0 of each tap's axis when padded (NaN weights),
    # infinities lie far outside.
    nan, inf = float("nan"), float("inf")
    for padding in PADDINGS:
        for ac in (False, True):
            kw = {"padding_mode": padding, "align_corners": ac}
            name = f"2d_{padding}_{'ac' if ac else 'noac'}_nonfinite"
            specials = {0: nan, 3: nan, 5: inf, 6: -inf}
            out.append(
                make_case(name, ([1, 2, 3, 4], [1, 2, 2, 2]), "float64", kw, specials=specials)
            )
    return out


def run_error(
    shapes: list[list[int]], kwargs: dict[str, Any], dtype: str = "float64"
) -> dict[str, Any]:
    xs = [torch.ones(s, dtype=getattr(torch, dtype)) for s in shapes]
    try:
        F.grid_sample(*xs, **kwargs)
    except Exception as e:  # noqa: BLE001 - recording PyTorch's exception
        return {
            "shapes": shapes,
            "dtype": dtype,
            "kwargs": kwargs,
            "error": type(e).__name__,
            "message": str(e),
        }
    raise AssertionError(f"PyTorch accepted {shapes} {kwargs}")


def errors() -> list[dict[str, Any]]:
    kw = {"mode": "bicubic", "align_corners": False}
    return [
        run_error([[1, 2, 3, 4], [1, 3, 3, 3]], kw),
        run_error([[1, 2, 3, 4, 5], [1, 2, 2, 2, 2]], kw),
        run_error([[1, 2, 3, 4], [1, 2, 2, 2, 2]], kw),
        run_error([[1, 2, 3, 4, 5], [1, 2, 2, 3]], kw),
        run_error([[2, 2, 3, 4], [1, 3, 3, 2]], kw),
        run_error([[1, 2, 0, 4], [1, 3, 3, 2]], kw),
        run_error([[1, 2, 3, 4], [1, 3, 3, 2]], kw, dtype="int64"),
        run_error([[1, 2, 3, 4, 5], [1, 2, 2, 2, 3]], kw, dtype="int64"),
        run_error([[1, 2, 3], [1, 3, 2]], kw),
        run_error([[1, 2, 3, 4], [1, 3, 3, 2]], {**kw, "padding_mode": "circular"}),
    ]


def main() -> None:
    torch.set_num_threads(1)
    all_cases = cases()
    names = [c["name"] for c in all_cases]
    assert len(names) == len(set(names))
    errs = errors()
    lines = ",\n".join(json.dumps(c) for c in all_cases)
    error_lines = ",\n".join(json.dumps(e) for e in errs)
    OUT.write_text('{"cases": [\n' + lines + '\n],\n"errors": [\n' + error_lines + "\n]}\n")
    print(f"wrote {len(all_cases)} cases and {len(errs)} errors to {OUT}")


if __name__ == "__main__":
    main()
