"""The activations of ``rustgrad.nn.functional`` that the elementwise op family does not
provide as one op, with PyTorch's signatures: each is one call into the engine
(``crates/engine/src/ops/activation.rs``), which records PyTorch's dedicated node
(GluBackward0, HardshrinkBackward0, ...); re-exported by ``rustgrad.nn.functional``. See
Note [Functional activations in Rust].
"""

from __future__ import annotations

import builtins

from .. import _rustgrad
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
    return _rustgrad._glu(input, int(dim))


def hardshrink(input: Tensor, lambd: builtins.float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.hardshrink(rustgrad.tensor([-1.0, 0.2, 0.7])).tolist()
        [-1.0, 0.0, 0.699999988079071]
    """
    return _rustgrad._hardshrink(input, lambd)


def softshrink(input: Tensor, lambd: builtins.float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.softshrink(rustgrad.tensor([-1.0, 0.2, 1.5])).tolist()
        [-0.5, 0.0, 1.0]
    """
    return _rustgrad._softshrink(input, lambd)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> F.tanhshrink(rustgrad.tensor([0.0])).item()
        0.0
    """
    return _rustgrad._tanhshrink(input)


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
    if not inplace:
        return _rustgrad._threshold(input, threshold, value)
    # The node saves its input: give it a copy, so writing the result back into `input`
    # does not invalidate the graph.
    return _write_back(input, _rustgrad._threshold(input.clone(), threshold, value))


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
    return _rustgrad._prelu(input, weight)


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
    result = _rustgrad._rrelu(input, lower, upper, builtins.bool(training), generator)
    return _write_back(input, result) if inplace else result


def rrelu_(
    input: Tensor,
    lower: builtins.float = 1.0 / 8,
    upper: builtins.float = 1.0 / 3,
    training: builtins.bool = False,
) -> Tensor:
    """In-place ``rrelu``."""
    return rrelu(input, lower, upper, training, inplace=True)
