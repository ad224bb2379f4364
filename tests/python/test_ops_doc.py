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


def test_every_binding_op_has_a_row_and_runs_for_some_dtype():
    gen = _generator()
    families = gen.binding_ops()
    assert {"unary", "binary", "reduce", "linalg", "shape", "index", "copy", "inplace"} <= set(
        families
    )
    text = (ROOT / "docs" / "ops.md").read_text()
    for names in families.values():
        for name in names:
            if name.startswith("_") and not name.startswith("__"):
                continue
            if name in gen.OPERATORS and name not in gen.ARGS:
                continue
            row = next((r for r in text.splitlines() if r.startswith(f"| {name} |")), None)
            assert row is not None, name
            assert "| none |" not in row, f"{name}: its sample call fails for every dtype"


def test_backward_column_reflects_the_engine():
    text = (ROOT / "docs" / "ops.md").read_text()
    assert "| mul | `torch.mul`, `t.mul`, `t.mul_` |" in text
    assert "| eq |" in text and "| mul |" in text
    row = next(line for line in text.splitlines() if line.startswith("| exp |"))
    assert row.endswith("| ExpBackward0 |")
    row = next(line for line in text.splitlines() if line.startswith("| long |"))
    assert row.endswith("| no |")


def test_registry_manual_rows_are_exactly_the_hand_written_methods():
    """Every method written by hand in `crates/python/src/ops/<family>.rs` has its
    `manual` entry in the op registry, and no `manual` entry lacks its method
    (Note [Op registry]): a binding op the table does not list fails here."""
    gen = _generator()
    manual: dict[str, list[str]] = {}
    for row in gen.registry():
        if row["form"] == "manual":
            manual.setdefault(row["family"], []).append(row["name"])
    hand_written = gen.hand_written_ops()
    assert {f: sorted(n) for f, n in manual.items()} == {
        f: sorted(n) for f, n in hand_written.items()
    }


def test_every_registry_row_is_a_tensor_method_of_its_form():
    import rustgrad as torch

    rows = _generator().registry()
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names)), "an op is listed twice"
    generated = [row for row in rows if row["form"] != "manual"]
    assert len(generated) > 150
    for row in rows:
        assert callable(getattr(torch.Tensor, row["name"])), row
        if row["in_place_of"] is not None:
            assert row["name"] == row["in_place_of"] + "_", row
            assert row["in_place_of"] in names, row
    signatures = {row["name"]: row["signature"] for row in rows}
    assert signatures["sum"] == "($self, dim=None, keepdim=False, *, dtype=None)"
    assert signatures["addmm_"] == "($self, mat1, mat2, *, beta=None, alpha=None)"
    assert {"sum": "ReduceSum", "softmax": "Softmax"}.items() <= {
        row["name"]: row["onnx"] for row in rows
    }.items()


def test_registry_function_rows_are_exactly_the_family_files_pyfunctions():
    """The registry's `function` rows (its second section, Note [Op registry]) are
    exactly the `#[pyfunction]`s of `crates/python/src/ops/<family>.rs`, family by
    family, which are exactly what each family file registers in the module: a module
    op function missing from the table, or a table row with no function, fails here."""
    from rustgrad import _rustgrad

    gen = _generator()
    rows = gen.registry("function")
    listed: dict[str, list[str]] = {}
    for row in rows:
        listed.setdefault(row["family"], []).append(row["name"])
    written = {f: sorted(n) for f, n in gen.hand_written_functions().items()}
    registered = {f: sorted(n) for f, n in gen.registered_functions().items()}
    assert {f: sorted(n) for f, n in listed.items()} == written
    assert registered == written
    names = [row["name"] for row in rows]
    assert len(names) == len(set(names)) >= 50
    for row in rows:
        assert row["form"] == "manual" and row["in_place_of"] is None, row
        assert callable(getattr(_rustgrad, row["name"], None)), row
        assert row["signature"] is not None, row
    assert {
        "_conv": "Conv",
        "_batch_norm": "BatchNormalization",
        "_embedding": "Gather",
    }.items() <= {row["name"]: row["onnx"] for row in rows}.items()
    # Methods first, then functions; the two kinds share no name.
    kinds = [row["kind"] for row in _rustgrad._op_registry()]
    assert kinds == sorted(kinds, key=lambda k: k != "method")
    assert not set(names) & {row["name"] for row in gen.registry()}
