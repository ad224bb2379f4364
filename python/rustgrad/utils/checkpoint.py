"""Activation checkpointing (``rustgrad.utils.checkpoint``): ``checkpoint`` and
``checkpoint_sequential``. The non-reentrant variant is built on saved-tensor hooks, as
PyTorch's: the forward runs without keeping its intermediate tensors (each save packs a
small handle), and the first time backward unpacks one, the forward is run again once
under ``enable_grad`` with the RNG state of the first run, and its saved tensors answer
the handles. See Note [Checkpointing]."""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ..autograd.graph import saved_tensors_hooks

__all__ = ["checkpoint", "checkpoint_sequential"]


def _reentrant_not_implemented() -> NotImplementedError:
    return NotImplementedError(
        "rustgrad.utils.checkpoint: use_reentrant=True (PyTorch's default when "
        "use_reentrant is not passed) needs custom autograd Functions, which rustgrad "
        "does not have yet; pass use_reentrant=False"
    )


class _Handle:
    """What the pack hook keeps in the graph instead of a tensor: nothing but its
    identity (and the frame that can recompute it)."""

    __slots__ = ("frame", "index")

    def __init__(self, frame: _Frame, index: int) -> None:
        self.frame = frame
        self.index = index


class _Frame:
    """One checkpointed call: the function and inputs to run again, the RNG state it
    started with, and the tensors the recomputation saved (by save index)."""

    def __init__(self, run: Callable[[], Any], rng_state: Any | None) -> None:
        self.run = run
        self.rng_state = rng_state
        self.count = 0
        self.recomputed: dict[int, Any] | None = None

    def recompute(self) -> None:
        """Runs the forward again, with grad on and the first run's RNG state, and
        keeps what it saves, in order (the same ops save the same tensors)."""
        from .. import enable_grad, get_rng_state, set_rng_state

        saved: dict[int, Any] = {}
        index = [0]

        def pack(tensor: Any) -> int:
            saved[index[0]] = tensor.detach()
            index[0] += 1
            return 0

        def unpack(_: Any) -> Any:
            raise RuntimeError(
                "rustgrad internal error: backward inside a checkpoint recomputation"
            )

        outer_state = get_rng_state() if self.rng_state is not None else None
        try:
            if self.rng_state is not None:
                set_rng_state(self.rng_state)
            with enable_grad(), saved_tensors_hooks(pack, unpack):
                self.run()
        finally:
            if outer_state is not None:
                set_rng_state(outer_state)
        if index[0] != self.count:
            raise RuntimeError(
                "torch.utils.checkpoint: A different number of tensors was saved during "
                f"the original forward and recomputation.\\nNumber of tensors saved during "
                f"forward: {self.count}\\nNumber of tensors saved during recomputation: "
                f"{index[0]}"
            )
        self.recomputed = saved


def _detached_inputs(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tensor arguments detached, requiring grad as the originals do (so the
    recomputation records and saves exactly what the first run did)."""
    from .. import Tensor

    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d.requires_grad_(a.requires_grad)
            out.append(d)
        else:
            out.append(a)
    return tuple(out)


def _checkpoint_without_reentrant(
    function: Callable[..., Any],
    preserve_rng_state: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    from .. import get_rng_state

    rng_state = get_rng_state() if preserve_rng_state else None
    frame = _Frame(lambda: function(*_detached_inputs(args), **kwargs), rng_state)

    def pack(tensor: Any) -> _Handle:
        handle = _Handle(frame, frame.count)
        frame.count += 1
        return handle

    def unpack(handle: _Handle) -> Any:
        if frame.recomputed is None:
            frame.recompute()
        assert frame.recomputed is not None
        return frame.recomputed[handle.index]

    with saved_tensors_hooks(pack, unpack):
        return function(*args, **kwargs)


def checkpoint(
    function: Callable[..., Any],
    *args: Any,
    use_reentrant: bool | None = None,
    preserve_rng_state: bool = True,
    context_fn: Any = None,
    determinism_check: str = "default",
    debug: bool = False,
    early_stop: bool = True,
    **kwargs: Any,
) -> Any:
    """Runs ``function(*args, **kwargs)`` without keeping its intermediate tensors for
    backward; backward runs it again (once) to get them. Gradients are identical to
    those of the plain call when ``function`` is deterministic given the RNG state,
    which ``preserve_rng_state`` restores (so dropout draws the same mask).

    Only ``use_reentrant=False`` is implemented. As PyTorch 2.15, not passing
    ``use_reentrant`` warns and means ``True``, which raises NotImplementedError here.

    Args:
        function: the function to checkpoint.
        *args: its positional arguments.
        use_reentrant: must be ``False``.
        preserve_rng_state: restore the RNG state for the recomputation.
        context_fn, determinism_check, debug, early_stop: accepted; only their
            defaults are supported.
        **kwargs: keyword arguments of ``function``.

    Returns:
        ``function``'s output.

    Example:
        >>> import rustgrad
        >>> from rustgrad.utils.checkpoint import checkpoint
        >>> x = rustgrad.ones(3, requires_grad=True)
        >>> checkpoint(lambda t: (t * t).tanh(), x, use_reentrant=False).sum().backward()
        >>> [round(g, 4) for g in x.grad.tolist()]
        [0.84, 0.84, 0.84]
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed "
            "explicitly. In a future release, calling checkpoint without use_reentrant "
            "will raise an exception. use_reentrant=False is recommended, but if you "
            "need to preserve the current default behavior, you can pass "
            "use_reentrant=True. Refer to docs for more details on the differences "
            "between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if use_reentrant:
        raise _reentrant_not_implemented()
    if context_fn is not None or determinism_check != "default" or debug:
        raise NotImplementedError(
            "rustgrad.utils.checkpoint: context_fn, determinism_check and debug are not supported"
        )
    return _checkpoint_without_reentrant(function, preserve_rng_state, args, kwargs)


def checkpoint_sequential(
    functions: Any,
    segments: int,
    input: Any,
    use_reentrant: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Runs ``functions`` (a list or an ``nn.Sequential``) in order on ``input``, in
    ``segments`` chunks each checkpointed except the last, as PyTorch's.

    Args:
        functions: callables applied in turn.
        segments: the number of chunks.
        input: the input of the first function.
        use_reentrant: must be ``False`` (not passing it warns, as PyTorch 2.15).
        **kwargs: ``preserve_rng_state``.

    Returns:
        The output of the last function.

    Example:
        >>> import rustgrad
        >>> from rustgrad.utils.checkpoint import checkpoint_sequential
        >>> fs = [lambda t: t * 2, lambda t: t.tanh(), lambda t: t + 1]
        >>> x = rustgrad.zeros(2, requires_grad=True)
        >>> checkpoint_sequential(fs, 2, x, use_reentrant=False).tolist()
        [1.0, 1.0]
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter "
            "should be passed explicitly. In a future release, we will raise an "
            "exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, "
            "you can pass use_reentrant=True. Refer to docs for more details on the "
            "differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant:
        raise _reentrant_not_implemented()
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)

    def run_function(start: int, end: int) -> Callable[[Any], Any]:
        def forward(x: Any) -> Any:
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(
            run_function(start, end),
            input,
            use_reentrant=False,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1)(input)
