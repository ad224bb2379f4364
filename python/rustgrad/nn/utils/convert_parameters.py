"""``parameters_to_vector`` / ``vector_to_parameters`` (PyTorch's
``torch/nn/utils/convert_parameters.py``)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._rustgrad import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """The parameters flattened and concatenated into one vector (differentiable).

    Example:
        >>> import rustgrad
        >>> m = rustgrad.nn.Linear(2, 3)
        >>> rustgrad.nn.utils.parameters_to_vector(m.parameters()).shape
        torch.Size([9])
    """
    from ... import cat

    return cat([param.view(-1) for param in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copies consecutive slices of ``vec`` into the parameters' data."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    for param in parameters:
        num_param = param.numel()
        param.data = vec[pointer : pointer + num_param].view_as(param).data.clone()
        pointer += num_param
