"""``rustgrad.viz``: a picture of the backward graph behind a tensor, as Graphviz DOT.

``to_dot(t)`` draws one box per backward node (its name, output shape and the bytes it
saved for backward), edges in the direction gradients flow, leaves (AccumulateGrad)
labelled with their parameter names when ``params`` maps names to tensors, and the
parameters of ``params`` that are not in the graph (frozen, or unused) apart, greyed.
``render`` runs Graphviz's ``dot`` on it. See Note [Graph introspection].
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from .autograd.graph import _walk

__all__ = ["render", "to_dot"]


def _shape(shape: Any) -> str:
    return str(tuple(shape))


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"  # pragma: no cover - the loop always returns


def _quote(text: str) -> str:
    """A DOT string: quotes and backslashes escaped, line breaks as DOT's ``\n``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return '"' + escaped + '"'


def to_dot(tensor: Any, params: Mapping[str, Any] | None = None, show_saved: bool = True) -> str:
    """The backward graph of ``tensor`` as Graphviz DOT text.

    Args:
        tensor: the output (e.g. a loss) whose graph to draw.
        params: optional ``{name: tensor}`` (e.g. ``dict(model.named_parameters())``):
            leaves are labelled with their names, and those that do not take part in the
            graph (frozen ones) are drawn apart as ``frozen``.
        show_saved: add the bytes each node saved for backward to its label.

    Example:
        >>> import rustgrad
        >>> w = rustgrad.ones(3, requires_grad=True)
        >>> print(rustgrad.viz.to_dot((w * 2).sum(), {"w": w}).splitlines()[0])
        digraph backward {
    """
    names = {id(t): name for name, t in (params or {}).items()}
    lines = [
        "digraph backward {",
        "  rankdir=BT;",
        '  node [shape=box, fontname="monospace", fontsize=10];',
    ]
    nodes = _walk(tensor)
    ids = {node: f"n{i}" for i, node in enumerate(nodes)}
    lines.append(
        f"  out [label={_quote('output ' + _shape(tensor.shape))}, style=filled, "
        'fillcolor="#d8e8ff"];'
    )
    in_graph: set[int] = set()
    for node in nodes:
        kind = type(node).__name__
        if kind == "AccumulateGrad":
            leaf = node.variable
            in_graph.add(id(leaf))
            name = names.get(id(leaf))
            label = f"{name}\n{_shape(leaf.shape)}" if name else f"leaf {_shape(leaf.shape)}"
            style = 'style=filled, fillcolor="#d8f5d0"'
        else:
            shapes = ", ".join(_shape(s) for s in node._output_shapes())
            label = f"{kind}\n{shapes}"
            if show_saved:
                count, nbytes = node._saved_summary()
                if count:
                    label += f"\nsaved {count} ({_bytes(nbytes)})"
            style = "style=solid"
        lines.append(f"  {ids[node]} [label={_quote(label)}, {style}];")
    if nodes:
        lines.append(f"  {ids[nodes[0]]} -> out;")
    for node in nodes:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                lines.append(f"  {ids[nxt]} -> {ids[node]};")
    frozen = [(n, t) for n, t in (params or {}).items() if id(t) not in in_graph]
    if frozen:
        lines.append("  subgraph cluster_frozen {")
        lines.append('    label="not in the graph (frozen)"; style=dashed; color=grey;')
        for i, (name, t) in enumerate(frozen):
            label = f"{name}\n{_shape(t.shape)}\nfrozen"
            lines.append(
                f'    f{i} [label={_quote(label)}, style=filled, fillcolor="#eeeeee", '
                'fontcolor="#777777"];'
            )
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(
    tensor: Any,
    path: str,
    format: str = "svg",
    params: Mapping[str, Any] | None = None,
    show_saved: bool = True,
) -> str:
    """Writes the picture of ``to_dot(tensor, params, show_saved)`` to ``path`` in
    ``format`` ("svg" or "png") with Graphviz's ``dot``, and returns ``path``.

    Raises:
        RuntimeError: when ``dot`` is not installed (the message says how to get it).
        ValueError: for a format other than "svg" or "png".
    """
    if format not in ("svg", "png"):
        raise ValueError(f"render: format must be 'svg' or 'png', got {format!r}")
    dot = shutil.which("dot")
    if dot is None:
        raise RuntimeError(
            "rustgrad.viz.render needs Graphviz's `dot` program, which was not found on "
            "PATH. Install Graphviz (Debian/Ubuntu: `apt-get install graphviz`; macOS: "
            "`brew install graphviz`), or write the DOT text of rustgrad.viz.to_dot to a "
            "file and render it elsewhere."
        )
    text = to_dot(tensor, params, show_saved)
    subprocess.run([dot, f"-T{format}", "-o", path], input=text.encode(), check=True)
    return path
