"""``F.grid_sample(mode="bicubic")``: 4-D (bicubic) and 5-D (tricubic, as PyTorch 2.15's
CPU kernel) inputs, every padding mode and ``align_corners``.

References: PyTorch-generated vectors (tests/vectors/nn_grid_sample_bicubic.json, written
by generate_nn_grid_sample_bicubic.py: the output, the input's and the grid's gradients
and grad_fn, with places far outside the input and non-finite places, and PyTorch's
exception type and message for rejected calls), float64 gradcheck / gradgradcheck, and
bitwise agreement of 1 and 2 threads.
"""

from __future__ import annotations

import builtins
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_grid_sample_bicubic.json").read_text()
)
CASES = VECTORS["cases"]
ERRORS = VECTORS["errors"]
TOLERANCES = {
    "float64": {"rtol": 1e-10, "atol": 1e-10},
    "float32": {"rtol": 1e-5, "atol": 1e-5},
}


def _values(spec: dict[str, Any]) -> np.ndarray:
    # Non-finite values are stored as the strings "nan", "inf", "-inf".
    return np.array([float(v) for v in spec["data"]], dtype=np.float64).reshape(spec["shape"])


def _leaf(spec: dict[str, Any], requires_grad: bool) -> Any:
    dtype = getattr(rustgrad, spec["dtype"])
    return rustgrad.tensor(_values(spec), dtype=dtype).requires_grad_(requires_grad)


def _assert_matches(actual: Any, expected: dict[str, Any], what: str) -> None:
    assert tuple(actual.shape) == tuple(expected["shape"]), f"{what}: shape"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    np.testing.assert_allclose(
        actual.detach().numpy().astype(np.float64),
        _values(expected),
        err_msg=what,
        **TOLERANCES[expected["dtype"]],
    )


def test_the_vectors_cover_every_option() -> None:
    combos = {
        (
            len(c["inputs"][0]["shape"]),
            c["inputs"][0]["dtype"],
            c["kwargs"]["padding_mode"],
            c["kwargs"]["align_corners"],
        )
        for c in CASES
    }
    for rank in (4, 5):
        for padding in ("zeros", "border", "reflection"):
            for ac in (False, True):
                assert (rank, "float64", padding, ac) in combos
            assert (rank, "float32", padding, False) in combos
    assert any(any(isinstance(v, str) for v in c["inputs"][1]["data"]) for c in CASES)
    assert len(ERRORS) >= 8


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    leaves = [_leaf(spec, spec["requires_grad"]) for spec in case["inputs"]]
    out = F.grid_sample(*leaves, mode="bicubic", **case["kwargs"])
    _assert_matches(out, case["output"], f"{case['name']}: output")
    assert out.grad_fn.name() == case["grad_fn"]
    out.backward(_leaf(case["grad_output"], False))
    for leaf, want, what in zip(leaves, case["grads"], ("input", "grid")):
        if want is None:
            assert leaf.grad is None
        else:
            _assert_matches(leaf.grad, want, f"{case['name']}: grad of the {what}")


@pytest.mark.parametrize("spec", ERRORS, ids=[str(e["shapes"]) + e["dtype"] for e in ERRORS])
def test_error(spec: dict[str, Any]) -> None:
    dtype = getattr(rustgrad, spec["dtype"])
    xs = [rustgrad.ones(*s, dtype=dtype) for s in spec["shapes"]]
    with pytest.raises(getattr(builtins, spec["error"])) as info:
        F.grid_sample(*xs, **spec["kwargs"])
    assert str(info.value) == spec["message"]


def _inputs(shape: tuple[int, ...], grid_shape: tuple[int, ...], seed: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    x = rustgrad.tensor(rng.normal(size=shape)).requires_grad_(True)
    # Places inside and outside the input, several reflections away.
    grid = rustgrad.tensor(rng.uniform(-2.5, 2.5, size=grid_shape)).requires_grad_(True)
    return x, grid


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_gradcheck(padding_mode: str, align_corners: bool) -> None:
    x, grid = _inputs((1, 2, 3, 4), (1, 2, 3, 2), seed=11)

    def f(a: Any, g: Any) -> Any:
        return F.grid_sample(
            a, g, mode="bicubic", padding_mode=padding_mode, align_corners=align_corners
        )

    assert gradcheck(f, (x, grid))


def test_gradcheck_volumetric_and_gradgradcheck() -> None:
    x, grid = _inputs((1, 1, 2, 3, 3), (1, 1, 2, 2, 3), seed=12)

    def f(a: Any, g: Any) -> Any:
        return F.grid_sample(a, g, mode="bicubic", padding_mode="reflection", align_corners=False)

    assert gradcheck(f, (x, grid))
    x, grid = _inputs((1, 1, 3, 3), (1, 2, 1, 2), seed=13)

    def f2(a: Any, g: Any) -> Any:
        return F.grid_sample(a, g, mode="bicubic", padding_mode="border", align_corners=True)

    assert gradgradcheck(f2, (x, grid))


def _run(threads: int) -> list[bytes]:
    rustgrad.set_num_threads(threads)
    rng = np.random.default_rng(14)
    x = rustgrad.tensor(rng.normal(size=(2, 3, 24, 24)).astype(np.float32)).requires_grad_(True)
    grid = rustgrad.tensor(rng.uniform(-1.2, 1.2, size=(2, 24, 24, 2)).astype(np.float32))
    grid.requires_grad_(True)
    out = F.grid_sample(x, grid, mode="bicubic", padding_mode="reflection", align_corners=False)
    (out * out).sum().backward()
    return [t.detach().numpy().tobytes() for t in (out, x.grad, grid.grad)]


def test_results_do_not_depend_on_the_thread_count() -> None:
    before = rustgrad.get_num_threads()
    try:
        assert _run(1) == _run(2)
    finally:
        rustgrad.set_num_threads(before)
