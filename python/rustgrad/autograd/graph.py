"""Autograd graph nodes: ``Node`` and its per-name subclasses (``MulBackward0`` ...)."""

from __future__ import annotations

import functools

from .._rustgrad import Node

__all__ = ["Node"]


@functools.cache
def _node_class(name: str) -> type:
    """Returns the ``Node`` subclass named ``name`` (created once, then cached)."""
    return type(name, (Node,), {"__module__": "rustgrad.autograd.graph", "__slots__": ()})
