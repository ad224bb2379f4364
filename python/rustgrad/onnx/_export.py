"""``rustgrad.onnx.export``: trace a model once and write it as an ONNX graph.

The mechanism (Note [ONNX] in docs/architecture.md): while the model runs once on the
example inputs, three layers are patched in and restored afterwards:

1. ``Module.__call__``: a module whose type has an entry in ``_MODULE_EXPORTERS`` (and
   whose ``forward`` is that type's own) runs as usual with recording suspended, then
   its entry emits its ONNX nodes. Other modules (containers, user modules such as
   ResNet's ``BasicBlock``) run their ``forward``, so what they call is recorded.
2. Tensor methods and a few ``rustgrad`` / ``nn.functional`` functions: the ones in
   ``_METHOD_EXPORTERS`` / ``_FUNCTION_EXPORTERS`` emit nodes; every other Tensor
   method that turns a traced tensor into a tensor the trace does not know raises
   ``UnsupportedOperatorError`` naming it.
3. A tensor reaching a recorded op that is neither traced, nor a parameter or buffer
   of the model, nor a tensor the trace has seen raises: it came from an operation
   that nothing recorded, and freezing it as a constant would be silently wrong.

Values are tracked by object identity (every traced tensor is kept alive until the
export ends, so ids are never reused); an in-place op rebinds its tensor's id to the
op's output name.
"""

from __future__ import annotations

import enum
import io
import math
import os
import types
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .. import nn
from .._rustgrad import Tensor
from ..nn import functional as F

__all__ = ["TrainingMode", "UnsupportedOperatorError", "export"]

_DEFAULT_OPSET = 17
_MIN_OPSET = 17


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (PyTorch's ``torch.onnx.TrainingMode``)."""

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


class UnsupportedOperatorError(RuntimeError):
    """An operator or module has no ONNX mapping (PyTorch's
    ``torch.onnx.errors.UnsupportedOperatorError``, a ``RuntimeError``)."""


def _unsupported(name: str, opset: int, detail: str = "") -> UnsupportedOperatorError:
    msg = f"Exporting the operator '{name}' to ONNX opset version {opset} is not supported"
    if detail:
        msg += f": {detail}"
    return UnsupportedOperatorError(msg)


# ----------------------------------------------------------------------- the graph


class _Graph:
    """The nodes, initializers and value names recorded so far."""

    def __init__(self, onnx: Any, opset: int, param_names: dict[int, str]) -> None:
        self.onnx = onnx
        self.opset = opset
        self.nodes: list[Any] = []
        self.initializers: dict[str, Any] = {}
        self.values: dict[int, str] = {}  # id(tensor) -> value name
        self.keep: list[Any] = []  # keeps traced tensors alive (ids stay unique)
        self.param_names = param_names  # id(parameter/buffer) -> state_dict name
        self.scope: list[str] = []
        self.used_names: set[str] = set()
        self.depth = 0  # > 0 while a recorded op or module runs (nothing records)
        # Tensors created inside forward from no traced input (factories such as
        # ``torch.full``, and ops over such tensors): exported as initializers holding
        # their export-time value. ``const_names`` caches the initializer of each.
        self.consts: dict[int, Tensor] = {}
        self.const_names: dict[int, str] = {}
        self.forward_consts: list[tuple[str, tuple[int, ...]]] = []

    # names
    def fresh(self, base: str) -> str:
        name, i = base, 0
        while name in self.used_names:
            i += 1
            name = f"{base}_{i}"
        self.used_names.add(name)
        return name

    def prefix(self) -> str:
        return "/" + "/".join(self.scope) if self.scope else ""

    # values
    def is_traced(self, t: Any) -> bool:
        return isinstance(t, Tensor) and id(t) in self.values

    def bind(self, t: Tensor, name: str) -> None:
        self.values[id(t)] = name
        self.keep.append(t)

    def name_of(self, t: Any, what: str) -> str:
        """The value name of tensor ``t``: traced, a parameter/buffer (an initializer
        named as in ``state_dict``), or an error."""
        if not isinstance(t, Tensor):
            raise TypeError(f"ONNX export: expected a Tensor for {what}, got {type(t)}")
        name = self.values.get(id(t))
        if name is not None:
            return name
        if id(t) in self.consts:
            name = self.const_names.get(id(t))
            if name is None:
                name = self.const(_to_numpy(t), "Constant")
                self.const_names[id(t)] = name
                self.forward_consts.append((name, tuple(t.shape)))
            return name
        pname = self.param_names.get(id(t))
        if pname is None:
            raise RuntimeError(
                f"ONNX export: {what} is a tensor that is neither an input of the "
                "model, nor one of its parameters or buffers, nor the result of an "
                "operation the exporter recorded, nor a constant made inside forward "
                "by a factory function (such as torch.full) from constants only: it "
                "came from an operation the exporter cannot see (a property such as "
                ".data); it cannot be exported"
            )
        if pname not in self.initializers:
            self.initializers[pname] = self.onnx.numpy_helper.from_array(_to_numpy(t), pname)
            self.used_names.add(pname)
        return pname

    def mark_consts(self, args: Any, out: Any) -> None:
        """Marks the tensors in ``out`` as constants when every tensor in ``args`` is
        one (a factory call has none): an op over constants made inside forward."""
        if not all(id(t) in self.consts for t in _tensors(args)):
            return
        for t in _tensors(out):
            if id(t) in self.values or id(t) in self.param_names:
                continue
            self.consts[id(t)] = t
            self.const_names.pop(id(t), None)  # an in-place op changed its value
            self.keep.append(t)

    def const(self, array: np.ndarray, hint: str) -> str:
        """A new initializer holding ``array``."""
        name = self.fresh(f"{self.prefix()}/{hint}")
        self.initializers[name] = self.onnx.numpy_helper.from_array(array, name)
        return name

    def node(self, op: str, inputs: Sequence[str], n_out: int = 1, **attrs: Any) -> list[str]:
        """Appends node ``op``; returns its output names."""
        base = self.fresh(f"{self.prefix()}/{op}")
        outs = [self.fresh(f"{base}_output_{i}") for i in range(n_out)]
        self.nodes.append(self.onnx.helper.make_node(op, list(inputs), outs, name=base, **attrs))
        return outs

    def unary(self, op: str, x: Any, out: Tensor, **attrs: Any) -> None:
        self.bind(out, self.node(op, [self.name_of(x, "input")], **attrs)[0])


def _to_numpy(t: Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().numpy())


def _np_dtype(t: Tensor) -> Any:
    return _to_numpy(t.reshape(-1)[:0]).dtype if t.numel() else _to_numpy(t).dtype


# -------------------------------------------------------------- module exporters

_ModuleExporter = Callable[[_Graph, Any, tuple[Any, ...], dict[str, Any], Any], None]
_MODULE_EXPORTERS: dict[type, _ModuleExporter] = {}


def _module(*types: type) -> Callable[[_ModuleExporter], _ModuleExporter]:
    def register(fn: _ModuleExporter) -> _ModuleExporter:
        for t in types:
            _MODULE_EXPORTERS[t] = fn
        return fn

    return register


def _tuple(v: Any, n: int) -> list[int]:
    if isinstance(v, (tuple, list)):
        return [int(x) for x in v]
    return [int(v)] * n


@_module(nn.Linear)
def _linear(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    xn = g.name_of(x, "input")
    w = g.name_of(m.weight, "weight")
    if x.dim() == 2:
        ins = [xn, w] + ([g.name_of(m.bias, "bias")] if m.bias is not None else [])
        g.bind(out, g.node("Gemm", ins, alpha=1.0, beta=1.0, transB=1)[0])
        return
    wt = g.node("Transpose", [w], perm=[1, 0])[0]
    y = g.node("MatMul", [xn, wt])[0]
    if m.bias is not None:
        y = g.node("Add", [y, g.name_of(m.bias, "bias")])[0]
    g.bind(out, y)


@_module(nn.Conv1d, nn.Conv2d, nn.Conv3d)
def _conv(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    nd = len(m.kernel_size)
    if m.padding_mode != "zeros":
        raise _unsupported(type(m).__name__, g.opset, f"padding_mode='{m.padding_mode}'")
    kernel = _tuple(m.kernel_size, nd)
    dil = _tuple(m.dilation, nd)
    if isinstance(m.padding, str):
        if m.padding == "valid":
            begin = end = [0] * nd
        else:  # 'same' (stride 1): PyTorch puts the odd extra element at the end
            total = [d * (k - 1) for d, k in zip(dil, kernel)]
            begin = [t // 2 for t in total]
            end = [t - b for t, b in zip(total, begin)]
    else:
        begin = end = _tuple(m.padding, nd)
    ins = [g.name_of(args[0], "input"), g.name_of(m.weight, "weight")]
    if m.bias is not None:
        ins.append(g.name_of(m.bias, "bias"))
    y = g.node(
        "Conv",
        ins,
        kernel_shape=kernel,
        strides=_tuple(m.stride, nd),
        pads=list(begin) + list(end),
        dilations=dil,
        group=int(m.groups),
    )[0]
    g.bind(out, y)


@_module(nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)
def _batchnorm(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    if m.training or m.running_mean is None:
        raise _unsupported(
            type(m).__name__,
            g.opset,
            "batch statistics (training mode or track_running_stats=False)",
        )
    x = args[0]
    if m.affine:
        scale, bias = g.name_of(m.weight, "weight"), g.name_of(m.bias, "bias")
    else:
        dt = _to_numpy(m.running_mean).dtype
        scale = g.const(np.ones(m.num_features, dt), "scale")
        bias = g.const(np.zeros(m.num_features, dt), "bias")
    ins = [
        g.name_of(x, "input"),
        scale,
        bias,
        g.name_of(m.running_mean, "running_mean"),
        g.name_of(m.running_var, "running_var"),
    ]
    y = g.node("BatchNormalization", ins, epsilon=float(m.eps))[0]
    g.bind(out, y)


@_module(nn.ReLU)
def _relu_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("Relu", args[0], out)


@_module(nn.Sigmoid)
def _sigmoid_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("Sigmoid", args[0], out)


@_module(nn.Tanh)
def _tanh_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("Tanh", args[0], out)


@_module(nn.LeakyReLU)
def _leaky_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("LeakyRelu", args[0], out, alpha=float(m.negative_slope))


def _gelu(g: _Graph, x: Any, out: Tensor, approximate: str) -> None:
    # Opset 17 has no Gelu (it arrives in opset 20): PyTorch's decomposition.
    xn = g.name_of(x, "input")
    dt = _np_dtype(x)

    def c(v: float, hint: str) -> str:
        return g.const(np.array(v, dt), hint)

    if approximate == "tanh":
        cube = g.node("Mul", [xn, g.node("Mul", [xn, xn])[0]])[0]
        inner = g.node("Add", [xn, g.node("Mul", [cube, c(0.044715, "k")])[0]])[0]
        inner = g.node("Mul", [inner, c(math.sqrt(2.0 / math.pi), "sqrt_2_over_pi")])[0]
        t = g.node("Tanh", [inner])[0]
    else:
        t = g.node("Erf", [g.node("Div", [xn, c(math.sqrt(2.0), "sqrt_2")])[0]])[0]
    one_plus = g.node("Add", [t, c(1.0, "one")])[0]
    y = g.node("Mul", [g.node("Mul", [xn, one_plus])[0], c(0.5, "half")])[0]
    g.bind(out, y)


@_module(nn.GELU)
def _gelu_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    _gelu(g, args[0], out, m.approximate)


def _softmax_axis(x: Tensor, dim: Any) -> int:
    if dim is None:  # PyTorch's legacy implicit dim
        return 0 if x.dim() in (0, 1, 3) else 1
    return int(dim)


@_module(nn.Softmax)
def _softmax_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("Softmax", args[0], out, axis=_softmax_axis(args[0], m.dim))


@_module(nn.LogSoftmax)
def _logsoftmax_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("LogSoftmax", args[0], out, axis=_softmax_axis(args[0], m.dim))


@_module(nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.Identity)
def _identity_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    if getattr(m, "training", False) and not isinstance(m, nn.Identity) and m.p > 0:
        raise _unsupported(type(m).__name__, g.opset, "dropout in training mode")
    g.bind(out, g.name_of(args[0], "input"))


@_module(nn.Flatten)
def _flatten_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    _flatten(g, args[0], m.start_dim, m.end_dim, out)


def _pool_common(m: Any, nd: int) -> dict[str, Any]:
    kernel = _tuple(m.kernel_size, nd)
    stride = _tuple(m.stride if m.stride is not None else m.kernel_size, nd)
    pad = _tuple(m.padding, nd)
    return {
        "kernel_shape": kernel,
        "strides": stride,
        "pads": pad + pad,
        "ceil_mode": int(bool(m.ceil_mode)),
    }


@_module(nn.MaxPool1d, nn.MaxPool2d, nn.MaxPool3d)
def _maxpool_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Any) -> None:
    if m.return_indices:
        raise _unsupported(type(m).__name__, g.opset, "return_indices=True")
    nd = args[0].dim() - 2
    attrs = _pool_common(m, nd)
    attrs["dilations"] = _tuple(m.dilation, nd)
    g.unary("MaxPool", args[0], out, **attrs)


@_module(nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d)
def _avgpool_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    if getattr(m, "divisor_override", None) is not None:
        raise _unsupported(type(m).__name__, g.opset, "divisor_override")
    attrs = _pool_common(m, args[0].dim() - 2)
    attrs["count_include_pad"] = int(bool(m.count_include_pad))
    g.unary("AveragePool", args[0], out, **attrs)


@_module(nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d, nn.AdaptiveAvgPool3d)
def _adaptive_avg_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    spatial = list(x.shape[2:])
    want = [
        s if o is None else int(o)
        for o, s in zip(_tuple_none(m.output_size, len(spatial)), spatial)
    ]
    if all(o == 1 for o in want):
        g.unary("GlobalAveragePool", x, out)
    elif all(s % o == 0 for s, o in zip(spatial, want)):
        k = [s // o for s, o in zip(spatial, want)]
        g.unary("AveragePool", x, out, kernel_shape=k, strides=k)
    else:
        raise _unsupported(
            type(m).__name__,
            g.opset,
            f"output size {tuple(want)} does not divide input size {tuple(spatial)}",
        )


def _tuple_none(v: Any, n: int) -> list[Any]:
    return list(v) if isinstance(v, (tuple, list)) else [v] * n


# Recurrent layers: one ONNX LSTM/GRU/RNN node per layer (both directions in one).
# ONNX orders the gates differently: PyTorch's LSTM chunks are (i, f, g, o), ONNX's
# (i, o, f, c); GRU (r, z, n) vs (z, r, h), with linear_before_reset=1 being PyTorch's
# ``r * (W_hn h + b_hn)``.
_RNN_GATES = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}


def _gates(a: np.ndarray, order: list[int], hidden: int) -> np.ndarray:
    return np.concatenate([a[i * hidden : (i + 1) * hidden] for i in order], axis=0)


@_module(nn.LSTM, nn.GRU, nn.RNN)
def _rnn_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Any) -> None:
    kind = type(m).__name__
    x = args[0]
    if not isinstance(x, Tensor):
        raise _unsupported(kind, g.opset, "packed sequences")
    if x.dim() != 3:
        raise _unsupported(kind, g.opset, "unbatched (2-D) input")
    if getattr(m, "proj_size", 0):
        raise _unsupported(kind, g.opset, "proj_size > 0")
    hx = _arg(args, kwargs, 1, "hx", None)
    h0, c0 = (hx if hx is not None else (None, None)) if m.mode == "LSTM" else (hx, None)
    nd = 2 if m.bidirectional else 1
    hidden = m.hidden_size
    order = _RNN_GATES[m.mode]
    attrs: dict[str, Any] = {
        "hidden_size": hidden,
        "direction": "bidirectional" if nd == 2 else "forward",
    }
    if m.mode == "GRU":
        attrs["linear_before_reset"] = 1
    elif m.mode != "LSTM":
        attrs["activations"] = ["Tanh" if m.mode == "RNN_TANH" else "Relu"] * nd
    op = {"LSTM": "LSTM", "GRU": "GRU"}.get(m.mode, "RNN")
    cur = g.name_of(x, "input")
    if m.batch_first:
        cur = g.node("Transpose", [cur], perm=[1, 0, 2])[0]
    hs, cs = [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(nd):
            sfx = f"l{layer}" + ("_reverse" if d else "")
            w_ih = _to_numpy(getattr(m, f"weight_ih_{sfx}"))
            w_hh = _to_numpy(getattr(m, f"weight_hh_{sfx}"))
            ws.append(_gates(w_ih, order, hidden))
            rs.append(_gates(w_hh, order, hidden))
            if m.bias:
                b_ih = _to_numpy(getattr(m, f"bias_ih_{sfx}"))
                b_hh = _to_numpy(getattr(m, f"bias_hh_{sfx}"))
                bs.append(
                    np.concatenate([_gates(b_ih, order, hidden), _gates(b_hh, order, hidden)])
                )
            else:
                bs.append(np.zeros(2 * w_ih.shape[0], w_ih.dtype))
        ins = [
            cur,
            g.const(np.stack(ws), f"W_l{layer}"),
            g.const(np.stack(rs), f"R_l{layer}"),
            g.const(np.stack(bs), f"B_l{layer}"),
            "",
        ]

        def state(t: Any, hint: str, layer: int = layer) -> str:
            if t is None:
                return ""
            starts = g.const(np.array([layer * nd], np.int64), "starts")
            ends = g.const(np.array([(layer + 1) * nd], np.int64), "ends")
            axes = g.const(np.array([0], np.int64), "axes")
            return g.node("Slice", [g.name_of(t, hint), starts, ends, axes])[0]

        ins.append(state(h0, "h0"))
        if op == "LSTM":
            ins.append(state(c0, "c0"))
        while ins and ins[-1] == "":
            ins.pop()
        res = g.node(op, ins, n_out=3 if op == "LSTM" else 2, **attrs)
        y = g.node("Transpose", [res[0]], perm=[0, 2, 1, 3])[0]  # (L, N, dirs, H)
        cur = g.node("Reshape", [y, g.const(np.array([0, 0, -1], np.int64), "shape")])[0]
        hs.append(res[1])
        if op == "LSTM":
            cs.append(res[2])
    if m.batch_first:
        cur = g.node("Transpose", [cur], perm=[1, 0, 2])[0]

    def stack(names: list[str]) -> str:
        return names[0] if len(names) == 1 else g.node("Concat", names, axis=0)[0]

    g.bind(out[0], cur)
    if op == "LSTM":
        g.bind(out[1][0], stack(hs))
        g.bind(out[1][1], stack(cs))
    else:
        g.bind(out[1], stack(hs))


@_module(nn.Embedding)
def _embedding_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    if m.max_norm is not None:
        raise _unsupported("Embedding", g.opset, "max_norm")
    ins = [g.name_of(m.weight, "weight"), g.name_of(args[0], "indices")]
    g.bind(out, g.node("Gather", ins, axis=0)[0])


@_module(nn.LayerNorm)
def _layernorm_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Tensor) -> None:
    shape = tuple(m.normalized_shape)
    dt = _np_dtype(args[0])
    if m.weight is not None:
        scale = g.name_of(m.weight, "weight")
    else:
        scale = g.const(np.ones(shape, dt), "scale")
    ins = [g.name_of(args[0], "input"), scale]
    if getattr(m, "bias", None) is not None:
        ins.append(g.name_of(m.bias, "bias"))
    y = g.node("LayerNormalization", ins, axis=-len(shape), epsilon=float(m.eps))[0]
    g.bind(out, y)


def _reduce(g: _Graph, op: str, x: str, axes: list[int], keepdims: int) -> str:
    """A Reduce* node: axes are an input from opset 18, an attribute before."""
    if g.opset >= 18:
        axes_name = g.const(np.array(axes, np.int64), "axes")
        return g.node(op, [x, axes_name], keepdims=keepdims)[0]
    return g.node(op, [x], axes=axes, keepdims=keepdims)[0]


def _is_bool(t: Tensor) -> bool:
    return _np_dtype(t) == np.bool_


def _additive_mask(g: _Graph, mask: Tensor, hint: str, dt: Any) -> str:
    """``mask`` as a float mask added to the scores: a bool mask (True: masked, as
    PyTorch's ``_canonical_mask``) becomes ``Where(mask, -inf, 0)``."""
    name = g.name_of(mask, hint)
    if not _is_bool(mask):
        return name
    neg = g.const(np.array(-np.inf, dt), "neg_inf")
    return g.node("Where", [name, neg, g.const(np.array(0, dt), "zero")])[0]


def _causal(g: _Graph, scores: str, dt: Any) -> str:
    """Scores with the keys ``j > i`` of query ``i`` at ``-inf`` (top-left aligned, as
    PyTorch's ``is_causal``), the mask computed in the graph from the scores' last
    two dims, so it follows dynamic sequence lengths."""
    dims = g.node("Shape", [scores], start=-2)[0]
    one = g.onnx.numpy_helper.from_array(np.ones(1, dt), "value")
    ones = g.node("ConstantOfShape", [dims], value=one)[0]
    keep = g.node("Trilu", [ones], upper=0)[0]
    masked = g.node("Equal", [keep, g.const(np.array(0, dt), "zero")])[0]
    neg = g.const(np.array(-np.inf, dt), "neg_inf")
    return g.node("Where", [masked, neg, scores])[0]


def _softmax_rows(g: _Graph, scores: str, dt: Any, safe: bool) -> str:
    """Softmax over the last axis; ``safe``: a row whose scores are all ``-inf`` (a
    query that sees no key) gives zeros instead of NaN, as rustgrad's and PyTorch's
    fused attention do."""
    probs = g.node("Softmax", [scores], axis=-1)[0]
    if not safe:
        return probs
    row_max = _reduce(g, "ReduceMax", scores, [-1], 1)
    dead = g.node("Equal", [row_max, g.const(np.array(-np.inf, dt), "neg_inf")])[0]
    return g.node("Where", [dead, g.const(np.array(0, dt), "zero"), probs])[0]


@_module(nn.MultiheadAttention)
def _mha_m(g: _Graph, m: Any, args: tuple, kwargs: dict, out: Any) -> None:
    # The computation of F.multi_head_attention_forward, batch-first inside:
    # (N, L, E) -> heads (N, h, L, d); scores (N, h, L, S [+ bias_k] [+ zero column]).
    names = ("query", "key", "value", "key_padding_mask", "need_weights", "attn_mask")
    names += ("average_attn_weights", "is_causal")
    defaults = (None, None, None, None, True, None, True, False)
    a = {n: _arg(args, kwargs, i, n, d) for i, (n, d) in enumerate(zip(names, defaults))}
    q, k, v = a["query"], a["key"], a["value"]
    kpm, attn_mask = a["key_padding_mask"], a["attn_mask"]
    need_weights = bool(a["need_weights"])
    if m.training and m.dropout > 0:
        raise _unsupported("MultiheadAttention", g.opset, "dropout in training mode")
    batched = q.dim() == 3
    e, h, d = m.embed_dim, m.num_heads, m.head_dim
    dt = _np_dtype(q)
    if m._qkv_same_embed_dim:
        w = _to_numpy(m.in_proj_weight)
        wq, wk, wv = w[:e], w[e : 2 * e], w[2 * e :]
    else:
        wq, wk, wv = (_to_numpy(t) for t in (m.q_proj_weight, m.k_proj_weight, m.v_proj_weight))
    b = _to_numpy(m.in_proj_bias) if m.in_proj_bias is not None else None

    def project(t: Any, wt: np.ndarray, i: int, hint: str) -> str:
        xn = g.name_of(t, hint)
        if not batched:
            xn = g.node("Unsqueeze", [xn, g.const(np.array([0], np.int64), "axes")])[0]
        elif not m.batch_first:
            xn = g.node("Transpose", [xn], perm=[1, 0, 2])[0]  # (N, L, E)
        y = g.node("MatMul", [xn, g.const(np.ascontiguousarray(wt.T), f"{hint}_weight")])[0]
        if b is not None:
            y = g.node("Add", [y, g.const(b[i * e : (i + 1) * e], f"{hint}_bias")])[0]
        heads = g.const(np.array([0, 0, h, d], np.int64), "shape")
        return g.node("Reshape", [y, heads])[0]  # (N, L, h, d)

    qh = g.node("Transpose", [project(q, wq, 0, "q")], perm=[0, 2, 1, 3])[0]
    kh = g.node("Transpose", [project(k, wk, 1, "k")], perm=[0, 2, 3, 1])[0]
    vh = g.node("Transpose", [project(v, wv, 2, "v")], perm=[0, 2, 1, 3])[0]
    qh = g.node("Mul", [qh, g.const(np.array(1.0 / math.sqrt(d), dt), "scale")])[0]
    scores = g.node("MatMul", [qh, kh])[0]
    # Eager drops the mask and lets the fused kernel apply causality exactly when
    # is_causal, no key padding mask and no weights; a mask that is a graph value
    # (an input of the model) is kept, so the file honours the mask it is fed.
    causal = bool(a["is_causal"]) and kpm is None and not need_weights
    if causal and attn_mask is not None and g.is_traced(attn_mask):
        causal = False
    if attn_mask is not None and not causal:
        mask = _additive_mask(g, attn_mask, "attn_mask", dt)
        if attn_mask.dim() == 3:  # (N * h, L, S) -> (N, h, L, S)
            tail = g.node("Shape", [mask], start=1)[0]
            lead = g.const(np.array([-1, h], np.int64), "shape")
            target = g.node("Concat", [lead, tail], axis=0)[0]
            mask = g.node("Reshape", [mask, target])[0]
        scores = g.node("Add", [scores, mask])[0]
    if kpm is not None:
        pad = _additive_mask(g, kpm, "key_padding_mask", dt)  # (N, S) or (S,)
        axes = [0, 1, 2] if not batched else [1, 2]
        pad = g.node("Unsqueeze", [pad, g.const(np.array(axes, np.int64), "axes")])[0]
        scores = g.node("Add", [scores, pad])[0]
    extras: list[str] = []  # columns after the S keys: bias_k, then the zero attention
    if m.bias_k is not None:
        bk = _to_numpy(m.bias_k).reshape(h, d, 1)
        extras.append(g.node("MatMul", [qh, g.const(np.ascontiguousarray(bk), "bias_k")])[0])
    if m.add_zero_attn:
        extras.append(g.node("MatMul", [qh, g.const(np.zeros((d, 1), dt), "zero_key")])[0])
    n_extra = len(extras)
    if extras:
        scores = g.node("Concat", [scores, *extras], axis=-1)[0]
    if causal:
        scores = _causal(g, scores, dt)
    probs = _softmax_rows(g, scores, dt, safe=not need_weights)  # (N, h, L, S')
    attend = probs
    if extras:
        starts, ends, axes = ([0], [-n_extra], [-1])
        consts = [g.const(np.array(v, np.int64), "slice") for v in (starts, ends, axes)]
        attend = g.node("Slice", [probs, *consts])[0]
    ctx = g.node("MatMul", [attend, vh])[0]
    if m.bias_v is not None:
        consts = [g.const(np.array(v, np.int64), "slice") for v in ([-n_extra], [1 - n_extra])]
        consts.append(g.const(np.array([-1], np.int64), "axes"))
        if n_extra == 1:  # [-1, 0) is empty: the bias column is the last one
            consts[1] = g.const(np.array([np.iinfo(np.int64).max], np.int64), "slice")
        col = g.node("Slice", [probs, *consts])[0]  # (N, h, L, 1)
        bv = np.ascontiguousarray(_to_numpy(m.bias_v).reshape(h, 1, d))
        ctx = g.node("Add", [ctx, g.node("MatMul", [col, g.const(bv, "bias_v")])[0]])[0]
    ctx = g.node("Transpose", [ctx], perm=[0, 2, 1, 3])[0]
    ctx = g.node("Reshape", [ctx, g.const(np.array([0, 0, e], np.int64), "shape")])[0]
    wo = g.node("Transpose", [g.name_of(m.out_proj.weight, "out_proj.weight")], perm=[1, 0])[0]
    y = g.node("MatMul", [ctx, wo])[0]
    if m.out_proj.bias is not None:
        y = g.node("Add", [y, g.name_of(m.out_proj.bias, "out_proj.bias")])[0]
    axis0 = g.const(np.array([0], np.int64), "axes") if not batched else ""
    if not batched:
        y = g.node("Squeeze", [y, axis0])[0]
    elif not m.batch_first:
        y = g.node("Transpose", [y], perm=[1, 0, 2])[0]
    g.bind(out[0], y)
    if isinstance(out[1], Tensor):
        weights = _reduce(g, "ReduceMean", probs, [1], 0) if a["average_attn_weights"] else probs
        if not batched:
            weights = g.node("Squeeze", [weights, axis0])[0]
        g.bind(out[1], weights)


def _sdpa_f(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    """``F.scaled_dot_product_attention`` as MatMul/Softmax: bool masks by ``Where``,
    float masks added, ``is_causal`` computed in the graph; rows that see no key give
    zeros, as the fused kernel."""
    q, k, v = (_arg(args, kwargs, i, n, None) for i, n in enumerate(("query", "key", "value")))
    mask = _arg(args, kwargs, 3, "attn_mask", None)
    dropout_p = float(_arg(args, kwargs, 4, "dropout_p", 0.0))
    is_causal = bool(_arg(args, kwargs, 5, "is_causal", False))
    scale = _arg(args, kwargs, 6, "scale", None)
    gqa = bool(_arg(args, kwargs, 7, "enable_gqa", False))
    label = "F.scaled_dot_product_attention"
    if dropout_p > 0:
        raise _unsupported(label, g.opset, "dropout_p > 0")
    if gqa and q.dim() >= 3 and q.shape[-3] != k.shape[-3]:
        raise _unsupported(label, g.opset, "enable_gqa with fewer key heads")
    dt = _np_dtype(q)
    perm = list(range(k.dim()))
    perm[-2], perm[-1] = perm[-1], perm[-2]
    kt = g.node("Transpose", [g.name_of(k, "key")], perm=perm)[0]
    scores = g.node("MatMul", [g.name_of(q, "query"), kt])[0]
    factor = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    scores = g.node("Mul", [scores, g.const(np.array(factor, dt), "scale")])[0]
    if mask is not None:
        mn = g.name_of(mask, "attn_mask")
        if _is_bool(mask):  # True takes part in attention
            neg = g.const(np.array(-np.inf, dt), "neg_inf")
            scores = g.node("Where", [mn, scores, neg])[0]
        else:
            scores = g.node("Add", [scores, mn])[0]
    if is_causal:
        scores = _causal(g, scores, dt)
    probs = _softmax_rows(g, scores, dt, safe=True)
    g.bind(out, g.node("MatMul", [probs, g.name_of(v, "value")])[0])


# ------------------------------------------------------- tensor-op exporters

_OpExporter = Callable[[_Graph, tuple[Any, ...], dict[str, Any], Any], None]


def _arg(args: tuple, kwargs: dict, i: int, name: str, default: Any) -> Any:
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _shape_arg(args: tuple, start: int) -> list[int]:
    rest = args[start:]
    if (
        len(rest) == 1
        and isinstance(rest[0], (tuple, list))
        or (len(rest) == 1 and not isinstance(rest[0], int))
    ):
        return [int(s) for s in rest[0]]
    return [int(s) for s in rest]


def _reshape_to(g: _Graph, x: Tensor, target: list[int], out: Tensor) -> None:
    # Leading dims kept from the input are written as 0 ("copy this dim"), so a
    # dynamic batch dim stays dynamic, as PyTorch's ``x.view(x.size(0), -1)`` does.
    shape = list(x.shape)
    spec = list(target)
    for i, s in enumerate(spec):
        if i < len(shape) and s == shape[i] and s != -1:
            spec[i] = 0
        else:
            break
    sname = g.const(np.array(spec, np.int64), "shape")
    g.bind(out, g.node("Reshape", [g.name_of(x, "input"), sname])[0])


def _flatten(g: _Graph, x: Tensor, start: int, end: int, out: Tensor) -> None:
    nd = max(x.dim(), 1)
    start = start % nd
    end = end % nd
    if x.dim() == 0 or start >= end:
        _reshape_to(g, x, list(out.shape), out)
        return
    target = [0] * start + [-1] + [int(s) for s in x.shape[end + 1 :]]
    sname = g.const(np.array(target, np.int64), "shape")
    g.bind(out, g.node("Reshape", [g.name_of(x, "input"), sname])[0])


def _operand(g: _Graph, v: Any, like: Tensor) -> str:
    if isinstance(v, Tensor):
        return g.name_of(v, "operand")
    if isinstance(v, (bool, int, float)):
        return g.const(np.array(v, _np_dtype(like)), "scalar")
    raise TypeError(f"ONNX export: unsupported operand {type(v).__name__}")


def _binary(op: str, reverse: bool = False) -> _OpExporter:
    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        a, b = args[0], _arg(args, kwargs, 1, "other", None)
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            raise _unsupported(f"{op.lower()} with alpha != 1", g.opset)
        like = a if isinstance(a, Tensor) else b
        an, bn = _operand(g, a, like), _operand(g, b, like)
        if reverse:
            an, bn = bn, an
        g.bind(out, g.node(op, [an, bn])[0])

    return emit


def _unary(op: str, **attrs: Any) -> _OpExporter:
    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        g.unary(op, args[0], out, **attrs)

    return emit


def _view(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    if (
        len(args) == 2
        and not isinstance(args[1], (int, tuple, list))
        and not hasattr(args[1], "__len__")
    ):
        raise _unsupported("view(dtype)", g.opset)
    _reshape_to(g, args[0], _shape_arg(args, 1), out)


def _flatten_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    start = _arg(args, kwargs, 1, "start_dim", 0)
    end = _arg(args, kwargs, 2, "end_dim", -1)
    _flatten(g, args[0], int(start), int(end), out)


def _softmax_op(op: str) -> _OpExporter:
    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        dim = _arg(args, kwargs, 1, "dim", None)
        g.unary(op, args[0], out, axis=_softmax_axis(args[0], dim))

    return emit


def _identity_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.bind(out, g.name_of(args[0], "input"))


def _gelu_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    _gelu(g, args[0], out, kwargs.get("approximate", "none"))


def _leaky_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    slope = _arg(args, kwargs, 1, "negative_slope", 0.01)
    g.unary("LeakyRelu", args[0], out, alpha=float(slope))


def _matmul_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    a, b = args[0], _arg(args, kwargs, 1, "other", None)
    g.bind(out, g.node("MatMul", [g.name_of(a, "input"), g.name_of(b, "other")])[0])


def _transpose_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    nd = x.dim()
    d0 = int(_arg(args, kwargs, 1, "dim0", 0)) % max(nd, 1)
    d1 = int(_arg(args, kwargs, 2, "dim1", 1)) % max(nd, 1)
    perm = list(range(nd))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    g.unary("Transpose", x, out, perm=perm)


def _permute_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    perm = [int(p) % max(x.dim(), 1) for p in _shape_arg(args, 1)]
    g.unary("Transpose", x, out, perm=perm)


def _relu_f(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    g.unary("Relu", args[0], out)


def _dropout_f(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    p = _arg(args, kwargs, 1, "p", 0.5)
    training = _arg(args, kwargs, 2, "training", True)
    if training and p > 0:
        raise _unsupported("dropout", g.opset, "dropout in training mode")
    _identity_op(g, args, kwargs, out)


def _int64(g: _Graph, values: Any, hint: str) -> str:
    return g.const(np.array(values, np.int64), hint)


def _getitem_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    """``x[key]``, left to right over the key: a slice -> Slice, an int -> Gather of a
    scalar (the dim goes), ``None`` -> Unsqueeze, an int tensor or list -> Gather (its
    dims replace the indexed one; ints are applied first, as PyTorch does), a 1-D bool
    tensor -> Compress, a k-D bool tensor on the leading dims -> GatherND of its
    NonZero positions. At most one tensor/list index."""
    x, key = args[0], args[1]
    key = key if isinstance(key, tuple) else (key,)
    label = "Tensor.__getitem__"
    if any(isinstance(k, bool) for k in key):
        raise _unsupported(label, g.opset, "bool scalars as indices")
    advanced = [k for k in key if isinstance(k, (Tensor, list))]
    if len(advanced) > 1:
        raise _unsupported(label, g.opset, "more than one tensor or list index")
    n_real = 0
    for k in key:
        if isinstance(k, Tensor) and _is_bool(k):
            n_real += k.dim()
        elif k is not None and k is not Ellipsis:
            n_real += 1
    full: list[Any] = []
    for k in key:
        full.extend([slice(None)] * (x.dim() - n_real) if k is Ellipsis else [k])
    y = g.name_of(x, "input")
    axis = 0  # the output axis the next key element applies to
    for k in full:
        if k is None:
            y = g.node("Unsqueeze", [y, _int64(g, [axis], "axes")])[0]
            axis += 1
        elif isinstance(k, slice):
            if k != slice(None):
                step = 1 if k.step is None else int(k.step)
                if step <= 0:
                    raise _unsupported(label, g.opset, "non-positive steps")
                start = 0 if k.start is None else int(k.start)
                stop = np.iinfo(np.int64).max if k.stop is None else int(k.stop)
                consts = [_int64(g, [v], h) for v, h in ((start, "starts"), (stop, "ends"))]
                consts += [_int64(g, [axis], "axes"), _int64(g, [step], "steps")]
                y = g.node("Slice", [y, *consts])[0]
            axis += 1
        elif isinstance(k, list):
            if any(isinstance(i, bool) or not isinstance(i, int) for i in k):
                raise _unsupported(label, g.opset, "lists of anything but ints")
            y = g.node("Gather", [y, _int64(g, k, "index")], axis=axis)[0]
            axis += 1
        elif isinstance(k, Tensor):
            if _is_bool(k):
                if k.dim() == 0:
                    raise _unsupported(label, g.opset, "a 0-dim bool index")
                mask = g.name_of(k, "index")
                if k.dim() == 1:
                    y = g.node("Compress", [y, mask], axis=axis)[0]
                elif axis == 0:
                    pos = g.node("Transpose", [g.node("NonZero", [mask])[0]], perm=[1, 0])[0]
                    y = g.node("GatherND", [y, pos])[0]
                else:
                    raise _unsupported(label, g.opset, "a multi-dim bool index after dim 0")
                axis += 1
            elif k.is_floating_point():
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            else:
                y = g.node("Gather", [y, g.name_of(k, "index")], axis=axis)[0]
                axis += k.dim()
        else:
            y = g.node("Gather", [y, _int64(g, int(k), "index")], axis=axis)[0]
    g.bind(out, y)


def _const_like(g: _Graph, value: Any, like: Tensor) -> str:
    if isinstance(value, Tensor):
        return g.name_of(value, "value")
    return g.const(np.array(value, _np_dtype(like)), "value")


def _masked_fill_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    mask = _arg(args, kwargs, 1, "mask", None)
    value = _arg(args, kwargs, 2, "value", None)
    ins = [g.name_of(mask, "mask"), _const_like(g, value, out), g.name_of(x, "input")]
    g.bind(out, g.node("Where", ins)[0])


def _where_f(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    cond = _arg(args, kwargs, 0, "condition", None)
    a, b = _arg(args, kwargs, 1, "input", None), _arg(args, kwargs, 2, "other", None)
    if a is None or b is None:
        raise _unsupported("rustgrad.where", g.opset, "the one-argument form (nonzero)")
    ins = [g.name_of(cond, "condition"), _const_like(g, a, out), _const_like(g, b, out)]
    g.bind(out, g.node("Where", ins)[0])


def _where_m(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    # x.where(condition, y) is where(condition, x, y)
    cond = _arg(args, kwargs, 1, "condition", None)
    other = _arg(args, kwargs, 2, "other", None)
    _where_f(g, (cond, args[0], other), {}, out)


def _compare(op: str, negate: bool = False) -> _OpExporter:
    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        a, b = args[0], _arg(args, kwargs, 1, "other", None)
        like = a if isinstance(a, Tensor) else b
        y = g.node(op, [_operand(g, a, like), _operand(g, b, like)])[0]
        g.bind(out, g.node("Not", [y])[0] if negate else y)

    return emit


def _not_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    if not _is_bool(args[0]):
        raise _unsupported("bitwise_not", g.opset, "only bool tensors")
    g.unary("Not", args[0], out)


def _unsqueeze_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    dim = int(_arg(args, kwargs, 1, "dim", None)) % out.dim()
    g.bind(out, g.node("Unsqueeze", [g.name_of(args[0], "input"), _int64(g, [dim], "axes")])[0])


def _squeeze_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    x = args[0]
    dim = _arg(args, kwargs, 1, "dim", None)
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [int(d) for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
        dims = [d % max(x.dim(), 1) for d in dims if x.shape[d % max(x.dim(), 1)] == 1]
    if not dims:
        g.bind(out, g.name_of(x, "input"))
        return
    g.bind(out, g.node("Squeeze", [g.name_of(x, "input"), _int64(g, dims, "axes")])[0])


def _expand_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    # ONNX Expand broadcasts both ways: a kept dim (-1) is written as 1.
    shape = [1 if s == -1 else s for s in _shape_arg(args, 1)]
    g.bind(out, g.node("Expand", [g.name_of(args[0], "input"), _int64(g, shape, "shape")])[0])


def _full_like(fill: float | None) -> _OpExporter:
    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        value = _arg(args, kwargs, 1, "fill_value", None) if fill is None else fill
        dims = g.node("Shape", [g.name_of(args[0], "input")])[0]
        proto = g.onnx.numpy_helper.from_array(np.array([value], _np_dtype(out)), "value")
        g.bind(out, g.node("ConstantOfShape", [dims], value=proto)[0])

    return emit


def _reduce_bool(op: str) -> _OpExporter:
    """``all``/``any``: the input as 0/1 floats, ReduceMin/ReduceMax, back to bool."""

    def emit(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
        x = args[0]
        dim = _arg(args, kwargs, 1, "dim", None)
        keep = int(bool(_arg(args, kwargs, 2, "keepdim", False)))
        nd = max(x.dim(), 1)
        if dim is None:
            axes = list(range(x.dim()))
        else:
            axes = [int(d) % nd for d in (dim if isinstance(dim, (tuple, list)) else [dim])]
        y = g.name_of(x, "input")
        if not _is_bool(x):
            y = g.node("Cast", [y], to=g.onnx.TensorProto.BOOL)[0]
        y = g.node("Cast", [y], to=g.onnx.TensorProto.FLOAT)[0]
        if axes:
            y = _reduce(g, op, y, axes, keep)
        g.bind(out, g.node("Cast", [y], to=g.onnx.TensorProto.BOOL)[0])

    return emit


def _cast_op(g: _Graph, args: tuple, kwargs: dict, out: Tensor) -> None:
    to = g.onnx.helper.np_dtype_to_tensor_dtype(_np_dtype(out))
    if _np_dtype(out) == _np_dtype(args[0]):
        g.bind(out, g.name_of(args[0], "input"))
    else:
        g.bind(out, g.node("Cast", [g.name_of(args[0], "input")], to=to)[0])


# Tensor methods with a mapping (the in-place ones rebind their tensor).
_METHOD_EXPORTERS: dict[str, _OpExporter] = {
    "__add__": _binary("Add"),
    "__radd__": _binary("Add", reverse=True),
    "__iadd__": _binary("Add"),
    "add": _binary("Add"),
    "add_": _binary("Add"),
    "__sub__": _binary("Sub"),
    "__rsub__": _binary("Sub", reverse=True),
    "__isub__": _binary("Sub"),
    "sub": _binary("Sub"),
    "sub_": _binary("Sub"),
    "__mul__": _binary("Mul"),
    "__rmul__": _binary("Mul", reverse=True),
    "__imul__": _binary("Mul"),
    "mul": _binary("Mul"),
    "mul_": _binary("Mul"),
    "__truediv__": _binary("Div"),
    "__rtruediv__": _binary("Div", reverse=True),
    "__itruediv__": _binary("Div"),
    "div": _binary("Div"),
    "div_": _binary("Div"),
    "__matmul__": _matmul_op,
    "matmul": _matmul_op,
    "relu": _unary("Relu"),
    "relu_": _unary("Relu"),
    "sigmoid": _unary("Sigmoid"),
    "tanh": _unary("Tanh"),
    "exp": _unary("Exp"),
    "__neg__": _unary("Neg"),
    "neg": _unary("Neg"),
    "view": _view,
    "reshape": _view,
    "flatten": _flatten_op,
    "softmax": _softmax_op("Softmax"),
    "log_softmax": _softmax_op("LogSoftmax"),
    "transpose": _transpose_op,
    "permute": _permute_op,
    "__getitem__": _getitem_op,
    "masked_fill": _masked_fill_op,
    "masked_fill_": _masked_fill_op,
    "where": _where_m,
    "eq": _compare("Equal"),
    "ne": _compare("Equal", negate=True),
    "__eq__": _compare("Equal"),
    "__ne__": _compare("Equal", negate=True),
    "all": _reduce_bool("ReduceMin"),
    "any": _reduce_bool("ReduceMax"),
    "__gt__": _compare("Greater"),
    "__lt__": _compare("Less"),
    "__ge__": _compare("GreaterOrEqual"),
    "__le__": _compare("LessOrEqual"),
    "gt": _compare("Greater"),
    "lt": _compare("Less"),
    "ge": _compare("GreaterOrEqual"),
    "le": _compare("LessOrEqual"),
    "__invert__": _not_op,
    "logical_not": _not_op,
    "unsqueeze": _unsqueeze_op,
    "squeeze": _squeeze_op,
    "expand": _expand_op,
    "float": _cast_op,
    "bool": _cast_op,
    "long": _cast_op,
    "to": _cast_op,
    "contiguous": _identity_op,
    "clone": _identity_op,
    "detach": _identity_op,
}

# Dunder methods that get the "unsupported" check when they have no mapping.
_CHECKED_DUNDERS = (
    "__pow__",
    "__rpow__",
    "__floordiv__",
    "__mod__",
    "__abs__",
)

# Methods that hand a traced tensor's values to Python (a warning, as PyTorch's).
_VALUE_READS = ("Tensor.item", "Tensor.tolist", "Tensor.numpy")

# Functions of ``rustgrad`` / ``rustgrad.nn.functional`` with a mapping.
_FUNCTION_EXPORTERS: dict[str, _OpExporter] = {
    "relu": _relu_f,
    "relu_": _relu_f,
    "sigmoid": _unary("Sigmoid"),
    "tanh": _unary("Tanh"),
    "softmax": _softmax_op("Softmax"),
    "log_softmax": _softmax_op("LogSoftmax"),
    "gelu": _gelu_op,
    "leaky_relu": _leaky_op,
    "flatten": _flatten_op,
    "reshape": _view,
    "add": _binary("Add"),
    "mul": _binary("Mul"),
    "matmul": _matmul_op,
    "transpose": _transpose_op,
    "permute": _permute_op,
    "dropout": _dropout_f,
    "scaled_dot_product_attention": _sdpa_f,
    "where": _where_f,
    "eq": _compare("Equal"),
    "ne": _compare("Equal", negate=True),
    "logical_not": _not_op,
    "all": _reduce_bool("ReduceMin"),
    "any": _reduce_bool("ReduceMax"),
    "unsqueeze": _unsqueeze_op,
    "squeeze": _squeeze_op,
    "zeros_like": _full_like(0),
    "ones_like": _full_like(1),
    "full_like": _full_like(None),
}


# ------------------------------------------------------------------ tracing


def _tensors(obj: Any) -> Iterator[Tensor]:
    if isinstance(obj, Tensor):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for o in obj:
            yield from _tensors(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors(o)


def _untraced(g: _Graph, out: Any, before: dict[int, str]) -> bool:
    """Whether a tensor in ``out`` is unknown to the trace, or is an input that an
    in-place op changed without recording it."""
    for t in _tensors(out):
        if id(t) not in g.values or before.get(id(t)) == g.values[id(t)]:
            return True
    return False


def _module_exporter(m: Any) -> _ModuleExporter | None:
    for cls in type(m).__mro__:
        fn = _MODULE_EXPORTERS.get(cls)
        if fn is not None:
            # A subclass with its own forward is traced through, not mapped.
            return fn if type(m).forward is cls.forward else None
    return None


class _Tracer:
    """Installs the recording layers for one export and removes them afterwards."""

    def __init__(self, graph: _Graph, module_names: dict[int, str], modules: list[Any]) -> None:
        self.g = graph
        self.module_names = module_names
        self.modules = modules
        self.saved: list[tuple[Any, str, Any]] = []

    def _patch(self, owner: Any, name: str, new: Any) -> None:
        self.saved.append((owner, name, owner.__dict__[name]))
        if isinstance(owner, nn.Module):
            owner.__dict__[name] = new  # an instance attribute, no __setattr__ logic
        else:
            setattr(owner, name, new)

    def restore(self) -> None:
        while self.saved:
            owner, name, old = self.saved.pop()
            if isinstance(owner, nn.Module):
                owner.__dict__[name] = old
            else:
                setattr(owner, name, old)

    @contextmanager
    def suspended(self) -> Iterator[None]:
        self.g.depth += 1
        try:
            yield
        finally:
            self.g.depth -= 1

    def install(self) -> None:
        g = self.g
        module_call = nn.Module.__call__

        def call(m: Any, *args: Any, **kwargs: Any) -> Any:
            if g.depth:
                return module_call(m, *args, **kwargs)
            name = self.module_names.get(id(m))
            exporter = _module_exporter(m)
            if exporter is None:
                inputs = [t for t in _tensors((args, kwargs)) if g.is_traced(t)]
                before = {id(t): g.values[id(t)] for t in inputs}
                if name:
                    g.scope.append(name)
                try:
                    out = module_call(m, *args, **kwargs)
                finally:
                    if name:
                        g.scope.pop()
                if inputs and _untraced(g, out, before):
                    kind = type(m).__name__
                    if next(iter(m.children()), None) is None:
                        raise _unsupported(kind, g.opset, "no ONNX mapping for module")
                    raise _unsupported(
                        kind,
                        g.opset,
                        "an operation in its forward has no ONNX mapping",
                    )
                return out
            if not any(g.is_traced(t) for t in _tensors((args, kwargs))):
                return module_call(m, *args, **kwargs)  # constants only
            with self.suspended():
                out = module_call(m, *args, **kwargs)
            if name:
                g.scope.append(name)
            try:
                with self.suspended():  # the exporter's own tensor calls record nothing
                    exporter(g, m, args, kwargs, out)
            finally:
                if name:
                    g.scope.pop()
            return out

        self._patch(nn.Module, "__call__", call)

        for name, fn in _METHOD_EXPORTERS.items():
            if name in Tensor.__dict__:
                old = Tensor.__dict__[name]
                self._patch(Tensor, name, self._recorder(f"Tensor.{name}", fn, old))
        for name, attr in list(Tensor.__dict__.items()):
            if name in _METHOD_EXPORTERS or not callable(attr):
                continue
            if name.startswith("_") and name not in _CHECKED_DUNDERS:
                continue  # private helpers: the public op calling them is named
            if isinstance(attr, (staticmethod, classmethod, type)):
                continue
            self._patch(Tensor, name, self._checker(f"Tensor.{name}", attr))
        import rustgrad

        for owner in (rustgrad, F):
            prefix = "rustgrad" if owner is rustgrad else "F"
            for name, attr in list(owner.__dict__.items()):
                if name in _FUNCTION_EXPORTERS or name.startswith("_"):
                    continue
                if isinstance(attr, (types.FunctionType, types.BuiltinFunctionType)):
                    self._patch(owner, name, self._checker(f"{prefix}.{name}", attr))
            for name, fn in _FUNCTION_EXPORTERS.items():
                if name in owner.__dict__ and callable(owner.__dict__[name]):
                    prefix = "rustgrad" if owner is rustgrad else "F"
                    old = owner.__dict__[name]
                    self._patch(owner, name, self._recorder(f"{prefix}.{name}", fn, old))
        # Functions stored on modules (TransformerEncoderLayer.activation = F.gelu) are
        # the unpatched objects: point them at the patched ones for the export.
        patched = {
            id(old): (old, getattr(owner, name))
            for owner, name, old in self.saved
            if owner is rustgrad or owner is F
        }
        for m in self.modules:
            for name, attr in list(vars(m).items()):
                hit = patched.get(id(attr))
                if hit is not None and hit[0] is attr:
                    self._patch(m, name, hit[1])

    def _recorder(self, label: str, emit: _OpExporter, original: Any) -> Callable[..., Any]:
        g = self.g
        tracer = self

        def record(*args: Any, **kwargs: Any) -> Any:
            if g.depth:
                return original(*args, **kwargs)
            if not any(g.is_traced(t) for t in _tensors((args, kwargs))):
                out = original(*args, **kwargs)
                g.mark_consts((args, kwargs), out)
                return out
            with tracer.suspended():
                out = original(*args, **kwargs)
            if not isinstance(out, Tensor):
                if label in ("Tensor.__eq__", "Tensor.__ne__"):
                    return out  # ``t == None`` and the like: no tensor, nothing to record
                raise _unsupported(label, g.opset, "it does not return one tensor")
            with tracer.suspended():
                emit(g, args, kwargs, out)
            return out

        return record

    def _checker(self, label: str, original: Any) -> Callable[..., Any]:
        g = self.g

        def check(*args: Any, **kwargs: Any) -> Any:
            if g.depth:
                return original(*args, **kwargs)
            inputs = [t for t in _tensors((args, kwargs)) if g.is_traced(t)]
            if not inputs:
                out = original(*args, **kwargs)
                g.mark_consts((args, kwargs), out)
                return out
            before = {id(t): g.values[id(t)] for t in inputs}
            if label in _VALUE_READS:
                warnings.warn(
                    f"ONNX export: {label} reads the value of a traced tensor into "
                    "Python; whatever is computed from it is fixed at its export-time "
                    "value (as PyTorch's TracerWarning)",
                    stacklevel=2,
                )
            out = original(*args, **kwargs)
            if _untraced(g, out, before):
                raise _unsupported(label, g.opset)
            return out

        return check


# ------------------------------------------------------------------ export


def _value_info(onnx: Any, name: str, t: Tensor, dyn: Mapping[int, str] | None) -> Any:
    elem = onnx.helper.np_dtype_to_tensor_dtype(_np_dtype(t))
    shape: list[Any] = list(t.shape)
    for axis, label in (dyn or {}).items():
        shape[int(axis)] = label
    return onnx.helper.make_tensor_value_info(name, elem, shape)


def _dyn_axes(
    dynamic_axes: Mapping[str, Any] | None, name: str, known: set[str]
) -> dict[int, str] | None:
    if not dynamic_axes or name not in dynamic_axes:
        return None
    spec = dynamic_axes[name]
    if isinstance(spec, Mapping):
        return {int(k): str(v) for k, v in spec.items()}
    return {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(spec)}


def _prune(g: _Graph, outputs: list[str], param_set: set[str]) -> None:
    """Drops the nodes no output depends on (ops recorded for Python control flow,
    such as ``(mask == causal).all()`` in ``_detect_is_causal_mask``) and the
    initializers only they read (parameters stay)."""
    needed = set(outputs)
    kept = []
    for node in reversed(g.nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    g.nodes = kept[::-1]
    for name in list(g.initializers):
        if name not in needed and name not in param_set:
            del g.initializers[name]


def _warn_fixed_constants(
    g: _Graph,
    graph_inputs: list[tuple[str, Tensor]],
    dynamic_axes: Mapping[str, Any] | None,
    known: set[str],
) -> None:
    """Warns (as PyTorch's ``TracerWarning``) when a tensor created inside forward,
    stored with its export-time value, has a dim of the size of a dynamic input axis:
    it probably depends on that size (``generate_square_subsequent_mask(x.size(0))``)
    and will not follow it."""
    sizes: dict[int, str] = {}
    for nm, t in graph_inputs:
        for axis, label in (_dyn_axes(dynamic_axes, nm, known) or {}).items():
            if t.shape[axis] > 1:
                sizes.setdefault(int(t.shape[axis]), label)
    for name, shape in g.forward_consts:
        hit = next((sizes[s] for s in shape if s in sizes), None)
        if hit is not None:
            warnings.warn(
                f"ONNX export: '{name}', a tensor created inside forward with shape "
                f"{list(shape)}, is stored with its export-time value, but dynamic axis "
                f"'{hit}' has one of its sizes: it will not follow that axis. Pass it "
                "as an input (or use is_causal) if it depends on the input's shape.",
                stacklevel=3,
            )


def _set_modes(model: Any, training: bool) -> list[tuple[Any, bool]]:
    saved = [(m, m.training) for m in model.modules()]
    for m, _ in saved:
        m.training = training
    return saved


def export(
    model: Any,
    args: Any = (),
    f: str | os.PathLike[str] | io.IOBase | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = True,
    external_data: bool = True,
    dynamic_shapes: Any = None,
    export_params: bool = True,
    keep_initializers_as_inputs: bool = False,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    do_constant_folding: bool = True,
    **unsupported: Any,
) -> None:
    """Exports ``model`` to ONNX by running it once on ``args``: ``torch.onnx.export``.

    The model runs in eval mode (``training=TrainingMode.EVAL``, the default; its
    modes are restored afterwards) and its parameters and buffers become the graph's
    initializers, named as in its ``state_dict``. Supported: Linear, Conv1d/2d/3d,
    BatchNorm (eval), LayerNorm, Embedding, ReLU/GELU/Sigmoid/Tanh/LeakyReLU,
    Softmax/LogSoftmax, max and average pooling, AdaptiveAvgPool (output 1 or dividing
    the input), Flatten, Dropout/Identity, LSTM/GRU/RNN, MultiheadAttention (masks,
    key padding, is_causal, bias_k/v, zero attention, kdim/vdim, unbatched),
    ``F.scaled_dot_product_attention``, Transformer encoder/decoder layers and
    ``nn.Transformer`` with masks, containers, and modules whose forward combines
    these with the tensor ops add/sub/mul/div, matmul, relu, view/reshape/flatten,
    transpose/permute, softmax, comparisons, masked_fill/where, unsqueeze/squeeze/
    expand, casts and indexing (ints, slices, None, one int/bool tensor or list).
    Tensors made inside forward from constants only (``torch.full``, a mask from
    ``generate_square_subsequent_mask(n)``) are stored with their export-time value.
    Anything else raises ``UnsupportedOperatorError`` naming it.

    Args:
        model: the ``nn.Module`` to export.
        args: the example input: a tensor or a tuple of positional arguments.
        f: a path or a binary file object to write the model to; ``None`` writes
            nothing (the model proto is still built and checked).
        kwargs: keyword arguments for ``model``'s forward.
        input_names, output_names: names of the graph's inputs / outputs, in order
            (default ``input``/``output``, numbered when several).
        opset_version: the ONNX opset (default 17; 17 up to the installed ``onnx``'s
            newest).
        dynamic_axes: ``{name: {axis: label}}`` or ``{name: [axis, ...]}``: axes of
            inputs/outputs whose size is symbolic (typically the batch axis).
        export_params: store the parameters in the file (``False``: they become
            graph inputs).
        keep_initializers_as_inputs: also list the initializers as graph inputs.
        training: ``TrainingMode.EVAL`` or ``PRESERVE`` (a model in training mode
            with batch norm or dropout then raises).
        verbose: print the graph.
        dynamo, external_data, dynamic_shapes, do_constant_folding: accepted for
            compatibility; rustgrad has one (tracing) exporter.

    Returns:
        None (PyTorch's TorchScript exporter also returns None).
    """
    if unsupported:
        raise TypeError(f"export() got an unexpected keyword argument '{next(iter(unsupported))}'")
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - dependency missing
        raise ImportError("rustgrad.onnx.export needs the 'onnx' package: pip install onnx") from e
    opset = _DEFAULT_OPSET if opset_version is None else int(opset_version)
    newest = onnx.defs.onnx_opset_version()
    if not _MIN_OPSET <= opset <= newest:
        raise ValueError(
            f"Unsupported ONNX opset version: {opset} (rustgrad exports opsets "
            f"{_MIN_OPSET} to {newest})"
        )
    if not isinstance(model, nn.Module):
        raise TypeError(f"export() expects an nn.Module, got {type(model).__name__}")
    if training == TrainingMode.TRAINING:
        raise _unsupported("training-mode export", opset, "use TrainingMode.EVAL")
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    kwargs = dict(kwargs or {})

    params: dict[int, str] = {}
    for pname, p in model.named_parameters(remove_duplicate=True):
        params.setdefault(id(p), pname)
    for bname, b in model.named_buffers():
        if b is not None:
            params.setdefault(id(b), bname)
    module_names = {id(m): n for n, m in model.named_modules() if n}
    g = _Graph(onnx, opset, params)

    flat_inputs = list(_tensors((args, kwargs)))
    names_in = list(input_names or [])
    graph_inputs = []
    for i, t in enumerate(flat_inputs):
        if i < len(names_in):
            nm = names_in[i]
        else:
            nm = "input" if len(flat_inputs) == 1 else f"input_{i}"
        if nm in g.used_names:
            raise ValueError(f"ONNX export: duplicate input name '{nm}'")
        g.used_names.add(nm)
        g.bind(t, nm)
        graph_inputs.append((nm, t))
    if len(names_in) > len(flat_inputs):
        raise ValueError(f"ONNX export: {len(names_in)} input_names for {len(flat_inputs)} inputs")

    saved_modes = _set_modes(model, False) if training == TrainingMode.EVAL else []
    tracer = _Tracer(g, module_names, list(model.modules()))
    from ..autograd.grad_mode import no_grad

    try:
        tracer.install()
        with no_grad():
            result = model(*args, **kwargs)
    finally:
        tracer.restore()
        for m, mode in saved_modes:
            m.training = mode

    outs = list(_tensors(result))
    if not outs:
        raise RuntimeError("ONNX export: the model returned no tensor")
    names_out = list(output_names or [])
    if len(names_out) > len(outs):
        raise ValueError(f"ONNX export: {len(names_out)} output_names for {len(outs)} outputs")
    input_set = {nm for nm, _ in graph_inputs}
    rename: dict[str, str] = {}
    graph_outputs = []
    for i, t in enumerate(outs):
        src = g.name_of(t, f"output {i}")
        nm = names_out[i] if i < len(names_out) else ("output" if len(outs) == 1 else f"output_{i}")
        produced = any(src in n.output for n in g.nodes)
        if produced and src not in rename and nm not in g.used_names:
            rename[src] = nm
        elif src != nm:
            if nm in g.used_names and nm not in rename.values():
                raise ValueError(f"ONNX export: output name '{nm}' is already used")
            g.nodes.append(onnx.helper.make_node("Identity", [rename.get(src, src)], [nm]))
        g.used_names.add(nm)
        graph_outputs.append((nm, t))
    for node in g.nodes:
        for seq in (node.input, node.output):
            for j, v in enumerate(seq):
                if v in rename:
                    seq[j] = rename[v]
    _prune(g, [nm for nm, _ in graph_outputs], set(params.values()))

    known = {nm for nm, _ in graph_inputs} | {nm for nm, _ in graph_outputs}
    if dynamic_axes:
        for key in dynamic_axes:
            if key not in known:
                raise ValueError(
                    f"ONNX export: dynamic_axes names '{key}', which is neither an "
                    "input nor an output name"
                )
    inputs_vi = [
        _value_info(onnx, nm, t, _dyn_axes(dynamic_axes, nm, known)) for nm, t in graph_inputs
    ]
    outputs_vi = [
        _value_info(onnx, nm, t, _dyn_axes(dynamic_axes, nm, known)) for nm, t in graph_outputs
    ]
    _warn_fixed_constants(g, graph_inputs, dynamic_axes, known)
    inits = list(g.initializers.values())
    param_set = set(params.values())
    if not export_params:
        for init in inits:
            if init.name in param_set:
                inputs_vi.append(
                    onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
                )
        inits = [i for i in inits if i.name not in param_set]
    elif keep_initializers_as_inputs:
        for init in inits:
            inputs_vi.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    del input_set
    graph = onnx.helper.make_graph(g.nodes, "main_graph", inputs_vi, outputs_vi, initializer=inits)
    proto = onnx.helper.make_model(
        graph,
        opset_imports=[onnx.helper.make_opsetid("", opset)],
        producer_name="rustgrad",
    )
    if opset <= 18:  # the IR version of the onnx release that introduced the opset
        proto.ir_version = 8
    onnx.checker.check_model(proto)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        onnx.save_model(proto, f)
