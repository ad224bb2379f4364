"""Write the ONNX import fixtures (issue 24): small models exported by PyTorch's
TorchScript ONNX exporter (``dynamo=False``, opset 17), each with an input and
PyTorch's output, read by ``tests/python/test_onnx_import.py``.

Run from the repository root with PyTorch and ``onnx`` installed (never a test
dependency):

    .torch-venv/bin/python tests/vectors/generate_onnx_fixtures.py

The batch (and sequence) dimensions are dynamic (``dynamic_axes``), so shape arithmetic stays in the
graph. Files, all in ``tests/vectors/onnx/``: ``<name>.onnx`` and ``<name>_io.npz`` (float32
arrays ``input``, ``output``, ``cotangent`` and ``input_grad``, the gradient of
``(output * cotangent).sum()`` with respect to the input) for

- ``mlp``: Linear-ReLU-Linear-Tanh-Linear with a BatchNorm1d, a Dropout and a Softmax;
- ``lenet``: LeNet-5 (Conv, ReLU, MaxPool, AvgPool, ``x.view(x.size(0), -1)`` -- which
  the exporter writes as Shape/Gather/Unsqueeze/Concat/Reshape -- and Gemm layers);
- ``resnet18_small``: torchvision's ResNet-18 (BasicBlocks, [2, 2, 2, 2]) restated with
  ``torch.nn`` at stage widths 4/8/16/32 on a 32x32 input, 10 classes (BatchNorm is
  exported as BatchNormalization: ``training=PRESERVE`` on an eval-mode model keeps it);
- ``misc``: slicing, transpose, squeeze/unsqueeze, concat, matmul, sub/div/mul,
  sigmoid and softmax;
- ``lstm``: a two-layer bidirectional ``nn.LSTM`` (ONNX LSTM op) over a
  (seq, batch, feature) input and a Linear head on the last step.

Each model is built right after ``torch.manual_seed(0)``; BatchNorm running statistics
are randomised so inference normalisation is exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

OUT = Path(__file__).resolve().parent / "onnx"


class MLP(nn.Module):
    """A small MLP covering Gemm, BatchNormalization, Relu, Tanh, Dropout, Softmax."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.bn = nn.BatchNorm1d(16)
        self.fc2 = nn.Linear(16, 12)
        self.drop = nn.Dropout(0.5)
        self.fc3 = nn.Linear(12, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.fc1(x)))
        x = self.drop(torch.tanh(self.fc2(x)))
        return torch.softmax(self.fc3(x), dim=1)


class LeNet(nn.Module):
    """LeNet-5 on 1x28x28 inputs."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = nn.functional.avg_pool2d(torch.relu(self.conv2(x)), 2)
        x = x.view(x.size(0), -1)
        return self.fc2(torch.relu(self.fc1(x)))


class BasicBlock(nn.Module):
    """torchvision's BasicBlock."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision's ResNet-18 module tree with the stage widths as a parameter."""

    def __init__(self, widths: tuple[int, ...] = (4, 8, 16, 32), num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, widths[0], 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        inplanes = widths[0]
        for i, w in enumerate(widths):
            stride = 1 if i == 0 else 2
            layers.append(nn.Sequential(BasicBlock(inplanes, w, stride), BasicBlock(w, w)))
            inplanes = w
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class Misc(nn.Module):
    """Shape and elementwise ops: Slice, Transpose, Unsqueeze, Squeeze, Concat, MatMul."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 3))
        self.scale = nn.Parameter(torch.rand(3) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = x[:, 1:5]  # (N, 4, 6)
        b = a.transpose(1, 2)  # (N, 6, 4)
        c = torch.matmul(b, self.w)  # (N, 6, 3)
        d = (c - c.mean(dim=1, keepdim=True)) / self.scale
        e = torch.cat([torch.sigmoid(d), d * 2.0], dim=2)  # (N, 6, 6)
        f = e.unsqueeze(1).squeeze(1)
        return torch.softmax(f, dim=-1)


class LSTMNet(nn.Module):
    """A two-layer bidirectional LSTM over (seq, batch, feature) and a Linear head on
    the last step."""

    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(5, 7, num_layers=2, bidirectional=True)
        self.fc = nn.Linear(14, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return self.fc(out[-1])


def randomise_bn(model: nn.Module) -> None:
    """Give BatchNorm layers non-trivial affine parameters and running statistics."""
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.2, 0.2)
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)


BATCH_FIRST = {"input": {0: "batch"}, "output": {0: "batch"}}
SEQ_FIRST = {"input": {0: "seq", 1: "batch"}, "output": {0: "batch"}}


def export(name: str, model: nn.Module, x: torch.Tensor, dynamic: dict) -> None:
    """Export ``model`` (eval mode) and save its input and PyTorch's output."""
    randomise_bn(model)
    model.eval()
    xg = x.clone().requires_grad_(True)
    y = model(xg)
    # The gradient of sum(output * cotangent) with respect to the input.
    cot = torch.from_numpy(
        np.random.default_rng(0).standard_normal(tuple(y.shape)).astype(np.float32)
    )
    (y * cot).sum().backward()
    y = y.detach()
    torch.onnx.export(
        model,
        (x,),
        str(OUT / f"{name}.onnx"),
        input_names=["input"],
        output_names=["output"],
        dynamic_axes=dynamic,
        opset_version=17,
        training=torch.onnx.TrainingMode.PRESERVE,
        do_constant_folding=False,
        dynamo=False,
    )
    np.savez(
        OUT / f"{name}_io.npz",
        input=x.numpy(),
        output=y.numpy(),
        cotangent=cot.numpy(),
        input_grad=xg.grad.numpy(),
    )


def main() -> None:
    """Write every fixture."""
    torch.set_num_threads(1)
    OUT.mkdir(exist_ok=True)
    cases = [
        ("mlp", MLP, (3, 6), BATCH_FIRST),
        ("lenet", LeNet, (2, 1, 28, 28), BATCH_FIRST),
        ("resnet18_small", ResNet18, (2, 3, 32, 32), BATCH_FIRST),
        ("misc", Misc, (2, 6, 6), BATCH_FIRST),
        ("lstm", LSTMNet, (4, 2, 5), SEQ_FIRST),
    ]
    for name, cls, shape, dynamic in cases:
        torch.manual_seed(0)
        model = cls()
        x = torch.randn(*shape)
        export(name, model, x, dynamic)


if __name__ == "__main__":
    main()
