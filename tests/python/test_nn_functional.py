"""``rustgrad.nn.functional``: the activations of the elementwise family under
PyTorch's functional names. Expected values come from numpy."""

import warnings

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F


def _softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


X = np.array([[0.5, -1.25, 2.0], [3.0, 0.0, -0.75]])


@pytest.mark.parametrize(
    "name, reference",
    [
        ("relu", lambda x: np.maximum(x, 0)),
        ("relu6", lambda x: np.clip(x, 0, 6)),
        ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
        ("tanh", np.tanh),
        ("softsign", lambda x: x / (1 + np.abs(x))),
        ("silu", lambda x: x / (1 + np.exp(-x))),
        ("logsigmoid", lambda x: -np.log1p(np.exp(-x))),
        ("elu", lambda x: np.where(x > 0, x, np.expm1(x))),
        ("leaky_relu", lambda x: np.where(x > 0, x, 0.01 * x)),
        ("hardtanh", lambda x: np.clip(x, -1, 1)),
        ("softplus", lambda x: np.log1p(np.exp(x))),
    ],
)
def test_activation_values(name, reference):
    out = getattr(F, name)(torch.tensor(X))
    np.testing.assert_allclose(out.numpy(), reference(X), rtol=1e-12, atol=1e-12)


def test_softmax_family_with_and_without_dim():
    x = torch.tensor(X)
    np.testing.assert_allclose(F.softmax(x, dim=1).numpy(), _softmax(X, 1), rtol=1e-12)
    np.testing.assert_allclose(F.softmin(x, 0).numpy(), _softmax(-X, 0), rtol=1e-12)
    np.testing.assert_allclose(
        F.log_softmax(x, -1).numpy(), np.log(_softmax(X, 1)), rtol=1e-12, atol=1e-12
    )
    # No dim: PyTorch's implicit choice (dim 1 for a 2-D input) with its warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = F.softmax(x)
    assert "Implicit dimension choice for softmax has been deprecated" in str(caught[0].message)
    np.testing.assert_allclose(out.numpy(), _softmax(X, 1), rtol=1e-12)


def test_inplace_flag_writes_the_input():
    x = torch.tensor(X.copy())
    out = F.relu(x, inplace=True)
    assert out is x
    np.testing.assert_array_equal(x.numpy(), np.maximum(X, 0))
    y = torch.tensor(X.copy())
    assert F.leaky_relu_(y, 0.5) is y
    np.testing.assert_array_equal(y.numpy(), np.where(X > 0, X, 0.5 * X))


def test_import_styles():
    from rustgrad.nn import functional

    assert functional is F
    assert torch.nn.functional.gelu is F.gelu
