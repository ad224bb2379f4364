"""Concurrent use from Python threads, thread-local grad mode, bitwise determinism."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import rustgrad as torch

WAIT_S = 30


def _run_threads(targets):
    """Run each target in its own thread; re-raise the first failure in the caller."""
    errors = []

    def guarded(target):
        try:
            target()
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(t,), daemon=True) for t in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a worker thread hung"
    if errors:
        raise errors[0]


# --- concurrent training loops --------------------------------------------------------------


def test_concurrent_forward_backward_loops_get_correct_gradients():
    iterations = 200
    results = {}

    def worker(index):
        def run():
            rng = np.random.default_rng(100 + index)
            x_np = rng.standard_normal((16, 8))
            w_np = rng.standard_normal((8, 4))
            b_np = rng.standard_normal(4)
            x = torch.from_numpy(x_np)
            w = torch.from_numpy(w_np.copy()).requires_grad_()
            b = torch.from_numpy(b_np.copy()).requires_grad_()
            for step in range(iterations):
                scale = 1.0 + step / iterations
                loss = ((x @ w + b).tanh() * scale).sum()
                loss.backward()
                h = np.tanh(x_np @ w_np + b_np)
                upstream = scale * (1 - h * h)
                np.testing.assert_allclose(
                    w.grad.numpy(), x_np.T @ upstream, rtol=1e-10, atol=1e-12
                )
                np.testing.assert_allclose(b.grad.numpy(), upstream.sum(0), rtol=1e-10, atol=1e-12)
                np.testing.assert_allclose(loss.item(), (h * scale).sum(), rtol=1e-12)
                w.grad = None
                b.grad = None
            results[index] = iterations

        return run

    _run_threads([worker(i) for i in range(4)])
    assert results == {i: iterations for i in range(4)}


def test_concurrent_accumulation_into_separate_leaves():
    def worker(value):
        def run():
            x = torch.full((3,), value).requires_grad_()
            for _ in range(200):
                (x * x).sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), np.full(3, 400.0 * value))

        return run

    _run_threads([worker(float(v)) for v in (1, 2, 3, 4)])


# --- grad mode is thread-local ------------------------------------------------------------------


def test_no_grad_in_one_thread_does_not_leak_into_another():
    a_inside_no_grad = threading.Event()
    b_done = threading.Event()
    observed = {}

    def thread_a():
        x = torch.ones(2, requires_grad=True)
        with torch.no_grad():
            a_inside_no_grad.set()
            assert b_done.wait(WAIT_S), "thread B never finished"
            observed["a_enabled"] = torch.is_grad_enabled()
            observed["a_requires_grad"] = (x * 2).requires_grad
        observed["a_after"] = torch.is_grad_enabled()

    def thread_b():
        assert a_inside_no_grad.wait(WAIT_S), "thread A never entered no_grad"
        x = torch.ones(2, requires_grad=True)
        observed["b_enabled"] = torch.is_grad_enabled()
        y = (x * 3).sum()
        observed["b_requires_grad"] = y.requires_grad
        y.backward()
        observed["b_grad"] = x.grad.numpy().tolist()
        b_done.set()

    _run_threads([thread_a, thread_b])
    assert observed == {
        "a_enabled": False,
        "a_requires_grad": False,
        "a_after": True,
        "b_enabled": True,
        "b_requires_grad": True,
        "b_grad": [3.0, 3.0],
    }
    assert torch.is_grad_enabled()


def test_set_grad_enabled_false_in_a_thread_does_not_leak():
    a_disabled = threading.Event()
    main_checked = threading.Event()
    observed = {}

    def thread_a():
        torch.set_grad_enabled(False)
        try:
            a_disabled.set()
            assert main_checked.wait(WAIT_S)
            observed["a_enabled"] = torch.is_grad_enabled()
        finally:
            torch.set_grad_enabled(True)

    thread = threading.Thread(target=thread_a, daemon=True)
    thread.start()
    try:
        assert a_disabled.wait(WAIT_S)
        observed["main_enabled"] = torch.is_grad_enabled()
        observed["main_requires_grad"] = (torch.ones(1, requires_grad=True) * 2).requires_grad
    finally:
        main_checked.set()
        thread.join(WAIT_S)
    assert observed == {"main_enabled": True, "main_requires_grad": True, "a_enabled": False}


def test_new_threads_start_with_grad_enabled():
    observed = []
    with torch.no_grad():
        _run_threads([lambda: observed.append(torch.is_grad_enabled())])
    assert observed == [True]


# --- thread count ---------------------------------------------------------------------------------


def test_set_num_threads_round_trip():
    original = torch.get_num_threads()
    assert isinstance(original, int) and original >= 1
    try:
        torch.set_num_threads(3)
        assert torch.get_num_threads() == 3
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
        # Work still runs, and correctly, with one thread.
        a = torch.ones(64, 64)
        np.testing.assert_array_equal((a @ a).numpy(), np.full((64, 64), 64.0, dtype=np.float32))
    finally:
        torch.set_num_threads(original)
    assert torch.get_num_threads() == original


# --- determinism across thread counts -------------------------------------------------------------

DETERMINISM_SCRIPT = r"""
import hashlib
import numpy as np
import rustgrad as torch

print("threads", torch.get_num_threads())
rng = np.random.default_rng(1234)

def t(*shape, grad=True):
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return x.requires_grad_() if grad else x

def digest(name, tensor):
    data = np.ascontiguousarray(tensor.detach().numpy()).tobytes()
    print(name, hashlib.sha256(data).hexdigest())

# 512 x 512 matmul, with a weighted loss so the gradients are not trivial.
a, b, c = t(512, 512), t(512, 512), t(512, 512, grad=False)
loss = ((a @ b) * c).sum()
loss.backward()
digest("matmul_loss", loss)
digest("matmul_grad_a", a.grad)
digest("matmul_grad_b", b.grad)

# A sum and a mean over a 1e6-element tensor (parallel reductions forward and backward).
x = t(1000, 1000)
loss = (x * x).sum() + x.exp().mean()
loss.backward()
digest("reduce_loss", loss)
digest("reduce_grad", x.grad)
digest("reduce_sum_dim", (x * 1).sum(0))
digest("reduce_mean_dim", (x * 1).mean(1, keepdim=True))

# Broadcast add with a 1e6-element output: the bias gradients reduce over it.
y, row, col, w = t(1000, 1000), t(1000), t(1000, 1), t(1000, 1000, grad=False)
loss = ((y + row + col).tanh() * w).sum()
loss.backward()
digest("broadcast_loss", loss)
digest("broadcast_grad_y", y.grad)
digest("broadcast_grad_row", row.grad)
digest("broadcast_grad_col", col.grad)

# Fan-in: one leaf used by many ops, its gradient summed from all of them.
z = t(1000, 1000)
loss = sum(((z * float(k)).tanh()).sum() for k in range(1, 6))
loss.backward()
digest("fanin_loss", loss)
digest("fanin_grad", z.grad)
"""


def _run_with_threads(num_threads):
    env = dict(os.environ, RUSTGRAD_NUM_THREADS=str(num_threads))
    completed = subprocess.run(
        [sys.executable, "-c", DETERMINISM_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.strip().splitlines()
    assert lines[0] == f"threads {num_threads}", "RUSTGRAD_NUM_THREADS was not honoured"
    return lines[1:]


@pytest.mark.rustgrad_only
def test_gradients_are_bitwise_identical_for_any_thread_count():
    one = _run_with_threads(1)
    assert len(one) == 13
    for num_threads in (2, 3):
        assert _run_with_threads(num_threads) == one, f"{num_threads} threads differ from 1"


@pytest.mark.rustgrad_only
def test_num_threads_env_var_sets_the_pool_size():
    env = dict(os.environ, RUSTGRAD_NUM_THREADS="3")
    completed = subprocess.run(
        [sys.executable, "-c", "import rustgrad; print(rustgrad.get_num_threads())"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "3"
