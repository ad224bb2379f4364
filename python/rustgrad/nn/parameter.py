"""``Parameter``: a tensor that a ``Module`` registers as one of its parameters."""

from __future__ import annotations

from typing import Any

from .._rustgrad import Tensor, zeros

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf tensor that is a module parameter; requires grad by default and can
    never be volatile.

    Args:
        data: the tensor to wrap (its storage is shared). Defaults to an empty tensor.
        requires_grad: whether the parameter requires gradient (default True).

    Example:
        >>> import rustgrad
        >>> w = rustgrad.nn.Parameter(rustgrad.zeros(2))
        >>> w.requires_grad, isinstance(w, rustgrad.Tensor)
        (True, True)
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True) -> Parameter:
        if data is None:
            data = zeros(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor, got {type(data).__name__}")
        if data.volatile:
            raise ValueError("a Parameter cannot be volatile")
        if not data.is_meta:
            return super().__new__(cls, _share=data, requires_grad=requires_grad)
        # A Parameter of a meta tensor is a meta Parameter (Note [Meta device]).
        from .._meta import MetaParameter, MetaTensor

        if not issubclass(cls, MetaTensor):
            cls = MetaParameter if cls is Parameter else cls
        param = super().__new__(cls, _share=data, requires_grad=requires_grad)
        param.__dict__["_meta_strides"] = tuple(data.stride())
        return param

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Construction happens in __new__; Tensor.__init__ registers the object so that
        # ``AccumulateGrad.variable`` is this Parameter (Note [Python object identity]).
        super().__init__()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()
