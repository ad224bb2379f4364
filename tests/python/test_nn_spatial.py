"""Padding, resampling and grids: ``F.pad``, ``F.interpolate`` (and the deprecated
``upsample*``), ``F.grid_sample``, ``F.affine_grid``.

References: PyTorch-generated vectors (tests/vectors/nn_spatial.json, written by
generate_nn_spatial.py: forward, gradients, grad_fn names and the error sweep), numpy's
``np.pad`` and a numpy bilinear resize, float64 gradcheck and gradgradcheck, and
bitwise agreement of 1 and 2 threads.
"""

from __future__ import annotations

import builtins
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_spatial.json").read_text()
)
CASES = VECTORS["cases"]
ERRORS = VECTORS["errors"]
TOLERANCES = {
    "float64": {"rtol": 1e-9, "atol": 1e-11},
    "float32": {"rtol": 2e-5, "atol": 2e-6},
}


def _leaf(spec: dict[str, Any]) -> Any:
    dtype = getattr(rustgrad, spec["dtype"])
    t = rustgrad.tensor(spec["data"], dtype=dtype).reshape(tuple(spec["shape"]))
    return t.requires_grad_(spec["requires_grad"])


def _assert_matches(actual: Any, expected: dict[str, Any], what: str) -> None:
    assert tuple(actual.shape) == tuple(expected["shape"]), f"{what}: shape"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    values = actual.detach().numpy()
    want = np.array(expected["data"], dtype=values.dtype).reshape(tuple(expected["shape"]))
    np.testing.assert_allclose(values, want, err_msg=what, **TOLERANCES[expected["dtype"]])


def test_the_vectors_cover_every_function_and_mode() -> None:
    assert len(CASES) >= 90 and len(ERRORS) >= 40
    assert {c["op"] for c in CASES} == {"pad", "interpolate", "grid_sample", "affine_grid"}
    modes = {c["kwargs"].get("mode", "nearest") for c in CASES if c["op"] == "interpolate"}
    assert modes == {"nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear"}
    pads = {c["kwargs"].get("mode", "constant") for c in CASES if c["op"] == "pad"}
    assert pads == {"constant", "reflect", "replicate", "circular"}
    assert {c["inputs"][0]["dtype"] for c in CASES} == {"float32", "float64"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_vector(case: dict[str, Any]) -> None:
    leaves = [_leaf(spec) for spec in case["inputs"]]
    out = getattr(F, case["op"])(*leaves, **case["kwargs"])
    _assert_matches(out, case["output"], f"{case['name']}: output")
    assert out.grad_fn.name().removeprefix("torch::autograd::") == case["grad_fn"]
    out.backward(_leaf({**case["grad_output"], "requires_grad": False}))
    for i, (leaf, want) in enumerate(zip(leaves, case["grads"])):
        if want is None:
            assert leaf.grad is None
        else:
            _assert_matches(leaf.grad, want, f"{case['name']}: grad of input {i}")


@pytest.mark.parametrize("spec", ERRORS, ids=[e["name"] for e in ERRORS])
def test_error(spec: dict[str, Any]) -> None:
    dtype = getattr(rustgrad, spec["dtype"])
    xs = [
        rustgrad.ones(*s, dtype=dtype) if s else rustgrad.ones((), dtype=dtype)
        for s in spec["shapes"]
    ]
    with pytest.raises(getattr(builtins, spec["error"])) as info:
        getattr(F, spec["fn"])(*xs, **spec["kwargs"])
    if spec["phrase"] is not None:
        assert spec["phrase"] in str(info.value)
    else:
        assert str(info.value) == spec["message"]


# ----------------------------------------------------------------- numpy references


@pytest.mark.parametrize(
    ("mode", "np_mode"),
    [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")],
)
@pytest.mark.parametrize("pad", [(1, 2), (2, 0, 1, 3), (1, 1, 0, 2, 2, 1)])
def test_pad_matches_numpy(mode: str, np_mode: str, pad: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(pad) * 7 + len(mode))
    x = rng.normal(size=(2, 3, 4, 5, 6))
    widths = [(0, 0)] * (5 - len(pad) // 2) + [
        (pad[2 * i], pad[2 * i + 1]) for i in reversed(range(len(pad) // 2))
    ]
    kwargs = {"constant_values": 0.0} if np_mode == "constant" else {}
    want = np.pad(x, widths, mode=np_mode, **kwargs)  # type: ignore[call-overload]
    if mode == "constant":
        got = F.pad(rustgrad.tensor(x), pad)
    else:
        # Non-constant modes take an input with one or two dims more than padded.
        lead = x.reshape((-1,) + x.shape[5 - len(pad) // 2 :])
        got = F.pad(rustgrad.tensor(lead), pad, mode=mode)
        want = want.reshape((-1,) + want.shape[5 - len(pad) // 2 :])
    np.testing.assert_array_equal(got.numpy(), want)


def _np_bilinear_align_corners(x: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    h, w = x.shape[-2:]
    out = np.empty(x.shape[:-2] + size)
    for i in range(size[0]):
        y = i * (h - 1) / (size[0] - 1)
        y0 = min(int(np.floor(y)), h - 2)
        ty = y - y0
        for j in range(size[1]):
            xx = j * (w - 1) / (size[1] - 1)
            x0 = min(int(np.floor(xx)), w - 2)
            tx = xx - x0
            out[..., i, j] = (
                x[..., y0, x0] * (1 - ty) * (1 - tx)
                + x[..., y0, x0 + 1] * (1 - ty) * tx
                + x[..., y0 + 1, x0] * ty * (1 - tx)
                + x[..., y0 + 1, x0 + 1] * ty * tx
            )
    return out


def test_bilinear_align_corners_matches_numpy() -> None:
    x = np.random.default_rng(3).normal(size=(2, 3, 4, 6))
    got = F.interpolate(rustgrad.tensor(x), size=(7, 5), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(
        got.numpy(), _np_bilinear_align_corners(x, (7, 5)), rtol=1e-12, atol=1e-12
    )


def test_grid_sample_of_the_identity_grid_is_the_input() -> None:
    x = rustgrad.tensor(np.random.default_rng(4).normal(size=(2, 3, 4, 5)))
    theta = rustgrad.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]] * 2, dtype=rustgrad.float64)
    for ac in (False, True):
        grid = F.affine_grid(theta, [2, 3, 4, 5], align_corners=ac)
        out = F.grid_sample(x, grid, align_corners=ac)
        np.testing.assert_allclose(out.numpy(), x.numpy(), rtol=1e-12, atol=1e-12)
        nearest = F.grid_sample(x, grid, mode="nearest", align_corners=ac)
        np.testing.assert_array_equal(nearest.numpy(), x.numpy())


def test_pad_nan_propagates_and_value_fills() -> None:
    x = rustgrad.tensor([[1.0, float("nan")]])
    out = F.pad(x, (1, 1), value=float("nan")).numpy()
    assert np.isnan(out).tolist() == [[True, False, True, True]]
    up = F.interpolate(x.view(1, 1, 2), size=4, mode="linear").numpy()
    assert np.isnan(up[0, 0, 2:]).all()


# PyTorch 2.15's results for a grid with NaN places, by (padding_mode, mode).
NAN_GRID_RESULTS = {
    ("zeros", "bilinear"): [float("nan"), float("nan")],
    ("zeros", "nearest"): [0.0, 0.0],
    ("border", "bilinear"): [5.0, 3.1],
    ("border", "nearest"): [5.0, 3.0],
    ("reflection", "bilinear"): [5.0, 3.1],
    ("reflection", "nearest"): [5.0, 3.0],
}


@pytest.mark.parametrize(("padding_mode", "mode"), sorted(NAN_GRID_RESULTS))
def test_grid_sample_nan_places_as_pytorch(padding_mode: str, mode: str) -> None:
    x = rustgrad.arange(1.0, 13.0, dtype=rustgrad.float64).view(1, 1, 3, 4)
    grid = rustgrad.tensor([[[[float("nan"), 0.0], [0.3, float("nan")]]]], dtype=rustgrad.float64)
    out = F.grid_sample(x, grid, mode=mode, padding_mode=padding_mode, align_corners=False)
    np.testing.assert_allclose(
        out.numpy().reshape(-1), NAN_GRID_RESULTS[(padding_mode, mode)], rtol=1e-12
    )


def test_pad_int_and_value_rounding_as_pytorch() -> None:
    x = rustgrad.arange(6).view(1, 1, 6)
    assert F.pad(x, (2, 2), value=1.5).tolist() == [[[1, 1, 0, 1, 2, 3, 4, 5, 1, 1]]]
    assert F.pad(x, (2, 2), mode="reflect").tolist() == [[[2, 1, 0, 1, 2, 3, 4, 5, 4, 3]]]


# ------------------------------------------------------- gradcheck and gradgradcheck


def _x(*shape: int, seed: int = 0) -> Any:
    rng = np.random.default_rng(seed)
    return rustgrad.tensor(rng.normal(size=shape)).requires_grad_(True)


PAD_CALLS = [
    ((2, 3, 5), (1, 2), "constant"),
    ((1, 2, 4, 5), (-1, 2, 2, -1), "constant"),
    ((2, 3, 5), (2, 3), "reflect"),
    ((1, 2, 4, 5), (1, 2, 3, 0), "reflect"),
    ((1, 2, 3, 3, 3), (1, 2, 2, 1, 1, 2), "reflect"),
    ((2, 3, 5), (4, 1), "replicate"),
    ((1, 2, 3, 4), (2, 1, 0, 3), "replicate"),
    ((2, 3, 5), (2, -1), "circular"),
    ((1, 2, 3, 4), (1, 2, 3, 1), "circular"),
]


@pytest.mark.parametrize(("shape", "pad", "mode"), PAD_CALLS)
def test_pad_gradcheck(shape: tuple[int, ...], pad: tuple[int, ...], mode: str) -> None:
    x = _x(*shape)
    assert gradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))
    assert gradgradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))


INTERP_CALLS = [
    ((2, 2, 5), {"size": 7, "mode": "nearest"}),
    ((1, 2, 3, 4), {"scale_factor": 1.5, "mode": "nearest-exact"}),
    ((2, 2, 5), {"size": 8, "mode": "linear", "align_corners": False}),
    ((1, 2, 4, 3), {"size": (3, 5), "mode": "bilinear", "align_corners": True}),
    ((1, 2, 4, 3), {"scale_factor": 1.7, "mode": "bilinear", "align_corners": False}),
    ((1, 1, 4, 4), {"size": (5, 3), "mode": "bicubic", "align_corners": False}),
    ((1, 1, 3, 4), {"size": (6, 5), "mode": "bicubic", "align_corners": True}),
    ((1, 1, 2, 3, 2), {"size": (3, 2, 4), "mode": "trilinear", "align_corners": False}),
]


@pytest.mark.parametrize(("shape", "kwargs"), INTERP_CALLS)
def test_interpolate_gradcheck(shape: tuple[int, ...], kwargs: dict[str, Any]) -> None:
    x = _x(*shape, seed=1)
    assert gradcheck(lambda t: F.interpolate(t, **kwargs), (x,))
    assert gradgradcheck(lambda t: F.interpolate(t, **kwargs), (x,))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_gradcheck(mode: str, padding_mode: str, align_corners: bool) -> None:
    x = _x(2, 2, 3, 4, seed=2)
    rng = np.random.default_rng(5)
    # Keep the places off pixel boundaries, where the sampling has kinks.
    grid = rustgrad.tensor(np.round(rng.uniform(-1.2, 1.2, size=(2, 3, 2, 2)), 2) + 0.0031)
    grid.requires_grad_(True)

    def f(a: Any, g: Any) -> Any:
        return F.grid_sample(
            a, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners
        )

    assert gradcheck(f, (x, grid))
    assert gradgradcheck(f, (x, grid))


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [[2, 1, 3, 4], [2, 1, 2, 3, 2]])
def test_affine_grid_gradcheck(align_corners: bool, size: list[int]) -> None:
    k = len(size) - 2
    theta = _x(2, k, k + 1, seed=3)
    assert gradcheck(lambda t: F.affine_grid(t, size, align_corners=align_corners), (theta,))
    assert gradgradcheck(lambda t: F.affine_grid(t, size, align_corners=align_corners), (theta,))


def test_spatial_transformer_gradcheck() -> None:
    x = _x(1, 2, 3, 4, seed=6)
    theta = rustgrad.tensor([[[0.9, 0.2, 0.1], [-0.1, 0.8, 0.05]]], dtype=rustgrad.float64)
    theta.requires_grad_(True)

    def f(a: Any, t: Any) -> Any:
        grid = F.affine_grid(t, [1, 2, 3, 4], align_corners=False)
        return F.grid_sample(a, grid, align_corners=False)

    assert gradcheck(f, (x, theta))
    assert gradgradcheck(f, (x, theta))


# --------------------------------------------------------------- warnings and gaps


def test_align_corners_warnings() -> None:
    x = rustgrad.ones(1, 1, 3, 3)
    theta = rustgrad.zeros(1, 2, 3)
    with pytest.warns(
        UserWarning, match="Default grid_sample and affine_grid behavior has changed"
    ):
        grid = F.affine_grid(theta, [1, 1, 3, 3])
    with pytest.warns(
        UserWarning, match="Default grid_sample and affine_grid behavior has changed"
    ):
        F.grid_sample(x, grid)
    with pytest.warns(UserWarning, match="affine_grid behavior has changed for unit-size grids"):
        F.affine_grid(theta, [1, 1, 1, 3], align_corners=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.interpolate(x, scale_factor=2, mode="bilinear")  # no warning: default False


@pytest.mark.parametrize("fn", ["upsample", "upsample_nearest", "upsample_bilinear"])
def test_deprecated_upsample_warns_and_matches_interpolate(fn: str) -> None:
    x = _x(1, 2, 3, 4, seed=7)
    with pytest.warns(UserWarning, match=f"`nn.functional.{fn}` is deprecated"):
        out = getattr(F, fn)(x, scale_factor=2)
    mode = {"upsample_bilinear": "bilinear"}.get(fn, "nearest")
    ac = True if fn == "upsample_bilinear" else None
    want = F.interpolate(x, scale_factor=2, mode=mode, align_corners=ac)
    np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())


def test_bad_inputs_raise_cleanly() -> None:
    x = rustgrad.ones(1, 1, 3, 3)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(x, size=(0, 2))
    with pytest.raises(RuntimeError, match="same dtype"):
        F.grid_sample(x, rustgrad.zeros(1, 2, 2, 2, dtype=rustgrad.float64), align_corners=False)
    with pytest.raises(RuntimeError):
        F.interpolate(x, size=(2**62, 2**62))
    with pytest.raises(RuntimeError):
        F.pad(x, (2**62, 2**62))


# ---------------------------------------------------------------------- determinism


def _run_all(threads: int) -> list[np.ndarray]:
    rustgrad.set_num_threads(threads)
    rng = np.random.default_rng(8)
    x = rustgrad.tensor(rng.normal(size=(2, 4, 64, 64)).astype(np.float32)).requires_grad_(True)
    grid = rustgrad.tensor(rng.uniform(-1.1, 1.1, size=(2, 64, 64, 2)).astype(np.float32))
    grid.requires_grad_(True)
    outs = [
        F.interpolate(x, scale_factor=2, mode="bilinear"),
        F.interpolate(x, size=(90, 70), mode="bicubic", align_corners=True),
        F.interpolate(x, scale_factor=1.5, mode="nearest"),
        F.pad(x, (3, 4, 5, 6), mode="reflect"),
        F.grid_sample(x, grid, align_corners=False),
    ]
    loss = sum((o * o).sum() for o in outs)
    loss.backward()
    return [o.detach().numpy() for o in outs] + [x.grad.numpy(), grid.grad.numpy()]


def test_results_do_not_depend_on_the_thread_count() -> None:
    before = rustgrad.get_num_threads()
    try:
        one, two = _run_all(1), _run_all(2)
    finally:
        rustgrad.set_num_threads(before)
    for a, b in zip(one, two):
        assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize(
    ("mode", "shape", "kwargs", "out_shape"),
    [
        ("nearest", (0, 2, 3), {}, (0, 2, 6)),
        ("linear", (0, 2, 3), {"align_corners": False}, (0, 2, 6)),
        ("bilinear", (0, 2, 3, 3), {"align_corners": True}, (0, 2, 6, 6)),
        ("bicubic", (0, 2, 3, 3), {"align_corners": False}, (0, 2, 6, 6)),
        ("nearest-exact", (0, 1, 2, 2, 2), {}, (0, 1, 4, 4, 4)),
        ("trilinear", (0, 1, 2, 2, 2), {}, (0, 1, 4, 4, 4)),
    ],
)
def test_interpolate_of_an_empty_batch_is_empty(
    mode: str, shape: tuple[int, ...], kwargs: dict[str, Any], out_shape: tuple[int, ...]
) -> None:
    # PyTorch 2.15 returns the empty result (and an empty gradient) for every mode.
    x = rustgrad.ones(shape, requires_grad=True)
    y = F.interpolate(x, scale_factor=2, mode=mode, **kwargs)
    assert tuple(y.shape) == out_shape
    y.sum().backward()
    assert tuple(x.grad.shape) == shape


def test_interpolate_with_zero_channels_raises_as_pytorch() -> None:
    for mode, shape in (("nearest", (2, 0, 3)), ("bilinear", (1, 0, 3, 3))):
        dims = len(shape)
        with pytest.raises(RuntimeError, match=f"Non-empty {dims}D data tensor expected"):
            F.interpolate(rustgrad.ones(shape), scale_factor=2, mode=mode)
