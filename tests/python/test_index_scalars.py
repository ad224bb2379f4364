"""Indexing with 0-d index tensors of every dtype (integers select, uint8 / bool are
masks, floats are refused with PyTorch's IndexError), bools beside advanced indices and
list indices read as tuples, for reads and ``__setitem__``, against PyTorch 2.15's
vectors (tests/vectors/index_scalars.json, written by generate_index_scalars.py; Note
[Index scalars])."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import rustgrad

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
CASES: list[dict[str, Any]] = json.loads((VECTORS / "index_scalars.json").read_text())["cases"]


def _run(kind: str, index: str, dtype: str | None, value: int) -> dict[str, Any]:
    """One case, as generate_index_scalars.py's ``run`` does it with PyTorch."""
    x = rustgrad.arange(6.0).reshape(3, 2)
    scope: dict[str, Any] = {"torch": rustgrad, "x": x}
    if dtype is not None:
        scope["i"] = rustgrad.tensor(value, dtype=getattr(rustgrad, dtype))
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
        except (IndexError, RuntimeError) as error:
            out["error"] = {"type": type(error).__name__, "message": str(error)}
    out["warnings"] = [str(w.message) for w in caught]
    return out


def _id(case: dict[str, Any]) -> str:
    return f"{case['kind']}-{case['dtype']}-{case['value']}-{case['index']}"


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_index_scalar_matches_pytorch(case: dict[str, Any]) -> None:
    got = _run(case["kind"], case["index"], case["dtype"], case["value"])
    if "error" in case:
        assert "error" in got, got
        assert got["error"]["type"] == case["error"]["type"]
        assert case["error"]["message"] in got["error"]["message"]
    else:
        assert "error" not in got, got
        assert got["shape"] == case["shape"]
        assert got["values"] == case["values"]
    assert got["warnings"] == case["warnings"]


def test_every_dtype_and_form_has_cases() -> None:
    dtypes = {c["dtype"] for c in CASES}
    assert {"float16", "bfloat16", "int8", "int16", "int32", "uint8", "bool"} <= dtypes
    assert {c["kind"] for c in CASES} == {"get", "set"}
