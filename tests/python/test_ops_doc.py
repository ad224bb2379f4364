"""docs/ops.md is generated from the code (scripts/gen_ops_doc.py) and must be fresh."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_ops_doc", ROOT / "scripts" / "gen_ops_doc.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ops_doc_is_fresh():
    generated = _generator().render()
    assert (ROOT / "docs" / "ops.md").read_text() == generated, (
        "docs/ops.md is stale: run .venv/bin/python scripts/gen_ops_doc.py"
    )


def test_every_binding_op_has_a_sample_and_a_row():
    gen = _generator()
    families = gen.binding_ops()
    assert {"unary", "binary", "reduce", "linalg", "shape", "index", "copy", "inplace"} <= set(
        families
    )
    text = (ROOT / "docs" / "ops.md").read_text()
    for names in families.values():
        for name in names:
            assert name in gen.SAMPLES or name in gen.OPERATORS, name
            if name in gen.SAMPLES:
                assert f"| {name} |" in text, name


def test_backward_column_reflects_the_engine():
    text = (ROOT / "docs" / "ops.md").read_text()
    assert "| mul | `torch.mul`, `t.mul`, `t.mul_` |" in text
    assert "| eq |" in text and "| mul |" in text
    row = next(line for line in text.splitlines() if line.startswith("| exp |"))
    assert row.endswith("| ExpBackward0 |")
    row = next(line for line in text.splitlines() if line.startswith("| long |"))
    assert row.endswith("| no |")
