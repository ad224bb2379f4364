"""Type promotion with Python numbers and 0-d tensors against PyTorch (issue 19).

Reads tests/vectors/scalar_promotion.json (written by generate_scalar_promotion.py): each
case is an expression over a tensor ``a`` and a number or 0-d tensor ``b``; rustgrad must
give PyTorch's dtype and values, or its exception type and message (Note [Wrapped
scalars]): a number joins an integer op converted to the result dtype (``uint8 + 300``
adds 44), an integer true division exactly (``int16 / 32768``), ``pow`` and ``where``
check its range, ``clamp`` saturates or refuses it; a 0-d float32 operand of a
bfloat16 op is rounded to bfloat16 first, except as the second operand of mul and div.
"""

from __future__ import annotations

import builtins
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch
from fuzz_programs import Generator, Model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "scalar_promotion.json").read_text())
INPUTS: dict[str, list[Any]] = VECTORS["inputs"]
GROUPS: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
for _case in VECTORS["cases"]:
    GROUPS[(_case["a"], _case["expr"])].append(_case)

# Results of transcendental functions may differ from PyTorch's in the last bit (and on
# the 16-bit floats PyTorch's xlogy rounds log(b) to the dtype first, its smooth_l1
# kernel does not round the difference), and so may floor
# divisions on the 16-bit floats (PyTorch's vectorised and scalar kernels round
# differently: `5.2922 // float16 0.001` is 5292 or 5288 depending on the length).
APPROXIMATE = ("atan2", "hypot", "xlogy", "**", "//", "floor", "smooth_l1")
HALF_ULP = {"float16": 2.0**-9, "bfloat16": 2.0**-6}


def _decode(value: Any) -> Any:
    if isinstance(value, str):
        return float(value)
    return value


def _operand(spec: dict[str, Any]) -> Any:
    if "values" in spec:
        values = [_decode(v) for v in spec["values"]]
        return torch.tensor(values, dtype=getattr(torch, spec["dtype"]))
    value = _decode(spec["value"])
    if spec["dtype"] is None:
        return value
    return torch.tensor(value, dtype=getattr(torch, spec["dtype"]))


def _check(case: dict[str, Any]) -> str | None:
    """None when rustgrad agrees with PyTorch on `case`, else what differs."""
    a = torch.tensor([_decode(v) for v in INPUTS[case["a"]]], dtype=getattr(torch, case["a"]))
    b = _operand(case["b"])
    where = f"{case['expr']} with a {case['a']}, b = {case['b']}"
    try:
        out = eval(case["expr"], {"torch": torch}, {"a": a, "b": b})  # noqa: S307
    except Exception as e:  # noqa: BLE001
        if "error" not in case:
            return f"{where}: raised {type(e).__name__}: {e}"
        if not isinstance(e, getattr(builtins, case["error"])) or str(e) != case["message"]:
            want = f"{case['error']}: {case['message']!r}"
            return f"{where}: raised {type(e).__name__}: {e!r}, want {want}"
        return None
    if "error" in case:
        return f"{where}: gave {out}, want {case['error']}: {case['message']}"
    got_dtype = str(out.dtype).removeprefix("torch.")
    if got_dtype != case["dtype"]:
        return f"{where}: dtype {got_dtype}, want {case['dtype']}"
    got = out.double().tolist() if out.dtype.is_floating_point else out.tolist()
    got = got if isinstance(got, list) else [got]
    want = [_decode(v) for v in case["values"]]
    approximate = any(s in case["expr"] for s in APPROXIMATE) and out.dtype.is_floating_point
    for g, w in zip(got, want, strict=True):
        if isinstance(w, float) and math.isnan(w):
            ok = isinstance(g, float) and math.isnan(g)
        elif approximate:
            tol = HALF_ULP.get(got_dtype, 1e-12 if got_dtype == "float64" else 1e-6)
            ok = g == w or math.isclose(g, w, rel_tol=tol)
        else:
            ok = g == w
        if not ok:
            return f"{where}: {got}, want {want}"
    return None


@pytest.mark.parametrize("group", sorted(GROUPS), ids=lambda g: f"{g[0]}:{g[1]}")
def test_scalar_promotion_matches_pytorch(group: tuple[str, str]) -> None:
    failures = [f for f in map(_check, GROUPS[group]) if f is not None]
    assert not failures, "\n".join(failures[:8])


def test_the_grid_covers_the_issue_cases() -> None:
    exprs = {expr for _, expr in GROUPS}
    assert len(VECTORS["cases"]) > 5000
    for expr in ("a / b", "a.clamp(min=b)", "a ** b", "torch.true_divide(a, b)", "b / a"):
        assert expr in exprs
    assert {"uint8", "int8", "int16", "int32", "int64", "bool", "float16", "bfloat16"} <= {
        a for a, _ in GROUPS
    }


@settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=400,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(st.data())
def test_fuzzer_steps_with_numbers_on_narrow_dtypes_match_its_model(data):
    """fuzz_programs.py's steps over uint8 ... int64, bool, float16 and bfloat16 tensors
    with out-of-range numbers and 0-d float operands agree with its model of PyTorch."""
    model = Model(grad_mode=False)
    gen = Generator(data.draw, model)
    for _ in range(4):
        gen.narrow_scalar()


def test_a_saved_number_stays_a_wrapped_number_outside_the_hooks():
    # PyTorch: `(x * 2.5).grad_fn._saved_other` is tensor(2.5, dtype=torch.float64),
    # which still promotes as a number, and saved-tensor hooks never see it.
    x = torch.ones(2, requires_grad=True)
    other = (x * 2.5).grad_fn._saved_other
    assert other.dtype == torch.float64 and other.item() == 2.5
    assert (other * torch.ones(2)).dtype == torch.float32
    assert (torch.tensor(1.0, dtype=torch.float16) + other).dtype == torch.float16
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        (x * 2.5).sum().backward()
    assert packed == []
    assert x.grad.tolist() == [2.5, 2.5]


def test_issue_examples():
    # Issue 19 items 4, 5 and 9, with PyTorch 2.15's results.
    i16 = torch.tensor([16384, -8192, 32767], dtype=torch.int16)
    assert (i16 / 32768).tolist() == [0.5, -0.25, 0.999969482421875]
    assert (torch.tensor([128, 255], dtype=torch.uint8) / 256).tolist() == [0.5, 0.99609375]
    u8 = torch.tensor([1, 2], dtype=torch.uint8)
    assert u8.clamp(min=-1).tolist() == [1, 2]
    assert u8.clamp(max=300).tolist() == [1, 2]
    assert (-3 / u8).tolist() == [-3.0, -1.5]
    assert torch.tensor([1, -2], dtype=torch.int8).clamp(-1000, 1000).tolist() == [1, -2]
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t without overflow"):
        u8**300
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t without overflow"):
        torch.where(torch.tensor([True, False]), u8, 300)
    bf = torch.tensor([5.28125, 100.0], dtype=torch.bfloat16)
    assert (bf - torch.tensor(5.2922)).tolist() == [0.0, 94.5]
    assert (bf % torch.tensor(5.2922)).tolist() == [0.0, 4.9375]
    loss = torch.nn.functional.mse_loss(torch.tensor([1.0, 2.0]), torch.tensor([1, 3]))
    assert loss.dtype == torch.float32 and loss.item() == 0.5
    b = torch.tensor([True, False])
    with pytest.raises(NotImplementedError, match="\"pow\" not implemented for 'Bool'"):
        b**b


def test_an_int_beyond_int64_is_an_overflow_error():
    # PyTorch 2.15 raises OverflowError ("int too big to convert") for a Python int that
    # int64 cannot hold, where it expects a number (not TypeError / NotImplemented).
    u = torch.tensor([1, 2], dtype=torch.uint8)
    m = torch.tensor([True, False])
    for f in (
        lambda: u + 2**64,
        lambda: 2**64 - u,
        lambda: u == 2**70,
        lambda: u.clamp(min=2**64),
        lambda: torch.where(m, u, 2**64),
        lambda: u.mul(2**64),
        lambda: u / 2**64,
        lambda: u**2**64,
    ):
        with pytest.raises(OverflowError, match="int too big to convert"):
            f()
    with pytest.raises(OverflowError):
        u.add(-(2**63) - 1)


def test_subtracting_a_bool_with_alpha_is_refused():
    # PyTorch refuses the bool operand before alpha scales it (also in place).
    u = torch.tensor([1, 2], dtype=torch.uint8)
    for f in (lambda: u.sub(True, alpha=2), lambda: u.clone().sub_(True, alpha=2)):
        with pytest.raises(NotImplementedError, match="Subtraction, the `-` operator"):
            f()
    assert u.add(True, alpha=2).tolist() == [3, 4]
