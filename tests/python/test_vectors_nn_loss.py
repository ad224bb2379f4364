"""Check ``rustgrad.nn.functional`` against the PyTorch-generated vectors in
tests/vectors/nn_loss.json (written by tests/vectors/generate_nn_loss.py; schema in
tests/vectors/README.md, plus each case's PyTorch ``grad_fn`` name).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F

CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_loss.json").read_text()
)["cases"]

# PyTorch's pairwise_distance calls the legacy at::norm (NormBackward1); rustgrad's is
# linalg.vector_norm.
GRAD_FN_DIVERGENCES = {
    "NormBackward1": "LinalgVectorNormBackward0",
}

TOLERANCES = {
    "float64": {"rtol": 1e-6, "atol": 1e-9},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
}


def _kt(spec: dict[str, Any]) -> Any:
    return rustgrad.tensor(spec["data"], dtype=getattr(rustgrad, spec["dtype"])).reshape(
        tuple(spec["shape"])
    )


def _leaf(spec: dict[str, Any]) -> Any:
    return _kt(spec).requires_grad_(spec["requires_grad"])


def _view(x: Any, view: dict[str, Any] | None) -> Any:
    if view is None:
        return x
    assert view["kind"] == "transpose", view
    return x.transpose(view["dim0"], view["dim1"])


def _weight(xs: list[Any], kw: dict[str, Any]) -> dict[str, Any]:
    return {"weight": xs[-1]} if kw.get("weight") else {}


def _opts(kw: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: kw[k] for k in ("reduction", *names) if k in kw}


def _cross_entropy(xs: list[Any], kw: dict[str, Any]) -> Any:
    target = _kt(kw["target"]) if "target" in kw else xs[1]
    opts = _opts(kw, "ignore_index", "label_smoothing")
    return F.cross_entropy(xs[0], target, **_weight(xs, kw), **opts)


def _nll_loss(xs: list[Any], kw: dict[str, Any]) -> Any:
    return F.nll_loss(xs[0], _kt(kw["target"]), **_weight(xs, kw), **_opts(kw, "ignore_index"))


def _functional(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    """``F.<op>(*xs[:positional], **named inputs, **the other kwargs)``."""

    def run(xs: list[Any], kw: dict[str, Any]) -> Any:
        named = {name: xs[i] for name, i in kw.get("named", {}).items()}
        plain = {k: v for k, v in kw.items() if k not in ("positional", "named")}
        return getattr(F, op)(*xs[: kw["positional"]], **named, **plain)

    return run


FUNCTIONAL = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "poisson_nll_loss",
    "cosine_similarity",
    "pairwise_distance",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "glu",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "threshold",
    "prelu",
    "rrelu",
]


def _embedding(xs: list[Any], kw: dict[str, Any]) -> Any:
    extra = {k: kw[k] for k in ("padding_idx", "scale_grad_by_freq") if k in kw}
    return F.embedding(_kt(kw["indices"]), xs[0], **extra)


def _embedding_bag(xs: list[Any], kw: dict[str, Any]) -> Any:
    offsets = _kt(kw["offsets"]) if "offsets" in kw else None
    extra = {k: kw[k] for k in ("mode", "padding_idx", "include_last_offset") if k in kw}
    psw = {"per_sample_weights": xs[1]} if len(xs) > 1 else {}
    return F.embedding_bag(_kt(kw["indices"]), xs[0], offsets, **extra, **psw)


OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "cross_entropy": _cross_entropy,
    "nll_loss": _nll_loss,
    **{op: _functional(op) for op in FUNCTIONAL},
    "embedding": _embedding,
    "embedding_bag": _embedding_bag,
    "one_hot": lambda xs, kw: F.one_hot(_kt(kw["indices"]), kw.get("num_classes", -1)),
}


def _assert_matches(actual: Any, expected: dict[str, Any], what: str) -> None:
    assert tuple(actual.shape) == tuple(expected["shape"]), f"{what}: shape"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    values = actual.detach().numpy()
    want = np.array(expected["data"], dtype=values.dtype).reshape(tuple(expected["shape"]))
    if expected["dtype"] == "int64":
        np.testing.assert_array_equal(values, want, err_msg=what)
        return
    np.testing.assert_allclose(values, want, err_msg=what, **TOLERANCES[expected["dtype"]])


def test_the_file_covers_every_op() -> None:
    assert len(CASES) >= 220
    assert {case["op"] for case in CASES} == set(OPS)
    assert len({case["name"] for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vector(case: dict[str, Any]) -> None:
    leaves = [_leaf(spec) for spec in case["inputs"]]
    viewed = [_view(x, spec["view"]) for x, spec in zip(leaves, case["inputs"])]
    out = OPS[case["op"]](viewed, case["kwargs"])
    _assert_matches(out, case["output"], "output")
    if case["grad_output"] is None:
        assert not out.requires_grad
        return
    assert out.grad_fn is not None
    assert out.grad_fn.name() == GRAD_FN_DIVERGENCES.get(case["grad_fn"], case["grad_fn"])
    out.backward(_kt(case["grad_output"]))
    for i, (leaf, want) in enumerate(zip(leaves, case["grads"])):
        if want is None:
            assert leaf.grad is None, f"grad {i}"
        else:
            _assert_matches(leaf.grad, want, f"grad {i}")
