"""Convolutions on small outputs, where several samples share one GEMM (Note
[Convolutions]): exact agreement with numpy's direct definition on integer data (every
sum exact, so any summation order gives the same bits), and bitwise-identical results
for one and two threads."""

from __future__ import annotations

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F


def _windows(xp: np.ndarray, k: tuple, stride: tuple, dilation: tuple, out: tuple):
    """Yields ``(kernel offset, view of xp)``: for each offset, the padded input entries
    the output positions read, shaped ``(N, C, *out)``."""
    for offset in np.ndindex(*k):
        index = tuple(
            slice(o * d, o * d + s * (n - 1) + 1, s)
            for o, d, s, n in zip(offset, dilation, stride, out, strict=True)
        )
        yield offset, (slice(None), slice(None), *index)


def _reference(x, w, gy, stride, padding, dilation, groups):
    """Forward, input gradient and weight gradient of a grouped N-d cross-correlation,
    read off the definition (numpy, float64)."""
    dims = x.ndim - 2
    k = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0), *[(p, p) for p in padding]])
    out = tuple(
        (xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(dims)
    )
    n, o = x.shape[0], w.shape[0]
    cg, og = w.shape[1], o // groups
    y = np.zeros((n, o, *out))
    gxp = np.zeros_like(xp)
    gw = np.zeros_like(w)
    for offset, index in _windows(xp, k, stride, dilation, out):
        for g in range(groups):
            cs, os_ = slice(g * cg, (g + 1) * cg), slice(g * og, (g + 1) * og)
            patch = xp[index][:, cs]
            wk = w[(os_, slice(None), *offset)]
            y[:, os_] += np.einsum("nc...,oc->no...", patch, wk)
            gxp[index][:, cs] += np.einsum("no...,oc->nc...", gy[:, os_], wk)
            flat_patch = patch.reshape(n, cg, -1)
            flat_gy = gy[:, os_].reshape(n, og, -1)
            gw[(os_, slice(None), *offset)] += np.einsum("ncl,nol->oc", flat_patch, flat_gy)
    inner = tuple(slice(p, p + size) for p, size in zip(padding, x.shape[2:], strict=True))
    return y, gxp[(slice(None), slice(None), *inner)], gw


def _ints(rng: np.random.Generator, shape: tuple) -> np.ndarray:
    return rng.integers(-4, 5, size=shape).astype(np.float64)


CASES = [
    # name, input shape, weight shape, stride, padding, dilation, groups
    ("2d_L16", (6, 8, 4, 4), (12, 8, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    ("2d_L4_stride", (5, 6, 4, 4), (8, 3, 3, 3), (2, 2), (1, 1), (1, 1), 2),
    ("2d_L1", (7, 4, 3, 3), (8, 4, 3, 3), (1, 1), (0, 0), (1, 1), 1),
    ("2d_dilated", (4, 4, 5, 5), (6, 4, 2, 2), (2, 1), (0, 1), (3, 2), 1),
    ("2d_pointwise", (5, 6, 2, 2), (4, 6, 1, 1), (1, 1), (0, 0), (1, 1), 1),
    ("2d_depthwise", (5, 4, 3, 3), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), 4),
    ("1d", (6, 4, 9), (6, 2, 3), (3,), (1,), (1,), 2),
    ("3d", (3, 2, 3, 4, 4), (4, 2, 2, 2, 2), (1, 2, 2), (0, 1, 0), (1, 1, 1), 1),
]


@pytest.mark.parametrize(
    "shape_x,shape_w,stride,padding,dilation,groups",
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_small_output_convolutions_match_the_definition_exactly(
    shape_x: tuple, shape_w: tuple, stride: tuple, padding: tuple, dilation: tuple, groups: int
) -> None:
    rng = np.random.default_rng(len(shape_x) * 100 + groups)
    x, w = _ints(rng, shape_x), _ints(rng, shape_w)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(shape_x)]
    xt = rustgrad.from_numpy(x).requires_grad_()
    wt = rustgrad.from_numpy(w).requires_grad_()
    y = conv(xt, wt, None, stride, padding, dilation, groups)
    gy = _ints(rng, tuple(y.shape))
    y.backward(rustgrad.from_numpy(gy))
    want_y, want_gx, want_gw = _reference(x, w, gy, stride, padding, dilation, groups)
    np.testing.assert_array_equal(y.detach().numpy(), want_y)
    np.testing.assert_array_equal(xt.grad.numpy(), want_gx)
    np.testing.assert_array_equal(wt.grad.numpy(), want_gw)
    # float32 sums of these integers are exact too.
    y32 = conv(
        rustgrad.from_numpy(x.astype(np.float32)),
        rustgrad.from_numpy(w.astype(np.float32)),
        None,
        stride,
        padding,
        dilation,
        groups,
    )
    np.testing.assert_array_equal(y32.numpy(), want_y.astype(np.float32))


def test_transposed_convolution_on_a_small_input_is_the_input_adjoint() -> None:
    rng = np.random.default_rng(9)
    x, w = _ints(rng, (6, 8, 3, 3)), _ints(rng, (12, 8, 3, 3))
    gy = _ints(rng, (6, 12, 2, 2))
    _, gx, _ = _reference(x, w, gy, (2, 2), (1, 1), (1, 1), 1)
    got = F.conv_transpose2d(rustgrad.from_numpy(gy), rustgrad.from_numpy(w), stride=2, padding=1)
    np.testing.assert_array_equal(got.numpy(), gx)


def _small_output_run() -> list[np.ndarray]:
    """A ResNet layer4-like block (L = 16 and 4): the batched GEMMs are large enough to be
    split into row blocks across the pool."""
    rng = np.random.default_rng(12)
    f32 = np.float32
    x = rustgrad.from_numpy(rng.normal(size=(10, 48, 4, 4)).astype(f32)).requires_grad_()
    w1 = rustgrad.from_numpy(rng.normal(size=(256, 48, 3, 3)).astype(f32)).requires_grad_()
    w2 = rustgrad.from_numpy(rng.normal(size=(200, 128, 3, 3)).astype(f32)).requires_grad_()
    b2 = rustgrad.from_numpy(rng.normal(size=200).astype(f32)).requires_grad_()
    h = F.conv2d(x, w1, padding=1)
    y = F.conv2d(h, w2, b2, stride=2, padding=1, groups=2)
    y.backward(rustgrad.from_numpy(rng.normal(size=tuple(y.shape)).astype(f32)))
    wt = rustgrad.from_numpy(rng.normal(size=(48, 64, 3, 3)).astype(f32))
    z = F.conv_transpose2d(x.detach(), wt, stride=2)
    return [t.numpy() for t in (h.detach(), y.detach(), x.grad, w1.grad, w2.grad, b2.grad, z)]


def test_small_outputs_are_bitwise_identical_for_one_and_two_threads() -> None:
    original = rustgrad.get_num_threads()
    try:
        rustgrad.set_num_threads(1)
        one = _small_output_run()
        rustgrad.set_num_threads(2)
        two = _small_output_run()
    finally:
        rustgrad.set_num_threads(original)
    for a, b in zip(one, two, strict=True):
        assert a.tobytes() == b.tobytes()
