"""Generate the cross-language test vectors in tests/vectors/*.json with PyTorch.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate.py

PyTorch is never a test dependency: the JSON files are committed, and both the Rust
integration tests and tests/python/test_vectors.py read them. The schema and the exact
meaning of every op and kwarg are in tests/vectors/README.md; keep the two in sync.

Determinism: every case draws its inputs from its own numpy generator seeded with the
CRC32 of the case name, so adding or removing a case never changes the others, and
rerunning the script rewrites byte-identical files.
"""

from __future__ import annotations

import json
import math
import operator
import zlib
from pathlib import Path
from typing import Any, Callable

import generate_dtypes  # the sibling scripts (this directory is on sys.path)
import generate_factory
import generate_random
import generate_samplers
import numpy as np
import torch

OUT_DIR = Path(__file__).resolve().parent

# Inputs and grad_outputs are rounded to this many decimals: the JSON stays small, and
# the decimal text parses to the same f64 in Python and Rust, so both sides start from
# bit-identical inputs. Outputs and gradients are written at full precision.
INPUT_DECIMALS = 4

DTYPES = {"float64": torch.float64, "float32": torch.float32, "int64": torch.int64}

UNARY_OPS = ["neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs"]
BINARY_OPS = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "div": operator.truediv,
    "pow": operator.pow,
}
COMPARE_OPS = {
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}
# op name -> f(x, other) with x the tensor and other the Python scalar kwarg.
SCALAR_OPS: dict[str, Callable[[torch.Tensor, float], torch.Tensor]] = {
    "add_scalar": lambda x, other: x + other,
    "radd_scalar": lambda x, other: other + x,
    "sub_scalar": lambda x, other: x - other,
    "rsub_scalar": lambda x, other: other - x,
    "mul_scalar": lambda x, other: x * other,
    "rmul_scalar": lambda x, other: other * x,
    "div_scalar": lambda x, other: x / other,
    "rdiv_scalar": lambda x, other: other / x,
    "pow_scalar_base": lambda x, other: other**x,
}
REDUCE_OPS = ["sum", "mean"]

# elementwise_ops.json: op name -> (distribution of x, f(xs, kwargs)). Methods where
# PyTorch's Tensor has one, else torch.nn.functional (the activations).
_F = torch.nn.functional
ELEMENTWISE_UNARY: dict[str, str] = {
    "rsqrt": "positive",
    "exp2": "normal",
    "expm1": "normal",
    "log1p": "positive",
    "log2": "positive",
    "log10": "positive",
    "sin": "normal",
    "cos": "normal",
    "tan": "unit",
    "asin": "unit",
    "acos": "unit",
    "atan": "normal",
    "sinh": "normal",
    "cosh": "normal",
    "reciprocal": "nonzero",
    "square": "normal",
    "erf": "normal",
    "erfinv": "unit",
    "floor": "wide",
    "ceil": "wide",
    "round": "wide",
    "trunc": "wide",
    "frac": "wide",
}
ELEMENTWISE_ACTIVATIONS: dict[str, dict[str, Any]] = {
    "logsigmoid": {},
    "relu6": {},
    "leaky_relu": {"negative_slope": 0.2},
    "elu": {"alpha": 1.5},
    "selu": {},
    "celu": {"alpha": 0.7},
    "gelu": {"approximate": "tanh"},
    "silu": {},
    "mish": {},
    "softplus": {"beta": 2.0, "threshold": 3.0},
    "softsign": {},
    "hardtanh": {"min_val": -2.0, "max_val": 3.0},
    "hardsigmoid": {},
    "hardswish": {},
}
ELEMENTWISE_BINARY = [
    "hypot",
    "logaddexp",
    "logaddexp2",
    "atan2",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "fmod",
    "remainder",
    "copysign",
]


def _method(op: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    return lambda xs, kw: getattr(xs[0], op)(*xs[1:], **kw)


def _on_specials(op: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    return lambda xs, kw: getattr(specials(xs[0]), op)(**kw)


def _functional(op: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    return lambda xs, kw: getattr(_F, op)(xs[0], **kw)


ELEMENTWISE_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    **{op: _method(op) for op in [*ELEMENTWISE_UNARY, *ELEMENTWISE_BINARY]},
    **{op: _functional(op) for op in ELEMENTWISE_ACTIVATIONS},
    "fmod_scalar": lambda xs, kw: xs[0].fmod(kw["other"]),
    "remainder_scalar": lambda xs, kw: xs[0] % kw["other"],
    "copysign_scalar": lambda xs, kw: xs[0].copysign(kw["other"]),
    # Three operands (kwargs in README.md): where's condition is `x > 0` of its first
    # input, which takes no gradient.
    "lerp_scalar": lambda xs, kw: xs[0].lerp(xs[1], kw["weight"]),
    "lerp": lambda xs, kw: xs[0].lerp(xs[1], xs[2]),
    "addcmul": lambda xs, kw: xs[0].addcmul(xs[1], xs[2], **kw),
    "addcdiv": lambda xs, kw: xs[0].addcdiv(xs[1], xs[2], **kw),
    "clamp_tensor": lambda xs, kw: xs[0].clamp(xs[1], xs[2]),
    "clamp_min_tensor": lambda xs, kw: xs[0].clamp(min=xs[1]),
    "clamp_max_tensor": lambda xs, kw: xs[0].clamp(max=xs[1]),
    "where": lambda xs, kw: torch.where(xs[0] > 0, xs[1], xs[2]),
    # Predicates and nan_to_num see `specials(x)`: +inf above 1.2, -inf below -1.2, NaN
    # where |x| < 0.2, for float inputs (the vectors hold finite inputs only).
    **{
        op: _on_specials(op)
        for op in ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num"]
    },
    **{
        op: _method(op)
        for op in [
            "logical_and",
            "logical_or",
            "logical_xor",
            "logical_not",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor",
            "bitwise_not",
        ]
    },
    # Bool operands of the bitwise ops: `x > 0` of float inputs.
    "sgn": _method("sgn"),
    "div_trunc": lambda xs, kw: torch.div(xs[0], xs[1], rounding_mode="trunc"),
    "div_floor": lambda xs, kw: torch.div(xs[0], xs[1], rounding_mode="floor"),
    "floor_divide": lambda xs, kw: xs[0] // xs[1],
    "signbit": _method("signbit"),
    "bitwise_and_bool": lambda xs, kw: (xs[0] > 0) & (xs[1] > 0),
    "bitwise_xor_bool": lambda xs, kw: (xs[0] > 0) ^ (xs[1] > 0),
    "bitwise_not_bool": lambda xs, kw: ~(xs[0] > 0),
}


def specials(x: torch.Tensor) -> torch.Tensor:
    if not x.is_floating_point():
        return x
    inf = float("inf")
    x = torch.where(x.abs() < 0.2, float("nan"), x)
    return torch.where(x > 1.2, inf, torch.where(x < -1.2, -inf, x))


# --------------------------------------------------------------------------- inputs


def inp(
    shape: list[int],
    dist: str = "normal",
    requires_grad: bool = True,
    view: dict[str, Any] | None = None,
    dtype: str = "float64",
) -> dict[str, Any]:
    """Describe one input: its base (leaf) shape, value distribution and optional view."""
    return {
        "shape": list(shape),
        "dist": dist,
        "requires_grad": requires_grad,
        "view": view,
        "dtype": dtype,
    }


def transpose(dim0: int, dim1: int) -> dict[str, Any]:
    return {"kind": "transpose", "dim0": dim0, "dim1": dim1}


def slice_(dim: int, start: int | None, end: int | None, step: int = 1) -> dict[str, Any]:
    return {"kind": "slice", "dim": dim, "start": start, "end": end, "step": step}


def expand(shape: list[int]) -> dict[str, Any]:
    return {"kind": "expand", "shape": list(shape)}


def permute(dims: list[int]) -> dict[str, Any]:
    return {"kind": "permute", "dims": list(dims)}


def draw(rng: np.random.Generator, shape: list[int], dist: str) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    if dist == "normal":
        values = rng.normal(0.0, 1.0, n)
    elif dist == "positive":
        # log, sqrt, pow bases, negative exponents: keep well inside the domain.
        values = rng.uniform(0.5, 2.0, n)
    elif dist == "nonzero":
        # relu, abs, divisors: keep away from the kink / pole at 0.
        values = rng.choice([-1.0, 1.0], n) * rng.uniform(0.2, 2.0, n)
    elif dist == "zeros":
        # prod, cumprod: exact zeros among normal values (PyTorch's zero-safe gradients).
        values = rng.normal(0.0, 1.0, n) * (rng.uniform(0.0, 1.0, n) > 0.3)
    elif dist == "int":
        values = rng.integers(-5, 6, n).astype(np.float64)
    elif dist == "ties":
        # comparisons: a small value set so that eq/le/ge see many exact ties.
        values = rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], n)
    elif dist == "unit":
        # asin, acos, erfinv, tan: inside (-1, 1), away from the poles.
        values = rng.uniform(-0.9, 0.9, n)
    elif dist == "wide":
        # activations with kinks (hardtanh, relu6, hardswish, ...): both sides of each.
        values = rng.uniform(-8.0, 8.0, n)
        values = np.round(values, INPUT_DECIMALS)
        kinks = [-3.0, -2.0, -1.0, 0.0, 1.0, 3.0, 6.0]
        assert not np.isin(values, kinks).any(), "an input sits on a kink"
    elif dist == "int":
        values = rng.integers(-5, 6, n)
    elif dist == "int_nonzero":
        values = rng.choice([-1, 1], n) * rng.integers(1, 5, n)
    else:
        raise ValueError(f"unknown dist {dist!r}")
    values = np.round(values, INPUT_DECIMALS)
    if dist in ("positive", "nonzero"):
        assert np.all(values != 0.0)
    return values


# ------------------------------------------------------------------------ applying


def apply_view(t: torch.Tensor, view: dict[str, Any] | None) -> torch.Tensor:
    if view is None:
        return t
    kind = view["kind"]
    if kind == "transpose":
        return t.transpose(view["dim0"], view["dim1"])
    if kind == "slice":
        return t[slice_index(view)]
    if kind == "expand":
        return t.expand(*view["shape"])
    if kind == "permute":
        return t.permute(*view["dims"])
    raise ValueError(f"unknown view kind {kind!r}")


def slice_index(spec: dict[str, Any]) -> tuple[slice, ...]:
    return (slice(None),) * spec["dim"] + (slice(spec["start"], spec["end"], spec["step"]),)


def reduce_dim(dims: list[int]) -> Any:
    # Same convention as the pytest module: one dim is passed as an int, several as a
    # tuple, so both forms of PyTorch's `dim=` argument are exercised.
    return dims[0] if len(dims) == 1 else tuple(dims)


def apply_op(op: str, kwargs: dict[str, Any], xs: list[torch.Tensor]) -> Any:
    if op in FORMS_OPS:
        return FORMS_OPS[op](xs, kwargs)
    if op in SCATTER_REDUCE_OPS:
        return SCATTER_REDUCE_OPS[op](xs, kwargs)
    if op in ELEMENTWISE_OPS:
        return ELEMENTWISE_OPS[op](xs, kwargs)
    if op in UNARY_OPS:
        return getattr(xs[0], op)()
    if op == "pow" and "exponent" in kwargs:
        return xs[0] ** kwargs["exponent"]
    if op in BINARY_OPS:
        return BINARY_OPS[op](xs[0], xs[1])
    if op in COMPARE_OPS:
        return COMPARE_OPS[op](xs[0], xs[1])
    if op in SCALAR_OPS:
        return SCALAR_OPS[op](xs[0], kwargs["other"])
    if op in REDUCE_OPS:
        if "dim" in kwargs:
            return getattr(xs[0], op)(dim=reduce_dim(kwargs["dim"]), keepdim=kwargs["keepdim"])
        return getattr(xs[0], op)()
    if op == "matmul":
        return xs[0] @ xs[1]
    if op in REDUCE_OPS_FNS:
        return REDUCE_OPS_FNS[op](xs[0], kwargs)
    x = xs[0]
    if op == "view":
        return x.view(tuple(kwargs["shape"]))
    if op == "reshape":
        return x.reshape(tuple(kwargs["shape"]))
    if op == "transpose":
        return x.transpose(kwargs["dim0"], kwargs["dim1"])
    if op == "t":
        return x.t()
    if op == "permute":
        return x.permute(*kwargs["dims"])
    if op == "expand":
        return x.expand(*kwargs["shape"])
    if op == "unsqueeze":
        return x.unsqueeze(kwargs["dim"])
    if op == "squeeze":
        return x.squeeze(kwargs["dim"]) if "dim" in kwargs else x.squeeze()
    if op == "slice":
        return x[slice_index(kwargs)]
    if op in SHAPE_OPS:
        return SHAPE_OPS[op](xs, kwargs)
    if op in LINALG_OPS:
        return LINALG_OPS[op](xs, kwargs)
    if op in COVERAGE_OPS:
        return COVERAGE_OPS[op](xs, kwargs)
    if op in EXTRA_OPS:
        return EXTRA_OPS[op](xs, kwargs)
    raise ValueError(f"unknown op {op!r}")


# --------------------------------------------------------------------------- cases


def to_json_values(t: torch.Tensor) -> list[Any]:
    flat = t.detach().contiguous().reshape(-1)
    if t.dtype == torch.bool:
        return [bool(v) for v in flat.tolist()]
    if t.dtype == torch.int64:
        return [int(v) for v in flat.tolist()]
    values = [float(v) for v in flat.tolist()]
    assert all(math.isfinite(v) for v in values), "non-finite value in a vector"
    return values


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    return {"data": to_json_values(t), "shape": list(t.shape), "dtype": dtype_name(t.dtype)}


def make_case(
    name: str, op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    kwargs = kwargs or {}
    rng = np.random.default_rng(zlib.crc32(name.encode()))

    leaves = []
    inputs_json = []
    for spec in inputs:
        values = draw(rng, spec["shape"], spec["dist"])
        leaf = (
            torch.tensor(values.tolist(), dtype=DTYPES[spec["dtype"]])
            .reshape(tuple(spec["shape"]))
            .requires_grad_(spec["requires_grad"])
        )
        leaves.append(leaf)
        inputs_json.append(
            {
                "data": [int(v) for v in values] if spec["dtype"] == "int64" else values.tolist(),
                "shape": spec["shape"],
                "dtype": spec["dtype"],
                "requires_grad": spec["requires_grad"],
                "view": spec["view"],
            }
        )

    out = apply_op(op, kwargs, [apply_view(t, s["view"]) for t, s in zip(leaves, inputs)])
    indices = None
    if isinstance(out, tuple):  # (values, indices): max/min/median over a dim, topk, sort
        out, indices = out
    case: dict[str, Any] = {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
    }
    if indices is not None:
        case["indices"] = tensor_json(indices)

    if out.requires_grad:
        go_values = np.round(rng.normal(0.0, 1.0, out.numel()), INPUT_DECIMALS)
        grad_output = torch.tensor(go_values.tolist(), dtype=out.dtype).reshape(out.shape)
        out.backward(grad_output)
        case["grad_output"] = tensor_json(grad_output)
        grads = []
        for leaf in leaves:
            if leaf.requires_grad:
                assert leaf.grad is not None, f"{name}: leaf got no gradient"
                grads.append(tensor_json(leaf.grad))
            else:
                grads.append(None)
        case["grads"] = grads
    else:
        case["grad_output"] = None
        case["grads"] = [None] * len(leaves)
    return case


def f32(spec: dict[str, Any]) -> dict[str, Any]:
    return {**spec, "dtype": "float32"}


UNARY_DIST = {
    "neg": "normal",
    "exp": "normal",
    "log": "positive",
    "sqrt": "positive",
    "tanh": "normal",
    "sigmoid": "normal",
    "relu": "nonzero",
    "abs": "nonzero",
}


def unary_cases() -> list[dict[str, Any]]:
    cases = []
    for op in UNARY_OPS:
        d = UNARY_DIST[op]
        cases += [
            make_case(f"{op}_2d", op, [inp([3, 4], d)]),
            make_case(f"{op}_transposed", op, [inp([4, 3], d, view=transpose(0, 1))]),
            make_case(f"{op}_sliced", op, [inp([3, 6], d, view=slice_(1, 0, 6, 2))]),
            make_case(f"{op}_f32", op, [inp([2, 5], d, dtype="float32")]),
        ]
    cases += [
        make_case("neg_0d", "neg", [inp([])]),
        make_case("exp_0d", "exp", [inp([])]),
        make_case("relu_expanded", "relu", [inp([3, 1], "nonzero", view=expand([3, 4]))]),
        make_case("sqrt_permuted", "sqrt", [inp([2, 3, 4], "positive", view=permute([2, 0, 1]))]),
        make_case("tanh_no_grad", "tanh", [inp([3, 4], requires_grad=False)]),
        # pow with a Python-number exponent (x ** exponent).
        make_case("pow_exponent_2_5", "pow", [inp([3, 4], "positive")], {"exponent": 2.5}),
        make_case("pow_exponent_int_2", "pow", [inp([3, 4], "normal")], {"exponent": 2}),
        make_case("pow_exponent_int_3", "pow", [inp([3, 4], "normal")], {"exponent": 3}),
        make_case("pow_exponent_int_neg1", "pow", [inp([3, 4], "positive")], {"exponent": -1}),
        make_case("pow_exponent_0_5", "pow", [inp([3, 4], "positive")], {"exponent": 0.5}),
        make_case("pow_exponent_0", "pow", [inp([3, 4], "positive")], {"exponent": 0.0}),
        make_case(
            "pow_exponent_2_5_transposed",
            "pow",
            [inp([4, 3], "positive", view=transpose(0, 1))],
            {"exponent": 2.5},
        ),
        make_case(
            "pow_exponent_neg1_5_sliced",
            "pow",
            [inp([4, 6], "positive", view=slice_(0, 1, 4, 2))],
            {"exponent": -1.5},
        ),
        make_case(
            "pow_exponent_2_5_f32",
            "pow",
            [inp([2, 5], "positive", dtype="float32")],
            {"exponent": 2.5},
        ),
    ]
    return cases


def binary_cases() -> list[dict[str, Any]]:
    cases = []
    for op in BINARY_OPS:
        # a's distribution: pow needs a positive base; b's: div needs a nonzero divisor.
        da = "positive" if op == "pow" else "normal"
        db = "nonzero" if op == "div" else "normal"
        cases += [
            make_case(f"{op}_same_shape", op, [inp([3, 4], da), inp([3, 4], db)]),
            make_case(f"{op}_broadcast_row", op, [inp([3, 4], da), inp([4], db)]),
            make_case(f"{op}_broadcast_col", op, [inp([3, 4], da), inp([3, 1], db)]),
            make_case(f"{op}_broadcast_scalar_0d", op, [inp([3, 4], da), inp([], db)]),
            make_case(f"{op}_broadcast_0d_lhs", op, [inp([], da), inp([3, 4], db)]),
            make_case(f"{op}_broadcast_3d_2d", op, [inp([2, 3, 4], da), inp([3, 4], db)]),
            make_case(f"{op}_broadcast_both", op, [inp([2, 1, 4], da), inp([3, 1], db)]),
            make_case(
                f"{op}_transposed_lhs",
                op,
                [inp([4, 3], da, view=transpose(0, 1)), inp([3, 4], db)],
            ),
            make_case(
                f"{op}_sliced_rhs",
                op,
                [inp([3, 4], da), inp([3, 8], db, view=slice_(1, 1, 8, 2))],
            ),
            make_case(
                f"{op}_expanded_lhs",
                op,
                [inp([3, 1], da, view=expand([3, 4])), inp([3, 4], db)],
            ),
            make_case(
                f"{op}_rhs_no_grad",
                op,
                [inp([3, 4], da), inp([3, 4], db, requires_grad=False)],
            ),
            make_case(
                f"{op}_f32",
                op,
                [inp([3, 4], da, dtype="float32"), inp([3, 4], db, dtype="float32")],
            ),
            make_case(
                f"{op}_f32_broadcast_row",
                op,
                [inp([2, 3], da, dtype="float32"), inp([3], db, dtype="float32")],
            ),
        ]
    return cases


def compare_cases() -> list[dict[str, Any]]:
    cases = []
    for op in COMPARE_OPS:
        cases += [
            make_case(
                f"{op}_same_shape",
                op,
                [inp([3, 4], "ties", False), inp([3, 4], "ties", False)],
            ),
            make_case(
                f"{op}_broadcast_row",
                op,
                [inp([3, 4], "ties", False), inp([4], "ties", False)],
            ),
            make_case(
                f"{op}_broadcast_scalar_0d",
                op,
                [inp([3, 4], "ties", False), inp([], "ties", False)],
            ),
            make_case(
                f"{op}_transposed_lhs",
                op,
                [inp([4, 3], "ties", False, view=transpose(0, 1)), inp([3, 4], "ties", False)],
            ),
            make_case(
                f"{op}_f32",
                op,
                [
                    inp([3, 4], "ties", False, dtype="float32"),
                    inp([3, 4], "ties", False, dtype="float32"),
                ],
            ),
        ]
    return cases


SCALAR_OTHER = {
    "add_scalar": 2.5,
    "radd_scalar": 2.5,
    "sub_scalar": 2.5,
    "rsub_scalar": 2.5,
    "mul_scalar": 2.5,
    "rmul_scalar": 2.5,
    "div_scalar": 2.5,
    "rdiv_scalar": 2.5,
    "pow_scalar_base": 2.5,
}


def scalar_cases() -> list[dict[str, Any]]:
    cases = []
    for op, other in SCALAR_OTHER.items():
        d = "nonzero" if op == "rdiv_scalar" else "normal"
        kw = {"other": other}
        cases += [
            make_case(f"{op}_2d", op, [inp([3, 4], d)], kw),
            make_case(f"{op}_transposed", op, [inp([4, 3], d, view=transpose(0, 1))], kw),
            make_case(f"{op}_f32", op, [inp([2, 5], d, dtype="float32")], kw),
        ]
    cases += [
        make_case("add_scalar_int", "add_scalar", [inp([3, 4])], {"other": 2}),
        make_case("mul_scalar_int_negative", "mul_scalar", [inp([3, 4])], {"other": -3}),
        make_case("rsub_scalar_int", "rsub_scalar", [inp([3, 4])], {"other": 1}),
        make_case("div_scalar_negative", "div_scalar", [inp([3, 4])], {"other": -0.75}),
        make_case(
            "rdiv_scalar_sliced",
            "rdiv_scalar",
            [inp([3, 8], "nonzero", view=slice_(1, 0, 8, 3))],
            {"other": -1.5},
        ),
        make_case("pow_scalar_base_0_5", "pow_scalar_base", [inp([3, 4])], {"other": 0.5}),
        make_case("mul_scalar_0d", "mul_scalar", [inp([])], {"other": 2.5}),
    ]
    return cases


def reduce_cases() -> list[dict[str, Any]]:
    cases = []
    for op in REDUCE_OPS:
        cases += [
            make_case(f"{op}_all_2d", op, [inp([3, 4])]),
            make_case(f"{op}_all_3d", op, [inp([2, 3, 4])]),
            make_case(f"{op}_all_1d", op, [inp([5])]),
            make_case(f"{op}_all_0d", op, [inp([])]),
            make_case(f"{op}_dim0", op, [inp([3, 4])], {"dim": [0], "keepdim": False}),
            make_case(f"{op}_dim1_keepdim", op, [inp([3, 4])], {"dim": [1], "keepdim": True}),
            make_case(f"{op}_dim_neg1", op, [inp([2, 3, 4])], {"dim": [-1], "keepdim": False}),
            make_case(
                f"{op}_dims_0_2_keepdim", op, [inp([2, 3, 4])], {"dim": [0, 2], "keepdim": True}
            ),
            make_case(
                f"{op}_dims_neg1_neg3", op, [inp([2, 3, 4])], {"dim": [-1, -3], "keepdim": False}
            ),
            make_case(
                f"{op}_dims_all_listed", op, [inp([3, 4])], {"dim": [0, 1], "keepdim": False}
            ),
            make_case(
                f"{op}_dim1_transposed",
                op,
                [inp([4, 3], view=transpose(0, 1))],
                {"dim": [1], "keepdim": False},
            ),
            make_case(f"{op}_all_transposed", op, [inp([4, 3], view=transpose(0, 1))]),
            make_case(
                f"{op}_dim0_sliced",
                op,
                [inp([3, 8], view=slice_(1, 0, 7, 2))],
                {"dim": [0], "keepdim": True},
            ),
            make_case(f"{op}_all_expanded", op, [inp([3, 1], view=expand([2, 3, 4]))]),
            make_case(
                f"{op}_dim_neg2_permuted",
                op,
                [inp([2, 3, 4], view=permute([2, 0, 1]))],
                {"dim": [-2], "keepdim": False},
            ),
            make_case(f"{op}_all_f32", op, [inp([3, 4], dtype="float32")]),
            make_case(
                f"{op}_dim1_f32", op, [inp([3, 4], dtype="float32")], {"dim": [1], "keepdim": False}
            ),
        ]
    return cases


def matmul_cases() -> list[dict[str, Any]]:
    def mm(name: str, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
        return make_case(name, "matmul", [a, b])

    return [
        mm("matmul_2d_2d", inp([3, 4]), inp([4, 5])),
        mm("matmul_batched_3d_3d", inp([2, 3, 4]), inp([2, 4, 5])),
        mm("matmul_broadcast_3d_2d", inp([2, 3, 4]), inp([4, 5])),
        mm("matmul_broadcast_2d_3d", inp([3, 4]), inp([2, 4, 5])),
        mm("matmul_broadcast_batch_1", inp([1, 3, 4]), inp([2, 4, 5])),
        mm("matmul_broadcast_4d_3d", inp([2, 1, 3, 4]), inp([3, 4, 2])),
        mm("matmul_1d_2d", inp([4]), inp([4, 5])),
        mm("matmul_2d_1d", inp([3, 4]), inp([4])),
        mm("matmul_1d_1d", inp([4]), inp([4])),
        mm("matmul_3d_1d", inp([2, 3, 4]), inp([4])),
        mm("matmul_1d_3d", inp([4]), inp([2, 4, 5])),
        mm("matmul_transposed_lhs", inp([4, 3], view=transpose(0, 1)), inp([4, 5])),
        mm("matmul_transposed_rhs", inp([3, 4]), inp([5, 4], view=transpose(0, 1))),
        mm("matmul_sliced_lhs", inp([6, 4], view=slice_(0, 0, 6, 2)), inp([4, 5])),
        mm(
            "matmul_permuted_batched",
            inp([4, 2, 3], view=permute([1, 2, 0])),
            inp([2, 4, 5]),
        ),
        mm("matmul_expanded_batch", inp([3, 4], view=expand([2, 3, 4])), inp([2, 4, 5])),
        mm("matmul_rhs_no_grad", inp([3, 4]), inp([4, 5], requires_grad=False)),
        mm("matmul_f32_2d", inp([3, 4], dtype="float32"), inp([4, 5], dtype="float32")),
        mm(
            "matmul_f32_batched",
            inp([2, 3, 4], dtype="float32"),
            inp([2, 4, 5], dtype="float32"),
        ),
    ]


def views_cases() -> list[dict[str, Any]]:
    def v(name: str, op: str, spec: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return make_case(name, op, [spec], kwargs)

    return [
        v("view_2d_to_2d", "view", inp([2, 6]), shape=[3, 4]),
        v("view_infer_dim", "view", inp([2, 3, 4]), shape=[-1, 4]),
        v("view_flatten", "view", inp([3, 4]), shape=[-1]),
        v("view_to_0d", "view", inp([1, 1]), shape=[]),
        v("view_row_slice", "view", inp([4, 3], view=slice_(0, 1, 3)), shape=[6]),
        # Splitting the stride-1 dim of a transposed tensor is a valid view (no copy).
        v(
            "view_split_dim_of_transposed",
            "view",
            inp([4, 6], view=transpose(0, 1)),
            shape=[2, 3, 4],
        ),
        v("reshape_contiguous", "reshape", inp([2, 6]), shape=[4, 3]),
        v("reshape_infer_dim", "reshape", inp([2, 3, 4]), shape=[3, -1]),
        v("reshape_transposed_copy", "reshape", inp([4, 3], view=transpose(0, 1)), shape=[12]),
        v("reshape_sliced", "reshape", inp([3, 8], view=slice_(1, 0, 8, 2)), shape=[2, 6]),
        v("reshape_f32", "reshape", inp([2, 6], dtype="float32"), shape=[3, 2, 2]),
        v("transpose_2d", "transpose", inp([3, 4]), dim0=0, dim1=1),
        v("transpose_3d_0_2", "transpose", inp([2, 3, 4]), dim0=0, dim1=2),
        v("transpose_negative_dims", "transpose", inp([2, 3, 4]), dim0=-1, dim1=-3),
        v("transpose_same_dim", "transpose", inp([3, 4]), dim0=1, dim1=1),
        v(
            "transpose_of_transposed",
            "transpose",
            inp([4, 3], view=transpose(0, 1)),
            dim0=0,
            dim1=1,
        ),
        v("transpose_f32", "transpose", inp([3, 4], dtype="float32"), dim0=0, dim1=1),
        v("t_2d", "t", inp([3, 4])),
        v("t_1d", "t", inp([4])),
        v("t_sliced", "t", inp([3, 8], view=slice_(1, 2, 8, 3))),
        v("permute_3d", "permute", inp([2, 3, 4]), dims=[2, 0, 1]),
        v("permute_negative_dims", "permute", inp([2, 3, 4]), dims=[-1, 0, -2]),
        v("permute_of_transposed", "permute", inp([4, 3, 2], view=transpose(0, 2)), dims=[1, 2, 0]),
        v("expand_col", "expand", inp([3, 1]), shape=[3, 4]),
        v("expand_new_leading_dims", "expand", inp([4]), shape=[2, 3, 4]),
        v("expand_minus_one", "expand", inp([3, 1]), shape=[-1, 4]),
        v("expand_0d", "expand", inp([]), shape=[2, 3]),
        v("expand_transposed", "expand", inp([1, 3], view=transpose(0, 1)), shape=[2, 3, 4]),
        v("unsqueeze_0", "unsqueeze", inp([3, 4]), dim=0),
        v("unsqueeze_last", "unsqueeze", inp([3, 4]), dim=-1),
        v("unsqueeze_middle_transposed", "unsqueeze", inp([4, 3], view=transpose(0, 1)), dim=1),
        v("unsqueeze_0d", "unsqueeze", inp([]), dim=0),
        v("squeeze_dim", "squeeze", inp([3, 1, 4]), dim=1),
        v("squeeze_all", "squeeze", inp([1, 3, 1, 4])),
        v("squeeze_non_one_dim_noop", "squeeze", inp([3, 4]), dim=0),
        v("squeeze_negative_dim", "squeeze", inp([3, 1, 4]), dim=-2),
        v("slice_dim0", "slice", inp([4, 3]), dim=0, start=1, end=3, step=1),
        v("slice_dim1_step2", "slice", inp([3, 8]), dim=1, start=0, end=8, step=2),
        v("slice_negative_start", "slice", inp([5, 3]), dim=0, start=-3, end=None, step=1),
        v("slice_negative_end", "slice", inp([3, 6]), dim=1, start=None, end=-2, step=1),
        v("slice_end_past_size", "slice", inp([4, 3]), dim=0, start=1, end=100, step=1),
        v("slice_3d_last_dim_step3", "slice", inp([2, 3, 7]), dim=2, start=1, end=None, step=3),
        v(
            "slice_of_transposed",
            "slice",
            inp([6, 3], view=transpose(0, 1)),
            dim=1,
            start=1,
            end=6,
            step=2,
        ),
        v(
            "slice_of_slice",
            "slice",
            inp([4, 10], view=slice_(1, 1, 10, 2)),
            dim=1,
            start=1,
            end=None,
            step=2,
        ),
        v("slice_f32", "slice", inp([4, 6], dtype="float32"), dim=1, start=1, end=5, step=3),
    ]


def elementwise_cases() -> list[dict[str, Any]]:
    cases = []
    for op, d in ELEMENTWISE_UNARY.items():
        cases += [
            make_case(f"ew_{op}_2d", op, [inp([3, 4], d)]),
            make_case(f"ew_{op}_transposed", op, [inp([4, 3], d, view=transpose(0, 1))]),
            make_case(f"ew_{op}_f32", op, [inp([2, 5], d, dtype="float32")]),
        ]
    cases += [
        make_case("ew_sin_sliced", "sin", [inp([3, 8], view=slice_(1, 1, 8, 3))]),
        make_case("ew_erf_expanded", "erf", [inp([3, 1], view=expand([3, 4]))]),
        make_case("ew_expm1_0d", "expm1", [inp([])]),
        make_case(
            "ew_rsqrt_permuted", "rsqrt", [inp([2, 3, 4], "positive", view=permute([2, 0, 1]))]
        ),
        make_case("ew_cos_no_grad", "cos", [inp([3, 4], requires_grad=False)]),
        make_case("ew_round_decimals_2", "round", [inp([3, 4], "wide")], {"decimals": 2}),
        make_case("ew_round_decimals_neg1", "round", [inp([3, 4], "wide")], {"decimals": -1}),
        # Integer inputs: floating functions give float32, rounding keeps int64.
        make_case("ew_sin_int", "sin", [inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_reciprocal_int", "reciprocal", [inp([5], "int", False, dtype="int64")]),
        make_case("ew_floor_int", "floor", [inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_square_int", "square", [inp([3, 4], "int", False, dtype="int64")]),
    ]
    for op, kw in ELEMENTWISE_ACTIVATIONS.items():
        cases += [
            make_case(f"ew_{op}_2d", op, [inp([3, 4], "wide")], kw),
            make_case(f"ew_{op}_transposed", op, [inp([4, 3], "wide", view=transpose(0, 1))], kw),
            make_case(f"ew_{op}_f32", op, [inp([2, 5], "wide", dtype="float32")], kw),
        ]
    cases += [
        make_case("ew_gelu_exact", "gelu", [inp([3, 4], "wide")]),
        make_case("ew_gelu_exact_f32", "gelu", [inp([2, 5], "wide", dtype="float32")]),
        make_case("ew_leaky_relu_default", "leaky_relu", [inp([3, 4], "wide")]),
        make_case("ew_elu_default_sliced", "elu", [inp([3, 8], "wide", view=slice_(1, 0, 8, 2))]),
        make_case("ew_softplus_default", "softplus", [inp([3, 4], "wide")]),
        make_case("ew_softplus_large", "softplus", [inp([3, 4], "wide")], {"threshold": 1.0}),
        make_case("ew_hardtanh_default", "hardtanh", [inp([3, 4], "wide")]),
        make_case("ew_relu6_int", "relu6", [inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_softsign_int", "softsign", [inp([3, 4], "int", False, dtype="int64")]),
    ]
    divisor = {"fmod": "nonzero", "remainder": "nonzero", "atan2": "nonzero"}
    for op in ELEMENTWISE_BINARY:
        dy = divisor.get(op, "normal")
        dx = "nonzero" if op == "copysign" else "normal"
        cases += [
            make_case(f"ew_{op}_same_shape", op, [inp([3, 4], dx), inp([3, 4], dy)]),
            make_case(f"ew_{op}_broadcast_row", op, [inp([3, 4], dx), inp([4], dy)]),
            make_case(f"ew_{op}_broadcast_both", op, [inp([2, 1, 4], dx), inp([3, 1], dy)]),
            make_case(
                f"ew_{op}_transposed_0d",
                op,
                [inp([4, 3], dx, view=transpose(0, 1)), inp([], dy)],
            ),
            make_case(f"ew_{op}_y_no_grad", op, [inp([3, 4], dx), inp([3, 4], dy, False)]),
            make_case(
                f"ew_{op}_f32",
                op,
                [inp([2, 5], dx, dtype="float32"), inp([2, 5], dy, dtype="float32")],
            ),
        ]
    ints = [inp([3, 4], "int", False, dtype="int64"), inp([4], "nonzero", False)]
    cases += [
        make_case("ew_maximum_ties", "maximum", [inp([3, 4], "ties"), inp([3, 4], "ties")]),
        make_case("ew_minimum_ties", "minimum", [inp([3, 4], "ties"), inp([4], "ties")]),
        make_case("ew_fmax_ties", "fmax", [inp([3, 4], "ties"), inp([3, 4], "ties")]),
        make_case("ew_fmin_ties", "fmin", [inp([3, 4], "ties"), inp([3, 4], "ties")]),
        make_case("ew_maximum_int", "maximum", [ints[0], inp([4], "int", False, dtype="int64")]),
        make_case(
            "ew_remainder_int",
            "remainder",
            [ints[0], {**inp([4], "int", False, dtype="int64"), "dist": "int_nonzero"}],
        ),
        make_case(
            "ew_fmod_int",
            "fmod",
            [ints[0], {**inp([4], "int", False, dtype="int64"), "dist": "int_nonzero"}],
        ),
        make_case("ew_atan2_int_float", "atan2", ints),
        make_case("ew_fmod_scalar", "fmod_scalar", [inp([3, 4])], {"other": 0.75}),
        make_case("ew_fmod_scalar_int", "fmod_scalar", [inp([3, 4])], {"other": -2}),
        make_case("ew_remainder_scalar", "remainder_scalar", [inp([3, 4])], {"other": -0.75}),
        make_case(
            "ew_remainder_scalar_f32",
            "remainder_scalar",
            [inp([2, 5], dtype="float32")],
            {"other": 1.5},
        ),
        make_case(
            "ew_copysign_scalar", "copysign_scalar", [inp([3, 4], "nonzero")], {"other": -1.0}
        ),
    ]
    # Three operands: same shapes, broadcasting, views, float32, ties for clamp.
    n, t = inp([3, 4]), inp([4, 3], view=transpose(0, 1))
    cases += [
        make_case("ew_lerp_scalar", "lerp_scalar", [n, inp([3, 4])], {"weight": 0.3}),
        make_case("ew_lerp_scalar_far", "lerp_scalar", [t, inp([4])], {"weight": 0.75}),
        make_case("ew_lerp_tensor", "lerp", [n, inp([3, 4]), inp([3, 4], "unit")]),
        make_case("ew_lerp_broadcast", "lerp", [inp([2, 1, 4]), inp([3, 1]), inp([4], "wide")]),
        make_case("ew_lerp_0d_weight", "lerp", [t, inp([3, 4]), inp([], "unit")]),
        make_case(
            "ew_lerp_f32", "lerp", [f32(inp([2, 5])), f32(inp([2, 5])), f32(inp([2, 5], "unit"))]
        ),
        make_case("ew_addcmul", "addcmul", [n, inp([3, 4]), inp([3, 4])], {"value": 0.5}),
        make_case("ew_addcmul_broadcast", "addcmul", [inp([4]), t, inp([3, 1])]),
        make_case("ew_addcmul_f32", "addcmul", [f32(inp([2, 5])), f32(inp([5])), f32(inp([2, 1]))]),
        make_case(
            "ew_addcmul_int",
            "addcmul",
            [inp([3, 4], "int", False, dtype="int64")] * 3,
            {"value": 2},
        ),
        make_case("ew_addcdiv", "addcdiv", [n, inp([3, 4]), inp([3, 4], "nonzero")], {"value": -2}),
        make_case("ew_addcdiv_broadcast", "addcdiv", [inp([3, 1]), t, inp([4], "nonzero")]),
        make_case(
            "ew_addcdiv_f32",
            "addcdiv",
            [f32(inp([2, 5])), f32(inp([2, 5])), f32(inp([5], "nonzero"))],
            {"value": 0.25},
        ),
        make_case(
            "ew_clamp_tensor", "clamp_tensor", [inp([3, 4]), inp([3, 4], "ties"), inp([4], "ties")]
        ),
        make_case(
            "ew_clamp_tensor_ties",
            "clamp_tensor",
            [inp([3, 4], "ties"), inp([3, 4], "ties"), inp([3, 4], "ties")],
        ),
        make_case("ew_clamp_min_tensor", "clamp_min_tensor", [t, inp([3, 1], "ties")]),
        make_case("ew_clamp_max_tensor", "clamp_max_tensor", [inp([3, 4], "ties"), inp([])]),
        make_case(
            "ew_clamp_tensor_f32",
            "clamp_tensor",
            [f32(inp([2, 5])), f32(inp([5], "ties")), f32(inp([2, 1], "ties"))],
        ),
        make_case(
            "ew_clamp_tensor_int",
            "clamp_tensor",
            [
                inp([3, 4], "int", False, dtype="int64"),
                inp([4], "int", False, dtype="int64"),
                inp([3, 1], "int", False, dtype="int64"),
            ],
        ),
        make_case("ew_where", "where", [inp([3, 4], requires_grad=False), n, inp([3, 4])]),
        make_case("ew_where_broadcast", "where", [inp([3, 1], requires_grad=False), t, inp([4])]),
        make_case(
            "ew_where_f32",
            "where",
            [inp([2, 5], requires_grad=False), f32(inp([2, 5])), f32(inp([]))],
        ),
        make_case(
            "ew_where_int_float",
            "where",
            [inp([3, 4], requires_grad=False), inp([3, 4], "int", False, dtype="int64"), inp([4])],
        ),
    ]
    ii = inp([3, 4], "int", False, dtype="int64")
    cases += [
        make_case("ew_sgn", "sgn", [inp([4, 3], "nonzero", view=transpose(0, 1))]),
        make_case("ew_sgn_int", "sgn", [inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_signbit", "signbit", [inp([3, 4], "ties", False)]),
        make_case("ew_signbit_int", "signbit", [inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_logaddexp_far", "logaddexp", [inp([3, 4], "wide"), inp([4], "wide")]),
        make_case("ew_div_trunc", "div_trunc", [inp([3, 4], "wide"), inp([4], "nonzero")]),
        make_case(
            "ew_div_floor_f32",
            "div_floor",
            [f32(inp([4, 3], "wide", view=transpose(0, 1))), f32(inp([3, 1], "nonzero"))],
        ),
        make_case("ew_div_floor", "div_floor", [inp([3, 4], "wide"), inp([3, 4], "nonzero")]),
        make_case(
            "ew_div_floor_int",
            "div_floor",
            [ii, {**inp([4], "int", False, dtype="int64"), "dist": "int_nonzero"}],
        ),
        make_case(
            "ew_div_trunc_int",
            "div_trunc",
            [ii, {**inp([3, 1], "int", False, dtype="int64"), "dist": "int_nonzero"}],
        ),
        make_case(
            "ew_floor_divide",
            "floor_divide",
            [inp([3, 4], "wide", False), inp([4], "nonzero", False)],
        ),
        make_case(
            "ew_floor_divide_int",
            "floor_divide",
            [ii, {**inp([3, 4], "int", False, dtype="int64"), "dist": "int_nonzero"}],
        ),
    ]
    # Predicates, nan_to_num, logical and bitwise ops.
    ii = inp([3, 4], "int", False, dtype="int64")
    for op in ["isnan", "isinf", "isfinite", "isposinf", "isneginf"]:
        cases.append(make_case(f"ew_{op}", op, [inp([3, 4], requires_grad=False)]))
    cases += [
        make_case("ew_isnan_int", "isnan", [ii]),
        make_case("ew_isfinite_int", "isfinite", [ii]),
        make_case("ew_nan_to_num", "nan_to_num", [inp([3, 4])]),
        make_case(
            "ew_nan_to_num_values",
            "nan_to_num",
            [inp([4, 3], view=transpose(0, 1))],
            {"nan": 0.5, "posinf": 2.0, "neginf": -3.0},
        ),
        make_case("ew_nan_to_num_f32", "nan_to_num", [f32(inp([2, 5]))], {"posinf": 1e3}),
        make_case("ew_nan_to_num_int", "nan_to_num", [ii], {"nan": 1.5}),
        make_case("ew_logical_and", "logical_and", [ii, inp([4], requires_grad=False)]),
        make_case("ew_logical_or", "logical_or", [inp([3, 4], "ties", False), ii]),
        make_case("ew_logical_xor", "logical_xor", [inp([3, 1], "ties", False), ii]),
        make_case("ew_logical_not", "logical_not", [inp([3, 4], "ties", False)]),
        make_case("ew_logical_not_int", "logical_not", [ii]),
        make_case("ew_bitwise_and", "bitwise_and", [ii, inp([4], "int", False, dtype="int64")]),
        make_case("ew_bitwise_or", "bitwise_or", [ii, inp([3, 1], "int", False, dtype="int64")]),
        make_case("ew_bitwise_xor", "bitwise_xor", [ii, inp([3, 4], "int", False, dtype="int64")]),
        make_case("ew_bitwise_not", "bitwise_not", [ii]),
        make_case(
            "ew_bitwise_and_bool",
            "bitwise_and_bool",
            [inp([3, 4], requires_grad=False), inp([4], requires_grad=False)],
        ),
        make_case(
            "ew_bitwise_xor_bool",
            "bitwise_xor_bool",
            [inp([3, 4], requires_grad=False), inp([3, 4], requires_grad=False)],
        ),
        make_case("ew_bitwise_not_bool", "bitwise_not_bool", [inp([3, 4], requires_grad=False)]),
    ]
    return cases


# ------------------------------------------------------------ reduce_ops.json
# The reductions, scans and sorts beyond sum/mean. Each takes one input `x`; kwargs are
# described in README.md ("Reductions, scans and sorts"). Ops returning values and
# indices give a (values, indices) tuple: the case's output is the values, its
# "indices" field the indices.


def _dims_kw(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {"dim": reduce_dim(kwargs["dim"])} if "dim" in kwargs else {}


def _pair_or_value(r: Any) -> Any:
    return (r.values, r.indices) if isinstance(r, tuple) else r


def _dim_or_all(op: str) -> Callable[[torch.Tensor, dict[str, Any]], Any]:
    def run(x: torch.Tensor, kw: dict[str, Any]) -> Any:
        if "dim" in kw:
            return _pair_or_value(getattr(x, op)(kw["dim"], kw["keepdim"]))
        return getattr(x, op)()

    return run


def _dims_keepdim(op: str) -> Callable[[torch.Tensor, dict[str, Any]], Any]:
    def run(x: torch.Tensor, kw: dict[str, Any]) -> Any:
        return getattr(x, op)(**_dims_kw(kw), keepdim=kw["keepdim"])

    return run


REDUCE_OPS_FNS: dict[str, Callable[[torch.Tensor, dict[str, Any]], Any]] = {
    **{op: _dim_or_all(op) for op in ["max", "min", "median", "prod"]},
    **{
        op: _dims_keepdim(op)
        for op in ["amax", "amin", "logsumexp", "nansum", "nanmean", "all", "any"]
    },
    "argmax": lambda x, kw: x.argmax(dim=kw["dim"], keepdim=kw["keepdim"]),
    "argmin": lambda x, kw: x.argmin(dim=kw["dim"], keepdim=kw["keepdim"]),
    "count_nonzero": lambda x, kw: x.count_nonzero(**_dims_kw(kw)),
    "softmax": lambda x, kw: x.softmax(kw["dim"]),
    "log_softmax": lambda x, kw: x.log_softmax(kw["dim"]),
    "cumsum": lambda x, kw: x.cumsum(kw["dim"]),
    "cumprod": lambda x, kw: x.cumprod(kw["dim"]),
    "var": lambda x, kw: x.var(**_dims_kw(kw), correction=kw["correction"], keepdim=kw["keepdim"]),
    "std": lambda x, kw: x.std(**_dims_kw(kw), correction=kw["correction"], keepdim=kw["keepdim"]),
    "vector_norm": lambda x, kw: torch.linalg.vector_norm(
        x, float(kw["ord"]), **_dims_kw(kw), keepdim=kw["keepdim"]
    ),
    "topk": lambda x, kw: _pair_or_value(x.topk(kw["k"], kw["dim"], kw["largest"])),
    "sort": lambda x, kw: _pair_or_value(x.sort(kw["dim"], kw["descending"])),
    "argsort": lambda x, kw: x.argsort(kw["dim"], kw["descending"]),
}


def reduce_ops_cases() -> list[dict[str, Any]]:
    cases = []

    def c(name: str, op: str, spec: dict[str, Any], **kwargs: Any) -> None:
        cases.append(make_case(name, op, [spec], kwargs))

    i64 = {"dist": "int", "dtype": "int64", "requires_grad": False}
    for op in ["max", "min", "median"]:
        c(f"{op}_all", op, inp([3, 4]))
        c(f"{op}_all_f32", op, inp([2, 5], dtype="float32"))
        c(f"{op}_dim1", op, inp([3, 4]), dim=1, keepdim=False)
        c(f"{op}_dim0_keepdim", op, inp([3, 4]), dim=0, keepdim=True)
        c(f"{op}_dim_neg1_transposed", op, inp([4, 3], view=transpose(0, 1)), dim=-1, keepdim=False)
        c(f"{op}_dim1_3d_f32", op, inp([2, 3, 4], dtype="float32"), dim=1, keepdim=False)
        c(f"{op}_dim0_int", op, {**inp([3, 4]), **i64}, dim=0, keepdim=False)
    c("max_0d_dim0", "max", inp([]), dim=0, keepdim=False)
    for op in ["amax", "amin"]:
        c(f"{op}_all", op, inp([3, 4]), keepdim=False)
        c(f"{op}_dim1", op, inp([3, 4]), dim=[1], keepdim=False)
        c(f"{op}_dims_0_2_keepdim", op, inp([2, 3, 4]), dim=[0, 2], keepdim=True)
        c(
            f"{op}_dims_neg1_neg3_sliced",
            op,
            inp([2, 3, 8], view=slice_(2, 0, 8, 2)),
            dim=[-1, -3],
            keepdim=False,
        )
        c(f"{op}_dim0_f32", op, inp([3, 4], dtype="float32"), dim=[0], keepdim=False)
        c(f"{op}_ties", op, inp([3, 4], "ties"), dim=[1], keepdim=False)
        c(f"{op}_expanded", op, inp([3, 1], view=expand([3, 4])), dim=[1], keepdim=False)
    for op in ["argmax", "argmin"]:
        c(f"{op}_all", op, inp([3, 4], requires_grad=False), dim=None, keepdim=False)
        c(f"{op}_dim1", op, inp([3, 4], requires_grad=False), dim=1, keepdim=False)
        c(f"{op}_dim0_keepdim_int", op, {**inp([3, 4]), **i64}, dim=0, keepdim=True)
        c(
            f"{op}_all_keepdim_permuted",
            op,
            inp([2, 3, 4], requires_grad=False, view=permute([2, 0, 1])),
            dim=None,
            keepdim=True,
        )
    for op in ["softmax", "log_softmax"]:
        c(f"{op}_dim1", op, inp([3, 4]), dim=1)
        c(f"{op}_dim0", op, inp([3, 4]), dim=0)
        c(f"{op}_dim_neg2_3d", op, inp([2, 3, 4]), dim=-2)
        c(f"{op}_transposed", op, inp([4, 3], view=transpose(0, 1)), dim=1)
        c(f"{op}_f32", op, inp([3, 5], dtype="float32"), dim=-1)
        c(f"{op}_0d", op, inp([]), dim=0)
    c("logsumexp_dim1", "logsumexp", inp([3, 4]), dim=[1], keepdim=False)
    c("logsumexp_dims_0_1_keepdim", "logsumexp", inp([2, 3, 4]), dim=[0, 1], keepdim=True)
    c(
        "logsumexp_dim_neg1_sliced",
        "logsumexp",
        inp([3, 8], view=slice_(1, 1, 8, 2)),
        dim=[-1],
        keepdim=False,
    )
    c("logsumexp_dim0_f32", "logsumexp", inp([3, 4], dtype="float32"), dim=[0], keepdim=False)
    c("logsumexp_int", "logsumexp", {**inp([3, 4]), **i64}, dim=[1], keepdim=False)
    c("prod_all", "prod", inp([3, 4]))
    c("prod_all_one_zero", "prod", inp([2, 3], "zeros"))
    c("prod_dim1", "prod", inp([3, 4]), dim=1, keepdim=False)
    c("prod_dim0_keepdim_zeros", "prod", inp([4, 3], "zeros"), dim=0, keepdim=True)
    c("prod_dim_neg1_transposed", "prod", inp([4, 3], view=transpose(0, 1)), dim=-1, keepdim=False)
    c("prod_dim1_f32", "prod", inp([3, 4], dtype="float32"), dim=1, keepdim=False)
    c("prod_dim1_int", "prod", {**inp([3, 4]), **i64}, dim=1, keepdim=False)
    for op in ["var", "std"]:
        c(f"{op}_all", op, inp([3, 4]), correction=1, keepdim=False)
        c(f"{op}_all_population", op, inp([3, 4]), correction=0, keepdim=False)
        c(f"{op}_dim1", op, inp([3, 4]), dim=[1], correction=1, keepdim=False)
        c(f"{op}_dims_0_2_keepdim", op, inp([2, 3, 4]), dim=[0, 2], correction=1, keepdim=True)
        c(
            f"{op}_dim0_correction_2_transposed",
            op,
            inp([5, 3], view=transpose(0, 1)),
            dim=[-1],
            correction=2,
            keepdim=False,
        )
        c(f"{op}_dim1_f32", op, inp([3, 4], dtype="float32"), dim=[1], correction=1, keepdim=False)
    for op in ["cumsum", "cumprod"]:
        c(f"{op}_dim1", op, inp([3, 4]), dim=1)
        c(f"{op}_dim0", op, inp([3, 4]), dim=0)
        c(f"{op}_dim_neg1_3d", op, inp([2, 3, 4]), dim=-1)
        c(f"{op}_transposed", op, inp([4, 3], view=transpose(0, 1)), dim=1)
        c(f"{op}_f32", op, inp([3, 4], dtype="float32"), dim=1)
        c(f"{op}_int", op, {**inp([3, 4]), **i64}, dim=1)
        c(f"{op}_0d", op, inp([]), dim=0)
    c("cumprod_zeros", "cumprod", inp([3, 5], "zeros"), dim=1)
    c("cumprod_zeros_dim0", "cumprod", inp([5, 2], "zeros"), dim=0)
    # ord 0: PyTorch's backward returns no gradient at all (rustgrad: zeros), so no grad.
    c(
        "vector_norm_ord_0_dim1",
        "vector_norm",
        inp([3, 4], "ties", requires_grad=False),
        ord=0,
        dim=[1],
        keepdim=False,
    )
    for ord_ in [2, 1, 3, 0.5, 1.5, "inf", "-inf"]:
        c(
            f"vector_norm_ord_{ord_}_all".replace(".", "_").replace("-", "neg"),
            "vector_norm",
            inp([3, 4], "nonzero"),
            ord=ord_,
            keepdim=False,
        )
        c(
            f"vector_norm_ord_{ord_}_dim1".replace(".", "_").replace("-", "neg"),
            "vector_norm",
            inp([3, 4], "nonzero"),
            ord=ord_,
            dim=[1],
            keepdim=False,
        )
    c(
        "vector_norm_dims_0_2_keepdim",
        "vector_norm",
        inp([2, 3, 4]),
        ord=2,
        dim=[0, 2],
        keepdim=True,
    )
    c(
        "vector_norm_f32_sliced",
        "vector_norm",
        inp([3, 8], dtype="float32", view=slice_(1, 0, 8, 3)),
        ord=2,
        dim=[-1],
        keepdim=False,
    )
    for op in ["nansum", "nanmean"]:
        c(f"{op}_all", op, inp([3, 4]), keepdim=False)
        c(f"{op}_dim1_keepdim", op, inp([3, 4]), dim=[1], keepdim=True)
        c(f"{op}_dims_f32", op, inp([2, 3, 4], dtype="float32"), dim=[0, -1], keepdim=False)
    c("nansum_int", "nansum", {**inp([3, 4]), **i64}, dim=[0], keepdim=False)
    for op in ["all", "any"]:
        c(f"{op}_all", op, inp([3, 4], "ties", requires_grad=False), keepdim=False)
        c(f"{op}_dim1", op, inp([3, 4], "ties", requires_grad=False), dim=[1], keepdim=False)
        c(f"{op}_dims_keepdim_int", op, {**inp([2, 3, 4]), **i64}, dim=[0, 2], keepdim=True)
    c("count_nonzero_all", "count_nonzero", inp([3, 4], "ties", requires_grad=False))
    c("count_nonzero_dims", "count_nonzero", {**inp([2, 3, 4]), **i64}, dim=[0, -1])
    for largest in [True, False]:
        tag = "largest" if largest else "smallest"
        c(f"topk_2_{tag}", "topk", inp([3, 5]), k=2, dim=-1, largest=largest)
        c(
            f"topk_1_dim0_{tag}_transposed",
            "topk",
            inp([5, 3], view=transpose(0, 1)),
            k=1,
            dim=0,
            largest=largest,
        )
    c("topk_3_f32", "topk", inp([2, 4], dtype="float32"), k=3, dim=1, largest=True)
    for descending in [False, True]:
        tag = "descending" if descending else "ascending"
        c(f"sort_{tag}", "sort", inp([3, 5]), dim=-1, descending=descending)
        c(
            f"sort_dim0_{tag}_permuted",
            "sort",
            inp([2, 3, 4], view=permute([1, 2, 0])),
            dim=0,
            descending=descending,
        )
        c(
            f"argsort_{tag}",
            "argsort",
            inp([3, 5], requires_grad=False),
            dim=1,
            descending=descending,
        )
    c("sort_f32", "sort", inp([3, 4], dtype="float32"), dim=0, descending=False)
    return cases


# ------------------------------------------------- shape, movement and indexing ops


def itensor(values: Any, dtype: str = "int64") -> dict[str, Any]:
    """An integer (or bool) tensor argument in kwargs: {"data", "shape", "dtype"}."""
    t = torch.tensor(values, dtype=torch.bool if dtype == "bool" else torch.int64)
    return {
        "data": [v if dtype == "bool" else int(v) for v in t.reshape(-1).tolist()],
        "shape": list(t.shape),
        "dtype": dtype,
    }


def kt(spec: dict[str, Any]) -> torch.Tensor:
    dtype = torch.bool if spec["dtype"] == "bool" else torch.int64
    return torch.tensor(spec["data"], dtype=dtype).reshape(spec["shape"])


SHAPE_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "cat": lambda xs, kw: torch.cat(xs, kw["dim"]),
    "stack": lambda xs, kw: torch.stack(xs, kw["dim"]),
    "split": lambda xs, kw: torch.split(xs[0], kw["split"], kw["dim"])[kw["part"]],
    "chunk": lambda xs, kw: xs[0].chunk(kw["chunks"], kw["dim"])[kw["part"]],
    "unbind": lambda xs, kw: xs[0].unbind(kw["dim"])[kw["part"]],
    "narrow": lambda xs, kw: xs[0].narrow(kw["dim"], kw["start"], kw["length"]),
    "select": lambda xs, kw: xs[0].select(kw["dim"], kw["index"]),
    "flip": lambda xs, kw: xs[0].flip(kw["dims"]),
    "roll": lambda xs, kw: xs[0].roll(kw["shifts"], kw["dims"]),
    "repeat": lambda xs, kw: xs[0].repeat(*kw["sizes"]),
    "tile": lambda xs, kw: xs[0].tile(kw["dims"]),
    "tril": lambda xs, kw: xs[0].tril(kw["diagonal"]),
    "triu": lambda xs, kw: xs[0].triu(kw["diagonal"]),
    "diagonal": lambda xs, kw: xs[0].diagonal(kw["offset"], kw["dim1"], kw["dim2"]),
    "diag": lambda xs, kw: xs[0].diag(kw["diagonal"]),
    "diag_embed": lambda xs, kw: xs[0].diag_embed(kw["offset"], kw["dim1"], kw["dim2"]),
    "movedim": lambda xs, kw: xs[0].movedim(kw["source"], kw["destination"]),
    "unfold": lambda xs, kw: xs[0].unfold(kw["dim"], kw["size"], kw["step"]),
    "repeat_interleave": lambda xs, kw: xs[0].repeat_interleave(kw["repeats"], kw["dim"]),
    "index_select": lambda xs, kw: xs[0].index_select(kw["dim"], kt(kw["index"])),
    "gather": lambda xs, kw: xs[0].gather(kw["dim"], kt(kw["index"])),
    "take": lambda xs, kw: xs[0].take(kt(kw["index"])),
    "masked_select": lambda xs, kw: xs[0].masked_select(kt(kw["mask"])),
    "masked_fill": lambda xs, kw: xs[0].masked_fill(kt(kw["mask"]), kw["value"]),
    "index_fill": lambda xs, kw: xs[0].index_fill(kw["dim"], kt(kw["index"]), kw["value"]),
    "scatter": lambda xs, kw: xs[0].scatter(kw["dim"], kt(kw["index"]), xs[1]),
    "scatter_value": lambda xs, kw: xs[0].scatter(kw["dim"], kt(kw["index"]), kw["value"]),
    "scatter_add": lambda xs, kw: xs[0].scatter_add(kw["dim"], kt(kw["index"]), xs[1]),
    "index_add": lambda xs, kw: xs[0].index_add(kw["dim"], kt(kw["index"]), xs[1]),
    "as_strided": lambda xs, kw: xs[0].as_strided(kw["size"], kw["stride"], kw["storage_offset"]),
    "scatter_multiply": lambda xs, kw: xs[0].scatter(
        kw["dim"], kt(kw["index"]), xs[1], reduce="multiply"
    ),
    "index": lambda xs, kw: xs[0][
        tuple(slice(None) if i is None else kt(i) for i in kw["indices"])
    ],
}


def shape_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case(name, op, specs, kwargs)

    t01 = transpose(0, 1)
    return [
        c("cat_dim0", "cat", [inp([2, 3]), inp([1, 3])], dim=0),
        c("cat_neg_dim_transposed", "cat", [inp([3, 2], view=t01), inp([2, 1])], dim=-1),
        c(
            "cat_three_f32",
            "cat",
            [f32(inp([2])), f32(inp([3])), f32(inp([1], requires_grad=False))],
            dim=0,
        ),
        c("cat_expanded", "cat", [inp([1, 3], view=expand([2, 3])), inp([2, 3])], dim=1),
        c("stack_dim1", "stack", [inp([2, 3]), inp([2, 3])], dim=1),
        c(
            "stack_neg_dim_sliced",
            "stack",
            [inp([2, 6], view=slice_(1, 0, 6, 2)), inp([2, 3])],
            dim=-1,
        ),
        c("split_int", "split", [inp([5, 2])], split=2, dim=0, part=2),
        c(
            "split_sizes",
            "split",
            [inp([2, 6], view=slice_(1, 0, None, 1))],
            split=[1, 3, 2],
            dim=-1,
            part=1,
        ),
        c("chunk_dim1", "chunk", [inp([2, 5])], chunks=2, dim=1, part=0),
        c("unbind_transposed", "unbind", [inp([3, 2], view=t01)], dim=1, part=2),
        c("narrow_neg_start", "narrow", [inp([3, 5])], dim=1, start=-3, length=2),
        c("select_neg", "select", [inp([3, 4], view=t01)], dim=0, index=-1),
        c("flip_two_dims", "flip", [inp([2, 3, 4])], dims=[0, -1]),
        c("flip_transposed_f32", "flip", [f32(inp([3, 2], view=t01))], dims=[1]),
        c("roll_dims", "roll", [inp([3, 4])], shifts=[1, -5], dims=[0, 1]),
        c("roll_flat_transposed", "roll", [inp([3, 2], view=t01)], shifts=[4], dims=[]),
        c("repeat_new_dims", "repeat", [inp([2, 3])], sizes=[2, 1, 2]),
        c("repeat_sliced", "repeat", [inp([4], view=slice_(0, 1, None, 2))], sizes=[3]),
        c("tile_short", "tile", [inp([2, 3])], dims=[2]),
        c("tril_offset", "tril", [inp([3, 4])], diagonal=1),
        c("triu_batched_transposed", "triu", [inp([3, 2, 3], view=t01)], diagonal=-1),
        c("diagonal_offset", "diagonal", [inp([3, 4])], offset=1, dim1=0, dim2=1),
        c(
            "diagonal_3d_neg",
            "diagonal",
            [inp([2, 3, 4], view=permute([2, 0, 1]))],
            offset=-1,
            dim1=-1,
            dim2=0,
        ),
        c("diag_vector", "diag", [inp([3])], diagonal=-1),
        c("diag_matrix_f32", "diag", [f32(inp([3, 3], view=t01))], diagonal=1),
        c("diag_embed_last", "diag_embed", [inp([2, 3])], offset=0, dim1=-2, dim2=-1),
        c("diag_embed_dims", "diag_embed", [inp([2, 2])], offset=1, dim1=0, dim2=2),
        c("movedim_lists", "movedim", [inp([2, 3, 4])], source=[0, 1], destination=[2, 0]),
        c("unfold_overlapping", "unfold", [inp([2, 7])], dim=1, size=3, step=2),
        c("unfold_transposed", "unfold", [inp([5, 2], view=t01)], dim=-1, size=2, step=1),
        c("repeat_interleave_dim", "repeat_interleave", [inp([2, 3])], repeats=2, dim=1),
        c(
            "repeat_interleave_flat",
            "repeat_interleave",
            [inp([2, 2], view=t01)],
            repeats=3,
            dim=None,
        ),
        c("index_select_dups", "index_select", [inp([3, 4])], dim=1, index=itensor([3, 0, 3])),
        c(
            "index_select_transposed_f32",
            "index_select",
            [f32(inp([4, 3], view=t01))],
            dim=0,
            index=itensor([2, 0]),
        ),
        c("gather_dim1", "gather", [inp([3, 4])], dim=1, index=itensor([[0, 3], [1, 1], [2, 0]])),
        c(
            "gather_dim0_transposed",
            "gather",
            [inp([3, 2], view=t01)],
            dim=0,
            index=itensor([[1, 0, 1]]),
        ),
        c("take_neg", "take", [inp([2, 3], view=t01)], index=itensor([[0, -1], [5, 5]])),
        c(
            "masked_select_broadcast",
            "masked_select",
            [inp([2, 3])],
            mask=itensor([True, False, True], "bool"),
        ),
        c(
            "masked_fill_value",
            "masked_fill",
            [inp([2, 3])],
            mask=itensor([[True], [False]], "bool"),
            value=1.5,
        ),
        c("index_fill_dim1", "index_fill", [inp([2, 4])], dim=1, index=itensor([0, 2]), value=-2.0),
        c(
            "scatter_src",
            "scatter",
            [inp([3, 4]), inp([2, 4])],
            dim=0,
            index=itensor([[2, 0, 1, 2], [0, 1, 2, 0]]),
        ),
        c(
            "scatter_value",
            "scatter_value",
            [inp([2, 3])],
            dim=1,
            index=itensor([[2], [0]]),
            value=3.0,
        ),
        c(
            "scatter_add_dups",
            "scatter_add",
            [inp([3]), inp([4])],
            dim=0,
            index=itensor([0, 2, 0, 0]),
        ),
        c("index_add_dim1", "index_add", [inp([2, 3]), inp([2, 2])], dim=1, index=itensor([2, 2])),
        c("index_int_lists", "index", [inp([3, 4])], indices=[itensor([2, 0]), itensor([1, 3])]),
        c("index_second_dim", "index", [inp([2, 3, 4])], indices=[None, itensor([[2, 0]])]),
        c(
            "index_split_dims",
            "index",
            [inp([2, 3, 4])],
            indices=[itensor([1, 0]), None, itensor([3, 0])],
        ),
        c(
            "index_bool_mask",
            "index",
            [inp([2, 3])],
            indices=[itensor([[True, False, True], [False, True, False]], "bool")],
        ),
        c(
            "index_transposed_f32",
            "index",
            [f32(inp([3, 2], view=t01))],
            indices=[None, itensor([0, 2, 2])],
        ),
        c(
            "as_strided_overlapping",
            "as_strided",
            [inp([6])],
            size=[3, 2],
            stride=[1, 1],
            storage_offset=1,
        ),
        c(
            "as_strided_of_slice",
            "as_strided",
            [inp([8], view=slice_(0, 2, None, 1))],
            size=[2, 2],
            stride=[2, 1],
            storage_offset=None,
        ),
        c(
            "scatter_multiply_no_grad",
            "scatter_multiply",
            [inp([2, 3], requires_grad=False), inp([2, 3], requires_grad=False)],
            dim=1,
            index=itensor([[0, 0], [2, 1]]),
        ),
    ]


# --------------------------------------------------------------------------- linalg ops

LINALG_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "mm": lambda xs, kw: torch.mm(xs[0], xs[1]),
    "bmm": lambda xs, kw: torch.bmm(xs[0], xs[1]),
    "mv": lambda xs, kw: torch.mv(xs[0], xs[1]),
    "dot": lambda xs, kw: torch.dot(xs[0], xs[1]),
    "outer": lambda xs, kw: torch.outer(xs[0], xs[1]),
    "addmm": lambda xs, kw: torch.addmm(xs[0], xs[1], xs[2], **kw),
    "addmv": lambda xs, kw: torch.addmv(xs[0], xs[1], xs[2], **kw),
    "baddbmm": lambda xs, kw: torch.baddbmm(xs[0], xs[1], xs[2], **kw),
    "addbmm": lambda xs, kw: torch.addbmm(xs[0], xs[1], xs[2], **kw),
    "tensordot": lambda xs, kw: torch.tensordot(xs[0], xs[1], **kw),
    "einsum": lambda xs, kw: torch.einsum(kw["equation"], *xs),
}


def linalg_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case(name, op, specs, kwargs)

    t01, t12 = transpose(0, 1), transpose(1, 2)
    return [
        c("mm_basic", "mm", [inp([3, 4]), inp([4, 2])]),
        c("mm_transposed", "mm", [inp([4, 3], view=t01), inp([2, 4], view=t01)]),
        c("mm_f32", "mm", [f32(inp([2, 3])), f32(inp([3, 2]))]),
        c("bmm_basic", "bmm", [inp([2, 3, 4]), inp([2, 4, 2])]),
        c("bmm_transposed", "bmm", [inp([2, 4, 3], view=t12), inp([4, 2, 2], view=t01)]),
        c("bmm_f32", "bmm", [f32(inp([3, 2, 2])), f32(inp([3, 2, 1]))]),
        c("mv_basic", "mv", [inp([3, 4]), inp([4])]),
        c("mv_transposed_sliced", "mv", [inp([4, 3], view=t01), inp([8], view=slice_(0, 0, 8, 2))]),
        c("mv_f32", "mv", [f32(inp([2, 3])), f32(inp([3]))]),
        c("dot_basic", "dot", [inp([5]), inp([5])]),
        c(
            "dot_sliced_no_grad",
            "dot",
            [inp([6], view=slice_(0, 1, 6, 2)), inp([3], requires_grad=False)],
        ),
        c("dot_f32", "dot", [f32(inp([4])), f32(inp([4]))]),
        c("outer_basic", "outer", [inp([3]), inp([4])]),
        c("outer_f32", "outer", [f32(inp([2])), f32(inp([3]))]),
        c(
            "outer_int",
            "outer",
            [inp([3], "int", False, dtype="int64"), inp([2], "int", False, dtype="int64")],
        ),
        c("addmm_basic", "addmm", [inp([3, 2]), inp([3, 4]), inp([4, 2])]),
        c(
            "addmm_broadcast_row_scaled",
            "addmm",
            [inp([2]), inp([3, 4]), inp([4, 2])],
            beta=0.5,
            alpha=-2.0,
        ),
        c(
            "addmm_transposed_int_scale",
            "addmm",
            [inp([2, 3], view=t01), inp([4, 3], view=t01), inp([4, 2])],
            beta=2,
            alpha=3,
        ),
        c("addmm_beta_zero", "addmm", [inp([3, 2]), inp([3, 4]), inp([4, 2])], beta=0),
        c("addmm_f32", "addmm", [f32(inp([1, 2])), f32(inp([3, 4])), f32(inp([4, 2]))]),
        c("addmv_basic", "addmv", [inp([3]), inp([3, 4]), inp([4])]),
        c(
            "addmv_scaled_transposed",
            "addmv",
            [inp([1]), inp([4, 3], view=t01), inp([4])],
            beta=-1.5,
            alpha=0.5,
        ),
        c("addmv_f32", "addmv", [f32(inp([2])), f32(inp([2, 3])), f32(inp([3]))]),
        c("baddbmm_basic", "baddbmm", [inp([2, 3, 2]), inp([2, 3, 4]), inp([2, 4, 2])]),
        c(
            "baddbmm_broadcast_scaled",
            "baddbmm",
            [inp([3, 1]), inp([2, 4, 3], view=t12), inp([2, 4, 2])],
            beta=0.5,
            alpha=2.0,
        ),
        c(
            "baddbmm_f32",
            "baddbmm",
            [f32(inp([2, 2, 2])), f32(inp([2, 2, 3])), f32(inp([2, 3, 2]))],
        ),
        c("addbmm_basic", "addbmm", [inp([3, 2]), inp([2, 3, 4]), inp([2, 4, 2])]),
        c(
            "addbmm_broadcast_scaled",
            "addbmm",
            [inp([2]), inp([3, 3, 4]), inp([3, 2, 4], view=t12)],
            beta=-1.0,
            alpha=0.25,
        ),
        c("addbmm_f32", "addbmm", [f32(inp([2, 2])), f32(inp([2, 2, 3])), f32(inp([2, 3, 2]))]),
        c("tensordot_int_dims", "tensordot", [inp([2, 3, 4]), inp([3, 4, 2])], dims=2),
        c(
            "tensordot_lists_neg_transposed",
            "tensordot",
            [inp([3, 2, 4], view=t01), inp([4, 3])],
            dims=[[-1, 1], [0, 1]],
        ),
        c("tensordot_outer_f32", "tensordot", [f32(inp([2])), f32(inp([3]))], dims=0),
        c("tensordot_size1_broadcast", "tensordot", [inp([2, 1]), inp([3, 2])], dims=[[1], [0]]),
        c("einsum_matmul", "einsum", [inp([2, 3]), inp([3, 4])], equation="ij,jk->ik"),
        c("einsum_trace", "einsum", [inp([3, 3])], equation="ii"),
        c("einsum_diagonal_transposed", "einsum", [inp([3, 3], view=t01)], equation="ii->i"),
        c(
            "einsum_batch_ellipsis",
            "einsum",
            [inp([2, 3, 4]), inp([5, 4], view=t01)],
            equation="...ij,...jk",
        ),
        c(
            "einsum_three_operands_implicit",
            "einsum",
            [inp([2, 3]), inp([3, 4]), inp([4])],
            equation="ab,bc,c",
        ),
        c(
            "einsum_broadcast_size1_f32",
            "einsum",
            [f32(inp([2, 1])), f32(inp([3, 4]))],
            equation="ab,cb->ac",
        ),
        c(
            "einsum_four_operands_permuted",
            "einsum",
            [inp([2, 3]), inp([3, 2]), inp([2]), inp([4, 3, 2], view=permute([2, 1, 0]))],
            equation="ij,jk,k,kjl->li",
        ),
    ]


# --------------------------------------------------------------------------- coverage ops
# Ops of the list that the other groups do not reach: aliases and composites
# (the Rust reader runs each through the Rust API a Rust user would call for it) and
# the multi-output reductions, one output per case ("part").


def _ords(kw: dict[str, Any]) -> dict[str, Any]:
    """kwargs with "inf" / "-inf" (JSON has no infinities) as floats; "fro" stays."""
    return {k: float(v) if v in ("inf", "-inf") else v for k, v in kw.items()}


COVERAGE_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "sign": lambda xs, kw: xs[0].sign(),
    "clamp": lambda xs, kw: xs[0].clamp(**kw),
    "clip": lambda xs, kw: torch.clip(xs[0], **kw),
    "norm": lambda xs, kw: xs[0].norm(**_ords(kw)),
    "matrix_norm": lambda xs, kw: torch.linalg.matrix_norm(xs[0], **_ords(kw)),
    "linalg_norm": lambda xs, kw: torch.linalg.norm(xs[0], **_ords(kw)),
    "var_mean": lambda xs, kw: torch.var_mean(xs[0], kw["dim"], correction=kw["correction"])[
        kw["part"]
    ],
    "std_mean": lambda xs, kw: torch.std_mean(xs[0], kw["dim"], correction=kw["correction"])[
        kw["part"]
    ],
    "unique": lambda xs, kw: torch.unique(
        xs[0], sorted=True, return_inverse=True, return_counts=True
    )[kw["part"]],
    "nonzero": lambda xs, kw: torch.nonzero(xs[0]),
    "where_cond": lambda xs, kw: torch.where(xs[0])[kw["part"]],
    "flatten": lambda xs, kw: xs[0].flatten(kw["start_dim"], kw["end_dim"]),
    "unflatten": lambda xs, kw: xs[0].unflatten(kw["dim"], kw["sizes"]),
    "hstack": lambda xs, kw: torch.hstack(xs),
    "vstack": lambda xs, kw: torch.vstack(xs),
    "concat": lambda xs, kw: torch.concat(xs, dim=kw["dim"]),
    "broadcast_to": lambda xs, kw: xs[0].broadcast_to(kw["shape"]),
    "expand_as": lambda xs, kw: xs[0].expand_as(xs[1]),
    "view_as": lambda xs, kw: xs[0].view_as(xs[1]),
    "reshape_as": lambda xs, kw: xs[0].reshape_as(xs[1]),
    "swapaxes": lambda xs, kw: xs[0].swapaxes(kw["dim0"], kw["dim1"]),
    "mT": lambda xs, kw: xs[0].mT,
    "contiguous": lambda xs, kw: xs[0].contiguous(),
    "take_along_dim": lambda xs, kw: torch.take_along_dim(xs[0], kt(kw["indices"]), kw["dim"]),
    "meshgrid": lambda xs, kw: torch.meshgrid(*xs, indexing=kw["indexing"])[kw["part"]],
}


def coverage_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case(name, op, specs, kwargs)

    t01 = transpose(0, 1)
    ints = inp([7], "int", False, dtype="int64")
    return [
        c("sign_basic", "sign", [inp([2, 3])]),
        c("sign_transposed_f32", "sign", [f32(inp([3, 2], view=t01))]),
        c("sign_int", "sign", [inp([5], "int", False, dtype="int64")]),
        c("clamp_both", "clamp", [inp([3, 4])], min=-0.5, max=0.5),
        c("clamp_min_only_f32", "clamp", [f32(inp([4, 3], view=t01))], min=0.1),
        c("clamp_max_only", "clamp", [inp([6], view=slice_(0, 0, 6, 2))], max=-0.2),
        c("clamp_int", "clamp", [inp([6], "int", False, dtype="int64")], min=-1, max=2),
        c("clip_both", "clip", [inp([2, 3])], min=-0.3, max=0.8),
        c("norm_default", "norm", [inp([3, 4])]),
        c("norm_p1_dim", "norm", [inp([3, 4])], p=1, dim=-1),
        c("norm_inf_dim_keepdim", "norm", [inp([3, 4], view=t01)], p="inf", dim=0, keepdim=True),
        c("norm_p3_f32", "norm", [f32(inp([2, 3]))], p=3.0, dim=[0, 1]),
        c("norm_fro_dims", "norm", [inp([2, 3, 2])], p="fro", dim=[-2, -1]),
        c("matrix_norm_fro", "matrix_norm", [inp([3, 4])]),
        c("matrix_norm_1_batched", "matrix_norm", [inp([2, 3, 3])], ord=1),
        c("matrix_norm_neg1", "matrix_norm", [inp([3, 4], view=t01)], ord=-1),
        c("matrix_norm_inf_keepdim", "matrix_norm", [inp([2, 3, 4])], ord="inf", keepdim=True),
        c("matrix_norm_neg_inf_f32", "matrix_norm", [f32(inp([3, 3]))], ord="-inf"),
        c("matrix_norm_fro_dims", "matrix_norm", [inp([3, 2, 4])], ord="fro", dim=[0, 2]),
        c("linalg_norm_vector", "linalg_norm", [inp([5])]),
        c("linalg_norm_matrix_fro", "linalg_norm", [inp([3, 4])]),
        c("linalg_norm_ord_dim", "linalg_norm", [inp([3, 4])], ord=1, dim=1),
        c("linalg_norm_matrix_inf", "linalg_norm", [inp([3, 4])], ord="inf", dim=[0, 1]),
        c("var_mean_var", "var_mean", [inp([3, 4])], dim=1, correction=1, part=0),
        c("var_mean_mean", "var_mean", [inp([3, 4], view=t01)], dim=0, correction=1, part=1),
        c("std_mean_std", "std_mean", [f32(inp([2, 5]))], dim=-1, correction=0, part=0),
        c("std_mean_mean", "std_mean", [inp([2, 3, 2])], dim=[0, 2], correction=1, part=1),
        c("unique_values", "unique", [inp([7], "int", False, dtype="int64")], part=0),
        c("unique_inverse", "unique", [inp([2, 4], "int", False, dtype="int64")], part=1),
        c("unique_counts", "unique", [ints], part=2),
        c("unique_float_values", "unique", [inp([6], requires_grad=False)], part=0),
        c("nonzero_2d", "nonzero", [inp([3, 4], "int", False, dtype="int64")]),
        c(
            "nonzero_float_transposed",
            "nonzero",
            [inp([3, 2], "int", False, dtype="int64", view=t01)],
        ),
        c("where_cond_rows", "where_cond", [inp([3, 4], "int", False, dtype="int64")], part=0),
        c("where_cond_cols", "where_cond", [inp([3, 4], "int", False, dtype="int64")], part=1),
        c("flatten_all", "flatten", [inp([2, 3, 2])], start_dim=0, end_dim=-1),
        c(
            "flatten_middle_transposed",
            "flatten",
            [inp([3, 2, 4], view=t01)],
            start_dim=1,
            end_dim=2,
        ),
        c("unflatten_basic", "unflatten", [inp([2, 6])], dim=1, sizes=[2, 3]),
        c("unflatten_neg_inferred", "unflatten", [f32(inp([6, 2]))], dim=-2, sizes=[-1, 2]),
        c("hstack_1d", "hstack", [inp([2]), inp([3])]),
        c("hstack_2d", "hstack", [inp([2, 1]), inp([3, 2], view=t01)]),
        c("vstack_1d", "vstack", [inp([3]), inp([3])]),
        c("vstack_2d_f32", "vstack", [f32(inp([1, 2])), f32(inp([2, 2]))]),
        c("concat_neg_dim", "concat", [inp([2, 2]), inp([2, 3])], dim=-1),
        c("broadcast_to_basic", "broadcast_to", [inp([3, 1])], shape=[2, 3, 4]),
        c("expand_as_basic", "expand_as", [inp([1, 3]), inp([4, 3], requires_grad=False)]),
        c("view_as_basic", "view_as", [inp([2, 6]), inp([3, 4], requires_grad=False)]),
        c(
            "reshape_as_transposed",
            "reshape_as",
            [inp([3, 4], view=t01), inp([2, 6], requires_grad=False)],
        ),
        c("swapaxes_basic", "swapaxes", [inp([2, 3, 4])], dim0=0, dim1=-1),
        c("mT_batched", "mT", [inp([2, 3, 4])]),
        c("contiguous_transposed", "contiguous", [inp([3, 4], view=t01)]),
        c(
            "take_along_dim_rows",
            "take_along_dim",
            [inp([3, 4])],
            indices=itensor([[0, 3], [1, 1], [2, 0]]),
            dim=1,
        ),
        c(
            "take_along_dim_broadcast_neg",
            "take_along_dim",
            [inp([3, 4], view=t01)],
            indices=itensor([[2, 0, 1]]),
            dim=-2,
        ),
        c(
            "meshgrid_ij_0",
            "meshgrid",
            [inp([3]), inp([2], requires_grad=False)],
            indexing="ij",
            part=0,
        ),
        c(
            "meshgrid_ij_1",
            "meshgrid",
            [inp([3], requires_grad=False), inp([2])],
            indexing="ij",
            part=1,
        ),
        c(
            "meshgrid_xy_0",
            "meshgrid",
            [f32(inp([3])), f32(inp([2], requires_grad=False))],
            indexing="xy",
            part=0,
        ),
        c(
            "meshgrid_xy_1",
            "meshgrid",
            [inp([3], requires_grad=False), inp([4], view=slice_(0, 0, 4, 2))],
            indexing="xy",
            part=1,
        ),
    ]


# ------------------------------------------------------------- extra_ops.json

EXTRA_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "xlogy": lambda xs, kw: torch.xlogy(xs[0], xs[1]),
    "xlogy_scalar_other": lambda xs, kw: torch.xlogy(xs[0], kw["other"]),
    "xlogy_scalar_self": lambda xs, kw: torch.xlogy(kw["self"], xs[0]),
    "xlog1py": lambda xs, kw: torch.special.xlog1py(xs[0], xs[1]),
    "xlog1py_scalar_other": lambda xs, kw: torch.special.xlog1py(xs[0], kw["other"]),
    "xlog1py_scalar_self": lambda xs, kw: torch.special.xlog1py(kw["self"], xs[0]),
    "float_power": lambda xs, kw: torch.float_power(xs[0], xs[1]),
    "float_power_scalar": lambda xs, kw: torch.float_power(xs[0], kw["exponent"]),
    "float_power_scalar_base": lambda xs, kw: torch.float_power(kw["base"], xs[0]),
    # PyTorch's sublist format: operand, its subscripts, ..., [output subscripts].
    "einsum_sublist": lambda xs, kw: torch.einsum(
        *[a for x, sub in zip(xs, kw["sublists"]) for a in (x, sub)],
        *([kw["output"]] if kw["output"] is not None else []),
    ),
}


def extra_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case(name, op, specs, kwargs)

    t01 = transpose(0, 1)
    ints = {"dist": "int", "requires_grad": False, "dtype": "int64"}
    return [
        # xlogy: exact zeros in x (0 * log(y) = 0, gradient log(y)); y > 0.
        c("xlogy_basic", "xlogy", [inp([3, 4], "zeros"), inp([3, 4], "positive")]),
        c(
            "xlogy_broadcast_transposed",
            "xlogy",
            [inp([4, 3], "zeros", view=t01), inp([4], "positive")],
        ),
        c(
            "xlogy_f32_sliced",
            "xlogy",
            [f32(inp([6], view=slice_(0, 0, 6, 2))), f32(inp([3], "positive"))],
        ),
        c("xlogy_no_grad_other", "xlogy", [inp([2, 3], "zeros"), inp([1, 3], "positive", False)]),
        c("xlogy_int_operands", "xlogy", [inp([3], **ints), inp([3], "positive", False)]),
        c("xlogy_scalar_other", "xlogy_scalar_other", [inp([2, 3], "zeros")], other=2.5),
        c("xlogy_scalar_other_f32", "xlogy_scalar_other", [f32(inp([4]))], other=3),
        c("xlogy_scalar_self", "xlogy_scalar_self", [inp([2, 3], "positive")], self=1.5),
        c(
            "xlogy_scalar_self_expanded_f32",
            "xlogy_scalar_self",
            [f32(inp([3], "positive", view=expand([2, 3])))],
            self=-2.0,
        ),
        c("xlog1py_basic", "xlog1py", [inp([2, 3], "zeros"), inp([3], "positive")]),
        c("xlog1py_f32", "xlog1py", [f32(inp([4], "zeros")), f32(inp([4], "positive"))]),
        c("xlog1py_scalar_other", "xlog1py_scalar_other", [inp([3], "zeros")], other=0.5),
        c("xlog1py_scalar_self", "xlog1py_scalar_self", [inp([3], "positive")], self=2.0),
        # float_power: computed and returned in float64 whatever the inputs' dtype.
        c("float_power_basic", "float_power", [inp([3, 2], "positive"), inp([3, 2])]),
        c(
            "float_power_f32_broadcast",
            "float_power",
            [f32(inp([2, 3], "positive", view=t01)), f32(inp([3, 1]))],
        ),
        c("float_power_int_base", "float_power", [inp([4], "positive"), inp([4], **ints)]),
        c("float_power_scalar", "float_power_scalar", [f32(inp([2, 2], "positive"))], exponent=2.5),
        c("float_power_scalar_int", "float_power_scalar", [inp([3], **ints)], exponent=2),
        c("float_power_scalar_neg", "float_power_scalar", [inp([3], "nonzero")], exponent=-2),
        c("float_power_scalar_base", "float_power_scalar_base", [f32(inp([2, 3]))], base=1.5),
        c(
            "einsum_sublist_matmul",
            "einsum_sublist",
            [inp([2, 3]), inp([3, 4])],
            sublists=[[0, 1], [1, 2]],
            output=[0, 2],
        ),
        c(
            "einsum_sublist_implicit_f32",
            "einsum_sublist",
            [f32(inp([3, 2], view=t01)), f32(inp([3]))],
            sublists=[[27, 1], [1]],
            output=None,
        ),
        c(
            "einsum_sublist_trace",
            "einsum_sublist",
            [inp([3, 3])],
            sublists=[[5, 5]],
            output=[],
        ),
    ]


# ------------------------------------------------------------- forms_ops.json
# In-place forms, aliases and the ops added with them (README: "Forms").


def _in_place(method: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    """``y = x.clone()``; ``y.<method>(*others, *args)`` on ``y`` or on the view
    ``y[region]``; the result is ``y``."""

    def run(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
        y = xs[0].clone()
        target = y[slice_index(kw["region"])] if "region" in kw else y
        getattr(target, method)(*xs[1:], *kw.get("args", []))
        return y

    return run


FORMS_IN_PLACE = [
    *("abs_ absolute_ neg_ negative_ exp_ log_ sqrt_ sigmoid_ tanh_ sign_ pow_".split()),
    *("eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_".split()),
    *("cumsum_ cumprod_ clamp_min_ clamp_max_ multiply_ subtract_".split()),
]
FORMS_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    **{op: _in_place(op) for op in FORMS_IN_PLACE},
    "clamp_min": lambda xs, kw: xs[0].clamp_min(*kw["args"]),
    "clamp_max": lambda xs, kw: xs[0].clamp_max(*kw["args"]),
    "index_copy": lambda xs, kw: xs[0].index_copy(kw["dim"], kt(kw["index"]), xs[1]),
    "index_copy_": lambda xs, kw: _cloned(xs, "index_copy_", kw["dim"], kt(kw["index"]), xs[1]),
    "masked_scatter": lambda xs, kw: xs[0].masked_scatter(kt(kw["mask"]), xs[1]),
    "masked_scatter_": lambda xs, kw: _cloned(xs, "masked_scatter_", kt(kw["mask"]), xs[1]),
    "put": lambda xs, kw: xs[0].put(kt(kw["index"]), xs[1], accumulate=kw["accumulate"]),
    "put_": lambda xs, kw: _cloned(xs, "put_", kt(kw["index"]), xs[1], kw["accumulate"]),
    "fill_diagonal_": lambda xs, kw: _cloned(xs, "fill_diagonal_", kw["value"], kw["wrap"]),
}


# In-place view ops (they change the tensor's layout, not its values) and squeeze's
# tuple form.
VIEW_FORMS = "squeeze_ unsqueeze_ transpose_ swapaxes_ swapdims_ t_ as_strided_".split()
FORMS_OPS.update({op: _in_place(op) for op in VIEW_FORMS})
FORMS_OPS["squeeze_dims"] = lambda xs, kw: xs[0].squeeze(tuple(kw["dims"]))


def _cloned(xs: list[torch.Tensor], method: str, *args: Any) -> torch.Tensor:
    """``y = x.clone(); y.<method>(*args)``; the result is ``y``."""
    y = xs[0].clone()
    getattr(y, method)(*args)
    return y


def forms_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case("forms_" + name, op, specs, kwargs)

    region = slice_(1, 1, 3)  # y[:, 1:3], a non-contiguous view written in place
    t01 = transpose(0, 1)
    dist = {"log_": "positive", "sqrt_": "positive", "abs_": "nonzero", "absolute_": "nonzero"}
    cases = []
    for op in "abs_ absolute_ neg_ negative_ exp_ log_ sqrt_ sigmoid_ tanh_ sign_".split():
        d = dist.get(op, "normal")
        cases += [
            c(f"{op}", op, [inp([2, 3], d)]),
            c(f"{op}_region", op, [inp([2, 4], d)], region=region),
            c(f"{op}_transposed_f32", op, [f32(inp([3, 2], d, view=t01))]),
        ]
    cases += [
        c("pow__int", "pow_", [inp([2, 3])], args=[2]),
        c("pow__float_region", "pow_", [inp([2, 4], "positive")], args=[1.5], region=region),
        c("pow__tensor", "pow_", [inp([2, 3], "positive"), inp([3])]),
        c("pow__tensor_f32", "pow_", [f32(inp([3, 2], "positive", view=t01)), f32(inp([2, 1]))]),
        c("pow__tensor_nograd_base", "pow_", [inp([3], "positive", requires_grad=False), inp([3])]),
    ]
    for op in FORMS_IN_PLACE[11:22]:  # the comparisons
        cases += [
            c(f"{op}_scalar", op, [inp([2, 3], "ties")], args=[0.5]),
            c(f"{op}_tensor", op, [inp([2, 3], "ties"), inp([3], "ties")]),
        ]
    cases += [
        c("eq__region_f32", "eq_", [f32(inp([2, 4], "ties"))], args=[0.0], region=region),
        c("lt__int", "lt_", [inp([2, 3], "int", requires_grad=False, dtype="int64")], args=[1]),
        c("cumsum_", "cumsum_", [inp([2, 3])], args=[1]),
        c("cumsum__neg_dim_region", "cumsum_", [inp([3, 4])], args=[-1], region=region),
        c("cumsum__f32_transposed", "cumsum_", [f32(inp([3, 2], view=t01))], args=[0]),
        c("cumprod_", "cumprod_", [inp([2, 3])], args=[-1]),
        c("cumprod__zeros", "cumprod_", [inp([2, 4], "zeros")], args=[1]),
        c("cumprod__region_f32", "cumprod_", [f32(inp([3, 4]))], args=[0], region=region),
        c("clamp_min_", "clamp_min_", [inp([2, 3], "wide")], args=[0.5]),
        c("clamp_min__region", "clamp_min_", [inp([2, 4], "wide")], args=[-1.5], region=region),
        c("clamp_max_", "clamp_max_", [f32(inp([2, 3], "wide"))], args=[0.5]),
        c("clamp_max__int", "clamp_max_", [inp([4], "int", False, dtype="int64")], args=[1]),
        c("clamp_min", "clamp_min", [inp([2, 3], "wide", view=None)], args=[0.5]),
        c("clamp_min_f32_transposed", "clamp_min", [f32(inp([3, 2], "wide", view=t01))], args=[1]),
        c("clamp_max", "clamp_max", [inp([2, 3], "wide")], args=[-0.5]),
        c("multiply_", "multiply_", [inp([2, 3]), inp([3])]),
        c("multiply__scalar_region", "multiply_", [inp([2, 4])], args=[2.5], region=region),
        c("subtract_", "subtract_", [inp([2, 3]), inp([2, 1])]),
        c("subtract__f32_transposed", "subtract_", [f32(inp([3, 2], view=t01)), f32(inp([3]))]),
    ]
    cases += [
        c("squeeze__all", "squeeze_", [inp([2, 1, 3])]),
        c("squeeze__dim", "squeeze_", [inp([2, 1, 3])], args=[1]),
        c("squeeze__neg_dim_f32", "squeeze_", [f32(inp([2, 3, 1]))], args=[-1]),
        c("squeeze__dims", "squeeze_", [inp([2, 1, 3, 1])], args=[[1, 3]]),
        c("squeeze__transposed", "squeeze_", [inp([3, 1], view=t01)], args=[0]),
        c("unsqueeze_", "unsqueeze_", [inp([2, 3])], args=[1]),
        c("unsqueeze__neg_f32_transposed", "unsqueeze_", [f32(inp([3, 2], view=t01))], args=[-1]),
        c("transpose_", "transpose_", [inp([2, 3, 4])], args=[0, 2]),
        c("swapaxes_", "swapaxes_", [f32(inp([2, 3, 4]))], args=[-1, 0]),
        c("swapdims_", "swapdims_", [inp([2, 3, 4])], args=[1, 2]),
        c("t_", "t_", [inp([2, 3])]),
        c("t__1d", "t_", [inp([3])]),
        c("as_strided_", "as_strided_", [inp([6])], args=[[2, 3], [1, 2]]),
        c("as_strided__offset_f32", "as_strided_", [f32(inp([8]))], args=[[3], [2], 1]),
        c("squeeze_dims", "squeeze_dims", [inp([2, 1, 3, 1])], dims=[1, 3]),
        c("squeeze_dims_neg_f32", "squeeze_dims", [f32(inp([1, 3, 1]))], dims=[-1, 0]),
    ]
    i = itensor
    cases += [
        c("index_copy_dim0", "index_copy", [inp([4, 3]), inp([2, 3])], dim=0, index=i([3, 0])),
        c(
            "index_copy_neg_dim_transposed_f32",
            "index_copy",
            [f32(inp([3, 4], view=t01)), f32(inp([4, 2]))],
            dim=-1,
            index=i([2, 0]),
        ),
        c("index_copy_repeated", "index_copy", [inp([3, 2]), inp([2, 2])], dim=0, index=i([1, 1])),
        c("index_copy_in_place", "index_copy_", [inp([4, 3]), inp([4, 2])], dim=1, index=i([2, 0])),
        c(
            "index_copy_int",
            "index_copy",
            [inp([3], "int", False, dtype="int64"), inp([1], "int", False, dtype="int64")],
            dim=0,
            index=i([2]),
        ),
        c(
            "masked_scatter",
            "masked_scatter",
            [inp([2, 3]), inp([7])],
            mask=i([[True, False, True], [False, True, True]], "bool"),
        ),
        c(
            "masked_scatter_broadcast_mask_f32",
            "masked_scatter",
            [f32(inp([2, 3])), f32(inp([2, 3]))],
            mask=i([True, False, True], "bool"),
        ),
        c(
            "masked_scatter_in_place_transposed",
            "masked_scatter_",
            [inp([3, 2], view=t01), inp([3, 2])],
            mask=i([[False, True, True], [True, False, False]], "bool"),
        ),
        c("put", "put", [inp([2, 3]), inp([3])], index=i([5, 0, -2]), accumulate=False),
        c(
            "put_accumulate",
            "put",
            [inp([2, 3]), inp([2, 2])],
            index=i([[1, 1], [0, 4]]),
            accumulate=True,
        ),
        c(
            "put_in_place_f32_transposed",
            "put_",
            [f32(inp([3, 2], view=t01)), f32(inp([2]))],
            index=i([1, 3]),
            accumulate=False,
        ),
        c("fill_diagonal_", "fill_diagonal_", [inp([3, 4])], value=2.5, wrap=False),
        c("fill_diagonal_wrap", "fill_diagonal_", [inp([7, 2])], value=-1.0, wrap=True),
        c(
            "fill_diagonal_tall_no_wrap_f32",
            "fill_diagonal_",
            [f32(inp([5, 2]))],
            value=0.5,
            wrap=False,
        ),
        c("fill_diagonal_cube", "fill_diagonal_", [inp([3, 3, 3])], value=1.0, wrap=False),
    ]
    return cases


# ------------------------------------------------------- scatter_reduce_ops.json
# scatter_reduce / scatter_reduce_ (README: "scatter_reduce").

SCATTER_REDUCE_OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "scatter_reduce": lambda xs, kw: xs[0].scatter_reduce(
        kw["dim"], kt(kw["index"]), xs[1], kw["reduce"], include_self=kw["include_self"]
    ),
    "scatter_reduce_": lambda xs, kw: _cloned_kw(
        xs,
        "scatter_reduce_",
        kw["dim"],
        kt(kw["index"]),
        xs[1],
        kw["reduce"],
        include_self=kw["include_self"],
    ),
}


def _cloned_kw(xs: list[torch.Tensor], method: str, *args: Any, **kwargs: Any) -> torch.Tensor:
    """``y = x.clone(); y.<method>(*args, **kwargs)``; the result is ``y``."""
    y = xs[0].clone()
    getattr(y, method)(*args, **kwargs)
    return y


def scatter_reduce_ops_cases() -> list[dict[str, Any]]:
    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return make_case("scatter_reduce_" + name, op, specs, kwargs)

    i = itensor
    idx2 = i([[0, 2, 0, 1], [0, 0, 2, 2]])
    cases = []
    for reduce in ["sum", "prod", "mean", "amax", "amin"]:
        # "ties" draws from five values, so amax/amin see ties and prod sees zeros.
        dist = "zeros" if reduce == "prod" else "ties"
        for include_self in [True, False]:
            tag = f"{reduce}_{'self' if include_self else 'noself'}"
            cases += [
                c(
                    tag,
                    "scatter_reduce",
                    [inp([3, 4], dist), inp([2, 4], dist)],
                    dim=0,
                    index=idx2,
                    reduce=reduce,
                    include_self=include_self,
                ),
                c(
                    f"{tag}_neg_dim_f32",
                    "scatter_reduce",
                    [f32(inp([2, 3], dist)), f32(inp([2, 3], dist))],
                    dim=-1,
                    index=i([[2, 2, 0], [1, 1, 1]]),
                    reduce=reduce,
                    include_self=include_self,
                ),
                c(
                    f"{tag}_in_place",
                    "scatter_reduce_",
                    [inp([4, 3], dist, view=transpose(0, 1)), inp([3, 2], dist)],
                    dim=1,
                    index=i([[3, 3], [0, 3], [1, 1]]),
                    reduce=reduce,
                    include_self=include_self,
                ),
            ]
    cases += [
        c(
            "prod_two_zeros_first_order",
            "scatter_reduce",
            [inp([3], "int"), inp([4], "int")],
            dim=0,
            index=i([1, 1, 1, 0]),
            reduce="prod",
            include_self=True,
        ),
        c(
            "mean_int",
            "scatter_reduce",
            [inp([4], "int", False, dtype="int64"), inp([5], "int", False, dtype="int64")],
            dim=0,
            index=i([0, 0, 1, 3, 3]),
            reduce="mean",
            include_self=True,
        ),
        c(
            "amax_src_nograd",
            "scatter_reduce",
            [inp([3, 2], "ties"), inp([2, 2], "ties", requires_grad=False)],
            dim=0,
            index=i([[1, 1], [1, 0]]),
            reduce="amax",
            include_self=True,
        ),
    ]
    return cases


GROUPS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "unary": unary_cases,
    "binary": binary_cases,
    "compare": compare_cases,
    "scalar": scalar_cases,
    "reduce": reduce_cases,
    "matmul": matmul_cases,
    "views": views_cases,
    "elementwise_ops": elementwise_cases,
    "reduce_ops": reduce_ops_cases,
    "shape_ops": shape_ops_cases,
    "linalg_ops": linalg_ops_cases,
    "coverage_ops": coverage_ops_cases,
    "extra_ops": extra_ops_cases,
    "forms_ops": forms_ops_cases,
    "scatter_reduce_ops": scatter_reduce_ops_cases,
    "dtype_ops": generate_dtypes.cases,  # the storage dtypes: own explicit-value cases
}


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)  # fixed reduction order, so reruns are byte-identical
    names: set[str] = set()
    total = 0
    for group, build in GROUPS.items():
        cases = build()
        for case in cases:
            assert case["name"] not in names, f"duplicate case name {case['name']}"
            names.add(case["name"])
        # One case per line: compact, and a regenerated file diffs case by case.
        lines = [json.dumps(case, allow_nan=False) for case in cases]
        text = '{"cases": [\n' + ",\n".join(lines) + "\n]}\n"
        path = OUT_DIR / f"{group}.json"
        path.write_text(text)
        total += len(text)
        print(f"{path.name}: {len(cases)} cases, {len(text)} bytes")
    print(f"total: {len(names)} cases, {total} bytes")
    generate_random.main()  # random.json: PyTorch's random streams
    generate_samplers.main()  # samplers_ops.json: the other samplers (Note [Random samplers])
    generate_factory.main()  # factory.json: linspace, logspace, eye bit for bit


if __name__ == "__main__":
    main()
