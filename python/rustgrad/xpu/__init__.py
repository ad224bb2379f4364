"""``rustgrad.xpu``: Intel GPUs, which rustgrad does not have. Answers as a PyTorch
build without XPU support: nothing available, and calls that need a device raise
PyTorch's AssertionError "Torch not compiled with XPU enabled". See Note [Devices and
default dtype]."""

from __future__ import annotations

from typing import Any

__all__ = [
    "current_device",
    "device_count",
    "empty_cache",
    "is_available",
    "is_initialized",
    "manual_seed",
    "manual_seed_all",
    "synchronize",
]


def _not_compiled() -> AssertionError:
    return AssertionError("Torch not compiled with XPU enabled")


def is_available() -> bool:
    """Whether an XPU can be used: never.

    Example:
        >>> rustgrad.xpu.is_available()
        False
    """
    return False


def device_count() -> int:
    """The number of XPUs: 0."""
    return 0


def is_initialized() -> bool:
    """Whether XPU state is initialised: never."""
    return False


def current_device() -> int:
    """Raises PyTorch's AssertionError: there is no XPU."""
    raise _not_compiled()


def synchronize(device: Any = None) -> None:
    """Raises PyTorch's AssertionError: there is no XPU."""
    raise _not_compiled()


def empty_cache() -> None:
    """A no-op, as in a build without XPU."""


def manual_seed(seed: int) -> None:
    """A no-op without XPUs (PyTorch seeds lazily, for no device)."""


def manual_seed_all(seed: int) -> None:
    """A no-op without XPUs."""
