"""``rustgrad.linalg``: the linear-algebra functions rustgrad has (``vector_norm``)."""

from .._reduce import vector_norm

__all__ = ["vector_norm"]
