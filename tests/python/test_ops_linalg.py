"""Linear-algebra ops: gradcheck and gradgradcheck in float64 (also through
non-contiguous inputs), values against numpy, function/method/in-place forms, grad_fn
names, dtypes and PyTorch's errors."""

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st
from rustgrad.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    g = np.random.default_rng(seed)
    return (
        torch.tensor(g.normal(size=shape).tolist(), dtype=torch.float64)
        .reshape(shape)
        .requires_grad_()
    )


def t(x):
    """Non-contiguous: the transpose of the last two dims."""
    return x.transpose(-1, -2)


# Each entry: name -> (function of the inputs, list of input shapes).
DIFFERENTIABLE = {
    "mm": (lambda a, b: torch.mm(a, b), [(2, 3), (3, 4)]),
    "mm_transposed": (lambda a, b: t(a).mm(t(b)), [(3, 2), (4, 3)]),
    "bmm": (lambda a, b: torch.bmm(a, b), [(2, 3, 4), (2, 4, 2)]),
    "bmm_transposed": (lambda a, b: t(a).bmm(b.permute(1, 0, 2)), [(2, 4, 3), (4, 2, 2)]),
    "mv": (lambda a, v: torch.mv(a, v), [(3, 4), (4,)]),
    "mv_transposed_sliced": (lambda a, v: t(a).mv(v[::2]), [(4, 3), (8,)]),
    "dot": (lambda a, b: torch.dot(a, b), [(5,), (5,)]),
    "dot_sliced": (lambda a, b: a[1::2].dot(b), [(6,), (3,)]),
    "outer": (lambda a, b: torch.outer(a, b), [(3,), (4,)]),
    "addmm": (lambda s, a, b: torch.addmm(s, a, b), [(2, 4), (2, 3), (3, 4)]),
    "addmm_scaled_broadcast": (
        lambda s, a, b: s.addmm(t(a), b, beta=0.5, alpha=-2),
        [(4,), (3, 2), (3, 4)],
    ),
    "addmm_beta_zero": (lambda s, a, b: torch.addmm(s, a, b, beta=0), [(2, 4), (2, 3), (3, 4)]),
    "addmv": (lambda s, a, v: torch.addmv(s, a, v, beta=2, alpha=0.5), [(3,), (3, 4), (4,)]),
    "addmv_transposed": (lambda s, a, v: s.addmv(t(a), v), [(1,), (4, 3), (4,)]),
    "baddbmm": (lambda s, a, b: torch.baddbmm(s, a, b), [(2, 3, 2), (2, 3, 4), (2, 4, 2)]),
    "baddbmm_scaled_broadcast": (
        lambda s, a, b: s.baddbmm(t(a), b, beta=-1.5, alpha=0.25),
        [(3, 1), (2, 4, 3), (2, 4, 2)],
    ),
    "addbmm": (lambda s, a, b: torch.addbmm(s, a, b), [(3, 2), (2, 3, 4), (2, 4, 2)]),
    "addbmm_scaled_transposed": (
        lambda s, a, b: s.addbmm(a, t(b), beta=0.5, alpha=3),
        [(2,), (3, 3, 4), (3, 2, 4)],
    ),
    "matmul_1d_3d": (lambda a, b: torch.matmul(a, b), [(4,), (2, 4, 3)]),
    "matmul_3d_1d": (lambda a, b: a @ b, [(2, 3, 4), (4,)]),
    "matmul_batch_broadcast": (lambda a, b: a @ b, [(2, 1, 3, 4), (3, 4, 2)]),
    "tensordot_int": (lambda a, b: torch.tensordot(a, b, 2), [(2, 3, 4), (3, 4, 2)]),
    "tensordot_lists_transposed": (
        lambda a, b: torch.tensordot(t(a), b, dims=([-2, 0], [1, 0])),
        [(3, 4, 2), (3, 2)],
    ),
    "tensordot_size1_broadcast": (
        lambda a, b: torch.tensordot(a, b, dims=([1], [0])),
        [(2, 1), (3, 2)],
    ),
    "einsum_matmul": (lambda a, b: torch.einsum("ij,jk->ik", a, b), [(2, 3), (3, 4)]),
    "einsum_trace": (lambda a: torch.einsum("ii", a), [(3, 3)]),
    "einsum_diagonal_transposed": (lambda a: torch.einsum("ii->i", t(a)), [(3, 3)]),
    "einsum_batch_diagonal": (lambda a: torch.einsum("...ii->...i", a), [(2, 3, 3)]),
    "einsum_ellipsis_broadcast": (
        lambda a, b: torch.einsum("...ij,...jk", a, t(b)),
        [(2, 1, 2, 3), (3, 4, 3)],
    ),
    "einsum_four_operands": (
        lambda a, b, c, d: torch.einsum("ij,jk,k,kjl->li", a, b, c, d),
        [(2, 3), (3, 2), (2,), (2, 3, 4)],
    ),
    "einsum_list_form_outer": (lambda a, b: torch.einsum("i,j", [a, b]), [(2,), (3,)]),
    "linalg_norm_fro": (lambda a: torch.linalg.norm(t(a), "fro"), [(3, 2)]),
    "matrix_norm_batched": (lambda a: torch.linalg.matrix_norm(a, keepdim=True), [(2, 3, 2)]),
    "matrix_norm_1": (lambda a: torch.linalg.matrix_norm(a, 1), [(3, 2)]),
    "linalg_norm_inf_dims": (
        lambda a: torch.linalg.norm(a, float("inf"), dim=(2, 0)),
        [(2, 3, 4)],
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradcheck_and_gradgradcheck(name):
    fn, shapes = DIFFERENTIABLE[name]
    inputs = [leaf(*s, seed=k) for k, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


GRAD_FN = {
    "MmBackward0": lambda: torch.mm(leaf(2, 3), leaf(3, 2)),
    "BmmBackward0": lambda: torch.bmm(leaf(2, 2, 3), leaf(2, 3, 2)),
    "MvBackward0": lambda: torch.mv(leaf(2, 3), leaf(3)),
    "DotBackward0": lambda: torch.dot(leaf(3), leaf(3)),
    "MulBackward0": lambda: torch.outer(leaf(3), leaf(2)),
    "AddmmBackward0": lambda: torch.addmm(leaf(2), leaf(3, 2), leaf(2, 2)),
    "AddmvBackward0": lambda: torch.addmv(leaf(3), leaf(3, 2), leaf(2)),
    "BaddbmmBackward0": lambda: torch.baddbmm(leaf(1), leaf(2, 3, 2), leaf(2, 2, 2)),
    "AddbmmBackward0": lambda: torch.addbmm(leaf(1), leaf(2, 3, 2), leaf(2, 2, 2)),
}


@pytest.mark.parametrize("name", sorted(GRAD_FN))
def test_grad_fn_names_are_pytorchs(name):
    assert type(GRAD_FN[name]()).__name__ == "Tensor"
    assert GRAD_FN[name]().grad_fn.name() == name


def arr(x):
    return np.array(x.detach().tolist())


def test_values_against_numpy_with_coefficients():
    s, a, b = leaf(3, 4, seed=1), leaf(3, 2, seed=2), leaf(2, 4, seed=3)
    out = torch.addmm(s, a, b, beta=0.5, alpha=-3)
    np.testing.assert_allclose(arr(out), 0.5 * arr(s) - 3 * arr(a) @ arr(b), rtol=1e-12)
    b1, b2 = leaf(2, 3, 5, seed=4), leaf(2, 5, 4, seed=5)
    np.testing.assert_allclose(
        arr(torch.addbmm(s, b1, b2, alpha=2)), arr(s) + 2 * (arr(b1) @ arr(b2)).sum(0)
    )
    np.testing.assert_allclose(
        arr(torch.baddbmm(s, b1, b2, beta=2)), 2 * arr(s) + arr(b1) @ arr(b2)
    )
    v = leaf(2, seed=6)
    np.testing.assert_allclose(arr(torch.addmv(leaf(3), a, v, beta=0)), arr(a) @ arr(v))
    np.testing.assert_allclose(arr(torch.outer(v, s[0])), np.outer(arr(v), arr(s[0])))


def test_beta_zero_ignores_nan_in_input():
    s = torch.full((2, 2), float("nan"), dtype=torch.float64)
    a = leaf(2, 3)
    out = torch.addmm(s, a, t(a), beta=0)
    assert not np.isnan(arr(out)).any()
    out2 = torch.addmm(s, a, t(a))
    assert np.isnan(arr(out2)).all()


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(1, 4),
    st.integers(0, 4),
    st.integers(1, 3),
    st.booleans(),
)
def test_products_match_numpy(n, k, m, batch, transpose_a):
    g = np.random.default_rng(n * 100 + k * 10 + m)
    a_np = g.normal(size=(batch, n, k))
    b_np = g.normal(size=(batch, k, m))
    a = torch.tensor(a_np.tolist(), dtype=torch.float64).reshape(batch, n, k)
    if transpose_a:
        a = torch.tensor(a_np.transpose(0, 2, 1).tolist(), dtype=torch.float64)
        a = a.reshape(batch, k, n).transpose(1, 2)
    b = torch.tensor(b_np.tolist(), dtype=torch.float64).reshape(batch, k, m)
    np.testing.assert_allclose(arr(torch.bmm(a, b)), a_np @ b_np, atol=1e-12)
    np.testing.assert_allclose(arr(a[0].mm(b[0])), a_np[0] @ b_np[0], atol=1e-12)
    if m:
        np.testing.assert_allclose(arr(a[0].mv(b[0, :, 0])), a_np[0] @ b_np[0, :, 0], atol=1e-12)
        np.testing.assert_allclose(
            arr(a[0, 0].dot(b[0, :, 0])), a_np[0, 0] @ b_np[0, :, 0], atol=1e-12
        )
    one = torch.ones(1, dtype=torch.float64)
    np.testing.assert_allclose(arr(torch.addbmm(one, a, b)), 1 + (a_np @ b_np).sum(0))


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(1, 3),
    st.booleans(),
    st.booleans(),
)
def test_matmul_broadcasting_matches_numpy(batch_a, batch_b, k, vec_a, vec_b):
    g = np.random.default_rng(len(batch_a) * 10 + len(batch_b) + k)
    # Make the batch shapes broadcastable: size 1 where they differ.
    width = max(len(batch_a), len(batch_b))
    pa = [1] * (width - len(batch_a)) + batch_a
    pb = [1] * (width - len(batch_b)) + batch_b
    batch_a = [x if x == y else 1 for x, y in zip(pa, pb)][width - len(batch_a) :]
    a_shape = [k] if vec_a else [*batch_a, 2, k]
    b_shape = [k] if vec_b else [*batch_b, k, 3]
    a_np, b_np = g.normal(size=a_shape), g.normal(size=b_shape)
    a = torch.tensor(a_np.tolist(), dtype=torch.float64).reshape(a_shape)
    b = torch.tensor(b_np.tolist(), dtype=torch.float64).reshape(b_shape)
    out = torch.matmul(a, b)
    expected = np.matmul(a_np, b_np)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(arr(out), expected, atol=1e-12)


def test_forms_and_in_place():
    s, a, b = leaf(2, 4, seed=1), leaf(2, 3, seed=2), leaf(3, 4, seed=3)
    expected = arr(torch.addmm(s, a, b, beta=2, alpha=0.5))
    x = s.detach().clone()
    assert x.addmm_(a, b, beta=2, alpha=0.5) is x
    np.testing.assert_allclose(arr(x), expected)
    assert x.grad_fn.name() == "AddmmBackward0"
    x.sum().backward()
    np.testing.assert_allclose(arr(a.grad), 0.5 * np.ones((2, 4)) @ arr(b).T)
    v = torch.zeros(2, dtype=torch.float64)
    v.addmv_(a, leaf(3, seed=4))
    np.testing.assert_allclose(arr(v), arr(a) @ arr(leaf(3, seed=4)))
    y = torch.ones(2, 3, 4, dtype=torch.float64)
    y.baddbmm_(torch.ones(2, 3, 2, dtype=torch.float64), torch.ones(2, 2, 4, dtype=torch.float64))
    assert arr(y).tolist() == np.full((2, 3, 4), 3.0).tolist()
    z = torch.zeros(3, 4, dtype=torch.float64)
    z.addbmm_(torch.ones(2, 3, 2, dtype=torch.float64), torch.ones(2, 2, 4, dtype=torch.float64))
    assert arr(z).tolist() == np.full((3, 4), 4.0).tolist()
    for name in ["bmm", "mv", "dot", "outer", "addmm", "addmv", "baddbmm", "addbmm"]:
        assert callable(getattr(torch, name)) and callable(getattr(torch.Tensor, name))


def test_in_place_shape_must_match_and_leaf_is_refused():
    a, b = leaf(3, 2), leaf(2, 5)
    with pytest.raises(RuntimeError, match=r"Bad in-place call: input tensor size \[3, 2\]"):
        torch.ones(3, 2, dtype=torch.float64).addmm_(a, b)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf(3, 5).addmm_(a, b)


def test_dtypes():
    i = torch.tensor([1, 2, 3])
    assert torch.outer(i, i).dtype == torch.int64
    assert torch.outer(i, torch.ones(2)).dtype == torch.float32
    f = torch.ones(2, 3)
    assert torch.mm(f, torch.ones(3, 2)).dtype == torch.float32
    assert torch.addmm(torch.ones(2), f, torch.ones(3, 2), beta=2).dtype == torch.float32


def test_no_history_when_not_needed():
    x = torch.ones(2, 2, dtype=torch.float64)
    assert torch.addmm(x, x, t(x)).grad_fn is None
    with torch.no_grad():
        assert torch.addmm(leaf(2), leaf(2, 3), leaf(3, 2)).grad_fn is None


ERRORS = [
    (lambda: torch.mm(torch.ones(2, 3), torch.ones(4, 5)),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: torch.mm(torch.ones(3), torch.ones(4, 5)), "self must be a matrix"),
    (lambda: torch.mm(torch.ones(2, 3), torch.ones(3)), "mat2 must be a matrix"),
    (lambda: torch.mm(torch.ones(2, 3), torch.ones(3, 2, dtype=torch.float64)),
     "expected m1 and m2 to have the same dtype, but got: float != double"),
    (lambda: torch.bmm(torch.ones(2, 3, 4), torch.ones(2, 5, 6)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4] but got: [2, 5]."),
    (lambda: torch.bmm(torch.ones(3, 4), torch.ones(3, 4, 6)), "batch1 must be a 3D tensor"),
    (lambda: torch.bmm(torch.ones(2, 3, 4), torch.ones(4, 6)), "batch2 must be a 3D tensor"),
    (lambda: torch.mv(torch.ones(2, 3), torch.ones(4)),
     "size mismatch, got input (2), mat (2x3), vec (4)"),
    (lambda: torch.mv(torch.ones(2, 3), torch.ones(3, 1)),
     "vector + matrix @ vector expected, got 1, 2, 2"),
    (lambda: torch.dot(torch.ones(3, 1), torch.ones(4)),
     "1D tensors expected, but got 2D and 1D tensors"),
    (lambda: torch.dot(torch.ones(3), torch.ones(4)),
     "inconsistent tensor size, expected tensor [3] and src [4]"),
    (lambda: torch.dot(torch.ones(3), torch.ones(3, dtype=torch.float64)),
     "dot : expected both vectors to have same dtype, but found Float and Double"),
    (lambda: torch.outer(torch.ones(3, 2), torch.ones(3)),
     "outer: Expected 1-D argument self, but got 2-D"),
    (lambda: torch.addmm(torch.ones(2, 5), torch.ones(2, 3), torch.ones(4, 5)),
     "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    (lambda: torch.addmm(torch.ones(3, 5), torch.ones(2, 3), torch.ones(3, 5)),
     "The expanded size of the tensor (2) must match the existing size (3)"),
    (lambda: torch.addmv(torch.ones(3), torch.ones(2, 3), torch.ones(3)),
     "size mismatch, got input (3), mat (2x3), vec (3)"),
    (lambda: torch.baddbmm(torch.ones(5), torch.ones(2, 3, 4), torch.ones(2, 5, 5)),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 4]"),
    (lambda: torch.addbmm(torch.ones(3, 6), torch.ones(2, 3, 4), torch.ones(2, 4, 5)),
     "The expanded size of the tensor (5) must match the existing size (6)"),
    (lambda: torch.matmul(torch.ones(2, 4, 3), torch.ones(2)),
     "size mismatch, got input (8), mat (8x3), vec (2)"),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_pytorchs_errors(k):
    fn, phrase = ERRORS[k]
    with pytest.raises(RuntimeError) as info:
        fn()
    assert phrase in str(info.value)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(1, 3), min_size=0, max_size=3),
    st.lists(st.integers(1, 3), min_size=0, max_size=2),
    st.integers(0, 3),
)
def test_tensordot_matches_numpy(free_a, free_b, n):
    g = np.random.default_rng(len(free_a) * 100 + len(free_b) * 10 + n)
    shared = list(g.integers(1, 4, size=n))
    a_np = g.normal(size=[*free_a, *shared])
    b_np = g.normal(size=[*shared, *free_b])
    a = torch.tensor(a_np.tolist(), dtype=torch.float64).reshape(a_np.shape)
    b = torch.tensor(b_np.tolist(), dtype=torch.float64).reshape(b_np.shape)
    expected = np.tensordot(a_np, b_np, n)
    out = torch.tensordot(a, b, n)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(arr(out), expected, atol=1e-12)
    # The same contraction as explicit, reversed dim lists.
    dims_a = list(range(len(free_a), len(free_a) + n))[::-1]
    out2 = torch.tensordot(a, b, dims=(dims_a, list(range(n))[::-1]))
    np.testing.assert_allclose(arr(out2), expected, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(1, 4), st.sampled_from(["fro", 1, -1, "inf", "-inf"]))
def test_matrix_norms_match_numpy(n, m, ord):
    g = np.random.default_rng(n * 10 + m)
    a_np = g.normal(size=(n, m))
    a = torch.tensor(a_np.tolist(), dtype=torch.float64)
    ord = float(ord) if ord in ("inf", "-inf") else ord
    np.testing.assert_allclose(
        arr(torch.linalg.matrix_norm(a, ord)), np.linalg.norm(a_np, ord), rtol=1e-12
    )
    np.testing.assert_allclose(arr(torch.linalg.norm(a, ord)), np.linalg.norm(a_np, ord))
    np.testing.assert_allclose(arr(torch.linalg.norm(a)), np.linalg.norm(a_np), rtol=1e-12)


def test_norm_grad_fn_and_unsupported_orders():
    a = leaf(2, 3)
    assert torch.linalg.norm(a).grad_fn.name() == "LinalgVectorNormBackward0"
    assert torch.linalg.matrix_norm(a).grad_fn.name() == "LinalgVectorNormBackward0"
    with pytest.raises(NotImplementedError):
        torch.linalg.matrix_norm(a, "nuc")
    with pytest.raises(RuntimeError, match="Order abc not supported"):
        torch.linalg.matrix_norm(a, "abc")
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        torch.linalg.matrix_norm(leaf(3))
    with pytest.raises(RuntimeError, match="the input must be 1D or 2D. Got 3D"):
        torch.linalg.norm(leaf(2, 2, 2), "fro")
    with pytest.raises(RuntimeError, match="dim must be a 2-tuple. Got 1"):
        torch.linalg.norm(a, "fro", dim=1)
    with pytest.raises(RuntimeError, match=r"dims must be different. Got \(0, 0\)"):
        torch.linalg.matrix_norm(a, dim=(0, 0))


TENSORDOT_ERRORS = [
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=([1], [0, 1])),
     RuntimeError, "both dimension lists should have same length"),
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=([0], [0])),
     RuntimeError,
     "contracted dimensions need to match, but first has size 2 in dim 0 and second has size 3"),
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=-1),
     RuntimeError, "tensordot expects dims >= 0, but got dims=-1"),
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=3),
     RuntimeError, "tensordot expects dims < ndim_a or ndim_b, but got dims=3"),
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 3), dims=([1, 1], [0, 1])),
     RuntimeError, "dim 1 appears multiple times in the list of dims"),
    (lambda: torch.tensordot(torch.ones(2, 3), torch.ones(3, 4), dims=([5], [0])),
     IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(TENSORDOT_ERRORS)))
def test_tensordot_errors(k):
    fn, exc, phrase = TENSORDOT_ERRORS[k]
    with pytest.raises(exc) as info:
        fn()
    assert phrase in str(info.value)


def _einsum_case(draw):
    """A random valid equation with up to 4 operands and arrays for it."""
    letters = "abcdeA"
    sizes = {c: draw(st.integers(1, 3)) for c in letters}
    n_ops = draw(st.integers(1, 4))
    terms = [
        "".join(draw(st.lists(st.sampled_from(letters), min_size=0, max_size=3)))
        for _ in range(n_ops)
    ]
    used = sorted(set("".join(terms)))
    explicit = draw(st.booleans())
    out = "".join(draw(st.permutations(used))[: draw(st.integers(0, len(used)))])
    equation = ",".join(terms) + (f"->{out}" if explicit else "")
    shapes = [[sizes[c] for c in term] for term in terms]
    return equation, shapes


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_einsum_matches_numpy(data):
    equation, shapes = _einsum_case(data.draw)
    g = np.random.default_rng(len(equation))
    arrays = [g.normal(size=s) for s in shapes]
    tensors = [torch.tensor(a.tolist(), dtype=torch.float64).reshape(a.shape) for a in arrays]
    expected = np.einsum(equation, *arrays)
    out = torch.einsum(equation, *tensors)
    assert tuple(out.shape) == np.shape(expected), equation
    np.testing.assert_allclose(arr(out), expected, rtol=1e-10, atol=1e-10, err_msg=equation)


def test_einsum_size_one_broadcast_and_spaces():
    a, b = leaf(2, 1), leaf(1, 3)
    np.testing.assert_allclose(arr(torch.einsum("ab, ab -> ab", a, b)), arr(a) * arr(b), rtol=1e-12)
    np.testing.assert_allclose(arr(torch.einsum("ab,ab", a, b)), (arr(a) * arr(b)).sum())


EINSUM_ERRORS = [
    ("ij,jk", [(2, 3), (4, 5)],
     "einsum(): subscript j has size 4 for operand 1 which does not broadcast with "
     "previously seen size 3"),
    ("ij,jk", [(2, 3)], "einsum(): fewer operands were provided than specified in the equation"),
    ("ij", [(2, 3), (3, 4)],
     "einsum(): more operands were provided than specified in the equation"),
    ("i1,jk", [(2, 3), (3, 4)],
     "einsum(): invalid subscript given at index 1 in the equation string, subscripts must "
     "be in [a-zA-Z]"),
    ("ijk", [(2, 3)],
     "einsum(): the number of subscripts in the equation (3) does not match the number of "
     "dimensions (2) for operand 0 and no ellipsis was given"),
    ("ij->ii", [(2, 3)], "einsum(): output subscript i appears more than once in the output"),
    ("ij->k", [(2, 3)],
     "einsum(): output subscript k does not appear in the equation for any input operand"),
    ("ii->i", [(2, 3)],
     "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 3 != 2"),
    ("i....->", [(2, 3)],
     "einsum(): found '.' for operand 0 for which an ellipsis was already found"),
    ("ij->i->j", [(2, 3)],
     "einsum(): invalid subscript given at index 5 in the equation string"),
    ("...ij,...jk", [(5, 2, 3), (4, 3, 4)],
     "einsum(): dimension 0 covered by ellipsis in operand 1has size 4 which does not "
     "broadcast with previously seen ellipsis with size 5 for the respective dimension"),
    ("ij,jk->i.k", [(2, 3), (3, 4)],
     "einsum(): found '.' for output that is not part of any ellipsis (...)"),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(EINSUM_ERRORS)))
def test_einsum_errors_are_pytorchs(k):
    equation, shapes, phrase = EINSUM_ERRORS[k]
    with pytest.raises(RuntimeError) as info:
        torch.einsum(equation, *[torch.ones(*s) for s in shapes])
    assert phrase in str(info.value)


# PyTorch 2.15's exact messages: a folded matrix product reports itself as `mm`, a
# batched one as bmm's size check without a prefix.
EXACT_MATMUL_ERRORS = [
    (lambda: torch.randn(4, 3) @ torch.randn(2, 5),
     "mm: mat1 and mat2 shapes cannot be multiplied (4x3 and 2x5)"),
    (lambda: torch.randn(2, 4, 3) @ torch.randn(2, 5),
     "mm: mat1 and mat2 shapes cannot be multiplied (8x3 and 2x5)"),
    (lambda: torch.randn(2, 4, 3) @ torch.randn(2, 2, 5),
     "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 2]."),
]  # fmt: skip


@pytest.mark.parametrize("k", range(len(EXACT_MATMUL_ERRORS)))
def test_matmul_errors_are_pytorchs_exactly(k):
    fn, message = EXACT_MATMUL_ERRORS[k]
    with pytest.raises(RuntimeError) as info:
        fn()
    assert str(info.value) == message


def test_matmul_folds_batch_dims_of_a_3d_left_operand_as_pytorch():
    # PyTorch's matmul (and so F.linear) folds (..., m, k) @ (k, n) into one mm over
    # every row: grad_fn UnsafeViewBackward0 over MmBackward0, and the weight gradient
    # is one product over all rows instead of a batched product summed.
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((5, 3, 4))
    wn = rng.standard_normal((6, 4))
    for x in (
        torch.tensor(xn, requires_grad=True),
        torch.tensor(xn.transpose(1, 0, 2).copy(), requires_grad=True).transpose(0, 1),
    ):
        w = torch.tensor(wn, requires_grad=True)
        y = torch.nn.functional.linear(x, w)
        assert type(y.grad_fn).__name__ == "UnsafeViewBackward0"
        assert type(y.grad_fn.next_functions[0][0]).__name__ == "MmBackward0"
        assert y._base is None
        g = rng.standard_normal((5, 3, 6))
        y.backward(torch.tensor(g))
        np.testing.assert_allclose(y.detach().numpy(), xn @ wn.T, rtol=1e-12)
        np.testing.assert_allclose(
            w.grad.numpy(), np.einsum("bmn,bmk->nk", g, xn), rtol=1e-12, atol=1e-12
        )
