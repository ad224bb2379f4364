"""``rustgrad.nn.init``: PyTorch's parameter initialisers, on rustgrad's generator.

Each function fills its tensor in place under ``no_grad`` and draws from the same
stream as PyTorch's (``uniform_`` / ``normal_`` reproduce PyTorch's CPU generator), so
``rustgrad.manual_seed(s); nn.Linear(3, 4)`` holds PyTorch's numbers bit for bit.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from .._rustgrad import Tensor
from .._rustgrad import tensor as _tensor
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain",
    "constant_",
    "dirac_",
    "eye_",
    "kaiming_normal_",
    "kaiming_uniform_",
    "normal_",
    "ones_",
    "orthogonal_",
    "sparse_",
    "trunc_normal_",
    "uniform_",
    "xavier_normal_",
    "xavier_uniform_",
    "zeros_",
]


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``"relu"``: sqrt(2), ``"tanh"``: 5/3, ...).

    Example:
        >>> from rustgrad.nn import init
        >>> init.calculate_gain("tanh")
        1.6666666666666667
    """
    linear_fns = [
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
    ]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif (not isinstance(param, bool) and isinstance(param, int)) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    num_input_fmaps = tensor.size(1)
    num_output_fmaps = tensor.size(0)
    receptive_field_size = 1
    for s in tensor.shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _gen(generator: Any) -> dict[str, Any]:
    return {} if generator is None else {"generator": generator}


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Tensor:
    """Fills ``tensor`` from U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, **_gen(generator))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Tensor:
    """Fills ``tensor`` from N(mean, std²)."""
    with no_grad():
        return tensor.normal_(mean, std, **_gen(generator))


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Any = None,
) -> Tensor:
    """Fills ``tensor`` from N(mean, std²) truncated to [a, b], by rejection sampling as
    PyTorch 2.15 does (so the same seed gives PyTorch's numbers): redraws from N(mean,
    std²) while values fall outside when most of the mass is inside, otherwise uniform
    proposals on [a, b] accepted with probability pdf(x) / pdf(mode)."""
    from .. import empty_like, where

    def norm_cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    if tensor.is_meta:
        return tensor  # no data to fill (Note [Meta device])
    gen = _gen(generator)
    with no_grad():
        if norm_cdf((b - mean) / std) - norm_cdf((a - mean) / std) > 0.3:
            # Bounds in the tensor's dtype, so that the mask agrees with its values.
            lo = tensor.new_tensor(a).item()
            hi = tensor.new_tensor(b).item()
            result = tensor.normal_(mean, std, **gen)
            while True:
                mask = (result < lo) | (result > hi)
                if not mask.any().item():
                    break
                result = where(mask, empty_like(result).normal_(mean, std, **gen), result)
            if result is not tensor:
                tensor.copy_(result)
            return tensor
        mode = max(a, min(mean, b))
        log_peak = -0.5 * ((mode - mean) / std) ** 2

        def log_density_gap(x: Tensor) -> Tensor:
            return x.sub_(mean).div_(std).pow_(2).mul_(-0.5).sub_(log_peak)

        candidates = empty_like(tensor)
        accept_buf = empty_like(tensor)
        tensor.uniform_(a, b, **gen)
        candidates.copy_(tensor)
        log_density_gap(candidates)
        pending = accept_buf.uniform_(**gen).log_().gt(candidates)
        result = tensor
        while pending.any().item():
            candidates.uniform_(a, b, **gen)
            result = where(pending, candidates, result)
            log_density_gap(candidates)
            pending = where(pending, accept_buf.uniform_(**gen).log_().gt(candidates), pending)
        if result is not tensor:
            tensor.copy_(result)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros."""
    return constant_(tensor, 0.0)


def _copy_numpy(tensor: Tensor, array: np.ndarray) -> Tensor:
    with no_grad():
        tensor.copy_(_tensor(array.reshape(tuple(tensor.shape))).to(tensor.dtype))
    return tensor


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D ``tensor`` with the identity matrix."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _copy_numpy(tensor, np.eye(*tuple(tensor.shape)))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3-, 4- or 5-D ``tensor`` with the Dirac delta (convolution identity),
    per group."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    array = np.zeros(sizes)
    for g in range(groups):
        for d in range(min_dim):
            index = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
            array[index] = 1
    return _copy_numpy(tensor, array)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Any = None) -> Tensor:
    """Glorot normal: N(0, std²) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    return gain / math.sqrt(fan)


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He uniform: U(-bound, bound) with bound = gain * sqrt(3 / fan_mode)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Tensor:
    """He normal: N(0, std²) with std = gain / sqrt(fan_mode)."""
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Any = None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR decomposition of a normal sample, as
    PyTorch (the QR runs in numpy: rustgrad has no ``linalg.qr`` yet)."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:
        return tensor  # a meta tensor has no data to fill (Note [Meta device])
    rows = tensor.size(0)
    cols = tensor.numel() // rows
    with no_grad():
        flattened = tensor.new_zeros((rows, cols)).normal_(0, 1, **_gen(generator))
        sample = flattened.numpy().astype(np.float64)
    if rows < cols:
        sample = sample.T
    q, r = np.linalg.qr(sample)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _copy_numpy(tensor, q * gain)


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Any = None) -> Tensor:
    """A 2-D sparse matrix: N(0, std²) with ``ceil(sparsity * rows)`` zeros per column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .. import randperm

    rows, cols = tuple(tensor.shape)
    num_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, **_gen(generator))
        for col_idx in range(cols):
            row_indices = randperm(rows)
            for row in row_indices[:num_zeros].tolist():
                tensor[row, col_idx] = 0
    return tensor
