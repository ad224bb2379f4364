"""The activations, dropout variants, embedding and one_hot of ``rustgrad.nn.functional``
that are compositions (Note [Functional activations and dropout]): float64 gradcheck
and gradgradcheck, numpy references, statistics and mask consistency of the random ones,
seeded reproducibility and PyTorch's errors. Values against PyTorch are in
test_vectors_nn_loss.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck


def _rand(*shape: int, seed: int = 0, low: float = -2.0, high: float = 2.0) -> Any:
    values = np.random.default_rng(seed).uniform(low, high, shape)
    # Away from the kinks at 0 and +-0.5 (the default lambd) for finite differences.
    values = np.where(np.abs(np.abs(values) - 0.5) < 0.05, values + 0.2, values)
    values = np.where(np.abs(values) < 0.05, values + 0.2, values)
    return rustgrad.tensor(values.tolist(), dtype=rustgrad.float64).requires_grad_()


def _seeded(fn: Callable[..., Any], seed: int = 5) -> Callable[..., Any]:
    def run(*xs: Any) -> Any:
        rustgrad.manual_seed(seed)
        return fn(*xs)

    return run


IDX = rustgrad.tensor([0, 2, 4, 2, 1])
CASES: dict[str, tuple[Callable[..., Any], list[Any]]] = {
    "glu": (lambda x: F.glu(x, 0), [_rand(4, 3)]),
    "hardshrink": (lambda x: F.hardshrink(x, 0.7), [_rand(3, 4)]),
    "softshrink": (lambda x: F.softshrink(x, 0.7), [_rand(3, 4)]),
    "tanhshrink": (F.tanhshrink, [_rand(3, 4)]),
    "threshold": (lambda x: F.threshold(x, 0.3, -2.0), [_rand(3, 4)]),
    "prelu": (F.prelu, [_rand(2, 3, 4), _rand(3, seed=1, low=0.1, high=0.9)]),
    "rrelu_eval": (lambda x: F.rrelu(x, 0.1, 0.4), [_rand(3, 4)]),
    "rrelu_train": (_seeded(lambda x: F.rrelu(x, 0.1, 0.4, training=True)), [_rand(3, 4)]),
    "dropout1d": (_seeded(lambda x: F.dropout1d(x, 0.4)), [_rand(2, 5, 3)]),
    "dropout2d": (_seeded(lambda x: F.dropout2d(x, 0.4)), [_rand(2, 5, 2, 2)]),
    "alpha_dropout": (_seeded(lambda x: F.alpha_dropout(x, 0.3, training=True)), [_rand(4, 5)]),
    "feature_alpha_dropout": (
        _seeded(lambda x: F.feature_alpha_dropout(x, 0.3, training=True)),
        [_rand(3, 4, 2)],
    ),
    # padding_idx zeroes a real dependence by design: gradcheck runs without it.
    "embedding": (lambda w: F.embedding(IDX, w), [_rand(5, 3)]),
    "embedding_bag_mean": (
        lambda w: F.embedding_bag(IDX, w, rustgrad.tensor([0, 2, 2])),
        [_rand(5, 3)],
    ),
    "embedding_bag_sum_weighted": (
        lambda w, s: F.embedding_bag(
            IDX, w, rustgrad.tensor([0, 3]), mode="sum", per_sample_weights=s
        ),
        [_rand(5, 3), _rand(5, seed=2)],
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_gradgradcheck(name: str) -> None:
    fn, inputs = CASES[name]
    assert gradcheck(fn, tuple(inputs))
    assert gradgradcheck(fn, tuple(inputs))


def test_numpy_references() -> None:
    x = _rand(3, 4).detach()
    a = x.numpy()
    np.testing.assert_allclose(F.hardshrink(x).numpy(), np.where(np.abs(a) > 0.5, a, 0.0))
    want = np.where(a > 0.5, a - 0.5, np.where(a < -0.5, a + 0.5, 0.0))
    np.testing.assert_allclose(F.softshrink(x).numpy(), want)
    np.testing.assert_allclose(F.tanhshrink(x).numpy(), a - np.tanh(a))
    np.testing.assert_allclose(F.threshold(x, 0.1, 20.0).numpy(), np.where(a > 0.1, a, 20.0))
    g = F.glu(x, 1).numpy()
    np.testing.assert_allclose(g, a[:, :2] / (1 + np.exp(-a[:, 2:])))
    np.testing.assert_allclose(F.rrelu(x).numpy(), np.where(a >= 0, a, a * (1 / 8 + 1 / 3) / 2))


def test_nan_through_the_shrinks_and_threshold() -> None:
    """PyTorch 2.x keeps NaN (its kernels test ``x <= threshold`` / ``|x| <= lambd`` for
    the replaced branch), and passes the gradient there."""
    nan = float("nan")
    x = rustgrad.tensor([nan, -1.0, 2.0], requires_grad=True)
    for fn in (
        lambda t: F.threshold(t, 0.5, 9.0),
        lambda t: F.hardshrink(t, 1.5),
        lambda t: F.softshrink(t, 1.5),
    ):
        y = fn(x)
        assert np.isnan(y[0].item())
        x.grad = None
        y.backward(rustgrad.ones(3))
        assert x.grad[0].item() == 1.0
    np.testing.assert_array_equal(F.threshold(x, 0.5, 9.0).detach().numpy()[1:], [9.0, 2.0])


def test_rrelu_training_noise_is_in_range_and_shared_with_the_gradient() -> None:
    rustgrad.manual_seed(0)
    x = rustgrad.tensor(np.linspace(-3, 3, 2000).tolist(), dtype=rustgrad.float64)
    x.requires_grad_()
    y = F.rrelu(x, 0.2, 0.4, training=True)
    y.sum().backward()
    a, out, grad = x.detach().numpy(), y.detach().numpy(), x.grad.numpy()
    neg = a < 0
    slopes = out[neg] / a[neg]
    assert ((slopes >= 0.2) & (slopes <= 0.4)).all()
    assert abs(slopes.mean() - 0.3) < 0.01
    np.testing.assert_allclose(grad[neg], slopes)
    np.testing.assert_array_equal(grad[a > 0], 1.0)
    rustgrad.manual_seed(0)
    again = F.rrelu(x.detach(), 0.2, 0.4, training=True)
    np.testing.assert_array_equal(again.numpy(), out)


@pytest.mark.parametrize(
    ("fn", "shape", "mask_shape"),
    [
        (F.dropout1d, (8, 40, 5), (8, 40, 1)),
        (F.dropout2d, (8, 40, 3, 2), (8, 40, 1, 1)),
        (F.dropout3d, (4, 40, 2, 2, 2), (4, 40, 1, 1, 1)),
    ],
)
def test_channel_dropout_masks_whole_channels(fn: Any, shape: tuple, mask_shape: tuple) -> None:
    rustgrad.manual_seed(3)
    x = rustgrad.ones(*shape, dtype=rustgrad.float64, requires_grad=True)
    y = fn(x, 0.25)
    y.sum().backward()
    out = y.detach().numpy()
    per_channel = out.reshape(shape[0], shape[1], -1)
    # Every channel is all zeros or all 1 / (1 - p).
    assert np.all((per_channel == 0).all(-1) | (per_channel == 1 / 0.75).all(-1))
    dropped = (per_channel == 0).all(-1).mean()
    assert 0.15 < dropped < 0.35
    np.testing.assert_array_equal(x.grad.numpy(), out)  # gradient uses the same mask
    rustgrad.manual_seed(3)
    np.testing.assert_array_equal(fn(x.detach(), 0.25).numpy(), out)
    assert fn(x, 0.25, training=False) is x


def test_alpha_dropout_keeps_mean_and_variance() -> None:
    rustgrad.manual_seed(1)
    x = rustgrad.randn(200000, dtype=rustgrad.float64)
    y = F.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(y.mean()) < 0.02
    assert abs(y.std() - 1.0) < 0.02
    assert F.alpha_dropout(x, 0.2) is x  # training defaults to False
    assert F.alpha_dropout(x, 1.0, training=True).abs().sum().item() == 0.0


def test_feature_alpha_dropout_masks_channels() -> None:
    rustgrad.manual_seed(2)
    x = rustgrad.ones(6, 50, 4, dtype=rustgrad.float64)
    y = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    assert np.all(np.ptp(y, axis=-1) == 0)
    assert len(np.unique(y)) == 2


def test_embedding_padding_max_norm_and_errors() -> None:
    w = rustgrad.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]], requires_grad=True)
    out = F.embedding(rustgrad.tensor([[0, 1], [2, 0]]), w, padding_idx=0)
    assert tuple(out.shape) == (2, 2, 2)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [[0.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    plain = rustgrad.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    F.embedding(rustgrad.tensor([0, 1]), plain, max_norm=1.0)
    norms = np.linalg.norm(plain.numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-6)
    assert norms[2] == pytest.approx(10.0)  # not looked up: left alone
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(rustgrad.tensor([3]), plain)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(rustgrad.tensor([-1]), plain)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following"):
        F.embedding(rustgrad.tensor([0.0]), plain)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_and_max_norm(mode: str) -> None:
    """numpy reference: each row's gradient is the sum of its bags' gradients (divided by
    the bag size for mean), divided by how often its index occurs in the whole input."""
    idx = [0, 2, 2, 1, 2, 0]
    offsets = [0, 2, 5]
    w = rustgrad.tensor(np.arange(12.0).reshape(4, 3) / 10, requires_grad=True)
    out = F.embedding_bag(
        rustgrad.tensor(idx), w, rustgrad.tensor(offsets), mode=mode, scale_grad_by_freq=True
    )
    g = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0], [4.0, -2.0, 1.0]])
    out.backward(rustgrad.tensor(g))
    ends = offsets[1:] + [len(idx)]
    want = np.zeros((4, 3))
    for b, (start, end) in enumerate(zip(offsets, ends)):
        for i in range(start, end):
            size = (end - start) if mode == "mean" else 1
            want[idx[i]] += g[b] / size / idx.count(idx[i])
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-12)
    # max_norm renormalises the rows used (here 1 and 3 exceed 0.5), in place, first.
    plain = rustgrad.tensor(np.arange(12.0).reshape(4, 3) / 10)
    before = plain.numpy().copy()
    F.embedding_bag(rustgrad.tensor([1, 3]), plain, rustgrad.tensor([0]), max_norm=0.5)
    norms = np.linalg.norm(plain.numpy(), axis=1)
    np.testing.assert_allclose(norms[[1, 3]], [0.5, 0.5], rtol=1e-6)
    np.testing.assert_array_equal(plain.numpy()[[0, 2]], before[[0, 2]])


def test_embeddings_and_activations_are_bitwise_identical_for_1_and_2_threads() -> None:
    rng = np.random.default_rng(0)
    idx = rustgrad.tensor(rng.integers(0, 300, 40000))
    offsets = rustgrad.tensor(np.arange(0, 40000, 37))
    weights = rng.standard_normal((300, 64)).astype(np.float32)
    x_values = rng.standard_normal((200, 300)).astype(np.float32)

    def run(threads: int) -> list[np.ndarray]:
        rustgrad.set_num_threads(threads)
        w = rustgrad.tensor(weights, requires_grad=True)
        x = rustgrad.tensor(x_values, requires_grad=True)
        bags = F.embedding_bag(idx, w, offsets, mode="mean")
        rows = F.embedding(idx[:5000], w, scale_grad_by_freq=True)
        act = (
            F.glu(x, 1)
            + F.softshrink(x, 0.3)[:, :150]
            + F.prelu(x, rustgrad.tensor([0.2]))[:, 150:]
        )
        (bags.pow(2).sum() + rows.sum() + act.pow(2).sum()).backward()
        return [t.detach().numpy() for t in (bags, rows, act, w.grad, x.grad)]

    before = rustgrad.get_num_threads()
    try:
        one, two = run(1), run(2)
    finally:
        rustgrad.set_num_threads(before)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)


def test_one_hot() -> None:
    out = F.one_hot(rustgrad.tensor([[1, 0], [2, 2]]))
    assert out.dtype == rustgrad.int64
    np.testing.assert_array_equal(out.numpy(), np.eye(3, dtype=np.int64)[[[1, 0], [2, 2]]])
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(rustgrad.tensor([3]), 3)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(rustgrad.tensor([-1]))


ERRORS: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (lambda: F.glu(rustgrad.ones(3)), RuntimeError, "Halving dimension must be even"),
    (lambda: F.glu(rustgrad.tensor(1.0)), RuntimeError, "glu does not support scalars"),
    (lambda: F.softshrink(rustgrad.ones(2), -1.0), RuntimeError, "lambda must be in range"),
    (lambda: F.prelu(rustgrad.ones(2, 3), rustgrad.ones(2)), RuntimeError, "Mismatch of parameter"),
    (
        lambda: F.dropout1d(rustgrad.ones(2), 0.5),
        RuntimeError,
        "dropout1d: Expected 2D or 3D input",
    ),
    (lambda: F.dropout1d(rustgrad.ones(2, 2), 1.5), ValueError, "dropout probability has to be"),
    (lambda: F.alpha_dropout(rustgrad.ones(2), -0.1), ValueError, "dropout probability has to be"),
    (
        lambda: F.embedding_bag(rustgrad.tensor([0, 1]), rustgrad.ones(3, 2)),
        ValueError,
        "offsets has to be a 1D Tensor but got None",
    ),
    (
        lambda: F.embedding_bag(rustgrad.tensor([0]), rustgrad.ones(3, 2), rustgrad.tensor([1])),
        RuntimeError,
        "offsets[0] has to be 0",
    ),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors(index: int) -> None:
    fn, exc, phrase = ERRORS[index]
    with pytest.raises(exc) as info:
        fn()
    assert phrase in str(info.value)


def test_dropout2d_warns_for_3d_input() -> None:
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(rustgrad.ones(2, 3, 4), 0.5)


def test_in_place_forms() -> None:
    x = rustgrad.tensor([-1.0, 2.0])
    assert F.threshold_(x, 0.0, 5.0) is x
    assert x.tolist() == [5.0, 2.0]
    y = rustgrad.tensor([-2.0, 2.0])
    assert F.rrelu_(y, 0.5, 0.5) is y
    assert y.tolist() == [-1.0, 2.0]
