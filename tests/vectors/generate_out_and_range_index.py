"""Generate tests/vectors/out_and_range_index.json: PyTorch 2.15's indexing with
``range`` objects and other sequences of ints (reads, writes, gradients), and its
``out=`` behaviour for every op of ``OUT_OPS`` (Note [out= arguments]).

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_out_and_range_index.py

``range_index`` cases: an index expression over ``torch``, ``np`` and ``collections``
applied to ``x = torch.arange(12.).reshape(3, 4)`` (float64, requires grad). ``get``
records ``x[index]`` (shape, values) and the gradient of ``(x[index] * w).sum()`` with
``w = 1 + arange`` of the result's shape; ``set`` runs ``y = x * 1; y[index] = v`` with
``v = 100 + arange`` of ``x[index]``'s shape (float64, requires grad) and records ``y``
and the gradients of ``(y * W).sum()`` (``W = 1 + arange(12)``) for ``x`` and ``v``;
``set_number`` runs ``y[index] = 7``. Errors are recorded as ``type`` and ``message``.

``out`` cases: see ``out_case``.
"""

from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

OUT = Path(__file__).resolve().parent / "out_and_range_index.json"

RANGE_INDICES = [
    "range(2)",
    "range(0)",
    "range(2, -1, -1)",
    "range(-3, 0)",
    "range(1, 3)",
    "(range(3), [0, 1, 2])",
    "(range(3), torch.tensor([1, 2, 3]))",
    "(slice(None), range(1, 3))",
    "(slice(None), range(3, 0, -2))",
    "(range(1, 3), slice(None))",
    "(..., range(2))",
    "(range(2), None, range(2))",
    "(0, range(1, 4))",
    "[range(2), 1]",
    "(range(3), range(3))",
    "(range(0), range(0))",
    "(range(3), [[0], [1], [2]])",
    "(slice(None), (1, 3))",
    "np.array([0, 2])",
    "(np.array([0, 2]), 1)",
    "(range(2), np.array([1, 3]))",
    "np.array([True, False, True])",
    "collections.deque([0, 2])",
    "range(5)",
    "(slice(None), range(4, 0, -2))",
    "(range(2), 'a')",
]


# ``out=`` cases: op name -> (positional arguments, keyword arguments), Python expressions
# over ``torch`` and the tensors of ``out_inputs``. Ops PyTorch refuses ``out=`` for are
# recorded as such (``accepts_out`` false).
OUT_OPS: dict[str, tuple[str, str]] = {
    # unary
    **{
        n: ("(a,)", "{}")
        for n in (
            "abs absolute acos arccos asin arcsin atan arctan ceil cos cosh erf exp exp2 "
            "expm1 fix floor frac neg negative reciprocal round sgn sigmoid sign sin sinh "
            "square tan tanh trunc relu isinf isnan isneginf isposinf signbit nan_to_num "
            "bitwise_not logical_not"
        ).split()
    },
    **{n: ("(p,)", "{}") for n in "log log10 log1p log2 rsqrt sqrt erfinv".split()},
    "celu": ("(a,)", "{}"),
    "clone": ("(a,)", "{}"),
    "bitwise_not": ("(i,)", "{}"),
    # binary
    **{
        n: ("(a, b)", "{}")
        for n in (
            "add sub subtract mul multiply div divide true_divide atan2 arctan2 maximum "
            "minimum fmax fmin fmod remainder copysign hypot logaddexp logaddexp2 eq ne "
            "lt le gt ge greater greater_equal less less_equal not_equal floor_divide "
            "xlogy logical_and logical_or logical_xor"
        ).split()
    },
    "pow": ("(p, b)", "{}"),
    "float_power": ("(p, b)", "{}"),
    **{n: ("(i, j)", "{}") for n in "bitwise_and bitwise_or bitwise_xor".split()},
    "add_alpha": ("(a, b)", "dict(alpha=2)"),
    # ternary
    "addcmul": ("(a, b, a)", "dict(value=0.5)"),
    "addcdiv": ("(a, b, p)", "dict(value=0.5)"),
    "lerp": ("(a, b, 0.25)", "{}"),
    "where": ("(mask, a, b)", "{}"),
    "clamp": ("(a,)", "dict(min=-0.5, max=0.5)"),
    "clip": ("(a,)", "dict(min=-0.5, max=0.5)"),
    "clamp_min": ("(a, -0.5)", "{}"),
    "clamp_max": ("(a, 0.5)", "{}"),
    # linear algebra
    "matmul": ("(a, m)", "{}"),
    "mm": ("(a, m)", "{}"),
    "bmm": ("(bt, bt2)", "{}"),
    "mv": ("(m.t(), v3)", "{}"),
    "dot": ("(v3, v3)", "{}"),
    "outer": ("(v3, v3)", "{}"),
    "addmm": ("(c, a, m)", "{}"),
    "addmv": ("(v4, m.t(), v3)", "{}"),
    "addbmm": ("(bt3[0], bt, bt2)", "{}"),
    "baddbmm": ("(bt3, bt, bt2)", "{}"),
    "tensordot": ("(a, m)", "dict(dims=1)"),
    # reductions and scans
    "sum": ("(a, 1)", "{}"),
    "sum_all": ("(a,)", "{}"),
    "nansum": ("(a, 1)", "{}"),
    "mean": ("(a, 1)", "{}"),
    "nanmean": ("(a, 1)", "{}"),
    "prod": ("(a, 1)", "{}"),
    "amax": ("(a, 1)", "{}"),
    "amin": ("(a, 1)", "{}"),
    "argmax": ("(a, 1)", "{}"),
    "argmin": ("(a, 1)", "{}"),
    "all": ("(mask, 1)", "{}"),
    "any": ("(mask, 1)", "{}"),
    "logsumexp": ("(a, 1)", "{}"),
    "norm": ("(a,)", "dict(dim=1)"),
    "std": ("(a, 1)", "{}"),
    "var": ("(a, 1)", "{}"),
    "std_mean": ("(a, 1)", "{}"),
    "var_mean": ("(a, 1)", "{}"),
    "count_nonzero": ("(a,)", "dict(dim=1)"),
    "cumsum": ("(a, 1)", "{}"),
    "cumprod": ("(a, 1)", "{}"),
    "softmax": ("(a, 1)", "{}"),
    "log_softmax": ("(a, 1)", "{}"),
    "max": ("(a, 1)", "{}"),
    "max_all": ("(a,)", "{}"),
    "max_binary": ("(a, b)", "{}"),
    "min": ("(a, 1)", "{}"),
    "median": ("(a, 1)", "{}"),
    "median_all": ("(a,)", "{}"),
    "sort": ("(a, 1)", "{}"),
    "argsort": ("(a, 1)", "{}"),
    "topk": ("(a, 2)", "{}"),
    # shape and indexing
    "cat": ("([a, b],)", "{}"),
    "concat": ("([a, b],)", "{}"),
    "concatenate": ("([a, b],)", "dict(dim=1)"),
    "stack": ("([a, b],)", "{}"),
    "hstack": ("([a, b],)", "{}"),
    "vstack": ("([a, b],)", "{}"),
    "index_select": ("(a, 1, torch.tensor([2, 0]))", "{}"),
    "gather": ("(a, 1, torch.tensor([[2, 0], [1, 1]]))", "{}"),
    "take": ("(a, torch.tensor([5, 0]))", "{}"),
    "take_along_dim": ("(a, torch.tensor([[2], [1]]), 1)", "{}"),
    "masked_select": ("(a, mask)", "{}"),
    "nonzero": ("(mask,)", "{}"),
    "diag": ("(v3,)", "{}"),
    "diag_embed": ("(a,)", "{}"),
    "tril": ("(m,)", "{}"),
    "triu": ("(m,)", "{}"),
    "flip": ("(a, [0])", "{}"),
    "roll": ("(a, 1, 1)", "{}"),
    "repeat_interleave": ("(a, 2)", "dict(dim=0)"),
    "index_add": ("(a, 1, torch.tensor([2, 0]), b[:, :2])", "{}"),
    "index_copy": ("(a, 1, torch.tensor([2, 0]), b[:, :2])", "{}"),
    "index_fill": ("(a, 1, torch.tensor([2, 0]), 1.5)", "{}"),
    "scatter": ("(a, 1, torch.tensor([[2, 0], [1, 1]]), b)", "{}"),
    "scatter_add": ("(a, 1, torch.tensor([[2, 0], [1, 1]]), b)", "{}"),
    "scatter_reduce": ("(a, 1, torch.tensor([[2, 0], [1, 1]]), b, 'amax')", "{}"),
    "masked_fill": ("(a, mask, 1.5)", "{}"),
    "pixel_shuffle": ("(bt4, 2)", "{}"),
    # torch.linalg
    "linalg.vector_norm": ("(a,)", "dict(dim=1)"),
    "linalg.norm": ("(a,)", "dict(dim=1)"),
    "linalg.matrix_norm": ("(m,)", "{}"),
    # torch.special
    "special.xlogy": ("(a, p)", "{}"),
    "special.xlog1py": ("(a, p)", "{}"),
    # factories
    "arange": ("(5,)", "{}"),
    "arange_float": ("(0.0, 1.0, 0.25)", "{}"),
    "linspace": ("(0.0, 1.0, 5)", "{}"),
    "logspace": ("(0.0, 1.0, 5)", "{}"),
    "zeros": ("(2, 3)", "{}"),
    "ones": ("(2, 3)", "{}"),
    "empty": ("(2, 3)", "{}"),
    "full": ("((2, 3), 1.5)", "{}"),
    "eye": ("(3,)", "{}"),
    "zeros_like": ("(a,)", "{}"),
    "ones_like": ("(a,)", "{}"),
    "empty_like": ("(a,)", "{}"),
    "full_like": ("(a, 1.5)", "{}"),
    # samplers (the seed is set before each call)
    "rand": ("(2, 3)", "{}"),
    "randn": ("(2, 3)", "{}"),
    "randint": ("(0, 10, (2, 3))", "{}"),
    "randperm": ("(5,)", "{}"),
    "rand_like": ("(a,)", "{}"),
    "randn_like": ("(a,)", "{}"),
    "normal": ("(a, p)", "{}"),
    "bernoulli": ("(prob,)", "{}"),
    "multinomial": ("(prob, 2)", "{}"),
}


def out_inputs(tm: Any) -> dict[str, Any]:
    """The tensors the ``OUT_OPS`` expressions use (deterministic, float32 unless named)."""

    def grid(*shape: int, scale: float = 0.37, shift: float = 1.3) -> Any:
        n = 1
        for s_ in shape:
            n *= s_
        return ((tm.arange(float(n)) * scale + shift) % 2.1 - 1.05).reshape(shape)

    return {
        "a": grid(2, 3),
        "b": grid(2, 3, scale=0.53, shift=0.2),
        "p": grid(2, 3).abs() + 0.25,
        "prob": grid(2, 3).abs() * 0.4 + 0.1,
        "m": grid(3, 4, scale=0.29),
        "c": grid(2, 4, scale=0.61),
        "v3": grid(3, scale=0.7),
        "v4": grid(4, scale=0.7),
        "bt": grid(2, 3, 4),
        "bt2": grid(2, 4, 5, scale=0.41),
        "bt3": grid(2, 3, 5, scale=0.23),
        "bt4": grid(1, 4, 2, 3),
        "i": tm.arange(6).reshape(2, 3),
        "j": tm.arange(6).reshape(2, 3) * 3 + 1,
        "mask": (grid(2, 3) > 0),
    }


def op_of(tm: Any, name: str) -> Any:
    """The function an ``OUT_OPS`` entry calls (``max_all`` -> ``torch.max``)."""
    for suffix in ("_all", "_binary", "_alpha", "_float"):
        if name.endswith(suffix) and not hasattr(tm, name):
            name = name[: -len(suffix)]
    fn = tm
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


def _call(tm: Any, name: str, out: Any = None, **extra: Any) -> Any:
    """Runs one ``OUT_OPS`` entry (with ``out=`` unless ``out`` is None)."""
    scope = {"torch": tm, **out_inputs(tm)}
    for key, value in extra.items():
        scope[key] = value
    args = eval(OUT_OPS[name][0], scope)  # noqa: S307 -- the table's own expressions
    kwargs = eval(OUT_OPS[name][1], scope)  # noqa: S307
    if "grad_input" in extra:
        args = (extra["grad_input"], *args[1:])
    tm.manual_seed(0)
    fn = op_of(tm, name)
    return fn(*args, **kwargs) if out is None else fn(*args, **kwargs, out=out)


def _outs(tm: Any, result: Any, make: Any) -> Any:
    """An ``out`` for ``result``: ``make(shape, dtype)`` per tensor (a tuple for tuples)."""
    if isinstance(result, tuple):
        return tuple(make(list(r.shape), r.dtype) for r in result)
    return make(list(result.shape), result.dtype)


def _attempt(fn: Any) -> dict[str, Any]:
    """Runs ``fn``, recording its warnings and error (type and message)."""
    rec: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec["result"] = fn()
        except Exception as error:  # noqa: BLE001 -- PyTorch's error is the expectation
            rec["error"] = {"type": type(error).__name__, "message": str(error)}
    rec["warnings"] = [str(w.message).split(" (Triggered internally")[0] for w in caught]
    return rec


def _dtype_name(dtype: Any) -> str:
    return str(dtype).rpartition(".")[2]


def _other_dtype(tm: Any, dtype: Any, up: bool) -> Any:
    """A different out dtype: a wider one (``up``), or one the result can't be cast to."""
    if up:
        return tm.float64 if dtype != tm.float64 else tm.float32
    if dtype.is_floating_point:
        return tm.int64
    return tm.bool if dtype != tm.bool else None


def out_case(tm: Any, name: str) -> dict[str, Any]:
    """PyTorch's ``out=`` behaviour for one op (the test runs the same with rustgrad):

    ``accepts_out``; ``result`` (``tuple`` or not, per tensor ``shape`` and ``dtype``);
    ``fresh``: out = empty(0) tensors of the result's dtypes (``same``: the return is the
    out object, or a tuple of them; ``warnings``; ``version_bumped``); ``resize``: out of
    a wrong shape with elements (warnings, final shapes); ``dtype_up`` / ``dtype_down``:
    the first out tensor of another dtype (error or the out's dtype after);
    ``requires_grad``: the first input requires grad (error), and ``out_requires_grad``;
    ``transposed``: a transposed out of the right 2-D shape (its strides after).
    """
    rec: dict[str, Any] = {"name": name, "args": OUT_OPS[name][0], "kwargs": OUT_OPS[name][1]}
    plain = _call(tm, name)
    rec["result"] = {
        "tuple": isinstance(plain, tuple),
        "shapes": [list(r.shape) for r in (plain if isinstance(plain, tuple) else (plain,))],
        "dtypes": [_dtype_name(r.dtype) for r in (plain if isinstance(plain, tuple) else (plain,))],
    }
    fresh_out = _outs(tm, plain, lambda s, d: tm.empty(0, dtype=d))
    first = fresh_out[0] if isinstance(fresh_out, tuple) else fresh_out
    version = first._version
    got = _attempt(lambda: _call(tm, name, out=fresh_out))
    rec["accepts_out"] = "error" not in got
    if not rec["accepts_out"]:
        rec["error"] = got["error"]
        return rec
    returned = got.pop("result")
    if isinstance(fresh_out, tuple):
        same = all(x is y for x, y in zip(returned, fresh_out, strict=True))
    else:
        same = returned is fresh_out
    rec["fresh"] = {**got, "same": same, "version_bumped": first._version > version}

    def wrong(shape: list[int], dtype: Any) -> Any:
        n = 1
        for s_ in shape:
            n *= s_
        return tm.zeros(n + 1 if n != 6 else 7, dtype=dtype)

    resize_out = _outs(tm, plain, wrong)
    got = _attempt(lambda: _call(tm, name, out=resize_out))
    got.pop("result", None)
    rec["resize"] = {
        **got,
        "shapes": [
            list(o.shape) for o in (resize_out if isinstance(resize_out, tuple) else (resize_out,))
        ],
    }
    for key, up in (("dtype_up", True), ("dtype_down", False)):
        first_dtype = plain[0].dtype if isinstance(plain, tuple) else plain.dtype
        other = _other_dtype(tm, first_dtype, up)
        if other is None:
            continue
        outs = _outs(tm, plain, lambda s, d: tm.empty(0, dtype=d))
        if isinstance(outs, tuple):
            outs = (tm.empty(0, dtype=other), *outs[1:])
            target = outs[0]
        else:
            outs = tm.empty(0, dtype=other)
            target = outs
        got = _attempt(lambda outs=outs: _call(tm, name, out=outs))
        got.pop("result", None)
        rec[key] = {
            **got,
            "out_dtype": _dtype_name(other),
            "dtype_after": _dtype_name(target.dtype),
        }
    scope = out_inputs(tm)
    args = eval(OUT_OPS[name][0], {"torch": tm, **scope})  # noqa: S307
    if args and isinstance(args[0], tm.Tensor) and args[0].is_floating_point():
        grad_input = args[0].detach().clone().requires_grad_()
        outs = _outs(tm, plain, lambda s, d: tm.empty(0, dtype=d))
        got = _attempt(lambda: _call(tm, name, out=outs, grad_input=grad_input))
        got.pop("result", None)
        rec["requires_grad"] = got
    if not isinstance(plain, tuple) and plain.is_floating_point():
        outs = tm.empty(0, dtype=plain.dtype).requires_grad_()
        got = _attempt(lambda: _call(tm, name, out=outs))
        got.pop("result", None)
        rec["out_requires_grad"] = got
    if not isinstance(plain, tuple) and plain.dim() == 2:
        rows, cols = plain.shape
        outs = tm.zeros(cols, rows, dtype=plain.dtype).t()
        got = _attempt(lambda: _call(tm, name, out=outs))
        got.pop("result", None)
        rec["transposed"] = {**got, "stride": list(outs.stride())}
    return rec


def run_range(torch_module: Any, kind: str, index: str) -> dict[str, Any]:
    """One range-index case with ``torch_module`` (PyTorch here; rustgrad in the test)."""
    tm = torch_module
    x = tm.arange(12.0, dtype=tm.float64).reshape(3, 4).requires_grad_()
    scope = {"torch": tm, "np": np, "collections": collections, "x": x}
    out: dict[str, Any] = {}
    caught = _record_warnings()
    try:
        key = eval(index, scope)  # noqa: S307 -- the case's own expression
        if kind == "get":
            r = x[key]
            w = 1 + tm.arange(float(r.numel()), dtype=tm.float64).reshape(r.shape)
            (r * w).sum().backward()
            out["shape"] = list(r.shape)
            out["values"] = r.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
        else:
            with tm.no_grad():
                shape = x[key].shape
            y = x * 1
            if kind == "set":
                n = 1
                for s in shape:
                    n *= s
                v = (100 + tm.arange(float(n), dtype=tm.float64)).reshape(shape)
                v.requires_grad_()
                y[key] = v
            else:
                v = None
                y[key] = 7
            big_w = (1 + tm.arange(12.0, dtype=tm.float64)).reshape(3, 4)
            (y * big_w).sum().backward()
            out["shape"] = list(y.shape)
            out["values"] = y.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
            if v is not None:
                out["grad_v"] = v.grad.reshape(-1).tolist()
    except Exception as error:  # noqa: BLE001 -- PyTorch's error is the expectation
        out = {"error": {"type": type(error).__name__, "message": str(error)}}
    finally:
        caught.__exit__(None, None, None)
    out["warnings"] = [str(w.message).split(" (Triggered internally")[0] for w in caught.log]
    return out


class _record_warnings(warnings.catch_warnings):  # noqa: N801 -- used like the function
    """``catch_warnings(record=True)`` entered at once, keeping its list as ``log``."""

    def __init__(self) -> None:
        super().__init__(record=True)
        self.log = self.__enter__()
        warnings.simplefilter("always")


def range_cases() -> list[dict[str, Any]]:
    """Every range-index case."""
    return [
        {"kind": kind, "index": index, **run_range(torch, kind, index)}
        for index in RANGE_INDICES
        for kind in ("get", "set", "set_number")
    ]


def main() -> None:
    """Writes the file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = {
            "range_index": range_cases(),
            "out": [out_case(torch, name) for name in OUT_OPS],
        }
    OUT.write_text(json.dumps(data, indent=None) + "\n")
    print(f"wrote {len(data['range_index'])} range and {len(data['out'])} out cases to {OUT}")


if __name__ == "__main__":
    main()
