"""Class-index losses on views of larger tensors, against PyTorch (issue 19, item 6).

``F.cross_entropy(logits[:2], target)`` raised "rustgrad internal error: class loss
operands do not match their block": the fused kernel was handed the whole storage of
the slice instead of the view's own elements. tests/vectors/nn_loss_slices.json
(written by tests/vectors/generate_nn_loss_slices.py) holds PyTorch's loss and
gradient for each recipe below (slices at an offset, spatial rows, a slice of
``log_softmax``'s output, an unbatched slice, a transposed and a strided view; every
reduction, ``ignore_index``, label smoothing and class weights; float64, float32,
float16 and bfloat16, which PyTorch computes and rustgrad refused).
The gradient is taken with respect to the base tensor, so elements outside the view
must get exactly zero.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "nn_loss_slices.json"
CASES = json.loads(VECTORS.read_text())["cases"]


def ce(x: Any, t: Any, kw: dict) -> Any:
    return F.cross_entropy(x, t, **kw)


def nll(x: Any, t: Any, kw: dict) -> Any:
    return F.nll_loss(x, t, **kw)


# The generator's recipes: (logits view, target view, loss).
RECIPES: dict[str, tuple[Callable, Callable, Callable]] = {
    "ce_first_rows": (lambda x: x[:2], lambda t: t[:2], ce),
    "ce_middle_rows": (lambda x: x[2:5], lambda t: t[1:4], ce),
    "nll_of_log_softmax_rows": (lambda x: F.log_softmax(x, 1)[1:3], lambda t: t[2:], nll),
    "nll_rows": (lambda x: x[3:], lambda t: t[:2], nll),
    "ce_spatial_rows": (lambda x: x[1:3], lambda t: t[2:], ce),
    "nll_spatial_rows": (lambda x: F.log_softmax(x, 1)[1:], lambda t: t[:2], nll),
    "ce_unbatched_slice": (lambda x: x[3:7], lambda t: t[1], ce),
    "ce_transposed": (lambda x: x.t()[1:4], lambda t: t[2:5], ce),
    "ce_strided_rows": (lambda x: x[1::2], lambda t: t, ce),
    "ce_probabilities_rows": (lambda x: x[1:4], lambda t: t[2:5], ce),
}
# float16 / bfloat16: ATen rounds the log-softmax to the half dtype before the loss,
# rustgrad rounds once at the end; a few units of the half precision apart.
TOL = {
    "float64": dict(rtol=1e-10, atol=1e-12),
    "float32": dict(rtol=2e-5, atol=1e-6),
    "float16": dict(rtol=4e-3, atol=4e-3),
    "bfloat16": dict(rtol=3e-2, atol=3e-2),
}


def test_every_recipe_is_read() -> None:
    assert {c["recipe"] for c in CASES} == set(RECIPES)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_loss_of_a_view_matches_pytorch(case: dict) -> None:
    dtype = getattr(torch, case["dtype"])
    xview, tview, loss_fn = RECIPES[case["recipe"]]
    x = torch.tensor(np.array(case["x"]["data"]).reshape(case["x"]["shape"]), dtype=dtype)
    x.requires_grad_()
    tgt = case["target"]
    t = torch.tensor(
        np.array(tgt["data"]).reshape(tgt["shape"]), dtype=getattr(torch, tgt["dtype"])
    )
    kwargs = dict(case["kwargs"])
    if "weight" in kwargs:
        kwargs["weight"] = torch.tensor(kwargs["weight"], dtype=dtype)
    loss = loss_fn(xview(x), tview(t), kwargs)
    want = np.array(case["loss"]["data"]).reshape(case["loss"]["shape"])
    assert list(loss.shape) == case["loss"]["shape"]
    np.testing.assert_allclose(loss.detach().double().numpy(), want, **TOL[case["dtype"]])
    w = torch.tensor(np.array(case["w"]).reshape(case["loss"]["shape"]), dtype=dtype)
    (loss * w).sum().backward()
    want_grad = np.array(case["grad"]).reshape(case["x"]["shape"])
    got_grad = x.grad.double().numpy()
    np.testing.assert_allclose(got_grad, want_grad, **TOL[case["dtype"]])
    # Nothing outside the view gets a gradient.
    assert not np.any(got_grad[want_grad == 0])
