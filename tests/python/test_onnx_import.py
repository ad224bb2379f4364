"""ONNX import (issue 24): ``rustgrad.onnx.load_model`` on models exported by PyTorch
(tests/vectors/onnx, written by tests/vectors/generate_onnx_fixtures.py), fine-tuning
an imported network with a new head, and hostile files (Note [ONNX import])."""

from __future__ import annotations

from io import BytesIO
from pathlib import Path

import numpy as np
import onnx
import pytest
import rustgrad as torch
from onnx import TensorProto, helper, numpy_helper
from rustgrad import nn
from rustgrad.onnx import load_model

FIXTURES = Path(__file__).resolve().parents[1] / "vectors" / "onnx"
MODELS = ["mlp", "lenet", "resnet18_small", "misc", "lstm"]


@pytest.mark.parametrize("name", MODELS)
def test_fixture_matches_pytorch(name: str) -> None:
    """Forward output and input gradient equal PyTorch's within 1e-5."""
    model = load_model(FIXTURES / f"{name}.onnx")
    io = np.load(FIXTURES / f"{name}_io.npz")
    x = torch.from_numpy(io["input"].copy()).requires_grad_(True)
    y = model(x)
    np.testing.assert_allclose(y.detach().numpy(), io["output"], rtol=1e-5, atol=1e-5)
    (y * torch.from_numpy(io["cotangent"].copy())).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), io["input_grad"], rtol=1e-4, atol=1e-5)


def test_initializers_are_parameters() -> None:
    """Floating initializers are Parameters under sanitised names; a state_dict works."""
    model = load_model(FIXTURES / "mlp.onnx")
    names = dict(model.named_parameters())
    assert model.initializer_names["fc1.weight"] == "fc1_weight"
    assert isinstance(names["fc1_weight"], nn.Parameter)
    assert tuple(names["fc1_weight"].shape) == (16, 6)
    assert all(p.requires_grad for p in model.parameters())
    assert "fc3_bias" in model.state_dict()
    assert [n.op_type for n in model.nodes][:2] == ["Gemm", "BatchNormalization"]


def test_finetune_new_head() -> None:
    """Freeze an imported LeNet, replace its last Gemm by a new Linear, train: only the
    new head changes and the loss goes down."""
    torch.manual_seed(0)
    model = load_model(FIXTURES / "lenet.onnx")
    model.requires_grad_(False)
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    last_gemm = [n for n in model.nodes if n.op_type == "Gemm"][-1]
    head = nn.Linear(32, 3)
    model.replace_node(last_gemm.name, head)
    head_before = head.weight.detach().clone()
    trainable = [p for p in model.parameters() if p.requires_grad]
    assert len(trainable) == 2
    opt = torch.optim.SGD(trainable, lr=0.1)
    x = torch.from_numpy(np.load(FIXTURES / "lenet_io.npz")["input"].copy())
    target = torch.tensor([0, 2])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        out = model(x)
        assert tuple(out.shape) == (2, 3)
        loss = nn.functional.cross_entropy(out, target)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    after = model.state_dict()
    for k, v in before.items():
        assert torch.equal(after[k], v), k
    assert not torch.equal(head.weight.detach(), head_before)


# --------------------------------------------------------------------------- hostile


def _model(nodes, inits=(), inputs=("x",), outputs=("y",)) -> onnx.ModelProto:
    graph = helper.make_graph(
        list(nodes),
        "g",
        [helper.make_tensor_value_info(i, TensorProto.FLOAT, None) for i in inputs],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        initializer=list(inits),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def test_cycle_raises(tmp_path: Path) -> None:
    """A cycle between nodes is reported, not looped on."""
    m = _model(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
            helper.make_node("Relu", ["a"], ["b"], name="n2"),
            helper.make_node("Identity", ["b"], ["y"], name="n3"),
        ]
    )
    with pytest.raises(ValueError, match="cycle"):
        load_model(_save(m, tmp_path / "cycle.onnx"))


def test_missing_input_raises() -> None:
    """A node input that nothing produces is named."""
    m = _model([helper.make_node("Add", ["x", "ghost"], ["y"], name="n1")])
    with pytest.raises(ValueError, match="ghost"):
        load_model(m)


def test_unknown_op_names_it() -> None:
    """An op the importer lacks raises NotImplementedError naming it."""
    m = _model([helper.make_node("FancyOp", ["x"], ["y"], name="n1")])
    with pytest.raises(NotImplementedError, match="FancyOp"):
        load_model(m)


def test_absurd_reshape_raises() -> None:
    """A Reshape to an absurd shape raises at run time, allocating nothing."""
    shape = numpy_helper.from_array(np.array([1 << 40, 1 << 40, -1], dtype=np.int64), "s")
    m = _model([helper.make_node("Reshape", ["x", "s"], ["y"])], inits=[shape])
    model = load_model(m)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        model(torch.ones(2, 3))


def test_absurd_constant_of_shape_raises() -> None:
    """ConstantOfShape refuses to create a huge tensor."""
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20], dtype=np.int64), "s")
    m = _model(
        [
            helper.make_node("ConstantOfShape", ["s"], ["z"]),
            helper.make_node("Add", ["x", "z"], ["y"]),
        ],
        inits=[shape],
    )
    with pytest.raises(RuntimeError, match="refusing to create"):
        load_model(m)(torch.ones(2))


def test_absurd_expand_raises() -> None:
    """Expand refuses to create a huge tensor; GatherND and Compress check indices."""
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20], dtype=np.int64), "s")
    m = _model([helper.make_node("Expand", ["x", "s"], ["y"])], inits=[shape])
    with pytest.raises(RuntimeError, match="refusing to create"):
        load_model(m)(torch.ones(1))
    idx = numpy_helper.from_array(np.array([[5]], dtype=np.int64), "i")
    m = _model([helper.make_node("GatherND", ["x", "i"], ["y"])], inits=[idx])
    with pytest.raises(IndexError, match="out of range"):
        load_model(m)(torch.ones(2))
    cond = numpy_helper.from_array(np.ones(3, bool), "c")
    m = _model([helper.make_node("Compress", ["x", "c"], ["y"], axis=0)], inits=[cond])
    with pytest.raises(ValueError, match="condition of shape"):
        load_model(m)(torch.ones(2))


@pytest.mark.parametrize("op", ["Conv", "MaxPool"])
def test_absurd_pads_raise(op: str) -> None:
    """Pads that would make a huge padded input raise before allocating."""
    ins = {"x": _r(1, 2, 5, 5)} | ({"w": _r(2, 2, 3, 3)} if op == "Conv" else {})
    attrs = {"pads": [30000, 30000, 30000, 29999]} | (
        {} if op == "Conv" else {"kernel_shape": [2, 2]}
    )
    model, _ = _attr_case(op, ins, attrs)
    with pytest.raises(RuntimeError, match="refusing pads"):
        load_model(model)(*[torch.from_numpy(v) for v in ins.values()])


def test_absurd_initializer_dims_raise() -> None:
    """Initializer dims inconsistent with its data, or huge, raise ValueError."""
    huge = helper.make_tensor("w", TensorProto.FLOAT, [4], b"\0" * 16, raw=True)
    huge.ClearField("dims")
    huge.dims.extend([1 << 40, 1 << 40])
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], inits=[huge])
    with pytest.raises(ValueError, match="too large"):
        load_model(m)
    short = helper.make_tensor("w", TensorProto.FLOAT, [4], b"\0" * 16, raw=True)
    short.dims[0] = 1000
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], inits=[short])
    with pytest.raises(ValueError, match="expected 4000"):
        load_model(m)


def _external(info: dict[str, str]) -> onnx.TensorProto:
    """A float initializer ``w`` of shape [4] stored as external data."""
    w = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4])
    w.data_location = TensorProto.EXTERNAL
    for k, v in info.items():
        w.external_data.add(key=k, value=v)
    return w


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd", "sub/../../outside.bin"])
def test_external_data_outside_folder_raises(tmp_path: Path, location: str) -> None:
    """External data may only come from inside the model's folder."""
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    w = _external({"location": location})
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w])
    with pytest.raises(ValueError, match="outside the model's folder|must be relative"):
        load_model(_save(m, folder / "m.onnx"))


def test_external_data_symlink_out_of_folder_raises(tmp_path: Path) -> None:
    """A symlink inside the folder that points outside it is refused too."""
    (tmp_path / "outside.bin").write_bytes(b"\0" * 16)
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "link.bin").symlink_to(tmp_path / "outside.bin")
    m = _model(
        [helper.make_node("Add", ["x", "w"], ["y"])], inits=[_external({"location": "link.bin"})]
    )
    with pytest.raises(ValueError, match="outside the model's folder"):
        load_model(_save(m, folder / "m.onnx"))


def test_external_data_inside_folder_loads(tmp_path: Path) -> None:
    """External data inside the folder is read, within the declared range."""
    (tmp_path / "w.bin").write_bytes(b"\xff" * 8 + np.arange(4, dtype=np.float32).tobytes())
    w = _external({"location": "w.bin", "offset": "8", "length": "16"})
    m = _model([helper.make_node("Add", ["x", "w"], ["y"])], inits=[w])
    model = load_model(_save(m, tmp_path / "m.onnx"))
    assert model(torch.zeros(4)).tolist() == [0.0, 1.0, 2.0, 3.0]
    m.graph.initializer[0].external_data[2].value = "32"  # past the end of the file
    with pytest.raises(ValueError, match="outside 'w.bin'"):
        load_model(_save(m, tmp_path / "m.onnx"))


def test_truncated_and_garbage_bytes_raise(tmp_path: Path) -> None:
    """Truncated files and garbage raise ValueError, never crash."""
    data = (FIXTURES / "lenet.onnx").read_bytes()
    for cut in (0, 7, 100, len(data) // 2, len(data) - 3):
        path = tmp_path / f"cut{cut}.onnx"
        path.write_bytes(data[:cut])
        with pytest.raises(ValueError):
            load_model(path)
    rng = np.random.default_rng(0)
    for k in range(5):
        path = tmp_path / f"garbage{k}.onnx"
        path.write_bytes(rng.integers(0, 256, 200 + 50 * k, dtype=np.uint8).tobytes())
        with pytest.raises(ValueError):
            load_model(path)


@pytest.mark.parametrize("name", ["mlp", "misc", "lenet", "lstm"])
def test_mutated_files_raise_cleanly(name: str) -> None:
    """Random byte mutations of a fixture either load and run, or raise a clear
    ValueError / RuntimeError / IndexError (NotImplementedError is a RuntimeError) at
    load or run time: never another exception, a crash or a hang. Mutated names with
    invalid UTF-8 are among the cases this covers."""
    data = (FIXTURES / f"{name}.onnx").read_bytes()
    x = torch.from_numpy(np.load(FIXTURES / f"{name}_io.npz")["input"].copy())
    rng = np.random.default_rng(24)
    for _ in range(150):
        mutated = bytearray(data)
        for pos in rng.integers(0, len(data), rng.integers(1, 4)):
            mutated[pos] = rng.integers(0, 256)
        try:
            model = load_model(bytes(mutated))
            model(x)
        except (ValueError, RuntimeError, IndexError):
            pass


# ------------------------------------------------------- single ops vs onnx's reference


def _attr_case(op, inputs, attrs=None, consts=(), opset=17):
    """(model, feeds): one ``op`` node over float inputs ``inputs`` (name -> array) and
    constant initializers ``consts`` (name -> array), output ``y``."""
    names = list(inputs) + [k for k, _ in consts]
    graph = helper.make_graph(
        [helper.make_node(op, names, ["y"], **(attrs or {}))],
        "g",
        [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", TensorProto.UNDEFINED, None)],
        initializer=[numpy_helper.from_array(v, k) for k, v in consts],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), inputs


def _r(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


_I64 = np.int64
OP_CASES = {
    "gemm_alpha_beta_transA": _attr_case(
        "Gemm",
        {"a": _r(4, 3), "b": _r(4, 5, seed=1), "c": _r(5, seed=2)},
        {"alpha": 0.5, "beta": 2.0, "transA": 1},
    ),
    "gemm_transB_no_c": _attr_case("Gemm", {"a": _r(2, 3), "b": _r(4, 3, seed=1)}, {"transB": 1}),
    "conv_group_dilation_asym_pads": _attr_case(
        "Conv",
        {"x": _r(1, 4, 7, 6), "w": _r(6, 2, 3, 2, seed=1), "b": _r(6, seed=2)},
        {"group": 2, "dilations": [2, 1], "strides": [1, 2], "pads": [1, 0, 2, 1]},
    ),
    "conv1d_same_upper": _attr_case(
        "Conv", {"x": _r(2, 3, 9), "w": _r(4, 3, 4, seed=1)}, {"auto_pad": "SAME_UPPER"}
    ),
    "maxpool_ceil_pads": _attr_case(
        "MaxPool",
        {"x": _r(1, 2, 7, 7)},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    ),
    "avgpool_exclude_pad": _attr_case(
        "AveragePool",
        {"x": _r(1, 2, 6, 5)},
        {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 1, 1, 1], "count_include_pad": 0},
    ),
    "flatten_axis2": _attr_case("Flatten", {"x": _r(2, 3, 4, 5)}, {"axis": 2}),
    "transpose_default": _attr_case("Transpose", {"x": _r(2, 3, 4)}),
    "slice_steps_negative_bounds": _attr_case(
        "Slice",
        {"x": _r(5, 8)},
        consts=[
            ("starts", np.array([1, -7], _I64)),
            ("ends", np.array([1 << 62, -1], _I64)),
            ("axes", np.array([0, 1], _I64)),
            ("steps", np.array([2, 3], _I64)),
        ],
    ),
    "squeeze_all": _attr_case("Squeeze", {"x": _r(1, 3, 1, 2)}),
    "unsqueeze_negative": _attr_case(
        "Unsqueeze", {"x": _r(3, 2)}, consts=[("axes", np.array([-1, 0], _I64))]
    ),
    "reshape_zero_minus_one": _attr_case(
        "Reshape", {"x": _r(2, 3, 4)}, consts=[("s", np.array([0, -1, 2], _I64))]
    ),
    "gather_axis1_negative": _attr_case(
        "Gather", {"x": _r(3, 5)}, {"axis": 1}, consts=[("i", np.array([[0, -1], [2, 2]], _I64))]
    ),
    "reduce_mean_keepdims0": _attr_case(
        "ReduceMean", {"x": _r(2, 3, 4)}, {"axes": [0, 2], "keepdims": 0}
    ),
    "batchnorm_eps": _attr_case(
        "BatchNormalization",
        {"x": _r(2, 3, 4)},
        {"epsilon": 1e-3},
        consts=[
            ("s", _r(3, seed=1)),
            ("b", _r(3, seed=2)),
            ("m", _r(3, seed=3)),
            ("v", np.abs(_r(3, seed=4)) + 0.5),
        ],
    ),
    "lstm_reverse_with_initial_state": _attr_case(
        "LSTM",
        {"x": _r(3, 2, 4), "w": _r(1, 20, 4, seed=1), "r": _r(1, 20, 5, seed=2)},
        {"hidden_size": 5, "direction": "reverse"},
        consts=[
            ("b", _r(1, 40, seed=3)),
            ("", np.zeros(0, np.float32)),
            ("h0", _r(1, 2, 5, seed=4)),
            ("c0", _r(1, 2, 5, seed=5)),
        ],
    ),
    "gru_forward_bias": _attr_case(
        "GRU",
        {"x": _r(3, 2, 4), "w": _r(1, 15, 4, seed=1), "r": _r(1, 15, 5, seed=2)},
        {"hidden_size": 5},
        consts=[("b", _r(1, 30, seed=3))],
    ),
    "gru_bidirectional_linear_before_reset": _attr_case(
        "GRU",
        {"x": _r(4, 2, 3), "w": _r(2, 12, 3, seed=1), "r": _r(2, 12, 4, seed=2)},
        {"hidden_size": 4, "direction": "bidirectional", "linear_before_reset": 1},
        consts=[
            ("b", _r(2, 24, seed=3)),
            ("", np.zeros(0, np.float32)),
            ("h0", _r(2, 2, 4, seed=4)),
        ],
    ),
    "layer_norm_axis1": _attr_case(
        "LayerNormalization",
        {"x": _r(2, 3, 4)},
        {"axis": 1, "epsilon": 1e-3},
        consts=[("s", _r(3, 4, seed=1)), ("b", _r(3, 4, seed=2))],
    ),
    "layer_norm_broadcast_scale": _attr_case(
        "LayerNormalization", {"x": _r(2, 3, 4)}, {"axis": 1}, consts=[("s", _r(4, seed=1))]
    ),
    "erf": _attr_case("Erf", {"x": _r(3, 4)}),
    "reduce_max_keepdims": _attr_case("ReduceMax", {"x": _r(2, 3, 4)}, {"axes": [-1]}),
    "reduce_min_all": _attr_case("ReduceMin", {"x": _r(2, 3, 4)}, {"keepdims": 0}),
    "trilu_lower_k1": _attr_case(
        "Trilu", {"x": _r(3, 4)}, {"upper": 0}, consts=[("k", np.array(1, _I64))]
    ),
    "expand_bidirectional": _attr_case(
        "Expand", {"x": _r(3, 1)}, consts=[("s", np.array([2, 1, 4], _I64))]
    ),
    "gather_nd_negative": _attr_case(
        "GatherND", {"x": _r(3, 4, 2)}, consts=[("i", np.array([[0, 1], [2, -1]], _I64))]
    ),
    "compress_axis1_short_condition": _attr_case(
        "Compress", {"x": _r(3, 5)}, {"axis": 1}, consts=[("c", np.array([1, 0, 1, 1], bool))]
    ),
    "compress_flat": _attr_case(
        "Compress", {"x": _r(2, 2)}, consts=[("c", np.array([0, 1, 1], bool))]
    ),
    "nonzero": _attr_case("NonZero", {"x": np.maximum(_r(3, 4), 0)}),
    "greater_broadcast": _attr_case("Greater", {"a": _r(3, 4), "b": _r(4, seed=1)}),
    "less_or_equal": _attr_case("LessOrEqual", {"a": _r(3, 4), "b": _r(3, 1, seed=1)}),
    "lstm_layout1": _attr_case(
        "LSTM",
        {"x": _r(2, 3, 4), "w": _r(1, 20, 4, seed=1), "r": _r(1, 20, 5, seed=2)},
        {"hidden_size": 5, "layout": 1},
    ),
}


@pytest.mark.parametrize("case", sorted(OP_CASES))
def test_single_op_matches_onnx_reference(case: str) -> None:
    """Each op's attribute handling agrees with onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator

    model, feeds = OP_CASES[case]
    expected = ReferenceEvaluator(model).run(None, feeds)[0]
    got = load_model(model)(*[torch.from_numpy(v.copy()) for v in feeds.values()])
    if isinstance(got, tuple):
        got = got[0]
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.detach().numpy(), expected, rtol=1e-5, atol=1e-5)


def test_softmax_before_opset13_flattens() -> None:
    """Softmax-1/11 normalise over all dims from ``axis`` on (the input coerced to 2-D),
    unlike Softmax-13 (onnx's reference evaluator implements only the latter)."""
    x = _r(2, 3, 4)
    model, _ = _attr_case("Softmax", {"x": x}, {"axis": 1}, opset=11)
    flat = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(axis=1, keepdims=True))
    expected = (flat / flat.sum(axis=1, keepdims=True)).reshape(2, 3, 4)
    got = load_model(model)(torch.from_numpy(x.copy()))
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-5, atol=1e-6)


ROUND_TRIP = {
    "cnn": (
        lambda: nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64, 5),
        ),
        (2, 1, 8, 8),
    ),
    "lstm": (lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True), (5, 2, 3)),
    "gru": (lambda: nn.GRU(3, 4, batch_first=True), (2, 5, 3)),
    "transformer_layer": (lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), (5, 2, 8)),
}


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
def test_round_trip_with_rustgrad_export(tmp_path: Path, name: str) -> None:
    """A model written by ``rustgrad.onnx.export`` loads back and computes the same."""
    torch.manual_seed(0)
    make, shape = ROUND_TRIP[name]
    model = make().eval()
    x = torch.randn(*shape)
    torch.onnx.export(model, (x,), str(tmp_path / "m.onnx"))
    got, want = load_model(tmp_path / "m.onnx")(x), model(x)
    got = got[0] if isinstance(got, tuple) else got
    want = want[0] if isinstance(want, tuple) else want
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)


class _Masked(nn.Module):
    """Attention with masks (an encoder-decoder with a causal mask made inside forward
    and a key padding mask input, MHA with bias_k/zero attention and a bool mask,
    scaled_dot_product_attention) and advanced indexing, for the round trip."""

    def __init__(self) -> None:
        super().__init__()
        self.t = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0)
        self.mha = nn.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True)

    def forward(self, src, tgt, kpm, mask, idx):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.size(0))
        y = self.t(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=kpm)
        z, w = self.mha(y, src, src, attn_mask=mask, key_padding_mask=kpm)
        q = z.permute(1, 0, 2).unsqueeze(1)  # (N, 1, L, E)
        s = nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        return s[:, 0][:, :, idx], w[~kpm[:, :4]], z[..., z[0, 0] > 0], (z == z).all(-1)


def test_round_trip_of_masked_attention_and_indexing() -> None:
    """An export with masks (inputs and made inside forward), causal attention computed
    in the graph and Gather/GatherND/Compress indexing loads back and agrees."""
    torch.manual_seed(1)
    model = _Masked().eval()
    src, tgt = torch.randn(6, 2, 8), torch.randn(4, 2, 8)
    kpm = torch.tensor([[False] * 6, [False] * 3 + [True] * 3])
    mask = torch.tensor(np.random.default_rng(0).random((4, 6)) < 0.3)
    inputs = (src, tgt, kpm, mask, torch.tensor([1, 5, -1]))
    buf = BytesIO()
    torch.onnx.export(model, inputs, buf)
    loaded = load_model(buf.getvalue())
    with torch.no_grad():
        want = model(*inputs)
        got = loaded(*inputs)
    assert len(got) == len(want) == 4
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)
    ops = {n.op_type for n in loaded.nodes}
    assert {"Where", "Trilu", "ReduceMax", "ReduceMin", "GatherND", "NonZero", "Compress"} <= ops
