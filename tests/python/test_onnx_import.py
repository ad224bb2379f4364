"""ONNX import (issue 24): ``rustgrad.onnx.load_model`` on models exported by PyTorch
(tests/vectors/onnx, written by tests/vectors/generate_onnx_fixtures.py), fine-tuning
an imported network with a new head, and hostile files (Note [ONNX import])."""

from __future__ import annotations

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
