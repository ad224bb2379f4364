"""Shape, movement and indexing ops: function forms (``rustgrad.cat``, ``rustgrad.flip``,
...), the Python-level methods of this family (``reshape_as``, ``swapaxes``, ``mT``,
...) and advanced indexing in ``t[...]`` / ``t[...] = v`` (integer tensors, lists and
bool masks), which reduces the index to views plus one ``aten::index`` call.

Example:
    >>> import rustgrad as torch
    >>> torch.cat([torch.ones(2), torch.zeros(1)])
    tensor([1., 1., 0.])
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from ._rustgrad import Tensor
from ._rustgrad import bool as _bool
from ._rustgrad import tensor as _tensor

__all__ = [
    "as_strided",
    "as_strided_",
    "broadcast_to",
    "cat",
    "chunk",
    "concat",
    "concatenate",
    "diag",
    "diag_embed",
    "diagonal",
    "flatten",
    "flip",
    "gather",
    "hstack",
    "index_add",
    "index_fill",
    "index_select",
    "masked_fill",
    "masked_select",
    "meshgrid",
    "movedim",
    "moveaxis",
    "narrow",
    "nonzero",
    "permute",
    "repeat_interleave",
    "reshape",
    "roll",
    "scatter",
    "scatter_add",
    "scatter_reduce",
    "select",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "swapdims",
    "t",
    "take",
    "take_along_dim",
    "tile",
    "tril",
    "triu",
    "unbind",
    "unflatten",
    "unsqueeze",
    "vstack",
    "where",
]


def _t(x: Any) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    return x


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Concatenates tensors along ``dim`` (dtypes promote).

    Example:
        >>> torch.cat([torch.ones(1, 2), torch.zeros(1, 2)], dim=0).shape
        torch.Size([2, 2])
    """
    if isinstance(tensors, (list, tuple)) and not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return Tensor._cat(tensors, dim)


concat = cat
concatenate = cat


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Stacks equally shaped tensors along a new dim ``dim``."""
    return Tensor._stack(tensors, dim)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenates along dim 1 (dim 0 for 1-d tensors), after ``atleast_1d``."""
    ts = [t.reshape(1) if t.dim() == 0 else t for t in tensors]
    return cat(ts, 0 if ts and ts[0].dim() == 1 else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Concatenates along dim 0 after ``atleast_2d`` (1-d tensors become rows)."""
    return cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)


def split(tensor: Tensor, split_size_or_sections: Any, dim: int = 0) -> tuple[Tensor, ...]:
    """Pieces of ``split_size_or_sections`` (an int or a list of sizes) along ``dim``."""
    return _t(tensor).split(split_size_or_sections, dim)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``chunks`` pieces of equal size along ``dim``."""
    return _t(input).chunk(chunks, dim)


def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The slices along ``dim``, with the dim removed."""
    return _t(input).unbind(dim)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """``length`` elements of ``dim`` from ``start`` (a view)."""
    return _t(input).narrow(dim, start, length)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """``input[..., index, ...]`` along ``dim`` (a view)."""
    return _t(input).select(dim, index)


def flip(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reverses the order of elements along ``dims``."""
    return _t(input).flip(dims)


def roll(input: Tensor, shifts: Any, dims: Any = None) -> Tensor:
    """Rolls elements by ``shifts`` along ``dims`` (the flattened tensor without dims)."""
    return _t(input).roll(shifts, dims)


def tile(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Repeats ``input`` along each dim (``dims`` padded with leading 1s)."""
    return _t(input).tile(dims)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims."""
    return _t(input).tril(diagonal)


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims."""
    return _t(input).triu(diagonal)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The diagonal ``offset`` of dims ``dim1``, ``dim2`` (a view)."""
    return _t(input).diagonal(offset, dim1, dim2)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d tensor as a diagonal matrix, or a matrix's diagonal."""
    return _t(input).diag(diagonal)


def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices with the last dim of ``input`` on diagonal ``offset``."""
    return _t(input).diag_embed(offset, dim1, dim2)


def movedim(input: Tensor, source: Any, destination: Any) -> Tensor:
    """Moves dims ``source`` to ``destination``."""
    return _t(input).movedim(source, destination)


moveaxis = movedim


def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of ``transpose``."""
    return _t(input).transpose(axis0, axis1)


def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose``."""
    return _t(input).transpose(dim0, dim1)


def t(input: Tensor) -> Tensor:
    """Transpose of a tensor with at most 2 dims."""
    return _t(input).t()


def permute(input: Tensor, dims: Sequence[int]) -> Tensor:
    """Reorders dims."""
    return _t(input).permute(dims)


def reshape(input: Tensor, shape: Sequence[int]) -> Tensor:
    """A tensor of another shape (a view when possible)."""
    return _t(input).reshape(shape)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merges dims ``start_dim..=end_dim``."""
    return _t(input).flatten(start_dim, end_dim)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Splits ``dim`` into ``sizes`` (one may be -1): a view."""
    return _unflatten(_t(input), dim, sizes)


def squeeze(input: Tensor, dim: Any = None) -> Tensor:
    """Removes size-1 dims."""
    return _t(input).squeeze(dim)


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Inserts a size-1 dim."""
    return _t(input).unsqueeze(dim)


def broadcast_to(input: Tensor, size: Sequence[int]) -> Tensor:
    """Broadcasts to ``size`` without copying (``expand``)."""
    return _t(input).expand(*size)


def repeat_interleave(
    input: Tensor, repeats: Any, dim: Any = None, *, output_size: Any = None
) -> Tensor:
    """Repeats each element ``repeats`` times along ``dim``."""
    return _t(input).repeat_interleave(repeats, dim, output_size=output_size)


def as_strided(
    input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: Any = None
) -> Tensor:
    """A view of ``input``'s storage with explicit sizes, strides and storage offset."""
    return _t(input).as_strided(size, stride, storage_offset)


def as_strided_(
    input: Tensor, size: Sequence[int], stride: Sequence[int], storage_offset: Any = None
) -> Tensor:
    """``as_strided`` in place: ``input`` takes the given sizes, strides and offset."""
    return _t(input).as_strided_(size, stride, storage_offset)


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries ``index`` along ``dim``."""
    return _t(input).index_select(dim, index)


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: builtins.bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` (for ``dim`` 0)."""
    return _t(input).gather(dim, index, sparse_grad=sparse_grad)


def scatter(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Any = None,
    value: Any = None,
    *,
    reduce: Any = None,
) -> Tensor:
    """A copy of ``input`` with ``src`` (or ``value``) written at ``index``."""
    return _t(input).scatter(dim, index, src, value, reduce=reduce)


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of ``input`` with ``src`` added at ``index``."""
    return _t(input).scatter_add(dim, index, src)


def scatter_reduce(
    input: Tensor,
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """A copy of ``input`` with ``src`` reduced into it at ``index`` along ``dim``.

    Args:
        reduce: ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``.
        include_self: whether the elements of ``input`` take part in the reduction.

    Example:
        >>> torch.zeros(2).scatter_reduce(0, torch.tensor([0, 0]), torch.tensor([1.0, 2.0]), "sum")
        tensor([3., 0.])
    """
    return _t(input).scatter_reduce(dim, index, src, reduce, include_self=include_self)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha: Any = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at ``index`` along ``dim``."""
    return _t(input).index_add(dim, index, source, alpha=alpha)


def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` at ``index`` along ``dim``."""
    return _t(input).index_fill(dim, index, value)


def masked_fill(input: Tensor, mask: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` where ``mask`` is true."""
    return _t(input).masked_fill(mask, value)


def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` is true, as a 1-d tensor."""
    return _t(input).masked_select(mask)


def take(input: Tensor, index: Tensor) -> Tensor:
    """The elements at flat positions ``index``."""
    return _t(input).take(index)


def take_along_dim(input: Tensor, indices: Tensor, dim: Any = None) -> Tensor:
    """``gather`` with ``input`` and ``indices`` broadcast apart from ``dim`` (of the
    flattened tensors when ``dim`` is None)."""
    return _take_along_dim(_t(input), indices, dim)


def nonzero(input: Tensor, *, as_tuple: builtins.bool = False) -> Any:
    """The coordinates of the nonzero elements."""
    return _t(input).nonzero(as_tuple=as_tuple)


def where(condition: Tensor, input: Any = None, other: Any = None) -> Any:
    """``where(cond)`` is ``nonzero(cond, as_tuple=True)``; ``where(cond, x, y)`` takes
    ``x`` where ``cond`` holds and ``y`` elsewhere (tensors or numbers, broadcast, with
    PyTorch's promotion; gradients flow to ``x`` and ``y``).

    Example:
        >>> rustgrad.where(rustgrad.tensor([True, False]), rustgrad.tensor([1.0, 2.0]), 0.0)
        tensor([1., 0.])
    """
    if input is None and other is None:
        return _t(condition).nonzero(as_tuple=True)
    if input is None or other is None:
        raise TypeError(
            "where() received an invalid combination of arguments: expected (Tensor "
            "condition) or (Tensor condition, Tensor input, Tensor other)"
        )
    if isinstance(input, Tensor):
        return input.where(condition, other)
    if isinstance(other, Tensor):
        if (
            isinstance(input, (builtins.bool, int, float))
            and isinstance(condition, Tensor)
            and condition.dtype == _bool
        ):
            # The number joins as a wrapped number, with its range check (Note
            # [Wrapped scalars]): `where(c, 300, uint8_tensor)` is PyTorch's error.
            return other.where(condition.logical_not(), input)
        return _wrap_number(input, other).where(condition, other)
    if not isinstance(input, (builtins.bool, int, float)) or not isinstance(
        other, (builtins.bool, int, float)
    ):
        raise TypeError(
            f"where(): argument 'input' must be Tensor or Number, not {type(input).__name__}"
        )
    return _tensor(input).where(condition, _tensor(other))


def _wrap_number(value: Any, like: Tensor) -> Tensor:
    """A Python number as a 0-d tensor of its wrapped-number dtype next to ``like``
    (Note [Wrapped scalars]): ``like``'s dtype unless the number is of a higher kind."""
    kind = 0 if isinstance(value, builtins.bool) else 1 if isinstance(value, int) else 2
    if not isinstance(value, (builtins.bool, int, float)):
        raise TypeError(
            f"where(): argument 'input' must be Tensor or Number, not {type(value).__name__}"
        )
    like_kind = 2 if like.dtype.is_floating_point else 0 if like.dtype == _bool else 1
    if kind <= like_kind:
        return _tensor(value, dtype=like.dtype)
    return _tensor(value)


def meshgrid(*tensors: Any, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 1-d tensors (``indexing`` "ij", the default, or "xy")."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(
            f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}'
        )
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t_ in tensors:
        if t_.dim() > 1:
            raise RuntimeError(
                f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t_!r}"
            )
    ts = [t_.reshape(-1) for t_ in tensors]
    # "xy" swaps the first two inputs and then the first two grids back, so the grids
    # have shape (len(y), len(x), ...).
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t_.numel() for t_ in ts]
    out = []
    for i, t_ in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        out.append(t_.view(*view).expand(*shape))
    if swap:
        out[0], out[1] = out[1], out[0]
    return tuple(out)


# ----- Python-level methods ------------------------------------------------------------


def _unflatten(self: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """Splits ``dim`` into ``sizes`` (one may be -1)."""
    sizes = list(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    nd = self.dim()
    d = dim + nd if dim < 0 else dim
    if not 0 <= d < builtins.max(nd, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})"
        )
    shape = list(self.shape)
    if -1 in sizes:  # one size is inferred
        known = 1
        for s in sizes:
            if s != -1:
                known *= s
        if known == 0 or shape[d] % known:
            raise RuntimeError(_unflatten_message(sizes, dim, shape[d]))
        sizes[sizes.index(-1)] = shape[d] // known
    prod = 1
    for s in sizes:
        prod *= s
    if prod != shape[d]:
        raise RuntimeError(_unflatten_message(sizes, dim, shape[d]))
    return self.view(*(shape[:d] + sizes + shape[d + 1 :]))


def _unflatten_message(sizes: list[int], dim: int, size: int) -> str:
    return (
        f"unflatten: Provided sizes {sizes} don't multiply up to the size of dim {dim} "
        f"({size}) in the input tensor"
    )


def _take_along_dim(self: Tensor, indices: Tensor, dim: Any = None) -> Tensor:
    if indices.dtype != _int64():
        from ._tensor_split import _scalar_type_name

        name = repr(indices.dtype).removeprefix("torch.").removeprefix("rustgrad.")
        raise RuntimeError(
            "torch.take_along_dim(): dtype of indices should be Long but got "
            f"{_scalar_type_name(name)}"
        )
    if dim is None:
        return self.reshape(-1).gather(0, indices.reshape(-1))
    if self.dim() != indices.dim():
        raise RuntimeError(
            "torch.take_along_dim(): input and indices should have the same number of "
            f"dimensions, but got {self.dim()} dimensions for input, and {indices.dim()} "
            "dimensions for indices"
        )
    nd = self.dim()
    d = dim + nd if dim < 0 else dim
    a, b = list(self.shape), list(indices.shape)
    a[d] = b[d] = 1
    shape = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {len(shape)}"
            )
        shape.append(builtins.max(x, y))
    sa, sb = list(shape), list(shape)
    sa[d], sb[d] = self.shape[d], indices.shape[d]
    return self.expand(*sa).gather(d, indices.expand(*sb))


def _reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """A tensor with ``other``'s shape (a view when possible)."""
    return self.reshape(other.shape)


def _broadcast_to(self: Tensor, size: Sequence[int]) -> Tensor:
    """Broadcasts to ``size`` without copying."""
    return self.expand(*size)


def _swap(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose``."""
    return self.transpose(dim0, dim1)


def _swap_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of ``transpose_``."""
    return self.transpose_(dim0, dim1)


def _mT(self: Tensor) -> Tensor:
    if self.dim() < 2:
        raise RuntimeError(
            "tensor.mT is only supported on matrices or batches of matrices. Got 1-D tensor."
        )
    return self.transpose(-2, -1)


_native_getitem = Tensor.__getitem__
_native_setitem = Tensor.__setitem__


def _advanced(item: Any) -> builtins.bool:
    if isinstance(item, (list, tuple)):
        return True
    return isinstance(item, Tensor) and item.dim() >= 1


def _scalar_mask(item: Any) -> builtins.bool:
    """A 0-d bool or uint8 tensor: PyTorch's mask over a new dim of size 1 or 0, like a
    Python bool (a 0-d tensor of another integer dtype is an int)."""
    from . import uint8

    return isinstance(item, Tensor) and item.dim() == 0 and item.dtype in (_bool_dtype(), uint8)


def _int64() -> Any:
    from . import int64

    return int64


def _bool_dtype() -> Any:
    from . import bool as b

    return b


def _split_index(self: Tensor, index: Any) -> tuple[Tensor, list[Any]] | None:
    """Applies the basic items of an index as views; returns the view and the advanced
    index list for ``aten::index`` (None where a dim is kept), or None without
    advanced items."""
    items = index if isinstance(index, tuple) else (index,)
    if not builtins.any(_advanced(i) for i in items):
        return None
    adv: list[tuple[int, Tensor]] = []
    consumed = 0
    for i in items:
        if isinstance(i, (list, tuple)):
            consumed += 1
        elif isinstance(i, Tensor) and i.dim() >= 1 and i.dtype == _bool_dtype():
            consumed += i.dim()
        elif i is None or i is Ellipsis or isinstance(i, builtins.bool) or _scalar_mask(i):
            continue
        else:
            consumed += 1
    out = self
    dim = 0
    for i in items:
        if i is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif i is Ellipsis:
            dim += out.dim() - dim - (consumed - _consumed_before(items, i))
        elif isinstance(i, slice):
            out = _native_getitem(out, (slice(None),) * dim + (i,))
            dim += 1
        elif isinstance(i, (list, tuple, Tensor)) and _advanced(i):
            t_ = i if isinstance(i, Tensor) else _tensor(i) if i else _tensor(i, dtype=_int64())
            if t_.dtype != _bool_dtype() and t_.is_floating_point():
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            adv.append((dim, t_))
            dim += t_.dim() if t_.dtype == _bool_dtype() else 1
        elif isinstance(i, builtins.bool) or _scalar_mask(i):
            # Beside other advanced items, a bool or 0-d mask is one of them (PyTorch's
            # boolToIndexingTensor): a 1-element mask over a new dim of size 1, which
            # broadcasts with the others (as index [0] or []).
            out = out.unsqueeze(dim)
            mask = i if isinstance(i, Tensor) else _tensor(i)
            adv.append((dim, mask.reshape(1).to(_bool_dtype())))
            dim += 1
        else:
            # An int or a 0-d integer tensor selects (the dim goes).
            out = _native_getitem(out, (slice(None),) * dim + (i,))
    indices: list[Any] = []
    covered = 0  # dims of `out` the list reaches (a mask covers t_.dim() of them)
    for d, t_ in adv:
        while covered < d:
            indices.append(None)
            covered += 1
        indices.append(t_)
        covered += t_.dim() if t_.dtype == _bool_dtype() else 1
    return out, indices


def _consumed_before(items: Sequence[Any], stop: Any) -> int:
    n = 0
    for i in items:
        if i is stop:
            break
        if isinstance(i, (list, tuple)):
            n += 1
        elif isinstance(i, Tensor) and i.dim() >= 1 and i.dtype == _bool_dtype():
            n += i.dim()
        elif i is None or isinstance(i, builtins.bool) or _scalar_mask(i):
            continue
        else:
            n += 1
    return n


def _getitem_advanced(self: Tensor, index: Any) -> Tensor:
    """``self[index]`` for an index with integer tensors, lists or bool masks (the
    binding's ``__getitem__`` sends those here)."""
    split_ = _split_index(self, index)
    if split_ is None:
        return _native_getitem(self, index)
    view, indices = split_
    return view._index(indices)


def _setitem_advanced(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value`` for advanced indices: ``index_put_`` on the basic view."""
    split_ = _split_index(self, index)
    if split_ is None:
        _native_setitem(self, index, value)
        return
    view, indices = split_
    view.index_put_(indices, value)


def _index_put(
    self: Tensor, indices: Any, values: Any, accumulate: builtins.bool = False
) -> Tensor:
    """Out-of-place ``index_put_``."""
    return self.clone().index_put_(indices, values, accumulate)


_METHODS: dict[str, Any] = {
    "unflatten": _unflatten,
    "take_along_dim": _take_along_dim,
    "reshape_as": _reshape_as,
    "broadcast_to": _broadcast_to,
    "swapaxes": _swap,
    "swapdims": _swap,
    "swapaxes_": _swap_,
    "swapdims_": _swap_,
    "mT": property(_mT),
    "index_put": _index_put,
}

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)
