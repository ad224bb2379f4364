"""torch.promote_types, torch.can_cast and torch.result_type against PyTorch.

Reads tests/vectors/type_promotion.json (written by generate_type_promotion.py): every
dtype pair, and result_type over tensors with dims, 0-d tensors and Python numbers in
both orders under the default dtypes float32 and float64 (Note [Wrapped scalars]).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "type_promotion.json").read_text())


def _make(spec: dict[str, Any]) -> Any:
    if "number" in spec:
        return spec["number"]
    dtype = getattr(torch, spec["tensor"])
    return torch.ones(2, dtype=dtype) if spec["dim"] else torch.tensor(1, dtype=dtype)


def test_promote_types_table() -> None:
    bad = [
        (a, b, got, want)
        for a, b, want in VECTORS["promote_types"]
        if (got := torch.promote_types(getattr(torch, a), getattr(torch, b)))
        != getattr(torch, want)
    ]
    assert not bad
    assert len(VECTORS["promote_types"]) == 100


def test_can_cast_table() -> None:
    bad = [
        (a, b, want)
        for a, b, want in VECTORS["can_cast"]
        if torch.can_cast(getattr(torch, a), getattr(torch, b)) is not want
    ]
    assert not bad


@pytest.mark.parametrize("default", ["float32", "float64"])
def test_result_type_table(default: str) -> None:
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, default))
    try:
        cases = [c for c in VECTORS["result_type"] if c["default"] == default]
        bad = [
            (c["a"], c["b"], got, c["dtype"])
            for c in cases
            if (got := torch.result_type(_make(c["a"]), _make(c["b"])))
            != getattr(torch, c["dtype"])
        ]
    finally:
        torch.set_default_dtype(previous)
    assert not bad, bad[:10]
    assert len(cases) == 24 * 24


def test_result_type_is_the_dtype_of_the_op() -> None:
    u8 = torch.tensor([1, 2], dtype=torch.uint8)
    assert torch.result_type(u8, 300) == (u8 + 300).dtype == torch.uint8
    x = torch.ones(2, dtype=torch.float16)
    assert torch.result_type(x, torch.tensor(2.5, dtype=torch.float64)) == (x * 2.5).dtype
    assert torch.result_type(tensor=u8, other=2.5) == torch.float32
    assert torch.promote_types(torch.int8, float) == torch.float64


def test_bad_arguments_are_pytorchs_errors() -> None:
    x = torch.ones(2)
    with pytest.raises(TypeError, match=r"result_type\(\) received an invalid combination"):
        torch.result_type("a", x)
    with pytest.raises(TypeError, match=r"argument 'type2' \(position 2\) must be torch.dtype"):
        torch.promote_types(torch.uint8, "a")
    with pytest.raises(TypeError, match=r"argument 'to' \(position 2\) must be torch.dtype"):
        torch.can_cast(torch.float32, 3)
    with pytest.raises(OverflowError, match="int too big to convert"):
        torch.result_type(x, 2**70)
