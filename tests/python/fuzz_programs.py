"""Random programs over rustgrad, checked step by step against a numpy model of PyTorch.

A program is a list of steps over a pool of live tensors ``t0, t1, ...``. Every step is
rendered as one line of Python (``t3 = t1.transpose(0, 1)``) and executed with ``exec``, so
a failing program prints as a reproducer that runs as is.

The model (class ``Model``) mirrors each tensor by its *layout* (shape, element strides,
storage offset) over a numpy buffer per storage, so a numpy view built with ``as_strided``
aliases exactly like the rustgrad view: a write through one view shows in the base and in
every sibling. For each step the model decides, with PyTorch's rules, whether PyTorch
raises (shape mismatch, a result type that cannot be cast in place, a write into an
expanded view, a partial overlap between the written tensor and an input, ...) or what it
returns (values and dtype, including the 0-d / wrapped-scalar promotion rules). After
every step all live tensors are compared with their mirrors (values, NaN positions,
shape, dtype, requires_grad).

Gradient programs (float64, some leaves ``requires_grad``) end with
``loss = sum((t * w).sum())`` over the live tensors that require grad; each leaf's
``.grad`` is compared with central finite differences of the same program re-run through
rustgrad under ``no_grad`` on perturbed leaf values. Ops with kinks or poles are only
generated where every element is far from them.

Run standalone (what ``make fuzz`` does)::

    python tests/python/fuzz_programs.py --seconds 600

It runs programs in a child process (so a segfault or an abort is reported with the
program that caused it), prints how many programs it ran, and prints every finding as
a shrunk Python reproducer.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import rustgrad as torch
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

FLOATS = ("float32", "float64")
DTYPES = ("float32", "float64", "int64", "bool")
NP_DTYPE = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "bool": np.bool_}
CATEGORY = {"bool": 0, "int64": 1, "float32": 2, "float64": 2}
RTOL = {"bool": 0.0, "int64": 0.0, "float32": 1e-4, "float64": 1e-9}
# Ops whose results numpy and rustgrad may round differently (the others are exact on
# the small dyadic values the programs start from).
INEXACT = {"div", "pow", "exp", "log", "sqrt", "tanh", "sigmoid", "mean", "div_"}
INEXACT |= {"sin", "cos", "atan", "expm1", "tanhshrink"}
MAX_POOL = 8
ORDINARY = (RuntimeError, ValueError, TypeError, IndexError, NotImplementedError)

# ----- PyTorch's rules ---------------------------------------------------------------


def promote(a: str | None, b: str | None) -> str | None:
    if a is None:
        return b
    if b is None or a == b:
        return a
    if CATEGORY[a] != CATEGORY[b]:
        return a if CATEGORY[a] > CATEGORY[b] else b
    return "float64"  # the only same-category pair left is float32/float64


def _combine(higher: str | None, lower: str | None) -> str | None:
    """c10's combine_categories: a lower-priority operand only wins a higher category."""
    if higher is None:
        return lower
    if lower is None:
        return higher
    if CATEGORY[higher] == 2:
        return higher
    if higher == "bool" or CATEGORY[lower] == 2:
        return promote(higher, lower)
    return higher


def result_type(*operands: Any) -> str:
    """PyTorch's result type: tensors with dims > 0-d tensors > Python scalars.

    Operands are ``Entry``s or Python scalars (a float scalar counts as float32, the
    default dtype, when it decides the category).
    """
    dim = zero = wrapped = None
    for o in operands:
        if isinstance(o, Entry):
            if o.shape:
                dim = promote(dim, o.dtype)
            else:
                zero = promote(zero, o.dtype)
        elif isinstance(o, bool):
            wrapped = promote(wrapped, "bool")
        elif isinstance(o, int):
            wrapped = promote(wrapped, "int64")
        else:
            wrapped = promote(wrapped, "float32")
    out = _combine(dim, _combine(zero, wrapped))
    assert out is not None
    return out


def can_cast(src: str, dst: str) -> bool:
    """c10::canCast: no float -> integral, no non-bool -> bool."""
    if CATEGORY[src] == 2 and CATEGORY[dst] < 2:
        return False
    return not (src != "bool" and dst == "bool")


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides = []
    acc = 1
    for size in reversed(shape):
        strides.append(acc)
        acc *= max(size, 1)
    return tuple(reversed(strides))


def broadcast_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    out = []
    for x, y in itertools.zip_longest(reversed(a), reversed(b), fillvalue=1):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def view_strides(shape, strides, new_shape) -> tuple[int, ...] | None:
    """ATen's computeStride: the strides of ``view(new_shape)``, or None if impossible."""
    numel = math.prod(shape)
    if numel == 0:
        return contiguous_strides(new_shape) if math.prod(new_shape) == 0 else None
    if not shape:
        return (1,) * len(new_shape)
    new_strides = [0] * len(new_shape)
    view_d = len(new_shape) - 1
    chunk_base_stride = strides[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[tensor_d]
        if tensor_d == 0 or (
            shape[tensor_d - 1] != 1 and strides[tensor_d - 1] != tensor_numel * chunk_base_stride
        ):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                new_strides[view_d] = view_numel * chunk_base_stride
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = strides[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(new_strides)


# ----- the model ---------------------------------------------------------------------


@dataclass
class Storage:
    buffer: np.ndarray  # 1-D, the storage's elements
    exact: bool  # whether the model's strides are PyTorch's for tensors on it
    requires_grad: bool = False  # the autograd family (base and its views) requires grad
    leaf: bool = False  # created with requires_grad=True
    saved: bool = False  # some recorded op may have saved a tensor on it
    deps: frozenset = frozenset()  # ids of the grad leaves it depends on
    # Rounding: values that went through a rounding op (div, exp, ...) may differ from
    # numpy's in the last bits, and in a float64 result of float32 inputs, by float32's.
    inexact: bool = False
    rtol: float = 0.0


@dataclass
class Entry:
    name: str
    dtype: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int
    storage: Storage
    detached: bool = False  # an alias without autograd history (detach())

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def requires_grad(self) -> bool:
        return self.storage.requires_grad and not self.detached

    def array(self) -> np.ndarray:
        """The numpy view aliasing this tensor's elements in its storage's buffer."""
        buf = self.storage.buffer
        item = buf.itemsize
        return np.lib.stride_tricks.as_strided(
            buf[self.offset :] if self.numel else buf[:0],
            shape=self.shape,
            strides=tuple(s * item for s in self.strides),
            writeable=True,
        )

    def positions(self) -> set[int]:
        """The storage positions of its elements."""
        if self.numel == 0:
            return set()
        pos = np.full(self.shape, self.offset, dtype=np.int64)
        for d, (size, stride) in enumerate(zip(self.shape, self.strides)):
            shape = [1] * self.ndim
            shape[d] = size
            pos = pos + (np.arange(size) * stride).reshape(shape)
        return set(pos.ravel().tolist())

    def internal_overlap(self) -> bool:
        # ATen's has_internal_overlap: an empty tensor is contiguous, hence no overlap.
        return self.numel > 0 and any(
            size > 1 and stride == 0 for size, stride in zip(self.shape, self.strides)
        )

    def dense(self) -> bool:
        """PyTorch's is_non_overlapping_and_dense (exact only when the storage is)."""
        dims = sorted((stride, size) for size, stride in zip(self.shape, self.strides) if size != 1)
        expected = 1
        for stride, size in dims:
            if stride != expected:
                return False
            expected *= size
        return True

    def contiguous(self) -> bool:
        if self.numel == 0:
            return True
        expected = 1
        for size, stride in reversed(list(zip(self.shape, self.strides))):
            if size != 1 and stride != expected:
                return False
            expected *= size
        return True


def _numpy_literal(a: np.ndarray) -> str:
    values = ", ".join(_scalar_code(v) for v in a.ravel().tolist())
    np_name = {"float32": "float32", "float64": "float64", "int64": "int64", "bool": "bool_"}
    dt = np_name[str(a.dtype) if a.dtype != np.bool_ else "bool"]
    return f"np.array([{values}], dtype=np.{dt}).reshape({tuple(a.shape)})"


def _scalar_code(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "float('nan')"
        if math.isinf(v):
            return "float('inf')" if v > 0 else "-float('inf')"
    return repr(v)


class Crash(AssertionError):
    """A step that must not happen: a panic, a non-Python exception, a wrong value."""


@dataclass
class Program:
    lines: list[str] = field(default_factory=list)
    # the lines as re-run for finite differences (leaf values come from _leaf[k])
    replay: list[str] = field(default_factory=list)

    def code(self) -> str:
        return "\n".join(["import numpy as np", "import rustgrad as torch", *self.lines])


class Model:
    """The pool of live tensors, their numpy mirrors, and the program run so far."""

    # `make fuzz` workers write each step here before running it, so that a child that
    # segfaults or hangs can be reported with its program.
    trace_path: str | None = None

    def __init__(self, grad_mode: bool):
        self.grad_mode = grad_mode
        self.entries: list[Entry] = []
        self.env: dict[str, Any] = {"torch": torch, "np": np}
        self.program = Program()
        self.counter = 0
        self.leaves: list[tuple[Entry, np.ndarray]] = []

    # -- running one step --

    def fresh_name(self) -> str:
        name = f"t{self.counter}"
        self.counter += 1
        return name

    def run(
        self,
        code: str,
        expect_error: str | None,
        commit: Callable[[], None] | None = None,
        replay: str | None = None,
    ) -> None:
        """Runs ``code``; PyTorch raises iff ``expect_error`` (its reason) is set."""
        self.program.lines.append(
            code + (f"  # PyTorch raises: {expect_error}" if expect_error else "")
        )
        if self.trace_path:
            with open(self.trace_path, "w") as f:
                f.write(self.program.code() + "\n")
        with np.errstate(all="ignore"):
            try:
                exec(code, self.env)
            except BaseException as e:  # noqa: B036 -- a panic is a BaseException
                if not isinstance(e, Exception) or type(e).__name__ == "PanicException":
                    raise Crash(
                        f"{type(e).__name__} (not an ordinary exception): {e}\n"
                        + self.program.code()
                    ) from e
                if expect_error is None:
                    raise Crash(
                        f"rustgrad raised {type(e).__name__}: {e}\nwhere PyTorch does not:\n"
                        + self.program.code()
                    ) from e
                if not isinstance(e, ORDINARY):
                    raise Crash(
                        f"unexpected exception type {type(e).__name__}: {e}\n" + self.program.code()
                    ) from e
                self.program.lines[-1] = f"# raises {type(e).__name__}: " + code
                return
            if expect_error is not None:
                raise Crash(
                    f"PyTorch raises ({expect_error}) but rustgrad did not:\n" + self.program.code()
                )
            if commit is not None:
                commit()
            self.program.replay.append(replay if replay is not None else code)
            try:
                self.check()
            except Crash:
                raise
            except BaseException as e:  # noqa: B036 -- a panic is a BaseException
                raise Crash(
                    f"reading the tensors back raised {type(e).__name__}: {e}\n"
                    + self.program.code()
                ) from e

    def check(self) -> None:
        for entry in self.entries:
            t = self.env[entry.name]
            where = f"{entry.name} after:\n{self.program.code()}"
            if tuple(t.shape) != entry.shape:
                raise Crash(f"shape {tuple(t.shape)} != {entry.shape} of {where}")
            if str(t.dtype) != f"torch.{entry.dtype}":
                raise Crash(f"dtype {t.dtype} != torch.{entry.dtype} of {where}")
            if t.requires_grad != entry.requires_grad:
                raise Crash(f"requires_grad {t.requires_grad} != {entry.requires_grad} of {where}")
            # The stride of a size-1 dim is meaningless (PyTorch's contiguity checks
            # skip it and implementations differ), so only the others are compared.
            if (
                entry.storage.exact
                and entry.numel
                and _strides(t.shape, t.stride()) != _strides(entry.shape, entry.strides)
            ):
                raise Crash(f"stride {t.stride()} != PyTorch's {entry.strides} of {where}")
            if entry.storage.exact and t.is_contiguous() != entry.contiguous():
                raise Crash(f"is_contiguous() {t.is_contiguous()} is not PyTorch's of {where}")
            repr(t)  # formatting reads every element through the layout
            actual = np.asarray(t.detach().numpy())
            expected = entry.array()
            if not values_match(actual, expected, entry.dtype, entry.storage.rtol):
                raise Crash(
                    f"wrong values of {where}\nrustgrad: {actual.tolist()}\n"
                    f"expected: {expected.tolist()}"
                )

    # -- pool management --

    def add(self, entry: Entry) -> None:
        self.entries.append(entry)

    def new_storage_entry(
        self, name: str, values: np.ndarray, dtype: str, exact: bool, strides=None, like=None
    ) -> Entry:
        """A tensor on a new storage; ``like`` (an Entry) passes on its rounding history."""
        values = np.asarray(values, dtype=NP_DTYPE[dtype])
        shape = tuple(values.shape)
        if strides is None or not exact:
            strides = contiguous_strides(shape)
        buffer = np.zeros(max(_extent(shape, strides), 0), dtype=NP_DTYPE[dtype])
        storage = Storage(buffer=buffer, exact=exact, rtol=RTOL[dtype])
        if like is not None:
            storage.inexact = like.storage.inexact
            storage.rtol = max(storage.rtol, like.storage.rtol)
        entry = Entry(name, dtype, shape, tuple(strides), 0, storage)
        entry.array()[...] = values
        return entry


def _strides(shape, strides) -> tuple[int, ...]:
    return tuple(st if size != 1 else None for size, st in zip(shape, strides))


def _extent(shape, strides) -> int:
    if math.prod(shape) == 0:
        return 0
    return 1 + sum((size - 1) * stride for size, stride in zip(shape, strides))


def values_match(actual: np.ndarray, expected: np.ndarray, dtype: str, rtol: float) -> bool:
    if actual.shape != expected.shape:
        return False
    if dtype not in FLOATS:
        return bool(np.array_equal(actual, expected))
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    if not np.array_equal(np.isnan(a), np.isnan(e)):
        return False
    inf = np.isinf(e) | np.isinf(a)
    if not np.array_equal(a[inf], e[inf]):
        return False
    finite = ~(np.isnan(e) | inf)
    if not finite.any():
        return True
    scale = max(1.0, float(np.max(np.abs(e[finite]))))
    rtol = max(rtol, RTOL[dtype])
    return bool(np.allclose(a[finite], e[finite], rtol=rtol, atol=rtol * scale))


# ----- indexing layouts --------------------------------------------------------------


def index_layout(entry: Entry, items: tuple) -> tuple | str:
    """(shape, strides, offset) of ``entry[items]`` as PyTorch computes it, or the reason
    PyTorch raises."""
    consumed = [i for i in items if i is not None and i is not Ellipsis]
    if sum(i is Ellipsis for i in items) > 1:
        return "two ellipses"
    if len(consumed) > entry.ndim:
        return "too many indices"
    shape, strides, offset = list(entry.shape), list(entry.strides), entry.offset
    dim = 0
    for item in items:
        if item is None:
            stride = shape[dim] * strides[dim] if dim < len(shape) else 1
            shape.insert(dim, 1)
            strides.insert(dim, stride)
            dim += 1
        elif item is Ellipsis:
            dim += entry.ndim - len(consumed)
        elif isinstance(item, slice):
            if item.step is not None and item.step <= 0:
                return "slice step must be positive"
            start, stop, step = item.indices(shape[dim])
            size = len(range(start, stop, step))
            offset += start * strides[dim]
            shape[dim] = size
            strides[dim] *= step
            dim += 1
        else:
            size = shape[dim]
            if not -size <= item < size:
                return "index out of range"
            offset += (item % size) * strides[dim]
            del shape[dim]
            del strides[dim]
    return tuple(shape), tuple(strides), offset


def _unsqueeze_stride(shape, strides, dim) -> int:
    return shape[dim] * strides[dim] if dim < len(shape) else 1


# ----- the generator -----------------------------------------------------------------

SCALARS_INT = [0, 1, 2, 3, -1, -2]
SCALARS_FLOAT = [0.5, -1.5, 2.0, 0.0, -0.25, 3.0]
SPECIAL = [float("nan"), float("inf"), -float("inf")]
FLOAT_VALUES = [0.0, 1.0, -1.0, 0.5, -2.0, 3.0, 1.5, -0.75, 2.25, -3.5]
SAVES = {"mul", "div", "pow", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs"}
SAVES |= {"clamp", "matmul", "sign", "mul_", "div_", "clamp_", "relu_", "pow_"}
SAVES |= {"sin", "cos", "atan", "expm1", "square", "maximum", "minimum"}
SAVES |= {"hardshrink", "softshrink", "tanhshrink", "threshold"}


class _ShapeSteps:
    """Creation, view and indexing steps; ``draw`` is hypothesis's."""

    def __init__(self, draw: Callable, model: Model):
        self.draw = draw
        self.m = model
        self.grad = model.grad_mode

    def d(self, strategy):
        return self.draw(strategy)

    def choice(self, seq):
        return self.d(st.sampled_from(list(seq)))

    def pick(self, pred: Callable[[Entry], bool] = lambda e: True) -> Entry | None:
        cands = [e for e in self.m.entries if pred(e)]
        return cands[self.d(st.integers(0, len(cands) - 1))] if cands else None

    # -- steps --

    def step(self) -> None:
        kinds = ["create", "view", "index", "binary", "unary", "reduce", "inplace", "copy"]
        kinds += ["functional"]
        if not self.grad:
            kinds += ["convert", "clone", "narrow_scalar"]
        else:
            kinds += ["clone"]
        if len(self.m.entries) < 2 or len(self.m.entries) < MAX_POOL and self.d(st.booleans()):
            if not self.m.entries or self.d(st.integers(0, 3)) == 0:
                return self.create()
        kind = self.choice(kinds)
        if kind == "create" and len(self.m.entries) >= MAX_POOL:
            kind = "view"
        getattr(self, kind)()

    def shape(self, max_numel: int = 24) -> tuple[int, ...]:
        ndim = self.d(st.integers(0, 4))
        shape = tuple(self.d(st.integers(0, 4)) for _ in range(ndim))
        while math.prod(shape) > max_numel:
            shape = shape[1:]
        return shape

    def values(self, dtype: str, n: int) -> list:
        if dtype == "bool":
            return self.d(st.lists(st.booleans(), min_size=n, max_size=n))
        if dtype == "int64":
            return self.d(st.lists(st.integers(-4, 4), min_size=n, max_size=n))
        if self.grad:
            ints = st.integers(-250, 250).filter(lambda v: abs(v) >= 20)
            return [v / 100 for v in self.d(st.lists(ints, min_size=n, max_size=n))]
        pool = FLOAT_VALUES + (SPECIAL if self.d(st.integers(0, 9)) == 0 else [])
        return self.d(st.lists(st.sampled_from(pool), min_size=n, max_size=n))

    def create(self) -> None:
        m = self.m
        dtype = "float64" if self.grad else self.choice(DTYPES)
        shape = self.shape()
        name = m.fresh_name()
        kind = self.choice(["data", "data", "zeros", "ones", "full", "arange"])
        tdt = f"torch.{dtype}"
        if kind == "arange" and dtype != "bool":
            n = self.d(st.integers(0, 6))
            code = f"{name} = torch.arange({n}, dtype={tdt})"
            values = np.arange(n)
        elif kind in ("zeros", "ones"):
            dims = ", ".join(map(str, shape)) if shape else "()"
            code = f"{name} = torch.{kind}({dims}, dtype={tdt})"
            values = (np.zeros if kind == "zeros" else np.ones)(shape)
        elif kind == "full":
            fill = self.values(dtype, 1)[0]
            if dtype == "int64" and self.d(st.integers(0, 9)) == 0:
                fill = 2**53 + 1  # exact in int64, not in float64
            code = f"{name} = torch.full({shape!r}, {_scalar_code(fill)}, dtype={tdt})"
            values = np.full(shape, fill, dtype=NP_DTYPE[dtype])
        else:
            values = np.array(self.values(dtype, math.prod(shape)), dtype=NP_DTYPE[dtype])
            values = values.reshape(shape)
            code = f"{name} = torch.from_numpy({_numpy_literal(values)})"
        entry = m.new_storage_entry(name, values, dtype, exact=True)
        replay = None
        if self.grad and self.d(st.booleans()):
            k = len(m.leaves)
            code += ".requires_grad_()"
            replay = f"{name} = torch.from_numpy(_leaf[{k}].copy()).requires_grad_()"
            entry.storage.requires_grad = True
            entry.storage.leaf = True
            entry.storage.deps = frozenset([k])
            m.leaves.append((entry, np.array(values, dtype=np.float64)))
        m.run(code, None, lambda: m.add(entry), replay)

    # -- views --

    def _view_entry(self, src: Entry, name: str, shape, strides, offset) -> Entry:
        return Entry(
            name,
            src.dtype,
            tuple(shape),
            tuple(strides),
            offset,
            src.storage,
            detached=src.detached,
        )

    def view(self) -> None:
        src = self.pick()
        m = self.m
        name = m.fresh_name()
        op = self.choice(
            [
                "transpose",
                "t",
                "permute",
                "expand",
                "unsqueeze",
                "squeeze",
                "view",
                "reshape",
                "flatten",
            ]
        )
        shape, strides = list(src.shape), list(src.strides)
        nd = src.ndim
        error = None
        if op == "transpose":
            lim = max(nd, 1)
            d0, d1 = self.d(st.integers(-lim - 1, lim)), self.d(st.integers(-lim, lim - 1))
            code = f"{name} = {src.name}.transpose({d0}, {d1})"
            if not (-lim <= d0 < lim and -lim <= d1 < lim):
                error = "dim out of range"
            elif nd:
                d0, d1 = d0 % nd, d1 % nd
                shape[d0], shape[d1] = shape[d1], shape[d0]
                strides[d0], strides[d1] = strides[d1], strides[d0]
        elif op == "t":
            code = f"{name} = {src.name}.t()"
            if nd > 2:
                error = "t() expects <= 2 dims"
            shape.reverse()
            strides.reverse()
        elif op == "permute":
            perm = self.d(st.permutations(range(nd))) if nd else []
            if nd > 1 and self.d(st.integers(0, 9)) == 0:
                perm[0] = perm[1]
                error = "repeated dim in permute"
            if not nd:
                return None  # PyTorch's permute() needs dims; rustgrad's *dims allows none
            code = f"{name} = {src.name}.permute({', '.join(map(str, perm))})"
            if error is None:
                shape = [src.shape[p] for p in perm]
                strides = [src.strides[p] for p in perm]
        elif op == "expand":
            new = self.d(st.integers(0, 2))
            sizes = [self.d(st.integers(0, 3)) for _ in range(new)]
            for s in src.shape:
                if s == 1:
                    sizes.append(self.d(st.sampled_from([1, 2, 3, -1, 0])))
                else:
                    sizes.append(self.d(st.sampled_from([s, -1])))
            if sizes and self.d(st.integers(0, 9)) == 0:
                sizes[-1] = sizes[-1] + 2 if sizes[-1] >= 0 else 5
                if src.ndim and src.shape[-1] not in (1, sizes[-1]):
                    error = "expanded size must match"
            code = f"{name} = {src.name}.expand({', '.join(map(str, sizes))})"
            strides = [0] * new + list(src.strides)
            shape = sizes[:new] + [
                src.shape[i] if s == -1 else s for i, s in enumerate(sizes[new:])
            ]
            for i, s in enumerate(src.shape):
                if s == 1 and shape[new + i] != 1:
                    strides[new + i] = 0
            if math.prod(shape) * 0 != 0 or any(s > 64 for s in shape):
                return None
        elif op == "unsqueeze":
            d = self.d(st.integers(-nd - 2, nd + 1))
            code = f"{name} = {src.name}.unsqueeze({d})"
            if not -nd - 1 <= d <= nd:
                error = "dim out of range"
            else:
                d %= nd + 1
                stride = _unsqueeze_stride(shape, strides, d)
                shape.insert(d, 1)
                strides.insert(d, stride)
        elif op == "squeeze":
            form = self.d(st.integers(0, 2))
            if form == 0 or nd == 0:
                code = f"{name} = {src.name}.squeeze()"
                keep = [i for i in range(nd) if shape[i] != 1]
            elif form == 1:
                # The tuple form: distinct dims, some of them negative.
                picked = self.d(st.lists(st.integers(0, nd - 1), unique=True, max_size=nd))
                dims = [d - nd if self.d(st.booleans()) else d for d in picked]
                code = f"{name} = {src.name}.squeeze({tuple(dims)!r})"
                keep = [i for i in range(nd) if i not in picked or shape[i] != 1]
            else:
                d = self.d(st.integers(-nd, nd - 1))
                code = f"{name} = {src.name}.squeeze({d})"
                keep = [i for i in range(nd) if i != d % nd or shape[i] != 1]
            shape = [src.shape[i] for i in keep]
            strides = [src.strides[i] for i in keep]
        else:
            if not src.storage.exact:
                return None  # PyTorch's strides for computed results are not modelled
            new_shape = self.reshape_target(src)
            args = ", ".join(map(str, new_shape)) if new_shape else "()"
            if op == "flatten":
                code = f"{name} = {src.name}.flatten()"
                new_shape = [src.numel]
            else:
                code = f"{name} = {src.name}.{op}({args})"
            if -1 in new_shape:
                rest = math.prod(s for s in new_shape if s != -1)
                if rest == 0:
                    error = "cannot infer -1 for 0 elements"
                    new_shape = None
                else:
                    new_shape = [src.numel // rest if s == -1 else s for s in new_shape]
            new_strides = None
            if new_shape is not None:
                if math.prod(new_shape) != src.numel:
                    error = "shape is invalid for the input size"
                elif op == "flatten" and nd == 1:
                    new_strides = tuple(strides)
                else:
                    new_strides = view_strides(
                        tuple(src.shape), tuple(src.strides), tuple(new_shape)
                    )
                    if new_strides is None and op == "view":
                        error = "view size is not compatible with input's size and stride"
                if error is None and new_strides is None:  # reshape / flatten copy
                    values = src.array().reshape(new_shape).copy()
                    entry = m.new_storage_entry(name, values, src.dtype, exact=True, like=src)
                    entry.storage.requires_grad = src.requires_grad
                    entry.storage.deps = src.storage.deps
                    return m.run(code, None, lambda: m.add(entry))
                shape, strides = list(new_shape), list(new_strides or [])
        entry = self._view_entry(src, name, shape, strides, src.offset)
        m.run(code, error, lambda: m.add(entry))

    def reshape_target(self, src: Entry) -> list[int]:
        n = src.numel
        if n == 0:
            k = self.d(st.integers(1, 3))
            sizes = [self.d(st.integers(0, 3)) for _ in range(k)]
            sizes[self.d(st.integers(0, k - 1))] = 0
            if self.d(st.booleans()):
                sizes[self.d(st.integers(0, k - 1))] = -1
            return sizes
        factors = []
        rest, p = n, 2
        while rest > 1:
            while rest % p == 0:
                factors.append(p)
                rest //= p
            p += 1
        k = self.d(st.integers(0, 3))
        sizes = [1] * (k + 1)
        for f in factors:
            sizes[self.d(st.integers(0, k))] *= f
        if self.d(st.booleans()):
            sizes[self.d(st.integers(0, k))] = -1
        if self.d(st.integers(0, 14)) == 0:
            sizes[0] += 1  # not a factorisation: PyTorch raises
        return sizes

    def index_items(self, src: Entry) -> tuple:
        items: list = []
        dims_left = src.ndim
        while dims_left > 0 and self.d(st.integers(0, 3)) > 0:
            size = src.shape[src.ndim - dims_left]
            kind = self.choice(["int", "slice", "slice", "none", "ellipsis"])
            if kind == "int":
                items.append(self.d(st.integers(-size - 1, size)))
                dims_left -= 1
            elif kind == "slice":
                start = self.d(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
                stop = self.d(st.one_of(st.none(), st.integers(-size - 2, size + 2)))
                step = self.d(st.sampled_from([None, 1, 2, 3, 2, -1, 0] if size else [None]))
                items.append(slice(start, stop, step))
                dims_left -= 1
            elif kind == "none":
                items.append(None)
            elif Ellipsis not in items:
                items.append(Ellipsis)
                dims_left = self.d(st.integers(0, dims_left))
        if self.d(st.integers(0, 19)) == 0:
            items.append(0)  # possibly one index too many
        return tuple(items)

    def index(self) -> None:
        src = self.pick()
        items = self.index_items(src)
        self.index_view(src, items)

    def index_view(self, src: Entry, items: tuple) -> None:
        m = self.m
        name = m.fresh_name()
        layout = index_layout(src, items)
        code = f"{name} = {src.name}[{_index_code(items)}]"
        if isinstance(layout, str):
            return m.run(code, layout)
        shape, strides, offset = layout
        entry = self._view_entry(src, name, shape, strides, offset)
        m.run(code, None, lambda: m.add(entry))


def _index_code(items: tuple) -> str:
    def one(i):
        if i is None:
            return "None"
        if i is Ellipsis:
            return "..."
        if isinstance(i, slice):
            parts = ["" if v is None else str(v) for v in (i.start, i.stop)]
            text = ":".join(parts)
            return text + (f":{i.step}" if i.step is not None else "")
        return str(i)

    if not items:
        return "()"
    if len(items) == 1:
        return one(items[0])
    return ", ".join(one(i) for i in items)


def _np(entry: Entry, dtype: str) -> np.ndarray:
    return entry.array().astype(NP_DTYPE[dtype])


def _operand(o: Any, dtype: str) -> np.ndarray:
    return _np(o, dtype) if isinstance(o, Entry) else np.asarray(o, dtype=NP_DTYPE[dtype])


def _shape_of(o: Any) -> tuple[int, ...]:
    return o.shape if isinstance(o, Entry) else ()


def _code_of(o: Any) -> str:
    return o.name if isinstance(o, Entry) else _scalar_code(o)


def _finite_ints(a: np.ndarray) -> bool:
    """Float values that convert to int64 the same way everywhere."""
    return bool(np.all(np.isfinite(a)) and np.all(np.abs(a) < 2**31))


def _smooth(a: np.ndarray, kinks=(0.0,), margin: float = 1e-3) -> bool:
    return all(bool(np.all(np.abs(a - k) > margin)) for k in kinks)


BINARY = {
    "add": ("+", np.add),
    "sub": ("-", np.subtract),
    "mul": ("*", np.multiply),
    "div": ("/", np.true_divide),
    "pow": ("**", np.power),
    "eq": ("==", np.equal),
    "ne": ("!=", np.not_equal),
    "lt": ("<", np.less),
    "le": ("<=", np.less_equal),
    "gt": (">", np.greater),
    "ge": (">=", np.greater_equal),
}
COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
# Ops of two tensors written as a function call or a bitwise operator.
PAIRWISE = {
    "maximum": ("torch.maximum({x}, {y})", np.maximum),
    "minimum": ("torch.minimum({x}, {y})", np.minimum),
    "bitwise_and": ("{x} & {y}", np.bitwise_and),
    "bitwise_or": ("{x} | {y}", np.bitwise_or),
    "bitwise_xor": ("{x} ^ {y}", np.bitwise_xor),
    "isclose": ("torch.isclose({x}, {y})", np.isclose),
}


def _sigmoid(x: np.ndarray) -> np.ndarray:
    one = x.dtype.type(1)
    return one / (one + np.exp(-x))


def _sign(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.bool_:
        return x.copy()  # PyTorch: sign of a bool tensor is the tensor's values, as bool
    return np.where(np.isnan(x), 0, np.sign(x)).astype(x.dtype)  # PyTorch: sign(nan) = 0


UNARY = {
    "neg": np.negative,
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sigmoid": _sigmoid,
    "relu": lambda x: np.where(x > 0, x, np.where(np.isnan(x), x, 0)).astype(x.dtype),
    "abs": np.abs,
    "sign": _sign,
    "sin": np.sin,
    "cos": np.cos,
    "atan": np.arctan,
    "expm1": np.expm1,
    "square": np.square,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
}
TO_FLOAT = {"exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "atan", "expm1"}
# Elementwise functionals of rustgrad.nn.functional: (call with `{x}`, numpy model, kinks
# of the value or the gradient). Integer and bool inputs raise PyTorch's "not implemented
# for", except int64 threshold (which PyTorch computes) and tanhshrink (which promotes; it
# is generated for floating inputs only).
FUNCTIONAL = {
    "hardshrink": (
        "torch.nn.functional.hardshrink({x}, 0.5)",
        lambda x: np.where((x >= -0.5) & (x <= 0.5), 0, x).astype(x.dtype),
        (-0.5, 0.5),
    ),
    "softshrink": (
        "torch.nn.functional.softshrink({x}, 0.5)",
        lambda x: np.where(x > 0.5, x - 0.5, np.where(x < -0.5, x + 0.5, 0 * x)).astype(x.dtype),
        (-0.5, 0.5),
    ),
    "tanhshrink": ("torch.nn.functional.tanhshrink({x})", lambda x: x - np.tanh(x), ()),
    "threshold": (
        "torch.nn.functional.threshold({x}, 1.0, -2.0)",
        # PyTorch's kernel: x <= threshold ? value : x (so NaN stays NaN).
        lambda x: np.where(x <= 1.0, -2.0, x).astype(x.dtype),
        (1.0,),
    ),
}
# Rounding: int64 kept, bool refused, zero gradient with jumps at integers (so no
# finite-difference check).
ROUNDING = {"floor", "ceil", "trunc"}


# ----- narrow dtypes with wrapped numbers (Note [Wrapped scalars]) ---------------------
#
# Self-contained steps: a fresh uint8 ... int64 or bool tensor with a Python number
# (often outside the dtype's range), or a float16 / bfloat16 tensor with a 0-d float
# tensor or a Python float; the result is checked against the model right away (the
# pool keeps only the four dtypes above).

INT_RANGE = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "int16": (-32768, 32767),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "bool": (0, 1),
}
OVERFLOW_TYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int"}
OVERFLOW_TYPE |= {"int64": "int64_t"}
NARROW_INTS = [300, -1, -300, 256, 200, 32768, 70000, 2**31 + 5, -(2**63), 2**63 - 1, 2, 0]
NARROW_FLOATS = [2.5, -1e10, 1e39]
NARROW_OPS = ["add", "sub", "mul", "div", "rdiv", "radd", "rsub", "rmul", "floordiv"]
NARROW_OPS += ["remainder", "fmod", "eq", "lt", "ge", "and", "or", "xor", "pow", "rpow"]
NARROW_OPS += ["clamp_min", "clamp_max", "where", "where_r", "add_"]
HALF_VALUES = [0.0, 1.0, -3.5, 5.28125, 100.0, 0.375, -0.001, 7.0]
HALF_SCALARS = [5.2922, 0.3337, -1.23456, 257.0, 1e-3, 3.0]
HALF_OPS = ["add", "sub", "mul", "div", "remainder", "eq", "le", "rsub", "radd", "rmul"]
HALF_OPS += ["rdiv"]


def wrap_int(v: int, dtype: str) -> int:
    """``v`` converted to an integer dtype as a C cast does (two's complement)."""
    if dtype == "bool":
        return int(v != 0)
    lo, hi = INT_RANGE[dtype]
    span = hi - lo + 1
    return (v - lo) % span + lo


def overflows(v: Any, dtype: str) -> bool:
    """c10's ``overflows<dtype>(v)`` (uint8 also takes -255..-1)."""
    if dtype == "float32":
        return isinstance(v, float) and math.isfinite(v) and abs(v) > 3.4028234663852886e38
    if dtype in ("bool", "float64") or isinstance(v, bool):
        return False
    lo, hi = INT_RANGE[dtype]
    if dtype == "uint8" and isinstance(v, int):
        return abs(v) > 255
    return not lo <= math.floor(v) <= hi


def round_half(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 values rounded to float16 / bfloat16 (to nearest even), as float32."""
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    return np.where(np.isnan(x), x, rounded.view(np.float32))


def _narrow_int_model(op: str, dtype: str, a: list[int], s: Any) -> tuple[str, list] | str:
    """PyTorch's result (dtype, values) of ``op`` on an integer or bool tensor ``a`` and
    a Python number ``s``, or the reason it raises."""
    if isinstance(s, float):
        if op in ("clamp_min", "clamp_max", "where", "where_r") and overflows(s, "float32"):
            return "value cannot be converted to type float without overflow"
        if op == "add_":
            return "result type Float can't be cast"
        f32 = np.float32
        x, y = np.asarray(a, dtype=f32), f32(s)
        table = {
            "add": lambda: x + y,
            "radd": lambda: x + y,
            "mul": lambda: x * y,
            "rmul": lambda: x * y,
            "div": lambda: x / y,
            "lt": lambda: x < y,
            "eq": lambda: x == y,
            "ge": lambda: x >= y,
            "clamp_min": lambda: np.maximum(x, y),
            "clamp_max": lambda: np.minimum(x, y),
            "where": lambda: np.where(x == x[0], x, y),
            "where_r": lambda: np.where(x == x[0], y, x),
        }
        if op not in table or (op in ("sub", "rsub") and dtype == "bool"):
            return "not modelled"
        out = table[op]()
        return ("bool" if out.dtype == np.bool_ else "float32", out.tolist())
    if op in ("sub", "rsub") and (dtype == "bool" or isinstance(s, bool)):
        return "Subtraction, the `-` operator, with "
    if dtype == "bool" and isinstance(s, bool):
        return "not modelled"
    s = int(s)
    # An int joins a bool tensor as int64, an integer tensor in its dtype.
    res = dtype if dtype != "bool" else "int64"
    w = wrap_int(s, res)
    cast = lambda v: wrap_int(v, res)  # noqa: E731
    if op == "div":
        return ("float32", (np.asarray(a, np.float32) / np.float32(s)).tolist())
    if op == "rdiv":
        with np.errstate(all="ignore"):
            r = np.float32(1) / np.asarray(a, np.float32)
        return ("float32", (r * np.float32(s)).tolist())
    if op in ("floordiv", "remainder", "fmod"):
        if w == 0 or (dtype == "bool" and op != "floordiv"):
            return "ZeroDivisionError" if w == 0 else "not modelled"
        if op == "floordiv":
            return (res, [cast(x // w) for x in a])
        if op == "remainder":
            return (res, [cast(x % w) for x in a])
        return (res, [cast(_fmod_int(x, w)) for x in a])
    if op in ("eq", "lt", "ge"):
        f = {"eq": lambda x: x == w, "lt": lambda x: x < w, "ge": lambda x: x >= w}[op]
        return ("bool", [f(x) for x in a])
    if op in ("and", "or", "xor"):
        f = {"and": lambda x: x & w, "or": lambda x: x | w, "xor": lambda x: x ^ w}[op]
        return (res, [cast(f(x)) for x in a])
    if op in ("add", "radd", "add_"):
        if op == "add_" and dtype == "bool":
            return "result type Long can't be cast"
        return (res, [cast(x + w) for x in a])
    if op in ("mul", "rmul"):
        return (res, [cast(x * w) for x in a])
    if op == "sub":
        return (res, [cast(x - w) for x in a])
    if op == "rsub":
        return (res, [cast(w - x) for x in a])
    if op == "pow":
        if s < 0:
            return "Integers to negative integer powers are not allowed."
        if dtype != "bool" and overflows(s, dtype):
            return f"value cannot be converted to type {OVERFLOW_TYPE[dtype]} without overflow"
        return (res, [cast(pow(x, s, 2**64)) for x in a])
    if op == "rpow":
        if dtype == "bool":
            return "not modelled"
        out = []
        for e in a:
            if e >= 0:
                out.append(cast(pow(w, e, 2**64)))
            else:
                out.append(cast(1 if w == 1 else (-1 if e % 2 else 1) if w == -1 else 0))
        return (res, out)
    if op in ("clamp_min", "clamp_max"):
        if dtype == "bool":
            return "not modelled"
        lo, hi = INT_RANGE[dtype]
        if op == "clamp_min":
            if s > hi:
                return "is outside the representable range"
            return (dtype, [max(x, max(s, lo)) for x in a])
        if s < lo:
            return "is outside the representable range"
        return (dtype, [min(x, min(s, hi)) for x in a])
    if op in ("where", "where_r"):
        if dtype == "bool":
            return ("int64", [x if (c == a[0]) == (op == "where") else s for c, x in zip(a, a)])
        if overflows(s, dtype):
            return f"value cannot be converted to type {OVERFLOW_TYPE[dtype]} without overflow"
        return (dtype, [x if (x == a[0]) == (op == "where") else w for x in a])
    return "not modelled"


def _fmod_int(x: int, y: int) -> int:
    """C's ``x % y`` on integers (the dividend's sign), exactly."""
    r = abs(x) % abs(y)
    return r if x >= 0 else -r


def _half_model(op: str, dtype: str, a: list[float], s: float, zero_dim: bool) -> list[float]:
    """PyTorch's values of ``op`` on a float16 / bfloat16 tensor ``a`` and a 0-d float
    tensor or Python float ``s``: the operand is rounded to ``dtype`` first, except as
    the second operand of mul and div (and ``s / a`` is ``a.reciprocal() * s``)."""
    x = round_half(np.asarray(a, dtype=np.float32), dtype)
    exact = np.float32(s)
    rounded = round_half(np.float32(s), dtype)[()]
    second = exact if op in ("mul", "div", "rmul") and not (zero_dim and op == "rmul") else rounded
    with np.errstate(all="ignore"):
        if op == "rdiv":
            if zero_dim:
                out = rounded / x
            else:
                out = round_half(np.float32(1) / x, dtype) * exact
        else:
            out = {
                "add": lambda: x + second,
                "radd": lambda: second + x,
                "sub": lambda: x - second,
                "rsub": lambda: second - x,
                "mul": lambda: x * second,
                "rmul": lambda: second * x,
                "div": lambda: x / second,
                "remainder": lambda: np.remainder(x, second),
                "eq": lambda: x == second,
                "le": lambda: x <= second,
            }[op]()
    if out.dtype == np.bool_:
        return out.tolist()
    return round_half(out, dtype).tolist()


class _NarrowScalarSteps:
    """Steps over dtypes outside the pool, checked against the model at once."""

    def narrow_scalar(self) -> None:
        if self.d(st.integers(0, 2)) == 0:
            return self._half_scalar()
        m = self.m
        dtype = self.choice(list(INT_RANGE))
        lo, hi = INT_RANGE[dtype]
        n = self.d(st.integers(1, 4))
        pool = [lo, hi, 0, 1, 2, 7, -7, 100, -100]
        a = [v for v in self.d(st.lists(st.sampled_from(pool), min_size=n, max_size=n))]
        a = [wrap_int(v, dtype) for v in a] if dtype != "bool" else [bool(v) for v in a]
        op = self.choice(NARROW_OPS)
        s = self.choice(NARROW_INTS + NARROW_FLOATS + [True])
        if op == "rpow" and any(v < 0 for v in a):
            a = [abs(int(v)) % 5 for v in a]
            a = [wrap_int(v, dtype) for v in a] if dtype != "bool" else [bool(v) for v in a]
        ints = [int(v) for v in a]
        with np.errstate(all="ignore"):
            expect = _narrow_int_model(op, dtype, ints, s)
        if expect == "not modelled":
            return None
        name = m.fresh_name()
        t = f"torch.tensor({a!r}, dtype=torch.{dtype})"
        code = {
            "add": f"{t} + {s!r}",
            "sub": f"{t} - {s!r}",
            "mul": f"{t} * {s!r}",
            "div": f"{t} / {s!r}",
            "rdiv": f"{s!r} / {t}",
            "radd": f"{s!r} + {t}",
            "rsub": f"{s!r} - {t}",
            "rmul": f"{s!r} * {t}",
            "floordiv": f"{t} // {s!r}",
            "remainder": f"{t} % {s!r}",
            "fmod": f"torch.fmod({t}, {s!r})",
            "eq": f"{t} == {s!r}",
            "lt": f"{t} < {s!r}",
            "ge": f"{t} >= {s!r}",
            "and": f"{t} & {s!r}",
            "or": f"{t} | {s!r}",
            "xor": f"{t} ^ {s!r}",
            "pow": f"{t} ** {s!r}",
            "rpow": f"({s!r}) ** {t}",
            "clamp_min": f"{t}.clamp(min={s!r})",
            "clamp_max": f"{t}.clamp(max={s!r})",
            "where": f"torch.where({t} == {t}[0], {t}, {s!r})",
            "where_r": f"torch.where({t} == {t}[0], {s!r}, {t})",
            "add_": f"{t}.add_({s!r})",
        }[op]
        self._run_checked(f"{name} = {code}", name, expect)

    def _half_scalar(self) -> None:
        m = self.m
        dtype = self.choice(["float16", "bfloat16"])
        n = self.d(st.integers(1, 4))
        a = self.d(st.lists(st.sampled_from(HALF_VALUES), min_size=n, max_size=n))
        op = self.choice(HALF_OPS)
        s = self.choice(HALF_SCALARS)
        kind = self.choice(["number", "float32", "float64"])
        zero_dim = kind != "number"
        b = repr(s) if not zero_dim else f"torch.tensor({s!r}, dtype=torch.{kind})"
        t = f"torch.tensor({a!r}, dtype=torch.{dtype})"
        sym = {"add": "+", "sub": "-", "mul": "*", "div": "/", "remainder": "%"}
        sym |= {"eq": "==", "le": "<="}
        if op.startswith("r") and op != "remainder":
            code = f"{b} {sym[op[1:]]} {t}"
        else:
            code = f"{t} {sym[op]} {b}"
        with np.errstate(all="ignore"):
            values = _half_model(op, dtype, a, s, zero_dim)
        out = "bool" if op in ("eq", "le") else dtype
        name = m.fresh_name()
        self._run_checked(f"{name} = {code}", name, (out, values))

    def _run_checked(self, code: str, name: str, expect: tuple[str, list] | str) -> None:
        """Runs ``code`` and compares ``name`` with the model's (dtype, values), or
        expects an error whose message contains ``expect``."""
        m = self.m
        if isinstance(expect, str):
            m.run(code, expect)
            error = self._last_error(code)
            if expect not in str(error):
                raise Crash(f"raised {error!r}, not PyTorch's {expect!r}:\n{m.program.code()}")
            return

        def commit() -> None:
            got = m.env.pop(name)
            dtype, values = expect
            if str(got.dtype) != f"torch.{dtype}":
                raise Crash(f"dtype {got.dtype} != torch.{dtype} of {name}:\n{m.program.code()}")
            actual = got.double().tolist() if got.dtype.is_floating_point else got.tolist()
            want = [float(v) if isinstance(v, float) else v for v in values]
            same = all(
                (isinstance(w, float) and math.isnan(w) and math.isnan(g)) or g == w
                for g, w in zip(actual, want, strict=True)
            )
            if not same:
                raise Crash(
                    f"wrong values of {name}: rustgrad {actual}, expected {want}:\n"
                    + m.program.code()
                )

        m.run(code, None, commit=commit, replay="")

    def _last_error(self, code: str) -> Exception | None:
        try:
            exec(code, dict(self.m.env))
        except Exception as e:  # noqa: BLE001
            return e
        return None


class Generator(_ShapeSteps, _NarrowScalarSteps):
    """Adds compute and write steps; draws one whole step at a time."""

    def result_entry(self, name, values, dtype, operands, op) -> Entry:
        """A new tensor computed from ``operands``; PyTorch's strides are known (so the
        entry is exact) when every tensor operand is contiguous and of the result's shape
        or 0-d."""
        tensors = [o for o in operands if isinstance(o, Entry)]
        values = np.asarray(values)
        exact = all(
            t.storage.exact and t.contiguous() and (t.shape == values.shape or t.ndim == 0)
            for t in tensors
        )
        entry = self.m.new_storage_entry(name, values, dtype, exact=exact)
        entry.storage.inexact = op in INEXACT or any(t.storage.inexact for t in tensors)
        entry.storage.rtol = max([RTOL[dtype]] + [t.storage.rtol for t in tensors])
        if self.grad and dtype in FLOATS and op is not None:
            grads = [t for t in tensors if t.requires_grad]
            entry.storage.requires_grad = bool(grads)
            entry.storage.deps = frozenset().union(*(t.storage.deps for t in grads))
        return entry

    def mark_saved(self, op: str, *entries: Any) -> None:
        if op in SAVES:
            for e in entries:
                if isinstance(e, Entry):
                    e.storage.saved = True

    def scalar(self, kinds=("int", "float", "bool")) -> Any:
        kind = self.choice(kinds)
        if kind == "bool":
            return self.d(st.booleans())
        if kind == "int":
            return self.choice(SCALARS_INT)
        pool = SCALARS_FLOAT + (SPECIAL if not self.grad else [])
        return self.choice(pool)

    def other_operand(self, a: Entry, tensor_only: bool = False) -> Any:
        if not tensor_only and self.d(st.integers(0, 2)) == 0:
            return self.scalar(("int", "float") if self.grad else ("int", "float", "bool"))
        if self.d(st.booleans()):
            b = self.pick(lambda e: broadcast_shapes(a.shape, e.shape) is not None)
        else:
            b = None
        return b or self.pick()

    def binary(self) -> None:
        m = self.m
        op = self.choice(list(BINARY) + ["matmul"] + list(PAIRWISE))
        a = self.pick()
        if op == "matmul":
            return self.matmul(a)
        if op in PAIRWISE:
            return self.pairwise(a, op)
        b = self.other_operand(a)
        reflected = not isinstance(b, Entry) and self.d(st.booleans())
        x, y = (b, a) if reflected else (a, b)
        name = m.fresh_name()
        sym, fn = BINARY[op]
        left = _code_of(x)
        if left.startswith("-"):
            left = f"({left})"  # -1 ** t is -(1 ** t) in Python
        code = f"{name} = {left} {sym} {_code_of(y)}"
        shape = broadcast_shapes(_shape_of(x), _shape_of(y))
        if shape is None:
            return m.run(code, "shapes do not broadcast")
        rt = result_type(x, y)
        dtypes = [o.dtype if isinstance(o, Entry) else None for o in (x, y)]
        if op == "sub" and ("bool" in dtypes or isinstance(b, bool)):
            return m.run(code, "subtraction with a bool tensor")
        if op == "pow" and ("bool" in dtypes or isinstance(b, bool)):
            return None  # bool powers: not modelled
        compute = rt
        if op == "div" and rt not in FLOATS:
            compute = "float32"
        out = "bool" if op in COMPARE else compute
        xv, yv = _operand(x, compute), _operand(y, compute)
        if op == "pow" and compute == "int64" and np.any(yv < 0):
            if isinstance(y, Entry):
                return None  # int tensor ** negative int tensor: not modelled
            return m.run(code, "integers to negative integer powers")
        differentiable = op not in COMPARE
        if op in COMPARE and any(isinstance(o, Entry) and o.storage.inexact for o in (x, y)):
            return None  # a tie may be broken by the last bit
        if self.grad and differentiable:
            if op == "div" and not _smooth(yv, margin=0.1):
                return None
            if op == "pow":
                if isinstance(y, Entry) and not bool(np.all(xv > 0.1)):
                    return None
                if not isinstance(y, Entry) and not (float(y).is_integer() or np.all(xv > 0.1)):
                    return None
        with np.errstate(all="ignore"):
            values = fn(xv, yv)
        if self.grad and not bool(np.all(np.abs(values) < 1e3)):
            return None
        entry = self.result_entry(name, values, out, [x, y], op if differentiable else None)

        def commit():
            if self.grad and differentiable:
                self.mark_saved(op, x, y, entry)
            m.add(entry)

        m.run(code, None, commit)

    def pairwise(self, a: Entry, op: str) -> None:
        """maximum/minimum (gradient to the larger/smaller operand) and the bitwise
        operators (bool and int64 only), on two tensors."""
        m = self.m
        b = self.pick(lambda e: broadcast_shapes(a.shape, e.shape) is not None) or self.pick()
        name = m.fresh_name()
        form, fn = PAIRWISE[op]
        code = f"{name} = " + form.format(x=a.name, y=b.name)
        if broadcast_shapes(a.shape, b.shape) is None:
            return m.run(code, "shapes do not broadcast")
        rt = result_type(a, b)
        bitwise = op.startswith("bitwise")
        if bitwise and rt in FLOATS:
            return m.run(code, "bitwise ops on floating tensors")
        if op == "isclose":
            if a.dtype != b.dtype:
                return m.run(code, "isclose of two dtypes")
            if a.storage.inexact or b.storage.inexact:
                return None  # within tolerance or not may turn on the last bit
        xv, yv = _operand(a, rt), _operand(b, rt)
        if self.grad and not bitwise and op != "isclose" and rt in FLOATS:
            with np.errstate(all="ignore"):
                if not _smooth(xv - yv):
                    return None  # a tie: maximum's gradient is split there
        with np.errstate(all="ignore"):
            values = fn(xv, yv)
        differentiable = not bitwise and op != "isclose"
        out = "bool" if op == "isclose" else rt
        entry = self.result_entry(name, values, out, [a, b], op if differentiable else None)

        def commit():
            if self.grad and differentiable:
                self.mark_saved(op, a, b, entry)
            m.add(entry)

        m.run(code, None, commit)

    def matmul(self, a: Entry) -> None:
        m = self.m
        if a.dtype not in FLOATS:
            return None  # PyTorch multiplies int64 matrices; rustgrad raises (reported)
        b = self.pick(lambda e: e.dtype in FLOATS)
        name = m.fresh_name()
        code = f"{name} = {a.name} @ {b.name}"
        if a.ndim == 0 or b.ndim == 0:
            return m.run(code, "matmul of a 0-d tensor")
        if a.dtype != b.dtype:
            return m.run(code, "matmul operands of different dtypes")
        try:
            values = np.matmul(a.array(), b.array())
        except ValueError:
            return m.run(code, "matmul shapes do not match")
        if self.grad and not bool(np.all(np.abs(values) < 1e3)):
            return None
        entry = self.result_entry(name, values, a.dtype, [a, b], "matmul")
        entry.storage.exact = False  # PyTorch's strides of batched products: not modelled

        def commit():
            self.mark_saved("matmul", a, b, entry)
            m.add(entry)

        m.run(code, None, commit)

    def unary(self) -> None:
        m = self.m
        a = self.pick()
        op = self.choice(list(UNARY) + ["clamp", "pow_scalar"])
        name = m.fresh_name()
        if op == "clamp":
            return self.clamp(a, name)
        if op == "pow_scalar":
            e = self.choice([2, 3, 0.5, -1, 2.5, 0] if not self.grad else [2, 3, 0.5, -1])
            code = f"{name} = {a.name}.pow({e})"
            if a.dtype == "bool":
                return None
            rt = result_type(a, e)
            if rt == "int64" and e < 0:
                return m.run(code, "integers to negative integer powers")
            xv = _np(a, rt)
            if self.grad and (e in (0.5, -1) and not bool(np.all(np.abs(xv) > 0.1))):
                return None
            if self.grad and e == 0.5 and not bool(np.all(xv > 0.1)):
                return None
            with np.errstate(all="ignore"):
                values = np.power(xv, np.asarray(e, dtype=NP_DTYPE[rt]))
            entry = self.result_entry(name, values, rt, [a], "pow")
            return m.run(code, None, self._commit_unary("pow", a, entry))
        code = (
            f"{name} = {a.name}.{op}()"
            if self.d(st.booleans())
            else f"{name} = torch.{op}({a.name})"
        )
        if op == "sign" and not hasattr(torch, "sign"):
            code = f"{name} = {a.name}.sign()"
        if (
            a.dtype == "bool"
            and op in ("neg", "relu", "abs")
            or (a.dtype == "bool" and op in ROUNDING)
        ):
            return m.run(code, f"{op} of a bool tensor")
        dtype = "float32" if a.dtype not in FLOATS and op in TO_FLOAT else a.dtype
        if op == "square" and a.dtype == "bool":
            dtype = "int64"  # PyTorch: square of bool is int64 (pow(x, 2))
        xv = _np(a, dtype)
        if self.grad:
            if op in ROUNDING:
                return None
            if op == "expm1" and not bool(np.all(xv < 5)):
                return None
            if op in ("relu", "abs", "sign") and dtype in FLOATS and not _smooth(xv):
                return None
            if op in ("log", "sqrt") and not bool(np.all(xv > 0.1)):
                return None
            if op == "exp" and not bool(np.all(xv < 5)):
                return None
        with np.errstate(all="ignore"):
            values = np.asarray(UNARY[op](xv)).astype(NP_DTYPE[dtype])
        entry = self.result_entry(name, values, dtype, [a], op)
        m.run(code, None, self._commit_unary(op, a, entry))

    def functional(self) -> None:
        """An elementwise functional of ``rustgrad.nn.functional`` (one engine node each)."""
        m = self.m
        a = self.pick()
        op = self.choice(sorted(FUNCTIONAL))
        template, model, kinks = FUNCTIONAL[op]
        name = m.fresh_name()
        code = f"{name} = " + template.format(x=a.name)
        if a.dtype not in FLOATS and not (op == "threshold" and a.dtype == "int64"):
            if op == "tanhshrink":
                return None
            return m.run(code, f"{op} of a {a.dtype} tensor")
        xv = _np(a, a.dtype)
        if self.grad and not _smooth(xv, kinks=kinks):
            return None
        with np.errstate(all="ignore"):
            values = np.asarray(model(xv)).astype(NP_DTYPE[a.dtype])
        entry = self.result_entry(name, values, a.dtype, [a], op)
        m.run(code, None, self._commit_unary(op, a, entry))

    def _commit_unary(self, op: str, a: Entry, entry: Entry) -> Callable[[], None]:
        def commit():
            if self.grad:
                self.mark_saved(op, a, entry)
            self.m.add(entry)

        return commit

    def clamp_bounds(self, a: Entry) -> tuple[Any, Any, str]:
        lo = self.d(st.one_of(st.none(), st.sampled_from([-1, 0, 1, -0.5, 0.5, 2.0])))
        hi = self.d(st.one_of(st.none(), st.sampled_from([-1, 0, 1, -0.5, 0.5, 2.0])))
        if not self.grad and self.d(st.integers(0, 14)) == 0:
            lo = float("nan")
        args = []
        if lo is not None:
            args.append(f"min={_scalar_code(lo)}")
        if hi is not None:
            args.append(f"max={_scalar_code(hi)}")
        return lo, hi, ", ".join(args)

    def clamp_values(self, a: Entry, lo, hi, dtype) -> np.ndarray:
        x = _np(a, dtype)
        if lo is not None:
            x = np.where(np.isnan(x), x, np.maximum(x, np.asarray(lo, dtype=x.dtype)))
        if hi is not None:
            x = np.where(np.isnan(x), x, np.minimum(x, np.asarray(hi, dtype=x.dtype)))
        return x.astype(NP_DTYPE[dtype])

    def clamp(self, a: Entry, name: str) -> None:
        m = self.m
        lo, hi, args = self.clamp_bounds(a)
        code = f"{name} = {a.name}.clamp({args})"
        if lo is None and hi is None:
            return m.run(code, "clamp needs min or max")
        rt = result_type(a, *[v for v in (lo, hi) if v is not None])
        if self.grad:
            x = _np(a, rt)
            kinks = [v for v in (lo, hi) if v is not None]
            if not _smooth(x, kinks):
                return None
        entry = self.result_entry(name, self.clamp_values(a, lo, hi, rt), rt, [a], "clamp")
        m.run(code, None, self._commit_unary("clamp", a, entry))

    def reduce(self) -> None:
        m = self.m
        a = self.pick()
        op = self.choice(["sum", "mean"])
        name = m.fresh_name()
        nd = a.ndim
        form = self.choice(["all", "int", "tuple"]) if nd else "all"
        keepdim = self.d(st.booleans())
        if form == "all":
            dims = tuple(range(nd))
            code = f"{name} = {a.name}.{op}()"
            keepdim = False
        elif form == "int":
            d = self.d(st.integers(-nd - 1, nd))
            dims = (d,)
            code = f"{name} = {a.name}.{op}({d}, keepdim={keepdim})"
        else:
            k = self.d(st.integers(1, nd))
            dims = tuple(self.d(st.integers(-nd, nd - 1)) for _ in range(k))
            code = f"{name} = {a.name}.{op}(dim={dims!r}, keepdim={keepdim})"
        if any(not -nd <= d < nd for d in dims):
            return m.run(code, "dim out of range")
        axes = tuple(sorted(d % nd for d in dims)) if nd else ()
        if len(set(axes)) != len(axes):
            return m.run(code, "dim appears multiple times")
        if op == "mean" and a.dtype not in FLOATS:
            return m.run(code, "mean of an integer tensor")
        dtype = a.dtype if a.dtype in FLOATS else "int64"
        x = _np(a, dtype)
        with np.errstate(all="ignore"):
            values = np.sum(x, axis=axes, keepdims=keepdim, dtype=NP_DTYPE[dtype])
            if op == "mean":
                count = math.prod(a.shape[d] for d in axes)
                values = (values / np.asarray(count, dtype=NP_DTYPE[dtype])).astype(x.dtype)
        entry = self.result_entry(name, values, dtype, [a], op)
        entry.storage.exact = False  # PyTorch's strides of reductions: not modelled
        m.run(code, None, lambda: m.add(entry))

    def convert(self) -> None:
        m = self.m
        a = self.pick()
        dtype = self.choice(DTYPES)
        name = m.fresh_name()
        method = {"float32": "float", "float64": "double", "int64": "long", "bool": "bool"}[dtype]
        code = self.choice(
            [f"{name} = {a.name}.{method}()", f"{name} = {a.name}.to(torch.{dtype})"]
        )
        av = a.array()
        if a.dtype in FLOATS and dtype == "int64" and not _finite_ints(av):
            return None  # undefined in C and in PyTorch
        if a.dtype in FLOATS and dtype not in FLOATS and a.storage.inexact:
            return None  # truncation or != 0 may depend on the last bit
        if dtype == a.dtype:
            entry = self._view_entry(a, name, a.shape, a.strides, a.offset)  # to() returns self
        else:
            with np.errstate(all="ignore"):
                entry = self.result_entry(name, av.astype(NP_DTYPE[dtype]), dtype, [a], "to")
            entry.storage.exact = False
        m.run(code, None, lambda: m.add(entry))

    def clone(self) -> None:
        m = self.m
        a = self.pick()
        name = m.fresh_name()
        op = self.choice(["clone", "contiguous"] + ([] if self.grad else ["detach"]))
        code = f"{name} = {a.name}.{op}()"
        if op == "detach":
            entry = self._view_entry(a, name, a.shape, a.strides, a.offset)
            entry.detached = True
        elif op == "contiguous" and not a.storage.exact:
            return None  # whether PyTorch copies depends on strides we do not model
        elif op == "contiguous" and a.contiguous():
            entry = self._view_entry(a, name, a.shape, a.strides, a.offset)
        else:
            strides = a.strides if op == "clone" and a.dense() and a.numel else None
            entry = self.m.new_storage_entry(
                name, a.array(), a.dtype, exact=a.storage.exact, strides=strides, like=a
            )
            if self.grad:
                entry.storage.requires_grad = a.requires_grad
                entry.storage.deps = a.storage.deps
        m.run(code, None, lambda: m.add(entry))

    # -- in-place writes --

    def write_target(self) -> tuple[Entry, tuple | None] | None:
        """A tensor to write into: a pool entry, or (in setitem form) an indexed view."""
        dst = self.pick()
        return dst

    def write_blocker(self, dst: Entry, src: Any, checks_overlap: bool = True) -> str | None | bool:
        """PyTorch's reason to refuse writing ``src`` into ``dst``; False when the result
        is ill-defined in PyTorch too (overlap it cannot detect), so the step is skipped."""
        if self.grad and dst.requires_grad and dst.storage.leaf:
            return "in-place on a leaf (or a view of a leaf) that requires grad"
        if self.grad and dst.storage.saved:
            return False  # would trip a saved-tensor version check: not modelled
        if self.grad and isinstance(src, Entry) and src.storage is dst.storage:
            return False  # t.mul_(t) saves t, then bumps its version: PyTorch raises too
        if checks_overlap and dst.internal_overlap():
            return "more than one element of the written-to tensor refers to one location"
        if isinstance(src, Entry) and src.storage is dst.storage and checks_overlap:
            same = (src.shape, src.strides, src.offset) == (dst.shape, dst.strides, dst.offset)
            if not same and dst.positions() & src.positions():
                exact = dst.storage.exact and dst.dense() and src.dense()
                if not exact:
                    return False
                return "input and written-to tensor overlap"
        return None

    def after_write(self, dst: Entry, src: Any, op: str) -> None:
        if isinstance(src, Entry):
            dst.storage.inexact |= src.storage.inexact
            dst.storage.rtol = max(dst.storage.rtol, src.storage.rtol)
        dst.storage.inexact |= op in INEXACT
        if self.grad and dst.dtype in FLOATS and isinstance(src, Entry) and src.requires_grad:
            dst.storage.requires_grad = True
            dst.storage.deps = dst.storage.deps | src.storage.deps
        if self.grad and op in SAVES:
            self.mark_saved(op, dst, src)

    def inplace(self) -> None:
        m = self.m
        dst = self.write_target()
        op = self.choice(["add_", "sub_", "mul_", "div_", "clamp_", "relu_", "fill_", "zero_"])
        if op in ("clamp_", "relu_", "fill_", "zero_"):
            return self.unary_inplace(dst, op)
        src = self.other_operand(dst)
        form = self.choice(["method", "operator"])
        sym = {"add_": "+=", "sub_": "-=", "mul_": "*=", "div_": "/="}[op]
        if form == "method":
            code = f"{dst.name}.{op}({_code_of(src)})"
        else:
            code = f"{dst.name} {sym} {_code_of(src)}"
        blocker = self.write_blocker(dst, src)
        if blocker is False:
            return None
        if blocker:
            return m.run(code, blocker)
        if broadcast_shapes(dst.shape, _shape_of(src)) != dst.shape:
            return m.run(code, "operand does not broadcast to the written tensor's shape")
        rt = result_type(dst, src)
        dtypes = {dst.dtype, src.dtype if isinstance(src, Entry) else None}
        if op == "sub_" and ("bool" in dtypes or rt == "bool" or isinstance(src, bool)):
            return m.run(code, "subtraction with a bool tensor")
        compute = "float32" if op == "div_" and rt not in FLOATS else rt
        if not can_cast(compute, dst.dtype):
            return m.run(code, f"result type {compute} can't be cast to {dst.dtype}")
        x, y = _np(dst, compute), _operand(src, compute)
        if self.grad and op == "div_" and not _smooth(y, margin=0.1):
            return None
        fn = BINARY[op[:-1]][1]
        with np.errstate(all="ignore"):
            values = fn(x, y).astype(NP_DTYPE[dst.dtype])
        if self.grad and not bool(np.all(np.abs(values) < 1e3)):
            return None

        def commit():
            dst.array()[...] = values
            self.after_write(dst, src, op)

        m.run(code, None, commit)

    def unary_inplace(self, dst: Entry, op: str) -> None:
        m = self.m
        blocker = self.write_blocker(dst, None, checks_overlap=op not in ("fill_", "zero_"))
        if blocker is False:
            return None
        av = dst.array()
        if op == "clamp_":
            lo, hi, args = self.clamp_bounds(dst)
            code = f"{dst.name}.clamp_({args})"
            if blocker:
                return m.run(code, blocker)
            if lo is None and hi is None:
                return m.run(code, "clamp needs min or max")
            rt = result_type(dst, *[v for v in (lo, hi) if v is not None])
            if not can_cast(rt, dst.dtype):
                return m.run(code, f"result type {rt} can't be cast to {dst.dtype}")
            if self.grad and not _smooth(av, [v for v in (lo, hi) if v is not None]):
                return None
            values = self.clamp_values(dst, lo, hi, rt).astype(NP_DTYPE[dst.dtype])
        elif op == "relu_":
            code = f"{dst.name}.relu_()"
            if blocker:
                return m.run(code, blocker)
            if dst.dtype == "bool":
                return m.run(code, "relu of a bool tensor")
            if self.grad and not _smooth(av):
                return None
            values = UNARY["relu"](av.copy())
        elif op == "fill_":
            value = self.scalar()
            code = f"{dst.name}.fill_({_scalar_code(value)})"
            if blocker:
                return m.run(code, blocker)
            if dst.dtype == "int64" and isinstance(value, float) and not math.isfinite(value):
                return None
            with np.errstate(all="ignore"):
                values = np.asarray(value).astype(NP_DTYPE[dst.dtype])
        else:
            code = f"{dst.name}.zero_()"
            if blocker:
                return m.run(code, blocker)
            values = np.zeros((), dtype=NP_DTYPE[dst.dtype])

        def commit():
            dst.array()[...] = values
            self.after_write(dst, None, op)

        m.run(code, None, commit)

    def copy(self) -> None:
        """``dst.copy_(src)`` or ``dst[index] = src`` (a tensor or a number)."""
        m = self.m
        base = self.pick()
        form = self.choice(["copy_", "setitem", "setitem"])
        if form == "setitem":
            items = self.index_items(base)
            layout = index_layout(base, items)
            target = f"{base.name}[{_index_code(items)}]"
            if isinstance(layout, str):
                return m.run(f"{target} = 0", layout)
            shape, strides, offset = layout
            dst = self._view_entry(base, "<view>", shape, strides, offset)
            if self.d(st.booleans()):
                src = self.scalar()
            else:
                src = self.other_operand(dst, tensor_only=True)
            code = f"{target} = {_code_of(src)}"
        else:
            dst = base
            src = self.other_operand(dst, tensor_only=True)
            code = f"{dst.name}.copy_({src.name})"
        blocker = self.write_blocker(dst, src)
        if blocker is False:
            return None
        if blocker:
            return m.run(code, blocker)
        if broadcast_shapes(dst.shape, _shape_of(src)) != dst.shape:
            return m.run(code, "source does not broadcast to the destination's shape")
        sv = src.array() if isinstance(src, Entry) else np.asarray(src)
        if dst.dtype == "int64" and sv.dtype.kind == "f" and not _finite_ints(sv):
            return None  # undefined in C and in PyTorch
        inexact = isinstance(src, Entry) and src.storage.inexact
        if inexact and dst.dtype not in FLOATS and src.dtype in FLOATS:
            return None  # truncation or != 0 may depend on the last bit
        with np.errstate(all="ignore"):
            values = np.asarray(sv).astype(NP_DTYPE[dst.dtype])

        def commit():
            dst.array()[...] = values
            self.after_write(dst, src, "copy_")

        m.run(code, None, commit)


# ----- every op of the registry on random layouts ------------------------------------
#
# The op list comes from the binding's op registry (`_op_registry()`, Note [Op
# registry]) and each op's sample call from scripts/gen_ops_doc.py (which has one for
# every registry op), so an op added to the table is fuzzed here with no edit. Each op
# runs on random values in a contiguous tensor and in views of other layouts holding the
# same values (transposed storage, a strided slice of a larger buffer, a storage
# offset); the results must be equal (values, NaN positions, dtype, shape) or both calls
# must raise the same ordinary exception. The tables above (BINARY, UNARY, ...) name
# registry ops too: `registry_names()` checks them.

# Ops whose result depends on the input's strides by definition: `as_strided` reads the
# storage, `view` needs compatible strides (PyTorch raises on the transposed layout).
LAYOUT_DEPENDENT = {"as_strided", "as_strided_", "view"}


def registry_ops() -> list[dict[str, Any]]:
    """The Tensor-method rows of the binding's op registry (name, family, form, onnx,
    in_place_of; its module-function rows are the nn.functional ops, swept by
    test_bad_input_never_crashes.py)."""
    return [row for row in torch._rustgrad._op_registry() if row["kind"] == "method"]


def registry_names() -> set[str]:
    """The Python names of the registry's ops."""
    return {row["name"] for row in registry_ops()}


def _sample_calls() -> Callable[[Any, str, Any], Any]:
    """`gen_ops_doc.sample(torch, name, a)`: op `name` called on `a` (2x3) with its
    sample arguments."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "gen_ops_doc.py"
    spec = importlib.util.spec_from_file_location("gen_ops_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.sample


def _layouts(a: Any, draw: Callable) -> list[tuple[str, Any]]:
    """Views with `a`'s values (2x3) and other strides or storage offsets."""
    rows, cols = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    offset = draw(st.integers(0, 2))
    big = torch.zeros(2 * rows + offset, 3 * cols + offset, dtype=a.dtype)
    strided = big[offset::rows][:2, offset::cols][:, :3]
    strided.copy_(a)
    return [("transposed", a.t().contiguous().t()), ("strided", strided)]


def _outcome(sample: Callable, name: str, x: Any) -> tuple[str, Any]:
    """("ok", result) or ("raises", exception type name); a panic is a Crash."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.manual_seed(0)
            return ("ok", sample(torch, name, x))
    except Exception as e:
        if type(e).__name__ == "PanicException" or not isinstance(e, ORDINARY):
            raise Crash(f"{name}: {type(e).__name__}: {e}") from e
        return ("raises", type(e).__name__)
    except BaseException as e:  # noqa: B036 -- a panic is a BaseException
        raise Crash(f"{name}: {type(e).__name__} (not an ordinary exception): {e}") from e


def _tensors(out: Any) -> list[Any]:
    items = out if isinstance(out, (tuple, list)) else [out]
    return [t for t in items if isinstance(t, torch.Tensor)]


def registry_layout_check(draw: Callable) -> int:
    """Runs every registry op on random values in each layout; raises ``Crash`` when a
    layout changes the result. Returns how many calls were compared."""
    sample = _sample_calls()
    dtype = draw(st.sampled_from(["float32", "float64", "int64", "bool"]))
    if dtype == "bool":
        values = draw(st.lists(st.booleans(), min_size=6, max_size=6))
    elif dtype == "int64":
        values = draw(st.lists(st.integers(-4, 6), min_size=6, max_size=6))
    else:
        values = draw(st.lists(st.sampled_from(FLOAT_VALUES + SPECIAL), min_size=6, max_size=6))
    base = torch.tensor(values, dtype=getattr(torch, dtype)).reshape(2, 3)
    compared = 0
    for row in registry_ops():
        name = row["name"]
        if name in LAYOUT_DEPENDENT or (name.startswith("_") and not name.startswith("__")):
            continue
        expected = _outcome(sample, name, base.clone())
        for layout, x in _layouts(base, draw):
            got = _outcome(sample, name, x)
            where = f"{name} on a {layout} {dtype} tensor {values}"
            if got[0] != expected[0] or (got[0] == "raises" and got[1] != expected[1]):
                raise Crash(
                    f"{where}: {got[1] if got[0] == 'raises' else 'returns'}, "
                    f"contiguous: {expected[1] if expected[0] == 'raises' else 'returns'}"
                )
            if got[0] == "raises":
                continue
            for e, g in zip(_tensors(expected[1]), _tensors(got[1])):
                ev, gv = e.detach().double().numpy(), g.detach().double().numpy()
                if e.dtype != g.dtype or ev.shape != gv.shape:
                    raise Crash(f"{where}: {g.dtype} {gv.shape}, contiguous: {e.dtype} {ev.shape}")
                if not np.array_equal(ev, gv, equal_nan=True):
                    raise Crash(f"{where}: {gv.tolist()}, contiguous: {ev.tolist()}")
            compared += 1
    return compared


# ----- whole programs ----------------------------------------------------------------

FD_EPS = 1e-6


def run_program(draw: Callable, grad_mode: bool, max_steps: int = 12) -> Model:
    """Draws and runs one program step by step; raises ``Crash`` on a finding."""
    model = Model(grad_mode)
    gen = Generator(draw, model)
    n = draw(st.integers(1, max_steps))
    torch.set_grad_enabled(True)
    for _ in range(n):
        gen.step()
    if grad_mode:
        check_gradients(model, draw)
    return model


def check_gradients(model: Model, draw: Callable) -> None:
    # A NaN or inf in the loss (mean of an empty tensor, say) hides every other term
    # from finite differences, so only finite tensors enter the loss.
    terms = [
        e
        for e in model.entries
        if e.requires_grad and e.dtype == "float64" and bool(np.all(np.isfinite(e.array())))
    ]
    if not terms or not model.leaves:
        return
    weights = []
    for e in terms:
        w = np.array(
            draw(
                st.lists(st.sampled_from([1.0, -1.0, 0.5, 2.0]), min_size=e.numel, max_size=e.numel)
            ),
            dtype=np.float64,
        ).reshape(e.shape)
        weights.append(w)
    loss_code = "_loss = " + " + ".join(
        f"({e.name} * torch.from_numpy({_numpy_literal(w)})).sum()" for e, w in zip(terms, weights)
    )
    model.run(loss_code, None)
    model.run("_loss.backward()", None)
    connected = frozenset().union(*(e.storage.deps for e in terms))
    replay = [compile(line, "<replay>", "exec") for line in model.program.replay[:-2]]
    replay.append(compile(loss_code, "<replay>", "exec"))
    base = [leaf_values.copy() for _, leaf_values in model.leaves]

    def loss_at(values: list[np.ndarray]) -> float:
        env = {"torch": torch, "np": np, "_leaf": values}
        with torch.no_grad(), np.errstate(all="ignore"):
            for code in replay:
                exec(code, env)
        return float(env["_loss"].item())

    for k, (leaf, values) in enumerate(model.leaves):
        grad = model.env[leaf.name].grad
        where = f"gradient of {leaf.name} in:\n{model.program.code()}"
        if k not in connected:
            if grad is not None:
                raise Crash(f"PyTorch leaves .grad None (not in the graph), got {grad}; {where}")
            continue
        if grad is None:
            raise Crash(f".grad is None but the loss depends on it; {where}")
        analytic = grad.numpy()
        numeric = np.zeros_like(values)
        for index in np.ndindex(values.shape):
            plus = [b.copy() for b in base]
            minus = [b.copy() for b in base]
            plus[k][index] += FD_EPS
            minus[k][index] -= FD_EPS
            numeric[index] = (loss_at(plus) - loss_at(minus)) / (2 * FD_EPS)
        if analytic.shape != values.shape or not np.allclose(
            analytic, numeric, rtol=1e-4, atol=1e-4
        ):
            raise Crash(f"{where}\nanalytic: {analytic.tolist()}\nnumeric: {numeric.tolist()}")


@st.composite
def programs(draw, grad_mode: bool) -> Model:
    return run_program(draw, grad_mode)


# ----- the standalone runner (make fuzz) ---------------------------------------------

FUZZ_SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.generate, Phase.shrink],
    report_multiple_bugs=False,
)


def _worker(seconds: float, trace_path: str) -> None:
    """Runs batches of programs with fresh seeds until ``seconds`` have passed; prints
    each (shrunk) finding and a running count of programs."""
    import faulthandler

    faulthandler.enable()
    # Shrinking a finding may take hypothesis up to 5 minutes by default: a minute keeps
    # the run near its time budget and still gives short reproducers.
    from hypothesis.internal.conjecture import engine

    engine.MAX_SHRINKING_SECONDS = 60
    Model.trace_path = trace_path
    count = {"value": 0, "gradient": 0}
    seen: set[str] = set()
    deadline = time.monotonic() + seconds
    batch = 0
    while time.monotonic() < deadline:
        batch += 1
        grad_mode = batch % 3 == 0
        mode = "gradient" if grad_mode else "value"

        one = _batch(grad_mode, mode, count)
        one = hypothesis_seed(int.from_bytes(os.urandom(8), "little"))(one)
        try:
            one()
        except Crash as e:
            message = str(e)
            key = message.splitlines()[0][:120]
            if key not in seen:
                seen.add(key)
                print(f"FINDING ({mode} program)\n{message}\n", flush=True)
        except Exception:
            key = traceback.format_exc()
            if key not in seen:
                seen.add(key)
                print(f"FINDING (an error in the fuzzer itself)\n{key}\n", flush=True)
        finally:
            torch.set_grad_enabled(True)
        print(f"PROGRAMS {count['value']} {count['gradient']} {len(seen)}", flush=True)


def _batch(grad_mode: bool, mode: str, count: dict) -> Callable:
    @settings(max_examples=100, **FUZZ_SETTINGS)
    @given(st.data())
    def one(data):
        count[mode] += 1
        run_program(data.draw, grad_mode)

    return one


def hypothesis_seed(value: int):
    from hypothesis import seed

    return seed(value)


def _runner(seconds: float) -> int:
    """Runs workers in child processes for ``seconds``; a child that dies (segfault,
    abort) or hangs is reported with the program it was running, then replaced."""
    import threading

    start = time.monotonic()
    totals = [0, 0, 0]
    crashes = 0
    trace = tempfile.NamedTemporaryFile(prefix="rustgrad-fuzz-", suffix=".py", delete=False)
    trace.close()
    while time.monotonic() - start < seconds - 1:
        left = seconds - (time.monotonic() - start)
        proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", "--seconds", str(left), "--trace", trace.name],
            stdout=subprocess.PIPE,
            text=True,
        )
        last = [0, 0, 0]

        def relay(proc=proc, last=last):
            for line in proc.stdout:
                if line.startswith("PROGRAMS "):
                    last[:] = [int(v) for v in line.split()[1:]]
                else:
                    sys.stdout.write(line)
                    sys.stdout.flush()

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        hung = False
        while proc.poll() is None:
            time.sleep(1)
            if time.time() - os.path.getmtime(trace.name) > 120:
                hung = True
                proc.kill()
        proc.wait()
        reader.join(timeout=5)
        totals = [t + v for t, v in zip(totals, last)]
        if hung or proc.returncode != 0:
            crashes += 1
            with open(trace.name) as f:
                program = f.read()
            what = "hung (no step finished for 120 s)" if hung else f"died ({proc.returncode})"
            print(f"FINDING: the worker {what} while running:\n{program}\n", flush=True)
    os.unlink(trace.name)
    findings = totals[2] + crashes
    print(
        f"make fuzz: ran {totals[0] + totals[1]} programs ({totals[0]} value, "
        f"{totals[1]} gradient) in {time.monotonic() - start:.0f} s; "
        f"{findings} distinct finding(s)"
    )
    return 1 if findings else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--trace", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args.seconds, args.trace)
        return 0
    return _runner(args.seconds)


if __name__ == "__main__":
    sys.exit(main())
