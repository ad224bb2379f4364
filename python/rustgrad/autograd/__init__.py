"""``rustgrad.autograd``: Variable, grad mode, ``backward``, ``gradcheck``."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _rustgrad
from .._rustgrad import Tensor
from . import graph
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

# As in PyTorch, the functions shadow the submodule's name here; the module (with
# GradcheckError) stays importable as ``rustgrad.autograd.gradcheck``.
from .gradcheck import gradcheck, gradgradcheck
from .graph import graph_stats
from .variable import Variable

__all__ = [
    "Variable",
    "backward",
    "enable_grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "graph_stats",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
]


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
) -> None:
    """Computes the sum of gradients of ``tensors`` w.r.t. graph leaves.

    Args:
        tensors: the outputs to differentiate.
        grad_tensors: their gradients (None for scalars).
        retain_graph: keep saved tensors for another backward.
        create_graph: record the backward pass for higher-order gradients.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(2, requires_grad=True)
        >>> rustgrad.autograd.backward((x * 3).sum())
        >>> x.grad
        tensor([3., 3.])
    """
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors)
    retain = create_graph if retain_graph is None else retain_graph
    _rustgrad._backward(list(tensors), list(grad_tensors), retain, create_graph)
