"""half_op_math.json: float16 / bfloat16 reductions and fused ops in op-math (issue 19).

Run with ``.torch-venv/bin/python tests/vectors/generate_half_op_math.py`` from the
repository root. PyTorch computes ``mean``, ``var`` / ``std``, ``linalg.vector_norm``, the
losses' ``'mean'`` reduction, ``lerp``, ``addcmul``, ``addcdiv`` and the ``addmm`` family
of float16 / bfloat16 tensors in float32 (its op-math type), with a number argument in
float32, and rounds once; ``add`` / ``sub`` with ``alpha`` instead round ``alpha`` and
each step to the dtype. Each case is a Python expression over the tensors of
``inputs[dtype]`` (``torch`` and ``F`` = ``torch.nn.functional`` bound by the reader), with the
dtype, shape and values of every output PyTorch gives; read by
``tests/python/test_half_op_math.py``. Deterministic: the inputs are fixed formulas.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

OUT = Path(__file__).with_name("half_op_math.json")
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def inputs(dtype: torch.dtype) -> dict[str, torch.Tensor]:
    """The operands: sums of ``x`` overflow float16, its means do not."""
    k = torch.arange(60, dtype=torch.float64)
    x = ((k * 37) % 61 * 1234.5 / 7 + 3.3).reshape(6, 10)
    y = ((k * 11) % 53 * 97.25 / 3 - 400.7).reshape(6, 10)
    return {
        "x": x.to(dtype),
        "y": y.to(dtype),
        "xn": torch.where(k.reshape(6, 10) % 7 == 3, math.nan, x).to(dtype),
        "big": torch.tensor([40000.0, 40000.0, 60000.0, 65504.0], dtype=dtype),
        "a": torch.tensor([5.28125, 100.0, -3.3, 0.017, 250.5, -77.7], dtype=dtype),
        "b": torch.tensor([1.0, 2.0, 7.3, -0.4, 3000.0, 1.1], dtype=dtype),
        "c": torch.tensor([3.1, 7.3, -2.2, 0.3, 11.0, 9.9], dtype=dtype),
        "w": torch.tensor([0.3337, 0.7337, -0.2, 1.0, 0.5, 0.49], dtype=dtype),
        "m": torch.tensor([[5.28125, 100.0, 0.3], [1.5, 3.3, -7.1]], dtype=dtype),
        "n": torch.tensor([[2.2, -1.3], [0.7, 5.5], [9.1, 0.05]], dtype=dtype),
        "p": torch.tensor([[5.28125, -3.3], [1.5, 31.3]], dtype=dtype),
        "v3": torch.tensor([0.7, 5.5, -9.1], dtype=dtype),
    }


EXPRS = [
    # Reductions: float32 accumulation and division, one rounding.
    "x.mean()",
    "x.mean(0)",
    "x.mean(1)",
    "x.mean((0, 1))",
    "x.mean(1, keepdim=True)",
    "big.mean()",
    "torch.mean(x, -1)",
    "x.sum()",
    "x.sum(1)",
    "x.var()",
    "x.var(1)",
    "x.var(0, correction=0)",
    "x.std()",
    "x.std(1)",
    "big.std()",
    "torch.var_mean(x, 1)",
    "torch.std_mean(x, 0)",
    "torch.std_mean(big)",
    "xn.nanmean(1)",
    "xn.nansum(1)",
    "x.norm()",
    "x.norm(dim=1)",
    "big.norm()",
    "torch.linalg.vector_norm(x, 1, dim=0)",
    "torch.linalg.vector_norm(x, 3)",
    "torch.linalg.vector_norm(x, 0.5, dim=1)",
    "torch.linalg.vector_norm(x, float('inf'), dim=1)",
    "F.l1_loss(x, y)",
    "F.mse_loss(x / 64, y / 64)",
    "F.smooth_l1_loss(x, y)",
    "F.huber_loss(x, y, delta=2.5)",
    "F.l1_loss(x, y, reduction='sum')",
    # Fused ops: float32 with the number in float32, one rounding.
    "a.lerp(b, 0.3337)",
    "a.lerp(b, 0.7337)",
    "a.lerp(b, -1.3)",
    "torch.lerp(a, b, w)",
    "a.lerp(b, torch.tensor(0.3337))",
    "a.clone().lerp_(b, 0.3337)",
    "a.addcmul(a, c, value=5.2922)",
    "a.addcmul(b, c)",
    "a.addcmul(b, c, value=-3)",
    "torch.addcmul(a, a, a, value=5.2922)",
    "a.clone().addcmul_(b, c, value=0.3337)",
    "a.addcdiv(b, c, value=5.2922)",
    "torch.addcdiv(a, b, c)",
    "a.clone().addcdiv_(b, c, value=-0.7)",
    "torch.addmm(p, m, n, beta=0.3337, alpha=5.2922)",
    "torch.addmm(p, m, n, beta=0, alpha=5.2922)",
    "torch.addmm(p, m, n)",
    "torch.baddbmm(p[None], m[None], n[None], beta=0.3337, alpha=5.2922)",
    "torch.addbmm(p, m[None], n[None], beta=0.3337, alpha=5.2922)",
    "p.addmm(m, n, alpha=3)",
    # add / sub with alpha: alpha and each step rounded to the dtype.
    "a.add(c, alpha=5.2922)",
    "a.sub(c, alpha=5.2922)",
    "torch.add(a, 2.7, alpha=5.2922)",
    "torch.sub(a, b, alpha=257)",
    "a.clone().add_(b, alpha=0.3337)",
]


def encode(value: float) -> Any:
    """A JSON value: NaN and the infinities as strings."""
    return value if math.isfinite(value) else repr(value)


def output(t: torch.Tensor) -> dict[str, Any]:
    return {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "values": [encode(v) for v in t.double().flatten().tolist()],
    }


def main() -> None:
    cases = []
    operands = {}
    for name, dtype in DTYPES.items():
        env = inputs(dtype)
        operands[name] = {k: output(t) for k, t in env.items()}
        for expr in EXPRS:
            out = eval(expr, {"torch": torch, "F": F}, dict(env))  # noqa: S307
            outs = list(out) if isinstance(out, tuple) else [out]
            cases.append({"dtype": name, "expr": expr, "outputs": [output(o) for o in outs]})
    lines = [json.dumps(c, sort_keys=True) for c in cases]
    head = json.dumps(operands, sort_keys=True)
    OUT.write_text('{"inputs": ' + head + ', "cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{OUT}: {len(lines)} cases")


if __name__ == "__main__":
    main()
