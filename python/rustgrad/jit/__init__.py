"""Capture and replay (``rustgrad.jit.trace``, ``rustgrad.compile``).

``trace(fn, example_inputs)`` runs ``fn`` once, eagerly, while the engine records
every op it runs -- forward ops, ``loss.backward()``, ``optimizer.zero_grad()`` and
the optimizer's update -- into a graph held in Rust. Calling the traced function
replays that graph from Rust with the GIL released: no Python runs per op, and the
results are bitwise those of the eager code. Tensors the function reads that are not
its arguments (parameters, buffers, optimizer state) are bound by identity, so a
replay reads and updates them as they are then.

As with ``torch.jit.trace``, Python control flow is not recorded: a replay follows
the path the capture took. Converting a tensor to a Python value during the capture
(``.item()``, ``bool(t)``, ``.tolist()``) warns with :class:`TracerWarning`. See
Note [Capture and replay] in docs/architecture.md.
"""

from __future__ import annotations

import builtins
import warnings
from typing import Any, Callable

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = ["TracerWarning", "TracedFunction", "trace", "compile"]


class TracerWarning(Warning):
    """A capture met a construct whose replay may differ (PyTorch's name)."""


def _flatten(value: Any, out: list[Tensor]) -> Any:
    """The tensors of ``value`` (a tensor, None, or nested tuples/lists) and its shape."""
    if isinstance(value, Tensor):
        out.append(value)
        return "T"
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return (type(value), [_flatten(v, out) for v in value])
    raise TypeError(
        "rustgrad.jit: a captured function must return tensors, None, or tuples/lists of "
        f"them, not {type(value).__name__}"
    )


def _unflatten(spec: Any, tensors: list[Tensor], pos: list[int]) -> Any:
    if spec == "T":
        pos[0] += 1
        return tensors[pos[0] - 1]
    if spec is None:
        return None
    kind, items = spec
    return kind(_unflatten(s, tensors, pos) for s in items)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, Tensor) or isinstance(b, Tensor) or type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:
        return False


def _options(group: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in group.items() if k != "params"}


class _Groups:
    """The optimizer param groups a captured step updated, with their options then: a
    replay is valid only while they are unchanged (a scheduler's new ``lr``)."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def changed(self) -> bool:
        for group, options in self.seen:
            now = _options(group)
            if now.keys() != options.keys():
                return True
            if any(not _same(now[k], v) for k, v in options.items()):
                return True
        return False


def _capture(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, Any, Any, _Groups]:
    """Runs ``fn(*args)`` eagerly while capturing: (its result, the graph, output spec,
    the optimizer groups it stepped).

    Raises what ``fn`` raises, and RuntimeError (naming the op) when an op the capture
    does not support made a value the result depends on.
    """
    tensors = [a for a in args if isinstance(a, Tensor)]
    groups = _Groups()
    native_step = _rustgrad._optim_step

    def recording_step(kind: str, group: Any, params: Any, states: Any) -> Any:
        if _rustgrad._jit_is_capturing():
            groups.seen.append((group, dict(_options(group))))
        return native_step(kind, group, params, states)

    _rustgrad._jit_begin(tensors)
    _rustgrad._optim_step = recording_step
    try:
        result = fn(*args)
        flat: list[Tensor] = []
        spec = _flatten(result, flat)
    except BaseException:
        _rustgrad._jit_abort()
        raise
    finally:
        _rustgrad._optim_step = native_step
    try:
        graph = _rustgrad._jit_end(flat)
    except RuntimeError as err:
        raise _CaptureFailed(str(err), result) from None
    return result, graph, spec, groups


class _CaptureFailed(RuntimeError):
    """The capture cannot be replayed; ``result`` is what the eager run returned."""

    def __init__(self, message: str, result: Any):
        super().__init__(message)
        self.result = result


class TracedFunction:
    """A captured function: calling it replays the captured graph."""

    def __init__(
        self, fn: Callable[..., Any], graph: Any, spec: Any, args: tuple[Any, ...], groups: _Groups
    ):
        self._fn = fn
        self._groups = groups
        self.graph = graph
        self._spec = spec
        self._tensor_at = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self._constants = {i: a for i, a in enumerate(args) if not isinstance(a, Tensor)}
        self._nargs = len(args)

    def __call__(self, *args: Any) -> Any:
        if len(args) != self._nargs:
            raise TypeError(
                f"traced function takes {self._nargs} arguments but {len(args)} were given"
            )
        for i, a in enumerate(args):
            if i in self._constants:
                if isinstance(a, Tensor) or a != self._constants[i]:
                    raise TypeError(
                        f"traced function: argument {i} was the constant "
                        f"{self._constants[i]!r} when traced, got {a!r}"
                    )
            elif not isinstance(a, Tensor):
                raise TypeError(
                    f"traced function: argument {i} must be a Tensor, not {type(a).__name__}"
                )
        if self._groups.changed():
            raise RuntimeError(
                "traced function: an optimizer's options changed since the capture (a "
                "learning-rate scheduler?); the captured step would use the old ones, so "
                "trace it again"
            )
        outs = self.graph.run([args[i] for i in self._tensor_at])
        return _unflatten(self._spec, outs, [0])

    @property
    def op_names(self) -> list[str]:
        """The captured ops, in replay order."""
        return self.graph.op_names()


def trace(
    func: Callable[..., Any],
    example_inputs: Any = None,
    *,
    example_kwarg_inputs: Any = None,
    check_trace: bool = False,
    strict: bool = True,
) -> TracedFunction:
    """Captures ``func(*example_inputs)`` (running it once, eagerly) into a graph.

    Raises RuntimeError naming the op when ``func`` runs an op the capture does not
    support. ``check_trace`` and ``strict`` are accepted for PyTorch's signature.
    """
    del check_trace, strict
    if example_kwarg_inputs:
        raise NotImplementedError("rustgrad.jit.trace: example_kwarg_inputs is not supported")
    if example_inputs is None:
        args: tuple[Any, ...] = ()
    elif isinstance(example_inputs, Tensor):
        args = (example_inputs,)
    else:
        args = tuple(example_inputs)
    _result, graph, spec, groups = _capture(func, args)
    return TracedFunction(func, graph, spec, args, groups)


def _signature(args: tuple[Any, ...]) -> Any:
    from ..autograd.grad_mode import is_grad_enabled

    parts: list[Any] = [is_grad_enabled()]
    for a in args:
        if isinstance(a, Tensor):
            parts.append(("T", tuple(a.shape), str(a.dtype), a.requires_grad))
        else:
            try:
                hash(a)
                parts.append(("V", type(a), a))
            except TypeError:
                parts.append(("O", id(a)))
    return tuple(parts)


_EAGER = object()


class _Compiled:
    """``rustgrad.compile(fn)``: captures on the first call per signature, then replays."""

    def __init__(self, fn: Callable[..., Any]):
        self._fn = fn
        self._cache: dict[Any, Any] = {}
        self.__wrapped__ = fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:
            warnings.warn(
                "rustgrad.compile: keyword arguments are not captured; running eagerly",
                UserWarning,
                stacklevel=2,
            )
            return self._fn(*args, **kwargs)
        if _rustgrad._jit_is_capturing():
            # Inside another capture: the ops are recorded into that one.
            return self._fn(*args)
        key = _signature(args)
        entry = self._cache.get(key)
        if entry is _EAGER:
            return self._fn(*args)
        if entry is not None and not entry._groups.changed():
            return entry(*args)
        try:
            result, graph, spec, groups = _capture(self._fn, args)
        except _CaptureFailed as err:
            # The function ran eagerly during the capture: its result stands.
            warnings.warn(
                f"rustgrad.compile: falling back to eager execution for this input "
                f"signature: {err}",
                UserWarning,
                stacklevel=2,
            )
            self._cache[key] = _EAGER
            return err.result
        self._cache[key] = TracedFunction(self._fn, graph, spec, args, groups)
        return result


def compile(
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: builtins.bool = False,
    dynamic: builtins.bool | None = None,
    backend: Any = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: builtins.bool = False,
) -> Any:
    """``torch.compile``'s spelling of capture and replay: the returned callable
    captures ``model`` on its first call for each signature (input shapes, dtypes,
    ``requires_grad``, grad mode, non-tensor arguments) and replays the capture on the
    later calls. A signature whose capture meets an unsupported op runs eagerly, with a
    UserWarning naming the op. Usable as a decorator, with or without arguments.
    """
    del fullgraph, dynamic, backend, mode, options
    if model is None:
        return lambda m: compile(m, disable=disable)
    if disable:
        return model
    return _Compiled(model)
