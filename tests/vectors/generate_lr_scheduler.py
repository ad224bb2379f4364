"""Generate tests/vectors/lr_scheduler.json: PyTorch's learning-rate (and momentum)
sequences for every scheduler of ``torch.optim.lr_scheduler``.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_lr_scheduler.py

Read by tests/python/test_lr_scheduler.py (not by the generic vector readers: the
schedulers are Python-only). A case is:

- ``optimizer``: ``"sgd"`` (``momentum`` in the groups and defaults) or ``"adam"``
  (``betas``), and ``groups``: each group's ``lr`` (and ``momentum`` / ``betas``, and
  ``initial_lr`` for a scheduler resumed with ``last_epoch``);
- ``scheduler``: ``{"class": name, "kwargs": {...}}``; ``SequentialLR`` and
  ``ChainedScheduler`` take ``"schedulers": [spec, ...]``; a kwarg that is a function
  (``lr_lambda``, ``scale_fn``) is named by a key of ``FUNCTIONS``;
- ``steps``: the number of ``optimizer.step(); scheduler.step(...)`` rounds, with
  ``metrics`` (ReduceLROnPlateau) or ``epochs`` (an explicit, possibly fractional,
  epoch per step) as the step's argument;
- ``resume_at`` (optional): after that many steps, a new optimizer and scheduler are
  built the same way and get the old ones' ``state_dict()`` through
  ``load_state_dict``; the remaining steps run on them.

Recorded: ``lr`` and ``last_lr`` (``get_last_lr()``) per group after construction and
after every step, and ``momentum`` (``momentum`` or ``betas[0]``) when it changes.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import torch
from torch.optim import lr_scheduler

OUT = Path(__file__).resolve().parent / "lr_scheduler.json"

# The functions a case can name (the reader defines the same ones).
FUNCTIONS = {
    "pow95": lambda epoch: 0.95**epoch,
    "warmup4": lambda epoch: min(1.0, (epoch + 1) / 4),
    "const09": lambda epoch: 0.9,
    "alternate": lambda epoch: 0.5 if epoch % 2 else 1.1,
    "half_per_cycle": lambda x: 0.5 ** (x - 1),
    "decay_iter": lambda x: 1 / (1 + 0.1 * x),
}


def make_optimizer(case: dict[str, Any]) -> torch.optim.Optimizer:
    groups = []
    for group in case["groups"]:
        params = {"params": [torch.zeros(1, requires_grad=True)], **group}
        if "betas" in params:
            params["betas"] = tuple(params["betas"])
        groups.append(params)
    if case["optimizer"] == "adam":
        return torch.optim.Adam(groups, lr=0.001)
    return torch.optim.SGD(groups, lr=0.001, momentum=0.9)


def function_arg(key: str, value: Any) -> Any:
    """A kwarg, with names of FUNCTIONS (alone or in a list) replaced by the functions."""
    if key not in ("lr_lambda", "scale_fn"):
        return value
    if isinstance(value, list):
        return [FUNCTIONS[name] for name in value]
    return FUNCTIONS[value]


def make_scheduler(spec: dict[str, Any], optimizer: torch.optim.Optimizer) -> Any:
    cls = getattr(lr_scheduler, spec["class"])
    kwargs = {key: function_arg(key, value) for key, value in spec.get("kwargs", {}).items()}
    if spec["class"] == "SequentialLR":
        inner = [make_scheduler(s, optimizer) for s in spec["schedulers"]]
        return cls(optimizer, inner, **kwargs)
    if spec["class"] == "ChainedScheduler":
        inner = [make_scheduler(s, optimizer) for s in spec["schedulers"]]
        return cls(inner, optimizer=optimizer)
    return cls(optimizer, **kwargs)


def momenta(optimizer: torch.optim.Optimizer) -> list[float]:
    return [
        group["betas"][0] if "betas" in group else group["momentum"]
        for group in optimizer.param_groups
    ]


def run(case: dict[str, Any]) -> dict[str, Any]:
    optimizer = make_optimizer(case)
    scheduler = make_scheduler(case["scheduler"], optimizer)
    lr, last_lr, momentum = [], [], []

    def record() -> None:
        lr.append([float(group["lr"]) for group in optimizer.param_groups])
        last_lr.append([float(x) for x in scheduler.get_last_lr()])
        momentum.append(momenta(optimizer))

    record()
    for step in range(case["steps"]):
        if step == case.get("resume_at"):
            new_optimizer = make_optimizer(case)
            new_scheduler = make_scheduler(case["scheduler"], new_optimizer)
            new_optimizer.load_state_dict(optimizer.state_dict())
            new_scheduler.load_state_dict(scheduler.state_dict())
            optimizer, scheduler = new_optimizer, new_scheduler
        optimizer.step()
        if "metrics" in case:
            scheduler.step(case["metrics"][step])
        elif "epochs" in case:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the epoch argument's deprecation
                scheduler.step(case["epochs"][step])
        else:
            scheduler.step()
        record()
    out = {**case, "lr": lr, "last_lr": last_lr}
    if any(m != momentum[0] for m in momentum):
        out["momentum"] = momentum
    return out


def sgd(*lrs: float, **extra: Any) -> dict[str, Any]:
    return {"optimizer": "sgd", "groups": [{"lr": lr, "momentum": 0.9} for lr in lrs], **extra}


def adam(*lrs: float, **extra: Any) -> dict[str, Any]:
    groups = [{"lr": lr, "betas": [0.9, 0.999]} for lr in lrs]
    return {"optimizer": "adam", "groups": groups, **extra}


def sched(cls: str, **kwargs: Any) -> dict[str, Any]:
    return {"class": cls, "kwargs": kwargs}


PLATEAU_METRICS = [
    1.0, 0.9, 0.9, 0.9, 0.95, 0.91, 0.85, 0.85, 0.86, 0.87, 0.9, 0.84, 0.8401, 0.8402, 0.85,
    0.83, 0.84, 0.845, 0.85, 0.86, 0.7, 0.71, 0.72, 0.73, 0.74, 0.75, 0.76, 0.77, 0.78, 0.79,
]  # fmt: skip
RISING_METRICS = [1.0 - m for m in PLATEAU_METRICS]

CASES: list[dict[str, Any]] = [
    {"name": "step", **sgd(0.1), "scheduler": sched("StepLR", step_size=3), "steps": 30},
    {"name": "step_gamma_two_groups", **sgd(0.1, 0.02),
     "scheduler": sched("StepLR", step_size=4, gamma=0.5), "steps": 30, "resume_at": 10},
    {"name": "step_closed_form", **sgd(0.1), "scheduler": sched("StepLR", step_size=3),
     "steps": 6, "epochs": [3, 7, 2, 10, 0, 5]},
    {"name": "multistep", **sgd(0.1),
     "scheduler": sched("MultiStepLR", milestones=[3, 8, 8, 20], gamma=0.5), "steps": 30,
     "resume_at": 9},
    {"name": "multistep_closed_form", **sgd(0.1),
     "scheduler": sched("MultiStepLR", milestones=[2, 5, 5]), "steps": 5,
     "epochs": [1, 2, 5, 6, 3]},
    {"name": "exponential", **sgd(0.1, 0.3), "scheduler": sched("ExponentialLR", gamma=0.9),
     "steps": 30, "resume_at": 12},
    {"name": "cosine", **sgd(0.1), "scheduler": sched("CosineAnnealingLR", T_max=10),
     "steps": 30},
    {"name": "cosine_last_epoch", "optimizer": "sgd",
     "groups": [{"lr": 0.07, "momentum": 0.9, "initial_lr": 0.1}],
     "scheduler": sched("CosineAnnealingLR", T_max=10, last_epoch=4), "steps": 20},
    {"name": "step_last_epoch", "optimizer": "sgd",
     "groups": [{"lr": 0.05, "momentum": 0.9, "initial_lr": 0.1}],
     "scheduler": sched("StepLR", step_size=3, last_epoch=4), "steps": 10},
    {"name": "cyclic_last_epoch", "optimizer": "sgd",
     "groups": [{"lr": 0.05, "momentum": 0.85, "initial_lr": 0.01}],
     "scheduler": sched("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4,
                        cycle_momentum=False, last_epoch=5), "steps": 10},
    {"name": "cosine_eta_min", **sgd(0.1, 0.05),
     "scheduler": sched("CosineAnnealingLR", T_max=7, eta_min=0.001), "steps": 30,
     "resume_at": 11},
    {"name": "cosine_closed_form", **sgd(0.1),
     "scheduler": sched("CosineAnnealingLR", T_max=10, eta_min=0.01), "steps": 5,
     "epochs": [3, 10, 15, 20, 1]},
    {"name": "warm_restarts", **sgd(0.1),
     "scheduler": sched("CosineAnnealingWarmRestarts", T_0=5), "steps": 30},
    {"name": "warm_restarts_mult", **sgd(0.1),
     "scheduler": sched("CosineAnnealingWarmRestarts", T_0=3, T_mult=2, eta_min=0.001),
     "steps": 30, "resume_at": 8},
    {"name": "warm_restarts_fractional", **sgd(0.1),
     "scheduler": sched("CosineAnnealingWarmRestarts", T_0=2, T_mult=2, eta_min=0.01),
     "steps": 20, "epochs": [i / 4 for i in range(20)]},
    {"name": "warm_restarts_fractional_mult1", **sgd(0.1),
     "scheduler": sched("CosineAnnealingWarmRestarts", T_0=3),
     "steps": 12, "epochs": [0.0, 0.5, 1.25, 2.9, 3.0, 3.1, 5.5, 6.0, 7.75, 9.0, 2.5, 11.0]},
    {"name": "linear", **sgd(0.1), "scheduler": sched("LinearLR"), "steps": 30},
    {"name": "linear_custom", **sgd(0.1, 0.2),
     "scheduler": sched("LinearLR", start_factor=0.25, end_factor=0.75, total_iters=8),
     "steps": 30, "resume_at": 4},
    {"name": "linear_decreasing", **sgd(0.1),
     "scheduler": sched("LinearLR", start_factor=1.0, end_factor=0.1, total_iters=10),
     "steps": 15},
    {"name": "linear_closed_form", **sgd(0.1),
     "scheduler": sched("LinearLR", start_factor=0.5, total_iters=4), "steps": 4,
     "epochs": [1, 3, 6, 2]},
    {"name": "constant", **sgd(0.1), "scheduler": sched("ConstantLR"), "steps": 30},
    {"name": "constant_custom", **sgd(0.1, 0.4),
     "scheduler": sched("ConstantLR", factor=0.5, total_iters=3), "steps": 30,
     "resume_at": 2},
    {"name": "lambda_pow", **sgd(0.1), "scheduler": sched("LambdaLR", lr_lambda="pow95"),
     "steps": 30, "resume_at": 15},
    {"name": "lambda_per_group", **sgd(0.1, 0.2),
     "scheduler": sched("LambdaLR", lr_lambda=["warmup4", "pow95"]), "steps": 30},
    {"name": "multiplicative", **sgd(0.1),
     "scheduler": sched("MultiplicativeLR", lr_lambda="const09"), "steps": 30,
     "resume_at": 5},
    {"name": "multiplicative_per_group", **sgd(0.1, 0.2),
     "scheduler": sched("MultiplicativeLR", lr_lambda=["alternate", "const09"]), "steps": 30},
    {"name": "polynomial", **sgd(0.1), "scheduler": sched("PolynomialLR"), "steps": 30},
    {"name": "polynomial_power", **sgd(0.1, 0.05),
     "scheduler": sched("PolynomialLR", total_iters=12, power=2.0), "steps": 30,
     "resume_at": 6},
    {"name": "polynomial_closed_form", **sgd(0.1),
     "scheduler": sched("PolynomialLR", total_iters=4, power=0.5), "steps": 4,
     "epochs": [1, 3, 8, 2]},
    {"name": "onecycle_cos", **sgd(0.01),
     "scheduler": sched("OneCycleLR", max_lr=0.1, total_steps=30), "steps": 30},
    {"name": "onecycle_linear", **sgd(0.01, 0.02),
     "scheduler": sched("OneCycleLR", max_lr=[0.1, 0.2], total_steps=30, anneal_strategy="linear",
                        pct_start=0.4), "steps": 30, "resume_at": 13},
    {"name": "onecycle_three_phase", **sgd(0.01),
     "scheduler": sched("OneCycleLR", max_lr=0.1, epochs=5, steps_per_epoch=6, three_phase=True,
                        div_factor=10.0, final_div_factor=100.0), "steps": 30},
    {"name": "onecycle_three_phase_linear", **sgd(0.01),
     "scheduler": sched("OneCycleLR", max_lr=0.1, total_steps=30, three_phase=True,
                        anneal_strategy="linear", base_momentum=0.8, max_momentum=0.9),
     "steps": 30},
    {"name": "onecycle_adam", **adam(0.001),
     "scheduler": sched("OneCycleLR", max_lr=0.01, total_steps=30), "steps": 30,
     "resume_at": 20},
    {"name": "onecycle_no_momentum", **sgd(0.01),
     "scheduler": sched("OneCycleLR", max_lr=0.05, total_steps=30, cycle_momentum=False),
     "steps": 30},
    {"name": "cyclic_triangular", **sgd(0.01),
     "scheduler": sched("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=4), "steps": 30},
    {"name": "cyclic_triangular2", **sgd(0.01, 0.02),
     "scheduler": sched("CyclicLR", base_lr=[0.01, 0.02], max_lr=[0.1, 0.3], step_size_up=3,
                        step_size_down=5, mode="triangular2"), "steps": 30, "resume_at": 10},
    {"name": "cyclic_exp_range", **sgd(0.01),
     "scheduler": sched("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=5, mode="exp_range",
                        gamma=0.95), "steps": 30},
    {"name": "cyclic_adam", **adam(0.001),
     "scheduler": sched("CyclicLR", base_lr=0.001, max_lr=0.01, step_size_up=4,
                        base_momentum=0.85, max_momentum=0.95), "steps": 30},
    {"name": "cyclic_scale_fn_cycle", **sgd(0.01),
     "scheduler": sched("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=3,
                        scale_fn="half_per_cycle", cycle_momentum=False), "steps": 30},
    {"name": "cyclic_scale_fn_iterations", **sgd(0.01),
     "scheduler": sched("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=3,
                        scale_fn="decay_iter", scale_mode="iterations"), "steps": 30},
    {"name": "sequential", **sgd(0.1),
     "scheduler": {"class": "SequentialLR", "kwargs": {"milestones": [5]},
                   "schedulers": [sched("LinearLR", start_factor=0.2, total_iters=5),
                                  sched("CosineAnnealingLR", T_max=25)]},
     "steps": 30, "resume_at": 7},
    {"name": "sequential_three", **sgd(0.1, 0.2),
     "scheduler": {"class": "SequentialLR", "kwargs": {"milestones": [3, 10]},
                   "schedulers": [sched("ConstantLR", factor=0.1, total_iters=3),
                                  sched("ExponentialLR", gamma=0.9),
                                  sched("StepLR", step_size=4, gamma=0.5)]},
     "steps": 30},
    {"name": "chained", **sgd(0.1),
     "scheduler": {"class": "ChainedScheduler",
                   "schedulers": [sched("ConstantLR", factor=0.1, total_iters=2),
                                  sched("ExponentialLR", gamma=0.9)]},
     "steps": 30, "resume_at": 5},
    {"name": "chained_three", **sgd(0.1),
     "scheduler": {"class": "ChainedScheduler",
                   "schedulers": [sched("LinearLR", start_factor=0.5, total_iters=4),
                                  sched("StepLR", step_size=5, gamma=0.5),
                                  sched("MultiplicativeLR", lr_lambda="const09")]},
     "steps": 30},
    {"name": "plateau_min_rel", **sgd(0.1),
     "scheduler": sched("ReduceLROnPlateau", patience=2), "steps": 30,
     "metrics": PLATEAU_METRICS},
    {"name": "plateau_min_abs_cooldown", **sgd(0.1, 0.01),
     "scheduler": sched("ReduceLROnPlateau", patience=1, threshold=0.02,
                        threshold_mode="abs", cooldown=2, factor=0.5, min_lr=[0.01, 0.004]),
     "steps": 30, "metrics": PLATEAU_METRICS, "resume_at": 9},
    {"name": "plateau_max_rel", **sgd(0.1),
     "scheduler": sched("ReduceLROnPlateau", mode="max", patience=1, factor=0.5, min_lr=0.02),
     "steps": 30, "metrics": RISING_METRICS},
    {"name": "plateau_max_abs_eps", **sgd(0.1),
     "scheduler": sched("ReduceLROnPlateau", mode="max", patience=0, threshold=0.01,
                        threshold_mode="abs", factor=0.9, eps=0.005),
     "steps": 30, "metrics": RISING_METRICS},
]  # fmt: skip


def main() -> None:
    """Writes lr_scheduler.json."""
    cases = [run(case) for case in CASES]
    for case in cases:
        assert all(math.isfinite(x) for row in case["lr"] for x in row), case["name"]
    # One case a line: small diffs when a case changes.
    lines = ",\n".join("  " + json.dumps(case) for case in cases)
    OUT.write_text(f'{{\n "torch_version": "{torch.__version__}",\n "cases": [\n{lines}\n ]\n}}\n')
    print(f"wrote {OUT} ({len(cases)} cases)")


if __name__ == "__main__":
    main()
