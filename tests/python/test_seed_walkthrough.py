"""The walkthrough from the seed notes, as executable checks.

Every expectation here is PyTorch's behaviour, except the ones marked
``rustgrad_only`` (the legacy ``volatile`` flag, which PyTorch removed).
"""

import numpy as np
import pytest
import rustgrad as torch

Variable = torch.autograd.Variable
Parameter = torch.nn.Parameter


def _seed_graph(x):
    y = x + 2
    z = y * y * 3
    out = z.mean()
    return y, z, out


def _reachable_nodes(grad_fn):
    """All graph nodes reachable from ``grad_fn`` through ``next_functions``."""
    seen, stack, nodes = set(), [grad_fn], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        nodes.append(node)
        stack.extend(next_node for next_node, _ in node.next_functions)
    return nodes


# --- requires_grad propagation ---------------------------------------------------------


def test_requires_grad_propagates_when_any_input_requires_it():
    x = torch.randn(5, 5)
    y = torch.randn(5, 5)
    z = torch.randn(5, 5, requires_grad=True)
    a = x + y
    assert a.requires_grad is False
    assert a.grad_fn is None
    b = a + z
    assert b.requires_grad is True
    assert type(b.grad_fn).__name__ == "AddBackward0"


def test_leaves_and_non_leaves():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    assert x.is_leaf and x.grad_fn is None
    assert not y.is_leaf
    assert torch.ones(2).is_leaf  # a tensor that does not require grad is a leaf too


# --- the seed example: out = mean(3 * (x + 2)^2) -----------------------------------------


def test_seed_forward_values_and_reprs():
    x = Variable(torch.ones(2, 2), requires_grad=True)
    assert x.requires_grad is True
    assert repr(x) == "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    y, z, out = _seed_graph(x)
    assert repr(y) == "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<AddBackward0>)"
    assert repr(z) == "tensor([[27., 27.],\n        [27., 27.]], grad_fn=<MulBackward0>)"
    assert repr(out) == "tensor(27., grad_fn=<MeanBackward0>)"
    assert out.grad_fn.name() == "MeanBackward0"
    assert type(out.grad_fn).__name__ == "MeanBackward0"
    assert type(y.grad_fn).__name__ == "AddBackward0"
    assert type(z.grad_fn).__name__ == "MulBackward0"
    assert out.item() == 27.0
    assert out.dim() == 0


def test_seed_backward_gives_4_5():
    x = Variable(torch.ones(2, 2), requires_grad=True)
    _, _, out = _seed_graph(x)
    assert x.grad is None  # nothing yet: no backward has run
    out.backward()
    # d(out)/dx = 6 (x + 2) / 4 = 4.5
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 4.5, dtype=np.float32))
    assert repr(x.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
    assert x.grad.requires_grad is False
    assert x.grad.grad_fn is None


def test_seed_gradients_accumulate_across_backward_calls():
    x = Variable(torch.ones(2, 2), requires_grad=True)
    _seed_graph(x)[2].backward()
    _seed_graph(x)[2].backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 9.0, dtype=np.float32))


def test_no_backward_leaves_grad_none():
    x = Variable(torch.ones(2, 2), requires_grad=True)
    y, z, out = _seed_graph(x)
    assert out.requires_grad
    assert x.grad is None


def test_implicit_gradient_equals_explicit_one():
    x = torch.randn(3, 4, requires_grad=True)
    (x * x).tanh().mean().backward()
    implicit = x.grad.numpy().copy()
    x.grad = None
    (x * x).tanh().mean().backward(torch.tensor(1.0))
    np.testing.assert_array_equal(x.grad.numpy(), implicit)


def test_next_functions_of_add_scalar_contain_accumulate_grad():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    next_functions = y.grad_fn.next_functions
    node, input_nr = next_functions[0]
    assert type(node).__name__ == "AccumulateGrad"
    assert input_nr == 0
    # The scalar operand does not require grad, so it has no node.
    names = [type(n).__name__ for n, _ in next_functions if n is not None]
    assert names == ["AccumulateGrad"]


def test_next_functions_chain_of_the_seed_graph():
    x = torch.ones(2, 2, requires_grad=True)
    _, _, out = _seed_graph(x)
    mean_next = out.grad_fn.next_functions
    assert [type(n).__name__ for n, _ in mean_next] == ["MulBackward0"]
    mul3 = mean_next[0][0]
    # z = (y * y) * 3: the first input is the y * y node, the scalar has none.
    assert type(mul3.next_functions[0][0]).__name__ == "MulBackward0"
    square = mul3.next_functions[0][0]
    assert [type(n).__name__ for n, _ in square.next_functions] == ["AddBackward0"] * 2


# --- resetting gradients -----------------------------------------------------------------


def test_setting_grad_to_none_resets_accumulation():
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    x.grad = None
    assert x.grad is None
    (x * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])


def test_grad_zero_in_place_resets_accumulation():
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    x.grad.zero_()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    (x * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])


# --- volatile (legacy, rustgrad only) ----------------------------------------------------


@pytest.mark.rustgrad_only
def test_volatile_variable_flags():
    v = Variable(torch.randn(3, 3), volatile=True)
    assert v.volatile is True
    assert v.requires_grad is False
    assert Variable(torch.randn(3, 3)).volatile is False
    assert torch.randn(3).volatile is False


@pytest.mark.rustgrad_only
def test_one_volatile_input_makes_the_output_volatile():
    v = Variable(torch.randn(3, 3), volatile=True)
    p = Parameter(torch.randn(3, 3))
    assert p.requires_grad is True and p.volatile is False
    for out in (v * p, p * v, v @ p, p + v, v - p):
        assert out.volatile is True
        assert out.requires_grad is False
        assert out.grad_fn is None
    # It keeps spreading through later ops, even those mixing in parameters again.
    h = ((v @ p).tanh() + p).sum()
    assert h.volatile is True
    assert h.requires_grad is False
    assert h.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        h.backward()
    assert p.grad is None


@pytest.mark.rustgrad_only
def test_volatile_does_not_change_values():
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = Variable(torch.from_numpy(data.copy()), volatile=True)
    w = Parameter(torch.ones(3, 2))
    np.testing.assert_allclose((v @ w).numpy(), data @ np.ones((3, 2), dtype=np.float32))


@pytest.mark.rustgrad_only
def test_non_volatile_inputs_still_record_after_volatile_use():
    v = Variable(torch.randn(2, 2), volatile=True)
    p = Parameter(torch.ones(2, 2))
    _ = v * p
    out = (p * 3).sum()
    assert out.volatile is False
    assert out.requires_grad is True
    out.backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 2), 3.0, dtype=np.float32))


@pytest.mark.rustgrad_only
def test_parameter_is_never_volatile():
    p = Parameter(torch.randn(2, 2))
    assert p.volatile is False
    assert Parameter(torch.randn(2), requires_grad=False).volatile is False


# --- the frozen-model pattern -------------------------------------------------------------


def test_frozen_layers_get_no_grad_and_are_not_visited():
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 5)).astype(np.float32)
    x = torch.from_numpy(x_np)
    # A two-layer "model" whose first layer is frozen ...
    w1 = Parameter(torch.randn(5, 6))
    b1 = Parameter(torch.randn(6))
    w2 = Parameter(torch.randn(6, 3))
    b2 = Parameter(torch.randn(3))
    for p in (w1, b1, w2, b2):
        p.requires_grad = False
    # ... and whose last layer is replaced by a fresh one, which requires grad by default.
    w2_np = rng.standard_normal((6, 3)).astype(np.float32)
    w2 = Parameter(torch.from_numpy(w2_np.copy()))
    b2 = Parameter(torch.zeros(3))
    assert w2.requires_grad and b2.requires_grad

    hidden = (x @ w1 + b1).relu()
    assert hidden.requires_grad is False  # nothing frozen is recorded
    assert hidden.grad_fn is None
    out = hidden @ w2 + b2
    assert out.requires_grad is True
    loss = out.sum()

    # Only the two fresh parameters are reachable from the loss.
    names = [type(n).__name__ for n in _reachable_nodes(loss.grad_fn)]
    assert names.count("AccumulateGrad") == 2

    loss.backward()
    assert w1.grad is None and b1.grad is None
    hidden_np = hidden.numpy()
    np.testing.assert_allclose(w2.grad.numpy(), hidden_np.sum(0)[:, None].repeat(3, 1), rtol=1e-5)
    np.testing.assert_array_equal(b2.grad.numpy(), np.full(3, 4.0, dtype=np.float32))


def test_requires_grad_is_settable_on_leaves():
    x = torch.randn(3)
    assert x.requires_grad is False
    x.requires_grad = True
    assert x.requires_grad is True
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    y = torch.randn(3).requires_grad_()
    assert y.requires_grad is True
    y.requires_grad_(False)
    assert y.requires_grad is False


# --- grad mode ------------------------------------------------------------------------------


def test_no_grad_context_manager():
    x = torch.ones(2, requires_grad=True)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        y = x * 2
    assert torch.is_grad_enabled()
    assert y.requires_grad is False
    assert y.grad_fn is None
    np.testing.assert_array_equal(y.numpy(), [2.0, 2.0])


def test_enable_grad_inside_no_grad():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            y = x * 2
        assert not torch.is_grad_enabled()
        z = x * 2
    assert y.requires_grad is True and z.requires_grad is False


def test_set_grad_enabled_context_manager_and_function():
    x = torch.ones(2, requires_grad=True)
    with torch.set_grad_enabled(False):
        assert not torch.is_grad_enabled()
        assert (x * 2).requires_grad is False
        with torch.set_grad_enabled(True):
            assert (x * 2).requires_grad is True
    assert torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled()
        assert (x + 1).requires_grad is False
    finally:
        torch.set_grad_enabled(True)
    assert (x + 1).requires_grad is True


def test_grad_mode_decorators():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def without_grad(t):
        return t * 2, torch.is_grad_enabled()

    @torch.enable_grad()
    def with_grad(t):
        return t * 2, torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def set_off(t):
        return t * 2, torch.is_grad_enabled()

    y, enabled = without_grad(x)
    assert y.requires_grad is False and enabled is False
    assert torch.is_grad_enabled()
    with torch.no_grad():
        y, enabled = with_grad(x)
        assert not torch.is_grad_enabled()
    assert y.requires_grad is True and enabled is True
    y, enabled = set_off(x)
    assert y.requires_grad is False and enabled is False
    assert torch.is_grad_enabled()


def test_grad_mode_restored_after_exception():
    with pytest.raises(ValueError):
        with torch.no_grad():
            raise ValueError("boom")
    assert torch.is_grad_enabled()

    @torch.no_grad()
    def fails():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        fails()
    assert torch.is_grad_enabled()
