"""Hostile pickles: ``rustgrad.load(..., weights_only=True)`` refuses them as PyTorch does
and no class, function, module or cached storage type changes. See Note [Checkpoints].

The corpus (tests/vectors/hostile_pickles/, zip and legacy checkpoints) is written by
tests/vectors/generate_hostile_pickles.py with the standard library; its ``cases.json``
holds the exception class and the message phrases of ``torch.load(f, weights_only=True)``
for each file, checked with PyTorch 2.15 by the script's ``--check-torch``.
"""

from __future__ import annotations

import codecs
import collections
import io
import json
import pickle
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import rustgrad
import rustgrad.nn as nn
from rustgrad import _weights_only_unpickler, serialization
from rustgrad._size import Size

HOSTILE = Path(__file__).resolve().parents[1] / "vectors" / "hostile_pickles"
CASES = {case["file"]: case for case in json.loads((HOSTILE / "cases.json").read_text())["cases"]}


# ------------------------------------------------------------- process state snapshot


def reachable() -> dict[str, Any]:
    """Everything a weights-only load can reach or that pickle's opcodes could modify:
    the allowed globals (classes, functions, dtypes, cached storage types), the classes of
    what they return, and the modules that define them."""
    objects: dict[str, Any] = {}
    for name, obj in serialization._torch_globals().items():
        objects[f"torch_globals:{name}"] = obj
    for name, obj in serialization._SAFE_BUILTINS.items():
        objects[f"safe_builtins:{name}"] = obj
    for cls in (
        collections.OrderedDict,
        collections.Counter,
        dict,
        list,
        tuple,
        set,
        frozenset,
        bytes,
        bytearray,
        complex,
        str,
        int,
        float,
        type,
        object,
        rustgrad.Tensor,
        nn.Parameter,
        Size,
        rustgrad.device,
        type(rustgrad.float32),
        serialization._StorageType,
        serialization._Unpickler,
        _weights_only_unpickler.WeightsOnlyUnpickler,
        pickle._Unpickler,  # type: ignore[attr-defined]
    ):
        objects[f"class:{cls.__module__}.{cls.__qualname__}"] = cls
    for module in (
        serialization,
        _weights_only_unpickler,
        rustgrad,
        collections,
        codecs,
        sys.modules["_codecs"],
        pickle,
        sys.modules["builtins"],
    ):
        objects[f"module:{module.__name__}"] = module
    return objects


def state_of(obj: Any) -> dict[str, Any]:
    """The attributes of ``obj`` that a BUILD, SETITEM or APPEND could change: its
    ``vars()`` (by identity, plus the contents of dict, list and set values), a
    function's defaults and code, a storage type's dtype, a dtype's name."""
    state: dict[str, Any] = {}
    try:
        attributes = dict(vars(obj))
    except TypeError:
        attributes = {}
    attributes.pop("__warningregistry__", None)
    for key, value in attributes.items():
        state[f"vars.{key}"] = id(value)
        if type(value) in (dict, collections.OrderedDict):
            state[f"items.{key}"] = [(k, id(v)) for k, v in value.items()]
        elif type(value) in (list, set):
            state[f"items.{key}"] = sorted(map(id, value))
    if isinstance(obj, types.FunctionType):
        state["defaults"] = obj.__defaults__
        state["kwdefaults"] = obj.__kwdefaults__
        state["code"] = id(obj.__code__)
    if isinstance(obj, serialization._StorageType):
        state["dtype"] = obj.dtype
    if isinstance(obj, type(rustgrad.float32)):
        state["str"] = str(obj)
        state["is_floating_point"] = obj.is_floating_point
    return state


def snapshot() -> dict[str, dict[str, Any]]:
    return {name: state_of(obj) for name, obj in reachable().items()}


def changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> list[str]:
    out = []
    for name in sorted(set(before) | set(after)):
        old, new = before.get(name, {}), after.get(name, {})
        out += [f"{name}: {k}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return out


def legitimate_checkpoint() -> bytes:
    """A float32 and an int64 tensor, a Counter and an OrderedDict, saved as torch.save
    would (zip format)."""
    f = io.BytesIO()
    obj = {
        "w": rustgrad.tensor([1.5, -2.0]),
        "n": rustgrad.tensor([3, 4]),
        "c": collections.Counter("aab"),
        "od": collections.OrderedDict(a=1),
    }
    rustgrad.save(obj, f, format="torch")
    return f.getvalue()


def assert_legitimate_checkpoint_loads() -> None:
    back = rustgrad.load(io.BytesIO(legitimate_checkpoint()))
    assert back["w"].dtype == rustgrad.float32 and back["w"].tolist() == [1.5, -2.0]
    assert back["n"].dtype == rustgrad.int64 and back["n"].tolist() == [3, 4]
    assert back["c"].most_common(1) == [("a", 2)]
    assert type(back["od"]) is collections.OrderedDict and back["od"] == {"a": 1}


# ------------------------------------------------------------------------ the corpus


def test_corpus_is_complete():
    files = {p.name for p in HOSTILE.glob("*.pt")}
    assert files == set(CASES) and len(files) >= 30
    assert any(name.endswith("_legacy.pt") for name in files)
    assert any(not name.endswith("_legacy.pt") for name in files)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_pickle_is_refused_as_pytorch_refuses_it(name, tmp_path, monkeypatch):
    case = CASES[name]
    monkeypatch.chdir(tmp_path)  # where an os.system payload would write
    before = snapshot()
    with pytest.raises(Exception) as info:
        rustgrad.load(HOSTILE / name, weights_only=True)
    assert type(info.value).__name__ == case["error"], repr(info.value)
    for phrase in case["phrases"]:
        assert phrase in str(info.value)
    if case["error"] == "RuntimeError":
        assert "truncated, corrupted or not a checkpoint" in str(info.value)
        assert name in str(info.value)
    assert changes(before, snapshot()) == []
    assert list(tmp_path.iterdir()) == []
    assert_legitimate_checkpoint_loads()


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_pickle_is_refused_from_a_file_object(name):
    # The same refusal when the bytes come from a file object, as torch.load accepts.
    with pytest.raises(Exception) as info:
        rustgrad.load(io.BytesIO((HOSTILE / name).read_bytes()))
    assert type(info.value).__name__ == CASES[name]["error"]


# ---------------------------------------------------------------- the two attacks


@pytest.mark.parametrize(
    "name",
    [
        "build_float_storage_type.pt",
        "build_float_storage_type_legacy.pt",
        "build_float_storage_type_slots.pt",
        "build_memoized_storage_type.pt",
        "setitems_storage_type.pt",
    ],
)
def test_storage_type_attack_leaves_float32_checkpoints_float32(name):
    # Once made every later float32 storage load as int32 garbage.
    for _ in range(2):
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            rustgrad.load(HOSTILE / name)
    assert serialization._torch_globals()["torch.FloatStorage"].dtype == "float32"
    assert_legitimate_checkpoint_loads()


@pytest.mark.parametrize(
    "name",
    [
        "build_float_storage_type.pt",
        "build_float_storage_type_slots.pt",
        "build_memoized_storage_type_legacy.pt",
    ],
)
def test_storage_types_are_immutable_even_with_weights_only_false(name):
    # weights_only=False runs the file's code (the user's opt-in), but the storage types
    # that every later load shares cannot be changed by a BUILD.
    with pytest.raises(RuntimeError, match="immutable|has no attribute '__dict__'"):
        rustgrad.load(HOSTILE / name, weights_only=False)
    assert serialization._torch_globals()["torch.FloatStorage"].dtype == "float32"
    assert_legitimate_checkpoint_loads()


@pytest.mark.parametrize(
    "name",
    ["build_counter_class.pt", "build_counter_class_legacy.pt", "deep_lists_build_counter.pt"],
)
def test_counter_attack_leaves_counter_intact(name):
    # Once replaced Counter.most_common by _codecs.encode in the whole process.
    most_common = collections.Counter.most_common
    with pytest.raises(pickle.UnpicklingError, match="but got <class 'type'>"):
        rustgrad.load(HOSTILE / name)
    assert collections.Counter.most_common is most_common
    assert collections.Counter("abb").most_common(1) == [("b", 2)]


def test_refusal_message_has_pytorchs_form():
    with pytest.raises(pickle.UnpicklingError) as info:
        rustgrad.load(HOSTILE / "build_counter_class.pt")
    message = str(info.value)
    assert message.startswith("Weights only load failed.")
    assert "`weights_only` set to `False` will likely succeed" in message
    assert message.endswith(
        "WeightsUnpickler error: Can only build Tensor, Parameter, OrderedDict or types "
        "allowlisted via `add_safe_globals`, but got <class 'type'>"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__


# -------------------------------------------------- what stays allowed (as PyTorch)


def zip_of(pickled: bytes) -> io.BytesIO:
    import zipfile

    f = io.BytesIO()
    with zipfile.ZipFile(f, "w") as archive:
        archive.writestr("archive/data.pkl", pickled)
        archive.writestr("archive/byteorder", "little")
    f.seek(0)
    return f


def test_build_on_ordereddict_instances_sets_their_attributes():
    # state_dict()'s _metadata travels as a BUILD on the OrderedDict (PyTorch allows it).
    back = rustgrad.load(Path(__file__).resolve().parents[1] / "vectors" / "ckpt_resnet_zip.pt")
    assert back["model"]._metadata["conv1"] == {"version": 1}
    od = collections.OrderedDict(a=1)
    od.note = "x"  # type: ignore[attr-defined]
    f = io.BytesIO()
    rustgrad.save(od, f, format="torch")
    f.seek(0)
    back = rustgrad.load(f)
    assert back == {"a": 1} and back.note == "x"
    assert not hasattr(collections.OrderedDict, "note")


def test_build_on_instances_of_allowlisted_types():
    # BUILD on an instance of an allowed type sets its own attributes only (pickle's
    # dict and slot state), as in PyTorch.
    pickled = (
        b"\x80\x02ccollections\nCounter\n"
        + pickle.EMPTY_TUPLE
        + pickle.REDUCE
        + pickle.EMPTY_DICT
        + pickle.BINUNICODE
        + b"\x03\x00\x00\x00tag"
        + pickle.BINUNICODE
        + b"\x04\x00\x00\x00mine"
        + pickle.SETITEM
        + pickle.EMPTY_DICT
        + pickle.BINUNICODE
        + b"\x04\x00\x00\x00slot"
        + pickle.NEWTRUE
        + pickle.SETITEM
        + pickle.TUPLE2
        + pickle.BUILD
        + pickle.STOP
    )
    back = rustgrad.load(zip_of(pickled))
    assert type(back) is collections.Counter and back == {}
    assert back.tag == "mine" and back.slot is True
    assert not hasattr(collections.Counter, "tag") and not hasattr(collections.Counter, "slot")


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_value_opcodes_of_every_protocol_load_with_weights_only(protocol):
    # FRAME, MEMOIZE, SHORT_BINUNICODE, BINBYTES, EMPTY_SET + ADDITEMS, FROZENSET (newer
    # protocols) only build plain values, so they load, unlike in PyTorch's reader.
    x = rustgrad.arange(6.0).reshape(2, 3)
    obj = {
        "x": x,
        "row": x[1],
        "p": nn.Parameter(rustgrad.ones(2)),
        "plain": [1, 2.5, "s", None, (3, 4), {1: True}, b"\x00\xff", bytearray(b"ab")],
        "set": {1, 2},
        "frozen": frozenset({3}) if protocol >= 4 else None,
        "od": collections.OrderedDict(a=1),
        "size": Size([2, 3]),
        "dtype": rustgrad.float16,
    }
    f = io.BytesIO()
    rustgrad.save(obj, f, format="torch", pickle_protocol=protocol)
    f.seek(0)
    back = rustgrad.load(f, weights_only=True)
    assert back["x"].tolist() == x.tolist() and back["row"].tolist() == [3.0, 4.0, 5.0]
    assert type(back["p"]) is nn.Parameter and back["p"].requires_grad
    assert back["plain"] == obj["plain"] and back["set"] == {1, 2}
    assert back["frozen"] == obj["frozen"] and back["od"] == {"a": 1}
    assert type(back["size"]) is Size and back["dtype"] is rustgrad.float16
    back["x"][1, 0] = 9.0
    assert back["row"][0].item() == 9.0


def test_additems_only_on_sets():
    # Protocol 4's ADDITEMS on a frozenset would mutate an immutable value; on a set it
    # is how protocol 4 pickles sets.
    pickled = (
        b"\x80\x04"
        + pickle.EMPTY_LIST
        + pickle.MARK
        + pickle.BININT1
        + b"\x01"
        + pickle.ADDITEMS
        + pickle.STOP
    )
    with pytest.raises(pickle.UnpicklingError, match="Can only add items to sets"):
        rustgrad.load(zip_of(pickled))
    ok = b"\x80\x04" + pickle.EMPTY_SET + pickle.MARK + pickle.BININT1 + b"\x07"
    assert rustgrad.load(zip_of(ok + pickle.ADDITEMS + pickle.STOP)) == {7}


def test_newobj_of_an_allowed_class_and_of_parameter():
    # NEWOBJ creates allowed classes (Counter.__new__) and Parameters (constructor).
    counter = b"\x80\x02ccollections\nCounter\n" + pickle.EMPTY_TUPLE + pickle.NEWOBJ
    back = rustgrad.load(zip_of(counter + pickle.STOP))
    assert type(back) is collections.Counter and back == {}
    with pytest.raises(pickle.UnpicklingError, match="Can only create new object"):
        rustgrad.load(zip_of(b"\x80\x02" + pickle.NONE + pickle.EMPTY_TUPLE + pickle.NEWOBJ))


def test_build_on_a_tensor_is_refused():
    # PyTorch's pre-1.0 tensor pickles set a tensor's storage with BUILD; torch.save
    # and rustgrad rebuild tensors with REDUCE. A BUILD on a tensor is refused.
    f = io.BytesIO()
    rustgrad.save(rustgrad.ones(2), f, format="torch")
    import zipfile

    with zipfile.ZipFile(f) as archive:
        records = {n: archive.read(n) for n in archive.namelist()}
    pickled = records["archive/data.pkl"]
    assert pickled.endswith(b".")
    records["archive/data.pkl"] = pickled[:-1] + pickle.EMPTY_DICT + pickle.BUILD + pickle.STOP
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for n, data in records.items():
            archive.writestr(n, data)
    out.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="BUILD of a tensor"):
        rustgrad.load(out)


@pytest.mark.usefixtures("clean_safe_globals")
def test_allowlisting_a_class_does_not_allow_building_the_class_itself():
    serialization.add_safe_globals([collections.defaultdict])
    pickled = (
        b"\x80\x02ccollections\ndefaultdict\n"
        + pickle.NONE
        + pickle.EMPTY_DICT
        + pickle.TUPLE2
        + pickle.BUILD
        + pickle.STOP
    )
    with pytest.raises(pickle.UnpicklingError, match="but got <class 'type'>"):
        rustgrad.load(zip_of(pickled))


@pytest.fixture
def clean_safe_globals():
    serialization.clear_safe_globals()
    yield
    serialization.clear_safe_globals()
