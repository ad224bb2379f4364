"""``rustgrad.nn.functional`` (``import rustgrad.nn.functional as F``): for now the
activations of the elementwise op family, with PyTorch's signatures (``inplace=``
included). Convolutions, pooling, normalisation and losses come with the
neural-network functionals.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any

from .._elementwise import (
    celu,
    celu_,
    elu,
    elu_,
    gelu,
    hardsigmoid,
    hardswish,
    hardtanh,
    hardtanh_,
    leaky_relu,
    leaky_relu_,
    logsigmoid,
    mish,
    relu6,
    selu,
    selu_,
    silu,
    softplus,
    softsign,
)
from .._rustgrad import Tensor
from ._activation import (
    glu,
    hardshrink,
    prelu,
    rrelu,
    rrelu_,
    softshrink,
    tanhshrink,
    threshold,
    threshold_,
)
from ._attention import multi_head_attention_forward, scaled_dot_product_attention
from ._conv import (
    bilinear,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    fold,
    linear,
    pixel_shuffle,
    pixel_unshuffle,
    unfold,
)
from ._dropout import (
    alpha_dropout,
    dropout1d,
    dropout2d,
    dropout3d,
    embedding,
    embedding_bag,
    feature_alpha_dropout,
    one_hot,
)
from ._loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cosine_similarity,
    cross_entropy,
    ctc_loss,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    pairwise_distance,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
    triplet_margin_with_distance_loss,
)
from ._norm import (
    batch_norm,
    group_norm,
    instance_norm,
    layer_norm,
    local_response_norm,
    normalize,
    rms_norm,
)
from ._pool import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_avg_pool3d,
    adaptive_max_pool1d,
    adaptive_max_pool1d_with_indices,
    adaptive_max_pool2d,
    adaptive_max_pool2d_with_indices,
    adaptive_max_pool3d,
    adaptive_max_pool3d_with_indices,
    avg_pool1d,
    avg_pool2d,
    avg_pool3d,
    fractional_max_pool2d,
    fractional_max_pool2d_with_indices,
    fractional_max_pool3d,
    fractional_max_pool3d_with_indices,
    lp_pool1d,
    lp_pool2d,
    lp_pool3d,
    max_pool1d,
    max_pool1d_with_indices,
    max_pool2d,
    max_pool2d_with_indices,
    max_pool3d,
    max_pool3d_with_indices,
    max_unpool1d,
    max_unpool2d,
    max_unpool3d,
)
from ._spatial import (
    affine_grid,
    grid_sample,
    interpolate,
    pad,
    upsample,
    upsample_bilinear,
    upsample_nearest,
)

__all__ = [
    # pooling and normalisation (_pool.py, _norm.py)
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool2d",
    "adaptive_max_pool2d_with_indices",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "max_pool1d",
    "max_pool1d_with_indices",
    "max_pool2d",
    "max_pool2d_with_indices",
    "max_unpool2d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool1d",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
    "avg_pool3d",
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "max_pool3d",
    "max_pool3d_with_indices",
    "max_unpool1d",
    "max_unpool3d",
    "normalize",
    "rms_norm",
    # activations and the rest
    # convolutions and linear layers (_conv.py)
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "fold",
    "linear",
    "pixel_shuffle",
    "pixel_unshuffle",
    "unfold",
    # activations and the rest
    "alpha_dropout",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "celu",
    "celu_",
    "cosine_embedding_loss",
    "cosine_similarity",
    "cross_entropy",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "elu",
    "elu_",
    "embedding",
    "embedding_bag",
    "feature_alpha_dropout",
    "gelu",
    "glu",
    "hardshrink",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "hardtanh_",
    "huber_loss",
    "kl_div",
    "l1_loss",
    "leaky_relu",
    "leaky_relu_",
    "log_softmax",
    "logsigmoid",
    "margin_ranking_loss",
    "mish",
    "mse_loss",
    "nll_loss",
    "one_hot",
    "pairwise_distance",
    "poisson_nll_loss",
    "prelu",
    "relu",
    "relu6",
    "relu_",
    "rrelu",
    "rrelu_",
    "selu",
    "selu_",
    "sigmoid",
    "silu",
    "smooth_l1_loss",
    "softmax",
    "softmin",
    "softplus",
    "softshrink",
    "softsign",
    "tanh",
    "tanhshrink",
    "threshold",
    "threshold_",
    "triplet_margin_loss",
]
# Padding, resampling and grids (nn/_spatial.py).
__all__ += [
    "affine_grid",
    "grid_sample",
    "interpolate",
    "pad",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]
# Attention (nn/_attention.py).
__all__ += ["multi_head_attention_forward", "scaled_dot_product_attention"]


def dropout(
    input: Tensor,
    p: builtins.float = 0.5,
    training: builtins.bool = True,
    inplace: builtins.bool = False,
) -> Tensor:
    """Zeroes each element with probability ``p`` and scales the others by
    ``1 / (1 - p)`` during training; the identity (``input`` itself) when
    ``training=False`` or ``p == 0``. PyTorch's CPU algorithm: the mask is
    ``empty_like(input).bernoulli_(1 - p)`` divided by ``1 - p``, multiplied in (grad_fn
    ``MulBackward0``), so it draws from the global generator and a checkpointed block
    redraws the same mask when its RNG state is restored.

    Args:
        input: the tensor.
        p: the probability of zeroing an element, in ``[0, 1]``.
        training: apply dropout (else return ``input``).
        inplace: multiply into ``input``.

    Returns:
        The result (``input`` itself when in place or not applied).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.dropout(rustgrad.ones(4), p=1.0).tolist()
        [0.0, 0.0, 0.0, 0.0]
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    from . import _dropout

    return _dropout._dropout_impl(input, p, training, inplace, False, False)


def relu(input: Tensor, inplace: builtins.bool = False) -> Tensor:
    """``max(x, 0)`` elementwise (in place when ``inplace``)."""
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    return input.relu_()


def sigmoid(input: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))`` elementwise."""
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent elementwise."""
    return input.tanh()


def _softmax_dim(name: str, ndim: int) -> int:
    # PyTorch's _get_softmax_dim: the implicit choice, with its deprecation warning.
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``exp(x) / sum(exp(x))`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmax", input.dim())
    return input.softmax(dim, dtype)


def softmin(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``softmax(-x)`` along ``dim``."""
    if dim is None:
        dim = _softmax_dim("softmin", input.dim())
    return (-input).softmax(dim, dtype)


def log_softmax(input: Tensor, dim: Any = None, _stacklevel: int = 3, dtype: Any = None) -> Tensor:
    """``log(softmax(x))`` along ``dim``, computed stably."""
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim())
    return input.log_softmax(dim, dtype)


# margin, Gaussian and CTC losses (_loss.py, issue 21)
__all__ += [
    "ctc_loss",
    "gaussian_nll_loss",
    "hinge_embedding_loss",
    "multi_margin_loss",
    "multilabel_margin_loss",
    "multilabel_soft_margin_loss",
    "soft_margin_loss",
    "triplet_margin_with_distance_loss",
]
