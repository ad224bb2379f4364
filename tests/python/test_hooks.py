"""Autograd hooks (Note [Hooks]): Tensor.register_hook, retain_grad / retains_grad,
grad_fn.register_hook / register_prehook, register_post_accumulate_grad_hook, the Node
API (name, next_functions, metadata), and exceptions raised in hooks.

Expected gradients are closed forms (written next to each case); expected call orders
are PyTorch 2.15's, checked against it once (PyTorch is not imported here)."""

import gc
import threading
import warnings

import numpy as np
import pytest
import rustgrad as torch


def _v(t):
    return None if t is None else t.tolist()


# ----- Tensor.register_hook ----------------------------------------------------------


def test_nonleaf_hook_replaces_the_gradient_before_grad_fn_uses_it():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = (y * 3).sum()
    seen = []
    y.register_hook(lambda g: (seen.append(_v(g)), g * 10)[1])
    z.backward()
    assert seen == [[3.0, 3.0]]  # dz/dy = 3
    assert x.grad.tolist() == [60.0, 60.0]  # 3 * 10 * 2


def test_hook_returning_none_keeps_the_gradient():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    seen = []
    y.register_hook(seen.append)
    y.sum().backward()
    assert len(seen) == 1 and seen[0].tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [2.0, 4.0]  # 2x


def test_leaf_hook_runs_before_accumulation_and_before_capture():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: (calls.append(_v(g)), g * 10)[1])
    (g,) = torch.autograd.grad((x * 2).sum(), [x])
    assert g.tolist() == [20.0, 20.0]
    assert x.grad is None
    (x * 2).sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]
    assert calls == [[2.0, 2.0], [2.0, 2.0]]


def test_several_hooks_run_in_registration_order_and_remove_works():
    x = torch.ones(2, requires_grad=True)
    y = x * 1
    order = []
    y.register_hook(lambda g: (order.append(1), g + 1)[1])
    y.register_hook(lambda g: (order.append(2), g * 2)[1])
    h = y.register_hook(lambda g: order.append(3))
    h.remove()
    h.remove()  # removing twice is a no-op
    y.sum().backward()
    assert order == [1, 2]
    assert x.grad.tolist() == [4.0, 4.0]  # (1 + 1) * 2


def test_leaf_hook_handle_remove_and_context_manager():
    x = torch.ones(2, requires_grad=True)
    with x.register_hook(lambda g: g * 5):
        (x * 1).sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]
    (x * 1).sum().backward()
    assert x.grad.tolist() == [6.0, 6.0]  # the hook is gone: + 1


def test_register_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't"):
        torch.ones(2).register_hook(lambda g: g)


@pytest.mark.parametrize(
    "bad, exc, phrase",
    [
        (lambda g: torch.ones(3), RuntimeError, "hook '<lambda>' has changed the size of value"),
        (
            lambda g: g.double(),
            RuntimeError,
            "hook '<lambda>' has changed the type of value (was torch.FloatTensor got "
            "torch.DoubleTensor)",
        ),
        (lambda g: 5, TypeError, "expected Variable, but hook returned 'int'"),
    ],
)
@pytest.mark.parametrize("leaf", [True, False])
def test_hook_returning_a_wrong_value_raises_and_engine_stays_usable(bad, exc, phrase, leaf):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    target = x if leaf else x * 2
    target.register_hook(bad)
    with pytest.raises(exc) as info:
        (target * 1).sum().backward()
    assert phrase in str(info.value)
    y = torch.tensor([1.0, 2.0], requires_grad=True)
    (y * 3).sum().backward()
    assert y.grad.tolist() == [3.0, 3.0]


def test_hook_before_and_after_inplace_see_their_own_values():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append(("old", _v(g))))
    y.mul_(3)
    y.register_hook(lambda g: log.append(("new", _v(g))))
    (y * 5).sum().backward()
    # PyTorch's order: the new value's hook runs first (its node runs first).
    assert log == [("new", [5.0, 5.0]), ("old", [15.0, 15.0])]
    assert x.grad.tolist() == [30.0, 30.0]


# ----- retain_grad -------------------------------------------------------------------


def test_retain_grad_fills_nonleaf_grad_and_accumulates():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    y.sum().backward(retain_graph=True)
    assert y.grad.tolist() == [1.0, 1.0]
    y.sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]


def test_retain_grad_on_leaf_is_a_noop_and_without_grad_raises():
    x = torch.ones(2, requires_grad=True)
    x.retain_grad()
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        torch.ones(2).retain_grad()


def test_retained_grad_is_after_the_tensor_hooks_whatever_the_registration_order():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 2
    b.retain_grad()
    b.register_hook(lambda g: g * 10)
    b.sum().backward()
    assert b.grad.tolist() == [10.0, 10.0]
    assert a.grad.tolist() == [20.0, 20.0]


def test_retain_grad_follows_the_tensor_through_inplace():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    assert y.retains_grad
    (y * 5).sum().backward()
    assert y.grad.tolist() == [5.0, 5.0]  # gradient of the new value
    assert x.grad.tolist() == [30.0, 30.0]


def test_retain_grad_on_views():
    x = torch.ones(4, requires_grad=True)
    v = (x * 2)[:2]
    v.retain_grad()
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0]
    x = torch.ones(4, requires_grad=True)
    y = x * 2
    v = y[:2]
    v.retain_grad()
    v.mul_(3)
    (v * 5).sum().backward()
    assert v.grad.tolist() == [5.0, 5.0]
    assert x.grad.tolist() == [30.0, 30.0, 0.0, 0.0]


def test_nonleaf_grad_without_retain_grad_is_none_and_warns():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.warns(UserWarning, match="is not a leaf Tensor is being accessed"):
        assert y.grad is None
    # A leaf, or a non-leaf that retains its gradient, reads without a warning.
    z = x * 3
    z.retain_grad()
    z.sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert x.grad is not None
        assert z.grad.tolist() == [1.0, 1.0]


# ----- node hooks and PyTorch's order -------------------------------------------------


def test_order_tensor_hook_retain_prehook_posthook_with_autograd_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * 3
    log = []
    y.register_hook(lambda g: (log.append(("tensor", _v(g))), g * 10)[1])
    y.retain_grad()
    y.grad_fn.register_prehook(lambda go: log.append(("pre", [_v(g) for g in go])))
    y.grad_fn.register_hook(lambda gi, go: log.append(("post", _v(gi[0]), [_v(g) for g in go])))
    gy, gx = torch.autograd.grad(z.sum(), [y, x])
    # y's grad_fn runs (x needs it), so y's gradient is captured as it arrives.
    assert gy.tolist() == [3.0, 3.0]
    assert gx.tolist() == [60.0, 60.0]
    assert log == [
        ("tensor", [3.0, 3.0]),
        ("pre", [[30.0, 30.0]]),
        ("post", [60.0, 60.0], [[30.0, 30.0]]),
    ]
    assert y.grad.tolist() == [30.0, 30.0]


def test_accumulate_grad_node_hooks_order():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    log = []
    a.register_hook(lambda g: (log.append("tensor"), g * 10)[1])
    acc = (a * 2).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.name() == "torch::autograd::AccumulateGrad"
    acc.register_prehook(lambda go: log.append(("pre", [_v(g) for g in go])))
    acc.register_hook(lambda gi, go: log.append(("post", gi, [_v(g) for g in go])))
    a.register_post_accumulate_grad_hook(lambda t: log.append(("acc", _v(t.grad), t is a)))
    (a * 2).sum().backward()
    assert log == [
        "tensor",
        ("pre", [[20.0, 20.0]]),
        ("acc", [20.0, 20.0], True),
        ("post", (), [[20.0, 20.0]]),
    ]


def test_prehook_and_posthook_replace_gradients():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x  # dy/dx = 2x
    y.grad_fn.register_prehook(lambda go: (go[0] * 3,))
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 4
    y.grad_fn.register_hook(lambda gi, go: tuple(None if g is None else g + 1 for g in gi))
    y.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_multi_output_node_hooks_see_none_for_unused_outputs():
    x = torch.arange(4.0, requires_grad=True)
    p, q = x.split(2)
    log = []
    q.register_hook(lambda g: log.append(("q", _v(g))))
    q.retain_grad()
    p.grad_fn.register_prehook(lambda go: log.append(("pre", [_v(g) for g in go])))
    p.grad_fn.register_hook(
        lambda gi, go: log.append(("post", [_v(g) for g in gi], [_v(g) for g in go]))
    )
    p.sum().backward()
    assert log == [
        ("q", None),
        ("pre", [[1.0, 1.0], None]),
        ("post", [[1.0, 1.0, 0.0, 0.0]], [[1.0, 1.0], None]),
    ]
    assert q.grad is None


def test_post_accumulate_grad_hook_rules():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on"):
        (x * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda t: None)
    seen = []
    h = x.register_post_accumulate_grad_hook(lambda t: seen.append(_v(t.grad)))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    h.remove()
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]


def test_hooks_with_backward_inputs():
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2, requires_grad=True)
    log = []
    x.register_hook(lambda g: g * 2)
    x.register_post_accumulate_grad_hook(lambda t: log.append(_v(t.grad)))
    w.register_hook(lambda g: log.append("w hook"))
    (x * w * 3).sum().backward(inputs=[x])
    assert x.grad.tolist() == [6.0, 6.0]
    assert w.grad is None
    assert log == [[6.0, 6.0]]


def test_backward_inputs_on_a_nonleaf_retains_its_grad_once():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    (y * 3).sum().backward(inputs=[y])
    assert y.grad.tolist() == [6.0, 6.0]  # 3, hooked to 6, stored once
    assert x.grad is None
    z = x * 5
    (z * 3).sum().backward(inputs=[z])
    assert z.retains_grad  # PyTorch's backward(inputs=) retains a non-leaf's grad
    assert z.grad.tolist() == [3.0, 3.0]


def test_create_graph_hooks_see_differentiable_grads():
    x = torch.tensor([2.0], dtype=torch.float64, requires_grad=True)
    y = x * x
    z = (y * y).sum()  # z = x^4
    seen = []
    h = y.register_hook(lambda g: (seen.append(g.requires_grad), g * 3)[1])
    (g,) = torch.autograd.grad(z, x, create_graph=True)
    assert seen[0] is True
    assert g.item() == pytest.approx(96.0)  # 3 * 2y * 2x = 12 x^3
    # The hook is still registered, and g's graph runs through y's grad_fn again:
    # d(6y*2x)/dy = 12x, hooked to 36x, times dy/dx = 2x; plus d(6y*2x)/dx = 12x^2.
    (gg,) = torch.autograd.grad(g.sum(), x, retain_graph=True)
    assert gg.item() == pytest.approx(336.0)  # 84 x^2
    h.remove()
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.item() == pytest.approx(144.0)  # d(12x^3)/dx = 36 x^2


def test_hook_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    xv = rng.standard_normal(5)
    x = torch.tensor(xv, requires_grad=True)
    y = torch.sin(x)
    y.register_hook(lambda g: g * torch.tensor(xv))  # multiply the incoming grad by x
    y.sum().backward()
    eps = 1e-6
    fd = (np.sin(xv + eps) - np.sin(xv - eps)) / (2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), fd * xv, rtol=1e-6, atol=1e-8)


# ----- exceptions ------------------------------------------------------------------------


class HookError(Exception):
    pass


@pytest.mark.parametrize("where", ["tensor", "leaf", "pre", "post", "post_accumulate"])
def test_exception_in_a_hook_propagates_unchanged(where):
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    raised = HookError("boom")

    def bad(*args):
        raise raised

    if where == "tensor":
        y.register_hook(bad)
    elif where == "leaf":
        x.register_hook(bad)
    elif where == "pre":
        y.grad_fn.register_prehook(bad)
    elif where == "post":
        y.grad_fn.register_hook(bad)
    else:
        x.register_post_accumulate_grad_hook(bad)
    with pytest.raises(HookError) as info:
        y.sum().backward()
    assert info.value is raised
    # The engine is usable afterwards, from this and another thread.
    x2 = torch.ones(2, requires_grad=True)
    (x2 * 3).sum().backward()
    assert x2.grad.tolist() == [3.0, 3.0]
    done = []

    def other_thread():
        w = torch.ones(1, requires_grad=True)
        (w * 2).sum().backward()
        done.append(w.grad.item())

    t = threading.Thread(target=other_thread)
    t.start()
    t.join(timeout=30)
    assert done == [2.0]


def test_exception_in_hook_with_autograd_grad():
    x = torch.ones(2, requires_grad=True)
    y = x * 2

    def bad(g):
        raise KeyError("k")

    y.register_hook(bad)
    with pytest.raises(KeyError):
        torch.autograd.grad(y.sum(), x)


# ----- Node API ------------------------------------------------------------------------


def test_node_metadata_lives_as_long_as_the_node():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)
    y.grad_fn.metadata["a"] = 3
    assert y.grad_fn.metadata is y.grad_fn.metadata
    gc.collect()
    assert y.grad_fn.metadata == {"a": 3}
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x


def test_a_non_callable_node_hook_fails_in_backward():
    # PyTorch accepts it at registration; calling it raises TypeError.
    y = torch.ones(2, requires_grad=True) * 2
    y.grad_fn.register_prehook(5)
    with pytest.raises(TypeError, match="not callable"):
        y.sum().backward()


def test_hooks_from_several_threads_do_not_deadlock():
    errors = []

    def work(k):
        try:
            for _ in range(20):
                x = torch.ones(3, requires_grad=True)
                y = x * (k + 1)
                y.register_hook(lambda g: g * 2)
                y.retain_grad()
                y.sum().backward()
                assert x.grad.tolist() == [2.0 * (k + 1)] * 3
                assert y.grad.tolist() == [2.0] * 3
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []


def test_backward_inside_a_hook_is_reentrant():
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2, requires_grad=True)

    def hook(g):
        # Hooks run in the pass's grad mode (off without create_graph), as in PyTorch.
        with torch.enable_grad():
            (w * 3).sum().backward()
        return g

    y = x * 2
    y.register_hook(hook)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert w.grad.tolist() == [3.0, 3.0]


def test_hooks_run_in_the_grad_mode_of_the_pass():
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: (w * 3).sum().backward())
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        y.sum().backward()
