"""Second derivatives through backward(create_graph=True), checked against central finite
differences of the first derivative (float64). Covers the ops whose backward rule uses
their own output (exp, tanh, sigmoid, sqrt), which must re-attach that output's history
when backward is recorded."""

import numpy as np
import pytest
import rustgrad as torch

OPS = {
    "exp": lambda z: z.exp(),
    "tanh": lambda z: z.tanh(),
    "sigmoid": lambda z: z.sigmoid(),
    "sqrt": lambda z: z.sqrt(),
    "log": lambda z: z.log(),
    "pow_scalar": lambda z: z**2.5,
    "mul": lambda z: z * z,
    "div": lambda z: 1.0 / z,
}
X0 = [0.3, 0.7, 1.2]


def first_derivative(f, values):
    x = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (f(x) * x).sum().backward()
    return np.array(x.grad.tolist())


@pytest.mark.parametrize("name", sorted(OPS))
def test_second_derivative_matches_finite_differences(name):
    f = OPS[name]
    x = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
    (f(x) * x).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad, "the first derivative must be differentiable"
    x.grad = None
    g.sum().backward()
    analytic = np.array(x.grad.tolist())
    eps = 1e-6
    numeric = np.zeros(len(X0))
    for i in range(len(X0)):
        plus, minus = list(X0), list(X0)
        plus[i] += eps
        minus[i] -= eps
        # d/dx_i of sum_j g_j(x): the Hessian column sums, by central differences.
        numeric[i] = (first_derivative(f, plus).sum() - first_derivative(f, minus).sum()) / (
            2 * eps
        )
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-6)
