"""The losses of ``rustgrad.nn.functional``: float64 gradcheck and gradgradcheck of every
differentiable functional, PyTorch's errors and warnings, NaN propagation and bitwise
determinism across thread counts. Forward values and gradients against PyTorch are in
test_vectors_nn_loss.py; numpy references here are written independently.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck


def _rand(*shape: int, low: float = -2.0, high: float = 2.0, seed: int = 0) -> Any:
    values = np.random.default_rng(seed + sum(shape)).uniform(low, high, shape)
    return rustgrad.tensor(values.tolist(), dtype=rustgrad.float64).requires_grad_()


def _idx(values: Any) -> Any:
    return rustgrad.tensor(values)


W4 = rustgrad.tensor([0.5, 1.0, 2.0, 1.5], dtype=rustgrad.float64)

# name -> (function of the differentiable inputs, inputs)
CASES: dict[str, tuple[Callable[..., Any], list[Any]]] = {}
for red in ("mean", "sum", "none"):
    CASES[f"cross_entropy_{red}"] = (
        lambda x, red=red: F.cross_entropy(
            x, _idx([0, 3, -100, 1]), weight=W4, reduction=red, label_smoothing=0.2
        ),
        [_rand(4, 4)],
    )
    CASES[f"cross_entropy_3d_{red}"] = (
        lambda x, red=red: F.cross_entropy(x, _idx([[0, 1, 3], [2, 2, 1]]), reduction=red),
        [_rand(2, 4, 3)],
    )
    CASES[f"cross_entropy_probs_{red}"] = (
        lambda x, t, red=red: F.cross_entropy(x, t, weight=W4, reduction=red, label_smoothing=0.1),
        [_rand(3, 4), _rand(3, 4, low=0.0, high=1.0)],
    )
    CASES[f"nll_loss_{red}"] = (
        lambda x, red=red: F.nll_loss(x, _idx([0, 3, 2, 1]), weight=W4, reduction=red),
        [_rand(4, 4)],
    )
    CASES[f"mse_loss_{red}"] = (
        lambda x, y, red=red: F.mse_loss(x, y, reduction=red),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
    CASES[f"l1_loss_{red}"] = (
        lambda x, y, red=red: F.l1_loss(x, y, reduction=red),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
    CASES[f"smooth_l1_loss_{red}"] = (
        lambda x, y, red=red: F.smooth_l1_loss(x, y, reduction=red, beta=0.7),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
    CASES[f"huber_loss_{red}"] = (
        lambda x, y, red=red: F.huber_loss(x, y, reduction=red, delta=0.8),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
    CASES[f"bce_{red}"] = (
        lambda x, y, red=red: F.binary_cross_entropy(x, y, weight=W4, reduction=red),
        [_rand(3, 4, low=0.1, high=0.9), _rand(3, 4, low=0.0, high=1.0, seed=1)],
    )
    CASES[f"bce_logits_{red}"] = (
        lambda x, y, red=red: F.binary_cross_entropy_with_logits(
            x, y, weight=W4, pos_weight=W4 + 1, reduction=red
        ),
        [_rand(3, 4), _rand(3, 4, low=0.0, high=1.0, seed=1)],
    )
    CASES[f"poisson_nll_loss_{red}"] = (
        lambda x, y, red=red: F.poisson_nll_loss(x, y, reduction=red),
        [_rand(3, 4), _rand(3, 4, low=0.0, high=3.0, seed=1)],
    )
    CASES[f"cosine_embedding_loss_{red}"] = (
        lambda a, b, red=red: F.cosine_embedding_loss(
            a, b, rustgrad.tensor([1.0, -1.0, -1.0]), margin=-0.5, reduction=red
        ),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
    CASES[f"margin_ranking_loss_{red}"] = (
        lambda a, b, red=red: F.margin_ranking_loss(
            a,
            b,
            rustgrad.tensor([1.0, -1.0, 1.0, -1.0], dtype=rustgrad.float64),
            0.1,
            reduction=red,
        ),
        [_rand(4), _rand(4, seed=1)],
    )
    CASES[f"triplet_margin_loss_{red}"] = (
        lambda a, p, n, red=red: F.triplet_margin_loss(
            a, p, n, margin=3.0, swap=True, reduction=red
        ),
        [_rand(3, 4), _rand(3, 4, seed=1), _rand(3, 4, seed=2)],
    )
for red in ("batchmean", "sum", "none"):
    CASES[f"kl_div_{red}"] = (
        lambda x, t, red=red: F.kl_div(x, t, reduction=red),
        [_rand(3, 4), _rand(3, 4, low=0.1, high=1.0, seed=1)],
    )
    CASES[f"kl_div_log_target_{red}"] = (
        lambda x, t, red=red: F.kl_div(x, t, reduction=red, log_target=True),
        [_rand(3, 4), _rand(3, 4, seed=1)],
    )
CASES["cosine_similarity"] = (
    lambda a, b: F.cosine_similarity(a, b, dim=1),
    [_rand(3, 4), _rand(3, 4, seed=1)],
)
CASES["pairwise_distance"] = (
    lambda a, b: F.pairwise_distance(a, b, p=3.0),
    [_rand(3, 4), _rand(3, 4, seed=1)],
)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_and_gradgradcheck(name: str) -> None:
    fn, inputs = CASES[name]
    assert gradcheck(fn, tuple(inputs))
    assert gradgradcheck(fn, tuple(inputs))


def _log_softmax(x: np.ndarray) -> np.ndarray:
    shifted = x - x.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def test_cross_entropy_matches_a_numpy_reference() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(6, 5))
    t = np.array([0, 4, 2, -100, 1, 4])
    w = rng.uniform(0.5, 2.0, 5)
    ls = 0.15
    logp = _log_softmax(x)
    keep = t != -100
    rows = np.arange(6)[keep]
    nll = -(w[t[keep]] * logp[rows, t[keep]])
    smooth = -(logp[keep] * w).sum(axis=1)
    want = ((1 - ls) * nll.sum() + ls / 5 * smooth.sum()) / w[t[keep]].sum()
    got = F.cross_entropy(
        rustgrad.tensor(x.tolist(), dtype=rustgrad.float64),
        rustgrad.tensor(t.tolist()),
        weight=rustgrad.tensor(w.tolist(), dtype=rustgrad.float64),
        label_smoothing=ls,
    )
    assert got.item() == pytest.approx(want, rel=1e-12)


def test_first_and_second_order_backward_agree() -> None:
    # The first-order backward is a fused kernel; under create_graph it is composed of
    # differentiable ops. Both give the same gradient.
    x = _rand(5, 7)
    t = _idx([0, 6, -100, 3, 3])
    loss = F.cross_entropy(x, t, weight=None, label_smoothing=0.3)
    (fused,) = rustgrad.autograd.grad(loss, x)
    loss = F.cross_entropy(x, t, weight=None, label_smoothing=0.3)
    (composed,) = rustgrad.autograd.grad(loss, x, create_graph=True)
    np.testing.assert_allclose(fused.numpy(), composed.detach().numpy(), rtol=1e-12, atol=1e-15)


ERRORS: list[tuple[Callable[[], Any], type[Exception], str]] = [
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 7, 1])),
        IndexError,
        "Target 7 is out of bounds.",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, -1, 1])),
        IndexError,
        "Target -1 is out of bounds.",
    ),
    (
        lambda: F.nll_loss(rustgrad.randn(3, 5), _idx([0, 5, 1])),
        IndexError,
        "Target 5 is out of bounds.",
    ),
    (
        lambda: F.nll_loss(rustgrad.randn(2, 5, 3), _idx([[0, 1, 2], [9, 1, 1]])),
        IndexError,
        "Target 9 is out of bounds.",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 1])),
        ValueError,
        "Expected input batch_size (3) to match target batch_size (2).",
    ),
    (
        lambda: F.nll_loss(rustgrad.randn(3, 5), _idx([0, 1])),
        ValueError,
        "Expected input batch_size (3) to match target batch_size (2).",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([[0, 1, 1]] * 3)),
        RuntimeError,
        "0D or 1D target tensor expected, multi-target not supported",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), rustgrad.randn(3, 4)),
        RuntimeError,
        "0D or 1D target tensor expected, multi-target not supported",
    ),
    (
        lambda: F.nll_loss(rustgrad.randn(5), _idx([1, 1, 1])),
        ValueError,
        "For 1D input, 1D target must have size 1, but got target size: 3",
    ),
    (
        lambda: F.nll_loss(rustgrad.tensor(1.0), _idx(0)),
        ValueError,
        "Expected 1 or more dimensions (got 0)",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(2, 5, 3), _idx([[0, 1], [1, 1]])),
        RuntimeError,
        "Expected target size [2, 3], got [2, 2]",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 1, 2]), label_smoothing=1.5),
        RuntimeError,
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 1, 2]), reduction="foo"),
        ValueError,
        "foo is not a valid value for reduction",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 1, 2]), weight=rustgrad.ones(4)),
        RuntimeError,
        "weight tensor should be defined either for all 5 classes or no classes but got "
        "weight tensor of shape: [4]",
    ),
    (
        lambda: F.cross_entropy(rustgrad.randn(3, 5), _idx([0, 1, 2]).float()),
        RuntimeError,
        "expected target dtype to be Long or Byte, but got Float",
    ),
    (
        lambda: F.cross_entropy(rustgrad.tensor(1.0), _idx(0)),
        RuntimeError,
        "Expected floating point type for target with class probabilities, got Long",
    ),
    (
        lambda: F.nll_loss(
            rustgrad.randn(3, 5), _idx([0, 1, 2]), weight=rustgrad.ones(5, requires_grad=True)
        ),
        RuntimeError,
        "is not differentiable with respect to argument 'weight'",
    ),
    (
        lambda: F.cross_entropy(
            rustgrad.randn(3, 5, dtype=rustgrad.float64), _idx([0, 1, 2]), weight=rustgrad.ones(5)
        ),
        RuntimeError,
        "expected scalar type Double but found Float",
    ),
    (
        lambda: F.nll_loss(
            rustgrad.randn(3, 5), _idx([0, 1, 2]), weight=rustgrad.ones(5, dtype=rustgrad.int64)
        ),
        RuntimeError,
        "expected scalar type Float but found Long",
    ),
    (
        lambda: F.binary_cross_entropy(rustgrad.tensor([0.5, 1.5]), rustgrad.tensor([0.0, 1.0])),
        RuntimeError,
        "all elements of input should be between 0 and 1",
    ),
    (
        lambda: F.binary_cross_entropy(rustgrad.tensor([0.5, 0.5]), rustgrad.tensor([[0.0, 1.0]])),
        ValueError,
        "is deprecated. Please ensure they have the same size.",
    ),
    (
        lambda: F.binary_cross_entropy_with_logits(rustgrad.zeros(2), rustgrad.zeros(3)),
        ValueError,
        "must be the same as input size",
    ),
    (
        lambda: F.smooth_l1_loss(rustgrad.zeros(2), rustgrad.zeros(2), beta=-1.0),
        RuntimeError,
        "smooth_l1_loss does not support negative values for beta.",
    ),
    (
        lambda: F.huber_loss(rustgrad.zeros(2), rustgrad.zeros(2), delta=0.0),
        RuntimeError,
        "huber_loss does not support non-positive values for delta.",
    ),
    (
        lambda: F.mse_loss(rustgrad.zeros(2, 3), rustgrad.zeros(2, 4)),
        RuntimeError,
        "must match the size of tensor b",
    ),
    (
        lambda: F.kl_div(rustgrad.zeros(2), rustgrad.zeros(2), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
    ),
    (
        lambda: F.margin_ranking_loss(rustgrad.zeros(2), rustgrad.zeros(2, 1), rustgrad.ones(2)),
        RuntimeError,
        "All input tensors should have same dimension",
    ),
]


@pytest.mark.parametrize("index", range(len(ERRORS)))
def test_errors_are_pytorchs(index: int) -> None:
    fn, exc, phrase = ERRORS[index]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mse_loss's size warning precedes its error
        with pytest.raises(exc) as info:
            fn()
    assert phrase in str(info.value)


def test_huge_and_negative_targets_never_read_out_of_bounds() -> None:
    x = rustgrad.randn(2, 3, requires_grad=True)
    for bad in (2**62, -(2**62), 3, -2):
        with pytest.raises(IndexError, match="out of bounds"):
            F.cross_entropy(x, _idx([0, bad]))


def test_warnings() -> None:
    with pytest.warns(UserWarning, match="Using a target size"):
        F.mse_loss(rustgrad.zeros(3, 4), rustgrad.zeros(3, 1))
    with pytest.warns(UserWarning, match="reduction='sum' instead"):
        F.cross_entropy(rustgrad.zeros(2, 3), _idx([0, 1]), size_average=False)
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(rustgrad.zeros(2, 3), rustgrad.ones(2, 3))


def test_legacy_reduction_arguments() -> None:
    x, t = rustgrad.tensor([[0.0, 1.0], [2.0, 0.0]]), _idx([1, 0])
    with pytest.warns(UserWarning):
        summed = F.cross_entropy(x, t, size_average=False)
    with pytest.warns(UserWarning):
        none = F.nll_loss(x, t, reduce=False)
    assert summed.item() == pytest.approx(F.cross_entropy(x, t, reduction="sum").item())
    assert none.tolist() == [-1.0, -2.0]


@pytest.mark.parametrize("fn", [F.mse_loss, F.l1_loss, F.huber_loss])
def test_bad_reduction_of_a_weighted_loss_has_pytorchs_message(fn: Callable[..., Any]) -> None:
    # PyTorch 2.15 checks a weighted loss's reduction in its weighted branch, after the
    # weight's shape, with its own message (strings from PyTorch 2.15).
    x, t = rustgrad.randn(3), rustgrad.randn(3)
    with pytest.raises(ValueError, match="^bogus is not a valid value for reduction$"):
        fn(x, t, reduction="bogus")
    with pytest.raises(
        ValueError,
        match=r"^Invalid reduction mode: bogus\. Expected one of 'none', 'mean', 'sum'\.$",
    ):
        fn(x, t, weight=rustgrad.ones(3), reduction="bogus")
    with pytest.raises(ValueError, match="^Weights and input must have the same size\\.$"):
        fn(x, t, weight=rustgrad.ones(2), reduction="bogus")


def test_nan_propagates() -> None:
    x = rustgrad.tensor([[0.0, float("nan")], [1.0, 2.0]], requires_grad=True)
    loss = F.cross_entropy(x, _idx([0, 1]), reduction="none")
    assert np.isnan(loss[0].item()) and not np.isnan(loss[1].item())
    loss.sum().backward()
    assert np.isnan(x.grad[0].numpy()).all() and not np.isnan(x.grad[1].numpy()).any()
    assert np.isnan(F.mse_loss(x, rustgrad.zeros(2, 2)).item())


@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
def test_all_ignored_mean_is_nan_with_zero_gradient(fn: Callable[..., Any]) -> None:
    # nll_loss's first-order backward gave G / 0 * 0 = NaN where PyTorch writes zeros.
    x = rustgrad.randn(2, 3, requires_grad=True)
    loss = fn(x, _idx([-100, -100]))
    assert np.isnan(loss.item())
    loss.backward()
    assert x.grad.abs().sum().item() == 0.0


def test_grad_fn_names() -> None:
    x = rustgrad.randn(4, 3, requires_grad=True)
    t = _idx([0, 1, 2, 0])
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"
    assert F.cross_entropy(x, t, label_smoothing=0.1).grad_fn.name() == "AddBackward0"
    assert F.nll_loss(x, t).grad_fn.name() == "NllLossBackward0"
    y = rustgrad.rand(4, 3)
    assert F.mse_loss(x, y).grad_fn.name() == "MseLossBackward0"
    assert F.huber_loss(x, y).grad_fn.name() == "HuberLossBackward0"
    assert F.smooth_l1_loss(x, y).grad_fn.name() == "SmoothL1LossBackward0"
    assert (
        F.binary_cross_entropy(y.requires_grad_(), y).grad_fn.name()
        == "BinaryCrossEntropyBackward0"
    )
    assert (
        F.binary_cross_entropy_with_logits(x, y).grad_fn.name()
        == "BinaryCrossEntropyWithLogitsBackward0"
    )


@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_is_bitwise_identical_for_1_and_2_threads(label_smoothing: float) -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(size=(300, 257)).astype(np.float32)
    targets = rng.integers(0, 257, 300).tolist()
    before = rustgrad.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            rustgrad.set_num_threads(threads)
            x = rustgrad.tensor(values.tolist()).requires_grad_()
            loss = F.cross_entropy(x, _idx(targets), label_smoothing=label_smoothing)
            loss.backward()
            results.append((loss.detach().numpy().tobytes(), x.grad.numpy().tobytes()))
    finally:
        rustgrad.set_num_threads(before)
    assert results[0] == results[1]


def test_bce_weights_that_require_grad_are_refused_as_pytorch() -> None:
    # PyTorch 2.15 has no derivative for BCE's weight / pos_weight: with grad mode on,
    # one that requires grad raises (weight checked first); under no_grad it is used.
    x = rustgrad.rand(4, 3, requires_grad=True)
    p = rustgrad.rand(4, 3) * 0.8 + 0.1
    t = rustgrad.rand(4, 3)
    w = rustgrad.rand(4, 3, requires_grad=True)
    pw = rustgrad.rand(3, requires_grad=True)
    msg = "The function '{}' is not differentiable with respect to argument '{}'. This input"
    cases = [
        (lambda: F.binary_cross_entropy(p.requires_grad_(), t, weight=w), "", "weight"),
        (lambda: F.binary_cross_entropy(p.detach(), t, weight=w), "", "weight"),
        (lambda: rustgrad.nn.BCELoss(weight=w)(p.detach(), t), "", "weight"),
        (lambda: F.binary_cross_entropy_with_logits(x, t, weight=w), "_with_logits", "weight"),
        (
            lambda: F.binary_cross_entropy_with_logits(x, t, pos_weight=pw),
            "_with_logits",
            "pos_weight",
        ),
        (
            lambda: F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw),
            "_with_logits",
            "weight",
        ),
    ]
    for call, suffix, arg in cases:
        with pytest.raises(RuntimeError, match=msg.format("binary_cross_entropy" + suffix, arg)):
            call()
    with rustgrad.no_grad():
        got = F.binary_cross_entropy(p.detach(), t, weight=w)
    pv, tv, wv = (a.detach().numpy().astype(np.float64) for a in (p, t, w))
    want = np.mean(-wv * (tv * np.log(pv) + (1 - tv) * np.log(1 - pv)))
    assert got.item() == pytest.approx(want, rel=1e-5)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss])
def test_class_losses_of_half_inputs(fn: Callable[..., Any], dtype: str) -> None:
    """PyTorch computes cross_entropy and nll_loss of float16 / bfloat16 inputs (rustgrad
    refused them); the values of a float32 computation, rounded to the half dtype
    (PyTorch's own values: tests/python/test_loss_slices.py)."""
    half = getattr(rustgrad, dtype)
    rustgrad.manual_seed(0)
    x32 = rustgrad.randn(4, 3, 2).to(half).float().requires_grad_()
    x = x32.detach().to(half).requires_grad_()
    w = rustgrad.tensor([0.5, 2.0, 1.0])
    t = _idx([[0, 2], [1, 1], [2, 0], [0, 1]])
    loss = fn(x, t, weight=w.to(half))
    want = fn(x32, t, weight=w)
    assert loss.dtype == half
    assert loss.item() == want.to(half).item()
    loss.backward()
    want.backward()
    assert x.grad.dtype == half
    np.testing.assert_array_equal(x.grad.float().numpy(), x32.grad.to(half).float().numpy())
