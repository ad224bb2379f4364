"""``DataParallel`` and ``data_parallel`` as PyTorch runs them without an accelerator.

PyTorch's ``DataParallel`` finds no device type on a CPU-only machine, so it only wraps
the module: ``device_ids`` is ``[]`` (whatever was passed), ``forward`` calls the module
with the inputs unchanged, and the wrapped module is the child ``module`` (state_dict
keys ``module.<name>``). The functional ``data_parallel`` raises PyTorch's
"device type could not be determined".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..modules.module import Module

__all__ = ["DataParallel", "data_parallel"]


class DataParallel(Module):
    """Wraps ``module``; on the CPU, calling it calls ``module`` (as PyTorch without GPUs).

    Args:
        module: the module to wrap (becomes the child ``module``).
        device_ids: accepted for compatibility; with no GPU it is ignored and
            ``device_ids`` is ``[]``, as in PyTorch.
        output_device: ignored likewise.
        dim: ignored likewise (no scattering).

    Example:
        >>> model = nn.DataParallel(nn.Linear(2, 3))
        >>> list(model.state_dict())
        ['module.weight', 'module.bias']
        >>> model(rustgrad.ones(4, 2)).shape
        rustgrad.Size([4, 3])
    """

    def __init__(
        self,
        module: Module,
        device_ids: Sequence[Any] | None = None,
        output_device: Any = None,
        dim: int = 0,
    ) -> None:
        super().__init__()
        self.module = module
        self.device_ids: list[int] = []

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """``module(*inputs, **kwargs)``."""
        return self.module(*inputs, **kwargs)


def data_parallel(
    module: Module,
    inputs: Any,
    device_ids: Sequence[Any] | None = None,
    output_device: Any = None,
    dim: int = 0,
    module_kwargs: Any = None,
) -> Any:
    """PyTorch's functional data parallelism: it needs an accelerator, so on the CPU it
    raises RuntimeError "device type could not be determined", as PyTorch does."""
    raise RuntimeError("device type could not be determined")
