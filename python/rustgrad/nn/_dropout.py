"""Channel-wise and alpha dropout, ``embedding``, ``embedding_bag`` and ``one_hot`` for
``rustgrad.nn.functional``, with PyTorch's signatures: compositions of the engine's
differentiable ops and samplers (``bernoulli_`` on the global generator, as PyTorch's
CPU dropout). See Note [Functional activations and dropout].
"""

from __future__ import annotations

import builtins
import math
import warnings

from .._rustgrad import Tensor

__all__ = [
    "alpha_dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "embedding",
    "embedding_bag",
    "feature_alpha_dropout",
    "one_hot",
]

# SELU's negative saturation value, -scale * alpha (PyTorch's alpha dropout constant).
_ALPHA = 1.7580993408473766


def _check_p(p: builtins.float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout_impl(
    input: Tensor,
    p: builtins.float,
    training: builtins.bool,
    inplace: builtins.bool,
    feature: builtins.bool,
    alpha: builtins.bool,
) -> Tensor:
    """PyTorch's ``_dropout_impl``: a Bernoulli(1 - p) keep mask, of shape ``(N, C, 1,
    ...)`` for feature dropout, drawn with ``bernoulli_`` on the global generator."""
    from .. import empty, zeros

    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        zero = zeros((), dtype=input.dtype)
        return input.mul_(zero) if inplace else input * zero
    if feature:
        if input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(input.shape[:2]) + (1,) * (input.dim() - 2)
    else:
        shape = tuple(input.shape)
    keep = empty(shape, dtype=input.dtype).bernoulli_(1 - p)
    if not alpha:
        keep.div_(1 - p)
        return input.mul_(keep) if inplace else input * keep
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    shift = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    scaled = keep * a
    if inplace:
        return input.mul_(scaled).add_(shift)
    return input * scaled + shift


def dropout1d(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = True,
    inplace: builtins.bool = False,
) -> Tensor:
    """Zeroes whole channels of a ``(N, C, L)`` or ``(C, L)`` input with probability
    ``p`` and scales the rest by ``1 / (1 - p)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.dropout1d(rustgrad.ones(2, 3), p=1.0).tolist()
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    """
    _check_p(p)
    ndim = input.dim()
    if ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {ndim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs)."
        )
    if ndim == 2:
        batched = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
        result = _dropout_impl(batched, p, training, inplace, True, False)
        return result.squeeze_(0) if inplace else result.squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def _feature_dim_warning(name: str, ndim: int, expected: tuple[int, int]) -> None:
    if ndim not in expected:
        warnings.warn(
            f"{name}: Received a {ndim}-D input to {name}, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that "
            f"{name} exists to provide channel-wise dropout on inputs with "
            f"{expected[0] - 1} spatial dimensions, a channel dimension, and an optional "
            f"batch dimension (i.e. {expected[0]}D or {expected[1]}D inputs).",
            stacklevel=3,
        )


def dropout2d(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = True,
    inplace: builtins.bool = False,
) -> Tensor:
    """Zeroes whole channels (2-D feature maps) of an ``(N, C, H, W)`` input with
    probability ``p``; a 3-D input is read as ``(N, C, L)``, with PyTorch's warning.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.dropout2d(rustgrad.ones(1, 2, 1, 1), training=False).flatten().tolist()
        [1.0, 1.0]
    """
    _check_p(p)
    ndim = input.dim()
    _feature_dim_warning("dropout2d", ndim, (3, 4))
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = True,
    inplace: builtins.bool = False,
) -> Tensor:
    """Zeroes whole channels (3-D feature maps) of an ``(N, C, D, H, W)`` or
    ``(C, D, H, W)`` input with probability ``p``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.dropout3d(rustgrad.ones(1, 1, 1, 1, 2), p=1.0).flatten().tolist()
        [0.0, 0.0]
    """
    _check_p(p)
    ndim = input.dim()
    _feature_dim_warning("dropout3d", ndim, (4, 5))
    if ndim == 4:
        batched = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
        result = _dropout_impl(batched, p, training, inplace, True, False)
        return result.squeeze_(0) if inplace else result.squeeze(0)
    return _dropout_impl(input, p, training, inplace, True, False)


def alpha_dropout(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = False,
    inplace: builtins.bool = False,
) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance: dropped elements
    become ``-1.7581`` and the result is scaled and shifted back (``a * x + b``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.alpha_dropout(rustgrad.ones(2), 0.5).tolist()
        [1.0, 1.0]
    """
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = False,
    inplace: builtins.bool = False,
) -> Tensor:
    """``alpha_dropout`` of whole channels (mask of shape ``(N, C, 1, ...)``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.feature_alpha_dropout(rustgrad.ones(1, 2), 0.5).tolist()
        [[1.0, 1.0]]
    """
    _check_p(p)
    return _dropout_impl(input, p, training, inplace, True, True)


def _renorm_rows(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """PyTorch's ``embedding_renorm_``: rows used by ``indices`` whose ``norm_type``-norm
    exceeds ``max_norm`` are scaled in place to ``max_norm / (norm + 1e-7)``, unrecorded."""
    from .. import linalg, no_grad

    with no_grad():
        for row in sorted(set(indices.flatten().tolist())):
            norm = linalg.vector_norm(weight[row], norm_type).item()
            if norm > max_norm:
                weight[row] *= max_norm / (norm + 1e-7)


def _check_indices(input: Tensor, rows: int) -> None:
    from .. import int64

    if input.dtype != int64:
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar "
            f"types: Long, Int; but got {input.dtype} instead (while checking arguments for "
            "embedding)"
        )
    if input.numel() and (input.min().item() < 0 or input.max().item() >= rows):
        raise IndexError("index out of range in self")


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: builtins.float | None = None,
    norm_type: builtins.float = 2.0,
    scale_grad_by_freq: builtins.bool = False,
    sparse: builtins.bool = False,
) -> Tensor:
    """Rows of ``weight`` at the indices ``input``: shape ``input.shape + (D,)``. The row
    at ``padding_idx`` gets no gradient; ``max_norm`` renormalises the rows used, in
    place, first.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> w = rustgrad.tensor([[0.0, 1.0], [2.0, 3.0]])
        >>> F.embedding(rustgrad.tensor([1, 0]), w).tolist()
        [[2.0, 3.0], [0.0, 1.0]]
    """
    from .. import where

    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    rows = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -rows:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx = rows + padding_idx
    if sparse:
        raise NotImplementedError("rustgrad has no sparse gradients (sparse=True)")
    _check_indices(input, rows)
    if max_norm is not None:
        _renorm_rows(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    out = weight.index_select(0, flat)
    if scale_grad_by_freq and flat.numel():
        counts = (flat.unsqueeze(1) == flat.unsqueeze(0)).sum(1).to(weight.dtype)
        scale = (1.0 / counts).unsqueeze(1)
        # Value unchanged, gradient of each row divided by its index's frequency.
        out = out * scale + (out * (1 - scale)).detach()
    if padding_idx is not None:
        pad = (flat == padding_idx).unsqueeze(1)
        out = where(pad, out.detach(), out)
    return out.reshape(tuple(input.shape) + (weight.shape[1],))


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: builtins.float | None = None,
    norm_type: builtins.float = 2,
    scale_grad_by_freq: builtins.bool = False,
    mode: str = "mean",
    sparse: builtins.bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: builtins.bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    """Sums, means or maxima of bags of embedding rows: a 2-D ``input`` holds one bag
    per row; a 1-D ``input`` is split into bags at ``offsets``. Empty bags give zeros;
    ``per_sample_weights`` (``mode="sum"``) scales each row first; ``padding_idx`` rows
    are left out of their bag.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> w = rustgrad.tensor([[1.0, 1.0], [3.0, 5.0]])
        >>> F.embedding_bag(rustgrad.tensor([0, 1, 1]), w, rustgrad.tensor([0, 1])).tolist()
        [[1.0, 1.0], [3.0, 5.0]]
    """
    from .. import stack, tensor, zeros

    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
            "on GitHub."
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
        bag = input.shape[1]
        starts = list(range(0, input.numel(), bag)) if bag else [0] * input.shape[0]
        flat = input.reshape(-1)
        weights = None if per_sample_weights is None else per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        starts = [int(v) for v in offsets.tolist()]
        if include_last_offset:
            starts = starts[:-1]
        flat = input
        weights = per_sample_weights
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if starts and starts[0] != 0:
        raise RuntimeError(
            f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
            f"start from position 0. However, got {starts[0]}"
        )
    rows = weight.shape[0]
    if padding_idx is not None and padding_idx < 0:
        padding_idx += rows
    ends = starts[1:] + [flat.numel()]
    if include_last_offset and offsets is not None and input.dim() == 1:
        ends = [int(v) for v in offsets.tolist()][1:]
    if any(s > e or e > flat.numel() for s, e in zip(starts, ends)):
        raise RuntimeError("offsets must be non-decreasing and at most the input length")
    embedded = embedding(flat, weight, None, max_norm, norm_type, scale_grad_by_freq)
    if weights is not None:
        embedded = embedded * weights.unsqueeze(1)
    indices = flat.tolist()
    bags = []
    for s, e in zip(starts, ends):
        keep = [i for i in range(s, e) if indices[i] != padding_idx]
        if not keep:
            bags.append(zeros(weight.shape[1], dtype=weight.dtype))
            continue
        rows_of_bag = embedded.index_select(0, tensor(keep))
        if mode == "sum":
            bags.append(rows_of_bag.sum(0))
        elif mode == "mean":
            bags.append(rows_of_bag.mean(0))
        else:
            bags.append(rows_of_bag.amax(0))
    if not bags:
        return zeros(0, weight.shape[1], dtype=weight.dtype)
    return stack(bags)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Int64 one-hot vectors: shape ``tensor.shape + (num_classes,)``; ``num_classes=-1``
    means ``tensor.max() + 1``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.one_hot(rustgrad.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    from .. import int64, zeros

    if tensor.dtype != int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        return zeros(tuple(tensor.shape) + (num_classes,), dtype=int64)
    if tensor.min().item() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1
    elif tensor.max().item() >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = zeros(tuple(tensor.shape) + (num_classes,), dtype=int64)
    return out.scatter(-1, tensor.unsqueeze(-1), 1)
