"""dtype_ops.json: the storage dtypes (issue 6), computed by PyTorch.

Called by generate.py (its GROUPS entry "dtype_ops"); the schema is generate.py's (see
README.md, "Storage dtypes"). Inputs are explicit value lists rather than random draws:
the cases probe wrapping, rounding ties and out-of-range conversions, which random
values would rarely hit. A case with ``"exact": true`` is compared bit for bit by the
readers (conversions, and float16/bfloat16 results of exactly rounded ops).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable

import torch

DTYPES = {
    "bool": torch.bool,
    "uint8": torch.uint8,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
}
INTS = ["uint8", "int8", "int16", "int32", "int64"]
HALVES = ["float16", "bfloat16"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]

# op name -> f(inputs, kwargs), as a PyTorch user writes it.
OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], Any]] = {
    "add": lambda xs, kw: xs[0] + xs[1],
    "sub": lambda xs, kw: xs[0] - xs[1],
    "mul": lambda xs, kw: xs[0] * xs[1],
    "div": lambda xs, kw: xs[0] / xs[1],
    "floor_divide": lambda xs, kw: xs[0] // xs[1],
    "remainder": lambda xs, kw: xs[0] % xs[1],
    "bitwise_and": lambda xs, kw: xs[0] & xs[1],
    "bitwise_or": lambda xs, kw: xs[0] | xs[1],
    "bitwise_xor": lambda xs, kw: xs[0] ^ xs[1],
    "eq": lambda xs, kw: xs[0] == xs[1],
    "lt": lambda xs, kw: xs[0] < xs[1],
    "add_scalar": lambda xs, kw: xs[0] + kw["other"],
    "mul_scalar": lambda xs, kw: xs[0] * kw["other"],
    "to": lambda xs, kw: xs[0].to(DTYPES[kw["dtype"]]),
    "neg": lambda xs, kw: -xs[0],
    "abs": lambda xs, kw: xs[0].abs(),
    "exp": lambda xs, kw: xs[0].exp(),
    "log": lambda xs, kw: xs[0].log(),
    "sqrt": lambda xs, kw: xs[0].sqrt(),
    "tanh": lambda xs, kw: xs[0].tanh(),
    "sigmoid": lambda xs, kw: xs[0].sigmoid(),
    "relu": lambda xs, kw: xs[0].relu(),
    "pow": lambda xs, kw: xs[0] ** kw["exponent"],
    "sum": lambda xs, kw: xs[0].sum(),
    "mean": lambda xs, kw: xs[0].mean(),
    "prod": lambda xs, kw: xs[0].prod(),
    "cumsum": lambda xs, kw: xs[0].cumsum(kw["dim"]),
    "amax": lambda xs, kw: xs[0].amax(kw["dim"], kw["keepdim"]),
    "argmax": lambda xs, kw: xs[0].argmax(kw["dim"], kw["keepdim"]),
    "max": lambda xs, kw: tuple(xs[0].max(kw["dim"], kw["keepdim"])),
    "sort": lambda xs, kw: tuple(xs[0].sort(kw["dim"], kw["descending"])),
    "mm": lambda xs, kw: xs[0].mm(xs[1]),
    "bmm": lambda xs, kw: xs[0].bmm(xs[1]),
    "mv": lambda xs, kw: xs[0].mv(xs[1]),
    "dot": lambda xs, kw: xs[0].dot(xs[1]),
    "matmul": lambda xs, kw: xs[0] @ xs[1],
}


AMAX = {"dim": [1], "keepdim": False}
MAX = {"dim": 1, "keepdim": False}
ARGMAX = {"dim": 0, "keepdim": False}
SORT = {"dim": 1, "descending": False}


def values_json(t: torch.Tensor) -> list[Any]:
    flat = t.detach().reshape(-1)
    if t.dtype == torch.bool:
        return [bool(v) for v in flat.tolist()]
    if not t.dtype.is_floating_point:
        return [int(v) for v in flat.tolist()]
    values = [float(v) for v in flat.double().tolist()]
    assert all(math.isfinite(v) for v in values), "non-finite value in a vector"
    return values


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    return {
        "data": values_json(t),
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
    }


def case(
    name: str,
    op: str,
    inputs: list[tuple[list[Any], str, list[int]] | tuple[list[Any], str, list[int], bool]],
    kwargs: dict[str, Any] | None = None,
    exact: bool = False,
    grad_output: list[float] | None = None,
) -> dict[str, Any]:
    """One case; inputs are (values, dtype, shape[, requires_grad]); the values are
    first converted to the dtype by PyTorch (so they are what the tensor holds)."""
    kwargs = kwargs or {}
    leaves = []
    inputs_json = []
    for spec in inputs:
        values, dtype, shape = spec[0], spec[1], spec[2]
        rg = len(spec) > 3 and bool(spec[3])
        t = torch.tensor(values, dtype=torch.float64 if DTYPES[dtype].is_floating_point else None)
        leaf = t.to(DTYPES[dtype]).reshape(shape).requires_grad_(rg)
        leaves.append(leaf)
        js = tensor_json(leaf)
        inputs_json.append({**js, "requires_grad": rg, "view": None})
    out = OPS[op](leaves, kwargs)
    indices = None
    if isinstance(out, tuple):
        out, indices = out
    result: dict[str, Any] = {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
    }
    if exact:
        result["exact"] = True
    if indices is not None:
        result["indices"] = tensor_json(indices)
    if out.requires_grad:
        n = out.numel()
        go = grad_output or [round(0.25 * ((i * 7) % 9) - 1.0, 4) for i in range(n)]
        g = torch.tensor(go[:n], dtype=torch.float64).to(out.dtype).reshape(out.shape)
        out.backward(g)
        result["grad_output"] = tensor_json(g)
        result["grads"] = [tensor_json(x.grad) if x.requires_grad else None for x in leaves]
    else:
        result["grad_output"] = None
        result["grads"] = [None] * len(leaves)
    return result


def sample(dtype: str, kind: str = "small") -> list[Any]:
    """Operand values valid in every dtype (no zeros where they divide)."""
    if dtype == "bool":
        return [True, False, True, True] if kind == "small" else [True, True, True, True]
    if kind == "divisor":
        return [3, 2, 1, 3] if dtype == "uint8" else [3, -2, 1, -3]
    return [7, 0, 5, 2] if dtype == "uint8" else [7, 0, -5, 2]


def promotion_cases() -> list[dict[str, Any]]:
    cases = []
    names = list(DTYPES)
    # add over every pair of dtypes: PyTorch's promotion table.
    for a, b in itertools.product(names, names):
        cases.append(case(f"dt_add_{a}_{b}", "add", [(sample(a), a, [4]), (sample(b), b, [4])]))
    mixed = [
        ("uint8", "int8"),
        ("int8", "uint8"),
        ("int32", "int64"),
        ("int16", "float16"),
        ("float16", "bfloat16"),
        ("uint8", "float32"),
        ("bool", "int32"),
        ("int8", "bfloat16"),
        ("int32", "float64"),
        ("int16", "int32"),
    ]
    pairs = [(d, d) for d in names] + mixed
    for a, b in pairs:
        int_like = a not in FLOATS and b not in FLOATS
        for op in ["mul", "div", "floor_divide", "remainder", "eq", "lt"]:
            if op in ("floor_divide", "remainder") and (a == "bool" and b == "bool"):
                continue
            divides = op in ("div", "floor_divide", "remainder")
            bvals = sample(b, "divisor") if divides else sample(b)
            cases.append(
                case(f"dt_{op}_{a}_{b}", op, [(sample(a), a, [4]), (bvals, b, [4])], exact=True)
            )
        if int_like:
            for op in ["bitwise_and", "bitwise_or", "bitwise_xor"]:
                cases.append(
                    case(f"dt_{op}_{a}_{b}", op, [(sample(a), a, [4]), (sample(b), b, [4])])
                )
        if a != "bool" and b != "bool":
            cases.append(case(f"dt_sub_{a}_{b}", "sub", [(sample(a), a, [4]), (sample(b), b, [4])]))
    # Wrapping arithmetic of the narrow integers.
    wrap = {
        "uint8": ([200, 100, 255, 3], [100, 200, 1, 5]),
        "int8": ([100, -100, 127, -128], [100, -100, 1, -1]),
        "int16": ([30000, -30000, 32767, -32768], [30000, -30000, 1, -1]),
        "int32": ([2**31 - 1, -(2**31), 65536, 46341], [1, -1, 65536, 46341]),
    }
    for d, (xa, xb) in wrap.items():
        for op in ["add", "sub", "mul", "floor_divide", "remainder"]:
            cases.append(case(f"dt_wrap_{op}_{d}", op, [(xa, d, [4]), (xb, d, [4])], exact=True))
        cases.append(case(f"dt_wrap_neg_{d}", "neg", [(xa, d, [4])], exact=True))
        cases.append(case(f"dt_wrap_abs_{d}", "abs", [(xa, d, [4])], exact=True))
        cases.append(case(f"dt_wrap_pow_{d}", "pow", [(xa, d, [4])], {"exponent": 3}, exact=True))
    # Python scalars: the wrapped-number rule (uint8 + 5 stays uint8, int32 * 2.5 is float).
    for d in INTS + HALVES:
        for op, other in [("add_scalar", 5), ("add_scalar", -1), ("mul_scalar", 2.5)]:
            tag = str(other).replace("-", "m").replace(".", "p")
            cases.append(
                case(f"dt_{op}_{tag}_{d}", op, [(sample(d), d, [4])], {"other": other}, exact=True)
            )
    return cases


CONVERT_FLOATS = [
    300.0,
    -1.0,
    -129.5,
    2.5,
    -2.5,
    3.5,
    0.1,
    127.9,
    65535.0,
    1e10,
    -3e9,
    5000000007.0,
    1.00048828125,
    1.00146484375,
    2049.0,
    2051.0,
    1.00390625,
    1.01171875,
    3.0e-8,
    1e-45,
]
CONVERT_INTS = [300, -1, -129, 127, 255, 65537, 2**31 + 5, 2**40 + 3, -(2**40) - 7, 0, 16777217]


def conversion_cases() -> list[dict[str, Any]]:
    cases = []
    for src, dst in itertools.product(DTYPES, DTYPES):
        if src in FLOATS:
            values = CONVERT_FLOATS
        elif src == "bool":
            values = [True, False]
        else:
            # The int values wrapped into the source dtype, as PyTorch's cast wraps.
            values = torch.tensor(CONVERT_INTS).to(DTYPES[src]).tolist()
        # Leave out values whose source or result is not finite (JSON has no inf).
        kept = []
        for v in values:
            x = torch.tensor([v], dtype=torch.float64 if src in FLOATS else None).to(DTYPES[src])
            if src in FLOATS and not torch.isfinite(x).all():
                continue
            y = x.to(DTYPES[dst])
            if dst in FLOATS and not torch.isfinite(y).all():
                continue
            kept.append(v)
        kept = list(dict.fromkeys(kept))
        cases.append(
            case(f"dt_to_{src}_{dst}", "to", [(kept, src, [len(kept)])], {"dtype": dst}, exact=True)
        )
    return cases


def half_cases() -> list[dict[str, Any]]:
    cases = []
    xs = [0.5, -1.25, 2.0, 0.3333, -0.7, 1.5]
    pos = [0.5, 1.25, 2.0, 0.3333, 0.7, 1.5]
    for d in HALVES:
        for op in ["exp", "tanh", "sigmoid", "neg", "abs", "relu"]:
            cases.append(case(f"dt_{op}_{d}", op, [(xs, d, [2, 3], True)]))
        for op in ["log", "sqrt"]:
            cases.append(case(f"dt_{op}_{d}", op, [(pos, d, [2, 3], True)]))
        cases.append(case(f"dt_pow2_{d}", "pow", [(xs, d, [2, 3], True)], {"exponent": 2}))
        for op in ["add", "mul", "div", "sub"]:
            cases.append(
                case(
                    f"dt_{op}_grad_{d}",
                    op,
                    [(xs, d, [2, 3], True), (pos[:3], d, [3], True)],
                    exact=op != "div",
                )
            )
        cases.append(case(f"dt_sum_{d}", "sum", [(xs * 4, d, [4, 6], True)]))
        cases.append(case(f"dt_mean_{d}", "mean", [(xs * 4, d, [4, 6], True)]))
        cases.append(case(f"dt_prod_{d}", "prod", [(pos, d, [6], True)]))
        cases.append(case(f"dt_cumsum_{d}", "cumsum", [(xs, d, [2, 3], True)], {"dim": 1}))
        cases.append(case(f"dt_amax_{d}", "amax", [(xs, d, [2, 3], True)], AMAX))
        cases.append(case(f"dt_max_{d}", "max", [(xs, d, [2, 3], True)], MAX))
        cases.append(case(f"dt_sort_{d}", "sort", [(xs, d, [2, 3])], SORT, exact=True))
        a = [0.1 * i - 0.6 for i in range(12)]
        b = [0.05 * i + 0.3 for i in range(12)]
        cases.append(case(f"dt_mm_{d}", "mm", [(a, d, [3, 4], True), (b, d, [4, 3], True)]))
        cases.append(case(f"dt_bmm_{d}", "bmm", [(a, d, [2, 3, 2], True), (b, d, [2, 2, 3], True)]))
        cases.append(case(f"dt_mv_{d}", "mv", [(a, d, [3, 4], True), (b[:4], d, [4], True)]))
        cases.append(case(f"dt_dot_{d}", "dot", [(a[:5], d, [5], True), (b[:5], d, [5], True)]))
    return cases


def int_cases() -> list[dict[str, Any]]:
    cases = []
    a = [3, -2, 7, 100, -50, 1, 0, 9, 120, -128, 5, 6]
    b = [2, 5, -1, 3, 100, 7, 8, -9, 10, 1, -4, 3]
    for d in INTS:
        va = torch.tensor(a).to(DTYPES[d]).tolist()
        vb = torch.tensor(b).to(DTYPES[d]).tolist()
        cases.append(case(f"dt_mm_{d}", "mm", [(va, d, [3, 4]), (vb, d, [4, 3])]))
        cases.append(case(f"dt_bmm_{d}", "bmm", [(va, d, [2, 3, 2]), (vb, d, [2, 2, 3])]))
        cases.append(case(f"dt_matmul_{d}", "matmul", [(va, d, [2, 2, 3]), (vb[:3], d, [3])]))
        cases.append(case(f"dt_mv_{d}", "mv", [(va, d, [3, 4]), (vb[:4], d, [4])]))
        cases.append(case(f"dt_dot_{d}", "dot", [(va[:5], d, [5]), (vb[:5], d, [5])]))
        for op in ["sum", "prod"]:
            cases.append(case(f"dt_{op}_{d}", op, [(va[:6], d, [6])]))
        cases.append(case(f"dt_cumsum_{d}", "cumsum", [(va, d, [3, 4])], {"dim": 1}))
        cases.append(case(f"dt_amax_{d}", "amax", [(va, d, [3, 4])], AMAX))
        cases.append(case(f"dt_argmax_{d}", "argmax", [(va, d, [3, 4])], ARGMAX))
        cases.append(case(f"dt_max_{d}", "max", [(va, d, [3, 4])], MAX))
        cases.append(case(f"dt_sort_{d}", "sort", [(va, d, [3, 4])], SORT))
    return cases


def cases() -> list[dict[str, Any]]:
    return promotion_cases() + conversion_cases() + half_cases() + int_cases()
