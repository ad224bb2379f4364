"""Where pretrained weights live and how they are read (nothing is ever downloaded).

See Note [Models and pretrained weights] in docs/architecture.md.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["checkpoint_dir", "load_pretrained", "load_state_file"]

# Looked for in this order in the cache directory, as <arch><ext>.
_EXTENSIONS = (".pth", ".pt", ".safetensors", ".npz")


def checkpoint_dir() -> Path:
    """The directory where ``pretrained=True`` / ``weights="DEFAULT"`` look for
    ``<arch>.pth`` (or ``.pt``, ``.safetensors``, ``.npz``): ``$RUSTGRAD_HOME/checkpoints``,
    with ``RUSTGRAD_HOME`` defaulting to ``~/.cache/rustgrad``.

    Example:
        >>> from rustgrad.models import checkpoint_dir
        >>> checkpoint_dir().name
        'checkpoints'
    """
    home = os.environ.get("RUSTGRAD_HOME") or os.path.join("~", ".cache", "rustgrad")
    return Path(home).expanduser() / "checkpoints"


def _export_hint(arch: str, target: Path) -> str:
    """The one-line command that writes torchvision's weights for ``arch`` to ``target``."""
    return (
        f'python -c "import torch, torchvision; torch.save(torchvision.models.{arch}'
        f"(weights='DEFAULT').state_dict(), '{target}')\""
    )


def _missing(arch: str, tried: list[Path]) -> FileNotFoundError:
    target = checkpoint_dir() / f"{arch}.pth"
    looked = ", ".join(str(p) for p in tried)
    return FileNotFoundError(
        f"no weights for {arch}: looked for {looked}. rustgrad never downloads weights; "
        f"put a state_dict file at {target} (or pass weights=PATH), for instance "
        f"exported from torchvision with:\n    {_export_hint(arch, target)}"
    )


def load_state_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Reads a state_dict file into ``{name: tensor}``: PyTorch ``.pth``/``.pt`` files
    and rustgrad's safetensors checkpoints through ``rustgrad.load`` (restricted
    unpickling, Note [Checkpoints]), numpy ``.npz`` archives (one array per name)
    directly.
    """
    import rustgrad

    path = Path(path)
    if path.suffix != ".npz":
        return rustgrad.load(path, weights_only=True)
    with np.load(path, allow_pickle=False) as archive:
        return {name: rustgrad.from_numpy(archive[name].copy()) for name in archive.files}


def _is_path(weights: Any) -> bool:
    """A PathLike, or a str that looks like a file (a directory part, a state_dict
    suffix, or an existing file); other strs are weight names ("DEFAULT",
    "IMAGENET1K_V1", ...) and, like torchvision's weight enums, mean the cached file."""
    if isinstance(weights, os.PathLike):
        return True
    if not isinstance(weights, str):
        return False
    return (
        os.sep in weights
        or "/" in weights
        or weights.endswith(_EXTENSIONS)
        or os.path.isfile(os.path.expanduser(weights))
    )


def load_pretrained(model: Any, arch: str, weights: Any, pretrained: bool) -> None:
    """Loads ``weights`` into ``model`` with ``strict=True``: a path (see ``_is_path``)
    is read as is; any other value (a weights name or enum), or ``pretrained=True``,
    means the cached file ``checkpoint_dir()/<arch>.<ext>``. Raises FileNotFoundError
    (where to put the file and how to export it from torchvision) when it is missing."""
    if weights is None and not pretrained:
        return
    if _is_path(weights):
        path = Path(weights).expanduser()
        if not path.is_file():
            raise _missing(arch, [path])
    else:
        tried = [checkpoint_dir() / f"{arch}{ext}" for ext in _EXTENSIONS]
        found = [p for p in tried if p.is_file()]
        if not found:
            raise _missing(arch, tried)
        path = found[0]
    model.load_state_dict(load_state_file(path), strict=True)
