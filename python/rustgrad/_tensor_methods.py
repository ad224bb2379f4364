"""Tensor methods written in Python (not hot): iteration, ``*_as`` helpers.
The native class allows attribute assignment, so these are added to it directly."""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._rustgrad import Tensor, full, tensor, zeros


def _iter(self: Tensor) -> Iterator[Tensor]:
    if self.dim() == 0:
        raise TypeError("iteration over a 0-d tensor")
    return (self[i] for i in range(len(self)))


def _view_as(self: Tensor, other: Tensor) -> Tensor:
    """A view with ``other``'s shape."""
    return self.view(other.shape)


def _expand_as(self: Tensor, other: Tensor) -> Tensor:
    """Broadcasts to ``other``'s shape."""
    return self.expand(other.shape)


def _type_as(self: Tensor, other: Tensor) -> Tensor:
    """Converts to ``other``'s dtype."""
    return self.to(other.dtype)


def _get_device(self: Tensor) -> int:
    """-1: PyTorch's device ordinal of a CPU tensor."""
    return -1


def _T(self: Tensor) -> Tensor:
    return self.permute(*reversed(range(self.dim())))


def _str(self: Tensor) -> str:
    return repr(self)


def _format(self: Tensor, spec: str) -> str:
    if self.dim() == 0:
        return self.item().__format__(spec)
    return repr(self)


_METHODS: dict[str, Any] = {
    "__iter__": _iter,
    "view_as": _view_as,
    "expand_as": _expand_as,
    "type_as": _type_as,
    "get_device": _get_device,
    "T": property(_T),
    "__str__": _str,
    "__format__": _format,
}


def _size_args(size: tuple[Any, ...]) -> tuple[Any, ...]:
    """``new_zeros(2, 3)`` and ``new_zeros((2, 3))`` alike."""
    if len(size) == 1 and not isinstance(size[0], int):
        return tuple(size[0])
    return size


def _new_zeros(
    self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Zeros of ``size`` with this tensor's dtype (PyTorch's ``Tensor.new_zeros``)."""
    return zeros(
        *_size_args(size),
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def _new_ones(
    self: Tensor, *size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Ones of ``size`` with this tensor's dtype (PyTorch's ``Tensor.new_ones``)."""
    return _new_full(
        self, _size_args(size), 1, dtype=dtype, device=device, requires_grad=requires_grad
    )


def _new_full(
    self: Tensor,
    size: Any,
    fill_value: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``fill_value`` everywhere, with this tensor's dtype (``Tensor.new_full``)."""
    return full(
        tuple(size),
        fill_value,
        dtype=dtype or self.dtype,
        device=device or self.device,
        requires_grad=requires_grad,
    )


def _new_tensor(
    self: Tensor, data: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A copy of ``data`` with this tensor's dtype unless ``dtype`` is given
    (``Tensor.new_tensor``)."""
    if isinstance(data, Tensor):
        data = data.detach()
    return tensor(
        data, dtype=dtype or self.dtype, device=device or self.device, requires_grad=requires_grad
    )


# PyTorch's legacy constructor ``Tensor.new``: its overloads (as its error messages list
# them), the C++ type names in its dtype-mismatch message, and its device check.
_NEW_OVERLOADS = (
    " * (*, torch.device device = None)\n"
    " * (torch.Storage storage)\n"
    " * (Tensor other)\n"
    " * (tuple of ints size, *, torch.device device = None)\n"
    " * (object data, *, torch.device device = None)\n"
)

_CPP_TYPE_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "c10::Half",
    "bfloat16": "c10::BFloat16",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
}


def _tensor_options(dtype: Any) -> str:
    """How PyTorch's legacy constructor prints the options of a CPU tensor of ``dtype``."""
    name = _CPP_TYPE_NAMES[str(dtype).rsplit(".", 1)[-1]]
    return (
        f"TensorOptions(dtype={name}, device=cpu, layout=Strided, requires_grad=false "
        "(default), pinned_memory=false (default), memory_format=(nullopt))"
    )


def _new_invalid(args: tuple[Any, ...], kwargs: dict[str, Any]) -> TypeError:
    got = [_parser_type_name(a) for a in args]
    got += [f"{k}={_parser_type_name(v)}" for k, v in kwargs.items()]
    return TypeError(
        f"new() received an invalid combination of arguments - got ({', '.join(got)}), "
        f"but expected one of:\n{_NEW_OVERLOADS}"
    )


def _parser_type_name(obj: Any) -> str:
    """A type as PyTorch's argument parser names it (``int``, ``Tensor``, ``torch.dtype``)."""
    import rustgrad

    if isinstance(obj, Tensor):
        return "Tensor"
    if isinstance(obj, rustgrad.dtype):
        return "torch.dtype"
    if isinstance(obj, rustgrad.device):
        return "torch.device"
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


def _size_item(obj: Any, first: bool) -> int | None:
    """``obj`` as one size of ``new(2, 3)`` (an int, a numpy integer, an integer 0-d
    tensor or array; a bool except first, as PyTorch's parser), or None."""
    if (first and isinstance(obj, bool)) or (isinstance(obj, Tensor) and obj.is_floating_point()):
        return None
    try:
        return operator.index(obj)
    except TypeError:
        return None


def _new(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """PyTorch's legacy constructor: ``t.new()`` (empty), ``t.new(2, 3)`` /
    ``t.new(torch.Size([2, 3]))`` / ``t.new(size=...)`` (that size, zero-filled where
    PyTorch leaves the memory uninitialised), ``t.new(data)`` (a copy of a sequence or
    array with ``t``'s dtype; a tuple is data, not a size) and ``t.new(other)`` (an alias
    view of ``other``, which must have ``t``'s dtype). The result never requires grad,
    except an alias of a tensor that does. Only ``device`` (the CPU) is accepted as a
    keyword besides ``size``."""
    import rustgrad

    from ._size import Size

    if set(kwargs) - {"device", "size"} or ("size" in kwargs and args):
        raise _new_invalid(args, kwargs)
    if "size" in kwargs:
        args = (Size(kwargs["size"]),)
    device = kwargs.get("device")
    if isinstance(device, int) and not isinstance(device, bool):
        device = "cuda"
    if device is not None:
        kind = rustgrad.device(device).type
        if kind != "cpu":
            raise RuntimeError(
                f"legacy constructor expects device type: cpu but device type: {kind} was passed"
            )
    if not args:
        return zeros(0, dtype=self.dtype)
    first = args[0]
    if len(args) == 1 and isinstance(first, Tensor):
        if "device" in kwargs:
            raise RuntimeError(
                "Legacy tensor new of the form tensor.new(tensor, device=device) is not "
                "supported.  Use torch.as_tensor(...) instead."
            )
        if first.dtype != self.dtype:
            raise TypeError(
                f"expected {_tensor_options(self.dtype)} (got {_tensor_options(first.dtype)})"
            )
        return first[...]
    if len(args) == 1 and isinstance(first, Size):
        return zeros(first, dtype=self.dtype)
    sizes = [_size_item(a, i == 0) for i, a in enumerate(args)]
    if sizes[0] is not None:
        for pos, (arg, size) in enumerate(zip(args, sizes), start=1):
            if size is None:
                raise TypeError(
                    f"new(): argument 'size' failed to unpack the object at pos {pos} with "
                    f'error "type must be tuple of ints,but got {_parser_type_name(arg)}"'
                )
        return zeros(tuple(sizes), dtype=self.dtype)
    if len(args) > 1:
        raise _new_invalid(args, kwargs)
    if isinstance(first, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(first).__name__}'")
    # CPython's sequence check: item access by index, which mappings and numpy scalars
    # lack (the latter index only by `()`).
    if isinstance(first, (dict, np.generic)) or not hasattr(type(first), "__getitem__"):
        raise TypeError(f"new(): data must be a sequence (got {_parser_type_name(first)})")
    return tensor(first, dtype=self.dtype)


_METHODS.update(
    {
        "new": _new,
        "new_zeros": _new_zeros,
        "new_ones": _new_ones,
        "new_full": _new_full,
        "new_empty": _new_zeros,
        "new_tensor": _new_tensor,
    }
)

# ``del t.grad`` (PyTorch's deleter): the native getset descriptor has none, so ``grad``
# becomes a property over it that also deletes.
_GRAD = Tensor.__dict__["grad"]


def _del_grad(self: Tensor) -> None:
    _GRAD.__set__(self, None)


_METHODS["grad"] = property(_GRAD.__get__, _GRAD.__set__, _del_grad, _GRAD.__doc__)


def _is_parameter(t: Tensor) -> bool:
    from .nn.parameter import Parameter

    return isinstance(t, Parameter)


def _deepcopy(self: Tensor, memo: dict[int, Any]) -> Tensor:
    """A copy with its own storage, the same dtype, ``requires_grad``, class (Parameter
    stays Parameter) and a deep copy of ``.grad``; a tensor met twice in one
    ``copy.deepcopy`` is copied once (``memo``)."""
    if not self.is_leaf:
        raise RuntimeError(
            "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol at the moment.  If you were attempting to deepcopy a module, this may "
            "be because of a torch.nn.utils.weight_norm usage, see "
            "https://github.com/pytorch/pytorch/pull/103001"
        )
    if id(self) in memo:
        return memo[id(self)]
    data = self.detach().clone()
    if _is_parameter(self):
        new = type(self)(data, requires_grad=self.requires_grad)
    else:
        new = data.requires_grad_(self.requires_grad) if self.requires_grad else data
    memo[id(self)] = new
    if self.grad is not None:
        new.grad = _deepcopy(self.grad, memo)
    return new


def _rebuild_tensor(array: Any, dtype_name: str, requires_grad: bool, parameter: bool) -> Tensor:
    """Unpickles what ``Tensor.__reduce_ex__`` wrote."""
    import rustgrad

    dtype = getattr(rustgrad, dtype_name)
    t = tensor(array).to(dtype)
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(t, requires_grad=requires_grad)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _reduce_ex(self: Tensor, protocol: int) -> tuple[Any, ...]:
    """Pickles as (numpy copy of the data, dtype name, requires_grad, is Parameter);
    bfloat16, which numpy lacks, travels as float32 (exact)."""
    dtype_name = str(self.dtype).rsplit(".", 1)[-1]
    data = self.detach()
    if dtype_name == "bfloat16":
        import rustgrad

        data = data.to(rustgrad.float32)
    return (
        _rebuild_tensor,
        (data.numpy().copy(), dtype_name, self.requires_grad, _is_parameter(self)),
    )


_METHODS["__deepcopy__"] = _deepcopy
_METHODS["__reduce_ex__"] = _reduce_ex

for _name, _fn in _METHODS.items():
    setattr(Tensor, _name, _fn)

# As in PyTorch: numpy defers binary ops to the tensor (``np.float64(1) + t`` is a
# tensor, computed by ``Tensor.__radd__``) instead of converting it with ``__array__``.
Tensor.__array_priority__ = 1000
