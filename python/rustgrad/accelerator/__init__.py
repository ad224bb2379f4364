"""``rustgrad.accelerator``: there is none (rustgrad runs on the CPU only), as in a
CPU-only PyTorch build. See Note [Devices and default dtype] in docs/architecture.md."""

from __future__ import annotations

from .._rustgrad import device

__all__ = ["current_accelerator", "device_count", "is_available"]


def is_available() -> bool:
    """Always False."""
    return False


def device_count() -> int:
    """Always 0."""
    return 0


def current_accelerator(check_available: bool = False) -> device | None:
    """Always None: no accelerator is present."""
    return None
