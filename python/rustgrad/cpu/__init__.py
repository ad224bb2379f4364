"""``rustgrad.cpu``: PyTorch's ``torch.cpu`` queries, plus the memory statistics that
``torch.cuda`` offers for a GPU (``memory_allocated``, ``max_memory_allocated``,
``reset_peak_memory_stats``), here for the tensor memory the engine owns on the CPU.

The counts are exact byte totals of live tensor storages, not the process's RSS: they
do not depend on the allocator, so two ways of running the same computation can be
compared to the byte. Memory shared with numpy (``from_numpy``) belongs to numpy and is
not counted. See Note [Memory statistics] in docs/architecture.md."""

from __future__ import annotations

from typing import Any

from .._rustgrad import (
    _max_memory_allocated,
    _memory_allocated,
    _reset_peak_memory_stats,
)

__all__ = [
    "current_device",
    "device_count",
    "is_available",
    "max_memory_allocated",
    "memory_allocated",
    "reset_peak_memory_stats",
    "synchronize",
]


def is_available() -> bool:
    """Always True, as ``torch.cpu.is_available()``."""
    return True


def device_count() -> int:
    """1, as ``torch.cpu.device_count()``."""
    return 1


def current_device() -> str:
    """``'cpu'``, as ``torch.cpu.current_device()``."""
    return "cpu"


def synchronize(device: Any = None) -> None:
    """Does nothing: CPU kernels have finished when their call returns."""


def memory_allocated(device: Any = None) -> int:
    """Bytes held now by the engine's tensor storages.

    Example:
        >>> import rustgrad as torch
        >>> before = torch.cpu.memory_allocated()
        >>> x = torch.zeros(1000)
        >>> torch.cpu.memory_allocated() - before
        4000
    """
    return _memory_allocated()


def max_memory_allocated(device: Any = None) -> int:
    """The most bytes held at once by tensor storages since the process started or
    :func:`reset_peak_memory_stats` was last called.

    Example:
        >>> import rustgrad as torch
        >>> torch.cpu.reset_peak_memory_stats()
        >>> base = torch.cpu.memory_allocated()
        >>> y = torch.ones(1000).exp().sum()  # ones and exp are alive at once
        >>> torch.cpu.max_memory_allocated() - base
        8000
    """
    return _max_memory_allocated()


def reset_peak_memory_stats(device: Any = None) -> None:
    """Starts a new peak measurement from the bytes held now."""
    _reset_peak_memory_stats()
