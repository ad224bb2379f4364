"""Activation checkpointing (``rustgrad.utils.checkpoint``): ``checkpoint`` and
``checkpoint_sequential``. The non-reentrant variant is built on saved-tensor hooks, as
PyTorch's: the forward runs without keeping its intermediate tensors (each save packs a
small handle), and the first time backward unpacks one, the forward is run again once
under ``enable_grad`` with the RNG state of the first run, and its saved tensors answer
the handles. The reentrant variant is PyTorch's ``CheckpointFunction``: a custom
Function whose forward runs under no_grad and whose backward runs the function again
and calls ``autograd.backward`` inside backward. See Note [Checkpointing]."""

from __future__ import annotations

import warnings
from typing import Any, Callable

from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks

__all__ = ["CheckpointFunction", "checkpoint", "checkpoint_sequential", "detach_variable"]


def detach_variable(inputs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The tensors of ``inputs`` detached, each requiring grad as its original does;
    other items as they are (PyTorch's ``detach_variable``).

    Args:
        inputs: a tuple.

    Returns:
        The tuple with its tensors detached.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(2, requires_grad=True) * 2
        >>> (d, n) = detach_variable((x, 3))
        >>> d.grad_fn is None, d.requires_grad, n
        (True, True, 3)
    """
    from .. import Tensor

    if not isinstance(inputs, tuple):
        raise RuntimeError(
            "Only tuple of tensors is supported. Got Unsupported input type: "
            f"{type(inputs).__name__}"
        )
    out = []
    for inp in inputs:
        if not isinstance(inp, Tensor):
            out.append(inp)
            continue
        x = inp.detach()
        x.requires_grad = inp.requires_grad
        out.append(x)
    return tuple(out)


def check_backward_validity(inputs: Any) -> None:
    """Warns, as PyTorch, when no tensor of ``inputs`` requires grad.

    Args:
        inputs: the checkpointed function's arguments.
    """
    from .. import Tensor

    if not any(inp.requires_grad for inp in inputs if isinstance(inp, Tensor)):
        warnings.warn(
            "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2
        )


class CheckpointFunction(Function):
    """PyTorch's reentrant checkpoint: ``forward`` runs the function under no_grad and
    saves only its tensor inputs (and the RNG state); ``backward`` runs it again under
    ``enable_grad`` on detached inputs with that RNG state, backpropagates through the
    new graph with ``autograd.backward`` (a nested backward), and returns the inputs'
    gradients. See Note [Checkpointing]."""

    @staticmethod
    def forward(
        ctx: Any, run_function: Callable[..., Any], preserve_rng_state: bool, *args: Any
    ) -> Any:
        """Runs ``run_function(*args)`` without recording.

        Args:
            ctx: the Function's context.
            run_function: the checkpointed function.
            preserve_rng_state: keep the RNG state for the recomputation.
            *args: its arguments.

        Returns:
            Its outputs.
        """
        from .. import Tensor, get_rng_state, no_grad

        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        # Non-tensor inputs stay on ctx; tensors are saved (version-checked).
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, Tensor):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx: Any, *args: Any) -> tuple[Any, ...]:
        """Recomputes the forward with grad and backpropagates ``args`` through it.

        Args:
            ctx: the Function's context.
            *args: the gradients of the outputs.

        Returns:
            None for ``run_function`` and ``preserve_rng_state``, then the gradient of
            each argument (None for non-tensors).
        """
        from .. import Tensor, _rustgrad, autograd, enable_grad, get_rng_state, set_rng_state

        if not _rustgrad._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        tensors = ctx.saved_tensors
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = tensors[i]
        # PyTorch's fork_rng: the recomputation draws what the forward drew, and the
        # caller's RNG state is left as it was.
        outer_state = get_rng_state() if ctx.preserve_rng_state else None
        try:
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        finally:
            if outer_state is not None:
                set_rng_state(outer_state)
        if isinstance(outputs, Tensor):
            outputs = (outputs,)
        outputs_with_grad = []
        args_with_grad = []
        for i in range(len(outputs)):
            if isinstance(outputs[i], Tensor) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        autograd.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, Tensor) else None for inp in detached_inputs)
        return (None, None, *grads)


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
    respect_saved_tensors_hooks: bool | None = None,
    **kwargs: Any,
) -> Any:
    """Runs ``function(*args, **kwargs)`` without keeping its intermediate tensors for
    backward; backward runs it again (once) to get them. Gradients are identical to
    those of the plain call when ``function`` is deterministic given the RNG state,
    which ``preserve_rng_state`` restores (so dropout draws the same mask).

    As PyTorch 2.15, not passing ``use_reentrant`` warns and means ``True``. The
    reentrant variant (``CheckpointFunction``) recomputes in a nested backward: it
    takes no keyword arguments for ``function``, and when no tensor argument requires
    grad it warns and its output does not require grad.

    Args:
        function: the function to checkpoint.
        *args: its positional arguments.
        use_reentrant: which variant; pass it explicitly (``False`` is recommended).
        preserve_rng_state: restore the RNG state for the recomputation.
        context_fn, determinism_check, debug, early_stop, respect_saved_tensors_hooks:
            accepted; only their defaults are supported.
        **kwargs: keyword arguments of ``function`` (non-reentrant variant only).

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
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not None or debug is not False or respect_saved_tensors_hooks is not None:
            raise ValueError(
                "Passing `context_fn`, `debug`, or `respect_saved_tensors_hooks` "
                "is only supported when use_reentrant=False."
            )
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    if (
        context_fn is not None
        or determinism_check != "default"
        or debug
        or respect_saved_tensors_hooks is not None
    ):
        raise NotImplementedError(
            "rustgrad.utils.checkpoint: context_fn, determinism_check, debug and "
            "respect_saved_tensors_hooks are not supported"
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
        use_reentrant: which variant of :func:`checkpoint` (not passing it warns and
            means ``True``, as PyTorch 2.15).
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
            use_reentrant=use_reentrant,
            preserve_rng_state=preserve,
        )
    return run_function(end + 1, len(functions) - 1)(input)
