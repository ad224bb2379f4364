"""``rustgrad.nn``: for now, ``Parameter`` and ``functional``."""

from __future__ import annotations

from . import functional
from .parameter import Parameter

__all__ = ["Parameter", "functional"]
