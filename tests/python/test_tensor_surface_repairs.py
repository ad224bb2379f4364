"""Tensor-surface repairs of issue 19 (items 10, 12 and 16): deleting `.data`,
`detach_()` on views, the version counter kept by `x.data = y`, `_base` identity of
every view, `Tensor.new`, `data_ptr()` and `numpy(force=True)`.

The expectations are PyTorch 2.15's behaviour, checked by running the same programs on
it: exception types and key phrases, `_version` sequences, `_base` identity, shapes and
dtypes. Numbers here are semantics (counts, offsets, identities), not computed values.
"""

import gc
import re

import numpy as np
import pytest
import rustgrad as torch

DETACH_VIEW = re.escape("Can't detach views in-place. Use detach() instead. If you are using")

# ----- item 10: del x.data, detach_() on views, x.data = y and version counters -----


def test_del_data_raises_runtime_error_and_leaves_the_tensor_alone():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Deleting tensor data is not allowed"):
        del x.data
    assert x.tolist() == [1.0, 1.0, 1.0] and x.requires_grad


def test_del_requires_grad_raises_runtime_error():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires_grad must be a bool"):
        del x.requires_grad
    assert x.requires_grad


def _views():
    """(name, base, view) for views PyTorch refuses to detach in place."""
    plain = torch.ones(3)
    nonleaf = torch.ones(3, requires_grad=True) * 1
    leaf = torch.ones(4, requires_grad=True)
    with torch.no_grad():
        under_no_grad = leaf[1:]
    return [
        ("slice of a plain tensor", plain, plain[1:]),
        ("view() of a plain tensor", plain, plain.view(3)),
        ("alias x[...]", plain, plain[...]),
        ("select of a non-leaf", nonleaf, nonleaf[0]),
        ("transpose of a non-leaf", nonleaf, nonleaf.unsqueeze(0).t()),
        ("view made under no_grad", leaf, under_no_grad),
        ("split piece", nonleaf, nonleaf.split(1)[0]),
    ]


@pytest.mark.parametrize("index", range(7))
def test_detach_inplace_on_a_view_raises_and_changes_nothing(index):
    name, base, view = _views()[index]
    requires_grad, grad_fn = view.requires_grad, view.grad_fn
    with pytest.raises(RuntimeError, match=DETACH_VIEW):
        view.detach_()
    assert view.requires_grad == requires_grad, name
    assert view.grad_fn is grad_fn or type(view.grad_fn) is type(grad_fn), name
    assert view._base is base, name


def test_detach_inplace_on_a_base_with_views_and_on_a_non_leaf_works():
    x = torch.ones(3)
    v = x[1:]
    assert x.detach_() is x
    assert v._base is x
    y = torch.ones(2, requires_grad=True) * 2
    y.detach_()
    assert (y.requires_grad, y.is_leaf, y.grad_fn) == (False, True, None)


def test_set_data_keeps_the_version_counter_shared_with_earlier_views():
    # PyTorch 2.15: (1, 1), (1, 1), (2, 2) with x == [2, 2, 2] and xz == [1, 1], (3, 3).
    x = torch.zeros(3)
    xz = x[1:]
    x.add_(1)
    assert (x._version, xz._version) == (1, 1)
    x.data = torch.ones(3)
    assert (x._version, xz._version) == (1, 1)
    x.add_(1)
    assert (x._version, xz._version) == (2, 2)
    assert x.tolist() == [2.0, 2.0, 2.0] and xz.tolist() == [1.0, 1.0]
    xz.add_(1)
    assert (x._version, xz._version) == (3, 3)


def test_set_data_source_keeps_its_own_counter():
    # PyTorch 2.15: y stays at version 1 while x goes from 3 to 4; x shares y's elements.
    x = torch.zeros(3)
    xz = x[1:]
    for _ in range(3):
        x.add_(1)
    y = torch.ones(3)
    y.add_(1)
    x.data = y
    x.add_(1)
    assert (y._version, x._version, xz._version) == (1, 4, 4)
    assert y.tolist() == [3.0, 3.0, 3.0]
    y.add_(1)
    assert (y._version, x._version) == (2, 4)


def test_set_data_twice_and_detach_keep_sharing_the_counter():
    x = torch.zeros(3)
    xz = x[1:]
    x.data = torch.ones(3)
    x.data = torch.ones(2)
    x.add_(1)
    assert (x._version, xz._version) == (1, 1)
    d = x.detach()
    d.add_(1)
    assert (x._version, xz._version, d._version) == (2, 2, 2)
    # x.data has a counter of its own, as in PyTorch.
    x.data.add_(1)
    assert x._version == 2


def test_set_data_then_write_invalidates_what_a_view_saved():
    # The view and x share the counter, so a write through x after x.data = y is seen
    # by a graph that saved the earlier view (PyTorch raises the same error).
    w = torch.ones(2, requires_grad=True)
    x = torch.zeros(3)
    v = x[1:]
    out = (w * v).sum()
    x.data = torch.ones(3)
    x.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


# ----- item 12: _base identity -----


def _leaf_rg():
    return torch.ones(2, 3, requires_grad=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b[1:],
        lambda b: b[0],
        lambda b: b[...],
        lambda b: b.view(6),
        lambda b: b.view_as(b),
        lambda b: b.reshape(3, 2),
        lambda b: b.flatten(),
        lambda b: b.t(),
        lambda b: b.T,
        lambda b: b.mT,
        lambda b: b.transpose(0, 1),
        lambda b: b.swapaxes(0, 1),
        lambda b: b.permute(1, 0),
        lambda b: b.movedim(0, 1),
        lambda b: b.unsqueeze(0),
        lambda b: b.unsqueeze(0).squeeze(0),
        lambda b: b[:1].expand(4, 3),
        lambda b: b.narrow(1, 0, 2),
        lambda b: b.select(1, 2),
        lambda b: b.diagonal(),
        lambda b: b.unfold(1, 2, 1),
        lambda b: b.as_strided((2,), (1,)),
        lambda b: b.unflatten(1, (3, 1)),
        lambda b: b.split(1)[1],
        lambda b: b.chunk(2)[0],
        lambda b: b.unbind()[1],
        lambda b: b[1:][0][1:],
        lambda b: b.t()[1].unsqueeze(0),
    ],
)
@pytest.mark.parametrize("kind", ["plain", "leaf requiring grad", "non-leaf", "no_grad"])
def test_base_is_the_root_base_object(make, kind):
    # PyTorch 2.15: `_base is b` for every view op, whatever b is, views of views
    # included (the root base).
    if kind == "plain":
        b = torch.ones(2, 3)
    elif kind == "leaf requiring grad":
        b = _leaf_rg()
    elif kind == "non-leaf":
        b = _leaf_rg() * 1
    else:
        b = _leaf_rg()
    if kind == "no_grad":
        with torch.no_grad():
            v = make(b)
    else:
        v = make(b)
    assert v._base is b
    assert v._is_view()
    assert v._base is v._base


def test_base_of_non_views_is_none():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    for t in (x, y, x.detach(), x.data, y.clone(), x.view(x.dtype), x.contiguous()):
        assert t._base is None
        assert not t._is_view()


def test_base_of_views_made_from_functional_forms():
    b = torch.ones(2, 3)
    assert torch.transpose(b, 0, 1)._base is b
    assert torch.narrow(b, 0, 0, 1)._base is b
    assert all(p._base is b for p in torch.split(b, 1))


def test_base_object_identity_survives_a_collection_while_alive():
    b = torch.ones(3) * 2
    v = b[1:]
    w = v[1:]
    gc.collect()
    assert v._base is b and w._base is b
    # Other handles of b's data are other objects, as in PyTorch.
    assert v._base is not b.detach()


def test_base_of_a_view_of_a_dropped_base_is_a_tensor_of_its_data():
    b = torch.arange(3.0)
    v = b[1:]
    del b
    gc.collect()
    base = v._base
    assert base is v._base
    assert base.tolist() == [0.0, 1.0, 2.0]


# ----- item 16: Tensor.new -----


def test_new_without_arguments_is_empty_with_the_dtype():
    t = torch.ones(2, dtype=torch.float64)
    n = t.new()
    assert (n.shape, n.dtype, n.requires_grad) == (torch.Size([0]), torch.float64, False)


@pytest.mark.parametrize(
    ("args", "kwargs", "shape"),
    [
        ((2, 3), {}, (2, 3)),
        ((3,), {}, (3,)),
        ((0,), {}, (0,)),
        ((0, 3), {}, (0, 3)),
        ((torch.Size([2, 3]),), {}, (2, 3)),
        ((np.int64(2), 3), {}, (2, 3)),
        ((np.array(3),), {}, (3,)),
        ((torch.tensor(2), 3), {}, (2, 3)),
        ((2, True), {}, (2, 1)),
        ((), {"size": (2,)}, (2,)),
        ((), {"size": [2, 3]}, (2, 3)),
        ((2,), {"device": "cpu"}, (2,)),
        ((2,), {"device": None}, (2,)),
    ],
)
def test_new_with_sizes(args, kwargs, shape):
    t = torch.ones(1, dtype=torch.float64, requires_grad=True)
    n = t.new(*args, **kwargs)
    assert tuple(n.shape) == shape
    assert n.dtype == torch.float64
    assert not n.requires_grad and n.is_leaf


@pytest.mark.parametrize(
    ("data", "dtype", "expected"),
    [
        ([1, 2], torch.float64, [1.0, 2.0]),
        ([[1, 2]], torch.float64, [[1.0, 2.0]]),
        ((2, 3), torch.float64, [2.0, 3.0]),  # a tuple is data, not a size
        ((2.0, 3.0), torch.float32, [2.0, 3.0]),
        ([], torch.float64, []),
        ([1.5], torch.int64, [1]),
        ([1, 0], torch.bool, [True, False]),
        (range(3), torch.float32, [0.0, 1.0, 2.0]),
        (np.array([1.0, 2.0]), torch.float32, [1.0, 2.0]),
        (np.array([3]), torch.float32, [3.0]),
        ([torch.tensor(1.0), torch.tensor(2.0)], torch.float32, [1.0, 2.0]),
    ],
)
def test_new_with_data_copies_it_with_the_dtype(data, dtype, expected):
    t = torch.ones(1, dtype=dtype)
    n = t.new(data)
    assert n.dtype == dtype
    assert n.tolist() == expected
    assert not n.requires_grad


def test_new_with_a_tensor_is_an_alias_view():
    o = torch.arange(3.0, requires_grad=True)
    n = o.new(o)
    assert n is not o and n._base is o and n._is_view()
    assert n.data_ptr() == o.data_ptr()
    assert n.requires_grad and not n.is_leaf
    assert type(n.grad_fn).__name__ == "AliasBackward0"
    with torch.no_grad():
        m = torch.ones(1).new(o)
    assert m.grad_fn is None and m.requires_grad and m._base is o


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "phrase"),
    [
        (
            (torch.ones(1),),
            {},
            TypeError,
            "expected TensorOptions(dtype=double, device=cpu, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), "
            "memory_format=(nullopt)) (got TensorOptions(dtype=float, device=cpu",
        ),
        ((torch.arange(3),), {}, TypeError, "(got TensorOptions(dtype=long int, device=cpu"),
        (
            (torch.ones(1, dtype=torch.float64),),
            {"device": "cpu"},
            RuntimeError,
            "Legacy tensor new of the form tensor.new(tensor, device=device) is not supported",
        ),
        ((2.5,), {}, TypeError, "new(): data must be a sequence (got float)"),
        ((True,), {}, TypeError, "new(): data must be a sequence (got bool)"),
        ((None,), {}, TypeError, "new(): data must be a sequence (got NoneType)"),
        (({1: 2},), {}, TypeError, "new(): data must be a sequence (got dict)"),
        ((np.float64(2.0),), {}, TypeError, "data must be a sequence (got numpy.float64)"),
        (("a",), {}, TypeError, "new(): invalid data type 'str'"),
        (
            (2, 3.0),
            {},
            TypeError,
            "new(): argument 'size' failed to unpack the object at pos 2 with error "
            '"type must be tuple of ints,but got float"',
        ),
        ((2.0, 3), {}, TypeError, "new() received an invalid combination of arguments"),
        ((2,), {"dtype": torch.float32}, TypeError, "new() received an invalid combination"),
        ((2,), {"requires_grad": True}, TypeError, "new() received an invalid combination"),
        ((2,), {"size": (2,)}, TypeError, "new() received an invalid combination"),
        ((-1,), {}, RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
        (
            (2,),
            {"device": "cuda"},
            RuntimeError,
            "legacy constructor expects device type: cpu but device type: cuda was passed",
        ),
        (([[1, 2], [3]],), {}, ValueError, "expected sequence of length 2 at dim 1 (got 1)"),
    ],
)
def test_new_refuses_what_pytorch_refuses(args, kwargs, error, phrase):
    t = torch.ones(1, dtype=torch.float64)
    with pytest.raises(error) as info:
        t.new(*args, **kwargs)
    assert phrase in str(info.value)


# ----- item 16: data_ptr -----


@pytest.mark.parametrize(
    ("dtype", "itemsize"),
    [(torch.float32, 4), (torch.float64, 8), (torch.int16, 2), (torch.bool, 1)],
)
def test_data_ptr_of_views_differs_by_offset_times_itemsize(dtype, itemsize):
    x = torch.zeros(3, 4, dtype=dtype)
    base = x.data_ptr()
    assert base != 0
    assert x[1:].data_ptr() - base == 4 * itemsize
    assert x[:, 2].data_ptr() - base == 2 * itemsize
    assert x[2, 3].data_ptr() - base == 11 * itemsize
    assert x.t().data_ptr() == base
    assert x[0].expand(5, 4).data_ptr() == base
    # PyTorch gives no address for a tensor without elements, even inside a storage.
    assert x.view(12)[12:].data_ptr() == 0
    assert x[:, 1:1].data_ptr() == 0


def test_data_ptr_is_numpy_address_and_zero_without_elements():
    x = torch.arange(6.0).view(2, 3)
    for t in (x, x[1:], x[:, 1], x.t()):
        assert t.data_ptr() == t.numpy().__array_interface__["data"][0]
    assert torch.empty(0).data_ptr() == 0
    assert torch.ones(2, requires_grad=True).data_ptr() != 0
    assert x.detach().data_ptr() == x.data_ptr() == x.data.data_ptr()
    assert x.clone().data_ptr() != x.data_ptr()
    a = np.arange(4.0)
    assert torch.from_numpy(a)[1:].data_ptr() == a.__array_interface__["data"][0] + 8
    with pytest.raises(TypeError):
        x.data_ptr(0)


def test_data_ptr_follows_set_data():
    x = torch.zeros(3)
    y = torch.ones(5)
    x.data = y[2:]
    assert x.data_ptr() == y.data_ptr() + 8


# ----- item 16: numpy(force=True) -----


def test_numpy_force_shares_memory_of_a_tensor_that_requires_grad():
    x = torch.arange(3.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy(force=False)
    a = x.numpy(force=True)
    assert a.__array_interface__["data"][0] == x.data_ptr()
    assert a.tolist() == [0.0, 1.0, 2.0]
    with torch.no_grad():
        x.add_(1)
    assert a.tolist() == [1.0, 2.0, 3.0]
    assert not x.grad_fn and x.requires_grad


def test_numpy_force_on_plain_views_and_non_leaves():
    y = torch.ones(2, 3, requires_grad=True) * 2
    a = y.t().numpy(force=True)
    assert a.shape == (3, 2) and a.strides == (4, 12)
    assert a.__array_interface__["data"][0] == y.data_ptr()
    e = torch.ones(2).expand(3, 2).numpy(force=True)
    assert e.strides == (0, 4)
    assert torch.ones(2, dtype=torch.float16).numpy(force=True).tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    ("call", "error", "phrase"),
    [
        (lambda x: x.numpy(force=1), TypeError, "numpy(): argument 'force' must be bool, not int"),
        (
            lambda x: x.numpy(force=None),
            TypeError,
            "numpy(): argument 'force' must be bool, not NoneType",
        ),
        (lambda x: x.numpy(True), TypeError, "positional argument"),
        (
            lambda x: torch.ones(1, dtype=torch.bfloat16).numpy(force=True),
            TypeError,
            "Got unsupported ScalarType BFloat16",
        ),
    ],
)
def test_numpy_force_argument_errors(call, error, phrase):
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(error) as info:
        call(x)
    assert phrase in str(info.value)
