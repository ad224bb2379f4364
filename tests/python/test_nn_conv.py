"""Convolutions and linear layers: float64 gradcheck and gradgradcheck, a numpy
reference, PyTorch's error messages, grad_fn names, and bitwise determinism across
thread counts. (PyTorch's values are checked by test_vectors_nn_conv.py.)
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck


def _randn(*shape: int, seed: int, requires_grad: bool = True) -> Any:
    rng = np.random.default_rng(seed)
    t = rustgrad.tensor(rng.normal(size=shape).tolist(), dtype=rustgrad.float64)
    return t.reshape(shape).requires_grad_(requires_grad)


# (name, function of the inputs, input shapes)
GRAD_CASES: list[tuple[str, Callable[..., Any], list[tuple[int, ...]]]] = [
    ("conv2d_bias", lambda x, w, b: F.conv2d(x, w, b), [(2, 2, 4, 4), (3, 2, 2, 2), (3,)]),
    (
        "conv2d_stride_pad_dil",
        lambda x, w: F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
        [(1, 2, 5, 5), (2, 2, 2, 2)],
    ),
    ("conv2d_same_even", lambda x, w: F.conv2d(x, w, padding="same"), [(1, 1, 4, 3), (2, 1, 2, 2)]),
    ("conv2d_groups", lambda x, w: F.conv2d(x, w, groups=2), [(1, 4, 3, 3), (4, 2, 2, 2)]),
    (
        "conv2d_depthwise",
        lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
        [(1, 2, 3, 3), (2, 1, 3, 3), (2,)],
    ),
    ("conv2d_pointwise", lambda x, w: F.conv2d(x, w), [(2, 3, 2, 2), (2, 3, 1, 1)]),
    ("conv2d_unbatched", lambda x, w: F.conv2d(x, w, padding=1), [(2, 3, 3), (2, 2, 2, 2)]),
    (
        "conv1d",
        lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
        [(2, 2, 6), (3, 2, 3), (3,)],
    ),
    (
        "conv3d",
        lambda x, w: F.conv3d(x, w, padding=1, stride=2),
        [(1, 2, 3, 3, 3), (2, 2, 2, 2, 2)],
    ),
    (
        "conv_transpose2d",
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1),
        [(1, 2, 3, 3), (2, 3, 3, 3), (3,)],
    ),
    (
        "conv_transpose2d_groups_dil",
        lambda x, w: F.conv_transpose2d(x, w, groups=2, dilation=2),
        [(1, 4, 2, 3), (4, 1, 2, 2)],
    ),
    (
        "conv_transpose1d",
        lambda x, w: F.conv_transpose1d(x, w, stride=3, output_padding=1),
        [(2, 2, 3), (2, 2, 2)],
    ),
    (
        "conv_transpose3d",
        lambda x, w: F.conv_transpose3d(x, w, stride=2),
        [(1, 1, 2, 2, 2), (1, 2, 2, 2, 2)],
    ),
    ("linear_2d", lambda x, w, b: F.linear(x, w, b), [(3, 4), (2, 4), (2,)]),
    ("linear_3d", lambda x, w: F.linear(x, w), [(2, 3, 4), (2, 4)]),
    ("bilinear", lambda a, b, w, c: F.bilinear(a, b, w, c), [(3, 2), (3, 3), (2, 2, 3), (2,)]),
    (
        "unfold",
        lambda x: F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=(1, 2)),
        [(2, 2, 4, 5)],
    ),
    ("fold", lambda x: F.fold(x, (4, 5), 2, stride=(2, 1)), [(2, 8, 8)]),
    ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), [(1, 8, 2, 3)]),
    ("pixel_unshuffle", lambda x: F.pixel_unshuffle(x, 2), [(1, 2, 4, 2)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck_and_gradgradcheck(name: str, fn: Callable[..., Any], shapes: list) -> None:
    inputs = [_randn(*s, seed=i + 7 * len(name)) for i, s in enumerate(shapes)]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def _conv2d_reference(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray,
    stride: tuple,
    padding: tuple,
    dilation: tuple,
    groups: int,
) -> np.ndarray:
    """Direct loops over the definition of a grouped 2-D cross-correlation."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * padding[0], wd + 2 * padding[1]))
    xp[:, :, padding[0] : padding[0] + h, padding[1] : padding[1] + wd] = x
    oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for oc in range(o):
        g = oc // og
        for i in range(oh):
            for j in range(ow):
                patch = xp[
                    :,
                    g * cg : (g + 1) * cg,
                    i * stride[0] : i * stride[0] + dilation[0] * (kh - 1) + 1 : dilation[0],
                    j * stride[1] : j * stride[1] + dilation[1] * (kw - 1) + 1 : dilation[1],
                ]
                out[:, oc, i, j] = (patch * w[oc]).sum(axis=(1, 2, 3)) + b[oc]
    return out


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [((1, 1), (0, 0), (1, 1), 1), ((2, 1), (1, 2), (2, 1), 2), ((3, 2), (2, 0), (1, 3), 4)],
)
def test_conv2d_matches_numpy_loops(
    stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 4, 9, 10))
    w = rng.normal(size=(8, 4 // groups, 3, 2))
    b = rng.normal(size=8)
    got = F.conv2d(
        rustgrad.tensor(x.tolist(), dtype=rustgrad.float64),
        rustgrad.tensor(w.tolist(), dtype=rustgrad.float64),
        rustgrad.tensor(b.tolist(), dtype=rustgrad.float64),
        stride,
        padding,
        dilation,
        groups,
    )
    np.testing.assert_allclose(
        got.numpy(),
        _conv2d_reference(x, w, b, stride, padding, dilation, groups),
        rtol=1e-12,
        atol=1e-12,
    )


def test_unfold_matches_numpy_and_fold_is_its_adjoint() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(2, 3, 5, 4))
    cols = F.unfold(rustgrad.tensor(x.tolist(), dtype=rustgrad.float64), 2, padding=1).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    blocks = [xp[:, :, i : i + 2, j : j + 2].reshape(2, -1) for i in range(6) for j in range(5)]
    np.testing.assert_array_equal(cols, np.stack(blocks, axis=2))
    y = rng.normal(size=cols.shape)
    folded = F.fold(
        rustgrad.tensor(y.tolist(), dtype=rustgrad.float64), (5, 4), 2, padding=1
    ).numpy()
    np.testing.assert_allclose((cols * y).sum(), (x * folded).sum(), rtol=1e-12)


def test_pixel_shuffle_matches_numpy_and_unshuffle_inverts_it() -> None:
    x = np.arange(2 * 8 * 2 * 3, dtype=np.float64).reshape(2, 8, 2, 3)
    want = x.reshape(2, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(2, 2, 4, 6)
    t = rustgrad.tensor(x.tolist(), dtype=rustgrad.float64)
    shuffled = F.pixel_shuffle(t, 2)
    np.testing.assert_array_equal(shuffled.numpy(), want)
    np.testing.assert_array_equal(F.pixel_unshuffle(shuffled, 2).numpy(), x)


def test_grad_fn_names() -> None:
    x = _randn(1, 2, 4, 4, seed=1)
    w = _randn(3, 2, 3, 3, seed=2)
    assert type(F.conv2d(x, w).grad_fn).__name__ == "ConvolutionBackward0"
    assert type(F.conv2d(x[0], w).grad_fn).__name__ == "SqueezeBackward1"
    assert type(F.conv_transpose2d(x, w.transpose(0, 1)).grad_fn).__name__ == "ConvolutionBackward0"
    a, wl, b = _randn(3, 4, seed=3), _randn(5, 4, seed=4), _randn(5, seed=5)
    assert type(F.linear(a, wl, b).grad_fn).__name__ == "AddmmBackward0"
    assert type(F.linear(a, wl).grad_fn).__name__ == "MmBackward0"
    gx, gw = rustgrad.autograd.grad(F.conv2d(x, w).sum(), (x, w), create_graph=True)
    assert gx.requires_grad and gw.requires_grad
    assert type(gw.grad_fn).__name__ == "ConvolutionBackwardBackward0"
    no_grad = F.conv2d(x.detach(), w.detach())
    assert no_grad.grad_fn is None and not no_grad.requires_grad


def test_nan_propagates_and_empty_batches_work() -> None:
    x = rustgrad.zeros(1, 1, 3, 3, dtype=rustgrad.float64)
    x[0, 0, 0, 0] = float("nan")
    out = F.conv2d(x, rustgrad.ones(1, 1, 2, 2, dtype=rustgrad.float64))
    assert np.isnan(out[0, 0, 0, 0].item()) and out[0, 0, 1, 1].item() == 0.0
    empty = F.conv2d(rustgrad.zeros(0, 3, 8, 8), rustgrad.ones(6, 3, 5, 5))
    assert tuple(empty.shape) == (0, 6, 4, 4)


def test_float16_and_bfloat16_compute_in_float32() -> None:
    x = rustgrad.ones(1, 2, 3, 3)
    w = rustgrad.ones(1, 2, 2, 2)
    for dtype in (rustgrad.float16, rustgrad.bfloat16):
        out = F.conv2d(x.to(dtype), w.to(dtype))
        assert out.dtype == dtype and out.float().tolist() == [[[[8.0, 8.0], [8.0, 8.0]]]]


def _e(shape: tuple, **kw: Any) -> Any:
    return rustgrad.zeros(*shape, **kw)


ERRORS: list[tuple[Callable[[], Any], type, str]] = [
    (
        lambda: F.conv2d(_e((3, 32)), _e((6, 3, 5, 5))),
        RuntimeError,
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [3, 32]",
    ),
    (
        lambda: F.conv1d(_e((3,)), _e((6, 3, 5))),
        RuntimeError,
        "Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: [3]",
    ),
    (
        lambda: F.conv_transpose2d(_e((3, 4)), _e((3, 6, 5, 5))),
        RuntimeError,
        "Expected 3D (unbatched) or 4D (batched) input to conv_transpose2d, but got input of "
        "size: [3, 4]",
    ),
    (
        lambda: F.conv2d(_e((1, 4, 32, 32)), _e((6, 3, 5, 5))),
        RuntimeError,
        "Given groups=1, weight of size [6, 3, 5, 5], expected input[1, 4, 32, 32] to have 3 "
        "channels, but got 4 channels instead",
    ),
    (
        lambda: F.conv2d(_e((4, 32, 32)), _e((6, 3, 5, 5))),
        RuntimeError,
        "expected input[1, 4, 32, 32] to have 3 channels",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 4, 4)), _e((6, 3, 5, 5))),
        RuntimeError,
        "Calculated padded input size per channel: (4 x 4). Kernel size: (5 x 5). Kernel size "
        "can't be greater than actual input size",
    ),
    (
        lambda: F.conv1d(_e((1, 3, 2)), _e((6, 3, 3))),
        RuntimeError,
        "Calculated padded input size per channel: (2). Kernel size: (3).",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), padding=-1),
        RuntimeError,
        "negative padding is not supported",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), stride=0),
        RuntimeError,
        "non-positive stride is not supported",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), stride=-1),
        RuntimeError,
        "non-positive stride is not supported",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), dilation=0),
        RuntimeError,
        "non-positive dilation is not supported",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), dilation=-1),
        RuntimeError,
        "dilation should be greater than zero",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), groups=0),
        RuntimeError,
        "non-positive groups is not supported",
    ),
    (
        lambda: F.conv2d(_e((1, 4, 8, 8)), _e((6, 2, 3, 3)), groups=4),
        RuntimeError,
        "Given groups=4, expected weight to be divisible by 4 at dimension 0, but got weight of "
        "size [[6, 2, 3, 3]] instead",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((0, 3, 3, 3))),
        RuntimeError,
        "Given groups=1, expected weight to be at least 1 at dimension 0, but got weight of "
        "size [0, 3, 3, 3] instead",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5))),
        RuntimeError,
        "expected stride to be a single integer value or a list of 1 values to match the "
        "convolution dimensions, but got stride=[1, 1]",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3))),
        RuntimeError,
        "weight should have at least three dimensions",
    ),
    (
        lambda: F.conv1d(_e((1, 3, 8)), _e((6, 3, 3, 3))),
        RuntimeError,
        "Expected 4-dimensional input for 4-dimensional weight [6, 3, 3, 3], but got 3-dimensional "
        "input of size [1, 3, 8] instead",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 3, 3)), stride=(1, 1, 1)),
        RuntimeError,
        "expected stride to be a single integer value or a list of 2 values",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), bias=_e((5,))),
        RuntimeError,
        "Given weight of size [6, 3, 5, 5], expected bias to be 1-dimensional with 6 elements, "
        "but got bias of size [5] instead",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), padding="same", stride=2),
        RuntimeError,
        "padding='same' is not supported for strided convolutions",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5)), padding="foo"),
        RuntimeError,
        "Invalid padding string: 'foo'",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 5, 5), dtype=rustgrad.float64)),
        RuntimeError,
        "Input type (torch.FloatTensor) and weight type (torch.DoubleTensor) should be the same",
    ),
    (
        lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 3, 3)), _e((6,), dtype=rustgrad.float64)),
        RuntimeError,
        "Input type (float) and bias type (double) should be the same",
    ),
    (lambda: F.conv2d(_e((1, 3, 8, 8)), _e((6, 3, 3, 3)), stride=1.5), TypeError, "stride"),
    (
        lambda: F.conv_transpose2d(_e((1, 4, 8, 8)), _e((3, 6, 5, 5))),
        RuntimeError,
        "Given transposed=1, weight of size [3, 6, 5, 5], expected input[1, 4, 8, 8] to have 3 "
        "channels, but got 4 channels instead",
    ),
    (
        lambda: F.conv_transpose2d(_e((1, 3, 8, 8)), _e((3, 6, 3, 3)), output_padding=1),
        RuntimeError,
        "output padding must be smaller than either stride or dilation, but got "
        "output_padding_height: 1 output_padding_width: 1 stride_height: 1 stride_width: 1 "
        "dilation_height: 1 dilation_width: 1",
    ),
    (
        lambda: F.conv_transpose1d(_e((1, 3, 8)), _e((3, 6, 3)), output_padding=1),
        RuntimeError,
        "output_padding_height: 0 output_padding_width: 1 stride_height: 1 stride_width: 1",
    ),
    (
        lambda: F.conv_transpose2d(_e((1, 3, 8, 8)), _e((3, 6, 3, 3)), output_padding=-1, stride=2),
        RuntimeError,
        "negative output_padding is not supported",
    ),
    (
        lambda: F.conv_transpose2d(_e((1, 4, 2, 2)), _e((4, 3, 3, 3)), padding=3),
        RuntimeError,
        "Given input size per channel: (2 x 2). Calculated output size per channel: (-2 x -2). "
        "Output size is too small",
    ),
    (
        lambda: F.conv_transpose1d(_e((1, 3, 2)), _e((3, 6, 3)), padding=3),
        RuntimeError,
        "Given input size per channel: (1 x 2). Calculated output size per channel: (1 x -2).",
    ),
    (
        lambda: F.conv_transpose2d(_e((1, 4, 8, 8)), _e((4, 2, 3, 3)), _e((3,)), groups=2),
        RuntimeError,
        "Given transposed=1, weight of size [4, 2, 3, 3], expected bias to be 1-dimensional "
        "with 4 elements",
    ),
    (
        lambda: F.conv_transpose2d(_e((1, 4, 8, 8)), _e((4, 3, 3, 3)), padding="same"),
        TypeError,
        "argument 'padding' must be tuple of ints, not str",
    ),
    (
        lambda: F.conv2d(
            _e((1, 3, 8, 8), dtype=rustgrad.int64), _e((6, 3, 3, 3), dtype=rustgrad.int64)
        ),
        NotImplementedError,
        "not implemented for 'Long'",
    ),
    (
        lambda: F.linear(_e((3, 4)), _e((5, 3))),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (3x4 and 3x5)",
    ),
    (
        lambda: F.linear(_e(()), _e((4,))),
        RuntimeError,
        "both arguments to linear need to be at least 1D, but they are 0D and 1D",
    ),
    (
        lambda: F.bilinear(_e((3, 4)), _e((3, 5)), _e((6, 4, 6))),
        RuntimeError,
        "bilinear(): input2 size does not match weight size: got 5 but expected 6",
    ),
    (
        lambda: F.bilinear(_e((3, 4)), _e((2, 5)), _e((6, 4, 5))),
        RuntimeError,
        "bilinear(): input batch dimensions do not match at dim 0: got 3 and 2",
    ),
    (
        lambda: F.bilinear(_e((3, 4)), _e((3, 5)), _e((6, 4, 5)), _e((5,))),
        RuntimeError,
        "bilinear(): bias size does not match weight size: got 5 but expected 6",
    ),
    (
        lambda: F.unfold(_e((1, 1, 8, 8, 8)), 3),
        RuntimeError,
        "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input, but got: [1, 1, 8, 8, 8]",
    ),
    (
        lambda: F.unfold(_e((1, 3, 2, 2)), 3),
        RuntimeError,
        "Given input with spatial size (2, 2), kernel_size=(3, 3), dilation=(1, 1), "
        "padding=(0, 0), "
        "calculated shape of the array of sliding blocks as (0, 0), but its components must be "
        "at least one.",
    ),
    (
        lambda: F.unfold(_e((1, 3, 8, 8)), 3, stride=0),
        RuntimeError,
        "stride should be greater than zero, but got stride_height: 0 stride_width: 0",
    ),
    (
        lambda: F.unfold(_e((1, 3, 8, 8)), 0),
        RuntimeError,
        "kernel size should be greater than zero, but got kernel_height: 0 kernel_width: 0",
    ),
    (
        lambda: F.unfold(_e((1, 3, 8, 8)), 3, padding=-1),
        RuntimeError,
        "padding should be non-negative, but got pad_height: -1 pad_width: -1",
    ),
    (
        lambda: F.unfold(_e((1, 3, 8, 8)), 3, dilation=0),
        RuntimeError,
        "dilation should be greater than zero, but got dilation_height: 0 dilation_width: 0",
    ),
    (
        lambda: F.fold(_e((2, 27, 35)), (8, 8), 3),
        RuntimeError,
        "Given output_size=(8, 8), kernel_size=(3, 3), dilation=(1, 1), padding=(0, 0), "
        "stride=(1, 1), "
        "expected size of input's dimension 2 to match the calculated number of sliding blocks "
        "6 * 6 = 36, "
        "but got input.size(2)=35.",
    ),
    (
        lambda: F.fold(_e((2, 26, 36)), (8, 8), 3),
        RuntimeError,
        "Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
        "but got "
        "input.size(1)=26 and kernel_size=(3, 3).",
    ),
    (
        lambda: F.fold(_e((1, 2, 27, 36)), (8, 8), 3),
        RuntimeError,
        "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
        "dimensions for input, but got: [1, 2, 27, 36]",
    ),
    (
        lambda: F.pixel_shuffle(_e((1, 7, 3, 3)), 2),
        RuntimeError,
        "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
        "upscale_factor, but input.size(-3)=7 is not divisible by 4",
    ),
    (
        lambda: F.pixel_shuffle(_e((3, 3)), 2),
        RuntimeError,
        "pixel_shuffle expects input to have at least 3 dimensions, but got input with 2 "
        "dimension(s)",
    ),
    (
        lambda: F.pixel_shuffle(_e((1, 8, 3, 3)), 0),
        RuntimeError,
        "pixel_shuffle expects a positive upscale_factor, but got 0",
    ),
    (
        lambda: F.pixel_unshuffle(_e((1, 2, 5, 6)), 2),
        RuntimeError,
        "pixel_unshuffle expects height to be divisible by downscale_factor, but "
        "input.size(-2)=5 is not divisible by 2",
    ),
    (
        lambda: F.pixel_unshuffle(_e((1, 2, 6, 5)), 2),
        RuntimeError,
        "pixel_unshuffle expects width to be divisible by downscale_factor, but "
        "input.size(-1)=5 is not divisible by 2",
    ),
    (
        lambda: F.pixel_unshuffle(_e((1, 2, 6, 6)), 0),
        RuntimeError,
        "pixel_unshuffle expects a positive downscale_factor, but got 0",
    ),
]


@pytest.mark.parametrize("call,exc,phrase", ERRORS, ids=[str(i) for i in range(len(ERRORS))])
def test_errors_have_pytorchs_phrases(call: Callable[[], Any], exc: type, phrase: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)


def test_huge_arguments_are_errors_not_crashes() -> None:
    x, w = _e((1, 1, 4, 4)), _e((1, 1, 2, 2))
    for kwargs in [
        {"padding": 2**62},
        {"stride": 2**62},
        {"dilation": 2**40},
        {"padding": (2**31, 2**31)},
    ]:
        try:
            F.conv2d(x, w, **kwargs)
        except RuntimeError:
            pass
    with pytest.raises(RuntimeError):
        F.conv_transpose2d(x, w, stride=2**62, output_padding=1)
    with pytest.raises(RuntimeError):
        F.fold(_e((1, 4, 1)), (2**40, 2**40), 2)


def _conv_run() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    x = rustgrad.tensor(
        rng.normal(size=(8, 16, 20, 20)).astype(np.float32).tolist()
    ).requires_grad_()
    w = rustgrad.tensor(
        rng.normal(size=(16, 16, 3, 3)).astype(np.float32).tolist()
    ).requires_grad_()
    b = rustgrad.zeros(16).requires_grad_()
    y = F.conv2d(x, w, b, padding=1)
    g = rustgrad.tensor(rng.normal(size=tuple(y.shape)).astype(np.float32).tolist())
    y.backward(g)
    wt = rustgrad.tensor(rng.normal(size=(16, 8, 3, 3)).astype(np.float32).tolist())
    z = F.conv_transpose2d(x.detach(), wt, stride=2)
    return [y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy(), z.numpy()]


def test_results_are_bitwise_identical_for_one_and_two_threads() -> None:
    original = rustgrad.get_num_threads()
    try:
        rustgrad.set_num_threads(1)
        one = _conv_run()
        rustgrad.set_num_threads(2)
        two = _conv_run()
    finally:
        rustgrad.set_num_threads(original)
    for a, b in zip(one, two):
        assert a.tobytes() == b.tobytes()


def test_top_level_forms() -> None:
    assert rustgrad.conv2d is F.conv2d and rustgrad.pixel_shuffle is F.pixel_shuffle
    x = _randn(1, 2, 4, 4, seed=21)
    w = _randn(2, 3, 2, 2, seed=22)
    y = rustgrad.convolution(x, w, None, [2, 2], [0, 0], [1, 1], True, [1, 1], 1)
    want = F.conv_transpose2d(x, w, stride=2, output_padding=1)
    assert type(y.grad_fn).__name__ == "ConvolutionBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), want.detach().numpy())


def test_operands_sharing_one_storage() -> None:
    # Input and weight are views of one storage (read under one lock, Note [Locking of
    # storages]); the result equals that of separate copies.
    base = _randn(2 * 2 * 4 * 4 + 3 * 2 * 2 * 2, seed=31)
    x = base[: 2 * 2 * 4 * 4].view(2, 2, 4, 4)
    w = base[2 * 2 * 4 * 4 :].view(3, 2, 2, 2)
    y = F.conv2d(x, w, padding=1)
    want = F.conv2d(x.detach().clone(), w.detach().clone(), padding=1)
    np.testing.assert_array_equal(y.detach().numpy(), want.numpy())
    y.sum().backward()
    assert tuple(base.grad.shape) == tuple(base.shape)
