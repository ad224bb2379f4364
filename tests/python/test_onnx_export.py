"""rustgrad.onnx.export (Note [ONNX]): exported models pass onnx.checker and, run by
onnxruntime (an independent implementation of every op), give rustgrad's eval outputs
within 1e-5; names, dynamic axes, errors and the model's state behave as in
torch.onnx.export."""

from __future__ import annotations

import io

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import rustgrad as torch
import rustgrad.onnx
from rustgrad import nn
from rustgrad.models import LeNet, ResNet
from rustgrad.models.resnet import BasicBlock, Bottleneck
from rustgrad.nn import functional as F
from rustgrad.onnx import UnsupportedOperatorError


def _export(model, x, **kw):
    buf = io.BytesIO()
    rustgrad.onnx.export(model, (x,), buf, **kw)
    data = buf.getvalue()
    proto = onnx.load_from_string(data)
    onnx.checker.check_model(proto, full_check=True)
    return proto, ort.InferenceSession(data, providers=["CPUExecutionProvider"])


def _randomise_bn(model):
    g = np.random.default_rng(0)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            n = m.num_features
            m.running_mean.copy_(torch.tensor(g.normal(0, 0.1, n).astype(np.float32)))
            m.running_var.copy_(torch.tensor(g.uniform(0.5, 1.5, n).astype(np.float32)))
            with torch.no_grad():
                m.weight.copy_(torch.tensor(g.uniform(0.5, 1.5, n).astype(np.float32)))
                m.bias.copy_(torch.tensor(g.normal(0, 0.1, n).astype(np.float32)))


def _check(model, x, atol=1e-5, **kw):
    proto, sess = _export(model, x, **kw)
    model.eval()
    with torch.no_grad():
        want = model(x).numpy()
    got = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=atol)
    return proto, sess


def _ops(proto):
    return [n.op_type for n in proto.graph.node]


def test_mlp_with_every_activation_matches_onnxruntime():
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Linear(6, 16),
        nn.ReLU(),
        nn.Linear(16, 16),
        nn.GELU(),
        nn.Linear(16, 16),
        nn.GELU(approximate="tanh"),
        nn.Dropout(0.3),
        nn.Linear(16, 16),
        nn.Tanh(),
        nn.Linear(16, 16),
        nn.Sigmoid(),
        nn.Linear(16, 16),
        nn.LeakyReLU(0.2),
        nn.Linear(16, 4),
        nn.Softmax(dim=-1),
    )
    proto, _ = _check(model, torch.randn(2, 6))
    ops = _ops(proto)
    assert ops.count("Gemm") == 7 and "Erf" in ops and "LeakyRelu" in ops
    assert proto.opset_import[0].version == 17
    # parameters are initializers named as in the state_dict
    assert {i.name for i in proto.graph.initializer} >= {"0.weight", "13.bias"}


def test_lenet_matches_onnxruntime():
    torch.manual_seed(1)
    proto, _ = _check(LeNet(), torch.randn(2, 3, 32, 32))
    assert _ops(proto)[:3] == ["Conv", "Relu", "MaxPool"]


def test_resnet18_exports_with_dynamic_batch_and_names():
    torch.manual_seed(2)
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=7)
    _randomise_bn(model)
    x = torch.randn(2, 3, 32, 32)
    proto, sess = _check(
        model,
        x,
        input_names=["images"],
        output_names=["logits"],
        dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
    )
    assert [i.name for i in sess.get_inputs()] == ["images"]
    assert [o.name for o in sess.get_outputs()] == ["logits"]
    dim0 = proto.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim0.dim_param == "batch"
    assert {"BatchNormalization", "Add", "GlobalAveragePool", "Gemm"} <= set(_ops(proto))
    # another batch size runs through the same file
    x5 = torch.randn(5, 3, 32, 32)
    with torch.no_grad():
        want = model(x5).numpy()
    got = sess.run(["logits"], {"images": x5.numpy()})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_without_dynamic_axes_the_batch_is_fixed():
    proto, sess = _export(nn.Linear(3, 2), torch.randn(2, 3))
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [2, 3]
    with pytest.raises(Exception, match="(?i)dimension|shape"):
        sess.run(None, {"input": np.zeros((4, 3), np.float32)})


def test_dynamic_axes_as_a_list_and_view_with_size():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 4 * 4, 3)

        def forward(self, x):
            x = F.relu(self.conv(x))
            x = x.view(x.size(0), -1)
            return self.fc(x)

    torch.manual_seed(3)
    model = Net()
    _, sess = _check(model, torch.randn(2, 2, 4, 4), dynamic_axes={"input": [0], "output": [0]})
    x = torch.randn(3, 2, 4, 4)
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(sess.run(None, {"input": x.numpy()})[0], want, atol=1e-5)


def test_bottleneck_conv1d_pools_and_tensor_ops():
    torch.manual_seed(4)
    block = Bottleneck(
        8,
        4,
        stride=2,
        downsample=nn.Sequential(nn.Conv2d(8, 16, 1, stride=2, bias=False), nn.BatchNorm2d(16)),
    )
    _randomise_bn(block)
    _check(block, torch.randn(2, 8, 8, 8))

    class Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv1d(3, 5, 3, padding="same", dilation=2)
            self.bn = nn.BatchNorm1d(5)
            self.avg = nn.AvgPool1d(2)
            self.pool = nn.AdaptiveAvgPool2d((3, 1))
            self.mp = nn.MaxPool2d(3, stride=2, padding=1, ceil_mode=True)
            self.flat = nn.Flatten()

        def forward(self, x):
            y = self.avg(self.bn(self.c1(x)))  # (N, 5, 8)
            z = self.mp(y.reshape(y.shape[0], 1, 5, 8) * 2.0 - 1.0)  # (N, 1, 3, 5)
            w = self.pool(z).transpose(1, 2)
            return torch.flatten(self.flat(w), 1).softmax(dim=1) + 1 / (1 + z.sum() * 0)

    # the last line's `z.sum()` has no mapping: the error names it
    with pytest.raises(UnsupportedOperatorError, match="'Tensor.sum' to ONNX opset version 17"):
        _export(Seq(), torch.randn(2, 3, 16))

    class Seq2(Seq):
        def forward(self, x):
            y = self.avg(self.bn(self.c1(x)))
            z = self.mp(y.reshape(y.shape[0], 1, 5, 8) * 2.0 - 1.0)
            w = self.pool(z).transpose(1, 2)
            return torch.flatten(self.flat(w), 1).softmax(dim=1) / 2

    model = Seq2()
    _randomise_bn(model)
    _check(model, torch.randn(2, 3, 16))


def test_unsupported_module_and_function_raise_naming_them():
    with pytest.raises(UnsupportedOperatorError, match="'ELU' to ONNX opset version 17"):
        rustgrad.onnx.export(
            nn.Sequential(nn.Linear(3, 3), nn.ELU()), torch.randn(2, 3), io.BytesIO()
        )
    assert issubclass(UnsupportedOperatorError, RuntimeError)

    class UsesElu(nn.Module):
        def forward(self, x):
            return F.elu(x) + 1

    with pytest.raises(UnsupportedOperatorError, match="'F.elu'"):
        rustgrad.onnx.export(UsesElu(), torch.randn(2, 3), io.BytesIO())

    class Abs(nn.Module):
        def forward(self, x):
            return x.abs() + 1

    with pytest.raises(UnsupportedOperatorError, match="'Tensor.abs'"):
        rustgrad.onnx.export(Abs(), torch.randn(2, 3), io.BytesIO())

    class TwoIndices(nn.Module):
        def forward(self, x):
            return x[[0, 1], [0, 2]]

    with pytest.raises(UnsupportedOperatorError, match="'Tensor.__getitem__'.*more than one"):
        rustgrad.onnx.export(TwoIndices(), torch.randn(2, 3), io.BytesIO())

    class UnseenOp(nn.Module):
        def forward(self, x):
            return x + x.data  # a property: the exporter does not see it

    with pytest.raises(RuntimeError, match="from an operation the exporter cannot see"):
        rustgrad.onnx.export(UnseenOp(), torch.randn(3, 3), io.BytesIO())

    with pytest.raises(ValueError, match="Unsupported ONNX opset version: 11"):
        rustgrad.onnx.export(nn.Linear(3, 3), torch.randn(2, 3), io.BytesIO(), opset_version=11)


def test_export_leaves_the_model_and_tensor_class_unchanged(tmp_path):
    torch.manual_seed(5)
    model = nn.Sequential(
        nn.Conv2d(3, 4, 3),
        nn.BatchNorm2d(4),
        nn.ReLU(),
        nn.Dropout(0.5),
        nn.Flatten(),
        nn.Linear(64, 2),
    )
    model.train()
    model[1].eval()  # a mixed state must come back as it was
    before = {k: v.clone() for k, v in model.state_dict().items()}
    add, relu, frelu = torch.Tensor.__add__, torch.relu, F.relu
    path = tmp_path / "m.onnx"
    rustgrad.onnx.export(model, (torch.randn(2, 3, 6, 6),), str(path))
    onnx.checker.check_model(str(path))
    assert [m.training for m in model.modules()] == [True, True, False, True, True, True, True]
    after = model.state_dict()
    assert before.keys() == after.keys()
    for k in before:
        assert torch.equal(before[k], after[k]), k
    # a failed export restores everything too
    with pytest.raises(UnsupportedOperatorError):
        rustgrad.onnx.export(nn.ELU(), torch.randn(2, 3), io.BytesIO())
    assert torch.Tensor.__add__ is add and torch.relu is relu and F.relu is frelu
    assert (torch.ones(2) + 1).tolist() == [2.0, 2.0]
    # training=PRESERVE keeps training mode, where dropout has no ONNX mapping
    with pytest.raises(UnsupportedOperatorError, match="training mode"):
        rustgrad.onnx.export(
            model,
            torch.randn(2, 3, 6, 6),
            io.BytesIO(),
            training=rustgrad.onnx.TrainingMode.PRESERVE,
        )


def _run_all(model, inputs, **kw):
    """Exports ``model`` on ``inputs`` (a tuple) and compares every output."""
    buf = io.BytesIO()
    rustgrad.onnx.export(model, inputs, buf, **kw)
    onnx.checker.check_model(onnx.load_from_string(buf.getvalue()), full_check=True)
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    return sess


def _compare(sess, model, inputs):
    flat = list(rustgrad.onnx._export._tensors(inputs))
    got = sess.run(None, {i.name: t.numpy() for i, t in zip(sess.get_inputs(), flat)})
    model.eval()
    with torch.no_grad():
        want = [t.numpy() for t in rustgrad.onnx._export._tensors(model(*inputs))]
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


@pytest.mark.parametrize(
    "make",
    [
        lambda: nn.LSTM(4, 6, num_layers=2, bidirectional=True),
        lambda: nn.GRU(4, 6, num_layers=2, bidirectional=True),
        lambda: nn.RNN(4, 6, nonlinearity="relu", bias=False),
    ],
    ids=["lstm", "gru", "rnn"],
)
def test_recurrent_layers_match_onnxruntime(make):
    torch.manual_seed(6)
    model = make()
    x = torch.randn(5, 2, 4)
    _compare(_run_all(model, (x,)), model, (x,))


def test_lstm_classifier_with_state_embedding_and_indexing():
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 4)
            self.lstm = nn.LSTM(4, 6, num_layers=2, batch_first=True)
            self.head = nn.Linear(6, 3)

        def forward(self, tokens, state):
            out, (h, c) = self.lstm(self.emb(tokens), state)
            return self.head(out[:, -1]), h[-1] + c[-1]

    torch.manual_seed(7)
    model = Tagger()
    tokens = torch.tensor(np.random.default_rng(1).integers(0, 20, (2, 7)))
    state = (torch.randn(2, 2, 6), torch.randn(2, 2, 6))
    sess = _run_all(
        model,
        (tokens, state),
        input_names=["tokens", "h0", "c0"],
        dynamic_axes={"tokens": {1: "time"}},
    )
    assert [i.name for i in sess.get_inputs()] == ["tokens", "h0", "c0"]
    _compare(sess, model, (tokens, state))
    longer = torch.tensor(np.random.default_rng(2).integers(0, 20, (2, 11)))
    _compare(sess, model, (longer, state))


def test_transformer_encoder_and_attention_match_onnxruntime():
    torch.manual_seed(8)
    mha = nn.MultiheadAttention(8, 2)
    q, kv = torch.randn(5, 2, 8), torch.randn(3, 2, 8)
    _compare(_run_all(mha, (q, kv, kv)), mha, (q, kv, kv))  # output and mean weights

    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    x = torch.randn(2, 5, 8)
    axes = {"input": {0: "batch", 1: "time"}, "output": {0: "batch", 1: "time"}}
    sess = _run_all(enc, (x,), dynamic_axes=axes)
    _compare(sess, enc, (x,))
    _compare(sess, enc, (torch.randn(3, 4, 8),))

    gelu = nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", norm_first=True)
    x = torch.randn(5, 2, 8)
    _compare(_run_all(gelu, (x,)), gelu, (x,))


def test_export_params_false_and_initializers_as_inputs(capsys):
    torch.manual_seed(9)
    model = nn.Linear(3, 2)
    x = torch.randn(2, 3)
    buf = io.BytesIO()
    rustgrad.onnx.export(model, (x,), buf, export_params=False, verbose=True)
    assert "Gemm" in capsys.readouterr().out
    proto = onnx.load_from_string(buf.getvalue())
    assert not proto.graph.initializer
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    sess = ort.InferenceSession(buf.getvalue(), providers=["CPUExecutionProvider"])
    feeds = {"input": x.numpy(), "weight": model.weight.detach().numpy()}
    feeds["bias"] = model.bias.detach().numpy()
    with torch.no_grad():
        np.testing.assert_allclose(sess.run(None, feeds)[0], model(x).numpy(), atol=1e-6)
    buf = io.BytesIO()
    rustgrad.onnx.export(model, x, buf, keep_initializers_as_inputs=True)
    proto = onnx.load_from_string(buf.getvalue())
    assert [i.name for i in proto.graph.input] == ["input", "weight", "bias"]
    assert {i.name for i in proto.graph.initializer} == {"weight", "bias"}


class _Attend(nn.Module):
    """Calls a MultiheadAttention with its masks as model inputs (graph inputs)."""

    def __init__(self, mha, flags, mask=False, kpm=False):
        super().__init__()
        self.mha, self.flags, self.mask, self.kpm = mha, flags, mask, kpm

    def forward(self, q, k, v, *masks):
        masks = list(masks)
        attn_mask = masks.pop(0) if self.mask else None
        kpm = masks.pop(0) if self.kpm else None
        return self.mha(q, k, v, attn_mask=attn_mask, key_padding_mask=kpm, **self.flags)


def _padding(batch, keys):
    """A bool key padding mask (True: ignored) that masks every key of batch row 0."""
    kpm = np.zeros((batch, keys), bool)
    kpm[0] = True
    kpm[1, -1] = True
    return torch.tensor(kpm)


@pytest.mark.parametrize(
    "make, flags",
    [
        (lambda: nn.MultiheadAttention(8, 2), {}),
        (lambda: nn.MultiheadAttention(8, 2), {"need_weights": False}),
        (lambda: nn.MultiheadAttention(8, 2), {"average_attn_weights": False}),
        (lambda: nn.MultiheadAttention(8, 2, batch_first=True, kdim=6, vdim=4), {}),
        (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True), {}),
        (lambda: nn.MultiheadAttention(8, 2, add_bias_kv=True), {"need_weights": False}),
    ],
    ids=["weights", "no-weights", "per-head", "kdim-vdim", "bias-kv-zero-attn", "bias-kv"],
)
def test_attention_masks_as_inputs_match_onnxruntime(make, flags):
    # bool 2-D and float 3-D attention masks, a bool and a float key padding mask;
    # batch row 0 has every key masked: NaN rows with weights (softmax of -inf),
    # zeros without (the fused kernel), as eager and PyTorch
    torch.manual_seed(10)
    mha = make()
    with torch.no_grad():
        mha.in_proj_bias.normal_()
        mha.out_proj.bias.normal_()
    nb, length, keys = 3, 4, 5
    q = torch.randn(length, nb, 8)
    k, v = torch.randn(keys, nb, mha.kdim), torch.randn(keys, nb, mha.vdim)
    if mha.batch_first:
        q, k, v = (t.transpose(0, 1).contiguous() for t in (q, k, v))
    bool_mask = torch.tensor(np.random.default_rng(3).random((length, keys)) < 0.3)
    float_mask = torch.randn(nb * 2, length, keys)
    kpm = _padding(nb, keys)
    float_kpm = torch.zeros(nb, keys).masked_fill(kpm, float("-inf"))
    cases = [
        (_Attend(mha, flags, mask=True, kpm=True), (q, k, v, bool_mask, kpm)),
        (_Attend(mha, flags, mask=True), (q, k, v, float_mask)),
        (_Attend(mha, flags, kpm=True), (q, k, v, float_kpm)),
    ]
    for model, inputs in cases:
        _compare(_run_all(model, inputs), model, inputs)
    with torch.no_grad():
        out = cases[0][0](*cases[0][1])[0]
    row0 = out[:, 0] if not mha.batch_first else out[0]
    sees_nothing = mha.bias_k is None and not mha.add_zero_attn
    assert bool(row0.isnan().all()) == (sees_nothing and flags.get("need_weights", True))
    if sees_nothing and not flags.get("need_weights", True):  # zeros, then out_proj
        assert torch.allclose(row0, mha.out_proj.bias.detach().expand(length, 8))


def test_attention_is_causal_unbatched_and_weights_per_head():
    torch.manual_seed(11)
    mha = nn.MultiheadAttention(8, 2)

    class Causal(nn.Module):
        # the mask is made inside forward: with is_causal and no weights, eager lets
        # the kernel apply causality, and the file computes it from the input's length
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.size(0))
            return self.mha(x, x, x, attn_mask=mask, is_causal=True, need_weights=False)[0]

    model = Causal()
    x = torch.randn(5, 2, 8)
    sess = _run_all(model, (x,), dynamic_axes={"input": {0: "time"}})
    _compare(sess, model, (x,))
    _compare(sess, model, (torch.randn(7, 2, 8),))  # another length

    # a mask made inside forward without is_causal is stored as an initializer
    class Fixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            mask = torch.ones(5, 5).tril().logical_not()  # bool: True is masked
            return self.mha(x, x, x, attn_mask=mask)

    model = Fixed()
    x = torch.randn(5, 8)  # unbatched (L, E)
    _compare(_run_all(model, (x,)), model, (x,))

    unbatched = _Attend(mha, {"average_attn_weights": False}, mask=True, kpm=True)
    kpm = torch.tensor([0.0, float("-inf"), 0.0, 0.0, float("-inf")])
    inputs = (x, x, x, torch.randn(2, 5, 5), kpm)
    _compare(_run_all(unbatched, inputs), unbatched, inputs)


class _SDPA(nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, q, k, v, *mask):
        return F.scaled_dot_product_attention(q, k, v, *mask, **self.kw)


def test_scaled_dot_product_attention_matches_onnxruntime():
    torch.manual_seed(12)
    q, k, v = torch.randn(2, 3, 4, 6), torch.randn(2, 3, 5, 6), torch.randn(2, 3, 5, 7)
    rows = np.random.default_rng(4).random((4, 5)) < 0.5
    rows[1] = False  # a query that sees no key gives zeros (rustgrad, PyTorch)
    bool_mask = torch.tensor(rows)
    for model, inputs in [
        (_SDPA(), (q, k, v, bool_mask)),
        (_SDPA(scale=0.3), (q, k, v, torch.randn(3, 4, 5))),
        (_SDPA(is_causal=True), (q, k, v)),
        (_SDPA(is_causal=True), (k, q, q)),  # more queries than keys, top-left aligned
    ]:
        _compare(_run_all(model, inputs), model, inputs)
    with torch.no_grad():
        assert _SDPA()(q, k, v, bool_mask)[:, :, 1].abs().max().item() == 0
    with pytest.raises(UnsupportedOperatorError, match="scaled_dot_product_attention.*dropout"):
        rustgrad.onnx.export(_SDPA(dropout_p=0.5), (q, k, v), io.BytesIO())


def test_transformer_encoder_with_masks_as_inputs():
    torch.manual_seed(13)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    class Enc(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = enc

        def forward(self, x, mask, kpm):
            return self.enc(x, mask=mask, src_key_padding_mask=kpm)

    model = Enc()
    x = torch.randn(3, 5, 8)
    kpm = _padding(3, 5)
    float_kpm = torch.zeros(3, 5).masked_fill(kpm, float("-inf"))
    bool_mask = torch.tensor(np.random.default_rng(5).random((5, 5)) < 0.3)
    # a causal mask fed as an input is used as fed (eager sees it is causal)
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    for inputs in [(x, bool_mask, kpm), (x, torch.randn(5, 5), float_kpm), (x, causal, float_kpm)]:
        _compare(_run_all(model, inputs), model, inputs)


def test_transformer_with_masks_made_inside_forward():
    torch.manual_seed(14)
    model = nn.Transformer(
        d_model=8,
        nhead=2,
        num_encoder_layers=1,
        num_decoder_layers=2,
        dim_feedforward=16,
        dropout=0.0,
    )

    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = model

        def forward(self, src, tgt, src_kpm):
            tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0))
            return self.t(
                src,
                tgt,
                tgt_mask=tgt_mask,
                src_key_padding_mask=src_kpm,
                memory_key_padding_mask=src_kpm,
            )

    net = Seq2Seq()
    src, tgt = torch.randn(6, 2, 8), torch.randn(4, 2, 8)
    kpm = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    axes = {"input_0": {0: "src_len"}, "input_1": {0: "tgt_len"}, "input_2": {1: "src_len"}}
    axes["output"] = {0: "tgt_len"}
    sess = _run_all(net, (src, tgt, kpm), dynamic_axes=axes)
    _compare(sess, net, (src, tgt, kpm))
    # the decoder's causal mask is computed in the graph: other lengths run
    src, tgt = torch.randn(3, 2, 8), torch.randn(7, 2, 8)
    kpm = torch.tensor([[False] * 3, [False, False, True]])
    _compare(sess, net, (src, tgt, kpm))

    # a decoder layer with a memory mask given as an input
    dec = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, norm_first=True)

    class Dec(nn.Module):
        def __init__(self):
            super().__init__()
            self.dec = dec

        def forward(self, tgt, memory, memory_mask):
            return self.dec(tgt, memory, memory_mask=memory_mask)

    inputs = (torch.randn(4, 2, 8), torch.randn(6, 2, 8), torch.randn(4, 6))
    _compare(_run_all(Dec(), inputs), Dec(), inputs)


def test_fixed_constant_on_a_dynamic_axis_warns():
    mha = nn.MultiheadAttention(8, 2)

    class Fixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = mha

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.size(0))
            return self.mha(x, x, x, attn_mask=mask)[0]

    with pytest.warns(UserWarning, match="created inside forward.*'time'"):
        rustgrad.onnx.export(
            Fixed(), torch.randn(5, 2, 8), io.BytesIO(), dynamic_axes={"input": {0: "time"}}
        )


def test_advanced_indexing_and_mask_ops():
    class Index(nn.Module):
        def __init__(self):
            super().__init__()
            self.table = nn.Parameter(torch.randn(10, 3))

        def forward(self, x, idx, rows, mask):
            a = x[idx]  # Gather on dim 0 with an int tensor (negative indices too)
            b = x[1, :, idx[:2]]  # an int, then a tensor: ints go first, as PyTorch
            c = x[:, [0, 2], None, 1:]  # a list, None
            d = x[mask]  # a 2-D bool mask on the leading dims -> (K, 5)
            e = x[..., rows[0] > 0]  # a 1-D bool mask -> Compress
            f = self.table[idx].masked_fill(self.table[idx] > 0.5, 0.0)
            g = torch.where(x > 0, x, -x).unsqueeze(0).expand(2, -1, -1, -1)
            h = (~(x == 1)).float() + (x != 0).float() + x.eq(0).float()
            return a, b, c, d, e, f, g * h, (x > 0).all(dim=-1), (x > 2).any()

    torch.manual_seed(15)
    model = Index()
    x = torch.randn(3, 4, 5)
    idx = torch.tensor([2, 0, -1])
    rows = torch.randn(1, 5)
    mask = torch.tensor(np.random.default_rng(6).random((3, 4)) < 0.5)
    inputs = (x, idx, rows, mask)
    _compare(_run_all(model, inputs), model, inputs)


def test_padding_mask_from_tokens():
    # the usual `tokens == pad` key padding mask; the encoder's causal-mask detection
    # compares the mask in Python (`(mask == causal).all()`): those nodes are pruned
    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 8, padding_idx=0)
            layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
            self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

        def forward(self, tokens, mask):
            return self.enc(self.emb(tokens), mask=mask, src_key_padding_mask=tokens == 0)

    torch.manual_seed(16)
    model = Encoder()
    tokens = torch.tensor([[3, 5, 7, 0, 0], [0, 0, 0, 0, 0]])  # row 1: all padding
    mask = nn.Transformer.generate_square_subsequent_mask(5) == float("-inf")  # bool
    buf = io.BytesIO()
    rustgrad.onnx.export(model, (tokens, mask), buf)
    ops = _ops(onnx.load_from_string(buf.getvalue()))
    assert "Equal" in ops and "ReduceMin" not in ops
    _compare(_run_all(model, (tokens, mask)), model, (tokens, mask))
