"""Elementwise math ops, activations and binary math functions (ops/unary.rs,
ops/binary.rs): gradcheck and gradgradcheck in float64, values against numpy over random
shapes and broadcasts, dtype rules, function / method / in-place forms.

Forward values and gradients against PyTorch itself are in tests/vectors
(elementwise_ops.json); expected values here come from numpy, math and finite
differences.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad import _elementwise as F
from rustgrad.autograd import gradcheck, gradgradcheck

D = torch.float64

# op -> (input range, numpy reference)
UNARY: dict[str, tuple[tuple[float, float], Callable[[np.ndarray], np.ndarray]]] = {
    "rsqrt": ((0.2, 3.0), lambda x: 1 / np.sqrt(x)),
    "exp2": ((-3.0, 3.0), np.exp2),
    "expm1": ((-3.0, 3.0), np.expm1),
    "log1p": ((-0.8, 3.0), np.log1p),
    "log2": ((0.2, 3.0), np.log2),
    "log10": ((0.2, 3.0), np.log10),
    "sin": ((-3.0, 3.0), np.sin),
    "cos": ((-3.0, 3.0), np.cos),
    "tan": ((-1.3, 1.3), np.tan),
    "asin": ((-0.9, 0.9), np.arcsin),
    "acos": ((-0.9, 0.9), np.arccos),
    "atan": ((-3.0, 3.0), np.arctan),
    "sinh": ((-3.0, 3.0), np.sinh),
    "cosh": ((-3.0, 3.0), np.cosh),
    "reciprocal": ((0.3, 3.0), np.reciprocal),
    "square": ((-3.0, 3.0), np.square),
    "erf": ((-2.5, 2.5), np.vectorize(math.erf)),
    "erfinv": ((-0.95, 0.95), None),  # checked as the inverse of erf
    "floor": ((-5.0, 5.0), np.floor),
    "ceil": ((-5.0, 5.0), np.ceil),
    "round": ((-5.0, 5.0), np.round),  # numpy rounds half to even too
    "trunc": ((-5.0, 5.0), np.trunc),
    "frac": ((-5.0, 5.0), lambda x: x - np.trunc(x)),
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    return np.where(x * beta > threshold, x, np.log1p(np.exp(x * beta)) / beta)


_erf = np.vectorize(math.erf)
_SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946)

# name -> (call, numpy reference); kinks are avoided by the inputs of each test.
ACTIVATIONS: dict[str, tuple[Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = {
    "logsigmoid": (F.logsigmoid, lambda x: np.log(_sigmoid(x))),
    "relu6": (F.relu6, lambda x: np.clip(x, 0, 6)),
    "leaky_relu": (F.leaky_relu, lambda x: np.where(x > 0, x, 0.01 * x)),
    "leaky_relu_0.2": (
        lambda t: F.leaky_relu(t, 0.2),
        lambda x: np.where(x > 0, x, 0.2 * x),
    ),
    "elu_1.5": (lambda t: F.elu(t, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x))),
    "selu": (
        torch.selu,
        lambda x: _SELU[1] * np.where(x > 0, x, _SELU[0] * np.expm1(x)),
    ),
    "celu_0.7": (
        lambda t: torch.celu(t, 0.7),
        lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7)),
    ),
    "gelu": (F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "gelu_tanh": (
        lambda t: F.gelu(t, approximate="tanh"),
        lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    ),
    "silu": (F.silu, lambda x: x * _sigmoid(x)),
    "mish": (F.mish, lambda x: x * np.tanh(_softplus(x))),
    "softplus": (F.softplus, _softplus),
    "softplus_2_1": (
        lambda t: F.softplus(t, beta=2.0, threshold=1.0),
        lambda x: _softplus(x, 2.0, 1.0),
    ),
    "softsign": (F.softsign, lambda x: x / (1 + np.abs(x))),
    "hardtanh": (F.hardtanh, lambda x: np.clip(x, -1, 1)),
    "hardtanh_-2_3": (lambda t: F.hardtanh(t, -2.0, 3.0), lambda x: np.clip(x, -2, 3)),
    "hardsigmoid": (F.hardsigmoid, lambda x: np.clip(x + 3, 0, 6) / 6),
    "hardswish": (F.hardswish, lambda x: x * np.clip(x + 3, 0, 6) / 6),
}
# Points where an activation has a kink (its gradient there is a convention).
KINKS = [-3.0, -2.0, -1.0, 0.0, 1.0, 3.0, 6.0]

BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "atan2": np.arctan2,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "fmod": np.fmod,
    "remainder": np.remainder,
    "copysign": np.copysign,
    "hypot": np.hypot,
    "logaddexp": np.logaddexp,
    "logaddexp2": np.logaddexp2,
}


def _leaf(values: np.ndarray) -> Any:
    return torch.tensor(values.tolist(), dtype=D).requires_grad_()


def _uniform(rng: np.random.Generator, shape: tuple[int, ...], lo: float, hi: float) -> Any:
    return np.round(rng.uniform(lo, hi, shape), 4)


def _away_from_kinks(values: np.ndarray) -> np.ndarray:
    for k in KINKS:
        near = np.abs(values - k) < 0.05
        values = np.where(near, values + 0.1, values)
    return values


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_unary_gradcheck_and_gradgradcheck(name: str, layout: str) -> None:
    (lo, hi), _ = UNARY[name]
    rng = np.random.default_rng(len(name))
    x = _leaf(_uniform(rng, (4, 3), lo, hi))
    fn = getattr(torch, name)
    f = (lambda t: fn(t.t())) if layout == "transposed" else fn
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_gradcheck_and_gradgradcheck(name: str) -> None:
    call, _ = ACTIVATIONS[name]
    rng = np.random.default_rng(len(name))
    x = _leaf(_away_from_kinks(_uniform(rng, (3, 5), -7.0, 8.0)))
    assert gradcheck(call, (x,))
    assert gradgradcheck(call, (x,))
    # A non-contiguous input: every other column.
    assert gradcheck(lambda t: call(t[:, ::2]), (x,))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_gradcheck_and_gradgradcheck(name: str) -> None:
    rng = np.random.default_rng(len(name))
    a = _uniform(rng, (3, 4), -3.0, 3.0)
    b = _uniform(rng, (4,), 0.4, 2.0) * rng.choice([-1.0, 1.0], 4)
    if name in ("fmod", "remainder"):
        # Keep a / b away from integers, where the result jumps.
        q = a / b
        a = np.where(np.abs(q - np.round(q)) < 0.05, a + 0.2 * np.abs(b), a)
    if name in ("maximum", "minimum", "fmax", "fmin"):
        a = np.where(np.abs(a - b) < 0.05, a + 0.2, a)
    x, y = _leaf(a), _leaf(b)
    fn = getattr(torch, name)
    assert gradcheck(fn, (x, y))
    assert gradgradcheck(fn, (x, y))
    assert gradcheck(lambda s, t: fn(s.t(), t[:3]), (x, y))


@pytest.mark.parametrize("name", ["fmod", "remainder", "copysign"])
def test_scalar_other_gradcheck(name: str) -> None:
    x = _leaf(np.array([[0.3, -1.7, 2.2], [-0.4, 1.1, -2.6]]))
    assert gradcheck(lambda t: getattr(torch, name)(t, -0.75), (x,))
    assert gradgradcheck(lambda t: getattr(torch, name)(t, -0.75), (x,))


def test_round_trunc_floor_ceil_have_zero_gradient_and_frac_passes_it() -> None:
    x = torch.tensor([0.5, -1.5, 2.7], dtype=D, requires_grad=True)
    for name in ["floor", "ceil", "round", "trunc"]:
        x.grad = None
        getattr(x, name)().backward(torch.tensor([1.0, float("inf"), -2.0], dtype=D))
        # Zero, not grad * 0 (inf * 0 would be NaN): Note [Zero gradients].
        assert x.grad.tolist() == [0.0, 0.0, 0.0]
    x.grad = None
    x.frac().backward(torch.tensor([1.0, 2.0, 3.0], dtype=D))
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


def test_ties_split_the_gradient_of_maximum_and_fmax() -> None:
    nan = float("nan")
    for name, want_a, want_b in [
        ("maximum", [0.5, 1.0, 0.0, 1.0, 1.0], [0.5, 0.0, 1.0, 1.0, 1.0]),
        ("fmax", [0.5, 1.0, 0.0, 0.0, 1.0], [0.5, 0.0, 1.0, 1.0, 0.0]),
        ("fmin", [0.5, 0.0, 1.0, 0.0, 1.0], [0.5, 1.0, 0.0, 1.0, 0.0]),
    ]:
        a = torch.tensor([1.0, 2.0, 3.0, nan, 1.0], requires_grad=True)
        b = torch.tensor([1.0, 1.0, 4.0, 1.0, nan], requires_grad=True)
        getattr(torch, name)(a, b).sum().backward()
        assert a.grad.tolist() == want_a, name
        assert b.grad.tolist() == want_b, name


# ------------------------------------------------------------------ values vs numpy

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(UNARY)))
def test_unary_matches_numpy(shape: list[int], seed: int, name: str) -> None:
    (lo, hi), ref = UNARY[name]
    values = np.asarray(np.random.default_rng(seed).uniform(lo, hi, shape))
    x = torch.tensor(values, dtype=D)
    got = getattr(x, name)().numpy()
    if name == "erfinv":
        np.testing.assert_allclose(np.vectorize(math.erf)(got), values, rtol=1e-12, atol=1e-14)
    else:
        np.testing.assert_allclose(got, ref(values), rtol=1e-12, atol=1e-14)
    # float32 agrees with the float64 result rounded to float32, within a few ulps.
    got32 = getattr(torch.tensor(values, dtype=torch.float32), name)().numpy()
    np.testing.assert_allclose(got32, got.astype(np.float32), rtol=3e-6, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(ACTIVATIONS)))
def test_activation_matches_numpy(shape: list[int], seed: int, name: str) -> None:
    call, ref = ACTIVATIONS[name]
    values = np.asarray(np.random.default_rng(seed).uniform(-8.0, 8.0, shape))
    got = call(torch.tensor(values, dtype=D)).numpy()
    np.testing.assert_allclose(got, ref(values), rtol=1e-12, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(
    shapes=st.sampled_from([((3, 4), (4,)), ((2, 1, 4), (3, 1)), ((), (5,)), ((2, 3), (2, 3))]),
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(sorted(BINARY)),
    swap=st.booleans(),
)
def test_binary_matches_numpy_with_broadcasting(
    shapes: tuple[tuple[int, ...], tuple[int, ...]], seed: int, name: str, swap: bool
) -> None:
    sa, sb = shapes[::-1] if swap else shapes
    rng = np.random.default_rng(seed)
    a = rng.choice([-2.0, -1.0, 0.0, 1.0, 2.5], sa) + rng.uniform(-1, 1, sa).round(1)
    b = rng.choice([-2.0, -1.0, 1.0, 2.5], sb) + rng.uniform(-0.3, 0.3, sb).round(1)
    a, b = np.asarray(a), np.where(b == 0, 1.0, b)
    got = getattr(torch, name)(torch.tensor(a, dtype=D), torch.tensor(b, dtype=D))
    np.testing.assert_allclose(got.numpy(), BINARY[name](a, b), rtol=1e-12, atol=1e-14)


def test_nan_rules_of_maximum_fmax_and_friends() -> None:
    nan = float("nan")
    a = torch.tensor([1.0, nan, nan, -0.0])
    b = torch.tensor([nan, 2.0, nan, 0.0])
    for name, ref in BINARY.items():
        if name == "atan2":
            continue
        with np.errstate(invalid="ignore"):
            want = ref(a.numpy(), b.numpy())
        np.testing.assert_array_equal(getattr(torch, name)(a, b).numpy(), want)


def test_special_values() -> None:
    inf = float("inf")
    assert torch.erfinv(torch.tensor([1.0, -1.0, 1.5])).tolist()[:2] == [inf, -inf]
    assert math.isnan(torch.erfinv(torch.tensor([1.5])).item())
    assert F.logsigmoid(torch.tensor([-1000.0, 1000.0])).tolist() == [-1000.0, 0.0]
    assert F.softplus(torch.tensor([1000.0])).tolist() == [1000.0]
    assert torch.round(torch.tensor([0.5, 1.5, 2.5, -0.5])).tolist() == [0.0, 2.0, 2.0, -0.0]
    assert torch.round(torch.tensor([1.2345, 15.0], dtype=D), decimals=2).tolist() == [1.23, 15.0]
    assert torch.round(torch.tensor([15.0, 149.0], dtype=D), decimals=-1).tolist() == [20.0, 150.0]
    assert torch.reciprocal(torch.tensor([0.0, -0.0])).tolist() == [inf, -inf]


# ------------------------------------------------------------------ dtypes and forms


@pytest.mark.parametrize("name", sorted(set(UNARY) - {"floor", "ceil", "round", "trunc", "frac"}))
def test_floating_functions_of_integers_give_the_default_float(name: str) -> None:
    ints = torch.tensor([1, 2, 3])
    if name == "square":
        assert ints.square().dtype == torch.int64
        assert ints.square().tolist() == [1, 4, 9]
        assert torch.tensor([True]).square().dtype == torch.int64
        return
    assert getattr(ints, name)().dtype == torch.float32
    assert getattr(torch.tensor([True, False]), name)().dtype == torch.float32
    torch.set_default_dtype(torch.float64)
    try:
        assert getattr(ints, name)().dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


def test_rounding_functions_keep_integers() -> None:
    ints = torch.tensor([-3, 0, 7])
    for name in ["floor", "ceil", "round", "trunc"]:
        out = getattr(torch, name)(ints)
        assert out.dtype == torch.int64 and out.tolist() == [-3, 0, 7]
    assert F.relu6(torch.tensor([-1, 3, 8])).tolist() == [0, 3, 6]
    assert F.hardtanh(torch.tensor([-5, 0, 5]), -1.5, 2.7).tolist() == [-1, 0, 2]
    assert F.softsign(torch.tensor([1, -3])).tolist() == [0.5, -0.75]


def test_binary_dtypes() -> None:
    i = torch.tensor([5, -3])
    assert torch.atan2(i, torch.tensor([2, 2])).dtype == torch.float32
    assert torch.maximum(i, torch.tensor([2, 2])).tolist() == [5, 2]
    assert torch.maximum(torch.tensor([True, False]), torch.tensor([False, False])).dtype == (
        torch.bool
    )
    assert torch.fmod(i, torch.tensor([2, 2])).tolist() == [1, -1]
    assert torch.remainder(i, torch.tensor([2, 2])).tolist() == [1, 1]
    assert (i % 2).tolist() == [1, 1]
    assert (7 % torch.tensor([3, -3])).tolist() == [1, -2]
    assert torch.fmod(i, 2.5).dtype == torch.float32
    assert torch.copysign(i, -1).tolist() == [-5.0, -3.0]
    f32, f64 = torch.ones(2), torch.ones(2, dtype=D)
    assert torch.atan2(f32, f64).dtype == torch.float64
    assert torch.atan2(f32, torch.tensor(2.0, dtype=D)).dtype == torch.float32


def test_grad_fn_names() -> None:
    x = torch.tensor([0.5, -0.3], dtype=D, requires_grad=True)
    names = {
        "RsqrtBackward0": x.abs().rsqrt(),
        "Log1PBackward0": x.log1p(),
        "PowBackward0": x.square(),
        "RoundBackward0": x.round(),
        "RoundBackward1": x.round(decimals=1),
        "EluBackward0": torch.selu(x),
        "CeluBackward0": torch.celu(x),
        "HardtanhBackward0": F.relu6(x),
        "DivBackward0": F.softsign(x),
        "GeluBackward0": F.gelu(x, approximate="tanh"),
        "Atan2Backward0": torch.atan2(x, x),
        "FmodBackward0": torch.fmod(x, 2),
        "FmodBackward1": torch.fmod(x, x),
        "RemainderBackward0": x % 2,
        "RemainderBackward1": x % x,
        "CopysignBackward0": torch.copysign(x, x),
        "CopysignBackward1": torch.copysign(x, -1.0),
        "MaximumBackward0": torch.maximum(x, x),
        "FminBackward0": torch.fmin(x, x),
    }
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name


def test_function_method_and_in_place_forms_agree() -> None:
    values = [[0.2, -0.4, 0.6], [0.9, -0.1, 0.3]]
    for name in ["sin", "erf", "erfinv", "expm1", "floor", "frac", "reciprocal", "square"]:
        x = torch.tensor(values, dtype=D)
        expected = getattr(torch, name)(x).tolist()
        assert getattr(x, name)().tolist() == expected
        y = x.clone()
        assert getattr(y, name + "_")() is y
        assert y.tolist() == expected
        assert y._version == 1
    for alias, name in [("arcsin", "asin"), ("arctan2", "atan2"), ("fix", "trunc")]:
        x = torch.tensor(values, dtype=D)
        args = (x,) if name == "atan2" else ()
        assert getattr(x, alias)(*args).tolist() == getattr(x, name)(*args).tolist()
    x = torch.tensor(values, dtype=D)
    y = x.clone()
    y %= 0.25
    assert y.tolist() == (x % 0.25).tolist()
    for call in [F.elu_, F.leaky_relu_, torch.selu_, torch.celu_, F.hardtanh_]:
        y = x.clone()
        assert call(y) is y
    y = x.clone()
    assert F.silu(y, inplace=True) is y and y.tolist() == F.silu(x).tolist()


def test_in_place_records_through_the_old_history() -> None:
    w = torch.tensor([0.3, -0.7], dtype=D, requires_grad=True)
    y = w * 2
    y.sin_()
    assert type(y.grad_fn).__name__ == "SinBackward0"
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.cos(2 * np.array([0.3, -0.7])))


def test_integer_outputs_never_require_grad() -> None:
    x = torch.tensor([1.5, -2.5], requires_grad=True)
    assert torch.floor(x).requires_grad
    assert not torch.floor(torch.tensor([1, 2])).requires_grad


def test_number_to_the_power_of_a_tensor() -> None:
    t = torch.tensor([1.0, 2.0, -0.5], dtype=D, requires_grad=True)
    y = 2**t
    assert type(y.grad_fn).__name__ == "PowBackward2"
    np.testing.assert_allclose(y.detach().numpy(), [2.0, 4.0, 2**-0.5])
    y.sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), y.detach().numpy() * math.log(2.0))
    assert gradcheck(lambda e: 1.5**e, (t,))
    assert gradgradcheck(lambda e: 1.5**e, (t,))
    assert torch.pow(3, t).tolist() == (3**t).tolist()
    assert (2 ** torch.tensor([1, 3])).tolist() == [2, 8]
    assert (2.5 ** torch.tensor([1, 2])).dtype == torch.float32
    # A zero base: the gradient is 0 where the exponent is >= 0 (not 0 * -inf).
    e = torch.tensor([0.0, 2.0], dtype=D, requires_grad=True)
    (0.0**e).sum().backward()
    assert e.grad.tolist() == [0.0, 0.0]


# ------------------------------------------------------------------ three operands
# lerp, addcmul, addcdiv, clamp/clip with tensor bounds, where(cond, x, y)
# (ops/ternary.rs). Expected values: numpy and the closed forms of the gradients.


def _lerp_np(a: np.ndarray, b: np.ndarray, w: Any) -> np.ndarray:
    return a + w * (b - a)


TERNARY: dict[str, tuple[Callable[..., Any], Callable[..., np.ndarray]]] = {
    "lerp_scalar": (lambda a, b, c: torch.lerp(a, b, 0.3), lambda a, b, c: _lerp_np(a, b, 0.3)),
    "lerp": (torch.lerp, _lerp_np),
    "addcmul": (
        lambda a, b, c: torch.addcmul(a, b, c, value=-1.5),
        lambda a, b, c: a - 1.5 * b * c,
    ),
    "addcdiv": (
        lambda a, b, c: torch.addcdiv(a, b, c, value=0.5),
        lambda a, b, c: a + 0.5 * b / c,
    ),
    "clamp": (torch.clamp, lambda a, b, c: np.minimum(np.maximum(a, b), c)),
    "clip": (torch.clip, lambda a, b, c: np.minimum(np.maximum(a, b), c)),
    "where": (
        lambda a, b, c: torch.where(a > 0, b, c),
        lambda a, b, c: np.where(a > 0, b, c),
    ),
}


def _ternary_inputs(name: str, rng: np.random.Generator, shapes: list[Any]) -> list[np.ndarray]:
    a, b, c = (_uniform(rng, tuple(s), -3.0, 3.0) for s in shapes)
    if name == "addcdiv":
        c = np.where(np.abs(c) < 0.3, 0.5, c)
    if name in ("clamp", "clip"):
        # Bounds below / above, every x at least 0.05 away from both (no ties).
        b = b - 3.5
        c = c + 3.5
        a = np.where(np.abs(a - b) < 0.05, a + 0.1, a)
        a = np.where(np.abs(a - c) < 0.05, a - 0.1, a)
    return [a, b, c]


@pytest.mark.parametrize("name", sorted(TERNARY))
def test_ternary_gradcheck_and_gradgradcheck(name: str) -> None:
    call, _ = TERNARY[name]
    rng = np.random.default_rng(len(name) + 7)
    a, b, c = (_leaf(v) for v in _ternary_inputs(name, rng, [(3, 4), (4,), (3, 1)]))
    if name == "where":
        a.requires_grad_(False)
    assert gradcheck(call, (a, b, c))
    assert gradgradcheck(call, (a, b, c))
    # Non-contiguous operands: a transposed x and a column-strided third operand.
    a2, b2, c2 = _ternary_inputs(name, rng, [(3, 4), (4,), (3, 1)])
    x, u, v = _leaf(a2.T.copy()), _leaf(b2), _leaf(np.concatenate([c2, c2 + 1.0], axis=1))
    if name == "where":
        x.requires_grad_(False)
    assert gradcheck(lambda t, p, q: call(t.t(), p, q[:, ::2]), (x, u, v))


def test_clamp_with_bounds_that_cross_the_input_gradchecks() -> None:
    # Bounds that sit inside the range of x (some elements below, inside, above).
    rng = np.random.default_rng(3)
    x = _leaf(np.array([-2.0, -0.7, 0.1, 0.6, 2.2, 3.1]))
    lo = _leaf(np.array([-1.0, -1.0, -0.5, 0.0, 0.5, 4.0]))
    hi = _leaf(np.array([1.0, 1.0, 1.5, 0.3, 2.0, 3.5]))  # last: min > max
    assert gradcheck(torch.clamp, (x, lo, hi))
    assert gradgradcheck(torch.clamp, (x, lo, hi))
    assert gradcheck(lambda t, m: t.clamp(min=m), (x, lo))
    assert gradcheck(lambda t, m: t.clip(max=m), (x, hi))
    del rng


def test_clamp_tensor_gradient_rules() -> None:
    nan = float("nan")
    x = torch.tensor([0.0, 1.0, 2.0, 3.0, nan, 1.5], dtype=D, requires_grad=True)
    lo = torch.tensor([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], dtype=D, requires_grad=True)
    hi = torch.tensor([2.0, 2.0, 2.0, 2.0, 2.0, 2.0], dtype=D, requires_grad=True)
    torch.clamp(x, lo, hi).sum().backward()
    # Inside: x; below: min; above: max; at a bound (min < max): split; NaN x: x.
    assert x.grad.tolist() == [0.0, 0.5, 0.5, 0.0, 1.0, 1.0]
    assert lo.grad.tolist() == [1.0, 0.5, 0.0, 0.0, 0.0, 0.0]
    assert hi.grad.tolist() == [0.0, 0.0, 0.5, 1.0, 0.0, 0.0]
    # min > max: the result is max, which takes the whole gradient.
    x2 = torch.tensor([0.0, 1.5, 3.0], dtype=D, requires_grad=True)
    lo2 = torch.full((3,), 2.0, dtype=D, requires_grad=True)
    hi2 = torch.full((3,), 1.0, dtype=D, requires_grad=True)
    y = torch.clamp(x2, lo2, hi2)
    assert y.tolist() == [1.0, 1.0, 1.0]
    y.sum().backward()
    assert x2.grad.tolist() == [0.0, 0.0, 0.0]
    assert lo2.grad.tolist() == [0.0, 0.0, 0.0]
    assert hi2.grad.tolist() == [1.0, 1.0, 1.0]
    # One bound: maximum's rule (ties split, NaN to both), summed over broadcasting.
    x3 = torch.tensor([0.0, 1.0, 2.0, nan], dtype=D, requires_grad=True)
    m3 = torch.tensor(1.0, dtype=D, requires_grad=True)
    torch.clamp(x3, min=m3).sum().backward()
    assert x3.grad.tolist() == [0.0, 0.5, 1.0, 1.0]
    assert m3.grad.item() == 2.5


@settings(max_examples=25, deadline=None)
@given(
    shape=shapes,
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(sorted(TERNARY)),
    drop=st.lists(st.integers(0, 2), max_size=3),
)
def test_ternary_matches_numpy_with_broadcasting(
    shape: list[int], seed: int, name: str, drop: list[int]
) -> None:
    rng = np.random.default_rng(seed)
    # Each operand drops some leading dims or has 1s where the output has sizes.
    operand_shapes = []
    for i in range(3):
        s = list(shape)[min(drop.count(i), len(shape)) :]
        operand_shapes.append([1 if rng.random() < 0.3 else d for d in s])
    vals = _ternary_inputs(name, rng, operand_shapes)
    call, ref = TERNARY[name]
    got = call(*(torch.tensor(v, dtype=D) for v in vals))
    want = ref(*vals)
    assert list(got.shape) == list(np.shape(want))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


def test_lerp_is_exact_at_the_ends_and_matches_pytorchs_formula() -> None:
    a = torch.tensor([0.1, -3.7, 1e10], dtype=D)
    b = torch.tensor([0.3, 2.9, -1e-10], dtype=D)
    assert torch.lerp(a, b, 1.0).tolist() == b.tolist()
    assert torch.lerp(a, b, 0.0).tolist() == a.tolist()
    w = torch.tensor([0.0, 1.0, 0.75], dtype=D)
    got = torch.lerp(a, b, w).tolist()
    assert got[:2] == [0.1, 2.9]
    assert got[2] == 1e-10 * -1 - (-1e-10 - 1e10) * (1 - 0.75)


def test_ternary_dtypes() -> None:
    f32, i64 = torch.float32, torch.int64
    ints = torch.tensor([1, 2, 3])
    assert torch.addcmul(ints, ints, ints, value=2).tolist() == [3, 10, 21]
    assert torch.addcmul(ints, ints, ints, value=0.5).tolist() == [1, 2, 3]  # value -> int
    assert torch.addcmul(torch.ones(3), ints, ints).dtype == f32
    assert torch.addcmul(torch.ones(3), torch.ones(3, dtype=D), ints).dtype == D
    assert torch.addcdiv(torch.ones(3), torch.ones(3), ints).dtype == f32
    assert torch.clamp(ints, torch.tensor([2]), torch.tensor([2])).dtype == i64
    assert torch.clamp(ints, torch.tensor([2.5])).tolist() == [2.5, 2.5, 3.0]
    assert torch.clamp(torch.tensor([True, False]), torch.tensor([True])).tolist() == [True, True]
    cond = torch.tensor([True, False])
    assert torch.where(cond, 1.0, 0).dtype == f32
    assert torch.where(cond, 1, 0).dtype == i64
    assert torch.where(cond, True, False).dtype == torch.bool
    assert torch.where(cond, torch.tensor([1, 2]), 2.5).dtype == f32
    assert torch.where(cond, 2.5, torch.tensor([1, 2])).tolist() == [2.5, 2.0]
    assert torch.where(cond, torch.ones(2, dtype=D), 0.1).tolist() == [1.0, 0.1]
    assert torch.where(cond, torch.ones(2), torch.ones(2, dtype=D)).dtype == D
    assert torch.lerp(torch.ones(3), torch.ones(3), torch.tensor(0.5, dtype=D)).dtype == f32
    with pytest.raises(RuntimeError, match="expected dtype float for `end` but got dtype double"):
        torch.lerp(torch.ones(3), torch.ones(3, dtype=D), 0.5)
    with pytest.raises(NotImplementedError, match='"lerp_kernel_scalar" not implemented'):
        torch.lerp(ints, ints, 0.5)


def test_ternary_grad_fn_names_and_forms() -> None:
    x = torch.tensor([0.5, 1.5, -2.0], dtype=D, requires_grad=True)
    e = torch.tensor([1.0, 1.0, 1.0], dtype=D, requires_grad=True)
    names = {
        "LerpBackward0": torch.lerp(x, e, 0.5),
        "LerpBackward1": x.lerp(e, e),
        "AddcmulBackward0": x.addcmul(e, e),
        "AddcdivBackward0": torch.addcdiv(x, e, e),
        "ClampBackward0": x.clamp(e),
        "ClampBackward1": x.clip(0.0, 1.0),
        "WhereBackward0": x.where(x > 0, e),
    }
    for name, t in names.items():
        assert type(t.grad_fn).__name__ == name
    # In-place forms agree with the function forms and record through the old history.
    for fn, inplace in [
        (lambda t: torch.lerp(t, e, 0.25), lambda t: t.lerp_(e, 0.25)),
        (lambda t: torch.lerp(t, e, e * 0.3), lambda t: t.lerp_(e, e * 0.3)),
        (lambda t: torch.addcmul(t, e, x, value=2), lambda t: t.addcmul_(e, x, value=2)),
        (lambda t: torch.addcdiv(t, x, e + 1), lambda t: t.addcdiv_(x, e + 1)),
        (lambda t: torch.clip(t, e * 0, e), lambda t: t.clip_(e * 0, e)),
        (lambda t: torch.clamp(t, max=e), lambda t: t.clamp_(max=e)),
    ]:
        want = fn(x)
        y = x * 1
        out = inplace(y)
        assert out is y
        assert y.tolist() == want.tolist()
        x.grad = None
        y.sum().backward()
        g = x.grad.tolist()
        x.grad = None
        want.sum().backward()
        assert g == x.grad.tolist()
    # An int64 destination refuses a float result (PyTorch's cast error).
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        torch.tensor([1, 2]).clamp_(torch.tensor([1.5]))
    # where(cond) alone is still nonzero(as_tuple=True).
    (idx,) = torch.where(torch.tensor([False, True, True]))
    assert idx.tolist() == [1, 2]


# ------------------------------------------------------------------ predicates, logical
# isnan/isinf/isfinite/isposinf/isneginf, nan_to_num, logical_* and bitwise_* (with the
# & | ^ ~ operators) (ops/logical.rs). Expected values: numpy.

INF, NAN = float("inf"), float("nan")
SPECIAL = [1.5, NAN, INF, -INF, 0.0, -2.0]


def test_predicates_match_numpy() -> None:
    x = np.array(SPECIAL)
    for dtype in (torch.float32, D):
        t = torch.tensor(SPECIAL, dtype=dtype)
        for name, ref in [
            ("isnan", np.isnan),
            ("isinf", np.isinf),
            ("isfinite", np.isfinite),
            ("isposinf", np.isposinf),
            ("isneginf", np.isneginf),
        ]:
            got = getattr(torch, name)(t)
            assert got.dtype == torch.bool
            assert got.tolist() == ref(x).tolist(), name
            assert getattr(t.t() if t.dim() == 2 else t, name)().tolist() == ref(x).tolist()
    ints = torch.tensor([[1, -2], [3, 4]])
    assert torch.isfinite(ints).tolist() == [[True, True], [True, True]]
    assert torch.isnan(ints.t()).tolist() == [[False, False], [False, False]]
    assert torch.isinf(torch.tensor([True])).tolist() == [False]


def test_nan_to_num_values_and_dtypes() -> None:
    x = np.array(SPECIAL)
    for dtype, info in [(torch.float32, np.finfo(np.float32)), (D, np.finfo(np.float64))]:
        got = torch.nan_to_num(torch.tensor(SPECIAL, dtype=dtype))
        assert got.dtype == dtype
        np.testing.assert_array_equal(
            got.numpy(), np.nan_to_num(x.astype(info.dtype), posinf=info.max, neginf=info.min)
        )
    got = torch.tensor(SPECIAL).nan_to_num(nan=1.0, posinf=2.0, neginf=-3.0)
    assert got.tolist() == [1.5, 1.0, 2.0, -3.0, 0.0, -2.0]
    # An out-of-range replacement is infinite again in float32, as in PyTorch.
    assert torch.nan_to_num(torch.tensor([INF]), posinf=1e39).tolist() == [INF]
    assert torch.nan_to_num(torch.tensor([1, 2]), nan=1.5).tolist() == [1, 2]
    y = torch.tensor(SPECIAL, dtype=D)
    assert torch.nan_to_num_(y, nan=7.0) is y
    assert y.tolist()[1] == 7.0


def test_nan_to_num_gradcheck_and_gradient_at_specials() -> None:
    rng = np.random.default_rng(5)
    x = _leaf(_uniform(rng, (4, 3), -3.0, 3.0))
    assert gradcheck(lambda t: torch.nan_to_num(t.t(), nan=1.0), (x,))
    assert gradgradcheck(lambda t: t.nan_to_num(posinf=1.0), (x,))
    s = torch.tensor(SPECIAL, dtype=D, requires_grad=True)
    out = torch.nan_to_num(s)
    assert type(out.grad_fn).__name__ == "NanToNumBackward0"
    out.backward(torch.full((6,), INF, dtype=D))
    # The gradient passes where the input is finite; an infinite incoming gradient stays
    # out of the replaced elements (Note [Zero gradients]).
    assert s.grad.tolist() == [INF, 0.0, 0.0, 0.0, INF, INF]


@settings(max_examples=25, deadline=None)
@given(
    shape=shapes,
    seed=st.integers(0, 2**32 - 1),
    name=st.sampled_from(["and", "or", "xor"]),
)
def test_logical_and_bitwise_match_numpy(shape: list[int], seed: int, name: str) -> None:
    rng = np.random.default_rng(seed)
    other_shape = [1 if rng.random() < 0.3 else d for d in shape][rng.integers(0, 2) :]
    a = rng.integers(-4, 5, shape)
    b = rng.integers(-4, 5, other_shape)
    ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
    fa = ta.to(D) if rng.random() < 0.5 else ta
    lref = getattr(np, f"logical_{name}")(a, b)
    got = getattr(torch, f"logical_{name}")(fa, tb)
    assert got.dtype == torch.bool
    assert got.numpy().tolist() == lref.tolist()
    bref = getattr(np, f"bitwise_{name}")(a, b)
    op = {"and": "__and__", "or": "__or__", "xor": "__xor__"}[name]
    assert getattr(torch, f"bitwise_{name}")(ta, tb).numpy().tolist() == bref.tolist()
    assert getattr(ta, op)(tb).numpy().tolist() == bref.tolist()
    ba, bb = ta > 0, tb > 0
    bool_ref = getattr(np, f"bitwise_{name}")(a > 0, b > 0)
    got_bool = getattr(ba, op)(bb)
    assert got_bool.dtype == torch.bool
    assert got_bool.numpy().tolist() == bool_ref.tolist()


def test_logical_and_bitwise_forms_and_dtypes() -> None:
    i = torch.tensor([12, -2, 3])
    b = torch.tensor([True, False, True])
    assert (i & 6).tolist() == [4, 6, 2]
    assert (6 & i).tolist() == [4, 6, 2]
    assert (i | 1).tolist() == [13, -1, 3]
    assert (i ^ i).tolist() == [0, 0, 0]
    assert (~i).tolist() == [-13, 1, -4]
    assert (~b).tolist() == [False, True, False]
    assert torch.bitwise_not(i).tolist() == [-13, 1, -4]
    assert (b | True).dtype == torch.bool
    assert (b & 2).dtype == torch.int64
    assert torch.bitwise_and(b, i).tolist() == [0, 0, 1]
    assert torch.bitwise_and(2, i).tolist() == [0, 2, 2]
    assert torch.logical_not(torch.tensor([0.0, NAN, -1.0])).tolist() == [True, False, False]
    assert torch.logical_xor(torch.tensor([0.0, 2.0]), torch.tensor([0, 0])).tolist() == [
        False,
        True,
    ]
    # In place: logical ops write 0/1 in self's dtype; bitwise ops keep self's dtype.
    j = torch.tensor([1, 0, 5])
    assert j.logical_and_(b) is j and j.tolist() == [1, 0, 1]
    f = torch.tensor([0.0, 2.0])
    assert f.logical_not_().tolist() == [1.0, 0.0]
    k = torch.tensor([12, 5])
    k &= 6
    assert k.tolist() == [4, 4]
    k |= torch.tensor([1, 2])
    assert k.tolist() == [5, 6]
    k ^= 3
    assert k.tolist() == [6, 5]
    assert k.bitwise_not_().tolist() == [-7, -6]
    bb = torch.tensor([True, False])
    bb ^= torch.tensor([True, True])
    assert bb.tolist() == [False, True]
    with pytest.raises(RuntimeError, match="result type Long can't be cast"):
        torch.tensor([True]).bitwise_or_(2)
    # Results never require grad.
    w = torch.tensor([1.0, NAN], requires_grad=True)
    assert not torch.isnan(w).requires_grad
    assert not torch.logical_and(w, w).requires_grad


# ------------------------------------------------------------------ sgn, signbit, hypot


def test_sgn_signbit_and_float_only_binary_functions() -> None:
    x = torch.tensor([-1.5, 0.0, 2.0, -0.0], dtype=D, requires_grad=True)
    y = torch.sgn(x)
    assert y.tolist() == [-1.0, 0.0, 1.0, 0.0]
    assert type(y.grad_fn).__name__ == "SgnBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 0.0]
    assert torch.sgn(torch.tensor([-7, 0, 5])).tolist() == [-1, 0, 1]
    z = torch.tensor([-2.0, 3.0])
    assert z.sgn_() is z and z.tolist() == [-1.0, 1.0]
    assert torch.signbit(torch.tensor([-1.0, -0.0, 0.0, NAN, -NAN])).tolist() == [
        True,
        True,
        False,
        bool(np.signbit(np.float32(NAN))),
        bool(np.signbit(-np.float32(NAN))),
    ]
    assert torch.signbit(torch.tensor([-3, 0, 4])).tolist() == [True, False, False]
    assert torch.signbit(torch.tensor([True, False])).tolist() == [False, False]
    # Equal infinities: logaddexp gives them back (not inf - inf = NaN).
    assert torch.logaddexp(torch.tensor([-INF, INF]), torch.tensor([-INF, INF])).tolist() == [
        -INF,
        INF,
    ]
    assert torch.logaddexp2(torch.tensor([1000.0]), torch.tensor([1000.0])).tolist() == [1001.0]
    assert torch.hypot(torch.tensor([3e30]), torch.tensor([4e30])).tolist()[0] == pytest.approx(
        5e30
    )
    h = torch.tensor([3.0]).hypot_(torch.tensor([4.0]))
    assert h.tolist() == [5.0]
    names = {
        "HypotBackward0": torch.hypot,
        "LogaddexpBackward0": torch.logaddexp,
        "Logaddexp2Backward0": torch.logaddexp2,
    }
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    for name, fn in names.items():
        assert type(fn(a, a).grad_fn).__name__ == name
    ints = torch.tensor([1, 2])
    for name in ["hypot", "logaddexp", "logaddexp2"]:
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for'):
            getattr(torch, name)(ints, ints)


# ------------------------------------------------------------------ division with rounding


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=shapes)
def test_rounding_division_matches_numpy(seed: int, shape: list[int]) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-20, 21, shape)
    b = rng.choice([-7, -3, -2, -1, 1, 2, 3, 5], shape)
    ta, tb = torch.tensor(a.tolist()), torch.tensor(b.tolist())
    assert (ta // tb).numpy().tolist() == np.floor_divide(a, b).tolist()
    assert torch.div(ta, tb, rounding_mode="trunc").numpy().tolist() == np.trunc(a / b).tolist()
    fa, fb = a * 0.75, b * 0.5
    got = torch.divide(torch.tensor(fa, dtype=D), torch.tensor(fb, dtype=D), rounding_mode="floor")
    np.testing.assert_array_equal(got.numpy(), np.floor_divide(fa, fb))
    got = torch.floor_divide(torch.tensor(fa, dtype=D), torch.tensor(fb, dtype=D))
    np.testing.assert_array_equal(got.numpy(), np.floor_divide(fa, fb))


def test_rounding_division_forms_gradients_and_dtypes() -> None:
    x = torch.tensor([-7.5, 7.5, 1.3], dtype=D, requires_grad=True)
    y = torch.tensor([2.0, -2.0, 0.5], dtype=D, requires_grad=True)
    out = torch.div(x, y, rounding_mode="floor")
    assert out.tolist() == [-4.0, -4.0, 2.0]
    assert type(out.grad_fn).__name__ == "DivBackward2"
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    assert y.grad.tolist() == [0.0, 0.0, 0.0]
    assert gradcheck(lambda s, t: s.div(t, rounding_mode="trunc"), (x, y))
    assert x.div(y, rounding_mode="trunc").tolist() == [-3.0, -3.0, 2.0]
    assert torch.true_divide(torch.tensor([7]), 2).tolist() == [3.5]
    assert torch.tensor([7]).div(2, rounding_mode="floor").dtype == torch.int64
    assert (7 // torch.tensor([2, -2])).tolist() == [3, -4]
    assert torch.floor_divide(7.0, torch.tensor([2.0])).tolist() == [3.0]
    assert torch.div(torch.tensor([5.0, -5.0]), 0.0, rounding_mode="floor").tolist() == [
        INF,
        -INF,
    ]
    z = torch.tensor([7, -7])
    z //= 2
    assert z.tolist() == [3, -4]
    w = torch.tensor([7.0, -7.0])
    assert w.div_(2, rounding_mode="trunc") is w and w.tolist() == [3.0, -3.0]
    assert torch.tensor([7.0]).true_divide_(2).tolist() == [3.5]
    assert torch.tensor([9]).floor_divide_(2).tolist() == [4]
    # floor_divide has no derivative in PyTorch: its backward raises.
    f = torch.floor_divide(x, y)
    assert f.requires_grad
    with pytest.raises(RuntimeError, match="the derivative for 'floor_divide' is not implemented"):
        f.sum().backward()
