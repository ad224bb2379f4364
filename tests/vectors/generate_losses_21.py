"""Generate tests/vectors/losses_21.json: PyTorch 2.15's margin, Gaussian and CTC losses
(issue 21): ``ctc_loss``, ``gaussian_nll_loss``, ``hinge_embedding_loss``,
``soft_margin_loss``, ``multilabel_margin_loss``, ``multilabel_soft_margin_loss``,
``multi_margin_loss`` and ``triplet_margin_with_distance_loss``, for every reduction
and the option combinations below, in float64 and float32.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_losses_21.py

Each case is ``{"name", "fn", "args", "kwargs", "output", "grad_fn", "grad_output",
"grads"}``. ``args`` are the positional arguments: a tensor is ``{"data", "shape",
"dtype", "requires_grad"}`` (data row-major), anything else ``{"value": ...}`` (a JSON
list stands for a tuple of ints). ``kwargs["distance_function"]`` names a distance
(``"l1"``: ``pairwise_distance(a, b, p=1)``, ``"cosine"``: ``1 - cosine_similarity(a,
b)``). ``grads`` holds the gradient of each argument that requires grad (else null)
after ``output.backward(grad_output)``. Inputs come from a numpy generator seeded with
the CRC32 of the case name.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "losses_21.json"
DTYPES = {"float64": torch.float64, "float32": torch.float32}
DISTANCES = {
    "l1": lambda a, b: F.pairwise_distance(a, b, p=1),
    "cosine": lambda a, b: 1.0 - F.cosine_similarity(a, b),
}


def spec(t: torch.Tensor) -> dict[str, Any]:
    """A tensor as JSON (row-major data)."""
    return {
        "data": t.detach().reshape(-1).tolist(),
        "shape": list(t.shape),
        "dtype": str(t.dtype)[6:],
        "requires_grad": t.requires_grad,
    }


def floats(rng: np.random.Generator, shape: tuple[int, ...], dtype: str, lo=-2.0, hi=2.0):
    """A float tensor requiring grad, 4-digit values in [lo, hi]."""
    values = np.round(rng.uniform(lo, hi, size=shape), 4)
    return torch.tensor(values, dtype=DTYPES[dtype]).requires_grad_()


def signs(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    return torch.tensor(rng.choice([-1.0, 1.0], size=shape), dtype=DTYPES[dtype])


def log_probs(rng: np.random.Generator, shape: tuple[int, ...], dtype: str) -> torch.Tensor:
    """Log-probabilities along the last dim."""
    values = torch.tensor(rng.uniform(-2.0, 2.0, size=shape), dtype=torch.float64)
    return values.log_softmax(-1).to(DTYPES[dtype]).requires_grad_()


def multilabel_targets(rng: np.random.Generator, n: int, c: int) -> torch.Tensor:
    rows = []
    for _ in range(n):
        k = int(rng.integers(0, c + 1))
        labels = list(rng.permutation(c)[:k])
        rows.append(labels + [-1] * (c - k) if k < c else labels)
    return torch.tensor(rows, dtype=torch.int64)


def cases(dtype: str) -> list[tuple[str, str, Any]]:
    """(name, function, builder(rng) -> (args, kwargs)) for one dtype."""
    out: list[tuple[str, str, Any]] = []
    for red in ("none", "mean", "sum"):
        # ---- multi_margin_loss: p, margin, weight, unbatched
        for p in (1, 2):
            for margin in (1.0, 0.4):
                for weighted in (False, True):

                    def b(rng, p=p, margin=margin, weighted=weighted, red=red):
                        x = floats(rng, (4, 5), dtype)
                        t = torch.tensor(rng.integers(0, 5, size=4))
                        kw = {"p": p, "margin": margin, "reduction": red}
                        if weighted:
                            kw["weight"] = torch.tensor(
                                rng.uniform(0.2, 2.0, size=5), dtype=DTYPES[dtype]
                            )
                        return [x, t], kw

                    out.append(
                        (
                            f"multi_margin_p{p}_m{margin}_w{int(weighted)}_{red}",
                            "multi_margin_loss",
                            b,
                        )
                    )
        out.append(
            (
                f"multi_margin_unbatched_{red}",
                "multi_margin_loss",
                lambda rng, red=red: (
                    [floats(rng, (6,), dtype), torch.tensor([3])],
                    {"reduction": red},
                ),
            )
        )
        # ---- multilabel_margin_loss
        out.append(
            (
                f"multilabel_margin_{red}",
                "multilabel_margin_loss",
                lambda rng, red=red: (
                    [floats(rng, (5, 4), dtype), multilabel_targets(rng, 5, 4)],
                    {"reduction": red},
                ),
            )
        )
        out.append(
            (
                f"multilabel_margin_unbatched_{red}",
                "multilabel_margin_loss",
                lambda rng, red=red: (
                    [floats(rng, (4,), dtype), torch.tensor([2, 0, -1, 3])],
                    {"reduction": red},
                ),
            )
        )
        # ---- soft_margin_loss and hinge_embedding_loss
        out.append(
            (
                f"soft_margin_{red}",
                "soft_margin_loss",
                lambda rng, red=red: (
                    [floats(rng, (3, 4), dtype), signs(rng, (3, 4), dtype)],
                    {"reduction": red},
                ),
            )
        )
        out.append(
            (
                f"soft_margin_broadcast_{red}",
                "soft_margin_loss",
                lambda rng, red=red: (
                    [floats(rng, (3, 4), dtype), signs(rng, (4,), dtype)],
                    {"reduction": red},
                ),
            )
        )
        for margin in (1.0, 0.3):
            out.append(
                (
                    f"hinge_embedding_m{margin}_{red}",
                    "hinge_embedding_loss",
                    lambda rng, red=red, margin=margin: (
                        [floats(rng, (3, 4), dtype), signs(rng, (3, 4), dtype)],
                        {"margin": margin, "reduction": red},
                    ),
                )
            )
        # ---- multilabel_soft_margin_loss (weight)
        for weighted in (False, True):

            def b(rng, weighted=weighted, red=red):
                x = floats(rng, (3, 5), dtype)
                y = torch.tensor(rng.integers(0, 2, size=(3, 5)), dtype=DTYPES[dtype])
                kw: dict[str, Any] = {"reduction": red}
                if weighted:
                    kw["weight"] = torch.tensor(rng.uniform(0.2, 2.0, size=5), dtype=DTYPES[dtype])
                return [x, y], kw

            out.append(
                (f"multilabel_soft_margin_w{int(weighted)}_{red}", "multilabel_soft_margin_loss", b)
            )
        # ---- gaussian_nll_loss: full, eps, var shapes
        for full in (False, True):
            for var_shape in ((3, 4), (3,), (3, 1), (1, 4)):

                def b(rng, full=full, var_shape=var_shape, red=red):
                    x = floats(rng, (3, 4), dtype)
                    y = floats(rng, (3, 4), dtype)
                    v = floats(rng, var_shape, dtype, 0.05, 2.0)
                    return [x, y, v], {"full": full, "reduction": red}

                name = "x".join(map(str, var_shape))
                out.append(
                    (f"gaussian_nll_full{int(full)}_var{name}_{red}", "gaussian_nll_loss", b)
                )
        out.append(
            (
                f"gaussian_nll_eps_clamps_{red}",
                "gaussian_nll_loss",
                lambda rng, red=red: (
                    [
                        floats(rng, (2, 3), dtype),
                        floats(rng, (2, 3), dtype),
                        floats(rng, (2, 3), dtype, 0.0, 0.01),
                    ],
                    {"eps": 0.005, "reduction": red},
                ),
            )
        )
        # ---- triplet_margin_with_distance_loss
        for distance in (None, "l1", "cosine"):
            for swap in (False, True):

                def b(rng, distance=distance, swap=swap, red=red):
                    a, p, n = (floats(rng, (4, 3), dtype) for _ in range(3))
                    kw: dict[str, Any] = {"swap": swap, "margin": 1.5, "reduction": red}
                    if distance is not None:
                        kw["distance_function"] = distance
                    return [a, p, n], kw

                out.append(
                    (
                        f"triplet_distance_{distance}_swap{int(swap)}_{red}",
                        "triplet_margin_with_distance_loss",
                        b,
                    )
                )
        # ---- ctc_loss: padded and concatenated targets, lengths as tuples and tensors,
        # blank, zero_infinity, unbatched
        for layout in ("padded", "concatenated"):
            for lengths in ("tuple", "tensor"):
                for zero_infinity in (False, True):

                    def b(
                        rng, layout=layout, lengths=lengths, zero_infinity=zero_infinity, red=red
                    ):
                        lp = log_probs(rng, (7, 3, 5), dtype)
                        target_lengths = [3, 2, 4]
                        # the third sample is impossible (4 labels with a repeat in 5 steps)
                        input_lengths = [7, 5, 5]
                        labels = [[1, 2, 2, 0], [3, 1, 0, 0], [4, 4, 4, 4]]
                        if layout == "padded":
                            targets = torch.tensor(labels)
                        else:
                            targets = torch.tensor(
                                [v for row, n in zip(labels, target_lengths) for v in row[:n]]
                            )
                        il: Any = input_lengths
                        tl: Any = target_lengths
                        if lengths == "tensor":
                            il, tl = torch.tensor(il), torch.tensor(tl)
                        else:
                            il, tl = tuple(il), tuple(tl)
                        kw = {"blank": 0, "reduction": red, "zero_infinity": zero_infinity}
                        return [lp, targets, il, tl], kw

                    out.append(
                        (f"ctc_{layout}_{lengths}_zi{int(zero_infinity)}_{red}", "ctc_loss", b)
                    )
        out.append(
            (
                f"ctc_blank_last_{red}",
                "ctc_loss",
                lambda rng, red=red: (
                    [
                        log_probs(rng, (6, 2, 4), dtype),
                        torch.tensor([[0, 1, 1], [2, 0, 0]]),
                        (6, 6),
                        (3, 1),
                    ],
                    {"blank": 3, "reduction": red},
                ),
            )
        )
        out.append(
            (
                f"ctc_empty_target_{red}",
                "ctc_loss",
                lambda rng, red=red: (
                    [
                        log_probs(rng, (4, 2, 3), dtype),
                        torch.tensor([[1, 2], [0, 0]]),
                        (4, 3),
                        (2, 0),
                    ],
                    {"reduction": red},
                ),
            )
        )
        out.append(
            (
                f"ctc_unbatched_{red}",
                "ctc_loss",
                lambda rng, red=red: (
                    [log_probs(rng, (6, 4), dtype), torch.tensor([1, 3, 3]), (6,), (3,)],
                    {"reduction": red},
                ),
            )
        )
    return out


def run(name: str, fn: str, build: Any) -> dict[str, Any]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    args, kwargs = build(rng)
    call_kwargs = dict(kwargs)
    if isinstance(call_kwargs.get("distance_function"), str):
        call_kwargs["distance_function"] = DISTANCES[call_kwargs["distance_function"]]
    out = getattr(F, fn)(*args, **call_kwargs)
    grad_output = torch.tensor(
        np.round(rng.uniform(-1.0, 1.0, size=tuple(out.shape)), 4), dtype=out.dtype
    )
    out.backward(grad_output)
    enc_args = [
        spec(a)
        if isinstance(a, torch.Tensor)
        else {"value": list(a) if isinstance(a, tuple) else a}
        for a in args
    ]
    enc_kwargs = {k: (spec(v) if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}
    return {
        "name": name,
        "fn": fn,
        "args": enc_args,
        "kwargs": enc_kwargs,
        "output": spec(out),
        "grad_fn": type(out.grad_fn).__name__ if out.grad_fn is not None else None,
        "grad_output": spec(grad_output),
        "grads": [
            spec(a.grad) if isinstance(a, torch.Tensor) and a.requires_grad else None for a in args
        ],
    }


def main() -> None:
    results = []
    for dtype in DTYPES:
        for name, fn, build in cases(dtype):
            results.append(run(f"{name}_{dtype}", fn, build))
    OUT.write_text(json.dumps({"torch": torch.__version__, "cases": results}, indent=None) + "\n")
    print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
    main()
