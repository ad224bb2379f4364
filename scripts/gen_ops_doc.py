"""Generate docs/ops.md, the table of rustgrad's tensor ops, from the code.

The op list is the binding's op registry, `rustgrad._rustgrad._op_registry()`: one
row per Tensor method with its family, in the table order of
`crates/python/src/ops/registry.rs` (Note [Op registry]). For
each op the script then asks the built package, by running it, which forms exist
(`rustgrad.x`, `t.x`, `t.x_`), which dtypes it accepts and whether its float64 result
records a backward (and the grad_fn's name). An op that takes arguments needs its sample
arguments in `ARGS` below (the test fails on an op that no dtype accepts).

    .venv/bin/python scripts/gen_ops_doc.py          # rewrite docs/ops.md
    .venv/bin/python scripts/gen_ops_doc.py --check  # exit 1 if docs/ops.md is stale

tests/python/test_ops_doc.py runs the check in the test suite.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
BINDING = ROOT / "crates" / "python" / "src" / "ops"
OUT = ROOT / "docs" / "ops.md"

# Python operators implemented by dunder methods, shown by their symbol.
OPERATORS = {
    "__add__": "a + b",
    "__radd__": "n + a",
    "__sub__": "a - b",
    "__rsub__": "n - a",
    "__mul__": "a * b",
    "__rmul__": "n * a",
    "__truediv__": "a / b",
    "__rtruediv__": "n / a",
    "__pow__": "a ** b",
    "__rpow__": "n ** a",
    "__mod__": "a % b",
    "__rmod__": "n % a",
    "__imod__": "a %= b",
    "__matmul__": "a @ b",
    "__rmatmul__": "b @ a",
    "__neg__": "-a",
    "__pos__": "+a",
    "__abs__": "abs(a)",
    "__eq__": "a == b",
    "__ne__": "a != b",
    "__lt__": "a < b",
    "__le__": "a <= b",
    "__gt__": "a > b",
    "__ge__": "a >= b",
    "__getitem__": "a[i]",
    "__setitem__": "a[i] = v",
    "__iadd__": "a += b",
    "__isub__": "a -= b",
    "__imul__": "a *= b",
    "__itruediv__": "a /= b",
    "__and__": "a & b",
    "__rand__": "n & a",
    "__or__": "a | b",
    "__ror__": "n | a",
    "__xor__": "a ^ b",
    "__rxor__": "n ^ a",
    "__iand__": "a &= b",
    "__ior__": "a |= b",
    "__ixor__": "a ^= b",
    "__invert__": "~a",
    "__floordiv__": "a // b",
    "__rfloordiv__": "n // a",
    "__ifloordiv__": "a //= b",
}

# The arguments of a sample call per op, as a function of (torch module, a tensor `a` of
# shape (2, 3) with values 1..6): used to find the accepted dtypes and whether a
# backward is recorded. An op not listed is called without arguments; an in-place op
# `x_` takes the arguments of `x` and runs on a clone (the leaf is not written).
Args = Callable[[Any, Any], tuple]


def _other(torch: Any, a: Any) -> tuple:
    return (torch.ones(2, 3, dtype=a.dtype),)


ARGS: dict[str, Args] = {
    # binary
    **{
        name: _other
        for name in [
            "add",
            "sub",
            "mul",
            "div",
            "pow",
            "eq",
            "ne",
            "lt",
            "le",
            "gt",
            "ge",
            "atan2",
            "arctan2",
            "maximum",
            "minimum",
            "fmax",
            "fmin",
            "fmod",
            "remainder",
            "copysign",
            "hypot",
            "logaddexp",
            "logaddexp2",
            "xlogy",
            "float_power",
            "divide",
            "true_divide",
            "floor_divide",
            "copy",
        ]
    },
    "clamp": lambda t, a: (0, 1),
    "clamp_min": lambda t, a: (2,),
    "clamp_max": lambda t, a: (2,),
    # three operands (ops/ternary.rs)
    "clip": lambda t, a: (0, 1),
    "lerp": lambda t, a: (t.ones(2, 3, dtype=a.dtype), 0.5),
    "addcmul": lambda t, a: (t.ones(2, 3, dtype=a.dtype), t.ones(3, dtype=a.dtype)),
    "addcdiv": lambda t, a: (t.ones(2, 3, dtype=a.dtype), t.ones(3, dtype=a.dtype)),
    "where": lambda t, a: (a > 2, t.zeros(3, dtype=a.dtype)),
    # logical and bitwise (ops/logical.rs)
    **{
        name: _other
        for name in [
            "logical_and",
            "logical_or",
            "logical_xor",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
        ]
    },
    "fill": lambda t, a: (1,),
    # reduce
    **{
        name: (lambda t, a: (1,))
        for name in ["softmax", "log_softmax", "logsumexp", "cumsum", "cumprod"]
    },
    "topk": lambda t, a: (2,),
    # linalg
    "matmul": lambda t, a: (t.ones(3, 2, dtype=a.dtype),),
    "mm": lambda t, a: (t.ones(3, 2, dtype=a.dtype),),
    "bmm": lambda t, a: (t.ones(1, 3, 2, dtype=a.dtype),),
    "mv": lambda t, a: (t.ones(3, dtype=a.dtype),),
    "dot": lambda t, a: (t.ones(6, dtype=a.dtype),),
    "outer": lambda t, a: (t.ones(2, dtype=a.dtype),),
    "addmm": lambda t, a: (t.ones(2, 2, dtype=a.dtype), t.ones(2, 3, dtype=a.dtype)),
    "addmv": lambda t, a: (t.ones(6, 2, dtype=a.dtype), t.ones(2, dtype=a.dtype)),
    "baddbmm": lambda t, a: (t.ones(1, 2, 2, dtype=a.dtype), t.ones(1, 2, 3, dtype=a.dtype)),
    "addbmm": lambda t, a: (t.ones(1, 2, 2, dtype=a.dtype), t.ones(1, 2, 3, dtype=a.dtype)),
    # shape
    "view": lambda t, a: (6,),
    "reshape": lambda t, a: (3, 2),
    "transpose": lambda t, a: (0, 1),
    "permute": lambda t, a: (1, 0),
    "expand": lambda t, a: (2, 2, 3),
    "unsqueeze": lambda t, a: (0,),
    # shape and movement
    "split": lambda t, a: (1, 1),
    "split_with_sizes": lambda t, a: ([1, 2], 1),
    "chunk": lambda t, a: (2, 1),
    "narrow": lambda t, a: (1, 0, 2),
    "select": lambda t, a: (1, 0),
    "roll": lambda t, a: (1, 1),
    "repeat": lambda t, a: (2, 1),
    "movedim": lambda t, a: (0, 1),
    "moveaxis": lambda t, a: (0, 1),
    "unfold": lambda t, a: (1, 2, 1),
    "repeat_interleave": lambda t, a: (2,),
    # indexing (integer and bool tensor arguments)
    "index_select": lambda t, a: (1, t.tensor([0, 2])),
    "gather": lambda t, a: (1, t.tensor([[0, 1], [2, 0]])),
    "scatter": lambda t, a: (1, t.tensor([[0], [2]]), t.ones(2, 1, dtype=a.dtype)),
    "scatter_add": lambda t, a: (1, t.tensor([[0], [2]]), t.ones(2, 1, dtype=a.dtype)),
    "index_add": lambda t, a: (1, t.tensor([0, 2]), t.ones(2, 2, dtype=a.dtype)),
    "index_fill": lambda t, a: (1, t.tensor([0, 2]), 0),
    "masked_fill": lambda t, a: (t.tensor([True, False, True]), 0),
    "masked_select": lambda t, a: (t.tensor([True, False, True]),),
    "take": lambda t, a: (t.tensor([0, 5]),),
    "index_put": lambda t, a: ((t.tensor([0, 1]),), t.ones(2, 3, dtype=a.dtype)),
    "as_strided": lambda t, a: ((2, 2), (1, 2)),
    "index_copy": lambda t, a: (1, t.tensor([0, 2]), t.ones(2, 2, dtype=a.dtype)),
    "scatter_reduce": lambda t, a: (1, t.tensor([[0, 2]]), t.ones(1, 2, dtype=a.dtype), "sum"),
    "masked_scatter": lambda t, a: (t.tensor([True, False, True]), t.ones(4, dtype=a.dtype)),
    "put": lambda t, a: (t.tensor([0, 5]), t.ones(2, dtype=a.dtype)),
    "fill_diagonal": lambda t, a: (1,),
    # index
    "__getitem__": lambda t, a: ((0, slice(1, None)),),
    "__setitem__": lambda t, a: (0, 1),
}

# Ops whose sample runs on a non-contiguous input (a transposed view).
TRANSPOSED = {"contiguous"}

# Ops whose sample runs on `a` reshaped (ops that need another number of dims).
RESHAPED = {
    "bmm": (1, 2, 3),
    "baddbmm": (1, 2, 3),
    "dot": (6,),
    "outer": (6,),
    "addmv": (6,),
}

DTYPES = [
    *("float32 float64 float16 bfloat16".split()),
    *("int64 int32 int16 int8 uint8 bool".split()),
]

# Module-level factories (they make leaves, so no backward) and their sample arguments;
# `dtype=` is passed to find the dtypes each accepts.
FACTORIES: dict[str, Args] = {
    "tensor": lambda t: ([[1, 2], [3, 4]],),
    "zeros": lambda t: (2, 3),
    "ones": lambda t: (2, 3),
    "full": lambda t: ((2, 3), 1),
    "empty": lambda t: (2, 3),
    "arange": lambda t: (0, 5),
    "linspace": lambda t: (0, 4, 5),
    "logspace": lambda t: (0, 2, 3),
    "eye": lambda t: (3,),
    "rand": lambda t: (2, 3),
    "randn": lambda t: (2, 3),
    "randint": lambda t: (0, 10, (2, 3)),
    "randperm": lambda t: (5,),
    "zeros_like": lambda t: (t.ones(2, 3),),
    "ones_like": lambda t: (t.ones(2, 3),),
    "full_like": lambda t: (t.ones(2, 3), 7),
    "empty_like": lambda t: (t.ones(2, 3),),
    "rand_like": lambda t: (t.ones(2, 3),),
    "randn_like": lambda t: (t.ones(2, 3),),
    "randint_like": lambda t: (t.ones(2, 3), 5),
    "normal": lambda t: (0.0, 1.0, (2, 3)),
    "as_tensor": lambda t: ([1, 2],),
}


# Ops written in Python over the binding (python/rustgrad/_*.py, linalg, nn.functional):
# form -> sample arguments as a function of (torch module, `a`). The sample's first
# tensor is `a` or built from it, so its dtype is the one being probed.
_ONE_D: Args = lambda t, a: (a.reshape(-1)[:3],)  # noqa: E731
# The type-promotion functions, each called with one dtype (`torch.result_type` with a
# tensor of it and a Python number).
PROMOTION: dict[str, Callable[[Any, Any], Any]] = {
    "result_type": lambda torch, d: torch.result_type(torch.ones(2, dtype=d), 1),
    "promote_types": lambda torch, d: torch.promote_types(d, torch.int64),
    "can_cast": lambda torch, d: torch.can_cast(d, torch.float32),
}

PYTHON_OPS: dict[str, Args] = {
    # shape (python/rustgrad/_shape.py)
    "torch.cat": lambda t, a: ([a, a],),
    "torch.concat": lambda t, a: ([a, a],),
    "torch.concatenate": lambda t, a: ([a, a],),
    "torch.stack": lambda t, a: ([a, a],),
    "torch.hstack": lambda t, a: ([a, a],),
    "torch.vstack": lambda t, a: ([a, a],),
    "torch.meshgrid": lambda t, a: (a.reshape(-1)[:2], a.reshape(-1)[:3]),
    "torch.broadcast_to": lambda t, a: (a, (2, 2, 3)),
    "t.broadcast_to": lambda t, a: ((2, 2, 3),),
    "torch.swapaxes": lambda t, a: (a, 0, 1),
    "t.swapaxes": lambda t, a: (0, 1),
    "torch.swapdims": lambda t, a: (a, 0, 1),
    "t.swapdims": lambda t, a: (0, 1),
    "t.T": lambda t, a: (),
    "t.mT": lambda t, a: (),
    "t.expand_as": lambda t, a: (t.ones(2, 2, 3),),
    "t.view_as": lambda t, a: (t.ones(3, 2),),
    "t.reshape_as": lambda t, a: (t.ones(3, 2),),
    "torch.unflatten": lambda t, a: (a, 1, (3, 1)),
    "t.unflatten": lambda t, a: (1, (3, 1)),
    "torch.take_along_dim": lambda t, a: (a, t.tensor([[0], [2]]), 1),
    "t.take_along_dim": lambda t, a: (t.tensor([[0], [2]]), 1),
    "t.index_put": lambda t, a: ((t.tensor([0, 1]),), t.ones(2, 3, dtype=a.dtype)),
    # tensor_split and friends (python/rustgrad/_tensor_split.py)
    "torch.tensor_split": lambda t, a: (a, 2, 1),
    "t.tensor_split": lambda t, a: ([1], 1),
    "torch.hsplit": lambda t, a: (a, [1]),
    "t.hsplit": lambda t, a: ([1],),
    "torch.vsplit": lambda t, a: (a, [1]),
    "t.vsplit": lambda t, a: ([1],),
    "torch.dsplit": lambda t, a: (a.reshape(1, 2, 3), [1]),
    # reductions with two results
    "torch.var_mean": lambda t, a: (a, 1),
    "torch.std_mean": lambda t, a: (a, 1),
    # linear algebra (python/rustgrad/_linalg.py, rustgrad.linalg)
    "torch.einsum": lambda t, a: ("ij,kj->ik", a, a),
    "torch.tensordot": lambda t, a: (a, a, ([1], [1])),
    "torch.linalg.vector_norm": lambda t, a: (a,),
    "torch.linalg.matrix_norm": lambda t, a: (a,),
    "torch.linalg.norm": lambda t, a: (a,),
    # activations (rustgrad.nn.functional; selu and celu also as torch.x)
    "torch.selu": lambda t, a: (a,),
    "torch.celu": lambda t, a: (a,),
    **{
        f"F.{name}": lambda t, a: (a,)
        for name in [
            "relu",
            "relu6",
            "leaky_relu",
            "elu",
            "selu",
            "celu",
            "gelu",
            "silu",
            "mish",
            "softplus",
            "softsign",
            "hardtanh",
            "hardsigmoid",
            "hardswish",
            "logsigmoid",
            "sigmoid",
            "tanh",
        ]
    },
    "F.softmax": lambda t, a: (a, 1),
    "F.softmin": lambda t, a: (a, 1),
    "F.log_softmax": lambda t, a: (a, 1),
    # padding, resampling and grids (python/rustgrad/nn/_spatial.py)
    "F.pad": lambda t, a: (a, (1, 2)),
    "F.interpolate": lambda t, a: (a.reshape(1, 2, 3), None, 2.0),
    "F.grid_sample": lambda t, a: (
        a.reshape(1, 1, 2, 3),
        t.zeros(1, 2, 2, 2, dtype=a.dtype),
        "bilinear",
        "zeros",
        False,
    ),
    "F.affine_grid": lambda t, a: (a.reshape(1, 2, 3), (1, 1, 2, 2), False),
    # activations, dropout, embedding (rustgrad/nn/_activation.py, _dropout.py)
    **{f"F.{name}": lambda t, a: (a,) for name in ["hardshrink", "softshrink", "tanhshrink"]},
    **{f"F.{name}": lambda t, a: (a,) for name in ["rrelu", "dropout1d", "alpha_dropout"]},
    "F.feature_alpha_dropout": lambda t, a: (a,),
    "F.glu": lambda t, a: (a, 0),
    "F.threshold": lambda t, a: (a, 0.5, 0.0),
    "F.prelu": lambda t, a: (a, t.ones(3, dtype=a.dtype)),
    "F.dropout2d": lambda t, a: (a.reshape(1, 1, 2, 3),),
    "F.dropout3d": lambda t, a: (a.reshape(1, 1, 1, 2, 3),),
    "F.embedding": lambda t, a: (t.tensor([1, 0]), a),
    "F.embedding_bag": lambda t, a: (t.tensor([[0, 1]]), a),
    "F.one_hot": lambda t, a: (a.abs().long(),),
    # losses (rustgrad/nn/_loss.py; cross_entropy, nll_loss and the pointwise losses
    # are engine ops: crates/engine/src/ops/loss.rs)
    "F.cross_entropy": lambda t, a: (a, t.tensor([0, 2])),
    "F.nll_loss": lambda t, a: (a, t.tensor([0, 2])),
    **{
        f"F.{name}": lambda t, a: (a, a)
        for name in [
            "mse_loss",
            "l1_loss",
            "smooth_l1_loss",
            "huber_loss",
            "binary_cross_entropy_with_logits",
            "poisson_nll_loss",
            "cosine_similarity",
            "pairwise_distance",
        ]
    },
    "F.binary_cross_entropy": lambda t, a: (a.sigmoid(), a.sigmoid()),
    "F.kl_div": lambda t, a: (a, a, None, None, "sum"),
    "F.cosine_embedding_loss": lambda t, a: (a, a, t.ones(2)),
    "F.margin_ranking_loss": lambda t, a: (a, a, t.ones(2, 3, dtype=a.dtype)),
    "F.triplet_margin_loss": lambda t, a: (a, a, a),
    # convolutions and linear layers (rustgrad.nn.functional, python/rustgrad/nn/_conv.py)
    "F.conv1d": lambda t, a: (a.reshape(1, 2, 3), t.ones(1, 2, 2, dtype=a.dtype)),
    "F.conv2d": lambda t, a: (a.reshape(1, 1, 2, 3), t.ones(1, 1, 2, 2, dtype=a.dtype)),
    "F.conv3d": lambda t, a: (a.reshape(1, 1, 1, 2, 3), t.ones(1, 1, 1, 2, 2, dtype=a.dtype)),
    "F.conv_transpose1d": lambda t, a: (a.reshape(1, 2, 3), t.ones(2, 1, 2, dtype=a.dtype)),
    "F.conv_transpose2d": lambda t, a: (a.reshape(1, 1, 2, 3), t.ones(1, 1, 2, 2, dtype=a.dtype)),
    "F.conv_transpose3d": lambda t, a: (
        a.reshape(1, 1, 1, 2, 3),
        t.ones(1, 1, 1, 2, 2, dtype=a.dtype),
    ),
    "F.linear": lambda t, a: (a, t.ones(4, 3, dtype=a.dtype)),
    "F.bilinear": lambda t, a: (a, a, t.ones(2, 3, 3, dtype=a.dtype)),
    "F.unfold": lambda t, a: (a.reshape(1, 1, 2, 3), 2),
    "F.fold": lambda t, a: (a.reshape(1, 2, 3), (2, 3), (2, 1)),
    "F.pixel_shuffle": lambda t, a: (a.reshape(6, 1, 1)[:4], 2),
    "F.pixel_unshuffle": lambda t, a: (a.reshape(1, 2, 3)[:, :, :2], 2),
    # pooling and normalisation (python/rustgrad/nn/_pool.py, _norm.py)
    "F.max_pool1d": lambda t, a: (a, 2),
    "F.max_pool2d": lambda t, a: (a.reshape(1, 2, 3), 2),
    "F.avg_pool1d": lambda t, a: (a, 2),
    "F.avg_pool2d": lambda t, a: (a.reshape(1, 2, 3), 2),
    "F.adaptive_avg_pool1d": lambda t, a: (a, 2),
    "F.adaptive_avg_pool2d": lambda t, a: (a.reshape(1, 2, 3), 1),
    "F.adaptive_max_pool2d": lambda t, a: (a.reshape(1, 2, 3), 1),
    "F.max_unpool2d": lambda t, a: (a.reshape(1, 2, 3), t.zeros(1, 2, 3, dtype=t.int64), 1),
    "F.max_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 1),
    "F.avg_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 1),
    "F.adaptive_avg_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 1),
    "F.adaptive_max_pool1d": lambda t, a: (a, 2),
    "F.adaptive_max_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 1),
    "F.lp_pool1d": lambda t, a: (a, 2, 2),
    "F.lp_pool2d": lambda t, a: (a.reshape(1, 2, 3), 2, 2),
    "F.lp_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 2, 1),
    "F.max_unpool1d": lambda t, a: (a, t.zeros(2, 3, dtype=t.int64), 1),
    "F.max_unpool3d": lambda t, a: (a.reshape(1, 1, 2, 3), t.zeros(1, 1, 2, 3, dtype=t.int64), 1),
    "F.fractional_max_pool2d": lambda t, a: (a.reshape(1, 2, 3), 1, 1),
    "F.fractional_max_pool3d": lambda t, a: (a.reshape(1, 1, 2, 3), 1, 1),
    "F.batch_norm": lambda t, a: (a, None, None, None, None, True),
    "F.layer_norm": lambda t, a: (a, (3,)),
    "F.group_norm": lambda t, a: (a, 1),
    "F.instance_norm": lambda t, a: (a.reshape(1, 2, 3),),
    "F.rms_norm": lambda t, a: (a, (3,)),
    "F.local_response_norm": lambda t, a: (a.reshape(1, 2, 3), 2),
    "F.normalize": lambda t, a: (a,),
}
# In-place forms of the rows above that are functions (`F.x_`, `torch.x_`): run on a
# clone of `a`.
PYTHON_IN_PLACE = ["torch.selu_", "torch.celu_", "F.relu_", "F.leaky_relu_", "F.elu_"]
PYTHON_IN_PLACE += ["F.celu_", "F.hardtanh_", "F.rrelu_"]


def resolve(torch: Any, form: str) -> tuple[Any, bool]:
    """The callable of `form` (`torch.x`, `torch.linalg.x`, `F.x`, `t.x`) and whether it
    is a method of the sample tensor."""
    import rustgrad.nn.functional as F

    head, _, name = form.rpartition(".")
    if head == "t":
        return name, True
    owner = {"torch": torch, "torch.linalg": torch.linalg, "F": F}[head]
    return getattr(owner, name), False


def probe_python(torch: Any, form: str) -> tuple[list[str], str]:
    """As `probe`, for a Python-level op given by its form."""
    in_place = form in PYTHON_IN_PLACE

    def call(a: Any) -> Any:
        fn, is_method = resolve(torch, form)
        if in_place:
            return fn(a.clone())
        args = PYTHON_OPS[form](torch, a)
        if is_method:
            attr = getattr(a, fn)
            return attr(*args) if callable(attr) else attr
        return fn(*args)

    accepted = []
    for dtype in DTYPES:
        a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).to(getattr(torch, dtype))
        try:
            call(a)
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            continue
        accepted.append(dtype)
    if "float64" not in accepted:
        return accepted, "n/a"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    return accepted, backward_of(call(a.requires_grad_()), a)


def registry(kind: str = "method") -> list[dict[str, Any]]:
    """The binding's op registry (Note [Op registry]), the rows of one `kind`: one row
    per Tensor method (`method`) or per module-level op function (`function`) with its
    `name`, `family`, `form` (`manual` when written by hand), `onnx` and `in_place_of`,
    in table order."""
    from rustgrad import _rustgrad

    return [row for row in _rustgrad._op_registry() if row["kind"] == kind]


def binding_ops() -> dict[str, list[str]]:
    """The Python method names of each family, in registry order."""
    families: dict[str, list[str]] = {}
    for row in registry():
        families.setdefault(row["family"], []).append(row["name"])
    return families


def hand_written_ops() -> dict[str, list[str]]:
    """The methods written by hand in each family's binding file, in source order:
    every method of a `#[pymethods]` block in `crates/python/src/ops/<family>.rs`
    (the registry's `manual` rows must be exactly these)."""
    families: dict[str, list[str]] = {}
    for path in sorted(BINDING.glob("*.rs")):
        if path.stem in ("mod", "registry"):
            continue
        text = path.read_text()
        names: list[str] = []
        for block in re.findall(r"#\[pymethods\]\s*impl PyTensor \{(.*?)\n\}", text, re.S):
            rename = None
            for line in block.splitlines():
                m = re.match(r"\s*#\[pyo3\(.*name\s*=\s*\"(\w+)\"", line)
                if m:
                    rename = m.group(1)
                m = re.match(r"    (?:pub )?fn (\w+)", line)
                if m:
                    names.append(rename or m.group(1))
                    rename = None
        if names:
            families[path.stem] = names
    return families


def hand_written_functions() -> dict[str, list[str]]:
    """The module-level op functions written in each family's binding file, in source
    order: every `#[pyfunction]` of `crates/python/src/ops/<family>.rs` (its Python
    name: `#[pyo3(name = ...)]` or the Rust one). The registry's `function` rows must
    be exactly these."""
    families: dict[str, list[str]] = {}
    for path in sorted(BINDING.glob("*.rs")):
        if path.stem in ("mod", "registry"):
            continue
        names = []
        for attrs, name in re.findall(
            r"^#\[pyfunction[^\n]*\n((?:#\[[^\n]*\n)*)(?:pub(?:\(crate\))? )?fn (\w+)",
            path.read_text(),
            re.M,
        ):
            rename = re.search(r"name\s*=\s*\"(\w+)\"", attrs)
            names.append(rename.group(1) if rename else name)
        if names:
            families[path.stem] = names
    return families


def registered_functions() -> dict[str, list[str]]:
    """The functions each family's binding file adds to the module
    (`m.add_function(wrap_pyfunction!(name, m)?)` in its `register`)."""
    families: dict[str, list[str]] = {}
    for path in sorted(BINDING.glob("*.rs")):
        if path.stem in ("mod", "registry"):
            continue
        names = re.findall(r"wrap_pyfunction!\((\w+)", path.read_text())
        if names:
            families[path.stem] = names
    return families


def sample(torch: Any, name: str, a: Any) -> Any:
    """Calls op `name` on `a` (a clone of it for in-place ops) with its sample arguments."""
    in_place = name.endswith("_") and not name.startswith("_")
    args = ARGS.get(name[:-1] if in_place else name, lambda t, x: ())(torch, a)
    base = name[:-1] if in_place else name
    if base in RESHAPED:
        a = a.reshape(RESHAPED[base])
    target = a.clone() if in_place or name == "__setitem__" else a
    if name in TRANSPOSED:
        target = target.t()
    return getattr(target, name)(*args)


def probe(torch: Any, name: str) -> tuple[list[str], str]:
    """The dtypes `name` accepts and its backward ('grad_fn name', 'no', or 'n/a')."""
    accepted = []
    for dtype in DTYPES:
        a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).to(getattr(torch, dtype))
        try:
            sample(torch, name, a)
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            continue
        accepted.append(dtype)
    if "float64" not in accepted:
        return accepted, "n/a"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    a.requires_grad_()
    out = sample(torch, name, a)
    if name == "__setitem__":
        return accepted, "CopySlices"
    return accepted, backward_of(out, a)


def backward_of(out: Any, a: Any) -> str:
    """The grad_fn name of `out` (of its first tensor when it is a tuple or list: the
    values of `(values, indices)`, the first piece of a split), or 'no' / 'returns its
    input'."""
    if isinstance(out, (tuple, list)):
        out = out[0] if out else None
    if out is a:
        return "returns its input"
    fn = getattr(out, "grad_fn", None)
    return type(fn).__name__ if fn is not None else "no"


def render() -> str:
    """The text of docs/ops.md."""
    import rustgrad as torch

    lines = [
        "# Tensor ops",
        "",
        "Generated by `scripts/gen_ops_doc.py` from the binding's op registry",
        "(`crates/python/src/ops/registry.rs`, Note [Op registry]) and by calling each op",
        "on the built package: do not edit by hand. Forms: `torch.x` (function), `t.x`",
        "(method), `t.x_` (in place) or the Python operator. Dtypes: those a call on a",
        "tensor of that dtype accepts. Backward: the grad_fn recorded for a float64 input",
        "that requires grad (`no`: the result never requires grad; `n/a`: not defined for",
        "float64; `returns its input`: a float64 input is returned as it is); for ops",
        "returning several tensors (`split`, `sort`, `var_mean`, ...), that of the first.",
        "",
    ]
    for family, names in binding_ops().items():
        # Only private methods (rustgrad.nn.functional's, listed below), or module
        # functions only (loss.rs): their Python forms are rows below.
        if all(n.startswith("_") and not n.startswith("__") for n in names):
            continue
        lines += [
            f"## {family}",
            "",
            "| op | forms | dtypes | backward |",
            "| --- | --- | --- | --- |",
        ]
        for name in names:
            if name.startswith("_") and not name.startswith("__"):
                continue  # a private method behind a Python-level function
            if name in OPERATORS and name not in ARGS:
                continue  # an operator form of an op listed by its method name
            forms = []
            if name in OPERATORS:
                forms.append(f"`{OPERATORS[name]}`")
            else:
                if hasattr(torch, name) and callable(getattr(torch, name)):
                    forms.append(f"`torch.{name}`")
                forms.append(f"`t.{name}`")
                if not name.endswith("_") and hasattr(torch.Tensor, name + "_"):
                    forms.append(f"`t.{name}_`")
            dtypes, backward = probe(torch, name)
            lines.append(
                f"| {name} | {', '.join(forms)} | {', '.join(dtypes) or 'none'} | {backward} |"
            )
        operators = [OPERATORS[n] for n in names if n in OPERATORS and n not in ARGS]
        if operators:
            lines += ["", "Operators: " + ", ".join(f"`{o}`" for o in operators) + "."]
        lines.append("")
    lines += [
        "## module functions",
        "",
        "The binding's module-level op functions (`rustgrad._rustgrad.<name>`, the",
        "registry's `function` rows): the kernels behind `rustgrad.nn.functional` and",
        "`torch.convolution`, whose Python forms are the python-level rows below.",
        "",
        "| op | family | signature | ONNX |",
        "| --- | --- | --- | --- |",
    ]
    for row in registry("function"):
        signature = f"`{row['signature']}`" if row["signature"] else ""
        onnx = row["onnx"] or ""
        lines.append(f"| {row['name']} | {row['family']} | {signature} | {onnx} |")
    lines.append("")
    lines += [
        "## python-level ops",
        "",
        "Ops written in Python over the binding (`python/rustgrad/_*.py`,",
        "`rustgrad.linalg`, `rustgrad.nn.functional` imported as `F`), one row per form.",
        "",
        "| op | forms | dtypes | backward |",
        "| --- | --- | --- | --- |",
    ]
    for form in [*PYTHON_OPS, *PYTHON_IN_PLACE]:
        dtypes, backward = probe_python(torch, form)
        name = form.rpartition(".")[2]
        lines.append(f"| {name} | `{form}` | {', '.join(dtypes) or 'none'} | {backward} |")
    lines.append("")
    lines += [
        "## factories",
        "",
        "Module-level functions that make new leaves (`requires_grad=` makes one that",
        "requires grad; no backward of their own). Dtypes: those `dtype=` accepts.",
        "",
        "| op | forms | dtypes |",
        "| --- | --- | --- |",
    ]
    for name, args in FACTORIES.items():
        accepted = []
        for dtype in DTYPES:
            try:
                getattr(torch, name)(*args(torch), dtype=getattr(torch, dtype))
            except (RuntimeError, TypeError, ValueError, NotImplementedError):
                continue
            accepted.append(dtype)
        lines.append(f"| {name} | `torch.{name}` | {', '.join(accepted) or 'none'} |")
    lines.append("")
    lines += [
        "## type promotion",
        "",
        "Module-level functions over dtypes (Note [Wrapped scalars]): they make no tensor.",
        "Dtypes: those a call with a tensor (or dtype) of that dtype accepts.",
        "",
        "| op | forms | dtypes |",
        "| --- | --- | --- |",
    ]
    for name, call in PROMOTION.items():
        accepted = []
        for dtype in DTYPES:
            try:
                call(torch, getattr(torch, dtype))
            except (RuntimeError, TypeError, ValueError, NotImplementedError):
                continue
            accepted.append(dtype)
        lines.append(f"| {name} | `torch.{name}` | {', '.join(accepted) or 'none'} |")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/ops.md is stale")
    args = parser.parse_args()
    text = render()
    if args.check:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/ops.md is stale: run scripts/gen_ops_doc.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
