"""Every loss and functional of ``rustgrad.nn.functional`` on views of larger tensors.

A view shares its base's storage: a slice ``x[2:4]`` or a flat window reshaped is
contiguous but starts at a non-zero storage offset, ``x[..., 1::2]`` is strided and a
transpose is not row-major. Kernels that took the whole storage instead of the view's
own elements gave wrong values or "rustgrad internal error" (issue 19, item 6:
``F.cross_entropy(logits[:2], target)``). Each case here builds every tensor argument
(inputs, targets, weights, indices, running statistics) as such a view of a base whose
other elements are NaN (floats) or an out-of-range value (integers), calls the
functional, and compares with the same call on ``.clone()`` of each view: outputs, the
gradients of every floating input (read back through the base, which must get no
gradient outside the view) and every argument's values afterwards (in-place ops and
running statistics must write the view's own elements and nothing else).

The reference copies keep the view's dim order, as PyTorch's ``clone()`` does (its
``preserve_format`` infers dense strides in the same order), so a random mask is drawn
in the same order for the view and its copy. rustgrad's ``clone()`` / ``empty_like`` of a
permuted view with gaps are row-major instead (a defect outside this file, reported
with issue 19), hence the explicit permute-contiguous-permute copy.

``test_every_functional_has_a_case`` fails when a name is added to
``rustgrad.nn.functional.__all__`` without a case here.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F

# Value domains of float arguments.
N, P, U, NZ, PR = "normal", "positive", "unit", "nonzero", "probability"
# What fills the base around an integer view: never a valid index or class.
INT_FILL = 1_000_003


class Arg:
    """One tensor argument: float values of `shape` in a domain, or fixed values."""

    def __init__(
        self,
        shape: tuple[int, ...] = (),
        dom: str = N,
        values: Any = None,
        grad: bool = True,
    ) -> None:
        self.values = None if values is None else np.asarray(values)
        self.shape = tuple(shape) if self.values is None else self.values.shape
        self.dom, self.grad = dom, grad

    def make(self, rng: np.random.Generator) -> np.ndarray:
        """The argument's values (a fresh array)."""
        if self.values is not None:
            return self.values.copy()
        shape = self.shape
        if self.dom == P:
            return rng.uniform(0.5, 2.0, shape)
        if self.dom == U:
            return rng.uniform(-0.8, 0.8, shape)
        if self.dom == PR:
            return rng.uniform(0.1, 0.9, shape)
        if self.dom == NZ:
            return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)
        return rng.normal(0.0, 1.0, shape)

    @property
    def floating(self) -> bool:
        return self.values is None or self.values.dtype.kind == "f"


def Fl(*shape: int, dom: str = N, grad: bool = True) -> Arg:
    """A float64 argument of `shape`."""
    return Arg(shape, dom, grad=grad)


def Ix(values: Any) -> Arg:
    """An int64 argument with fixed values (class indices, embedding indices, ...)."""
    return Arg(values=np.asarray(values, dtype=np.int64))


def Fx(values: Any) -> Arg:
    """A float64 argument with fixed values, not differentiated (e.g. +-1 targets)."""
    return Arg(values=np.asarray(values, dtype=np.float64), grad=False)


class Case:
    """`fn(*tensors)` with one tensor per `Arg`; `seeded` reseeds before each call."""

    def __init__(
        self, fn: Callable[..., Any], *args: Arg, seeded: bool = False, inplace: bool = False
    ) -> None:
        self.fn, self.args, self.seeded, self.inplace = fn, args, seeded, inplace

    def __call__(self, *tensors: Any) -> Any:
        if self.seeded:
            torch.manual_seed(0)
        return self.fn(*tensors)


A = Fl(2, 3)
ROW = Fl(3)
IMG = Fl(2, 3, 4, 4)


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn`` without its deprecation warning (``upsample`` and friends)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _pointwise(name: str, dom: str = N, **kw: Any) -> Case:
    return Case(lambda x: getattr(F, name)(x, **kw), Fl(3, 4, dom=dom))


def _inplace(name: str, dom: str = NZ, **kw: Any) -> Case:
    return Case(lambda x: getattr(F, name)(x, **kw), Fl(3, 4, dom=dom), inplace=True)


CASES: dict[str, Case] = {
    # ---- pooling
    "adaptive_avg_pool1d": Case(lambda x: F.adaptive_avg_pool1d(x, 3), Fl(2, 3, 5)),
    "adaptive_avg_pool2d": Case(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), Fl(2, 3, 4, 5)),
    "adaptive_max_pool2d": Case(lambda x: F.adaptive_max_pool2d(x, (3, 2)), Fl(2, 3, 4, 5)),
    "adaptive_max_pool2d_with_indices": Case(
        lambda x: F.adaptive_max_pool2d_with_indices(x, (3, 2)), Fl(2, 3, 4, 5)
    ),
    "avg_pool1d": Case(lambda x: F.avg_pool1d(x, 2, 1), Fl(2, 3, 5)),
    "avg_pool2d": Case(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), Fl(2, 3, 4, 5)),
    "max_pool1d": Case(lambda x: F.max_pool1d(x, 2, 1), Fl(2, 3, 5)),
    "max_pool1d_with_indices": Case(lambda x: F.max_pool1d_with_indices(x, 2, 1), Fl(2, 3, 5)),
    "max_pool2d": Case(lambda x: F.max_pool2d(x, 2, 1, 1), Fl(2, 3, 4, 4)),
    "max_pool2d_with_indices": Case(lambda x: F.max_pool2d_with_indices(x, 2, 1), Fl(2, 3, 4, 4)),
    "max_unpool2d": Case(
        lambda x, i: F.max_unpool2d(x, i, 2), Fl(1, 2, 2, 2), Ix([[[[0, 3], [9, 14]]] * 2])
    ),
    # pooling of issue 21
    "max_pool3d": Case(lambda x: F.max_pool3d(x, 2, 1, 1), Fl(1, 2, 3, 4, 4)),
    "max_pool3d_with_indices": Case(lambda x: F.max_pool3d_with_indices(x, 2), Fl(2, 2, 4, 4)),
    "avg_pool3d": Case(lambda x: F.avg_pool3d(x, 3, 2, 1, True, False), Fl(1, 2, 3, 4, 5)),
    "adaptive_avg_pool3d": Case(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), Fl(2, 3, 4, 5)),
    "adaptive_max_pool3d": Case(lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)), Fl(2, 3, 4, 5)),
    "adaptive_max_pool3d_with_indices": Case(
        lambda x: F.adaptive_max_pool3d_with_indices(x, 2), Fl(2, 3, 4, 5)
    ),
    "adaptive_max_pool1d": Case(lambda x: F.adaptive_max_pool1d(x, 3), Fl(2, 3, 5)),
    "adaptive_max_pool1d_with_indices": Case(
        lambda x: F.adaptive_max_pool1d_with_indices(x, 3), Fl(2, 3, 5)
    ),
    "lp_pool1d": Case(lambda x: F.lp_pool1d(x, 2, 2), Fl(2, 3, 5, dom=P)),
    "lp_pool2d": Case(lambda x: F.lp_pool2d(x, 3, 2), Fl(2, 3, 4, 4, dom=P)),
    "lp_pool3d": Case(lambda x: F.lp_pool3d(x, 2, 2), Fl(1, 2, 4, 4, dom=P)),
    "max_unpool1d": Case(lambda x, i: F.max_unpool1d(x, i, 2), Fl(1, 2, 2), Ix([[[1, 2], [0, 3]]])),
    "max_unpool3d": Case(
        lambda x, i: F.max_unpool3d(x, i, 2), Fl(1, 1, 1, 1, 2), Ix([[[[[0, 7]]]]])
    ),
    "fractional_max_pool2d": Case(
        lambda x, s: F.fractional_max_pool2d(x, 2, 3, _random_samples=s),
        Fl(1, 2, 5, 6),
        Fl(1, 2, 2, dom=PR, grad=False),
    ),
    "fractional_max_pool2d_with_indices": Case(
        lambda x, s: F.fractional_max_pool2d_with_indices(x, 2, 2, _random_samples=s),
        Fl(2, 1, 4, 5),
        Fl(2, 1, 2, dom=PR, grad=False),
    ),
    "fractional_max_pool3d": Case(
        lambda x, s: F.fractional_max_pool3d(x, 2, 2, _random_samples=s),
        Fl(1, 2, 3, 4, 4),
        Fl(1, 2, 3, dom=PR, grad=False),
    ),
    "fractional_max_pool3d_with_indices": Case(
        lambda x, s: F.fractional_max_pool3d_with_indices(x, 2, 2, _random_samples=s),
        Fl(1, 1, 3, 4, 4),
        Fl(1, 1, 3, dom=PR, grad=False),
    ),
    # ---- normalisation
    "batch_norm": Case(
        lambda x, rm, rv, w, b: F.batch_norm(x, rm, rv, w, b, True, 0.3),
        Fl(4, 3, 2),
        Fl(3, grad=False),
        Fl(3, dom=P, grad=False),
        ROW,
        ROW,
    ),
    "group_norm": Case(lambda x, w, b: F.group_norm(x, 3, w, b), Fl(2, 6, 3), Fl(6), Fl(6)),
    "instance_norm": Case(
        lambda x, w, b: F.instance_norm(x, weight=w, bias=b), Fl(2, 3, 4), ROW, ROW
    ),
    "layer_norm": Case(lambda x, w, b: F.layer_norm(x, (4,), w, b), Fl(3, 4), Fl(4), Fl(4)),
    "local_response_norm": Case(lambda x: F.local_response_norm(x, 2), Fl(2, 3, 4)),
    "normalize": Case(lambda x: F.normalize(x, dim=1), Fl(3, 4)),
    "rms_norm": Case(lambda x, w: F.rms_norm(x, (4,), w), Fl(3, 4), Fl(4)),
    "scaled_dot_product_attention": Case(
        lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
        Fl(2, 3, 4),
        Fl(2, 5, 4),
        Fl(2, 5, 3),
        Fl(3, 5),
    ),
    "multi_head_attention_forward": Case(
        lambda q, kv, w, wo: F.multi_head_attention_forward(
            q, kv, kv, 4, 2, w, None, None, None, False, 0.0, wo, None
        )[0],
        Fl(3, 2, 4),
        Fl(5, 2, 4),
        Fl(12, 4),
        Fl(4, 4),
    ),
    # ---- linear, convolution, reshaping
    "bilinear": Case(F.bilinear, Fl(3, 2), Fl(3, 4), Fl(5, 2, 4), Fl(5)),
    "conv1d": Case(lambda x, w, b: F.conv1d(x, w, b, padding=1), Fl(2, 2, 5), Fl(3, 2, 2), ROW),
    "conv2d": Case(
        lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), IMG, Fl(2, 3, 2, 2), Fl(2)
    ),
    "conv3d": Case(lambda x, w: F.conv3d(x, w, groups=2), Fl(1, 2, 3, 2, 3), Fl(2, 1, 2, 1, 2)),
    "conv_transpose1d": Case(
        lambda x, w: F.conv_transpose1d(x, w, stride=2), Fl(2, 2, 3), Fl(2, 1, 2)
    ),
    "conv_transpose2d": Case(
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1),
        Fl(1, 2, 3, 3),
        Fl(2, 2, 2, 2),
        Fl(2),
    ),
    "conv_transpose3d": Case(F.conv_transpose3d, Fl(1, 1, 2, 1, 2), Fl(1, 2, 2, 2, 1)),
    "fold": Case(lambda x: F.fold(x, (3, 3), 2), Fl(2, 4, 4)),
    "unfold": Case(lambda x: F.unfold(x, 2, padding=1), IMG),
    "linear": Case(F.linear, Fl(3, 4), Fl(5, 4), Fl(5)),
    "pixel_shuffle": Case(lambda x: F.pixel_shuffle(x, 2), Fl(2, 4, 2, 3)),
    "pixel_unshuffle": Case(lambda x: F.pixel_unshuffle(x, 2), Fl(2, 1, 2, 4)),
    "pad": Case(lambda x: F.pad(x, (1, 2), mode="reflect"), Fl(2, 3, 4)),
    # ---- dropout (reseeded: the same mask for the view and the copy)
    "alpha_dropout": Case(lambda x: F.alpha_dropout(x, 0.4, True), Fl(3, 4), seeded=True),
    "dropout": Case(lambda x: F.dropout(x, 0.4), Fl(3, 4), seeded=True),
    "dropout1d": Case(lambda x: F.dropout1d(x, 0.4), Fl(2, 3, 4), seeded=True),
    "dropout2d": Case(lambda x: F.dropout2d(x, 0.4), Fl(2, 3, 2, 2), seeded=True),
    "dropout3d": Case(lambda x: F.dropout3d(x, 0.4), Fl(2, 3, 1, 2, 2), seeded=True),
    "feature_alpha_dropout": Case(
        lambda x: F.feature_alpha_dropout(x, 0.4, True), Fl(2, 3, 4), seeded=True
    ),
    # ---- activations
    "celu": _pointwise("celu", alpha=0.7),
    "celu_": _inplace("celu_"),
    "elu": _pointwise("elu"),
    "elu_": _inplace("elu_"),
    "gelu": _pointwise("gelu", approximate="tanh"),
    "glu": Case(lambda x: F.glu(x, 0), Fl(4, 3)),
    "hardshrink": _pointwise("hardshrink", NZ, lambd=0.2),
    "hardsigmoid": _pointwise("hardsigmoid", NZ),
    "hardswish": _pointwise("hardswish", NZ),
    "hardtanh": _pointwise("hardtanh", NZ),
    "hardtanh_": _inplace("hardtanh_"),
    "leaky_relu": _pointwise("leaky_relu", NZ, negative_slope=0.1),
    "leaky_relu_": _inplace("leaky_relu_"),
    "log_softmax": Case(lambda x: F.log_softmax(x, 1), Fl(3, 4)),
    "logsigmoid": _pointwise("logsigmoid"),
    "mish": _pointwise("mish"),
    "prelu": Case(F.prelu, Fl(2, 3, 4, dom=NZ), Fl(3, dom=P)),
    "relu": _pointwise("relu", NZ),
    "relu6": _pointwise("relu6", NZ),
    "relu_": _inplace("relu_"),
    "rrelu": Case(lambda x: F.rrelu(x, training=True), Fl(3, 4, dom=NZ), seeded=True),
    "rrelu_": Case(
        lambda x: F.rrelu_(x, training=True), Fl(3, 4, dom=NZ), seeded=True, inplace=True
    ),
    "selu": _pointwise("selu"),
    "selu_": _inplace("selu_"),
    "sigmoid": _pointwise("sigmoid"),
    "silu": _pointwise("silu"),
    "softmax": Case(lambda x: F.softmax(x, 0), Fl(3, 4)),
    "softmin": Case(lambda x: F.softmin(x, 1), Fl(3, 4)),
    "softplus": _pointwise("softplus", beta=2.0),
    "softshrink": _pointwise("softshrink", NZ, lambd=0.2),
    "softsign": _pointwise("softsign"),
    "tanh": _pointwise("tanh"),
    "tanhshrink": _pointwise("tanhshrink"),
    "threshold": Case(lambda x: F.threshold(x, 0.1, 5.0), Fl(3, 4, dom=NZ)),
    "threshold_": Case(lambda x: F.threshold_(x, 0.1, 5.0), Fl(3, 4, dom=NZ), inplace=True),
    # ---- embeddings and encodings
    "embedding": Case(F.embedding, Ix([[0, 2, 1], [3, 3, 0]]), Fl(4, 3)),
    "embedding_bag": Case(
        lambda i, w, o, s: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=s),
        Ix([0, 2, 1, 3, 3]),
        Fl(4, 3),
        Ix([0, 2]),
        Fl(5),
    ),
    "one_hot": Case(lambda i: F.one_hot(i, 5), Ix([[0, 4, 2], [1, 1, 3]])),
    # ---- losses
    "binary_cross_entropy": Case(
        lambda x, y, w: F.binary_cross_entropy(x, y, w),
        Fl(3, 4, dom=PR),
        Fl(3, 4, dom=PR),
        Fl(3, 4, dom=P, grad=False),
    ),
    "binary_cross_entropy_with_logits": Case(
        lambda x, y, w, pw: F.binary_cross_entropy_with_logits(x, y, w, pos_weight=pw),
        Fl(3, 4),
        Fl(3, 4, dom=PR),
        Fl(3, 4, dom=P, grad=False),
        Fl(4, dom=P, grad=False),
    ),
    "cosine_embedding_loss": Case(
        lambda a, b, y: F.cosine_embedding_loss(a, b, y, margin=-0.2),
        Fl(3, 4),
        Fl(3, 4),
        Fx([1.0, -1.0, -1.0]),
    ),
    "cosine_similarity": Case(F.cosine_similarity, Fl(3, 4), Fl(3, 4)),
    "cross_entropy": Case(
        lambda x, t, w: F.cross_entropy(x, t, w, ignore_index=1, label_smoothing=0.1),
        Fl(4, 3),
        Ix([0, 2, 1, 2]),
        Fl(3, dom=P, grad=False),
    ),
    "huber_loss": Case(lambda x, y: F.huber_loss(x, y, delta=0.5), Fl(3, 4), Fl(3, 4)),
    "kl_div": Case(lambda x, y: F.kl_div(x, y, reduction="batchmean"), Fl(3, 4), Fl(3, 4, dom=P)),
    "l1_loss": Case(F.l1_loss, Fl(3, 4, dom=NZ), Fl(3, 4, dom=NZ)),
    "margin_ranking_loss": Case(
        lambda a, b, y: F.margin_ranking_loss(a, b, y, 0.3), Fl(4), Fl(4), Fx([1, -1, 1, -1])
    ),
    "mse_loss": Case(F.mse_loss, Fl(3, 4), Fl(3, 4)),
    "nll_loss": Case(
        lambda x, t, w: F.nll_loss(x, t, w, reduction="sum"),
        Fl(4, 3),
        Ix([0, 2, 1, 2]),
        Fl(3, dom=P, grad=False),
    ),
    "pairwise_distance": Case(F.pairwise_distance, Fl(3, 4), Fl(3, 4)),
    "poisson_nll_loss": Case(F.poisson_nll_loss, Fl(3, 4), Fl(3, 4, dom=P)),
    "smooth_l1_loss": Case(lambda x, y: F.smooth_l1_loss(x, y, beta=0.5), Fl(3, 4), Fl(3, 4)),
    "triplet_margin_loss": Case(
        lambda a, p, n: F.triplet_margin_loss(a, p, n, 5.0), Fl(3, 4), Fl(3, 4), Fl(3, 4)
    ),
    # margin, Gaussian and CTC losses (issue 21)
    "ctc_loss": Case(
        lambda x, t: F.ctc_loss(x, t, (5, 4), (2, 2), reduction="sum"),
        Fl(5, 2, 4),
        Ix([[1, 2], [3, 3]]),
    ),
    "gaussian_nll_loss": Case(F.gaussian_nll_loss, Fl(3, 4), Fl(3, 4), Fl(3, 4, dom=P)),
    "hinge_embedding_loss": Case(
        lambda x, y: F.hinge_embedding_loss(x, y, 0.5), Fl(3, 4), Fx([[1, -1, 1, -1]] * 3)
    ),
    "multi_margin_loss": Case(
        lambda x, t, w: F.multi_margin_loss(x, t, p=2, weight=w),
        Fl(4, 3),
        Ix([0, 2, 1, 2]),
        Fl(3, dom=P, grad=False),
    ),
    "multilabel_margin_loss": Case(
        F.multilabel_margin_loss, Fl(2, 4), Ix([[3, 0, -1, 1], [1, 2, 0, 3]])
    ),
    "multilabel_soft_margin_loss": Case(
        F.multilabel_soft_margin_loss, Fl(3, 4), Fx([[1, 0, 1, 0]] * 3), Fl(4, dom=P)
    ),
    "soft_margin_loss": Case(F.soft_margin_loss, Fl(3, 4), Fx([[1, -1, 1, -1]] * 3)),
    "triplet_margin_with_distance_loss": Case(
        lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, swap=True),
        Fl(3, 4),
        Fl(3, 4),
        Fl(3, 4),
    ),
    # ---- spatial
    "affine_grid": Case(lambda t: F.affine_grid(t, [2, 1, 2, 3], align_corners=False), Fl(2, 2, 3)),
    "grid_sample": Case(
        lambda x, g: F.grid_sample(x, g, align_corners=False), Fl(2, 2, 3, 4), Fl(2, 2, 3, 2, dom=U)
    ),
    "interpolate": Case(
        lambda x: F.interpolate(x, size=(3, 5), mode="bicubic", align_corners=False), IMG
    ),
    "upsample": Case(lambda x: _quiet(F.upsample, x, scale_factor=2), Fl(2, 3, 3)),
    "upsample_bilinear": Case(
        lambda x: _quiet(F.upsample_bilinear, x, scale_factor=2), Fl(2, 2, 2, 3)
    ),
    "upsample_nearest": Case(lambda x: _quiet(F.upsample_nearest, x, scale_factor=2), Fl(2, 3, 3)),
}

# Spatial class-index losses: the `(N, C, d1, d2)` layout whose rows are strided.
EXTRA_CASES: dict[str, Case] = {
    "cross_entropy_2d": Case(
        lambda x, t: F.cross_entropy(x, t, reduction="none"),
        Fl(2, 3, 2, 2),
        Ix([[[0, 2], [1, 1]], [[2, 0], [0, 1]]]),
    ),
    "nll_loss_2d": Case(
        lambda x, t: F.nll_loss(F.log_softmax(x, 1), t), Fl(2, 3, 2, 2), Ix([[[0, 2], [1, 1]]] * 2)
    ),
    "cross_entropy_1d_input": Case(lambda x, t: F.cross_entropy(x, t), Fl(5), Ix(3)),
    "cross_entropy_probabilities": Case(
        lambda x, t: F.cross_entropy(x, t, label_smoothing=0.2), Fl(3, 4), Fl(3, 4, dom=P)
    ),
    "nll_loss_of_sliced_log_softmax": Case(
        lambda x, t: F.nll_loss(F.log_softmax(x, 1)[1:3], t), Fl(4, 3), Ix([2, 0])
    ),
}

ALL_CASES = {**CASES, **EXTRA_CASES}

# How an argument of shape `s` is made a view: each maps a base array (numpy or
# rustgrad, same indexing) to the view, and gives the base's shape.
Layout = tuple[Callable[[tuple[int, ...]], tuple[int, ...]], Callable[[Any, tuple[int, ...]], Any]]


def _rows() -> Layout:
    """``base[2:2+n]``: contiguous, offset by two leading rows (the issue's ``logits[:2]``
    pattern); 0-d arguments use a flat window."""

    def shape(s: tuple[int, ...]) -> tuple[int, ...]:
        return (s[0] + 3, *s[1:]) if s else (4,)

    def view(b: Any, s: tuple[int, ...]) -> Any:
        return b[2 : 2 + s[0]] if s else b[2:3].reshape(())

    return shape, view


def _window() -> Layout:
    """``flat[3:3+numel].reshape(s)``: contiguous at an offset."""

    def shape(s: tuple[int, ...]) -> tuple[int, ...]:
        return (math.prod(s) + 5,)

    def view(b: Any, s: tuple[int, ...]) -> Any:
        return b[3 : 3 + math.prod(s)].reshape(s)

    return shape, view


def _strided() -> Layout:
    """``base[..., 1::2]``: every other element of the last dim, from the second."""

    def shape(s: tuple[int, ...]) -> tuple[int, ...]:
        return (*s[:-1], 2 * s[-1] + 1) if s else (4,)

    def view(b: Any, s: tuple[int, ...]) -> Any:
        return b[..., 1::2] if s else b[1:2].reshape(())

    return shape, view


def _transposed() -> Layout:
    """The last two dims swapped, with a gap after each row of the base (not dense; a
    0-d or 1-D argument is strided instead)."""

    def shape(s: tuple[int, ...]) -> tuple[int, ...]:
        if len(s) < 2:
            return _strided()[0](s)
        return (*s[:-2], s[-1], s[-2] + 1)

    def view(b: Any, s: tuple[int, ...]) -> Any:
        if len(s) < 2:
            return _strided()[1](b, s)
        b = b[..., : s[-2]]
        return b.transpose(-1, -2) if hasattr(b, "requires_grad") else b.swapaxes(-1, -2)

    return shape, view


def _transposed_dense() -> Layout:
    """The last two dims swapped, dense, at an offset: ``base[1].transpose(-1, -2)``
    (0-d and 1-D arguments use a flat window instead)."""

    def shape(s: tuple[int, ...]) -> tuple[int, ...]:
        if len(s) < 2:
            return _window()[0](s)
        return (2, *s[:-2], s[-1], s[-2])

    def view(b: Any, s: tuple[int, ...]) -> Any:
        if len(s) < 2:
            return _window()[1](b, s)
        b = b[1]
        return b.transpose(-1, -2) if hasattr(b, "requires_grad") else b.swapaxes(-1, -2)

    return shape, view


LAYOUTS: dict[str, Layout] = {
    "transposed_dense": _transposed_dense(),
    "rows": _rows(),
    "window": _window(),
    "strided": _strided(),
    "transposed": _transposed(),
}


def _flat(out: Any) -> list[Any]:
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _clone_preserving_order(view: Any) -> Any:
    """PyTorch's ``view.clone()`` (preserve_format): a dense copy whose dims keep the
    view's stride order, also for a view with gaps (rustgrad's own ``clone`` copies such
    a view row-major; see the module docstring). A detached leaf."""
    order = sorted(range(view.dim()), key=lambda d: -view.stride(d))
    inverse = sorted(range(view.dim()), key=lambda d: order[d])
    return view.detach().permute(order).contiguous().permute(inverse).detach()


def _run(case: Case, layout: str, dtype: Any, clone: bool, seed: int = 0):
    """Calls the case with every argument laid out by `layout`, or (`clone`) with
    ``view.clone()`` of each such view (PyTorch's preserve_format: a transposed view's
    clone keeps its strides, so random masks are drawn in the same order). Returns
    (outputs, gradients of the differentiable args, args after the call)."""
    rng = np.random.default_rng(seed)
    shape_of, view_of = LAYOUTS[layout]

    def _to_tensor(a: np.ndarray) -> Any:
        t = torch.tensor(a)
        return t.to(dtype) if t.dtype.is_floating_point else t

    leaves, bases, views = [], [], []
    for arg in case.args:
        v = arg.make(rng)
        fill = np.nan if arg.floating else INT_FILL
        host = np.full(shape_of(arg.shape), fill, dtype=v.dtype)
        view_of(host, arg.shape)[...] = v
        base = _to_tensor(host)
        if clone:
            base = _clone_preserving_order(view_of(base, arg.shape))
        if arg.floating and arg.grad:
            base.requires_grad_()
        leaves.append(base)
        if case.inplace:
            # In place on a view of a leaf that requires grad is an error: work on a copy.
            base = base.clone()
        bases.append(base)
        view = base if clone else view_of(base, arg.shape)
        assert tuple(view.shape) == arg.shape
        if not clone:
            # The case really gets a view, never a copy.
            assert view.storage_offset() > 0 or not view.is_contiguous()
        views.append(view)
    out = case(*views)
    outs = _flat(out)
    # One backward through every floating output, with fixed weights.
    wrng = np.random.default_rng(seed + 1)
    total = None
    for o in outs:
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * _to_tensor(wrng.normal(0.0, 1.0, tuple(o.shape)))).sum()
            total = term if total is None else total + term
    grads = []
    if total is not None:
        total.backward()
    for arg, leaf in zip(case.args, leaves):
        if not (arg.floating and arg.grad) or leaf.grad is None:
            grads.append(None)
            continue
        g = leaf.grad.detach().numpy()
        if not clone:
            inside = np.asarray(view_of(g, arg.shape)).copy()
            outside = g.copy()
            view_of(outside, arg.shape)[...] = 0
            assert not outside.any(), "a gradient reached the base outside the view"
            g = inside
        grads.append(g)
    after = [np.asarray(v.detach().numpy()).copy() for v in views]
    if not clone:
        # Whatever ran in place wrote only the view's elements.
        for arg, base in zip(case.args, bases):
            host = base.detach().numpy().copy()
            view_of(host, arg.shape)[...] = 0 if not arg.floating else np.nan
            if arg.floating:
                assert np.isnan(host).all(), "an element outside the view was written"
            else:
                assert set(np.unique(host)) <= {0, INT_FILL}
    return [o.detach().numpy() for o in outs], grads, after


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_functional_on_views_matches_contiguous_copies(name: str, layout: str, dtype: str) -> None:
    case = ALL_CASES[name]
    tol = {"float64": (1e-10, 1e-12), "float32": (1e-5, 1e-6)}[dtype]

    def _close(a: Any, b: Any, what: str) -> None:
        np.testing.assert_allclose(
            a, b, rtol=tol[0], atol=tol[1], equal_nan=True, err_msg=f"{what} ({dtype})"
        )

    want_out, want_grads, want_after = _run(case, layout, getattr(torch, dtype), clone=True)
    got_out, got_grads, got_after = _run(case, layout, getattr(torch, dtype), clone=False)
    assert len(got_out) == len(want_out)
    for k, (g, w) in enumerate(zip(got_out, want_out)):
        _close(g, w, f"output {k}")
    for k, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert (g is None) == (w is None), f"gradient {k}"
        if g is not None:
            _close(g, w, f"gradient of argument {k}")
    for k, (g, w) in enumerate(zip(got_after, want_after)):
        _close(g, w, f"argument {k} after the call")


def test_every_functional_has_a_case() -> None:
    """A functional added to ``rustgrad.nn.functional.__all__`` needs a case here."""
    missing = sorted(set(F.__all__) - set(CASES))
    assert not missing, f"functionals without a view case: {missing}"
    assert set(CASES) <= set(F.__all__)


def _run_broadcast(case: Case, expanded: bool, dtype: Any, seed: int = 0):
    """Calls the case with every argument of at least two rows made of one repeated
    row: `expanded` passes ``row.expand(shape)`` (stride 0 along dim 0, every row the
    same memory), otherwise a contiguous copy. Returns (outputs, gradients of the
    differentiable args summed over the repeated dim, whether each arg was expanded)."""
    rng = np.random.default_rng(seed)

    def _to_tensor(a: np.ndarray) -> Any:
        t = torch.tensor(a)
        return t.to(dtype) if t.dtype.is_floating_point else t

    leaves, views, repeated = [], [], []
    for arg in case.args:
        v = arg.make(rng)
        # Running statistics (floats without grad) are written in place: keep them.
        rep = len(arg.shape) >= 1 and arg.shape[0] >= 2 and (arg.grad or not arg.floating)
        if rep:
            v = v[:1]
        leaf = _to_tensor(v)
        if arg.floating and arg.grad:
            leaf.requires_grad_()
        leaves.append(leaf)
        base = leaf.clone() if case.inplace else leaf
        if rep:
            view = base.expand(arg.shape) if expanded else base.expand(arg.shape).contiguous()
        else:
            view = base
        views.append(view)
        repeated.append(rep)
    outs = _flat(case(*views))
    wrng = np.random.default_rng(seed + 1)
    total = None
    for o in outs:
        if o.dtype.is_floating_point and o.requires_grad:
            term = (o * _to_tensor(wrng.normal(0.0, 1.0, tuple(o.shape)))).sum()
            total = term if total is None else total + term
    if total is not None:
        total.backward()
    grads = [
        None if leaf.grad is None else leaf.grad.detach().numpy().copy()
        for arg, leaf in zip(case.args, leaves)
    ]
    return [o.detach().numpy() for o in outs], grads, repeated


@pytest.mark.parametrize("name", sorted(ALL_CASES))
def test_functional_on_expanded_views_matches_contiguous_copies(name: str) -> None:
    """Arguments broadcast along their first dim (``row.expand(n, ...)``, stride 0):
    the same outputs and gradients as contiguous copies of the same values. An in-place
    functional on such a view raises PyTorch's error instead of writing one element
    through several positions."""
    case = ALL_CASES[name]
    if case.inplace:
        with pytest.raises(RuntimeError, match="more than one element of the written-to"):
            _run_broadcast(case, True, torch.float64)
        return
    want_out, want_grads, repeated = _run_broadcast(case, False, torch.float64)
    if not any(repeated):
        return
    got_out, got_grads, _ = _run_broadcast(case, True, torch.float64)
    for k, (g, w) in enumerate(zip(got_out, want_out)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, equal_nan=True, err_msg=f"out {k}")
    for k, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert (g is None) == (w is None), f"gradient {k}"
        if g is not None:
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"gradient {k}")
