"""from_numpy / numpy() / np.asarray / as_tensor share memory as PyTorch's do
(Note [Shared memory]). Expected values are numpy's own."""

import gc

import numpy as np
import pytest
import rustgrad as torch


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_from_numpy_shares_both_ways(dtype):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    t = torch.from_numpy(a)
    assert (
        t.dtype
        is {np.float32: torch.float32, np.float64: torch.float64, np.int64: torch.int64}[dtype]
    )
    a[0, 0] = 100
    assert t[0, 0].item() == 100
    t[1, 2] = -5
    assert a[1, 2] == -5
    t.add_(1)
    np.testing.assert_array_equal(a, np.array([[101, 2, 3], [4, 5, -4]], dtype=dtype))


def test_from_numpy_of_a_strided_array_keeps_its_layout():
    base = np.arange(12.0).reshape(3, 4)
    view = base[:, ::2].T  # non-contiguous, transposed
    t = torch.from_numpy(view)
    assert t.shape == view.shape
    assert t.stride() == tuple(s // 8 for s in view.strides)
    np.testing.assert_array_equal(np.array(t.tolist()), view)
    base[2, 2] = -1.0
    assert t[1, 2].item() == -1.0


def test_the_tensor_keeps_the_array_alive():
    a = np.arange(4.0)
    t = torch.from_numpy(a)
    del a
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert (t * 2).sum().item() == 12.0


def test_numpy_shares_both_ways_and_keeps_the_storage_alive():
    x = torch.arange(6.0).reshape(2, 3)
    n = x.numpy()
    n[0, 1] = 7.0
    assert x[0, 1].item() == 7.0
    x.mul_(2)
    np.testing.assert_array_equal(n, np.array([[0, 14, 4], [6, 8, 10]], dtype=np.float32))
    row = x[1].numpy()
    row[0] = -1.0
    assert x[1, 0].item() == -1.0
    del x
    gc.collect()
    assert n[1, 0] == -1.0 and n.sum() == 35.0


def test_numpy_of_views_has_their_strides():
    x = torch.arange(6.0, dtype=torch.float64).reshape(2, 3)
    n = x.t().numpy()
    assert n.shape == (3, 2) and n.strides == (8, 24)
    np.testing.assert_array_equal(n, np.arange(6.0).reshape(2, 3).T)
    e = torch.ones(1).expand(3).numpy()
    assert e.strides == (0,) and e.tolist() == [1.0, 1.0, 1.0]


def test_asarray_shares_and_copy_or_dtype_copies():
    x = torch.zeros(3)
    shared = np.asarray(x)
    shared[0] = 5.0
    assert x[0].item() == 5.0
    copied = np.array(x, copy=True)
    copied[1] = 9.0
    assert x[1].item() == 0.0
    as_f64 = np.asarray(x, dtype=np.float64)
    as_f64[2] = 3.0
    assert x[2].item() == 0.0 and as_f64.dtype == np.float64


def test_copied_cases():
    # bool arrays are copied (a numpy bool array may hold a byte that is not a valid
    # bool, e.g. from np.frombuffer); int32 keeps its dtype, as PyTorch; read-only arrays
    # are copied.
    b = np.array([True, False])
    tb = torch.from_numpy(b)
    b[1] = True
    assert tb.tolist() == [True, False]
    i = np.array([1, 2], dtype=np.int32)
    assert torch.from_numpy(i).dtype is torch.int32
    ro = np.arange(3.0)
    ro.flags.writeable = False
    t = torch.from_numpy(ro)
    t.add_(1.0)
    assert ro.tolist() == [0.0, 1.0, 2.0] and t.tolist() == [1.0, 2.0, 3.0]


def test_negative_strides_raise_as_pytorch():
    with pytest.raises(
        ValueError, match="At least one stride in the given numpy array is negative"
    ):
        torch.from_numpy(np.arange(3.0)[::-1])


def test_as_tensor():
    a = np.arange(3.0)
    t = torch.as_tensor(a)
    a[0] = 4.0
    assert t[0].item() == 4.0
    x = torch.ones(2)
    assert torch.as_tensor(x) is x
    assert torch.as_tensor(x, dtype=torch.float64).dtype is torch.float64
    assert torch.as_tensor([1, 2]).dtype is torch.int64


def test_autograd_through_a_shared_tensor():
    a = np.array([1.0, 2.0, 3.0])
    w = torch.from_numpy(a).requires_grad_()
    (w * w).sum().backward()
    assert w.grad.tolist() == [2.0, 4.0, 6.0]
    with torch.no_grad():
        w.sub_(0.5 * w.grad)
    np.testing.assert_array_equal(a, [0.0, 0.0, 0.0])
    c = w.detach().clone()
    a[0] = 8.0
    assert c[0].item() == 0.0  # clone owns its elements


def test_large_shared_arrays_run_without_the_gil():
    a = np.ones(1 << 18)
    t = torch.from_numpy(a)
    assert (t * 2).sum().item() == float(2 << 18)


def test_numpy_of_a_huge_expanded_view_is_a_view_not_a_copy():
    # PyTorch: .numpy() of an expanded tensor views its one element (strides 0).
    n = torch.ones(1).expand(2**20, 2**20).numpy()
    assert n.shape == (2**20, 2**20) and n.strides == (0, 0) and n[12345, 678] == 1.0
    shared = np.array(torch.ones(2), copy=False)
    assert shared.tolist() == [1.0, 1.0]


def test_numpy_of_a_bool_tensor_shares_memory():
    # PyTorch shares a bool tensor's memory too (numpy's bool is one byte 0/1, as the
    # storage's): the values below are what PyTorch 2.15 gives.
    t = torch.zeros(3, dtype=torch.bool)
    a = t.numpy()
    assert a.dtype == np.bool_
    a[0] = True
    assert t[0].item() is True
    t[2] = True
    assert a.tolist() == [True, False, True]
    x = torch.tensor([[True, False], [False, True]]).t()
    b = x.numpy()
    assert b.strides == (1, 2) and not b.flags.c_contiguous
    b[0, 1] = True
    assert x.tolist() == [[True, True], [False, True]]
    c = np.asarray(t)
    c[1] = True
    assert t.tolist() == [True, True, True]
    assert (t.sum().item(), t.logical_not().tolist()) == (3, [False, False, False])
