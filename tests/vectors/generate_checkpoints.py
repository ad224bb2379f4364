"""Write the PyTorch checkpoint fixtures read by tests/python/test_serialization.py.

Run from the repository root with PyTorch installed (never a test dependency):

    /work/main/.torch-venv/bin/python tests/vectors/generate_checkpoints.py [GROUP ...]

GROUP is one of resnet, views, malicious, cuda, globals (default: all of them); a group
rewrites only its own files (torch.save writes a random serialization id, so
regenerating a group changes its bytes, not its content).

Files (all small; none is a JSON vector, so the generic vector readers never see them):

- ``ckpt_resnet_zip.pt`` / ``ckpt_resnet_legacy.pt``: ``{"model": state_dict,
  "optimizer": optimizer.state_dict(), "epoch": 2}`` saved by ``torch.save`` in the zip
  format and in the legacy (``_use_new_zipfile_serialization=False``) format. The
  model is a width-reduced ResNet-18 (channels 4-8-16-32 instead of 64-128-256-512,
  10 classes) built from ``torch.nn`` exactly as torchvision's ``resnet.py`` builds
  ResNet-18, so its parameter and buffer names are torchvision's. Its batch norm
  running statistics are calibrated on 8 random batches (eval outputs of order one),
  then it and the SGD-momentum optimizer take two training steps, so that the running
  statistics and the momentum buffers are not trivial.
- ``ckpt_resnet_expected.npz``: the inputs and what PyTorch computes from the saved
  state: ``eval_input``, ``eval_output`` (eval mode), ``train_output`` (train mode,
  batch statistics), and for three resumed training steps ``step<k>_input`` /
  ``step<k>_target``, ``step<k>_loss`` and the state after the three steps as
  ``final.<name>`` (every state_dict entry) and ``final_momentum.<i>`` (the momentum
  buffer of parameter ``i``).
- ``ckpt_views.pt`` / ``ckpt_views_legacy.pt``: tensors that share one storage
  (``{"x": x, "row": x[1], "col": x[:, 2], "t": x.t(), "alias": x}`` with
  ``x = arange(12.).reshape(3, 4)``), an int64 and a bool tensor and a Parameter.
- ``ckpt_malicious.pt`` / ``ckpt_malicious_legacy.pt``: a zip and a legacy file whose
  pickle calls ``os.system("touch rustgrad_ckpt_pwned")`` when unpickled by an
  unrestricted unpickler. Written by hand (opcodes), not by PyTorch.
- ``ckpt_cuda.pt`` / ``ckpt_cuda_legacy.pt``: ``{"w": arange(6.).reshape(2, 3), "n":
  tensor([1, -2])}`` as saved from a GPU: ``torch.save`` of CPU tensors whose storage
  location tag ``'cpu'`` is then edited to ``'cuda:0'`` in the pickle (no GPU needed).
  The script checks that PyTorch without CUDA refuses them ("Attempting to deserialize
  object on a CUDA device") and loads them with ``map_location='cpu'``.
- ``ckpt_allowed_globals.pt``: tensors with the values PyTorch's weights-only unpickler
  allows besides tensors (Counter, bytes, bytearray, set, complex, Size, dtype, device),
  checked to load with ``torch.load(weights_only=True)``.
- ``ckpt_unsafe_global.pt``: a tensor and a ``fractions.Fraction(1, 3)``, which
  ``torch.load`` refuses with ``weights_only=True`` ("Unsupported global: GLOBAL
  fractions.Fraction", checked) and loads with ``weights_only=False``.
"""

from __future__ import annotations

import collections
import fractions
import io
import struct
import sys
import zipfile
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

OUT = Path(__file__).resolve().parent
WIDTHS = (4, 8, 16, 32)
NUM_CLASSES = 10


class BasicBlock(nn.Module):
    """torchvision.models.resnet.BasicBlock."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class SmallResNet18(nn.Module):
    """torchvision.models.resnet.ResNet(BasicBlock, [2, 2, 2, 2]) with narrow layers."""

    def __init__(self):
        super().__init__()
        self.inplanes = WIDTHS[0]
        self.conv1 = nn.Conv2d(3, WIDTHS[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(WIDTHS[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(WIDTHS[0], 2)
        self.layer2 = self._make_layer(WIDTHS[1], 2, stride=2)
        self.layer3 = self._make_layer(WIDTHS[2], 2, stride=2)
        self.layer4 = self._make_layer(WIDTHS[3], 2, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(WIDTHS[3], NUM_CLASSES)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False),
                nn.BatchNorm2d(planes),
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def make_optimizer(model: nn.Module) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)


def train_step(model, optimizer, x, y) -> float:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def batch(gen: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n, 3, 32, 32, generator=gen)
    y = torch.randint(0, NUM_CLASSES, (n,), generator=gen)
    return x, y


def resnet_fixtures() -> None:
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = SmallResNet18()
    # Calibrate the batch norm running statistics (cumulative averages over 8 batches)
    # so that eval-mode outputs are of order one, as in a trained network.
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.momentum = None
    with torch.no_grad():
        for _ in range(8):
            model(batch(gen, 32)[0])
    for bn in bns:
        bn.momentum = 0.1
    optimizer = make_optimizer(model)
    for _ in range(2):
        train_step(model, optimizer, *batch(gen, 8))
    checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 2}
    torch.save(checkpoint, OUT / "ckpt_resnet_zip.pt")
    torch.save(checkpoint, OUT / "ckpt_resnet_legacy.pt", _use_new_zipfile_serialization=False)

    expected: dict[str, np.ndarray] = {}
    eval_input, _ = batch(gen, 2)
    expected["eval_input"] = eval_input.numpy()
    model.eval()
    with torch.no_grad():
        expected["eval_output"] = model(eval_input).numpy()
    model.train()
    # Train mode uses batch statistics (and updates the running ones): run it on a copy.
    probe = SmallResNet18()
    probe.load_state_dict(checkpoint["model"])
    with torch.no_grad():
        expected["train_output"] = probe(eval_input).numpy()

    # Resume from the saved state in a fresh model and optimizer.
    resumed = SmallResNet18()
    resumed.load_state_dict(torch.load(OUT / "ckpt_resnet_zip.pt")["model"])
    resumed_optimizer = make_optimizer(resumed)
    resumed_optimizer.load_state_dict(torch.load(OUT / "ckpt_resnet_zip.pt")["optimizer"])
    for k in range(3):
        x, y = batch(gen, 8)
        expected[f"step{k}_input"] = x.numpy()
        expected[f"step{k}_target"] = y.numpy()
        expected[f"step{k}_loss"] = np.float32(train_step(resumed, resumed_optimizer, x, y))
    for name, value in resumed.state_dict().items():
        expected[f"final.{name}"] = value.numpy()
    for i, p in enumerate(resumed.parameters()):
        expected[f"final_momentum.{i}"] = resumed_optimizer.state[p]["momentum_buffer"].numpy()
    np.savez_compressed(OUT / "ckpt_resnet_expected.npz", **expected)


def views_fixtures() -> None:
    x = torch.arange(12.0).reshape(3, 4)
    obj = {
        "x": x,
        "row": x[1],
        "col": x[:, 2],
        "t": x.t(),
        "alias": x,
        "ints": torch.tensor([[1, -2], [3, 2**40]]),
        "mask": torch.tensor([True, False, True]),
        "param": nn.Parameter(torch.tensor([0.5, -1.5])),
        "plain": [1, 2.5, "s", None, True, (3, 4)],
    }
    torch.save(obj, OUT / "ckpt_views.pt")
    torch.save(obj, OUT / "ckpt_views_legacy.pt", _use_new_zipfile_serialization=False)


def malicious_pickle() -> bytes:
    """Protocol-2 opcodes for ``os.system("touch rustgrad_ckpt_pwned")``."""
    command = b"touch rustgrad_ckpt_pwned"
    return (
        b"\x80\x02"  # PROTO 2
        + b"cos\nsystem\n"  # GLOBAL os.system
        + b"X"  # BINUNICODE
        + struct.pack("<I", len(command))
        + command
        + b"\x85"  # TUPLE1
        + b"R"  # REDUCE
        + b"."  # STOP
    )


def malicious_fixtures() -> None:
    payload = malicious_pickle()
    with zipfile.ZipFile(OUT / "ckpt_malicious.pt", "w", zipfile.ZIP_STORED) as z:
        z.writestr("ckpt_malicious/data.pkl", payload)
        z.writestr("ckpt_malicious/byteorder", "little")
        z.writestr("ckpt_malicious/version", "3\n")
    # The legacy format starts with a pickled magic number: make that the payload.
    legacy = io.BytesIO()
    legacy.write(payload)
    (OUT / "ckpt_malicious_legacy.pt").write_bytes(legacy.getvalue())


def retag_location(pickled: bytes, old: str, new: str) -> bytes:
    """``pickled`` with its storage location string ``old`` replaced by ``new``.

    torch.save pickles the location once (BINUNICODE, later references are memo
    lookups), so exactly one occurrence is expected.
    """

    def binunicode(text: str) -> bytes:
        return b"X" + struct.pack("<I", len(text)) + text.encode()

    assert pickled.count(binunicode(old)) == 1, "expected one location string"
    return pickled.replace(binunicode(old), binunicode(new))


def cuda_fixtures() -> None:
    obj = {"w": torch.arange(6.0).reshape(2, 3), "n": torch.tensor([1, -2])}
    zipped = io.BytesIO()
    torch.save(obj, zipped)
    with zipfile.ZipFile(zipped) as source:
        records = {info.filename: source.read(info) for info in source.infolist()}
    (pkl,) = [name for name in records if name.endswith("/data.pkl")]
    records[pkl] = retag_location(records[pkl], "cpu", "cuda:0")
    with zipfile.ZipFile(OUT / "ckpt_cuda.pt", "w", zipfile.ZIP_STORED) as z:
        for name, data in records.items():
            z.writestr(name, data)
    legacy = io.BytesIO()
    torch.save(obj, legacy, _use_new_zipfile_serialization=False)
    (OUT / "ckpt_cuda_legacy.pt").write_bytes(retag_location(legacy.getvalue(), "cpu", "cuda:0"))
    for name in ("ckpt_cuda.pt", "ckpt_cuda_legacy.pt"):
        try:
            torch.load(OUT / name)
        except RuntimeError as e:
            assert "Attempting to deserialize object on a CUDA device" in str(e), e
        else:
            raise AssertionError(f"{name}: PyTorch without CUDA loaded it")
        for location in ("cpu", {"cuda:0": "cpu"}, lambda storage, loc: storage):
            loaded = torch.load(OUT / name, map_location=location)
            assert all(torch.equal(loaded[k], obj[k]) for k in obj)


def globals_fixtures() -> None:
    allowed = {
        "w": torch.ones(2),
        "counter": collections.Counter("abca"),
        "raw": b"\x00\xffab",
        "buffer": bytearray(b"xy"),
        "set": {1, 2},
        "z": complex(1.5, -2.0),
        "size": torch.Size([2, 3]),
        "dtype": torch.float16,
        "devices": [torch.device("cpu"), torch.device("cuda", 1)],
    }
    torch.save(allowed, OUT / "ckpt_allowed_globals.pt")
    assert torch.load(OUT / "ckpt_allowed_globals.pt", weights_only=True)["set"] == {1, 2}
    unsafe = {"w": torch.ones(2), "frac": fractions.Fraction(1, 3)}
    torch.save(unsafe, OUT / "ckpt_unsafe_global.pt")
    try:
        torch.load(OUT / "ckpt_unsafe_global.pt", weights_only=True)
    except Exception as e:
        assert "Unsupported global: GLOBAL fractions.Fraction" in str(e), e
    else:
        raise AssertionError("PyTorch loaded a Fraction with weights_only=True")
    assert torch.load(OUT / "ckpt_unsafe_global.pt", weights_only=False)["frac"] == unsafe["frac"]


GROUPS = {
    "resnet": resnet_fixtures,
    "views": views_fixtures,
    "malicious": malicious_fixtures,
    "cuda": cuda_fixtures,
    "globals": globals_fixtures,
}

if __name__ == "__main__":
    torch.set_num_threads(1)
    for group in sys.argv[1:] or GROUPS:
        GROUPS[group]()
