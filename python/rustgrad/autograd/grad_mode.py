"""Grad-mode context managers and decorators: ``no_grad``, ``enable_grad``,
``set_grad_enabled``. Grad mode is thread-local, as in PyTorch.

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

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]

is_grad_enabled = _rustgrad.is_grad_enabled


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


def _decorate(func: F, enabled: bool) -> F:
    """Wraps ``func`` to run with grad mode ``enabled``, restoring the caller's mode. A
    generator function gets the mode each time it is resumed, and the caller's mode
    back at each yield."""
    if inspect.isgeneratorfunction(func):

        @functools.wraps(func)
        def generator(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            gen = func(*args, **kwargs)
            try:
                with _Mode(enabled):
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with _Mode(enabled):
                            gen.close()
                        raise
                    except BaseException:
                        with _Mode(enabled):
                            response = gen.throw(*sys.exc_info())
                    else:
                        with _Mode(enabled):
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value

        return generator  # type: ignore[return-value]

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with _Mode(enabled):
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
