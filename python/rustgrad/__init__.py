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
    cpu,
    cuda,
    linalg,
    nn,
    parallel,
    return_types,
    utils,
    viz,
    xpu,
)
from ._dtype_info import finfo, iinfo
from ._elementwise import (
    acos,
    arccos,
    arcsin,
    arctan,
    arctan2,
    asin,
    atan,
    atan2,
    ceil,
    celu,
    celu_,
    copysign,
    cos,
    cosh,
    erf,
    erfinv,
    exp2,
    expm1,
    fix,
    floor,
    fmax,
    fmin,
    fmod,
    frac,
    log1p,
    log2,
    log10,
    maximum,
    minimum,
    reciprocal,
    remainder,
    round,
    rsqrt,
    selu,
    selu_,
    sin,
    sinh,
    square,
    tan,
    trunc,
)
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
from ._reduce import (
    all,
    amax,
    amin,
    any,
    argmax,
    argmin,
    argsort,
    count_nonzero,
    cumprod,
    cumsum,
    log_softmax,
    logsumexp,
    max,
    median,
    min,
    nanmean,
    nansum,
    norm,
    prod,
    softmax,
    sort,
    std,
    std_mean,
    topk,
    unique,
    var,
    var_mean,
)
from ._rustgrad import (
    Generator,
    Tensor,
    arange,
    bfloat16,
    bool,
    can_cast,
    default_generator,
    device,
    dtype,
    empty,
    eye,
    float16,
    float32,
    float64,
    from_numpy,
    full,
    get_default_device,
    get_default_dtype,
    get_num_threads,
    get_rng_state,
    initial_seed,
    int8,
    int16,
    int32,
    int64,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    linspace,
    logspace,
    manual_seed,
    ones,
    promote_types,
    rand,
    randint,
    randn,
    randperm,
    result_type,
    seed,
    set_anomaly_enabled,
    set_default_device,
    set_default_dtype,
    set_num_threads,
    set_rng_state,
    tensor,
    uint8,
    zeros,
)
from ._size import Size
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

# PyTorch's dtype aliases (they shadow the builtins inside this module, as in torch).
float = float32
double = float64
half = float16
long = int64
int = int32
short = int16

__version__ = "0.1.0"

__all__ = [
    "Generator",
    "Size",
    "Tensor",
    "abs",
    "accelerator",
    "acos",
    "add",
    "all",
    "amax",
    "amin",
    "any",
    "arange",
    "arccos",
    "arcsin",
    "arctan",
    "arctan2",
    "argmax",
    "argmin",
    "argsort",
    "as_tensor",
    "asin",
    "atan",
    "atan2",
    "autograd",
    "backends",
    "bfloat16",
    "bool",
    "can_cast",
    "ceil",
    "celu",
    "celu_",
    "clamp",
    "copysign",
    "cos",
    "cosh",
    "count_nonzero",
    "cpu",
    "cuda",
    "parallel",
    "xpu",
    "cumprod",
    "cumsum",
    "default_generator",
    "device",
    "div",
    "double",
    "dtype",
    "empty",
    "eye",
    "empty_like",
    "enable_grad",
    "inference_mode",
    "is_inference_mode_enabled",
    "eq",
    "erf",
    "erfinv",
    "exp",
    "exp2",
    "expm1",
    "finfo",
    "fix",
    "float",
    "float16",
    "float32",
    "float64",
    "floor",
    "fmax",
    "fmin",
    "fmod",
    "frac",
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
    "half",
    "int",
    "int8",
    "int16",
    "int32",
    "int64",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "le",
    "linalg",
    "log",
    "log10",
    "log1p",
    "log2",
    "log_softmax",
    "logsumexp",
    "long",
    "short",
    "uint8",
    "lt",
    "linspace",
    "logspace",
    "manual_seed",
    "matmul",
    "max",
    "maximum",
    "mean",
    "median",
    "min",
    "minimum",
    "mm",
    "mul",
    "nanmean",
    "nansum",
    "ne",
    "neg",
    "nn",
    "utils",
    "no_grad",
    "norm",
    "ones",
    "ones_like",
    "pow",
    "prod",
    "promote_types",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "randperm",
    "reciprocal",
    "relu",
    "remainder",
    "result_type",
    "return_types",
    "round",
    "rsqrt",
    "seed",
    "selu",
    "selu_",
    "set_default_device",
    "set_default_dtype",
    "set_grad_enabled",
    "set_num_threads",
    "set_rng_state",
    "sigmoid",
    "sin",
    "sinh",
    "softmax",
    "sort",
    "sqrt",
    "square",
    "std",
    "std_mean",
    "sub",
    "sum",
    "tan",
    "tanh",
    "tensor",
    "topk",
    "transpose",
    "trunc",
    "unique",
    "var",
    "var_mean",
    "zeros",
    "zeros_like",
]

# Shape, movement and indexing ops (python/rustgrad/_shape.py).
from . import _shape  # noqa: E402
from ._shape import *  # noqa: E402,F403

__all__ += _shape.__all__

# tensor_split / hsplit / vsplit / dsplit, equal, broadcast_shapes
# (python/rustgrad/_tensor_split.py; it also adds the Tensor methods).
from . import _tensor_split  # noqa: E402
from ._tensor_split import *  # noqa: E402,F403

__all__ += _tensor_split.__all__

# Linear-algebra ops (python/rustgrad/_linalg.py).
from . import _linalg  # noqa: E402
from ._linalg import *  # noqa: E402,F403

__all__ += _linalg.__all__

# Elementwise ops of three operands (the last section of python/rustgrad/_elementwise.py).
from ._elementwise import addcdiv, addcmul, clip, lerp  # noqa: E402

__all__ += ["addcdiv", "addcmul", "clip", "lerp"]

# Predicates, logical and bitwise ops (python/rustgrad/_elementwise.py).
from ._elementwise import (  # noqa: E402
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    isfinite,
    isinf,
    isnan,
    isneginf,
    isposinf,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    nan_to_num,
    nan_to_num_,
)

__all__ += [
    "bitwise_and",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "nan_to_num",
    "nan_to_num_",
]

# Sign, hypot and logaddexp (python/rustgrad/_elementwise.py).
from ._elementwise import hypot, logaddexp, logaddexp2, sgn, signbit  # noqa: E402

__all__ += ["hypot", "logaddexp", "logaddexp2", "sgn", "signbit"]

# Division with rounding (python/rustgrad/_elementwise.py).
from ._elementwise import divide, floor_divide, true_divide  # noqa: E402

__all__ += ["divide", "floor_divide", "true_divide"]

# xlogy, float_power and rustgrad.special (python/rustgrad/_extra_ops.py); isclose and
# allclose (python/rustgrad/_compare.py).
from . import _compare, _extra_ops, special  # noqa: E402
from ._compare import *  # noqa: E402,F403
from ._extra_ops import *  # noqa: E402,F403

__all__ += [*_extra_ops.__all__, "special", *_compare.__all__]

# Samplers (python/rustgrad/_random.py; rand_like and randn_like with generator=).
from ._random import (  # noqa: E402
    bernoulli,
    multinomial,
    normal,
    rand_like,
    randint_like,
    randn_like,
)

__all__ += ["bernoulli", "multinomial", "normal", "randint_like"]

# DLPack import (crates/python/src/dlpack.rs; Tensor.__dlpack__ is a method there).
from ._rustgrad import from_dlpack  # noqa: E402

__all__ += ["from_dlpack", "set_anomaly_enabled"]

# Alias methods and function forms of existing methods (python/rustgrad/_forms.py).
from . import _forms  # noqa: E402
from ._forms import *  # noqa: E402,F403

__all__ += _forms.__all__

__all__ += ["viz"]

# Convolutions and linear layers at the top level, as PyTorch has them (torch.conv2d,
# torch.convolution, ...): python/rustgrad/nn/_conv.py over crates/python/src/ops/conv.rs.
from ._rustgrad import convolution  # noqa: E402
from .nn._conv import (  # noqa: E402
    bilinear,
    conv1d,
    conv2d,
    conv3d,
    conv_transpose1d,
    conv_transpose2d,
    conv_transpose3d,
    pixel_shuffle,
    pixel_unshuffle,
)

__all__ += [
    "bilinear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "convolution",
    "pixel_shuffle",
    "pixel_unshuffle",
]

# Optimizers: imported last, since LBFGS decorates its step with `no_grad` at import.
from . import optim  # noqa: E402,F401

# Checkpoints: rustgrad.save / rustgrad.load (Note [Checkpoints]).
from .serialization import load, save  # noqa: E402

__all__ += ["load", "save"]

# Capture and replay: rustgrad.jit.trace / rustgrad.compile (Note [Capture and replay]).
from . import jit  # noqa: E402,F401
from .jit import compile  # noqa: E402

__all__ += ["compile"]

# Device flags of tensors and the meta device (Note [Meta device]): after every module
# that adds Tensor methods, since meta tensors override or refuse each of them.
# torchvision-style models (python/rustgrad/models/): `rustgrad.models.resnet18()`.
from . import (  # noqa: E402,F401
    _device,
    _meta,
    models,  # noqa: E402,F401
    onnx,  # `rustgrad.onnx.export` (Note [ONNX]); needs the onnx package when called
)

# `out=` on every function PyTorch gives one (python/rustgrad/_out.py, Note [out=
# arguments]): last, so that it wraps the final binding of each name.
from ._out import install as _install_out  # noqa: E402

_install_out(globals())
