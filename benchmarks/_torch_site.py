"""Where the benchmarks find PyTorch: its own venv, never `.venv` (see README.md)."""

from __future__ import annotations

import glob
import os
import sys


def find_torch_site(explicit: str | None) -> str | None:
    """The site-packages of a venv holding torch for this Python version, if any:
    ``explicit`` (``--torch-site``) when given, else the repository's ``.torch-venv``."""
    if explicit:
        return explicit
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for site in glob.glob(os.path.join(here, ".torch-venv", "lib", version, "site-packages")):
        return site
    return None
