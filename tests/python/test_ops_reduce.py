"""Reductions, scans and sorts: max/min, amax/amin, argmax/argmin, softmax, log_softmax,
logsumexp, prod, var/std (and the _mean pairs), cumsum, cumprod, norms, nansum, nanmean,
all, any, count_nonzero, median, topk, sort, argsort, unique.

Expected values come from numpy, closed forms, finite differences (gradcheck) or the
numbers PyTorch prints for the same call (written out where used); PyTorch-generated
vectors for these ops are in tests/vectors/reduce_ops.json (test_vectors.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad.autograd import gradcheck, gradgradcheck

F64 = torch.float64


def _t(a, requires_grad=False):
    return torch.tensor(np.asarray(a).tolist(), dtype=F64, requires_grad=requires_grad)


def _distinct(rng, shape):
    """Values without ties (a permutation scaled), so indices are unique."""
    n = int(np.prod(shape)) if shape else 1
    return (rng.permutation(n) - n / 2).reshape(shape) / 3.0 + rng.uniform(0, 0.01, shape)


RNG = np.random.default_rng(7)
X = _t(_distinct(RNG, (3, 4)), requires_grad=True)
XT = _t(_distinct(RNG, (4, 3)), requires_grad=True)  # used transposed (non-contiguous)
ZEROS = _t([[1.5, 0.0, 2.0, -3.0], [0.0, 1.2, 0.0, 2.0], [0.7, -2.0, 1.1, 0.5]], True)

# name -> function of one float64 tensor; each is gradchecked and gradgradchecked on a
# contiguous and on a transposed input.
DIFFERENTIABLE = {
    "max_all": lambda t: t.max(),
    "min_all": lambda t: torch.min(t),
    "max_dim": lambda t: t.max(1).values,
    "min_dim_keepdim": lambda t: torch.min(t, 0, keepdim=True).values,
    "amax": lambda t: t.amax(1),
    "amin_dims": lambda t: torch.amin(t, (0, 1), keepdim=True),
    "softmax": lambda t: t.softmax(1),
    "softmax_dim0": lambda t: torch.softmax(t, 0),
    "log_softmax": lambda t: t.log_softmax(-1),
    "log_softmax_dim0": lambda t: torch.log_softmax(t, 0),
    "logsumexp": lambda t: t.logsumexp(1),
    "logsumexp_dims": lambda t: torch.logsumexp(t, (0, 1), keepdim=True),
    "prod_all": lambda t: t.prod(),
    "prod_dim": lambda t: torch.prod(t, 1),
    "var": lambda t: t.var(),
    "var_dim_population": lambda t: t.var(1, correction=0),
    "std": lambda t: torch.std(t, 0, keepdim=True),
    "std_unbiased_false": lambda t: t.std(unbiased=False),
    "var_mean_var": lambda t: torch.var_mean(t, 1)[0],
    "var_mean_mean": lambda t: torch.var_mean(t, 1)[1],
    "std_mean_std": lambda t: torch.std_mean(t, (0, 1))[0],
    "cumsum": lambda t: t.cumsum(1),
    "cumsum_dim0": lambda t: torch.cumsum(t, 0),
    "cumprod": lambda t: t.cumprod(1),
    "cumprod_dim0": lambda t: torch.cumprod(t, 0),
    "norm": lambda t: t.norm(),
    "norm_1_dim": lambda t: torch.norm(t, 1, 1),
    "norm_3": lambda t: torch.linalg.vector_norm(t, 3, 0),
    "norm_1_5": lambda t: torch.linalg.vector_norm(t, 1.5),
    "norm_0_5": lambda t: torch.linalg.vector_norm(t, 0.5, 1),
    "norm_inf": lambda t: torch.linalg.vector_norm(t, math.inf, 1),
    "norm_neg_inf": lambda t: torch.linalg.vector_norm(t, -math.inf),
    "nansum": lambda t: t.nansum(1),
    "nanmean": lambda t: torch.nanmean(t, 0),
    "median_all": lambda t: t.median(),
    "median_dim": lambda t: torch.median(t, 1).values,
    "topk": lambda t: t.topk(2).values,
    "topk_smallest_dim0": lambda t: torch.topk(t, 2, 0, largest=False).values,
    "sort": lambda t: t.sort().values,
    "sort_descending_dim0": lambda t: torch.sort(t, 0, descending=True).values,
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_gradcheck_and_gradgradcheck(name, layout):
    fn = DIFFERENTIABLE[name]
    x = X if layout == "contiguous" else XT.detach().t().requires_grad_()
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize(
    "fn",
    [
        lambda t: t.prod(),
        lambda t: t.prod(1),
        lambda t: t.prod(0, keepdim=True),
        lambda t: t.cumprod(1),
        lambda t: t.cumprod(0),
    ],
    ids=["prod_all", "prod_dim1", "prod_dim0", "cumprod_dim1", "cumprod_dim0"],
)
def test_prod_and_cumprod_gradients_are_exact_with_zeros(fn):
    """PyTorch's zero-safe gradients: the product of the other elements, no division."""
    assert gradcheck(fn, (ZEROS,))
    assert gradgradcheck(fn, (ZEROS,))


def test_prod_gradient_with_one_and_two_zeros():
    x = _t([2.0, 0.0, 3.0], True)
    x.prod().backward()
    assert x.grad.tolist() == [0.0, 6.0, 0.0]
    y = _t([0.0, 2.0, 0.0], True)
    y.prod().backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]
    # PyTorch: [[1, 3, 3], [2, 0, 2]].cumprod(1) backward of ones.
    z = _t([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], True)
    z.cumprod(1).sum().backward()
    assert z.grad.tolist() == [[13.0, 4.0, 3.0], [1.0, 6.0, 0.0]]


# ------------------------------------------------------------------ gradient semantics


def test_ties_share_the_gradient_for_full_and_amax_reductions_but_not_for_max_dim():
    # The numbers PyTorch gives for x = [[1, 3, 3], [2, 0, 2]].
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], requires_grad=True)
    x.max().backward()
    assert x.grad.tolist() == [[0, 0.5, 0.5], [0, 0, 0]]
    x.grad = None
    x.amax(1).sum().backward()
    assert x.grad.tolist() == [[0, 0.5, 0.5], [0.5, 0, 0.5]]
    x.grad = None
    x.max(1).values.sum().backward()
    assert x.grad.tolist() == [[0, 1, 0], [1, 0, 0]]
    x.grad = None
    x.median().backward()
    assert x.grad.tolist() == [[0, 0, 0], [0.5, 0, 0.5]]


def test_grad_fn_names_are_pytorchs():
    x = X
    names = {
        "MaxBackward1": x.max(),
        "MaxBackward0": x.max(0).values,
        "MinBackward1": x.min(),
        "MinBackward0": x.min(1).values,
        "AmaxBackward0": x.amax(),
        "AminBackward0": x.amin(1),
        "SoftmaxBackward0": x.softmax(0),
        "LogSoftmaxBackward0": x.log_softmax(0),
        "LogsumexpBackward0": x.logsumexp(1),
        "ProdBackward0": x.prod(),
        "ProdBackward1": x.prod(1),
        "VarBackward0": x.var(),
        "StdBackward0": x.std(1),
        "CumsumBackward0": x.cumsum(1),
        "CumprodBackward0": x.cumprod(1),
        "LinalgVectorNormBackward0": x.norm(),
        "NansumBackward0": x.nansum(),
        "MedianBackward0": x.median(),
        "MedianBackward1": x.median(1).values,
        "TopkBackward0": x.topk(1).values,
        "SortBackward0": x.sort().values,
        "DivBackward0": x.nanmean(),
    }
    for name, out in names.items():
        assert out.grad_fn.name() == name


def test_subgradients_at_zero_are_pytorchs():
    # PyTorch: std of a constant, the 2-norm of zeros, p-norms at a zero element.
    y = torch.tensor([1.0, 1.0, 1.0], requires_grad=True)
    y.std().backward()
    assert y.grad.tolist() == [0.0, 0.0, 0.0]
    z = torch.zeros(2, requires_grad=True)
    z.norm().backward()
    assert z.grad.tolist() == [0.0, 0.0]
    for p in (0.5, 1.5):
        w = torch.tensor([0.0, 3.0], requires_grad=True)
        torch.linalg.vector_norm(w, p).backward()
        assert w.grad.tolist() == pytest.approx([0.0, 1.0])
    v = torch.tensor([-3.0, 3.0, 1.0], requires_grad=True)
    torch.linalg.vector_norm(v, math.inf).backward()
    assert v.grad.tolist() == [-0.5, 0.5, 0.0]


def test_index_outputs_never_require_grad():
    r = X.max(1)
    assert r.values.requires_grad and not r.indices.requires_grad
    assert r.indices.dtype == torch.int64
    assert not X.argmax().requires_grad
    assert not X.argsort().requires_grad


# ---------------------------------------------------------------- against numpy

shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3)


@st.composite
def tensor_and_dim(draw):
    shape = draw(shapes)
    seed = draw(st.integers(0, 2**32 - 1))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    keepdim = draw(st.booleans())
    return _distinct(np.random.default_rng(seed), tuple(shape)), dim, keepdim


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim())
def test_max_min_amax_argmax_against_numpy(case):
    a, dim, keepdim = case
    x = torch.tensor(a.tolist(), dtype=F64)
    r = x.max(dim, keepdim)
    np.testing.assert_array_equal(r.values.numpy(), np.max(a, dim, keepdims=keepdim))
    want = np.argmax(a, dim)
    np.testing.assert_array_equal(r.indices.numpy(), np.expand_dims(want, dim) if keepdim else want)
    np.testing.assert_array_equal(torch.min(x, dim).values.numpy(), np.min(a, dim))
    np.testing.assert_array_equal(x.amax(dim, keepdim).numpy(), np.max(a, dim, keepdims=keepdim))
    np.testing.assert_array_equal(x.amin().numpy(), np.min(a))
    np.testing.assert_array_equal(x.argmin(dim).numpy(), np.argmin(a, dim))
    assert x.argmax().item() == int(np.argmax(a))


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim())
def test_softmax_logsumexp_against_numpy(case):
    a, dim, keepdim = case
    x = torch.tensor(a.tolist(), dtype=F64)
    e = np.exp(a - a.max(dim, keepdims=True))
    soft = e / e.sum(dim, keepdims=True)
    np.testing.assert_allclose(x.softmax(dim).numpy(), soft, rtol=1e-12)
    np.testing.assert_allclose(x.log_softmax(dim).numpy(), np.log(soft), rtol=1e-9, atol=1e-12)
    lse = np.log(np.exp(a).sum(dim, keepdims=keepdim))
    np.testing.assert_allclose(x.logsumexp(dim, keepdim).numpy(), lse, rtol=1e-9, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim(), st.sampled_from([0, 1, 2]))
def test_prod_var_std_cumsum_cumprod_against_numpy(case, correction):
    a, dim, keepdim = case
    x = torch.tensor(a.tolist(), dtype=F64)
    np.testing.assert_allclose(x.prod(dim, keepdim).numpy(), a.prod(dim, keepdims=keepdim))
    np.testing.assert_allclose(x.prod().numpy(), a.prod())
    n = a.shape[dim]
    with np.errstate(divide="ignore", invalid="ignore"):
        want_var = ((a - a.mean(dim, keepdims=True)) ** 2).sum(dim, keepdims=keepdim) / max(
            n - correction, 0
        )
    np.testing.assert_allclose(
        x.var(dim, keepdim=keepdim, correction=correction).numpy(), want_var, rtol=1e-12
    )
    np.testing.assert_allclose(
        x.std(dim, keepdim=keepdim, correction=correction).numpy(), np.sqrt(want_var), rtol=1e-12
    )
    np.testing.assert_allclose(x.cumsum(dim).numpy(), np.cumsum(a, dim), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(x.cumprod(dim).numpy(), np.cumprod(a, dim), rtol=1e-12)
    assert x.cumsum(dim).is_contiguous()


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim(), st.sampled_from([1, 2, 3, 0.5, math.inf, -math.inf, 0]))
def test_vector_norms_against_numpy(case, ord_):
    a, dim, keepdim = case
    x = torch.tensor(a.tolist(), dtype=F64)
    got = torch.linalg.vector_norm(x, ord_, dim, keepdim).numpy()
    want = np.linalg.norm(a, ord_, axis=dim, keepdims=keepdim)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(x.norm().numpy(), np.linalg.norm(a.ravel()), rtol=1e-12)


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim(), st.integers(1, 4), st.booleans())
def test_sort_topk_argsort_median_against_numpy(case, k, descending):
    a, dim, keepdim = case
    x = torch.tensor(a.tolist(), dtype=F64)
    order = np.argsort(-a if descending else a, axis=dim, kind="stable")
    r = x.sort(dim, descending)
    np.testing.assert_array_equal(r.indices.numpy(), order)
    np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(a, order, dim))
    np.testing.assert_array_equal(x.argsort(dim, descending).numpy(), order)
    k = min(k, a.shape[dim])
    top = torch.topk(x, k, dim, largest=descending)
    np.testing.assert_array_equal(top.indices.numpy(), np.take(order, range(k), axis=dim))
    lower = np.take(np.sort(a, axis=dim), [(a.shape[dim] - 1) // 2], axis=dim)
    med = x.median(dim, keepdim)
    np.testing.assert_array_equal(med.values.numpy(), lower if keepdim else np.squeeze(lower, dim))
    np.testing.assert_array_equal(x.median().numpy(), np.sort(a.ravel())[(a.size - 1) // 2])


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim())
def test_boolean_and_counting_reductions_against_numpy(case):
    a, dim, keepdim = case
    a = np.round(a) * (np.abs(a) > 0.5)  # zeros among the values
    x = torch.tensor(a.tolist(), dtype=F64)
    np.testing.assert_array_equal(x.all(dim, keepdim).numpy(), np.all(a, dim, keepdims=keepdim))
    np.testing.assert_array_equal(x.any(dim, keepdim).numpy(), np.any(a, dim, keepdims=keepdim))
    np.testing.assert_array_equal(x.count_nonzero(dim).numpy(), np.count_nonzero(a, dim))
    assert x.count_nonzero().item() == np.count_nonzero(a)
    values, inverse, counts = x.unique(return_inverse=True, return_counts=True)
    want_values, want_inverse, want_counts = np.unique(a, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(values.numpy(), want_values)
    np.testing.assert_array_equal(inverse.numpy(), want_inverse.reshape(a.shape))
    np.testing.assert_array_equal(counts.numpy(), want_counts)


@settings(max_examples=25, deadline=None)
@given(tensor_and_dim())
def test_nansum_nanmean_against_numpy(case):
    a, dim, keepdim = case
    a = np.where(np.abs(a) < 0.3, np.nan, a)
    x = torch.tensor(a.tolist(), dtype=F64)
    np.testing.assert_allclose(x.nansum(dim, keepdim).numpy(), np.nansum(a, dim, keepdims=keepdim))
    # numpy's nanmean of an all-NaN slice: NaN (0 / 0), with a warning.
    count = np.sum(~np.isnan(a), dim, keepdims=keepdim)
    with np.errstate(invalid="ignore", divide="ignore"):
        want = np.nansum(a, dim, keepdims=keepdim) / count
    np.testing.assert_allclose(x.nanmean(dim, keepdim).numpy(), want)


# ------------------------------------------------------------------- dtypes, NaN, forms


def test_result_dtypes_are_pytorchs():
    i = torch.tensor([[1, 5, 2], [4, 4, 0]])
    b = torch.tensor([[True, False, True], [False, False, False]])
    assert i.max().dtype == torch.int64 and b.max().dtype == torch.bool
    assert i.amax(0).dtype == torch.int64 and b.amax().dtype == torch.bool
    assert i.prod().dtype == torch.int64 and b.prod().dtype == torch.int64
    assert i.cumsum(1).dtype == torch.int64 and b.cumprod(1).dtype == torch.int64
    assert i.logsumexp(1).dtype == torch.float32
    assert i.nansum().dtype == torch.int64
    assert i.all().dtype == torch.bool and i.any(1).dtype == torch.bool
    assert b.count_nonzero().dtype == torch.int64
    assert i.median().dtype == torch.int64 and b.sort().values.dtype == torch.bool
    assert b.argsort().dtype == torch.int64 and i.unique().dtype == torch.int64
    assert torch.ones(3, dtype=F64).softmax(0).dtype == F64
    assert torch.ones(3).cumsum(0, dtype=torch.int64).dtype == torch.int64
    assert torch.tensor([1, 2]).softmax(0, dtype=F64).dtype == F64
    assert i.prod(1).tolist() == [10, 0]
    assert i.cumsum(1).tolist() == [[1, 6, 8], [4, 8, 8]]
    assert torch.tensor([2**62, 2]).prod().item() == -(2**63)  # wraps like PyTorch


def test_nan_propagates_as_in_pytorch():
    x = torch.tensor([1.0, float("nan"), 3.0])
    assert math.isnan(x.max().item()) and math.isnan(x.amin().item())
    r = x.max(0)
    assert math.isnan(r.values.item()) and r.indices.item() == 1
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert x.sort().indices.tolist() == [0, 2, 1]
    assert x.sort(descending=True).indices.tolist() == [1, 2, 0]
    assert x.topk(2).indices.tolist() == [1, 2]
    assert math.isnan(x.median().item())
    assert x.nansum().item() == 4.0 and x.nanmean().item() == 2.0
    assert torch.tensor([float("-inf")] * 2).logsumexp(0).item() == -math.inf
    assert torch.tensor([float("inf"), 1.0]).logsumexp(0).item() == math.inf


def test_empty_inputs():
    e = torch.zeros(0, 3)
    assert e.prod().item() == 1.0 and e.prod(0).tolist() == [1.0, 1.0, 1.0]
    assert e.logsumexp(0).tolist() == [-math.inf] * 3
    assert e.cumsum(0).shape == (0, 3) and e.softmax(1).shape == (0, 3)
    assert e.sort(0).values.shape == (0, 3)
    assert e.norm().item() == 0.0
    assert math.isnan(e.median().item())
    assert e.max(1).values.shape == (0,)
    assert e.amax(1).shape == (0,)


def test_sum_and_mean_without_dim_honour_keepdim():
    # Was: shape () (keepdim ignored without a dim); PyTorch gives (1, 1).
    x = torch.ones(2, 3)
    assert x.sum(None, True).shape == (1, 1)
    assert x.mean(keepdim=True).shape == (1, 1)
    assert torch.sum(x, None, True).tolist() == [[6.0]]
    assert x.sum().shape == ()


def test_zero_dim_inputs():
    s = torch.tensor(2.5, requires_grad=True)
    assert s.max(0).values.item() == 2.5 and s.max(0).indices.item() == 0
    assert s.softmax(0).item() == 1.0 and s.cumsum(0).item() == 2.5
    assert s.sort().values.item() == 2.5 and s.topk(1).indices.item() == 0
    assert s.prod().item() == 2.5
    s.prod().backward()
    assert s.grad.item() == 1.0


def test_return_types_are_named_tuples_with_pytorchs_repr():
    x = torch.tensor([[1.0, 3.0], [2.0, 0.0]])
    r = torch.max(x, 1)
    assert isinstance(r, tuple) and type(r) is torch.return_types.max
    values, indices = r
    assert values.tolist() == [3.0, 2.0] and indices.tolist() == [1, 0]
    assert repr(r) == ("torch.return_types.max(\nvalues=tensor([3., 2.]),\nindices=tensor([1, 0]))")
    assert type(x.sort()).__name__ == "sort" and type(x.topk(1)).__name__ == "topk"
    assert type(x.median(0)).__name__ == "median" and type(x.min(0)).__name__ == "min"


def test_var_and_std_signatures():
    x = torch.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]])
    assert x.var().item() == pytest.approx(np.var(x.numpy(), ddof=1))
    assert x.var(False).item() == pytest.approx(np.var(x.numpy()))
    assert x.var(1, False).tolist() == pytest.approx(np.var(x.numpy(), 1).tolist())
    assert x.var(1, True, True).shape == (2, 1)
    assert x.std(correction=0).item() == pytest.approx(np.std(x.numpy()))
    assert x.var(0, correction=2.5).tolist() == [math.inf] * 3  # max(0, N - correction)
    with pytest.raises(TypeError):
        x.var(0, True, correction=1)
    var, mean = torch.var_mean(x, 1, keepdim=True)
    assert var.shape == mean.shape == (2, 1)
    std, mean = torch.std_mean(x)
    assert std.item() == pytest.approx(np.std(x.numpy(), ddof=1))
    assert mean.item() == pytest.approx(4.0)


def test_function_forms_match_methods():
    x = X.detach()
    pairs = [
        (torch.amax(x, 1), x.amax(1)),
        (torch.argmax(x, 0), x.argmax(0)),
        (torch.nansum(x), x.nansum()),
        (torch.all(x > 0, 1), (x > 0).all(1)),
        (torch.any(x > 0), (x > 0).any()),
        (torch.count_nonzero(x, 0), x.count_nonzero(0)),
        (torch.argsort(x, 1, True), x.argsort(1, True)),
        (torch.unique(x), x.unique()),
        (torch.norm(x, 2, 1), torch.linalg.vector_norm(x, 2, 1)),
        (torch.median(x), x.median()),
    ]
    for a, b in pairs:
        assert a.tolist() == b.tolist()
    assert torch.max(x).item() == x.max().item()


# ------------------------------------------------------------------------ determinism


@pytest.mark.rustgrad_only
def test_results_are_bitwise_identical_for_any_thread_count():
    """Inputs above the parallel threshold (32768 elements): the lane kernels chunk by
    size only, so 1 and 4 threads give the same bits."""
    rng = np.random.default_rng(0)
    a = torch.tensor(rng.normal(size=(3, 70_000)).tolist(), dtype=torch.float32)
    ops = [
        lambda t: t.amax(),
        lambda t: t.argmax(1),
        lambda t: t.prod(1),
        lambda t: t.logsumexp(1),
        lambda t: t.softmax(1),
        lambda t: t.var(1),
        lambda t: t.norm(),
        lambda t: t.cumsum(1),
        lambda t: t.sort(1).values,
        lambda t: t.median(1).values,
    ]
    original = torch.get_num_threads()
    try:
        results = {}
        for threads in (1, 4):
            torch.set_num_threads(threads)
            results[threads] = [f(a).numpy().tobytes() for f in ops]
    finally:
        torch.set_num_threads(original)
    assert results[1] == results[4]


@pytest.mark.parametrize(
    "dtype, prod_all, prod_1, prod_0, cumprod_1",
    [
        (
            "float16",
            math.inf,
            [math.inf, 0.0],
            [0.029998779296875, 0.029998779296875, 10.0078125],
            [
                [300.0, math.inf, 90.0625],
                [0.00010001659393310547, 0.0, 0.00010001659393310547],
            ],
        ),
        (
            "bfloat16",
            0.009033203125,
            [90.0, 0.00010013580322265625],
            [0.030029296875, 0.030029296875, 10.0],
            [
                [300.0, 90112.0, 90.0],
                [0.00010013580322265625, 1.0011717677116394e-08, 0.00010013580322265625],
            ],
        ),
    ],
)
def test_half_prod_multiplies_in_the_half_dtype(dtype, prod_all, prod_1, prod_0, cumprod_1):
    """PyTorch 2.15's values: `prod` rounds each product to the half dtype (300 * 300
    overflows float16), while `cumprod` accumulates in float and rounds each output."""
    a = torch.tensor([[300.0, 300.0, 0.001], [1e-4, 1e-4, 1e4]], dtype=getattr(torch, dtype))
    assert a.prod().item() == prod_all
    assert a.prod(1).tolist() == prod_1
    assert a.prod(0).tolist() == prod_0
    assert a.cumprod(1).tolist() == cumprod_1
