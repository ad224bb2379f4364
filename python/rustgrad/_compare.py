"""``isclose`` and ``allclose``: PyTorch's tolerance comparisons, composed from native
elementwise ops (no gradient: their results are bool).

``isclose(a, b)`` is ``a == b`` or ``|a - b| <= atol + rtol * |b|`` with a finite
difference (so infinities are close only to themselves), NaN close to NaN only with
``equal_nan``; ``allclose`` is ``isclose(...).all()`` as a Python bool.

Example:
    >>> import rustgrad as torch
    >>> torch.isclose(torch.tensor([1.0, 2.0]), torch.tensor([1.0 + 1e-9, 2.1]))
    tensor([ True, False])
    >>> torch.tensor([1.0]).allclose(torch.tensor([1.0 + 1e-9]))
    True
"""

from __future__ import annotations

import builtins

from ._rustgrad import Tensor, float64
from ._rustgrad import bool as bool_

__all__ = ["allclose", "isclose"]

_SCALAR_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "bool": "Bool",
}


def _scalar_name(t: Tensor) -> str:
    name = str(t.dtype).rpartition(".")[2]
    return _SCALAR_NAMES.get(name, name)


def isclose(
    input: Tensor,
    other: Tensor,
    rtol: builtins.float = 1e-05,
    atol: builtins.float = 1e-08,
    equal_nan: builtins.bool = False,
) -> Tensor:
    """Elementwise ``input == other or |input - other| <= atol + rtol * |other|`` (PyTorch's
    ``torch.isclose``): both tensors of one dtype, broadcast together; a bool tensor."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(
            "isclose(): argument 'other' (position 2) must be Tensor, not "
            f"{type(other if isinstance(input, Tensor) else input).__name__}"
        )
    if input.dtype != other.dtype:
        raise RuntimeError(f"{_scalar_name(input)} did not match {_scalar_name(other)}")
    # `double` parameters in PyTorch: any number a float holds (2**70 included).
    rtol, atol = builtins.float(rtol), builtins.float(atol)
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol:g}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol:g}")
    # Detached: the comparisons record nothing.
    a, b = input.detach(), other.detach()
    close = a == b
    if a.dtype.is_floating_point and equal_nan:
        close = close | (a.isnan() & b.isnan())
    if a.dtype == bool_ or (rtol == 0 and atol == 0):
        return close
    if not a.dtype.is_floating_point:
        a, b = a.to(float64), b.to(float64)
    diff = (a - b).abs()
    allowed = atol + rtol * b.abs()
    return close | (diff.isfinite() & (diff <= allowed))


def allclose(
    input: Tensor,
    other: Tensor,
    rtol: builtins.float = 1e-05,
    atol: builtins.float = 1e-08,
    equal_nan: builtins.bool = False,
) -> builtins.bool:
    """Whether every element of ``isclose(input, other, rtol, atol, equal_nan)`` holds."""
    return builtins.bool(isclose(input, other, rtol, atol, equal_nan).all().item())


Tensor.isclose = isclose  # type: ignore[attr-defined]
Tensor.allclose = allclose  # type: ignore[attr-defined]
