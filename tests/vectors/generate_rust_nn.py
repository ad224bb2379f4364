"""Write tests/vectors/rust_nn_init.json: PyTorch's initial parameters and buffers of
each layer that ``rustgrad::nn`` has, and of LeNet and width-reduced ResNets, each built
right after ``torch.manual_seed(0)``; plus the state_dict names and shapes of full-size
ResNet-18/34/50. Read by ``crates/engine/tests/nn_modules.rs``, which builds the same
modules in Rust after ``rustgrad::manual_seed(0)`` and compares bit for bit.

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_rust_nn.py

torchvision is not installed next to PyTorch here, so the ResNets are torchvision's
``resnet.py`` restated with ``torch.nn`` (same module tree, construction order and
initialisation), with the stage widths as a parameter.

Schema: ``{"layers": [{"name", "state": [[key, tensor], ...]}], "shapes": {model: [[key,
shape], ...]}}``, a tensor being ``{"data", "shape", "dtype"}`` and, above 64 elements,
``"sha256"`` of its little-endian bytes with only the first 4 values in ``data``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn

OUT = Path(__file__).resolve().parent / "rust_nn_init.json"
MAX_VALUES = 64


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    """Small tensors by value; above ``MAX_VALUES`` elements, the SHA-256 of their
    little-endian bytes and the first values (the file stays small; equality is still
    bit for bit)."""
    t = t.detach()
    data = t.reshape(-1).numpy()
    out: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
    if t.numel() > MAX_VALUES:
        little_endian = data.astype(data.dtype.newbyteorder("<"))
        out["sha256"] = hashlib.sha256(little_endian.tobytes()).hexdigest()
        data = data[:4]
    if t.dtype == torch.float32:
        out["data"] = [float(str(v)) for v in data]  # shortest decimal of each float32
    else:
        out["data"] = data.tolist()
    return out


class TheModelClass(nn.Module):
    """The seed notes' LeNet (PyTorch's save/load tutorial)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)


def conv3x3(i: int, o: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(i, o, kernel_size=3, stride=stride, padding=1, bias=False)


def conv1x1(i: int, o: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(i, o, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Any = None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Any = None):
        super().__init__()
        self.conv1 = conv1x1(inplanes, planes)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = conv3x3(planes, planes, stride)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = conv1x1(planes, planes * 4)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample


class ResNet(nn.Module):
    """torchvision's ResNet with stage widths ``widths`` (torchvision: 64..512)."""

    def __init__(self, block: Any, layers: list[int], widths: list[int], num_classes: int):
        super().__init__()
        self.inplanes = widths[0]
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, widths[0], layers[0])
        self.layer2 = self._make_layer(block, widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block: Any, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)


LAYERS: dict[str, Callable[[], nn.Module]] = {
    "Linear(5, 3)": lambda: nn.Linear(5, 3),
    "Linear(4, 2, bias=False)": lambda: nn.Linear(4, 2, bias=False),
    "Conv1d(3, 4, 3)": lambda: nn.Conv1d(3, 4, 3),
    "Conv2d(3, 4, 3)": lambda: nn.Conv2d(3, 4, 3),
    "Conv2d(4, 6, 3, groups=2, bias=False)": lambda: nn.Conv2d(4, 6, 3, groups=2, bias=False),
    "ConvTranspose2d(3, 4, 3)": lambda: nn.ConvTranspose2d(3, 4, 3),
    "Conv2d(3, 4, (2, 3), stride=(2, 1), padding=(1, 0))": lambda: nn.Conv2d(
        3, 4, (2, 3), stride=(2, 1), padding=(1, 0)
    ),
    "ConvTranspose2d(4, 2, (3, 1), groups=2)": lambda: nn.ConvTranspose2d(4, 2, (3, 1), groups=2),
    "BatchNorm1d(3)": lambda: nn.BatchNorm1d(3),
    "BatchNorm2d(4)": lambda: nn.BatchNorm2d(4),
    "LayerNorm([4])": lambda: nn.LayerNorm([4]),
    "GroupNorm(2, 4)": lambda: nn.GroupNorm(2, 4),
    "Embedding(5, 3)": lambda: nn.Embedding(5, 3),
    "Embedding(5, 3, padding_idx=1)": lambda: nn.Embedding(5, 3, padding_idx=1),
    "LeNet": TheModelClass,
    "ResNet(Basic, [1, 2, 1, 1], [4, 8, 8, 16], 5)": lambda: ResNet(
        BasicBlock, [1, 2, 1, 1], [4, 8, 8, 16], 5
    ),
    "ResNet(Bottleneck, [1, 1, 2, 1], [2, 4, 4, 8], 3)": lambda: ResNet(
        Bottleneck, [1, 1, 2, 1], [2, 4, 4, 8], 3
    ),
}

FULL = {
    "resnet18": (BasicBlock, [2, 2, 2, 2]),
    "resnet34": (BasicBlock, [3, 4, 6, 3]),
    "resnet50": (Bottleneck, [3, 4, 6, 3]),
}


def main() -> None:
    torch.set_num_threads(1)
    layers = []
    for name, make in LAYERS.items():
        torch.manual_seed(0)
        module = make()
        state = [[k, tensor_json(v)] for k, v in module.state_dict().items()]
        layers.append({"name": name, "state": state})
    shapes = {}
    for name, (block, stages) in FULL.items():
        with torch.device("meta"):
            model = ResNet(block, stages, [64, 128, 256, 512], 1000)
        shapes[name] = [[k, list(v.shape)] for k, v in model.state_dict().items()]
    OUT.write_text(json.dumps({"layers": layers, "shapes": shapes}, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
