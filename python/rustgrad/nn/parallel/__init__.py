"""``rustgrad.nn.parallel``: ``DataParallel`` and ``data_parallel`` with PyTorch's
behaviour on a machine without GPUs (rustgrad runs on the CPU)."""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel

__all__ = ["DataParallel", "data_parallel"]
