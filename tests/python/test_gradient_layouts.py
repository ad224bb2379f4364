"""Gradients of matrix products come out in their operand's layout (Note [Gradient
layouts]): `linear`'s weight is used as `weight.t()`, and its gradient must reach
AccumulateGrad contiguous, so the leaf keeps it without a transposing copy."""

import numpy as np
import rustgrad as torch
import rustgrad.nn.functional as F


def _contiguity_on_arrival(w):
    seen = []
    w.register_hook(lambda g: seen.append((g.is_contiguous(), g.detach().numpy().copy())))
    return seen


def test_linear_weight_gradient_arrives_contiguous_with_or_without_bias():
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((4, 3)).astype(np.float32)
    g_np = rng.standard_normal((4, 5)).astype(np.float32)
    for bias in (None, torch.zeros(5, requires_grad=True)):
        w = torch.nn.Parameter(torch.from_numpy(rng.standard_normal((5, 3)).astype(np.float32)))
        seen = _contiguity_on_arrival(w)
        F.linear(torch.from_numpy(x_np), w, bias).backward(torch.from_numpy(g_np))
        assert [c for c, _ in seen] == [True]
        np.testing.assert_allclose(seen[0][1], g_np.T @ x_np, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), g_np.T @ x_np, rtol=1e-5, atol=1e-6)


def test_mm_gradient_of_a_transposed_first_operand_keeps_its_layout():
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((3, 4))
    b_np = rng.standard_normal((3, 2))
    a = torch.from_numpy(a_np).requires_grad_()
    b = torch.from_numpy(b_np)
    seen = _contiguity_on_arrival(a)
    # a.t() is column-major: d(a.t() @ b)/d(a.t()) = g @ b.t(), transposed back to a.
    g = np.ones((4, 2))
    a.t().mm(b).backward(torch.from_numpy(g))
    assert [c for c, _ in seen] == [True]
    np.testing.assert_allclose(a.grad.numpy(), (g @ b_np.T).T)
