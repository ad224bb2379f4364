"""Graph introspection: ``autograd.graph_stats`` and ``rustgrad.viz``. Expected counts
and bytes follow from the program by hand (each op's saved tensors are PyTorch's: mul
saves both operands, mm saves the operands that the other's gradient needs)."""

import re

import pytest
import rustgrad as torch
from rustgrad import viz


def test_graph_stats_counts_nodes_and_saved_bytes():
    x = torch.ones(1000, requires_grad=True)
    loss = (x * x).sum()
    # SumBackward0, MulBackward0 (saves x twice: 2 * 1000 * 4 bytes), AccumulateGrad.
    assert torch.autograd.graph_stats(loss) == (3, 2, 8000)
    loss.backward()
    assert torch.autograd.graph_stats(loss) == (3, 0, 0)  # released by backward
    assert torch.autograd.graph_stats(torch.ones(3)) == (0, 0, 0)


def test_graph_stats_of_a_frozen_base_saves_nothing_for_it():
    torch.manual_seed(0)
    w1 = torch.randn(64, 32, dtype=torch.float64)  # frozen
    w2 = torch.randn(10, 64, dtype=torch.float64, requires_grad=True)
    x = torch.randn(8, 32, dtype=torch.float64)
    h = (x @ w1.t()).tanh()
    stats = torch.autograd.graph_stats((h @ w2.t()).sum())
    # Sum, Mm, T, AccumulateGrad; Mm saves h (8 x 64 doubles) for w2's gradient only.
    assert stats == (4, 1, 8 * 64 * 8)
    w1.requires_grad_()
    h = (x @ w1.t()).tanh()
    full = torch.autograd.graph_stats((h @ w2.t()).sum())
    assert full.nodes > stats.nodes and full.saved_bytes > stats.saved_bytes


def _frozen_base_model():
    torch.manual_seed(1)
    params = {
        "base.0.weight": torch.randn(6, 4),
        "base.2.weight": torch.randn(5, 6),
        "head.weight": torch.randn(3, 5, requires_grad=True),
        "head.bias": torch.randn(3, requires_grad=True),
    }
    x = torch.randn(2, 4)
    h = (x @ params["base.0.weight"].t()).relu() @ params["base.2.weight"].t()
    loss = (h @ params["head.weight"].t() + params["head.bias"]).sum()
    return loss, params


def test_to_dot_shows_only_the_head_as_needing_gradients():
    loss, params = _frozen_base_model()
    dot = viz.to_dot(loss, params)
    assert dot.startswith("digraph backward {") and dot.rstrip().endswith("}")
    labels = dict(re.findall(r'^\s*(\w+) \[label="([^"]*)"', dot, re.M))
    leaves = {k: v for k, v in labels.items() if "#d8f5d0" in _line(dot, k)}
    assert sorted(v.split("\\n")[0] for v in leaves.values()) == ["head.bias", "head.weight"]
    frozen_block = dot[dot.index("subgraph cluster_frozen") :]
    assert "base.0.weight" in frozen_block and "base.2.weight" in frozen_block
    assert "head.weight" not in frozen_block
    # No node of the frozen base is drawn (relu and its matmuls need no gradient).
    names = [v.split("\\n")[0] for v in labels.values()]
    assert "ReluBackward0" not in names
    assert sorted(n for n in names if n.endswith("Backward0")) == [
        "AddBackward0",
        "MmBackward0",
        "SumBackward0",
        "TBackward0",
    ]
    # Every edge joins two declared nodes; gradients flow into the output.
    declared = set(labels) | {"out"}
    edges = re.findall(r"^\s*(\w+) -> (\w+);", dot, re.M)
    assert edges and all(a in declared and b in declared for a, b in edges)
    assert sum(1 for _, b in edges if b == "out") == 1


def _line(dot, name):
    return next(line for line in dot.splitlines() if line.strip().startswith(name + " ["))


def test_to_dot_labels_shapes_and_saved_bytes():
    x = torch.ones(4, 5, requires_grad=True)
    dot = viz.to_dot((x * x).sum(), {"x": x})
    assert r'"MulBackward0\n(4, 5)\nsaved 2 (160 B)"' in dot
    assert r'"x\n(4, 5)"' in dot
    assert "saved" not in viz.to_dot((x * x).sum(), show_saved=False)


def test_render_without_graphviz_says_how_to_install(monkeypatch):
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="apt-get install graphviz"):
        viz.render(x.sum(), "/tmp/never-written.svg")
    with pytest.raises(ValueError, match="format must be 'svg' or 'png'"):
        viz.render(x.sum(), "/tmp/never-written.pdf", format="pdf")


def test_seed_notes_description_of_the_graph_holds():
    # "z.grad_fn.next_functions[0][0] is y.grad_fn", walking next_functions from the
    # loss reaches every leaf's AccumulateGrad, whose .variable is the leaf, and nothing
    # of a subgraph that needs no gradient appears.
    x = torch.ones(2, 2, requires_grad=True)
    frozen = torch.ones(2, 2)
    y = x + 2
    z = y * y * 3
    out = z.mean() + (frozen * 5).sum()
    assert z.grad_fn.next_functions[0][0].next_functions[0][0] is y.grad_fn
    seen, stack, leaves = set(), [out.grad_fn], []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if type(node).__name__ == "AccumulateGrad":
            leaves.append(node.variable)
        stack.extend(n for n, _ in node.next_functions if n is not None)
    assert len(leaves) == 1 and leaves[0] is x
    # The frozen branch is a constant to the graph: its edge out of the sum is None.
    assert out.grad_fn.next_functions[1] == (None, 0)
    assert torch.autograd.graph_stats(out).nodes == len(seen)
