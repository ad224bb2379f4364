"""Generates tests/vectors/optim.json: PyTorch optimizer trajectories in float32.

Each case runs one optimizer (PyTorch's single-tensor path, ``foreach=False``) for
STEPS steps over two float32 parameters whose gradients are fixed random arrays (so a
replay needs no autograd), and records the parameters after every step. The LBFGS cases
minimise a Rosenbrock function in float64 through a closure, with and without the
strong-Wolfe line search. Read by tests/python/test_optim.py and
crates/engine/tests/optim_vectors.rs (the generic vector readers skip optim*.json).

Run with PyTorch installed (never a test dependency):
    /work/main/.torch-venv/bin/python tests/vectors/generate_optim.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

STEPS = 10
SHAPES = [(3, 4), (5,)]

CONFIGS: list[tuple[str, dict]] = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.9), "maximize": True}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("AdamW", {"lr": 0.01}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05, "maximize": True}),
    ("Adamax", {"lr": 0.02}),
    ("Adamax", {"lr": 0.02, "weight_decay": 0.1, "maximize": True}),
    ("NAdam", {"lr": 0.02}),
    ("NAdam", {"lr": 0.02, "weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"lr": 0.02, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {"lr": 0.02}),
    ("RAdam", {"lr": 0.02, "betas": (0.9, 0.5), "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.02, "weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    (
        "Adagrad",
        {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.5},
    ),
    ("Adagrad", {"lr": 0.1, "maximize": True}),
    ("Adadelta", {"lr": 1.0}),
    ("Adadelta", {"lr": 0.5, "rho": 0.5, "weight_decay": 0.1, "maximize": True}),
]


def trajectory_case(index: int, name: str, kwargs: dict) -> dict:
    rng = np.random.default_rng(1000 + index)
    init = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    grads = [[rng.standard_normal(s).astype(np.float32) for s in SHAPES] for _ in range(STEPS)]
    params = [torch.tensor(x, requires_grad=True) for x in init]
    opt = getattr(torch.optim, name)(params, foreach=False, **kwargs)
    expected = []
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = torch.tensor(g)
        opt.step()
        expected.append([p.detach().numpy().ravel().tolist() for p in params])
    return {
        "optimizer": name,
        "kwargs": {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()},
        "shapes": [list(s) for s in SHAPES],
        "init": [x.ravel().tolist() for x in init],
        "grads": [[g.ravel().tolist() for g in step] for step in grads],
        "expected": expected,
    }


def rosenbrock(x: torch.Tensor) -> torch.Tensor:
    return (100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2).sum()


def lbfgs_case(kwargs: dict, steps: int) -> dict:
    x0 = [-1.2, 1.0, -0.5, 0.8]
    x = torch.tensor(x0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([x], **kwargs)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(x)
        loss.backward()
        return loss

    expected = []
    losses = []
    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
        expected.append(x.detach().numpy().tolist())
    return {
        "kwargs": kwargs,
        "x0": x0,
        "expected": expected,
        "losses": losses,
        "func_evals": opt.state[x]["func_evals"],
        "n_iter": opt.state[x]["n_iter"],
    }


def main() -> None:
    torch.set_default_dtype(torch.float32)
    out = {
        "torch_version": torch.__version__,
        "trajectories": [trajectory_case(i, n, kw) for i, (n, kw) in enumerate(CONFIGS)],
        "lbfgs": [
            lbfgs_case({"lr": 0.5, "max_iter": 5}, 3),
            lbfgs_case({"lr": 1.0, "max_iter": 6, "history_size": 3}, 3),
            lbfgs_case({"line_search_fn": "strong_wolfe", "max_iter": 8}, 3),
            lbfgs_case({"line_search_fn": "strong_wolfe", "history_size": 4, "maximize": False}, 2),
        ],
    }
    path = Path(__file__).with_name("optim.json")
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    print(f"wrote {path} ({len(out['trajectories'])} trajectories, {len(out['lbfgs'])} LBFGS)")


if __name__ == "__main__":
    main()
