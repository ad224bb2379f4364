"""ONNX import: ``rustgrad.onnx.load_model(path)`` (see Note [ONNX import]).

The file is parsed with the ``onnx`` package; the graph is checked (every input
produced, no cycle, every op supported, initializer sizes consistent with their data)
and becomes an :class:`OnnxModule` whose ``forward`` interprets the nodes in
topological order with rustgrad ops, so autograd runs through it. Floating
initializers are ``nn.Parameter`` objects, the others buffers.
"""

from __future__ import annotations

import collections
import math
import os
import re
from typing import Any, Callable, NamedTuple

import numpy as np

import rustgrad
from rustgrad import nn
from rustgrad.nn import functional as F

#: Largest element count accepted for one initializer or Constant (2**31 elements).
MAX_ELEMENTS = 1 << 31

#: Largest element count a ConstantOfShape or a padded Conv/pool input may have
#: (2**28 elements): hostile attributes raise instead of exhausting memory.
MAX_CREATED_ELEMENTS = 1 << 28


class OnnxNode(NamedTuple):
    """One node of an imported graph, in topological order."""

    name: str
    op_type: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict[str, Any]


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "rustgrad.onnx.load_model needs the 'onnx' package (pip install onnx)"
        ) from exc
    return onnx


# --------------------------------------------------------------------------- loading


def _read_external(tensor: Any, base_dir: str | None) -> bytes:
    """The bytes of an initializer stored outside the model file, read only from a file
    inside the model's folder and only within that file's bounds."""
    info = {_str(e.key): _str(e.value) for e in tensor.external_data}
    location = info.get("location")
    if not location:
        raise ValueError(f"initializer '{tensor.name}' has external data without a location")
    if base_dir is None:
        raise ValueError(
            f"initializer '{tensor.name}' has external data: load the model from a file path"
        )
    if os.path.isabs(location) or "\0" in location:
        raise ValueError(
            f"initializer '{tensor.name}': external data path '{location}' must be relative"
            " to the model's folder"
        )
    base = os.path.realpath(base_dir)
    target = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, target]) != base or target == base:
        raise ValueError(
            f"initializer '{tensor.name}': external data path '{location}' points outside"
            " the model's folder"
        )
    if not os.path.isfile(target):
        raise ValueError(f"initializer '{tensor.name}': external data file '{location}' not found")
    try:
        offset = int(info.get("offset", "0"))
        size = os.path.getsize(target)
        length = int(info["length"]) if "length" in info else size - offset
    except ValueError as exc:
        raise ValueError(f"initializer '{tensor.name}': bad external data offset/length") from exc
    if offset < 0 or length < 0 or offset + length > size:
        raise ValueError(
            f"initializer '{tensor.name}': external data range [{offset}, {offset + length})"
            f" is outside '{location}' ({size} bytes)"
        )
    with open(target, "rb") as f:
        f.seek(offset)
        return f.read(length)


def _tensor_to_numpy(tensor: Any, base_dir: str | None) -> np.ndarray:
    """A TensorProto as a numpy array, after checking its dims against its data."""
    onnx = _onnx()
    from onnx import numpy_helper

    name = _str(tensor.name) or "<constant>"
    dims = list(tensor.dims)
    if any(d < 0 for d in dims):
        raise ValueError(f"tensor '{name}' has a negative dimension: {dims}")
    numel = math.prod(dims)
    if numel > MAX_ELEMENTS:
        raise ValueError(f"tensor '{name}' has {numel} elements ({dims}): too large")
    try:
        np_dtype = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except Exception as exc:
        raise ValueError(f"tensor '{name}' has unsupported data type {tensor.data_type}") from exc
    if tensor.data_type == onnx.TensorProto.STRING:
        raise ValueError(f"tensor '{name}': string tensors are not supported")
    if tensor.HasField("data_location") and tensor.data_location == onnx.TensorProto.EXTERNAL:
        raw = _read_external(tensor, base_dir)
        if len(raw) != numel * np_dtype.itemsize:
            raise ValueError(
                f"tensor '{name}': external data has {len(raw)} bytes, expected"
                f" {numel * np_dtype.itemsize} for shape {dims}"
            )
        return np.frombuffer(raw, dtype=np_dtype).reshape(dims).copy()
    if tensor.HasField("raw_data"):
        if len(tensor.raw_data) != numel * np_dtype.itemsize:
            raise ValueError(
                f"tensor '{name}': raw data has {len(tensor.raw_data)} bytes, expected"
                f" {numel * np_dtype.itemsize} for shape {dims}"
            )
    else:
        stored = max(
            len(tensor.float_data),
            len(tensor.int32_data),
            len(tensor.int64_data),
            len(tensor.double_data),
            len(tensor.uint64_data),
        )
        if stored != numel:
            raise ValueError(f"tensor '{name}' holds {stored} values, expected {numel} for {dims}")
    try:
        arr = numpy_helper.to_array(tensor)
    except Exception as exc:
        raise ValueError(f"tensor '{name}' could not be decoded: {exc}") from exc
    return np.array(arr, copy=True)


def _to_tensor(arr: np.ndarray, name: str) -> rustgrad.Tensor:
    try:
        return rustgrad.from_numpy(np.array(arr, order="C", copy=True))
    except Exception as exc:
        raise ValueError(f"tensor '{name}': dtype {arr.dtype} is not supported") from exc


def _str(value: Any) -> str:
    """A protobuf string field as ``str``: invalid UTF-8 (which the parser hands back
    as ``bytes``) is decoded with ``surrogateescape``, so distinct names stay distinct."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    return str(value)


def _sanitise(name: str, taken: set[str]) -> str:
    base = re.sub(r"\W", "_", name) or "_"
    if base[0].isdigit():
        base = "_" + base
    out, k = base, 1
    while out in taken:
        out = f"{base}_{k}"
        k += 1
    taken.add(out)
    return out


def _parse(source: Any) -> tuple[Any, str | None]:
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source, None
    if isinstance(source, (bytes, bytearray)):
        data, base_dir, where = bytes(source), None, "<bytes>"
    else:
        path = os.fspath(source)
        with open(path, "rb") as f:
            data = f.read()
        base_dir, where = os.path.dirname(os.path.abspath(path)), path
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:
        raise ValueError(f"could not parse ONNX model {where!r}: {exc}") from exc
    if not model.HasField("graph"):
        raise ValueError(f"ONNX model {where!r} has no graph (empty, truncated or not ONNX)")
    return model, base_dir


def load_model(f: Any) -> OnnxModule:
    """Build a runnable :class:`OnnxModule` from an ONNX file.

    ``f`` is a path (``str`` or ``os.PathLike``), the file's bytes, or an
    ``onnx.ModelProto``. External data is read only from files inside the model's
    folder. A malformed or unsupported graph raises ``ValueError`` (an unknown op
    ``NotImplementedError``, naming it).
    """
    model, base_dir = _parse(f)
    return OnnxModule(model, base_dir)


# --------------------------------------------------------------------------- the module


class OnnxModule(nn.Module):
    """A module interpreting an ONNX graph with rustgrad ops.

    Initializers are registered under sanitised names (``fc1.weight`` becomes
    ``fc1_weight``; :attr:`initializer_names` maps ONNX names to attributes):
    floating ones as ``nn.Parameter``, the others as buffers. :attr:`nodes` lists the
    nodes in topological order; :meth:`replace_node` swaps a node's computation for a
    submodule (for example the last Gemm for a new ``nn.Linear``).
    """

    def __init__(self, model: Any, base_dir: str | None = None) -> None:
        super().__init__()
        graph = model.graph
        self.opset = 1
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = int(imp.version)
        taken: set[str] = set()
        self.initializer_names: dict[str, str] = {}
        for init in graph.initializer:
            init_name = _str(init.name)
            if init_name in self.initializer_names:
                raise ValueError(f"initializer '{init_name}' is defined twice")
            arr = _tensor_to_numpy(init, base_dir)
            attr = _sanitise(init_name, taken | set(dir(self)))
            t = _to_tensor(arr, init_name)
            if t.is_floating_point():
                self.register_parameter(attr, nn.Parameter(t))
            else:
                self.register_buffer(attr, t)
            self.initializer_names[init_name] = attr
        self.input_names = [
            _str(i.name) for i in graph.input if _str(i.name) not in self.initializer_names
        ]
        self.output_names = [_str(o.name) for o in graph.output]
        if not self.output_names:
            raise ValueError("ONNX graph has no outputs")
        self.nodes = self._sort_nodes(graph)
        self._replacements: dict[str, str] = {}

    # -- graph checks ---------------------------------------------------------------

    def _sort_nodes(self, graph: Any) -> list[OnnxNode]:
        onnx = _onnx()
        available = set(self.input_names) | set(self.initializer_names)
        producer: dict[str, int] = {}
        raw: list[OnnxNode] = []
        for i, node in enumerate(graph.node):
            op_type, domain = _str(node.op_type), _str(node.domain)
            name = _str(node.name) or f"{op_type}_{i}"
            if domain not in ("", "ai.onnx"):
                raise NotImplementedError(
                    f"ONNX op '{domain}::{op_type}' (node '{name}') is not supported"
                )
            if op_type not in _OPS:
                raise NotImplementedError(
                    f"ONNX op '{op_type}' (node '{name}') is not supported by rustgrad's importer"
                )
            inputs = tuple(_str(v) for v in node.input)
            outputs = tuple(_str(v) for v in node.output)
            need = _MIN_INPUTS.get(op_type, 1)
            if sum(1 for v in inputs[:need] if v) < need:
                raise ValueError(
                    f"node '{name}' ({op_type}) needs {need} input(s), has {list(inputs)}"
                )
            if not any(outputs):
                raise ValueError(f"node '{name}' ({op_type}) has no output")
            attrs: dict[str, Any] = {}
            for a in node.attribute:
                if a.type == onnx.AttributeProto.TENSOR:
                    attrs[a.name] = _tensor_to_numpy(a.t, None)
                elif a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                    raise NotImplementedError(
                        f"node '{name}': subgraph attributes are not supported"
                    )
                else:
                    value = onnx.helper.get_attribute_value(a)
                    if value is None:
                        raise ValueError(f"node '{name}': attribute '{_str(a.name)}' has no value")
                    attrs[_str(a.name)] = _str(value) if isinstance(value, bytes) else value
            for out in outputs:
                if not out:
                    continue
                if out in producer or out in available:
                    raise ValueError(f"value '{out}' is produced twice (node '{name}')")
                producer[out] = i
            raw.append(OnnxNode(name, op_type, inputs, outputs, attrs))
        # Kahn's algorithm: a node runs once every input it names is available.
        deps: list[set[int]] = []
        users: dict[int, list[int]] = {i: [] for i in range(len(raw))}
        for i, node in enumerate(raw):
            d = set()
            for inp in node.inputs:
                if not inp or inp in available:
                    continue
                if inp not in producer:
                    raise ValueError(
                        f"node '{node.name}' ({node.op_type}) reads '{inp}', which no node,"
                        " input or initializer produces"
                    )
                d.add(producer[inp])
            deps.append(d)
            for j in d:
                users[j].append(i)
        ready = collections.deque(i for i, d in enumerate(deps) if not d)
        order: list[int] = []
        remaining = [len(d) for d in deps]
        while ready:
            i = ready.popleft()
            order.append(i)
            for u in users[i]:
                remaining[u] -= 1
                if remaining[u] == 0:
                    ready.append(u)
        if len(order) != len(raw):
            stuck = [raw[i].name for i in range(len(raw)) if remaining[i] > 0]
            raise ValueError(f"ONNX graph has a cycle through node(s) {stuck[:5]}")
        for out in self.output_names:
            if out not in producer and out not in available:
                raise ValueError(f"graph output '{out}' is never produced")
        return [raw[i] for i in order]

    # -- editing --------------------------------------------------------------------

    def replace_node(self, name: str, module: nn.Module) -> None:
        """Compute node ``name`` as ``module(first input)`` from now on.

        ``module`` is registered as a submodule (its parameters join this module's).
        Typical use: ``m.replace_node(last_gemm.name, nn.Linear(in_features, k))``
        to give an imported classifier a new head; the old node's initializers stay
        registered but are no longer read.
        """
        node = next((n for n in self.nodes if n.name == name), None)
        if node is None:
            raise KeyError(f"no node named '{name}'")
        attr = _sanitise("replaced_" + name, set(self._modules) | set(dir(self)))
        self.add_module(attr, module)
        self._replacements[name] = attr

    # -- running --------------------------------------------------------------------

    def forward(self, *args: Any) -> Any:
        """Run the graph on the graph inputs, in order; one output or a tuple."""
        if len(args) != len(self.input_names):
            raise TypeError(
                f"ONNX graph takes {len(self.input_names)} input(s) {self.input_names},"
                f" got {len(args)}"
            )
        env: dict[str, Any] = {}
        for onnx_name, attr in self.initializer_names.items():
            env[onnx_name] = getattr(self, attr)
        for name, value in zip(self.input_names, args):
            if not isinstance(value, rustgrad.Tensor):
                value = rustgrad.as_tensor(value)
            env[name] = value
        for node in self.nodes:
            ins = [env[i] if i else None for i in node.inputs]
            if node.name in self._replacements:
                outs: Any = getattr(self, self._replacements[node.name])(ins[0])
            else:
                try:
                    outs = _OPS[node.op_type](self, node, ins)
                except (TypeError, KeyError, AttributeError) as exc:
                    raise ValueError(
                        f"node '{node.name}' ({node.op_type}) is malformed: {exc}"
                    ) from exc
            if not isinstance(outs, (tuple, list)):
                outs = (outs,)
            for name, value in zip(node.outputs, outs):
                if name:
                    env[name] = value
        results = tuple(env[o] for o in self.output_names)
        return results[0] if len(results) == 1 else results


# --------------------------------------------------------------------------- ops


def _ints(t: Any) -> list[int]:
    if t is None:
        return []
    if isinstance(t, rustgrad.Tensor):
        return [int(v) for v in t.reshape(-1).tolist()]
    return [int(v) for v in t]


def _axis(a: int, rank: int, node: OnnxNode) -> int:
    if not -rank <= a < max(rank, 1):
        raise ValueError(
            f"node '{node.name}' ({node.op_type}): axis {a} out of range for rank {rank}"
        )
    return a % max(rank, 1) if rank else 0


def _gemm(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    a, b = ins[0], ins[1]
    c = ins[2] if len(ins) > 2 else None
    alpha = float(n.attrs.get("alpha", 1.0))
    beta = float(n.attrs.get("beta", 1.0))
    if n.attrs.get("transA", 0):
        a = a.t()
    if n.attrs.get("transB", 0):
        if alpha == 1.0 and (c is None or beta == 1.0):
            return F.linear(a, b, c)
        y = rustgrad.matmul(a, b.t())
    else:
        y = rustgrad.matmul(a, b)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y


def _binary(fn: Callable) -> Callable:
    return lambda m, n, ins: fn(ins[0], ins[1])


def _div(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    a, b = ins
    if not a.is_floating_point() and not b.is_floating_point():
        return rustgrad.div(a, b, rounding_mode="trunc")
    return a / b


def _unary(fn: Callable) -> Callable:
    return lambda m, n, ins: fn(ins[0])


def _pads(n: OnnxNode, x: Any, kernel: list[int], strides: list[int], dil: list[int]) -> list[int]:
    nd = len(kernel)
    auto = n.attrs.get("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = list(n.attrs.get("pads", [0] * (2 * nd)))
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    elif auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0] * (2 * nd)
        for i in range(nd):
            size = x.shape[2 + i]
            out = -(-size // strides[i])
            total = max(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - size)
            small, big = total // 2, total - total // 2
            pads[i], pads[i + nd] = (small, big) if auto == "SAME_UPPER" else (big, small)
    else:
        raise ValueError(f"node '{n.name}': unknown auto_pad '{auto}'")
    if len(pads) != 2 * nd or any(p < 0 for p in pads):
        raise ValueError(f"node '{n.name}' ({n.op_type}): bad pads {pads}")
    padded = math.prod(x.shape[:2]) * math.prod(
        x.shape[2 + i] + pads[i] + pads[i + nd] for i in range(nd)
    )
    if padded > MAX_CREATED_ELEMENTS:
        raise RuntimeError(
            f"node '{n.name}' ({n.op_type}): refusing pads {pads} (padded input too large)"
        )
    return pads


def _symmetric(n: OnnxNode, x: Any, pads: list[int], value: float) -> tuple[Any, list[int]]:
    """Symmetric padding as a list, asymmetric padding applied with F.pad first."""
    nd = len(pads) // 2
    begin, end = pads[:nd], pads[nd:]
    if begin == end:
        return x, begin
    spec: list[int] = []
    for i in reversed(range(nd)):
        spec += [begin[i], end[i]]
    return F.pad(x, spec, value=value), [0] * nd


def _spatial(n: OnnxNode, x: Any) -> int:
    nd = x.dim() - 2
    if nd not in (1, 2, 3):
        raise ValueError(f"node '{n.name}' ({n.op_type}): input of rank {x.dim()} is not 3-5")
    return nd


def _conv(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, w = ins[0], ins[1]
    b = ins[2] if len(ins) > 2 else None
    nd = _spatial(n, x)
    kernel = list(n.attrs.get("kernel_shape", list(w.shape[2:])))
    strides = list(n.attrs.get("strides", [1] * nd))
    dil = list(n.attrs.get("dilations", [1] * nd))
    x, pad = _symmetric(n, x, _pads(n, x, kernel, strides, dil), 0.0)
    fn = (F.conv1d, F.conv2d, F.conv3d)[nd - 1]
    return fn(x, w, b, strides, pad, dil, int(n.attrs.get("group", 1)))


def _pool(kind: str) -> Callable:
    def run(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
        x = ins[0]
        nd = _spatial(n, x)
        kernel = list(n.attrs["kernel_shape"])
        strides = list(n.attrs.get("strides", [1] * nd))
        dil = list(n.attrs.get("dilations", [1] * nd))
        ceil = bool(n.attrs.get("ceil_mode", 0))
        pads = _pads(n, x, kernel, strides, dil)
        if kind == "max":
            if len(n.outputs) > 1 and n.outputs[1]:
                raise NotImplementedError(f"node '{n.name}': MaxPool's Indices output")
            x, pad = _symmetric(n, x, pads, -math.inf)
            fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
            return fn(x, kernel, strides, pad, dil, ceil_mode=ceil)
        if any(d != 1 for d in dil):
            raise NotImplementedError(f"node '{n.name}': AveragePool with dilations")
        include = bool(n.attrs.get("count_include_pad", 0))
        if pads[:nd] != pads[nd:] and not include:
            raise NotImplementedError(f"node '{n.name}': asymmetric pads without count_include_pad")
        x, pad = _symmetric(n, x, pads, 0.0)
        fn = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
        return fn(x, kernel, strides, pad, ceil, include)

    return run


def _global_avg(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    return x.mean(dim=tuple(range(2, x.dim())), keepdim=True)


def _batch_norm(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    if n.attrs.get("training_mode", 0):
        raise NotImplementedError(f"node '{n.name}': BatchNormalization in training mode")
    x, scale, bias, mean, var = ins[:5]
    return F.batch_norm(x, mean, var, scale, bias, False, 0.0, float(n.attrs.get("epsilon", 1e-5)))


def _layer_norm(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, scale = ins[0], ins[1]
    bias = ins[2] if len(ins) > 2 else None
    if any(n.outputs[1:]):
        raise NotImplementedError(f"node '{n.name}': LayerNormalization's Mean/InvStdDev outputs")
    axis = _axis(int(n.attrs.get("axis", -1)), x.dim(), n)
    shape = tuple(x.shape[axis:])
    eps = float(n.attrs.get("epsilon", 1e-5))
    if tuple(scale.shape) == shape and (bias is None or tuple(bias.shape) == shape):
        return F.layer_norm(x, shape, scale, bias, eps)
    y = F.layer_norm(x, shape, None, None, eps) * scale
    return y if bias is None else y + bias


def _flatten(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    axis = int(n.attrs.get("axis", 1))
    axis = axis + x.dim() if axis < 0 else axis
    if not 0 <= axis <= x.dim():
        raise ValueError(f"node '{n.name}' (Flatten): axis out of range")
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


def _reshape(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, shape = ins[0], _ints(ins[1])
    allowzero = int(n.attrs.get("allowzero", 0))
    target = []
    for i, d in enumerate(shape):
        if d == 0 and not allowzero:
            if i >= x.dim():
                raise ValueError(
                    f"node '{n.name}' (Reshape): 0 at dim {i} of a rank-{x.dim()} input"
                )
            d = x.shape[i]
        target.append(d)
    if target.count(-1) > 1 or any(d < -1 for d in target):
        raise ValueError(f"node '{n.name}' (Reshape): invalid target shape {shape}")
    known = math.prod(d for d in target if d != -1)
    if (-1 not in target and known != x.numel()) or (-1 in target and known > max(x.numel(), 1)):
        raise RuntimeError(
            f"node '{n.name}' (Reshape): shape '{target}' is invalid for input of size {x.numel()}"
        )
    return x.reshape(target)


def _transpose(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    perm = list(n.attrs.get("perm", list(reversed(range(x.dim())))))
    return x.permute(perm)


def _concat(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    return rustgrad.cat([t for t in ins if t is not None], dim=int(n.attrs["axis"]))


def _softmax(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    if m.opset >= 13:
        return F.softmax(x, dim=int(n.attrs.get("axis", -1)))
    axis = _axis(int(n.attrs.get("axis", 1)), x.dim(), n)
    flat = x.reshape(math.prod(x.shape[:axis]), -1)
    return F.softmax(flat, dim=1).reshape(x.shape)


def _gather(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, idx = ins
    axis = _axis(int(n.attrs.get("axis", 0)), x.dim(), n)
    size = x.shape[axis]
    flat = idx.reshape(-1).to(rustgrad.int64)
    flat = rustgrad.where(flat < 0, flat + size, flat)
    if flat.numel() and (int(flat.min()) < 0 or int(flat.max()) >= size):
        raise IndexError(
            f"node '{n.name}' (Gather): index out of range for dimension of size {size}"
        )
    out = rustgrad.index_select(x, axis, flat)
    return out.reshape(tuple(x.shape[:axis]) + tuple(idx.shape) + tuple(x.shape[axis + 1 :]))


def _slice(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    if m.opset >= 10:
        starts, ends = _ints(ins[1]), _ints(ins[2])
        axes = _ints(ins[3]) if len(ins) > 3 and ins[3] is not None else list(range(len(starts)))
        steps = _ints(ins[4]) if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
    else:
        starts, ends = list(n.attrs["starts"]), list(n.attrs["ends"])
        axes = list(n.attrs.get("axes", range(len(starts))))
        steps = [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError(f"node '{n.name}' (Slice): starts/ends/axes/steps lengths differ")
    index: list[Any] = [slice(None)] * x.dim()
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = _axis(a, x.dim(), n)
        if st <= 0:
            raise NotImplementedError(f"node '{n.name}' (Slice): step {st} (only positive steps)")
        size = x.shape[a]
        s = max(0, min(size, s + size if s < 0 else s))
        e = max(0, min(size, e + size if e < 0 else e))
        index[a] = slice(s, max(s, e), st)
    return x[tuple(index)]


def _axes_of(m: OnnxModule, n: OnnxNode, ins: list, since: int) -> list[int] | None:
    if m.opset >= since:
        return _ints(ins[1]) if len(ins) > 1 and ins[1] is not None else None
    return list(n.attrs["axes"]) if "axes" in n.attrs else None


def _unsqueeze(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    axes = _axes_of(m, n, ins, 13)
    if not axes:
        raise ValueError(f"node '{n.name}' (Unsqueeze): no axes")
    rank = x.dim() + len(axes)
    norm = sorted(_axis(a, rank, n) for a in axes)
    if len(set(norm)) != len(norm):
        raise ValueError(f"node '{n.name}' (Unsqueeze): repeated axes {axes}")
    for a in norm:
        x = x.unsqueeze(a)
    return x


def _squeeze(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    axes = _axes_of(m, n, ins, 13)
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    norm = sorted({_axis(a, x.dim(), n) for a in axes}, reverse=True)
    for a in norm:
        if x.shape[a] != 1:
            raise ValueError(f"node '{n.name}' (Squeeze): dimension {a} has size {x.shape[a]}")
        x = x.squeeze(a)
    return x


def _reduce_mean(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    axes = _axes_of(m, n, ins, 18)
    keep = bool(n.attrs.get("keepdims", 1))
    if not axes:
        if n.attrs.get("noop_with_empty_axes", 0):
            return x
        axes = list(range(x.dim()))
    return x.mean(dim=tuple(_axis(a, x.dim(), n) for a in axes), keepdim=keep)


def _reduce_extreme(fn: Callable) -> Callable:
    """ReduceMax / ReduceMin (axes an input from opset 18)."""

    def run(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
        x = ins[0]
        axes = _axes_of(m, n, ins, 18)
        keep = bool(n.attrs.get("keepdims", 1))
        if not axes:
            if n.attrs.get("noop_with_empty_axes", 0):
                return x
            axes = list(range(x.dim()))
        return fn(x, dim=tuple(_axis(a, x.dim(), n) for a in axes), keepdim=keep)

    return run


def _where(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    cond, a, b = ins
    return rustgrad.where(cond.to(rustgrad.bool), a, b)


def _not(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    return rustgrad.logical_not(ins[0])


def _trilu(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    k = _ints(ins[1])[0] if len(ins) > 1 and ins[1] is not None else 0
    if x.dim() < 2:
        raise ValueError(f"node '{n.name}' (Trilu): input of rank {x.dim()} (at least 2)")
    upper = bool(n.attrs.get("upper", 1))
    return rustgrad.triu(x, k) if upper else rustgrad.tril(x, k)


def _expand(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, shape = ins[0], _ints(ins[1])
    try:
        target = np.broadcast_shapes(tuple(x.shape), tuple(shape))
    except ValueError as exc:
        raise ValueError(
            f"node '{n.name}' (Expand): shape {shape} does not broadcast with {list(x.shape)}"
        ) from exc
    if math.prod(target) > MAX_CREATED_ELEMENTS:
        raise RuntimeError(f"node '{n.name}' (Expand): refusing to create shape {list(target)}")
    return x.expand(*target)


def _nonzero(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    if x.dim() == 0:
        x = x.reshape(1)
    return rustgrad.nonzero(x).t().contiguous()


def _gather_nd(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, idx = ins
    if n.attrs.get("batch_dims", 0):
        raise NotImplementedError(f"node '{n.name}' (GatherND): batch_dims > 0")
    r = idx.shape[-1] if idx.dim() else 0
    if idx.dim() == 0 or not 1 <= r <= x.dim():
        raise ValueError(f"node '{n.name}' (GatherND): index depth {r} for rank {x.dim()}")
    idx = idx.to(rustgrad.int64)
    for j in range(r):
        col = idx[..., j]
        size = x.shape[j]
        if col.numel() and (int(col.min()) < -size or int(col.max()) >= size):
            raise IndexError(
                f"node '{n.name}' (GatherND): index out of range for dimension of size {size}"
            )
    return x[tuple(idx[..., j] for j in range(r))]


def _compress(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x, cond = ins
    axis = n.attrs.get("axis")
    if axis is None:
        x, axis = x.reshape(-1), 0
    axis = _axis(int(axis), x.dim(), n)
    if cond.dim() != 1 or cond.shape[0] > x.shape[axis]:
        raise ValueError(
            f"node '{n.name}' (Compress): condition of shape {list(cond.shape)} for "
            f"dimension of size {x.shape[axis]}"
        )
    keep = rustgrad.nonzero(cond.to(rustgrad.bool)).reshape(-1)
    return rustgrad.index_select(x, axis, keep)


def _constant(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    a = n.attrs
    if "value" in a:
        return _to_tensor(a["value"], n.name)
    if "value_float" in a:
        return rustgrad.tensor(float(a["value_float"]), dtype=rustgrad.float32)
    if "value_floats" in a:
        return rustgrad.tensor([float(v) for v in a["value_floats"]], dtype=rustgrad.float32)
    if "value_int" in a:
        return rustgrad.tensor(int(a["value_int"]), dtype=rustgrad.int64)
    if "value_ints" in a:
        return rustgrad.tensor([int(v) for v in a["value_ints"]], dtype=rustgrad.int64)
    raise NotImplementedError(f"node '{n.name}' (Constant): unsupported value attribute {list(a)}")


def _shape(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    dims = list(ins[0].shape)
    start = int(n.attrs.get("start", 0))
    end = n.attrs.get("end")
    dims = dims[start:] if end is None else dims[start : int(end)]
    return rustgrad.tensor(dims, dtype=rustgrad.int64)


def _dropout(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    x = ins[0]
    if len(n.outputs) > 1 and n.outputs[1]:
        return x, rustgrad.ones(x.shape, dtype=rustgrad.bool)
    return x


#: Inputs an op cannot run without (1 when not listed).
_MIN_INPUTS = {
    "Gemm": 2,
    "MatMul": 2,
    "Add": 2,
    "Sub": 2,
    "Mul": 2,
    "Div": 2,
    "Pow": 2,
    "Conv": 2,
    "BatchNormalization": 5,
    "LayerNormalization": 2,
    "Reshape": 2,
    "Gather": 2,
    "Where": 3,
    "Equal": 2,
    "Greater": 2,
    "Less": 2,
    "GreaterOrEqual": 2,
    "LessOrEqual": 2,
    "Expand": 2,
    "GatherND": 2,
    "Compress": 2,
    "Constant": 0,
    "LSTM": 3,
    "GRU": 3,
}


def _constant_of_shape(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    shape = _ints(ins[0])
    if any(d < 0 for d in shape) or math.prod(shape) > MAX_CREATED_ELEMENTS:
        raise RuntimeError(f"node '{n.name}' (ConstantOfShape): refusing to create shape {shape}")
    value = n.attrs.get("value")
    if value is None:
        return rustgrad.zeros(shape, dtype=rustgrad.float32)
    if value.size != 1:
        raise ValueError(f"node '{n.name}' (ConstantOfShape): value must hold one element")
    t = _to_tensor(value.reshape(()), n.name)
    return rustgrad.full(shape, t.item(), dtype=t.dtype)


_RNN_GATES = {"LSTM": (4, ["Sigmoid", "Tanh", "Tanh"]), "GRU": (3, ["Sigmoid", "Tanh"])}


def _rnn(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    """ONNX LSTM (gates i, o, f, c) and GRU (gates z, r, h) with the default
    activations, unrolled over time in rustgrad ops; ``Y`` is (seq, directions, batch,
    hidden), then ``Y_h`` (and LSTM's ``Y_c``)."""
    lstm = n.op_type == "LSTM"
    gates, default_acts = _RNN_GATES[n.op_type]
    ins = list(ins) + [None] * (8 - len(ins))
    x, w, r, b, seq_lens, h0 = ins[:6]
    c0 = ins[6] if lstm else None
    peep = ins[7] if lstm else None
    a = n.attrs
    hidden = int(a.get("hidden_size", r.shape[-1]))
    direction = a.get("direction", "forward")
    dirs = {"forward": ["forward"], "reverse": ["reverse"]}.get(
        direction, ["forward", "reverse"] if direction == "bidirectional" else None
    )
    if dirs is None:
        raise ValueError(f"node '{n.name}' ({n.op_type}): unknown direction '{direction}'")
    acts = [_str(v) for v in a.get("activations", default_acts * len(dirs))]
    if acts != default_acts * len(dirs) or "clip" in a or a.get("input_forget", 0):
        raise NotImplementedError(
            f"node '{n.name}' ({n.op_type}): only the default activations, no clip, no input_forget"
        )
    if peep is not None:
        raise NotImplementedError(f"node '{n.name}' (LSTM): peephole weights")
    before_reset = bool(a.get("linear_before_reset", 0))
    layout = int(a.get("layout", 0))
    if layout:
        x = x.transpose(0, 1)
        h0 = None if h0 is None else h0.transpose(0, 1)
        c0 = None if c0 is None else c0.transpose(0, 1)
    steps, batch = x.shape[0], x.shape[1]
    if seq_lens is not None and any(v != steps for v in _ints(seq_lens)):
        raise NotImplementedError(
            f"node '{n.name}' ({n.op_type}): sequence_lens shorter than the input"
        )
    nd, gh = len(dirs), gates * hidden
    if tuple(w.shape[:2]) != (nd, gh) or tuple(r.shape) != (nd, gh, hidden):
        raise ValueError(
            f"node '{n.name}' ({n.op_type}): W/R shapes do not match hidden_size {hidden}"
        )
    ys, hs, cs = [], [], []
    for d, kind in enumerate(dirs):
        gx = rustgrad.matmul(x, w[d].t())
        rb = None
        if b is not None:
            gx = gx + b[d, :gh]
            rb = b[d, gh:]
            if lstm:
                gx, rb = gx + rb, None
        zeros = rustgrad.zeros(batch, hidden, dtype=x.dtype)
        h = zeros if h0 is None else h0[d]
        c = zeros if c0 is None else c0[d]
        rt = r[d].t()
        out: list[Any] = [None] * steps
        for t in range(steps) if kind == "forward" else range(steps - 1, -1, -1):
            if lstm:
                i, o, f, cand = (gx[t] + rustgrad.matmul(h, rt)).chunk(4, dim=-1)
                c = rustgrad.sigmoid(f) * c + rustgrad.sigmoid(i) * rustgrad.tanh(cand)
                h = rustgrad.sigmoid(o) * rustgrad.tanh(c)
            else:
                xz, xr, xh = gx[t].chunk(3, dim=-1)
                rz, rr, rh = rt[:, :hidden], rt[:, hidden : 2 * hidden], rt[:, 2 * hidden :]
                bz, br, bh = (None, None, None) if rb is None else rb.chunk(3)
                hz, hr = rustgrad.matmul(h, rz), rustgrad.matmul(h, rr)
                if rb is not None:
                    hz, hr = hz + bz, hr + br
                z, rg = rustgrad.sigmoid(xz + hz), rustgrad.sigmoid(xr + hr)
                if before_reset:
                    hh = rustgrad.matmul(h, rh)
                    hh = rg * (hh if bh is None else hh + bh)
                else:
                    hh = rustgrad.matmul(rg * h, rh)
                    hh = hh if bh is None else hh + bh
                h = (1 - z) * rustgrad.tanh(xh + hh) + z * h
            out[t] = h
        ys.append(rustgrad.stack(out, 0))
        hs.append(h)
        cs.append(c)
    y = rustgrad.stack(ys, 1)
    states = [rustgrad.stack(hs, 0)] + ([rustgrad.stack(cs, 0)] if lstm else [])
    if layout:
        return (y.permute(2, 0, 1, 3), *(s.transpose(0, 1) for s in states))
    return (y, *states)


_CAST = {1: "float32", 11: "float64", 10: "float16", 7: "int64", 6: "int32", 9: "bool"}


def _cast(m: OnnxModule, n: OnnxNode, ins: list) -> Any:
    to = int(n.attrs["to"])
    if to not in _CAST:
        raise NotImplementedError(f"node '{n.name}' (Cast): target type {to}")
    return ins[0].to(getattr(rustgrad, _CAST[to]))


_OPS: dict[str, Callable[[OnnxModule, OnnxNode, list], Any]] = {
    "Gemm": _gemm,
    "MatMul": _binary(rustgrad.matmul),
    "Add": _binary(lambda a, b: a + b),
    "Sub": _binary(lambda a, b: a - b),
    "Mul": _binary(lambda a, b: a * b),
    "Div": _div,
    "Pow": _binary(rustgrad.pow),
    "Relu": _unary(F.relu),
    "Sigmoid": _unary(rustgrad.sigmoid),
    "Tanh": _unary(rustgrad.tanh),
    "Exp": _unary(rustgrad.exp),
    "Sqrt": _unary(rustgrad.sqrt),
    "Neg": _unary(lambda x: -x),
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "Erf": _unary(rustgrad.erf),
    "MaxPool": _pool("max"),
    "AveragePool": _pool("avg"),
    "GlobalAveragePool": _global_avg,
    "Flatten": _flatten,
    "Reshape": _reshape,
    "Transpose": _transpose,
    "Concat": _concat,
    "Softmax": _softmax,
    "Gather": _gather,
    "Slice": _slice,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "ReduceMean": _reduce_mean,
    "ReduceMax": _reduce_extreme(rustgrad.amax),
    "ReduceMin": _reduce_extreme(rustgrad.amin),
    "Where": _where,
    "Equal": _binary(lambda a, b: a == b),
    "Greater": _binary(lambda a, b: a > b),
    "Less": _binary(lambda a, b: a < b),
    "GreaterOrEqual": _binary(lambda a, b: a >= b),
    "LessOrEqual": _binary(lambda a, b: a <= b),
    "Not": _not,
    "Trilu": _trilu,
    "Expand": _expand,
    "NonZero": _nonzero,
    "GatherND": _gather_nd,
    "Compress": _compress,
    "Constant": _constant,
    "Identity": _unary(lambda x: x),
    "Shape": _shape,
    "Dropout": _dropout,
    "Cast": _cast,
    "ConstantOfShape": _constant_of_shape,
    "LSTM": _rnn,
    "GRU": _rnn,
}

#: The ONNX op types :func:`load_model` understands.
SUPPORTED_OPS = tuple(sorted(_OPS))
