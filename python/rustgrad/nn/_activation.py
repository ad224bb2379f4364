"""The activations of ``rustgrad.nn.functional`` that the elementwise op family does not
provide as one op, with PyTorch's signatures: compositions of the engine's
differentiable ops (so double backward works), re-exported by
``rustgrad.nn.functional``. See Note [Functional activations and dropout].
"""

from __future__ import annotations

import builtins

from .._rustgrad import Tensor

__all__ = [
    "glu",
    "hardshrink",
    "prelu",
    "rrelu",
    "rrelu_",
    "softshrink",
    "tanhshrink",
    "threshold",
    "threshold_",
]


def _where(condition: Tensor, input: Tensor, other: Tensor) -> Tensor:
    from .. import where

    return where(condition, input, other)


def _write_back(input: Tensor, result: Tensor) -> Tensor:
    """The in-place form: ``result`` copied into ``input`` (one version bump)."""
    input.copy_(result)
    return input


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit: ``a * sigmoid(b)`` with ``a, b`` the halves of ``input``
    along ``dim``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.glu(rustgrad.tensor([2.0, 0.0])).item()
        1.0
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    wrapped = dim + input.dim() if dim < 0 else dim
    if wrapped < 0 or wrapped >= input.dim():
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-input.dim()}, "
            f"{input.dim() - 1}], but got {dim})"
        )
    size = input.shape[wrapped]
    if size % 2 != 0:
        raise RuntimeError(
            f"Halving dimension must be even, but dimension {wrapped} is size {size}"
        )
    a, b = input.chunk(2, wrapped)
    return a * b.sigmoid()


def hardshrink(input: Tensor, lambd: builtins.float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.hardshrink(rustgrad.tensor([-1.0, 0.2, 0.7])).tolist()
        [-1.0, 0.0, 0.699999988079071]
    """
    from .. import zeros_like

    inside = (input >= -lambd) & (input <= lambd)
    return _where(inside, zeros_like(input), input)


def softshrink(input: Tensor, lambd: builtins.float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.softshrink(rustgrad.tensor([-1.0, 0.2, 1.5])).tolist()
        [-0.5, 0.0, 1.0]
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return input - input.clamp(-lambd, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.tanhshrink(rustgrad.tensor([0.0])).item()
        0.0
    """
    return input - input.tanh()


def threshold(
    input: Tensor,
    threshold: builtins.float,
    value: builtins.float,
    inplace: builtins.bool = False,
) -> Tensor:
    """``x`` where ``x > threshold``, else ``value``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.threshold(rustgrad.tensor([-1.0, 2.0]), 0.5, 9.0).tolist()
        [9.0, 2.0]
    """
    from .. import full_like

    result = _where(input > threshold, input, full_like(input, value))
    return _write_back(input, result) if inplace else result


def threshold_(input: Tensor, threshold: builtins.float, value: builtins.float) -> Tensor:
    """In-place ``threshold``."""
    return globals()["threshold"](input, threshold, value, inplace=True)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``x`` where ``x > 0``, else ``weight * x``, with one weight, or one per channel
    (dim 1).

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.prelu(rustgrad.tensor([-2.0, 3.0]), rustgrad.tensor([0.25])).tolist()
        [-0.5, 3.0]
    """
    if input.dim() == 0:
        raise RuntimeError("Not allow zero-dim input tensor.")
    channels = input.shape[1] if input.dim() >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(
            "Mismatch of parameter numbers and input channel size. Found parameter numbers = "
            f"{weight.numel()} and channel size = {channels}."
        )
    if weight.numel() == 1:
        w = weight.reshape(())
    else:
        w = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    return _where(input > 0, input, w * input)


def rrelu(
    input: Tensor,
    lower: builtins.float = 1.0 / 8,
    upper: builtins.float = 1.0 / 3,
    training: builtins.bool = False,
    inplace: builtins.bool = False,
    generator: object | None = None,
) -> Tensor:
    """The randomized leaky ReLU: in training, each non-positive element is multiplied by
    a slope drawn uniformly from ``[lower, upper]`` (one float64 draw per such element,
    in order, from the global generator); in evaluation, by ``(lower + upper) / 2``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.rrelu(rustgrad.tensor([-2.0, 3.0]), 0.25, 0.75).tolist()
        [-1.0, 3.0]
    """
    from .. import empty, float64, ones_like

    if not training:
        slope = (lower + upper) / 2
        result = _where(input >= 0, input, input * slope)
        return _write_back(input, result) if inplace else result
    nonpositive = input.detach() <= 0
    count = int(nonpositive.sum().item())
    noise = ones_like(input.detach())
    if count:
        slopes = empty(count, dtype=float64).uniform_(lower, upper).to(input.dtype)
        noise = noise.masked_scatter(nonpositive, slopes)
    result = input * noise
    return _write_back(input, result) if inplace else result


def rrelu_(
    input: Tensor,
    lower: builtins.float = 1.0 / 8,
    upper: builtins.float = 1.0 / 3,
    training: builtins.bool = False,
) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)
