"""``rustgrad.nn``: ``Module`` and the layers, ``Parameter``, ``functional``, ``init``
and ``utils``, with PyTorch's names."""

from __future__ import annotations

from . import functional, init, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook
from .parameter import Parameter

__all__ = [
    "Parameter",
    "functional",
    "init",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "utils",
    *_modules_all,
]
