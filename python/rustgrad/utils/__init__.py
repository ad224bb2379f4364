"""``rustgrad.utils``: ``checkpoint`` (activation checkpointing)."""

from . import checkpoint

__all__ = ["checkpoint"]
