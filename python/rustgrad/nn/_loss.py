"""The losses of ``rustgrad.nn.functional``, with PyTorch's signatures: argument parsing
(legacy ``size_average`` / ``reduce``, PyTorch's ValueErrors and warnings) around one
engine call each (``crates/engine/src/ops/loss.rs``), re-exported by
``rustgrad.nn.functional``. See Note [Class-index losses] and Note [Functional losses and
norms in Rust] in docs/architecture.md.
"""

from __future__ import annotations

import builtins
import warnings

from .. import _rustgrad
from .._rustgrad import Tensor, _cross_entropy, _nll_loss, _pointwise_loss

__all__ = [
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "margin_ranking_loss",
    "mse_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "nll_loss",
    "pairwise_distance",
    "poisson_nll_loss",
    "smooth_l1_loss",
    "soft_margin_loss",
    "triplet_margin_loss",
    "triplet_margin_with_distance_loss",
]


def _legacy_reduction(size_average: bool | None, reduce: bool | None) -> str:
    """PyTorch's ``_Reduction.legacy_get_string``: the reduction the deprecated
    ``size_average`` / ``reduce`` pair means, with PyTorch's deprecation warning."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        reduction = "mean"
    elif reduce:
        reduction = "sum"
    else:
        reduction = "none"
    warnings.warn(
        f"size_average and reduce args will be deprecated, please use reduction='{reduction}' "
        "instead.",
        stacklevel=3,
    )
    return reduction


def _reduction(
    size_average: bool | None, reduce: bool | None, reduction: str, weighted: bool = False
) -> str:
    """The reduction after the legacy flags; a bad one raises here, except for a
    weighted loss, whose reduction PyTorch checks after the weight
    (``_check_weighted_reduction``)."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in ("none", "mean", "sum") and not weighted:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _check_weighted_reduction(weight: Tensor | None, reduction: str) -> None:
    """PyTorch 2.15's message for a bad reduction of ``mse_loss``, ``l1_loss`` and
    ``huber_loss`` given a ``weight``: raised after the weight's checks, where its
    weighted branch reduces."""
    if weight is not None and reduction not in ("none", "mean", "sum"):
        raise ValueError(
            f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
        )


def _check_class_targets(input: Tensor, target: Tensor) -> None:
    """The checks PyTorch's ``nll_loss_nd`` raises as ValueError."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1 and target.dim() == 1 and target.shape[0] != 1:
        raise ValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}"
        )
    if input.dim() != 1 and target.dim() >= 1 and input.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
            f"({target.shape[0]})."
        )


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The negative log-likelihood loss of log-probabilities at class indices.

    Args:
        input: log-probabilities, ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: class indices (int64), ``()``, ``(N,)`` or ``(N, d1, ...)``; each in
            ``[0, C)`` or equal to ``ignore_index`` (IndexError otherwise).
        weight: one weight per class (``(C,)``), not differentiable.
        size_average: deprecated (see ``reduction``).
        ignore_index: targets equal to it contribute nothing (nor to the mean's divisor).
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"`` | ``"mean"`` (divided by the targets' total weight) |
            ``"sum"``.

    Returns:
        The loss (grad_fn ``NllLossBackward0``, ``NllLoss2DBackward0`` for N-D input).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[-1.0, -2.0], [-3.0, -0.5]])
        >>> F.nll_loss(x, rustgrad.tensor([0, 1])).item()
        0.75
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_class_targets(input, target)
    return _nll_loss(input, target, weight, reduction, int(ignore_index))


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: builtins.float = 0.0,
) -> Tensor:
    """The cross entropy between logits and class indices or class probabilities.

    With class indices (an int64 ``target`` shaped as for ``nll_loss``) it is one fused
    log-softmax + NLL node (forward and first-order backward in one pass over the
    logits; the backward is differentiable for double backward); with class
    probabilities (a floating ``target`` of ``input``'s shape) it is
    ``-(log_softmax(input) * target * weight).sum(...)``, as in PyTorch.

    Args:
        input: logits, ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
        target: class indices or class probabilities.
        weight: one weight per class (``(C,)``).
        size_average: deprecated (see ``reduction``).
        ignore_index: class-index targets equal to it contribute nothing.
        reduce: deprecated (see ``reduction``).
        reduction: ``"none"`` | ``"mean"`` | ``"sum"``.
        label_smoothing: in ``[0, 1]``: the target becomes
            ``(1 - label_smoothing) * target + label_smoothing / C``.

    Returns:
        The loss.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.zeros(2, 4, requires_grad=True)
        >>> loss = F.cross_entropy(x, rustgrad.tensor([1, 3]))
        >>> round(loss.item(), 4), loss.grad_fn.name()
        (1.3863, 'NllLossBackward0')
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(input.shape) != tuple(target.shape):
        _check_class_targets(input, target)
    return _cross_entropy(
        input, target, weight, reduction, int(ignore_index), float(label_smoothing)
    )


# ---------------------------------------------------------------- pointwise losses (native)


def _size_warning(input: Tensor, target: Tensor) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(
            f"Using a target size ({target.shape!r}) that is different to the input size "
            f"({input.shape!r}). This will likely lead to incorrect results due to "
            "broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """The mean squared error ``(input - target) ** 2``, reduced (grad_fn
    ``MseLossBackward0``). Shapes that differ are broadcast, with PyTorch's warning.
    ``weight`` (the input's shape, differentiable) multiplies the squared errors; its
    mean divides by ``weight.sum()`` (Note [Weighted elementwise losses]).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.mse_loss(rustgrad.tensor([1.0, 2.0]), rustgrad.tensor([0.0, 0.0])).item()
        2.5
    """
    reduction = _reduction(size_average, reduce, reduction, weight is not None)
    _size_warning(input, target)
    _check_weight(input, weight)
    _check_weighted_reduction(weight, reduction)
    input, target = _promoted(input, target)
    return _pointwise_loss(input, target, "mse", 0.0, weight, None, reduction)


def _check_weight(input: Tensor, weight: Tensor | None) -> None:
    """PyTorch 2.15's check of the ``weight`` of ``mse_loss``, ``l1_loss`` and
    ``huber_loss``: the input's shape exactly (it then broadcasts with the loss)."""
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _promoted(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor]:
    """``input`` and ``target`` in their promoted dtype, in which PyTorch's elementwise
    losses compute (``mse_loss(float32, int64)`` is float32, ``(float16, float32)``
    float32; two integer tensors stay integers and meet the kernel's dtype error)."""
    if not isinstance(input, Tensor) or not isinstance(target, Tensor):
        return input, target
    if input.dtype == target.dtype:
        return input, target
    dtype = (_rustgrad.empty(0, dtype=input.dtype) + _rustgrad.empty(0, dtype=target.dtype)).dtype
    return input.to(dtype), target.to(dtype)


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: builtins.float = 1.0,
) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta``, with
    ``d = input - target`` (grad_fn ``SmoothL1LossBackward0``; ``beta=0`` is L1).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.smooth_l1_loss(rustgrad.tensor([0.5, 3.0]), rustgrad.zeros(2)).item()
        1.3125
    """
    reduction = _reduction(size_average, reduce, reduction)
    _size_warning(input, target)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    if beta == 0:
        # PyTorch's smooth_l1_loss is the l1_loss composite there.
        return _rustgrad._l1_loss(input, target, reduction)
    input, target = _promoted(input, target)
    return _pointwise_loss(input, target, "smooth_l1", float(beta), None, None, reduction)


def huber_loss(
    input: Tensor,
    target: Tensor,
    reduction: str = "mean",
    delta: builtins.float = 1.0,
    weight: Tensor | None = None,
) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)``, with
    ``d = input - target`` (grad_fn ``HuberLossBackward0``). ``weight`` (the input's
    shape, differentiable) multiplies the unreduced loss before a plain mean or sum.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.huber_loss(rustgrad.tensor([0.5, 3.0]), rustgrad.zeros(2), delta=2.0).item()
        2.0625
    """
    reduction = _reduction(None, None, reduction, weight is not None)
    _size_warning(input, target)
    _check_weight(input, weight)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _check_weighted_reduction(weight, reduction)
    dtype = input.dtype if isinstance(input, Tensor) else None
    input, target = _promoted(input, target)
    # With a weight, PyTorch weights the unreduced loss (in the input's dtype).
    unweighted = reduction if weight is None else "none"
    if dtype is None or input.dtype == dtype:
        out = _pointwise_loss(input, target, "huber", float(delta), None, None, unweighted)
    else:
        # PyTorch's huber_loss writes into a tensor of the input's dtype: first its cast
        # error (an integer input with a float target), then the result rounded to it.
        _rustgrad.empty(0, dtype=dtype).add_(_rustgrad.empty(0, dtype=input.dtype))
        out = _pointwise_loss(input, target, "huber", float(delta), None, None, unweighted)
        out = out.to(dtype)
    if weight is None:
        return out
    return _rustgrad._weighted_loss(out, weight, reduction, False)


def _check_not_differentiable(function: str, **arguments: Tensor | None) -> None:
    """PyTorch's ``check_no_requires_grad``: the loss has no derivative formula for these
    arguments, so one that requires grad (with grad mode on) is refused, in order."""
    from .. import is_grad_enabled

    if not is_grad_enabled():
        return
    for name, value in arguments.items():
        if value is not None and value.requires_grad:
            raise RuntimeError(
                f"The function '{function}' is not differentiable with respect to argument "
                f"'{name}'. This input cannot have requires_grad True."
            )


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``-w (y log x + (1 - y) log(1 - x))`` of probabilities ``x`` in ``[0, 1]``, the logs
    clamped at -100 (grad_fn ``BinaryCrossEntropyBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> round(F.binary_cross_entropy(rustgrad.tensor([0.5]), rustgrad.tensor([1.0])).item(), 4)
        0.6931
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape!r}) that is different to the input size "
            f"({input.shape!r}) is deprecated. Please ensure they have the same size."
        )
    _check_not_differentiable("binary_cross_entropy", weight=weight)
    return _pointwise_loss(input, target, "bce", 0.0, weight, None, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits, with
    ``pos_weight`` weighting the positive term (grad_fn
    ``BinaryCrossEntropyWithLogitsBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([0.0])
        >>> round(F.binary_cross_entropy_with_logits(x, rustgrad.tensor([1.0])).item(), 4)
        0.6931
    """
    reduction = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Target size ({target.shape!r}) must be the same as input size ({input.shape!r})"
        )
    _check_not_differentiable(
        "binary_cross_entropy_with_logits", weight=weight, pos_weight=pos_weight
    )
    return _pointwise_loss(input, target, "bce_logits", 0.0, weight, pos_weight, reduction)


# ---------------------------------------------------------------- composite losses


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    weight: Tensor | None = None,
) -> Tensor:
    """``|input - target|``, reduced (composite, as PyTorch's: grad_fn ``MeanBackward0``,
    ``SumBackward0`` or ``AbsBackward0``). ``weight`` (the input's shape,
    differentiable) multiplies the errors; its mean divides by ``weight.sum()``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.l1_loss(rustgrad.tensor([1.0, -3.0]), rustgrad.zeros(2)).item()
        2.0
    """
    reduction = _reduction(size_average, reduce, reduction, weight is not None)
    _size_warning(input, target)
    _check_weight(input, weight)
    _check_weighted_reduction(weight, reduction)
    return _rustgrad._l1_loss(input, target, reduction, weight)


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: builtins.bool = False,
) -> Tensor:
    """The Kullback-Leibler divergence of log-probabilities ``input`` from ``target``
    (probabilities, or log-probabilities with ``log_target``): ``target * (log target -
    input)`` pointwise; ``"batchmean"`` divides the sum by the batch size, ``"mean"``
    (with PyTorch's warning) by the element count.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[0.5, 0.5]]).log()
        >>> F.kl_div(x, rustgrad.tensor([[0.5, 0.5]]), reduction="batchmean").item()
        0.0
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn(
            "reduction: 'mean' divides the total loss by both the batch size and the support "
            "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
            "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
            "major release.",
            stacklevel=2,
        )
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _rustgrad._kl_div(input, target, reduction, builtins.bool(log_target))


def poisson_nll_loss(
    input: Tensor,
    target: Tensor,
    log_input: builtins.bool = True,
    full: builtins.bool = False,
    size_average: bool | None = None,
    eps: builtins.float = 1e-8,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """The Poisson negative log-likelihood: ``exp(input) - target * input`` (log-rate
    input) or ``input - target * log(input + eps)``, plus Stirling's term for targets
    above 1 when ``full``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.poisson_nll_loss(rustgrad.tensor([0.0]), rustgrad.tensor([1.0])).item()
        1.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _rustgrad._poisson_nll_loss(
        input, target, builtins.bool(log_input), builtins.bool(full), float(eps), reduction
    )


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: builtins.float = 1e-8) -> Tensor:
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim`` (norms clamped
    without recording the clamp, as in PyTorch).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.cosine_similarity(rustgrad.tensor([[1.0, 0.0]]), rustgrad.tensor([[1.0, 1.0]])).item()
        0.7071067690849304
    """
    return _rustgrad._cosine_similarity(x1, x2, int(dim), float(eps))


def pairwise_distance(
    x1: Tensor,
    x2: Tensor,
    p: builtins.float = 2.0,
    eps: builtins.float = 1e-6,
    keepdim: builtins.bool = False,
) -> Tensor:
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> a, b = rustgrad.tensor([[3.0, 0.0]]), rustgrad.tensor([[0.0, 4.0]])
        >>> round(F.pairwise_distance(a, b).item(), 4)
        5.0
    """
    return _rustgrad._pairwise_distance(x1, x2, float(p), float(eps), builtins.bool(keepdim))


def cosine_embedding_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: builtins.float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1`` (PyTorch's composite, with its ``1e-12`` in the norms).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[1.0, 0.0]])
        >>> F.cosine_embedding_loss(x, x, rustgrad.tensor([1.0])).item()
        0.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _rustgrad._cosine_embedding_loss(input1, input2, target, float(margin), reduction)


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: builtins.float = 0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``, reduced.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> one = rustgrad.tensor([1.0])
        >>> F.margin_ranking_loss(one, 2 * one, one, margin=0.5).item()
        1.5
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(
            f"margin_ranking_loss : All input tensors should have same dimension but got "
            f"sizes: input1: {input1.shape!r}, input2: {input2.shape!r}, target: "
            f"{target.shape!r} "
        )
    return _rustgrad._margin_ranking_loss(input1, input2, target, float(margin), reduction)


def triplet_margin_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    margin: builtins.float = 1.0,
    p: builtins.float = 2,
    eps: builtins.float = 1e-6,
    swap: builtins.bool = False,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` with
    ``d = pairwise_distance`` (``swap``: the smaller of ``d(a, n)`` and ``d(p, n)``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> a = rustgrad.zeros(1, 2)
        >>> round(F.triplet_margin_loss(a, a, a + 3.0).item(), 4)
        0.0
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _rustgrad._triplet_margin_loss(
        anchor,
        positive,
        negative,
        float(margin),
        float(p),
        float(eps),
        builtins.bool(swap),
        reduction,
    )


# ------------------------------------------------- margin, Gaussian and CTC losses (issue 21)


def _torch():  # noqa: ANN202
    """The ``rustgrad`` package (imported late: it imports this module)."""
    import rustgrad

    return rustgrad


def hinge_embedding_loss(
    input: Tensor,
    target: Tensor,
    margin: builtins.float = 1.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1 (ATen's
    composition: ``where(target != 1, (margin - input).clamp_min_(0), 0) + where(target
    != -1, input, 0)``), reduced.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([0.3, 0.2])
        >>> round(F.hinge_embedding_loss(x, rustgrad.tensor([1.0, -1.0])).item(), 4)
        0.55
    """
    reduction = _reduction(size_average, reduce, reduction)
    zeros = _torch().zeros_like(input)
    margin_clamp = (margin - input).clamp_min_(0)
    output_margin = _torch().where(target != 1, margin_clamp, zeros)
    output_self = _torch().where(target != -1, input, zeros)
    return _reduce(output_margin + output_self, reduction)


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    """ATen's ``apply_loss_reduction``."""
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def soft_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``log(1 + exp(-target * input))``, reduced (grad_fn ``SoftMarginLossBackward0``;
    the target is not differentiable).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> round(F.soft_margin_loss(rustgrad.zeros(2), rustgrad.ones(2)).item(), 4)
        0.6931
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _promoted(input, target)
    if isinstance(input, Tensor) and not input.dtype.is_floating_point:
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {_type_name(input)}"
        )
    return _pointwise_loss(input, target, "soft_margin", 0.0, None, None, reduction)


def _type_name(t: Tensor) -> str:
    """The C++ scalar type name of ``t``'s dtype (``Long`` for int64)."""
    names = {
        "torch.int64": "Long",
        "torch.int32": "Int",
        "torch.int16": "Short",
        "torch.int8": "Char",
        "torch.uint8": "Byte",
        "torch.bool": "Bool",
    }
    return names.get(str(t.dtype), str(t.dtype))


def multilabel_margin_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per sample, ``sum_{j, d} max(0, 1 - x[j] + x[d]) / C`` over the target classes
    ``j`` (``target``'s entries up to the first -1) and the other classes ``d``; one
    native node (grad_fn ``MultilabelMarginLossBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> y = rustgrad.tensor([[3, 0, -1, 1]])
        >>> round(F.multilabel_margin_loss(x, y).item(), 4)
        0.85
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _rustgrad._multilabel_margin_loss(input, target, reduction)


def multilabel_soft_margin_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``-(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))`` (times
    ``weight``) averaged over the classes, then reduced, composed as PyTorch composes it.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x, y = rustgrad.zeros(1, 2), rustgrad.ones(1, 2)
        >>> round(F.multilabel_soft_margin_loss(x, y).item(), 4)
        0.6931
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    from .functional import logsigmoid

    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.dim() - 1
    classes = input.size(class_dim)
    loss = loss.sum(dim=class_dim) / classes
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(reduction + " is not valid")


def multi_margin_loss(
    input: Tensor,
    target: Tensor,
    p: int = 1,
    margin: builtins.float = 1.0,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """Per sample, ``sum_{c != y} weight[y] * max(0, margin - x[y] + x[c]) ** p / C``
    with ``y`` its class index; ``p`` is 1 or 2. One native node (grad_fn
    ``MultiMarginLossBackward0``); ``weight`` is not differentiable.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(F.multi_margin_loss(x, rustgrad.tensor([3])).item(), 4)
        0.325
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    return _rustgrad._multi_margin_loss(input, target, int(p), float(margin), weight, reduction)


def gaussian_nll_loss(
    input: Tensor,
    target: Tensor,
    var: Tensor | builtins.float,
    full: builtins.bool = False,
    eps: builtins.float = 1e-6,
    reduction: str = "mean",
) -> Tensor:
    """The Gaussian negative log-likelihood ``0.5 * (log(var) + (input - target) ** 2 /
    var)`` (plus ``0.5 * log(2 pi)`` when ``full``), with ``var`` clamped to ``eps``
    without recording the clamp; ``var`` may lack the last dim or have one dim of size
    1 (homoscedastic), as in PyTorch.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.zeros(3)
        >>> F.gaussian_nll_loss(x, x, rustgrad.ones(3)).item()
        0.0
    """
    import math

    from .. import no_grad

    if isinstance(var, builtins.float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _torch().ones_like(input)
    elif _torch().any(var < 0):
        raise ValueError("var has negative entry/entries")
    if var.size() != input.size():
        if input.size()[:-1] == var.size():
            var = _torch().unsqueeze(var, -1)
        elif (
            input.ndim == var.ndim
            and builtins.sum(y for x, y in zip(input.size(), var.size(), strict=True) if x != y)
            == 1
        ):
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction != "none" and reduction != "mean" and reduction != "sum":
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    with no_grad():
        var.clamp_(min=eps)
    loss = 0.5 * (_torch().log(var) + (input - target) ** 2 / var)
    if full:
        loss += 0.5 * math.log(2 * math.pi)
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def triplet_margin_with_distance_loss(
    anchor: Tensor,
    positive: Tensor,
    negative: Tensor,
    *,
    distance_function: object | None = None,
    margin: builtins.float = 1.0,
    swap: builtins.bool = False,
    reduction: str = "mean",
) -> Tensor:
    """``max(0, margin + d(anchor, positive) - d(anchor, negative))`` for any distance
    function ``d`` (default ``pairwise_distance``); ``swap`` takes the smaller of ``d(a,
    n)`` and ``d(p, n)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> a = rustgrad.zeros(1, 2)
        >>> F.triplet_margin_with_distance_loss(a, a, a + 3.0).item()
        0.0
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not (a_dim == p_dim and p_dim == n_dim):
        raise RuntimeError(
            f"The anchor, positive, and negative tensors are expected to have "
            f"the same number of dimensions, but got: anchor {a_dim}D, "
            f"positive {p_dim}D, and negative {n_dim}D inputs"
        )
    distance = pairwise_distance if distance_function is None else distance_function
    dist_pos = distance(anchor, positive)  # type: ignore[operator]
    dist_neg = distance(anchor, negative)  # type: ignore[operator]
    if swap:
        dist_swap = distance(positive, negative)  # type: ignore[operator]
        dist_neg = _torch().minimum(dist_neg, dist_swap)
    loss = _torch().clamp_min(margin + dist_pos - dist_neg, 0)
    if reduction == "sum":
        return _torch().sum(loss)
    if reduction == "mean":
        return _torch().mean(loss)
    return loss


def _ctc_lengths(name: str, lengths: object) -> list[int]:
    """A length argument of ``ctc_loss`` as a list of ints: an integer tensor (0-d or
    1-D) or a sequence of ints."""
    if isinstance(lengths, Tensor):
        if lengths.dtype.is_floating_point or str(lengths.dtype) == "torch.bool":
            raise RuntimeError(f"{name} must be integral")
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]  # type: ignore[attr-defined]


def ctc_loss(
    log_probs: Tensor,
    targets: Tensor,
    input_lengths: Tensor | tuple[int, ...] | list[int],
    target_lengths: Tensor | tuple[int, ...] | list[int],
    blank: int = 0,
    reduction: str = "mean",
    zero_infinity: builtins.bool = False,
) -> Tensor:
    """The connectionist temporal classification loss of ``log_probs`` (``(T, N, C)``,
    or ``(T, C)`` unbatched) against ``targets`` (padded ``(N, S)`` or the targets
    concatenated, 1-D). One native node (grad_fn ``CtcLossBackward0``) computes the
    per-sample negative log-likelihoods with the alpha / beta recursions in log space;
    ``mean`` divides each by its target length (at least 1) and averages, as PyTorch.
    The lengths are both integer tensors or both sequences of ints.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> lp = rustgrad.zeros(2, 1, 2).log_softmax(2)
        >>> round(F.ctc_loss(lp, rustgrad.tensor([[1]]), (2,), (1,), reduction="sum").item(), 4)
        0.2877
    """
    if isinstance(input_lengths, Tensor) != isinstance(target_lengths, Tensor):
        raise TypeError(
            "ctc_loss() received an invalid combination of arguments: input_lengths and "
            "target_lengths must both be tensors or both be tuples of ints"
        )
    if not isinstance(input_lengths, Tensor) and (
        isinstance(input_lengths, builtins.int) or isinstance(target_lengths, builtins.int)
    ):
        raise TypeError(
            "ctc_loss() received an invalid combination of arguments: expected tuple of ints "
            "input_lengths and target_lengths"
        )
    reduction = _reduction(None, None, reduction)
    inputs = _ctc_lengths("input_lengths", input_lengths)
    target = _ctc_lengths("target_lengths", target_lengths)
    return _rustgrad._ctc_loss(
        log_probs,
        targets,
        inputs,
        target,
        int(blank),
        reduction,
        builtins.bool(zero_infinity),
    )
