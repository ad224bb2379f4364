"""Grad-mode context managers and decorators: ``no_grad``, ``enable_grad``,
``set_grad_enabled``. Grad mode is thread-local, as in PyTorch."""

from __future__ import annotations

import functools
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


def _decorate(func: F, enabled: bool) -> F:
    """Wraps ``func`` to run with grad mode ``enabled``, restoring the caller's mode."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = _rustgrad.is_grad_enabled()
        _rustgrad._set_grad_enabled(enabled)
        try:
            return func(*args, **kwargs)
        finally:
            _rustgrad._set_grad_enabled(previous)

    return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
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


class enable_grad(_GradModeContext):
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
