"""``rustgrad.backends``: the backend flags device-agnostic scripts query."""

from __future__ import annotations

from . import cudnn, mps

__all__ = ["cudnn", "mps"]
