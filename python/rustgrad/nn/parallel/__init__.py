"""``rustgrad.nn.parallel``: ``DataParallel`` and ``data_parallel`` with PyTorch's
behaviour on a machine without GPUs (rustgrad runs on the CPU), and
``DistributedDataParallel`` over ``rustgrad.distributed`` (Note [Distributed])."""

from __future__ import annotations

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
