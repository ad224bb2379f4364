"""The seed notes' LeNet: PyTorch's ``TheModelClass`` from its save/load tutorial."""

from __future__ import annotations

from typing import Any

from .. import nn
from ..nn import functional as F

__all__ = ["LeNet"]


class LeNet(nn.Module):
    """LeNet-5 for 3x32x32 images: conv 3→6 (5x5), 2x2 max pool, conv 6→16 (5x5), 2x2
    max pool, then fully connected 400→120→84→``num_classes`` with ReLUs. The
    parameter names (``conv1``, ``conv2``, ``fc1``..``fc3``; ``pool`` has none) are
    those of the tutorial's ``TheModelClass``, so its state_dicts load unchanged.

    Args:
        num_classes: outputs of ``fc3`` (default 10).

    Example:
        >>> import rustgrad
        >>> from rustgrad.models import LeNet
        >>> LeNet()(rustgrad.randn(4, 3, 32, 32)).shape
        torch.Size([4, 10])
    """

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x: Any) -> Any:
        """Logits of shape ``(N, num_classes)`` for images ``(N, 3, 32, 32)``."""
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)
