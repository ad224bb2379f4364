"""``as_tensor``: a tensor sharing memory with its data when PyTorch's would."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._rustgrad import Tensor, from_numpy, tensor


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """PyTorch's ``torch.as_tensor``: ``data`` itself if it is a tensor of that dtype, a
    tensor sharing a numpy array's memory when its dtype allows (float32, float64,
    int64), and otherwise a new tensor (as ``rustgrad.tensor``)."""
    if isinstance(data, Tensor):
        out = data if dtype is None else data.to(dtype)
        return out if device is None else out.to(device)
    if isinstance(data, np.ndarray) and data.dtype in (np.float32, np.float64, np.int64):
        out = from_numpy(data)
        if dtype is not None:
            out = out.to(dtype)
        return out if device is None else out.to(device)
    return tensor(data, dtype=dtype, device=device)
