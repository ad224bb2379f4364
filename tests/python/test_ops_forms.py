"""In-place forms, aliases and function forms (ops/unary.rs, ops/logical.rs bindings,
python/rustgrad/_forms.py): float64 gradcheck and gradgradcheck of each in-place form on
a non-leaf and through a view (CopySlices), values against numpy, dtype results, the
three forms agreeing, and PyTorch's errors.

Forward values and gradients against PyTorch itself are in tests/vectors
(forms_ops.json); expected values here come from numpy and finite differences.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad.autograd import gradcheck, gradgradcheck

D = torch.float64


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


# in-place method -> (input range, extra args, numpy reference of the out-of-place op)
UNARY_IN_PLACE: dict[str, tuple[tuple[float, float], tuple[Any, ...], Callable[..., Any]]] = {
    "abs_": ((0.2, 2.0), (), np.abs),
    "absolute_": ((0.2, 2.0), (), np.abs),
    "neg_": ((-2.0, 2.0), (), np.negative),
    "negative_": ((-2.0, 2.0), (), np.negative),
    "exp_": ((-2.0, 2.0), (), np.exp),
    "log_": ((0.3, 3.0), (), np.log),
    "sqrt_": ((0.3, 3.0), (), np.sqrt),
    "sigmoid_": ((-3.0, 3.0), (), _sigmoid),
    "tanh_": ((-2.0, 2.0), (), np.tanh),
    "sign_": ((0.2, 2.0), (), np.sign),
    "pow_": ((0.3, 2.0), (2.5,), lambda x: x**2.5),
    "clamp_min_": ((-2.0, 2.0), (0.25,), lambda x: np.maximum(x, 0.25)),
    "clamp_max_": ((-2.0, 2.0), (0.25,), lambda x: np.minimum(x, 0.25)),
    "cumsum_": ((-2.0, 2.0), (-1,), lambda x: np.cumsum(x, -1)),
    "cumprod_": ((-2.0, 2.0), (1,), lambda x: np.cumprod(x, 1)),
    "multiply_": ((-2.0, 2.0), (1.5,), lambda x: x * 1.5),
    "subtract_": ((-2.0, 2.0), (1.5,), lambda x: x - 1.5),
}

COMPARE_IN_PLACE = {
    "eq_": np.equal,
    "ne_": np.not_equal,
    "lt_": np.less,
    "le_": np.less_equal,
    "gt_": np.greater,
    "ge_": np.greater_equal,
    "greater_": np.greater,
    "greater_equal_": np.greater_equal,
    "less_": np.less,
    "less_equal_": np.less_equal,
    "not_equal_": np.not_equal,
}


def _uniform(shape: tuple[int, ...], lo: float, hi: float, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, shape)


# ------------------------------------------------------------ gradients, in place


@pytest.mark.parametrize("name", sorted(UNARY_IN_PLACE))
@pytest.mark.parametrize("where", ["non_leaf", "view", "transposed_view"])
def test_in_place_gradcheck_and_gradgradcheck(name: str, where: str) -> None:
    (lo, hi), args, _ = UNARY_IN_PLACE[name]
    if name == "sign_":
        lo = -2.0  # the zero gradient is checked wherever x is not at 0
    x = torch.tensor(_uniform((3, 4), lo, hi), dtype=D, requires_grad=True)

    def f(t: Any) -> Any:
        y = t * 1.0
        if where == "non_leaf":
            target = y
        elif where == "view":
            target = y[:, 1:3]
        else:
            target = y.t()[1:]
        assert getattr(target, name)(*args) is target
        return y

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_pow_tensor_exponent_in_place_gradients() -> None:
    x = torch.tensor(_uniform((2, 3), 0.5, 2.0), dtype=D, requires_grad=True)
    e = torch.tensor(_uniform((3,), -1.0, 2.0, 1), dtype=D, requires_grad=True)

    def f(a: Any, b: Any) -> Any:
        y = a * 1.0
        y[1:].pow_(b)
        return y

    assert gradcheck(f, (x, e))
    assert gradgradcheck(f, (x, e))
    y = x * 1
    y.pow_(e)
    assert y.grad_fn.name() == "PowBackward1"


@pytest.mark.parametrize("name", sorted(COMPARE_IN_PLACE))
def test_comparison_in_place_gives_zero_gradients(name: str) -> None:
    x = torch.tensor([[-1.0, 0.5, 2.0], [0.5, 0.0, -3.0]], dtype=D, requires_grad=True)
    other = torch.tensor([0.5, 0.5, 1.0], dtype=D, requires_grad=True)
    y = x * 2
    getattr(y[:, 1:], name)(other[1:])
    base = name.rstrip("_")
    short = {
        "greater": "gt",
        "greater_equal": "ge",
        "less": "lt",
        "less_equal": "le",
        "not_equal": "ne",
    }.get(base, base)
    assert y.grad_fn.name().endswith("CopySlices")
    y.sum().backward()
    want = np.array([[2.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_array_equal(x.grad.numpy(), want)
    np.testing.assert_array_equal(other.grad.numpy(), np.zeros(3))
    z = x * 1
    getattr(z, name)(0.5)
    assert z.grad_fn.name() == f"{short.capitalize()}Backward0"
    z = x * 1
    getattr(z, name)(other)
    assert z.grad_fn.name() == f"{short.capitalize()}Backward1"


# --------------------------------------------------------------- values vs numpy


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(UNARY_IN_PLACE)),
    rows=st.integers(1, 4),
    cols=st.integers(1, 5),
    transposed=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_in_place_matches_numpy(
    name: str, rows: int, cols: int, transposed: bool, seed: int
) -> None:
    (lo, hi), args, ref = UNARY_IN_PLACE[name]
    a = _uniform((rows, cols), lo, hi, seed)
    x = torch.tensor(a, dtype=D)
    version = x._version
    if transposed:
        a = a.T
        x = x.t()
    out = getattr(x, name)(*args)
    assert out is x
    assert x._version == version + 1
    np.testing.assert_allclose(x.numpy(), ref(a), rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(sorted(COMPARE_IN_PLACE)),
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    broadcast=st.booleans(),
    dtype=st.sampled_from(["float32", "float64", "int64"]),
    seed=st.integers(0, 2**16),
)
def test_comparison_in_place_matches_numpy(
    name: str, shape: list[int], broadcast: bool, dtype: str, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, shape).astype(dtype)
    b = rng.integers(-2, 3, shape[-1:] if broadcast else shape).astype(dtype)
    x = torch.tensor(a)
    assert getattr(x, name)(torch.tensor(b)) is x
    assert x.dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(x.numpy(), COMPARE_IN_PLACE[name](a, b).astype(dtype))
    x = torch.tensor(a)
    getattr(x, name)(1)
    np.testing.assert_array_equal(x.numpy(), COMPARE_IN_PLACE[name](a, 1).astype(dtype))


# -------------------------------------------------------------- forms agree


def test_alias_methods_are_the_native_methods() -> None:
    for alias, target in [
        ("absolute", "abs"),
        ("negative", "neg"),
        ("multiply", "mul"),
        ("multiply_", "mul_"),
        ("subtract", "sub"),
        ("subtract_", "sub_"),
        ("greater", "gt"),
        ("greater_equal", "ge"),
        ("less", "lt"),
        ("less_equal", "le"),
        ("not_equal", "ne"),
        ("greater_", "gt_"),
        ("not_equal_", "ne_"),
    ]:
        assert getattr(torch.Tensor, alias) is getattr(torch.Tensor, target), alias


@pytest.mark.parametrize(
    "name,args",
    [
        ("absolute", ()),
        ("negative", ()),
        ("multiply", (2.0,)),
        ("subtract", (0.5,)),
        ("greater", (0.0,)),
        ("greater_equal", (0.0,)),
        ("less", (0.0,)),
        ("less_equal", (0.0,)),
        ("not_equal", (0.0,)),
        ("sign", ()),
        ("clamp_min", (0.1,)),
        ("clamp_max", (0.1,)),
        ("clone", ()),
        ("detach", ()),
    ],
)
def test_function_form_equals_method(name: str, args: tuple[Any, ...]) -> None:
    x = torch.tensor([[-1.5, 0.0, 2.0], [0.25, -0.5, 3.0]])
    np.testing.assert_array_equal(
        getattr(torch, name)(x, *args).numpy(), getattr(x, name)(*args).numpy()
    )


IN_PLACE_FUNCTIONS = [
    ("abs_", ()),
    ("neg_", ()),
    ("negative_", ()),
    ("exp_", ()),
    ("sigmoid_", ()),
    ("tanh_", ()),
    ("sin_", ()),
    ("cos_", ()),
    ("relu_", ()),
    ("floor_", ()),
    ("round_", ()),
    ("clamp_", (-0.5, 0.5)),
    ("clip_", (-0.5, 0.5)),
    ("clamp_min_", (0.0,)),
    ("clamp_max_", (0.0,)),
    ("fill_", (3.0,)),
    ("zero_", ()),
    ("square_", ()),
    ("trunc_", ()),
    ("expm1_", ()),
]


@pytest.mark.parametrize("name,args", IN_PLACE_FUNCTIONS)
def test_in_place_function_form_writes_and_returns_input(name: str, args: tuple[Any, ...]) -> None:
    a = np.array([[-1.5, 0.25, 2.0], [0.75, -0.5, 3.0]])
    x = torch.tensor(a)
    want = getattr(torch.tensor(a), name)(*args).numpy()
    assert getattr(torch, name)(x, *args) is x
    np.testing.assert_array_equal(x.numpy(), want)


def test_detach_numel_is_floating_point_and_friends() -> None:
    w = torch.ones(2, 3, requires_grad=True)
    y = w * 2
    d = torch.detach(y)
    assert not d.requires_grad and d.grad_fn is None
    assert torch.detach_(y) is y and y.grad_fn is None
    assert torch.numel(w) == 6
    assert torch.is_floating_point(w) and not torch.is_floating_point(torch.arange(3))
    c = torch.clone(w)
    assert c.grad_fn.name() == "CloneBackward0"
    parts = torch.split_with_sizes(torch.arange(6.0), [2, 4])
    assert [p.tolist() for p in parts] == [[0.0, 1.0], [2.0, 3.0, 4.0, 5.0]]
    idx = (torch.tensor([0, 2]),)
    out = torch.index_put(torch.zeros(3), idx, torch.tensor([1.0, 2.0]))
    assert out.tolist() == [1.0, 0.0, 2.0]
    z = torch.zeros(3)
    assert torch.index_put_(z, idx, torch.tensor(5.0), accumulate=True) is z
    assert z.tolist() == [5.0, 0.0, 5.0]
    assert torch.get_device(z) == -1


def test_clamp_min_max_dtypes_and_names() -> None:
    i = torch.tensor([0, 1, 2])
    assert i.clamp_min(1).dtype == torch.int64
    assert i.clamp_min(1.5).dtype == torch.float32
    assert i.clamp_min(1.5).tolist() == [1.5, 1.5, 2.0]
    x = torch.tensor([0.0, 1.0, 2.0], requires_grad=True)
    assert x.clamp_min(1.0).grad_fn.name() == "ClampMinBackward0"
    assert x.clamp_max(1.0).grad_fn.name() == "ClampMaxBackward0"
    # A tensor bound broadcasts.
    assert x.clamp_max(torch.tensor([0.5])).tolist() == [0.0, 0.5, 0.5]
    # The gradient passes strictly inside the bound, as PyTorch's.
    x.clamp_min(1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]


def test_in_place_int_results() -> None:
    i = torch.tensor([3, -1, 2])
    assert i.lt_(2) is i and i.tolist() == [0, 1, 0] and i.dtype == torch.int64
    b = torch.tensor([True, False])
    b.eq_(torch.tensor([True, True]))
    assert b.tolist() == [True, False] and b.dtype == torch.bool
    j = torch.tensor([1, 2, 3])
    j.cumsum_(0)
    assert j.tolist() == [1, 3, 6]
    j.pow_(2)
    assert j.tolist() == [1, 9, 36]
    j.abs_().neg_().sign_()
    assert j.tolist() == [-1, -1, -1]


# -------------------------------------------------------------------- errors

ERRORS: list[tuple[Callable[[], Any], type[BaseException], str]] = [
    (
        lambda: torch.ones(2, requires_grad=True).exp_(),
        RuntimeError,
        "a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    (
        lambda: torch.ones(2, requires_grad=True)[:1].sqrt_(),
        RuntimeError,
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    (
        lambda: torch.arange(3).pow_(2.5),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    (
        lambda: torch.arange(3).exp_(),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    (
        lambda: torch.arange(3).clamp_min_(1.5),
        RuntimeError,
        # PyTorch 2.15 names clamp's destination by its C++ type here.
        "result type Float can't be cast to the desired output type long int",
    ),
    (
        lambda: torch.ones(3).eq_(torch.ones(2, 3)),
        RuntimeError,
        "doesn't match the broadcast shape",
    ),
    (
        lambda: torch.ones(3).pow_(torch.ones(4)),
        RuntimeError,
        "must match the size of tensor b",
    ),
    (lambda: torch.ones(3).eq_("a"), TypeError, "received an invalid combination of arguments"),
    (lambda: torch.ones(3).clamp_min(None), TypeError, "received an invalid combination"),
    (lambda: torch.ones(3).cumsum_(1), IndexError, "Dimension out of range"),
    (lambda: torch.ones(1).expand(3).neg_(), RuntimeError, "more than one element"),
    (lambda: torch.sign([1.0]), TypeError, "argument 'input' (position 1) must be Tensor"),
    (lambda: torch.sin_(1.0), TypeError, "sin_(): argument 'input' (position 1) must be Tensor"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_are_pytorchs(case: int) -> None:
    bad, exc, phrase = ERRORS[case]
    with pytest.raises(exc, match=None) as info:
        bad()
    assert phrase in str(info.value)


def test_failed_in_place_leaves_tensor_unchanged() -> None:
    x = torch.tensor([1.0, 2.0, 3.0])
    version = x._version
    with pytest.raises(RuntimeError):
        x.pow_(torch.ones(4))
    assert x.tolist() == [1.0, 2.0, 3.0] and x._version == version


# ------------------------------------------------ index_copy, masked_scatter, put, diag


def _index_ops() -> dict[str, Callable[[Any, Any], Any]]:
    idx = torch.tensor([2, 0])
    mask = torch.tensor([[True, False, True], [False, True, True], [False, False, True]])
    return {
        "index_copy": lambda a, s: a.index_copy(0, idx, s),
        "index_copy_dim1": lambda a, s: torch.index_copy(a, -1, idx, s.t()),
        "masked_scatter": lambda a, s: a.masked_scatter(mask, s),
        # Distinct places: with a repeated index the overwritten source element gets a
        # gradient (PyTorch's take backward) that finite differences do not see.
        "put": lambda a, s: a.put(torch.tensor([[8, 0, 4], [1, 3, 2]]), s),
        "put_accumulate": lambda a, s: torch.put(
            a, torch.tensor([[8, 0, 4], [1, 1, 2]]), s, accumulate=True
        ),
    }


@pytest.mark.parametrize("name", sorted(_index_ops()))
@pytest.mark.parametrize("in_place", [False, True])
def test_index_ops_gradcheck_and_gradgradcheck(name: str, in_place: bool) -> None:
    op = _index_ops()[name]
    a = torch.tensor(_uniform((3, 3), -1, 1), dtype=D, requires_grad=True)
    s = torch.tensor(_uniform((2, 3), -1, 1, 1), dtype=D, requires_grad=True)

    def f(x: Any, src: Any) -> Any:
        if not in_place:
            return op(x.t(), src)  # a non-contiguous self
        y = x * 1.0
        probe = op(y.detach(), src.detach())  # same values, to compare with below
        written = _in_place_call(y, name, src)
        np.testing.assert_allclose(written.detach().numpy(), probe.numpy())
        return y

    assert gradcheck(f, (a, s))
    assert gradgradcheck(f, (a, s))


def _in_place_call(y: Any, name: str, src: Any) -> Any:
    idx = torch.tensor([2, 0])
    if name == "index_copy":
        return y.index_copy_(0, idx, src)
    if name == "index_copy_dim1":
        return y.index_copy_(-1, idx, src.t())
    if name == "masked_scatter":
        mask = torch.tensor([[True, False, True], [False, True, True], [False, False, True]])
        return y.masked_scatter_(mask, src)
    if name == "put":
        return y.put_(torch.tensor([[8, 0, 4], [1, 3, 2]]), src)
    return y.put_(torch.tensor([[8, 0, 4], [1, 1, 2]]), src, accumulate=True)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(1, 5),
    cols=st.integers(1, 4),
    accumulate=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_put_and_masked_scatter_match_numpy(
    rows: int, cols: int, accumulate: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, cols))
    n = rows * cols
    index = rng.integers(-n, n, size=4)
    src = rng.normal(size=4)
    want = a.copy().reshape(-1)
    if accumulate:
        np.add.at(want, index, src)
    else:
        for i, v in zip(index, src):
            want[i] = v
    got = torch.tensor(a).put(torch.tensor(index), torch.tensor(src), accumulate=accumulate)
    np.testing.assert_allclose(got.numpy().reshape(-1), want, rtol=1e-12, atol=1e-12)
    mask = rng.random((rows, cols)) > 0.5
    source = rng.normal(size=n)
    want = a.copy()
    want[mask] = source[: mask.sum()]
    got = torch.tensor(a).masked_scatter(torch.tensor(mask), torch.tensor(source))
    np.testing.assert_array_equal(got.numpy(), want)


@settings(max_examples=25, deadline=None)
@given(
    rows=st.integers(2, 9),
    cols=st.integers(2, 5),
    wrap=st.booleans(),
)
def test_fill_diagonal_matches_numpy(rows: int, cols: int, wrap: bool) -> None:
    want = np.zeros((rows, cols))
    np.fill_diagonal(want, 3.0, wrap=wrap)
    x = torch.zeros(rows, cols, dtype=D)
    assert x.fill_diagonal_(3.0, wrap=wrap) is x
    np.testing.assert_array_equal(x.numpy(), want)


def test_fill_diagonal_gradients_and_errors() -> None:
    a = torch.tensor(_uniform((4, 3), -1, 1), dtype=D, requires_grad=True)

    def f(x: Any) -> Any:
        y = x * 2.0
        y.fill_diagonal_(1.0)
        return y

    assert gradcheck(f, (a,))
    assert gradgradcheck(f, (a,))
    y = a * 1
    y.fill_diagonal_(0.5)
    assert y.grad_fn.name().endswith("CopySlices")
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        torch.zeros(3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        torch.zeros(2, 3, 3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        torch.zeros(2, 2, requires_grad=True).fill_diagonal_(1)
    cube = torch.zeros(3, 3, 3).fill_diagonal_(1)
    assert cube.nonzero().tolist() == [[0, 0, 0], [1, 1, 1], [2, 2, 2]]


INDEX_ERRORS: list[tuple[Callable[[], Any], type[BaseException], str]] = [
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([0, 5]), torch.ones(2, 4)),
        IndexError,
        "index_copy_(): index 5 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([-1]), torch.ones(1, 4)),
        IndexError,
        "index -1 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([0, 1]), torch.ones(3, 4)),
        IndexError,
        "Number of indices (2) should be equal to source.size(dim) (3)",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([0, 1]), torch.ones(2, 3)),
        RuntimeError,
        "Source/destination tensor must have same slice shapes",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([0.0]), torch.ones(1, 4)),
        RuntimeError,
        "index_copy_(): Expected a long tensor for index, but got Float",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(0, torch.tensor([[0]]), torch.ones(1, 4)),
        IndexError,
        "index_copy_(): Index should have dimension 1 or 0 (got 2)",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(2, torch.tensor([0]), torch.ones(1, 4)),
        IndexError,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)",
    ),
    (
        lambda: torch.zeros(3, 4).index_copy(
            0, torch.tensor([0]), torch.ones(1, 4, dtype=torch.float64)
        ),
        RuntimeError,
        "self and source expected to have the same dtype",
    ),
    (
        lambda: torch.zeros(3, 4).masked_scatter(
            torch.tensor([True, False, True, True]), torch.ones(2)
        ),
        RuntimeError,
        "Number of elements of source < number of ones in mask",
    ),
    (
        lambda: torch.zeros(3, 4).masked_scatter(torch.tensor([1, 0, 1, 1]), torch.ones(20)),
        RuntimeError,
        "masked_scatter_ only supports boolean masks",
    ),
    (
        lambda: torch.zeros(3, 4).put(torch.tensor([0, 12]), torch.ones(2)),
        IndexError,
        "out of range: tried to access index 12 on a tensor of 12 elements.",
    ),
    (
        lambda: torch.zeros(3, 4).put(torch.tensor([0, 1]), torch.ones(3)),
        IndexError,
        "Expected source and index to have the same number of elements",
    ),
    (
        lambda: torch.zeros(3, 4).put(torch.tensor([0.0]), torch.ones(1)),
        RuntimeError,
        "put_(): Expected a long tensor for index, but got Float",
    ),
]


@pytest.mark.parametrize("case", range(len(INDEX_ERRORS)))
def test_index_op_errors_are_pytorchs_and_write_nothing(case: int) -> None:
    bad, exc, phrase = INDEX_ERRORS[case]
    with pytest.raises(exc) as info:
        bad()
    assert phrase in str(info.value)
