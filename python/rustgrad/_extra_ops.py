"""Function forms of ``xlogy``, ``float_power`` and ``special.xlog1py``.

The Tensor methods and their backward rules are in Rust (``crates/engine/src/ops/
binary.rs``); these functions add PyTorch's ``Number self`` overloads
(``rustgrad.xlogy(2, t)``, ``rustgrad.float_power(2, t)``).

Example:
    >>> import rustgrad as torch
    >>> torch.xlogy(torch.tensor([0.0, 2.0]), torch.tensor([0.0, 1.0]))
    tensor([0., 0.])
"""

from __future__ import annotations

import builtins
from typing import Any

from ._rustgrad import Tensor

__all__ = ["float_power", "xlogy", "xlogy_"]

_NUMBER = (builtins.bool, int, float)


def _invalid(name: str, input: Any, other: Any, second: str) -> TypeError:
    return TypeError(
        f"{name}() received an invalid combination of arguments - got "
        f"({type(input).__name__}, {type(other).__name__}), but expected one of:\n"
        f" * (Tensor input, Tensor {second}, *, Tensor out = None)\n"
        f" * (Number self, Tensor {second}, *, Tensor out = None)\n"
        f" * (Tensor input, Number {second}, *, Tensor out = None)"
    )


def _is_number(x: Any) -> bool:
    if isinstance(x, _NUMBER):
        return True
    # numpy scalars
    return hasattr(x, "dtype") and hasattr(x, "item") and not hasattr(x, "__len__")


def xlogy(input: Any, other: Any) -> Tensor:
    """``input * log(other)``, 0 where ``input == 0`` (even where ``other == 0``) and NaN
    where ``other`` is NaN. Either operand may be a number; integer and bool operands
    compute in the default float dtype.

    Args:
        input: a tensor or a number.
        other: a tensor or a number (not both numbers).

    Returns:
        The broadcast result.

    Example:
        >>> rustgrad.xlogy(rustgrad.tensor([0.0, 3.0]), 2.0)
        tensor([0.0000, 2.0794])
    """
    if isinstance(input, Tensor):
        return input.xlogy(other)
    if isinstance(other, Tensor) and _is_number(input):
        return other._xlogy_scalar_self(input, False)
    raise _invalid("xlogy", input, other, "other")


def xlogy_(input: Tensor, other: Any) -> Tensor:
    """In-place :func:`xlogy` (``input`` must hold the result's dtype)."""
    if not isinstance(input, Tensor):
        raise TypeError(
            f"xlogy_(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}"
        )
    return input.xlogy_(other)


def xlog1py(input: Any, other: Any) -> Tensor:
    """``input * log1p(other)`` with :func:`xlogy`'s rules (``rustgrad.special.xlog1py``).

    Example:
        >>> rustgrad.special.xlog1py(rustgrad.tensor([0.0, 2.0]), -1.0)
        tensor([0., -inf])
    """
    if isinstance(input, Tensor):
        return input._xlog1py(other)
    if isinstance(other, Tensor) and _is_number(input):
        return other._xlogy_scalar_self(input, True)
    raise _invalid("special_xlog1py", input, other, "other")


def float_power(input: Any, exponent: Any) -> Tensor:
    """``input ** exponent`` computed in float64, always returning float64.

    Args:
        input: a tensor or a number.
        exponent: a tensor or a number (not both numbers).

    Returns:
        A float64 tensor; gradients flow back through the conversion to float64.

    Example:
        >>> rustgrad.float_power(rustgrad.tensor([2, 3]), 2)
        tensor([4., 9.], dtype=torch.float64)
    """
    if isinstance(input, Tensor):
        return input.float_power(exponent)
    if isinstance(exponent, Tensor) and _is_number(input):
        return exponent._float_power_scalar_base(input)
    raise _invalid("float_power", input, exponent, "exponent")
