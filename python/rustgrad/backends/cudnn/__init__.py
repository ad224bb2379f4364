"""``rustgrad.backends.cudnn``: cuDNN is not available, as in a CPU-only PyTorch build.
The flags training scripts set (``torch.backends.cudnn.benchmark = True``,
``deterministic = True``) are plain module attributes and change nothing: rustgrad's
kernels are deterministic already (Note [Determinism])."""

from __future__ import annotations

__all__ = ["benchmark", "deterministic", "enabled", "is_available", "version"]

enabled = True
benchmark = False
deterministic = False


def is_available() -> bool:
    """Always False."""
    return False


def version() -> None:
    """None: cuDNN is not loaded."""
    return None
