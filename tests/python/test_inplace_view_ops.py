"""In-place view ops (``squeeze_``, ``unsqueeze_``, ``transpose_``, ``swapaxes_``,
``swapdims_``, ``t_``, ``as_strided_``) and the in-place activations that save their
result (``elu_``, ``celu_``, ``selu_``, ``leaky_relu_``).

The grad_fn names and errors are PyTorch 2.15's (checked against it); gradients are
checked by finite differences (gradcheck / gradgradcheck) and closed forms.
"""

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck

VIEW_OPS = [
    # (name, op applied to a non-leaf of shape (2, 1, 3), PyTorch's grad_fn, new shape)
    ("squeeze_()", lambda y: y.squeeze_(), "SqueezeBackward3", (2, 3)),
    ("squeeze_(1)", lambda y: y.squeeze_(1), "SqueezeBackward4", (2, 3)),
    ("squeeze_((0, 1))", lambda y: y.squeeze_((0, 1)), "SqueezeBackward5", (2, 3)),
    ("unsqueeze_(0)", lambda y: y.unsqueeze_(0), "UnsqueezeBackward1", (1, 2, 1, 3)),
    ("transpose_(0, 2)", lambda y: y.transpose_(0, 2), "TransposeBackward1", (3, 1, 2)),
    ("swapaxes_(0, 2)", lambda y: y.swapaxes_(0, 2), "TransposeBackward1", (3, 1, 2)),
    ("swapdims_(0, 2)", lambda y: y.swapdims_(0, 2), "TransposeBackward1", (3, 1, 2)),
    ("t_()", lambda y: y.squeeze_(1).t_(), "TBackward1", (3, 2)),
    (
        "as_strided_",
        lambda y: y.as_strided_((3, 2), (1, 3)),
        "AsStridedBackward1",
        (3, 2),
    ),
]


@pytest.mark.parametrize("name,op,grad_fn,shape", VIEW_OPS, ids=[v[0] for v in VIEW_OPS])
def test_in_place_view_op_returns_self_bumps_version_and_records(name, op, grad_fn, shape):
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 1, 3).requires_grad_()
    y = x * 1
    before = y._version
    out = op(y)
    assert out is y
    assert tuple(y.shape) == shape
    assert y._version > before
    assert type(y.grad_fn).__name__ == grad_fn
    # The new node's input is the old history (MulBackward0, or the squeeze before t_).
    assert y.grad_fn.next_functions[0][0] is not None


@pytest.mark.parametrize("name,op,grad_fn,shape", VIEW_OPS, ids=[v[0] for v in VIEW_OPS])
def test_in_place_view_op_gradient_matches_finite_differences(name, op, grad_fn, shape):
    x = torch.randn(2, 1, 3, dtype=torch.float64, requires_grad=True)
    w = torch.randn(*shape, dtype=torch.float64)

    def f(x):
        y = x * 1.5
        op(y)
        return (y * w).sum() + (y**2).sum()

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_values_and_strides_match_numpy():
    a = np.arange(24.0).reshape(2, 3, 4)
    x = torch.tensor(a)
    x.transpose_(0, 2)
    np.testing.assert_array_equal(x.numpy(), a.transpose(2, 1, 0))
    assert x.stride() == (1, 4, 12)
    x.unsqueeze_(1)
    np.testing.assert_array_equal(x.numpy(), a.transpose(2, 1, 0)[:, None])
    x.squeeze_()
    np.testing.assert_array_equal(x.numpy(), a.transpose(2, 1, 0))
    y = torch.tensor(np.arange(6.0))
    y.as_strided_((2, 3), (1, 2))
    np.testing.assert_array_equal(
        y.numpy(), np.lib.stride_tricks.as_strided(np.arange(6.0), (2, 3), (8, 16))
    )
    assert torch.as_strided_(y, (3,), (2,), 1) is y
    np.testing.assert_array_equal(y.numpy(), [1.0, 3.0, 5.0])


def test_squeeze_with_tuple_of_dims():
    x = torch.ones(2, 1, 3, 1, dtype=torch.float64, requires_grad=True)
    y = x.squeeze((1, 3))
    assert tuple(y.shape) == (2, 3)
    assert type(y.grad_fn).__name__ == "SqueezeBackward2"
    assert tuple(x.squeeze((0, -1)).shape) == (2, 1, 3)
    assert gradcheck(lambda t: t.squeeze((1, 3)) * 2, (x,))
    with pytest.raises(RuntimeError, match="dim 1 appears multiple times in the list of dims"):
        x.squeeze((1, 1))
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.squeeze((0, 7))


def test_leaf_and_view_of_leaf_refuse_in_place_view_ops():
    x = torch.ones(2, 1, 3, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation",
    ):
        x.squeeze_()
    v = x.view(2, 3)
    with pytest.raises(
        RuntimeError,
        match="a view of a leaf Variable that requires grad is being used in an in-place operation",
    ):
        v.unsqueeze_(0)
    # The refused op changed nothing.
    assert tuple(x.shape) == (2, 1, 3)
    assert tuple(v.shape) == (2, 3)
    # Under no_grad the leaf's shape may change, as in PyTorch.
    with torch.no_grad():
        x.squeeze_()
    assert tuple(x.shape) == (2, 3)


def test_errors():
    with pytest.raises(
        RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"
    ):
        torch.ones(2, 1, 3).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).squeeze_(5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 3).transpose_(0, 5)
    t0 = torch.tensor(1.0)
    assert t0.t_() is t0


def test_view_written_after_in_place_view_op_goes_through_copy_slices():
    base = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)

    def f(base):
        w = base * 1
        b = w[0]
        b.unsqueeze_(0)
        assert type(b.grad_fn).__name__ == "UnsqueezeBackward1"
        b.mul_(2)
        assert type(w.grad_fn).__name__ == "CopySlices"
        return w

    assert gradcheck(f, (base,))
    out = f(base)
    expected = base.detach().numpy().copy()
    expected[0] *= 2
    np.testing.assert_allclose(out.detach().numpy(), expected)


def test_in_place_view_op_on_a_view_shares_storage():
    w = torch.zeros(2, 3)
    b = w[0]
    b.unsqueeze_(0)
    assert tuple(b.shape) == (1, 3)
    assert b._version == w._version == 1
    b.fill_(5.0)
    np.testing.assert_array_equal(w.numpy(), [[5.0, 5.0, 5.0], [0.0, 0.0, 0.0]])


def test_saved_tensor_modified_by_in_place_view_op_raises():
    x = torch.randn(3, 1, requires_grad=True)
    y = x.exp()  # saves its result
    y.squeeze_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


ACTIVATIONS = [
    # (in-place call, PyTorch's grad_fn, out-of-place reference)
    (lambda y: F.elu_(y), "EluBackward1", lambda x: F.elu(x)),
    (lambda y: F.elu_(y, 0.7), "EluBackward1", lambda x: F.elu(x, 0.7)),
    (lambda y: F.elu(y, inplace=True), "EluBackward1", lambda x: F.elu(x)),
    (lambda y: F.celu_(y, 1.3), "CeluBackward1", lambda x: F.celu(x, 1.3)),
    (lambda y: F.selu_(y), "EluBackward1", lambda x: F.selu(x)),
    (lambda y: F.leaky_relu_(y, 0.2), "LeakyReluBackward1", lambda x: F.leaky_relu(x, 0.2)),
    (lambda y: F.leaky_relu(y, inplace=True), "LeakyReluBackward1", lambda x: F.leaky_relu(x)),
]


@pytest.mark.parametrize("op,grad_fn,reference", ACTIVATIONS)
def test_in_place_activation_names_and_gradients(op, grad_fn, reference):
    x = torch.tensor([-2.0, -0.5, 0.3, 1.7], dtype=torch.float64, requires_grad=True)
    y = x * 1
    op(y)
    assert type(y.grad_fn).__name__ == grad_fn
    np.testing.assert_allclose(y.detach().numpy(), reference(x).detach().numpy())

    def f(x):
        y = x * 1
        op(y)
        return y

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_in_place_activation_saves_its_result():
    x = torch.randn(4, requires_grad=True)
    y = x * 1
    F.elu_(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_leaky_relu_with_negative_slope_refuses_backward():
    x = torch.randn(4, requires_grad=True)
    y = x * 1
    F.leaky_relu_(y, -0.1)
    with pytest.raises(
        RuntimeError,
        match="In-place leakyReLu backward calculation is triggered with a negative slope",
    ):
        y.sum().backward()


@pytest.mark.parametrize(
    "op",
    [
        lambda y: y.relu_(),
        lambda y: y.sigmoid_(),
        lambda y: y.exp_(),
        lambda y: y.tanh_(),
        lambda y: y.sqrt_(),
        lambda y: y[1:].exp_(),
    ],
    ids=["relu_", "sigmoid_", "exp_", "tanh_", "sqrt_", "view.exp_"],
)
def test_in_place_op_that_saves_its_result_sees_later_writes(op):
    # Regression: the saved result used to be a private buffer, so a later in-place
    # write to the tensor went unnoticed and backward used stale values.
    x = torch.rand(4, requires_grad=True)
    y = x * 1
    op(y)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_op_that_saves_its_result_has_the_right_gradient():
    x = torch.rand(4, dtype=torch.float64, requires_grad=True)

    def f(x):
        y = x * 1
        y.exp_()
        z = y * 1
        z[1:].sigmoid_()
        return z

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


# ----- int32 index tensors (PyTorch accepts them in most index ops) ---------------------

_X = np.arange(12.0).reshape(3, 4)
_I = np.array([0, 2])
INT32_OK = [
    ("index_select", lambda x, i: x.index_select(0, i), lambda: _X[_I]),
    ("gather", lambda x, i: x.gather(1, i.view(1, 2)), lambda: _X[:1, _I]),
    ("getitem", lambda x, i: x[i], lambda: _X[_I]),
    ("getitem_dim1", lambda x, i: x[:, i], lambda: _X[:, _I]),
    ("index_add", lambda x, i: x.index_add(0, i, torch.ones(2, 4, dtype=torch.float64)), None),
    ("scatter", lambda x, i: x.scatter(1, i.view(1, 2), 1.0), None),
    ("index_put", lambda x, i: x.index_put((i,), torch.tensor(1.0, dtype=torch.float64)), None),
]


@pytest.mark.parametrize("name,op,expected", INT32_OK, ids=[c[0] for c in INT32_OK])
def test_int32_indices_give_the_int64_result(name, op, expected):
    x = torch.tensor(_X)
    got = op(x, torch.tensor(_I, dtype=torch.int32))
    want = op(x, torch.tensor(_I, dtype=torch.int64))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    if expected is not None:
        np.testing.assert_array_equal(got.numpy(), expected())


def test_int32_indices_carry_gradients():
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    i = torch.tensor([2, 0, 2], dtype=torch.int32)
    assert gradcheck(lambda x: x.index_select(0, i) * 2, (x,))
    assert gradcheck(lambda x: x[i], (x,))


@pytest.mark.parametrize(
    "op,exc,phrase",
    [
        (
            lambda x, i: x.take(i),
            RuntimeError,
            "take(): Expected a long tensor for index, but got Int",
        ),
        (
            lambda x, i: x.index_fill(0, i, 1.0),
            IndexError,
            "index_fill_(): Expected dtype int64 for index.",
        ),
        (
            lambda x, i: x.index_copy(0, i, x[:2]),
            RuntimeError,
            "index_copy_(): Expected a long tensor for index, but got Int",
        ),
        (
            lambda x, i: x.put(i, torch.ones(2)),
            RuntimeError,
            "put_(): Expected a long tensor for index, but got Int",
        ),
        (
            lambda x, i: x.take_along_dim(i.view(1, 2), 1),
            RuntimeError,
            "torch.take_along_dim(): dtype of indices should be Long but got Int",
        ),
    ],
)
def test_ops_that_insist_on_int64_indices(op, exc, phrase):
    x = torch.ones(3, 4)
    with pytest.raises(exc) as e:
        op(x, torch.tensor([0, 2], dtype=torch.int32))
    assert phrase in str(e.value)
