"""float16 / bfloat16 reductions and fused ops against PyTorch (issue 19).

Reads tests/vectors/half_op_math.json (written by generate_half_op_math.py). PyTorch
computes ``mean``, ``var`` / ``std``, vector norms, the losses' ``'mean'``, ``lerp``,
``addcmul``, ``addcdiv`` and the ``addmm`` family of the 16-bit floats in float32 (the
op-math type; a number argument in float32) and rounds once, so a mean of large float16
values is finite and ``bfloat16.lerp(end, 0.3337)`` does not round the weight;
``add`` / ``sub`` with ``alpha`` round ``alpha`` and each step (Note [Reductions, scans
and sorts], Note [Wrapped scalars]). The results must be PyTorch's bit for bit, except
the transcendental steps of the norms and of std, which may differ by one ulp.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch
import rustgrad.nn.functional as F

VECTORS = json.loads((Path(__file__).parents[1] / "vectors" / "half_op_math.json").read_text())
CASES: list[dict[str, Any]] = VECTORS["cases"]
ULP = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
# A root (sqrt or x ** (1 / p)) is the last step: PyTorch's and Rust's may round apart.
APPROXIMATE = ("norm", "std")


def _decode(value: Any) -> float:
    return float(value) if isinstance(value, str) else value


def _tensor(spec: dict[str, Any]) -> torch.Tensor:
    values = [_decode(v) for v in spec["values"]]
    return torch.tensor(values, dtype=getattr(torch, spec["dtype"])).reshape(spec["shape"])


def _same(got: float, want: float, tol: float) -> bool:
    if math.isnan(want) or math.isinf(want):
        return got == want or (math.isnan(got) and math.isnan(want))
    return abs(got - want) <= tol * abs(want)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['dtype']}-{c['expr']}" for c in CASES])
def test_matches_pytorch(case: dict[str, Any]) -> None:
    env = {k: _tensor(v) for k, v in VECTORS["inputs"][case["dtype"]].items()}
    out = eval(case["expr"], {"torch": torch, "F": F}, env)  # noqa: S307
    outs = list(out) if isinstance(out, tuple) else [out]
    assert len(outs) == len(case["outputs"])
    tol = ULP[case["dtype"]] if any(s in case["expr"] for s in APPROXIMATE) else 0.0
    for got, want in zip(outs, case["outputs"], strict=True):
        assert str(got.dtype).removeprefix("torch.") == want["dtype"]
        assert list(got.shape) == want["shape"]
        values = got.double().flatten().tolist()
        expected = [_decode(v) for v in want["values"]]
        pairs = enumerate(zip(values, expected, strict=True))
        bad = [(i, g, w) for i, (g, w) in pairs if not _same(g, w, tol)]
        assert not bad, f"{case['expr']}: (index, got, PyTorch) {bad[:5]}"


def test_half_mean_of_large_values_is_finite() -> None:
    """The issue's example: the float16 sum overflows, PyTorch's mean does not."""
    t = torch.tensor([65504.0, 65504.0], dtype=torch.float16)
    assert t.mean().item() == 65504.0
    assert t.sum().item() == math.inf
