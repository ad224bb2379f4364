"""Number arguments as PyTorch's argument parser takes them (issue 19).

Every op that takes a Number refuses a Python int outside int64 with PyTorch's
OverflowError "int too big to convert" (the binding's one `extract_scalar`, Note
[Wrapped scalars]), not a TypeError; and `clamp` takes a 0-d tensor that does not
require grad as a Number, so a number bound may be mixed with such a tensor bound.
The expected results and messages were checked against PyTorch 2.15.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import rustgrad as torch
import rustgrad.nn.functional as F

BIG = 2**70

x = torch.tensor([1.0, 2.0])
i = torch.tensor([1, 2])
u8 = torch.tensor([1, 5], dtype=torch.uint8)

# Each takes BIG where PyTorch's signature has a Number (or a Tensor-or-Number).
NUMBER_OPS: dict[str, Callable[[int], Any]] = {
    "fmod": lambda n: x.fmod(n),
    "remainder": lambda n: i.remainder(n),
    "copysign": lambda n: x.copysign(n),
    "xlogy": lambda n: x.xlogy(n),
    "torch.xlogy(number, tensor)": lambda n: torch.xlogy(n, x),
    "clamp_min": lambda n: x.clamp_min(n),
    "clamp_max": lambda n: x.clamp_max(n),
    "clamp_min_": lambda n: x.clone().clamp_min_(n),
    "clamp_max_": lambda n: x.clone().clamp_max_(n),
    "clamp": lambda n: x.clamp(0, n),
    "eq": lambda n: x.eq(n),
    "eq_": lambda n: x.clone().eq_(n),
    "lt_": lambda n: x.clone().lt_(n),
    "pow": lambda n: x.pow(n),
    "pow_": lambda n: x.clone().pow_(n),
    "rpow": lambda n: n**x,
    "float_power": lambda n: x.float_power(n),
    "fill_": lambda n: x.clone().fill_(n),
    "full": lambda n: torch.full((2,), n),
    "masked_fill": lambda n: x.masked_fill(x > 1, n),
    "addcmul value": lambda n: x.addcmul(x, x, value=n),
    "addcdiv value": lambda n: x.addcdiv(x, x, value=n),
    "lerp weight": lambda n: x.lerp(x, n),
    "add alpha": lambda n: x.add(x, alpha=n),
    "addmm beta": lambda n: torch.addmm(x[:, None] * x, x[:, None] * x, x[:, None] * x, beta=n),
    "norm p": lambda n: x.norm(n),
    "var correction": lambda n: x.var(correction=n),
    "floor_divide": lambda n: i.floor_divide(n),
    "bitwise_and_": lambda n: i.clone().bitwise_and_(n),
    "add": lambda n: x + n,
    "radd": lambda n: n + x,
    "mul_": lambda n: x.clone().mul_(n),
    "div rounding_mode": lambda n: x.div(n, rounding_mode="floor"),
    "where": lambda n: torch.where(x > 1, x, n),
    # Activation parameters that PyTorch's signatures type as Scalar.
    "threshold": lambda n: F.threshold(x, n, 1.0),
    "threshold value": lambda n: F.threshold(x, 1.0, n),
    "hardtanh": lambda n: F.hardtanh(x, min(n, 0), max(n, 0)),
    "leaky_relu": lambda n: F.leaky_relu(x, n),
    "softplus beta": lambda n: F.softplus(x, n),
    "softplus threshold": lambda n: F.softplus(x, 1, n),
    "elu": lambda n: F.elu(x, n),
    "celu": lambda n: F.celu(x, n),
    "hardshrink": lambda n: F.hardshrink(x, n),
    "softshrink": lambda n: F.softshrink(x, n),
    "rrelu": lambda n: F.rrelu(x, n, n),
}


@pytest.mark.parametrize(
    ("n", "message"),
    [
        (BIG, "int too big to convert"),
        (2**64, "int too big to convert"),
        (-BIG, "can't convert negative int to unsigned"),
        (-(2**63) - 1, "can't convert negative int to unsigned"),
    ],
)
@pytest.mark.parametrize("op", NUMBER_OPS.values(), ids=NUMBER_OPS.keys())
def test_int_beyond_int64_is_overflow_error(op: Callable[[int], Any], n: int, message: str) -> None:
    with pytest.raises(OverflowError, match=f"^{message}$"):
        op(n)


@pytest.mark.parametrize(
    ("op", "match"),
    [
        (lambda: x.fmod("a"), "fmod"),
        (lambda: x.clamp_min("a"), "clamp_min"),
        (lambda: x.addcmul(x, x, value="a"), "addcmul"),
    ],
)
def test_non_numbers_stay_type_errors(op: Callable[[], Any], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        op()


def test_int64_extremes_are_numbers() -> None:
    assert i.remainder(2**63 - 1).tolist() == [1, 2]
    assert torch.full((1,), -(2**63)).tolist() == [-(2**63)]


@pytest.mark.parametrize(
    ("op", "values", "dtype"),
    [
        # PyTorch 2.15: the number overload, the uint8 bound -1 clamping nothing.
        (lambda: torch.clamp(u8, min=-1, max=torch.tensor(3)), [1, 3], torch.uint8),
        (lambda: torch.clamp(u8, min=torch.tensor(2), max=3), [2, 3], torch.uint8),
        (lambda: u8.clamp(-1, torch.tensor(3)), [1, 3], torch.uint8),
        (lambda: u8.clamp(torch.tensor(2), 300), [2, 5], torch.uint8),
        (lambda: u8.clamp(torch.tensor(2), True), [1, 1], torch.uint8),
        (lambda: u8.clamp(2.5, torch.tensor(3)), [2.5, 3.0], torch.float32),
        (lambda: torch.tensor([1, 5]).clamp(torch.tensor(2), 3.5), [2.0, 3.5], torch.float32),
        (lambda: x.clamp(torch.tensor(2.0, dtype=torch.float64), 3), [2.0, 2.0], torch.float32),
        (lambda: u8.clone().clamp_(torch.tensor(2), 3), [2, 3], torch.uint8),
        (lambda: torch.clip(u8, torch.tensor(2), 3), [2, 3], torch.uint8),
    ],
)
def test_clamp_number_with_0d_tensor_bound(
    op: Callable[[], torch.Tensor], values: list[float], dtype: torch.dtype
) -> None:
    out = op()
    assert out.dtype == dtype
    assert out.tolist() == values


def test_clamp_mixed_bounds_grad_fn_and_refusals() -> None:
    y = torch.tensor([1.0, 5.0], requires_grad=True)
    out = y.clamp(torch.tensor(2.0), 3)
    assert out.grad_fn.name() == "ClampBackward1"
    out.sum().backward()
    assert y.grad.tolist() == [0.0, 0.0]
    # A bound with dims, or one that requires grad, is no Number: PyTorch's TypeError.
    with pytest.raises(TypeError, match="clamp"):
        u8.clamp(torch.tensor([2, 2], dtype=torch.uint8), 3)
    with pytest.raises(TypeError, match="clamp"):
        y.clamp(torch.tensor(2.0, requires_grad=True), 3)
    with pytest.raises(OverflowError, match="int too big to convert"):
        y.clamp(torch.tensor(2.0), BIG)


def test_double_parameters_take_any_int_a_float_holds() -> None:
    # isclose/allclose's rtol and atol are `double` in PyTorch 2.15: 2**70 is accepted.
    assert x.isclose(x, BIG).tolist() == [True, True]
    assert x.isclose(x + 1, 0, BIG).tolist() == [True, True]
    assert x.allclose(x, BIG)
