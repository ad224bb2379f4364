"""rustgrad.save / rustgrad.load: PyTorch checkpoints (zip and legacy) read without
PyTorch and written for it, weights_only and safe globals, map_location, rustgrad's own
safetensors checkpoints, malicious and corrupted files, atomic writes. See Note
[Checkpoints].

The PyTorch fixtures (tests/vectors/ckpt_*) and the expected outputs come from
tests/vectors/generate_checkpoints.py, run with PyTorch.
"""

from __future__ import annotations

import collections
import dataclasses
import errno
import fractions
import io
import json
import math
import os
import pickle
import pickletools
import random
import struct
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn as nn
import rustgrad.nn.functional as F
from rustgrad import serialization
from rustgrad.models.resnet import BasicBlock

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
WIDTHS = (4, 8, 16, 32)
NUM_CLASSES = 10
# Errors a bad file may raise (documented in rustgrad.load's docstring).
LOAD_ERRORS = (RuntimeError, pickle.UnpicklingError)


# ------------------------------------------------ the generator's model, in rustgrad


class SmallResNet18(nn.Module):
    """torchvision's ResNet-18 module tree and names, with channels 4-8-16-32 (the
    library's BasicBlock; torchvision's ResNet class fixes the widths at 64-512)."""

    def __init__(self):
        super().__init__()
        self.inplanes = WIDTHS[0]
        self.conv1 = nn.Conv2d(3, WIDTHS[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(WIDTHS[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(WIDTHS[0])
        self.layer2 = self._make_layer(WIDTHS[1], stride=2)
        self.layer3 = self._make_layer(WIDTHS[2], stride=2)
        self.layer4 = self._make_layer(WIDTHS[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(WIDTHS[3], NUM_CLASSES)

    def _make_layer(self, planes: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )
        first = BasicBlock(self.inplanes, planes, stride, downsample)
        self.inplanes = planes
        return nn.Sequential(first, BasicBlock(planes, planes))

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(rustgrad.flatten(self.avgpool(x), 1))


def make_optimizer(model: nn.Module) -> rustgrad.optim.SGD:
    return rustgrad.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(VECTORS / "ckpt_resnet_expected.npz") as data:
        return dict(data)


def close(actual: rustgrad.Tensor, want: np.ndarray, tol: float = 1e-5) -> None:
    np.testing.assert_allclose(actual.detach().numpy(), want, rtol=tol, atol=tol)


def snapshot(model: nn.Module) -> dict[str, bytes]:
    return {k: v.numpy().tobytes() for k, v in model.state_dict().items()}


# ------------------------------------------------------- PyTorch checkpoints


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_torch_checkpoint_gives_pytorch_outputs_in_eval_and_train_mode(fmt, expected):
    checkpoint = rustgrad.load(VECTORS / f"ckpt_resnet_{fmt}.pt")
    assert checkpoint["epoch"] == 2
    assert isinstance(checkpoint["model"], collections.OrderedDict)
    model = SmallResNet18()
    model.load_state_dict(checkpoint["model"], strict=True)
    x = rustgrad.tensor(expected["eval_input"])
    model.eval()
    with rustgrad.no_grad():
        close(model(x), expected["eval_output"])
    model.train()
    with rustgrad.no_grad():
        close(model(x), expected["train_output"])


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_torch_checkpoint_resumes_training_as_pytorch(fmt, expected):
    checkpoint = rustgrad.load(VECTORS / f"ckpt_resnet_{fmt}.pt")
    state = checkpoint["optimizer"]
    params = state["param_groups"][0]
    assert (params["lr"], params["momentum"], params["weight_decay"]) == (0.01, 0.9, 1e-4)
    model = SmallResNet18()
    model.load_state_dict(checkpoint["model"])
    assert params["params"] == list(range(len(list(model.parameters()))))
    assert sorted(state["state"]) == params["params"]
    optimizer = make_optimizer(model)
    optimizer.load_state_dict(state)
    for k in range(3):
        x = rustgrad.tensor(expected[f"step{k}_input"])
        y = rustgrad.tensor(expected[f"step{k}_target"])
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        assert loss.item() == pytest.approx(float(expected[f"step{k}_loss"]), abs=1e-5)
    final = model.state_dict()
    assert sorted(final) == sorted(
        k.removeprefix("final.") for k in expected if k.startswith("final.")
    )
    for name, value in final.items():
        close(value, expected[f"final.{name}"])
    # The momentum buffers are accumulated gradients (up to ~5 in magnitude) whose
    # float32 sums run in another order than PyTorch's convolution backward.
    for i, p in enumerate(model.parameters()):
        close(optimizer.state[p]["momentum_buffer"], expected[f"final_momentum.{i}"], tol=1e-4)


@pytest.mark.parametrize("name", ["ckpt_views.pt", "ckpt_views_legacy.pt"])
def test_torch_views_load_sharing_storage(name):
    obj = rustgrad.load(VECTORS / name)
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(obj["x"].numpy(), x)
    np.testing.assert_array_equal(obj["row"].numpy(), x[1])
    np.testing.assert_array_equal(obj["col"].numpy(), x[:, 2])
    np.testing.assert_array_equal(obj["t"].numpy(), x.T)
    assert obj["t"].stride() == (1, 4)
    assert obj["row"].storage_offset() == 4
    # One storage, as in PyTorch: a write through x shows in every view.
    obj["x"][1, 2] = 100.0
    for key, value in [("row", obj["row"][2]), ("col", obj["col"][1]), ("t", obj["t"][2, 1])]:
        assert value.item() == 100.0, key
    assert obj["alias"][1, 2].item() == 100.0
    assert obj["ints"].dtype == rustgrad.int64
    assert obj["ints"].tolist() == [[1, -2], [3, 2**40]]
    assert obj["mask"].dtype == rustgrad.bool and obj["mask"].tolist() == [True, False, True]
    assert isinstance(obj["param"], nn.Parameter) and obj["param"].requires_grad
    assert obj["param"].tolist() == [0.5, -1.5]
    assert obj["plain"] == [1, 2.5, "s", None, True, (3, 4)]


def legacy_pickle(global_line: bytes) -> bytes:
    """A legacy checkpoint whose first pickle calls ``global_line`` with one string."""
    arg = b"open('rustgrad_ckpt_pwned', 'w')"
    return b"\x80\x02c" + global_line + b"X" + struct.pack("<I", len(arg)) + arg + b"\x85R."


def zip_pickle(path: Path, pickled: bytes) -> None:
    """A zip checkpoint whose object pickle is ``pickled``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        archive.writestr("archive/byteorder", "little")


# PyTorch's weights-only messages (torch 2.x, torch/_weights_only_unpickler.py): globals
# of os/sys/posix/nt are "blocked", any other is "not an allowed global by default";
# builtins are named without their module.
BLOCKED = "(?s)Weights only load failed.*unsupported GLOBAL {} whose module {} is blocked"
NOT_ALLOWED = (
    "(?s)Weights only load failed.*`weights_only` set to `False` will likely succeed.*"
    "Unsupported global: GLOBAL {} was not an allowed global by default"
)


@pytest.mark.parametrize(
    "name, data, pattern",
    [
        ("ckpt_malicious.pt", None, BLOCKED.format("os.system", "os")),
        ("ckpt_malicious_legacy.pt", None, BLOCKED.format("os.system", "os")),
        ("eval.pt", legacy_pickle(b"builtins\neval\n"), NOT_ALLOWED.format("eval")),
        ("exec.pt", legacy_pickle(b"__builtin__\nexec\n"), NOT_ALLOWED.format("exec")),
        ("call.pt", legacy_pickle(b"subprocess\ncall\n"), NOT_ALLOWED.format("subprocess.call")),
    ],
)
def test_malicious_pickle_is_refused_without_running(name, data, pattern, tmp_path, monkeypatch):
    path = VECTORS / name if data is None else tmp_path / name
    if data is not None:
        path.write_bytes(data)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pickle.UnpicklingError, match=pattern):
        rustgrad.load(path)
    assert not (tmp_path / "rustgrad_ckpt_pwned").exists()


@pytest.fixture
def clean_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()


@pytest.mark.usefixtures("clean_safe_globals")
def test_blocked_modules_stay_refused_when_allowed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    serialization.add_safe_globals([os.system, (os.system, "os.system")])
    for name in ("ckpt_malicious.pt", "ckpt_malicious_legacy.pt"):
        with pytest.raises(pickle.UnpicklingError, match="os.system whose module os is blocked"):
            rustgrad.load(VECTORS / name)
    assert not (tmp_path / "rustgrad_ckpt_pwned").exists()


def test_pytorchs_allowed_globals_load_with_weights_only():
    # torch.load(weights_only=True) loads this file (checked by the generator).
    obj = rustgrad.load(VECTORS / "ckpt_allowed_globals.pt")
    assert obj["w"].tolist() == [1.0, 1.0]
    assert type(obj["counter"]) is collections.Counter and obj["counter"] == {
        "a": 2,
        "b": 1,
        "c": 1,
    }
    assert obj["raw"] == b"\x00\xffab" and type(obj["raw"]) is bytes
    assert obj["buffer"] == bytearray(b"xy") and type(obj["buffer"]) is bytearray
    assert obj["set"] == {1, 2} and obj["z"] == complex(1.5, -2.0)
    assert type(obj["size"]) is rustgrad.Size and obj["size"] == (2, 3)
    assert obj["dtype"] is rustgrad.float16
    assert obj["devices"] == [rustgrad.device("cpu"), rustgrad.device("cuda", 1)]


@dataclasses.dataclass
class Point:
    """A class of the test module: a global that no allowlist knows."""

    x: int
    weight: Any


def test_weights_only_false_loads_any_global_and_true_refuses_it(tmp_path):
    path = VECTORS / "ckpt_unsafe_global.pt"
    with pytest.raises(pickle.UnpicklingError, match=NOT_ALLOWED.format("fractions.Fraction")):
        rustgrad.load(path)
    with pytest.raises(pickle.UnpicklingError, match="fractions.Fraction"):
        rustgrad.load(path, weights_only=True)
    obj = rustgrad.load(path, weights_only=False)
    assert obj["frac"] == fractions.Fraction(1, 3) and obj["w"].tolist() == [1.0, 1.0]
    # An explicit pickle_module means weights_only=False, as in PyTorch.
    assert rustgrad.load(path, pickle_module=pickle)["frac"] == fractions.Fraction(1, 3)
    with pytest.raises(RuntimeError, match="explicit pickle_module"):
        rustgrad.load(path, pickle_module=pickle, weights_only=True)

    mine = tmp_path / "point.pth"
    weight = rustgrad.arange(4.0).reshape(2, 2)
    rustgrad.save({"p": Point(3, weight), "v": weight[1]}, mine, format="torch")
    with pytest.raises(pickle.UnpicklingError, match=r"Unsupported global: GLOBAL \S*Point was"):
        rustgrad.load(mine)
    back = rustgrad.load(mine, weights_only=False)
    assert type(back["p"]) is Point and back["p"].x == 3
    assert back["p"].weight.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    back["p"].weight[1, 0] = 7.0
    assert back["v"].tolist() == [7.0, 3.0]


def test_weights_only_false_reports_missing_globals_as_they_are(tmp_path):
    # What the full unpickler cannot import is the user's error, not a corrupted file.
    zip_pickle(tmp_path / "m.pt", legacy_pickle(b"rustgrad_no_such_module\nthing\n"))
    with pytest.raises(ModuleNotFoundError, match="rustgrad_no_such_module"):
        rustgrad.load(tmp_path / "m.pt", weights_only=False)
    zip_pickle(tmp_path / "a.pt", legacy_pickle(b"collections\nno_such_thing\n"))
    with pytest.raises(AttributeError, match="no_such_thing"):
        rustgrad.load(tmp_path / "a.pt", weights_only=False)
    # PyTorch's own classes that rustgrad does not have (a whole pickled module).
    zip_pickle(tmp_path / "t.pt", legacy_pickle(b"torch.nn.modules.linear\nLinear\n"))
    with pytest.raises(pickle.UnpicklingError, match="PyTorch's torch.nn.modules.linear.Linear"):
        rustgrad.load(tmp_path / "t.pt", weights_only=False)


@pytest.mark.usefixtures("clean_safe_globals")
def test_safe_globals_allow_a_class_for_weights_only(tmp_path):
    path = tmp_path / "point.pth"
    rustgrad.save([Point(1, rustgrad.ones(2))], path, format="torch")
    serialization.add_safe_globals([Point])
    assert serialization.get_safe_globals() == [Point]
    assert rustgrad.load(path)[0].x == 1
    serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        rustgrad.load(path)
    with serialization.safe_globals([Point]):
        assert rustgrad.load(path)[0].weight.tolist() == [1.0, 1.0]
    assert serialization.get_safe_globals() == []
    with pytest.raises(pickle.UnpicklingError, match="Point"):
        rustgrad.load(path)
    # A (global, name) pair allows a global under the name the file gives it.
    serialization.add_safe_globals([(fractions.Fraction, "fractions.Fraction")])
    assert rustgrad.load(VECTORS / "ckpt_unsafe_global.pt")["frac"] == fractions.Fraction(1, 3)
    serialization.add_safe_globals([(Point,)])
    with pytest.raises(ValueError, match="Expected tuple of length 2"):
        rustgrad.load(path)


@pytest.mark.usefixtures("clean_safe_globals")
def test_unsafe_globals_in_checkpoint_are_listed_without_loading(tmp_path, monkeypatch):
    # What torch.serialization.get_unsafe_globals_in_checkpoint answers for these files
    # (checked by hand with PyTorch 2.15).
    monkeypatch.chdir(tmp_path)
    unsafe = serialization.get_unsafe_globals_in_checkpoint
    assert unsafe(VECTORS / "ckpt_unsafe_global.pt") == ["fractions.Fraction"]
    assert unsafe(VECTORS / "ckpt_malicious.pt") == ["os.system"]
    for name in ("ckpt_views.pt", "ckpt_allowed_globals.pt", "ckpt_resnet_zip.pt"):
        assert unsafe(VECTORS / name) == [], name
    with serialization.safe_globals([fractions.Fraction]):
        assert unsafe(VECTORS / "ckpt_unsafe_global.pt") == []
    with pytest.raises(ValueError, match="Expected input to be a checkpoint returned by torch"):
        unsafe(VECTORS / "ckpt_views_legacy.pt")
    assert not (tmp_path / "rustgrad_ckpt_pwned").exists()


def test_pickle_load_args_are_for_weights_only_false(tmp_path):
    # A Python 2 str (SHORT_BINSTRING) holding the byte 0xe9: pickle's `encoding` decides.
    zip_pickle(tmp_path / "py2.pt", b"\x80\x02U\x01\xe9.")
    assert rustgrad.load(tmp_path / "py2.pt", weights_only=False, encoding="latin1") == "\xe9"
    assert rustgrad.load(tmp_path / "py2.pt", weights_only=False, encoding="bytes") == b"\xe9"
    with pytest.raises(RuntimeError, match="corrupted.*UnicodeDecodeError"):
        rustgrad.load(tmp_path / "py2.pt")  # utf-8, as PyTorch's default
    with pytest.warns(UserWarning, match="pickle_load_args only works if `weights_only=False`"):
        rustgrad.load(VECTORS / "ckpt_views.pt", encoding="latin1")
    with pytest.raises(TypeError):
        rustgrad.load(tmp_path / "py2.pt", weights_only=False, no_such_argument=1)


# ----------------------------------------------------------------- map_location

CUDA_UNAVAILABLE = (
    r"Attempting to deserialize object on a CUDA device but torch.cuda.is_available\(\) is "
    "False. If you are running on a CPU-only machine, please use torch.load with "
    r"map_location=torch.device\('cpu'\)"
)


@pytest.mark.parametrize("name", ["ckpt_cuda.pt", "ckpt_cuda_legacy.pt"])
def test_cuda_checkpoint_loads_mapped_to_the_cpu(name):
    # Storages tagged 'cuda:0' (see the generator): PyTorch without CUDA refuses the
    # file and loads it with each of these map_locations (checked by the generator).
    path = VECTORS / name
    with pytest.raises(RuntimeError, match=CUDA_UNAVAILABLE):
        rustgrad.load(path)
    with pytest.raises(RuntimeError, match=CUDA_UNAVAILABLE):
        rustgrad.load(path, map_location=lambda storage, location: None)
    seen = []

    def keep_on_cpu(storage, location):
        seen.append((location, storage.dtype))
        return storage

    for location in ("cpu", rustgrad.device("cpu"), {"cuda:0": "cpu"}, keep_on_cpu):
        obj = rustgrad.load(path, map_location=location)
        assert obj["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
        assert obj["n"].tolist() == [1, -2] and obj["n"].dtype == rustgrad.int64
    assert sorted(seen, key=str) == [("cuda:0", rustgrad.float32), ("cuda:0", rustgrad.int64)]


@pytest.mark.parametrize(
    "location, error, pattern",
    [
        ("cuda:0", RuntimeError, CUDA_UNAVAILABLE),
        ("cuda", RuntimeError, CUDA_UNAVAILABLE),
        (rustgrad.device("cuda", 1), RuntimeError, CUDA_UNAVAILABLE),
        ({"cpu": "cuda:1"}, RuntimeError, CUDA_UNAVAILABLE),
        ("xpu", RuntimeError, r"on a XPU device but torch.xpu.is_available\(\) is False"),
        ("cpu:0", RuntimeError, r"don't know how to restore data location .*\(tagged with cpu:0\)"),
        ({"cpu": "foo"}, RuntimeError, r"restore data location .*\(tagged with foo\)"),
        (5, TypeError, "'int' object is not callable"),
        (lambda storage, location: storage.cuda(), AssertionError, "not compiled with CUDA"),
        (lambda storage, location: 3, TypeError, "map_location must return None or a CPU"),
    ],
)
@pytest.mark.parametrize("fmt", ["ckpt_views.pt", "ckpt_views_legacy.pt", "safetensors"])
def test_map_location_off_the_cpu_is_refused_as_pytorch_does(
    fmt, location, error, pattern, tmp_path
):
    path = VECTORS / fmt
    if fmt == "safetensors":
        path = tmp_path / "ckpt.safetensors"
        rustgrad.save({"w": rustgrad.ones(2)}, path)
    with pytest.raises(error, match=pattern):
        rustgrad.load(path, map_location=location)


def test_map_location_applies_to_storages_only(tmp_path):
    # As in PyTorch, a file without tensors never consults map_location.
    rustgrad.save({"epoch": 3}, tmp_path / "a.pth", format="torch")
    assert rustgrad.load(tmp_path / "a.pth", map_location="cuda") == {"epoch": 3}
    # rustgrad's own files: every stored tensor is tagged "cpu" (numpy arrays are not
    # storages); the callable's result is what the tensors view.
    x = rustgrad.arange(6.0)
    obj = {"x": x, "v": x[2:], "b": rustgrad.ones(2, dtype=rustgrad.bool), "a": np.ones(2)}
    rustgrad.save(obj, tmp_path / "s")
    seen = []

    def doubled(storage, location):
        seen.append((location, storage.dtype, tuple(storage.shape)))
        return storage * 2 if storage.dtype == rustgrad.float32 else None

    back = rustgrad.load(tmp_path / "s", map_location=doubled)
    assert sorted(seen, key=str) == [("cpu", rustgrad.bool, (2,)), ("cpu", rustgrad.float32, (6,))]
    assert back["v"].tolist() == [4.0, 6.0, 8.0, 10.0] and back["x"][2].item() == 4.0
    assert back["b"].tolist() == [True, True] and back["a"].tolist() == [1.0, 1.0]


# ------------------------------------------------------- rustgrad's own format


def assert_bit_exact(actual: Any, want: Any) -> None:
    assert type(actual) is type(want), (type(actual), type(want))
    if isinstance(want, rustgrad.Tensor):
        assert actual.dtype == want.dtype and actual.shape == want.shape
        assert actual.requires_grad == want.requires_grad
        a, w = actual.detach(), want.detach()
        if want.dtype == rustgrad.bfloat16:
            a, w = a.float(), w.float()
        assert a.numpy().tobytes() == w.numpy().tobytes()
    elif isinstance(want, dict):
        assert list(actual) == list(want)
        for key in want:
            assert_bit_exact(actual[key], want[key])
    elif isinstance(want, (list, tuple)):
        assert len(actual) == len(want)
        for a, w in zip(actual, want):
            assert_bit_exact(a, w)
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(actual)
    else:
        assert actual == want


def trained_state() -> dict[str, Any]:
    rustgrad.manual_seed(0)
    model = SmallResNet18()
    optimizer = make_optimizer(model)
    loss = F.cross_entropy(model(rustgrad.randn(2, 3, 16, 16)), rustgrad.tensor([1, 7]))
    loss.backward()
    optimizer.step()
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 1}


def test_same_checkpoint_is_the_same_bytes(tmp_path):
    """The header's metadata is written in sorted order: the safetensors crate writes it
    from a HashMap, whose order changed from one save to the next."""
    state = trained_state()
    saves = []
    for i in range(4):
        rustgrad.save(state, tmp_path / f"{i}.pt")
        saves.append((tmp_path / f"{i}.pt").read_bytes())
    assert all(s == saves[0] for s in saves)
    header = saves[0][8 : 8 + int.from_bytes(saves[0][:8], "little")].decode()
    assert header.index('"format"') < header.index('"rustgrad"') < header.index('"rustgrad_sha256"')


def test_round_trip_is_bit_exact(tmp_path):
    x = rustgrad.randn(3, 5, dtype=rustgrad.float64)
    obj = {
        **trained_state(),
        "tensors": [
            rustgrad.tensor([1.5, -0.0, float("nan"), float("inf")]),
            rustgrad.tensor([[1, 2]], dtype=rustgrad.int32),
            rustgrad.tensor([True, False]),
            rustgrad.tensor([0.1, 3.0], dtype=rustgrad.float16),
            rustgrad.tensor([0.1, 3.0], dtype=rustgrad.bfloat16),
            rustgrad.tensor([-3, 200], dtype=rustgrad.uint8),
            rustgrad.tensor(2.5),
            rustgrad.zeros(0, 3),
        ],
        "param": nn.Parameter(rustgrad.ones(2)),
        "leaf": rustgrad.ones(2, requires_grad=True),
        "views": (x, x[1:, ::2], x.t()),
        "plain": {1: None, "a": [True, 2**62, -1.25, float("-inf"), float("nan"), "é"]},
        "meta": [rustgrad.float16, rustgrad.Size([2, 3])],
    }
    path = tmp_path / "ckpt.pt"
    rustgrad.save(obj, path)
    back = rustgrad.load(path)
    assert_bit_exact(back, obj)
    assert isinstance(back["model"], collections.OrderedDict)
    assert isinstance(back["param"], nn.Parameter)
    base, view, transposed = back["views"]
    assert view.stride() == (5, 2) and view.storage_offset() == 5
    assert transposed.stride() == (1, 5)
    base[2, 2] = 42.0
    assert view[1, 1].item() == 42.0 and transposed[2, 2].item() == 42.0


@pytest.mark.parametrize("fmt", ["safetensors", "torch"])
def test_single_tensor_and_view_round_trip(fmt, tmp_path):
    x = rustgrad.randn(4, 6)
    for obj in (x, x[1:3, ::2], rustgrad.tensor(7, dtype=rustgrad.int16)):
        rustgrad.save(obj, tmp_path / "t.pt", format=fmt)
        back = rustgrad.load(tmp_path / "t.pt")
        assert_bit_exact(back, obj)
        assert back.stride() == obj.stride()


def test_loaded_checkpoint_restores_model_and_optimizer(tmp_path):
    state = trained_state()
    rustgrad.save(state, tmp_path / "ckpt.pt")
    back = rustgrad.load(tmp_path / "ckpt.pt")
    model = SmallResNet18()
    model.load_state_dict(back["model"])
    optimizer = make_optimizer(model)
    optimizer.load_state_dict(back["optimizer"])
    assert_bit_exact(model.state_dict(), state["model"])
    assert_bit_exact(optimizer.state_dict(), state["optimizer"])


def read_safetensors(data: bytes) -> tuple[dict[str, Any], bytes]:
    """The header and the data section, read as the safetensors spec says."""
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def test_file_is_plain_safetensors_with_state_dict_names(tmp_path):
    # What safetensors.torch.load_file reads: names, dtypes, shapes, offsets, raw bytes.
    model = nn.Linear(3, 2)
    rustgrad.save({"model": model.state_dict(), "step": 4}, tmp_path / "m.safetensors")
    header, body = read_safetensors((tmp_path / "m.safetensors").read_bytes())
    assert header["__metadata__"]["format"] == "pt"
    assert set(header) == {"__metadata__", "model.weight", "model.bias"}
    info = header["model.weight"]
    assert info["dtype"] == "F32" and info["shape"] == [2, 3]
    start, end = info["data_offsets"]
    assert body[start:end] == model.weight.detach().numpy().astype("<f4").tobytes()


def test_foreign_safetensors_file_loads_as_dict_of_tensors(tmp_path):
    a = np.arange(6, dtype="<f8").reshape(2, 3)
    b = np.array([1, -1], dtype="<i8")
    header = {
        "a": {"dtype": "F64", "shape": [2, 3], "data_offsets": [0, 48]},
        "b": {"dtype": "I64", "shape": [2], "data_offsets": [48, 64]},
    }
    head = json.dumps(header).encode()
    (tmp_path / "f.safetensors").write_bytes(
        struct.pack("<Q", len(head)) + head + a.tobytes() + b.tobytes()
    )
    loaded = rustgrad.load(tmp_path / "f.safetensors")
    assert list(loaded) == ["a", "b"]
    np.testing.assert_array_equal(loaded["a"].numpy(), a)
    np.testing.assert_array_equal(loaded["b"].numpy(), b)


def test_torch_format_round_trips_with_pytorchs_globals_only(tmp_path):
    # torch.load(weights_only=True) reads these files (checked by hand with PyTorch 2.x,
    # which is never a test dependency); here: the layout torch.load expects and a
    # bit-exact round trip.
    x = rustgrad.arange(12.0).reshape(3, 4)
    obj = {**trained_state(), "views": [x, x[1], x.t()], "p": nn.Parameter(rustgrad.ones(2))}
    path = tmp_path / "ckpt.pth"
    rustgrad.save(obj, path, format="torch")
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        globals_ = {
            arg.replace(" ", ".")
            for op, arg, _ in pickletools.genops(archive.read("archive/data.pkl"))
            if op.name == "GLOBAL"
        }
    assert {"archive/data.pkl", "archive/byteorder", "archive/version"} <= set(names)
    assert globals_ == {
        "collections.OrderedDict",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter",
        "torch.FloatStorage",
        "torch.LongStorage",
    }
    back = rustgrad.load(path)
    assert_bit_exact(back, obj)
    back["views"][0][1, 2] = 100.0
    assert back["views"][1][2].item() == 100.0 and back["views"][2][2, 1].item() == 100.0


def torch_globals(pickled: bytes) -> set[str]:
    """The globals a pickle names (GLOBAL opcodes), as ``module.name``."""
    return {
        arg.replace(" ", ".") for op, arg, _ in pickletools.genops(pickled) if op.name == "GLOBAL"
    }


def views_object() -> dict[str, Any]:
    x = rustgrad.arange(12.0).reshape(3, 4)
    return {
        "model": nn.Linear(3, 2).state_dict(),
        "views": [x, x[1], x.t(), x[:, 2]],
        "p": nn.Parameter(rustgrad.ones(2)),
        "ints": rustgrad.tensor([[1, -2], [3, 2**40]]),
        "mask": rustgrad.tensor([True, False]),
        "bf": rustgrad.tensor([0.5, -3.0], dtype=rustgrad.bfloat16),
        "meta": [rustgrad.Size([2, 3]), rustgrad.float16, rustgrad.device("cpu"), b"\x00\xff"],
        "plain": [1, 2.5, "s", None, (3, 4), {1: True}],
    }


def test_legacy_torch_format_round_trips(tmp_path):
    """``_use_new_zipfile_serialization=False`` writes PyTorch's legacy format.

    torch.load reads these files with weights_only=True (checked by hand with PyTorch
    2.15 on this object, written with and without format="torch" and with pickle
    protocols 2 and 4 (4 only with weights_only=False, as for torch.save's own): the
    views share one storage, the Linear state_dict loads into torch.nn.Linear, and the
    Parameter, bool, int64, bfloat16 tensors, Size, dtype, device and bytes come back);
    here: the layout PyTorch's legacy reader expects, and the same content as the zip
    format.
    """
    obj = views_object()
    rustgrad.save(obj, tmp_path / "legacy.pt", format="torch", _use_new_zipfile_serialization=False)
    rustgrad.save(obj, tmp_path / "implied.pt", _use_new_zipfile_serialization=False)
    rustgrad.save(obj, tmp_path / "zip.pt", format="torch")
    data = (tmp_path / "legacy.pt").read_bytes()
    assert (tmp_path / "implied.pt").read_bytes() == data
    f = io.BytesIO(data)
    assert pickle.load(f) == 0x1950A86A20F9469CFC6C
    assert pickle.load(f) == 1001
    assert pickle.load(f)["little_endian"] is True
    start = f.tell()
    pickletools.dis(f, out=io.StringIO())  # skip the object's pickle
    assert torch_globals(data[start : f.tell()]) == {
        "collections.OrderedDict",
        "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_parameter",
        "torch.FloatStorage",
        "torch.LongStorage",
        "torch.BoolStorage",
        "torch.BFloat16Storage",
        "torch.Size",
        "torch.float16",
        "torch.device",
        "_codecs.encode",
    }
    keys = pickle.load(f)
    assert keys == sorted(keys) and len(keys) == 7  # x, 2 model, p, ints, mask, bf
    (numel,) = struct.unpack("<q", f.read(8))
    assert numel > 0 and len(f.read()) > 0
    back, want = rustgrad.load(tmp_path / "legacy.pt"), rustgrad.load(tmp_path / "zip.pt")
    assert_bit_exact(back, want)
    assert_bit_exact(back, obj)
    x, row, t, col = back["views"]
    x[1, 2] = 100.0
    assert row[2].item() == 100.0 and t[2, 1].item() == 100.0 and col[1].item() == 100.0
    with pytest.raises(ValueError, match='legacy format: pass format="torch"'):
        rustgrad.save(
            obj, tmp_path / "x.pt", format="safetensors", _use_new_zipfile_serialization=False
        )


def test_torch_format_pickles_any_object_with_pytorchs_names(tmp_path):
    # Size, dtype and device are written as torch.Size, torch.float16, torch.device
    # (what torch.save writes, so torch.load(weights_only=True) reads them); any other
    # picklable object is pickled as pickle does and loads with weights_only=False.
    weight = rustgrad.ones(2)
    obj = {
        "meta": [rustgrad.Size([2]), rustgrad.float16, rustgrad.device("cuda", 1)],
        "point": Point(2, weight),
        "frac": fractions.Fraction(2, 3),
        "od": collections.defaultdict(list, a=[weight]),
    }
    rustgrad.save(obj, tmp_path / "a.pth", format="torch")
    with zipfile.ZipFile(tmp_path / "a.pth") as archive:
        names = torch_globals(archive.read("archive/data.pkl"))
    assert {"torch.Size", "torch.float16", "torch.device", "fractions.Fraction"} <= names
    assert not any(name.startswith("rustgrad") for name in names)
    meta = rustgrad.load(tmp_path / "a.pth", weights_only=False)["meta"]
    assert type(meta[0]) is rustgrad.Size and meta[0] == (2,)
    assert meta[1] is rustgrad.float16 and meta[2] == rustgrad.device("cuda", 1)
    back = rustgrad.load(tmp_path / "a.pth", weights_only=False)
    assert back["frac"] == fractions.Fraction(2, 3) and back["point"].x == 2
    assert type(back["od"]) is collections.defaultdict and back["od"]["b"] == []
    # The tensor pickled twice is one object again (pickle's memo), as in PyTorch.
    assert back["od"]["a"][0] is back["point"].weight
    with pytest.raises((TypeError, pickle.PicklingError, AttributeError)):
        rustgrad.save({"f": lambda: 0}, tmp_path / "b.pth", format="torch")
    assert not (tmp_path / "b.pth").exists()


@pytest.mark.parametrize("zipped", [True, False])
def test_torch_format_saves_whole_modules_and_optimizers(zipped, tmp_path):
    # torch.save(model) pickles the module itself; it loads with weights_only=False.
    rustgrad.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten())
    model.append(nn.Linear(32, 3))
    optimizer = make_optimizer(model)
    x = rustgrad.randn(2, 1, 6, 6)
    F.cross_entropy(model(x), rustgrad.tensor([0, 2])).backward()
    optimizer.step()
    model.eval()
    path = tmp_path / "whole.pth"
    rustgrad.save(
        {"model": model, "optimizer": optimizer},
        path,
        format="torch",
        _use_new_zipfile_serialization=zipped,
    )
    back = rustgrad.load(path, weights_only=False)
    loaded, loaded_optimizer = back["model"], back["optimizer"]
    assert type(loaded) is nn.Sequential and not loaded.training
    with rustgrad.no_grad():
        assert loaded(x).numpy().tobytes() == model(x).numpy().tobytes()
    # The optimizer holds the loaded model's parameters (one object each, via the memo).
    assert [id(p) for p in loaded_optimizer.param_groups[0]["params"]] == [
        id(p) for p in loaded.parameters()
    ]
    assert_bit_exact(loaded_optimizer.state_dict(), optimizer.state_dict())


Stats = collections.namedtuple("Stats", ["loss", "acc"])


def test_safetensors_format_holds_common_plain_values(tmp_path):
    values = {
        "bytes": b"\x00\xff",
        "bytearray": bytearray(b"ab"),
        "set": {1, "a", None},
        "frozenset": frozenset({2.5}),
        "complex": [complex(1, -2), complex(float("nan"), float("inf"))],
        "device": [rustgrad.device("cpu"), rustgrad.device("cuda", 1)],
        "stats": Stats(0.25, rustgrad.tensor([0.5])),
        "arrays": [
            np.arange(6, dtype=np.float32).reshape(2, 3),
            np.array([-1, 2**40]),
            np.array([True, False]),
            np.array(7, dtype=np.uint16),
            np.zeros((0, 3)),
            np.array(["ab", "c"]),
            np.arange(4, dtype=np.float64)[::2],
            np.array([1, 2], dtype=">i4"),
        ],
        "scalars": [np.float32(0.1), np.float64(0.2), np.int64(-3), np.bool_(True)],
    }
    rustgrad.save(values, tmp_path / "v.safetensors")
    back = rustgrad.load(tmp_path / "v.safetensors")
    assert list(back) == list(values)
    for key in ("bytes", "bytearray", "set", "frozenset", "device"):
        assert back[key] == values[key] and type(back[key]) is type(values[key]), key
    assert back["complex"][0] == complex(1, -2)
    assert math.isnan(back["complex"][1].real) and back["complex"][1].imag == math.inf
    stats = back["stats"]
    assert type(stats).__name__ == "Stats" and stats._fields == ("loss", "acc")
    assert stats.loss == 0.25 and stats.acc.tolist() == [0.5]
    for got, want in zip(back["arrays"], values["arrays"]):
        assert type(got) is np.ndarray and got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    for got, want in zip(back["scalars"], values["scalars"]):
        assert type(got) is type(want) and got == want


def test_saved_sets_do_not_depend_on_the_hash_seed(tmp_path):
    code = (
        "import sys, rustgrad; "
        "rustgrad.save({'s': {f'k{i}' for i in range(30)}, 'w': rustgrad.ones(2)}, sys.argv[1])"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for seed in ("1", "2"):
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / seed)],
            env={**env, "PYTHONHASHSEED": seed},
            check=True,
        )
    # The structure (and so the checksum); the Rust binding's metadata map orders its
    # keys by a per-process random hash, so the files' bytes can differ in that order.
    headers = [read_safetensors((tmp_path / seed).read_bytes())[0] for seed in ("1", "2")]
    assert headers[0]["__metadata__"] == headers[1]["__metadata__"]
    assert rustgrad.load(tmp_path / "1")["s"] == {f"k{i}" for i in range(30)}


@pytest.mark.parametrize(
    "value, type_name",
    [
        (object(), "object"),
        (collections.defaultdict(list), "defaultdict"),
        (Point(1, 2), "Point"),
        (np.array([object()]), "numpy array of dtype object"),
        (range(3), "range"),
    ],
)
def test_unrepresentable_object_falls_back_to_pytorchs_format(value, type_name, tmp_path):
    # format="safetensors" refuses it (writing nothing); the default pickles it into
    # PyTorch's zip format, as torch.save does.
    with pytest.raises(TypeError, match=f'cannot save a.* {type_name}.*format="torch"'):
        rustgrad.save({"x": value}, tmp_path / "x.pt", format="safetensors")
    assert list(tmp_path.iterdir()) == []
    rustgrad.save({"x": value}, tmp_path / "x.pt")
    assert (tmp_path / "x.pt").read_bytes()[:4] == b"PK\x03\x04"
    loaded = rustgrad.load(tmp_path / "x.pt", weights_only=False)["x"]
    assert type(loaded) is type(value)
    rustgrad.save({"x": value}, tmp_path / "x.pt", format="torch")


# ------------------------------------------------------------- atomic writes


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_failed_save_leaves_previous_checkpoint_intact(error, tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pt"
    rustgrad.save({"w": rustgrad.ones(3)}, path)
    before = path.read_bytes()

    def half_then_fail(f, data):
        f.write(data[: len(data) // 2])
        raise error

    monkeypatch.setattr(serialization, "_write_file", half_then_fail)
    with pytest.raises(type(error)):
        rustgrad.save({"w": rustgrad.zeros(1000)}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]
    assert rustgrad.load(path)["w"].tolist() == [1.0, 1.0, 1.0]


def test_save_replaces_and_keeps_permissions(tmp_path):
    path = tmp_path / "ckpt.pt"
    rustgrad.save([1], path)
    os.chmod(path, 0o640)
    rustgrad.save([2], path)
    assert rustgrad.load(path) == [2]
    assert path.stat().st_mode & 0o777 == 0o640


def test_save_and_load_file_objects(tmp_path):
    with open(tmp_path / "f.pt", "wb") as f:
        rustgrad.save({"a": rustgrad.arange(3)}, f)
    with open(tmp_path / "f.pt", "rb") as f:
        assert rustgrad.load(f)["a"].tolist() == [0, 1, 2]


# --------------------------------------------------------------- bad files


def test_failed_load_names_the_file_and_leaves_the_model_unchanged(tmp_path):
    model = SmallResNet18()
    before = snapshot(model)
    path = tmp_path / "bad.pt"
    path.write_bytes((VECTORS / "ckpt_resnet_zip.pt").read_bytes()[:-100])
    with pytest.raises(RuntimeError, match=f"{path}.*truncated, corrupted"):
        model.load_state_dict(rustgrad.load(path)["model"])
    assert snapshot(model) == before


def test_shape_mismatches_are_listed_in_one_error(tmp_path):
    checkpoint = rustgrad.load(VECTORS / "ckpt_resnet_zip.pt")
    model = SmallResNet18()
    model.fc = nn.Linear(WIDTHS[3], 3)
    model.conv1 = nn.Conv2d(3, WIDTHS[0], 5, 2, 2, bias=False)
    before = snapshot(model)
    with pytest.raises(RuntimeError, match="size mismatch") as info:
        model.load_state_dict(checkpoint["model"])
    for name in ("conv1.weight", "fc.weight", "fc.bias"):
        assert name in str(info.value)
    assert snapshot(model) == before


def corruptions(data: bytes, seed: int, count: int, flips: bool = True):
    rng = random.Random(seed)
    for i in range(count):
        if i % 3 == 0 or not flips:
            yield f"truncated at {(n := rng.randrange(len(data)))}", data[:n]
        else:
            bad = bytearray(data)
            for _ in range(rng.choice([1, 1, 2, 8])):
                bit = rng.randrange(len(data) * 8)
                bad[bit // 8] ^= 1 << (bit % 8)
            yield f"bits flipped (case {i})", bytes(bad)


def check_corruptions(tmp_path, original: bytes, count: int, seed: int, flips: bool = True):
    want = rustgrad.load(_write(tmp_path / "good", original))
    errors = 0
    for what, data in corruptions(original, seed, count, flips):
        try:
            got = rustgrad.load(_write(tmp_path / "bad", data))
        except LOAD_ERRORS:
            errors += 1
            continue
        assert data != original or what.startswith("bits")
        try:
            assert_bit_exact(got, want)
        except AssertionError as e:
            raise AssertionError(f"{what}: loaded a different object") from e
    assert errors > count // 2


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_corrupted_rustgrad_checkpoints_never_load_wrong_values(tmp_path):
    state = {"model": nn.Linear(4, 3).state_dict(), "epoch": 3, "lr": 0.1, "names": ["a"]}
    x = rustgrad.arange(6.0).reshape(2, 3)
    state["views"] = [x, x[1]]
    rustgrad.save(state, tmp_path / "ckpt")
    check_corruptions(tmp_path, (tmp_path / "ckpt").read_bytes(), count=300, seed=1)


@pytest.mark.parametrize("name", ["ckpt_views.pt", "ckpt_resnet_zip.pt"])
def test_corrupted_torch_zip_checkpoints_never_load_wrong_values(name, tmp_path):
    check_corruptions(tmp_path, (VECTORS / name).read_bytes(), count=150, seed=2)


def test_truncated_legacy_checkpoints_are_rejected(tmp_path):
    check_corruptions(
        tmp_path, (VECTORS / "ckpt_views_legacy.pt").read_bytes(), count=150, seed=3, flips=False
    )


def test_bit_flipped_legacy_checkpoints_never_crash(tmp_path):
    # The legacy format has no checksum: a flipped bit in tensor data loads a different
    # value, as in PyTorch. What must hold: an error or a result, never a crash or hang.
    original = (VECTORS / "ckpt_views_legacy.pt").read_bytes()
    for _, data in corruptions(original, seed=4, count=200):
        try:
            rustgrad.load(_write(tmp_path / "bad", data))
        except LOAD_ERRORS:
            pass
