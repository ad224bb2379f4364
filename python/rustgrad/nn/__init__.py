"""``rustgrad.nn``: for now, ``Parameter``."""

from __future__ import annotations

from .parameter import Parameter

__all__ = ["Parameter"]
