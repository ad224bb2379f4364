"""The Tensor autograd surface of PyTorch that scripts touch directly: ``numpy()`` on
tensors that require grad (refused in grad mode, shared under ``no_grad``) and
``del t.grad``."""

import numpy as np
import pytest
import rustgrad as torch

PHRASE = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."


def test_numpy_of_a_tensor_that_requires_grad_is_refused_in_grad_mode():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as e:
        x.numpy()
    assert PHRASE in str(e.value)
    with pytest.raises(RuntimeError) as e:
        np.asarray(x)
    assert PHRASE in str(e.value)


def test_numpy_under_no_grad_shares_memory():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        a = x.numpy()
        b = np.asarray(x)
    np.testing.assert_array_equal(a, [1.0, 1.0, 1.0])
    with torch.no_grad():
        x.mul_(3)
    np.testing.assert_array_equal(a, [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(b, [3.0, 3.0, 3.0])


def test_del_grad_clears_it():
    x = torch.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    del x.grad
    assert x.grad is None
    # Gradients start again from nothing.
    (x * 5).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])
    g = torch.zeros(3)
    x.grad = g
    assert x.grad is g
