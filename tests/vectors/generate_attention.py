"""Write tests/vectors/nn_attention.json: scaled-dot-product attention, MultiheadAttention
and the Transformer layers, run by PyTorch.

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_attention.py

Sections:

- ``sdpa``: ``F.scaled_dot_product_attention`` for masks (none, bool, float, broadcast
  forms, a fully masked row) x ``is_causal`` x ``scale`` x GQA, dropout 0; inputs, the
  output, and the gradients of query, key, value (and of a float mask that requires
  grad) for the fixed upstream gradient ``grad_out``.
- ``mha``: ``nn.MultiheadAttention`` built after ``torch.manual_seed(0)`` (so its
  ``state_dict`` is PyTorch's initialisation, recorded and loaded by the reader), run on
  recorded inputs with recorded forward kwargs; the output, the attention weights (or
  null), and the gradients of the inputs and of every parameter for the loss
  ``(out * grad_out).sum() + (weights * grad_weights).sum()``.
- ``layers``: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``, a two-layer
  ``TransformerEncoder`` and a small ``nn.Transformer`` in eval mode (dropout off) for
  norm_first x activation, with masks; the same records as ``mha``.

float32 (and a few float64 cases), one thread. Tensors are ``{"data", "shape",
"dtype"}``; read by tests/python/test_attention.py (the generic readers skip
``nn_*.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

OUT = Path(__file__).resolve().parent / "nn_attention.json"
torch.set_num_threads(1)


def tj(t: torch.Tensor | None) -> Any:
    """A tensor as JSON (float32 values through their shortest repr)."""
    if t is None:
        return None
    t = t.detach()
    data = t.reshape(-1).numpy()
    if t.dtype == torch.float32:
        values: list[Any] = [float(str(v)) for v in data]
    else:
        values = data.tolist()
    return {"data": values, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}


def sdpa_cases() -> list[dict[str, Any]]:
    cases = []
    specs: list[tuple[str, dict[str, Any]]] = [
        ("plain", {}),
        ("causal", {"is_causal": True}),
        ("causal_long_query", {"is_causal": True, "L": 7, "S": 4}),
        ("scale", {"scale": 0.3}),
        ("bool_mask", {"mask": "bool"}),
        ("bool_mask_broadcast", {"mask": "bool_ls"}),
        ("float_mask", {"mask": "float"}),
        ("float_mask_grad", {"mask": "float", "mask_grad": True}),
        ("float_mask_broadcast", {"mask": "float_heads"}),
        ("fully_masked_row", {"mask": "bool_empty_row"}),
        ("gqa", {"Hk": 1, "gqa": True}),
        ("gqa_causal_mask", {"Hk": 2, "H": 4, "gqa": True, "mask": "float_heads"}),
        ("unbatched_3d", {"dims": 3}),
        ("broadcast_batch", {"kbatch": 1}),
        ("value_dim", {"Ev": 5}),
        ("float64", {"dtype": torch.float64, "mask": "bool"}),
        ("float64_causal_gqa", {"dtype": torch.float64, "is_causal": True, "Hk": 1, "gqa": True}),
        ("long_sequence", {"L": 70, "S": 140, "E": 3, "Ev": 2, "H": 1, "mask": "float_heads"}),
    ]
    for name, spec in specs:
        torch.manual_seed(len(cases))
        dtype = spec.get("dtype", torch.float32)
        B, H, L, S = 2, spec.get("H", 2), spec.get("L", 5), spec.get("S", 6)  # noqa: N806
        Hk, E, Ev = spec.get("Hk", H), spec.get("E", 4), spec.get("Ev", 4)  # noqa: N806
        q = torch.randn(B, H, L, E, dtype=dtype)
        k = torch.randn(spec.get("kbatch", B), Hk, S, E, dtype=dtype)
        v = torch.randn(spec.get("kbatch", B), Hk, S, Ev, dtype=dtype)
        if spec.get("dims") == 3:
            q, k, v = q[0], k[0], v[0]
        mask = None
        kind = spec.get("mask")
        if kind == "bool":
            mask = torch.rand(B, H, L, S) > 0.3
        elif kind == "bool_ls":
            mask = torch.rand(L, S) > 0.4
        elif kind == "bool_empty_row":
            mask = torch.rand(B, 1, L, S) > 0.3
            mask[:, :, 1] = False
        elif kind == "float":
            mask = torch.randn(B, H, L, S, dtype=dtype)
        elif kind == "float_heads":
            mask = torch.randn(1, H, 1, S, dtype=dtype)
            mask[..., 0] = float("-inf")
        for t in (q, k, v):
            t.requires_grad_(True)
        if spec.get("mask_grad"):
            mask.requires_grad_(True)
        out = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            is_causal=spec.get("is_causal", False),
            scale=spec.get("scale"),
            enable_gqa=spec.get("gqa", False),
        )
        go = torch.randn_like(out)
        out.backward(go)
        cases.append(
            {
                "name": name,
                "is_causal": spec.get("is_causal", False),
                "scale": spec.get("scale"),
                "enable_gqa": spec.get("gqa", False),
                "mask_grad": spec.get("mask_grad", False),
                "query": tj(q),
                "key": tj(k),
                "value": tj(v),
                "mask": tj(mask),
                "out": tj(out),
                "grad_out": tj(go),
                "grad_query": tj(q.grad),
                "grad_key": tj(k.grad),
                "grad_value": tj(v.grad),
                "grad_mask": tj(mask.grad) if spec.get("mask_grad") else None,
            }
        )
    return cases


def run_module(
    module: nn.Module, inputs: dict[str, Any], kwargs: dict[str, Any], seed: int
) -> dict[str, Any]:
    """Runs ``module(**inputs, **kwargs)`` and records what the reader checks."""
    state = {k: tj(v) for k, v in module.state_dict().items()}
    for t in inputs.values():
        if t.is_floating_point():
            t.requires_grad_(True)
    result = module(*inputs.values(), **kwargs)
    out, weights = result if isinstance(result, tuple) else (result, None)
    torch.manual_seed(1000 + seed)
    go = torch.randn_like(out)
    loss = (out * go).sum()
    gw = None
    if weights is not None:
        gw = torch.randn_like(weights)
        loss = loss + (weights * gw).sum()
    loss.backward()
    return {
        "state_dict": state,
        "param_names": [n for n, _ in module.named_parameters()],
        "inputs": {n: tj(t) for n, t in inputs.items()},
        "out": tj(out),
        "weights": tj(weights),
        "grad_out": tj(go),
        "grad_weights": tj(gw),
        "grad_inputs": {n: tj(t.grad) for n, t in inputs.items() if t.grad is not None},
        "grad_params": {n: tj(p.grad) for n, p in module.named_parameters()},
    }


def encode_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {k: ({"tensor": tj(v)} if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}


def mha_cases() -> list[dict[str, Any]]:
    cases = []
    specs: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
        ("basic", {}, {}),
        ("no_weights", {}, {"need_weights": False}),
        ("per_head_weights", {}, {"average_attn_weights": False}),
        ("batch_first", {"batch_first": True}, {}),
        ("kdim_vdim", {"kdim": 5, "vdim": 3}, {}),
        ("no_bias", {"bias": False}, {}),
        ("bias_kv", {"add_bias_kv": True}, {"mask": "padding"}),
        ("zero_attn", {"add_zero_attn": True}, {"mask": "attn_bool"}),
        ("bias_kv_zero_attn", {"add_bias_kv": True, "add_zero_attn": True}, {"mask": "both"}),
        ("padding_mask", {}, {"mask": "padding"}),
        ("padding_mask_float", {}, {"mask": "padding_float"}),
        ("attn_mask_float", {}, {"mask": "attn_float"}),
        ("attn_mask_3d", {}, {"mask": "attn_3d"}),
        ("causal", {}, {"mask": "causal"}),
        ("both_masks_no_weights", {}, {"mask": "both", "need_weights": False}),
        ("unbatched", {}, {"unbatched": True}),
        ("float64", {"dtype": torch.float64}, {"mask": "both"}),
    ]
    E, H, L, S, N = 8, 2, 4, 5, 3  # noqa: N806
    for i, (name, ctor, fwd) in enumerate(specs):
        torch.manual_seed(0)
        dtype = ctor.pop("dtype", torch.float32)
        m = nn.MultiheadAttention(E, H, **ctor).to(dtype)
        torch.manual_seed(100 + i)
        bf = ctor.get("batch_first", False)
        kd, vd = ctor.get("kdim", E), ctor.get("vdim", E)

        def shaped(
            length: int, dim: int, bf: bool = bf, fwd: dict = fwd, dtype: Any = dtype
        ) -> torch.Tensor:
            if fwd.get("unbatched"):
                return torch.randn(length, dim, dtype=dtype)
            return torch.randn(*((N, length) if bf else (length, N)), dim, dtype=dtype)

        inputs = {"query": shaped(L, E), "key": shaped(S, kd), "value": shaped(S, vd)}
        kwargs: dict[str, Any] = {}
        kind = fwd.get("mask")
        if kind in ("padding", "both"):
            pad = torch.zeros(N, S, dtype=torch.bool)
            pad[0, -2:] = True
            pad[2, 0] = True
            kwargs["key_padding_mask"] = pad
        if kind == "padding_float":
            kwargs["key_padding_mask"] = torch.randn(N, S, dtype=dtype)
        if kind in ("attn_bool", "both"):
            am = torch.zeros(L, S, dtype=torch.bool)
            am[1, 2] = True
            am[3, 0] = True
            kwargs["attn_mask"] = am
        if kind == "attn_float":
            kwargs["attn_mask"] = torch.randn(L, S, dtype=dtype)
        if kind == "attn_3d":
            kwargs["attn_mask"] = torch.randn(N * H, L, S, dtype=dtype)
        if kind == "causal":
            inputs["key"] = shaped(L, kd)
            inputs["value"] = shaped(L, vd)
            kwargs["attn_mask"] = nn.Transformer.generate_square_subsequent_mask(L, dtype=dtype)
            kwargs["is_causal"] = True
        for flag in ("need_weights", "average_attn_weights"):
            if flag in fwd:
                kwargs[flag] = fwd[flag]
        rec = run_module(m, inputs, kwargs, i)
        rec.update(
            {
                "name": name,
                "ctor": {"embed_dim": E, "num_heads": H, **ctor},
                "dtype": str(dtype).replace("torch.", ""),
                "kwargs": encode_kwargs(kwargs),
            }
        )
        cases.append(rec)
    return cases


def layer_cases() -> list[dict[str, Any]]:
    cases = []
    d, h, ff, N, L, S = 8, 2, 16, 2, 5, 4  # noqa: N806
    i = 0
    for kind in ("encoder_layer", "decoder_layer"):
        for norm_first in (False, True):
            for activation in ("relu", "gelu"):
                for batch_first in (False, True):
                    cls = (
                        nn.TransformerEncoderLayer
                        if kind == "encoder_layer"
                        else nn.TransformerDecoderLayer
                    )
                    ctor = {
                        "d_model": d,
                        "nhead": h,
                        "dim_feedforward": ff,
                        "dropout": 0.0,
                        "activation": activation,
                        "norm_first": norm_first,
                        "batch_first": batch_first,
                    }
                    torch.manual_seed(0)
                    m = cls(**ctor).eval()
                    torch.manual_seed(200 + i)

                    def shaped(length: int, bf: bool = batch_first) -> torch.Tensor:
                        return torch.randn(*((N, length) if bf else (length, N)), d)

                    causal = nn.Transformer.generate_square_subsequent_mask(L)
                    # Float padding masks, the type of the causal mask (PyTorch warns on
                    # mixed types).
                    pad = torch.zeros(N, L)
                    pad[1, -1] = float("-inf")
                    if kind == "encoder_layer":
                        inputs = {"src": shaped(L)}
                        kwargs: dict[str, Any] = {"src_mask": causal, "src_key_padding_mask": pad}
                    else:
                        inputs = {"tgt": shaped(L), "memory": shaped(S)}
                        mpad = torch.zeros(N, S)
                        mpad[0, 0] = float("-inf")
                        kwargs = {
                            "tgt_mask": causal,
                            "tgt_key_padding_mask": pad,
                            "memory_key_padding_mask": mpad,
                        }
                    rec = run_module(m, inputs, kwargs, i)
                    rec.update(
                        {
                            "name": "_".join(
                                [
                                    kind,
                                    "pre" if norm_first else "post",
                                    activation,
                                    "bf" if batch_first else "sf",
                                ]
                            ),
                            "kind": kind,
                            "ctor": ctor,
                            "kwargs": encode_kwargs(kwargs),
                            "dtype": "float32",
                        }
                    )
                    cases.append(rec)
                    i += 1
    # A two-layer encoder with a final norm, and a small nn.Transformer.
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d, h, ff, dropout=0.0)
    enc = nn.TransformerEncoder(
        layer, num_layers=2, norm=nn.LayerNorm(d), enable_nested_tensor=False
    ).eval()
    torch.manual_seed(300)
    inputs = {"src": torch.randn(L, N, d)}
    kwargs = {"mask": nn.Transformer.generate_square_subsequent_mask(L), "is_causal": True}
    rec = run_module(enc, inputs, kwargs, 300)
    rec.update(
        {
            "name": "encoder_stack",
            "kind": "encoder",
            "ctor": {"d_model": d, "nhead": h, "dim_feedforward": ff, "num_layers": 2},
            "kwargs": encode_kwargs(kwargs),
            "dtype": "float32",
        }
    )
    cases.append(rec)
    for batch_first in (False, True):
        torch.manual_seed(0)
        tr = nn.Transformer(
            d_model=d,
            nhead=h,
            num_encoder_layers=2,
            num_decoder_layers=1,
            dim_feedforward=ff,
            dropout=0.0,
            batch_first=batch_first,
        ).eval()
        torch.manual_seed(301)
        src = torch.randn(*((N, S) if batch_first else (S, N)), d)
        tgt = torch.randn(*((N, L) if batch_first else (L, N)), d)
        kwargs = {"tgt_mask": nn.Transformer.generate_square_subsequent_mask(L)}
        rec = run_module(tr, {"src": src, "tgt": tgt}, kwargs, 301)
        rec.update(
            {
                "name": f"transformer_{'bf' if batch_first else 'sf'}",
                "kind": "transformer",
                "ctor": {
                    "d_model": d,
                    "nhead": h,
                    "num_encoder_layers": 2,
                    "num_decoder_layers": 1,
                    "dim_feedforward": ff,
                    "dropout": 0.0,
                    "batch_first": batch_first,
                },
                "kwargs": encode_kwargs(kwargs),
                "dtype": "float32",
            }
        )
        cases.append(rec)
    return cases


def main() -> None:
    data = {
        "torch_version": torch.__version__,
        "sdpa": sdpa_cases(),
        "mha": mha_cases(),
        "layers": layer_cases(),
        "square_subsequent_mask": tj(nn.Transformer.generate_square_subsequent_mask(4)),
    }
    OUT.write_text(json.dumps(data, separators=(",", ":")) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
