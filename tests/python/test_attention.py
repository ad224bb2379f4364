"""Scaled-dot-product attention, MultiheadAttention and the Transformer layers against
PyTorch (tests/vectors/nn_attention.json, written by
tests/vectors/generate_attention.py), plus gradcheck/gradgradcheck, PyTorch's errors,
the fused kernel's memory bound at sequence length 4096, thread-count independence and
a small Transformer language model that trains."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F  # noqa: N812
from rustgrad import nn

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_attention.json").read_text()
)
TOL = {"float32": 1e-5, "float64": 1e-10}


def to_tensor(spec: dict[str, Any] | None) -> rustgrad.Tensor | None:
    if spec is None:
        return None
    data = np.array(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])
    return rustgrad.tensor(data)


def check(name: str, got: rustgrad.Tensor | None, spec: dict[str, Any] | None) -> None:
    if spec is None:
        assert got is None, name
        return
    assert got is not None, name
    assert list(got.shape) == spec["shape"], name
    want = np.array(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])
    tol = TOL[spec["dtype"]]
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=tol, atol=tol, err_msg=name)


def decode_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    return {
        k: (to_tensor(v["tensor"]) if isinstance(v, dict) and "tensor" in v else v)
        for k, v in kwargs.items()
    }


# ----- scaled_dot_product_attention ------------------------------------------------------


@pytest.mark.parametrize("case", VECTORS["sdpa"], ids=lambda c: c["name"])
def test_sdpa_matches_pytorch(case: dict[str, Any]) -> None:
    q, k, v = (to_tensor(case[n]).requires_grad_(True) for n in ("query", "key", "value"))
    mask = to_tensor(case["mask"])
    if case["mask_grad"]:
        mask.requires_grad_(True)
    out = F.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=mask,
        is_causal=case["is_causal"],
        scale=case["scale"],
        enable_gqa=case["enable_gqa"],
    )
    check("out", out, case["out"])
    out.backward(to_tensor(case["grad_out"]))
    check("grad_query", q.grad, case["grad_query"])
    check("grad_key", k.grad, case["grad_key"])
    check("grad_value", v.grad, case["grad_value"])
    if case["mask_grad"]:
        check("grad_mask", mask.grad, case["grad_mask"])


def test_sdpa_grad_fn_is_pytorchs_fused_node() -> None:
    q = rustgrad.randn(1, 2, 3, 4, requires_grad=True)
    out = F.scaled_dot_product_attention(q, q, q)
    assert type(out.grad_fn).__name__ == "ScaledDotProductFlashAttentionForCpuBackward0"


def _sdpa_inputs(gqa: bool) -> tuple[rustgrad.Tensor, ...]:
    rustgrad.manual_seed(0)
    hk = 1 if gqa else 2
    q = rustgrad.randn(2, 2, 3, 4, dtype=rustgrad.float64, requires_grad=True)
    k = rustgrad.randn(2, hk, 5, 4, dtype=rustgrad.float64, requires_grad=True)
    v = rustgrad.randn(2, hk, 5, 3, dtype=rustgrad.float64, requires_grad=True)
    return q, k, v


@pytest.mark.parametrize(
    "kind", ["plain", "causal", "bool_mask", "float_mask", "gqa", "masked_row"]
)
def test_sdpa_gradcheck_and_gradgradcheck(kind: str) -> None:
    q, k, v = _sdpa_inputs(kind == "gqa")
    inputs: tuple[rustgrad.Tensor, ...] = (q, k, v)
    kwargs: dict[str, Any] = {"enable_gqa": kind == "gqa", "is_causal": kind == "causal"}
    if kind == "bool_mask":
        kwargs["attn_mask"] = rustgrad.rand(3, 5) > 0.3
    if kind == "masked_row":
        mask = rustgrad.ones(3, 5, dtype=rustgrad.bool)
        mask[1] = False
        kwargs["attn_mask"] = mask
    if kind == "float_mask":
        inputs = (q, k, v, rustgrad.randn(2, 1, 3, 5, dtype=rustgrad.float64, requires_grad=True))

    def fn(*xs: rustgrad.Tensor) -> rustgrad.Tensor:
        kw = dict(kwargs)
        if len(xs) == 4:
            kw["attn_mask"] = xs[3]
        return F.scaled_dot_product_attention(xs[0], xs[1], xs[2], **kw)

    assert rustgrad.autograd.gradcheck(fn, inputs)
    assert rustgrad.autograd.gradgradcheck(fn, inputs)


def test_sdpa_fully_masked_rows_give_zeros_as_pytorch_cpu() -> None:
    q = rustgrad.randn(1, 1, 3, 4, requires_grad=True)
    mask = rustgrad.ones(3, 3, dtype=rustgrad.bool)
    mask[1] = False
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert out[0, 0, 1].tolist() == [0.0] * 4
    out.sum().backward()
    assert bool(rustgrad.isfinite(q.grad).all())


def test_sdpa_is_bitwise_identical_for_any_thread_count() -> None:
    rustgrad.manual_seed(0)
    q, k, v = (rustgrad.randn(2, 3, 150, 16, requires_grad=True) for _ in range(3))
    before = rustgrad.get_num_threads()
    results = []
    try:
        for threads in (1, 2, 3):
            rustgrad.set_num_threads(threads)
            for t in (q, k, v):
                t.grad = None
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.sum().backward()
            results.append([x.detach().numpy().copy() for x in (out, q.grad, k.grad, v.grad)])
    finally:
        rustgrad.set_num_threads(before)
    for other in results[1:]:
        for a, b in zip(results[0], other, strict=True):
            assert np.array_equal(a, b)


def test_sdpa_dropout_drops_weights_inside_the_kernel_and_is_seeded() -> None:
    rustgrad.manual_seed(0)
    q = rustgrad.randn(2, 2, 40, 4, requires_grad=True)
    k = rustgrad.randn(2, 2, 40, 4)
    # value = identity: the output rows are the (dropped) attention weights themselves.
    v = rustgrad.eye(40).expand(2, 2, 40, 40)
    weights = F.scaled_dot_product_attention(q, k, v)

    def run(seed: int) -> rustgrad.Tensor:
        rustgrad.manual_seed(seed)
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.25)

    a, b, c = run(1), run(1), run(2)
    assert rustgrad.equal(a, b)
    assert not rustgrad.equal(a, c)
    kept = a != 0
    fraction = kept.float().mean().item()
    assert 0.72 < fraction < 0.78, fraction
    np.testing.assert_allclose(
        a[kept].detach().numpy(), (weights[kept] / 0.75).detach().numpy(), rtol=1e-5
    )
    a.sum().backward()
    assert q.grad is not None and bool(rustgrad.isfinite(q.grad).all())
    # p == 1 drops everything.
    assert F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).abs().sum().item() == 0.0


def test_sdpa_dropout_gradcheck_and_gradgradcheck() -> None:
    q, k, v = _sdpa_inputs(gqa=True)

    def fn(q: rustgrad.Tensor, k: rustgrad.Tensor, v: rustgrad.Tensor) -> rustgrad.Tensor:
        rustgrad.manual_seed(3)  # the same mask on every evaluation
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, enable_gqa=True)

    assert rustgrad.autograd.gradcheck(fn, (q, k, v))
    assert rustgrad.autograd.gradgradcheck(fn, (q, k, v))


def test_sdpa_half_precision_runs_in_float32() -> None:
    q = rustgrad.randn(1, 2, 5, 4)
    want = F.scaled_dot_product_attention(q, q, q)
    got = F.scaled_dot_product_attention(*(q.to(rustgrad.bfloat16),) * 3)
    assert got.dtype == rustgrad.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.numpy(), atol=3e-2)


def test_sdpa_long_sequence_memory_stays_linear() -> None:
    # One 4096 x 4096 float32 score matrix per head would be 8 * 64 MiB.
    rustgrad.manual_seed(0)
    q, k, v = (rustgrad.randn(1, 8, 4096, 64, requires_grad=True) for _ in range(3))
    rustgrad.cpu.reset_peak_memory_stats()
    base = rustgrad.cpu.memory_allocated()
    out = F.scaled_dot_product_attention(q, k, v)
    out.backward(rustgrad.ones_like(out))
    peak = rustgrad.cpu.max_memory_allocated() - base
    assert peak < 8 * 64 * 2**20, peak
    # Several operand-sized buffers (output, gradients), not a score matrix.
    assert peak < 64 * 2**20, peak
    assert q.grad.shape == q.shape and bool(rustgrad.isfinite(k.grad).all())


SDPA_ERRORS = [
    (
        lambda: F.scaled_dot_product_attention(*(rustgrad.randn(8),) * 3),
        RuntimeError,
        "Expected query, key, and value to all be  at least 2 dimensional, but got "
        "query.dim: 1 key.dim: 1 and value.dim: 1 instead.",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            rustgrad.randn(2, 4), rustgrad.randn(3, 4, dtype=rustgrad.float64), rustgrad.randn(3, 4)
        ),
        RuntimeError,
        "Expected query, key, and value to have the same dtype, but got query.dtype: float "
        "key.dtype: double and value.dtype: float instead.",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            *(rustgrad.randn(2, 4, 8),) * 3, attn_mask=rustgrad.ones(4, 4, dtype=rustgrad.int64)
        ),
        RuntimeError,
        "Expected attn_mask dtype to be bool or float or to match query dtype, but got "
        "attn_mask.dtype: long int and  query.dtype: float instead.",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            *(rustgrad.randn(2, 4, 8),) * 3,
            attn_mask=rustgrad.ones(4, 4, dtype=rustgrad.bool),
            is_causal=True,
        ),
        RuntimeError,
        "Explicit attn_mask should not be set when is_causal=True",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            *(rustgrad.randn(2, 4, 8),) * 3, attn_mask=rustgrad.ones(4, 6)
        ),
        RuntimeError,
        "The size of tensor a (4) must match the size of tensor b (6) at non-singleton dimension 2",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            rustgrad.randn(2, 4, 4, 8),
            rustgrad.randn(2, 3, 5, 8),
            rustgrad.randn(2, 3, 5, 8),
            enable_gqa=True,
        ),
        RuntimeError,
        "Number of heads in key and value must divide the number of heads in query",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            rustgrad.randn(2, 4, 4, 8), rustgrad.randn(2, 2, 5, 8), rustgrad.randn(2, 2, 5, 8)
        ),
        RuntimeError,
        "The size of tensor a (4) must match the size of tensor b (2) at non-singleton dimension 1",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            rustgrad.randn(2, 3, 4, 8), rustgrad.randn(2, 3, 5, 7), rustgrad.randn(2, 3, 5, 8)
        ),
        RuntimeError,
        "Expected size for first two dimensions of batch2 tensor to be: [6, 8] but got: [6, 7].",
    ),
    (
        lambda: F.scaled_dot_product_attention(*(rustgrad.randn(2, 4, 8),) * 3, dropout_p=1.5),
        RuntimeError,
        "dropout probability has to be between 0 and 1, but got 1.5",
    ),
    (
        lambda: F.scaled_dot_product_attention(
            *(rustgrad.ones(2, 4, 8, dtype=rustgrad.int64),) * 3
        ),
        RuntimeError,
        "expected scalar type Float but found Long",
    ),
]


@pytest.mark.parametrize("case", range(len(SDPA_ERRORS)))
def test_sdpa_bad_input_raises_pytorchs_error(case: int) -> None:
    fn, exc, message = SDPA_ERRORS[case]
    with pytest.raises(exc) as info:
        fn()
    assert message in str(info.value)


# ----- MultiheadAttention and the Transformer layers ---------------------------------------


def _dtype(name: str) -> rustgrad.dtype:
    return getattr(rustgrad, name)


def _check_module_run(module: nn.Module, case: dict[str, Any]) -> None:
    module.load_state_dict({k: to_tensor(v) for k, v in case["state_dict"].items()})
    assert [n for n, _ in module.named_parameters()] == case["param_names"]
    inputs = {n: to_tensor(t).requires_grad_(True) for n, t in case["inputs"].items()}
    result = module(*inputs.values(), **decode_kwargs(case["kwargs"]))
    out, weights = result if isinstance(result, tuple) else (result, None)
    check("out", out, case["out"])
    check("weights", weights, case["weights"])
    loss = (out * to_tensor(case["grad_out"])).sum()
    if weights is not None:
        loss = loss + (weights * to_tensor(case["grad_weights"])).sum()
    loss.backward()
    for name, spec in case["grad_inputs"].items():
        check(f"grad {name}", inputs[name].grad, spec)
    params = dict(module.named_parameters())
    for name, spec in case["grad_params"].items():
        check(f"grad {name}", params[name].grad, spec)


@pytest.mark.parametrize("case", VECTORS["mha"], ids=lambda c: c["name"])
def test_multihead_attention_matches_pytorch(case: dict[str, Any]) -> None:
    rustgrad.manual_seed(0)
    module = nn.MultiheadAttention(**case["ctor"]).to(_dtype(case["dtype"]))
    # PyTorch's initialisation for the same seed.
    for name, value in module.state_dict().items():
        check(f"init {name}", value, case["state_dict"][name])
    _check_module_run(module, case)


def _build_layer(case: dict[str, Any]) -> nn.Module:
    ctor = dict(case["ctor"])
    kind = case["kind"]
    if kind == "encoder_layer":
        return nn.TransformerEncoderLayer(**ctor)
    if kind == "decoder_layer":
        return nn.TransformerDecoderLayer(**ctor)
    if kind == "encoder":
        layer = nn.TransformerEncoderLayer(
            ctor["d_model"], ctor["nhead"], ctor["dim_feedforward"], dropout=0.0
        )
        return nn.TransformerEncoder(
            layer,
            ctor["num_layers"],
            norm=nn.LayerNorm(ctor["d_model"]),
            enable_nested_tensor=False,
        )
    return nn.Transformer(**ctor)


@pytest.mark.parametrize("case", VECTORS["layers"], ids=lambda c: c["name"])
def test_transformer_layers_match_pytorch(case: dict[str, Any]) -> None:
    rustgrad.manual_seed(0)
    module = _build_layer(case).eval()
    assert list(module.state_dict()) == list(case["state_dict"])
    _check_module_run(module, case)


def test_generate_square_subsequent_mask_matches_pytorch() -> None:
    got = nn.Transformer.generate_square_subsequent_mask(4)
    check("mask", got, VECTORS["square_subsequent_mask"])
    assert nn.Transformer.generate_square_subsequent_mask(2, dtype=rustgrad.float64).dtype == (
        rustgrad.float64
    )


def test_transformer_encoder_layer_gradcheck_and_gradgradcheck() -> None:
    rustgrad.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0, activation="gelu")
    layer = layer.double().eval()
    src = rustgrad.randn(3, 2, 4, dtype=rustgrad.float64, requires_grad=True)
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=rustgrad.float64)

    def fn(x: rustgrad.Tensor) -> rustgrad.Tensor:
        return layer(x, src_mask=mask, is_causal=True)

    assert rustgrad.autograd.gradcheck(fn, (src,))
    assert rustgrad.autograd.gradgradcheck(fn, (src,))


def test_multihead_attention_importable_from_activation_and_callable_activation() -> None:
    from rustgrad.nn.modules.activation import MultiheadAttention

    assert MultiheadAttention is nn.MultiheadAttention
    layer = nn.TransformerEncoderLayer(8, 2, 16, activation=nn.GELU())
    assert layer.activation_relu_or_gelu == 2
    assert layer(rustgrad.randn(3, 2, 8)).shape == (3, 2, 8)
    custom = nn.TransformerEncoderLayer(8, 2, 16, activation=lambda x: x * 2)
    assert custom.activation_relu_or_gelu == 0


MODULE_ERRORS = [
    (
        lambda: nn.MultiheadAttention(8, 3),
        AssertionError,
        "embed_dim must be divisible by num_heads",
    ),
    (
        lambda: nn.MultiheadAttention(0, 2),
        ValueError,
        "embed_dim and num_heads must be greater than 0, got embed_dim=0 and num_heads=2 instead",
    ),
    (
        lambda: nn.MultiheadAttention(8, 2)(*(rustgrad.randn(2, 3, 4, 8),) * 3),
        AssertionError,
        "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor",
    ),
    (
        lambda: nn.MultiheadAttention(8, 2)(
            rustgrad.randn(4, 3, 8), rustgrad.randn(5, 8), rustgrad.randn(5, 8)
        ),
        AssertionError,
        "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found 2-D and "
        "2-D tensors respectively",
    ),
    (
        lambda: nn.MultiheadAttention(8, 2)(
            *(rustgrad.randn(4, 3, 8),) * 3, attn_mask=rustgrad.zeros(4, 5)
        ),
        RuntimeError,
        "The shape of the 2D attn_mask is torch.Size([4, 5]), but should be (4, 4).",
    ),
    (
        lambda: nn.MultiheadAttention(8, 2)(*(rustgrad.randn(4, 3, 8),) * 3, is_causal=True),
        RuntimeError,
        "Need attn_mask if specifying the is_causal hint.",
    ),
    (
        lambda: nn.MultiheadAttention(8, 2)(
            *(rustgrad.randn(4, 3, 8),) * 3,
            key_padding_mask=rustgrad.zeros(3, 4, dtype=rustgrad.int64),
        ),
        AssertionError,
        "only bool and floating types of key_padding_mask are supported",
    ),
    (
        lambda: nn.TransformerEncoderLayer(8, 2, activation="tanh"),
        RuntimeError,
        "activation should be relu/gelu, not tanh",
    ),
    (
        lambda: nn.Transformer(8, 2, 1, 1, 16)(rustgrad.randn(5, 2, 8), rustgrad.randn(3, 4, 8)),
        RuntimeError,
        "the batch number of src and tgt must be equal",
    ),
    (
        lambda: nn.Transformer(8, 2, 1, 1, 16)(rustgrad.randn(5, 2, 8), rustgrad.randn(3, 2, 6)),
        RuntimeError,
        "the feature number of src and tgt must be equal to d_model",
    ),
]


@pytest.mark.parametrize("case", range(len(MODULE_ERRORS)))
def test_attention_modules_bad_input_raise_pytorchs_error(case: int) -> None:
    fn, exc, message = MODULE_ERRORS[case]
    with pytest.raises(exc) as info:
        fn()
    assert message in str(info.value)


def test_mismatched_mask_types_warn_as_pytorch() -> None:
    mha = nn.MultiheadAttention(8, 2)
    x = rustgrad.randn(4, 3, 8)
    pad = rustgrad.zeros(3, 4, dtype=rustgrad.bool)
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask"):
        mha(x, x, x, key_padding_mask=pad, attn_mask=rustgrad.zeros(4, 4))


# ----- a small Transformer language model (word_language_model's calls) --------------------


class _PositionalEncoding(nn.Module):
    """Sinusoidal positions added to ``(S, N, E)`` embeddings, then dropout."""

    def __init__(self, d_model: int, dropout: float, max_len: int = 64) -> None:
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = rustgrad.arange(max_len, dtype=rustgrad.float32).unsqueeze(1)
        freq = rustgrad.exp(
            rustgrad.arange(0, d_model, 2, dtype=rustgrad.float32) * (-math.log(10000.0) / d_model)
        )
        table = rustgrad.zeros(max_len, 1, d_model)
        table[:, 0, 0::2] = rustgrad.sin(position * freq)
        table[:, 0, 1::2] = rustgrad.cos(position * freq)
        self.register_buffer("pe", table)

    def forward(self, x: rustgrad.Tensor) -> rustgrad.Tensor:
        return self.dropout(x + self.pe[: x.size(0), :])


class _TinyTransformerLM(nn.Module):
    """Embedding, positional encoding, a causal TransformerEncoder, a Linear decoder."""

    def __init__(self, ntoken: int, d_model: int, nhead: int, d_hid: int, nlayers: int) -> None:
        super().__init__()
        self.src_mask: rustgrad.Tensor | None = None
        self.d_model = d_model
        self.pos_encoder = _PositionalEncoding(d_model, 0.1)
        layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, 0.1)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.encoder = nn.Embedding(ntoken, d_model)
        self.decoder = nn.Linear(d_model, ntoken)
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -0.1, 0.1)

    def forward(self, src: rustgrad.Tensor) -> rustgrad.Tensor:
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = nn.Transformer.generate_square_subsequent_mask(len(src))
        x = self.pos_encoder(self.encoder(src) * math.sqrt(self.d_model))
        out = self.transformer_encoder(x, self.src_mask)
        return F.log_softmax(self.decoder(out), dim=-1)


def test_transformer_language_model_trains_saves_and_loads() -> None:
    rustgrad.manual_seed(0)
    ntokens, bptt, batch = 12, 8, 4
    # A predictable stream: token t + 1 follows t (mod ntokens), from random offsets.
    starts = rustgrad.randint(0, ntokens, (batch,))
    data = (starts.unsqueeze(0) + rustgrad.arange(bptt + 1).unsqueeze(1)) % ntokens
    inputs, targets = data[:-1], data[1:].reshape(-1)
    model = _TinyTransformerLM(ntokens, 16, 2, 32, 2)
    criterion = nn.NLLLoss()
    lr = 0.5
    losses = []
    model.train()
    for _ in range(12):
        model.zero_grad()
        output = model(inputs)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0], losses
    model.eval()
    with rustgrad.no_grad():
        expected = model(inputs)
    buffer = io.BytesIO()
    rustgrad.save(model, buffer)
    buffer.seek(0)
    loaded = rustgrad.load(buffer, weights_only=False)
    assert isinstance(loaded, _TinyTransformerLM)
    with rustgrad.no_grad():
        assert rustgrad.equal(loaded(inputs), expected)


class _TransformerSubclassLM(nn.Transformer):
    """word_language_model's other layout: an ``nn.Transformer`` subclass that uses its
    encoder and replaces its decoder with a Linear layer."""

    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int) -> None:
        super().__init__(
            d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers
        )
        self.input_emb = nn.Embedding(ntoken, ninp)
        self.ninp = ninp
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src: rustgrad.Tensor) -> rustgrad.Tensor:  # type: ignore[override]
        # log(tril(ones)): 0 on and below the diagonal, -inf above (detected as causal).
        mask = rustgrad.log(rustgrad.tril(rustgrad.ones(len(src), len(src))))
        out = self.encoder(self.input_emb(src) * math.sqrt(self.ninp), mask=mask)
        return F.log_softmax(self.decoder(out), dim=-1)


def test_transformer_subclass_language_model_runs_and_round_trips() -> None:
    rustgrad.manual_seed(0)
    model = _TransformerSubclassLM(10, 8, 2, 16, 2)
    src = rustgrad.randint(0, 10, (6, 3))
    loss = F.nll_loss(model(src).view(-1, 10), rustgrad.randint(0, 10, (18,)))
    loss.backward()
    assert model.input_emb.weight.grad is not None
    model.eval()
    buffer = io.BytesIO()
    rustgrad.save(model, buffer)
    buffer.seek(0)
    loaded = rustgrad.load(buffer, weights_only=False)
    with rustgrad.no_grad():
        assert rustgrad.equal(loaded(src), model(src))


def test_sdpa_degenerate_sizes_and_nan_as_pytorch() -> None:
    # No keys: zeros (PyTorch); empty batch, queries or values: empty outputs.
    q = rustgrad.randn(2, 3, 4, requires_grad=True)
    out = F.scaled_dot_product_attention(q, rustgrad.randn(2, 0, 4), rustgrad.randn(2, 0, 5))
    assert out.shape == (2, 3, 5) and out.abs().sum().item() == 0.0
    out.sum().backward()
    assert q.grad.abs().sum().item() == 0.0
    for shapes in [((2, 0, 4), (2, 3, 4), (2, 3, 5)), ((0, 3, 4), (0, 3, 4), (0, 3, 5))]:
        q, k, v = (rustgrad.randn(*s) for s in shapes)
        assert F.scaled_dot_product_attention(q, k, v).shape == shapes[0][:-1] + (5,)
    # No features: every key weighs the same (PyTorch: the mean of the values).
    v = rustgrad.randn(2, 4, 2)
    out = F.scaled_dot_product_attention(rustgrad.randn(2, 3, 0), rustgrad.randn(2, 4, 0), v)
    want = v.mean(1, keepdim=True).expand(2, 3, 2).numpy()
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)
    # A NaN score makes its rows NaN; rows that never see it stay finite.
    q = rustgrad.randn(1, 1, 3, 4)
    k = q.clone()
    k[0, 0, 2, 0] = float("nan")
    out = F.scaled_dot_product_attention(q, k, q, is_causal=True)[0, 0, :, 0]
    assert [math.isnan(x) for x in out.tolist()] == [False, False, True]
