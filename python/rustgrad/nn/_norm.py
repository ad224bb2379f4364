"""Normalisation functionals of ``rustgrad.nn.functional``, with PyTorch's signatures,
defaults, checks and messages. ``batch_norm``, ``layer_norm`` and ``group_norm`` are
Rust kernels (``crates/engine/src/ops/norm.rs``); ``instance_norm``, ``rms_norm``,
``local_response_norm`` and ``normalize`` are compositions in Rust (the same file), as in
PyTorch (so their ``grad_fn`` names are PyTorch's too: ``ViewBackward0``,
``MulBackward0``, ``DivBackward0``). Each is one engine call after PyTorch's Python-level
checks.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = [
    "batch_norm",
    "group_norm",
    "instance_norm",
    "layer_norm",
    "local_response_norm",
    "normalize",
    "rms_norm",
]


def _size(shape: Any) -> str:
    return f"torch.Size({list(shape)!r})"


def _verify_batch_size(size: list[int], as_size: builtins.bool = True) -> None:
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        shown = _size(size) if as_size else str(size)
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {shown}"
        )


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: builtins.bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation over the channel dim 1 of ``(N, C, *)``.

    With ``training``, each channel is normalised by the batch's mean and biased
    variance, and ``running_mean`` / ``running_var`` (if given) are updated in place:
    ``running = (1 - momentum) * running + momentum * batch`` with the unbiased batch
    variance. Otherwise the running statistics normalise. ``weight`` and ``bias`` scale
    and shift per channel.

    Returns:
        The normalised tensor (``grad_fn`` ``NativeBatchNormBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> x = rustgrad.tensor([[1.0], [3.0]])
        >>> rm, rv = rustgrad.zeros(1), rustgrad.ones(1)
        >>> F.batch_norm(x, rm, rv, training=True, eps=0.0)
        tensor([[-1.],
                [ 1.]])
        >>> rm, rv
        (tensor([0.2000]), tensor([1.1000]))
    """
    if momentum is None or isinstance(momentum, (Tensor, str)):
        raise TypeError(
            "batch_norm(): argument 'momentum' (position 7) must be float, not "
            f"{type(momentum).__name__}"
        )
    if training:
        _verify_batch_size(list(input.shape))
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither be None")
    return _rustgrad._batch_norm(
        input,
        running_mean,
        running_var,
        weight,
        bias,
        builtins.bool(training),
        float(momentum),
        float(eps),
    )


def _shape_list(normalized_shape: Any) -> list[int]:
    if isinstance(normalized_shape, Sequence) and not isinstance(normalized_shape, str):
        return [int(d) for d in normalized_shape]
    return [int(normalized_shape)]


def layer_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation over the last ``len(normalized_shape)`` dims, then an
    elementwise ``weight`` and ``bias`` of shape ``normalized_shape``.

    Returns:
        The normalised tensor (``grad_fn`` ``NativeLayerNormBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.layer_norm(rustgrad.tensor([[1.0, 3.0]]), (2,), eps=0.0)
        tensor([[-1.,  1.]])
    """
    return _rustgrad._layer_norm(input, _shape_list(normalized_shape), weight, bias, float(eps))


def group_norm(
    input: Tensor,
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Group normalisation: the channels of ``(N, C, *)`` split into ``num_groups``
    groups, each normalised per sample, then a per-channel ``weight`` and ``bias``.

    Returns:
        The normalised tensor (``grad_fn`` ``NativeGroupNormBackward0``).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.group_norm(rustgrad.tensor([[1.0, 3.0]]), 1, eps=0.0)
        tensor([[-1.,  1.]])
    """
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}"
        )
    shape = list(input.shape)
    _verify_batch_size([shape[0] * shape[1] // num_groups, num_groups, *shape[2:]], as_size=False)
    return _rustgrad._group_norm(input, int(num_groups), weight, bias, float(eps))


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: builtins.bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Instance normalisation: each channel of each sample of ``(N, C, *)`` normalised
    on its own. As PyTorch, this is :func:`batch_norm` over the input viewed as
    ``(1, N * C, *)``; the running statistics (if given) receive the mean over the
    batch of the per-sample updates.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.instance_norm(rustgrad.tensor([[[1.0, 3.0]]]), eps=0.0)
        tensor([[[-1.,  1.]]])
    """
    shape = list(input.shape)
    if use_input_stats:
        prod = 1
        for s in shape[2:]:
            prod *= s
        if prod == 1:
            raise ValueError(
                f"Expected more than 1 spatial element when training, got input size {_size(shape)}"
            )
    return _rustgrad._instance_norm(
        input,
        running_mean,
        running_var,
        weight,
        bias,
        builtins.bool(use_input_stats),
        float(momentum),
        float(eps),
    )


def rms_norm(
    input: Tensor,
    normalized_shape: Any,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """Root-mean-square normalisation over the last ``len(normalized_shape)`` dims:
    ``x * rsqrt(mean(x**2) + eps) * weight``; ``eps`` defaults to the dtype's machine
    epsilon, as PyTorch.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.rms_norm(rustgrad.tensor([[3.0, 4.0]]), (2,), eps=0.0)
        tensor([[0.8485, 1.1314]])
    """
    dims = _shape_list(normalized_shape)
    return _rustgrad._rms_norm(input, dims, weight, None if eps is None else float(eps))


def local_response_norm(
    input: Tensor,
    size: int,
    alpha: float = 1e-4,
    beta: float = 0.75,
    k: float = 1.0,
) -> Tensor:
    """Local response normalisation across channels (dim 1):
    ``x / (k + alpha * mean(x**2 over size neighbouring channels)) ** beta``, the window
    zero-padded by ``size // 2`` before and ``(size - 1) // 2`` after, as PyTorch.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.local_response_norm(rustgrad.ones(1, 2, 1), 2, alpha=1.0, beta=1.0, k=0.0)
        tensor([[[2., 1.]]])
    """
    dim = input.dim()
    if dim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality                          input (got {dim} "
            "dimensions)"
        )
    return _rustgrad._local_response_norm(input, int(size), float(alpha), float(beta), float(k))


def normalize(
    input: Tensor,
    p: float = 2.0,
    dim: int = 1,
    eps: float = 1e-12,
    out: Tensor | None = None,
) -> Tensor:
    """``input / max(norm_p(input, dim), eps)``: unit ``p``-norm slices along ``dim``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.normalize(rustgrad.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """
    result = _rustgrad._normalize(input, float(p), int(dim), float(eps))
    if out is None:
        return result
    return out.copy_(result)
