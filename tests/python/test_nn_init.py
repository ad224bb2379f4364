"""``rustgrad.nn.init``: for a fixed seed, each initialiser equals PyTorch's result
(tests/vectors/nn_layers.json, "inits": rustgrad's generator reproduces PyTorch's
stream), and independently of PyTorch its samples respect the bounds and have the
mean and standard deviation that theory gives; calculate_gain, orthogonality and the
exact fills (eye, dirac) are checked against numpy."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
from rustgrad import nn
from rustgrad.nn import init

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_layers.json").read_text()
)
N_ROWS, N_COLS = 200, 300  # 60 000 samples for the moment checks


@pytest.mark.parametrize("name", sorted(VECTORS["inits"]))
def test_initialisers_reproduce_pytorch_for_seed_0(name: str) -> None:
    case = VECTORS["inits"][name]
    spec = case["result"]
    rustgrad.manual_seed(0)
    t = rustgrad.empty(*spec["shape"])
    out = getattr(init, case["fn"])(t, **case["kwargs"])
    assert out is t
    want = np.array(spec["data"], dtype=np.float32).reshape(spec["shape"])
    if case["fn"] == "orthogonal_":
        # rustgrad's QR runs in numpy (LAPACK in float64), PyTorch's in float32.
        np.testing.assert_allclose(t.numpy(), want, rtol=1e-5, atol=1e-5)
    else:
        np.testing.assert_array_equal(t.numpy(), want)


@pytest.mark.parametrize(("nonlinearity", "param", "gain"), VECTORS["gains"])
def test_calculate_gain_matches_pytorch(nonlinearity: str, param: Any, gain: float) -> None:
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(gain, rel=1e-15)


def test_calculate_gain_formulas_and_errors() -> None:
    assert init.calculate_gain("relu") == math.sqrt(2.0)
    assert init.calculate_gain("tanh") == 5.0 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2.0 / 1.04)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def sample(
    fn: Any, *args: Any, shape: tuple[int, ...] = (N_ROWS, N_COLS), **kwargs: Any
) -> np.ndarray:
    rustgrad.manual_seed(1234)
    t = rustgrad.empty(*shape)
    fn(t, *args, **kwargs)
    return t.numpy().astype(np.float64)


def check_moments(values: np.ndarray, mean: float, std: float) -> None:
    n = values.size
    assert abs(values.mean() - mean) < 5 * std / math.sqrt(n)
    assert values.std() == pytest.approx(std, rel=0.03)


def test_uniform_and_normal_bounds_and_moments() -> None:
    u = sample(init.uniform_, -2.0, 3.0)
    assert u.min() >= -2.0 and u.max() < 3.0
    check_moments(u, 0.5, 5.0 / math.sqrt(12))
    check_moments(sample(init.normal_, 1.0, 0.5), 1.0, 0.5)


def test_kaiming_and_xavier_bounds_and_moments() -> None:
    fan_in, fan_out = N_COLS, N_ROWS
    gain = math.sqrt(2.0 / (1 + 5.0))  # leaky_relu with a = sqrt(5): Linear's default
    bound = gain * math.sqrt(3.0 / fan_in)
    k = sample(init.kaiming_uniform_, a=math.sqrt(5))
    assert np.abs(k).max() <= bound
    check_moments(k, 0.0, bound / math.sqrt(3))
    check_moments(
        sample(init.kaiming_normal_, mode="fan_out", nonlinearity="relu"),
        0.0,
        math.sqrt(2.0) / math.sqrt(fan_out),
    )
    xb = math.sqrt(6.0 / (fan_in + fan_out))
    x = sample(init.xavier_uniform_)
    assert np.abs(x).max() <= xb
    check_moments(x, 0.0, xb / math.sqrt(3))
    check_moments(
        sample(init.xavier_normal_, gain=3.0), 0.0, 3.0 * math.sqrt(2.0 / (fan_in + fan_out))
    )


def test_trunc_normal_bounds_and_theoretical_moments() -> None:
    mean, std, a, b = 0.5, 2.0, -1.0, 2.0
    values = sample(init.trunc_normal_, mean, std, a, b)
    assert values.min() >= a and values.max() <= b
    alpha, beta = (a - mean) / std, (b - mean) / std

    def pdf(x: float) -> float:
        return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)

    def cdf(x: float) -> float:
        return (1 + math.erf(x / math.sqrt(2))) / 2

    z = cdf(beta) - cdf(alpha)
    t_mean = mean + std * (pdf(alpha) - pdf(beta)) / z
    t_var = std**2 * (
        1 + (alpha * pdf(alpha) - beta * pdf(beta)) / z - ((pdf(alpha) - pdf(beta)) / z) ** 2
    )
    check_moments(values, t_mean, math.sqrt(t_var))


def test_layer_default_initialisation_bounds_and_moments() -> None:
    rustgrad.manual_seed(7)
    lin = nn.Linear(400, 120)
    bound = 1 / math.sqrt(400)
    w = lin.weight.detach().numpy().astype(np.float64)
    assert np.abs(w).max() <= bound and np.abs(lin.bias.detach().numpy()).max() <= bound
    check_moments(w, 0.0, bound / math.sqrt(3))
    conv = nn.Conv2d(16, 32, 3)
    cb = 1 / math.sqrt(16 * 9)
    cw = conv.weight.detach().numpy().astype(np.float64)
    assert np.abs(cw).max() <= cb
    check_moments(cw, 0.0, cb / math.sqrt(3))
    emb = nn.Embedding(300, 200, padding_idx=3)
    e = emb.weight.detach().numpy().astype(np.float64)
    assert (e[3] == 0).all()
    check_moments(np.delete(e, 3, axis=0), 0.0, 1.0)


def test_orthogonal_gives_orthonormal_rows_or_columns() -> None:
    tall = sample(init.orthogonal_, shape=(8, 5))
    np.testing.assert_allclose(tall.T @ tall, np.eye(5), atol=1e-5)
    wide = sample(init.orthogonal_, 2.0, shape=(3, 2, 4))
    flat = wide.reshape(3, 8)
    np.testing.assert_allclose(flat @ flat.T, 4.0 * np.eye(3), atol=1e-5)


def test_eye_dirac_and_constants_are_exact() -> None:
    np.testing.assert_array_equal(sample(init.eye_, shape=(3, 5)), np.eye(3, 5))
    d = sample(init.dirac_, shape=(4, 2, 3, 3))
    want = np.zeros((4, 2, 3, 3))
    want[0, 0, 1, 1] = want[1, 1, 1, 1] = 1
    np.testing.assert_array_equal(d, want)
    # A dirac kernel makes the convolution the identity on the matching channels.
    w = rustgrad.empty(3, 3, 3)
    init.dirac_(w)
    x = rustgrad.randn(1, 3, 7)
    np.testing.assert_array_equal(rustgrad.nn.functional.conv1d(x, w, padding=1).numpy(), x.numpy())
    np.testing.assert_array_equal(sample(init.constant_, 0.25, shape=(2, 2)), np.full((2, 2), 0.25))
    np.testing.assert_array_equal(sample(init.ones_, shape=(2,)), np.ones(2))
    np.testing.assert_array_equal(sample(init.zeros_, shape=(2,)), np.zeros(2))


def test_initialisers_do_not_record_history_and_reject_bad_shapes() -> None:
    p = nn.Parameter(rustgrad.empty(3, 4))
    init.kaiming_uniform_(p)
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(rustgrad.empty(5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(rustgrad.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_normal_(rustgrad.empty(2, 2), mode="fan_avg")
