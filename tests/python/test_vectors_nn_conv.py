"""Convolutions and linear layers against PyTorch's values: tests/vectors/nn_conv.json
(written by tests/vectors/generate_nn_conv.py; schema in tests/vectors/README.md).

Each case builds its inputs as leaves, applies the input view, calls the
``rustgrad.nn.functional`` function as a PyTorch user would (JSON lists become tuples),
compares the output, then backpropagates ``grad_output`` and compares every leaf's
``.grad``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F

CASES = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "nn_conv.json").read_text())[
    "cases"
]

TOLERANCES = {
    "float64": {"rtol": 1e-6, "atol": 1e-9},
    # float32 sums of up to a few dozen products, in another order than PyTorch's.
    "float32": {"rtol": 1e-5, "atol": 1e-5},
}

GRAD_FN = {
    "conv1d": "ConvolutionBackward0",
    "conv2d": "ConvolutionBackward0",
    "conv3d": "ConvolutionBackward0",
    "conv_transpose1d": "ConvolutionBackward0",
    "conv_transpose2d": "ConvolutionBackward0",
    "conv_transpose3d": "ConvolutionBackward0",
    "unfold": "Im2ColBackward0",
    "fold": "Col2ImBackward0",
    "pixel_shuffle": "PixelShuffleBackward0",
    "pixel_unshuffle": "PixelUnshuffleBackward0",
}

REQUIRED_OPS = set(GRAD_FN) | {"linear", "bilinear"}


def _arg(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _run(op: str, xs: list[Any], kw: dict[str, Any]) -> Any:
    kwargs = {k: _arg(v) for k, v in kw.items()}
    if op in ("linear", "bilinear"):
        return getattr(F, op)(*xs)
    if op in ("unfold", "fold", "pixel_shuffle", "pixel_unshuffle"):
        return getattr(F, op)(xs[0], **kwargs)
    return getattr(F, op)(*xs, **kwargs)


def _view(x: Any, view: dict[str, Any] | None) -> Any:
    if view is None:
        return x
    if view["kind"] == "transpose":
        return x.transpose(view["dim0"], view["dim1"])
    if view["kind"] == "permute":
        return x.permute(*view["dims"])
    if view["kind"] == "slice":
        index = (slice(None),) * view["dim"] + (slice(view["start"], view["end"], view["step"]),)
        return x[index]
    raise AssertionError(f"unknown view {view['kind']!r}")


def _leaf(spec: dict[str, Any], requires_grad: bool) -> Any:
    t = rustgrad.tensor(spec["data"], dtype=getattr(rustgrad, spec["dtype"]))
    return t.reshape(tuple(spec["shape"])).requires_grad_(requires_grad)


def _check(actual: Any, expected: dict[str, Any], what: str) -> None:
    assert tuple(actual.shape) == tuple(expected["shape"]), f"{what}: shape"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    values = actual.detach().numpy()
    want = np.array(expected["data"], dtype=values.dtype).reshape(tuple(expected["shape"]))
    np.testing.assert_allclose(values, want, err_msg=what, **TOLERANCES[expected["dtype"]])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_nn_conv_vector(case: dict[str, Any]) -> None:
    leaves = [_leaf(spec, spec["requires_grad"]) for spec in case["inputs"]]
    xs = [_view(x, spec["view"]) for x, spec in zip(leaves, case["inputs"])]
    out = _run(case["op"], xs, case["kwargs"])
    _check(out, case["output"], "output")
    unbatched = case["name"].endswith("unbatched") or "_unbatched" in case["name"]
    if case["op"] in GRAD_FN and not (unbatched and case["op"].startswith("conv")):
        assert type(out.grad_fn).__name__ == GRAD_FN[case["op"]]
    out.backward(_leaf(case["grad_output"], False))
    for input_nr, (leaf, expected) in enumerate(zip(leaves, case["grads"])):
        if expected is None:
            assert leaf.grad is None, f"grad of input {input_nr} should be None"
        else:
            _check(leaf.grad, expected, f"grad of input {input_nr}")


def test_the_file_covers_every_op() -> None:
    assert len(CASES) >= 60
    assert REQUIRED_OPS <= {case["op"] for case in CASES}
    # Option combinations the issue asks for are present.
    kwargs = [case["kwargs"] for case in CASES if case["op"] == "conv2d"]
    assert any(kw.get("padding") == "same" for kw in kwargs)
    assert any(kw.get("groups", 1) > 1 for kw in kwargs)
    assert any(kw.get("dilation", 1) != 1 for kw in kwargs)
    assert {spec["dtype"] for case in CASES for spec in case["inputs"]} == {"float32", "float64"}
