"""Autograd graph nodes: ``Node`` and its per-name subclasses (``MulBackward0`` ...),
``graph_stats``, and the saved-tensor hooks (``saved_tensors_hooks``, ``save_on_cpu``,
``disable_saved_tensors_hooks``)."""

from __future__ import annotations

import functools
import threading
from typing import Any, Callable, NamedTuple

from .. import _rustgrad
from .._rustgrad import Node

__all__ = [
    "GraphStats",
    "Node",
    "disable_saved_tensors_hooks",
    "graph_stats",
    "save_on_cpu",
    "saved_tensors_hooks",
]

_hooks_state = threading.local()


class saved_tensors_hooks:
    """Context manager that sets a pair of pack / unpack hooks for saved tensors on this
    thread. ``pack_hook(tensor)`` runs when an op saves a tensor for backward (with grad
    mode off) and may return anything; ``unpack_hook(packed)`` runs when backward (or a
    ``grad_fn._saved_*`` attribute) needs the tensor and must return a tensor. Nested
    pairs: the innermost packs. Packed tensors are not version-checked, as in PyTorch.
    Errors raised by either hook propagate unchanged. See Note [Saved tensor hooks].

    Args:
        pack_hook: ``Tensor -> Any``.
        unpack_hook: ``Any -> Tensor``.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(3, requires_grad=True)
        >>> packed = []
        >>> with rustgrad.autograd.graph.saved_tensors_hooks(
        ...     lambda t: packed.append(t) or len(packed) - 1, lambda i: packed[i]
        ... ):
        ...     y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.tolist(), len(packed)
        ([2.0, 2.0, 2.0], 2)
    """

    def __init__(self, pack_hook: Callable[[Any], Any], unpack_hook: Callable[[Any], Any]) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self) -> None:
        message = getattr(_hooks_state, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        _rustgrad._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        _hooks_state.depth = getattr(_hooks_state, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _rustgrad._pop_saved_tensors_hooks()
        _hooks_state.depth -= 1


class save_on_cpu(saved_tensors_hooks):
    """Saved-tensor hooks that keep each saved tensor on the CPU (PyTorch's offloading of
    activations). rustgrad has only the CPU, so as in PyTorch for a CPU tensor the pack
    hook keeps the tensor itself (``tensor.cpu()`` is the same tensor), or with
    ``pin_memory=True`` a copy (PyTorch copies into a new buffer, pinned when CUDA is
    available). Packed tensors are not version-checked, as in PyTorch.

    Args:
        pin_memory: copy each saved tensor when packing.
        device_type: accepted for compatibility.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(3, requires_grad=True)
        >>> with rustgrad.autograd.graph.save_on_cpu():
        ...     y = (x * x).sum()
        >>> y.backward()
        >>> x.grad.tolist()
        [2.0, 2.0, 2.0]
    """

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack_to_cpu(tensor: Any) -> Any:
            if not pin_memory:
                return tensor
            return tensor.detach().clone()

        def unpack_from_cpu(packed: Any) -> Any:
            return packed

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager under which registering saved-tensor hooks raises a RuntimeError
    with ``error_message`` (for code that must not see its saved tensors packed).
    Nests; the innermost message is used. Entering it while hooks are registered raises
    the same error.

    Args:
        error_message: the message of the RuntimeError.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.graph import disable_saved_tensors_hooks
        >>> with disable_saved_tensors_hooks("not here"):
        ...     pass
    """

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message
        self._prev: list[str | None] = []

    def __enter__(self) -> None:
        # PyTorch refuses to disable while hooks are registered.
        if getattr(_hooks_state, "depth", 0):
            raise RuntimeError(self.error_message)
        self._prev.append(getattr(_hooks_state, "disabled", None))
        _hooks_state.disabled = self.error_message

    def __exit__(self, *exc: object) -> None:
        _hooks_state.disabled = self._prev.pop()


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
