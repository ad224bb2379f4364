"""Generate docs/ops.md, the table of rustgrad's tensor ops, from the code.

The op list is read from the binding: every method of a `#[pymethods]` block in
`crates/python/src/ops/<family>.rs` is an op of that family (Note [Op families]). For
each op the script then asks the built package, by running it, which forms exist
(`rustgrad.x`, `t.x`, `t.x_`), which dtypes it accepts and whether its float64 result
records a backward (and the grad_fn's name). Every op needs a sample call in `SAMPLES`
below; a new op without one makes the script (and the freshness test) fail.

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
}

# A sample call per op: a function of (torch module, a tensor `a` of shape (2, 3)) that
# calls the op; used to find the accepted dtypes and whether a backward is recorded.
Sample = Callable[[Any, Any], Any]


def _other(torch: Any, a: Any) -> Any:
    return torch.ones(2, 3, dtype=a.dtype)


SAMPLES: dict[str, Sample] = {
    # binary
    "add": lambda t, a: a.add(_other(t, a)),
    "sub": lambda t, a: a.sub(_other(t, a)),
    "mul": lambda t, a: a.mul(_other(t, a)),
    "div": lambda t, a: a.div(_other(t, a)),
    "pow": lambda t, a: a.pow(_other(t, a)),
    "eq": lambda t, a: a.eq(_other(t, a)),
    "ne": lambda t, a: a.ne(_other(t, a)),
    "lt": lambda t, a: a.lt(_other(t, a)),
    "le": lambda t, a: a.le(_other(t, a)),
    "gt": lambda t, a: a.gt(_other(t, a)),
    "ge": lambda t, a: a.ge(_other(t, a)),
    # unary
    "neg": lambda t, a: a.neg(),
    "exp": lambda t, a: a.exp(),
    "log": lambda t, a: a.log(),
    "sqrt": lambda t, a: a.sqrt(),
    "tanh": lambda t, a: a.tanh(),
    "sigmoid": lambda t, a: a.sigmoid(),
    "relu": lambda t, a: a.relu(),
    "abs": lambda t, a: a.abs(),
    "sign": lambda t, a: a.sign(),
    "clamp": lambda t, a: a.clamp(0, 1),
    # linalg
    "matmul": lambda t, a: a.matmul(t.ones(3, 2, dtype=a.dtype)),
    "mm": lambda t, a: a.mm(t.ones(3, 2, dtype=a.dtype)),
    # reduce
    "sum": lambda t, a: a.sum(),
    "mean": lambda t, a: a.mean(),
    # shape
    "view": lambda t, a: a.view(6),
    "reshape": lambda t, a: a.reshape(3, 2),
    "transpose": lambda t, a: a.transpose(0, 1),
    "flatten": lambda t, a: a.flatten(),
    "t": lambda t, a: a.t(),
    "permute": lambda t, a: a.permute(1, 0),
    "expand": lambda t, a: a.expand(2, 2, 3),
    "unsqueeze": lambda t, a: a.unsqueeze(0),
    "squeeze": lambda t, a: a.squeeze(),
    # copy
    "float": lambda t, a: a.float(),
    "double": lambda t, a: a.double(),
    "long": lambda t, a: a.long(),
    "bool": lambda t, a: a.bool(),
    "contiguous": lambda t, a: a.t().contiguous(),
    "clone": lambda t, a: a.clone(),
    # index
    "__getitem__": lambda t, a: a[0, 1:],
    "__setitem__": lambda t, a: a.clone().__setitem__(0, 1),
    # in-place (on a clone, so the leaf is not written)
    "add_": lambda t, a: a.clone().add_(_other(t, a)),
    "sub_": lambda t, a: a.clone().sub_(_other(t, a)),
    "mul_": lambda t, a: a.clone().mul_(_other(t, a)),
    "div_": lambda t, a: a.clone().div_(_other(t, a)),
    "zero_": lambda t, a: a.clone().zero_(),
    "fill_": lambda t, a: a.clone().fill_(1),
    "copy_": lambda t, a: a.clone().copy_(_other(t, a)),
    "clamp_": lambda t, a: a.clone().clamp_(0, 1),
    "relu_": lambda t, a: a.clone().relu_(),
}

DTYPES = ["float32", "float64", "int64", "bool"]


def binding_ops() -> dict[str, list[str]]:
    """The Python method names of each family's binding file, in source order."""
    families: dict[str, list[str]] = {}
    for path in sorted(BINDING.glob("*.rs")):
        if path.stem == "mod":
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
        families[path.stem] = names
    return families


def probe(torch: Any, name: str) -> tuple[list[str], str]:
    """The dtypes `name` accepts and its backward ('grad_fn name', 'no', or 'n/a')."""
    sample = SAMPLES[name]
    accepted = []
    for dtype in DTYPES:
        a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).to(getattr(torch, dtype))
        try:
            sample(torch, a)
        except (RuntimeError, TypeError, ValueError, NotImplementedError):
            continue
        accepted.append(dtype)
    if "float64" not in accepted:
        return accepted, "n/a"
    a = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=torch.float64)
    a.requires_grad_()
    out = sample(torch, a)
    if name == "__setitem__":
        return accepted, "CopySlices"
    if out is a:
        return accepted, "returns its input"
    fn = getattr(out, "grad_fn", None)
    return accepted, (type(fn).__name__ if fn is not None else "no")


def render() -> str:
    """The text of docs/ops.md."""
    import rustgrad as torch

    lines = [
        "# Tensor ops",
        "",
        "Generated by `scripts/gen_ops_doc.py` from the binding's op families",
        "(`crates/python/src/ops/<family>.rs`, Note [Op families]) and by calling each op",
        "on the built package: do not edit by hand. Forms: `torch.x` (function), `t.x`",
        "(method), `t.x_` (in place) or the Python operator. Dtypes: those a call on a",
        "tensor of that dtype accepts. Backward: the grad_fn recorded for a float64 input",
        "that requires grad (`no`: the result never requires grad; `n/a`: not defined for",
        "float64; `returns its input`: a float64 input is returned as it is).",
        "",
    ]
    for family, names in binding_ops().items():
        lines += [
            f"## {family}",
            "",
            "| op | forms | dtypes | backward |",
            "| --- | --- | --- | --- |",
        ]
        for name in names:
            if name not in SAMPLES and name not in OPERATORS:
                raise SystemExit(f"{family}.rs: op {name!r} has no sample call in SAMPLES")
            if name in OPERATORS and name not in SAMPLES:
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
        operators = [OPERATORS[n] for n in names if n in OPERATORS and n not in SAMPLES]
        if operators:
            lines += ["", "Operators: " + ", ".join(f"`{o}`" for o in operators) + "."]
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
