"""The pooling functionals and modules added for issue 21 (3-d pooling, adaptive max
1-d / 3-d, LP pooling, max_unpool 1-d / 3-d, fractional max pooling, area and
antialiased interpolation, volumetric grid_sample) against PyTorch's vectors in
tests/vectors/nn_pool3d.json (written by
generate_nn_pool3d.py): outputs, indices, input gradients, grad_fn names and the
messages of rejected calls; gradcheck and gradgradcheck in float64; module reprs and
state; bitwise determinism across thread counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn as nn
import rustgrad.nn.functional as F

PATH = Path(__file__).resolve().parents[1] / "vectors" / "nn_pool3d.json"
DATA = json.loads(PATH.read_text())
TOL = {"float64": 1e-10, "float32": 1e-5}


def _tensor(spec: dict[str, Any]) -> Any:
    dtype = getattr(rustgrad, spec["dtype"])
    return rustgrad.tensor(spec["values"], dtype=dtype).reshape(tuple(spec["shape"]))


def _check(actual: Any, spec: dict[str, Any], what: str) -> None:
    assert list(actual.shape) == spec["shape"], what
    assert actual.dtype == getattr(rustgrad, spec["dtype"]), what
    got = actual.detach().numpy().reshape(-1)
    want = np.array(spec["values"], dtype=got.dtype)
    if spec["dtype"] == "int64":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        tol = TOL[spec["dtype"]]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)


@pytest.mark.parametrize("case", DATA["cases"], ids=lambda c: c["name"])
def test_against_pytorch(case: dict[str, Any]) -> None:
    inputs = [_tensor(s) for s in case["inputs"]]
    diff = inputs[: 1 + len(case["more_grads"])]
    for t in diff:
        t.requires_grad_(True)
    x = inputs[0]
    kwargs = {
        k: inputs[v["tensor"]] if isinstance(v, dict) else v for k, v in case["kwargs"].items()
    }
    positional = [x] + [
        t
        for i, t in enumerate(inputs[1:], 1)
        if i not in {v["tensor"] for v in case["kwargs"].values() if isinstance(v, dict)}
    ]
    out = getattr(F, case["fn"])(*positional, **kwargs)
    outs = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == len(case["outputs"])
    for i, (o, spec) in enumerate(zip(outs, case["outputs"], strict=True)):
        _check(o, spec, f"{case['name']} output {i}")
    assert type(outs[0].grad_fn).__name__ == case["grad_fn"]
    grads = rustgrad.autograd.grad(outs[0], diff, _tensor(case["grad"]))
    for i, (g, spec) in enumerate(zip(grads, [case["grads"], *case["more_grads"]], strict=True)):
        _check(g, spec, f"{case['name']} gradient of input {i}")


@pytest.mark.parametrize("err", DATA["errors"], ids=lambda e: f"{e['fn']}-{e['message'][:40]}")
def test_errors_match_pytorch(err: dict[str, Any]) -> None:
    xs = [rustgrad.ones(tuple(s), dtype=getattr(rustgrad, err["dtype"])) for s in err["shapes"]]
    extra = {}
    if err["samples"] is not None:
        shape, dtype = err["samples"]
        extra["_random_samples"] = rustgrad.full(tuple(shape), 0.5, dtype=getattr(rustgrad, dtype))
    with pytest.raises(Exception) as info:
        getattr(F, err["fn"])(*xs, **err["kwargs"], **extra)
    assert type(info.value).__name__ == err["type"], str(info.value)
    assert str(info.value) == err["message"]


def test_int64_avg_pool_truncates_as_pytorch() -> None:
    # PyTorch: avg_pool3d(arange(-20, 44).reshape(1, 4, 4, 4), 2, divisor_override=3)
    x = rustgrad.arange(-20, 44).reshape(1, 4, 4, 4)
    out = F.avg_pool3d(x, 2, divisor_override=3)
    assert out.dtype == rustgrad.int64
    assert out.flatten().tolist() == [-25, -20, -4, 1, 60, 65, 81, 86]


def _gradchecks(fn: Any, x: Any) -> None:
    assert rustgrad.autograd.gradcheck(fn, (x,))
    assert rustgrad.autograd.gradgradcheck(fn, (x,))


def test_gradcheck_float64() -> None:
    g = rustgrad.Generator().manual_seed(0)
    x = rustgrad.randn(1, 2, 4, 5, 4, dtype=rustgrad.float64, generator=g).requires_grad_()
    _gradchecks(lambda t: F.max_pool3d(t, 2, 1, 1, 2), x)
    _gradchecks(lambda t: F.avg_pool3d(t, 3, 2, 1, True, False), x)
    _gradchecks(lambda t: F.adaptive_avg_pool3d(t, (3, 2, 3)), x)
    _gradchecks(lambda t: F.adaptive_max_pool3d(t, (2, 3, 2)), x)
    _gradchecks(lambda t: F.lp_pool3d(t.abs() + 0.5, 2, 2), x)
    s = rustgrad.rand(1, 2, 3, dtype=rustgrad.float64, generator=g)
    _gradchecks(lambda t: F.fractional_max_pool3d(t, 2, (2, 3, 2), _random_samples=s), x)
    z = rustgrad.randn(1, 2, 7, 6, dtype=rustgrad.float64, generator=g).requires_grad_()
    for mode in ("bilinear", "bicubic"):
        _gradchecks(lambda t, m=mode: F.interpolate(t, (3, 8), mode=m, antialias=True), z)
    v = rustgrad.randn(1, 2, 2, 3, 3, dtype=rustgrad.float64, generator=g).requires_grad_()
    grid = rustgrad.rand(1, 2, 2, 2, 3, dtype=rustgrad.float64, generator=g) * 2.2 - 1.1
    grid.requires_grad_()
    for pad in ("zeros", "border", "reflection"):
        fn = lambda t, q, p=pad: F.grid_sample(t, q, padding_mode=p, align_corners=False)  # noqa: E731
        assert rustgrad.autograd.gradcheck(fn, (v, grid))
        assert rustgrad.autograd.gradgradcheck(fn, (v, grid))
    y = rustgrad.randn(2, 3, 9, dtype=rustgrad.float64, generator=g).requires_grad_()
    _gradchecks(lambda t: F.adaptive_max_pool1d(t, 4), y)
    _gradchecks(lambda t: F.lp_pool1d(t.abs() + 0.5, 3, 2), y)


def test_double_backward_names() -> None:
    x = rustgrad.randn(1, 2, 4, 4, 4, requires_grad=True)
    for fn, name in [
        (lambda t: F.max_pool3d(t, 2), "MaxPool3DWithIndicesBackwardBackward0"),
        (lambda t: F.adaptive_max_pool3d(t, 2), "AdaptiveMaxPool3DBackwardBackward0"),
        (lambda t: F.avg_pool3d(t, 2), "AvgPool3DBackwardBackward0"),
        (lambda t: F.adaptive_avg_pool3d(t, 2), "AdaptiveAvgPool3DBackwardBackward0"),
    ]:
        (g,) = rustgrad.autograd.grad((fn(x) ** 2).sum(), x, create_graph=True)
        assert type(g.grad_fn).__name__ == name


def test_fractional_default_samples_are_random_and_valid() -> None:
    x = rustgrad.randn(2, 3, 9, 9)
    v, i = F.fractional_max_pool2d(x, 2, output_ratio=0.5, return_indices=True)
    assert v.shape == (2, 3, 4, 4)
    flat = x.flatten(2)
    assert rustgrad.equal(flat.gather(2, i.flatten(2)), v.flatten(2))


MODULES = [
    (nn.MaxPool3d(2), "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"),
    (nn.AvgPool3d(2), "AvgPool3d(kernel_size=2, stride=2, padding=0)"),
    (nn.AdaptiveAvgPool3d(2), "AdaptiveAvgPool3d(output_size=2)"),
    (nn.AdaptiveMaxPool3d((2, None, 3)), "AdaptiveMaxPool3d(output_size=(2, None, 3))"),
    (nn.AdaptiveMaxPool1d(2), "AdaptiveMaxPool1d(output_size=2)"),
    (nn.LPPool1d(2, 3), "LPPool1d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (nn.LPPool2d(2, 3), "LPPool2d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (nn.LPPool3d(2, 3), "LPPool3d(norm_type=2, kernel_size=3, stride=None, ceil_mode=False)"),
    (nn.MaxUnpool1d(2), "MaxUnpool1d(kernel_size=(2,), stride=(2,), padding=(0,))"),
    (nn.MaxUnpool2d(2), "MaxUnpool2d(kernel_size=(2, 2), stride=(2, 2), padding=(0, 0))"),
    (nn.MaxUnpool3d(2), "MaxUnpool3d(kernel_size=(2, 2, 2), stride=(2, 2, 2), padding=(0, 0, 0))"),
    (nn.FractionalMaxPool2d(2, output_size=3), "FractionalMaxPool2d()"),
    (nn.FractionalMaxPool3d(2, output_ratio=0.5), "FractionalMaxPool3d()"),
]


@pytest.mark.parametrize("module,text", MODULES, ids=lambda m: type(m).__name__)
def test_module_repr_and_state(module: Any, text: str) -> None:
    # PyTorch 2.15's reprs; pooling layers have no parameters and no saved state.
    assert repr(module) == text
    assert list(module.state_dict()) == []


def test_modules_forward_like_functionals() -> None:
    x = rustgrad.randn(2, 3, 6, 6, 6)
    assert rustgrad.equal(nn.MaxPool3d(2, 1, 1)(x), F.max_pool3d(x, 2, 1, 1))
    assert rustgrad.equal(
        nn.AvgPool3d(3, 2, 1, divisor_override=5)(x), F.avg_pool3d(x, 3, 2, 1, divisor_override=5)
    )
    v, i = nn.MaxPool3d(2, return_indices=True)(x)
    assert rustgrad.equal(nn.MaxUnpool3d(2)(v, i), F.max_unpool3d(v, i, 2))
    assert rustgrad.equal(nn.LPPool3d(2, 2)(x.abs()), F.lp_pool3d(x.abs(), 2, 2))
    s = rustgrad.rand(2, 3, 2)
    m = nn.FractionalMaxPool2d(2, output_size=3, _random_samples=s)
    assert list(m.state_dict()) == ["_random_samples"]
    assert rustgrad.equal(
        m(x[:, :, 0]), F.fractional_max_pool2d(x[:, :, 0], 2, 3, _random_samples=s)
    )
    with pytest.raises(ValueError, match="requires specifying either an output size"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool3d(2, output_ratio=1.5)
    with pytest.raises(ValueError, match="norm_type must be a non-zero value"):
        nn.LPPool2d(0, 2)


DETERMINISM = """
import rustgrad, rustgrad.nn.functional as F
g = rustgrad.Generator().manual_seed(1)
x = rustgrad.randn(4, 16, 12, 20, 20, generator=g).requires_grad_()
outs = [F.max_pool3d(x, 3, 2, 1), F.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
        F.adaptive_avg_pool3d(x, (5, 7, 3)), F.adaptive_max_pool3d(x, 4),
        F.avg_pool2d(x[:, :, 0], 3, 1, 1), F.max_pool2d(x[:, :, 1], 2)]
total = sum((o * rustgrad.arange(o.numel()).reshape(o.shape).sin()).sum() for o in outs)
(gx,) = rustgrad.autograd.grad(total, x)
import hashlib
h = hashlib.sha256()
for t in outs + [gx]:
    h.update(t.detach().numpy().tobytes())
print(h.hexdigest())
"""


def test_pooling_bitwise_same_for_any_thread_count() -> None:
    # Large enough that every pool splits over the engine's pool (above
    # POOL_PARALLEL_MIN_WORK), so 1 and 3 threads take different schedules.
    digests = set()
    for threads in ("1", "3"):
        env = dict(os.environ, RUSTGRAD_NUM_THREADS=threads)
        run = subprocess.run(
            [sys.executable, "-c", DETERMINISM], env=env, capture_output=True, text=True, check=True
        )
        digests.add(run.stdout.strip())
    assert len(digests) == 1
