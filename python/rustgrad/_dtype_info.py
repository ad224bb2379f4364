"""``finfo`` and ``iinfo``: the numerical limits of rustgrad's dtypes, with PyTorch's
attributes, reprs and errors. The numbers are IEEE 754 binary16/32/64, bfloat16 (8
exponent bits, 7 mantissa bits) and two's complement integers (what ``numpy.finfo`` /
``numpy.iinfo`` and PyTorch report)."""

from __future__ import annotations

import builtins
from typing import Any

from ._rustgrad import (
    bfloat16,
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    uint8,
)
from ._rustgrad import bool as _bool

__all__ = ["finfo", "iinfo"]

_NOT_GIVEN: Any = object()

# bits, eps, max, tiny (smallest normal), resolution (10 ** -floor(digits10)).
_FLOATS = {
    float32: (32, 2.0**-23, (2.0 - 2.0**-23) * 2.0**127, 2.0**-126, 1e-06, "float32"),
    float64: (64, 2.0**-52, (2.0 - 2.0**-52) * 2.0**1023, 2.0**-1022, 1e-15, "float64"),
    float16: (16, 2.0**-10, (2.0 - 2.0**-10) * 2.0**15, 2.0**-14, 0.001, "float16"),
    bfloat16: (16, 2.0**-7, (2.0 - 2.0**-7) * 2.0**127, 2.0**-126, 0.01, "bfloat16"),
}

# bits, min, max of the integer dtypes (two's complement; uint8 unsigned).
_INTS = {
    uint8: (8, 0, 2**8 - 1, "uint8"),
    int8: (8, -(2**7), 2**7 - 1, "int8"),
    int16: (16, -(2**15), 2**15 - 1, "int16"),
    int32: (32, -(2**31), 2**31 - 1, "int32"),
    int64: (64, -(2**63), 2**63 - 1, "int64"),
}


def _as_dtype(type: Any, name: str) -> dtype:
    # PyTorch's parser accepts the Python types float/int/bool as dtypes.
    python_types = {builtins.float: float64, builtins.int: int64, builtins.bool: _bool}
    if isinstance(type, dtype):
        return type
    if isinstance(type, builtins.type) and type in python_types:
        return python_types[type]
    got = builtins.type(type).__name__
    raise TypeError(f"{name}(): argument 'type' (position 1) must be torch.dtype, not {got}")


class finfo:  # noqa: N801  (PyTorch's name)
    """Limits of a floating-point dtype (the default dtype when none is given).

    Example:
        >>> import rustgrad as torch
        >>> torch.finfo(torch.float32).eps
        1.1920928955078125e-07
    """

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    __module__ = "rustgrad"
    __slots__ = ("bits", "dtype", "eps", "max", "min", "resolution", "smallest_normal", "tiny")

    def __init__(self, type: Any = _NOT_GIVEN) -> None:
        d = get_default_dtype() if type is _NOT_GIVEN else _as_dtype(type, "finfo")
        if d not in _FLOATS:
            # PyTorch's message, including its odd last words.
            raise TypeError(
                "torch.finfo() requires a floating point input type. "
                "Use torch.iinfo to handle 'torch.finfo'"
            )
        bits, eps, max, tiny, resolution, name = _FLOATS[d]
        for attr, value in (
            ("bits", bits),
            ("eps", eps),
            ("max", max),
            ("min", -max),
            ("tiny", tiny),
            ("smallest_normal", tiny),
            ("resolution", resolution),
            ("dtype", name),
        ):
            object.__setattr__(self, attr, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.finfo' objects is not writable")

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, finfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
            f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801  (PyTorch's name)
    """Limits of an integer dtype.

    Example:
        >>> import rustgrad as torch
        >>> torch.iinfo(torch.int64).max
        9223372036854775807
    """

    bits: int
    max: int
    min: int
    dtype: str

    __module__ = "rustgrad"
    __slots__ = ("bits", "dtype", "max", "min")

    def __init__(self, type: Any) -> None:
        d = _as_dtype(type, "iinfo")
        if d == _bool:
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if d not in _INTS:
            raise TypeError(
                "torch.iinfo() requires an integer input type. "
                "Use torch.finfo to handle 'torch.iinfo'"
            )
        bits, lo, hi, name = _INTS[d]
        limits = (("bits", bits), ("max", hi), ("min", lo), ("dtype", name))
        for attr, value in limits:
            object.__setattr__(self, attr, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"attribute '{name}' of 'torch.iinfo' objects is not writable")

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, iinfo) and other.dtype == self.dtype

    def __hash__(self) -> int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"
