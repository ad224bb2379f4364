"""Pooling and normalisation functionals: float64 gradcheck and gradgradcheck of each,
grad_fn names, numpy references, NaN propagation, running statistics, PyTorch's
errors for bad arguments, and bitwise determinism across thread counts. (PyTorch's
own values are checked in test_nn_poolnorm_vectors.py.)"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck


def _rand(*shape: int, seed: int = 0, requires_grad: bool = True) -> Any:
    rng = np.random.default_rng(seed)
    t = rustgrad.tensor(rng.normal(size=shape).tolist(), dtype=rustgrad.float64)
    return t.requires_grad_(requires_grad)


def _pos(*shape: int, seed: int = 1) -> Any:
    rng = np.random.default_rng(seed)
    return rustgrad.tensor(rng.uniform(0.5, 2.0, size=shape).tolist(), dtype=rustgrad.float64)


# ----------------------------------------------------------------- gradcheck, gradgradcheck

GRADCHECKED: list[tuple[str, Callable[..., Any], Callable[[], tuple[Any, ...]]]] = [
    ("max_pool2d", lambda x: F.max_pool2d(x, 3, 2, 1), lambda: (_rand(2, 2, 5, 6),)),
    (
        "max_pool2d_dil_ceil",
        lambda x: F.max_pool2d(x, 2, 2, 1, 2, True),
        lambda: (_rand(1, 2, 6, 5),),
    ),
    ("max_pool1d", lambda x: F.max_pool1d(x, 3, 2, 1), lambda: (_rand(2, 3, 8),)),
    ("avg_pool2d", lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), lambda: (_rand(2, 2, 6, 5),)),
    (
        "avg_pool2d_div",
        lambda x: F.avg_pool2d(x, 2, 1, divisor_override=3),
        lambda: (_rand(1, 2, 4, 4),),
    ),
    ("avg_pool1d", lambda x: F.avg_pool1d(x, 3, 2, 1), lambda: (_rand(2, 3, 7),)),
    (
        "adaptive_avg_pool2d",
        lambda x: F.adaptive_avg_pool2d(x, (3, 2)),
        lambda: (_rand(2, 2, 7, 5),),
    ),
    ("adaptive_avg_pool1d", lambda x: F.adaptive_avg_pool1d(x, 3), lambda: (_rand(2, 7),)),
    (
        "adaptive_max_pool2d",
        lambda x: F.adaptive_max_pool2d(x, (3, 2)),
        lambda: (_rand(2, 2, 7, 5),),
    ),
    (
        "max_unpool2d",
        lambda x: F.max_unpool2d(
            x, F.max_pool2d(_rand(1, 2, 4, 4, seed=5), 2, return_indices=True)[1], 2
        ),
        lambda: (_rand(1, 2, 2, 2),),
    ),
    (
        "batch_norm_train",
        lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
        lambda: (_rand(4, 3, 2, 2), _rand(3, seed=2), _rand(3, seed=3)),
    ),
    (
        "batch_norm_train_2d",
        lambda x, w: F.batch_norm(x, None, None, w, training=True, eps=1e-3),
        lambda: (_rand(5, 3), _rand(3, seed=2)),
    ),
    (
        "batch_norm_eval",
        lambda x, w, b: F.batch_norm(x, _rand(3, seed=7, requires_grad=False), _pos(3), w, b),
        lambda: (_rand(4, 3, 2), _rand(3, seed=2), _rand(3, seed=3)),
    ),
    (
        "layer_norm",
        lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
        lambda: (_rand(2, 3, 4), _rand(3, 4, seed=2), _rand(3, 4, seed=3)),
    ),
    ("layer_norm_plain", lambda x: F.layer_norm(x, (5,)), lambda: (_rand(3, 5),)),
    (
        "group_norm",
        lambda x, w, b: F.group_norm(x, 2, w, b),
        lambda: (_rand(2, 4, 3), _rand(4, seed=2), _rand(4, seed=3)),
    ),
    ("instance_norm", lambda x: F.instance_norm(x), lambda: (_rand(2, 3, 4),)),
    ("rms_norm", lambda x, w: F.rms_norm(x, (4,), w), lambda: (_rand(3, 4), _rand(4, seed=2))),
    (
        "local_response_norm",
        lambda x: F.local_response_norm(x, 3, alpha=0.1),
        lambda: (_rand(2, 4, 3),),
    ),
    ("normalize", lambda x: F.normalize(x, dim=1), lambda: (_rand(3, 4),)),
]


@pytest.mark.parametrize("name,fn,make", GRADCHECKED, ids=[g[0] for g in GRADCHECKED])
def test_gradcheck(name: str, fn: Callable[..., Any], make: Callable[[], tuple[Any, ...]]) -> None:
    assert gradcheck(fn, make())


@pytest.mark.parametrize("name,fn,make", GRADCHECKED, ids=[g[0] for g in GRADCHECKED])
def test_gradgradcheck(
    name: str, fn: Callable[..., Any], make: Callable[[], tuple[Any, ...]]
) -> None:
    assert gradgradcheck(fn, make())


# ------------------------------------------------------------------------ grad_fn names


def test_grad_fn_names_are_pytorchs() -> None:
    x = _rand(2, 3, 6, 6)
    rm, rv = rustgrad.zeros(3, dtype=rustgrad.float64), rustgrad.ones(3, dtype=rustgrad.float64)
    names = {
        "MaxPool2DWithIndicesBackward0": F.max_pool2d(x, 2),
        "SqueezeBackward1": F.max_pool1d(x[0], 2),
        "AvgPool2DBackward0": F.avg_pool2d(x, 2),
        "AdaptiveAvgPool2DBackward0": F.adaptive_avg_pool2d(x, 2),
        "AdaptiveMaxPool2DBackward0": F.adaptive_max_pool2d(x, 2),
        "NativeBatchNormBackward0": F.batch_norm(x, rm, rv, training=True),
        "NativeLayerNormBackward0": F.layer_norm(x, (6,)),
        "NativeGroupNormBackward0": F.group_norm(x, 3),
        "ViewBackward0": F.instance_norm(x),
        "MulBackward0": F.rms_norm(x, (6,)),
        "DivBackward0": F.normalize(x),
    }
    for name, out in names.items():
        assert type(out.grad_fn).__name__ == name or out.grad_fn.name() == name, name
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert indices.grad_fn is None and indices.dtype == rustgrad.int64
    assert F.max_unpool2d(values, indices, 2).grad_fn.name() == "MaxUnpool2DBackward0"
    # The backward of the backward (a grad_output that requires grad records it).
    for out, name in [
        (values, "MaxPool2DWithIndicesBackwardBackward0"),
        (F.avg_pool2d(x, 2), "AvgPool2DBackwardBackward0"),
        (F.adaptive_avg_pool2d(x, 2), "AdaptiveAvgPool2DBackwardBackward0"),
        (F.adaptive_max_pool2d(x, 2), "AdaptiveMaxPool2DBackwardBackward0"),
    ]:
        go = rustgrad.ones(out.shape, dtype=out.dtype).requires_grad_()
        (g,) = rustgrad.autograd.grad(out, x, go, create_graph=True)
        assert g.grad_fn.name() == name


# ------------------------------------------------------------------------ numpy references


def _np_max_pool2d(x: np.ndarray, k: int, s: int, p: int) -> tuple[np.ndarray, np.ndarray]:
    n, c, h, w = x.shape
    padded = np.full((n, c, h + 2 * p, w + 2 * p), -np.inf)
    padded[:, :, p : p + h, p : p + w] = x
    oh, ow = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    out = np.empty((n, c, oh, ow))
    idx = np.empty((n, c, oh, ow), dtype=np.int64)
    for i in range(oh):
        for j in range(ow):
            win = padded[:, :, i * s : i * s + k, j * s : j * s + k].reshape(n, c, -1)
            a = win.argmax(-1)
            out[:, :, i, j] = win.max(-1)
            r, q = a // k + i * s - p, a % k + j * s - p
            idx[:, :, i, j] = r * w + q
    return out, idx


def test_max_pool2d_matches_numpy() -> None:
    x = _rand(2, 3, 9, 8, requires_grad=False)
    values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    want, want_idx = _np_max_pool2d(x.numpy(), 3, 2, 1)
    np.testing.assert_array_equal(values.numpy(), want)
    np.testing.assert_array_equal(indices.numpy(), want_idx)


def test_batch_norm_matches_numpy_and_updates_running_stats() -> None:
    x = _rand(4, 3, 5, requires_grad=False)
    rm, rv = _rand(3, seed=4, requires_grad=False), _pos(3)
    rm0, rv0 = rm.numpy().copy(), rv.numpy().copy()
    version = rm._version
    out = F.batch_norm(x, rm, rv, training=True, momentum=0.25, eps=1e-3)
    a = x.numpy()
    mean, var = a.mean((0, 2)), a.var((0, 2))
    want = (a - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rm.numpy(), 0.75 * rm0 + 0.25 * mean, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.75 * rv0 + 0.25 * a.var((0, 2), ddof=1), rtol=1e-12)
    assert rm._version > version
    # Evaluation: the running statistics normalise and stay as they are.
    before = rm.numpy().copy()
    out = F.batch_norm(x, rm, rv, training=False)
    want = (a - rm.numpy()[None, :, None]) / np.sqrt(rv.numpy()[None, :, None] + 1e-5)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(rm.numpy(), before)


def test_layer_and_group_norm_match_numpy() -> None:
    x = _rand(2, 6, 3, requires_grad=False)
    a = x.numpy()
    mean, var = a.mean(-1, keepdims=True), a.var(-1, keepdims=True)
    np.testing.assert_allclose(
        F.layer_norm(x, (3,)).numpy(), (a - mean) / np.sqrt(var + 1e-5), rtol=1e-12
    )
    g = a.reshape(2, 3, 6)
    gm, gv = g.mean(-1, keepdims=True), g.var(-1, keepdims=True)
    want = ((g - gm) / np.sqrt(gv + 1e-5)).reshape(a.shape)
    np.testing.assert_allclose(F.group_norm(x, 3).numpy(), want, rtol=1e-12, atol=1e-12)


# -------------------------------------------------------------------------------- NaN


def test_nan_propagates() -> None:
    nan = float("nan")
    x = rustgrad.tensor([[[[1.0, nan], [nan, 4.0]]]])
    values, indices = F.max_pool2d(x, 2, return_indices=True)
    assert np.isnan(values.item()) and indices.item() == 2  # PyTorch: the last NaN
    assert np.isnan(F.avg_pool2d(x, 2).item())
    assert np.isnan(F.adaptive_max_pool2d(x, 1).item())
    y = rustgrad.tensor([[1.0, nan], [2.0, 3.0]])
    out = F.batch_norm(y, None, None, training=True).numpy()
    assert np.isnan(out[:, 1]).all() and not np.isnan(out[:, 0]).any()
    assert np.isnan(F.layer_norm(y, (2,)).numpy()[0]).all()
    full = rustgrad.full((1, 1, 2, 2), float("-inf"))
    v, i = F.max_pool2d(full, 2, return_indices=True)
    assert v.item() == float("-inf") and i.item() == 0


# ----------------------------------------------------------------------------- errors

X4 = np.random.default_rng(0).normal(size=(2, 3, 6, 6)).tolist()

ERRORS: list[tuple[str, Callable[[Any], Any], type, str]] = [
    (
        "pad_half",
        lambda x: F.max_pool2d(x, 2, padding=2),
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=2 and "
        "dilation=1",
    ),
    ("stride_zero", lambda x: F.max_pool2d(x, 2, 0), RuntimeError, "stride should not be zero"),
    ("kernel_zero", lambda x: F.max_pool2d(x, 0), RuntimeError, "stride should not be zero"),
    (
        "kernel_zero_s1",
        lambda x: F.max_pool2d(x, 0, 1),
        RuntimeError,
        "kernel size should be greater than zero, but got kH: 0 kW: 0",
    ),
    (
        "kernel_negative",
        lambda x: F.max_pool2d(x, -1, 1),
        RuntimeError,
        "kernel size should be greater than zero, but got kH: -1 kW: -1",
    ),
    (
        "stride_negative",
        lambda x: F.max_pool2d(x, 2, -1),
        RuntimeError,
        "stride should be greater than zero, but got dH: -1 dW: -1",
    ),
    (
        "pad_negative",
        lambda x: F.max_pool2d(x, 2, 1, -1),
        RuntimeError,
        "pad must be non-negative, but got pad: -1",
    ),
    (
        "dilation_zero",
        lambda x: F.max_pool2d(x, 2, 1, 0, 0),
        RuntimeError,
        "dilation should be greater than zero, but got dilationH: 0 dilationW: 0",
    ),
    (
        "too_small",
        lambda x: F.max_pool2d(x, 7),
        RuntimeError,
        "Given input size: (3x6x6). Calculated output size: (3x0x0). Output size is too small",
    ),
    (
        "rank_2",
        lambda x: F.max_pool2d(x[0, 0], 2),
        RuntimeError,
        "non-empty 3D or 4D (batch mode) tensor expected for input",
    ),
    (
        "rank_5",
        lambda x: F.max_pool2d(x.unsqueeze(0), 2),
        RuntimeError,
        "non-empty 3D or 4D (batch mode) tensor expected for input",
    ),
    (
        "empty_channels",
        lambda x: F.max_pool2d(x[:, :0], 2),
        RuntimeError,
        "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
        "got:[2, 0, 6, 6]",
    ),
    (
        "kernel_tuple3",
        lambda x: F.max_pool2d(x, (2, 2, 2)),
        RuntimeError,
        "max_pool2d: kernel_size must either be a single int, or a tuple of two ints",
    ),
    (
        "stride_tuple3",
        lambda x: F.max_pool2d(x, 2, (1, 1, 1)),
        RuntimeError,
        "max_pool2d: stride must either be omitted, a single int, or a tuple of two ints",
    ),
    (
        "1d_rank",
        lambda x: F.max_pool1d(x, 2),
        RuntimeError,
        "max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
        "input, but got:[2, 3, 6, 6]",
    ),
    (
        "1d_kernel_zero",
        lambda x: F.max_pool1d(x[0], 0),
        RuntimeError,
        "max_pool1d() kernel_size must be greater than zero, but got 0",
    ),
    (
        "1d_stride_zero",
        lambda x: F.max_pool1d(x[0], 2, 0),
        RuntimeError,
        "max_pool1d() stride must be greater than zero, but got 0",
    ),
    (
        "1d_pad",
        lambda x: F.max_pool1d(x[0], 2, 1, 2),
        RuntimeError,
        "max_pool1d() padding should be at most half of kernel size, but got padding=2 and "
        "kernel_size=2",
    ),
    (
        "1d_small",
        lambda x: F.max_pool1d(x[0], 7),
        RuntimeError,
        "max_pool1d() Invalid computed output size: 0",
    ),
    (
        "1d_idx_rank",
        lambda x: F.max_pool1d(x, 2, return_indices=True),
        RuntimeError,
        "Expected 2 to 3 dimensions, but got 4-dimensional tensor for argument #1 'self' (while "
        "checking arguments for max_pool1d)",
    ),
    (
        "avg_div_zero",
        lambda x: F.avg_pool2d(x, 2, divisor_override=0),
        RuntimeError,
        "divisor must be not zero",
    ),
    ("avg_small", lambda x: F.avg_pool2d(x, 7), RuntimeError, "Output size is too small"),
    (
        "avg_rank_5",
        lambda x: F.avg_pool2d(x.unsqueeze(0), 2),
        RuntimeError,
        "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
        "got:[1, 2, 3, 6, 6]",
    ),
    ("avg_rank_2", lambda x: F.avg_pool2d(x[0, 0], 2), IndexError, "Dimension out of range"),
    (
        "avg1d_kernel",
        lambda x: F.avg_pool1d(x[0], (2, 2)),
        RuntimeError,
        "avg_pool1d() argument 'kernel_size' should contain one int (got 2)",
    ),
    (
        "adaptive_rank",
        lambda x: F.adaptive_avg_pool2d(x[0, 0], 2),
        RuntimeError,
        "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got [6, 6]",
    ),
    (
        "adaptive_negative",
        lambda x: F.adaptive_avg_pool2d(x, -1),
        RuntimeError,
        "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
        "received {-1, -1}",
    ),
    (
        "adaptive_size3",
        lambda x: F.adaptive_avg_pool2d(x, (1, 2, 3)),
        RuntimeError,
        "adaptive_avg_pool2d: output_size must be 2",
    ),
    (
        "adaptive_max_empty",
        lambda x: F.adaptive_max_pool2d(x[:, :0], 2),
        RuntimeError,
        "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
        "but input has sizes [2, 0, 6, 6] with dimension 1 being empty",
    ),
    (
        "unpool_index",
        lambda x: F.max_unpool2d(
            x[:, :, :3, :3], rustgrad.full((2, 3, 3, 3), 100, dtype=rustgrad.int64), 2
        ),
        RuntimeError,
        "Found an invalid max index: 100 (output volumes are of size 6x6)",
    ),
    (
        "unpool_negative_index",
        lambda x: F.max_unpool2d(
            x[:, :, :3, :3], rustgrad.full((2, 3, 3, 3), -1, dtype=rustgrad.int64), 2
        ),
        RuntimeError,
        "Found an invalid max index: -1",
    ),
    (
        "unpool_size",
        lambda x: F.max_unpool2d(
            x[:, :, :3, :3], rustgrad.zeros(2, 3, 3, 3, dtype=rustgrad.int64), 2, output_size=(9, 9)
        ),
        ValueError,
        'invalid output_size "(9, 9)" (dim 0 must be between 4 and 8)',
    ),
    (
        "unpool_dtype",
        lambda x: F.max_unpool2d(
            x[:, :, :3, :3], rustgrad.zeros(2, 3, 3, 3, dtype=rustgrad.int32), 2
        ),
        RuntimeError,
        "elements in indices should be type int64 but got: Int",
    ),
    (
        "bn_one_value",
        lambda x: F.batch_norm(x[:1, :, 0, 0], None, None, training=True),
        ValueError,
        "Expected more than 1 value per channel when training, got input size torch.Size([1, 3])",
    ),
    (
        "bn_running_mean_shape",
        lambda x: F.batch_norm(
            x,
            rustgrad.zeros(4, dtype=rustgrad.float64),
            rustgrad.ones(3, dtype=rustgrad.float64),
            training=True,
        ),
        RuntimeError,
        "running_mean should contain 3 elements not 4",
    ),
    (
        "bn_running_var_shape",
        lambda x: F.batch_norm(
            x, rustgrad.zeros(3, dtype=rustgrad.float64), rustgrad.ones(4, dtype=rustgrad.float64)
        ),
        RuntimeError,
        "running_var should contain 3 elements not 4",
    ),
    (
        "bn_weight_shape",
        lambda x: F.batch_norm(
            x, None, None, rustgrad.ones(4, dtype=rustgrad.float64), training=True
        ),
        RuntimeError,
        "weight should contain 3 elements not 4",
    ),
    (
        "bn_eval_no_stats",
        lambda x: F.batch_norm(x, None, None),
        RuntimeError,
        "running_mean must be defined in evaluation mode",
    ),
    (
        "bn_half_stats",
        lambda x: F.batch_norm(x, rustgrad.zeros(3, dtype=rustgrad.float64), None, training=True),
        ValueError,
        "running_mean and running_var must either both be None or neither be None",
    ),
    (
        "bn_mixed_dtype",
        lambda x: F.batch_norm(x, rustgrad.zeros(3), rustgrad.ones(3), training=True),
        RuntimeError,
        "mixed dtype (CPU): all inputs must share same datatype.",
    ),
    (
        "bn_int",
        lambda x: F.batch_norm(x.long(), None, None, training=True),
        NotImplementedError,
        "\"batch_norm\" not implemented for 'Long'",
    ),
    (
        "ln_shape",
        lambda x: F.layer_norm(x, (5,)),
        RuntimeError,
        "Given normalized_shape=[5], expected input with shape [*, 5], but got input of size[2, "
        "3, 6, 6]",
    ),
    (
        "ln_weight",
        lambda x: F.layer_norm(x, (6,), rustgrad.ones(5, dtype=rustgrad.float64)),
        RuntimeError,
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [5] "
        "and normalized_shape = [6]",
    ),
    (
        "ln_empty",
        lambda x: F.layer_norm(x, ()),
        RuntimeError,
        "Expected normalized_shape to be at least 1-dimensional",
    ),
    (
        "gn_groups",
        lambda x: F.group_norm(x, 2),
        RuntimeError,
        "Expected number of channels in input to be divisible by num_groups, but got input of "
        "shape [2, 3, 6, 6] and num_groups=2",
    ),
    (
        "gn_rank",
        lambda x: F.group_norm(x[0, 0, 0], 1),
        RuntimeError,
        "Expected at least 2 dimensions for input tensor but received 1",
    ),
    (
        "gn_weight",
        lambda x: F.group_norm(x, 3, rustgrad.ones(4, dtype=rustgrad.float64)),
        RuntimeError,
        "Expected weight to be a vector of size equal to the number of channels in input, but "
        "got weight of shape [4] and input of shape [2, 3, 6, 6]",
    ),
    (
        "in_spatial",
        lambda x: F.instance_norm(x[:, :, 0, :1]),
        ValueError,
        "Expected more than 1 spatial element when training, got input size torch.Size([2, 3, 1])",
    ),
    (
        "rms_shape",
        lambda x: F.rms_norm(x, (5,)),
        RuntimeError,
        "Given normalized_shape=[5], expected input with shape [*5], but got input of size[2, 3, "
        "6, 6]",
    ),
    (
        "lrn_rank",
        lambda x: F.local_response_norm(x[0, 0], 2),
        ValueError,
        "Expected 3D or higher dimensionality",
    ),
]


@pytest.mark.parametrize("name,fn,exc,message", ERRORS, ids=[e[0] for e in ERRORS])
def test_error_sweep(name: str, fn: Callable[[Any], Any], exc: type, message: str) -> None:
    x = rustgrad.tensor(X4, dtype=rustgrad.float64)
    with pytest.raises(exc) as info:
        fn(x)
    assert message in str(info.value)


def test_bad_running_stats_are_not_touched() -> None:
    rm, rv = rustgrad.zeros(4, dtype=rustgrad.float64), rustgrad.ones(3, dtype=rustgrad.float64)
    with pytest.raises(RuntimeError):
        F.batch_norm(_rand(2, 3, 2), rm, rv, training=True)
    assert rm._version == 0 and rv._version == 0


# ------------------------------------------------------------------------ determinism


def _run_all(x: Any) -> list[np.ndarray]:
    rm = rustgrad.zeros(16, dtype=x.dtype)
    rv = rustgrad.ones(16, dtype=x.dtype)
    w = rustgrad.ones(16, dtype=x.dtype).requires_grad_()
    outs = [
        F.max_pool2d(x, 3, 2, 1),
        F.avg_pool2d(x, 3, 2, 1),
        F.adaptive_avg_pool2d(x, 5),
        F.batch_norm(x, rm, rv, w, training=True),
        F.layer_norm(x, (40, 40)),
        F.group_norm(x, 4, w),
    ]
    total = sum((o * o).sum() for o in outs)
    grads = rustgrad.autograd.grad(total, [x, w])
    return (
        [o.detach().numpy() for o in outs] + [g.numpy() for g in grads] + [rm.numpy(), rv.numpy()]
    )


def test_bitwise_identical_for_one_and_two_threads() -> None:
    rng = np.random.default_rng(3)
    data = rng.normal(size=(4, 16, 40, 40)).astype(np.float32)
    original = rustgrad.get_num_threads()
    try:
        results = []
        for threads in (1, 2):
            rustgrad.set_num_threads(threads)
            x = rustgrad.tensor(data.tolist(), dtype=rustgrad.float32).requires_grad_()
            results.append(_run_all(x))
    finally:
        rustgrad.set_num_threads(original)
    for a, b in zip(*results):
        assert a.tobytes() == b.tobytes()


def test_empty_batch() -> None:
    # PyTorch: an empty batch gives an empty result and leaves the running stats alone.
    x = rustgrad.zeros(0, 3, dtype=rustgrad.float64).requires_grad_()
    w = rustgrad.ones(3, dtype=rustgrad.float64).requires_grad_()
    rm, rv = rustgrad.zeros(3, dtype=rustgrad.float64), rustgrad.ones(3, dtype=rustgrad.float64)
    out = F.batch_norm(x, rm, rv, w, training=True)
    assert list(out.shape) == [0, 3]
    out.sum().backward()
    assert list(x.grad.shape) == [0, 3]
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros(3))
    np.testing.assert_array_equal(rm.numpy(), np.zeros(3))
    np.testing.assert_array_equal(rv.numpy(), np.ones(3))
    assert list(F.max_pool2d(rustgrad.zeros(0, 2, 4, 4), 2).shape) == [0, 2, 2, 2]
