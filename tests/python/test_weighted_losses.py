"""The weighted elementwise losses (``F.mse_loss`` / ``F.l1_loss`` / ``F.huber_loss``
with ``weight=``) against PyTorch 2.15's vectors (tests/vectors/weighted_losses.json,
written by generate_weighted_losses.py): values, dtypes, grad_fn names and the
gradients of input, target and the weight (Note [Weighted elementwise losses]); and
``F.cross_entropy`` of class probabilities with a class weight, whose mean is
DivBackward1 as PyTorch's (Note [Wrapped scalars])."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "weighted_losses.json").read_text()
)["cases"]
ERRORS = {"ValueError": ValueError, "NotImplementedError": NotImplementedError}


def _tensor(spec: dict[str, Any]) -> rustgrad.Tensor:
    dtype = getattr(rustgrad, spec["dtype"])
    t = rustgrad.tensor(spec["data"], dtype=dtype).reshape(tuple(spec["shape"]))
    return t.requires_grad_(spec.get("requires_grad", False))


def _close(got: rustgrad.Tensor, want: dict[str, Any], what: str) -> None:
    assert str(got.dtype) == f"torch.{want['dtype']}" or str(got.dtype).endswith(want["dtype"]), (
        f"{what}: dtype {got.dtype} != {want['dtype']}"
    )
    assert list(got.shape) == want["shape"], what
    tol = {"float64": 1e-10, "float32": 1e-5, "float16": 1e-3}.get(want["dtype"], 0.0)
    np.testing.assert_allclose(
        np.array(got.detach().reshape(-1).tolist(), dtype=np.float64),
        np.array(want["data"], dtype=np.float64),
        rtol=tol,
        atol=tol,
        err_msg=what,
    )


def test_every_loss_and_reduction_has_cases() -> None:
    names = {(c["fn"], c["reduction"]) for c in CASES if "output" in c}
    for fn in ("mse_loss", "l1_loss", "huber_loss", "cross_entropy"):
        for reduction in ("mean", "sum", "none"):
            assert (fn, reduction) in names


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_weighted_loss_matches_pytorch(case: dict[str, Any]) -> None:
    x, t, w = (_tensor(case[k]) for k in ("input", "target", "weight"))
    function = getattr(F, case["fn"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the broadcast cases' size warning
        if "error" in case:
            with pytest.raises(ERRORS[case["error"]["type"]]) as info:
                function(x, t, reduction=case["reduction"], weight=w, **case["kwargs"])
            assert case["error"]["message"] in str(info.value)
            return
        out = function(x, t, reduction=case["reduction"], weight=w, **case["kwargs"])
    _close(out, case["output"], "output")
    name = None if out.grad_fn is None else out.grad_fn.name()
    assert name == case["grad_fn"]
    if "grads" not in case:
        return
    leaves = [v for v in (x, t, w) if v.requires_grad]
    grads = iter(rustgrad.autograd.grad(out, leaves, _tensor(case["grad_output"])))
    for what, leaf, want in zip(("input", "target", "weight"), (x, t, w), case["grads"]):
        if want is None:
            assert not leaf.requires_grad
        else:
            _close(next(grads), want, f"grad of {what}")


def test_modules_and_smooth_l1_take_no_weight() -> None:
    """PyTorch 2.15's MSELoss / L1Loss / HuberLoss and smooth_l1_loss have no weight."""
    x = rustgrad.ones(3)
    with pytest.raises(TypeError):
        F.smooth_l1_loss(x, x, weight=x)  # type: ignore[call-arg]
    for module in (rustgrad.nn.MSELoss, rustgrad.nn.L1Loss, rustgrad.nn.HuberLoss):
        with pytest.raises(TypeError):
            module(weight=x)  # type: ignore[call-arg]
