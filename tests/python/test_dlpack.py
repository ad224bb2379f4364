"""DLPack both ways (Note [DLPack]): zero-copy exchange with numpy, strides, capsule
lifetimes and consumption, and PyTorch's errors."""

from __future__ import annotations

import gc

import numpy as np
import pytest
import rustgrad as torch


def test_numpy_from_rustgrad_shares_memory() -> None:
    t = torch.arange(6, dtype=torch.float64)
    a = np.from_dlpack(t)
    assert a.dtype == np.float64 and a.tolist() == [0, 1, 2, 3, 4, 5]
    a[0] = 42.0
    assert t[0].item() == 42.0
    t.add_(1)
    assert a[0] == 43.0


@pytest.mark.parametrize("dtype, np_dtype", [(torch.float32, np.float32), (torch.int64, np.int64)])
def test_dtypes_round_trip(dtype: object, np_dtype: object) -> None:
    t = torch.arange(4, dtype=dtype)
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype and a.tolist() == [0, 1, 2, 3]
    back = torch.from_dlpack(a)
    assert back.dtype == dtype and back.tolist() == [0, 1, 2, 3]


def test_rustgrad_from_numpy_shares_memory() -> None:
    a = np.arange(6.0)
    t = torch.from_dlpack(a)
    assert t.dtype == torch.float64 and t.tolist() == a.tolist()
    a[1] = -5.0
    assert t[1].item() == -5.0
    t[2] = 7.0
    assert a[2] == 7.0


def test_non_contiguous_views_keep_their_strides() -> None:
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = np.from_dlpack(t.t())
    assert a.shape == (4, 3) and a.strides == (4, 16)
    assert a.tolist() == t.t().tolist()
    a2 = np.from_dlpack(t[:, 1::2])
    assert a2.tolist() == t[:, 1::2].tolist()
    x = np.arange(24.0).reshape(4, 6)[::2, 1::3]
    y = torch.from_dlpack(x)
    assert y.tolist() == x.tolist() and y.stride() == (12, 3)
    x[0, 0] = 100.0
    assert y[0, 0].item() == 100.0


def test_lifetimes() -> None:
    t = torch.arange(5, dtype=torch.float64)
    a = np.from_dlpack(t)
    del t
    gc.collect()
    assert a.tolist() == [0, 1, 2, 3, 4]
    n = np.arange(4.0)
    r = torch.from_dlpack(n)
    del n
    gc.collect()
    assert r.tolist() == [0, 1, 2, 3]
    # An unconsumed capsule frees its tensor when collected.
    cap = torch.ones(3).__dlpack__()
    del cap
    gc.collect()


def test_capsules_and_versions() -> None:
    t = torch.arange(3, dtype=torch.float64)
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    assert torch.from_dlpack(versioned).tolist() == [0, 1, 2]
    x = torch.from_dlpack(legacy)
    assert x.tolist() == [0, 1, 2]
    with pytest.raises(RuntimeError, match="can be consumed only once"):
        torch.from_dlpack(legacy)
    assert t.__dlpack_device__() == (1, 0)
    # A rustgrad tensor round trip shares memory.
    y = torch.from_dlpack(t)
    y[0] = 9.0
    assert t[0].item() == 9.0


def test_copy_and_bool() -> None:
    t = torch.arange(3, dtype=torch.float64)
    c = np.from_dlpack(t, copy=True)
    c[0] = 5.0
    assert t[0].item() == 0.0
    b = torch.tensor([True, False, True])
    a = np.from_dlpack(b)
    assert a.dtype == np.bool_ and a.tolist() == [True, False, True]
    back = torch.from_dlpack(np.array([True, False]))
    assert back.dtype == torch.bool and back.tolist() == [True, False]
    ro = np.arange(3.0)
    ro.flags.writeable = False
    assert torch.from_dlpack(ro).tolist() == [0, 1, 2]


def test_errors() -> None:
    with pytest.raises(
        BufferError, match="Can't export tensors that require gradient, use tensor.detach()"
    ):
        torch.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(AssertionError, match="stream should be None on cpu"):
        torch.ones(2).__dlpack__(stream=1)
    with pytest.raises(BufferError):
        torch.ones(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(RuntimeError, match="dtype"):
        torch.from_dlpack(np.arange(3, dtype=np.complex64))
    with pytest.raises(RuntimeError, match="invalid capsule"):
        torch.from_dlpack(1)
    with pytest.raises(ValueError, match="negative strides"):
        torch.from_dlpack(np.arange(6.0)[::-1])
    assert torch.from_dlpack(np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize(
    "dtype, np_dtype",
    [
        ("uint8", np.uint8),
        ("int8", np.int8),
        ("int16", np.int16),
        ("int32", np.int32),
        ("float16", np.float16),
    ],
)
def test_narrow_dtypes_round_trip_zero_copy(dtype, np_dtype):
    t = torch.tensor([1, 2, 3], dtype=getattr(torch, dtype))
    a = np.from_dlpack(t)
    assert a.dtype == np_dtype
    a[0] = 7
    assert t.tolist()[0] == 7
    b = np.arange(4, dtype=np_dtype)
    u = torch.from_dlpack(b)
    assert u.dtype == getattr(torch, dtype)
    b[1] = 9
    assert u.tolist() == [0, 9, 2, 3]
