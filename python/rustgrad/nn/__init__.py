"""``rustgrad.nn``: ``Module`` and the layers, ``Parameter``, ``functional``, ``init``
and ``utils``, with PyTorch's names."""

from __future__ import annotations

from . import functional, init, parallel, utils
from .modules import *  # noqa: F403
from .modules import __all__ as _modules_all
from .modules.module import register_module_forward_hook, register_module_forward_pre_hook
from .parallel import DataParallel
from .parameter import Parameter

__all__ = [
    "DataParallel",
    "Parameter",
    "functional",
    "init",
    "parallel",
    "register_module_forward_hook",
    "register_module_forward_pre_hook",
    "utils",
    *_modules_all,
]
