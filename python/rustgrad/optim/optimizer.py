"""``Optimizer``: PyTorch's optimizer base class, stepping each param group in Rust.

The bookkeeping (param groups as dicts, ``state`` keyed by parameter, ``state_dict``
and ``load_state_dict`` in PyTorch's structure) is plain Python, as in PyTorch; the
update of a whole group is one native call (``_rustgrad._optim_step``) that releases
the GIL and updates the parameters in parallel, in place. See Note [Optimizer steps].

PyTorch's hooks (step pre/post hooks, per optimizer and global, and the
``state_dict``/``load_state_dict`` hooks) are kept in ordered dicts as PyTorch keeps
them; see Note [Optimizer steps].
"""

from __future__ import annotations

import functools
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor
from ..nn.modules.module import RemovableHandle

__all__ = [
    "Optimizer",
    "register_optimizer_step_post_hook",
    "register_optimizer_step_pre_hook",
    "required",
]

# The hooks of every optimizer's step: global pre hooks run before an optimizer's own,
# global post hooks after its own (PyTorch's order).
_global_optimizer_pre_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()
_global_optimizer_post_hooks: OrderedDict[int, Callable[..., Any]] = OrderedDict()

# The per-instance hook dicts, created by ``__init__`` and by ``__setstate__`` for an
# optimizer pickled or deep-copied (``__getstate__`` leaves hooks out, as PyTorch's).
_HOOK_DICTS = (
    "_optimizer_step_pre_hooks",
    "_optimizer_step_post_hooks",
    "_optimizer_state_dict_pre_hooks",
    "_optimizer_state_dict_post_hooks",
    "_optimizer_load_state_dict_pre_hooks",
    "_optimizer_load_state_dict_post_hooks",
)


def register_optimizer_step_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers a step pre hook common to all optimizers; it runs before the
    optimizer's own pre hooks.

    Args:
        hook: ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``;
            ``args`` holds the optimizer itself first, then ``step``'s positional
            arguments.

    Returns:
        A ``RemovableHandle`` whose ``remove()`` unregisters the hook.

    Example:
        >>> from rustgrad.optim.optimizer import register_optimizer_step_pre_hook
        >>> handle = register_optimizer_step_pre_hook(lambda opt, args, kwargs: None)
        >>> handle.remove()
    """
    return _add_hook(_global_optimizer_pre_hooks, hook, prepend=False)


def register_optimizer_step_post_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """Registers a step post hook common to all optimizers; it runs after the
    optimizer's own post hooks.

    Args:
        hook: ``hook(optimizer, args, kwargs) -> None``.

    Returns:
        A ``RemovableHandle`` whose ``remove()`` unregisters the hook.

    Example:
        >>> from rustgrad.optim.optimizer import register_optimizer_step_post_hook
        >>> handle = register_optimizer_step_post_hook(lambda opt, args, kwargs: None)
        >>> handle.remove()
    """
    return _add_hook(_global_optimizer_post_hooks, hook, prepend=False)


def _add_hook(
    hooks: OrderedDict[int, Callable[..., Any]], hook: Callable[..., Any], prepend: bool
) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _hooked_step(func: Callable[..., Any]) -> Callable[..., Any]:
    """Wraps a ``step`` so that it runs the step hooks (PyTorch's ``profile_hook_step``).

    With no hook registered the wrapper only tests four dicts and calls ``func``. A
    ``step`` that calls an overridden ``step`` of the same optimizer (a subclass's
    ``super().step()``) runs the hooks once, in the outermost call: the inner call
    sees ``_step_hooks_running``.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        self = args[0]
        if (
            not (
                _global_optimizer_pre_hooks
                or _global_optimizer_post_hooks
                or self._optimizer_step_pre_hooks
                or self._optimizer_step_post_hooks
            )
            or self._step_hooks_running
        ):
            return func(*args, **kwargs)
        for pre_hook in chain(
            _global_optimizer_pre_hooks.values(), self._optimizer_step_pre_hooks.values()
        ):
            result = pre_hook(self, args, kwargs)
            if result is not None:
                if isinstance(result, tuple) and len(result) == 2:
                    args, kwargs = result
                else:
                    raise RuntimeError(
                        f"{func} must return None or a tuple of (new_args, new_kwargs), "
                        f"but got {result}."
                    )
        self._step_hooks_running = True
        try:
            out = func(*args, **kwargs)
        finally:
            self._step_hooks_running = False
        for post_hook in chain(
            self._optimizer_step_post_hooks.values(), _global_optimizer_post_hooks.values()
        ):
            post_hook(self, args, kwargs)
        return out

    wrapper.hooked = True  # type: ignore[attr-defined]
    return wrapper


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _check_lr(lr: float) -> None:
    _check(0.0 <= lr, f"Invalid learning rate: {lr}")


def _check_adam_like(lr: float, eps: float, betas: Any, weight_decay: float) -> None:
    """The checks of Adam, AdamW, Adamax, NAdam and RAdam, in their order."""
    _check_lr(lr)
    _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
    _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")


class _RequiredParameter:
    """Singleton marking a default that every param group must give."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj: Any) -> str:
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    qualname = type(obj).__qualname__
    return qualname if module in ("builtins", None) else f"{module}.{qualname}"


def _scalar_state_tensor(value: float) -> Tensor:
    """A 0-d state tensor in PyTorch's ``_get_scalar_dtype()``: float64 when that is
    the default dtype, else float32."""
    from .. import float32, float64, get_default_dtype, tensor

    dtype = float64 if get_default_dtype() == float64 else float32
    return tensor(value, dtype=dtype)


class Optimizer:
    """Base class of all optimizers (PyTorch's ``torch.optim.Optimizer``).

    Args:
        params: an iterable of tensors, or of dicts defining param groups (each with
            ``"params"`` and any options that differ from ``defaults``).
        defaults: the default options of the param groups.

    Example:
        >>> w = rustgrad.zeros(3, requires_grad=True)
        >>> opt = rustgrad.optim.SGD([w], lr=0.1)
        >>> opt.param_groups[0]["lr"]
        0.1
    """

    # The native update rule of the subclass (its PyTorch class name); None for
    # optimizers written in Python (LBFGS).
    _native_kind: str | None = None
    # The 0-d state entries the step creates, with their start values ("step", and
    # NAdam's "mu_product"); made here in PyTorch's dtype before the native step.
    _scalar_state: tuple[tuple[str, float], ...] = (("step", 0.0),)
    # True on an instance while its hooked ``step`` runs (see ``_hooked_step``).
    _step_hooks_running = False

    # PyTorch's name of the wrapper that runs the step hooks.
    profile_hook_step = staticmethod(_hooked_step)

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        for name in _HOOK_DICTS:
            setattr(self, name, OrderedDict())
        self._patch_step_function()
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be "
                "an iterable of Tensors or dicts, but got " + _typename(params)
            )
        if isinstance(params, set):
            import warnings

            warnings.warn(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a "
                "list instead. This will be an error in a future release.",
                FutureWarning,
                stacklevel=2,
            )
        self.state: defaultdict[Any, Any] = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "defaults": self.defaults,
            "state": self.state,
            "param_groups": self.param_groups,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in _HOOK_DICTS:
            if name not in self.__dict__:
                setattr(self, name, OrderedDict())
        self._patch_step_function()

    def _patch_step_function(self) -> None:
        """Wraps the class's ``step`` to run the step hooks, once per class (PyTorch
        patches at construction, so a subclass's own ``step`` is covered too)."""
        cls = self.__class__
        if not getattr(cls.step, "hooked", False):
            cls.step = _hooked_step(cls.step)  # type: ignore[method-assign]

    def register_step_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers a hook that runs before every ``step``, after the global pre hooks.

        Args:
            hook: ``hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)``;
                ``args`` holds the optimizer itself first, then ``step``'s positional
                arguments. A returned pair replaces the arguments of ``step`` (and of
                the later hooks); any other non-None result raises RuntimeError.

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.

        Example:
            >>> w = rustgrad.zeros(1, requires_grad=True)
            >>> opt = rustgrad.optim.SGD([w])
            >>> handle = opt.register_step_pre_hook(lambda o, args, kwargs: None)
            >>> handle.remove()
        """
        return _add_hook(self._optimizer_step_pre_hooks, hook, prepend=False)

    def register_step_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Registers a hook that runs after every ``step``, before the global post hooks.

        Args:
            hook: ``hook(optimizer, args, kwargs) -> None``, with the arguments ``step``
                was called with (after any pre hook replaced them).

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.
        """
        return _add_hook(self._optimizer_step_post_hooks, hook, prepend=False)

    def register_state_dict_pre_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Registers ``hook(optimizer) -> None``, called at the start of ``state_dict``.

        Args:
            hook: the hook.
            prepend: run it before the already registered ``state_dict`` pre hooks
                instead of after them.

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.
        """
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(
        self, hook: Callable[[Optimizer, dict[str, Any]], Any], prepend: bool = False
    ) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> state_dict or None``, called on the
        result of ``state_dict``; a returned dict replaces the result.

        Args:
            hook: the hook; it may also modify ``state_dict`` in place.
            prepend: run it before the already registered ``state_dict`` post hooks
                instead of after them.

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.
        """
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(
        self, hook: Callable[[Optimizer, dict[str, Any]], Any], prepend: bool = False
    ) -> RemovableHandle:
        """Registers ``hook(optimizer, state_dict) -> state_dict or None``, called by
        ``load_state_dict`` before it loads; a returned dict is loaded instead.

        Args:
            hook: the hook; it receives a shallow copy of the caller's dict, which it
                may modify in place.
            prepend: run it before the already registered ``load_state_dict`` pre
                hooks instead of after them.

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.
        """
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(
        self, hook: Callable[[Optimizer], None], prepend: bool = False
    ) -> RemovableHandle:
        """Registers ``hook(optimizer) -> None``, called at the end of
        ``load_state_dict``, once the state is loaded.

        Args:
            hook: the hook.
            prepend: run it before the already registered ``load_state_dict`` post
                hooks instead of after them.

        Returns:
            A ``RemovableHandle`` whose ``remove()`` unregisters the hook.
        """
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def __repr__(self) -> str:
        format_string = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            format_string += "\n"
            format_string += f"Parameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    format_string += f"    {key}: {group[key]}\n"
        format_string += ")"
        return format_string

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Adds a param group: its own ``params`` and options (missing options take
        ``defaults``).

        Args:
            param_group: a dict with ``"params"`` and per-group options.

        Raises:
            ValueError: a parameter is already in another group ("some parameters
                appear in more than one parameter group"), or is not a leaf.
            TypeError: a parameter is not a tensor.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. "
                "Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        tensors: list[Any] = []
        names: list[str] = []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) == len(tensors):
                param_group["param_names"] = names
            else:
                raise ValueError(
                    "all optimizer params should be with/without names. "
                    "Some param names are missing"
                )

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, "
                    "but one of the params is " + _typename(param)
                )
            if not self.defaults.get("differentiable", None) and not (
                param.is_leaf or param.retains_grad
            ):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    "parameter group didn't specify a value of required "
                    f"optimization parameter {name}"
                )
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len({id(p) for p in params}) != len(params):
            import warnings

            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        existing: set[int] = set()
        for group in self.param_groups:
            existing.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                current = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {current} to the optimizer"
                )
        if not existing.isdisjoint(id(p) for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)
        self._init_param_group_state(param_group)

    def _init_param_group_state(self, param_group: dict[str, Any]) -> None:
        """Creates the state PyTorch creates at construction (Adagrad); none here."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every optimized parameter.

        Args:
            set_to_none: set ``.grad`` to None (the default) instead of zeroing it.
        """
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    # Unconditionally: a captured step (rustgrad.jit) must record the
                    # reset even when the capture's first call starts without grads.
                    p.grad = None
                elif p.grad is not None:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    def _group_has_state(self, group: dict[str, Any]) -> bool:
        """Whether the step keeps per-parameter state for ``group`` (SGD without
        momentum keeps none, as PyTorch)."""
        return True

    @_hooked_step
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step of every param group.

        Args:
            closure: optional callable that re-evaluates the model and returns the
                loss; it runs with grad enabled before the update.

        Returns:
            The closure's loss, or None.

        The step hooks run around it (``register_step_pre_hook``).
        """
        if self._native_kind is None:
            # PyTorch's base class: a subclass written in Python defines its own step.
            raise NotImplementedError
        loss = None
        if closure is not None:
            from ..autograd.grad_mode import enable_grad

            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            keep = self._group_has_state(group)
            states = [self.state[p] if keep else {} for p in params]
            for state in states if self._scalar_state else ():
                for key, start in self._scalar_state:
                    if key not in state:
                        state[key] = _scalar_state_tensor(start)
            _rustgrad._optim_step(self._native_kind, group, params, states)
        return loss

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's structure: ``state`` keyed by parameter
        index, ``param_groups`` with ``params`` as indices.

        Returns:
            ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``,
            or what a ``state_dict`` post hook returned instead.
        """
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        param_mappings: dict[int, int] = {}
        start_index = 0

        def pack_group(group: dict[str, Any]) -> dict[str, Any]:
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update(
                {
                    id(p): i
                    for i, p in enumerate(group["params"], start_index)
                    if id(p) not in param_mappings
                }
            )
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v
            for k, v in self.state.items()
        }
        state_dict = {"state": packed_state, "param_groups": param_groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            hook_result = post_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        return state_dict

    @staticmethod
    def _cast_state_value(param: Tensor, value: Any, key: Any = None) -> Any:
        """PyTorch's policy for loaded state: ``step`` kept as it is, other tensors
        cast to a floating parameter's dtype; containers recursed into."""
        if isinstance(value, Tensor):
            if key != "step" and param.is_floating_point():
                return value.to(dtype=param.dtype)
            return value
        if isinstance(value, dict):
            return {k: Optimizer._cast_state_value(param, v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(Optimizer._cast_state_value(param, v) for v in value)
        return value

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Loads a state made by ``state_dict`` (this optimizer's or PyTorch's).

        Args:
            state_dict: ``{"state": ..., "param_groups": ...}``; the
                ``load_state_dict`` pre hooks get a shallow copy of it and may return
                another dict to load instead.

        Raises:
            ValueError: the number or sizes of the param groups differ.
        """
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            hook_result = pre_hook(self, state_dict)
            if hook_result is not None:
                state_dict = hook_result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group "
                "that doesn't match the size of optimizer's group"
            )
        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state: defaultdict[Any, Any] = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = self._cast_state_value(param, v)
            else:
                state[k] = v

        def update_group(group: dict[str, Any], new_group: dict[str, Any]) -> dict[str, Any]:
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)
