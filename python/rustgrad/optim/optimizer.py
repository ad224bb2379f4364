"""``Optimizer``: PyTorch's optimizer base class, stepping each param group in Rust.

The bookkeeping (param groups as dicts, ``state`` keyed by parameter, ``state_dict``
and ``load_state_dict`` in PyTorch's structure) is plain Python, as in PyTorch; the
update of a whole group is one native call (``_rustgrad._optim_step``) that releases
the GIL and updates the parameters in parallel, in place. See Note [Optimizer steps].
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from copy import deepcopy
from itertools import chain
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = ["Optimizer", "required"]


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

    def __init__(self, params: Any, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
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
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        if p.grad.grad_fn is not None:
                            p.grad.detach_()
                        else:
                            p.grad.requires_grad_(False)
                        p.grad.zero_()

    def _group_has_state(self, group: dict[str, Any]) -> bool:
        """Whether the step keeps per-parameter state for ``group`` (SGD without
        momentum keeps none, as PyTorch)."""
        return True

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Performs one optimization step of every param group.

        Args:
            closure: optional callable that re-evaluates the model and returns the
                loss; it runs with grad enabled before the update.

        Returns:
            The closure's loss, or None.
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
            ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.
        """
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
        return {"state": packed_state, "param_groups": param_groups}

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
            state_dict: ``{"state": ..., "param_groups": ...}``.

        Raises:
            ValueError: the number or sizes of the param groups differ.
        """
        state_dict = state_dict.copy()
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
