"""The unpickler of ``rustgrad.load(..., weights_only=True)``. See Note [Checkpoints].

Restricting ``find_class`` is not enough: pickle's BUILD, SETITEM(S), APPEND(S) and
ADDITEMS opcodes call methods of whatever object is on the stack, and an allowed global
is a shared object (a class, a function, a cached storage type). A file doing
``collections.Counter`` + BUILD ``(None, {"most_common": _codecs.encode})`` would
replace ``Counter.most_common`` in the whole process. So this unpickler runs only the
opcodes it knows, and checks every opcode that calls or mutates an object, with the
rules of PyTorch's weights-only unpickler (``torch/_weights_only_unpickler.py``):

- GLOBAL / STACK_GLOBAL resolve through ``find_global`` (the allowlist);
- REDUCE calls only an allowed global; NEWOBJ (and NEWOBJ_EX) creates only an allowed
  class (``Parameter`` through its constructor);
- BUILD only on an ``OrderedDict`` (its instance ``__dict__``) or on an instance whose
  type is allowed (its ``__setstate__``, or pickle's dict and slot state); never on a
  class, a function, a dtype or a storage type, since those are shared by the process;
- SETITEM(S) only on a ``dict``, ``OrderedDict`` or ``Counter``; APPEND(S) only on a
  ``list``; ADDITEMS (protocol 4) only on a ``set`` (all by exact type);
- BINPERSID only with a storage record (a tuple starting with ``"storage"``) or an int;
- INST, OBJ, EXT1/2/4, PERSID and the out-of-band buffer opcodes are refused (no
  Python 3 pickler writes the first ones for a checkpoint), as is any unknown opcode.

Unlike PyTorch's, the opcodes of protocols 0, 1, 3, 4 and 5 that only build plain
values (FRAME, SHORT_BINUNICODE, BINBYTES, MEMOIZE, EMPTY_SET, FROZENSET, LIST, DICT,
...) are accepted, so a ``save(format="torch", pickle_protocol=4)`` file still loads.
They come from the standard library's pure-Python ``pickle._Unpickler``, whose loop this
class reuses with its own opcode table.
"""

from __future__ import annotations

import collections
import pickle
from typing import IO, Any, Callable

# Opcodes that only push plain values, manipulate the stack or the memo, or frame.
_VALUE_OPCODES = (
    "PROTO FRAME STOP MARK POP POP_MARK DUP NONE NEWTRUE NEWFALSE "
    "INT BININT BININT1 BININT2 LONG LONG1 LONG4 FLOAT BINFLOAT "
    "STRING BINSTRING SHORT_BINSTRING BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8 "
    "UNICODE BINUNICODE SHORT_BINUNICODE BINUNICODE8 "
    "EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3 EMPTY_LIST LIST EMPTY_DICT DICT "
    "EMPTY_SET FROZENSET GET BINGET LONG_BINGET PUT BINPUT LONG_BINPUT MEMOIZE "
    "GLOBAL STACK_GLOBAL"
).split()

# The exact types SETITEM(S) may store into (PyTorch's list).
_DICT_TYPES = (dict, collections.OrderedDict, collections.Counter)


def _code(name: str) -> int:
    return getattr(pickle, name)[0]


class _OpcodeTable(dict):  # type: ignore[type-arg]
    """The dispatch table: an opcode not in it is refused, not a KeyError."""

    def __missing__(self, code: int) -> Callable[[Any], None]:
        def refuse(unpickler: WeightsOnlyUnpickler) -> None:
            raise unpickler.refuse(f"Unsupported operand {code}")

        return refuse


def _short(obj: Any) -> str:
    """``str(obj)`` for a message, at most 200 characters."""
    try:
        text = str(obj)
    except Exception:  # noqa: BLE001 - a message must not fail
        text = f"<{type(obj).__name__} object>"
    return text if len(text) <= 200 else text[:197] + "..."


class WeightsOnlyUnpickler(pickle._Unpickler):  # type: ignore[name-defined]
    """A pickle loader that runs no code but the allowed globals and mutates nothing
    that existed before the load (see the module docstring for the rules).

    Args:
        file: the pickle (``read`` and ``readline``).
        find_global: ``(module, name) -> object``: resolves an allowed global or raises.
        allowed: the allowed globals (their identities are what REDUCE may call,
            NEWOBJ may create and BUILD may set the state of an instance of).
        persistent_load: resolves a storage record.
        refuse: ``reason -> exception`` raised for a refused opcode.
        parameter: the ``Parameter`` class (NEWOBJ calls its constructor).
        tensor: the ``Tensor`` class (BUILD on a tensor is refused).
        encoding: how protocol-2 ``str`` objects of Python 2 are decoded.
    """

    dispatch = _OpcodeTable(
        {
            code: handler
            for code, handler in pickle._Unpickler.dispatch.items()  # type: ignore[attr-defined]
            if code in {_code(name) for name in _VALUE_OPCODES}
        }
    )

    def __init__(
        self,
        file: IO[bytes],
        *,
        find_global: Callable[[str, str], Any],
        allowed: list[Any],
        persistent_load: Callable[[Any], Any],
        refuse: Callable[[str], BaseException],
        parameter: type,
        tensor: type,
        encoding: str = "utf-8",
    ) -> None:
        super().__init__(file, encoding=encoding)
        self._find_global = find_global
        # The objects themselves are kept alive by ``allowed``; compare identities (a
        # dtype or tensor ``==`` is not a plain comparison).
        self._allowed = allowed
        self._allowed_ids = {id(obj) for obj in allowed}
        self._persistent_load = persistent_load
        self.refuse = refuse
        self._parameter = parameter
        self._tensor = tensor

    def _is_allowed(self, obj: Any) -> bool:
        return id(obj) in self._allowed_ids

    def find_class(self, module: str, name: str) -> Any:
        return self._find_global(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self._persistent_load(pid)

    # ---------------------------------------------------------------- calls

    def load_reduce(self) -> None:
        args = self.stack.pop()
        func = self.stack[-1]
        if not self._is_allowed(func):
            raise self.refuse(f"Trying to call reduce for unrecognized function {_short(func)}")
        self.stack[-1] = func(*args)

    def _new_object(self, cls: Any, args: Any, kwargs: Any) -> Any:
        if cls is self._parameter:
            return cls(*args, **kwargs)
        if not self._is_allowed(cls):
            raise self.refuse(
                "Can only create new object for nn.Parameter or classes allowlisted via "
                f"`add_safe_globals` but got {_short(cls)}"
            )
        return cls.__new__(cls, *args, **kwargs)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new_object(cls, args, {}))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        self.append(self._new_object(cls, args, kwargs))

    def load_binpersid(self) -> None:
        pid = self.stack.pop()
        if type(pid) is not tuple and type(pid) is not int:
            raise self.refuse(f"persistent_load id must be tuple or int, but got {type(pid)}")
        if type(pid) is tuple and pid:
            kind = pid[0].decode("ascii", "replace") if isinstance(pid[0], bytes) else pid[0]
            if kind != "storage":
                raise self.refuse(
                    f"Only persistent_load of storage is allowed, but got {type(pid[0])}"
                )
        self.append(self.persistent_load(pid))

    # ------------------------------------------------------------ mutations

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        cls = type(inst)
        if cls is collections.OrderedDict:
            inst.__dict__.update(state)
            return
        if isinstance(inst, self._tensor):
            # PyTorch's legacy (pre-1.0) pickling of tensors; torch.save and rustgrad
            # rebuild tensors and Parameters with REDUCE instead.
            raise self.refuse(
                f"BUILD of a tensor (PyTorch's legacy pickling of tensors) is not supported, "
                f"got {cls}"
            )
        if not self._is_allowed(cls):
            raise self.refuse(
                "Can only build Tensor, Parameter, OrderedDict or types allowlisted via "
                f"`add_safe_globals`, but got {cls}"
            )
        setstate = getattr(inst, "__setstate__", None)
        if setstate is not None:
            setstate(state)
            return
        slotstate = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slotstate = state
        if state:
            inst.__dict__.update(state)
        if slotstate:
            for key, value in slotstate.items():
                setattr(inst, key, value)

    def _dict_target(self, opcode: str) -> Any:
        target = self.stack[-1]
        if type(target) not in _DICT_TYPES:
            raise self.refuse(
                f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, "
                f"but got {type(target)}"
            )
        return target

    def load_setitem(self) -> None:
        value = self.stack.pop()
        key = self.stack.pop()
        self._dict_target("SETITEM")[key] = value

    def load_setitems(self) -> None:
        items = self.pop_mark()
        target = self._dict_target("SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def load_append(self) -> None:
        item = self.stack.pop()
        target = self.stack[-1]
        if type(target) is not list:
            raise self.refuse(f"Can only append to lists, but got {type(target)}")
        target.append(item)

    def load_appends(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not list:
            raise self.refuse(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def load_additems(self) -> None:
        items = self.pop_mark()
        target = self.stack[-1]
        if type(target) is not set:
            raise self.refuse(f"Can only add items to sets, but got {type(target)}")
        target.update(items)

    for _name, _handler in (
        ("REDUCE", load_reduce),
        ("NEWOBJ", load_newobj),
        ("NEWOBJ_EX", load_newobj_ex),
        ("BINPERSID", load_binpersid),
        ("BUILD", load_build),
        ("SETITEM", load_setitem),
        ("SETITEMS", load_setitems),
        ("APPEND", load_append),
        ("APPENDS", load_appends),
        ("ADDITEMS", load_additems),
    ):
        dispatch[_code(_name)] = _handler
    del _name, _handler
