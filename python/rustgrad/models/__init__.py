"""Model definitions with torchvision's names: ``resnet18``, ``resnet34``, ``resnet50``
(``torchvision.models`` module trees, so torchvision state_dicts load with
``strict=True``) and the seed notes' ``LeNet``.

Pretrained weights are never downloaded: ``pretrained=True`` or ``weights=...`` reads a
local file (see ``checkpoint_dir``).
"""

from ._weights import checkpoint_dir, load_state_file
from .lenet import LeNet
from .resnet import BasicBlock, Bottleneck, ResNet, resnet18, resnet34, resnet50

__all__ = [
    "BasicBlock",
    "Bottleneck",
    "LeNet",
    "ResNet",
    "checkpoint_dir",
    "load_state_file",
    "resnet18",
    "resnet34",
    "resnet50",
]
