"""``tensor_split`` / ``hsplit`` / ``vsplit`` / ``dsplit``, ``equal``,
``broadcast_shapes`` and ``Tensor._is_view``, with PyTorch's signatures and errors.

Each piece of a ``tensor_split`` is a ``narrow`` of the input, so, as in PyTorch, every
piece is a view recorded by its own ``SliceBackward0`` node (not one ``SplitBackward0``
node as ``split`` / ``chunk`` record).
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

from ._rustgrad import Tensor, int64
from ._size import Size

__all__ = ["broadcast_shapes", "dsplit", "equal", "hsplit", "tensor_split", "vsplit"]

_TENSOR_SPLIT_SIGNATURES = (
    " * (Tensor input, tuple of ints indices, int dim = 0)\n"
    " * (Tensor input, Tensor tensor_indices_or_sections, int dim = 0)\n"
    " * (Tensor input, int sections, int dim = 0)\n"
)


def _type_name(obj: Any) -> str:
    return "Tensor" if isinstance(obj, Tensor) else type(obj).__name__


def _is_int(obj: Any) -> bool:
    return not isinstance(obj, builtins.bool) and hasattr(obj, "__index__")


def _pieces(input: Tensor, bounds: Sequence[int], dim: int) -> tuple[Tensor, ...]:
    """The slices ``[0:b0], [b0:b1], ..., [bn:]`` of ``dim``, with Python's slice
    semantics (negative bounds wrap, bounds clamp, an end before its start is empty)."""
    size = input.size(dim)
    out = []
    starts = [0, *bounds]
    ends = [*bounds, None]
    for start, end in zip(starts, ends):
        first, last, _ = slice(start, end).indices(size)
        out.append(input.narrow(dim, first, max(0, last - first)))
    return tuple(out)


def tensor_split(
    input: Tensor, indices_or_sections: Any = None, dim: int = 0, **kwargs: Any
) -> tuple[Tensor, ...]:
    """Splits ``input`` along ``dim`` into views, as ``numpy.array_split``.

    Args:
        input: the tensor to split (at least 1-d).
        indices_or_sections: an int ``n`` (``n`` pieces, the first ``size % n`` one
            element longer), a sequence of indices (the pieces between them), or an int64
            tensor holding either (0-d: sections, 1-d: indices). PyTorch's keyword names
            ``sections=``, ``indices=`` and ``tensor_indices_or_sections=`` are taken too.
        dim: the dimension to split.

    Returns:
        A tuple of views of ``input``, each recorded by its own ``SliceBackward0``.

    Example:
        >>> import rustgrad as torch
        >>> [p.tolist() for p in torch.arange(5).tensor_split(2)]
        [[0, 1, 2], [3, 4]]
    """
    for key in ("sections", "indices", "tensor_indices_or_sections"):
        if key in kwargs:
            if indices_or_sections is not None:
                raise TypeError(f"tensor_split() got multiple values for argument '{key}'")
            indices_or_sections = kwargs.pop(key)
    if kwargs or indices_or_sections is None or isinstance(dim, builtins.bool) or not _is_int(dim):
        got = ", ".join(
            [
                _type_name(input),
                _type_name(indices_or_sections),
                *(f"{k}={_type_name(v)}" for k, v in kwargs.items()),
            ]
        )
        raise TypeError(
            f"tensor_split() received an invalid combination of arguments - got ({got}), "
            f"but expected one of:\n{_TENSOR_SPLIT_SIGNATURES}"
        )
    if not isinstance(input, Tensor):
        raise TypeError(
            f"tensor_split(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    if input.dim() == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    arg = indices_or_sections
    if isinstance(arg, Tensor):
        if arg.dtype != int64:
            name = repr(arg.dtype).removeprefix("torch.").removeprefix("rustgrad.")
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to have dtype of long, "
                f"but got {_scalar_type_name(name)}"
            )
        if arg.dim() > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {arg.dim()} dims"
            )
        arg = arg.item() if arg.dim() == 0 else arg.tolist()
    if _is_int(arg):
        sections = operator.index(arg)
        if sections <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
        size = input.size(dim)
        base, extra = divmod(size, sections)
        bounds, end = [], 0
        for i in range(sections - 1):
            end += base + (1 if i < extra else 0)
            bounds.append(end)
        return _pieces(input, bounds, dim)
    if isinstance(arg, (list, tuple)) and all(_is_int(i) for i in arg):
        return _pieces(input, [operator.index(i) for i in arg], dim)
    if isinstance(arg, (list, tuple)):
        pos, bad = next((p, i) for p, i in enumerate(arg) if not _is_int(i))
        raise TypeError(
            f"tensor_split(): argument 'indices' failed to unpack the object at pos {pos + 1} "
            f'with error "type must be tuple of ints,but got {_type_name(bad)}"'
        )
    raise TypeError(
        f"tensor_split() received an invalid combination of arguments - got "
        f"({_type_name(input)}, {_type_name(arg)}), "
        f"but expected one of:\n{_TENSOR_SPLIT_SIGNATURES}"
    )


def _scalar_type_name(dtype_name: str) -> str:
    """PyTorch's ScalarType name of a dtype (``float32`` -> ``Float``)."""
    return {
        "float32": "Float",
        "float64": "Double",
        "float16": "Half",
        "bfloat16": "BFloat16",
        "int32": "Int",
        "int16": "Short",
        "int8": "Char",
        "uint8": "Byte",
        "bool": "Bool",
    }.get(dtype_name, dtype_name)


def _directional_split(
    name: str, input: Tensor, indices_or_sections: Any, min_dims: int, dim: int
) -> tuple[Tensor, ...]:
    if input.dim() < min_dims:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {min_dims} dimension, "
            f"but got a tensor with {input.dim()} dimensions!"
        )
    if _is_int(indices_or_sections):
        sections = operator.index(indices_or_sections)
        size = input.size(dim)
        if sections == 0 or size % sections != 0:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {dim}, but the size of the "
                f"dimension {size} is not divisible by the split_size {sections}!"
            )
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 1 (dim 0 for a 1-d tensor); an int must divide the size.

    Example:
        >>> import rustgrad as torch
        >>> [p.shape for p in torch.zeros(2, 4).hsplit(2)]
        [torch.Size([2, 2]), torch.Size([2, 2])]
    """
    return _directional_split("hsplit", input, indices_or_sections, 1, 0 if input.dim() == 1 else 1)


def vsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 0 of a tensor of at least 2 dims; an int must divide
    the size.

    Example:
        >>> import rustgrad as torch
        >>> [p.shape for p in torch.zeros(4, 2).vsplit([1])]
        [torch.Size([1, 2]), torch.Size([3, 2])]
    """
    return _directional_split("vsplit", input, indices_or_sections, 2, 0)


def dsplit(input: Tensor, indices_or_sections: Any) -> tuple[Tensor, ...]:
    """``tensor_split`` along dim 2 of a tensor of at least 3 dims; an int must divide
    the size.

    Example:
        >>> import rustgrad as torch
        >>> [p.shape for p in torch.zeros(1, 1, 4).dsplit(2)]
        [torch.Size([1, 1, 2]), torch.Size([1, 1, 2])]
    """
    return _directional_split("dsplit", input, indices_or_sections, 3, 2)


def equal(input: Tensor, other: Tensor) -> builtins.bool:
    """Whether two tensors have the same shape and equal elements (NaN is never equal).

    Example:
        >>> import rustgrad as torch
        >>> torch.equal(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))
        True
    """
    if not isinstance(input, Tensor):
        raise TypeError(
            f"equal(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    if not isinstance(other, Tensor):
        raise TypeError(
            f"equal(): argument 'other' (position 2) must be Tensor, not {_type_name(other)}"
        )
    if input.shape != other.shape:
        return False
    return builtins.bool((input == other).all())


def broadcast_shapes(*shapes: Any) -> Size:
    """The shape that tensors of ``shapes`` broadcast to, without making tensors.

    Example:
        >>> import rustgrad as torch
        >>> torch.broadcast_shapes((2, 1), (3,))
        torch.Size([2, 3])
    """
    # PyTorch's broadcast_shapes is Python too (torch._refs._broadcast_shapes): the same
    # walk, checks and messages, without its symbolic-shape guards.
    as_tuples = tuple((s,) if _is_int(s) else s for s in shapes if s is not None)
    if not as_tuples:
        return Size([])
    for shape in as_tuples:
        if not isinstance(shape, Sequence):
            raise RuntimeError(
                "Input shapes should be of type ints, a tuple of ints, or a list of ints, "
                f"got {shape}"
            )
    common = [1] * max(len(shape) for shape in as_tuples)
    for index, shape in enumerate(as_tuples):
        for i in range(-1, -1 - len(shape), -1):
            if shape[i] == common[i]:
                continue
            if common[i] == 1:
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if shape[i] != 1 and common[i] != shape[i]:
                raise RuntimeError(
                    f"Attempting to broadcast a dimension of length {shape[i]} at {i}! "
                    f"Mismatching argument at index {index} had {shape}; but expected shape "
                    f"should be broadcastable to {common}"
                )
    return Size(common)


def _is_view(self: Tensor) -> builtins.bool:
    """Whether this tensor is a view of another (has a ``_base``)."""
    return self._base is not None


Tensor.tensor_split = tensor_split  # type: ignore[attr-defined]
Tensor.hsplit = hsplit  # type: ignore[attr-defined]
Tensor.vsplit = vsplit  # type: ignore[attr-defined]
Tensor.dsplit = dsplit  # type: ignore[attr-defined]
Tensor.equal = equal  # type: ignore[attr-defined]
Tensor._is_view = _is_view  # type: ignore[attr-defined]
