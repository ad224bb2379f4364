"""Checkpoints: ``rustgrad.save`` and ``rustgrad.load``. See Note [Checkpoints].

``save`` writes a safetensors file (the Rust ``safetensors`` crate) whose header
metadata holds a JSON description of everything that is not tensor data: nested
dicts, lists and tuples, numbers, strings, views sharing a storage. The file is
written to a temporary file in the same directory, fsynced and renamed over the
target, so a crash or a full disk never leaves a half-written checkpoint.

``load`` reads those files, plain safetensors files, and PyTorch's ``torch.save``
files (the zip format and the legacy format) through a restricted unpickler that
accepts only the globals a tensor checkpoint needs and never runs code from the file.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import io
import json
import math
import os
import pickle
import struct
import uuid
import zipfile
from typing import IO, Any, Callable, Union

import numpy as np

from . import _rustgrad
from ._rustgrad import Tensor

__all__ = ["load", "save"]

FileLike = Union[str, "os.PathLike[str]", IO[bytes]]

# Header metadata keys of a rustgrad checkpoint. A file with neither is a foreign
# safetensors file (a flat dict of tensors); with only one it is corrupted.
_STRUCTURE_KEY = "rustgrad"
_CHECKSUM_KEY = "rustgrad_sha256"
# What PyTorch's legacy format starts with (torch/serialization.py).
_LEGACY_MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL_VERSION = 1001


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
    format: str = "safetensors",
) -> None:
    """Saves ``obj`` (tensors, state_dicts, optimizer states, nested containers) to ``f``.

    By default the file is a safetensors file readable by any safetensors reader (each
    tensor that owns its whole storage is stored under its path, e.g.
    ``model.fc.weight``), plus a JSON description of the structure in its header.
    ``format="torch"`` writes PyTorch's zip format instead, which ``torch.load`` reads
    (with ``weights_only=True``). Views that share a storage are saved once, with
    their sizes, strides and offsets, and load sharing storage again, as with
    ``torch.save``. Writing to a path is atomic.

    Args:
        obj: a tensor, or dicts (any int/str/float/bool/None keys), lists and tuples
            of tensors, ints, floats, strings, bools, None, dtypes and ``Size``.
        f: a path, or a binary file object (written in one ``write`` call).
        pickle_module: accepted for PyTorch compatibility; must be None or ``pickle``.
        pickle_protocol: accepted for PyTorch compatibility; unused.
        _use_new_zipfile_serialization: must be True (rustgrad does not write PyTorch's
            legacy format).
        format: ``"safetensors"`` (default) or ``"torch"``.

    Example:
        >>> rustgrad.save({"model": model.state_dict(), "epoch": 3}, "ckpt.pt")
        >>> rustgrad.load("ckpt.pt")["epoch"]
        3
    """
    del pickle_protocol
    if pickle_module not in (None, pickle):
        raise TypeError("rustgrad.save: pickle_module is not supported")
    if not _use_new_zipfile_serialization:
        raise ValueError("rustgrad.save does not write PyTorch's legacy format")
    if format == "safetensors":
        data = _to_safetensors_bytes(obj)
    elif format == "torch":
        data = _to_torch_zip_bytes(obj)
    else:
        raise ValueError(f'rustgrad.save: format must be "safetensors" or "torch", got {format!r}')
    if hasattr(f, "write"):
        _write_file(f, data)  # type: ignore[arg-type]
        return
    _atomic_write(os.fspath(f), data)  # type: ignore[arg-type]


class _Encoder:
    """Turns an object into a JSON-able node tree and a list of tensors."""

    def __init__(self) -> None:
        self.tensors: list[tuple[str, Tensor]] = []
        self.tensor_nodes: list[dict[str, Any]] = []

    def encode(self, obj: Any, path: str) -> Any:
        from ._size import Size

        if isinstance(obj, Tensor):
            node: dict[str, Any] = {
                "requires_grad": bool(obj.requires_grad),
                "parameter": _is_parameter(obj),
            }
            self.tensors.append((path or "tensor", obj.detach()))
            self.tensor_nodes.append(node)
            return node
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, Size):
            return {"size": list(obj)}
        if isinstance(obj, type(_dtypes()["float32"])):
            return {"dtype": str(obj).removeprefix("torch.")}
        if isinstance(obj, (list, tuple)):
            items = [self.encode(v, _join(path, str(i))) for i, v in enumerate(obj)]
            return {"list" if isinstance(obj, list) else "tuple": items}
        if isinstance(obj, dict):
            for key in obj:
                if not (key is None or isinstance(key, (bool, int, float, str))):
                    raise TypeError(
                        f"rustgrad.save: dict keys must be str, int, float, bool or None, "
                        f"got {type(key).__name__}"
                    )
            kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
            items = [
                [self.encode(k, ""), self.encode(v, _join(path, str(k)))] for k, v in obj.items()
            ]
            return {kind: items}
        raise TypeError(
            f"rustgrad.save: cannot save an object of type {type(obj).__name__} (supported: "
            "tensors, dicts, lists, tuples, int, float, str, bool, None, dtype, Size)"
        )


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
    weights_only: bool = True,
    mmap: Any = None,
    **pickle_load_args: Any,
) -> Any:
    """Loads what ``rustgrad.save`` or ``torch.save`` wrote to ``f``.

    Reads rustgrad checkpoints, plain safetensors files (as a dict of tensors) and
    PyTorch's ``.pt``/``.pth`` files in the zip and the legacy format holding tensors,
    state_dicts, optimizer states and containers of plain values. PyTorch files go
    through a restricted unpickler: a file asking for any other global (``os.system``,
    ``builtins.eval``, ...) is refused with ``pickle.UnpicklingError`` naming the
    global, and nothing in the file runs.

    Args:
        f: a path, or a binary file object.
        map_location: None, ``"cpu"``, a CPU ``device``, a dict of locations or a
            callable: rustgrad runs on the CPU, so every storage is loaded there and
            a dict or callable is not consulted.
        pickle_module: accepted for PyTorch compatibility; must be None or ``pickle``.
        weights_only: accepted for PyTorch compatibility. rustgrad always loads as
            PyTorch's ``weights_only=True`` does (never running code from a file).
        mmap: accepted for PyTorch compatibility; the file is always read.

    Returns:
        The saved object, with tensors loaded on the CPU.

    Raises:
        RuntimeError: the file is truncated, corrupted or not a checkpoint (the
            message names the file); nothing is returned, so nothing is half loaded.
        pickle.UnpicklingError: a PyTorch file asks for a global that a tensor
            checkpoint does not need.

    Example:
        >>> model.load_state_dict(rustgrad.load("ckpt.pt")["model"])
    """
    del weights_only, mmap, pickle_load_args
    if pickle_module not in (None, pickle):
        raise TypeError("rustgrad.load: pickle_module is not supported")
    _check_map_location(map_location)
    if hasattr(f, "read"):
        name = getattr(f, "name", repr(f))
        data = f.read()  # type: ignore[union-attr]
    else:
        name = os.fspath(f)  # type: ignore[arg-type]
        with open(name, "rb") as file:
            data = file.read()
    try:
        # A safetensors file starts with its header's length (8 bytes) and then "{";
        # the legacy format starts with a pickle (PROTO opcode, \x80).
        if data[:4] == b"PK\x03\x04":
            return _load_torch_zip(data, map_location)
        if data[:1] == b"\x80" and data[8:9] != b"{":
            return _load_torch_legacy(data, map_location)
        return _load_safetensors(data)
    except _UnsupportedGlobal:
        raise
    except Exception as e:
        raise _corrupted(name, e) from e


def _corrupted(name: str, error: BaseException) -> RuntimeError:
    return RuntimeError(
        f"rustgrad.load: {name} is truncated, corrupted or not a checkpoint "
        f"({type(error).__name__}: {error})"
    )


class _CorruptedError(Exception):
    """An inconsistency found while decoding (wrapped by ``load`` with the file name)."""


def _load_safetensors(data: bytes) -> Any:
    metadata, loaded = _rustgrad._safetensors_deserialize(data)
    entries = dict(loaded)
    if _STRUCTURE_KEY not in metadata and _CHECKSUM_KEY not in metadata:
        return collections.OrderedDict(loaded)
    structure = metadata.get(_STRUCTURE_KEY)
    if structure is None or metadata.get(_CHECKSUM_KEY) != _checksum(structure, entries):
        raise _CorruptedError("checksum mismatch")
    return _Decoder(entries).decode(json.loads(structure))


class _Decoder:
    """Rebuilds an object from the node tree written by ``_Encoder``."""

    def __init__(self, entries: dict[str, Tensor]) -> None:
        self.entries = entries

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and "requires_grad" in node:
            return self.tensor(node)
        if not isinstance(node, dict) or len(node) != 1:
            raise _CorruptedError(f"bad structure node {node!r:.80}")
        ((kind, value),) = node.items()
        if kind in ("list", "tuple"):
            items = [self.decode(v) for v in value]
            return items if kind == "list" else tuple(items)
        if kind in ("dict", "odict"):
            pairs = [(self.decode(k), self.decode(v)) for k, v in value]
            return dict(pairs) if kind == "dict" else collections.OrderedDict(pairs)
        if kind == "float":
            return float(value)
        if kind == "size":
            from ._size import Size

            return Size(value)
        if kind == "dtype":
            return _dtypes()[value]
        raise _CorruptedError(f"unknown structure node {kind!r:.40}")

    def tensor(self, node: dict[str, Any]) -> Tensor:
        t = self.entries[node["tensor"]]
        if "shape" in node:
            t = t.as_strided(node["shape"], node["stride"], node["offset"])
        return _finish_tensor(t, node["requires_grad"], node["parameter"])


def _finish_tensor(t: Tensor, requires_grad: bool, parameter: bool) -> Tensor:
    if parameter:
        from .nn.parameter import Parameter

        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


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
    """What ``torch.FloatStorage`` and its siblings unpickle to: an element type."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype


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
    if not isinstance(storage, Tensor):
        raise _CorruptedError("_rebuild_tensor_v2 expects a storage")
    t = storage.as_strided(tuple(size), tuple(stride), storage_offset)
    return _finish_tensor(t, bool(requires_grad), parameter=False)


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks: Any) -> Tensor:
    """``torch._utils._rebuild_parameter``."""
    del backward_hooks
    return _finish_tensor(data.detach(), bool(requires_grad), parameter=True)


def _rebuild_parameter_with_state(
    data: Tensor, requires_grad: bool, backward_hooks: Any, state: Any
) -> Tensor:
    """``torch._utils._rebuild_parameter_with_state`` (the state is dropped)."""
    del state
    return _rebuild_parameter(data, requires_grad, backward_hooks)


def _allowed_globals() -> dict[tuple[str, str], Any]:
    allowed: dict[tuple[str, str], Any] = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    }
    for storage, dtype in _STORAGE_DTYPES.items():
        allowed[("torch", storage)] = _StorageType(dtype)
    return allowed


class _UnsupportedGlobal(pickle.UnpicklingError):
    """A pickle asked for a global that a tensor checkpoint does not need."""


class _RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals of a tensor checkpoint.

    Any other global (a function or class that unpickling would call) is refused
    before it is even imported, with PyTorch's weights-only message.
    """

    def __init__(self, file: IO[bytes], persistent_load: Callable[[Any], Any]) -> None:
        super().__init__(file)
        self._persistent_load = persistent_load
        self._allowed = _allowed_globals()

    def find_class(self, module: str, name: str) -> Any:
        try:
            return self._allowed[(module, name)]
        except KeyError:
            raise _UnsupportedGlobal(
                "Weights only load failed. WeightsUnpickler error: Unsupported global: "
                f"GLOBAL {module}.{name} was not an allowed global by default. "
                "rustgrad.load accepts only the globals of tensor checkpoints and never "
                "runs code from a file."
            ) from None

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


def _check_map_location(map_location: Any) -> None:
    if map_location is None or isinstance(map_location, dict) or callable(map_location):
        return
    if str(map_location) != "cpu":
        raise RuntimeError(
            f"rustgrad.load: map_location={map_location!r}: rustgrad runs on the CPU only"
        )


def _parse_storage_pid(pid: Any, legacy: bool) -> tuple[_StorageType, str, str, int]:
    fields = 6 if legacy else 5
    if not (isinstance(pid, tuple) and len(pid) == fields and pid[0] == "storage"):
        raise _CorruptedError(f"unknown persistent id {pid!r:.80}")
    storage_type, key, location, numel = pid[1:5]
    if not isinstance(storage_type, _StorageType) or not isinstance(numel, int) or numel < 0:
        raise _CorruptedError(f"bad storage record {pid!r:.80}")
    if legacy and pid[5] is not None:
        raise _CorruptedError("legacy storage views are not supported")
    return storage_type, str(key), str(location), numel


def _load_torch_zip(data: bytes, map_location: Any) -> Any:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        pickles = [n for n in archive.namelist() if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise _CorruptedError("no <archive>/data.pkl record")
        prefix = pickles[0][: -len("data.pkl")]
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
                storages[key] = _storage_from_bytes(raw, storage_type.dtype)
            return storages[key]

        unpickler = _RestrictedUnpickler(io.BytesIO(archive.read(pickles[0])), persistent_load)
        return unpickler.load()


def _load_torch_legacy(data: bytes, map_location: Any) -> Any:
    import rustgrad

    f = io.BytesIO(data)

    def no_storages(pid: Any) -> Any:
        raise _CorruptedError("unexpected persistent id in the header")

    def header() -> Any:
        return _RestrictedUnpickler(f, no_storages).load()

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
            storages[key] = (rustgrad.empty(numel, dtype=dtype), storage_type.dtype)
        return storages[key][0]

    result = _RestrictedUnpickler(f, persistent_load).load()
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


# ------------------------------------------------------- writing PyTorch's zip


class _TorchGlobal:
    """A global of PyTorch's, pickled by name (``torch`` is not importable here)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:
        # Only pickled (pickle requires a reduce function to be callable), never called.
        raise TypeError(f"{self.module}.{self.name} is PyTorch's")


class _StorageRef:
    """A storage to write as ``<archive>/data/<key>``."""

    def __init__(self, key: str, flat: Tensor) -> None:
        self.key, self.flat = key, flat


_REBUILD_TENSOR = _TorchGlobal("torch._utils", "_rebuild_tensor_v2")
_REBUILD_PARAMETER = _TorchGlobal("torch._utils", "_rebuild_parameter")
_STORAGE_GLOBALS = {
    dtype: _TorchGlobal("torch", storage) for storage, dtype in _STORAGE_DTYPES.items()
}


class _TorchPickler(pickle._Pickler):  # type: ignore[name-defined]
    """Pickles tensors the way ``torch.save`` does, with storages as persistent ids.

    The pure-Python pickler, since PyTorch's rebuild functions must be written as
    globals of a module that is not installed.
    """

    dispatch = dict(pickle._Pickler.dispatch)  # type: ignore[attr-defined]

    def __init__(self, file: IO[bytes]) -> None:
        super().__init__(file, protocol=2)
        self.storages: dict[int, _StorageRef] = {}

    def persistent_id(self, obj: Any) -> Any:
        if isinstance(obj, _StorageRef):
            dtype = str(obj.flat.dtype).removeprefix("torch.")
            return ("storage", _STORAGE_GLOBALS[dtype], obj.key, "cpu", obj.flat.numel())
        return None

    def reducer_override(self, obj: Any) -> Any:
        if not isinstance(obj, Tensor):
            return NotImplemented
        if _is_parameter(obj):
            return _REBUILD_PARAMETER, (obj.detach(), obj.requires_grad, collections.OrderedDict())
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

    def _save_torch_global(self, obj: _TorchGlobal) -> None:
        self.write(pickle.GLOBAL + f"{obj.module}\n{obj.name}\n".encode())
        self.memoize(obj)

    dispatch[_TorchGlobal] = _save_torch_global


def _to_torch_zip_bytes(obj: Any) -> bytes:
    _Encoder().encode(obj, "")  # the same objects as the default format, or TypeError
    data = io.BytesIO()
    pickler = _TorchPickler(data)
    pickler.dump(obj)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", data.getvalue())
        archive.writestr("archive/byteorder", "little")
        for ref in pickler.storages.values():
            archive.writestr(f"archive/data/{ref.key}", _rustgrad._tensor_bytes(ref.flat))
        archive.writestr("archive/version", "3\n")
    return out.getvalue()
