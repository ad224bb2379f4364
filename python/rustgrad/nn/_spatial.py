"""Padding, resampling and grids of ``rustgrad.nn.functional``: ``pad``,
``interpolate`` (and the deprecated ``upsample``, ``upsample_nearest``,
``upsample_bilinear``), ``grid_sample`` and ``affine_grid``.

The functions parse PyTorch's arguments here, with PyTorch's checks, warnings and
messages; the work (forward and backward) is the engine's ``ops/spatial.rs``.
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from .._rustgrad import Tensor

__all__ = [
    "affine_grid",
    "grid_sample",
    "interpolate",
    "pad",
    "upsample",
    "upsample_bilinear",
    "upsample_nearest",
]


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return True
    if isinstance(x, numbers.Integral):
        return True
    return isinstance(x, Tensor) and not x.is_floating_point()


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pads ``input``: ``pad`` holds (before, after) amounts, from the last dim backwards.

    Args:
        input: the tensor to pad.
        pad: ``(left, right)``, ``(left, right, top, bottom)``, ... ; negative amounts
            crop (``constant`` and ``circular``).
        mode: ``'constant'``, ``'reflect'``, ``'replicate'`` or ``'circular'``; the last
            three pad the last 1, 2 or 3 dims of a 2-D to 5-D input.
        value: the fill value of ``'constant'`` (default 0).

    Returns:
        The padded tensor (grad_fn ``ConstantPadNdBackward0``, ``ReflectionPad2DBackward0``, ...).

    Example::

        >>> F.pad(rustgrad.ones(1, 3), (1, 2), value=0.5)
        tensor([[0.5000, 1.0000, 1.0000, 1.0000, 0.5000, 0.5000]])
    """
    if not isinstance(pad, (list, tuple)) and not hasattr(pad, "__iter__"):
        raise TypeError(
            f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}"
        )
    amounts = list(pad)
    for i, p in enumerate(amounts):
        if not _is_integer(p):
            raise TypeError(
                "pad(): argument 'pad' (position 2) must be tuple of ints, but found element "
                f"of type {type(p).__name__} at pos {i}"
            )
    if not isinstance(mode, str):
        raise TypeError(
            f"pad(): argument 'mode' (position 3) must be str, not {type(mode).__name__}"
        )
    return input._pad([int(p) for p in amounts], mode, None if value is None else float(value))


_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    """Resizes the spatial dims of an ``(N, C, ...)`` input to ``size`` or by ``scale_factor``.

    Args:
        input: a 3-D, 4-D or 5-D tensor.
        size: the output spatial size (an int for every dim, or one per dim).
        scale_factor: the multiplier of the spatial size (a float, or one per dim).
        mode: ``'nearest'``, ``'nearest-exact'``, ``'linear'`` (3-D), ``'bilinear'``
            (4-D), ``'bicubic'`` (4-D) or ``'trilinear'`` (5-D).
        align_corners: for the interpolating modes, whether the corner pixels' centres
            of input and output align (default False); an error for the others.
        recompute_scale_factor: when True, the output size from ``scale_factor`` also
            places the samples (instead of the scale factor itself).
        antialias: for bilinear and bicubic 4-D input, a filter stretched by the
            downsampling factor (PyTorch's antialiased resampling).

    Returns:
        The resized tensor (grad_fn ``UpsampleBilinear2DBackward0``, ...).

    Example::

        >>> F.interpolate(rustgrad.arange(4.0).view(1, 1, 4), scale_factor=0.5)
        tensor([[[0., 2.]]])
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the "
                "interpolating modes: linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False

    dim = input.dim() - 2
    output_size: list[int] | None
    scale_factors: list[float] | None
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size "
                    f"of {size}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format."
                )
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}"
                )
            output_size = [int(x) for x in size]
        else:
            output_size = [int(size) for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. "
                    "Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "scale_factor in (s1, s2, ...,sK) format."
                )
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor) for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")

    if recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor:
        assert scale_factors is not None
        output_size = [math.floor(input.size(i + 2) * scale_factors[i]) for i in range(dim)]
        scale_factors = None

    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.dim() == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and "
            "requires a 4-D tensor as input"
        )

    supported = {
        "nearest": (3, 4, 5),
        "nearest-exact": (3, 4, 5),
        "linear": (3,),
        "bilinear": (4,),
        "trilinear": (5,),
        "bicubic": (4,),
    }
    if mode == "area" and input.dim() in (3, 4, 5):
        # PyTorch's area interpolation is adaptive average pooling to the output size.
        from . import _pool

        assert output_size is not None
        pool = (_pool.adaptive_avg_pool1d, _pool.adaptive_avg_pool2d, _pool.adaptive_avg_pool3d)
        return pool[input.dim() - 3](input, output_size)
    if mode == "lanczos" and input.dim() == 4:
        raise NotImplementedError(f"rustgrad: interpolate(mode='{mode}') is not implemented")
    if mode in supported and input.dim() in supported[mode]:
        if output_size is None:
            assert scale_factors is not None
            output_size = [math.floor(input.size(i + 2) * scale_factors[i]) for i in range(dim)]
            scales: list[float | None] = list(scale_factors)
        else:
            scales = [None] * dim if scale_factors is None else list(scale_factors)
        if antialias:
            cubic = mode == "bicubic"
            return input._upsample_antialias(cubic, output_size, scales, bool(align_corners))
        return input._upsample(mode, output_size, scales, bool(align_corners))

    needs = {"linear": 3, "bilinear": 4, "trilinear": 5}
    if input.dim() in (3, 4, 5) and mode in needs:
        raise NotImplementedError(
            f"Got {input.dim()}D input, but {mode} mode needs {needs[mode]}D input"
        )
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported"
        f" (got {input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | "
        "trilinear | lanczos | area | nearest-exact"
        f" (got {mode})"
    )


def upsample(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`interpolate` (warns, as PyTorch's does).

    Example::

        >>> F.upsample(x, scale_factor=2)  # UserWarning: use interpolate
    """
    warnings.warn(
        "`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='nearest')`` (warns, as PyTorch's does).

    Example::

        >>> F.upsample_nearest(x, scale_factor=2)  # UserWarning: use interpolate
    """
    warnings.warn(
        "`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(..., mode='bilinear', align_corners=True)`` (warns).

    Example::

        >>> F.upsample_bilinear(x, scale_factor=2)  # UserWarning: use interpolate
    """
    warnings.warn(
        "`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
        stacklevel=2,
    )
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


_ALIGN_WARNING = (
    "Default grid_sample and affine_grid behavior has changed "
    "to align_corners=False since 1.3.0. Please specify "
    "align_corners=True if the old behavior is desired. "
    "See the documentation of grid_sample for details."
)


def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    """Samples ``input`` ``(N, C, H, W)`` at the places of ``grid`` ``(N, Ho, Wo, 2)``,
    or a volume ``(N, C, D, H, W)`` at ``(N, Do, Ho, Wo, 3)``.

    Args:
        input: the image (or volume) batch.
        grid: normalised (x, y[, z]) places, -1 and 1 being the input's edges.
        mode: ``'bilinear'`` (trilinear for volumes), ``'nearest'`` or ``'bicubic'``
            (PyTorch's cubic convolution, A = -0.75, over the 4 nearest pixels per axis;
            tricubic for volumes, as PyTorch 2.15's CPU kernel).
        padding_mode: ``'zeros'``, ``'border'`` or ``'reflection'`` (for bicubic the
            padding applies to each of the pixels read, not to the sampling place).
        align_corners: whether -1 and 1 are the corner pixels' centres (True) or
            their outer edges (False, the default, with PyTorch's warning when unset).

    Returns:
        ``(N, C, Ho, Wo)`` (``(N, C, Do, Ho, Wo)``), differentiable in ``input`` and
        ``grid`` (grad_fn ``GridSampler2DBackward0`` / ``GridSampler3DBackward0``).

    Example::

        >>> F.grid_sample(img, F.affine_grid(theta, img.shape, False), align_corners=False)
    """
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(
            "nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
            f"but got: '{mode}'"
        )
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(
            "nn.functional.grid_sample(): expected padding_mode "
            "to be 'zeros', 'border', or 'reflection', "
            f"but got: '{padding_mode}'"
        )
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    return input._grid_sample(grid, mode, padding_mode, bool(align_corners))


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine transforms, for :func:`grid_sample`.

    Args:
        theta: ``(N, 2, 3)`` (2-D) or ``(N, 3, 4)`` (3-D) affine matrices.
        size: the target size ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        align_corners: as in :func:`grid_sample` (default False, with a warning).

    Returns:
        ``(N, H, W, 2)`` or ``(N, D, H, W, 3)`` (grad_fn ``AffineGridGeneratorBackward0``).

    Example::

        >>> F.affine_grid(rustgrad.eye(2, 3).unsqueeze(0), (1, 1, 2, 2), align_corners=False)
    """
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(
                "Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                f"{size}. Got {theta.shape}."
            )
        spatial_size = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(
                "Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                f"{size}. Got {theta.shape}."
            )
        spatial_size = size[-3:]
    else:
        raise NotImplementedError(
            "affine_grid only supports 4D and 5D sizes, "
            "for 2D and 3D affine transforms, respectively. "
            f"Got size {size}."
        )
    if align_corners and min(spatial_size) == 1:
        warnings.warn(
            "Since version 1.3.0, affine_grid behavior has changed "
            "for unit-size grids when align_corners=True. "
            "This is not an intended use case of affine_grid. "
            "See the documentation of affine_grid for details.",
            stacklevel=2,
        )
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    return theta._affine_grid([int(s) for s in size], bool(align_corners))
