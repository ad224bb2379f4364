"""``rustgrad.cuda``: what a CPU-only PyTorch build reports, so that device-agnostic
scripts (``torch.device("cuda" if torch.cuda.is_available() else "cpu")``) run
unchanged. Queries answer "no CUDA"; calls that would need a GPU raise PyTorch's
AssertionError "Torch not compiled with CUDA enabled". See Note [Devices and default
dtype] in docs/architecture.md."""

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
    return AssertionError("Torch not compiled with CUDA enabled")


def is_available() -> bool:
    """Always False: rustgrad runs on the CPU only.

    Example:
        >>> import rustgrad as torch
        >>> torch.device("cuda" if torch.cuda.is_available() else "cpu")
        device(type='cpu')
    """
    return False


def device_count() -> int:
    """Always 0."""
    return 0


def is_initialized() -> bool:
    """Always False: CUDA is never initialised."""
    return False


def current_device() -> int:
    """Raises AssertionError, as a CPU-only PyTorch build does."""
    raise _not_compiled()


def synchronize(device: Any = None) -> None:
    """Raises AssertionError, as a CPU-only PyTorch build does."""
    raise _not_compiled()


def empty_cache() -> None:
    """Does nothing: no CUDA memory is ever cached (PyTorch does nothing either when CUDA
    was never initialised)."""


def manual_seed(seed: int) -> None:
    """Does nothing, as in a CPU-only PyTorch build (seeding CUDA is deferred there until
    CUDA is initialised, which never happens). Seed the CPU with ``rustgrad.manual_seed``."""
    int(seed)


def manual_seed_all(seed: int) -> None:
    """Does nothing (see ``manual_seed``)."""
    int(seed)
