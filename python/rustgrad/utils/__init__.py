"""``rustgrad.utils``: ``checkpoint`` (activation checkpointing) and ``data`` (datasets,
samplers, DataLoader)."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
