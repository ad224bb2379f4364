"""Empty and dense non-contiguous layouts, as PyTorch treats them.

- An empty tensor is contiguous whatever its strides (``compute_contiguous``).
- ``clone()`` keeps the strides of a non-overlapping and dense tensor
  (``memory_format=torch.preserve_format``) and copies anything else contiguous.
- In-place writes through views of such a dense, non-contiguous base, and views made
  before an in-place write to it, get PyTorch's gradients (Note [Views of dense bases]).
Expected gradients are derived by hand from the chain rule and checked numerically
against central differences.
"""

import numpy as np
import pytest
import rustgrad as torch


@pytest.mark.parametrize("shape", [(0, 0), (2, 0, 3), (0,), (3, 0)])
def test_empty_tensors_are_contiguous(shape):
    t = torch.zeros(*shape)
    assert t.is_contiguous()
    assert t.t().is_contiguous() if len(shape) == 2 else True
    assert t.contiguous() is t


def test_clone_keeps_the_strides_of_a_dense_tensor():
    x = torch.arange(12.0).view(3, 4)
    y = x.t().clone()
    assert y.stride() == (1, 4)
    assert not y.is_contiguous()
    assert y.tolist() == np.arange(12.0).reshape(3, 4).T.tolist()
    y[0, 1] = 100.0
    assert x[1, 0].item() == 4.0  # a copy: the source is untouched


def test_clone_of_a_non_dense_tensor_is_contiguous():
    x = torch.arange(12.0).view(3, 4)
    y = x[:, ::2].clone()
    assert y.stride() == (2, 1)
    assert y.tolist() == np.arange(12.0).reshape(3, 4)[:, ::2].tolist()


def test_clone_of_an_expanded_tensor_is_contiguous():
    y = torch.tensor([1.0, 2.0]).expand(3, 2).clone()
    assert y.stride() == (2, 1)
    y[0, 0] = 5.0
    assert y.tolist() == [[5.0, 2.0], [1.0, 2.0], [1.0, 2.0]]


def test_clone_is_differentiable_and_keeps_strides():
    a = torch.arange(6.0, dtype=torch.float64).view(2, 3).requires_grad_()
    b = a.t().clone()
    assert b.grad_fn.name() == "CloneBackward0"
    (b * torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], dtype=torch.float64)).sum().backward()
    assert a.grad.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]


def _loss_inplace_on_row(a_np, w_np, c_np):
    """The program of the next test on plain arrays: b = a.T; b[1] *= w; sum(b * c)."""
    b = a_np.T.copy()
    b[1] = b[1] * w_np
    return (b * c_np).sum()


def test_inplace_through_a_view_of_a_dense_transposed_base():
    a_np = np.arange(12.0).reshape(3, 4) / 7.0 + 0.5
    w_np = np.array([0.5, -1.0, 2.0])
    c_np = np.arange(12.0).reshape(4, 3) - 5.0
    a = torch.tensor(a_np, dtype=torch.float64, requires_grad=True)
    w = torch.tensor(w_np, dtype=torch.float64, requires_grad=True)
    c = torch.tensor(c_np, dtype=torch.float64)
    b = a.t().clone()  # shape (4, 3), strides (1, 4): dense, not contiguous
    assert b.stride() == (1, 4)
    b[1].mul_(w)
    (b * c).sum().backward()

    eps = 1e-6

    def numeric(x, f):
        g = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            d = np.zeros_like(x)
            d[i] = eps
            g[i] = (f(x + d) - f(x - d)) / (2 * eps)
        return g

    expected_a = numeric(a_np, lambda v: _loss_inplace_on_row(v, w_np, c_np))
    expected_w = numeric(w_np, lambda v: _loss_inplace_on_row(a_np, v, c_np))
    np.testing.assert_allclose(np.array(a.grad.tolist()), expected_a, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(np.array(w.grad.tolist()), expected_w, rtol=1e-6, atol=1e-6)


def test_inplace_on_a_view_of_a_dense_base_that_does_not_require_grad():
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64, requires_grad=True)
    buf = torch.arange(12.0, dtype=torch.float64).view(4, 3).t().clone()  # (3, 4)
    buf[1].mul_(w)
    buf.sum().backward()
    # d/dw_j sum(buf[1, j] * w_j) = old buf[1, j] = (3 j + 1)
    assert w.grad.tolist() == [1.0, 4.0, 7.0, 10.0]


def test_view_made_before_an_inplace_write_to_a_dense_base_follows_it():
    a = torch.arange(12.0, dtype=torch.float64).view(3, 4).requires_grad_()
    b = a.t().clone()  # (4, 3), strides (1, 4)
    v = b[1]  # a[:, 1]
    b.mul_(2)
    assert v.tolist() == [2.0, 10.0, 18.0]
    v.sum().backward()
    expected = np.zeros((3, 4))
    expected[:, 1] = 2.0
    assert a.grad.tolist() == expected.tolist()
