"""DataLoader with worker processes (``num_workers > 0``).

What the loader yields, and the workers' seeds and random streams, are compared with
PyTorch's (tests/vectors/data_workers.json, written by
tests/vectors/generate_data_workers.py, which defines the same datasets over torch);
map-style batches also with rustgrad's own ``num_workers=0`` path. The rest checks
behaviour: worker_init_fn, persistent workers, shutdown, and the error cases.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
from rustgrad.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "data_workers.json"
CASES = json.loads(VECTORS.read_text())["cases"]
# Tests whose datasets or functions are local (not picklable) fork explicitly: Python 3.14
# makes 'forkserver' the default start method on Linux.
FORK = multiprocessing.get_context("fork")
USABLE_CPUS = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

# PyTorch's "more workers than CPUs" warning depends on the machine: tests that are not
# about it ignore it, so that they pass on a one-CPU machine too (too_many_workers()
# below still checks it where a test expects it).
pytestmark = pytest.mark.filterwarnings("ignore:This DataLoader will create:UserWarning")


# ------------------------------------------------------------------ datasets (as the generator's)


class Range(Dataset):
    """``dataset[i] == i``."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        return i


class Probe(Range):
    """Sample ``i`` records the worker's identity and its random streams."""

    def __getitem__(self, i: int) -> list:
        info = get_worker_info()
        assert info is not None and info.dataset is self
        return [
            i,
            info.id,
            info.num_workers,
            info.seed,
            torch.initial_seed(),
            torch.rand(2).tolist(),
            random.random(),
            float(np.random.random()),
        ]


class Iterable(IterableDataset):
    """The ``iterable_*`` kinds of generate_data_workers.py."""

    def __init__(self, kind: str, n: int) -> None:
        self.kind = kind
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        worker, workers = (0, 1) if info is None else (info.id, info.num_workers)
        if self.kind == "iterable_plain":
            return iter(range(self.n))
        if self.kind == "iterable_sharded":
            return iter(range(worker, self.n, workers))
        return iter(range(100 * worker, 100 * worker + (worker + 1) * self.n))


class Pid(Range):
    """Sample ``i`` is ``(i, pid of the process that read it)``."""

    def __getitem__(self, i: int) -> Any:
        return (i, os.getpid())


class Failing(Range):
    """Raises ``error`` for sample ``bad``."""

    def __init__(self, n: int, bad: int, error: BaseException) -> None:
        super().__init__(n)
        self.bad = bad
        self.error = error

    def __getitem__(self, i: int) -> Any:
        if i == self.bad:
            raise self.error
        return i


class Dying(Range):
    """Kills its own process (``signal``) or exits with ``code`` at sample ``bad``."""

    def __init__(self, n: int, bad: int, how: str) -> None:
        super().__init__(n)
        self.bad = bad
        self.how = how

    def __getitem__(self, i: int) -> Any:
        if i == self.bad:
            if self.how == "signal":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return i


class TwoArgError(Exception):
    """An exception that cannot be rebuilt from one message."""

    def __init__(self, a: int, b: int) -> None:
        super().__init__(a, b)


def as_lists(batch: Any) -> Any:
    """A batch as nested Python lists and numbers."""
    if isinstance(batch, torch.Tensor):
        return batch.tolist()
    if isinstance(batch, (list, tuple)):
        return [as_lists(item) for item in batch]
    return batch


def too_many_workers(num_workers: int) -> Any:
    """PyTorch's warning when the loader starts more workers than usable CPUs."""
    if USABLE_CPUS is not None and num_workers <= USABLE_CPUS:
        return contextlib.nullcontext()
    return pytest.warns(UserWarning, match=f"This DataLoader will create {num_workers} worker")


def no_workers_left() -> bool:
    """Whether every worker process this test process started has exited (reaped)."""
    deadline = time.monotonic() + 5
    while multiprocessing.active_children():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


# ------------------------------------------------------------------------------ PyTorch's output


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_matches_pytorch(case: dict[str, Any]) -> None:
    if "seed" in case:
        generator = torch.Generator().manual_seed(case["seed"])
    else:
        torch.manual_seed(case["global_seed"])
        generator = None
    kind, n = case["kind"], case["args"]["n"]
    dataset: Any = Range(n) if kind == "map" else Probe(n) if kind == "probe" else Iterable(kind, n)
    num_workers = case["loader"]["num_workers"]
    with too_many_workers(num_workers):
        loader = DataLoader(dataset, generator=generator, **case["loader"])
        epochs = [as_lists(list(loader)) for _ in range(case.get("epochs", 1))]
    assert epochs == case["expected"]
    assert torch.randperm(8, generator=generator).tolist() == case["after"]
    del loader
    assert no_workers_left()


# ------------------------------------------------------------------------- map-style datasets


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_map_same_batches_as_main_process(num_workers: int) -> None:
    features = torch.arange(26, dtype=torch.float32).reshape(13, 2) / 4
    dataset = TensorDataset(features, torch.arange(13))

    def epochs(workers: int) -> tuple[list, list[int]]:
        generator = torch.Generator().manual_seed(2024)
        loader = DataLoader(
            dataset, batch_size=4, shuffle=True, generator=generator, num_workers=workers
        )
        batches = []
        for _ in range(2):
            for x, y in loader:
                assert x.dtype == torch.float32 and y.dtype == torch.int64
                batches.append((x.tolist(), y.tolist()))
        return batches, torch.randperm(5, generator=generator).tolist()

    expected = epochs(0)
    with too_many_workers(num_workers):
        assert epochs(num_workers) == expected


def test_batches_are_spread_round_robin() -> None:
    loader = DataLoader(Pid(8), batch_size=2, num_workers=2)
    pids = [batch[1].tolist() for batch in loader]
    assert all(len(set(batch)) == 1 for batch in pids)
    first = [batch[0] for batch in pids]
    assert first[0] != first[1] and first[0::2] == [first[0]] * 2 and first[1::2] == [first[1]] * 2
    assert os.getpid() not in first


def test_in_order_false_yields_every_batch() -> None:
    loader = DataLoader(Range(10), batch_size=3, num_workers=2, in_order=False)
    assert sorted(b.tolist() for b in loader) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]


@pytest.mark.parametrize("method", ["spawn", "forkserver"])
def test_other_start_methods(method: str) -> None:
    loader = DataLoader(Pid(5), batch_size=2, num_workers=1, multiprocessing_context=method)
    batches = [(b[0].tolist(), b[1].tolist()) for b in loader]
    assert [indices for indices, _ in batches] == [[0, 1], [2, 3], [4]]
    assert os.getpid() not in batches[0][1]
    assert loader.multiprocessing_context.get_start_method() == method
    assert no_workers_left()


# --------------------------------------------------------------------------- seeds and init


def test_worker_seeds_and_init_fn() -> None:
    calls = FORK.Queue()

    def init_fn(worker_id: int) -> None:
        info = get_worker_info()
        assert info is not None
        calls.put((worker_id, info.id, info.num_workers, info.seed, torch.initial_seed()))
        info.dataset.n = 1000 * (worker_id + 1)  # this worker's copy only

    class Length(Range):
        def __getitem__(self, i: int) -> Any:
            return (i, self.n)

    generator = torch.Generator().manual_seed(5)
    base_seed = torch.empty((), dtype=torch.int64).random_(
        generator=torch.Generator().manual_seed(5)
    )
    loader = DataLoader(
        Length(6),
        batch_size=None,
        num_workers=2,
        worker_init_fn=init_fn,
        generator=generator,
        multiprocessing_context=FORK,
    )
    samples = [(int(i), int(n)) for i, n in loader]
    assert samples == [(0, 1000), (1, 2000), (2, 1000), (3, 2000), (4, 1000), (5, 2000)]
    seen = sorted(calls.get(timeout=5) for _ in range(2))
    base = base_seed.item()
    assert seen == [(0, 0, 2, base, base), (1, 1, 2, base + 1, base + 1)]
    assert get_worker_info() is None


class Threads(Range):
    """Sample ``i``: the worker's engine thread count, and a sum large enough to run on
    the engine's pool with ``i + 1`` threads."""

    def __getitem__(self, i: int) -> Any:
        threads = torch.get_num_threads()
        torch.set_num_threads(i + 1)
        total = torch.ones(1 << 21, dtype=torch.float64).mul(3).sum().item()
        return threads, total


def test_worker_engine_runs_after_fork() -> None:
    # The parent's pool exists (and ran) before the fork; a worker builds its own.
    assert torch.ones(1 << 21).mul(2).sum().item() == 2 * (1 << 21)
    loader = DataLoader(Threads(2), batch_size=None, num_workers=1, multiprocessing_context=FORK)
    assert [(int(t), float(s)) for t, s in loader] == [(1, 3.0 * (1 << 21))] * 2


def test_persistent_workers_keep_processes() -> None:
    loader = DataLoader(Pid(6), batch_size=2, num_workers=2, persistent_workers=True)
    first = [tuple(b[1].tolist()) for b in loader]
    iterator = loader._iterator
    second = [tuple(b[1].tolist()) for b in loader]
    assert first == second and loader._iterator is iterator
    # An epoch broken off early: the next one starts from its first batch again.
    for _ in loader:
        break
    assert [b[0].tolist() for b in loader] == [[0, 1], [2, 3], [4, 5]]
    assert multiprocessing.active_children()
    del loader, iterator
    gc.collect()
    assert no_workers_left()

    plain = DataLoader(Pid(2), batch_size=2, num_workers=1)
    assert next(iter(plain))[1].tolist() != next(iter(plain))[1].tolist()


# ----------------------------------------------------------------------------------- shutdown


def test_early_break_and_gc_leave_no_processes() -> None:
    loader = DataLoader(Range(100), batch_size=2, num_workers=2)
    for batch in loader:
        assert batch.tolist() == [0, 1]
        break
    # The loop held the only reference to its iterator.
    assert no_workers_left()

    iterator = iter(loader)
    next(iterator)
    assert len(multiprocessing.active_children()) == 2
    del iterator
    assert no_workers_left()

    # An iterator that dies in a reference cycle is shut down as quickly.
    iterator = iter(loader)
    next(iterator)
    iterator.cycle = iterator
    del iterator
    start = time.monotonic()
    gc.collect()
    assert no_workers_left()
    assert time.monotonic() - start < 2  # the workers exited; none waited to be killed

    assert len(list(loader)) == 50
    assert no_workers_left()


def test_workers_exit_when_main_process_dies(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        import rustgrad as torch
        from rustgrad.utils.data import DataLoader, TensorDataset, _worker
        _worker.MP_STATUS_CHECK_INTERVAL = 0.1  # how often a worker checks its parent
        loader = DataLoader(TensorDataset(torch.arange(100)), batch_size=2, num_workers=2)
        iterator = iter(loader)
        next(iterator)
        print(" ".join(str(w.pid) for w in iterator._workers), flush=True)
        os._exit(0)  # no atexit handlers, no shutdown: the workers are on their own
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    pids = [int(pid) for pid in result.stdout.split()]
    assert len(pids) == 2

    def running(pid: int) -> bool:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return False
        return "\nState:\tZ" not in status  # an unreaped zombie has exited

    deadline = time.monotonic() + 10
    while any(running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(running(pid) for pid in pids)


# ------------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "error, raised, message",
    [
        (ValueError("bad sample"), ValueError, "bad sample"),
        (KeyError("missing"), KeyError, "missing"),
        (TwoArgError(1, 2), RuntimeError, "TwoArgError"),
    ],
)
def test_worker_exception_is_reraised(error: BaseException, raised: type, message: str) -> None:
    loader = DataLoader(Failing(8, 3, error), batch_size=None, num_workers=2)
    got = []
    with pytest.raises(raised) as info:
        for sample in loader:
            got.append(int(sample))
    assert got == [0, 1, 2]
    text = str(info.value) if raised is not KeyError else info.value.args[0]
    assert text.startswith(f"Caught {type(error).__name__} in DataLoader worker process 1.\n")
    assert "Original Traceback (most recent call last):" in text and message in text
    del info, loader
    gc.collect()
    assert no_workers_left()


def test_worker_init_fn_error_is_reraised() -> None:
    def init_fn(worker_id: int) -> None:
        raise ZeroDivisionError(f"init of {worker_id}")

    loader = DataLoader(
        Range(4), num_workers=1, worker_init_fn=init_fn, multiprocessing_context=FORK
    )
    with pytest.raises(ZeroDivisionError, match="Caught ZeroDivisionError in DataLoader worker"):
        next(iter(loader))


@pytest.mark.parametrize(
    "how, cause",
    [
        ("signal", r"DataLoader worker \(pid \d+\) is killed by signal: Killed\. "),
        ("exit", r"DataLoader worker \(pid \d+\) exited unexpectedly with exit code 3\."),
    ],
)
def test_dead_worker_raises(how: str, cause: str) -> None:
    loader = DataLoader(Dying(6, 2, how), batch_size=None, num_workers=1)
    got = []
    start = time.monotonic()
    with pytest.raises(
        RuntimeError, match=r"^DataLoader worker \(pid\(s\) \d+\) exited unexpectedly$"
    ) as info:
        for sample in loader:
            got.append(int(sample))
    assert time.monotonic() - start < 4  # noticed at once, not after a poll interval
    # The results sent just before the exit may be lost with the process.
    assert got == [0, 1][: len(got)]
    assert isinstance(info.value.__cause__, RuntimeError)
    assert re.match(cause, str(info.value.__cause__))


def test_timeout() -> None:
    loader = DataLoader(
        Range(4),
        num_workers=1,
        timeout=0.1,
        worker_init_fn=lambda worker_id: time.sleep(0.5),
        multiprocessing_context=FORK,
    )
    with pytest.raises(RuntimeError, match=r"^DataLoader timed out after 0\.1 seconds$"):
        next(iter(loader))
    gc.collect()
    assert no_workers_left()


def test_option_errors() -> None:
    cases = [
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs num_workers"),
        (
            dict(multiprocessing_context="fork"),
            ValueError,
            "multiprocessing_context can only be used with multi-process loading",
        ),
        (dict(timeout=1), ValueError, "timeout option needs num_workers > 0"),
        (
            dict(num_workers=1, prefetch_factor=-1),
            ValueError,
            "prefetch_factor option should be non-negative",
        ),
        (
            dict(num_workers=1, multiprocessing_context="thread"),
            ValueError,
            "multiprocessing_context option should specify a valid start method in",
        ),
        (
            dict(num_workers=1, multiprocessing_context=3),
            TypeError,
            "multiprocessing_context option should be a valid context object",
        ),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            DataLoader(Range(3), **kwargs)
    loader = DataLoader(Range(3), num_workers=1, prefetch_factor=0)
    with pytest.raises(AssertionError, match="prefetch_factor must be greater than 0"):
        iter(loader)
    context = FORK
    assert (
        DataLoader(Range(3), num_workers=1, multiprocessing_context=context).multiprocessing_context
        is context
    )
    assert DataLoader(Range(3), num_workers=1).prefetch_factor == 2
    pinned = DataLoader(Range(3), batch_size=3, num_workers=1, pin_memory=True)
    assert [b.tolist() for b in pinned] == [[0, 1, 2]]  # accepted, nothing to pin on CPU


def test_iterable_length_warning_mentions_workers() -> None:
    class Sized(Iterable):
        def __len__(self) -> int:
            return self.n

    loader = DataLoader(
        Sized("iterable_plain", 3), batch_size=None, num_workers=2, multiprocessing_context=FORK
    )
    assert len(loader) == 3
    with pytest.warns(UserWarning, match="For multiprocessing data-loading"):
        assert sorted(int(x) for x in loader) == [0, 0, 1, 1, 2, 2]
