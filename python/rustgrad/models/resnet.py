"""ResNet-18/34/50 with torchvision's module tree, names, initialisation and forward.

A torchvision ``state_dict`` loads into these models with ``strict=True`` and gives the
same outputs (see Note [Models and pretrained weights] in docs/architecture.md). The
structure follows torchvision's ``torchvision/models/resnet.py``: ``conv1``, ``bn1``,
``relu``, ``maxpool``, ``layer1``..``layer4`` (``BasicBlock`` or ``Bottleneck``),
``avgpool``, ``fc``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import flatten, nn
from ..nn import Module
from ._weights import load_pretrained

__all__ = [
    "BasicBlock",
    "Bottleneck",
    "ResNet",
    "conv1x1",
    "conv3x3",
    "resnet18",
    "resnet34",
    "resnet50",
]


def conv3x3(
    in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1
) -> nn.Conv2d:
    """3x3 convolution with padding (no bias: a batch norm follows)."""
    return nn.Conv2d(
        in_planes,
        out_planes,
        kernel_size=3,
        stride=stride,
        padding=dilation,
        groups=groups,
        bias=False,
        dilation=dilation,
    )


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution (no bias)."""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(Module):
    """ResNet-18/34's residual block: two 3x3 convolutions, each followed by a batch
    norm, plus the (optionally downsampled) input.

    Args:
        inplanes: input channels.
        planes: output channels.
        stride: stride of the first convolution.
        downsample: module applied to the input for the residual sum, or None.
        groups, base_width: must be 1 and 64 (as torchvision).
        dilation: must be 1 (as torchvision).
        norm_layer: the normalisation layer class (default ``nn.BatchNorm2d``).
    """

    expansion: int = 1

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Module | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Callable[..., Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Any) -> Any:
        """conv-bn-relu-conv-bn, plus the identity (or downsampled input), then relu."""
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(Module):
    """ResNet-50's residual block: 1x1 reduce, 3x3 (carrying the stride, as torchvision's
    "ResNet V1.5"), 1x1 expand by ``expansion`` = 4, each followed by a batch norm.

    Args: as ``BasicBlock``; ``groups`` and ``base_width`` set the 3x3's width
    (``planes * base_width / 64 * groups``) and ``dilation`` its dilation.
    """

    expansion: int = 4

    def __init__(
        self,
        inplanes: int,
        planes: int,
        stride: int = 1,
        downsample: Module | None = None,
        groups: int = 1,
        base_width: int = 64,
        dilation: int = 1,
        norm_layer: Callable[..., Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Any) -> Any:
        """Three conv-bn stages, plus the identity (or downsampled input), then relu."""
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(Module):
    """torchvision's ResNet: stem (7x7 stride-2 conv, batch norm, relu, 3x3 stride-2 max
    pool), four stages of residual blocks, global average pool and a linear classifier.

    Args:
        block: ``BasicBlock`` or ``Bottleneck``.
        layers: number of blocks in each of the four stages.
        num_classes: outputs of ``fc``.
        zero_init_residual: zero the last batch norm's weight in each block, so that
            each residual branch starts as zero and the block as the identity.
        groups, width_per_group: grouped / wide bottlenecks (ResNeXt, Wide ResNet).
        replace_stride_with_dilation: three booleans, one per stage 2..4: dilate
            instead of striding.
        norm_layer: the normalisation layer class (default ``nn.BatchNorm2d``).

    Example:
        >>> import rustgrad
        >>> from rustgrad.models import resnet18
        >>> resnet18(num_classes=5).eval()(rustgrad.randn(1, 3, 32, 32)).shape
        torch.Size([1, 5])
    """

    def __init__(
        self,
        block: type[BasicBlock | Bottleneck],
        layers: list[int],
        num_classes: int = 1000,
        zero_init_residual: bool = False,
        groups: int = 1,
        width_per_group: int = 64,
        replace_stride_with_dilation: list[bool] | None = None,
        norm_layer: Callable[..., Module] | None = None,
    ) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError(
                "replace_stride_with_dilation should be None "
                f"or a 3-element tuple, got {replace_stride_with_dilation}"
            )
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(
            block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0]
        )
        self.layer3 = self._make_layer(
            block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1]
        )
        self.layer4 = self._make_layer(
            block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2]
        )
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        # torchvision's initialisation; nn.Linear keeps its own default (kaiming
        # uniform), as in torchvision.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(
        self,
        block: type[BasicBlock | Bottleneck],
        planes: int,
        blocks: int,
        stride: int = 1,
        dilate: bool = False,
    ) -> nn.Sequential:
        """One stage: a first block that may change stride/width (with a 1x1 conv + norm
        ``downsample``), then ``blocks - 1`` blocks at the new width."""
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )
        layers = [
            block(
                self.inplanes,
                planes,
                stride,
                downsample,
                self.groups,
                self.base_width,
                previous_dilation,
                norm_layer,
            )
        ]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(
                block(
                    self.inplanes,
                    planes,
                    groups=self.groups,
                    base_width=self.base_width,
                    dilation=self.dilation,
                    norm_layer=norm_layer,
                )
            )
        return nn.Sequential(*layers)

    def _forward_impl(self, x: Any) -> Any:
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = self.avgpool(x)
        x = flatten(x, 1)
        return self.fc(x)

    def forward(self, x: Any) -> Any:
        """Logits of shape ``(N, num_classes)`` for images ``(N, 3, H, W)``."""
        return self._forward_impl(x)


def _resnet(
    arch: str,
    block: type[BasicBlock | Bottleneck],
    layers: list[int],
    weights: Any,
    pretrained: bool,
    progress: bool,
    **kwargs: Any,
) -> ResNet:
    """Builds a ResNet and, when asked, loads its weights (strict) from ``weights`` or
    from the cache directory (see ``rustgrad.models.checkpoint_dir``)."""
    model = ResNet(block, layers, **kwargs)
    load_pretrained(model, arch, weights, pretrained)
    return model


def resnet18(
    *, weights: Any = None, progress: bool = True, pretrained: bool = False, **kwargs: Any
) -> ResNet:
    """ResNet-18 (``BasicBlock``, stages [2, 2, 2, 2]), as ``torchvision.models.resnet18``.

    Args:
        weights: None (random initialisation), a path to a state_dict file, or a truthy
            value other than a path (e.g. ``"DEFAULT"``) for the cached file
            ``$RUSTGRAD_HOME/checkpoints/resnet18.<ext>``.
        progress: accepted for torchvision compatibility; nothing is downloaded.
        pretrained: the legacy spelling of ``weights="DEFAULT"``.
        **kwargs: passed to ``ResNet`` (``num_classes``, ``zero_init_residual``, ...).

    Raises:
        FileNotFoundError: the weights file does not exist; the message says where
            weights are looked for and how to export them from torchvision.
    """
    return _resnet("resnet18", BasicBlock, [2, 2, 2, 2], weights, pretrained, progress, **kwargs)


def resnet34(
    *, weights: Any = None, progress: bool = True, pretrained: bool = False, **kwargs: Any
) -> ResNet:
    """ResNet-34 (``BasicBlock``, stages [3, 4, 6, 3]), as ``torchvision.models.resnet34``.

    Args and errors: as ``resnet18`` (cached file ``resnet34.<ext>``).
    """
    return _resnet("resnet34", BasicBlock, [3, 4, 6, 3], weights, pretrained, progress, **kwargs)


def resnet50(
    *, weights: Any = None, progress: bool = True, pretrained: bool = False, **kwargs: Any
) -> ResNet:
    """ResNet-50 (``Bottleneck``, stages [3, 4, 6, 3]), as ``torchvision.models.resnet50``.

    Args and errors: as ``resnet18`` (cached file ``resnet50.<ext>``).
    """
    return _resnet("resnet50", Bottleneck, [3, 4, 6, 3], weights, pretrained, progress, **kwargs)
