"""``Adagrad`` (PyTorch's ``torch.optim.Adagrad``)."""

from __future__ import annotations

from typing import Any

from .optimizer import Optimizer, _check, _check_lr, _scalar_state_tensor

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, with learning-rate decay; PyTorch's update rule, run in Rust. Its
    state (``step`` and ``sum``) exists from construction, as in PyTorch.

    Args:
        params: tensors or param group dicts.
        lr: learning rate.
        lr_decay: learning rate decay.
        weight_decay: L2 penalty.
        initial_accumulator_value: start value of the ``sum`` accumulator.
        eps: added to the denominator.
        maximize: ascend instead of descend.

    Example:
        >>> w = rustgrad.ones(2, requires_grad=True)
        >>> opt = rustgrad.optim.Adagrad([w], lr=0.1)
        >>> opt.state[w]["sum"]
        tensor([0., 0.])
    """

    _native_kind = "Adagrad"

    def __init__(
        self,
        params: Any,
        lr: float = 1e-2,
        lr_decay: float = 0,
        weight_decay: float = 0,
        initial_accumulator_value: float = 0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        _check_lr(lr)
        _check(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        _check(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        _check(
            0.0 <= initial_accumulator_value,
            f"Invalid initial_accumulator_value value: {initial_accumulator_value}",
        )
        _check(0.0 <= eps, f"Invalid epsilon value: {eps}")
        defaults = {
            "lr": lr,
            "lr_decay": lr_decay,
            "eps": eps,
            "weight_decay": weight_decay,
            "initial_accumulator_value": initial_accumulator_value,
            "foreach": foreach,
            "maximize": maximize,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _init_param_group_state(self, param_group: dict[str, Any]) -> None:
        from .. import full_like

        for p in param_group["params"]:
            state = self.state[p]
            state["step"] = _scalar_state_tensor(0.0)
            state["sum"] = full_like(p, param_group["initial_accumulator_value"])
