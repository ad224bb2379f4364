"""Check the pooling and normalisation functionals against the PyTorch-generated
vectors in tests/vectors/nn_poolnorm.json (written by generate_nn_poolnorm.py): the
output, the indices, the running statistics after the op and the gradient of every
differentiable input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F

PATH = Path(__file__).resolve().parents[1] / "vectors" / "nn_poolnorm.json"
CASES: list[dict[str, Any]] = json.loads(PATH.read_text())["cases"]
TOLERANCES = {
    "float64": {"rtol": 1e-6, "atol": 1e-9},
    "float32": {"rtol": 1e-5, "atol": 1e-5},
}
OPS = {
    "max_pool2d",
    "max_pool1d",
    "avg_pool2d",
    "avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_max_pool2d",
    "max_unpool2d",
    "batch_norm",
    "layer_norm",
    "group_norm",
    "instance_norm",
    "rms_norm",
    "local_response_norm",
    "normalize",
}


def _leaf(spec: dict[str, Any]) -> Any:
    t = rustgrad.tensor(spec["data"], dtype=getattr(rustgrad, spec["dtype"]))
    return t.reshape(tuple(spec["shape"])).requires_grad_(spec["requires_grad"])


def _view(t: Any, view: dict[str, Any] | None) -> Any:
    if view is None:
        return t
    assert view["kind"] == "transpose", view
    return t.transpose(view["dim0"], view["dim1"])


def _check(actual: Any, expected: dict[str, Any], what: str) -> None:
    assert list(actual.shape) == expected["shape"], f"{what}: shape {list(actual.shape)}"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    got = actual.detach().numpy()
    want = np.array(expected["data"], dtype=got.dtype).reshape(expected["shape"])
    if expected["dtype"] == "int64":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, err_msg=what, **TOLERANCES[expected["dtype"]])


def test_file_covers_every_op() -> None:
    assert {case["op"] for case in CASES} == OPS
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vector(case: dict[str, Any]) -> None:
    kwargs = dict(case["kwargs"])
    names = kwargs.pop("tensor_args")
    leaves = [_leaf(spec) for spec in case["inputs"]]
    args = {name: _view(t, spec["view"]) for name, t, spec in zip(names, leaves, case["inputs"])}
    out = getattr(F, case["op"])(**args, **kwargs)
    if "indices" in case:
        out, indices = out
        _check(indices, case["indices"], "indices")
    _check(out, case["output"], "output")
    for t, expected, name in zip(leaves, case["updated"], names):
        if expected is not None:
            _check(t, expected, f"{name} after the op")
    if case["grad_output"] is None:
        assert not out.requires_grad
        return
    grad_output = _leaf({**case["grad_output"], "requires_grad": False})
    out.backward(grad_output)
    for t, expected, name in zip(leaves, case["grads"], names):
        if expected is None:
            assert t.grad is None, f"{name} got a gradient"
        else:
            assert t.grad is not None, f"{name} got no gradient"
            _check(t.grad, expected, f"grad of {name}")
