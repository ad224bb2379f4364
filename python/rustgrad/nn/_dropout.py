"""Channel-wise and alpha dropout, ``embedding``, ``embedding_bag`` and ``one_hot`` for
``rustgrad.nn.functional``, with PyTorch's signatures: PyTorch's Python-level checks and
warnings around one engine call each (``crates/engine/src/ops/dropout.rs``, whose mask is
``bernoulli_`` on the global generator as PyTorch's CPU dropout, and
``ops/embedding.rs``). See Note [Functional activations in Rust].
"""

from __future__ import annotations

import builtins
import warnings

from .. import _rustgrad
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
    """PyTorch's ``_dropout_impl`` (one engine call): a Bernoulli(1 - p) keep mask, of
    shape ``(N, C, 1, ...)`` for feature dropout, drawn with ``bernoulli_`` on the global
    generator."""
    if p == 0 or not training or input.numel() == 0:
        return input  # the same object, as PyTorch (the engine returns the same tensor)
    return _rustgrad._dropout(
        input,
        float(p),
        builtins.bool(training),
        builtins.bool(inplace),
        builtins.bool(feature),
        builtins.bool(alpha),
    )


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
    if sparse:
        raise NotImplementedError("rustgrad has no sparse gradients (sparse=True)")
    if weight.dim() == 2 and padding_idx is not None:
        rows = weight.shape[0]
        if padding_idx >= rows or padding_idx < -rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
    return _rustgrad._embedding(
        input,
        weight,
        None if padding_idx is None else int(padding_idx),
        None if max_norm is None else float(max_norm),
        float(norm_type),
        builtins.bool(scale_grad_by_freq),
    )


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
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if weight.dim() != 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape!r}) is not None, "
            f"then it must have the same shape as the input ({input.shape!r})"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None, as input is treated is a "
                "mini-batch of fixed length sequences. However, found offsets of type "
                f"{type(offsets)}"
            )
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. per_sample_weights is only "
            f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
            "on GitHub."
        )
    return _rustgrad._embedding_bag(
        input,
        weight,
        offsets,
        None if max_norm is None else float(max_norm),
        float(norm_type),
        builtins.bool(scale_grad_by_freq),
        mode,
        per_sample_weights,
        builtins.bool(include_last_offset),
        None if padding_idx is None else int(padding_idx),
    )


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Int64 one-hot vectors: shape ``tensor.shape + (num_classes,)``; ``num_classes=-1``
    means ``tensor.max() + 1``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.one_hot(rustgrad.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    return _rustgrad._one_hot(tensor, int(num_classes))
