"""Device flags of tensors (``is_xpu``, ``is_meta``, ``is_sparse``, ...). See Note
[Devices and default dtype] and Note [Meta device].

rustgrad's tensors are dense, strided CPU tensors: every device and layout flag has
the value PyTorch gives a CPU tensor. Meta tensors (``rustgrad._meta``) override
``is_meta`` and ``is_cpu``.
"""

from __future__ import annotations

from typing import Any

from . import _rustgrad
from ._rustgrad import Tensor

# The device and layout flags PyTorch's CPU tensors answer False to (dir(torch.Tensor)).
_FALSE_FLAGS = (
    "is_ipu",
    "is_maia",
    "is_meta",
    "is_mkldnn",
    "is_mps",
    "is_mtia",
    "is_nested",
    "is_quantized",
    "is_sparse",
    "is_sparse_csr",
    "is_vulkan",
    "is_xla",
    "is_xpu",
)


def _false(self: Tensor) -> bool:
    return False


def _is_pinned(self: Tensor, device: Any = None) -> bool:
    """Whether the tensor is in pinned (page-locked) memory: never, as on a CPU-only
    PyTorch build."""
    return False


def _is_shared(self: Tensor) -> bool:
    """Whether the storage is in shared memory (``share_memory_``): never here."""
    return False


def _is_distributed(self: Tensor) -> bool:
    """Always False (PyTorch's legacy flag)."""
    return False


def _is_neg(self: Tensor) -> bool:
    """Whether the negation bit is set: rustgrad has no lazy negation."""
    return False


def _is_conj(self: Tensor) -> bool:
    """Whether the conjugation bit is set: rustgrad has no lazy conjugation."""
    return False


def _is_coalesced(self: Tensor) -> bool:
    """Only sparse COO tensors have it: PyTorch's error for a dense tensor."""
    raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got Strided")


def _is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors are the same view of the same storage: storage, offset,
    sizes and strides all equal."""
    if not isinstance(tensor, Tensor):
        raise TypeError(
            "is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
            f"{type(tensor).__name__}"
        )
    if self.is_meta or tensor.is_meta:
        return False
    return (
        _rustgrad._storage_info(self) == _rustgrad._storage_info(tensor)
        and self.storage_offset() == tensor.storage_offset()
        and tuple(self.shape) == tuple(tensor.shape)
        and tuple(self.stride()) == tuple(tensor.stride())
    )


for _name in _FALSE_FLAGS:
    setattr(Tensor, _name, property(_false, doc=f"``{_name}``: False for a CPU tensor."))

for _name, _fn in {
    "is_pinned": _is_pinned,
    "is_shared": _is_shared,
    "is_distributed": _is_distributed,
    "is_neg": _is_neg,
    "is_conj": _is_conj,
    "is_coalesced": _is_coalesced,
    "is_set_to": _is_set_to,
}.items():
    setattr(Tensor, _name, _fn)
