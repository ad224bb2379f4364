"""scatter_reduce / scatter_reduce_: values against a numpy reference, gradients by
finite differences (gradcheck / gradgradcheck) in float64 for every reduction, with and
without include_self, PyTorch's tie and zero rules, in-place semantics and errors.
Expected values never come from rustgrad itself."""

from typing import Any

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad.autograd import gradcheck, gradgradcheck

REDUCES = ["sum", "prod", "mean", "amax", "amin"]


def np_scatter_reduce(
    x: np.ndarray, dim: int, index: np.ndarray, src: np.ndarray, reduce: str, include_self: bool
) -> np.ndarray:
    """The definition of scatter_reduce, element by element."""
    out = x.copy()
    groups: dict[tuple[int, ...], list[float]] = {}
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = int(index[pos])
        groups.setdefault(tuple(target), []).append(src[pos])
    for target, values in groups.items():
        vals = ([x[target]] if include_self else []) + values
        out[target] = {
            "sum": np.sum,
            "prod": np.prod,
            "mean": np.mean,
            "amax": np.max,
            "amin": np.min,
        }[reduce](vals)
    return out


def _case(seed: int, reduce: str) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(seed)
    x = torch.tensor(rng.uniform(0.5, 2.0, (3, 4)), requires_grad=True)
    src = torch.tensor(rng.uniform(0.5, 2.0, (2, 4)), requires_grad=True)
    index = torch.tensor([[0, 2, 0, 1], [0, 0, 2, 2]])
    return x, index, src


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_gradcheck_and_gradgradcheck(reduce: str, include_self: bool) -> None:
    x, index, src = _case(1, reduce)

    def f(a: Any, b: Any) -> Any:
        return (a * 1.5).scatter_reduce(0, index, b * 1.0, reduce, include_self=include_self)

    assert gradcheck(f, (x, src))
    assert gradgradcheck(f, (x, src))


@pytest.mark.parametrize("reduce", REDUCES)
def test_in_place_on_a_non_leaf_and_a_view(reduce: str) -> None:
    x, index, src = _case(2, reduce)

    def f(a: Any, b: Any) -> Any:
        y = a.t() * 1.0  # a non-contiguous non-leaf
        region = y[:, 1:]  # a view of it: CopySlices
        region.scatter_reduce_(1, torch.tensor([[0, 0], [1, 0], [1, 1]]), b, reduce)
        return y

    src3 = torch.tensor(np.random.default_rng(3).uniform(0.5, 2.0, (3, 2)), requires_grad=True)
    assert gradcheck(f, (x, src3))
    assert gradgradcheck(f, (x, src3))


def test_in_place_grad_fn_version_and_leaf() -> None:
    x, index, src = _case(4, "sum")
    y = x * 1.0
    v = y._version
    assert y.scatter_reduce_(0, index, src, "amax") is y
    assert y._version == v + 1
    assert y.grad_fn.name() == "ScatterReduceBackward0"
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        x.scatter_reduce_(0, index, src, "sum")


def test_ties_split_the_gradient_as_pytorch() -> None:
    # PyTorch's counts (checked with PyTorch 2.15): self is counted among the ties even
    # when include_self is False.
    x = torch.tensor([1.0, 3.0, 0.0], requires_grad=True)
    s = torch.tensor([3.0, 3.0, 2.0], requires_grad=True)
    y = x.scatter_reduce(0, torch.tensor([1, 1, 2]), s, "amax")
    y.backward(torch.tensor([1.0, 6.0, 1.0]))
    assert x.grad.tolist() == [1.0, 2.0, 0.0]
    assert s.grad.tolist() == [2.0, 2.0, 1.0]
    x = torch.tensor([2.0, 0.0, 3.0], requires_grad=True)
    s = torch.tensor([0.0, 5.0, 0.0, 4.0], requires_grad=True)
    y = x.scatter_reduce(0, torch.tensor([0, 0, 1, 1]), s, "amin", include_self=False)
    y.backward(torch.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [0.0, 0.0, 3.0]
    assert s.grad.tolist() == [1.0, 0.0, 1.0, 0.0]


def test_prod_with_zeros_as_pytorch() -> None:
    # One zero: its gradient is the product of the others; two zeros: all zero.
    x = torch.tensor([2.0, 0.0, 3.0], requires_grad=True)
    s = torch.tensor([0.0, 5.0, 0.0, 4.0], requires_grad=True)
    y = x.scatter_reduce(0, torch.tensor([0, 0, 1, 1]), s, "prod")
    y.backward(torch.ones(3))
    assert y.tolist() == [0.0, 0.0, 3.0]
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    assert s.grad.tolist() == [10.0, 0.0, 0.0, 0.0]


def test_integer_mean_rounds_down() -> None:
    x = torch.tensor([-7, 3, 0])
    y = x.scatter_reduce(0, torch.tensor([0, 0, 1]), torch.tensor([3, -4, 5]), "mean")
    assert y.tolist() == [-3, 4, 0]  # floor(-8 / 3) = -3, (3 + 5) / 2 = 4
    assert y.dtype == torch.int64


def test_int32_index_and_function_form() -> None:
    x = torch.zeros(3)
    out = torch.scatter_reduce(
        x, 0, torch.tensor([2, 2], dtype=torch.int32), torch.tensor([1.0, 2.0]), "sum"
    )
    assert out.tolist() == [0.0, 0.0, 3.0]
    assert x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("call", "exc", "phrase"),
    [
        (
            lambda x, i, s: x.scatter_reduce(0, i, s, "add"),
            RuntimeError,
            "reduce argument must be either sum, prod, mean, amax or amin, got add",
        ),
        (
            lambda x, i, s: x.scatter_reduce(0, torch.tensor([[5, 0, 0, 0]]), s, "sum"),
            RuntimeError,
            "index 5 is out of bounds for dimension 0 with size 3",
        ),
        (
            lambda x, i, s: x.scatter_reduce(0, torch.tensor([0, 1]), s, "sum"),
            RuntimeError,
            "Index tensor must have the same number of dimensions as self tensor",
        ),
        (
            lambda x, i, s: x.scatter_reduce(0, i, s.float(), "sum"),
            RuntimeError,
            "Expected self.dtype to be equal to src.dtype",
        ),
        (
            lambda x, i, s: x.scatter_reduce(0, i.double(), s, "sum"),
            RuntimeError,
            "Expected dtype int32/int64 for index",
        ),
        (
            lambda x, i, s: x.scatter_reduce(2, i, s, "sum"),
            IndexError,
            "Dimension out of range",
        ),
    ],
)
def test_errors_leave_self_untouched(call: Any, exc: type, phrase: str) -> None:
    x, index, src = _case(5, "sum")
    y = x.detach().clone()
    before = y.tolist()
    with pytest.raises(exc, match=phrase):
        call(y, index, src.detach())
    in_place = lambda y, i, s: call(  # noqa: E731
        type("T", (), {"scatter_reduce": lambda _, *a, **k: y.scatter_reduce_(*a, **k)})(), i, s
    )
    with pytest.raises(exc, match=phrase):
        in_place(y, index, src.detach())
    assert y.tolist() == before


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 4),
    st.integers(0, 1),
    st.sampled_from(REDUCES),
    st.booleans(),
    st.integers(0, 2**32 - 1),
)
def test_matches_numpy(
    rows: int, cols: int, dim: int, reduce: str, include_self: bool, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, (rows, cols)).astype(np.float64)
    ishape = (rng.integers(1, rows + 1), cols) if dim == 0 else (rows, rng.integers(1, cols + 1))
    index = rng.integers(0, (rows, cols)[dim], ishape)
    src = rng.integers(-3, 4, ishape).astype(np.float64)
    expected = np_scatter_reduce(x, dim, index, src, reduce, include_self)
    got = torch.tensor(x).scatter_reduce(
        dim, torch.tensor(index), torch.tensor(src), reduce, include_self=include_self
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=0)
