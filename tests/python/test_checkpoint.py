"""Activation checkpointing (rustgrad.utils.checkpoint) and nn.functional.dropout.
Expected gradients come from the same computation without checkpointing (bitwise) and
from closed forms; the saved-bytes figure from graph_stats; behaviour as PyTorch 2.15's
documented semantics."""

import math

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad.utils.checkpoint import checkpoint, checkpoint_sequential


def _mlp_params(layers=20, width=32, seed=0):
    rng = np.random.default_rng(seed)
    return [
        torch.tensor(rng.standard_normal((width, width)) / math.sqrt(width), requires_grad=True)
        for _ in range(layers)
    ]


def _block(h, w):
    return (h @ w).tanh()


def _grads(params):
    out = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    return out


def test_checkpointed_mlp_halves_saved_bytes_with_identical_gradients():
    params = _mlp_params()
    x = torch.tensor(np.random.default_rng(1).standard_normal((16, 32)))

    h = x
    for w in params:
        h = _block(h, w)
    plain_loss = h.sum()
    plain_stats = torch.autograd.graph_stats(plain_loss)
    plain_loss.backward()
    plain = _grads(params)

    h = x
    for w in params:
        h = checkpoint(_block, h, w, use_reentrant=False)
    ckpt_loss = h.sum()
    ckpt_stats = torch.autograd.graph_stats(ckpt_loss)
    ckpt_loss.backward()
    ckpt = _grads(params)

    assert ckpt_stats.saved_bytes * 2 <= plain_stats.saved_bytes
    assert ckpt_loss.item() == plain_loss.item()
    for a, b in zip(plain, ckpt):
        assert np.array_equal(a.numpy(), b.numpy())


def test_reentrant_checkpointed_mlp_gives_identical_gradients():
    params = _mlp_params(layers=8, width=16, seed=4)
    x = torch.tensor(np.random.default_rng(5).standard_normal((6, 16)), requires_grad=True)

    h = x
    for w in params:
        h = _block(h, w)
    plain_loss = h.sum()
    plain_loss.backward()
    plain = _grads(params) + [x.grad.clone()]
    x.grad = None

    h = x
    for w in params:
        h = checkpoint(_block, h, w, use_reentrant=True)
    assert h.grad_fn.name() == "CheckpointFunctionBackward"
    ckpt_loss = h.sum()
    ckpt_loss.backward()
    ckpt = _grads(params) + [x.grad.clone()]

    assert ckpt_loss.item() == plain_loss.item()
    for a, b in zip(plain, ckpt):
        assert np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_checkpoint_sequential_matches_plain(use_reentrant):
    params = _mlp_params(layers=6, width=8, seed=2)
    fs = [lambda h, w=w: _block(h, w) for w in params]
    x = torch.tensor(np.random.default_rng(3).standard_normal((4, 8)), requires_grad=True)
    h = x
    for f in fs:
        h = f(h)
    h.sum().backward()
    plain = _grads(params) + [x.grad.clone()]
    x.grad = None
    out = checkpoint_sequential(fs, 3, x, use_reentrant=use_reentrant)
    out.sum().backward()
    ckpt = _grads(params) + [x.grad.clone()]
    for a, b in zip(plain, ckpt):
        assert np.array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_recompute_runs_once(use_reentrant):
    calls = [0]
    x = torch.tensor([0.5, 1.5], requires_grad=True)

    def f(t):
        calls[0] += 1
        return (t * t).exp() * t

    y = checkpoint(f, x, use_reentrant=use_reentrant)
    assert calls[0] == 1
    y.sum().backward()
    assert calls[0] == 2
    # d/dt (t exp(t^2)) = exp(t^2) (1 + 2 t^2).
    expected = [math.exp(t * t) * (1 + 2 * t * t) for t in (0.5, 1.5)]
    assert x.grad.tolist() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("use_reentrant", [False, True])
def test_dropout_in_checkpoint_uses_the_same_mask(use_reentrant):
    torch.manual_seed(0)
    x = torch.ones(200, requires_grad=True)
    w = torch.full((200,), 3.0, requires_grad=True)

    def f(t, w):
        return F.dropout(t * w, p=0.5)

    y = checkpoint(f, x, w, use_reentrant=use_reentrant)
    after_forward = torch.get_rng_state()
    # The gradient of x is 3 * mask / 0.5 where y kept an element, 0 where it dropped it:
    # the recomputation must have drawn the forward's mask.
    y.sum().backward()
    kept = [v != 0 for v in y.tolist()]
    assert 50 < sum(kept) < 150
    assert x.grad.tolist() == [6.0 if k else 0.0 for k in kept]
    assert w.grad.tolist() == [2.0 if k else 0.0 for k in kept]
    # The recomputation left the caller's RNG state as it was.
    assert torch.equal(torch.get_rng_state(), after_forward)


def test_use_reentrant_not_passed_warns_and_is_reentrant_as_pytorch():
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed"):
        y = checkpoint(lambda t: t * t, x)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    y.sum().backward()
    assert x.grad.tolist() == [2.0, -4.0]  # d(t^2)/dt = 2t
    x.grad = None
    with pytest.warns(UserWarning, match="checkpoint_sequential: the use_reentrant"):
        out = checkpoint_sequential([lambda t: t * 3, lambda t: t * t], 2, x)
    assert out.grad_fn.name() == "MulBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "CheckpointFunctionBackward"
    out.sum().backward()
    assert x.grad.tolist() == [18.0, -36.0]  # d((3t)^2)/dt = 18t


def test_reentrant_warns_when_no_input_requires_grad():
    x = torch.ones(2)
    with pytest.warns(
        UserWarning, match="^None of the inputs have requires_grad=True. Gradients will be None$"
    ):
        y = checkpoint(lambda t: t * 2, x, use_reentrant=True)
    assert not y.requires_grad and y.grad_fn is None
    assert y.tolist() == [2.0, 2.0]


def test_reentrant_with_non_tensor_arguments_and_outputs():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)

    def f(a, n, b):
        return a * b * n, "label"

    y, label = checkpoint(f, x, 5, w, use_reentrant=True)
    assert label == "label"
    y.sum().backward()
    assert x.grad.tolist() == [15.0, 20.0]  # 5 w
    assert w.grad.tolist() == [5.0, 10.0]  # 5 x


def test_reentrant_refuses_what_pytorch_refuses():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: k$"):
        checkpoint(lambda t, k=1: t * k, x, use_reentrant=True, k=2)
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda t: t * 2, x, use_reentrant=True, debug=True)
    y = checkpoint(lambda t: t.detach(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="none of output has requires_grad=True"):
        y.sum().backward()
    incompatible = "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()"
    y = checkpoint(lambda t: t * 2, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=incompatible):
        torch.autograd.grad(y.sum(), x)
    y = checkpoint(lambda t: t * 2, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=incompatible):
        y.sum().backward(inputs=[x])
    # A plain backward still works afterwards, and grad() outside any checkpoint too.
    checkpoint(lambda t: t * 2, x, use_reentrant=True).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert torch.autograd.grad((x * 3).sum(), x)[0].tolist() == [3.0, 3.0]


def test_reentrant_saved_input_modified_in_place_raises():
    x = torch.ones(2, requires_grad=True)
    h = x * 1.0
    y = checkpoint(lambda t: t.exp(), h, use_reentrant=True)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_dropout_edge_cases():
    x = torch.ones(4, requires_grad=True)
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.5, training=False) is x
    y = F.dropout(x, 1.0)
    assert y.tolist() == [0.0] * 4 and type(y.grad_fn).__name__ == "MulBackward0"
    for p in (-0.1, 1.1):
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout(x, p)
    z = torch.ones(1000)
    r = F.dropout(z, 0.25, inplace=True)
    assert r is z
    values = set(z.tolist())
    assert values <= {0.0, float(np.float32(1.0) / np.float32(0.75))}
    assert 150 < z.tolist().count(0.0) < 350
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        F.dropout(torch.ones(3, dtype=torch.long), 0.5)


def test_nested_checkpoint_and_large_tensors_match_plain():
    rng = np.random.default_rng(4)
    x = torch.tensor(rng.standard_normal((300, 300)) / 20, requires_grad=True)

    def inner(b):
        return (b * b).exp()

    def outer(a):
        return checkpoint(inner, a, use_reentrant=False).sin() @ a

    checkpoint(outer, x, use_reentrant=False).sum().backward()
    ckpt = x.grad.clone()
    x.grad = None
    ((x * x).exp().sin() @ x).sum().backward()
    assert np.array_equal(ckpt.numpy(), x.grad.numpy())


def test_checkpoint_keeps_higher_order_gradients():
    # PyTorch 2.15: the recomputed saved tensors get the first run's history back, so
    # a gradient penalty through a checkpoint is exact. f(a) = sum(a**3) at ones(3):
    # g = 3a**2 = 3, d/dx (f + sum(g**2)) = 3 + 2*3*6 = 39; d2f/dx2 = 6a = 6.
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = checkpoint(lambda a: (a**3).sum(), x, use_reentrant=False)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.tolist() == [3.0, 3.0, 3.0]
    (y + (g**2).sum()).backward()
    assert x.grad.tolist() == [39.0, 39.0, 39.0]
    y = checkpoint(lambda a: (a**3).sum(), x, use_reentrant=False)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 6.0, 6.0]


def test_checkpoint_gradient_penalty_through_non_leaf_input_matches_finite_differences():
    # A non-leaf input and an intermediate (sin) saved inside the checkpoint: the
    # penalty L(x) = sum(g**2), g = d/dx sum(sin(1.5x) * 1.5x), against central
    # differences of the numpy closed form.
    rng = np.random.default_rng(7)
    xv = rng.standard_normal(5)
    x = torch.tensor(xv, requires_grad=True)
    y = checkpoint(lambda a: (a.sin() * a).sum(), x * 1.5, use_reentrant=False)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    (g**2).sum().backward()

    def penalty(v):
        a = 1.5 * v
        return np.sum((1.5 * (np.cos(a) * a + np.sin(a))) ** 2)

    eps = 1e-6
    fd = [(penalty(xv + eps * e) - penalty(xv - eps * e)) / (2 * eps) for e in np.eye(len(xv))]
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-6)


def test_checkpoint_second_derivatives_pass_gradgradcheck():
    # Saved inputs, saved outputs (tanh, exp) and a parameter captured by the closure:
    # second derivatives through the recomputation against finite differences.
    from rustgrad.autograd import gradcheck, gradgradcheck

    rng = np.random.default_rng(3)
    x = torch.tensor(rng.standard_normal(3), requires_grad=True)
    w = torch.tensor(rng.standard_normal((3, 3)), requires_grad=True)

    def f(x, w):
        def block(a):
            return ((a @ w).tanh().exp() * a.sigmoid()).sum()

        return checkpoint(block, x * 2, use_reentrant=False)

    assert gradcheck(f, (x, w))
    assert gradgradcheck(f, (x, w))
