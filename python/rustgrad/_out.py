"""``out=`` arguments: one wrapper for every function that takes one (Note [out= arguments]).

``rustgrad/__init__.py`` calls ``install(globals())`` last: each name of ``OUT_OPS`` is
replaced by ``with_out(fn, spec)``, which passes a call without ``out`` straight on and
otherwise writes the result into the given tensor (or tuple of tensors) with PyTorch's
rules: the requires-grad refusal, the dtype rule of the op, the deprecated resize with
its UserWarning, a copy through the out tensor's own strides (a non-contiguous view is
written through and its version counter moves), and the out object itself returned.
Tensor methods never take ``out=``.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any

from . import return_types
from ._compare import _SCALAR_NAMES
from ._rustgrad import Tensor, can_cast, is_grad_enabled
from ._tensor_methods import _CPP_TYPE_NAMES
from .autograd.grad_mode import no_grad

_RESIZE_WARNING = (
    "An output with one or more elements was resized since it had shape {old}, which does "
    "not match the required output shape {new}. This behavior is deprecated, and in a "
    "future PyTorch release outputs will not be resized unless they have zero elements. "
    "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
    "with t.resize_(0)."
)


@dataclass(frozen=True)
class OutSpec:
    """How one function writes into ``out``.

    ``dtype``: ``"cast"`` (PyTorch's TensorIterator rule: the result is cast to out's dtype
    where ``can_cast`` allows it), ``"exact"`` (out must have the result's dtype),
    ``"factory"`` (the result is made in out's dtype, as ``dtype=out.dtype``) or
    ``"any"`` (the result is cast to out's dtype unchecked: reductions that accumulate
    in the out dtype, samplers of 0/1). ``aten``: the name in the requires-grad message.
    ``grad_check``: ``"all"`` refuses an input or out that requires grad (in grad mode),
    ``"out"`` only an out that does (ops that are not differentiable). ``warn_resize``:
    whether resizing a non-empty out warns, with ``resize_message``. ``cast_message`` /
    ``cast_error``: the refusal of the ``"cast"`` rule. ``min_args``: the arguments
    (positional or ``dim=``) below which PyTorch has no ``out=`` form (``sum(x)``).
    ``single_dtype``: the dtype rule where the result is one tensor rather than a tuple
    (``max(x)`` casts, ``max(x, dim)`` is exact); ``binary_aten``: the name of the
    two-tensor form (``max(a, b)`` is ``maximum``).
    """

    dtype: str = "cast"
    aten: str | None = None
    grad_check: str = "all"
    warn_resize: bool = True
    cast_message: str = "result type {result} can't be cast to the desired output type {out}"
    cast_error: type = RuntimeError
    min_args: int = 0
    resize_message: str = _RESIZE_WARNING
    single_dtype: str | None = None
    binary_aten: str | None = None


_CAST = OutSpec()
_EXACT = OutSpec(dtype="exact")
_NO_GRAD = OutSpec(grad_check="out")
_EXACT_NO_GRAD = OutSpec(dtype="exact", grad_check="out")
_CAT = OutSpec(
    grad_check="out",
    aten="cat",
    cast_message="torch.cat(): input types can't be cast to the desired output type {out}",
    cast_error=TypeError,
)
_ARANGE_WARNING = (
    "The number of elements in the out tensor of shape {old} is {old_numel} which does not "
    "match the computed number of elements {new_numel}. Note that this may occur as a "
    "result of rounding error. The out tensor will be resized to a tensor of shape "
    "({new_tuple})."
)


def _factory(name: str, **kw: Any) -> OutSpec:
    kw.setdefault("warn_resize", False)
    return OutSpec(dtype="factory", aten=f"aten::{name}", **kw)


#: Every public function that takes ``out=`` (PyTorch's ``torch.<name>`` does), and how.
OUT_OPS: dict[str, OutSpec] = {
    # unary math (TensorIterator: cast); those PyTorch computes in the input dtype: exact
    **{
        n: _CAST
        for n in (
            "acos asin atan cos cosh erf erfinv exp exp2 expm1 log log10 log1p log2 "
            "reciprocal rsqrt sigmoid sin sinh sqrt tan tanh"
        ).split()
    },
    "arccos": OutSpec(aten="acos"),
    "arcsin": OutSpec(aten="asin"),
    "arctan": OutSpec(aten="atan"),
    "square": OutSpec(aten="pow"),
    **{n: _EXACT for n in "abs ceil floor frac neg round sgn sign trunc nan_to_num".split()},
    "absolute": OutSpec(dtype="exact", aten="abs"),
    "negative": OutSpec(dtype="exact", aten="neg"),
    "fix": OutSpec(dtype="exact", aten="trunc"),
    **{n: _EXACT_NO_GRAD for n in "isneginf isposinf signbit bitwise_not".split()},
    "logical_not": _NO_GRAD,
    # binary and ternary (cast)
    **{
        n: _CAST
        for n in (
            "add sub mul div atan2 maximum minimum fmax fmin fmod remainder copysign hypot "
            "logaddexp logaddexp2 xlogy pow addcmul addcdiv lerp"
        ).split()
    },
    "subtract": OutSpec(aten="sub"),
    "multiply": OutSpec(aten="mul"),
    "divide": OutSpec(aten="div"),
    "true_divide": OutSpec(aten="div"),
    "arctan2": OutSpec(aten="atan2"),
    "outer": OutSpec(aten="mul"),
    **{
        n: _NO_GRAD
        for n in (
            "eq ne lt le gt ge greater greater_equal less less_equal not_equal "
            "logical_and logical_or logical_xor bitwise_and bitwise_or bitwise_xor"
        ).split()
    },
    "floor_divide": OutSpec(grad_check="out", aten="aten::floor_divide"),
    "float_power": OutSpec(dtype="exact", aten="pow"),
    "where": OutSpec(dtype="exact", grad_check="out"),
    "clamp": _EXACT,
    "clip": OutSpec(dtype="exact", aten="clamp"),
    "clamp_min": _EXACT,
    "clamp_max": _EXACT,
    # linear algebra (exact)
    **{n: _EXACT for n in "matmul mm bmm mv dot addmm addmv baddbmm".split()},
    "addbmm": OutSpec(dtype="exact", warn_resize=False),
    "tensordot": _EXACT_NO_GRAD,
    # reductions, scans and sorts
    "sum": OutSpec(dtype="any", min_args=2),
    "nansum": _CAST,
    "prod": OutSpec(dtype="any"),
    "cumsum": OutSpec(dtype="any"),
    "cumprod": OutSpec(dtype="any"),
    "mean": _CAST,
    "nanmean": OutSpec(aten="nansum"),
    "std": _CAST,
    "var": _CAST,
    "logsumexp": _CAST,
    "amax": _EXACT,
    "amin": _EXACT,
    "norm": OutSpec(dtype="exact", aten="linalg_vector_norm"),
    "argmax": _EXACT_NO_GRAD,
    "argmin": _EXACT_NO_GRAD,
    "all": _EXACT_NO_GRAD,
    "any": _EXACT_NO_GRAD,
    "softmax": OutSpec(dtype="exact", grad_check="out", aten="aten::softmax"),
    "log_softmax": OutSpec(dtype="exact", grad_check="out", aten="aten::log_softmax"),
    # max/min: (values, indices) with a dim, a tensor without; a second tensor is maximum.
    "max": OutSpec(dtype="exact", single_dtype="cast", binary_aten="maximum"),
    "min": OutSpec(dtype="exact", single_dtype="cast", binary_aten="minimum"),
    "median": OutSpec(dtype="exact", min_args=2),
    "sort": _EXACT,
    "topk": _EXACT,
    # shape and indexing
    "cat": _CAT,
    "concat": _CAT,
    "concatenate": _CAT,
    "stack": _CAT,
    "hstack": _CAT,
    "vstack": _CAT,
    **{
        n: _EXACT
        for n in (
            "index_select gather take masked_select tril triu index_add index_copy scatter "
            "scatter_add scatter_reduce"
        ).split()
    },
    "take_along_dim": OutSpec(dtype="exact", aten="gather"),
    "diag": OutSpec(dtype="exact", grad_check="out", aten="aten::diag_embed"),
    "nonzero": _EXACT_NO_GRAD,
    # factories and samplers: made in out's dtype, resized without a warning
    **{
        n: _factory(n)
        for n in "linspace logspace zeros ones empty full eye rand randn randint randperm".split()
    },
    "arange": _factory("arange", warn_resize=True, resize_message=_ARANGE_WARNING),
    "normal": _CAST,
    "bernoulli": OutSpec(dtype="any", warn_resize=False),
    "multinomial": OutSpec(dtype="exact", grad_check="out", warn_resize=False),
}

#: The same for ``rustgrad.linalg`` (``torch.linalg.<name>``).
LINALG_OUT_OPS: dict[str, OutSpec] = {
    "vector_norm": OutSpec(dtype="exact", aten="linalg_vector_norm"),
    "norm": OutSpec(dtype="exact", grad_check="out"),
    "matrix_norm": OutSpec(dtype="exact", grad_check="out"),
}

#: The same for ``rustgrad.special`` (``torch.special.<name>``).
SPECIAL_OUT_OPS: dict[str, OutSpec] = {
    "xlogy": _CAST,
    "xlog1py": OutSpec(aten="special_xlog1py"),
}

#: The named tuple type of each function returning ``(values, indices)``.
_TUPLE_TYPES = {n: getattr(return_types, n) for n in ("max", "min", "median", "sort", "topk")}


def _scalar_name(dtype: Any) -> str:
    name = str(dtype).rpartition(".")[2]
    return _SCALAR_NAMES.get(name, name)


def _cpp_name(dtype: Any) -> str:
    name = str(dtype).rpartition(".")[2]
    return _CPP_TYPE_NAMES.get(name, name)


def _tensors(value: Any) -> list[Tensor]:
    """The tensors of an argument (one level of lists and tuples, as ``cat``'s)."""
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


def _check_outs(name: str, out: Any) -> tuple[Tensor, ...]:
    """``out`` as a tuple of tensors (PyTorch's TypeError for anything else)."""
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, (tuple, list)) and out and all(isinstance(o, Tensor) for o in out):
        return tuple(out)
    raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")


def _write(name: str, spec: OutSpec, dtype_rule: str, result: Tensor, out: Tensor) -> None:
    """Writes one result into one out tensor: dtype rule, resize, copy."""
    if dtype_rule == "exact" and result.dtype != out.dtype:
        raise RuntimeError(
            f"Expected out tensor to have dtype {_cpp_name(result.dtype)}, but got "
            f"{_cpp_name(out.dtype)} instead"
        )
    if dtype_rule == "cast" and not can_cast(result.dtype, out.dtype):
        raise spec.cast_error(
            spec.cast_message.format(result=_scalar_name(result.dtype), out=_scalar_name(out.dtype))
        )
    if out.shape != result.shape:
        if spec.warn_resize and out.numel() != 0:
            warnings.warn(
                spec.resize_message.format(
                    old=list(out.shape),
                    new=list(result.shape),
                    old_numel=out.numel(),
                    new_numel=result.numel(),
                    new_tuple=", ".join(str(s) for s in result.shape)
                    + ("," if result.dim() == 1 else ""),
                ),
                UserWarning,
                stacklevel=4,
            )
        with no_grad():
            out.data = result.new_empty(result.shape, dtype=out.dtype)
    with no_grad():
        out.copy_(result)


def with_out(fn: Any, name: str, spec: OutSpec, module: str = "rustgrad") -> Any:
    """``fn`` taking PyTorch's keyword ``out=`` (see the module docstring)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, out: Any = None, **kwargs: Any) -> Any:
        if out is None:
            return fn(*args, **kwargs)
        outs = _check_outs(name, out)
        aten = spec.aten or name
        if spec.binary_aten is not None and len(args) > 1 and isinstance(args[1], Tensor):
            aten = spec.binary_aten
        if spec.min_args and len(args) + ("dim" in kwargs) < spec.min_args:
            got = ", ".join(type(a).__name__ for a in args)
            raise TypeError(
                f"{name}() received an invalid combination of arguments - got ({got}, "
                "out=Tensor): its out= form needs a dim"
            )
        if is_grad_enabled():
            inputs = list(outs)
            if spec.grad_check == "all":
                inputs += [t for a in (*args, *kwargs.values()) for t in _tensors(a)]
            if any(t.requires_grad for t in inputs):
                raise RuntimeError(
                    f"{aten}(): functions with out=... arguments don't support "
                    "automatic differentiation, but one of the arguments requires grad."
                )
        if spec.dtype == "factory":
            dtype = kwargs.get("dtype")
            if dtype is not None and dtype != outs[0].dtype:
                raise RuntimeError(
                    f"dtype {_scalar_name(dtype)} does not match dtype of out parameter "
                    f"({_scalar_name(outs[0].dtype)})"
                )
            kwargs["dtype"] = outs[0].dtype
        with no_grad():
            result = fn(*args, **kwargs)
        results = tuple(result) if isinstance(result, tuple) else (result,)
        if isinstance(out, Tensor) != isinstance(result, Tensor):
            what = "Tensor" if isinstance(result, Tensor) else "tuple of Tensors"
            raise TypeError(f"{name}(): argument 'out' must be {what}, not {type(out).__name__}")
        if len(outs) != len(results):
            raise TypeError(f"expected tuple of {len(results)} elements but got {len(outs)}")
        rule = spec.dtype
        if isinstance(result, Tensor) and spec.single_dtype is not None:
            rule = spec.single_dtype
        for r, o in zip(results, outs, strict=True):
            _write(name, spec, rule, r, o)
        if isinstance(out, Tensor):
            return out
        tuple_type = _TUPLE_TYPES.get(name)
        return tuple_type(outs) if tuple_type is not None else outs

    # Pickled by reference as `rustgrad.<name>` (or `rustgrad.linalg.<name>`), which is
    # this wrapper (a module holding `self.act = torch.tanh` saves and loads).
    wrapper.__doc__ = (
        f"{fn.__doc__ or ''}\n\n``out=``: a tensor (for ``(values, indices)`` results a "
        "tuple of two) to write the result into, with PyTorch's rules (Note [out= arguments])."
    )
    wrapper.__module__ = module
    wrapper.__qualname__ = name
    wrapper.__rustgrad_out__ = spec  # type: ignore[attr-defined]
    return wrapper


def install(namespace: dict[str, Any]) -> None:
    """Replaces each function of ``OUT_OPS`` in ``namespace`` (``rustgrad``'s), of
    ``LINALG_OUT_OPS`` in ``rustgrad.linalg`` and of ``SPECIAL_OUT_OPS`` in
    ``rustgrad.special`` by its ``out=`` form."""
    from . import linalg, special

    for names, space, module in (
        (OUT_OPS, namespace, "rustgrad"),
        (LINALG_OUT_OPS, vars(linalg), "rustgrad.linalg"),
        (SPECIAL_OUT_OPS, vars(special), "rustgrad.special"),
    ):
        for name, spec in names.items():
            fn = space[name]
            if getattr(fn, "__rustgrad_out__", None) is None:
                space[name] = with_out(fn, name, spec, module)
