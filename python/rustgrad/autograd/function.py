"""``rustgrad.autograd.function``: custom autograd Functions, as in PyTorch.

A subclass of :class:`Function` defines a static ``forward`` and ``backward``;
``F.apply(*args)`` runs ``forward`` with grad mode off and records ONE node of the
Rust graph (named ``FBackward`` for a class ``F``) whose backward calls the class's
``backward``. See Note [Custom Functions] in docs/architecture.md.

Example:
    >>> class Exp(Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = x.exp()
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from .. import _rustgrad
from .._rustgrad import Tensor
from .grad_mode import is_grad_enabled, no_grad

__all__ = ["BackwardCFunction", "Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]

_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors "
    "after they have already been freed). Saved intermediate values of the graph are freed "
    "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
    "backward through the graph a second time or if you need to access saved tensors after "
    "calling backward."
)


class FunctionCtx:
    """The ``ctx`` of a custom Function: what ``forward`` (or ``setup_context``) tells
    ``backward``. Any other attribute may be set on it freely."""

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Saves tensors for ``backward`` (read there as ``ctx.saved_tensors``).

        Saved tensors are checked against in-place writes when backward runs, and freed
        after it unless ``retain_graph=True``.

        Args:
            *tensors: tensors (inputs, outputs or intermediates) or None.
        """
        self.to_save = tensors

    def mark_dirty(self, *args: Tensor) -> None:
        """Marks inputs that ``forward`` modified in place: they take this Function's
        node as their history.

        Args:
            *args: the modified input tensors (they must also be returned).
        """
        for i, t in enumerate(args):
            if not isinstance(t, Tensor):
                raise RuntimeError(
                    "mark_dirty can only accept variables, but argument "
                    f"{i} is of type {type(t).__name__}"
                )
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args: Tensor) -> None:
        """Marks outputs that get no gradient history (``requires_grad=False``).

        Args:
            *args: output tensors of ``forward``.
        """
        for t in args:
            if not isinstance(t, Tensor):
                raise RuntimeError(
                    "mark_non_differentiable only accepts variable arguments, but got "
                    f"{type(t).__name__}"
                )
        self.non_differentiable = args

    def set_materialize_grads(self, value: bool) -> None:
        """Whether undefined output gradients reach ``backward`` as zeros (default)
        or as None.

        Args:
            value: True to materialize them.
        """
        self.materialize_grads = bool(value)


class BackwardCFunction(FunctionCtx, _rustgrad.Node):
    """The class of a Function's ``ctx`` (``FBackward`` for a Function ``F``). As in
    PyTorch, the ctx IS the node ``apply`` records: ``y.grad_fn is ctx``, so
    ``y.grad_fn.saved_tensors``, ``needs_input_grad`` and attributes set on ``ctx`` are
    read from ``grad_fn``, next to ``next_functions``, ``name()`` and hooks."""

    _forward_cls: type

    def name(self) -> str:
        """The node's name, ``FBackward`` for a Function ``F`` (also once the node is
        gone)."""
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple[Tensor | None, ...]:
        """The tensors given to ``save_for_backward``: inside ``backward``, or from the
        node until a backward frees them."""
        saved = self.__dict__.get("_saved")
        if saved is not None:
            # Version-checked here, when read, as PyTorch's (Note [Custom Functions]).
            return saved.unpack()
        count = self.__dict__.get("_saved_count")
        if count is None:
            # No node was recorded (no_grad, or no input requires grad): nothing saved.
            return ()
        return self._custom_saved_tensors(count)


class FunctionMeta(type):
    """Gives each Function class its ``ctx`` class, named ``<ClassName>Backward``."""

    def __init__(cls, name: str, bases: tuple[type, ...], attrs: dict[str, Any]) -> None:
        cls._backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        super().__init__(name, bases, attrs)


def _bind_default_args(func: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, ...]:
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd Functions.

    Define static ``forward(ctx, *args, **kwargs)`` and ``backward(ctx, *grads)`` (or
    ``forward(*args)`` together with ``setup_context(ctx, inputs, output)``), then call
    ``F.apply(*args)``.

    Example:
        >>> class Square(Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * grad
        >>> y = Square.apply(x)
    """

    _backward_cls: type
    generate_vmap_rule = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. "
            "Please use new-style autograd function with static forward method. "
            "(Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)"
        )

    @staticmethod
    def forward(*args: Any, **kwargs: Any) -> Any:
        """Computes the outputs (runs with grad mode off)."""
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> Any:
        """Fills ``ctx`` when ``forward`` does not take it."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx: Any, *grad_outputs: Any) -> Any:
        """Gradients of the inputs given those of the outputs."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @staticmethod
    def vjp(ctx: Any, *grad_outputs: Any) -> Any:
        """Alias of ``backward``."""
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any) -> Any:
        """Runs ``forward`` and records the Function's node (when grad mode is on and a
        tensor argument requires grad).

        Args:
            *args: the arguments of ``forward`` (tensors, None or any object).
            **kwargs: keyword arguments of ``forward``.

        Returns:
            ``forward``'s result; its tensors carry the node as their ``grad_fn``.
        """
        setup_context = cls.setup_context is not Function.setup_context
        if setup_context:
            args = _bind_default_args(cls.forward, *args, **kwargs)
            kwargs = {}
        ctx = cls._backward_cls()
        is_tensor = [isinstance(a, Tensor) for a in args]
        inputs = [a for a in args if isinstance(a, Tensor)]
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx.materialize_grads = True
        with no_grad():
            if setup_context:
                output = cls.forward(*args)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        is_tuple = isinstance(output, tuple)
        outs = list(output) if is_tuple else [output]
        out_positions = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
        saved = ctx.__dict__.pop("to_save", ())
        if is_grad_enabled() and any(t.requires_grad for t in inputs):
            # PyTorch checks what was saved only when it records the node.
            for i, t in enumerate(saved):
                if t is not None and not isinstance(t, Tensor):
                    raise TypeError(
                        "save_for_backward can only save variables, but argument "
                        f"{i} is of type {type(t).__name__}"
                    )
            ctx._saved_count = len(saved)
        else:
            saved = ()
        dirty = ctx.__dict__.pop("dirty_tensors", ())
        non_differentiable = ctx.__dict__.pop("non_differentiable", ())
        name = cls._backward_cls.__name__
        backward = _node_backward(cls, ctx, name, len(outs), out_positions, is_tensor)
        wrapped = _rustgrad._custom_apply(
            ctx,
            backward,
            name,
            inputs,
            [outs[i] for i in out_positions],
            list(dirty),
            list(non_differentiable),
            list(saved),
            ctx.materialize_grads,
            len(outs) - len(out_positions),
        )
        for i, t in zip(out_positions, wrapped):
            outs[i] = t
        return tuple(outs) if is_tuple else outs[0]


def _backward_of(cls: type) -> Callable[..., Any]:
    if cls.backward is not Function.backward:
        return cls.backward
    return cls.vjp


def _node_backward(
    cls: type,
    ctx: Any,
    name: str,
    n_outputs: int,
    out_positions: list[int],
    is_tensor: list[bool],
) -> Callable[..., list[Tensor | None]]:
    """The callable the node runs: puts the tensor outputs' gradients at their places,
    calls the class's backward and checks what it returns, as PyTorch's PyNode::apply."""
    n_args = len(is_tensor)

    def node_backward(
        grads: tuple[Tensor | None, ...], saved: Any, needs: tuple[bool, ...]
    ) -> list[Tensor | None]:
        full: list[Tensor | None] = [None] * n_outputs
        for i, g in zip(out_positions, grads):
            full[i] = g
        ctx._saved = saved
        try:
            result = _backward_of(cls)(ctx, *full)
        finally:
            ctx._saved = None
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) > n_args and all(r is None for r in result[n_args:]):
            result = result[:n_args]
        if len(result) != n_args:
            raise RuntimeError(
                f"function {name} returned an incorrect number of gradients "
                f"(expected {n_args}, got {len(result)})"
            )
        out: list[Tensor | None] = []
        for i, (r, tensor_input) in enumerate(zip(result, is_tensor)):
            if tensor_input:
                if r is not None and not isinstance(r, Tensor):
                    raise RuntimeError(f"expected Variable or None (got {type(r).__name__})")
                out.append(r)
            elif r is not None:
                raise RuntimeError(
                    f"function {name} returned a gradient different than None at position "
                    f"{i + 1}, but the corresponding forward input was not a Variable"
                )
        return out

    return node_backward


class InplaceFunction(Function):
    """A Function with an ``inplace`` flag (PyTorch's legacy helper)."""

    def __init__(self, inplace: bool = False) -> None:
        self.inplace = inplace


class _DelayedError(Function):
    """Passes gradients through, and raises if differentiated (``once_differentiable``)."""

    @staticmethod
    def forward(ctx: Any, *tensors: Tensor | None) -> tuple[Tensor | None, ...]:
        return tensors

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> Any:
        raise RuntimeError(
            "trying to differentiate twice a function that was marked with @once_differentiable"
        )


def once_differentiable(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a ``backward`` that is not differentiable itself: it runs with grad
    mode off, and differentiating its result (double backward) raises PyTorch's "trying
    to differentiate twice a function that was marked with @once_differentiable".

    Args:
        fn: the ``backward(ctx, *grads)`` staticmethod's function.

    Returns:
        The wrapped backward.
    """

    @functools.wraps(fn)
    def wrapper(ctx: Any, *args: Any) -> Any:
        with no_grad():
            outputs = fn(ctx, *args)
        if not is_grad_enabled():
            return outputs
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            return outputs
        if not isinstance(outputs, tuple):
            outputs = (outputs,)

        def fake_requires_grad(var: Any) -> Any:
            if isinstance(var, Tensor):
                var = var.detach()
                var.requires_grad = True
            return var

        return _DelayedError.apply(*[fake_requires_grad(v) for v in outputs])

    return wrapper
