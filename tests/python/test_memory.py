"""Memory: no leak over a training loop, graph nodes freed, very long chains."""

import gc
import os
import resource

import numpy as np
import pytest
import rustgrad as torch

Parameter = torch.nn.Parameter

CHAIN_LENGTH = 100_000
CHAIN_FACTOR = 1.00001


def rss_bytes():
    """The resident set size of this process now."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:  # not Linux: fall back to the peak, which can only overstate growth
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024


def live_nodes():
    gc.collect()
    return torch._rustgrad._live_nodes()


# A leaf that is still alive may keep its own AccumulateGrad node once it has been part of
# a graph (PyTorch caches it weakly; rustgrad may cache it strongly). Nothing else may stay.
LEAF_ACCUMULATOR_SLACK = 1


def _train_step(x, w):
    loss = ((x @ w).tanh() * 2).sum()
    loss.backward()
    grad = w.grad
    w.grad = None
    return loss, grad


def _expected_grad(x_np, w_np):
    h = np.tanh(x_np @ w_np)
    return x_np.T @ (2 * (1 - h * h))


def test_training_loop_does_not_grow_rss():
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 8)).astype(np.float32)
    x = torch.from_numpy(x_np)
    w = Parameter(torch.randn(8, 8))
    for _ in range(500):  # warm-up: allocator pools, caches, lazily built state
        _train_step(x, w)
    gc.collect()
    before = rss_bytes()
    for _ in range(10_000):
        loss, grad = _train_step(x, w)
    del loss
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 2**20:.2f} MiB over 10 000 steps"
    np.testing.assert_allclose(
        grad.numpy(), _expected_grad(x_np, w.detach().numpy()), rtol=1e-4, atol=1e-5
    )
    assert w.grad is None


@pytest.mark.rustgrad_only
def test_training_loop_frees_every_node():
    x = torch.randn(4, 8)
    w = Parameter(torch.randn(8, 8))
    loss, _ = _train_step(x, w)  # w's accumulator, if it is cached, exists from here on
    del loss
    baseline = live_nodes()
    for step in range(10_000):
        loss, _ = _train_step(x, w)
        if step == 5_000:
            # Only the current iteration's graph may be alive (a handful of nodes).
            assert torch._rustgrad._live_nodes() - baseline < 10
    del loss
    assert live_nodes() == baseline


@pytest.mark.rustgrad_only
def test_live_nodes_counts_a_graph_and_its_release():
    baseline = live_nodes()
    x = torch.ones(3, requires_grad=True)
    y = (x * 2).exp().sum()
    during = live_nodes()
    assert during > baseline  # mul, exp, sum (and the leaf's accumulator)
    y.backward()
    del y
    # The leaf's gradient holds no reference into the graph.
    assert x.grad is not None
    assert live_nodes() - baseline <= LEAF_ACCUMULATOR_SLACK
    del x
    assert live_nodes() == baseline


@pytest.mark.rustgrad_only
def test_no_grad_records_no_nodes():
    x = torch.ones(3, requires_grad=True)
    baseline = live_nodes()
    with torch.no_grad():
        y = (x * 2).exp().sum()
    assert live_nodes() == baseline
    del y


def test_backward_through_a_100k_op_chain():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_LENGTH):
        y = y * CHAIN_FACTOR
    expected = CHAIN_FACTOR**CHAIN_LENGTH  # about e
    np.testing.assert_allclose(y.detach().numpy(), np.full(3, expected), rtol=1e-9)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full(3, expected), rtol=1e-9)
    del y


def test_backward_through_a_100k_op_add_chain_in_float32():
    x = torch.zeros(2, requires_grad=True)
    y = x
    for _ in range(CHAIN_LENGTH):
        y = y + 0.0
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


def test_dropping_an_unbackwarded_100k_op_graph():
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_LENGTH):
        y = y * CHAIN_FACTOR
    del y  # freeing must be iterative: a recursive drop would overflow the stack
    gc.collect()
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


@pytest.mark.rustgrad_only
def test_dropping_an_unbackwarded_100k_op_graph_frees_its_nodes():
    baseline = live_nodes()
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_LENGTH):
        y = y * CHAIN_FACTOR
    assert live_nodes() >= baseline + CHAIN_LENGTH
    del y
    assert live_nodes() - baseline <= LEAF_ACCUMULATOR_SLACK
    del x
    assert live_nodes() == baseline


@pytest.mark.rustgrad_only
def test_backwarded_100k_op_graph_frees_its_nodes():
    baseline = live_nodes()
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = x
    for _ in range(CHAIN_LENGTH):
        y = y + 0.0
    y.sum().backward()
    del y
    assert live_nodes() - baseline <= LEAF_ACCUMULATOR_SLACK
    del x
    assert live_nodes() == baseline


def test_module_and_optimizer_training_loop_does_not_grow_rss():
    """10 000 steps of a small MLP (nn.Module, cross_entropy, SGD with momentum and
    Adam state) grow RSS by less than 5 MB, and the loss goes down."""
    nn = torch.nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    x = torch.randn(32, 8)
    y = torch.randint(0, 4, (32,))
    optimizers = [
        torch.optim.SGD(model[0].parameters(), lr=0.05, momentum=0.9),
        torch.optim.Adam(model[2].parameters(), lr=1e-3),
    ]

    def step():
        for opt in optimizers:
            opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        for opt in optimizers:
            opt.step()
        return loss.item()

    first = step()
    for _ in range(500):
        step()
    gc.collect()
    before = rss_bytes()
    for _ in range(10_000):
        last = step()
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 2**20:.2f} MiB over 10 000 steps"
    assert last < first / 2


def test_memory_allocated_counts_the_bytes_of_live_storages():
    """rustgrad.cpu.memory_allocated: storage bytes (dtype size x elements), views and
    numpy-shared memory add nothing, freeing gives them back (Note [Memory statistics])."""
    gc.collect()
    before = torch.cpu.memory_allocated()
    x = torch.zeros(1000)
    assert torch.cpu.memory_allocated() - before == 4000
    view = x[10:].view(990)  # a view shares the storage
    assert torch.cpu.memory_allocated() - before == 4000
    d = x.double()
    i8 = torch.zeros(7, dtype=torch.int8)
    assert torch.cpu.memory_allocated() - before == 4000 + 8000 + 7
    shared = torch.from_numpy(np.zeros(500, dtype=np.float32))
    assert torch.cpu.memory_allocated() - before == 4000 + 8000 + 7
    del x, view, d, i8, shared
    gc.collect()
    assert torch.cpu.memory_allocated() == before


def test_max_memory_allocated_is_the_peak_since_reset():
    gc.collect()
    torch.cpu.reset_peak_memory_stats()
    base = torch.cpu.memory_allocated()
    assert torch.cpu.max_memory_allocated() == base
    y = torch.ones(1000).exp()  # ones (4000 B) and exp's output (4000 B) live at once
    assert torch.cpu.memory_allocated() - base == 4000
    assert torch.cpu.max_memory_allocated() - base == 8000
    del y
    torch.cpu.reset_peak_memory_stats()
    assert torch.cpu.max_memory_allocated() == torch.cpu.memory_allocated() == base
