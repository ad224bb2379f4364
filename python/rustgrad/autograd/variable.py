"""``Variable``: the pre-0.4 PyTorch name for a tensor taking part in autograd."""

from __future__ import annotations

from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """Wraps a tensor for autograd, as in the seed notes; returns a ``Tensor``.

    Every tensor is a Variable (``isinstance(t, Variable)`` is True). The legacy
    ``volatile`` flag marks a pure-inference input: any op with a volatile input gives a
    volatile output that records no history, even if other inputs require grad.

    Args:
        data: a tensor (shared, not copied) or data accepted by ``rustgrad.tensor``.
        requires_grad: whether to compute gradients for this leaf.
        volatile: legacy inference flag; implies ``requires_grad=False``.

    Returns:
        A leaf ``Tensor`` sharing ``data``'s storage.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd import Variable
        >>> x = Variable(rustgrad.ones(2, 2), requires_grad=True)
        >>> x
        tensor([[1., 1.],
                [1., 1.]], requires_grad=True)
    """

    def __new__(cls, data: Any, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # type: ignore[misc]
        if not isinstance(data, Tensor):
            data = _rustgrad.tensor(data)
        if volatile and requires_grad:
            raise ValueError("a volatile Variable cannot require grad")
        return _rustgrad._make_variable(data, requires_grad, volatile)
