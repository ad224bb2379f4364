"""Shape, movement and indexing ops: gradcheck and gradgradcheck in float64 (also through
non-contiguous inputs), values against numpy, forms, dtypes and PyTorch's errors."""

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


def idx(values):
    return torch.tensor(values, dtype=torch.int64)


def transposed(*shape, seed=1):
    """A non-contiguous float64 leaf view: the transpose of a (shape[1], shape[0]) leaf."""
    base = leaf(shape[1], shape[0], *shape[2:], seed=seed)
    return base, base.transpose(0, 1)


# Each entry: name -> (function of the inputs, list of input shapes).
DIFFERENTIABLE = {
    "cat": (lambda a, b: torch.cat([a, b], 1), [(2, 3), (2, 2)]),
    "cat_neg_dim": (lambda a, b: torch.cat((a, b), -1), [(2, 3), (2, 1)]),
    "concat": (lambda a, b: torch.concat([a, b]), [(1, 3), (2, 3)]),
    "stack": (lambda a, b: torch.stack([a, b], 1), [(2, 3), (2, 3)]),
    "hstack": (lambda a, b: torch.hstack([a, b]), [(2, 3), (2, 1)]),
    "vstack": (lambda a, b: torch.vstack([a, b]), [(3,), (2, 3)]),
    "split": (lambda a: torch.split(a, 2, 1)[1] * 2, [(2, 5)]),
    "split_sizes": (lambda a: a.split([1, 3], dim=1)[1], [(2, 4)]),
    "chunk": (lambda a: a.chunk(3)[2], [(5, 2)]),
    "unbind": (lambda a: a.unbind(1)[1], [(2, 3)]),
    "narrow": (lambda a: a.narrow(1, 1, 2), [(2, 4)]),
    "select": (lambda a: a.select(1, -1), [(2, 4)]),
    "flip": (lambda a: a.flip(0, 2), [(2, 3, 2)]),
    "roll": (lambda a: torch.roll(a, (1, -2), (0, 1)), [(3, 4)]),
    "roll_flat": (lambda a: a.roll(4), [(3, 2)]),
    "repeat": (lambda a: a.repeat(2, 1, 3), [(2, 2)]),
    "tile": (lambda a: torch.tile(a, (2,)), [(2, 3)]),
    "tril": (lambda a: a.tril(), [(3, 4)]),
    "triu": (lambda a: torch.triu(a, -1), [(2, 3, 3)]),
    "diagonal": (lambda a: a.diagonal(1), [(3, 4)]),
    "diagonal_dims": (lambda a: torch.diagonal(a, -1, 2, 0), [(3, 2, 4)]),
    "diag_1d": (lambda a: torch.diag(a, 1), [(3,)]),
    "diag_2d": (lambda a: a.diag(-1), [(3, 3)]),
    "diag_embed": (lambda a: a.diag_embed(), [(2, 3)]),
    "movedim": (lambda a: a.movedim(0, -1), [(2, 3, 4)]),
    "swapaxes": (lambda a: a.swapaxes(0, 2), [(2, 3, 4)]),
    "unflatten": (lambda a: a.unflatten(1, (2, -1)), [(2, 6)]),
    "mT": (lambda a: a.mT, [(2, 3, 4)]),
    "unfold": (lambda a: a.unfold(1, 3, 2), [(2, 7)]),
    "repeat_interleave": (lambda a: a.repeat_interleave(2, dim=0), [(2, 3)]),
    "repeat_interleave_flat": (lambda a: torch.repeat_interleave(a, 3), [(2, 2)]),
    "index_select": (lambda a: a.index_select(1, idx([2, 0, 2])), [(2, 3)]),
    "gather": (lambda a: a.gather(1, idx([[0, 0], [2, 1]])), [(2, 3)]),
    "take": (lambda a: a.take(idx([[5, -1], [0, 0]])), [(2, 3)]),
    "take_along_dim": (lambda a: torch.take_along_dim(a, idx([[1], [0]]), 1), [(2, 3)]),
    "masked_select": (lambda a: a.masked_select(idx([1, 0, 1]) == 1), [(2, 3)]),
    "masked_fill": (lambda a: a.masked_fill(idx([1, 0, 1]) == 1, 2.5), [(2, 3)]),
    "masked_fill_tensor": (lambda a, v: a.masked_fill(idx([0, 1]) == 1, v.sum()), [(3, 2), (2,)]),
    "index_fill": (lambda a: a.index_fill(0, idx([1]), -1.0), [(3, 2)]),
    "scatter": (lambda a, s: a.scatter(0, idx([[1, 0], [2, 2]]), s), [(3, 2), (3, 3)]),
    "scatter_value": (lambda a: a.scatter(1, idx([[1], [0]]), 5.0), [(2, 3)]),
    "scatter_add": (lambda a, s: a.scatter_add(0, idx([[1, 1, 0]]), s), [(2, 3), (1, 3)]),
    "index_add": (lambda a, s: a.index_add(0, idx([2, 0, 2]), s, alpha=2), [(3, 2), (3, 2)]),
    "advanced_index": (lambda a: a[idx([0, 2, 2])], [(3, 2)]),
    "advanced_index_list_pair": (lambda a: a[[0, 1], :, [2, 0]], [(2, 3, 4)]),
    "advanced_index_mask": (lambda a: a[a.detach() > 0], [(3, 3)]),
    "advanced_index_split_dims": (lambda a: a[[1, 0], 1:, [0, 1]], [(2, 3, 2)]),
    "as_strided": (lambda a: a.as_strided((2, 2), (1, 2), 1), [(6,)]),
    "as_strided_of_slice": (lambda a: torch.as_strided(a[1:], (3, 2), (1, 1)), [(7,)]),
    "broadcast_to": (lambda a: a.broadcast_to((2, 3, 2)), [(3, 1)]),
    "reshape_as": (lambda a: a.reshape_as(torch.zeros(6)), [(2, 3)]),
    "meshgrid": (lambda a, b: torch.meshgrid(a, b, indexing="xy")[0] * 2, [(3,), (2,)]),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradcheck_and_gradgradcheck(name):
    fn, shapes = DIFFERENTIABLE[name]
    inputs = [leaf(*s, seed=k) for k, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


@pytest.mark.parametrize(
    "name",
    ["cat", "flip", "roll", "repeat", "tril", "diagonal", "gather", "unfold", "advanced_index"],
)
def test_gradcheck_through_a_transposed_input(name):
    fn, shapes = DIFFERENTIABLE[name]
    first = shapes[0]
    _, view = transposed(*first)
    rest = [leaf(*s, seed=k + 5) for k, s in enumerate(shapes[1:])]
    assert not view.is_contiguous()
    assert gradcheck(lambda a, *r: fn(a, *r), [view, *rest])
    assert gradgradcheck(lambda a, *r: fn(a, *r), [view, *rest])


IN_PLACE = {
    "scatter_": (lambda a, s: a.clone().scatter_(1, idx([[1], [0], [1]]), s), [(3, 2), (3, 1)]),
    "scatter_add_": (lambda a, s: (a * 1).scatter_add_(0, idx([[2, 2]]), s), [(3, 2), (1, 2)]),
    "index_add_": (lambda a, s: (a * 1).index_add_(1, idx([0, 0]), s), [(3, 2), (3, 2)]),
    "index_put_": (
        lambda a, v: a.clone().index_put_((idx([0, 0, 2]),), v, accumulate=True),
        [(3, 2), (2,)],
    ),
    "masked_fill_": (lambda a, v: (a * 1).masked_fill_(idx([1, 0]) == 1, v.sum()), [(3, 2), (2,)]),
    "index_fill_": (lambda a: (a * 1).index_fill_(0, idx([2]), 0.5), [(3, 2)]),
    "tril_": (lambda a: (a * 1).tril_(-1), [(3, 3)]),
    "triu_": (lambda a: (a * 1).triu_(1), [(3, 3)]),
    "setitem_list": (lambda a, v: _set(a.clone(), [2, 0], v * 2), [(3, 2), (2, 2)]),
    "setitem_mask": (lambda a, v: _set(a.clone(), idx([0, 1, 1]) == 1, v), [(3, 2), (2,)]),
}


def _set(t, index, value):
    t[index] = value
    return t


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_forms_gradcheck(name):
    fn, shapes = IN_PLACE[name]
    inputs = [leaf(*s, seed=k) for k, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_grad_fn_names():
    a = leaf(2, 3)
    assert torch.cat([a, a]).grad_fn.name() == "CatBackward0"
    assert torch.stack([a, a]).grad_fn.name() == "StackBackward0"
    assert a.flip(0).grad_fn.name() == "FlipBackward0"
    assert a.roll(1).grad_fn.name() == "RollBackward0"
    assert a.repeat(1, 2).grad_fn.name() == "RepeatBackward0"
    assert a.tril().grad_fn.name() == "TrilBackward0"
    assert a.diagonal().grad_fn.name() == "DiagonalBackward0"
    assert a.gather(0, idx([[0]])).grad_fn.name() == "GatherBackward0"
    assert a.index_select(0, idx([0])).grad_fn.name() == "IndexSelectBackward0"
    assert a[[0, 1]].grad_fn.name() == "IndexBackward0"
    assert a.masked_fill(a > 0, 1.0).grad_fn.name() == "MaskedFillBackward0"
    assert a.scatter(0, idx([[0]]), a).grad_fn.name() == "ScatterBackward0"
    assert a.scatter(0, idx([[0]]), 1.0).grad_fn.name() == "ScatterBackward1"
    assert a.unfold(1, 2, 1).grad_fn.name() == "UnfoldBackward0"


def np_of(t):
    return np.array(t.tolist(), dtype=np.float64).reshape(tuple(t.shape))


def test_values_against_numpy():
    a = leaf(3, 4)
    n = np_of(a)
    np.testing.assert_array_equal(np_of(a.flip(1)), n[:, ::-1])
    np.testing.assert_array_equal(np_of(a.roll((1, 2), (0, 1))), np.roll(n, (1, 2), (0, 1)))
    np.testing.assert_array_equal(np_of(a.roll(5)), np.roll(n, 5))
    np.testing.assert_array_equal(np_of(a.repeat(2, 1)), np.tile(n, (2, 1)))
    np.testing.assert_array_equal(np_of(a.tril(1)), np.tril(n, 1))
    np.testing.assert_array_equal(np_of(a.triu(-1)), np.triu(n, -1))
    np.testing.assert_array_equal(np_of(a.diagonal(-1)), np.diagonal(n, -1))
    np.testing.assert_array_equal(np_of(a[0].diag(2)), np.diag(n[0], 2))
    np.testing.assert_array_equal(np_of(a.movedim(0, 1)), np.moveaxis(n, 0, 1))
    np.testing.assert_array_equal(np_of(a.repeat_interleave(2, 1)), np.repeat(n, 2, 1))
    np.testing.assert_array_equal(np_of(a[[2, 0]]), n[[2, 0]])
    np.testing.assert_array_equal(np_of(a[:, [1, 3]]), n[:, [1, 3]])
    np.testing.assert_array_equal(np_of(a[[0, 2], [1, 3]]), n[[0, 2], [1, 3]])
    mask = a > 0
    np.testing.assert_array_equal(np_of(a[mask]), n[n > 0])
    np.testing.assert_array_equal(np_of(a.masked_select(mask)), n[n > 0])
    np.testing.assert_array_equal(np_of(a.unfold(1, 2, 2)), n.reshape(3, 2, 2))
    b = torch.zeros(2, 3, 4)
    assert b[:, [0, 1], [1, 2]].shape == (2, 2)
    assert b[[0, 1], :, [1, 2]].shape == (2, 3)
    assert b[..., [0, 1]].shape == (2, 3, 2)
    assert b[None, [1], 0].shape == (1, 1, 4)
    assert torch.nonzero(torch.tensor([[0, 1], [1, 1]])).tolist() == [[0, 1], [1, 0], [1, 1]]
    rows, cols = torch.where(torch.tensor([[0.0, 2.0], [3.0, 0.0]]))
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


@settings(max_examples=25, deadline=None)
@given(
    shapes=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    parts=st.integers(1, 3),
    data=st.data(),
)
def test_cat_and_split_against_numpy(shapes, parts, data):
    dim = data.draw(st.integers(-len(shapes), len(shapes) - 1))
    arrays = []
    for k in range(parts):
        s = list(shapes)
        s[dim] = data.draw(st.integers(0, 3))
        arrays.append(np.random.default_rng(k).normal(size=s))
    ts = [torch.tensor(x.tolist(), dtype=torch.float64).reshape(x.shape) for x in arrays]
    out = torch.cat(ts, dim)
    np.testing.assert_array_equal(np_of(out), np.concatenate(arrays, dim))
    pieces = out.split(2, dim)
    np.testing.assert_array_equal(np_of(torch.cat(pieces, dim)), np_of(out))
    if all(x.shape == arrays[0].shape for x in arrays):
        np.testing.assert_array_equal(np_of(torch.stack(ts, dim)), np.stack(arrays, dim))


@settings(max_examples=25, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    data=st.data(),
)
def test_gather_and_scatter_add_against_numpy(shape, data):
    dim = data.draw(st.integers(0, len(shape) - 1))
    x = np.random.default_rng(0).normal(size=shape)
    index = np.array(
        data.draw(
            st.lists(
                st.integers(0, shape[dim] - 1),
                min_size=int(np.prod(shape)),
                max_size=int(np.prod(shape)),
            )
        )
    ).reshape(shape)
    t = torch.tensor(x.tolist(), dtype=torch.float64).reshape(shape)
    i = idx(index.tolist())
    np.testing.assert_array_equal(np_of(t.gather(dim, i)), np.take_along_axis(x, index, dim))
    expected = np.zeros(shape)
    it = np.nditer(index, flags=["multi_index"])
    for v in it:
        pos = list(it.multi_index)
        pos[dim] = int(v)
        expected[tuple(pos)] += x[it.multi_index]
    np.testing.assert_allclose(
        np_of(torch.zeros(shape, dtype=torch.float64).scatter_add(dim, i, t)), expected
    )


def test_dtypes_and_in_place_forms():
    i = torch.arange(6).reshape(2, 3)
    assert i.flip(0).dtype == torch.int64 and i.flip(0).tolist() == [[3, 4, 5], [0, 1, 2]]
    assert torch.cat([i, i.double()]).dtype == torch.float64
    assert (
        torch.cat([torch.ones(2, dtype=torch.float32), torch.ones(1, dtype=torch.int64)]).dtype
        == torch.float32
    )
    assert i.tril().tolist() == [[0, 0, 0], [3, 4, 0]]
    assert i[[1, 0]].tolist() == [[3, 4, 5], [0, 1, 2]]
    b = i > 2
    assert b.flip(1).dtype == torch.bool
    x = torch.zeros(3, 3)
    x.masked_fill_(
        torch.eye(3).bool() if hasattr(torch, "eye") else torch.tensor([[True, False, False]] * 3),
        1.0,
    )
    y = torch.zeros(2, 3)
    y.scatter_(1, idx([[2], [0]]), 7.0)
    assert y.tolist() == [[0, 0, 7], [7, 0, 0]]
    y.index_fill_(1, idx([1]), -1)
    assert y.tolist() == [[0, -1, 7], [7, -1, 0]]
    y.index_add_(0, idx([1]), torch.ones(1, 3))
    assert y.tolist() == [[0, -1, 7], [8, 0, 1]]
    y.triu_()
    assert y.tolist() == [[0, -1, 7], [0, 0, 1]]
    y[[0, 1], [2, 2]] = torch.tensor([5.0, 6.0])
    assert y.tolist() == [[0, -1, 5], [0, 0, 6]]
    y[y < 0] = 9.0
    assert y.tolist() == [[0, 9, 5], [0, 0, 6]]
    y.index_put_((idx([0]), idx([0])), torch.tensor(2.0), accumulate=True)
    assert y[0, 0].item() == 2.0


def test_setitem_advanced_has_gradients():
    w = leaf(3)
    x = torch.zeros(4, dtype=torch.float64)
    x[[0, 2, 3]] = w * 2
    x.sum().backward()
    assert w.grad.tolist() == [2.0, 2.0, 2.0]


def test_extreme_arguments_follow_pytorch():
    x = torch.zeros(3, 4)
    assert x.diagonal(-(2**63)).shape == (0,)
    assert x.diagonal(2**63 - 1).shape == (0,)
    assert len(torch.zeros(5).split(2**62)) == 1
    assert [t.shape for t in torch.zeros(5).chunk(2**62)] == [(1,)] * 5
    assert [t.shape for t in torch.zeros(0).chunk(3)] == [(0,)] * 3
    assert x.unfold(1, 2, 2**62).shape == (3, 1, 2)
    y = torch.arange(12.0).reshape(3, 4)
    assert y.roll(2**63 - 1, 1).tolist() == y.roll(-1, 1).tolist()


def test_views_share_storage():
    a = torch.zeros(3, 4)
    a.diagonal().fill_(1.0)
    assert a.tolist()[1][1] == 1.0
    a.narrow(1, 2, 1).fill_(5.0)
    assert a[0, 2].item() == 5.0
    w = a.unfold(1, 2, 1)
    assert w.shape == (3, 3, 2)


def test_as_strided_views_storage_and_scatter_multiply():
    a = torch.arange(12.0).reshape(3, 4)
    t = a.t()
    assert t.as_strided((2, 2), (1, 2)).tolist() == [[0.0, 2.0], [1.0, 3.0]]
    assert t.as_strided((2, 2), (1, 2), 1).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    v = a.as_strided((2,), (5,), 1)
    v.fill_(-1.0)
    assert a[0, 1].item() == -1.0 and a[1, 2].item() == -1.0
    b = torch.arange(6.0, dtype=torch.float64).requires_grad_()
    b[1:].as_strided((3, 2), (1, 1)).sum().backward()
    assert b.grad.tolist() == [0.0, 1.0, 2.0, 2.0, 1.0, 0.0]
    x = torch.arange(1.0, 7.0)
    y = x.scatter(0, idx([0, 0]), torch.tensor([2.0, 3.0]), reduce="multiply")
    assert y.tolist() == [6.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    z = torch.ones(2, 2).scatter_(1, idx([[1], [1]]), 4.0, reduce="multiply")
    assert z.tolist() == [[1.0, 4.0], [1.0, 4.0]]


ERRORS = [
    (
        lambda: torch.zeros(3).as_strided((2, 2), (1,)),
        RuntimeError,
        "mismatch in length of strides and shape",
    ),
    (
        lambda: torch.zeros(3).as_strided((2,), (-1,)),
        RuntimeError,
        "as_strided: Negative strides are not supported at the moment, got strides: [-1]",
    ),
    (
        lambda: torch.zeros(3, 4).as_strided((2, 2), (1, 20)),
        RuntimeError,
        "requiring a storage size of 88 are out of bounds for storage of size 48",
    ),
    # Sizes whose storage bytes overflow an int64 name the layout, as PyTorch's
    # computeStorageNbytes (not a capped byte count).
    (
        lambda: torch.empty(2).as_strided((2**31, 2**31), (2**31, 1)),
        RuntimeError,
        "Storage size calculation overflowed with sizes=[2147483648, 2147483648] and "
        "strides=[2147483648, 1]",
    ),
    (
        lambda: torch.empty(2).as_strided((2**61,), (2,)),
        RuntimeError,
        "Storage size calculation overflowed with sizes=[2305843009213693952] and strides=[2]",
    ),
    (
        lambda: torch.empty(2).as_strided_((2,), (1,), 2**62),
        RuntimeError,
        "Storage size calculation overflowed with sizes=[2] and strides=[1]",
    ),
    (lambda: torch.zeros(3).as_strided((1,), (1,), -1), RuntimeError, "invalid storage offset -1"),
    (
        lambda: torch.zeros(3, requires_grad=True).scatter(
            0, idx([0]), torch.ones(1), reduce="multiply"
        ),
        RuntimeError,
        "derivative for aten::scatter is not implemented",
    ),
    (
        lambda: torch.zeros(3).scatter(0, idx([0]), 1.0, reduce="max"),
        RuntimeError,
        "reduce argument must be either add or multiply",
    ),
    (lambda: torch.cat([]), ValueError, "expected a non-empty list of Tensors"),
    (
        lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)]),
        RuntimeError,
        "Sizes of tensors must match except in dimension 0",
    ),
    (
        lambda: torch.cat([torch.zeros(2, 3), torch.zeros(3)]),
        RuntimeError,
        "Tensors must have same number of dimensions",
    ),
    (
        lambda: torch.cat([torch.tensor(1.0)]),
        RuntimeError,
        "zero-dimensional tensor (at position 0) cannot be concatenated",
    ),
    (lambda: torch.cat([torch.zeros(2)], 1), IndexError, "Dimension out of range"),
    (
        lambda: torch.stack([torch.zeros(2), torch.zeros(3)]),
        RuntimeError,
        "stack expects each tensor to be equal size",
    ),
    (
        lambda: torch.zeros(3).split(0),
        RuntimeError,
        "split_size can only be 0 if dimension size is 0",
    ),
    (
        lambda: torch.zeros(3).split([1, 1]),
        RuntimeError,
        "split_with_sizes expects split_sizes to sum exactly to 3",
    ),
    (lambda: torch.zeros(3).chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0"),
    (
        lambda: torch.zeros(3).narrow(0, 2, 2),
        RuntimeError,
        "start (2) + length (2) exceeds dimension size (3).",
    ),
    (
        lambda: torch.zeros(3).flip(0, 0),
        RuntimeError,
        "dim 0 appears multiple times in the list of dims",
    ),
    (
        lambda: torch.zeros(2, 3).repeat(2),
        RuntimeError,
        "Number of dimensions of repeat dims can not be smaller",
    ),
    (
        lambda: torch.zeros(3).tril(),
        RuntimeError,
        "tril: input tensor must have at least 2 dimensions",
    ),
    (
        lambda: torch.zeros(3, 3).diagonal(0, 1, 1),
        RuntimeError,
        "diagonal dimensions cannot be identical 1, 1",
    ),
    (
        lambda: torch.zeros(2, 2, 2).diag(),
        RuntimeError,
        "diag(): Supports 1D or 2D tensors. Got 3D",
    ),
    (
        lambda: torch.zeros(3).unfold(0, 4, 1),
        RuntimeError,
        "maximum size for tensor at dimension 0 is 3 but size is 4",
    ),
    (lambda: torch.zeros(3).index_select(0, idx([3])), IndexError, "index out of range in self"),
    (
        lambda: torch.zeros(3).gather(0, idx([5])),
        RuntimeError,
        "index 5 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda: torch.zeros(3).gather(0, torch.tensor([0.0])),
        RuntimeError,
        "gather(): Expected dtype int32/int64 for index",
    ),
    (
        lambda: torch.zeros(2, 3).gather(1, idx([0])),
        RuntimeError,
        "Index tensor must have the same number of dimensions",
    ),
    (
        lambda: torch.zeros(3).scatter(0, idx([-4]), 1.0),
        RuntimeError,
        "index -4 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda: torch.zeros(3).take(idx([6])),
        IndexError,
        "out of range: tried to access index 6 on a tensor of 3 elements.",
    ),
    (
        lambda: torch.zeros(3)[[3]],
        IndexError,
        "index 3 is out of bounds for dimension 0 with size 3",
    ),
    (
        lambda: torch.zeros(3)[torch.tensor([True, False])],
        IndexError,
        "The shape of the mask [2] at index 0 does not match",
    ),
    (
        lambda: torch.zeros(3).masked_fill(torch.zeros(3), 1.0),
        RuntimeError,
        "only supports boolean masks",
    ),
    (
        lambda: torch.zeros(3).movedim((0, 0), (0, 1)),
        RuntimeError,
        "movedim: repeated dim in `source`",
    ),
    (
        lambda: torch.zeros(2, 3).index_add(0, idx([0]), torch.zeros(1, 2)),
        RuntimeError,
        "source tensor shape must match self tensor shape",
    ),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_pytorch(case):
    fn, exc, phrase = ERRORS[case]
    with pytest.raises(exc) as info:
        fn()
    assert phrase in str(info.value)
