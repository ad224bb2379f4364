"""Generate tests/vectors/weighted_losses.json: PyTorch 2.15's weighted elementwise losses
``F.mse_loss``, ``F.l1_loss`` and ``F.huber_loss`` with ``weight=`` (Note [Weighted
elementwise losses]), and ``F.cross_entropy`` of class probabilities with a class weight
(its mean's grad_fn is DivBackward1).

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_weighted_losses.py

Each case is ``{"name", "fn", "reduction", "kwargs", "input", "target", "weight"}`` with
tensors as ``{"data", "shape", "dtype", "requires_grad"}`` (data row-major), and either
PyTorch's result -- ``output`` (``data``, ``shape``, ``dtype``), ``grad_fn`` (the name or
null), ``grad_output`` and ``grads`` (of input, target and weight, null where that one
does not require grad) -- or its ``error`` (``type``, ``message``). Inputs come from a
numpy generator seeded with the CRC32 of the case name.
"""

from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "weighted_losses.json"
DTYPES = {
    "float64": torch.float64,
    "float32": torch.float32,
    "float16": torch.float16,
    "int64": torch.int64,
}
FUNCTIONS = {
    "mse_loss": F.mse_loss,
    "l1_loss": F.l1_loss,
    "huber_loss": F.huber_loss,
    "cross_entropy": F.cross_entropy,
}


def spec(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as JSON (row-major data)."""
    data = t.detach().reshape(-1).tolist()
    return {"data": data, "shape": list(t.shape), "dtype": str(t.dtype)[6:]}


def draw(rng: np.random.Generator, shape: list[int], dtype: str, grad: bool) -> torch.Tensor:
    """A tensor of ``shape``: 4-digit floats in [-2, 2] (integers in [-3, 3])."""
    if dtype == "int64":
        return torch.tensor(rng.integers(-3, 4, size=shape), dtype=torch.int64)
    values = np.round(rng.uniform(-2.0, 2.0, size=shape), 4)
    return torch.tensor(values, dtype=DTYPES[dtype]).requires_grad_(grad)


def weights(rng: np.random.Generator, shape: list[int], dtype: str, grad: bool) -> torch.Tensor:
    """Positive weights in [0.1, 2] (integers in [1, 3])."""
    if dtype == "int64":
        return torch.tensor(rng.integers(1, 4, size=shape), dtype=torch.int64)
    values = np.round(rng.uniform(0.1, 2.0, size=shape), 4)
    return torch.tensor(values, dtype=DTYPES[dtype]).requires_grad_(grad)


def case(
    name: str,
    fn: str,
    reduction: str,
    shapes: tuple[list[int], list[int], list[int]],
    dtypes: tuple[str, str, str] = ("float64", "float64", "float64"),
    **kwargs: Any,
) -> dict[str, Any]:
    """One case: draws the operands, runs PyTorch and records the result or error."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    # PyTorch's backward of a float16 input with a float32 target fails ("Found dtype
    # Float but expected Half"): such cases record values only.
    floating = [d != "int64" and "float16" not in dtypes for d in dtypes]
    x = draw(rng, shapes[0], dtypes[0], floating[0])
    t = draw(rng, shapes[1], dtypes[1], floating[1])
    w = weights(rng, shapes[2], dtypes[2], floating[2])
    record: dict[str, Any] = {
        "name": name,
        "fn": fn,
        "reduction": reduction,
        "kwargs": kwargs,
        "input": {**spec(x), "requires_grad": x.requires_grad},
        "target": {**spec(t), "requires_grad": t.requires_grad},
        "weight": {**spec(w), "requires_grad": w.requires_grad},
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = FUNCTIONS[fn](x, t, reduction=reduction, weight=w, **kwargs)
    except Exception as error:  # noqa: BLE001 -- PyTorch's error is the expectation
        record["error"] = {"type": type(error).__name__, "message": str(error)}
        return record
    record["output"] = spec(out)
    record["grad_fn"] = None if out.grad_fn is None else out.grad_fn.name()
    leaves = [v for v in (x, t, w) if v.requires_grad]
    if out.requires_grad and leaves:
        go = torch.tensor(np.round(rng.uniform(-1.0, 1.0, size=list(out.shape)), 4))
        go = go.to(out.dtype)
        grads = iter(torch.autograd.grad(out, leaves, go))
        record["grad_output"] = spec(go)
        record["grads"] = [spec(next(grads)) if v.requires_grad else None for v in (x, t, w)]
    return record


def cases() -> list[dict[str, Any]]:
    """Every case: each loss and reduction over same-shape, broadcast and mixed-dtype
    operands, and the shape error."""
    out = []
    for fn in ("mse_loss", "l1_loss", "huber_loss"):
        extra = {"delta": 0.7} if fn == "huber_loss" else {}
        for reduction in ("mean", "sum", "none"):
            tag = f"{fn}_{reduction}"
            out.append(case(f"{tag}_2d", fn, reduction, ([3, 4], [3, 4], [3, 4]), **extra))
            # The weight has the input's shape; the loss broadcasts input with target.
            out.append(case(f"{tag}_bcast", fn, reduction, ([3, 1], [1, 4], [3, 1]), **extra))
            out.append(case(f"{tag}_bcast_target", fn, reduction, ([2, 3], [3], [2, 3])))
            out.append(
                case(
                    f"{tag}_f32_w64",
                    fn,
                    reduction,
                    ([5], [5], [5]),
                    ("float32", "float32", "float64"),
                )
            )
            out.append(
                case(
                    f"{tag}_f16_f32",
                    fn,
                    reduction,
                    ([4], [4], [4]),
                    ("float16", "float32", "float32"),
                )
            )
            out.append(
                case(f"{tag}_int", fn, reduction, ([4], [4], [4]), ("int64", "int64", "float32"))
            )
            out.append(
                case(f"{tag}_int_w", fn, reduction, ([4], [4], [4]), ("int64", "int64", "int64"))
            )
            out.append(case(f"{tag}_0d", fn, reduction, ([], [], [])))
        out.append(case(f"{fn}_weight_shape", fn, "mean", ([3, 4], [3, 4], [4])))
        out.append(case(f"{fn}_weight_bcast_shape", fn, "sum", ([3, 1], [1, 4], [3, 4])))
    # cross_entropy with class-probability targets and a class weight: its mean divides
    # by the C++ integer numel / n_classes (DivBackward1).
    for reduction in ("mean", "sum", "none"):
        tag = f"cross_entropy_{reduction}_probs_weight"
        out.append(case(tag, "cross_entropy", reduction, ([3, 4], [3, 4], [4])))
        out.append(case(f"{tag}_3d", "cross_entropy", reduction, ([2, 3, 2], [2, 3, 2], [3])))
        out.append(
            case(
                f"{tag}_ls",
                "cross_entropy",
                reduction,
                ([3, 4], [3, 4], [4]),
                label_smoothing=0.2,
            )
        )
    return out


def main() -> None:
    """Writes the file."""
    torch.set_num_threads(1)
    all_cases = cases()
    OUT.write_text(json.dumps({"cases": all_cases}, separators=(", ", ": ")) + "\n")
    print(f"wrote {len(all_cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
