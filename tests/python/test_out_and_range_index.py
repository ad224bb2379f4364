"""``range`` objects and other sequences of ints as indices (reads, writes, gradients)
and ``out=`` arguments, against PyTorch 2.15's vectors
(tests/vectors/out_and_range_index.json, written by generate_out_and_range_index.py;
Note [Index scalars], Note [out= arguments])."""

from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
DATA: dict[str, Any] = json.loads((VECTORS / "out_and_range_index.json").read_text())
RANGE_CASES: list[dict[str, Any]] = DATA["range_index"]


def _run_range(kind: str, index: str) -> dict[str, Any]:
    """One case, as generate_out_and_range_index.py's ``run_range`` does it."""
    tm = rustgrad
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
            v = None
            if kind == "set":
                v = (100 + tm.arange(float(shape.numel()), dtype=tm.float64)).reshape(shape)
                v.requires_grad_()
                y[key] = v
            else:
                y[key] = 7
            big_w = (1 + tm.arange(12.0, dtype=tm.float64)).reshape(3, 4)
            (y * big_w).sum().backward()
            out["shape"] = list(y.shape)
            out["values"] = y.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
            if v is not None:
                out["grad_v"] = v.grad.reshape(-1).tolist()
    except (IndexError, TypeError, RuntimeError) as error:
        out = {"error": {"type": type(error).__name__, "message": str(error)}}
    finally:
        caught.__exit__(None, None, None)
    out["warnings"] = [str(w.message) for w in caught.log]
    return out


class _record_warnings(warnings.catch_warnings):  # noqa: N801 -- used like the function
    """``catch_warnings(record=True)`` entered at once, keeping its list as ``log``."""

    def __init__(self) -> None:
        super().__init__(record=True)
        self.log = self.__enter__()
        warnings.simplefilter("always")


@pytest.mark.parametrize(
    "case", RANGE_CASES, ids=[f"{c['kind']}-{c['index']}" for c in RANGE_CASES]
)
def test_range_index_matches_pytorch(case: dict[str, Any]) -> None:
    got = _run_range(case["kind"], case["index"])
    if "error" in case:
        assert "error" in got, got
        assert got["error"]["type"] == case["error"]["type"]
        # PyTorch names the index's own dim in its bound message; only the phrase counts.
        assert case["error"]["message"].split(" for dimension")[0] in got["error"]["message"]
        assert got["warnings"] == case["warnings"]
        return
    assert "error" not in got, got
    for key in ("shape", "values", "grad_x", "grad_v", "warnings"):
        assert got.get(key) == case.get(key), key


def test_range_cases_cover_reads_writes_and_errors() -> None:
    kinds = {c["kind"] for c in RANGE_CASES}
    assert kinds == {"get", "set", "set_number"}
    assert any("error" in c for c in RANGE_CASES)
    assert sum("grad_v" in c for c in RANGE_CASES) >= 20
