"""xlogy, special.xlog1py, float_power and einsum's sublist format: gradcheck and
gradgradcheck in float64 (also through non-contiguous inputs), values against numpy,
function/method/in-place forms, grad_fn names, dtypes, NaN and zero rules; and the
defects fixed beside them (numpy scalars in tensor() data, in-place ops whose second
tensor operand overlaps the written tensor, views made under no_grad)."""

import math

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0, low=None, high=None):
    g = np.random.default_rng(seed)
    values = g.normal(size=shape) if low is None else g.uniform(low, high, size=shape)
    return torch.tensor(values.tolist(), dtype=torch.float64).reshape(shape).requires_grad_()


# name -> (function of the inputs, input shapes, (low, high) of the inputs or None)
DIFFERENTIABLE = {
    "xlogy": (lambda a, b: torch.xlogy(a, b), [(2, 3), (2, 3)], (0.5, 2.0)),
    "xlogy_broadcast_transposed": (
        lambda a, b: torch.xlogy(a.t(), b),
        [(3, 2), (3,)],
        (0.5, 2.0),
    ),
    "xlogy_scalar_other": (lambda a: a.xlogy(2.5), [(4,)], None),
    "xlogy_scalar_self": (lambda b: torch.xlogy(1.5, b[::2]), [(6,)], (0.5, 2.0)),
    "xlog1py": (lambda a, b: torch.special.xlog1py(a, b), [(3,), (2, 3)], (0.5, 2.0)),
    "xlog1py_scalar_other": (lambda a: torch.special.xlog1py(a, 0.5), [(3,)], None),
    "xlog1py_scalar_self": (lambda b: torch.special.xlog1py(-2.0, b), [(3,)], (0.5, 2.0)),
    "float_power": (lambda a, b: torch.float_power(a, b), [(2, 3), (2, 3)], (0.5, 2.0)),
    "float_power_broadcast_method": (
        lambda a, b: a.t().float_power(b),
        [(3, 2), (1, 3)],
        (0.5, 2.0),
    ),
    "float_power_scalar": (lambda a: torch.float_power(a, 2.5), [(3,)], (0.5, 2.0)),
    "float_power_scalar_base": (lambda b: torch.float_power(1.5, b), [(2, 2)], None),
    "einsum_sublist": (
        lambda a, b: torch.einsum(a, [0, 1], b.t(), [1, 2], [0, 2]),
        [(2, 3), (4, 3)],
        None,
    ),
    "einsum_sublist_ellipsis": (
        lambda a: torch.einsum(a, [..., 0, 0], [..., 0]),
        [(2, 3, 3)],
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradcheck_and_gradgradcheck(name):
    fn, shapes, bounds = DIFFERENTIABLE[name]
    low, high = bounds if bounds else (None, None)
    inputs = [leaf(*s, seed=i, low=low, high=high) for i, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_xlogy_zero_and_nan_rules():
    x = torch.tensor([0.0, 0.0, 1.0, 0.0, 2.0])
    y = torch.tensor([0.0, float("nan"), 0.0, -1.0, 3.0])
    out = torch.xlogy(x, y).tolist()
    assert out[0] == 0.0  # 0 * log(0) = 0
    assert math.isnan(out[1])  # NaN in other propagates even for x == 0
    assert out[2] == -math.inf
    assert out[3] == 0.0
    assert out[4] == pytest.approx(2 * math.log(3))


def test_xlogy_gradients_follow_derivatives_yaml():
    # (x, y) pairs, gradients of x and y from PyTorch 2.15 (the masked formula).
    x = torch.tensor([0.0, 0.0, 1.0, 0.0, 2.0], dtype=torch.float64, requires_grad=True)
    y = torch.tensor([0.0, -1.0, 0.0, 2.0, -1.0], dtype=torch.float64, requires_grad=True)
    torch.xlogy(x, y).sum().backward()
    gx, gy = x.grad.tolist(), y.grad.tolist()
    assert gx[:3] == [0.0, 0.0, -math.inf]
    assert gx[3] == pytest.approx(math.log(2))
    assert math.isnan(gx[4])
    assert math.isnan(gy[0]) and gy[1] == 0.0 and gy[2] == math.inf
    assert gy[3] == 0.0 and gy[4] == -2.0
    # number other <= 0: the gradient at x == 0 is masked; NaN other too.
    x2 = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    torch.xlogy(x2, 0.0).sum().backward()
    assert x2.grad.tolist() == [0.0, -math.inf]
    x3 = torch.tensor([0.0], dtype=torch.float64, requires_grad=True)
    torch.xlogy(x3, float("nan")).sum().backward()
    assert x3.grad.tolist() == [0.0]


def test_grad_fn_names():
    a = torch.ones(2, requires_grad=True)
    assert torch.xlogy(a, a).grad_fn.name() == "XlogyBackward0"
    assert torch.xlogy(2.0, a).grad_fn.name() == "XlogyBackward1"
    assert torch.xlogy(a, 2.0).grad_fn.name() == "XlogyBackward2"
    assert torch.special.xlog1py(a, a).grad_fn.name() == "SpecialXlog1PyBackward0"
    assert torch.special.xlog1py(2.0, a).grad_fn.name() == "SpecialXlog1PyBackward1"
    assert torch.special.xlog1py(a, 2.0).grad_fn.name() == "SpecialXlog1PyBackward2"
    out = torch.float_power(a, 2)
    assert out.grad_fn.name() == "PowBackward0"
    assert out.grad_fn.next_functions[0][0].name() == "ToCopyBackward0"
    assert torch.float_power(a, a).grad_fn.name() == "PowBackward1"
    assert torch.float_power(2, a).grad_fn.name() == "PowBackward2"
    a64 = torch.ones(2, dtype=torch.float64, requires_grad=True)
    node = torch.float_power(a64, 2).grad_fn
    assert node.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_dtypes():
    i = torch.tensor([1, 2])
    f = torch.tensor([1.0, 2.0])
    d = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert torch.xlogy(i, i).dtype == torch.float32
    assert torch.xlogy(torch.tensor([True]), i).dtype == torch.float32
    assert torch.xlogy(2, d).dtype == torch.float64
    assert torch.xlogy(2, i).dtype == torch.float32
    assert torch.xlogy(i, 2).dtype == torch.float32
    assert torch.xlogy(f, torch.tensor(2.0, dtype=torch.float64)).dtype == torch.float32
    assert torch.float_power(i, 2).dtype == torch.float64
    assert torch.float_power(f, i).dtype == torch.float64
    assert torch.float_power(torch.tensor([True]), 2).tolist() == [1.0]
    assert torch.float_power(i, 2).tolist() == [1.0, 4.0]
    assert torch.float_power(torch.tensor([2]), torch.tensor([3])).tolist() == [8.0]


def test_in_place_forms():
    a = torch.tensor([0.0, 2.0])
    assert a.xlogy_(torch.tensor([0.0, 3.0])) is a
    assert a.tolist() == pytest.approx([0.0, 2 * math.log(3)])
    b = torch.tensor([1.0, 2.0])
    torch.xlogy_(b, 2.0)
    assert b.tolist() == pytest.approx([math.log(2), 2 * math.log(2)])
    with pytest.raises(RuntimeError, match="result type Float can't be cast"):
        torch.tensor([1, 2]).xlogy_(torch.tensor([1.0, 2.0]))
    c = torch.tensor([2.0], dtype=torch.float64)
    assert c.float_power_(torch.tensor([3.0])) is c
    assert c.tolist() == [8.0]
    c.float_power_(0.5)
    assert c.tolist() == pytest.approx([math.sqrt(8)])
    with pytest.raises(RuntimeError, match="has dtype Float but the operation's result"):
        torch.tensor([2.0]).float_power_(2)
    # recorded: the in-place node is the pow (on a non-leaf)
    w = torch.tensor([1.5, 2.0], dtype=torch.float64, requires_grad=True)
    y = w * 1
    y.float_power_(2)
    y.sum().backward()
    assert w.grad.tolist() == pytest.approx([3.0, 4.0])


def test_einsum_sublist_and_list_forms():
    a = torch.arange(6.0).reshape(2, 3)
    b = torch.arange(12.0).reshape(3, 4)
    expected = (a @ b).tolist()
    assert torch.einsum(a, [0, 1], b, [1, 2], [0, 2]).tolist() == expected
    assert torch.einsum(a, [0, 1], b, [1, 2]).tolist() == expected  # implicit output
    assert torch.einsum("ij,jk", [a, b]).tolist() == expected
    assert torch.einsum("ij,jk->ik", (a, b)).tolist() == expected
    # subscripts 26-51 are lower-case letters: ordering of the implicit output
    assert torch.einsum(a, [27, 1]).shape == (3, 2)
    assert torch.einsum(a, [Ellipsis, 0], [Ellipsis]).tolist() == [3.0, 12.0]


_floats = st.floats(-3, 3, allow_nan=False, width=64)


@st.composite
def _broadcast_pair(draw):
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    other = [1 if draw(st.booleans()) else s for s in shape]
    other = other[draw(st.integers(0, len(other) - 1)) :]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.normal(size=shape) * (rng.uniform(size=shape) > 0.3)
    y = rng.uniform(0.1, 3.0, size=other)
    return x, y


@settings(max_examples=25, deadline=None)
@given(_broadcast_pair())
def test_xlogy_and_float_power_match_numpy(pair):
    x, y = pair
    tx = torch.tensor(x.tolist(), dtype=torch.float64)
    ty = torch.tensor(y.tolist(), dtype=torch.float64)
    np.testing.assert_allclose(
        np.array(torch.xlogy(tx, ty).tolist()), np.where(x == 0, 0.0, x * np.log(y)), rtol=1e-12
    )
    np.testing.assert_allclose(
        np.array(torch.special.xlog1py(tx, ty).tolist()),
        np.where(x == 0, 0.0, x * np.log1p(y)),
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        np.array(torch.float_power(ty, tx).tolist()), np.power(y, x), rtol=1e-12
    )


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=3), st.integers(0, 2**32 - 1))
def test_einsum_sublist_matches_numpy(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=shape)
    b = rng.normal(size=shape[::-1])
    n = len(shape)
    sub_a = list(range(n))
    sub_b = sub_a[::-1]
    out = [0] if n > 1 else []
    got = torch.einsum(
        torch.tensor(a.tolist(), dtype=torch.float64),
        sub_a,
        torch.tensor(b.tolist(), dtype=torch.float64),
        sub_b,
        out,
    )
    expected = np.einsum(a, sub_a, b, sub_b, out)
    np.testing.assert_allclose(np.array(got.tolist()), expected, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------- defects fixed alongside


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        ([np.float64(1.5), 2], torch.float64),
        ([np.float32(1.5), 2], torch.float32),
        ([np.float32(1.0), np.float64(2.0)], torch.float64),
        ([1.5, np.float64(2.0)], torch.float64),
        ([np.float32(1.5), 2.5], torch.float32),
        ([[np.float64(1.0)], [2]], torch.float64),
        ([np.int32(1), 2], torch.int64),
        ([np.int32(1), 2.0], torch.float32),
        ([np.bool_(True), False], torch.bool),
        ([np.float64(1.0), torch.tensor(2.0)], torch.float64),
        ([torch.tensor(2.0, dtype=torch.float64)], torch.float64),
        ([torch.tensor(2), 1.5], torch.float32),
    ],
)
def test_numpy_scalars_in_lists_carry_their_dtype(data, dtype):
    # PyTorch's infer_scalar_type promotes the elements' own dtypes.
    assert torch.tensor(data).dtype == dtype


def test_numpy_float32_keeps_its_dtype_under_a_float64_default():
    torch.set_default_dtype(torch.float64)
    try:
        assert torch.tensor([np.float32(1.5), 2]).dtype == torch.float32
        assert torch.tensor([1.5]).dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)


OVERLAP = "some elements of the input tensor and the written-to tensor refer to a single"


@pytest.mark.parametrize(
    "op",
    [
        lambda a, other: a.addcmul_(torch.ones(3), other),
        lambda a, other: a.addcmul_(other, torch.ones(3)),
        lambda a, other: a.addcdiv_(torch.ones(3), other),
        lambda a, other: a.lerp_(torch.ones(3), other),
        lambda a, other: a.clamp_(torch.zeros(3), other),
    ],
)
def test_in_place_checks_overlap_with_every_tensor_operand(op):
    base = torch.arange(1.0, 5.0)
    with pytest.raises(RuntimeError, match=OVERLAP):
        op(base[:3], base[1:])
    assert base.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_in_place_records_when_only_the_second_operand_requires_grad():
    a = torch.zeros(3)
    t2 = torch.ones(3, requires_grad=True)
    a.addcmul_(torch.full((3,), 2.0), t2)
    assert a.grad_fn is not None
    a.sum().backward()
    assert t2.grad.tolist() == [2.0, 2.0, 2.0]


def test_view_made_under_no_grad_requires_grad_through_its_base():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        v = x[:2]
    assert v.requires_grad and v.grad_fn is None and v.is_leaf
    z = v * 2
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"
    z.sum().backward()  # the view's gradient goes nowhere, as in PyTorch
    assert x.grad is None and v.grad is None
    # a view made before its base required grad
    b = torch.ones(3)
    with torch.no_grad():
        w = b[:2]
    assert not w.requires_grad
    b.requires_grad_()
    assert w.requires_grad
    # views of a detached tensor do not
    with torch.no_grad():
        d = x.detach()[:2]
    assert not d.requires_grad


def test_addcmul_backward_when_only_one_factor_requires_grad():
    # AddcmulBackward0 saved only the factor it needed but unpacked both ("saved tensor
    # 1 missing"); addcdiv likewise with only the divisor requiring grad.
    t2 = torch.ones(3, requires_grad=True)
    torch.addcmul(torch.zeros(3), torch.full((3,), 2.0), t2).sum().backward()
    assert t2.grad.tolist() == [2.0, 2.0, 2.0]
    t1 = torch.ones(3, requires_grad=True)
    torch.addcmul(torch.zeros(3), t1, torch.full((3,), 3.0)).sum().backward()
    assert t1.grad.tolist() == [3.0, 3.0, 3.0]
    d = torch.full((3,), 2.0, requires_grad=True)
    torch.addcdiv(torch.zeros(3), torch.ones(3), d).sum().backward()
    assert d.grad.tolist() == [-0.25, -0.25, -0.25]
