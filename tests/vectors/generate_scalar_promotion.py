"""scalar_promotion.json: type promotion with Python numbers and 0-d tensors (issue 19).

Run with ``.torch-venv/bin/python tests/vectors/generate_scalar_promotion.py`` from the
repository root. Each case is an expression over ``a`` (a tensor with dims, its values
``inputs[case["a"]]``) and ``b``
(a Python number or a 0-d tensor), evaluated with ``torch`` bound to PyTorch here and to
rustgrad by ``tests/python/test_scalar_promotion.py``; the expected result is the
dtype and values PyTorch gives, or its exception type and message. The grid: every
binary op with a number or 0-d operand (both orders, in-place forms), clamp and where,
for integer and bool tensors with in-range and out-of-range Python ints and floats,
and for float16 / bfloat16 tensors with Python floats and 0-d float32 / float64
tensors (Note [Wrapped scalars]). Deterministic: the inputs are fixed lists.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).with_name("scalar_promotion.json")

DTYPES = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}

# The tensor operand `a` per dtype (a zero included: division by it is inf or PyTorch's
# ZeroDivisionError, which the cases check too; no int32 minimum: PyTorch traps on
# `INT32_MIN // -1`).
VALUES: dict[str, list[Any]] = {
    "bool": [True, False],
    "uint8": [0, 1, 5, 100, 128, 200, 255],
    "int8": [0, 1, -1, 100, 127, -7, -128],
    "int16": [16384, -8192, 32767, -32768, 7, 0],
    "int32": [0, 7, -7, 2147483647, -2147483647, 100000],
    "int64": [0, 7, -7, 2**62, -(2**62), 100000],
    "float16": [5.28125, 100.0, -3.5, 0.0, 65504.0, 1e-3],
    "bfloat16": [5.28125, 100.0, -3.5, 0.0, 3.0, 1e-3],
    "float32": [1.0, 2.0, -3.5, 0.25, 7.0, 0.0],
    "float64": [1.0, 2.0, -3.5, 0.25, 7.0, 0.0],
}

# The elementwise losses compute in the promoted dtype of input and target (`b` is a
# tensor of the same shape here).
LOSSES = {
    "mse_loss": "torch.nn.functional.mse_loss(a, b)",
    "mse_loss_none": "torch.nn.functional.mse_loss(a, b, reduction='none')",
    "mse_loss_reversed": "torch.nn.functional.mse_loss(b, a, reduction='sum')",
    "smooth_l1_loss": "torch.nn.functional.smooth_l1_loss(a, b, reduction='none')",
    "huber_loss": "torch.nn.functional.huber_loss(a, b, reduction='none')",
    "huber_loss_reversed": "torch.nn.functional.huber_loss(b, a, reduction='none')",
    "l1_loss": "torch.nn.functional.l1_loss(a, b, reduction='none')",
}
LOSS_TARGETS: list[tuple[list[Any], str]] = [
    ([1, 3, 0, -2, 7, 1], "int64"),
    ([True, False, True, True, False, False], "bool"),
    ([1.5, 2.0, -3.0, 0.0, 6.0, 0.5], "float32"),
    ([1.5, 2.0, -3.0, 0.0, 6.0, 0.5], "float64"),
    ([1.5, 2.0, -3.0, 0.0, 6.0, 0.5], "float16"),
]

# Expressions with a number (or 0-d tensor) `b` as the second operand.
FORWARD = {
    "add": "a + b",
    "sub": "a - b",
    "mul": "a * b",
    "div": "a / b",
    "true_divide": "torch.true_divide(a, b)",
    "div_trunc": "torch.div(a, b, rounding_mode='trunc')",
    "div_floor": "torch.div(a, b, rounding_mode='floor')",
    "floordiv": "a // b",
    "remainder": "a % b",
    "fmod": "torch.fmod(a, b)",
    "pow": "a ** b",
    "eq": "a == b",
    "ne": "a != b",
    "lt": "a < b",
    "le": "a <= b",
    "gt": "a > b",
    "ge": "a >= b",
    "and": "a & b",
    "or": "a | b",
    "xor": "a ^ b",
    "add_alpha": "torch.add(a, b, alpha=3)",
    "sub_alpha": "torch.sub(a, b, alpha=2)",
    "copysign": "torch.copysign(a, b)",
    "xlogy": "torch.xlogy(a, b)",
    "clamp_min": "a.clamp(min=b)",
    "clamp_max": "a.clamp(max=b)",
    "clamp_min_fn": "torch.clamp_min(a, b)",
    "clamp_max_fn": "torch.clamp_max(a, b)",
    "where": "torch.where(a == a.flatten()[1], a, b)",
    "where_reversed": "torch.where(a == a.flatten()[1], b, a)",
    "masked_fill": "a.masked_fill(a == a.flatten()[1], b)",
    "index_fill": "a.index_fill(0, torch.tensor([0, 2]), b)",
}
# Expressions with the number first.
REVERSED = {
    "radd": "b + a",
    "rsub": "b - a",
    "rmul": "b * a",
    "rdiv": "b / a",
    "rpow": "b ** a",
    "rfloordiv": "b // a",
    "rremainder": "b % a",
    "rand": "b & a",
    "req": "b == a",
    "rlt": "b < a",
}
# In-place forms (on a copy of `a`).
IN_PLACE = {
    "add_": "a.clone().add_(b)",
    "sub_": "a.clone().sub_(b)",
    "mul_": "a.clone().mul_(b)",
    "div_": "a.clone().div_(b)",
    "div_trunc_": "a.clone().div_(b, rounding_mode='trunc')",
    "floor_divide_": "a.clone().floor_divide_(b)",
    "remainder_": "a.clone().remainder_(b)",
    "fmod_": "a.clone().fmod_(b)",
    "pow_": "a.clone().pow_(b)",
    "bitwise_and_": "a.clone().bitwise_and_(b)",
    "clamp_": "a.clone().clamp_(min=b)",
    "clamp_max_": "a.clone().clamp_max_(b)",
    "eq_": "a.clone().eq_(b)",
    "lt_": "a.clone().lt_(b)",
}
# Both clamp bounds numbers (`int8.clamp(-1000, 1000)`): checked with number operands.
NUMBERS_ONLY = {
    "clamp_both_low": "a.clamp(-1000, b)",
    "clamp_both_high": "a.clamp(b, 1000)",
}
# Ops that take only tensors: checked with 0-d tensor operands.
TENSOR_ONLY = {
    "maximum": "torch.maximum(a, b)",
    "minimum": "torch.minimum(a, b)",
    "atan2": "torch.atan2(a, b)",
    "hypot": "torch.hypot(a, b)",
    "fmax": "torch.fmax(a, b)",
    "clamp_tensor_min": "torch.clamp(a, min=b)",
    "clamp_tensor_max": "torch.clamp(a, max=b)",
}

INT_NUMBERS: list[Any] = [-1, 2, 200, 256, 300, -300, 32768, 70000, 2**31 + 5, -(2**63)]
INT_NUMBERS += [True, 2.5, 1e39]
# 0-d tensor operands for the integer and bool tensors: (value, dtype).
INT_ZERO_DIM: list[tuple[Any, str]] = [
    (300, "int64"),
    (-1, "int64"),
    (256, "int16"),
    (200, "int32"),
    (2.5, "float64"),
    (True, "bool"),
]
HALF_NUMBERS: list[Any] = [5.2922, 0.3337, -1.23456, 257, 70000, 1e6, 1e39, True]
HALF_ZERO_DIM: list[tuple[Any, str]] = [
    (5.2922, "float32"),
    (5.2922, "float64"),
    (0.3337, "float32"),
    (-1.23456, "float64"),
    (1e6, "float32"),
    (257, "int64"),
]


def encode(value: Any) -> Any:
    """A float for JSON (NaN and infinities as strings)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def operand(b: Any, dtype: str | None) -> dict[str, Any]:
    """The case's `b`: a number (`dtype` None), a 0-d tensor, or a tensor (a list)."""
    if isinstance(b, list):
        return {"values": [encode(v) for v in b], "dtype": dtype}
    return {"value": encode(b), "dtype": dtype}


def evaluate(expr: str, a: torch.Tensor, b: Any) -> dict[str, Any]:
    """What PyTorch gives: the result's dtype and values, or the exception."""
    try:
        out = eval(expr, {"torch": torch}, {"a": a, "b": b})  # noqa: S307
    except Exception as e:  # noqa: BLE001
        return {"error": type(e).__name__, "message": str(e).split("\n")[0]}
    dtype = str(out.dtype).removeprefix("torch.")
    values = out.to(torch.float64).tolist() if out.dtype.is_floating_point else out.tolist()
    values = values if isinstance(values, list) else [values]
    return {"dtype": dtype, "values": [encode(v) for v in values]}


def cases() -> list[dict[str, Any]]:
    """The whole grid."""
    out: list[dict[str, Any]] = []

    def add(expr: str, dtype: str, b: Any, b_dtype: str | None) -> None:
        a = torch.tensor(VALUES[dtype], dtype=DTYPES[dtype])
        bb = b if b_dtype is None else torch.tensor(b, dtype=DTYPES[b_dtype])
        out.append({"expr": expr, "a": dtype, "b": operand(b, b_dtype), **evaluate(expr, a, bb)})

    every = {**FORWARD, **REVERSED, **IN_PLACE}
    in_place = set(IN_PLACE.values())
    for dtype in ["bool", "uint8", "int8", "int16", "int32", "int64"]:
        # In place, a float number on an integer tensor is the cast error, which
        # rustgrad words differently for some ops ("Short" for "short int"), and a
        # number of the wrong kind on a bool tensor likewise: no cases.
        for expr in {**every, **NUMBERS_ONLY}.values():
            for b in INT_NUMBERS:
                if not (expr in in_place and (isinstance(b, float) or dtype == "bool")):
                    add(expr, dtype, b, None)
        for expr in {**every, **TENSOR_ONLY}.values():
            for b, b_dtype in INT_ZERO_DIM:
                if not (expr in in_place and (b_dtype == "float64" or dtype == "bool")):
                    add(expr, dtype, b, b_dtype)
    for dtype in ["float16", "bfloat16"]:
        for expr in {**every, **NUMBERS_ONLY}.values():
            for b in HALF_NUMBERS:
                add(expr, dtype, b, None)
        for expr in {**every, **TENSOR_ONLY}.values():
            for b, b_dtype in HALF_ZERO_DIM:
                add(expr, dtype, b, b_dtype)
    for dtype in ["float32", "float16", "bfloat16", "float64", "int64"]:
        for expr in LOSSES.values():
            for values, b_dtype in LOSS_TARGETS:
                add(expr, dtype, values, b_dtype)
    return out


def main() -> None:
    """Writes scalar_promotion.json, one case per line."""
    torch.set_num_threads(1)
    lines = [json.dumps(c, sort_keys=True) for c in cases()]
    inputs = json.dumps({k: [encode(v) for v in vs] for k, vs in VALUES.items()})
    OUT.write_text('{"inputs": ' + inputs + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{OUT}: {len(lines)} cases")


if __name__ == "__main__":
    main()
