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
    _random,  # noqa: F401  (adds Tensor.uniform_ and Tensor.normal_)
    _tensor_methods,  # noqa: F401  (adds Python-level Tensor methods)
    accelerator,
    autograd,
    backends,
    cuda,
    nn,
)
from ._dtype_info import finfo, iinfo
from ._functional import (
    abs,
    add,
    clamp,
    div,
    empty_like,
    eq,
    exp,
    full_like,
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
    rand_like,
    randn_like,
    relu,
    sigmoid,
    sqrt,
    sub,
    sum,
    tanh,
    transpose,
    zeros_like,
)
from ._numpy_interop import as_tensor
from ._rustgrad import (
    Generator,
    Tensor,
    arange,
    bool,
    default_generator,
    device,
    dtype,
    empty,
    float32,
    float64,
    from_numpy,
    full,
    get_default_device,
    get_default_dtype,
    get_num_threads,
    get_rng_state,
    initial_seed,
    int64,
    manual_seed,
    ones,
    rand,
    randint,
    randn,
    randperm,
    seed,
    set_default_device,
    set_default_dtype,
    set_num_threads,
    set_rng_state,
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
    "Generator",
    "Size",
    "Tensor",
    "abs",
    "accelerator",
    "add",
    "arange",
    "autograd",
    "backends",
    "bool",
    "clamp",
    "cuda",
    "default_generator",
    "device",
    "div",
    "double",
    "dtype",
    "empty",
    "empty_like",
    "enable_grad",
    "eq",
    "exp",
    "finfo",
    "float",
    "float32",
    "float64",
    "as_tensor",
    "from_numpy",
    "full",
    "full_like",
    "ge",
    "get_default_device",
    "get_default_dtype",
    "get_num_threads",
    "get_rng_state",
    "gt",
    "iinfo",
    "initial_seed",
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
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "relu",
    "seed",
    "set_default_device",
    "set_default_dtype",
    "set_grad_enabled",
    "set_num_threads",
    "set_rng_state",
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
