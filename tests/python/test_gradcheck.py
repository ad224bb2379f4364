"""Finite-difference gradient checks, in float64, for every differentiable op.

For an op ``f`` and a random ``grad_output`` ``g``, the analytic vector-Jacobian
product ``g^T J`` that ``backward(g)`` puts in each input's ``.grad`` is compared with
central differences of ``x -> sum(g * f(x))`` (eps 1e-6). Forward values are checked
against numpy as well, where numpy has the op.
"""

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

EPS = 1e-6
ATOL = 1e-5
RTOL = 1e-4


def _to_tensor(array, requires_grad=False):
    t = torch.from_numpy(np.array(array, dtype=np.float64))
    return t.requires_grad_() if requires_grad else t


def gradcheck(fn, inputs, numpy_fn=None, seed=0):
    """Check ``fn``'s gradients (and, given ``numpy_fn``, its values) at ``inputs``.

    Args:
        fn: takes rustgrad float64 tensors and returns one tensor.
        inputs: numpy arrays (float64) at which to check.
        numpy_fn: the same function over numpy arrays, for the forward check.
        seed: seeds the random ``grad_output``.
    """
    inputs = [np.array(a, dtype=np.float64) for a in inputs]
    rng = np.random.default_rng(seed)

    leaves = [_to_tensor(a, requires_grad=True) for a in inputs]
    out = fn(*leaves)
    assert out.dtype == torch.float64
    assert out.requires_grad
    out_value = out.detach().numpy().copy()
    if numpy_fn is not None:
        expected = np.asarray(numpy_fn(*inputs), dtype=np.float64)
        assert out_value.shape == expected.shape
        np.testing.assert_allclose(out_value, expected, rtol=1e-12, atol=1e-12)

    grad_output = rng.standard_normal(out_value.shape)
    out.backward(_to_tensor(grad_output))

    def objective(arrays):
        with torch.no_grad():
            value = fn(*[_to_tensor(a) for a in arrays]).numpy()
        return float(np.sum(value * grad_output))

    for k, (leaf, array) in enumerate(zip(leaves, inputs)):
        assert leaf.grad is not None, f"input {k} got no gradient"
        analytic = leaf.grad.numpy()
        assert analytic.shape == array.shape, f"input {k}: gradient shape {analytic.shape}"
        numeric = np.zeros_like(array)
        for index in np.ndindex(array.shape):
            plus = [a.copy() for a in inputs]
            minus = [a.copy() for a in inputs]
            plus[k][index] += EPS
            minus[k][index] -= EPS
            numeric[index] = (objective(plus) - objective(minus)) / (2 * EPS)
        np.testing.assert_allclose(
            analytic, numeric, atol=ATOL, rtol=RTOL, err_msg=f"gradient of input {k}"
        )


def _rand(rng, *shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, size=shape)


def _away_from_zero(rng, *shape):
    """Values in [-1.5, -0.2] u [0.2, 1.5]: no kink or pole within eps."""
    return rng.uniform(0.2, 1.5, size=shape) * rng.choice([-1.0, 1.0], size=shape)


def _sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


# --- unary ops ---------------------------------------------------------------------------------

UNARY = {
    "neg": (lambda x: x.neg(), np.negative, "any"),
    "neg-operator": (lambda x: -x, np.negative, "any"),
    "exp": (lambda x: x.exp(), np.exp, "any"),
    "log": (lambda x: x.log(), np.log, "positive"),
    "sqrt": (lambda x: x.sqrt(), np.sqrt, "positive"),
    "tanh": (lambda x: x.tanh(), np.tanh, "any"),
    "sigmoid": (lambda x: x.sigmoid(), _sigmoid, "any"),
    "relu": (lambda x: x.relu(), lambda a: np.maximum(a, 0.0), "nonzero"),
    "abs": (lambda x: x.abs(), np.abs, "nonzero"),
    "pow-scalar": (lambda x: x.pow(2.5), lambda a: a**2.5, "positive"),
    "pow-int": (lambda x: x.pow(3), lambda a: a**3, "any"),
    "pow-negative": (lambda x: x.pow(-1.5), lambda a: a**-1.5, "positive"),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)], ids=["0d", "1d", "2d"])
def test_unary(name, shape):
    fn, numpy_fn, domain = UNARY[name]
    rng = np.random.default_rng(1)
    if domain == "positive":
        x = rng.uniform(0.3, 2.0, size=shape)
    elif domain == "nonzero":
        x = _away_from_zero(rng, *shape)
    else:
        x = _rand(rng, *shape, low=-2.0, high=2.0)
    gradcheck(fn, [x], numpy_fn)


# --- binary ops with broadcasting -----------------------------------------------------------------

BINARY = {
    "add": (lambda a, b: a + b, np.add),
    "sub": (lambda a, b: a - b, np.subtract),
    "mul": (lambda a, b: a * b, np.multiply),
    "div": (lambda a, b: a / b, np.divide),
    "pow": (lambda a, b: a.pow(b), np.power),
    "pow-operator": (lambda a, b: a**b, np.power),
}

BROADCAST_SHAPES = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((2, 1, 4), (3, 1)),
    ((4,), (2, 3, 4)),
    ((), (2, 3)),
    ((2, 3), ()),
    ((1,), (3,)),
]


def _binary_inputs(name, shape_a, shape_b, rng):
    if name.startswith("pow"):
        return rng.uniform(0.5, 2.0, size=shape_a), _rand(rng, *shape_b, low=-1.5, high=1.5)
    if name == "div":
        return _rand(rng, *shape_a), _away_from_zero(rng, *shape_b)
    return _rand(rng, *shape_a), _rand(rng, *shape_b)


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", BROADCAST_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
def test_binary_broadcasting(name, shapes):
    fn, numpy_fn = BINARY[name]
    rng = np.random.default_rng(2)
    a, b = _binary_inputs(name, *shapes, rng)
    gradcheck(fn, [a, b], numpy_fn)


def test_binary_with_the_same_tensor_twice():
    rng = np.random.default_rng(3)
    x = _away_from_zero(rng, 3, 2)
    gradcheck(lambda t: t * t, [x], lambda a: a * a)
    gradcheck(lambda t: t / t.exp(), [x], lambda a: a / np.exp(a))
    gradcheck(lambda t: t - t * 3 + t, [x], lambda a: a - a * 3 + a)


# --- Python scalar operands --------------------------------------------------------------------

SCALAR_FORMS = {
    "x+2": (lambda x: x + 2, lambda a: a + 2),
    "2+x": (lambda x: 2 + x, lambda a: 2 + a),
    "x-2": (lambda x: x - 2, lambda a: a - 2),
    "2-x": (lambda x: 2 - x, lambda a: 2 - a),
    "x*2.5": (lambda x: x * 2.5, lambda a: a * 2.5),
    "2.5*x": (lambda x: 2.5 * x, lambda a: 2.5 * a),
    "x/2": (lambda x: x / 2, lambda a: a / 2),
    "2/x": (lambda x: 2 / x, lambda a: 2 / a),
    "2**x": (lambda x: 2**x, lambda a: 2**a),
    "x**3": (lambda x: x**3, lambda a: a**3),
    "x**0.5": (lambda x: x**0.5, lambda a: a**0.5),
    "x**-2": (lambda x: x**-2, lambda a: a**-2.0),
}


@pytest.mark.parametrize("form", list(SCALAR_FORMS))
def test_scalar_operand_forms(form):
    fn, numpy_fn = SCALAR_FORMS[form]
    rng = np.random.default_rng(4)
    gradcheck(fn, [rng.uniform(0.3, 2.0, size=(2, 3))], numpy_fn)


# --- reductions ---------------------------------------------------------------------------------

REDUCTIONS = {
    "sum": (lambda x: x.sum(), lambda a: a.sum()),
    "sum-0": (lambda x: x.sum(0), lambda a: a.sum(0)),
    "sum-1": (lambda x: x.sum(dim=1), lambda a: a.sum(1)),
    "sum-neg1-keepdim": (lambda x: x.sum(-1, keepdim=True), lambda a: a.sum(-1, keepdims=True)),
    "sum-0-keepdim": (lambda x: x.sum(dim=0, keepdim=True), lambda a: a.sum(0, keepdims=True)),
    "mean": (lambda x: x.mean(), lambda a: a.mean()),
    "mean-0": (lambda x: x.mean(0), lambda a: a.mean(0)),
    "mean-2": (lambda x: x.mean(dim=2), lambda a: a.mean(2)),
    "mean-1-keepdim": (lambda x: x.mean(1, keepdim=True), lambda a: a.mean(1, keepdims=True)),
    "mean-neg2-keepdim": (
        lambda x: x.mean(dim=-2, keepdim=True),
        lambda a: a.mean(-2, keepdims=True),
    ),
}


@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions(name):
    fn, numpy_fn = REDUCTIONS[name]
    rng = np.random.default_rng(5)
    gradcheck(fn, [_rand(rng, 2, 3, 4)], numpy_fn)


def test_reductions_of_0d_and_1d():
    rng = np.random.default_rng(6)
    gradcheck(lambda x: x.sum(), [np.array(0.7)], lambda a: a.sum())
    gradcheck(lambda x: x.mean(), [_rand(rng, 5)], lambda a: a.mean())
    gradcheck(lambda x: x.sum(0), [_rand(rng, 5)], lambda a: a.sum(0))


# --- matmul -------------------------------------------------------------------------------------

MATMUL_SHAPES = [
    ((3, 4), (4, 5)),  # 2-D
    ((2, 3, 4), (2, 4, 5)),  # batched
    ((2, 3, 4), (4, 5)),  # broadcast right
    ((3, 4), (2, 4, 5)),  # broadcast left
    ((2, 1, 3, 4), (3, 4, 2)),  # broadcast batch dims
    ((4,), (4,)),  # dot
    ((3, 4), (4,)),  # matrix-vector
    ((4,), (4, 5)),  # vector-matrix
    ((2, 3, 4), (4,)),  # batched matrix-vector
    ((4,), (2, 4, 3)),  # vector-batched matrix
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{s[0]}@{s[1]}")
def test_matmul(shapes):
    rng = np.random.default_rng(7)
    a, b = (_rand(rng, *s) for s in shapes)
    gradcheck(lambda x, y: x @ y, [a, b], np.matmul)
    gradcheck(lambda x, y: x.matmul(y), [a, b], np.matmul)


# --- views and copies ----------------------------------------------------------------------------

VIEWS = {
    "view": (lambda x: x.view(4, 6), lambda a: a.reshape(4, 6)),
    "view-infer": (lambda x: x.view(-1), lambda a: a.reshape(-1)),
    "reshape": (lambda x: x.reshape(6, 4), lambda a: a.reshape(6, 4)),
    "reshape-noncontiguous": (lambda x: x.transpose(0, 2).reshape(8, 3), None),
    "transpose": (lambda x: x.transpose(0, 2), lambda a: a.transpose(2, 1, 0)),
    "t": (lambda x: x.sum(0).t(), lambda a: a.sum(0).T),
    "permute": (lambda x: x.permute(1, 2, 0), lambda a: a.transpose(1, 2, 0)),
    "expand": (lambda x: x[:, :1, :].expand(2, 5, 4), None),
    "expand-new-dims": (lambda x: x[0, 0].expand(3, 2, 4), None),
    "unsqueeze": (lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    "unsqueeze-neg": (lambda x: x.unsqueeze(-1), lambda a: a[..., None]),
    "squeeze": (lambda x: x[:, :1].squeeze(), lambda a: a[:, 0]),
    "squeeze-dim": (lambda x: x[:1].squeeze(0), lambda a: a[0]),
    "slice": (lambda x: x[1:3, ::2], lambda a: a[1:3, ::2]),
    "slice-neg": (lambda x: x[:, -2:, 1:], lambda a: a[:, -2:, 1:]),
    "index": (lambda x: x[0], lambda a: a[0]),
    "index-2": (lambda x: x[1, 2], lambda a: a[1, 2]),
    "index-slice": (lambda x: x[:, 1], lambda a: a[:, 1]),
    "clone": (lambda x: x.clone(), lambda a: a.copy()),
    "contiguous": (lambda x: x.transpose(0, 1).contiguous(), lambda a: a.transpose(1, 0, 2)),
    "view-of-view": (lambda x: x[1].t().unsqueeze(0).reshape(2, 6), None),
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views(name):
    fn, numpy_fn = VIEWS[name]
    rng = np.random.default_rng(8)
    # Multiply by 1 so that a view of the leaf is used with an arbitrary grad_output;
    # the numpy functions apply to the leaf values directly.
    gradcheck(lambda x: fn(x * 1), [_rand(rng, 2, 3, 4)], numpy_fn)


def test_view_results_match_numpy_layouts():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    x = torch.from_numpy(a.copy())
    np.testing.assert_array_equal(
        x.transpose(0, 2).reshape(8, 3).numpy(), a.transpose(2, 1, 0).reshape(8, 3)
    )
    np.testing.assert_array_equal(
        x[:, :1, :].expand(2, 5, 4).numpy(), np.broadcast_to(a[:, :1, :], (2, 5, 4))
    )
    np.testing.assert_array_equal(
        x[0, 0].expand(3, 2, 4).numpy(), np.broadcast_to(a[0, 0], (3, 2, 4))
    )
    np.testing.assert_array_equal(
        x[1].t().unsqueeze(0).reshape(2, 6).numpy(), a[1].T[None].reshape(2, 6)
    )


def test_composite_expression():
    rng = np.random.default_rng(9)
    w = _rand(rng, 4, 3)
    x = _rand(rng, 5, 4)
    b = _rand(rng, 3)

    def model(w, x, b):
        h = (x @ w + b).tanh()
        return (h * h.sigmoid() - 0.5 * h.exp()).mean(0).sum()

    def model_np(w, x, b):
        h = np.tanh(x @ w + b)
        return (h * _sigmoid(h) - 0.5 * np.exp(h)).mean(0).sum()

    gradcheck(model, [w, x, b], model_np)


# --- property: random broadcastable shapes --------------------------------------------------------


@settings(max_examples=25, deadline=None, database=None)
@given(
    shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
    name=st.sampled_from(["add", "sub", "mul", "div"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_broadcasting_property(shapes, name, seed):
    fn, numpy_fn = BINARY[name]
    rng = np.random.default_rng(seed)
    a, b = _binary_inputs(name, *shapes.input_shapes, rng)
    gradcheck(fn, [a, b], numpy_fn, seed=seed)


@settings(max_examples=15, deadline=None, database=None)
@given(
    shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
    keepdim=st.booleans(),
    mean=st.booleans(),
    data=st.data(),
)
def test_reduction_property(shape, keepdim, mean, data):
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    rng = np.random.default_rng(len(shape) * 7 + dim)
    x = _rand(rng, *shape)
    if mean:
        gradcheck(
            lambda t: t.mean(dim, keepdim=keepdim), [x], lambda a: a.mean(dim, keepdims=keepdim)
        )
    else:
        gradcheck(
            lambda t: t.sum(dim, keepdim=keepdim), [x], lambda a: a.sum(dim, keepdims=keepdim)
        )
