"""Write tests/vectors/nn_rnn.json: PyTorch's recurrent layers (nn.RNN tanh/relu, nn.LSTM
with proj_size, nn.GRU), cells (RNNCell, LSTMCell, GRUCell) and torch.nn.utils.rnn.

Run from the repository root with PyTorch installed (never a test dependency):

    /work/main/.torch-venv/bin/python tests/vectors/generate_rnn.py

Schema: ``{"layers": [...], "cells": [...], "utils": [...]}``. A layer or cell case
holds ``module`` (class name), ``kwargs`` (constructor), ``dtype``, ``state`` (the
PyTorch state dict: name -> {shape, data}), ``input`` (and ``h0``/``c0`` when given),
``packed`` (null, or ``{lengths, enforce_sorted}``: the input is padded and packed with
``pack_padded_sequence`` before the layer), ``loss_weights`` (one per output: the loss
is ``sum(output * w)`` over the outputs ``[output (packed: its data), h_n, c_n]``), and
the expected ``outputs`` and ``grads`` (input, h0, c0 and every parameter). Inputs are
drawn from a numpy generator seeded with the CRC32 of the case name and rounded to 4
decimals; PyTorch runs on one thread.
"""

from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.utils import rnn as U

OUT = Path(__file__).resolve().parent / "nn_rnn.json"
DT = {"float32": torch.float32, "float64": torch.float64}
INPUT, HIDDEN, SEQ, BATCH, PROJ = 3, 4, 5, 3, 2


def tj(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as JSON."""
    t = t.detach()
    if t.dtype == torch.float32:
        # 9 significant digits round-trip a float32 exactly and keep the file small.
        data = [float(f"{v:.9g}") for v in t.reshape(-1).tolist()]
    elif t.dtype.is_floating_point:
        data = t.reshape(-1).tolist()
    else:
        data = [int(v) for v in t.reshape(-1)]
    return {"shape": list(t.shape), "data": data}


def draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    vals = np.round(rng.uniform(-1.0, 1.0, size=shape), 4)
    return torch.tensor(vals, dtype=DT[dtype])


def layer_case(
    name: str,
    module: str,
    kwargs: dict[str, Any],
    dtype: str = "float32",
    packed: dict[str, Any] | None = None,
    give_h0: bool = False,
    unbatched: bool = False,
) -> dict[str, Any]:
    """One nn.RNN / nn.LSTM / nn.GRU case."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    torch.manual_seed(zlib.crc32(name.encode()))
    m = getattr(torch.nn, module)(INPUT, HIDDEN, **kwargs).to(DT[dtype])
    for p in m.parameters():
        p.data.copy_(draw(rng, tuple(p.shape), dtype))
    bf = kwargs.get("batch_first", False)
    shape = (BATCH, SEQ, INPUT) if bf else (SEQ, BATCH, INPUT)
    if unbatched:
        shape = (SEQ, INPUT)
    x = draw(rng, shape, dtype).requires_grad_(True)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    proj = kwargs.get("proj_size", 0) or HIDDEN
    hshape = (layers, proj) if unbatched else (layers, BATCH, proj)
    cshape = (layers, HIDDEN) if unbatched else (layers, BATCH, HIDDEN)
    h0 = draw(rng, hshape, dtype).requires_grad_(True) if give_h0 else None
    c0 = draw(rng, cshape, dtype).requires_grad_(True) if give_h0 and module == "LSTM" else None
    inp: Any = x
    if packed is not None:
        inp = U.pack_padded_sequence(
            x, packed["lengths"], batch_first=bf, enforce_sorted=packed["enforce_sorted"]
        )
    hx: Any = None
    if give_h0:
        hx = (h0, c0) if module == "LSTM" else h0
    out, hidden = m(inp, hx)
    outs = [out.data if packed is not None else out]
    outs += list(hidden) if module == "LSTM" else [hidden]
    weights = [draw(rng, tuple(o.shape), dtype) for o in outs]
    loss = sum((o * w).sum() for o, w in zip(outs, weights, strict=True))
    loss.backward()
    grads = {"input": tj(x.grad)}
    if h0 is not None:
        grads["h0"] = tj(h0.grad)
    if c0 is not None:
        grads["c0"] = tj(c0.grad)
    for n, p in m.named_parameters():
        grads[n] = tj(p.grad)
    case = {
        "name": name,
        "module": module,
        "kwargs": kwargs,
        "dtype": dtype,
        "state": {k: tj(v) for k, v in m.state_dict().items()},
        "input": tj(x),
        "h0": tj(h0) if h0 is not None else None,
        "c0": tj(c0) if c0 is not None else None,
        "packed": packed,
        "loss_weights": [tj(w) for w in weights],
        "outputs": [tj(o) for o in outs],
        "grads": grads,
    }
    return case


def cell_case(name: str, module: str, kwargs: dict[str, Any], dtype: str, give_h: bool):
    """One cell case (batched), loss ``sum(h' * w)`` (+ ``sum(c' * w2)``)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    m = getattr(torch.nn, module)(INPUT, HIDDEN, **kwargs).to(DT[dtype])
    for p in m.parameters():
        p.data.copy_(draw(rng, tuple(p.shape), dtype))
    x = draw(rng, (BATCH, INPUT), dtype).requires_grad_(True)
    h0 = draw(rng, (BATCH, HIDDEN), dtype).requires_grad_(True) if give_h else None
    c0 = (
        draw(rng, (BATCH, HIDDEN), dtype).requires_grad_(True)
        if give_h and module == "LSTMCell"
        else None
    )
    hx: Any = None
    if give_h:
        hx = (h0, c0) if module == "LSTMCell" else h0
    res = m(x, hx)
    outs = list(res) if module == "LSTMCell" else [res]
    weights = [draw(rng, tuple(o.shape), dtype) for o in outs]
    sum((o * w).sum() for o, w in zip(outs, weights, strict=True)).backward()
    grads = {"input": tj(x.grad)}
    if h0 is not None:
        grads["h0"] = tj(h0.grad)
    if c0 is not None:
        grads["c0"] = tj(c0.grad)
    for n, p in m.named_parameters():
        grads[n] = tj(p.grad)
    return {
        "name": name,
        "module": module,
        "kwargs": kwargs,
        "dtype": dtype,
        "state": {k: tj(v) for k, v in m.state_dict().items()},
        "input": tj(x),
        "h0": tj(h0) if h0 is not None else None,
        "c0": tj(c0) if c0 is not None else None,
        "loss_weights": [tj(w) for w in weights],
        "outputs": [tj(o) for o in outs],
        "grads": grads,
    }


def utils_cases() -> list[dict[str, Any]]:
    """pack_padded_sequence / pad_packed_sequence / pack_sequence / pad_sequence."""
    cases = []
    for lengths, bf, sort, total, pad in [
        ([5, 3, 2], False, True, None, 0.0),
        ([5, 3, 2], True, True, 7, -1.5),
        ([2, 5, 3], False, False, None, 0.0),
        ([3, 1, 5], True, False, 6, 2.0),
    ]:
        name = f"pack_{lengths}_{bf}_{sort}"
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        shape = (3, 5, 2) if bf else (5, 3, 2)
        x = draw(rng, shape, "float64").requires_grad_(True)
        p = U.pack_padded_sequence(x, lengths, batch_first=bf, enforce_sorted=sort)
        padded, lens = U.pad_packed_sequence(
            p, batch_first=bf, padding_value=pad, total_length=total
        )
        w = draw(rng, tuple(padded.shape), "float64")
        (padded * w).sum().backward()
        cases.append(
            {
                "name": name,
                "kind": "pack_padded",
                "lengths": lengths,
                "batch_first": bf,
                "enforce_sorted": sort,
                "total_length": total,
                "padding_value": pad,
                "input": tj(x),
                "data": tj(p.data),
                "batch_sizes": tj(p.batch_sizes),
                "sorted_indices": tj(p.sorted_indices) if p.sorted_indices is not None else None,
                "unsorted_indices": tj(p.unsorted_indices)
                if p.unsorted_indices is not None
                else None,
                "padded": tj(padded),
                "lens": tj(lens),
                "weights": tj(w),
                "grad": tj(x.grad),
            }
        )
    for lengths, sort, side, bf in [
        ([4, 2, 1], True, "right", False),
        ([1, 4, 2], False, "left", True),
    ]:
        name = f"seq_{lengths}_{sort}_{side}"
        rng = np.random.default_rng(zlib.crc32(name.encode()))
        seqs = [draw(rng, (n, 2), "float64") for n in lengths]
        p = U.pack_sequence(seqs, enforce_sorted=sort)
        padded = U.pad_sequence(seqs, batch_first=bf, padding_value=0.5, padding_side=side)
        cases.append(
            {
                "name": name,
                "kind": "sequences",
                "enforce_sorted": sort,
                "padding_side": side,
                "batch_first": bf,
                "sequences": [tj(s) for s in seqs],
                "data": tj(p.data),
                "batch_sizes": tj(p.batch_sizes),
                "sorted_indices": tj(p.sorted_indices) if p.sorted_indices is not None else None,
                "padded": tj(padded),
            }
        )
    return cases


def main() -> None:
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message="LSTM with projections is not supported")
    layers = []
    combos = [
        (b, n, bf, pk)
        for b in (False, True)
        for n in (1, 2)
        for bf in (False, True)
        for pk in (False, True)
    ]
    for i, (bi, nl, bf, pk) in enumerate(combos):
        for proj in (0, PROJ):
            kw: dict[str, Any] = {"num_layers": nl, "batch_first": bf, "bidirectional": bi}
            if proj:
                kw["proj_size"] = proj
            packed = (
                {"lengths": [5, 3, 2] if i % 4 else [3, 5, 2], "enforce_sorted": i % 4 != 1}
                if pk
                else None
            )
            if packed is not None and packed["lengths"] == [3, 5, 2]:
                packed["enforce_sorted"] = False
            name = f"lstm_b{int(bi)}_l{nl}_bf{int(bf)}_pk{int(pk)}_p{proj}"
            layers.append(layer_case(name, "LSTM", kw, packed=packed, give_h0=(i + proj) % 2 == 0))
    for bi, nl, pk in [(False, 1, False), (True, 2, True), (True, 1, False), (False, 2, True)]:
        kw = {"num_layers": nl, "bidirectional": bi}
        packed = {"lengths": [4, 5, 1], "enforce_sorted": False} if pk else None
        layers.append(
            layer_case(
                f"lstm64_b{int(bi)}_l{nl}_pk{int(pk)}",
                "LSTM",
                {**kw, "proj_size": PROJ} if nl == 2 else kw,
                "float64",
                packed,
                True,
            )
        )
        for nonlin in ("tanh", "relu"):
            layers.append(
                layer_case(
                    f"rnn_{nonlin}_b{int(bi)}_l{nl}_pk{int(pk)}",
                    "RNN",
                    {**kw, "nonlinearity": nonlin},
                    packed=packed,
                    give_h0=bi,
                )
            )
            layers.append(
                layer_case(
                    f"rnn64_{nonlin}_b{int(bi)}_l{nl}_pk{int(pk)}",
                    "RNN",
                    {**kw, "nonlinearity": nonlin},
                    "float64",
                    packed,
                    give_h0=not bi,
                )
            )
    for bi in (False, True):
        for nl in (1, 2):
            for bf in (False, True):
                for pk in (False, True):
                    kw = {"num_layers": nl, "batch_first": bf, "bidirectional": bi}
                    packed = {"lengths": [5, 2, 4], "enforce_sorted": False} if pk else None
                    layers.append(
                        layer_case(
                            f"gru_b{int(bi)}_l{nl}_bf{int(bf)}_pk{int(pk)}",
                            "GRU",
                            kw,
                            packed=packed,
                            give_h0=bf,
                        )
                    )
    layers.append(
        layer_case(
            "gru64_b1_l2", "GRU", {"num_layers": 2, "bidirectional": True}, "float64", give_h0=True
        )
    )
    for module in ("RNN", "LSTM", "GRU"):
        layers.append(
            layer_case(f"{module}_nobias", module, {"bias": False, "num_layers": 2}, give_h0=True)
        )
        layers.append(
            layer_case(
                f"{module}_unbatched", module, {"bidirectional": True}, give_h0=True, unbatched=True
            )
        )
        layers.append(
            layer_case(f"{module}_unbatched_noh", module, {"batch_first": True}, unbatched=True)
        )
    cells = []
    for dtype in ("float32", "float64"):
        for give in (False, True):
            cells.append(cell_case(f"rnncell_tanh_{dtype}_{give}", "RNNCell", {}, dtype, give))
            cells.append(
                cell_case(
                    f"rnncell_relu_{dtype}_{give}", "RNNCell", {"nonlinearity": "relu"}, dtype, give
                )
            )
            cells.append(cell_case(f"lstmcell_{dtype}_{give}", "LSTMCell", {}, dtype, give))
            cells.append(cell_case(f"grucell_{dtype}_{give}", "GRUCell", {}, dtype, give))
        cells.append(
            cell_case(f"lstmcell_nobias_{dtype}", "LSTMCell", {"bias": False}, dtype, True)
        )
    doc = {"torch": torch.__version__, "layers": layers, "cells": cells, "utils": utils_cases()}
    OUT.write_text(json.dumps(doc, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({len(layers)} layers, {len(cells)} cells)")


if __name__ == "__main__":
    main()
