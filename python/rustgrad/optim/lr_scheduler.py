"""Learning-rate schedulers with PyTorch's names and semantics
(``torch.optim.lr_scheduler``; Note [Learning-rate schedulers]).

A scheduler only reads and writes ``optimizer.param_groups`` (``"lr"``, and
``"momentum"`` or ``"betas"`` when it cycles momentum) and reads ``optimizer.defaults``,
so it works with any optimizer that has those.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import partial, wraps
from typing import Any, Callable, SupportsFloat
from weakref import ref

from rustgrad._rustgrad import Tensor

__all__ = [
    "ChainedScheduler",
    "ConstantLR",
    "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts",
    "CyclicLR",
    "ExponentialLR",
    "LRScheduler",
    "LambdaLR",
    "LinearLR",
    "MultiStepLR",
    "MultiplicativeLR",
    "OneCycleLR",
    "PolynomialLR",
    "ReduceLROnPlateau",
    "SequentialLR",
    "StepLR",
]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)

_STEP_ORDER_WARNING = (
    "Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
    "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
    "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
    "will result in PyTorch skipping the first value of the learning rate schedule. "
    "See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


_STEP_OVERRIDDEN_WARNING = (
    "Seems like `optimizer.step()` has been overridden after learning rate scheduler "
    "initialization. Please, make sure to call `optimizer.step()` before "
    "`lr_scheduler.step()`. See more details at "
    "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate"
)


def _check_optimizer(optimizer: Any) -> None:
    # Duck-typed rather than isinstance(optimizer, Optimizer): a scheduler needs only
    # param_groups, and any optimizer class that has them can be scheduled.
    if not isinstance(getattr(optimizer, "param_groups", None), list):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _copy_value(value: Any) -> Any:
    return value.clone() if isinstance(value, Tensor) else value


def _format_param(name: str, optimizer: Any, param: Any) -> list:
    """One value per param group: ``param`` repeated, or a list checked for length."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(
                f"{name} must have the same length as optimizer.param_groups. "
                f"{name} has {len(param)} values, param_groups has "
                f"{len(optimizer.param_groups)}."
            )
    else:
        param = [param] * len(optimizer.param_groups)
    return [_copy_value(p) for p in param]


def _param_groups_val_list(optimizer: Any, key: str) -> list:
    """``group[key]`` of every param group (tensors cloned, so later writes do not
    change the list)."""
    return [_copy_value(group[key]) for group in optimizer.param_groups]


def _update_param_group_val(param_group: dict, key: str, val: Any) -> None:
    """Writes ``val`` into ``param_group[key]``; a tensor value is filled in place."""
    if isinstance(param_group[key], Tensor):
        param_group[key].fill_(val.item() if isinstance(val, Tensor) else val)
    else:
        param_group[key] = val


def _set_momentum(group: dict, momentum: float, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _init_momentum_groups(
    optimizer: Any, base_momentum: Any, max_momentum: Any, last_epoch: int
) -> tuple[bool, list, list]:
    """Checks that the optimizer has a momentum (or beta1) to cycle; on a fresh start
    sets it to the max momentum and records both bounds in each group. Returns
    ``(use_beta1, base_momentums, max_momentums)``."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError(
            "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"
        )
    use_beta1 = "betas" in optimizer.defaults
    base_momentums = _format_param("base_momentum", optimizer, base_momentum)
    max_momentums = _format_param("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_momentum, b_momentum, group in zip(
            max_momentums, base_momentums, optimizer.param_groups
        ):
            _set_momentum(group, m_momentum, use_beta1)
            group["max_momentum"] = m_momentum
            group["base_momentum"] = b_momentum
    return use_beta1, base_momentums, max_momentums


def _lambdas_state(lr_lambdas: list) -> list:
    """The state of the callables that are objects (not plain functions or lambdas),
    which ``state_dict`` can save: their ``__dict__``."""
    return [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in lr_lambdas]


def _wrap_optimizer_step(scheduler: LRScheduler) -> None:
    """Makes ``optimizer.step`` record that it was called, for the step-order warning
    (PyTorch's ``patch_track_step_called``). An optimizer whose ``step`` cannot be
    replaced is left alone, and the warning is then never given."""
    optimizer = scheduler.optimizer
    step = getattr(optimizer, "step", None)
    if step is None or hasattr(step, "_wrapped_by_lr_sched"):
        return
    func = getattr(step, "__func__", None)
    if func is None:
        return
    # A weak reference, so that the optimizer does not keep itself alive through the
    # wrapper stored in its own __dict__.
    opt_ref = ref(optimizer)

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        opt = opt_ref()
        opt._opt_called = True  # type: ignore[union-attr]
        return func.__get__(opt, opt.__class__)(*args, **kwargs)

    wrapper._wrapped_by_lr_sched = True  # type: ignore[attr-defined]
    try:
        optimizer.step = wrapper
    except (AttributeError, TypeError):
        pass


class _Flag:
    """Sets ``obj.<name>`` to True inside a ``with`` block."""

    def __init__(self, obj: Any, name: str) -> None:
        self.obj, self.name = obj, name

    def __enter__(self) -> None:
        setattr(self.obj, self.name, True)

    def __exit__(self, *exc: Any) -> None:
        setattr(self.obj, self.name, False)


class LRScheduler:
    """Base class of the schedulers: adjusts each param group's ``lr`` at every
    ``step()``.

    A subclass implements ``get_lr()``, the new lrs computed from the current ones and
    ``last_epoch`` (the chainable form), and may implement ``_get_closed_form_lr()``,
    the lrs as a function of ``last_epoch`` alone (used by the deprecated
    ``step(epoch)``).

    Args:
        optimizer: an optimizer with ``param_groups``.
        last_epoch (int): the index of the last epoch when resuming (default -1, a
            fresh start, which records each group's ``initial_lr``).

    Example:
        >>> scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
        >>> for epoch in range(100):
        ...     train(...)
        ...     scheduler.step()
    """

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Any, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy_value(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\nThis typically happens "
                        "when:\n1. You're trying to resume training from a checkpoint but "
                        "haven't properly loaded the optimizer state\n2. You're using "
                        "last_epoch >= 0 for a fresh training run (not recommended)"
                    )
        self.base_lrs: list = _param_groups_val_list(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _wrap_optimizer_step(self)
        self._initial_step()

    def _initial_step(self) -> None:
        """The step made at construction: sets the lrs of epoch ``last_epoch + 1``."""
        self._step_count = 0
        with _Flag(self, "_is_initial"):
            self.step()

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state: every attribute except the optimizer."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The lrs the last ``step()`` set, one per param group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The lrs of the current ``last_epoch`` (called by ``step()``)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advances one epoch (or, deprecated, jumps to ``epoch``) and writes the new lrs
        into the param groups."""
        if self._step_count == 1:
            step = getattr(self.optimizer, "step", None)
            if hasattr(step, "_wrapped_by_lr_sched"):
                if not getattr(self.optimizer, "_opt_called", False):
                    warnings.warn(_STEP_ORDER_WARNING, UserWarning, stacklevel=2)
            elif hasattr(step, "__func__"):
                # A Python method, so it was wrapped: someone replaced it since.
                warnings.warn(_STEP_OVERRIDDEN_WARNING, UserWarning, stacklevel=2)
            # else a step that cannot be wrapped (native): no way to tell
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        with _Flag(self, "_get_lr_called_within_step"):
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                if hasattr(self, "_get_closed_form_lr"):
                    values = self._get_closed_form_lr()
                else:
                    values = self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _current_lrs(self) -> list:
        return _param_groups_val_list(self.optimizer, "lr")

    def _scaled_lrs(self, factor: float) -> list:
        return [group["lr"] * factor for group in self.optimizer.param_groups]


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    if not scheduler._get_lr_called_within_step:
        warnings.warn(
            "To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
            UserWarning,
            stacklevel=3,
        )


class _LRScheduler(LRScheduler):
    """The old name of :class:`LRScheduler`."""


def _lambda_list(optimizer: Any, lr_lambda: Any) -> list:
    if not isinstance(lr_lambda, (list, tuple)):
        return [lr_lambda] * len(optimizer.param_groups)
    if len(lr_lambda) != len(optimizer.param_groups):
        raise ValueError(
            f"Expected {len(optimizer.param_groups)} lr_lambdas, but got {len(lr_lambda)}"
        )
    return list(lr_lambda)


class _LambdaScheduler(LRScheduler):
    """LambdaLR and MultiplicativeLR: a callable per param group, whose object state
    (not a plain function) goes into the state dict."""

    def __init__(self, optimizer: Any, lr_lambda: Any, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _lambda_list(optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; of the lambdas, only callable objects' ``__dict__``."""
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "lr_lambdas")
        }
        state["lr_lambdas"] = _lambdas_state(self.lr_lambdas)
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`."""
        state = dict(state_dict)
        lr_lambdas = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """Sets each group's lr to ``initial_lr * lr_lambda(epoch)``.

    Args:
        optimizer: the optimizer.
        lr_lambda (Callable or list): a function of the epoch, or one per param group.
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = LambdaLR(optimizer, lr_lambda=lambda epoch: 0.95**epoch)
    """

    def get_lr(self) -> list:
        """``base_lr * lr_lambda(last_epoch)`` per group."""
        _warn_get_lr_called_within_step(self)
        return [
            base_lr * lmbda(self.last_epoch)
            for lmbda, base_lr in zip(self.lr_lambdas, self.base_lrs)
        ]


class MultiplicativeLR(_LambdaScheduler):
    """Multiplies each group's lr by ``lr_lambda(epoch)`` at every step.

    Args:
        optimizer: the optimizer.
        lr_lambda (Callable or list): a function of the epoch, or one per param group.
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = MultiplicativeLR(optimizer, lr_lambda=lambda epoch: 0.95)
    """

    def __init__(self, optimizer: Any, lr_lambda: Any, last_epoch: int = -1) -> None:
        for fn in _lambda_list(optimizer, lr_lambda):
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, lr_lambda, last_epoch)

    def get_lr(self) -> list:
        """The current lr times ``lr_lambda(last_epoch)`` (unchanged at construction)."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return self._current_lrs()
        return [
            group["lr"] * lmbda(self.last_epoch)
            for lmbda, group in zip(self.lr_lambdas, self.optimizer.param_groups)
        ]


class StepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every ``step_size`` epochs.

    Args:
        optimizer: the optimizer.
        step_size (int): the period of the decay.
        gamma (float): the factor (default 0.1).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = StepLR(optimizer, step_size=30, gamma=0.1)
    """

    def __init__(
        self, optimizer: Any, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current lr, times ``gamma`` at a multiple of ``step_size``."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr * self.gamma ** (self.last_epoch // self.step_size) for base_lr in self.base_lrs
        ]


class MultiStepLR(LRScheduler):
    """Multiplies the lr by ``gamma`` at each milestone (twice for a repeated one).

    Args:
        optimizer: the optimizer.
        milestones (iterable of int): the epochs at which to decay.
        gamma (float): the factor (default 0.1).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = MultiStepLR(optimizer, milestones=[30, 80], gamma=0.1)
    """

    def __init__(
        self, optimizer: Any, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current lr, times ``gamma ** count`` at a milestone."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [
            base_lr * self.gamma ** bisect_right(milestones, self.last_epoch)
            for base_lr in self.base_lrs
        ]


class ConstantLR(LRScheduler):
    """Multiplies the lr by ``factor`` until epoch ``total_iters``.

    Args:
        optimizer: the optimizer.
        factor (float): the factor, in [0, 1] (default 1/3).
        total_iters (int): the epoch at which the factor is lifted (default 5).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = ConstantLR(optimizer, factor=0.5, total_iters=4)
    """

    def __init__(
        self,
        optimizer: Any,
        factor: float = 1.0 / 3,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """``factor`` applied at epoch 0, undone at ``total_iters``."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return self._scaled_lrs(self.factor)
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return self._scaled_lrs(1.0 / self.factor)

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
            for base_lr in self.base_lrs
        ]


class LinearLR(LRScheduler):
    """Scales the lr by a factor going linearly from ``start_factor`` to ``end_factor``
    over ``total_iters`` epochs.

    Args:
        optimizer: the optimizer.
        start_factor (float): in (0, 1] (default 1/3).
        end_factor (float): in [0, 1] (default 1).
        total_iters (int): the length of the ramp (default 5).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = LinearLR(optimizer, start_factor=0.5, total_iters=4)
    """

    def __init__(
        self,
        optimizer: Any,
        start_factor: float = 1.0 / 3,
        end_factor: float = 1.0,
        total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                "equal to 1."
            )
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current lr times the ratio of this epoch's factor to the last one's."""
        _warn_get_lr_called_within_step(self)
        if self.last_epoch == 0:
            return self._scaled_lrs(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return self._scaled_lrs(ratio)

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr
            * (
                self.start_factor
                + (self.end_factor - self.start_factor)
                * min(self.total_iters, self.last_epoch)
                / self.total_iters
            )
            for base_lr in self.base_lrs
        ]


class ExponentialLR(LRScheduler):
    """Multiplies the lr by ``gamma`` every epoch.

    Args:
        optimizer: the optimizer.
        gamma (float): the factor.
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = ExponentialLR(optimizer, gamma=0.9)
    """

    def __init__(self, optimizer: Any, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current lr times ``gamma`` (unchanged at construction)."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return self._current_lrs()
        return self._scaled_lrs(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base_lr * self.gamma**self.last_epoch for base_lr in self.base_lrs]


def _check_composed(owner: str, optimizer: Any, schedulers: Sequence[Any]) -> None:
    """The checks SequentialLR and ChainedScheduler make on their schedulers."""
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{owner} at index {index} should have `optimizer` as its attribute.")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{index} in the given schedulers sequence."
            )
        if optimizer != scheduler.optimizer:
            raise ValueError(
                f"{owner} expects all schedulers to belong to the same optimizer, but got "
                f"scheduler {scheduler.__class__.__name__} at index {index} has "
                f"{scheduler.optimizer}, which is different from "
                f"{optimizer.__class__.__name__}."
            )


class _ComposedScheduler(LRScheduler):
    """SequentialLR and ChainedScheduler: their state dict holds their schedulers'."""

    _schedulers: Sequence[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state, with each inner scheduler's state dict."""
        state = {
            key: value
            for key, value in self.__dict__.items()
            if key not in ("optimizer", "_schedulers")
        }
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`, inner schedulers included."""
        state = dict(state_dict)
        inner = state.pop("_schedulers")
        self.__dict__.update(state)
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


class SequentialLR(_ComposedScheduler):
    """Runs schedulers one after the other, switching at the milestones.

    Args:
        optimizer: the optimizer shared by all the schedulers.
        schedulers (list): the schedulers, in order.
        milestones (list of int): the epochs at which to switch (one fewer than the
            schedulers).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> warmup = ConstantLR(optimizer, factor=0.1, total_iters=2)
        >>> decay = ExponentialLR(optimizer, gamma=0.9)
        >>> scheduler = SequentialLR(optimizer, [warmup, decay], milestones=[2])
    """

    def __init__(
        self,
        optimizer: Any,
        schedulers: list[LRScheduler],
        milestones: list[int],
        last_epoch: int = -1,
    ) -> None:
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_composed(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                "than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # Undo the steps the schedulers made at construction, then redo the first one's.
        for group in self.optimizer.param_groups:
            _update_param_group_val(group, "lr", group["initial_lr"])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched: Any = None) -> None:
        """Steps back ``last_epoch`` of every (nested) scheduler by one."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Steps the scheduler of the current epoch; at a milestone, restarts the next
        one from its epoch 0."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class PolynomialLR(LRScheduler):
    """Decays the lr by ``(1 - epoch / total_iters) ** power`` of the initial lr.

    Args:
        optimizer: the optimizer.
        total_iters (int): the epochs of decay (default 5).
        power (float): the power (default 1).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = PolynomialLR(optimizer, total_iters=4, power=2.0)
    """

    def __init__(
        self, optimizer: Any, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1
    ) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The current lr times the ratio of successive decay factors."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        decay_factor = (
            (1.0 - self.last_epoch / self.total_iters)
            / (1.0 - (self.last_epoch - 1) / self.total_iters)
        ) ** self.power
        return self._scaled_lrs(decay_factor)

    def _get_closed_form_lr(self) -> list:
        return [
            base_lr
            * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
            for base_lr in self.base_lrs
        ]


class CosineAnnealingLR(LRScheduler):
    """Anneals the lr along a cosine from the initial lr to ``eta_min`` over ``T_max``
    epochs (and back up over the next ``T_max``, in the recursive form PyTorch uses).

    Args:
        optimizer: the optimizer.
        T_max (int): the half period.
        eta_min (float): the minimum lr (default 0).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = CosineAnnealingLR(optimizer, T_max=10)
    """

    def __init__(
        self, optimizer: Any, T_max: int, eta_min: float = 0.0, last_epoch: int = -1
    ) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The recursive cosine step from the current lr."""
        _warn_get_lr_called_within_step(self)
        if self._is_initial:
            return self._current_lrs()
        if self._step_count == 1 and self.last_epoch > 0:
            return [
                self.eta_min
                + (base_lr - self.eta_min)
                * (1 + math.cos(self.last_epoch * math.pi / self.T_max))
                / 2
                for base_lr in self.base_lrs
            ]
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return [
                group["lr"] + (base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
                for base_lr, group in zip(self.base_lrs, self.optimizer.param_groups)
            ]
        ratio = (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        )
        return [
            ratio * (group["lr"] - self.eta_min) + self.eta_min
            for group in self.optimizer.param_groups
        ]

    def _get_closed_form_lr(self) -> list:
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
            for base_lr in self.base_lrs
        ]


class ChainedScheduler(_ComposedScheduler):
    """Steps several schedulers together at every step (their effects compose).

    Args:
        schedulers (sequence): the schedulers, stepped in order.
        optimizer (optional): the optimizer (default: the first scheduler's).

    Example:
        >>> s1 = ConstantLR(optimizer, factor=0.1, total_iters=2)
        >>> s2 = ExponentialLR(optimizer, gamma=0.9)
        >>> scheduler = ChainedScheduler([s1, s2], optimizer=optimizer)
    """

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Any = None) -> None:
        name = self.__class__.__name__
        if len(schedulers) < 1:
            raise ValueError(
                f"{name} expects at least one scheduler to be chained, but got no scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        _check_composed(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")

    def step(self) -> None:  # type: ignore[override]
        """Steps every scheduler."""
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = _param_groups_val_list(self._schedulers[-1].optimizer, "lr")


class ReduceLROnPlateau(LRScheduler):
    """Reduces the lr by ``factor`` when a metric has stopped improving for more than
    ``patience`` epochs.

    Args:
        optimizer: the optimizer.
        mode (str): ``"min"`` (the metric should fall) or ``"max"``.
        factor (float): the reduction factor, < 1 (default 0.1).
        patience (int): epochs without improvement tolerated (default 10).
        threshold (float): the least change that counts as an improvement (default 1e-4).
        threshold_mode (str): ``"rel"`` (relative to the best) or ``"abs"``.
        cooldown (int): epochs after a reduction during which bad epochs are not counted.
        min_lr (float or list): a lower bound on the lr, or one per group (default 0).
        eps (float): reductions smaller than this are skipped (default 1e-8).

    Example:
        >>> scheduler = ReduceLROnPlateau(optimizer, "min")
        >>> for epoch in range(10):
        ...     scheduler.step(validate(...))
    """

    def __init__(
        self,
        optimizer: Any,
        mode: str = "min",
        factor: float = 0.1,
        patience: int = 10,
        threshold: float = 1e-4,
        threshold_mode: str = "rel",
        cooldown: int = 0,
        min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(
                    f"expected {len(optimizer.param_groups)} min_lrs, got {len(min_lr)}"
                )
            self.default_min_lr: float | None = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")
        self._init_is_better(mode=mode, threshold=threshold, threshold_mode=threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics: SupportsFloat, epoch: int | None = None) -> None:  # type: ignore[override]
        """Records the epoch's metric and reduces the lr if it has plateaued."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")

    def _reduce_lr(self, epoch: int) -> None:
        if len(self.optimizer.param_groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    "The number of param groups in the `optimizer` "
                    f"({len(self.optimizer.param_groups)}) differs from when "
                    f"`ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), usually due "
                    "to a new param group being added to the optimizer. Please modify the "
                    "`min_lrs` field to match the length of the `optimizer` param groups."
                )
            self.min_lrs = [self.default_min_lr] * len(self.optimizer.param_groups)
        for i, param_group in enumerate(self.optimizer.param_groups):
            old_lr = float(param_group["lr"])
            new_lr = max(old_lr * self.factor, self.min_lrs[i])
            if old_lr - new_lr > self.eps:
                _update_param_group_val(param_group, "lr", new_lr)

    @property
    def in_cooldown(self) -> bool:
        """Whether the scheduler is in its cooldown after a reduction."""
        return self.cooldown_counter > 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min" and self.threshold_mode == "abs":
            return a < best - self.threshold
        if self.mode == "max" and self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`."""
        self.__dict__.update(state_dict)
        self._init_is_better(
            mode=self.mode, threshold=self.threshold, threshold_mode=self.threshold_mode
        )


class CyclicLR(LRScheduler):
    """Cycles the lr between ``base_lr`` and ``max_lr`` (and the momentum inversely),
    stepped every batch.

    Args:
        optimizer: the optimizer.
        base_lr (float or list): the lower bound of the cycle.
        max_lr (float or list): the upper bound.
        step_size_up (int): iterations of the rising half (default 2000).
        step_size_down (int, optional): iterations of the falling half (default
            ``step_size_up``).
        mode (str): ``"triangular"``, ``"triangular2"`` (amplitude halves each cycle) or
            ``"exp_range"`` (amplitude times ``gamma ** iteration``); ignored when
            ``scale_fn`` is given.
        gamma (float): the ``exp_range`` base (default 1).
        scale_fn (Callable, optional): a custom amplitude scale.
        scale_mode (str): what ``scale_fn`` takes: ``"cycle"`` or ``"iterations"``.
        cycle_momentum (bool): cycle the momentum (or beta1) too (default True).
        base_momentum, max_momentum (float or list): the momentum bounds (0.8, 0.9).
        last_epoch (int): the last batch index when resuming (default -1).

    Example:
        >>> scheduler = CyclicLR(optimizer, base_lr=0.01, max_lr=0.1, step_size_up=4)
    """

    def __init__(
        self,
        optimizer: Any,
        base_lr: float | list[float],
        max_lr: float | list[float],
        step_size_up: int = 2000,
        step_size_down: int | None = None,
        mode: str = "triangular",
        gamma: float = 1.0,
        scale_fn: Callable[[float], float] | None = None,
        scale_mode: str = "cycle",
        cycle_momentum: bool = True,
        base_momentum: float = 0.8,
        max_momentum: float = 0.9,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _format_param("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                _update_param_group_val(group, "lr", lr)
        self.max_lrs = _format_param("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ["triangular", "triangular2", "exp_range"] and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_ref: Callable[[float], float]
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.use_beta1, self.base_momentums, self.max_momentums = _init_momentum_groups(
                optimizer, base_momentum, max_momentum, last_epoch
            )
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref = self._triangular_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref = self._triangular2_scale_fn
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """The amplitude scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma**x

    def get_lr(self) -> list:
        """The lr of this iteration in the cycle (and sets the momentum)."""
        _warn_get_lr_called_within_step(self)
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [
            base_lr + (max_lr - base_lr) * scale_factor * scale
            for base_lr, max_lr in zip(self.base_lrs, self.max_lrs)
        ]
        if self.cycle_momentum:
            for group, base_momentum, max_momentum in zip(
                self.optimizer.param_groups, self.base_momentums, self.max_momentums
            ):
                momentum = max_momentum - (max_momentum - base_momentum) * scale_factor * scale
                _set_momentum(group, momentum, self.use_beta1)
        return lrs

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state; of a custom ``scale_fn``, only a callable object's
        ``__dict__``."""
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`."""
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)  # type: ignore[union-attr]
        self._init_scale_fn()


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the initial lr to ``eta_min`` over ``T_i`` epochs, then a
    restart, with ``T_i`` multiplied by ``T_mult`` after each restart (SGDR).
    ``step(epoch)`` takes fractional epochs.

    Args:
        optimizer: the optimizer.
        T_0 (int): the epochs of the first cycle.
        T_mult (int): the cycle-length factor (default 1).
        eta_min (float): the minimum lr (default 0).
        last_epoch (int): the last epoch when resuming (default -1).

    Example:
        >>> scheduler = CosineAnnealingWarmRestarts(optimizer, T_0=10, T_mult=2)
        >>> for epoch in range(20):
        ...     for i in range(iters):
        ...         scheduler.step(epoch + i / iters)
    """

    def __init__(
        self,
        optimizer: Any,
        T_0: int,
        T_mult: int = 1,
        eta_min: float = 0.0,
        last_epoch: int = -1,
    ) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(
                f"Expected float or int eta_min, but got {eta_min} of type {type(eta_min)}"
            )
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        """The cosine at ``T_cur / T_i``."""
        _warn_get_lr_called_within_step(self)
        return [
            self.eta_min
            + (base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
            for base_lr in self.base_lrs
        ]

    def step(self, epoch: float | None = None) -> None:  # type: ignore[override]
        """Advances one epoch, or goes to the (possibly fractional) ``epoch``; no
        deprecation warning for ``epoch`` here, as in PyTorch."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        with _Flag(self, "_get_lr_called_within_step"):
            values = self.get_lr()
        for param_group, lr in zip(self.optimizer.param_groups, values):
            _update_param_group_val(param_group, "lr", lr)
        self._last_lr = _param_groups_val_list(self.optimizer, "lr")


class OneCycleLR(LRScheduler):
    """The 1cycle policy: the lr rises from ``max_lr / div_factor`` to ``max_lr`` then
    falls to ``initial_lr / final_div_factor`` (momentum inversely), stepped every batch.

    Args:
        optimizer: the optimizer.
        max_lr (float or list): the peak lr.
        total_steps (int, optional): the steps of the cycle; or give ``epochs`` and
            ``steps_per_epoch``.
        epochs, steps_per_epoch (int, optional): ``total_steps = epochs * steps_per_epoch``.
        pct_start (float): the fraction of the cycle spent rising (default 0.3).
        anneal_strategy (str): ``"cos"`` or ``"linear"``.
        cycle_momentum (bool): cycle the momentum (or beta1) too (default True).
        base_momentum, max_momentum (float or list): the momentum bounds (0.85, 0.95).
        div_factor (float): ``initial_lr = max_lr / div_factor`` (default 25).
        final_div_factor (float): ``min_lr = initial_lr / final_div_factor`` (default 1e4).
        three_phase (bool): a third phase that falls from ``initial_lr`` to ``min_lr``.
        last_epoch (int): the last batch index when resuming (default -1).

    Example:
        >>> scheduler = OneCycleLR(optimizer, max_lr=0.01, total_steps=100)
    """

    def __init__(
        self,
        optimizer: Any,
        max_lr: float | list[float],
        total_steps: int | None = None,
        epochs: int | None = None,
        steps_per_epoch: int | None = None,
        pct_start: float = 0.3,
        anneal_strategy: str = "cos",
        cycle_momentum: bool = True,
        base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95,
        div_factor: float = 25.0,
        final_div_factor: float = 1e4,
        three_phase: bool = False,
        last_epoch: int = -1,
    ) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not isinstance(epochs, int) or epochs <= 0:
                raise ValueError(f"Expected positive integer epochs, but got {epochs}")
            if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive integer steps_per_epoch, but got {steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        self._schedule_phases = self._phases(pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ["cos", "linear"]:
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}"
            )
        self._anneal_func_type = anneal_strategy
        max_lrs = _format_param("max_lr", self.optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(self.optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if self.cycle_momentum:
            self.use_beta1, _, _ = _init_momentum_groups(
                optimizer, base_momentum, max_momentum, last_epoch
            )
        super().__init__(optimizer, last_epoch)

    def _phases(self, pct_start: float, three_phase: bool) -> list[dict[str, Any]]:
        """Each phase's last step and the group keys it anneals between."""
        rise_end = float(pct_start * self.total_steps) - 1
        last = self.total_steps - 1

        def phase(end_step: float, lr: tuple[str, str], momentum: tuple[str, str]) -> dict:
            return {
                "end_step": end_step,
                "start_lr": lr[0],
                "end_lr": lr[1],
                "start_momentum": momentum[0],
                "end_momentum": momentum[1],
            }

        rise = phase(rise_end, ("initial_lr", "max_lr"), ("max_momentum", "base_momentum"))
        if not three_phase:
            fall = phase(last, ("max_lr", "min_lr"), ("base_momentum", "max_momentum"))
            return [rise, fall]
        fall = phase(
            float(2 * pct_start * self.total_steps) - 2,
            ("max_lr", "initial_lr"),
            ("base_momentum", "max_momentum"),
        )
        tail = phase(last, ("initial_lr", "min_lr"), ("max_momentum", "max_momentum"))
        return [rise, fall, tail]

    def _anneal_func(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start: float, end: float, pct: float) -> float:
        cos_out = math.cos(math.pi * pct) + 1
        return end + (start - end) / 2.0 * cos_out

    @staticmethod
    def _annealing_linear(start: float, end: float, pct: float) -> float:
        return (end - start) * pct + start

    def get_lr(self) -> list:
        """The lr of this step in its phase (and sets the momentum)."""
        _warn_get_lr_called_within_step(self)
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(
                f"Tried to step {step_num} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == len(self._schedule_phases) - 1:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(
                        self._anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    )
                    if self.cycle_momentum:
                        momentum = self._anneal_func(
                            group[phase["start_momentum"]], group[phase["end_momentum"]], pct
                        )
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = phase["end_step"]
        return lrs
