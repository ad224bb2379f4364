"""``rustgrad.optim``: learning-rate schedulers (``lr_scheduler``)."""

from . import lr_scheduler

__all__ = ["lr_scheduler"]
