"""The width-reduced ResNet that the cross-language checkpoint fixtures use
(``rustgrad::models::ResNet::with_widths`` in Rust): torchvision's module tree and names
with stage widths other than 64..512, built from the Python package's ResNet pieces."""

from __future__ import annotations

from rustgrad import nn
from rustgrad.models.resnet import BasicBlock, Bottleneck, ResNet


def small_resnet(
    block: type[BasicBlock | Bottleneck] = BasicBlock,
    layers: tuple[int, int, int, int] = (1, 1, 1, 1),
    widths: tuple[int, int, int, int] = (4, 8, 8, 16),
    num_classes: int = 5,
) -> ResNet:
    """A ``ResNet`` whose four stages have ``widths`` planes (the stem ``widths[0]``
    channels); initialised as torchvision's."""
    model = ResNet.__new__(ResNet)
    nn.Module.__init__(model)
    model._norm_layer = nn.BatchNorm2d
    model.inplanes = widths[0]
    model.dilation = 1
    model.groups = 1
    model.base_width = 64
    model.conv1 = nn.Conv2d(3, widths[0], kernel_size=7, stride=2, padding=3, bias=False)
    model.bn1 = nn.BatchNorm2d(widths[0])
    model.relu = nn.ReLU(inplace=True)
    model.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
    model.layer1 = model._make_layer(block, widths[0], layers[0])
    model.layer2 = model._make_layer(block, widths[1], layers[1], stride=2)
    model.layer3 = model._make_layer(block, widths[2], layers[2], stride=2)
    model.layer4 = model._make_layer(block, widths[3], layers[3], stride=2)
    model.avgpool = nn.AdaptiveAvgPool2d((1, 1))
    model.fc = nn.Linear(widths[3] * block.expansion, num_classes)
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.constant_(m.weight, 1)
            nn.init.constant_(m.bias, 0)
    return model


def simd_path() -> str:
    """The GEMM micro-kernel family this CPU runs (the ``gemm`` crate's dispatch):
    ``"v4"`` (AVX-512), ``"v3"`` (AVX2 + FMA) or ``"scalar"``. Results are bitwise
    reproducible within one family, not across them (Note [GEMM plans]), so the
    cross-language fixtures record the family they were computed with."""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "scalar"
    if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
        return "v4"
    if {"avx2", "fma"} <= flags:
        return "v3"
    return "scalar"
