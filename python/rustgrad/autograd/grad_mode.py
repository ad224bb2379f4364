"""Grad-mode context managers and decorators: ``no_grad``, ``enable_grad``,
``set_grad_enabled``, ``inference_mode``. Grad mode is thread-local, as in PyTorch.

As decorators they work as PyTorch's do: with or without parentheses (``@no_grad`` and
``@no_grad()``; ``set_grad_enabled`` needs its mode), and on generator functions, whose
body runs under the mode each time it is resumed while the caller's mode is restored
between yields."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Generator
from typing import Any, Callable, TypeVar

from .. import _rustgrad

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "inference_mode",
    "is_inference_mode_enabled",
]

is_grad_enabled = _rustgrad.is_grad_enabled
is_inference_mode_enabled = _rustgrad.is_inference_mode_enabled


class _GradModeContext:
    """Base of the grad-mode switches: a context manager that is also a decorator."""

    _enabled: bool

    def __init__(self) -> None:
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_rustgrad.is_grad_enabled())
        _rustgrad._set_grad_enabled(self._enabled)

    def __exit__(self, *exc: object) -> None:
        _rustgrad._set_grad_enabled(self._prev.pop())

    def __call__(self, func: F) -> F:
        return _decorate(func, self._enabled)


class _Mode:
    """Sets grad mode to ``enabled`` for the duration of a ``with`` block."""

    def __init__(self, enabled: bool) -> None:
        self._enabled = enabled
        self._prev = True

    def __enter__(self) -> None:
        self._prev = _rustgrad.is_grad_enabled()
        _rustgrad._set_grad_enabled(self._enabled)

    def __exit__(self, *exc: object) -> None:
        _rustgrad._set_grad_enabled(self._prev)


class _InferenceMode:
    """Sets inference mode to ``mode`` (and grad mode to its opposite, as PyTorch's
    ``InferenceMode``) for a ``with`` block, restoring both on exit."""

    def __init__(self, mode: bool) -> None:
        self._mode = mode
        self._prev = (True, False)

    def __enter__(self) -> None:
        self._prev = (_rustgrad.is_grad_enabled(), _rustgrad.is_inference_mode_enabled())
        _rustgrad._set_inference_mode(self._mode)

    def __exit__(self, *exc: object) -> None:
        grad, inference = self._prev
        _rustgrad._set_inference_mode(inference)
        _rustgrad._set_grad_enabled(grad)


def _decorate(func: F, enabled: bool, mode: Callable[[bool], Any] = _Mode) -> F:
    """Wraps ``func`` to run under ``mode(enabled)`` (grad mode by default), restoring
    the caller's mode. A generator function gets the mode each time it is resumed, and
    the caller's mode back at each yield."""
    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def generator(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            gen = func(*args, **kwargs)
            try:
                with mode(enabled):
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with mode(enabled):
                            gen.close()
                        raise
                    except BaseException:
                        with mode(enabled):
                            response = gen.throw(*sys.exc_info())
                    else:
                        with mode(enabled):
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with mode(enabled):
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _NoParamDecorator(_GradModeContext):
    """A switch that may also decorate without parentheses: ``@no_grad`` is
    ``@no_grad()`` (PyTorch's ``_NoParamDecoratorContextManager``)."""

    def __new__(cls, orig_func: Callable[..., Any] | None = None) -> Any:
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Disables gradient recording on this thread (context manager or decorator).

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(2, requires_grad=True)
        >>> with rustgrad.no_grad():
        ...     y = x * 2
        >>> y.requires_grad
        False
    """

    def __init__(self) -> None:
        super().__init__()
        self._enabled = False


class enable_grad(_NoParamDecorator):
    """Enables gradient recording on this thread, e.g. inside ``no_grad``.

    Example:
        >>> import rustgrad
        >>> with rustgrad.no_grad(), rustgrad.enable_grad():
        ...     rustgrad.is_grad_enabled()
        True
    """

    def __init__(self) -> None:
        super().__init__()
        self._enabled = True


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode``. Takes effect immediately (like PyTorch), and as a
    context manager restores the previous mode on exit.

    Args:
        mode: whether to record gradients.

    Example:
        >>> import rustgrad
        >>> with rustgrad.set_grad_enabled(False):
        ...     rustgrad.is_grad_enabled()
        False
    """

    def __init__(self, mode: bool) -> None:
        super().__init__()
        self._enabled = bool(mode)
        self._prev.append(_rustgrad.is_grad_enabled())
        _rustgrad._set_grad_enabled(self._enabled)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        _rustgrad._set_grad_enabled(self._prev.pop())

    def __call__(self, func: F) -> F:
        # Used as a decorator: undo the immediate switch made by __init__.
        _rustgrad._set_grad_enabled(self._prev.pop())
        return _decorate(func, self._enabled)


class inference_mode(_GradModeContext):
    """Enables (or, with ``mode=False``, disables) inference mode on this thread: a
    context manager, and a decorator with or without parentheses (also of generator
    functions). Nothing is recorded inside, even under ``enable_grad``; tensors made
    inside are inference tensors (``is_inference()``), which have no version counter,
    cannot be saved for backward and cannot be modified in place outside inference
    mode. See Note [Inference mode].

    Args:
        mode: whether to enable inference mode (a function decorates it with
            inference mode enabled).

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(2, requires_grad=True)
        >>> with rustgrad.inference_mode():
        ...     y = x * x
        >>> y.requires_grad, y.is_inference()
        (False, True)
    """

    def __new__(cls, mode: Any = True) -> Any:
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)

    def __init__(self, mode: bool = True) -> None:
        super().__init__()
        self.mode = mode
        self._contexts: list[_InferenceMode] = []

    def __enter__(self) -> None:
        ctx = _InferenceMode(self.mode)
        ctx.__enter__()
        self._contexts.append(ctx)

    def __exit__(self, *exc: object) -> None:
        self._contexts.pop().__exit__(*exc)

    def __call__(self, func: F) -> F:
        return _decorate(func, self.mode, _InferenceMode)

    def clone(self) -> inference_mode:
        """A new context manager with the same mode."""
        return self.__class__(self.mode)
