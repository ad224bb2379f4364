"""Autograd graph nodes: ``Node`` and its per-name subclasses (``MulBackward0`` ...), and
``graph_stats``."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

from .._rustgrad import Node

__all__ = ["GraphStats", "Node", "graph_stats"]


@functools.cache
def _node_class(name: str) -> type:
    """Returns the ``Node`` subclass named ``name`` (created once, then cached)."""
    return type(name, (Node,), {"__module__": "rustgrad.autograd.graph", "__slots__": ()})


class GraphStats(NamedTuple):
    """What ``graph_stats`` counts: backward nodes, and the tensors they saved."""

    nodes: int
    saved_tensors: int
    saved_bytes: int


def _walk(root: Any) -> list[Any]:
    """The backward nodes reachable from ``root`` (a tensor or a node), each once, in
    breadth-first order from the root."""
    start = getattr(root, "grad_fn", root)
    if start is None:
        return []
    seen = {start}
    order = [start]
    i = 0
    while i < len(order):
        for nxt, _ in order[i].next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                order.append(nxt)
        i += 1
    return order


def graph_stats(tensor: Any) -> GraphStats:
    """Counts the backward graph behind ``tensor``: its nodes (AccumulateGrad included),
    the tensors they saved for backward and those tensors' bytes (numel × element size,
    summed per node: a tensor saved by two nodes counts twice). A tensor without
    history has an empty graph. See Note [Graph introspection].

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(1000, requires_grad=True)
        >>> rustgrad.autograd.graph_stats((x * x).sum())
        GraphStats(nodes=3, saved_tensors=2, saved_bytes=8000)
    """
    nodes = _walk(tensor)
    count = total = 0
    for node in nodes:
        c, b = node._saved_summary()
        count += c
        total += b
    return GraphStats(len(nodes), count, total)
