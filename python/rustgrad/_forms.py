"""Alias methods and function forms that PyTorch has for existing tensor methods.

PyTorch exposes many ops three ways: ``torch.x(t, ...)``, ``t.x(...)`` and, where it
writes in place, ``t.x_(...)`` (and often ``torch.x_(t, ...)``). The native ``Tensor``
defines each op once; this module adds

- the alias methods (``absolute`` is ``abs``, ``multiply_`` is ``mul_``, ``greater`` is
  ``gt``, ...), bound to the native methods themselves, so they cost nothing;
- the function forms ``rustgrad.x`` of methods that had none (``sign``, ``clone``,
  ``detach``, ``numel``, ``index_put``, ``sin_``, ``clamp_``, ``zero_``, ...), each a thin
  call of the method after PyTorch's type check of ``input``.

Example:
    >>> import rustgrad as torch
    >>> x = torch.tensor([-1.5, 2.0])
    >>> torch.absolute(x)
    tensor([1.5000, 2.0000])
    >>> torch.sin_(x) is x
    True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._rustgrad import Tensor

# Alias method -> the native method it is.
_METHOD_ALIASES: dict[str, str] = {
    "absolute": "abs",
    "negative": "neg",
    "multiply": "mul",
    "multiply_": "mul_",
    "subtract": "sub",
    "subtract_": "sub_",
    "greater": "gt",
    "greater_": "gt_",
    "greater_equal": "ge",
    "greater_equal_": "ge_",
    "less": "lt",
    "less_": "lt_",
    "less_equal": "le",
    "less_equal_": "le_",
    "not_equal": "ne",
    "not_equal_": "ne_",
}

for _alias, _target in _METHOD_ALIASES.items():
    if not hasattr(Tensor, _alias) and hasattr(Tensor, _target):
        setattr(Tensor, _alias, getattr(Tensor, _target))


def _function_form(name: str) -> Callable[..., Any]:
    """``rustgrad.<name>(input, *args, **kwargs)``: ``input.<name>(*args, **kwargs)``
    after PyTorch's check that ``input`` is a tensor."""

    def form(input: Any, *args: Any, **kwargs: Any) -> Any:
        if not isinstance(input, Tensor):
            raise TypeError(
                f"{name}(): argument 'input' (position 1) must be Tensor, "
                f"not {type(input).__name__}"
            )
        return getattr(input, name)(*args, **kwargs)

    form.__name__ = form.__qualname__ = name
    form.__doc__ = (
        f"Function form of ``Tensor.{name}``: ``rustgrad.{name}(t, ...)`` is "
        f"``t.{name}(...)``{' (in place: returns ``t``)' if name.endswith('_') else ''}."
    )
    return form


# PyTorch's ``torch.<name>`` functions that call the method of the same name.
_FUNCTION_FORMS: tuple[str, ...] = (
    # out of place
    "absolute",
    "negative",
    "multiply",
    "subtract",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "not_equal",
    "sign",
    "clamp_min",
    "clamp_max",
    "clone",
    "detach",
    "numel",
    "is_floating_point",
    "split_with_sizes",
    "index_put",
    "get_device",
    "index_copy",
    "masked_scatter",
    "put",
    # in place (torch.<name>_ exists in PyTorch 2.15 for each)
    "abs_",
    "acos_",
    "addmv_",
    "arccos_",
    "arcsin_",
    "arctan_",
    "asin_",
    "atan_",
    "ceil_",
    "clamp_",
    "clamp_max_",
    "clamp_min_",
    "clip_",
    "cos_",
    "cosh_",
    "detach_",
    "erf_",
    "exp2_",
    "exp_",
    "expm1_",
    "fill_",
    "fix_",
    "floor_",
    "frac_",
    "index_put_",
    "log10_",
    "log1p_",
    "log2_",
    "log_",
    "neg_",
    "negative_",
    "reciprocal_",
    "relu_",
    "round_",
    "rsqrt_",
    "sigmoid_",
    "sin_",
    "sinh_",
    "sqrt_",
    "square_",
    "tan_",
    "tanh_",
    "trunc_",
    "zero_",
)

__all__: list[str] = []
for _name in _FUNCTION_FORMS:
    globals()[_name] = _function_form(_name)
    __all__.append(_name)
