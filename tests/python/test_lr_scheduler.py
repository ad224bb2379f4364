"""rustgrad.optim.lr_scheduler against PyTorch's lr sequences (tests/vectors/lr_scheduler.json,
written by tests/vectors/generate_lr_scheduler.py), plus errors, warnings and state dicts.

The schedulers only use an optimizer's ``param_groups``, ``defaults`` and ``step``; the
tests drive them with ``StandInOptimizer`` (the vectors were made with torch.optim.SGD
and Adam).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch
from rustgrad.optim import lr_scheduler
from rustgrad.optim.lr_scheduler import (
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CosineAnnealingWarmRestarts,
    CyclicLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    OneCycleLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "lr_scheduler.json"
CASES = json.loads(VECTORS.read_text())["cases"]

# The functions the vector cases name (generate_lr_scheduler.py's FUNCTIONS).
FUNCTIONS = {
    "pow95": lambda epoch: 0.95**epoch,
    "warmup4": lambda epoch: min(1.0, (epoch + 1) / 4),
    "const09": lambda epoch: 0.9,
    "alternate": lambda epoch: 0.5 if epoch % 2 else 1.1,
    "half_per_cycle": lambda x: 0.5 ** (x - 1),
    "decay_iter": lambda x: 1 / (1 + 0.1 * x),
}


class StandInOptimizer:
    """The optimizer interface the schedulers use: ``param_groups``, ``defaults``,
    ``step``, ``state_dict``/``load_state_dict`` of the groups."""

    def __init__(self, groups: list[dict[str, Any]], **defaults: Any) -> None:
        self.param_groups = [dict(group) for group in groups]
        self.defaults = defaults
        self.steps = 0

    def step(self) -> None:
        self.steps += 1

    def state_dict(self) -> dict[str, Any]:
        return {"param_groups": copy.deepcopy(self.param_groups)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.param_groups = copy.deepcopy(state_dict["param_groups"])


def sgd(*lrs: float) -> StandInOptimizer:
    return StandInOptimizer([{"lr": lr, "momentum": 0.9} for lr in lrs], lr=0.001, momentum=0.9)


def make_optimizer(case: dict[str, Any]) -> Any:
    """The case's optimizer as rustgrad.optim builds it: one parameter per group."""
    groups = []
    for group in case["groups"]:
        group = dict(group, params=[torch.nn.Parameter(torch.zeros(2))])
        if "betas" in group:
            group["betas"] = tuple(group["betas"])
        groups.append(group)
    if case["optimizer"] == "adam":
        return torch.optim.Adam(groups, lr=0.001, betas=(0.9, 0.999))
    return torch.optim.SGD(groups, lr=0.001, momentum=0.9)


def function_arg(key: str, value: Any) -> Any:
    if key not in ("lr_lambda", "scale_fn"):
        return value
    if isinstance(value, list):
        return [FUNCTIONS[name] for name in value]
    return FUNCTIONS[value]


def make_scheduler(spec: dict[str, Any], optimizer: Any) -> Any:
    cls = getattr(lr_scheduler, spec["class"])
    kwargs = {key: function_arg(key, value) for key, value in spec.get("kwargs", {}).items()}
    if spec["class"] == "SequentialLR":
        inner = [make_scheduler(s, optimizer) for s in spec["schedulers"]]
        return cls(optimizer, inner, **kwargs)
    if spec["class"] == "ChainedScheduler":
        inner = [make_scheduler(s, optimizer) for s in spec["schedulers"]]
        return cls(inner, optimizer=optimizer)
    return cls(optimizer, **kwargs)


def momenta(optimizer: Any) -> list[float]:
    return [
        group["betas"][0] if "betas" in group else group["momentum"]
        for group in optimizer.param_groups
    ]


def close(actual: list[list[float]], expected: list[list[float]]) -> bool:
    return len(actual) == len(expected) and all(
        len(a) == len(e)
        and all(math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15) for x, y in zip(a, e))
        for a, e in zip(actual, expected)
    )


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_sequence_matches_pytorch(case: dict[str, Any]) -> None:
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
            if case["scheduler"]["class"] == "CosineAnnealingWarmRestarts":
                scheduler.step(case["epochs"][step])  # no deprecation warning here
            else:
                with pytest.warns(UserWarning, match="epoch parameter in `scheduler.step"):
                    scheduler.step(case["epochs"][step])
        else:
            scheduler.step()
        record()
    assert close(lr, case["lr"]), (lr, case["lr"])
    assert close(last_lr, case["last_lr"]), (last_lr, case["last_lr"])
    if "momentum" in case:
        assert close(momentum, case["momentum"]), (momentum, case["momentum"])
    else:
        assert all(m == momentum[0] for m in momentum)


def test_every_scheduler_has_vectors() -> None:
    covered = set()

    def visit(spec: dict[str, Any]) -> None:
        covered.add(spec["class"])
        for inner in spec.get("schedulers", []):
            visit(inner)

    for case in CASES:
        visit(case["scheduler"])
    public = {name for name in lr_scheduler.__all__ if name != "LRScheduler"}
    assert public <= covered, public - covered
    assert any("resume_at" in case for case in CASES)


# ---------------------------------------------------------------------------------------
# Behaviour beyond the vectors


def test_get_last_lr_is_a_snapshot() -> None:
    optimizer = sgd(0.1)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    last = scheduler.get_last_lr()
    optimizer.param_groups[0]["lr"] = 7.0
    assert last == [0.1]
    assert scheduler.get_last_lr() == [0.1]
    optimizer.step()
    scheduler.step()
    assert scheduler.get_last_lr() == [3.5]  # chainable: from the group's current lr


def test_initial_lr_and_base_lrs() -> None:
    optimizer = sgd(0.1, 0.2)
    scheduler = ExponentialLR(optimizer, gamma=0.5)
    assert [g["initial_lr"] for g in optimizer.param_groups] == [0.1, 0.2]
    assert scheduler.base_lrs == [0.1, 0.2]
    assert scheduler.last_epoch == 0


def test_resume_needs_initial_lr() -> None:
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups"):
        StepLR(sgd(0.1), step_size=2, last_epoch=3)
    optimizer = sgd(0.1)
    optimizer.param_groups[0]["initial_lr"] = 0.1
    scheduler = StepLR(optimizer, step_size=2, last_epoch=3)
    assert scheduler.last_epoch == 4


def test_not_an_optimizer() -> None:
    for make in (
        lambda o: StepLR(o, 2),
        lambda o: ReduceLROnPlateau(o),
        lambda o: CyclicLR(o, 0.1, 1.0),
        lambda o: OneCycleLR(o, 1.0, total_steps=10),
    ):
        with pytest.raises(TypeError, match="object is not an Optimizer"):
            make(object())


def test_step_before_optimizer_step_warns() -> None:
    optimizer = sgd(0.1)
    scheduler = StepLR(optimizer, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before"):
        scheduler.step()
    # once only
    scheduler.step()
    # and not when the optimizer stepped first
    optimizer = sgd(0.1)
    scheduler = StepLR(optimizer, step_size=2)
    optimizer.step()
    scheduler.step()
    assert optimizer.steps == 1  # the wrapped step still runs the optimizer's


def test_overridden_optimizer_step_warns() -> None:
    optimizer = sgd(0.1)
    scheduler = StepLR(optimizer, step_size=2)
    optimizer.step = StandInOptimizer.step.__get__(optimizer)  # replaces the wrapper
    with pytest.warns(UserWarning, match="Seems like `optimizer.step\\(\\)` has been overridden"):
        scheduler.step()


def test_get_lr_outside_step_warns() -> None:
    scheduler = StepLR(sgd(0.1), step_size=2)
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        scheduler.get_lr()


def test_state_dict_holds_no_optimizer() -> None:
    optimizer = sgd(0.1)
    scheduler = MultiStepLR(optimizer, milestones=[2, 4])
    state = scheduler.state_dict()
    assert "optimizer" not in state
    assert state["last_epoch"] == 0 and state["base_lrs"] == [0.1]
    other = MultiStepLR(sgd(0.1), milestones=[9])
    other.load_state_dict(state)
    assert other.milestones == scheduler.milestones


class Decay:
    """A callable object: its state goes into LambdaLR's state dict."""

    def __init__(self, rate: float) -> None:
        self.rate = rate

    def __call__(self, epoch: int) -> float:
        return self.rate**epoch


def test_lambda_state_dict_saves_callable_objects() -> None:
    optimizer = sgd(0.1, 0.2)
    scheduler = LambdaLR(optimizer, [Decay(0.5), lambda epoch: 1.0])
    state = scheduler.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]
    other_decay = Decay(0.9)
    other = LambdaLR(sgd(0.1, 0.2), [other_decay, lambda epoch: 1.0])
    other.load_state_dict(state)
    assert other_decay.rate == 0.5
    assert state["lr_lambdas"] == [{"rate": 0.5}, None]  # the argument is left intact
    optimizer.step()
    other.optimizer.step()
    scheduler.step()
    other.step()
    assert other.get_last_lr() == scheduler.get_last_lr() == [0.05, 0.2]


def test_cyclic_state_dict() -> None:
    optimizer = sgd(0.1)
    scheduler = CyclicLR(optimizer, 0.01, 0.1, step_size_up=2, mode="triangular2")
    state = scheduler.state_dict()
    assert "_scale_fn_ref" not in state and state["_scale_fn_custom"] is None
    other = CyclicLR(sgd(0.1), 0.01, 0.1, step_size_up=2)
    other.load_state_dict(state)
    assert other.mode == "triangular2"
    assert other.scale_fn(3) == 0.25


def test_plateau_state_dict_restores_comparison() -> None:
    scheduler = ReduceLROnPlateau(sgd(0.1), mode="max", threshold_mode="abs")
    scheduler.step(1.0)
    other = ReduceLROnPlateau(sgd(0.1))
    other.load_state_dict(scheduler.state_dict())
    assert other.mode == "max" and other.mode_worse == -math.inf and other.best == 1.0


def test_custom_scheduler_subclass() -> None:
    class Halving(LRScheduler):
        def get_lr(self) -> list[float]:
            return [base / 2**self.last_epoch for base in self.base_lrs]

    optimizer = sgd(1.0)
    scheduler = Halving(optimizer)
    lrs = [scheduler.get_last_lr()[0]]
    for _ in range(3):
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])
    assert lrs == [1.0, 0.5, 0.25, 0.125]
    assert issubclass(lr_scheduler._LRScheduler, LRScheduler)


def test_tensor_lr_is_filled_in_place() -> None:
    lr = torch.tensor(0.1, dtype=torch.float64)
    optimizer = StandInOptimizer([{"lr": lr, "momentum": 0.9}], lr=0.1, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.5)
    assert optimizer.param_groups[0]["initial_lr"] is not lr
    for _ in range(2):
        optimizer.step()
        scheduler.step()
    assert optimizer.param_groups[0]["lr"] is lr
    assert lr.item() == pytest.approx(0.025, rel=1e-15)
    last = scheduler.get_last_lr()[0]
    assert last is not lr and last.item() == lr.item()


def test_errors() -> None:
    cases = [
        (lambda: ConstantLR(sgd(0.1), factor=1.5), "between 0 and 1"),
        (lambda: LinearLR(sgd(0.1), start_factor=0), "greater than 0 and less or equal to 1"),
        (lambda: LinearLR(sgd(0.1), end_factor=2), "Ending multiplicative factor"),
        (lambda: LambdaLR(sgd(0.1, 0.2), [FUNCTIONS["pow95"]]), "Expected 2 lr_lambdas, but got 1"),
        (lambda: ReduceLROnPlateau(sgd(0.1), factor=1.0), "Factor should be < 1.0."),
        (lambda: ReduceLROnPlateau(sgd(0.1), mode="avg"), "mode avg is unknown!"),
        (lambda: ReduceLROnPlateau(sgd(0.1), threshold_mode="x"), "threshold mode x is unknown!"),
        (lambda: ReduceLROnPlateau(sgd(0.1), min_lr=[0.1, 0.2]), "expected 1 min_lrs, got 2"),
        (lambda: CosineAnnealingWarmRestarts(sgd(0.1), T_0=0), "Expected positive integer T_0"),
        (lambda: CosineAnnealingWarmRestarts(sgd(0.1), T_0=2, T_mult=0), "T_mult >= 1"),
        (lambda: CosineAnnealingWarmRestarts(sgd(0.1), 2, eta_min="0"), "float or int eta_min"),
        (
            lambda: CyclicLR(sgd(0.1), 0.1, 1.0, mode="square"),
            "mode is invalid and scale_fn is None",
        ),
        (
            lambda: CyclicLR(StandInOptimizer([{"lr": 0.1}], lr=0.1), 0.1, 1.0),
            "optimizer must support momentum or beta1",
        ),
        (lambda: CyclicLR(sgd(0.1), [0.1, 0.2], 1.0), "base_lr must have the same length"),
        (lambda: OneCycleLR(sgd(0.1), 1.0), "You must define either total_steps OR"),
        (lambda: OneCycleLR(sgd(0.1), 1.0, total_steps=0), "Expected positive integer total_steps"),
        (lambda: OneCycleLR(sgd(0.1), 1.0, epochs=0, steps_per_epoch=3), "positive integer epochs"),
        (lambda: OneCycleLR(sgd(0.1), 1.0, 10, pct_start=1.5), "Expected float between 0 and 1"),
        (lambda: OneCycleLR(sgd(0.1), 1.0, 10, anneal_strategy="exp"), "must be one of 'cos'"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()
    with pytest.raises(TypeError, match="lr_lambda should be a function, but got int"):
        MultiplicativeLR(sgd(0.1), lr_lambda=3)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        CosineAnnealingWarmRestarts(sgd(0.1), T_0=2).step(-1)


def test_onecycle_past_total_steps() -> None:
    optimizer = sgd(0.1)
    scheduler = OneCycleLR(optimizer, max_lr=1.0, total_steps=3)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    with pytest.raises(ValueError, match="Tried to step 4 times. The specified number of total"):
        scheduler.step()


def test_composition_errors() -> None:
    optimizer = sgd(0.1)
    a = ExponentialLR(optimizer, 0.9)
    b = StepLR(optimizer, 2)
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        SequentialLR(optimizer, [], [])
    with pytest.raises(ValueError, match="number of milestones to be equal to 2"):
        SequentialLR(optimizer, [a, b], [2, 3])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        SequentialLR(optimizer, [a, ReduceLROnPlateau(optimizer)], [2])
    with pytest.raises(ValueError, match="expects all schedulers to belong to the same optimizer"):
        SequentialLR(optimizer, [a, StepLR(sgd(0.1), 2)], [2])
    with pytest.raises(TypeError, match="at index 1 should have `optimizer` as its attribute"):
        ChainedScheduler([a, object()])
    with pytest.raises(ValueError, match="expects at least one scheduler to be chained"):
        ChainedScheduler([])


def test_plateau_reduce_respects_eps_and_min_lr() -> None:
    optimizer = sgd(0.1, 1e-9)
    scheduler = ReduceLROnPlateau(optimizer, patience=0, min_lr=[0.05, 0.0])
    for metric in (1.0, 2.0, 3.0):
        scheduler.step(metric)
    # 0.1 -> 0.05 (min_lr), then stays; 1e-9 * 0.1 differs by less than eps: unchanged
    assert scheduler.get_last_lr() == [0.05, 1e-9]
    assert scheduler.last_epoch == 3


def test_polynomial_and_cosine_shapes() -> None:
    # independent closed forms: (1 - t/T)^p and eta_min + (b - eta_min)(1 + cos(pi t/T))/2
    optimizer = sgd(0.2)
    poly = PolynomialLR(optimizer, total_iters=6, power=1.5)
    for t in range(1, 9):
        optimizer.step()
        poly.step()
        expected = 0.2 * (1 - min(t, 6) / 6) ** 1.5
        assert poly.get_last_lr()[0] == pytest.approx(expected, abs=1e-15)
    optimizer = sgd(0.2)
    cosine = CosineAnnealingLR(optimizer, T_max=8, eta_min=0.01)
    for t in range(1, 9):
        optimizer.step()
        cosine.step()
        expected = 0.01 + 0.19 * (1 + math.cos(math.pi * t / 8)) / 2
        assert cosine.get_last_lr()[0] == pytest.approx(expected, rel=1e-12)


def test_plateau_takes_a_tensor_metric() -> None:
    optimizer = sgd(0.1)
    scheduler = ReduceLROnPlateau(optimizer, patience=0, factor=0.5)
    scheduler.step(torch.tensor(1.0))
    scheduler.step(torch.tensor(2.0))
    assert scheduler.best == 1.0 and scheduler.get_last_lr() == [0.05]


def test_scheduled_lr_drives_the_optimizer_update() -> None:
    """StepLR's lr is the one SGD applies: the parameter moves by lr * grad each step."""
    w = torch.nn.Parameter(torch.zeros(3))
    optimizer = torch.optim.SGD([w], lr=0.5)
    scheduler = lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    expected = 0.0
    for lr in [0.5, 0.5, 0.05, 0.05, 0.005]:
        assert math.isclose(optimizer.param_groups[0]["lr"], lr, rel_tol=1e-12)
        optimizer.zero_grad()
        w.sum().backward()  # grad is 1 everywhere
        optimizer.step()
        scheduler.step()
        expected -= lr
        assert torch.allclose(w.detach(), torch.full((3,), expected), rtol=1e-6)
