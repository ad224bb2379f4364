"""Argument normalisers shared by the layers (PyTorch's ``_single``, ``_pair``, ...)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..._rustgrad import Tensor, empty


def _ntuple(n: int, name: str) -> Any:
    def parse(x: Any) -> tuple[Any, ...]:
        if isinstance(x, Iterable) and not isinstance(x, str):
            return tuple(x)
        return (x,) * n

    parse.__name__ = name
    return parse


_single = _ntuple(1, "_single")
_pair = _ntuple(2, "_pair")
_triple = _ntuple(3, "_triple")
_quadruple = _ntuple(4, "_quadruple")


def _empty(*shape: int, dtype: Any = None, device: Any = None) -> Tensor:
    """An uninitialised tensor of ``shape`` (``dtype`` None: the default dtype; ``device``
    None: the default device, Note [Meta device])."""
    return empty(*shape, dtype=dtype, device=device)
