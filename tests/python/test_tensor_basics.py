"""Tensors without autograd: factories, dtypes, views, conversions, operators."""

import numpy as np
import pytest
import rustgrad as torch

Variable = torch.autograd.Variable
Parameter = torch.nn.Parameter


# --- factories and dtypes -------------------------------------------------------------------------


def test_default_dtypes():
    assert torch.tensor([1.0, 2.0]).dtype == torch.float32
    assert torch.tensor(1.5).dtype == torch.float32
    assert torch.tensor([1, 2, 3]).dtype == torch.int64
    assert torch.tensor(7).dtype == torch.int64
    assert torch.tensor([True, False]).dtype == torch.bool
    assert torch.tensor([1, 2.5]).dtype == torch.float32  # mixed ints and floats
    for make in (torch.zeros, torch.ones, torch.rand, torch.randn):
        assert make(2, 3).dtype == torch.float32


def test_explicit_dtypes():
    assert torch.tensor([1.0], dtype=torch.float64).dtype == torch.float64
    assert torch.tensor([1, 2], dtype=torch.float64).dtype == torch.float64
    assert torch.tensor([1.7, -1.7], dtype=torch.int64).tolist() == [1, -1]
    for make in (torch.zeros, torch.ones, torch.rand, torch.randn):
        assert make(2, 3, dtype=torch.float64).dtype == torch.float64
    assert torch.zeros(2, dtype=torch.int64).tolist() == [0, 0]
    assert torch.ones(2, dtype=torch.bool).tolist() == [True, True]


def test_factory_values_and_shapes():
    assert torch.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert torch.ones(3).tolist() == [1.0, 1.0, 1.0]
    assert torch.zeros((2, 3)).shape == (2, 3)  # a size tuple works like varargs
    assert torch.full((2, 2), 7.5).tolist() == [[7.5, 7.5], [7.5, 7.5]]
    assert torch.full((2, 2), 7.5).dtype == torch.float32
    assert torch.arange(0, 5, 1).tolist() == [0, 1, 2, 3, 4]
    assert torch.arange(0, 5, 1).dtype == torch.int64
    np.testing.assert_allclose(torch.arange(0.0, 1.0, 0.25).numpy(), [0.0, 0.25, 0.5, 0.75])
    assert torch.arange(0.0, 1.0, 0.25).dtype == torch.float32
    assert torch.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert torch.zeros(0).numel() == 0


def test_factories_with_requires_grad():
    for make in (torch.zeros, torch.ones, torch.rand, torch.randn):
        t = make(2, requires_grad=True)
        assert t.requires_grad and t.is_leaf and t.grad is None
    assert torch.tensor([1.0], requires_grad=True).requires_grad


def test_rand_and_randn_distributions():
    torch.manual_seed(0)
    u = torch.rand(10_000).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.02
    n = torch.randn(10_000).numpy()
    assert abs(n.mean()) < 0.05
    assert abs(n.std() - 1.0) < 0.05


def test_manual_seed_makes_random_tensors_repeatable():
    torch.manual_seed(42)
    a = torch.rand(3, 4).numpy().copy()
    b = torch.randn(5).numpy().copy()
    torch.manual_seed(42)
    np.testing.assert_array_equal(torch.rand(3, 4).numpy(), a)
    np.testing.assert_array_equal(torch.randn(5).numpy(), b)
    torch.manual_seed(43)
    assert not np.array_equal(torch.rand(3, 4).numpy(), a)
    # Successive draws differ.
    torch.manual_seed(42)
    assert not np.array_equal(torch.rand(3, 4).numpy(), torch.rand(3, 4).numpy())


# --- Tensor, Variable and Parameter classes -----------------------------------------------------


def test_tensor_class_constructors():
    t = torch.Tensor([1.0])
    assert t.dtype == torch.float32
    assert t.tolist() == [1.0]
    u = torch.Tensor(2, 3)
    assert u.shape == (2, 3)
    assert u.dtype == torch.float32
    assert torch.Tensor([[1, 2]]).dtype == torch.float32  # the class is always float32
    assert isinstance(torch.ones(1), torch.Tensor)
    assert type(torch.ones(1)) is torch.Tensor


def test_every_tensor_is_a_variable():
    assert isinstance(torch.ones(2), Variable)
    assert isinstance(torch.tensor([1, 2]), Variable)
    assert isinstance(Parameter(torch.ones(2)), Variable)
    v = Variable(torch.ones(2))
    assert isinstance(v, torch.Tensor)
    assert v.requires_grad is False
    assert Variable(torch.ones(2), requires_grad=True).requires_grad is True


def test_parameter_is_a_tensor_subclass():
    assert issubclass(Parameter, torch.Tensor)
    p = Parameter(torch.ones(2, 3))
    assert isinstance(p, Parameter) and isinstance(p, torch.Tensor)
    assert p.requires_grad is True
    assert p.is_leaf
    assert p.shape == (2, 3)
    frozen = Parameter(torch.ones(2), requires_grad=False)
    assert frozen.requires_grad is False
    assert isinstance(frozen, Parameter)
    out = (p * 2).sum()
    assert type(out) is torch.Tensor  # ops on parameters give plain tensors
    out.backward()
    np.testing.assert_array_equal(p.grad.numpy(), np.full((2, 3), 2.0, dtype=np.float32))


# --- views share storage and version --------------------------------------------------------------


def test_views_share_storage():
    base = torch.zeros(3, 4)
    row = base[1]
    row.fill_(5.0)
    assert base.tolist()[1] == [5.0] * 4
    col = base[:, 2]
    col.copy_(torch.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(base.numpy()[:, 2], [1.0, 2.0, 3.0])
    base.t()[0].fill_(-1.0)  # the first column, through a transposed view
    np.testing.assert_array_equal(base.numpy()[:, 0], [-1.0, -1.0, -1.0])
    flat = base.view(12)
    flat.zero_()
    assert base.numpy().sum() == 0.0
    strided = base[1:3, ::2]
    strided.fill_(9.0)
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0, 0], [9, 0, 9, 0], [9, 0, 9, 0]])
    base.add_(1)
    np.testing.assert_array_equal(strided.numpy(), np.full((2, 2), 10.0, dtype=np.float32))


def test_views_share_version():
    base = torch.zeros(2, 3)
    v0 = base._version
    view = base.unsqueeze(0).permute(0, 2, 1).squeeze(0)
    view.add_(1)
    assert base._version == view._version == v0 + 1
    assert base.tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_expand_is_a_view():
    base = torch.tensor([[1.0], [2.0]])
    expanded = base.expand(2, 3)
    assert expanded.tolist() == [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]]
    base.mul_(10)
    assert expanded.tolist() == [[10.0, 10.0, 10.0], [20.0, 20.0, 20.0]]
    assert base.expand(4, 2, 3).shape == (4, 2, 3)
    assert base.expand(-1, 3).shape == (2, 3)


def test_view_shapes():
    x = torch.arange(0, 24, 1).view(2, 3, 4)
    assert x.shape == (2, 3, 4)
    assert x.view(6, -1).shape == (6, 4)
    assert x.reshape(-1).shape == (24,)
    assert x.transpose(0, 2).shape == (4, 3, 2)
    assert x[0].t().shape == (4, 3)
    assert x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x.unsqueeze(0).shape == (1, 2, 3, 4)
    assert x.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert x[:, :1].squeeze().shape == (2, 4)
    assert x[:, :1].squeeze(1).shape == (2, 4)
    assert x.squeeze(0).shape == (2, 3, 4)  # not of size 1: unchanged
    assert x[1:, ::2, -1].shape == (1, 2)
    assert x[1, 2].tolist() == [20, 21, 22, 23]
    assert x[1, 2, 3].item() == 23
    assert x[:, 1, ::3].tolist() == [[4, 7], [16, 19]]
    np.testing.assert_array_equal(
        x.permute(2, 0, 1).numpy(), np.arange(24).reshape(2, 3, 4).transpose(2, 0, 1)
    )


# --- numpy interop and conversions ----------------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.linspace(-1, 1, 5),
        np.array([[1, -2], [3, 4]], dtype=np.int64),
        np.array([True, False, True]),
        np.array(3.5),
    ],
    ids=["float32", "float64", "int64", "bool", "0d"],
)
def test_numpy_round_trip(array):
    t = torch.from_numpy(array)
    expected_dtype = {
        np.float32: torch.float32,
        np.float64: torch.float64,
        np.int64: torch.int64,
        np.bool_: torch.bool,
    }[array.dtype.type]
    assert t.dtype == expected_dtype
    assert tuple(t.shape) == array.shape
    back = t.numpy()
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back, array)
    assert t.tolist() == array.tolist()


def test_numpy_of_a_non_contiguous_view():
    x = torch.from_numpy(np.arange(12, dtype=np.float64).reshape(3, 4))
    np.testing.assert_array_equal(x.t().numpy(), np.arange(12.0).reshape(3, 4).T)
    np.testing.assert_array_equal(x[:, 1::2].numpy(), np.arange(12.0).reshape(3, 4)[:, 1::2])


def test_item_tolist_shape_size_dim_numel():
    x = torch.tensor([[1.5, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.shape == (2, 3)
    assert tuple(x.shape) == (2, 3)
    assert x.shape[0] == 2 and x.shape[-1] == 3
    assert x.size() == (2, 3)
    assert x.size(1) == 3
    assert x.size(-2) == 2
    assert x.dim() == 2
    assert x.numel() == 6
    assert x.tolist() == [[1.5, 2.0, 3.0], [4.0, 5.0, 6.0]]
    scalar = torch.tensor(2.5)
    assert scalar.shape == ()
    assert scalar.dim() == 0 and scalar.numel() == 1
    assert scalar.item() == 2.5 and isinstance(scalar.item(), float)
    assert scalar.tolist() == 2.5
    assert torch.tensor(3).item() == 3 and isinstance(torch.tensor(3).item(), int)
    assert torch.tensor(True).item() is True
    assert x[1, 2].item() == 6.0
    assert len(x) == 2


def test_dtype_conversions():
    x = torch.tensor([1.7, -2.5, 3.0])
    assert x.double().dtype == torch.float64
    assert x.float().dtype == torch.float32
    assert x.long().dtype == torch.int64
    assert x.long().tolist() == [1, -2, 3]  # truncation toward zero
    assert x.to(torch.float64).dtype == torch.float64
    assert x.to(torch.int64).tolist() == [1, -2, 3]
    assert torch.tensor([1, 0]).to(torch.bool).tolist() == [True, False]
    assert torch.tensor([True, False]).float().tolist() == [1.0, 0.0]
    np.testing.assert_array_equal(x.double().numpy(), np.array([1.7, -2.5, 3.0], dtype=np.float32))


def test_conversions_are_differentiable():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.requires_grad and y.dtype == torch.float64
    (y * y).sum().backward()
    assert x.grad.dtype == torch.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_contiguous_and_clone():
    x = torch.arange(0, 6, 1).view(2, 3)
    t = x.t()
    c = t.contiguous()
    assert c.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert c.view(6).tolist() == [0, 3, 1, 4, 2, 5]  # contiguous, so view works
    assert x.contiguous().tolist() == x.tolist()
    cl = x.clone()
    cl.fill_(7)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]  # clone is a copy
    assert cl.tolist() == [[7] * 3] * 2
    assert cl.dtype == x.dtype
    c.zero_()
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]  # contiguous() of a non-contiguous view copies


def test_detach():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    d.fill_(0.0)  # shares storage with y
    assert y.detach().tolist() == [0.0, 0.0]
    z = x * 3
    z.detach_()
    assert z.requires_grad is False and z.grad_fn is None
    assert x.data.requires_grad is False
    assert x.data.tolist() == [1.0, 2.0]


# --- operators ------------------------------------------------------------------------------------


def test_operators_with_scalars_on_either_side():
    a = np.array([[1.0, 2.0], [-3.0, 4.0]], dtype=np.float32)
    x = torch.from_numpy(a.copy())
    cases = {
        "x+2": (x + 2, a + 2),
        "2+x": (2 + x, 2 + a),
        "x-2": (x - 2, a - 2),
        "2-x": (2 - x, 2 - a),
        "x*3": (x * 3, a * 3),
        "3*x": (3 * x, 3 * a),
        "x/4": (x / 4, a / 4),
        "4/x": (4 / x, 4 / a),
        "x**2": (x**2, a**2),
        "2**x": (2**x, 2**a),
        "-x": (-x, -a),
        "x+0.5": (x + 0.5, a + 0.5),
    }
    for name, (got, expected) in cases.items():
        assert got.dtype == torch.float32, name
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, err_msg=name)


def test_tensor_operators_and_broadcasting():
    a = np.arange(6, dtype=np.float32).reshape(2, 3) + 1
    b = np.array([2.0, 4.0, 8.0], dtype=np.float32)
    x, y = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    np.testing.assert_allclose((x + y).numpy(), a + b)
    np.testing.assert_allclose((x - y).numpy(), a - b)
    np.testing.assert_allclose((x * y).numpy(), a * b)
    np.testing.assert_allclose((x / y).numpy(), a / b)
    np.testing.assert_allclose((x**y).numpy(), a**b, rtol=1e-6)
    np.testing.assert_allclose((x @ y).numpy(), a @ b)
    np.testing.assert_allclose(x.matmul(x.t()).numpy(), a @ a.T)


def test_unary_ops_and_reductions_match_numpy():
    a = np.array([[0.5, -1.0, 2.0], [3.0, -0.25, 1.0]])
    x = torch.from_numpy(a.copy())
    np.testing.assert_allclose(x.neg().numpy(), -a)
    np.testing.assert_allclose(x.exp().numpy(), np.exp(a))
    np.testing.assert_allclose(x.abs().log().numpy(), np.log(np.abs(a)))
    np.testing.assert_allclose(x.abs().sqrt().numpy(), np.sqrt(np.abs(a)))
    np.testing.assert_allclose(x.tanh().numpy(), np.tanh(a))
    np.testing.assert_allclose(x.sigmoid().numpy(), 1 / (1 + np.exp(-a)))
    np.testing.assert_allclose(x.relu().numpy(), np.maximum(a, 0))
    np.testing.assert_allclose(x.abs().pow(1.5).numpy(), np.abs(a) ** 1.5)
    np.testing.assert_allclose(x.sum().item(), a.sum())
    np.testing.assert_allclose(x.sum(0).numpy(), a.sum(0))
    np.testing.assert_allclose(x.sum(1, keepdim=True).numpy(), a.sum(1, keepdims=True))
    np.testing.assert_allclose(x.mean(dim=-1).numpy(), a.mean(-1))
    np.testing.assert_allclose(x.mean().item(), a.mean())
    assert x.sum(0, keepdim=True).shape == (1, 3)


def test_int_tensor_arithmetic_promotes_like_pytorch():
    i = torch.tensor([1, 2, 3])
    assert (i + 1).dtype == torch.int64
    assert (i * 2).tolist() == [2, 4, 6]
    assert (i + 0.5).dtype == torch.float32  # a float scalar promotes to the default dtype
    assert (i / 2).dtype == torch.float32  # true division always gives floats
    assert (i / 2).tolist() == [0.5, 1.0, 1.5]
    f64 = torch.tensor([1.0], dtype=torch.float64)
    assert (f64 * 2.5).dtype == torch.float64  # a Python scalar does not change a tensor's dtype
    assert (torch.ones(1) + f64).dtype == torch.float64


def test_comparisons_give_bool_tensors():
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([3.0, 2.0, 1.0])
    cases = {
        "==": (x == y, [False, True, False]),
        "!=": (x != y, [True, False, True]),
        "<": (x < y, [True, False, False]),
        "<=": (x <= y, [True, True, False]),
        ">": (x > y, [False, False, True]),
        ">=": (x >= y, [False, True, True]),
        "> scalar": (x > 1.5, [False, True, True]),
        "scalar <": (1.5 < x, [False, True, True]),
        "== scalar": (x == 2, [False, True, False]),
    }
    for name, (got, expected) in cases.items():
        assert got.dtype == torch.bool, name
        assert got.tolist() == expected, name
        assert got.requires_grad is False
    assert (torch.ones(2, 1) < torch.ones(3)).shape == (2, 3)
    # Comparing tensors that require grad gives a result without history.
    w = torch.ones(2, requires_grad=True)
    assert (w > 0).requires_grad is False


# --- repr -----------------------------------------------------------------------------------------


def test_repr_of_common_tensors():
    assert repr(torch.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    assert repr(torch.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(torch.tensor(27.0)) == "tensor(27.)"
    assert repr(torch.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(torch.tensor([True, False])) == "tensor([ True, False])"
    assert repr(torch.ones(2, 2)) == "tensor([[1., 1.],\n        [1., 1.]])"


def test_repr_of_float64_names_the_dtype():
    assert repr(torch.tensor([1.0, 2.0], dtype=torch.float64)) == (
        "tensor([1., 2.], dtype=torch.float64)"
    )
    assert repr(torch.tensor(1.5, dtype=torch.float64)) == "tensor(1.5000, dtype=torch.float64)"
    assert "dtype=torch.float64" in repr(torch.ones(2, 2, dtype=torch.float64))
    assert repr(torch.ones(2, dtype=torch.float64, requires_grad=True)) == (
        "tensor([1., 1.], dtype=torch.float64, requires_grad=True)"
    )
    assert str(torch.float64) == "torch.float64"
    assert str(torch.float32) == "torch.float32"


def test_dtype_conversion_methods_return_the_tensor_itself_when_nothing_changes():
    # PyTorch: x.double() is x for a float64 x (same object, same autograd identity).
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    assert x.double() is x
    y = torch.ones(2)
    assert y.float() is y
    n = torch.ones(2, dtype=torch.int64)
    assert n.long() is n
    b = torch.ones(2, dtype=torch.bool)
    assert b.bool() is b
    assert x.float() is not x and x.float().grad_fn is not None


def test_dtype_objects_are_singletons():
    # PyTorch: `x.dtype is torch.float32` (one object per dtype).
    assert torch.zeros(1).dtype is torch.float32
    assert torch.zeros(1, dtype=torch.float64).dtype is torch.float64
    assert torch.zeros(1, dtype=torch.int64).dtype is torch.int64
    assert torch.zeros(1, dtype=torch.bool).dtype is torch.bool
    assert torch.get_default_dtype() is torch.float32


def test_tensor_from_a_numpy_scalar_keeps_its_dtype():
    # PyTorch: torch.tensor(np.float64(1.5)) is a float64 0-d tensor.
    t = torch.tensor(np.float64(1.5))
    assert t.dtype is torch.float64 and t.shape == () and t.item() == 1.5
    assert torch.tensor(np.float32(1.5)).dtype is torch.float32
    assert torch.tensor(np.int64(3)).dtype is torch.int64
    assert torch.tensor(np.bool_(True)).dtype is torch.bool
    assert torch.tensor(np.bool_(True)).item() is True
