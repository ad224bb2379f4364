"""Tensor methods written in Python (not hot): iteration, ``*_as`` helpers.
The native class allows attribute assignment, so these are added to it directly."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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


_METHODS.update(
    {
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
