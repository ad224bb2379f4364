"""rustgrad: a CPU autograd engine in Rust with PyTorch's Python API.

``import rustgrad as torch`` works for the covered subset: tensors with views and
broadcasting, autograd with PyTorch's semantics (plus the legacy ``volatile`` flag),
grad-mode switches, ``Parameter``.

Example:
    >>> import rustgrad as torch
    >>> x = torch.ones(2, 2, requires_grad=True)
    >>> out = ((x + 2) * (x + 2) * 3).mean()
    >>> out
    tensor(27., grad_fn=<MeanBackward0>)
    >>> out.backward()
    >>> x.grad
    tensor([[4.5000, 4.5000],
            [4.5000, 4.5000]])
"""

from __future__ import annotations

from . import (
    _tensor_methods,  # noqa: F401  (adds Python-level Tensor methods)
    autograd,
    nn,
)
from ._functional import (
    abs,
    add,
    clamp,
    div,
    eq,
    exp,
    ge,
    gt,
    le,
    log,
    lt,
    matmul,
    mean,
    mm,
    mul,
    ne,
    neg,
    ones_like,
    pow,
    relu,
    sigmoid,
    sqrt,
    sub,
    sum,
    tanh,
    transpose,
    zeros_like,
)
from ._rustgrad import (
    Tensor,
    arange,
    bool,
    dtype,
    float32,
    float64,
    from_numpy,
    full,
    get_num_threads,
    int64,
    manual_seed,
    ones,
    rand,
    randn,
    set_num_threads,
    tensor,
    zeros,
)
from ._size import Size
from .autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled

float = float32
double = float64
long = int64

__version__ = "0.1.0"

__all__ = [
    "Size",
    "Tensor",
    "abs",
    "add",
    "arange",
    "autograd",
    "bool",
    "clamp",
    "div",
    "double",
    "dtype",
    "enable_grad",
    "eq",
    "exp",
    "float",
    "float32",
    "float64",
    "from_numpy",
    "full",
    "ge",
    "get_num_threads",
    "gt",
    "int64",
    "is_grad_enabled",
    "le",
    "log",
    "long",
    "lt",
    "manual_seed",
    "matmul",
    "mean",
    "mm",
    "mul",
    "ne",
    "neg",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "pow",
    "rand",
    "randn",
    "relu",
    "set_grad_enabled",
    "set_num_threads",
    "sigmoid",
    "sqrt",
    "sub",
    "sum",
    "tanh",
    "tensor",
    "transpose",
    "zeros",
    "zeros_like",
]
