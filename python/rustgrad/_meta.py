"""The ``meta`` device: tensors with a shape, dtype, strides and requires_grad but no
data. See Note [Meta device].

A meta tensor is a ``MetaTensor`` (``MetaParameter`` for a Parameter), a Python
subclass of ``Tensor`` whose native tensor is a stride-0 view of a one-element zero
storage (``zeros(()).expand(shape)``): it has the right shape and dtype and costs no
memory, and the Rust code that only reads shapes (``size``, ``dim``, views) works on
it unchanged. The subclass overrides what differs from a CPU tensor: ``device``,
``stride`` (the strides a dense tensor would have), printing, the in-place
initialisers (no-ops), casts and ``to``, the ops whose results are meta tensors, and
data access (PyTorch's errors). Methods without a meta meaning raise PyTorch's
NotImplementedError "Could not run 'aten::<name>' with arguments from the 'Meta'
backend".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from . import _rustgrad
from ._rustgrad import Tensor, device, zeros

__all__ = ["MetaParameter", "MetaTensor"]

_META = device("meta")


def _dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _make(
    shape: Sequence[int],
    dtype: Any,
    requires_grad: bool = False,
    strides: Sequence[int] | None = None,
    cls: type | None = None,
) -> Tensor:
    """A meta tensor (the factories' and ``Tensor.to``'s hook, registered in Rust)."""
    shape = tuple(int(n) for n in shape)
    base = zeros((), dtype=dtype, device="cpu").expand(shape)
    t = Tensor.__new__(cls or MetaTensor, _share=base, requires_grad=requires_grad)
    Tensor.__init__(t)
    t.__dict__["_meta_strides"] = tuple(strides) if strides is not None else _dense_strides(shape)
    return t


def _like(t: Tensor, requires_grad: bool | None = None, dtype: Any = None) -> Tensor:
    """A meta tensor of ``t``'s shape (and strides when the dtype is kept)."""
    same = dtype is None or dtype == t.dtype
    return _make(
        t.shape,
        t.dtype if dtype is None else dtype,
        t.requires_grad if requires_grad is None else requires_grad,
        t.stride() if same and t.is_meta else None,
    )


def _not_implemented(name: str) -> NotImplementedError:
    return NotImplementedError(
        f"Could not run 'aten::{name}' with arguments from the 'Meta' backend. This could "
        "be because the operator doesn't exist for this backend (rustgrad's meta tensors "
        "have no data)"
    )


def _no_data() -> NotImplementedError:
    return NotImplementedError("Cannot copy out of meta tensor; no data!")


def _check_devices(values: Any) -> None:
    """PyTorch's error for a CPU tensor with dims among an op's meta operands."""
    for v in values:
        if isinstance(v, Tensor) and not v.is_meta and v.dim() > 0:
            raise RuntimeError("Tensor on device cpu is not on the expected device meta!")
        if isinstance(v, (list, tuple)):
            _check_devices(v)


def _to_meta(result: Any) -> Any:
    if isinstance(result, Tensor):
        return _make(result.shape, result.dtype, result.requires_grad)
    if isinstance(result, tuple):
        made = [_to_meta(r) for r in result]
        return type(result)(*made) if hasattr(result, "_fields") else tuple(made)
    if isinstance(result, list):
        return [_to_meta(r) for r in result]
    return result


def _meta_op(name: str) -> Callable[..., Any]:
    """A method run on the stride-0 zero view for its result's shape and dtype, whose
    tensor results are meta tensors (views cost nothing; other ops allocate their
    result once, as the price of PyTorch's exact shape and dtype rules)."""
    native = getattr(Tensor, name)

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        _check_devices(args)
        _check_devices(kwargs.values())
        return _to_meta(native(self, *args, **kwargs))

    method.__name__ = name
    method.__doc__ = f"``{name}`` of a meta tensor: a meta result of the right shape."
    return method


def _in_place(name: str) -> Callable[..., Any]:
    """An in-place method (an initialiser or an update): a meta tensor has no data to
    change, so it returns ``self``."""

    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        _check_devices(args)
        return self

    method.__name__ = name
    method.__doc__ = f"``{name}`` of a meta tensor: nothing to write; returns self."
    return method


def _refuse(name: str) -> Callable[..., Any]:
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Any:
        raise _not_implemented(name)

    method.__name__ = name
    return method


class MetaTensor(Tensor):
    """A tensor on the ``meta`` device: shape, dtype, strides and requires_grad, no data.

    Made by factories with ``device="meta"`` (or under ``with rustgrad.device("meta")``)
    and by ``Tensor.to("meta")``.

    Example:
        >>> x = rustgrad.empty(3, 4, device="meta")
        >>> x
        tensor(..., device='meta', size=(3, 4))
        >>> (x @ rustgrad.empty(4, 2, device="meta")).shape
        rustgrad.Size([3, 2])
    """

    @property
    def device(self) -> device:
        """``device(type='meta')``."""
        return _META

    @property
    def is_meta(self) -> bool:
        """True."""
        return True

    @property
    def is_cpu(self) -> bool:
        """False."""
        return False

    @property
    def data(self) -> Tensor:
        """A meta tensor of the same shape that does not require grad."""
        return _like(self, requires_grad=False)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor) or not value.is_meta:
            raise RuntimeError(
                "Attempted to call `variable.set_data(tensor)`, but `variable` and `tensor` "
                "have incompatible tensor type."
            )
        Tensor.data.__set__(self, value)  # type: ignore[attr-defined]
        self.__dict__["_meta_strides"] = tuple(value.stride())

    def stride(self, dim: int | None = None) -> Any:
        """The strides a tensor of this shape and layout has on a real device."""
        strides = self.__dict__["_meta_strides"]
        if dim is None:
            return strides
        return strides[_wrap(dim, self.dim())]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the strides are dense row-major ones (size-1 dims ignored)."""
        expected = _dense_strides(self.shape)
        return all(n == 1 or s == e for n, s, e in zip(self.shape, self.stride(), expected))

    def storage_offset(self) -> int:
        """0."""
        return 0

    def data_ptr(self) -> int:
        """0: no memory."""
        return 0

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        from . import get_default_dtype

        parts = [f"size={tuple(self.shape)}"]
        if self.dtype != get_default_dtype():
            parts.append(f"dtype={self.dtype}")
        if self.requires_grad:
            parts.append("requires_grad=True")
        return f"tensor(..., device='meta', {', '.join(parts)})"

    def __str__(self) -> str:
        return self.__repr__()

    def __format__(self, spec: str) -> str:
        return self.__repr__()

    # -- data access: PyTorch's errors

    def item(self) -> Any:
        """Raises: a meta tensor has no value."""
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def tolist(self) -> Any:
        """Raises: a meta tensor has no data."""
        raise _no_data()

    def numpy(self, *, force: bool = False) -> Any:
        """Raises: a meta tensor has no data."""
        raise TypeError(
            "can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first."
        )

    def __array__(self, dtype: Any = None, copy: Any = None) -> Any:
        return self.numpy()

    def __bool__(self) -> bool:
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return float(self.item())

    def __int__(self) -> int:
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self.item())

    __index__ = __int__

    def cpu(self, memory_format: Any = None) -> Tensor:
        """Raises: a meta tensor has no data to copy (``Module.to_empty`` makes storage)."""
        raise _no_data()

    def to(self, *args: Any, **kwargs: Any) -> Tensor:
        """``to(dtype)`` and ``to("meta")`` give meta tensors; another device raises
        (no data to copy), as in PyTorch."""
        target, dtype, copy = _to_args(args, kwargs)
        if target is not None and device(target).type != "meta":
            # Let the native parser report a bad device first.
            Tensor.to(zeros((), dtype=self.dtype, device="cpu"), *args, **kwargs)
            raise _no_data()
        if (dtype is None or dtype == self.dtype) and not copy:
            return self
        return _like(self, dtype=dtype)

    def type(self, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
        """The type name (``'torch.meta.FloatTensor'``), or a cast to ``dtype``."""
        proxy = zeros((), dtype=self.dtype, device="cpu")
        if dtype is None:
            return Tensor.type(proxy).replace("torch.", "torch.meta.")
        cast = Tensor.type(proxy, dtype)
        return self if cast.dtype == self.dtype else _like(self, dtype=cast.dtype)

    def _cast(self, dtype: Any) -> Tensor:
        return self if dtype == self.dtype else _like(self, dtype=dtype)

    def float(self, memory_format: Any = None) -> Tensor:
        """A float32 meta tensor."""
        from . import float32

        return self._cast(float32)

    def double(self, memory_format: Any = None) -> Tensor:
        """A float64 meta tensor."""
        from . import float64

        return self._cast(float64)

    def half(self, memory_format: Any = None) -> Tensor:
        """A float16 meta tensor."""
        from . import float16

        return self._cast(float16)

    def bfloat16(self, memory_format: Any = None) -> Tensor:
        """A bfloat16 meta tensor."""
        from . import bfloat16

        return self._cast(bfloat16)

    def long(self, memory_format: Any = None) -> Tensor:
        """An int64 meta tensor."""
        from . import int64

        return self._cast(int64)

    def int(self, memory_format: Any = None) -> Tensor:
        """An int32 meta tensor."""
        from . import int32

        return self._cast(int32)

    def bool(self, memory_format: Any = None) -> Tensor:
        """A bool meta tensor."""
        from . import bool as bool_

        return self._cast(bool_)

    def type_as(self, other: Tensor) -> Tensor:
        """A meta tensor of ``other``'s dtype."""
        return self._cast(other.dtype)

    def clone(self, *, memory_format: Any = None) -> Tensor:
        """A new meta tensor of the same shape, strides and dtype."""
        return _make(self.shape, self.dtype, self.requires_grad, self.stride())

    def contiguous(self, memory_format: Any = None) -> Tensor:
        """``self`` when dense, else a dense meta tensor."""
        return self if self.is_contiguous() else _like(self, dtype=self.dtype).clone()

    def detach(self) -> Tensor:
        """A meta tensor of the same shape that does not require grad."""
        return _like(self, requires_grad=False)

    def transpose(self, dim0: int, dim1: int) -> Tensor:
        """Swaps two dims (and their strides)."""
        n = self.dim()
        order = list(range(n))
        if n:
            a, b = _wrap(dim0, n), _wrap(dim1, n)
            order[a], order[b] = order[b], order[a]
        return self.permute(*order)

    swapaxes = swapdims = transpose

    def t(self) -> Tensor:
        """Transposes a matrix (PyTorch's errors for more than 2 dims)."""
        Tensor.t(self)  # the dimension check
        return self.transpose(0, 1) if self.dim() == 2 else self

    def permute(self, *dims: Any) -> Tensor:
        """Reorders the dims and their strides."""
        result = Tensor.permute(self, *dims)  # checks the dims
        order = list(dims[0]) if len(dims) == 1 and isinstance(dims[0], Sequence) else dims
        order = [_wrap(d, self.dim()) for d in order]
        strides = [self.stride()[d] for d in order]
        return _make(result.shape, self.dtype, self.requires_grad, strides)

    @property
    def T(self) -> Tensor:
        """All dims reversed."""
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self) -> Tensor:
        """The last two dims swapped."""
        return self.transpose(-2, -1)

    def copy_(self, src: Tensor, non_blocking: bool = False) -> Tensor:
        """Nothing to copy into; checks that ``src`` broadcasts to this shape."""
        if isinstance(src, Tensor):
            _broadcast_to(tuple(src.shape), tuple(self.shape))
        return self

    def __setitem__(self, index: Any, value: Any) -> None:
        Tensor.__getitem__(self, index)  # the index check
        if isinstance(value, Tensor) and not value.is_meta and value.dim() > 0:
            raise RuntimeError("Tensor on device cpu is not on the expected device meta!")

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if id(self) in memo:
            return memo[id(self)]
        copied = _make(self.shape, self.dtype, self.requires_grad, self.stride(), type(self))
        memo[id(self)] = copied
        return copied

    def __reduce_ex__(self, protocol: int) -> Any:
        dtype = str(self.dtype).removeprefix("torch.")
        args = (tuple(self.shape), dtype, self.stride(), self.requires_grad)
        return (_rebuild_meta, (*args, isinstance(self, _parameter_class())))


def _wrap(dim: int, n: int) -> int:
    if not -max(n, 1) <= dim < max(n, 1):
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-max(n, 1)}, "
            f"{max(n, 1) - 1}], but got {dim})"
        )
    return dim % max(n, 1)


def _broadcast_to(src: Sequence[int], dst: Sequence[int]) -> None:
    """PyTorch's errors when ``src`` does not broadcast to ``dst`` (``copy_``)."""
    for i, (s, d) in enumerate(zip(reversed(src), reversed(dst))):
        if s not in (1, d) and d != 1:
            raise RuntimeError(
                f"The size of tensor a ({d}) must match the size of tensor b ({s}) at "
                f"non-singleton dimension {len(dst) - 1 - i}"
            )
    shape = [max(s, d) for s, d in zip(reversed(src), reversed(dst))][::-1]
    longer = src if len(src) > len(dst) else dst
    shape = list(longer[: len(longer) - len(shape)]) + shape
    if shape != list(dst):
        raise RuntimeError(
            f"output with shape {list(dst)} doesn't match the broadcast shape {shape}"
        )


def _to_args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any, bool]:
    """(device, dtype, copy) of ``Tensor.to``'s arguments."""
    target, dtype = kwargs.get("device"), kwargs.get("dtype")
    copy = bool(kwargs.get("copy", False))
    for arg in args:
        if isinstance(arg, Tensor):
            target, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, device)) or (isinstance(arg, int) and not isinstance(arg, bool)):
            target = arg
        elif isinstance(arg, _rustgrad.dtype):
            dtype = arg
    return target, dtype, copy


def _parameter_class() -> type:
    from .nn.parameter import Parameter

    return Parameter


def _rebuild_meta(
    shape: tuple[int, ...], dtype: str, strides: Any, requires_grad: bool, parameter: bool
) -> Tensor:
    """Unpickles a meta tensor (``copy.deepcopy``, ``pickle``)."""
    import rustgrad

    t = _make(shape, getattr(rustgrad, dtype), requires_grad, strides)
    return _parameter_class()(t, requires_grad) if parameter else t


def _meta_parameter_class() -> type:
    from .nn.parameter import Parameter

    class MetaParameter(Parameter, MetaTensor):
        """A Parameter on the ``meta`` device (``Parameter(meta_tensor)``)."""

    MetaParameter.__module__ = __name__
    MetaParameter.__qualname__ = "MetaParameter"
    return MetaParameter


# In-place methods with nothing to write on a meta tensor.
_IN_PLACE = (
    "uniform_ normal_ zero_ fill_ random_ bernoulli_ exponential_ geometric_ log_normal_ "
    "cauchy_ fill_diagonal_ clamp_ clamp_min_ clamp_max_ clip_ add_ sub_ mul_ div_ "
    "true_divide_ pow_ neg_ abs_ sqrt_ rsqrt_ exp_ log_ erfinv_ tanh_ sigmoid_ relu_ "
    "addcmul_ addcdiv_ lerp_ masked_fill_ index_fill_ scatter_ scatter_add_ "
    "index_copy_ index_add_ sign_ floor_ ceil_ "
    "round_ trunc_ reciprocal_ square_ sin_ cos_ copysign_ hardtanh_ leaky_relu_ elu_ "
    "celu_ selu_ silu_ fmod_ remainder_ floor_divide_ bitwise_and_ bitwise_or_ "
    "logical_not_ masked_scatter_ put_ index_put_ tril_ triu_ nan_to_num_ share_memory_"
).split()

# Methods with meta results (run on the stride-0 zero view).
_OPS = (
    "view view_as reshape reshape_as flatten unflatten unsqueeze squeeze expand expand_as "
    "broadcast_to movedim moveaxis narrow select unbind split chunk tensor_split unfold "
    "diagonal __getitem__ new_empty new_zeros new_ones new_full new_tensor add sub mul "
    "div true_divide floor_divide remainder fmod pow matmul mm bmm mv dot outer addmm "
    "neg abs exp log log1p expm1 sqrt rsqrt sigmoid tanh relu sin cos square reciprocal "
    "sign clamp clip sum mean var std prod amax amin max min argmax argmin logsumexp "
    "softmax log_softmax norm eq ne lt le gt ge where masked_fill lerp maximum minimum "
    "floor ceil round trunc tril triu repeat tile flip roll cumsum cumprod all any "
    "addcmul addcdiv erf erfinv gelu silu softplus baddbmm type_as_ addmv logical_not "
    "__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ "
    "__truediv__ __rtruediv__ __itruediv__ __floordiv__ __rfloordiv__ __mod__ __pow__ "
    "__rpow__ __matmul__ __rmatmul__ __neg__ __abs__ __eq__ __ne__ __lt__ __le__ "
    "__gt__ __ge__ __and__ __or__ __xor__ __invert__"
).split()

# Native methods that only read shape, dtype or autograd flags: inherited unchanged.
_INHERITED = (
    "size dim ndimension numel nelement element_size is_floating_point is_complex "
    "is_signed requires_grad_ retain_grad register_hook register_post_accumulate_grad_hook "
    "get_device is_set_to is_pinned is_shared is_distributed is_neg is_conj is_inference "
    "is_same_size dim_order detach_"
).split()


def _install() -> None:
    for name in _IN_PLACE:
        if hasattr(Tensor, name) and name not in MetaTensor.__dict__:
            setattr(MetaTensor, name, _in_place(name))
    for name in _OPS:
        if hasattr(Tensor, name) and name not in MetaTensor.__dict__:
            setattr(MetaTensor, name, _meta_op(name))
    for name in dir(Tensor):
        if name.startswith("_") or name in MetaTensor.__dict__ or name in _INHERITED:
            continue
        if name.startswith("is_"):
            continue
        attr = Tensor.__dict__.get(name)
        if callable(attr):
            setattr(MetaTensor, name, _refuse(name))


_install()
MetaParameter = _meta_parameter_class()
_rustgrad._set_meta_factory(_make)
