"""rustgrad.optim against independent references.

- A numpy transcription of each optimizer's update rule (PyTorch's single-tensor
  formulas, written here from the published algorithms' PyTorch form), 20 steps in
  float64, for every option combination: bitwise equal.
- PyTorch-generated float32 trajectories and LBFGS runs (tests/vectors/optim.json, made
  by tests/vectors/generate_optim.py).
- A PyTorch optimizer state_dict (tests/vectors/optim_state.json, made by
  tests/vectors/generate_optim_state.py) that loads and resumes as PyTorch's does.
- PyTorch's bad-input messages, param groups, closures, grads that are None, edited
  ``lr``, in-place modified parameters, state_dict round trips, threads.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
from rustgrad import optim

VECTORS = Path(__file__).resolve().parents[1] / "vectors"


# ----- numpy references ---------------------------------------------------------------


def lerp(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """ATen's lerp, precise at both ends of the weight."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1.0 - weight)


class Reference:
    """One parameter's state and update, in numpy float64."""

    def __init__(self, name: str, options: dict[str, Any], param: np.ndarray) -> None:
        self.name = name
        self.o = options
        self.step = 0
        self.buf: dict[str, np.ndarray] = {}
        if name == "Adagrad":
            self.buf["sum"] = np.full_like(param, options.get("initial_accumulator_value", 0.0))
        self.mu_product = np.float32(1.0)

    def zeros(self, key: str, like: np.ndarray) -> np.ndarray:
        return self.buf.setdefault(key, np.zeros_like(like))

    def update(self, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        o = self.o
        name = self.name
        lr = o["lr"]
        wd = o.get("weight_decay", 0.0)
        maximize = o.get("maximize", False)
        decoupled = name == "AdamW" or o.get("decoupled_weight_decay", False)
        g = -g if maximize else g
        p = p.copy()
        if name != "SGD":
            self.step += 1
        step = float(self.step)
        if wd != 0:
            if decoupled:
                p = p * (1 - lr * wd)
            else:
                g = g + wd * p
        if name == "SGD":
            momentum = o.get("momentum", 0.0)
            if momentum != 0:
                if "momentum_buffer" not in self.buf:
                    self.buf["momentum_buffer"] = g.copy()
                else:
                    b = self.buf["momentum_buffer"]
                    self.buf["momentum_buffer"] = b * momentum + (1 - o.get("dampening", 0.0)) * g
                b = self.buf["momentum_buffer"]
                g = g + momentum * b if o.get("nesterov", False) else b
            return p + (-lr) * g
        if name in ("Adam", "AdamW"):
            b1, b2 = o.get("betas", (0.9, 0.999))
            m = self.buf["exp_avg"] = lerp(self.zeros("exp_avg", p), g, 1 - b1)
            v = self.buf["exp_avg_sq"] = self.zeros("exp_avg_sq", p) * b2 + (1 - b2) * g * g
            bc1, bc2 = 1 - b1**step, 1 - b2**step
            if o.get("amsgrad", False):
                v = self.buf["max_exp_avg_sq"] = np.maximum(self.zeros("max_exp_avg_sq", p), v)
            denom = np.sqrt(v) / bc2**0.5 + o.get("eps", 1e-8)
            return p + (-(lr / bc1)) * m / denom
        if name == "Adamax":
            b1, b2 = o.get("betas", (0.9, 0.999))
            m = self.buf["exp_avg"] = lerp(self.zeros("exp_avg", p), g, 1 - b1)
            u = self.buf["exp_inf"] = np.maximum(
                self.zeros("exp_inf", p) * b2, np.abs(g) + o.get("eps", 1e-8)
            )
            return p + (-(lr / (1 - b1**step))) * m / u
        if name == "NAdam":
            b1, b2 = o.get("betas", (0.9, 0.999))
            psi = o.get("momentum_decay", 4e-3)
            bc2 = 1 - b2**step
            mu = b1 * (1.0 - 0.5 * 0.96 ** (step * psi))
            mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
            # PyTorch keeps mu_product in a float32 tensor.
            self.mu_product = np.float32(self.mu_product * np.float32(mu))
            mp = float(self.mu_product)
            m = self.buf["exp_avg"] = lerp(self.zeros("exp_avg", p), g, 1 - b1)
            v = self.buf["exp_avg_sq"] = self.zeros("exp_avg_sq", p) * b2 + (1 - b2) * g * g
            denom = np.sqrt(v / bc2) + o.get("eps", 1e-8)
            p = p + (-lr * (1.0 - mu) / (1.0 - mp)) * g / denom
            return p + ((-lr * mu_next) / (1.0 - mp * mu_next)) * m / denom
        if name == "RAdam":
            b1, b2 = o.get("betas", (0.9, 0.999))
            m = self.buf["exp_avg"] = lerp(self.zeros("exp_avg", p), g, 1 - b1)
            v = self.buf["exp_avg_sq"] = self.zeros("exp_avg_sq", p) * b2 + (1 - b2) * g * g
            bc1, bc2 = 1 - b1**step, 1 - b2**step
            corrected = m / bc1
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * step * (b2**step) / bc2
            if rho_t > 5.0:
                rect = math.sqrt(
                    (rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)
                )
                # PyTorch's `number / tensor` is `tensor.reciprocal() * number`.
                adaptive = (1.0 / (np.sqrt(v) + o.get("eps", 1e-8))) * bc2**0.5
                return p - corrected * lr * adaptive * rect
            return p - corrected * lr
        if name == "RMSprop":
            alpha = o.get("alpha", 0.99)
            eps = o.get("eps", 1e-8)
            sq = self.buf["square_avg"] = self.zeros("square_avg", p) * alpha + (1 - alpha) * g * g
            if o.get("centered", False):
                ga = self.buf["grad_avg"] = lerp(self.zeros("grad_avg", p), g, 1 - alpha)
                avg = np.sqrt(sq + (-1.0) * ga * ga) + eps
            else:
                avg = np.sqrt(sq) + eps
            momentum = o.get("momentum", 0.0)
            if momentum > 0:
                b = self.buf["momentum_buffer"] = (
                    self.zeros("momentum_buffer", p) * momentum + g / avg
                )
                return p + (-lr) * b
            return p + (-lr) * g / avg
        if name == "Adagrad":
            clr = lr / (1 + (step - 1) * o.get("lr_decay", 0.0))
            s = self.buf["sum"] = self.buf["sum"] + g * g
            return p + (-clr) * g / (np.sqrt(s) + o.get("eps", 1e-10))
        if name == "Adadelta":
            rho = o.get("rho", 0.9)
            eps = o.get("eps", 1e-6)
            sq = self.buf["square_avg"] = self.zeros("square_avg", p) * rho + (1 - rho) * g * g
            acc = self.zeros("acc_delta", p)
            delta = np.sqrt(acc + eps) / np.sqrt(sq + eps) * g
            self.buf["acc_delta"] = acc * rho + (1 - rho) * delta * delta
            return p + (-lr) * delta
        raise AssertionError(name)


def combos(**choices: list[Any]) -> list[dict[str, Any]]:
    keys = list(choices)
    return [dict(zip(keys, values)) for values in itertools.product(*choices.values())]


CASES: list[tuple[str, dict[str, Any]]] = (
    [
        ("SGD", {"lr": 0.05, **c})
        for c in combos(
            momentum=[0.0, 0.9],
            dampening=[0.0, 0.2],
            weight_decay=[0.0, 0.1],
            nesterov=[False, True],
            maximize=[False, True],
        )
        if not (c["nesterov"] and (c["momentum"] == 0 or c["dampening"] != 0))
    ]
    + [
        (name, {"lr": 0.01, **c})
        for name in ("Adam", "AdamW")
        for c in combos(
            betas=[(0.9, 0.999), (0.6, 0.7)],
            weight_decay=[0.0, 0.1],
            amsgrad=[False, True],
            maximize=[False, True],
        )
    ]
    + [("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True})]
    + [
        ("Adamax", {"lr": 0.02, **c})
        for c in combos(weight_decay=[0.0, 0.1], maximize=[False, True], eps=[1e-8, 0.5])
    ]
    + [
        ("NAdam", {"lr": 0.02, **c})
        for c in combos(
            weight_decay=[0.0, 0.1],
            decoupled_weight_decay=[False, True],
            momentum_decay=[4e-3, 0.05],
            maximize=[False, True],
        )
    ]
    + [
        ("RAdam", {"lr": 0.02, **c})
        for c in combos(
            betas=[(0.9, 0.999), (0.9, 0.5)],
            weight_decay=[0.0, 0.1],
            decoupled_weight_decay=[False, True],
            maximize=[False, True],
        )
    ]
    + [
        ("RMSprop", {"lr": 0.01, **c})
        for c in combos(
            alpha=[0.99, 0.3],
            weight_decay=[0.0, 0.1],
            momentum=[0.0, 0.9],
            centered=[False, True],
            maximize=[False, True],
        )
    ]
    + [
        ("Adagrad", {"lr": 0.1, **c})
        for c in combos(
            lr_decay=[0.0, 0.05],
            weight_decay=[0.0, 0.1],
            initial_accumulator_value=[0.0, 0.3],
            maximize=[False, True],
        )
    ]
    + [
        ("Adadelta", {**c})
        for c in combos(
            lr=[1.0, 0.3], rho=[0.9, 0.4], weight_decay=[0.0, 0.1], maximize=[False, True]
        )
    ]
)

SHAPES = [(3, 4), (5,)]


def _grads_of(values: list[np.ndarray], step: int) -> list[np.ndarray]:
    """Deterministic gradients that depend on the parameters (a smooth objective) and
    on the step, so every update rule sees a varying signal."""
    return [
        0.3 * v**2 - 0.5 * v + np.cos(np.arange(v.size).reshape(v.shape) + step) for v in values
    ]


def _case_id(case: tuple[str, dict[str, Any]]) -> str:
    name, kw = case
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items() if k != "lr")


def _run(name: str, kwargs: dict[str, Any], steps: int, dtype: Any = rustgrad.float64):
    rng = np.random.default_rng(7)
    init = [rng.standard_normal(s) for s in SHAPES]
    params = [rustgrad.tensor(x, dtype=dtype, requires_grad=True) for x in init]
    opt = getattr(optim, name)(params, **kwargs)
    history = []
    for step in range(steps):
        grads = _grads_of([p.detach().numpy().astype(np.float64) for p in params], step)
        for p, g in zip(params, grads):
            p.grad = rustgrad.tensor(g, dtype=dtype)
        opt.step()
        history.append([p.detach().numpy().copy() for p in params])
    return init, history, opt, params


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_matches_numpy_reference_float64_20_steps(case):
    name, kwargs = case
    init, history, _, _ = _run(name, kwargs, 20)
    refs = [Reference(name, kwargs, x) for x in init]
    values = [x.copy() for x in init]
    for step in range(20):
        grads = _grads_of(values, step)
        values = [r.update(v, g) for r, v, g in zip(refs, values, grads)]
        for got, want in zip(history[step], values):
            # Same operations in the same order on IEEE doubles: the same bits.
            np.testing.assert_array_equal(got, want)


def test_every_optimizer_and_option_is_covered():
    names = {n for n, _ in CASES}
    assert names == {
        "SGD",
        "Adam",
        "AdamW",
        "Adamax",
        "NAdam",
        "RAdam",
        "RMSprop",
        "Adagrad",
        "Adadelta",
    }
    assert len(CASES) > 150


# ----- PyTorch vectors ----------------------------------------------------------------

OPTIM_VECTORS = json.loads((VECTORS / "optim.json").read_text())


@pytest.mark.parametrize(
    "case",
    OPTIM_VECTORS["trajectories"],
    ids=[f"{c['optimizer']}-{i}" for i, c in enumerate(OPTIM_VECTORS["trajectories"])],
)
def test_matches_pytorch_float32_trajectories(case):
    kwargs = {k: tuple(v) if k == "betas" else v for k, v in case["kwargs"].items()}
    params = [
        rustgrad.tensor(np.array(x, dtype=np.float32).reshape(s), requires_grad=True)
        for x, s in zip(case["init"], case["shapes"])
    ]
    assert params[0].dtype == rustgrad.float32
    opt = getattr(optim, case["optimizer"])(params, **kwargs)
    for grads, expected in zip(case["grads"], case["expected"]):
        for p, g, s in zip(params, grads, case["shapes"]):
            p.grad = rustgrad.tensor(np.array(g, dtype=np.float32).reshape(s))
        opt.step()
        for p, want in zip(params, expected):
            got = p.detach().numpy().ravel()
            assert got.dtype == np.float32
            np.testing.assert_allclose(got, np.array(want, dtype=np.float32), rtol=2e-6, atol=2e-6)


def _rosenbrock(x):
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


@pytest.mark.parametrize("case", OPTIM_VECTORS["lbfgs"], ids=lambda c: str(c["kwargs"]))
def test_lbfgs_matches_pytorch(case):
    x = rustgrad.tensor(case["x0"], dtype=rustgrad.float64, requires_grad=True)
    opt = optim.LBFGS([x], **case["kwargs"])

    def closure():
        opt.zero_grad()
        loss = _rosenbrock(x)
        loss.backward()
        return loss

    for want_x, want_loss in zip(case["expected"], case["losses"]):
        loss = opt.step(closure)
        assert float(loss) == pytest.approx(want_loss, rel=1e-9, abs=1e-12)
        np.testing.assert_allclose(x.detach().numpy(), want_x, rtol=1e-9, atol=1e-12)
    assert opt.state[x]["func_evals"] == case["func_evals"]
    assert opt.state[x]["n_iter"] == case["n_iter"]


def test_lbfgs_with_a_parameter_that_gets_no_gradient():
    # PyTorch 2.15 counts a parameter without .grad as zeros (it raised AttributeError
    # on Tensor.new here). Expected values from PyTorch 2.15, float64, same program.
    w = rustgrad.tensor([1.0, -2.0, 0.5], dtype=rustgrad.float64, requires_grad=True)
    unused = rustgrad.tensor([3.0, 4.0], dtype=rustgrad.float64, requires_grad=True)
    opt = optim.LBFGS([w, unused], lr=1, max_iter=5)
    target = rustgrad.tensor([0.5, 0.25, -1.0], dtype=rustgrad.float64)

    def closure():
        opt.zero_grad()
        loss = ((w - target) ** 2).sum() + 0.1 * (w**4).sum()
        loss.backward()
        return loss

    for _ in range(3):
        loss = opt.step(closure)
    np.testing.assert_allclose(
        w.detach().numpy(),
        [0.47813784936223397, 0.2469862551675159, -0.8688306259184189],
        rtol=1e-9,
    )
    assert float(loss) == pytest.approx(0.08027345340326655, rel=1e-9)
    assert unused.tolist() == [3.0, 4.0] and unused.grad is None
    assert opt.state[w]["func_evals"] == 9


# ----- a PyTorch state_dict loads and resumes -----------------------------------------

STATE_VECTORS = json.loads((VECTORS / "optim_state.json").read_text())


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"dtype", "shape", "data"}:
        arr = np.array(value["data"], dtype=value["dtype"]).reshape(value["shape"])
        return rustgrad.tensor(arr, dtype=getattr(rustgrad, value["dtype"]))
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def _pytorch_state_dict(saved: dict[str, Any]) -> dict[str, Any]:
    """The JSON back in PyTorch's in-memory form: integer state keys, tensors, tuples
    for betas."""
    groups = []
    for g in saved["param_groups"]:
        g = dict(g)
        if "betas" in g:
            g["betas"] = tuple(g["betas"])
        groups.append(g)
    return {
        "state": {int(k): _decode(v) for k, v in saved["state"].items()},
        "param_groups": groups,
    }


@pytest.mark.parametrize("case", STATE_VECTORS["cases"], ids=lambda c: c["optimizer"])
def test_pytorch_state_dict_loads_and_resumes(case):
    kwargs = {k: tuple(v) if k == "betas" else v for k, v in case["kwargs"].items()}
    params = [
        rustgrad.tensor(np.array(x).reshape(s), dtype=rustgrad.float64, requires_grad=True)
        for x, s in zip(case["params"], case["shapes"])
    ]
    opt = getattr(optim, case["optimizer"])(params, **kwargs)
    state_dict = _pytorch_state_dict(case["state_dict"])
    opt.load_state_dict(state_dict)
    assert opt.param_groups[0]["params"] == params or all(
        a is b for a, b in zip(opt.param_groups[0]["params"], params)
    )
    for grads, expected in zip(case["grads"], case["expected"]):
        for p, g, s in zip(params, grads, case["shapes"]):
            p.grad = rustgrad.tensor(np.array(g).reshape(s), dtype=rustgrad.float64)
        opt.step()
        for p, want in zip(params, expected):
            np.testing.assert_allclose(p.detach().numpy().ravel(), want, rtol=1e-13, atol=1e-15)
    # The state now has PyTorch's structure, with the step counted on.
    state = opt.state_dict()
    assert sorted(state["state"]) == [0, 1]
    assert set(state["state"][0]) == set(case["state_dict"]["state"]["0"])
    if "step" in state["state"][0]:
        assert state["state"][0]["step"].dtype == rustgrad.float32
        assert float(state["state"][0]["step"]) == case["state_dict"]["state"]["0"]["step"]["data"][
            0
        ] + len(case["grads"])
    assert state["param_groups"][0]["params"] == [0, 1]


# ----- structure and behaviour --------------------------------------------------------


def _param(*values: float, dtype=rustgrad.float64):
    return rustgrad.tensor(list(values), dtype=dtype, requires_grad=True)


def test_state_dict_structure_matches_pytorch():
    w, b = _param(1.0, 2.0), _param(0.5)
    opt = optim.Adam([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01, amsgrad=True)
    (w * w).sum().backward()
    opt.step()
    sd = opt.state_dict()
    assert list(sd["state"]) == [0]  # b had no grad: no state
    entry = sd["state"][0]
    assert list(entry) == ["step", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"]
    assert entry["step"].shape == () and entry["step"].dtype == rustgrad.float32
    assert float(entry["step"]) == 1.0
    assert sd["param_groups"][0]["params"] == [0]
    assert sd["param_groups"][1]["params"] == [1]
    assert sd["param_groups"][1]["lr"] == 0.1 and sd["param_groups"][0]["lr"] == 0.01
    assert sorted(sd["param_groups"][0]) == sorted(
        [
            "params",
            "lr",
            "betas",
            "eps",
            "weight_decay",
            "amsgrad",
            "maximize",
            "foreach",
            "capturable",
            "differentiable",
            "fused",
            "decoupled_weight_decay",
        ]
    )


def test_state_dict_round_trip_resumes_identically():
    def make():
        w = _param(1.0, -2.0, 3.0)
        return w, optim.RMSprop([w], lr=0.01, momentum=0.5, centered=True)

    w1, o1 = make()
    for _ in range(3):
        w1.grad = rustgrad.tensor([0.1, 0.2, -0.3], dtype=rustgrad.float64)
        o1.step()
    w2, o2 = make()
    with rustgrad.no_grad():
        w2.copy_(w1)
    saved = o1.state_dict()
    # A copy of the tensors, as a checkpoint would hold (the state_dict references the
    # live state, as PyTorch's does).
    o2.load_state_dict(
        {
            "state": {k: {n: t.clone() for n, t in v.items()} for k, v in saved["state"].items()},
            "param_groups": copy.deepcopy(saved["param_groups"]),
        }
    )
    assert list(o2.state[w2]) == ["step", "square_avg", "momentum_buffer", "grad_avg"]
    for _ in range(3):
        for w in (w1, w2):
            w.grad = rustgrad.tensor([0.3, -0.1, 0.2], dtype=rustgrad.float64)
        o1.step()
        o2.step()
    assert w1.detach().numpy().tolist() == w2.detach().numpy().tolist()


def test_load_state_dict_errors():
    w = _param(1.0)
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    sd = opt.state_dict()
    sd["param_groups"][0]["params"] = [0, 1]
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        opt.load_state_dict(sd)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: optim.SGD(p, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda p: optim.SGD(p, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
        (lambda p: optim.SGD(p, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
        (
            lambda p: optim.SGD(p, lr=0.1, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (
            lambda p: optim.SGD(p, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True),
            "Nesterov momentum requires a momentum and zero dampening",
        ),
        (lambda p: optim.Adam(p, betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
        (lambda p: optim.Adam(p, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
        (lambda p: optim.AdamW(p, eps=-1.0), "Invalid epsilon value: -1.0"),
        (lambda p: optim.Adam(p, lr=-0.1), "Invalid learning rate: -0.1"),
        (lambda p: optim.NAdam(p, momentum_decay=-1.0), "Invalid momentum_decay value: -1.0"),
        (lambda p: optim.RMSprop(p, alpha=-1.0), "Invalid alpha value: -1.0"),
        (lambda p: optim.Adagrad(p, lr_decay=-1.0), "Invalid lr_decay value: -1.0"),
        (
            lambda p: optim.Adagrad(p, initial_accumulator_value=-1.0),
            "Invalid initial_accumulator_value value: -1.0",
        ),
        (lambda p: optim.Adadelta(p, rho=1.5), "Invalid rho value: 1.5"),
        (lambda p: optim.Adamax(p, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
        (lambda p: optim.RAdam(p, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
        (lambda p: optim.LBFGS(p, lr=-1.0), "Invalid learning rate: -1.0"),
    ],
)
def test_bad_options_raise_pytorch_messages(make, message):
    with pytest.raises(ValueError) as info:
        make([_param(1.0)])
    assert str(info.value) == message


def test_bad_params():
    w = _param(1.0)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [w]}, {"params": [w]}], lr=0.1)
    opt = optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": w})
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors"):
        optim.SGD([w, 3.0], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        optim.SGD(w, lr=0.1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'parameters'"):
        optim.SGD(parameters=[w], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.Adam([w * 2])


def test_parameter_spellings_from_the_seed_notes():
    class Linear:  # a stand-in for nn.Linear: parameters() is a generator
        def __init__(self) -> None:
            self.weight = _param(1.0, 2.0)
            self.bias = _param(0.0)

        def parameters(self):
            yield self.weight
            yield self.bias

    fc = Linear()
    opt = optim.SGD(fc.parameters(), lr=1e-2, momentum=0.9)
    assert [id(p) for p in opt.param_groups[0]["params"]] == [id(fc.weight), id(fc.bias)]
    fc.bias.requires_grad_(False)
    opt = optim.SGD(filter(lambda p: p.requires_grad, fc.parameters()), lr=1e-2)
    assert len(opt.param_groups[0]["params"]) == 1
    assert opt.param_groups[0]["params"][0] is fc.weight


def test_param_groups_have_their_own_options_and_lr_edits_apply():
    w, b = _param(1.0, 1.0), _param(1.0)
    opt = optim.SGD([{"params": [w]}, {"params": [b], "lr": 1.0}], lr=0.1, momentum=0.0)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 1.0
    w.grad = rustgrad.tensor([1.0, 2.0], dtype=rustgrad.float64)
    b.grad = rustgrad.tensor([1.0], dtype=rustgrad.float64)
    opt.step()
    assert w.detach().numpy().tolist() == [1.0 - 0.1, 1.0 - 0.2]
    assert b.detach().numpy().tolist() == [0.0]
    opt.param_groups[0]["lr"] = 0.5  # what a scheduler does
    opt.step()
    assert w.detach().numpy().tolist() == pytest.approx([0.9 - 0.5, 0.8 - 1.0], abs=1e-15)


def test_add_param_group_takes_defaults():
    w, b = _param(1.0), _param(2.0)
    opt = optim.Adam([w], lr=0.01, betas=(0.8, 0.9))
    opt.add_param_group({"params": [b], "lr": 0.5})
    assert opt.param_groups[1]["betas"] == (0.8, 0.9)
    assert opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["params"][0] is b


def test_params_without_grad_are_skipped():
    w, b = _param(1.0, 2.0), _param(3.0)
    opt = optim.Adam([w, b], lr=0.1)
    w.grad = rustgrad.tensor([1.0, 1.0], dtype=rustgrad.float64)
    version = b._version
    opt.step()
    assert b.detach().numpy().tolist() == [3.0]
    assert b._version == version
    assert b not in opt.state and w in opt.state


def test_step_bumps_version_and_is_in_place():
    w = _param(1.0, 2.0)
    data_before = w.data_ptr() if hasattr(w, "data_ptr") else None
    opt = optim.SGD([w], lr=0.1)
    w.grad = rustgrad.tensor([1.0, 1.0], dtype=rustgrad.float64)
    v0 = w._version
    opt.step()
    assert w._version == v0 + 1
    if data_before is not None:
        assert w.data_ptr() == data_before
    assert w.requires_grad and w.is_leaf and w.grad_fn is None


def test_step_runs_under_no_grad_and_a_saved_param_then_raises_in_backward():
    w = _param(1.0, 2.0)
    opt = optim.SGD([w], lr=0.1)
    y = (w * w).sum()  # saves w
    y.backward(retain_graph=True)
    opt.step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_param_modified_in_place_after_backward_still_steps():
    w = _param(1.0, 2.0)
    opt = optim.SGD([w], lr=0.5)
    (w * w).sum().backward()  # grad = 2 * w = [2, 4]
    with rustgrad.no_grad():
        w.add_(10.0)  # modified in place since backward
    opt.step()
    assert w.detach().numpy().tolist() == [11.0 - 1.0, 12.0 - 2.0]


def test_zero_grad():
    w = _param(1.0, 2.0)
    opt = optim.SGD([w], lr=0.1)
    (w * w).sum().backward()
    opt.zero_grad(set_to_none=False)
    assert w.grad is not None and w.grad.detach().numpy().tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert w.grad is None


def test_step_with_closure_returns_its_loss_and_runs_with_grad():
    w = _param(1.0, 2.0)
    opt = optim.SGD([w], lr=0.1)
    seen = []

    def closure():
        opt.zero_grad()
        seen.append(rustgrad.is_grad_enabled())
        loss = (w * w).sum()
        loss.backward()
        return loss

    with rustgrad.no_grad():
        loss = opt.step(closure)
    assert seen == [True]
    assert float(loss) == 5.0
    assert w.detach().numpy().tolist() == pytest.approx([0.8, 1.6], abs=1e-15)
    assert opt.step() is None


def test_sgd_without_momentum_keeps_no_state_and_with_momentum_keeps_its_buffer():
    w = _param(1.0)
    opt = optim.SGD([w], lr=0.1)
    w.grad = rustgrad.tensor([1.0], dtype=rustgrad.float64)
    opt.step()
    assert opt.state_dict()["state"] == {}
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    opt.step()
    assert list(opt.state[w]) == ["momentum_buffer"]
    assert opt.state[w]["momentum_buffer"].detach().numpy().tolist() == [1.0]


def test_adagrad_state_exists_from_construction():
    w = _param(1.0, 2.0)
    opt = optim.Adagrad([w], initial_accumulator_value=0.25)
    assert float(opt.state[w]["step"]) == 0.0
    assert opt.state[w]["sum"].detach().numpy().tolist() == [0.25, 0.25]


def test_repr_matches_pytorch():
    w = _param(1.0)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    assert repr(opt) == (
        "SGD (\n"
        "Parameter Group 0\n"
        "    dampening: 0\n"
        "    differentiable: False\n"
        "    foreach: None\n"
        "    fused: None\n"
        "    lr: 0.1\n"
        "    maximize: False\n"
        "    momentum: 0.9\n"
        "    nesterov: False\n"
        "    weight_decay: 0\n"
        ")"
    )


def test_float32_and_noncontiguous_params():
    base = rustgrad.tensor(np.arange(6.0).reshape(2, 3), dtype=rustgrad.float32)
    w = base.t().detach().requires_grad_(True)  # a strided leaf
    assert not w.is_contiguous()
    opt = optim.SGD([w], lr=0.5)
    w.grad = rustgrad.ones(3, 2)
    opt.step()
    np.testing.assert_array_equal(w.detach().numpy(), np.arange(6.0).reshape(2, 3).T - 0.5)


def test_one_and_two_threads_are_bitwise_identical():
    before = rustgrad.get_num_threads()
    results = []
    try:
        for threads in (1, 2):
            rustgrad.set_num_threads(threads)
            rng = np.random.default_rng(3)
            params = [
                rustgrad.tensor(rng.standard_normal(n), requires_grad=True)
                for n in (70_000, 3, 40_000, 1)
            ]
            opt = optim.Adam(params, lr=0.01, amsgrad=True)
            for _ in range(3):
                opt.zero_grad()
                loss = sum(((p * p * p).sum() for p in params), rustgrad.tensor(0.0))
                loss.backward()
                opt.step()
            results.append(
                [p.detach().numpy().tobytes() for p in params]
                + [p.grad.detach().numpy().tobytes() for p in params]
            )
    finally:
        rustgrad.set_num_threads(before)
    assert results[0] == results[1]


def test_each_group_steps_in_one_native_call(monkeypatch):
    from rustgrad import _rustgrad

    calls = []
    native = _rustgrad._optim_step

    def spy(kind, group, params, states):
        calls.append((kind, len(params)))
        return native(kind, group, params, states)

    monkeypatch.setattr(_rustgrad, "_optim_step", spy)
    a, b, c = _param(1.0), _param(2.0, 3.0), _param(4.0)
    opt = optim.AdamW([{"params": [a, b]}, {"params": [c], "lr": 0.1}])
    for p in (a, b, c):
        p.grad = rustgrad.ones_like(p)
    opt.step()
    assert calls == [("AdamW", 2), ("AdamW", 1)]
    c.grad = None
    opt.step()
    assert calls[2:] == [("AdamW", 2)]  # a group with no gradients makes no call


def test_scalar_state_takes_pytorchs_scalar_dtype():
    # PyTorch's _get_scalar_dtype(): float64 when it is the default dtype, else float32.
    w = _param(1.0)
    w.grad = rustgrad.tensor([1.0], dtype=rustgrad.float64)
    opt = optim.NAdam([w])
    opt.step()
    assert opt.state[w]["step"].dtype == rustgrad.float32
    assert opt.state[w]["mu_product"].dtype == rustgrad.float32
    before = rustgrad.get_default_dtype()
    rustgrad.set_default_dtype(rustgrad.float64)
    try:
        opt = optim.NAdam([w])
        opt.step()
        adagrad = optim.Adagrad([w])
    finally:
        rustgrad.set_default_dtype(before)
    assert opt.state[w]["step"].dtype == rustgrad.float64
    assert opt.state[w]["mu_product"].dtype == rustgrad.float64
    assert float(opt.state[w]["step"]) == 1.0
    assert adagrad.state[w]["step"].dtype == rustgrad.float64


def test_the_native_step_releases_the_gil():
    # With a huge switch interval, another Python thread runs only when this one
    # releases the GIL itself. Around a step, the other thread's counter can then move
    # only if the native call released the GIL: with the GIL held it stays put, every
    # time. A few tries, since the other thread also needs the OS to schedule it.
    import sys
    import threading
    import time

    params = [rustgrad.zeros(1_000_000, requires_grad=True) for _ in range(2)]
    for p in params:
        p.grad = rustgrad.ones(1_000_000)
    opt = optim.Adam(params, amsgrad=True)
    counter = [0]
    done = threading.Event()

    def spin():
        while not done.is_set():
            counter[0] += 1
            time.sleep(0.0001)

    interval = sys.getswitchinterval()
    other = threading.Thread(target=spin)
    moved = 0
    try:
        sys.setswitchinterval(1000.0)
        other.start()
        for _ in range(50):
            before = counter[0]
            opt.step()
            moved += counter[0] - before
            if moved:
                break
    finally:
        done.set()
        sys.setswitchinterval(interval)
        other.join()
    assert moved > 0


def test_a_python_subclass_with_its_own_step():
    class PlainSGD(optim.Optimizer):
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @rustgrad.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-group["lr"])

    w = _param(1.0, 2.0)
    opt = PlainSGD([w], lr=0.5)
    w.grad = rustgrad.tensor([1.0, 1.0], dtype=rustgrad.float64)
    opt.step()
    assert w.detach().numpy().tolist() == [0.5, 1.5]
    assert opt.state_dict() == {"state": {}, "param_groups": [{"lr": 0.5, "params": [0]}]}
    with pytest.raises(NotImplementedError):
        optim.Optimizer([w], {"lr": 0.1}).step()


def test_a_state_buffer_of_the_wrong_shape_is_refused_and_nothing_changes():
    w = _param(1.0, 2.0)
    opt = optim.Adam([w])
    w.grad = rustgrad.tensor([1.0, 1.0], dtype=rustgrad.float64)
    opt.step()
    sd = opt.state_dict()
    sd["state"][0]["exp_avg"] = rustgrad.zeros(3, dtype=rustgrad.float64)
    opt.load_state_dict(sd)
    before = w.detach().numpy().tolist()
    with pytest.raises(RuntimeError, match="does not match its parameter"):
        opt.step()
    assert float(opt.state[w]["step"]) == 1.0
    assert w.detach().numpy().tolist() == before
