"""The parallel backward scheduler (Note [Parallel backward]): bitwise-identical
gradients for 1, 2 and 4 threads, gradients equal to an independent numpy
computation, Python hooks and custom Functions on the parallel path (also from 8
Python threads at once, and with reentrant backward), and errors."""

import threading

import numpy as np
import pytest
import rustgrad as torch

# The pool counter (`_pool_nodes_run`) is rustgrad's own.
pytestmark = pytest.mark.rustgrad_only

N = 192  # N * N = 36864 gradient elements: above the parallel threshold (32768)


@pytest.fixture
def threads_restored():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def _weights(seed, count):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, N))
    ws = [rng.standard_normal((N, N)) / np.sqrt(N) for _ in range(count)]
    return x, ws


class Scale(torch.autograd.Function):
    """y = 2 x, backward 2 g, in Python."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def _branches(x, ws, hook_log=None, custom=True):
    """Sum of four independent branches tanh(tanh(x W1) W2) plus x * x."""
    total = (x * x).sum()
    for b in range(len(ws) // 2):
        h = (x @ ws[2 * b]).tanh()
        if custom:
            h = Scale.apply(h)
        if hook_log is not None:
            h.register_hook(lambda g, b=b: hook_log.append(b))
        total = total + ((h @ ws[2 * b + 1]).tanh()).sum()
    return total


def _numpy_grads(x, ws, custom=True):
    k = 2.0 if custom else 1.0
    gx = 2 * x
    gws = []
    for b in range(len(ws) // 2):
        w1, w2 = ws[2 * b], ws[2 * b + 1]
        h1 = k * np.tanh(x @ w1)
        h2 = np.tanh(h1 @ w2)
        g2 = 1 - h2**2
        gw2 = h1.T @ g2
        gh1 = k * (g2 @ w2.T) * (1 - np.tanh(x @ w1) ** 2)
        gw1 = x.T @ gh1
        gx = gx + gh1 @ w1.T
        gws += [gw1, gw2]
    return gx, gws


def _pool_nodes():
    return torch._rustgrad._pool_nodes_run()


def _run(x_np, ws_np, expect_pool=None, **kw):
    """x.grad and the weights' gradients; `expect_pool`: whether nodes must (True) or
    must not (False) have run on the pool."""
    x = torch.tensor(x_np, requires_grad=True)
    ws = [torch.tensor(w, requires_grad=True) for w in ws_np]
    before = _pool_nodes()
    _branches(x, ws, **kw).backward()
    if expect_pool is not None:
        assert (_pool_nodes() > before) == expect_pool
    return [x.grad.numpy().copy()] + [w.grad.numpy().copy() for w in ws]


@pytest.mark.parametrize("custom", [False, True])
def test_gradients_are_bitwise_identical_for_1_2_4_threads(threads_restored, custom):
    x, ws = _weights(0, 8)
    torch.set_num_threads(1)
    reference = _run(x, ws, expect_pool=False, custom=custom)
    gx, gws = _numpy_grads(x, ws, custom=custom)
    np.testing.assert_allclose(reference[0], gx, rtol=1e-10, atol=1e-10)
    for got, want in zip(reference[1:], gws):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    for threads in (2, 4, 2):
        torch.set_num_threads(threads)
        for _ in range(2):
            for got, want in zip(_run(x, ws, expect_pool=True, custom=custom), reference):
                assert np.array_equal(got, want), f"{threads} threads differ from 1 thread"


def test_float32_fan_in_is_bitwise_identical(threads_restored):
    x, ws = _weights(1, 8)
    x, ws = x.astype(np.float32), [w.astype(np.float32) for w in ws]
    torch.set_num_threads(1)
    reference = _run(x, ws)
    torch.set_num_threads(4)
    for got, want in zip(_run(x, ws, expect_pool=True), reference):
        assert np.array_equal(got, want)


def test_hooks_run_once_each_in_pytorchs_per_node_order(threads_restored):
    x, ws = _weights(2, 8)
    torch.set_num_threads(2)
    log = []
    _run(x, ws, expect_pool=True, hook_log=log)
    # Branches are independent: each hook runs exactly once; the later-recorded branch
    # is reached first by the sequential order but any order between branches is valid.
    assert sorted(log) == [0, 1, 2, 3]


def test_an_exception_in_a_hook_on_the_parallel_path_propagates_unchanged(threads_restored):
    x, ws = _weights(3, 8)
    torch.set_num_threads(2)

    class Boom(Exception):
        pass

    for _ in range(3):
        xt = torch.tensor(x, requires_grad=True)
        wt = [torch.tensor(w, requires_grad=True) for w in ws]
        total = xt.sum()
        for b in range(4):
            h = (xt @ wt[2 * b]).tanh()

            def hook(g, b=b):
                raise Boom(f"hook {b}")

            h.register_hook(hook)
            total = total + (h @ wt[2 * b + 1]).tanh().sum()
        with pytest.raises(Boom) as info:
            total.backward()
        # The sequential order meets the last-recorded branch first.
        assert str(info.value) == "hook 3"
    # The engine stays usable.
    assert len(_run(x, ws)) == 9


def test_reentrant_backward_in_a_hook_and_in_a_custom_backward(threads_restored):
    x_np, ws_np = _weights(4, 4)
    torch.set_num_threads(2)
    inner_grads = []

    class Reentrant(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            with torch.enable_grad():
                a = torch.tensor(x_np, requires_grad=True)
                (((a @ a).tanh()).sum()).backward()
                inner_grads.append(a.grad.numpy().copy())
                b = torch.tensor(x_np, requires_grad=True)
                (gb,) = torch.autograd.grad(((b @ b).tanh()).sum(), [b])
                inner_grads.append(gb.numpy().copy())
            return g

    def hook(g):
        # Hooks run in the pass's grad mode (off without create_graph), as in PyTorch.
        with torch.enable_grad():
            a = torch.tensor(x_np, requires_grad=True)
            (((a @ a).tanh()).sum()).backward()
        inner_grads.append(a.grad.numpy().copy())

    x = torch.tensor(x_np, requires_grad=True)
    ws = [torch.tensor(w, requires_grad=True) for w in ws_np]
    h1 = Reentrant.apply((x @ ws[0]).tanh())
    h2 = (x @ ws[1]).tanh()
    h2.register_hook(hook)
    before = _pool_nodes()
    ((h1 @ ws[2]).tanh().sum() + (h2 @ ws[3]).tanh().sum()).backward()
    assert _pool_nodes() > before
    t = np.tanh(x_np @ x_np)
    g = 1 - t**2
    expected = g @ x_np.T + x_np.T @ g
    assert len(inner_grads) == 3
    for got in inner_grads:
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    h1n = np.tanh(x_np @ ws_np[0])
    g1 = (1 - np.tanh(h1n @ ws_np[2]) ** 2) @ ws_np[2].T * (1 - h1n**2)
    h2n = np.tanh(x_np @ ws_np[1])
    g2 = (1 - np.tanh(h2n @ ws_np[3]) ** 2) @ ws_np[3].T * (1 - h2n**2)
    np.testing.assert_allclose(
        x.grad.numpy(), g1 @ ws_np[0].T + g2 @ ws_np[1].T, rtol=1e-10, atol=1e-10
    )


def test_eight_python_threads_with_hooks_and_custom_functions_finish(threads_restored):
    torch.set_num_threads(2)
    x_np, ws_np = _weights(5, 8)
    expected = _numpy_grads(x_np, ws_np)[0]
    results = [None] * 8
    errors = []

    def worker(i):
        try:
            for _ in range(3):
                log = []
                got = _run(x_np, ws_np, expect_pool=True, hook_log=log)[0]
                assert sorted(log) == [0, 1, 2, 3]
            results[i] = got
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
        assert not t.is_alive(), "a backward thread hung (deadlock)"
    if errors:
        raise errors[0]
    for got in results:
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
        assert np.array_equal(got, results[0])


def test_saved_tensor_hooks_on_the_parallel_path_from_several_threads(threads_restored):
    """Pack/unpack hooks are Python: unpacking runs on the thread that called backward
    while the unpacked nodes run on the pool."""
    torch.set_num_threads(2)
    x_np, ws_np = _weights(6, 8)
    expected = _numpy_grads(x_np, ws_np, custom=False)
    errors = []
    counts = [0] * 4

    def worker(i):
        try:
            for _ in range(2):
                x = torch.tensor(x_np, requires_grad=True)
                ws = [torch.tensor(w, requires_grad=True) for w in ws_np]

                def pack(t):
                    return ("packed", t.clone())

                def unpack(p):
                    counts[i] += 1
                    return p[1]

                with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                    total = _branches(x, ws, custom=False)
                before = _pool_nodes()
                total.backward()
                assert _pool_nodes() > before
                np.testing.assert_allclose(x.grad.numpy(), expected[0], rtol=1e-10, atol=1e-10)
                for w, want in zip(ws, expected[1]):
                    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-10, atol=1e-10)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
        assert not t.is_alive(), "a backward thread hung (deadlock)"
    if errors:
        raise errors[0]
    assert all(c > 0 for c in counts)


def test_an_exception_in_a_custom_backward_on_the_parallel_path_propagates_unchanged(
    threads_restored,
):
    torch.set_num_threads(4)
    x_np, ws_np = _weights(7, 8)

    class Boom(ValueError):
        pass

    def failing(tag):
        class Fails(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, g):
                raise Boom(tag)

        return Fails

    for _ in range(3):
        x = torch.tensor(x_np, requires_grad=True)
        ws = [torch.tensor(w, requires_grad=True) for w in ws_np]
        total = x.sum()
        for b in range(4):
            h = failing(f"branch {b}").apply((x @ ws[2 * b]).tanh())
            total = total + (h @ ws[2 * b + 1]).tanh().sum()
        before = _pool_nodes()
        with pytest.raises(Boom) as info:
            total.backward()
        assert _pool_nodes() > before
        # The first failure in the sequential order: the last-recorded branch's.
        assert str(info.value) == "branch 3"
        assert type(info.value) is Boom
    expected = _numpy_grads(x_np, ws_np, custom=False)[0]
    np.testing.assert_allclose(_run(x_np, ws_np, custom=False)[0], expected, rtol=1e-10)
