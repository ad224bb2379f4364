"""Optimizers train float16 and bfloat16 parameters as PyTorch does (issue 19, item 9).

PyTorch's CPU optimizers run their single-tensor update in the parameter's dtype: each
ATen op computes in float32 and rounds its result to the half dtype, and the state
buffers are tensors of that dtype. tests/vectors/optim_half.json (written by
tests/vectors/generate_optim_half.py) holds PyTorch's trajectories for every optimizer
configuration of optim.json in both dtypes, its state_dict after three steps (loaded
here and resumed) and after the last step (compared with ours). rustgrad transcribes
ATen's per-op rounding of its vectorised loop, so parameters of whole vectors (128 and
64 elements) agree bitwise; ATen's scalar loop, which takes a parameter of 15 elements,
rounds `add`'s `alpha * other` once more, so that one agrees within a few units of the
half dtype's precision.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
from rustgrad import optim

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "optim_half.json").read_text()
)
CASES = VECTORS["cases"]
EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7}


def _id(case: dict) -> str:
    kw = ",".join(f"{k}={v}" for k, v in case["kwargs"].items())
    return f"{case['dtype']}-{case['optimizer']}({kw})"


def _make(case: dict, values: list[list[float]]) -> tuple[list[Any], Any]:
    dtype = getattr(rustgrad, case["dtype"])
    params = [
        rustgrad.tensor(np.array(v, dtype=np.float64).reshape(s), dtype=rustgrad.float64)
        .to(dtype)
        .requires_grad_()
        for v, s in zip(values, case["shapes"])
    ]
    kwargs = {k: tuple(v) if k == "betas" else v for k, v in case["kwargs"].items()}
    return params, getattr(optim, case["optimizer"])(params, **kwargs)


def _step(case: dict, params: list[Any], opt: Any, step: int) -> None:
    dtype = getattr(rustgrad, case["dtype"])
    for p, g, s in zip(params, case["grads"][step], case["shapes"]):
        p.grad = rustgrad.tensor(
            np.array(g, dtype=np.float64).reshape(s), dtype=rustgrad.float64
        ).to(dtype)
    opt.step()


def _vectorised(numel: int) -> bool:
    """Whether ATen's vectorised loop takes every element (whole pairs of AVX2 or AVX512
    vectors: a multiple of 64 half elements)."""
    return numel % 64 == 0


def _assert_half_close(case: dict, got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Bitwise equal (NaN where PyTorch has NaN) for a parameter ATen updates in whole
    vectors; within four units of the half dtype's precision otherwise."""
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{what}: NaNs\n{got}\n{want}"
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf], err_msg=f"{what}: infinities")
    ok = np.isfinite(want)
    if _vectorised(want.size):
        np.testing.assert_array_equal(got[ok], want[ok], err_msg=what)
        return
    tol = 4 * EPS[case["dtype"]]
    scale = float(np.max(np.abs(want[ok]), initial=0.0))
    np.testing.assert_allclose(got[ok], want[ok], rtol=tol, atol=tol * scale, err_msg=what)


def _check(case: dict, params: list[Any], want: list[list[float]], what: str) -> None:
    for k, (p, w) in enumerate(zip(params, want)):
        assert str(p.dtype) == f"torch.{case['dtype']}"
        got = p.detach().to(rustgrad.float64).numpy().ravel()
        _assert_half_close(case, got, np.array(w, dtype=np.float64), f"{what}: param {k}")


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_matches_pytorch_half_trajectories(case: dict) -> None:
    params, opt = _make(case, case["init"])
    for step, want in enumerate(case["expected"]):
        _step(case, params, opt, step)
        _check(case, params, want, f"step {step + 1}")
    _check_state(case, opt.state_dict(), case["final_state"])


def _decode(value: Any, key: str = "") -> Any:
    if key == "betas":
        return tuple(value)
    if isinstance(value, dict) and set(value) == {"dtype", "shape", "data"}:
        t = rustgrad.tensor(np.array(value["data"], dtype=np.float64), dtype=rustgrad.float64)
        return t.reshape(value["shape"]).to(getattr(rustgrad, value["dtype"]))
    if isinstance(value, dict):
        return {int(k) if k.isdigit() else k: _decode(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _check_state(case: dict, got: dict, want: dict) -> None:
    """Our state_dict against PyTorch's: the same keys, dtypes and values."""
    want_state = want["state"]
    assert sorted(got["state"]) == sorted(int(k) for k in want_state)
    for k, entries in want_state.items():
        mine = got["state"][int(k)]
        assert sorted(mine) == sorted(entries)
        for name, w in entries.items():
            g = mine[name]
            if not isinstance(w, dict):
                assert g == w, name
                continue
            assert str(g.dtype) == f"torch.{w['dtype']}", name
            assert list(g.shape) == w["shape"], name
            values = g.detach().to(rustgrad.float64).numpy().ravel()
            if w["dtype"] == case["dtype"]:
                _assert_half_close(
                    case, values, np.array(w["data"], dtype=np.float64), f"state {k} {name}"
                )
            else:
                np.testing.assert_allclose(values, w["data"], rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_pytorch_half_state_dict_loads_and_resumes(case: dict) -> None:
    saved = case["saved_steps"]
    params, opt = _make(case, case["expected"][saved - 1])
    opt.load_state_dict(_decode(case["saved_state"]))
    for p in params:
        for key, v in opt.state.get(p, {}).items():
            # Cast to the parameter's dtype, as PyTorch does, except `step`.
            assert v.dtype == (rustgrad.float32 if key == "step" else p.dtype), key
    for k, want in enumerate(case["resumed"]):
        _step(case, params, opt, saved + k)
        _check(case, params, want, f"resumed step {saved + k + 1}")
    _check_state(case, opt.state_dict(), case["resumed_state"])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_state_buffers_keep_the_parameter_dtype(dtype: str) -> None:
    p = rustgrad.zeros(3, dtype=getattr(rustgrad, dtype), requires_grad=True)
    opt = optim.Adam([p], lr=0.1, amsgrad=True)
    p.grad = rustgrad.ones(3, dtype=p.dtype)
    opt.step()
    state = opt.state[p]
    assert state["step"].dtype == rustgrad.float32
    for name in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert state[name].dtype == p.dtype
    assert p.dtype == getattr(rustgrad, dtype)
    # Adam's first step moves every element by lr (m / sqrt(v) = sign(g)).
    np.testing.assert_allclose(p.detach().float().numpy(), [-0.1] * 3, rtol=1e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_transposed_half_parameter_steps_like_a_contiguous_one(dtype: str) -> None:
    half = getattr(rustgrad, dtype)
    rng = np.random.default_rng(7)
    values, grads = rng.standard_normal((4, 6)), rng.standard_normal((4, 6))
    results = []
    for transposed in (False, True):
        base = rustgrad.tensor(values.T if transposed else values).to(half)
        p = (base.t() if transposed else base).detach().requires_grad_()
        assert p.is_contiguous() != transposed
        opt = optim.Adam([p], lr=0.1)
        for _ in range(3):
            p.grad = rustgrad.tensor(grads).to(half)
            opt.step()
        results.append(p.detach().float().numpy())
    np.testing.assert_array_equal(results[0], results[1])
