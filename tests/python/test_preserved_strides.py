"""``clone()`` and the ``*_like`` factories lay their result out as PyTorch's
``preserve_format``: the strides of a non-overlapping and dense input, else dense
strides in its dims' memory order (``infer_dense_strides``), checked against the
strides PyTorch 2.15 recorded (tests/vectors/preserved_strides.json, written by
generate_preserved_strides.py; Note [Preserved strides])."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import rustgrad

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "preserved_strides.json").read_text()
)["cases"]


def _view(expression: str) -> rustgrad.Tensor:
    b = rustgrad.arange(96.0).reshape(4, 4, 6)
    c = rustgrad.arange(16.0).reshape(4, 4)
    return eval(expression, {"torch": rustgrad, "b": b, "c": c})  # noqa: S307


@pytest.mark.parametrize("case", CASES, ids=[f"{c['fn']}-{c['view']}" for c in CASES])
def test_preserve_format_strides_match_pytorch(case: dict[str, Any]) -> None:
    v = _view(case["view"])
    r = eval(case["call"], {"torch": rustgrad, "v": v})  # noqa: S307
    assert list(r.shape) == case["shape"]
    assert list(r.stride()) == case["stride"]
    assert str(r.dtype).endswith(case["dtype"])
    if case["fn"] == "clone":
        assert r.tolist() == v.tolist()
    elif case["fn"] in ("zeros_like", "empty_like", "zeros_like_int64"):
        assert r.sum().item() == 0
    elif case["fn"] == "full_like":
        assert r.eq(2.5).all().item()


def test_clone_of_a_non_dense_view_is_differentiable() -> None:
    """The permuted copy keeps clone's gradient (CloneBackward0, identity)."""
    c = rustgrad.arange(16.0).reshape(4, 4).requires_grad_(True)
    r = c[:, :3].t().clone()
    assert r.stride() == (1, 3)
    assert r.grad_fn.name() == "CloneBackward0"
    (r * rustgrad.arange(12.0).reshape(3, 4)).sum().backward()
    want = rustgrad.zeros(4, 4)
    want[:, :3] = rustgrad.arange(12.0).reshape(3, 4).t()
    assert c.grad.tolist() == want.tolist()


def test_like_factories_keep_requires_grad() -> None:
    v = rustgrad.arange(16.0).reshape(4, 4)[:, :3].t()
    r = rustgrad.zeros_like(v, requires_grad=True)
    assert r.requires_grad and r.is_leaf and r.stride() == (1, 3)
