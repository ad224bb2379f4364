"""Write the hostile-pickle corpus read by tests/python/test_serialization_hostile.py.

Run from the repository root; the standard library is enough (no PyTorch, no numpy):

    python tests/vectors/generate_hostile_pickles.py

and check that PyTorch refuses every file as ``cases.json`` says (PyTorch 2.15 in
.torch-venv; never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_hostile_pickles.py --check-torch

Each file is a checkpoint in PyTorch's zip format (``<name>.pt``: ``archive/data.pkl``,
``archive/byteorder``, ``archive/data/<key>``, ``archive/version``) or its legacy format
(``<name>_legacy.pt``: pickled magic number, protocol version and sys info, the object
pickle, the storage keys, the storages). Its object pickle is written by hand, opcode
by opcode (protocol 2, as ``torch.save`` writes), and attacks the weights-only
unpickler: BUILD on classes, on cached globals (the storage types, dtypes, rebuild
functions) and on what allowed callables return; REDUCE and NEWOBJ of callables that are
not allowed; SETITEM(S) and APPEND(S) on objects that are not dicts or lists; globals
that are not allowed or blocked; call opcodes PyTorch does not support (INST, OBJ,
EXT1); persistent ids that are not storages; the same attacks under deep nesting; huge
or negative storage sizes. Most files start with a legitimate tensor entry, so the
attack comes after a storage has been loaded.

``cases.json`` lists per file the exception ``torch.load(f, weights_only=True)`` raises
(its class name) and phrases its message contains, checked by ``--check-torch``. Where
PyTorch names one of its own classes in the message (``torch.serialization.StorageType``,
``torch.Tensor``), the phrase stops before the class, since rustgrad's is named
differently. Files are deterministic (fixed zip timestamps), so a rerun rewrites the
same bytes.
"""

from __future__ import annotations

import json
import pickle
import struct
import sys
import zipfile
from pathlib import Path
from typing import Callable

OUT = Path(__file__).resolve().parent / "hostile_pickles"

# PyTorch's legacy header (torch/serialization.py).
MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
SYS_INFO = {
    "protocol_version": 1001,
    "little_endian": True,
    "type_sizes": {"short": 2, "int": 4, "long": 4},
}

# ------------------------------------------------------------------ pickle opcodes


def glob(module: str, name: str) -> bytes:
    """GLOBAL module.name."""
    return pickle.GLOBAL + f"{module}\n{name}\n".encode()


def text(value: str) -> bytes:
    """BINUNICODE."""
    raw = value.encode()
    return pickle.BINUNICODE + struct.pack("<I", len(raw)) + raw


def num(value: int) -> bytes:
    """The shortest integer opcode for ``value`` (protocol 2)."""
    if 0 <= value < 256:
        return pickle.BININT1 + bytes([value])
    if -(2**31) <= value < 2**31:
        return pickle.BININT + struct.pack("<i", value)
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return pickle.LONG1 + bytes([len(raw)]) + raw


def tup(*items: bytes) -> bytes:
    return pickle.MARK + b"".join(items) + pickle.TUPLE if items else pickle.EMPTY_TUPLE


def dct(*pairs: tuple[bytes, bytes]) -> bytes:
    body = b"".join(k + v for k, v in pairs)
    return pickle.EMPTY_DICT + (pickle.MARK + body + pickle.SETITEMS if pairs else b"")


def call(func: bytes, *args: bytes) -> bytes:
    """REDUCE: ``func(*args)``."""
    return func + tup(*args) + pickle.REDUCE


def build(obj: bytes, state: bytes) -> bytes:
    return obj + state + pickle.BUILD


def slots(**attrs: bytes) -> bytes:
    """A BUILD state ``(None, {name: value})``: pickle setattr()s each name."""
    return tup(pickle.NONE, dct(*((text(k), v) for k, v in attrs.items())))


ENCODE = glob("_codecs", "encode")
ODICT = glob("collections", "OrderedDict")
COUNTER = glob("collections", "Counter")
FLOAT_STORAGE = glob("torch", "FloatStorage")


def storage(legacy: bool, key: str = "0", numel: int = 2, memo: int | None = None) -> bytes:
    """BINPERSID of PyTorch's storage record ``('storage', FloatStorage, key, 'cpu',
    numel)``; with ``memo``, the storage type is also put in the memo at that index."""
    kind = FLOAT_STORAGE + (b"" if memo is None else pickle.BINPUT + bytes([memo]))
    pid = [text("storage"), kind, text(key), text("cpu"), num(numel)]
    if legacy:
        pid.append(pickle.NONE)  # the view field
    return tup(*pid) + pickle.BINPERSID


def tensor(
    legacy: bool,
    key: str = "0",
    numel: int = 2,
    size: tuple[int, ...] = (2,),
    memo: int | None = None,
) -> bytes:
    """``torch._utils._rebuild_tensor_v2`` of a float32 storage."""
    strides, step = [], 1
    for n in reversed(size):
        strides.insert(0, step)
        step *= n
    return call(
        glob("torch._utils", "_rebuild_tensor_v2"),
        storage(legacy, key, numel, memo),
        num(0),
        tup(*map(num, size)),
        tup(*map(num, strides)),
        pickle.NEWFALSE,
        call(ODICT),
    )


def state_dict(legacy: bool, attack: bytes) -> bytes:
    """``{"w": <a float32 tensor>, "attack": <attack>}``."""
    return dct((text("w"), tensor(legacy)), (text("attack"), attack))


# ------------------------------------------------------------------------ the cases

BUILD_REFUSED = (
    "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
    "`add_safe_globals`, but got "
)
SETITEM_REFUSED = "for dict, collections.OrderedDict, collections.Counter, but got "
FAILED = "Weights only load failed"


class Case:
    """One hostile object pickle: ``body(legacy)`` and what PyTorch raises for it."""

    def __init__(
        self,
        name: str,
        body: Callable[[bool], bytes],
        phrase: str,
        *,
        error: str = "UnpicklingError",
        legacy: bool = False,
        zipped: bool = True,
        wrap: bool = True,
        storages: dict[str, bytes] | None = None,
    ) -> None:
        self.name, self.body, self.phrase, self.error = name, body, phrase, error
        self.legacy, self.zipped, self.wrap = legacy, zipped, wrap
        floats = struct.pack("<2f", 1.0, 2.0)
        self.storages = {"0": floats, "1": floats} if storages is None else storages

    def pickle(self, legacy: bool) -> bytes:
        body = self.body(legacy)
        if self.wrap:
            body = state_dict(legacy, body)
        return pickle.PROTO + b"\x02" + body + pickle.STOP


def deep(depth: int, attack: bytes) -> Callable[[bool], bytes]:
    """``attack`` inside ``depth`` nested lists (the lists are still open when it runs)."""
    return lambda legacy: pickle.EMPTY_LIST * depth + attack + pickle.APPEND * depth


def deep_marks(depth: int, attack: bytes) -> Callable[[bool], bytes]:
    """``attack`` inside ``depth`` nested tuples (MARK ... TUPLE)."""
    return lambda legacy: pickle.MARK * depth + attack + pickle.TUPLE * depth


def const(data: bytes) -> Callable[[bool], bytes]:
    return lambda legacy: data


def with_tensor(make: Callable[[bytes], bytes]) -> Callable[[bool], bytes]:
    """``make(<a float32 tensor>)``."""
    return lambda legacy: make(tensor(legacy, key="1"))


ONE_STORAGE = {"0": struct.pack("<2f", 1.0, 2.0)}
BYTEARRAY = call(glob("builtins", "bytearray"), call(ENCODE, text("ab"), text("latin1")))

CASES = [
    # BUILD on classes and on cached globals: these would change process state.
    Case(
        "build_counter_class",
        const(build(COUNTER, slots(most_common=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
        legacy=True,
    ),
    Case(
        "build_ordereddict_class",
        const(build(ODICT, slots(__repr__=ENCODE, keys=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    Case(
        "build_float_storage_type",
        const(build(FLOAT_STORAGE, dct((text("dtype"), text("int32"))))),
        BUILD_REFUSED,
        legacy=True,
    ),
    Case(
        "build_float_storage_type_slots",
        const(build(FLOAT_STORAGE, slots(dtype=text("int32"), _dtype=text("int32")))),
        BUILD_REFUSED,
    ),
    Case(
        # The storage type as the memo holds it after a storage record named it.
        "build_memoized_storage_type",
        lambda legacy: dct(
            (text("w"), tensor(legacy, memo=200)),
            (
                text("attack"),
                build(pickle.BINGET + bytes([200]), dct((text("dtype"), text("int32")))),
            ),
        ),
        BUILD_REFUSED,
        legacy=True,
        wrap=False,
    ),
    Case(
        "build_size_class",
        const(build(glob("torch", "Size"), slots(__len__=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    Case(
        "build_device_class",
        const(build(glob("torch", "device"), slots(__eq__=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    Case(
        "build_parameter_class",
        const(build(glob("torch.nn.parameter", "Parameter"), slots(__repr__=ENCODE))),
        BUILD_REFUSED,
        legacy=True,
    ),
    Case(
        "build_dtype",
        const(build(glob("torch", "float32"), slots(is_floating_point=pickle.NEWFALSE))),
        BUILD_REFUSED,
    ),
    Case(
        "build_rebuild_function_defaults",
        const(build(glob("torch._utils", "_rebuild_tensor_v2"), slots(__defaults__=tup(num(7))))),
        BUILD_REFUSED + "<class 'function'>",
        legacy=True,
    ),
    Case(
        "build_rebuild_function_dict",
        const(build(glob("torch._utils", "_rebuild_parameter"), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'function'>",
    ),
    Case(
        "build_codecs_encode",
        const(build(ENCODE, slots(__doc__=text("x")))),
        BUILD_REFUSED + "<class 'builtin_function_or_method'>",
    ),
    Case(
        "build_set_class",
        const(build(glob("builtins", "set"), slots(add=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    Case(
        "build_bytearray_class",
        const(build(glob("__builtin__", "bytearray"), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    Case(
        "build_complex_class",
        const(build(glob("builtins", "complex"), slots(real=num(0)))),
        BUILD_REFUSED + "<class 'type'>",
    ),
    # BUILD on what allowed callables and plain opcodes give.
    Case(
        "build_bytes_from_encode",
        const(build(call(ENCODE, text("ab"), text("latin1")), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'bytes'>",
        legacy=True,
    ),
    Case(
        "build_list",
        const(build(pickle.EMPTY_LIST, dct((text("append"), ENCODE)))),
        BUILD_REFUSED + "<class 'list'>",
    ),
    Case(
        "build_dict",
        const(build(pickle.EMPTY_DICT, slots(update=ENCODE))),
        BUILD_REFUSED + "<class 'dict'>",
    ),
    Case(
        "build_tuple",
        const(build(tup(num(1)), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'tuple'>",
    ),
    Case(
        "build_str",
        const(build(text("s"), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'str'>",
    ),
    Case(
        "build_int",
        const(build(num(3), dct((text("x"), num(1))))),
        BUILD_REFUSED + "<class 'int'>",
    ),
    # REDUCE and NEWOBJ of what is not an allowed callable.
    Case(
        "reduce_list",
        const(pickle.EMPTY_LIST + pickle.EMPTY_TUPLE + pickle.REDUCE),
        "Trying to call reduce for unrecognized function []",
        legacy=True,
    ),
    Case(
        "reduce_str",
        const(text("print") + tup(text("x")) + pickle.REDUCE),
        "Trying to call reduce for unrecognized function print",
    ),
    Case(
        "reduce_bytes_result",
        const(call(ENCODE, text("ab"), text("latin1")) + pickle.EMPTY_TUPLE + pickle.REDUCE),
        "Trying to call reduce for unrecognized function b'ab'",
    ),
    Case(
        "reduce_tensor",
        with_tensor(lambda t: t + pickle.EMPTY_TUPLE + pickle.REDUCE),
        "Trying to call reduce for unrecognized function",
    ),
    Case(
        "newobj_str",
        const(text("x") + pickle.EMPTY_TUPLE + pickle.NEWOBJ),
        "Can only create new object for nn.Parameter or classes allowlisted via "
        "`add_safe_globals` but got x",
    ),
    Case(
        "newobj_list",
        const(pickle.EMPTY_LIST + pickle.EMPTY_TUPLE + pickle.NEWOBJ),
        "Can only create new object for nn.Parameter or classes allowlisted via "
        "`add_safe_globals` but got []",
        legacy=True,
    ),
    # Globals that are not allowed, or blocked.
    Case(
        "global_getattr",
        const(call(glob("builtins", "getattr"), COUNTER, text("most_common"))),
        "Unsupported global: GLOBAL getattr was not an allowed global by default",
        legacy=True,
    ),
    Case(
        "global_setattr",
        const(call(glob("__builtin__", "setattr"), COUNTER, text("most_common"), ENCODE)),
        "Unsupported global: GLOBAL setattr was not an allowed global by default",
    ),
    Case(
        "global_posix_system",
        const(call(glob("posix", "system"), text("touch rustgrad_ckpt_pwned"))),
        "Trying to load unsupported GLOBAL posix.system whose module posix is blocked",
    ),
    Case(
        "global_sys_modules",
        const(glob("sys", "modules")),
        "Trying to load unsupported GLOBAL sys.modules whose module sys is blocked",
    ),
    Case(
        "global_import_module",
        const(call(glob("importlib", "import_module"), text("os"))),
        "Unsupported global: GLOBAL importlib.import_module was not an allowed global",
    ),
    Case(
        "global_copyreg_reconstructor",
        const(call(glob("copyreg", "_reconstructor"), COUNTER, glob("builtins", "dict"))),
        "Unsupported global: GLOBAL copyreg._reconstructor was not an allowed global",
    ),
    # SETITEM(S) and APPEND(S) on what is not a dict or a list.
    Case(
        "setitem_counter_class",
        const(COUNTER + text("most_common") + ENCODE + pickle.SETITEM),
        "Can only SETITEM " + SETITEM_REFUSED + "<class 'type'>",
        legacy=True,
    ),
    Case(
        "setitem_list",
        const(pickle.EMPTY_LIST + num(0) + num(1) + pickle.SETITEM),
        "Can only SETITEM " + SETITEM_REFUSED + "<class 'list'>",
    ),
    Case(
        "setitems_bytearray",
        const(BYTEARRAY + pickle.MARK + num(0) + num(65) + pickle.SETITEMS),
        "Can only SETITEMS " + SETITEM_REFUSED + "<class 'bytearray'>",
    ),
    Case(
        "setitems_storage_type",
        const(FLOAT_STORAGE + pickle.MARK + text("dtype") + text("int32") + pickle.SETITEMS),
        "Can only SETITEMS " + SETITEM_REFUSED,
    ),
    Case(
        "setitem_tensor",
        with_tensor(
            lambda t: t + num(0) + pickle.BINFLOAT + struct.pack(">d", 9.0) + pickle.SETITEM
        ),
        "Can only SETITEM " + SETITEM_REFUSED,
    ),
    Case(
        "append_bytearray",
        const(BYTEARRAY + num(65) + pickle.APPEND),
        "Can only append to lists, but got <class 'bytearray'>",
        legacy=True,
    ),
    Case(
        "appends_set",
        const(call(glob("builtins", "set")) + pickle.MARK + num(1) + pickle.APPENDS),
        "Can only extend lists, but got <class 'set'>",
    ),
    Case(
        "append_counter_class",
        const(COUNTER + num(1) + pickle.APPEND),
        "Can only append to lists, but got <class 'type'>",
    ),
    Case(
        "appends_dict",
        const(pickle.EMPTY_DICT + pickle.MARK + num(1) + pickle.APPENDS),
        "Can only extend lists, but got <class 'dict'>",
    ),
    # Call opcodes PyTorch does not support at all (protocols 0 and 1, extensions).
    Case(
        "inst_counter",
        const(pickle.MARK + text("a") + pickle.INST + b"collections\nCounter\n"),
        "Unsupported operand 105",
    ),
    Case(
        "obj_counter",
        const(pickle.MARK + COUNTER + text("a") + pickle.OBJ),
        "Unsupported operand 111",
    ),
    Case("ext1", const(pickle.EXT1 + b"\x01"), "Unsupported operand 130"),
    # Persistent ids that are not storages.
    Case(
        "persid_module",
        const(tup(text("module"), COUNTER, text("x"), text("y")) + pickle.BINPERSID),
        "Only persistent_load of storage is allowed",
        legacy=True,
    ),
    Case(
        "persid_str",
        const(text("storage") + pickle.BINPERSID),
        "persistent_load id must be tuple or int, but got <class 'str'>",
    ),
    # Deep nesting around an attack.
    Case(
        "deep_lists_build_counter",
        deep(20_000, build(COUNTER, slots(most_common=ENCODE))),
        BUILD_REFUSED + "<class 'type'>",
        legacy=True,
    ),
    Case(
        "deep_tuples_reduce",
        deep_marks(20_000, pickle.EMPTY_LIST + pickle.EMPTY_TUPLE + pickle.REDUCE),
        "Trying to call reduce for unrecognized function []",
    ),
    Case(
        "deep_dicts_setitem_storage_type",
        lambda legacy: (
            (pickle.EMPTY_DICT + text("k")) * 10_000
            + FLOAT_STORAGE
            + text("dtype")
            + text("int32")
            + pickle.SETITEM
            + pickle.SETITEM * 10_000
        ),
        "Can only SETITEM " + SETITEM_REFUSED,
    ),
    # Huge and negative storage and tensor sizes: refused before anything is allocated
    # (PyTorch: the zip record has the wrong size; its legacy reader tries to allocate
    # the 4 TiB and fails). A negative count only in the legacy format, where PyTorch
    # raises RuntimeError (its zip reader a TypeError of pybind11).
    Case(
        "storage_numel_huge",
        lambda legacy: tensor(legacy, numel=2**40),
        "",
        error="RuntimeError",
        legacy=True,
        wrap=False,
        storages=ONE_STORAGE,
    ),
    Case(
        "storage_numel_negative",
        lambda legacy: tensor(legacy, numel=-1),
        "",
        error="RuntimeError",
        legacy=True,
        zipped=False,
        wrap=False,
        storages=ONE_STORAGE,
    ),
    Case(
        "tensor_size_overflows",
        lambda legacy: tensor(legacy, size=(2**31, 2**31)),
        "",
        error="RuntimeError",
        legacy=True,
        wrap=False,
        storages=ONE_STORAGE,
    ),
    Case(
        "tensor_size_beyond_storage",
        lambda legacy: tensor(legacy, size=(2**40,)),
        "",
        error="RuntimeError",
        legacy=True,
        wrap=False,
        storages=ONE_STORAGE,
    ),
    Case(
        "tensor_size_negative",
        lambda legacy: tensor(legacy, size=(-1,)),
        "",
        error="RuntimeError",
        legacy=True,
        wrap=False,
        storages=ONE_STORAGE,
    ),
]

# ------------------------------------------------------------------------ the files

ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def zip_checkpoint(case: Case) -> bytes:
    import io

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:

        def put(name: str, data: bytes) -> None:
            archive.writestr(zipfile.ZipInfo(f"archive/{name}", ZIP_TIME), data)

        put("data.pkl", case.pickle(legacy=False))
        put("byteorder", b"little")
        for key, data in case.storages.items():
            put(f"data/{key}", data)
        put("version", b"3\n")
    return out.getvalue()


def legacy_checkpoint(case: Case) -> bytes:
    parts = [pickle.dumps(h, protocol=2) for h in (MAGIC_NUMBER, PROTOCOL_VERSION, SYS_INFO)]
    parts.append(case.pickle(legacy=True))
    parts.append(pickle.dumps(sorted(case.storages), protocol=2))
    for key in sorted(case.storages):
        data = case.storages[key]
        parts.append(struct.pack("<q", len(data) // 4) + data)
    return b"".join(parts)


def files() -> dict[str, tuple[bytes, Case]]:
    out = {}
    for case in CASES:
        if case.zipped:
            out[f"{case.name}.pt"] = (zip_checkpoint(case), case)
        if case.legacy:
            out[f"{case.name}_legacy.pt"] = (legacy_checkpoint(case), case)
    return out


def write() -> None:
    OUT.mkdir(exist_ok=True)
    manifest = []
    for name, (data, case) in sorted(files().items()):
        (OUT / name).write_bytes(data)
        phrases = [FAILED] if case.error == "UnpicklingError" else []
        phrases += [case.phrase] if case.phrase else []
        manifest.append({"file": name, "error": case.error, "phrases": phrases})
    (OUT / "cases.json").write_text(json.dumps({"cases": manifest}, indent=1) + "\n")
    print(f"wrote {len(manifest)} files to {OUT}")


def check_torch() -> None:
    import torch

    manifest = json.loads((OUT / "cases.json").read_text())["cases"]
    bad = 0
    for entry in manifest:
        try:
            torch.load(OUT / entry["file"], weights_only=True)
        except Exception as e:  # noqa: BLE001
            ok = type(e).__name__ == entry["error"] and all(p in str(e) for p in entry["phrases"])
            if not ok or "-v" in sys.argv:
                message = str(e)[-300:].replace("\n", " | ")
                print("ok " if ok else "BAD", entry["file"], type(e).__name__, message)
            bad += not ok
        else:
            print("BAD", entry["file"], "loaded")
            bad += 1
    print(f"{len(manifest) - bad}/{len(manifest)} files refused by torch.load as cases.json says")
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    if "--check-torch" in sys.argv:
        check_torch()
    else:
        write()
