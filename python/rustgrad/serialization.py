"""Checkpoints: ``rustgrad.save`` and ``rustgrad.load``. See Note [Checkpoints].

``save`` writes a safetensors file (the Rust ``safetensors`` crate) whose header
metadata holds a JSON description of everything that is not tensor data: nested
dicts, lists and tuples, numbers, strings, bytes, numpy arrays, views sharing a
storage. ``save(..., format="torch")`` writes PyTorch's zip format (or, with
``_use_new_zipfile_serialization=False``, its legacy format) and pickles any
picklable object, as ``torch.save`` does. Writing to a path is atomic: the bytes go
to a temporary file in the same directory, fsynced and renamed over the target, so a
crash or a full disk never leaves a half-written checkpoint.

``load`` reads those files, plain safetensors files, and PyTorch's ``torch.save``
files. By default (``weights_only=True``) pickles go through a restricted unpickler
(``_weights_only_unpickler``) that resolves only the globals a checkpoint of tensors and
plain values needs (plus those allowed with ``add_safe_globals``), never runs code from
the file and never modifies an object that existed before the load (BUILD, SETITEM and
APPEND only on what PyTorch's weights-only unpickler allows); ``weights_only=False`` is
the user's opt-in to unpickle anything, as in PyTorch.
"""

from __future__ import annotations

import base64
import codecs
import collections
import contextlib
import functools
import hashlib
import io
import json
import math
import os
import pickle
import pickletools
import re
import struct
import uuid
import warnings
import zipfile
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from typing import IO, Any, Callable, Union

import numpy as np

from . import _rustgrad
from ._rustgrad import Tensor
from ._weights_only_unpickler import WeightsOnlyUnpickler

__all__ = [
    "add_safe_globals",
    "clear_safe_globals",
    "get_safe_globals",
    "get_unsafe_globals_in_checkpoint",
    "load",
    "safe_globals",
    "save",
]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]

# Header metadata keys of a rustgrad checkpoint. A file with neither is a foreign
# safetensors file (a flat dict of tensors); with only one it is corrupted.
_STRUCTURE_KEY = "rustgrad"
_CHECKSUM_KEY = "rustgrad_sha256"
# What PyTorch's legacy format starts with (torch/serialization.py).
_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL_VERSION = 1001
# The C type sizes the legacy header records (torch/serialization.py: standard sizes).
_LEGACY_SYS_INFO = {
    "protocol_version": _LEGACY_PROTOCOL_VERSION,
    "little_endian": True,
    "type_sizes": {"short": 2, "int": 4, "long": 4},
}


def _dtypes() -> dict[str, Any]:
    import rustgrad

    names = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16")
    names += ("int8", "uint8", "bool")
    return {name: getattr(rustgrad, name) for name in names}


# ----------------------------------------------------------------------------- save


def save(
    obj: Any,
    f: FileLike,
    pickle_module: Any = None,
    pickle_protocol: int = 2,
    _use_new_zipfile_serialization: bool = True,
    *,
    format: str | None = None,
) -> None:
    """Saves ``obj`` (anything ``torch.save`` accepts: tensors, state_dicts, whole
    modules, optimizers, any picklable object) to ``f``.

    By default an object the safetensors format can hold (tensors in containers and
    plain values, below) is a safetensors file readable by any safetensors reader (each
    tensor that owns its whole storage is stored under its path, e.g.
    ``model.fc.weight``), plus a JSON description of the structure in its header; any
    other object (a whole ``nn.Module``, an optimizer, a user class, a meta tensor) is
    pickled into PyTorch's zip format, as ``torch.save`` does, and loads back with
    ``weights_only=False``. ``format="torch"`` always writes PyTorch's zip format,
    which ``torch.load`` reads (objects other than tensors, containers and plain values
    load back only with ``weights_only=False``);
    ``_use_new_zipfile_serialization=False`` writes PyTorch's legacy (non-zip) format.
    Views that share a storage are saved once, with their sizes, strides and offsets,
    and load sharing storage again, as with ``torch.save``. Writing to a path is atomic.

    Args:
        obj: what to save. The safetensors format holds tensors; dicts (keys: str, int,
            float, bool or None), OrderedDicts, lists, tuples, namedtuples (loaded as a
            namedtuple of the same name and fields), sets and frozensets of them; int,
            float, complex, str, bytes, bytearray, bool, None; dtypes, ``Size`` and
            ``device``; numpy arrays and scalars. Anything else is pickled (PyTorch's
            zip format) unless ``format="safetensors"`` is given.
        f: a path, or a binary file object (written in one ``write`` call).
        pickle_module: accepted for PyTorch compatibility; must be None or ``pickle``.
        pickle_protocol: the pickle protocol of ``format="torch"`` (PyTorch's default 2).
        _use_new_zipfile_serialization: PyTorch's switch: False writes PyTorch's legacy
            format (and implies ``format="torch"``).
        format: None (the default: safetensors where possible, else PyTorch's zip
            format), ``"safetensors"`` or ``"torch"``.

    Raises:
        TypeError: ``format="safetensors"`` cannot hold an object of ``obj`` (the
            message names its type), or an object cannot be pickled.

    Example:
        >>> rustgrad.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
        >>> rustgrad.load("ckpt.pt")["epoch"]
        3
        >>> rustgrad.save(obj, "ckpt.pth", format="torch")  # for torch.load
    """
    if pickle_module not in (None, pickle):
        raise TypeError("rustgrad.save: pickle_module is not supported")
    if format is None and _use_new_zipfile_serialization:
        # safetensors where the object is representable, else PyTorch's zip format
        # (Note [Checkpoints]: the user does not choose).
        try:
            data = _to_safetensors_bytes(obj)
        except _NotRepresentable:
            data = _to_torch_bytes(obj, pickle_protocol, legacy=False)
    elif format is None or format == "torch":
        data = _to_torch_bytes(obj, pickle_protocol, legacy=not _use_new_zipfile_serialization)
    elif format == "safetensors":
        if not _use_new_zipfile_serialization:
            raise ValueError(
                "rustgrad.save: _use_new_zipfile_serialization=False writes PyTorch's legacy "
                'format: pass format="torch"'
            )
        data = _to_safetensors_bytes(obj)
    else:
        raise ValueError(f'rustgrad.save: format must be "safetensors" or "torch", got {format!r}')
    if hasattr(f, "write"):
        _write_file(f, data)  # type: ignore[arg-type]
        return
    _atomic_write(os.fspath(f), data)  # type: ignore[arg-type]


# The numpy dtype kinds saved as raw bytes: bool, integers, floats, complex, datetimes,
# byte and unicode strings (not objects, not structured records: kinds O and V).
_NUMPY_KINDS = "biufcmMSU"


class _NotRepresentable(TypeError):
    """An object the safetensors format cannot hold (``save`` then writes PyTorch's zip
    format, unless ``format="safetensors"`` was asked for)."""


class _Encoder:
    """Turns an object into a JSON-able node tree and a list of tensors."""

    def __init__(self) -> None:
        self.tensors: list[tuple[str, Tensor]] = []
        # The node of each tensor, which gets the name of its safetensors entry.
        self.tensor_nodes: list[dict[str, Any]] = []

    def encode(self, obj: Any, path: str) -> Any:
        import rustgrad

        from ._size import Size

        if isinstance(obj, Tensor):
            if obj.is_meta:
                raise _NotRepresentable(
                    "rustgrad.save: a meta tensor has no data for the safetensors format; "
                    'save it with format="torch"'
                )
            node: dict[str, Any] = {
                "requires_grad": bool(obj.requires_grad),
                "parameter": _is_parameter(obj),
            }
            self.tensors.append((path or "tensor", obj.detach()))
            self.tensor_nodes.append(node)
            return node
        if isinstance(obj, (np.ndarray, np.generic)):
            return {"ndarray": self.encode_numpy(obj, path)}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, complex):
            return {"complex": [self.encode(obj.real, ""), self.encode(obj.imag, "")]}
        if isinstance(obj, (bytes, bytearray)):
            kind = "bytes" if isinstance(obj, bytes) else "bytearray"
            return {kind: base64.b64encode(obj).decode("ascii")}
        if isinstance(obj, Size):
            return {"size": list(obj)}
        if isinstance(obj, type(rustgrad.float32)):
            return {"dtype": str(obj).removeprefix("torch.")}
        if isinstance(obj, rustgrad.device):
            return {"device": str(obj)}
        if type(obj) in (list, tuple):
            items = [self.encode(v, _join(path, str(i))) for i, v in enumerate(obj)]
            return {type(obj).__name__: items}
        if isinstance(obj, tuple) and _is_namedtuple(type(obj)):
            items = [self.encode(v, _join(path, k)) for k, v in zip(obj._fields, obj)]
            return {"namedtuple": [type(obj).__name__, list(obj._fields), items]}
        if type(obj) in (set, frozenset):
            # Sorted, so that the file does not depend on the string hash seed.
            members = sorted(obj, key=repr)
            items = [self.encode(v, _join(path, str(i))) for i, v in enumerate(members)]
            return {type(obj).__name__: items}
        if type(obj) in (dict, collections.OrderedDict):
            for key in obj:
                if not (key is None or isinstance(key, (bool, int, float, str))):
                    raise _NotRepresentable(
                        f"rustgrad.save: dict keys must be str, int, float, bool or None, "
                        f"got {type(key).__name__}"
                    )
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            items = [
                [self.encode(k, ""), self.encode(v, _join(path, str(k)))] for k, v in obj.items()
            ]
            return {kind: items}
        raise _NotRepresentable(
            f"rustgrad.save: cannot save an object of type {type(obj).__name__} in the "
            "safetensors format (it holds tensors, dict, OrderedDict, list, tuple, "
            "namedtuple, set, int, float, complex, str, bytes, bool, None, dtype, Size, "
            'device and numpy arrays); save it with format="torch", which pickles any '
            "picklable object (loaded back with weights_only=False)"
        )

    def encode_numpy(self, obj: np.ndarray | np.generic, path: str) -> dict[str, Any]:
        """A numpy array or scalar: its bytes are a uint8 entry, its dtype and shape here."""
        import rustgrad

        array = np.asarray(obj)
        if array.dtype.kind not in _NUMPY_KINDS:
            raise _NotRepresentable(
                f"rustgrad.save: cannot save a numpy array of dtype {array.dtype} in the "
                'safetensors format; save it with format="torch"'
            )
        raw = np.frombuffer(array.tobytes(), dtype=np.uint8)  # C order
        node = {
            "dtype": array.dtype.str,
            "shape": list(array.shape),
            "scalar": isinstance(obj, np.generic),
        }
        self.tensors.append((path or "array", rustgrad.from_numpy(raw.copy())))
        self.tensor_nodes.append(node)
        return node


def _is_namedtuple(cls: type) -> bool:
    return issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _is_parameter(t: Tensor) -> bool:
    from .nn.parameter import Parameter

    return isinstance(t, Parameter)


def _to_safetensors_bytes(obj: Any) -> bytes:
    encoder = _Encoder()
    root = encoder.encode(obj, "")
    # Group the tensors by storage: a tensor alone on its storage and covering all of
    # it is an entry of its own (its name is its path); otherwise the storage is one
    # flat entry and each tensor a view of it (sizes, strides, offset).
    by_storage: dict[int, list[int]] = {}
    for i, (_, t) in enumerate(encoder.tensors):
        by_storage.setdefault(_rustgrad._storage_info(t)[0], []).append(i)
    entries: dict[str, Tensor] = {}

    def unique(name: str) -> str:
        candidate, n = name, 1
        while candidate in entries:
            candidate, n = f"{name}#{n}", n + 1
        return candidate

    for members in by_storage.values():
        path, first = encoder.tensors[members[0]]
        numel = _rustgrad._storage_info(first)[1]
        if len(members) == 1 and _covers_storage(first, numel):
            encoder.tensor_nodes[members[0]]["tensor"] = name = unique(path)
            entries[name] = first
            continue
        name = unique(f"{path}.__storage__")
        entries[name] = first.as_strided((numel,), (1,), 0)
        for i in members:
            t = encoder.tensors[i][1]
            encoder.tensor_nodes[i].update(
                tensor=name, shape=list(t.shape), stride=list(t.stride()), offset=t.storage_offset()
            )
    structure = json.dumps(root, allow_nan=False, separators=(",", ":"))
    metadata = {
        "format": "pt",
        _STRUCTURE_KEY: structure,
        _CHECKSUM_KEY: _checksum(structure, entries),
    }
    return _rustgrad._safetensors_serialize(list(entries.items()), metadata)


def _covers_storage(t: Tensor, storage_numel: int) -> bool:
    return t.storage_offset() == 0 and t.is_contiguous() and t.numel() == storage_numel


def _checksum(structure: str, entries: dict[str, Tensor]) -> str:
    """SHA-256 of the structure and every entry's name, dtype, shape and bytes."""
    digest = hashlib.sha256(structure.encode())
    for name in sorted(entries):
        t = entries[name]
        digest.update(f"\0{name}\0{t.dtype}\0{tuple(t.shape)}\0".encode())
        digest.update(_rustgrad._tensor_bytes(t))
    return digest.hexdigest()


def _write_file(f: IO[bytes], data: bytes) -> None:
    """Writes all of ``data`` to ``f`` (the one place a save writes bytes)."""
    f.write(data)


def _atomic_write(path: str, data: bytes) -> None:
    """Replaces ``path`` by a file holding ``data``, or leaves it untouched on error."""
    directory = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    # Mode 0o666 under the umask, as open(path, "wb") would create the file.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _write_file(f, data)
            f.flush()
            os.fsync(f.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    # The rename is durable once the directory entry is.
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


# ----------------------------------------------------------------------------- load


def load(
    f: FileLike,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool | None = None,
    mmap: Any = None,
    **pickle_load_args: Any,
) -> Any:
    """Loads what ``rustgrad.save`` or ``torch.save`` wrote to ``f``.

    Reads rustgrad checkpoints, plain safetensors files (as a dict of tensors) and
    PyTorch's ``.pt``/``.pth`` files in the zip and the legacy format. With
    ``weights_only=True`` (the default, as in PyTorch) pickles go through a restricted
    unpickler that resolves only what PyTorch's weights-only unpickler allows
    (tensors, Parameters, storages, OrderedDict, Counter, set, bytes, bytearray,
    complex, dtypes, ``Size``, ``device``) and the globals given to
    :func:`add_safe_globals`: a file asking for any other global (``os.system``,
    ``builtins.eval``, ...) is refused with ``pickle.UnpicklingError`` naming it, and
    nothing in the file runs; a pickle that would change an existing object (BUILD on a
    class, a function or a storage type, SETITEM on what is not a dict, APPEND on what
    is not a list) or call what is not an allowed global is refused the same way, with
    PyTorch's reason. ``weights_only=False`` unpickles any global: do it only for files
    from a trusted source.

    Args:
        f: a path, or a binary file object.
        map_location: where to put the storages, as in PyTorch: None (where they were
            saved), a device string or ``device``, a dict mapping the location tags of
            the file (``"cpu"``, ``"cuda:0"``, ...) to others, or a callable
            ``(storage, location) -> storage or None``, called once per storage with
            the storage loaded on the CPU (a flat tensor; for a safetensors file,
            each stored tensor, tagged ``"cpu"``). rustgrad runs on the CPU:
            a storage that ends up anywhere else raises RuntimeError, so a checkpoint
            saved on a GPU loads with ``map_location="cpu"``.
        pickle_module: None or ``pickle``; passing it makes ``weights_only`` default
            to False, as in PyTorch.
        weights_only: restrict unpickling to the allowed globals (default True).
        mmap: accepted for PyTorch compatibility; the file is always read.
        pickle_load_args: keyword arguments of ``pickle.Unpickler`` (e.g.
            ``encoding``), used with ``weights_only=False`` only.

    Returns:
        The saved object, with tensors loaded on the CPU.

    Raises:
        RuntimeError: the file is truncated, corrupted or not a checkpoint (the
            message names the file; nothing is returned, so nothing is half loaded),
            or a storage is mapped to a device other than the CPU.
        pickle.UnpicklingError: with ``weights_only=True``, the file asks for a global
            that is not allowed ("Weights only load failed ... Unsupported global") or
            its pickle does what PyTorch's weights-only unpickler refuses ("Weights
            only load failed ... Can only build Tensor, Parameter, OrderedDict or types
            allowlisted via `add_safe_globals`, but got <class 'type'>").

    Example:
        >>> model.load_state_dict(rustgrad.load("ckpt.pt")["model"])
        >>> rustgrad.load("gpu_ckpt.pt", map_location="cpu")
    """
    del mmap
    if pickle_module not in (None, pickle):
        raise TypeError("rustgrad.load: pickle_module is not supported")
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError(
                "Can not safely load weights when explicit pickle_module is specified"
            )
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
        pickle_load_args = {}
    pickle_load_args.setdefault("encoding", "utf-8")
    pickle.Unpickler(io.BytesIO(), **pickle_load_args)  # a bad argument is a TypeError here
    options = _LoadOptions(_restore_location(map_location), weights_only, pickle_load_args)
    name, data = _read_file(f)
    try:
        # A safetensors file starts with its header's length (8 bytes) and then "{";
        # the legacy format starts with a pickle (PROTO opcode, \x80).
        if data[:4] == b"PK\x03\x04":
            return _load_torch_zip(data, options)
        if data[:1] == b"\x80" and data[8:9] != b"{":
            return _load_torch_legacy(data, options)
        return _load_safetensors(data, options)
    except _Passthrough as passthrough:
        raise passthrough.error from None
    except Exception as e:
        raise _corrupted(name, e) from e


def _read_file(f: FileLike) -> tuple[str, bytes]:
    """The name (for messages) and the bytes of a path or a binary file object."""
    if hasattr(f, "read"):
        return getattr(f, "name", repr(f)), f.read()  # type: ignore[union-attr]
    name = os.fspath(f)  # type: ignore[arg-type]
    with open(name, "rb") as file:
        return name, file.read()


def _corrupted(name: str, error: BaseException) -> RuntimeError:
    return RuntimeError(
        f"rustgrad.load: {name} is truncated, corrupted or not a checkpoint "
        f"({type(error).__name__}: {error})"
    )


class _CorruptedError(Exception):
    """An inconsistency found while decoding (wrapped by ``load`` with the file name)."""


class _Passthrough(Exception):
    """Carries an error that ``load`` raises as it is, not as a corrupted file.

    Refused globals, storages mapped off the CPU, and errors of the user's code (a
    ``map_location`` callable, imports with ``weights_only=False``).
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class _LoadOptions:
    """What ``load``'s arguments decide for every format."""

    def __init__(
        self,
        restore: Callable[[Tensor, str], Tensor],
        weights_only: bool,
        pickle_load_args: dict[str, Any],
    ) -> None:
        self.restore = restore
        self.weights_only = weights_only
        self.pickle_load_args = pickle_load_args
        # Read once per load: add_safe_globals() during a load does not change it.
        self.user_globals = _user_allowed_globals() if weights_only else {}

    def unpickler(self, file: IO[bytes], persistent_load: Callable[[Any], Any]) -> Any:
        """An unpickler of the object pickle (the one holding tensors)."""
        if not self.weights_only:
            return _Unpickler(file, persistent_load, **self.pickle_load_args)
        from .nn.parameter import Parameter

        user_globals = self.user_globals
        allowed = [*_torch_globals().values(), *_SAFE_BUILTINS.values(), *user_globals.values()]
        return WeightsOnlyUnpickler(
            file,
            find_global=lambda module, name: _find_weights_only_global(module, name, user_globals),
            allowed=allowed,
            persistent_load=persistent_load,
            refuse=_refused_opcode,
            parameter=Parameter,
            tensor=Tensor,
            **self.pickle_load_args,
        )


def _load_safetensors(data: bytes, options: _LoadOptions) -> Any:
    metadata, loaded = _rustgrad._safetensors_deserialize(data)
    entries = dict(loaded)
    if _STRUCTURE_KEY not in metadata and _CHECKSUM_KEY not in metadata:
        return collections.OrderedDict((k, options.restore(t, "cpu")) for k, t in loaded)
    structure = metadata.get(_STRUCTURE_KEY)
    if structure is None or metadata.get(_CHECKSUM_KEY) != _checksum(structure, entries):
        raise _CorruptedError("checksum mismatch")
    return _Decoder(entries, options.restore).decode(json.loads(structure))


_SEQUENCES: dict[str, Callable[[Any], Any]] = {
    "list": list,
    "tuple": tuple,
    "set": set,
    "frozenset": frozenset,
}


class _Decoder:
    """Rebuilds an object from the node tree written by ``_Encoder``.

    The entries that tensors use go through ``restore`` (``map_location``) once each,
    tagged ``"cpu"``; those holding numpy arrays' bytes do not.
    """

    def __init__(
        self, entries: dict[str, Tensor], restore: Callable[[Tensor, str], Tensor]
    ) -> None:
        self.entries = entries
        self.restore = restore
        self.restored: dict[str, Tensor] = {}

    def decode(self, node: Any) -> Any:
        import rustgrad

        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and "requires_grad" in node:
            return self.tensor(node)
        if not isinstance(node, dict) or len(node) != 1:
            raise _CorruptedError(f"bad structure node {node!r:.80}")
        ((kind, value),) = node.items()
        if kind in _SEQUENCES:
            return _SEQUENCES[kind](self.decode(v) for v in value)
        if kind in ("dict", "odict"):
            pairs = [(self.decode(k), self.decode(v)) for k, v in value]
            return dict(pairs) if kind == "dict" else collections.OrderedDict(pairs)
        if kind == "namedtuple":
            typename, fields, items = value
            return collections.namedtuple(typename, fields)(*(self.decode(v) for v in items))
        if kind == "float":
            return float(value)
        if kind == "complex":
            return complex(self.decode(value[0]), self.decode(value[1]))
        if kind in ("bytes", "bytearray"):
            raw = base64.b64decode(value.encode("ascii"), validate=True)
            return raw if kind == "bytes" else bytearray(raw)
        if kind == "size":
            from ._size import Size

            return Size(value)
        if kind == "dtype":
            return _dtypes()[value]
        if kind == "device":
            return rustgrad.device(value)
        if kind == "ndarray":
            return self.ndarray(value)
        raise _CorruptedError(f"unknown structure node {kind!r:.40}")

    def tensor(self, node: dict[str, Any]) -> Tensor:
        name = node["tensor"]
        if name not in self.restored:
            self.restored[name] = self.restore(self.entries[name], "cpu")
        t = self.restored[name]
        if "shape" in node:
            t = t.as_strided(node["shape"], node["stride"], node["offset"])
        return _finish_tensor(t, node["requires_grad"], node["parameter"])

    def ndarray(self, node: dict[str, Any]) -> np.ndarray | np.generic:
        dtype = np.dtype(node["dtype"])
        if dtype.kind not in _NUMPY_KINDS:
            raise _CorruptedError(f"bad numpy dtype {node['dtype']!r:.40}")
        raw = _rustgrad._tensor_bytes(self.entries[node["tensor"]])
        array = np.frombuffer(raw, dtype=dtype).reshape(node["shape"]).copy()
        return array[()] if node["scalar"] else array


def _finish_tensor(t: Tensor, requires_grad: bool, parameter: bool) -> Tensor:
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


# ------------------------------------------------------------------- map_location

# PyTorch's accelerator backends: a storage tagged with one of them (or mapped to
# one) cannot be restored, since rustgrad runs on the CPU.
_ACCELERATORS = ("cuda", "xpu", "mps", "hpu", "mtia")


def _restore_location(map_location: Any) -> Callable[[Tensor, str], Tensor]:
    """PyTorch's ``_get_restore_location``: ``(storage, location tag) -> storage``."""
    import rustgrad

    if map_location is None:
        return _default_restore_location
    if isinstance(map_location, dict):
        mapping = dict(map_location)
        return lambda storage, location: _default_restore_location(
            storage, str(mapping.get(location, location))
        )
    if isinstance(map_location, (str, bytes, rustgrad.device)):
        target = map_location.decode() if isinstance(map_location, bytes) else str(map_location)
        return lambda storage, location: _default_restore_location(storage, target)

    def restore(storage: Tensor, location: str) -> Tensor:
        try:
            result = map_location(storage, location)
        except Exception as e:
            raise _Passthrough(e) from e
        if result is None:
            return _default_restore_location(storage, location)
        if not (
            isinstance(result, Tensor)
            and result.dtype == storage.dtype
            and tuple(result.shape) == tuple(storage.shape)
        ):
            raise _Passthrough(
                TypeError(
                    "map_location must return None or a CPU storage of the dtype and size of "
                    f"the one it was given, got {type(result).__name__}"
                )
            )
        return result

    return restore


def _default_restore_location(storage: Tensor, location: str) -> Tensor:
    """PyTorch's ``default_restore_location``, with the CPU as the only device."""
    if location == "cpu":
        return storage
    for backend in _ACCELERATORS:
        if location == backend or re.match(f"{backend}(:|[0-9]+)", location):
            raise _Passthrough(
                RuntimeError(
                    f"Attempting to deserialize object on a {backend.upper()} device but "
                    f"torch.{backend}.is_available() is False. If you are running on a "
                    "CPU-only machine, please use torch.load with "
                    "map_location=torch.device('cpu') to map your storages to the CPU."
                )
            )
    raise _Passthrough(
        RuntimeError(
            f"don't know how to restore data location of a storage (tagged with {location})"
        )
    )


# ------------------------------------------------------------------- safe globals

# Globals that add_safe_globals cannot allow (PyTorch's _blocklisted_modules).
_BLOCKED_MODULES = ("sys", "os", "posix", "nt")
_safe_globals: set[Any] = set()


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Marks globals (classes, functions) as safe for ``load(..., weights_only=True)``.

    A global is named in a file by its ``module.qualname``; an item may also be a tuple
    ``(global, "module.name")`` to allow it under another name. Globals of ``os``,
    ``sys``, ``posix`` and ``nt`` stay refused, as in PyTorch.

    Args:
        safe_globals: the classes and functions (or ``(global, name)`` tuples) to allow.

    Example:
        >>> rustgrad.serialization.add_safe_globals([MyConfig])
        >>> rustgrad.load("ckpt.pth")["config"]
        MyConfig(...)
    """
    global _safe_globals
    _safe_globals = _safe_globals.union(safe_globals)


def get_safe_globals() -> list[Any]:
    """Returns the globals added with :func:`add_safe_globals`."""
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forgets every global added with :func:`add_safe_globals`."""
    global _safe_globals
    _safe_globals = set()


class safe_globals:
    """Context manager that allows globals for ``weights_only`` loads inside its block.

    Args:
        safe_globals: as for :func:`add_safe_globals`; they are removed again on exit.

    Example:
        >>> with rustgrad.serialization.safe_globals([MyConfig]):
        ...     checkpoint = rustgrad.load("ckpt.pth")
    """

    def __init__(self, safe_globals: list[Any]) -> None:
        self.safe_globals = safe_globals

    def __enter__(self) -> None:
        add_safe_globals(self.safe_globals)

    def __exit__(self, *exc_info: Any) -> None:
        global _safe_globals
        _safe_globals = _safe_globals - set(self.safe_globals)


def _user_allowed_globals() -> dict[str, Any]:
    """The globals of ``add_safe_globals`` by the name a file gives them."""
    allowed: dict[str, Any] = {}
    for item in _safe_globals:
        if isinstance(item, tuple):
            if len(item) != 2:
                raise ValueError(
                    "Expected tuple of length 2 (global, str of callable full path), but got "
                    f"tuple of length: {len(item)}"
                )
            if type(item[1]) is not str:
                raise TypeError(
                    "Expected second item in tuple to be str of callable full path, but got: "
                    f"{type(item[1])}"
                )
            allowed[item[1]] = item[0]
        else:
            allowed[f"{item.__module__}.{item.__qualname__}"] = item
    return allowed


# --------------------------------------------------------------- PyTorch's formats

# The storage classes a PyTorch checkpoint names, by their element type.
_STORAGE_DTYPES = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
}
_NUMPY_DTYPES = {
    "float32": "<f4",
    "float64": "<f8",
    "float16": "<f2",
    "bfloat16": "<u2",
    "int64": "<i8",
    "int32": "<i4",
    "int16": "<i2",
    "int8": "i1",
    "uint8": "u1",
    "bool": "?",
}


class _StorageType:
    """What ``torch.FloatStorage`` and its siblings unpickle to: an element type.

    Immutable: one instance per storage class serves every load of the process.
    """

    __slots__ = ("_dtype",)

    def __init__(self, dtype: str) -> None:
        object.__setattr__(self, "_dtype", dtype)

    @property
    def dtype(self) -> str:
        """The element type, e.g. ``"float32"``."""
        return self._dtype

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")


def _rebuild_tensor(
    storage: Tensor, storage_offset: int, size: tuple[int, ...], stride: tuple[int, ...]
) -> Tensor:
    """``torch._utils._rebuild_tensor``: a view of a flat storage tensor."""
    if not isinstance(storage, Tensor):
        raise _CorruptedError("_rebuild_tensor expects a storage")
    return storage.as_strided(tuple(size), tuple(stride), storage_offset)


def _rebuild_tensor_v2(
    storage: Tensor,
    storage_offset: int,
    size: tuple[int, ...],
    stride: tuple[int, ...],
    requires_grad: bool,
    backward_hooks: Any,
    metadata: Any = None,
) -> Tensor:
    """``torch._utils._rebuild_tensor_v2``: a view of a flat storage tensor."""
    del backward_hooks, metadata
    t = _rebuild_tensor(storage, storage_offset, size, stride)
    return _finish_tensor(t, bool(requires_grad), parameter=False)


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Tensor:
    """``torch._utils._rebuild_parameter``."""
    del backward_hooks
    return _finish_tensor(data.detach(), bool(requires_grad), parameter=True)


def _rebuild_meta_tensor_no_storage(
    dtype: Any, size: Any, stride: Any, requires_grad: bool
) -> Tensor:
    """``torch._utils._rebuild_meta_tensor_no_storage``: a meta tensor (Note [Meta
    device])."""
    from ._meta import _make

    return _make(tuple(size), dtype, bool(requires_grad), tuple(stride))


def _rebuild_parameter_with_state(
    data: Tensor, requires_grad: bool, backward_hooks: Any, state: Any
) -> Tensor:
    """``torch._utils._rebuild_parameter_with_state`` (the state is dropped)."""
    del state
    return _rebuild_parameter(data, requires_grad, backward_hooks)


@functools.lru_cache(maxsize=1)
def _torch_globals() -> dict[str, Any]:
    """PyTorch's globals that a checkpoint names, mapped to rustgrad's (both modes)."""
    import rustgrad

    from ._size import Size
    from .nn.parameter import Parameter

    mapped: dict[str, Any] = {
        "torch._utils._rebuild_tensor": _rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": _rebuild_tensor_v2,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter_with_state,
        "torch._utils._rebuild_meta_tensor_no_storage": _rebuild_meta_tensor_no_storage,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": Size,
        "torch.device": rustgrad.device,
    }
    for storage, dtype in _STORAGE_DTYPES.items():
        mapped[f"torch.{storage}"] = _StorageType(dtype)
    for name, dtype in _dtypes().items():
        mapped[f"torch.{name}"] = dtype
    return mapped


# What PyTorch's weights-only unpickler allows besides its own globals.
_SAFE_BUILTINS: dict[str, Any] = {
    "collections.OrderedDict": collections.OrderedDict,
    "collections.Counter": collections.Counter,
    "_codecs.encode": codecs.encode,  # how protocol 2 pickles bytes
    "builtins.set": set,
    "builtins.bytearray": bytearray,
    "builtins.complex": complex,
}

_UNSAFE_MESSAGE = (
    "Re-running `torch.load` with `weights_only` set to `False` will likely succeed, but it "
    "can result in arbitrary code execution. Do it only if you got the file from a trusted "
    "source."
)


def _refused_global(module: str, name: str) -> pickle.UnpicklingError:
    """PyTorch's weights-only error for a global that is not allowed."""
    full = f"{module}.{name}"
    if module in _BLOCKED_MODULES:
        return pickle.UnpicklingError(
            f"Weights only load failed. {_UNSAFE_MESSAGE}\n\n"
            f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked."
        )
    # PyTorch names builtins without their module (GLOBAL eval).
    shown = name if module == "builtins" else full
    return pickle.UnpicklingError(
        "Weights only load failed. This file can still be loaded, to do so you have two "
        "options, do those steps only if you trust the source of the checkpoint. "
        f"\n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, to load with `weights_only=True` "
        "please check the recommended steps in the following error message.\n\t"
        f"WeightsUnpickler error: Unsupported global: GLOBAL {shown} was not an allowed "
        f"global by default. Please use `torch.serialization.add_safe_globals([{shown}])` or "
        f"the `torch.serialization.safe_globals([{shown}])` context manager to allowlist this "
        "global if you trust this class/function."
    )


def _python3_name(module: str, name: str) -> tuple[str, str]:
    """Protocol 2 pickles name Python 3's builtins by their Python 2 names."""
    if (module, name) in NAME_MAPPING:
        return NAME_MAPPING[(module, name)]
    return IMPORT_MAPPING.get(module, module), name


def _weights_only_global(module: str, name: str, user_globals: dict[str, Any]) -> Any:
    """What a weights-only load resolves the global ``module.name`` to, or None."""
    if module in _BLOCKED_MODULES:
        return None
    full = f"{module}.{name}"
    for allowed in (_torch_globals(), _SAFE_BUILTINS, user_globals):
        if full in allowed:
            return allowed[full]
    return None


def get_unsafe_globals_in_checkpoint(f: FileLike) -> list[str]:
    """The globals of a zip checkpoint that ``load(..., weights_only=True)`` refuses.

    Those that are neither allowed by default nor by :func:`add_safe_globals`, as
    ``module.name``; found by reading the pickle's opcodes, so nothing is imported or
    run (a global that a protocol 4+ pickle builds on the stack is not seen, as in
    PyTorch).

    Args:
        f: a path or binary file object holding a ``torch.save`` zip checkpoint.

    Returns:
        The sorted names of the refused globals.

    Raises:
        ValueError: ``f`` is not a zip checkpoint.

    Example:
        >>> rustgrad.serialization.get_unsafe_globals_in_checkpoint("ckpt.pth")
        ['fractions.Fraction']
    """
    data = _read_file(f)[1]
    if data[:4] != b"PK\x03\x04":
        raise ValueError("Expected input to be a checkpoint returned by torch.save")
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        pickled = archive.read(_zip_pickle_name(archive))
    user_globals = _user_allowed_globals()
    refused = set()
    for opcode, arg, _ in pickletools.genops(pickled):
        if opcode.name == "GLOBAL":
            module, name = _python3_name(*arg.split(" ", 1))
            if _weights_only_global(module, name, user_globals) is None:
                refused.add(f"{module}.{name}")
    return sorted(refused)


def _find_weights_only_global(module: str, name: str, user_globals: dict[str, Any]) -> Any:
    """The global ``module.name`` of a weights-only load, or the refusal (not imported)."""
    module, name = _python3_name(module, name)
    allowed = _weights_only_global(module, name, user_globals)
    if allowed is None:
        raise _Passthrough(_refused_global(module, name))
    return allowed


def _refused_opcode(reason: str) -> _Passthrough:
    """PyTorch's weights-only error for an opcode it refuses (BUILD on a class, ...)."""
    return _Passthrough(
        pickle.UnpicklingError(
            f"Weights only load failed. {_UNSAFE_MESSAGE}\n\nWeightsUnpickler error: {reason}"
        )
    )


class _Unpickler(pickle.Unpickler):
    """``torch.load``'s unpickler with ``weights_only=False``: PyTorch's globals mapped
    to rustgrad's, any other imported (except PyTorch's own that rustgrad does not
    provide). Storages come from ``persistent_load``. ``weights_only=True`` loads use
    ``WeightsOnlyUnpickler`` instead.
    """

    def __init__(
        self,
        file: IO[bytes],
        persistent_load: Callable[[Any], Any],
        **pickle_load_args: Any,
    ) -> None:
        super().__init__(file, **pickle_load_args)
        self._persistent_load = persistent_load

    def find_class(self, module: str, name: str) -> Any:
        module, name = _python3_name(module, name)
        full = f"{module}.{name}"
        mapped = _torch_globals().get(full)
        if mapped is not None:
            return mapped
        if module == "torch" or module.startswith("torch."):
            raise _Passthrough(
                pickle.UnpicklingError(
                    f"rustgrad.load: the file needs PyTorch's {full}, which rustgrad does not "
                    "provide (save state_dicts rather than whole modules)"
                )
            )
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError) as e:
            raise _Passthrough(e) from e

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent_load(pid)


def _storage_from_bytes(raw: bytes, dtype: str) -> Tensor:
    """A flat tensor of ``dtype`` holding the little-endian elements ``raw``."""
    import rustgrad

    array = np.frombuffer(raw, dtype=_NUMPY_DTYPES[dtype])
    if dtype == "bfloat16":
        # bfloat16 is the high half of a float32: widen exactly, then narrow back.
        widened = (array.astype(np.uint32) << 16).view(np.float32)
        return rustgrad.from_numpy(widened.copy()).to(rustgrad.bfloat16)
    return rustgrad.from_numpy(array.copy())


def _parse_storage_pid(pid: Any, legacy: bool) -> tuple[_StorageType, str, str, int]:
    fields = 6 if legacy else 5
    if not (isinstance(pid, tuple) and len(pid) == fields and pid[0] == "storage"):
        raise _CorruptedError(f"unknown persistent id {pid!r:.80}")
    storage_type, key, location, numel = pid[1:5]
    if not isinstance(storage_type, _StorageType) or not isinstance(numel, int) or numel < 0:
        raise _CorruptedError(f"bad storage record {pid!r:.80}")
    if legacy and pid[5] is not None:
        raise _CorruptedError("legacy storage views are not supported")
    if isinstance(location, bytes):
        location = location.decode("ascii")
    return storage_type, str(key), str(location), numel


def _zip_pickle_name(archive: zipfile.ZipFile) -> str:
    """The name of the object pickle of a zip checkpoint, ``<archive>/data.pkl``."""
    pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
    if len(pickles) != 1:
        raise _CorruptedError("no <archive>/data.pkl record")
    return pickles[0]


def _load_torch_zip(data: bytes, options: _LoadOptions) -> Any:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        pickled = _zip_pickle_name(archive)
        prefix = pickled[: -len("data.pkl")]
        names = set(archive.namelist())
        if f"{prefix}byteorder" in names and archive.read(f"{prefix}byteorder") != b"little":
            raise _CorruptedError("big-endian checkpoints are not supported")
        storages: dict[str, Tensor] = {}

        def persistent_load(pid: Any) -> Tensor:
            storage_type, key, location, numel = _parse_storage_pid(pid, legacy=False)
            if key not in storages:
                itemsize = np.dtype(_NUMPY_DTYPES[storage_type.dtype]).itemsize
                record = f"{prefix}data/{key}"
                if record not in names or archive.getinfo(record).file_size != numel * itemsize:
                    raise _CorruptedError(f"storage {key}: record missing or of the wrong size")
                raw = archive.read(record)
                storages[key] = options.restore(
                    _storage_from_bytes(raw, storage_type.dtype), location
                )
            return storages[key]

        unpickler = options.unpickler(io.BytesIO(archive.read(pickled)), persistent_load)
        return unpickler.load()


def _load_torch_legacy(data: bytes, options: _LoadOptions) -> Any:
    import rustgrad

    f = io.BytesIO(data)
    header_options = _LoadOptions(_default_restore_location, True, {"encoding": "utf-8"})

    def no_storages(pid: Any) -> Any:
        raise _CorruptedError("unexpected persistent id in the header")

    def header() -> Any:
        return header_options.unpickler(f, no_storages).load()

    if header() != _LEGACY_MAGIC_NUMBER:
        raise _CorruptedError("invalid magic number; corrupt file?")
    if header() != _LEGACY_PROTOCOL_VERSION:
        raise _CorruptedError("unsupported legacy protocol version")
    sys_info = header()
    if not isinstance(sys_info, dict) or not sys_info.get("little_endian", False):
        raise _CorruptedError("big-endian checkpoints are not supported")
    # Storages are written after the object: unpickle against empty storages, then
    # fill them in place (the tensors are views of them, as in PyTorch).
    storages: dict[str, tuple[Tensor, str]] = {}

    def persistent_load(pid: Any) -> Tensor:
        storage_type, key, location, numel = _parse_storage_pid(pid, legacy=True)
        if key not in storages:
            if numel > len(data):
                raise _CorruptedError(f"storage {key} is larger than the file")
            dtype = _dtypes()[storage_type.dtype]
            storage = options.restore(rustgrad.empty(numel, dtype=dtype), location)
            storages[key] = (storage, storage_type.dtype)
        return storages[key][0]

    result = options.unpickler(f, persistent_load).load()
    keys = header()
    if not isinstance(keys, list) or sorted(map(str, keys)) != sorted(storages):
        raise _CorruptedError("storage keys do not match the object's storages")
    for key in keys:
        storage, dtype = storages[str(key)]
        head = f.read(8)
        if len(head) != 8 or struct.unpack("<q", head)[0] != storage.numel():
            raise _CorruptedError(f"storage {key}: bad size record")
        nbytes = storage.numel() * np.dtype(_NUMPY_DTYPES[dtype]).itemsize
        raw = f.read(nbytes)
        if len(raw) != nbytes:
            raise _CorruptedError(f"storage {key} is truncated")
        with rustgrad.no_grad():
            storage.copy_(_storage_from_bytes(raw, dtype))
    if f.read(1):
        raise _CorruptedError("trailing bytes after the last storage")
    return result


# ------------------------------------------------------- writing PyTorch's formats


class _TorchGlobal:
    """A global of PyTorch's, pickled by name (``torch`` is not importable here)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:
        # Only pickled (pickle requires a reduce function to be callable), never called.
        raise TypeError(f"{self.module}.{self.name} is PyTorch's")


class _StorageRef:
    """A storage to write (zip: as ``<archive>/data/<key>``)."""

    def __init__(self, key: str, flat: Tensor) -> None:
        self.key, self.flat = key, flat


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")
_REBUILD_META = _TorchGlobal("torch._utils", "_rebuild_meta_tensor_no_storage")
_TORCH_SIZE = _TorchGlobal("torch", "Size")
_TORCH_DEVICE = _TorchGlobal("torch", "device")
_STORAGE_GLOBALS = {
    dtype: _TorchGlobal("torch", storage) for storage, dtype in _STORAGE_DTYPES.items()
}


class _TorchPickler(pickle._Pickler):  # type: ignore[name-defined]
    """Pickles as ``torch.save`` does: tensors with storages as persistent ids, and
    ``Size``, ``device`` and dtypes as PyTorch's.

    The pure-Python pickler, since PyTorch's globals must be written as globals of a
    module that is not installed.
    """

    dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file: IO[bytes], protocol: int, legacy: bool) -> None:
        super().__init__(file, protocol=protocol)
        self.legacy = legacy
        self.storages: dict[int, _StorageRef] = {}

    def persistent_id(self, obj: Any) -> Any:
        if not isinstance(obj, _StorageRef):
            return None
        dtype = str(obj.flat.dtype).removeprefix("torch.")
        pid = ("storage", _STORAGE_GLOBALS[dtype], obj.key, "cpu", obj.flat.numel())
        # The legacy format's view field (always None since PyTorch 1.x).
        return (*pid, None) if self.legacy else pid

    def reducer_override(self, obj: Any) -> Any:
        import rustgrad

        from ._size import Size

        if isinstance(obj, Size):
            return _TORCH_SIZE, (tuple(obj),)
        if isinstance(obj, rustgrad.device):
            return _TORCH_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index)
        if not isinstance(obj, Tensor):
            return NotImplemented
        if _is_parameter(obj):
            return _REBUILD_PARAMETER, (obj.detach(), obj.requires_grad, collections.OrderedDict())
        if obj.is_meta:
            # As PyTorch pickles a meta tensor: no storage.
            return _REBUILD_META, (obj.dtype, tuple(obj.shape), obj.stride(), obj.requires_grad)
        address, numel = _rustgrad._storage_info(obj)
        if address not in self.storages:
            flat = obj.detach().as_strided((numel,), (1,), 0)
            self.storages[address] = _StorageRef(str(len(self.storages)), flat)
        args = (
            self.storages[address],
            obj.storage_offset(),
            tuple(obj.shape),
            obj.stride(),
            obj.requires_grad,
            collections.OrderedDict(),
        )
        return _REBUILD_TENSOR, args

    def _write_global(self, module: str, name: str, obj: Any) -> None:
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)

    def _save_torch_global(self, obj: _TorchGlobal) -> None:
        self._write_global(obj.module, obj.name, obj)

    def _save_dtype(self, obj: Any) -> None:
        # torch.float32 pickles as the global torch.float32.
        self._write_global("torch", str(obj).removeprefix("torch."), obj)

    dispatch[_TorchGlobal] = _save_torch_global
    dispatch[_rustgrad.dtype] = _save_dtype


def _to_torch_bytes(obj: Any, protocol: int, legacy: bool) -> bytes:
    """``torch.save``'s bytes: the zip format, or the legacy one."""
    data = io.BytesIO()
    if legacy:
        for header in (_LEGACY_MAGIC_NUMBER, _LEGACY_PROTOCOL_VERSION, _LEGACY_SYS_INFO):
            pickle.dump(header, data, protocol=protocol)
    pickler = _TorchPickler(data, protocol, legacy)
    pickler.dump(obj)
    refs = list(pickler.storages.values())
    if legacy:
        refs.sort(key=lambda ref: ref.key)
        pickle.dump([ref.key for ref in refs], data, protocol=protocol)
        for ref in refs:
            data.write(struct.pack("<q", ref.flat.numel()))
            data.write(_rustgrad._tensor_bytes(ref.flat))
        return data.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", data.getvalue())
        archive.writestr("archive/byteorder", "little")
        for ref in refs:
            archive.writestr(f"archive/data/{ref.key}", _rustgrad._tensor_bytes(ref.flat))
        archive.writestr("archive/version", "3\n")
    return out.getvalue()
