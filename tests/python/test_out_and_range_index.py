"""``range`` objects and other sequences of ints as indices (reads, writes, gradients)
and ``out=`` arguments, against PyTorch 2.15's vectors
(tests/vectors/out_and_range_index.json, written by generate_out_and_range_index.py;
Note [Index scalars], Note [out= arguments])."""

from __future__ import annotations

import collections
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
DATA: dict[str, Any] = json.loads((VECTORS / "out_and_range_index.json").read_text())
RANGE_CASES: list[dict[str, Any]] = DATA["range_index"]


def _run_range(kind: str, index: str) -> dict[str, Any]:
    """One case, as generate_out_and_range_index.py's ``run_range`` does it."""
    tm = rustgrad
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
            v = None
            if kind == "set":
                v = (100 + tm.arange(float(shape.numel()), dtype=tm.float64)).reshape(shape)
                v.requires_grad_()
                y[key] = v
            else:
                y[key] = 7
            big_w = (1 + tm.arange(12.0, dtype=tm.float64)).reshape(3, 4)
            (y * big_w).sum().backward()
            out["shape"] = list(y.shape)
            out["values"] = y.detach().reshape(-1).tolist()
            out["grad_x"] = x.grad.reshape(-1).tolist()
            if v is not None:
                out["grad_v"] = v.grad.reshape(-1).tolist()
    except (IndexError, TypeError, RuntimeError) as error:
        out = {"error": {"type": type(error).__name__, "message": str(error)}}
    finally:
        caught.__exit__(None, None, None)
    out["warnings"] = [str(w.message) for w in caught.log]
    return out


class _record_warnings(warnings.catch_warnings):  # noqa: N801 -- used like the function
    """``catch_warnings(record=True)`` entered at once, keeping its list as ``log``."""

    def __init__(self) -> None:
        super().__init__(record=True)
        self.log = self.__enter__()
        warnings.simplefilter("always")


@pytest.mark.parametrize(
    "case", RANGE_CASES, ids=[f"{c['kind']}-{c['index']}" for c in RANGE_CASES]
)
def test_range_index_matches_pytorch(case: dict[str, Any]) -> None:
    got = _run_range(case["kind"], case["index"])
    if "error" in case:
        assert "error" in got, got
        assert got["error"]["type"] == case["error"]["type"]
        # PyTorch names the index's own dim in its bound message; only the phrase counts.
        assert case["error"]["message"].split(" for dimension")[0] in got["error"]["message"]
        assert got["warnings"] == case["warnings"]
        return
    assert "error" not in got, got
    for key in ("shape", "values", "grad_x", "grad_v", "warnings"):
        assert got.get(key) == case.get(key), key


def test_range_cases_cover_reads_writes_and_errors() -> None:
    kinds = {c["kind"] for c in RANGE_CASES}
    assert kinds == {"get", "set", "set_number"}
    assert any("error" in c for c in RANGE_CASES)
    assert sum("grad_v" in c for c in RANGE_CASES) >= 20


# ---------------------------------------------------------------------------------------
# out= (Note [out= arguments])

OUT_CASES: list[dict[str, Any]] = DATA["out"]
#: The committed list: every op PyTorch's vectors say takes ``out=``.
OUT_OP_NAMES = sorted(c["name"] for c in OUT_CASES if c["accepts_out"])
#: Messages compared whole (PyTorch's generic ones); for the others the type is.
_STANDARD = (
    "result type ",
    "Expected out tensor to have dtype ",
    "torch.cat(): input types",
    "functions with out=...",
)


def _inputs() -> dict[str, Any]:
    """generate_out_and_range_index.py's ``out_inputs``, with rustgrad."""
    tm = rustgrad

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


def _fn(name: str) -> Any:
    for suffix in ("_all", "_binary", "_alpha", "_float"):
        if name.endswith(suffix) and not hasattr(rustgrad, name):
            name = name[: -len(suffix)]
    fn = rustgrad
    for part in name.split("."):
        fn = getattr(fn, part)
    return fn


def _call(case: dict[str, Any], out: Any = None, grad_input: Any = None) -> Any:
    scope = {"torch": rustgrad, **_inputs()}
    args = eval(case["args"], scope)  # noqa: S307 -- the vectors' own expressions
    kwargs = eval(case["kwargs"], scope)  # noqa: S307
    if grad_input is not None:
        args = (grad_input, *args[1:])
    rustgrad.manual_seed(0)
    fn = _fn(case["name"])
    return fn(*args, **kwargs) if out is None else fn(*args, **kwargs, out=out)


def _attempt(fn: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            rec["result"] = fn()
        except (RuntimeError, TypeError, ValueError) as error:
            rec["error"] = {"type": type(error).__name__, "message": str(error)}
    rec["warnings"] = [str(w.message) for w in caught]
    return rec


def _same_outcome(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Error or not as PyTorch, the same exception type, PyTorch's whole message where it
    is one of the generic ones, and the same warnings."""
    assert ("error" in got) == ("error" in want), (got.get("error"), want.get("error"))
    if "error" in want:
        # NotImplementedError is a RuntimeError: the two stand for each other here.
        family = {"RuntimeError", "NotImplementedError"}
        assert (
            got["error"]["type"] == want["error"]["type"]
            or {
                got["error"]["type"],
                want["error"]["type"],
            }
            <= family
        ), got
        if (
            want["error"]["message"].startswith(_STANDARD)
            or "functions with out=" in (want["error"]["message"])
        ):
            assert got["error"]["message"] == want["error"]["message"]
    assert got["warnings"] == want["warnings"]


def _same_values(x: Any, y: Any) -> bool:
    """Equal values, NaN equal to NaN."""
    return (
        bool(((x == y) | (x.isnan() & y.isnan())).all())
        if y.is_floating_point()
        else bool((x == y).all())
    )


def _flat(r: Any) -> list[Any]:
    return list(r) if isinstance(r, tuple) else [r]


def _empty_outs(plain: Any) -> Any:
    outs = [rustgrad.empty(0, dtype=t.dtype) for t in _flat(plain)]
    return tuple(outs) if isinstance(plain, tuple) else outs[0]


@pytest.mark.parametrize("case", OUT_CASES, ids=[c["name"] for c in OUT_CASES])
def test_out_matches_pytorch(case: dict[str, Any]) -> None:
    plain = _call(case)
    want = case["result"]
    assert isinstance(plain, tuple) == want["tuple"]
    assert [list(t.shape) for t in _flat(plain)] == want["shapes"]
    assert [str(t.dtype).rpartition(".")[2] for t in _flat(plain)] == want["dtypes"]
    if not case["accepts_out"]:
        with pytest.raises(TypeError):
            _call(case, out=_empty_outs(plain))
        return
    # A fresh out: the same values as without out=, the out object returned, no warning.
    outs = _empty_outs(plain)
    first = _flat(outs)[0]
    version = first._version
    got = _attempt(lambda: _call(case, out=outs))
    _same_outcome(got, case["fresh"])
    returned = got["result"]
    assert all(x is y for x, y in zip(_flat(returned), _flat(outs), strict=True))
    if isinstance(outs, tuple):
        assert type(returned).__name__ == type(plain).__name__
    assert first._version > version
    for o, p in zip(_flat(outs), _flat(plain), strict=True):
        assert o.dtype == p.dtype and o.shape == p.shape
        assert _same_values(o, p) or case["name"] == "empty"
    # A wrong shape with elements: resized, with PyTorch's warning (or none).
    wrong = [
        rustgrad.zeros(t.numel() + 1 if t.numel() != 6 else 7, dtype=t.dtype) for t in _flat(plain)
    ]
    outs = tuple(wrong) if isinstance(plain, tuple) else wrong[0]
    got = _attempt(lambda: _call(case, out=outs))
    _same_outcome(got, case["resize"])
    assert [list(o.shape) for o in wrong] == case["resize"]["shapes"]
    # Another dtype for the first out tensor.
    for key in ("dtype_up", "dtype_down"):
        if key not in case:
            continue
        other = getattr(rustgrad, case[key]["out_dtype"])
        outs_list = [rustgrad.empty(0, dtype=t.dtype) for t in _flat(plain)]
        outs_list[0] = rustgrad.empty(0, dtype=other)
        outs = tuple(outs_list) if isinstance(plain, tuple) else outs_list[0]
        got = _attempt(lambda outs=outs: _call(case, out=outs))
        _same_outcome(got, case[key])
        assert str(outs_list[0].dtype).rpartition(".")[2] == case[key]["dtype_after"]
    # An input that requires grad (grad mode on), then the same under no_grad.
    if "requires_grad" in case:
        scope = {"torch": rustgrad, **_inputs()}
        x = eval(case["args"], scope)[0].detach().clone().requires_grad_()  # noqa: S307
        got = _attempt(lambda: _call(case, out=_empty_outs(plain), grad_input=x))
        _same_outcome(got, case["requires_grad"])
        with rustgrad.no_grad():
            result = _call(case, out=_empty_outs(plain), grad_input=x)
        assert not any(t.requires_grad for t in _flat(result))
    if "out_requires_grad" in case:
        outs = rustgrad.empty(0, dtype=plain.dtype).requires_grad_()
        got = _attempt(lambda: _call(case, out=outs))
        assert ("error" in got) == ("error" in case["out_requires_grad"])
        assert got.get("error", {}).get("type") == case["out_requires_grad"].get("error", {}).get(
            "type"
        )
    # A transposed (non-contiguous) out of the right shape is written through.
    if "transposed" in case:
        rows, cols = plain.shape
        base = rustgrad.zeros(cols, rows, dtype=plain.dtype)
        outs = base.t()
        got = _attempt(lambda: _call(case, out=outs))
        _same_outcome(got, case["transposed"])
        assert list(outs.stride()) == case["transposed"]["stride"]
        if case["name"] != "empty":
            assert _same_values(base.t(), plain)


def test_committed_out_list_takes_out() -> None:
    """Fails if an op of the committed list stops taking ``out=`` (or loses the wrapper)."""
    from rustgrad import _out

    assert len(OUT_OP_NAMES) >= 150
    for case in OUT_CASES:
        if not case["accepts_out"]:
            continue
        fn = _fn(case["name"])
        assert getattr(fn, "__rustgrad_out__", None) is not None, case["name"]
        plain = _call(case)
        outs = _empty_outs(plain)
        assert all(
            x is y for x, y in zip(_flat(_call(case, out=outs)), _flat(outs), strict=True)
        ), case["name"]
    top = {n for n in OUT_OP_NAMES if "." not in n}
    assert {_fn(n).__name__ for n in top} <= set(_out.OUT_OPS)
    linalg = {n.split(".")[1] for n in OUT_OP_NAMES if n.startswith("linalg.")}
    assert linalg == set(_out.LINALG_OUT_OPS)
    special = {n.split(".")[1] for n in OUT_OP_NAMES if n.startswith("special.")}
    assert special == set(_out.SPECIAL_OUT_OPS)


def test_wrapped_functions_pickle_by_name() -> None:
    import pickle

    for name in ("tanh", "add", "arange", "max", "linalg.vector_norm", "special.xlog1py"):
        fn = _fn(name)
        assert pickle.loads(pickle.dumps(fn)) is fn


def test_out_rejects_what_pytorch_rejects() -> None:
    a = rustgrad.ones(2, 3)
    with pytest.raises(TypeError, match="argument 'out' must be Tensor, not list"):
        rustgrad.add(a, a, out=[1])
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 1"):
        rustgrad.max(a, 1, out=(rustgrad.empty(0),))
    with pytest.raises(RuntimeError, match="does not match dtype of out parameter"):
        rustgrad.zeros(2, dtype=rustgrad.float64, out=rustgrad.empty(0, dtype=rustgrad.int32))
    # The aliasing case: out is an input.
    x = rustgrad.tensor([1.0, 2.0])
    assert rustgrad.mul(x, x, out=x).tolist() == [1.0, 4.0]
