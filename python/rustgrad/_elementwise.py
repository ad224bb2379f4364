"""Function forms of the elementwise math ops and activations.

``rustgrad.sin(x)`` is ``x.sin()``, and so on. The activations that PyTorch has only in
``torch.nn.functional`` (``gelu``, ``elu``, ``leaky_relu``, ...) are defined here with
its signatures (including ``inplace=``) but are not exported from ``rustgrad``, as
PyTorch does not export them from ``torch``; a ``rustgrad.nn.functional`` module can
re-export them. ``selu`` and ``celu`` (and their in-place forms) are in both places in
PyTorch, so they are exported.
"""

from __future__ import annotations

import builtins
from typing import Any

from ._rustgrad import Tensor


def _t(x: Any, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{name}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}"
        )
    return x


# ----------------------------------------------------------------- math functions


def rsqrt(input: Tensor) -> Tensor:
    """Elementwise ``1 / sqrt(x)``.

    Example:
        >>> rustgrad.rsqrt(rustgrad.tensor([4.0]))
        tensor([0.5000])
    """
    return _t(input, "rsqrt").rsqrt()


def exp2(input: Tensor) -> Tensor:
    """Elementwise ``2 ** x``."""
    return _t(input, "exp2").exp2()


def expm1(input: Tensor) -> Tensor:
    """Elementwise ``exp(x) - 1``, accurate near 0."""
    return _t(input, "expm1").expm1()


def log1p(input: Tensor) -> Tensor:
    """Elementwise ``log(1 + x)``, accurate near 0."""
    return _t(input, "log1p").log1p()


def log2(input: Tensor) -> Tensor:
    """Elementwise base-2 logarithm."""
    return _t(input, "log2").log2()


def log10(input: Tensor) -> Tensor:
    """Elementwise base-10 logarithm."""
    return _t(input, "log10").log10()


def sin(input: Tensor) -> Tensor:
    """Elementwise sine."""
    return _t(input, "sin").sin()


def cos(input: Tensor) -> Tensor:
    """Elementwise cosine."""
    return _t(input, "cos").cos()


def tan(input: Tensor) -> Tensor:
    """Elementwise tangent."""
    return _t(input, "tan").tan()


def asin(input: Tensor) -> Tensor:
    """Elementwise arcsine (NaN outside [-1, 1])."""
    return _t(input, "asin").asin()


def acos(input: Tensor) -> Tensor:
    """Elementwise arccosine (NaN outside [-1, 1])."""
    return _t(input, "acos").acos()


def atan(input: Tensor) -> Tensor:
    """Elementwise arctangent."""
    return _t(input, "atan").atan()


arcsin = asin
arccos = acos
arctan = atan


def sinh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic sine."""
    return _t(input, "sinh").sinh()


def cosh(input: Tensor) -> Tensor:
    """Elementwise hyperbolic cosine."""
    return _t(input, "cosh").cosh()


def reciprocal(input: Tensor) -> Tensor:
    """Elementwise ``1 / x`` (integers give the default float dtype)."""
    return _t(input, "reciprocal").reciprocal()


def square(input: Tensor) -> Tensor:
    """Elementwise ``x * x`` (``x ** 2``: int64 stays int64)."""
    return _t(input, "square").square()


def erf(input: Tensor) -> Tensor:
    """Elementwise error function."""
    return _t(input, "erf").erf()


def erfinv(input: Tensor) -> Tensor:
    """Elementwise inverse error function (NaN outside [-1, 1], +-inf at +-1)."""
    return _t(input, "erfinv").erfinv()


def floor(input: Tensor) -> Tensor:
    """Elementwise floor; integers are returned unchanged. Its gradient is zero."""
    return _t(input, "floor").floor()


def ceil(input: Tensor) -> Tensor:
    """Elementwise ceiling; integers are returned unchanged. Its gradient is zero."""
    return _t(input, "ceil").ceil()


def round(input: Tensor, *, decimals: int = 0) -> Tensor:
    """Rounds half to even, to ``decimals`` decimal places. Its gradient is zero.

    Example:
        >>> rustgrad.round(rustgrad.tensor([0.5, 1.5, 2.25]), decimals=0)
        tensor([0., 2., 2.])
    """
    return _t(input, "round").round(decimals=decimals)


def trunc(input: Tensor) -> Tensor:
    """Elementwise rounding toward zero. Its gradient is zero."""
    return _t(input, "trunc").trunc()


fix = trunc


def frac(input: Tensor) -> Tensor:
    """Elementwise ``x - trunc(x)``; the gradient passes unchanged."""
    return _t(input, "frac").frac()


# ----------------------------------------------------------------- binary functions


def atan2(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``atan2(input, other)`` with broadcasting (the angle of the point
    ``(other, input)``)."""
    return _t(input, "atan2").atan2(other)


arctan2 = atan2


def maximum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum with broadcasting; NaN if either operand is NaN."""
    return _t(input, "maximum").maximum(other)


def minimum(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum with broadcasting; NaN if either operand is NaN."""
    return _t(input, "minimum").minimum(other)


def fmax(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise maximum that ignores a NaN operand."""
    return _t(input, "fmax").fmax(other)


def fmin(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise minimum that ignores a NaN operand."""
    return _t(input, "fmin").fmin(other)


def fmod(input: Tensor, other: Any) -> Tensor:
    """C's ``fmod``: the remainder with the sign of ``input``.

    Example:
        >>> rustgrad.fmod(rustgrad.tensor([-7.0, 7.0]), 3)
        tensor([-1.,  1.])
    """
    return _t(input, "fmod").fmod(other)


def remainder(input: Any, other: Any) -> Tensor:
    """Python's ``%``: the remainder with the sign of ``other``; ``input`` may be a
    number when ``other`` is a tensor."""
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return other.__rmod__(input)
    return _t(input, "remainder").remainder(other)


def copysign(input: Tensor, other: Any) -> Tensor:
    """``|input|`` with the sign of ``other`` (a tensor or a number)."""
    return _t(input, "copysign").copysign(other)


# ----------------------------------------------------------------- activations


def selu(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """Scaled ELU with PyTorch's fixed ``alpha`` and ``scale``."""
    return _t(input, "selu")._selu(inplace)


def selu_(input: Tensor) -> Tensor:
    """``selu`` in place."""
    return _t(input, "selu_")._selu(True)


def celu(input: Tensor, alpha: float = 1.0, inplace: builtins.bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``; ``alpha`` may not be 0."""
    return _t(input, "celu")._celu(alpha, inplace)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``celu`` in place."""
    return _t(input, "celu_")._celu(alpha, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: builtins.bool = False) -> Tensor:
    """``x`` for ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    return _t(input, "elu")._elu(alpha, inplace)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``elu`` in place."""
    return _t(input, "elu_")._elu(alpha, True)


def leaky_relu(
    input: Tensor, negative_slope: float = 0.01, inplace: builtins.bool = False
) -> Tensor:
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    return _t(input, "leaky_relu")._leaky_relu(negative_slope, inplace)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """``leaky_relu`` in place."""
    return _t(input, "leaky_relu_")._leaky_relu(negative_slope, True)


def hardtanh(
    input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: builtins.bool = False
) -> Tensor:
    """Clamps into ``[min_val, max_val]``; the gradient is 0 at and beyond the bounds."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    return _t(input, "hardtanh")._hardtanh(min_val, max_val, inplace)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """``hardtanh`` in place."""
    return hardtanh(input, min_val, max_val, True)


def relu6(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``hardtanh(x, 0, 6)``."""
    return hardtanh(input, 0.0, 6.0, inplace)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, computed without overflow."""
    return _t(input, "logsigmoid")._logsigmoid()


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (``approximate='none'``) or its tanh approximation (``'tanh'``)."""
    return _t(input, "gelu")._gelu(approximate=approximate)


def silu(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``x * sigmoid(x)``."""
    return _t(input, "silu")._silu(inplace)


def mish(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``x * tanh(softplus(x))``."""
    return _t(input, "mish")._mish(inplace)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear where ``beta * x > threshold``."""
    return _t(input, "softplus")._softplus(beta, threshold)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``."""
    return _t(input, "softsign")._softsign()


def hardsigmoid(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``clamp(x + 3, 0, 6) / 6``."""
    return _t(input, "hardsigmoid")._hardsigmoid(inplace)


def hardswish(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``x * clamp(x + 3, 0, 6) / 6``."""
    return _t(input, "hardswish")._hardswish(inplace)


# ----------------------------------------------------------------- three operands


def lerp(input: Tensor, end: Tensor, weight: Any) -> Tensor:
    """``input + weight * (end - input)``; ``weight`` is a number or a tensor, and all
    broadcast.

    Example:
        >>> rustgrad.lerp(rustgrad.tensor([0.0, 2.0]), rustgrad.tensor([4.0, 4.0]), 0.5)
        tensor([2., 3.])
    """
    return _t(input, "lerp").lerp(end, weight)


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 * tensor2`` with broadcasting.

    Example:
        >>> rustgrad.addcmul(rustgrad.ones(2), rustgrad.tensor([2.0, 3.0]),
        ...                  rustgrad.tensor([4.0, 5.0]), value=0.5)
        tensor([5.0000, 8.5000])
    """
    return _t(input, "addcmul").addcmul(tensor1, tensor2, value=value)


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: Any = 1) -> Tensor:
    """``input + value * tensor1 / tensor2`` with broadcasting (integer ``tensor1`` and
    ``tensor2`` are refused, as in PyTorch).

    Example:
        >>> rustgrad.addcdiv(rustgrad.ones(2), rustgrad.tensor([2.0, 3.0]),
        ...                  rustgrad.tensor([4.0, 5.0]), value=2)
        tensor([2.0000, 2.2000])
    """
    return _t(input, "addcdiv").addcdiv(tensor1, tensor2, value=value)


def clip(input: Tensor, min: Any = None, max: Any = None) -> Tensor:
    """Alias of ``clamp``: bounds are numbers or tensors (broadcast, with gradients).

    Example:
        >>> rustgrad.clip(rustgrad.tensor([-2.0, 0.5, 3.0]), -1, 1)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    return _t(input, "clip").clip(min, max)


# ----------------------------------------------------------------- predicates, logical


def isnan(input: Tensor) -> Tensor:
    """True where ``input`` is NaN (bool; integers are never NaN)."""
    return _t(input, "isnan").isnan()


def isinf(input: Tensor) -> Tensor:
    """True where ``input`` is +inf or -inf."""
    return _t(input, "isinf").isinf()


def isfinite(input: Tensor) -> Tensor:
    """True where ``input`` is neither NaN nor infinite.

    Example:
        >>> rustgrad.isfinite(rustgrad.tensor([1.0, float("inf"), float("nan")]))
        tensor([ True, False, False])
    """
    return _t(input, "isfinite").isfinite()


def isposinf(input: Tensor) -> Tensor:
    """True where ``input`` is +inf."""
    return _t(input, "isposinf").isposinf()


def isneginf(input: Tensor) -> Tensor:
    """True where ``input`` is -inf."""
    return _t(input, "isneginf").isneginf()


def nan_to_num(
    input: Tensor,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
) -> Tensor:
    """Replaces NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (defaults: the
    dtype's largest and lowest finite values); the gradient passes where ``input`` is
    finite.

    Example:
        >>> rustgrad.nan_to_num(rustgrad.tensor([float("nan"), 2.0]), nan=-1.0)
        tensor([-1.,  2.])
    """
    return _t(input, "nan_to_num").nan_to_num(nan, posinf, neginf)


def nan_to_num_(
    input: Tensor,
    nan: float = 0.0,
    posinf: float | None = None,
    neginf: float | None = None,
) -> Tensor:
    """``nan_to_num`` in place."""
    return _t(input, "nan_to_num_").nan_to_num_(nan, posinf, neginf)


def logical_and(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``input and other`` of truth values (nonzero is true); bool."""
    return _t(input, "logical_and").logical_and(other)


def logical_or(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise ``input or other`` of truth values; bool."""
    return _t(input, "logical_or").logical_or(other)


def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """Elementwise exclusive or of truth values; bool."""
    return _t(input, "logical_xor").logical_xor(other)


def logical_not(input: Tensor) -> Tensor:
    """Elementwise ``not input`` (true where the element is zero); bool."""
    return _t(input, "logical_not").logical_not()


def _bitwise(input: Any, other: Any, name: str) -> Tensor:
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return getattr(other, f"__r{name[8:]}__")(input)
    return getattr(_t(input, name), name)(other)


def bitwise_and(input: Any, other: Any) -> Tensor:
    """Elementwise ``&`` of bool or int64 tensors (or a number).

    Example:
        >>> rustgrad.bitwise_and(rustgrad.tensor([12, 10]), 6)
        tensor([4, 2])
    """
    return _bitwise(input, other, "bitwise_and")


def bitwise_or(input: Any, other: Any) -> Tensor:
    """Elementwise ``|`` of bool or int64 tensors (or a number)."""
    return _bitwise(input, other, "bitwise_or")


def bitwise_xor(input: Any, other: Any) -> Tensor:
    """Elementwise ``^`` of bool or int64 tensors (or a number)."""
    return _bitwise(input, other, "bitwise_xor")


def bitwise_not(input: Tensor) -> Tensor:
    """Elementwise ``~`` of a bool or int64 tensor."""
    return _t(input, "bitwise_not").bitwise_not()


# ----------------------------------------------------------------- sign, hypot, logaddexp


def sgn(input: Tensor) -> Tensor:
    """The sign of real ``input`` (-1, 0, 1), as ``sign``; recorded as SgnBackward0."""
    return _t(input, "sgn").sgn()


def signbit(input: Tensor) -> Tensor:
    """True where the sign bit is set: negative numbers and -0.0 (bool).

    Example:
        >>> rustgrad.signbit(rustgrad.tensor([-1.0, -0.0, 0.0, 2.0]))
        tensor([ True,  True, False, False])
    """
    return _t(input, "signbit").signbit()


def hypot(input: Tensor, other: Tensor) -> Tensor:
    """``sqrt(input**2 + other**2)`` without overflow, broadcast (floating only).

    Example:
        >>> rustgrad.hypot(rustgrad.tensor([3.0]), rustgrad.tensor([4.0]))
        tensor([5.])
    """
    return _t(input, "hypot").hypot(other)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow, broadcast (floating only)."""
    return _t(input, "logaddexp").logaddexp(other)


def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow, broadcast (floating only)."""
    return _t(input, "logaddexp2").logaddexp2(other)


# ----------------------------------------------------------------- division


def divide(input: Tensor, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """Alias of ``div``: true division, or rounded with ``rounding_mode='trunc'`` /
    ``'floor'`` (integers stay integers; their zero divisor is a ZeroDivisionError).

    Example:
        >>> rustgrad.divide(rustgrad.tensor([-7, 7]), 2, rounding_mode="floor")
        tensor([-4,  3])
    """
    return _t(input, "divide").divide(other, rounding_mode=rounding_mode)


def true_divide(input: Tensor, other: Any) -> Tensor:
    """``input / other`` (integers give the default float dtype)."""
    return _t(input, "true_divide").true_divide(other)


def floor_divide(input: Any, other: Any) -> Tensor:
    """``input // other``: the quotient rounded down. Not differentiable (its backward
    raises, as PyTorch's does)."""
    if not isinstance(input, Tensor) and isinstance(other, Tensor):
        return other.__rfloordiv__(input)
    return _t(input, "floor_divide").floor_divide(other)
