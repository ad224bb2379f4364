"""The engine's thread pool and the parallel plans of its heavy kernels.

``rustgrad.set_num_threads`` / ``get_num_threads`` size the pool. A GEMM or a
convolution splits its work into tasks planned from the sizes and the thread count
(Note [GEMM plans] in docs/architecture.md); :func:`record_plans` shows those plans,
so the split a 16-thread machine would run can be checked on any machine::

    with rustgrad.parallel.record_plans(num_threads=16) as plans:
        loss = model(x).sum()
        loss.backward()
    for p in plans:
        print(p.kernel, p.tasks, p.min_work, p.max_work)

The thread count changes which tasks run where, never the results: every kernel's
output is bitwise the same for any thread count.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import NamedTuple

from . import _rustgrad

__all__ = ["MAX_THREADS", "PlanRecord", "record_plans"]

#: The largest thread count ``set_num_threads`` accepts.
MAX_THREADS = 1024

_lock = threading.Lock()


class PlanRecord(NamedTuple):
    """One kernel call's parallel plan.

    ``kernel`` names the kernel (``"matmul"``, ``"conv_forward"``,
    ``"conv_input_grad"``, ``"conv_weight_grad"``); ``tasks`` is the number of tasks
    its work was split into; ``min_work`` and ``max_work`` are the multiply-adds of
    its smallest and largest task.
    """

    kernel: str
    tasks: int
    min_work: int
    max_work: int


@contextlib.contextmanager
def record_plans(num_threads: int | None = None) -> Iterator[list[PlanRecord]]:
    """Records the parallel plan of every GEMM and convolution call in the block.

    Yields a list that is filled with one :class:`PlanRecord` per call when the
    block ends. With ``num_threads``, the block runs with that many threads (the
    previous count is restored after it), so plans for a larger machine can be seen
    on a small one (more threads than cores works, oversubscribed). Not reentrant:
    one recording at a time per process.
    """
    from . import get_num_threads, set_num_threads

    if not _lock.acquire(blocking=False):
        raise RuntimeError("record_plans: a recording is already in progress")
    before = get_num_threads()
    records: list[PlanRecord] = []
    try:
        if num_threads is not None:
            set_num_threads(num_threads)
        _rustgrad._start_plan_recording()
        try:
            yield records
        finally:
            records.extend(PlanRecord(*r) for r in _rustgrad._stop_plan_recording())
    finally:
        if num_threads is not None:
            set_num_threads(before)
        _lock.release()
