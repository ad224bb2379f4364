"""Generate tests/vectors/nn_loss.json: the neural-network functionals (losses first)
computed by PyTorch, in the schema of tests/vectors/README.md.

Run from the repository root with the separate PyTorch environment:

    /work/main/.torch-venv/bin/python tests/vectors/generate_nn_loss.py

Read by tests/python/test_vectors_nn_loss.py and crates/engine/tests/vectors_nn_loss.rs
(the generic readers skip this file). Each case's inputs come from a numpy generator
seeded with the CRC32 of its name, so reruns rewrite the same bytes. Besides the common
schema, a case records `grad_fn`, the class name of PyTorch's output grad_fn (null when
the output does not require grad).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from generate import DTYPES, INPUT_DECIMALS, apply_view, draw, inp, itensor, kt, tensor_json

F = torch.nn.functional
OUT = Path(__file__).resolve().parent / "nn_loss.json"


def _draw(rng: np.random.Generator, shape: list[int], dist: str) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    if dist == "prob":  # BCE inputs and probability targets: inside (0, 1)
        return np.round(rng.uniform(0.05, 0.95, n), INPUT_DECIMALS)
    if dist == "binary":  # BCE targets: exact 0 / 1
        return rng.integers(0, 2, n).astype(np.float64)
    if dist == "sign":  # ranking / embedding targets: exact -1 / 1
        return rng.choice([-1.0, 1.0], n)
    if dist == "counts":  # Poisson targets: small counts, some above 1
        return rng.integers(0, 5, n).astype(np.float64)
    return draw(rng, shape, dist)


def _weight(kw: dict[str, Any], xs: list[torch.Tensor]) -> dict[str, Any]:
    return {"weight": xs[-1]} if kw.get("weight") else {}


def _reduction(kw: dict[str, Any]) -> dict[str, Any]:
    return {"reduction": kw["reduction"]} if "reduction" in kw else {}


def _cross_entropy(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
    target = kt(kw["target"]) if "target" in kw else xs[1]
    extra = {k: kw[k] for k in ("ignore_index", "label_smoothing") if k in kw}
    return F.cross_entropy(xs[0], target, **_weight(kw, xs), **_reduction(kw), **extra)


def _nll_loss(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
    extra = {k: kw[k] for k in ("ignore_index",) if k in kw}
    return F.nll_loss(xs[0], kt(kw["target"]), **_weight(kw, xs), **_reduction(kw), **extra)


def _functional(op: str) -> Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]:
    """``F.<op>(*xs[:positional], **named inputs, **the other kwargs)``."""

    def run(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
        named = {name: xs[i] for name, i in kw.get("named", {}).items()}
        plain = {k: v for k, v in kw.items() if k not in ("positional", "named")}
        return getattr(F, op)(*xs[: kw["positional"]], **named, **plain)

    return run


FUNCTIONAL = [
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "poisson_nll_loss",
    "cosine_similarity",
    "pairwise_distance",
    "cosine_embedding_loss",
    "margin_ranking_loss",
    "triplet_margin_loss",
    "glu",
    "hardshrink",
    "softshrink",
    "tanhshrink",
    "threshold",
    "prelu",
    "rrelu",
]


def _embedding(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
    extra = {k: kw[k] for k in ("padding_idx", "scale_grad_by_freq") if k in kw}
    return F.embedding(kt(kw["indices"]), xs[0], **extra)


def _embedding_bag(xs: list[torch.Tensor], kw: dict[str, Any]) -> torch.Tensor:
    offsets = kt(kw["offsets"]) if "offsets" in kw else None
    extra = {k: kw[k] for k in ("mode", "padding_idx", "include_last_offset") if k in kw}
    psw = {"per_sample_weights": xs[1]} if len(xs) > 1 else {}
    return F.embedding_bag(kt(kw["indices"]), xs[0], offsets, **extra, **psw)


OPS: dict[str, Callable[[list[torch.Tensor], dict[str, Any]], torch.Tensor]] = {
    "cross_entropy": _cross_entropy,
    "nll_loss": _nll_loss,
    **{op: _functional(op) for op in FUNCTIONAL},
    "embedding": _embedding,
    "embedding_bag": _embedding_bag,
    "one_hot": lambda xs, kw: F.one_hot(kt(kw["indices"]), kw.get("num_classes", -1)),
}


def case(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    leaves, inputs_json = [], []
    for spec in specs:
        values = _draw(rng, spec["shape"], spec["dist"])
        leaf = torch.tensor(values.tolist(), dtype=DTYPES[spec["dtype"]]).reshape(spec["shape"])
        leaf.requires_grad_(spec["requires_grad"])
        leaves.append(leaf)
        inputs_json.append(
            {
                "data": values.tolist(),
                "shape": spec["shape"],
                "dtype": spec["dtype"],
                "requires_grad": spec["requires_grad"],
                "view": spec["view"],
            }
        )
    out = OPS[op]([apply_view(t, s["view"]) for t, s in zip(leaves, specs)], kwargs)
    result: dict[str, Any] = {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
        "grad_fn": type(out.grad_fn).__name__ if out.grad_fn is not None else None,
    }
    if out.requires_grad:
        go = np.round(rng.normal(0.0, 1.0, out.numel()), INPUT_DECIMALS)
        grad_output = torch.tensor(go.tolist(), dtype=out.dtype).reshape(out.shape)
        out.backward(grad_output)
        result["grad_output"] = tensor_json(grad_output)
        result["grads"] = [tensor_json(t.grad) if t.requires_grad else None for t in leaves]
    else:
        result["grad_output"] = None
        result["grads"] = [None] * len(leaves)
    return result


def w(c: int, dtype: str = "float64") -> dict[str, Any]:
    """A class-weight input: positive, no gradient."""
    return inp([c], "positive", requires_grad=False, dtype=dtype)


def class_cases() -> list[dict[str, Any]]:
    cases = []
    t5_ign = itensor([0, -100, 1, 3, -100])
    t5_ign2 = itensor([0, 2, 1, 2, 3])
    for red in ("mean", "sum", "none"):
        for op in ("cross_entropy", "nll_loss"):
            p = f"{op}_{red}"
            cases.append(
                case(f"{p}_2d", op, [inp([5, 4])], target=itensor([0, 3, 1, 2, 3]), reduction=red)
            )
            cases.append(
                case(
                    f"{p}_weight",
                    op,
                    [inp([5, 4]), w(4)],
                    target=itensor([0, 3, 1, 2, 3]),
                    weight=True,
                    reduction=red,
                )
            )
            cases.append(
                case(
                    f"{p}_ignore",
                    op,
                    [inp([5, 4]), w(4)],
                    target=t5_ign,
                    weight=True,
                    reduction=red,
                )
            )
            cases.append(
                case(
                    f"{p}_ignore_index_2",
                    op,
                    [inp([5, 4])],
                    target=t5_ign2,
                    ignore_index=2,
                    reduction=red,
                )
            )
            cases.append(case(f"{p}_1d", op, [inp([6])], target=itensor(4), reduction=red))
            cases.append(
                case(
                    f"{p}_3d",
                    op,
                    [inp([2, 4, 3])],
                    target=itensor([[0, 1, 3], [2, -100, 1]]),
                    reduction=red,
                )
            )
            cases.append(
                case(
                    f"{p}_4d_weight",
                    op,
                    [inp([2, 3, 2, 2]), w(3)],
                    target=itensor([[[0, 1], [2, 2]], [[1, 0], [-100, 2]]]),
                    weight=True,
                    reduction=red,
                )
            )
            cases.append(
                case(
                    f"{p}_transposed",
                    op,
                    [inp([4, 5], view={"kind": "transpose", "dim0": 0, "dim1": 1})],
                    target=itensor([0, 3, 1, 2, 3]),
                    reduction=red,
                )
            )
            cases.append(
                case(
                    f"{p}_f32",
                    op,
                    [inp([5, 4], dtype="float32"), w(4, "float32")],
                    target=itensor([0, 3, 1, 2, -100]),
                    weight=True,
                    reduction=red,
                )
            )
        for ls in (0.1, 0.35):
            p = f"cross_entropy_{red}_ls{int(ls * 100)}"
            cases.append(
                case(
                    f"{p}",
                    "cross_entropy",
                    [inp([5, 4])],
                    target=itensor([0, 3, 1, 2, 3]),
                    reduction=red,
                    label_smoothing=ls,
                )
            )
            cases.append(
                case(
                    f"{p}_weight_ignore",
                    "cross_entropy",
                    [inp([5, 4]), w(4)],
                    target=t5_ign,
                    weight=True,
                    reduction=red,
                    label_smoothing=ls,
                )
            )
            cases.append(
                case(
                    f"{p}_3d",
                    "cross_entropy",
                    [inp([2, 4, 3])],
                    target=itensor([[0, 1, 3], [2, -100, 1]]),
                    reduction=red,
                    label_smoothing=ls,
                )
            )
            cases.append(
                case(
                    f"{p}_f32",
                    "cross_entropy",
                    [inp([3, 6], dtype="float32")],
                    target=itensor([5, 0, 2]),
                    reduction=red,
                    label_smoothing=ls,
                )
            )
        p = f"cross_entropy_{red}_probs"
        cases.append(case(p, "cross_entropy", [inp([4, 5]), inp([4, 5], "prob")], reduction=red))
        cases.append(
            case(
                f"{p}_weight_ls",
                "cross_entropy",
                [inp([4, 5]), inp([4, 5], "prob"), w(5)],
                weight=True,
                reduction=red,
                label_smoothing=0.2,
            )
        )
        cases.append(
            case(
                f"{p}_3d",
                "cross_entropy",
                [inp([2, 3, 4]), inp([2, 3, 4], "prob", requires_grad=False)],
                reduction=red,
            )
        )
        cases.append(
            case(
                f"{p}_1d_f32",
                "cross_entropy",
                [inp([5], dtype="float32"), inp([5], "prob", dtype="float32")],
                reduction=red,
            )
        )
    cases.append(
        case(
            "cross_entropy_all_ignored_sum",
            "cross_entropy",
            [inp([3, 4])],
            target=itensor([-100, -100, -100]),
            reduction="sum",
        )
    )
    cases.append(
        case(
            "nll_loss_mean_3d_large",
            "nll_loss",
            [inp([7, 3, 5])],
            target=itensor([[0, 1, 2, 0, 1]] * 7),
        )
    )
    return cases


def pointwise_cases() -> list[dict[str, Any]]:
    cases = []
    reds = ("mean", "sum", "none")
    for red in reds:
        for op in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
            cases.append(
                case(f"{op}_{red}", op, [inp([3, 4]), inp([3, 4])], positional=2, reduction=red)
            )
            cases.append(
                case(
                    f"{op}_{red}_f32",
                    op,
                    [inp([5], dtype="float32"), inp([5], dtype="float32")],
                    positional=2,
                    reduction=red,
                )
            )
        cases.append(
            case(
                f"mse_loss_{red}_target_no_grad_transposed",
                "mse_loss",
                [
                    inp([4, 3], view={"kind": "transpose", "dim0": 0, "dim1": 1}),
                    inp([3, 4], requires_grad=False),
                ],
                positional=2,
                reduction=red,
            )
        )
        for beta in (0.0, 0.5, 2.0):
            cases.append(
                case(
                    f"smooth_l1_loss_{red}_beta{beta}",
                    "smooth_l1_loss",
                    [inp([4, 3], "wide"), inp([4, 3])],
                    positional=2,
                    reduction=red,
                    beta=beta,
                )
            )
        for delta in (0.3, 2.5):
            cases.append(
                case(
                    f"huber_loss_{red}_delta{delta}",
                    "huber_loss",
                    [inp([4, 3], "wide"), inp([4, 3])],
                    positional=2,
                    reduction=red,
                    delta=delta,
                )
            )
        cases.append(
            case(
                f"bce_{red}",
                "binary_cross_entropy",
                [inp([3, 4], "prob"), inp([3, 4], "prob")],
                positional=2,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"bce_{red}_weight_binary",
                "binary_cross_entropy",
                [
                    inp([3, 4], "prob"),
                    inp([3, 4], "binary", requires_grad=False),
                    inp([4], "positive", requires_grad=False),
                ],
                positional=2,
                named={"weight": 2},
                reduction=red,
            )
        )
        cases.append(
            case(
                f"bce_{red}_f32",
                "binary_cross_entropy",
                [inp([6], "prob", dtype="float32"), inp([6], "prob", dtype="float32")],
                positional=2,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"bce_logits_{red}",
                "binary_cross_entropy_with_logits",
                [inp([3, 4], "wide"), inp([3, 4], "prob")],
                positional=2,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"bce_logits_{red}_weights",
                "binary_cross_entropy_with_logits",
                [
                    inp([3, 4]),
                    inp([3, 4], "prob"),
                    inp([3, 1], "positive", requires_grad=False),
                    inp([4], "positive", requires_grad=False),
                ],
                positional=2,
                named={"weight": 2, "pos_weight": 3},
                reduction=red,
            )
        )
        cases.append(
            case(
                f"bce_logits_{red}_pos_weight_f32",
                "binary_cross_entropy_with_logits",
                [
                    inp([2, 3], dtype="float32"),
                    inp([2, 3], "binary", dtype="float32"),
                    inp([3], "positive", requires_grad=False, dtype="float32"),
                ],
                positional=2,
                named={"pos_weight": 2},
                reduction=red,
            )
        )
        cases.append(
            case(
                f"poisson_nll_loss_{red}",
                "poisson_nll_loss",
                [inp([3, 4]), inp([3, 4], "counts")],
                positional=2,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"poisson_nll_loss_{red}_full_rate",
                "poisson_nll_loss",
                [inp([3, 4], "positive"), inp([3, 4], "counts", requires_grad=False)],
                positional=2,
                reduction=red,
                log_input=False,
                full=True,
            )
        )
        cases.append(
            case(
                f"cosine_embedding_loss_{red}",
                "cosine_embedding_loss",
                [inp([4, 5]), inp([4, 5]), inp([4], "sign", requires_grad=False)],
                positional=3,
                reduction=red,
                margin=0.2,
            )
        )
        cases.append(
            case(
                f"cosine_embedding_loss_{red}_1d",
                "cosine_embedding_loss",
                [inp([5]), inp([5]), inp([], "sign", requires_grad=False)],
                positional=3,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"margin_ranking_loss_{red}",
                "margin_ranking_loss",
                [inp([6]), inp([6]), inp([6], "sign", requires_grad=False)],
                positional=3,
                reduction=red,
                margin=0.3,
            )
        )
        cases.append(
            case(
                f"triplet_margin_loss_{red}",
                "triplet_margin_loss",
                [inp([4, 5]), inp([4, 5]), inp([4, 5])],
                positional=3,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"triplet_margin_loss_{red}_swap_p1",
                "triplet_margin_loss",
                [inp([4, 5]), inp([4, 5]), inp([4, 5])],
                positional=3,
                reduction=red,
                swap=True,
                p=1.0,
                margin=2.0,
            )
        )
    for red in ("batchmean", "sum", "none"):
        cases.append(
            case(
                f"kl_div_{red}",
                "kl_div",
                [inp([3, 4]), inp([3, 4], "prob")],
                positional=2,
                reduction=red,
            )
        )
        cases.append(
            case(
                f"kl_div_{red}_log_target",
                "kl_div",
                [inp([3, 4]), inp([3, 4])],
                positional=2,
                reduction=red,
                log_target=True,
            )
        )
    for dim in (1, 0, -1):
        cases.append(
            case(
                f"cosine_similarity_dim{dim}",
                "cosine_similarity",
                [inp([3, 4]), inp([3, 4])],
                positional=2,
                dim=dim,
            )
        )
    cases.append(
        case(
            "cosine_similarity_broadcast_f32",
            "cosine_similarity",
            [inp([3, 4], dtype="float32"), inp([1, 4], dtype="float32")],
            positional=2,
        )
    )
    cases.append(
        case("pairwise_distance_p2", "pairwise_distance", [inp([3, 4]), inp([3, 4])], positional=2)
    )
    cases.append(
        case(
            "pairwise_distance_p1_keepdim",
            "pairwise_distance",
            [inp([3, 4]), inp([3, 4])],
            positional=2,
            p=1.0,
            keepdim=True,
        )
    )
    cases.append(
        case(
            "pairwise_distance_p3_broadcast",
            "pairwise_distance",
            [inp([3, 4]), inp([4])],
            positional=2,
            p=3.0,
        )
    )
    return cases


def activation_cases() -> list[dict[str, Any]]:
    cases = []
    for dtype in ("float64", "float32"):
        sfx = "" if dtype == "float64" else "_f32"
        x = inp([3, 4], "wide", dtype=dtype)
        cases.append(case(f"glu{sfx}", "glu", [x], positional=1))
        cases.append(case(f"glu_dim0{sfx}", "glu", [inp([4, 3], dtype=dtype)], positional=1, dim=0))
        cases.append(
            case(f"hardshrink{sfx}", "hardshrink", [inp([3, 4], dtype=dtype)], positional=1)
        )
        cases.append(case(f"hardshrink_lambd{sfx}", "hardshrink", [x], positional=1, lambd=2.5))
        cases.append(
            case(f"softshrink{sfx}", "softshrink", [inp([3, 4], dtype=dtype)], positional=1)
        )
        cases.append(case(f"softshrink_lambd{sfx}", "softshrink", [x], positional=1, lambd=2.5))
        cases.append(
            case(f"tanhshrink{sfx}", "tanhshrink", [inp([3, 4], dtype=dtype)], positional=1)
        )
        cases.append(
            case(f"threshold{sfx}", "threshold", [x], positional=1, threshold=0.5, value=-7.0)
        )
        cases.append(
            case(
                f"prelu_shared{sfx}",
                "prelu",
                [inp([3, 4], "nonzero", dtype=dtype), inp([1], "positive", dtype=dtype)],
                positional=2,
            )
        )
        cases.append(
            case(
                f"prelu_channels{sfx}",
                "prelu",
                [inp([2, 3, 4], "nonzero", dtype=dtype), inp([3], "positive", dtype=dtype)],
                positional=2,
            )
        )
        cases.append(
            case(
                f"rrelu_eval{sfx}",
                "rrelu",
                [inp([3, 4], "nonzero", dtype=dtype)],
                positional=1,
                lower=0.1,
                upper=0.3,
            )
        )
    cases.append(
        case("embedding", "embedding", [inp([5, 3])], indices=itensor([[0, 4, 4], [2, 1, 0]]))
    )
    cases.append(
        case(
            "embedding_padding_idx",
            "embedding",
            [inp([5, 3])],
            indices=itensor([0, 4, 2, 4]),
            padding_idx=4,
        )
    )
    cases.append(
        case(
            "embedding_padding_idx_negative_f32",
            "embedding",
            [inp([5, 3], dtype="float32")],
            indices=itensor([0, 4, 2, 4]),
            padding_idx=-1,
        )
    )
    cases.append(
        case(
            "embedding_scale_grad_by_freq",
            "embedding",
            [inp([5, 3])],
            indices=itensor([0, 4, 2, 4, 4]),
            scale_grad_by_freq=True,
        )
    )
    for mode in ("sum", "mean", "max"):
        cases.append(
            case(
                f"embedding_bag_{mode}",
                "embedding_bag",
                [inp([6, 3])],
                indices=itensor([0, 2, 4, 5, 4, 3, 1]),
                offsets=itensor([0, 2, 2, 5]),
                mode=mode,
            )
        )
        cases.append(
            case(
                f"embedding_bag_2d_{mode}",
                "embedding_bag",
                [inp([6, 3])],
                indices=itensor([[0, 2, 4], [5, 4, 1]]),
                mode=mode,
            )
        )
    cases.append(
        case(
            "embedding_bag_per_sample_weights",
            "embedding_bag",
            [inp([6, 3]), inp([5])],
            indices=itensor([0, 2, 4, 5, 4]),
            offsets=itensor([0, 3]),
            mode="sum",
        )
    )
    cases.append(
        case(
            "embedding_bag_include_last_offset",
            "embedding_bag",
            [inp([6, 3])],
            indices=itensor([0, 2, 4, 5, 4]),
            offsets=itensor([0, 3, 5]),
            mode="mean",
            include_last_offset=True,
        )
    )
    cases.append(
        case(
            "embedding_bag_padding_idx",
            "embedding_bag",
            [inp([6, 3])],
            indices=itensor([0, 2, 4, 2, 2]),
            offsets=itensor([0, 3]),
            mode="mean",
            padding_idx=2,
        )
    )
    cases.append(case("one_hot", "one_hot", [], indices=itensor([[0, 3], [2, 1]])))
    cases.append(
        case("one_hot_num_classes", "one_hot", [], indices=itensor([0, 3, 2]), num_classes=6)
    )
    return cases


GROUPS: list[Callable[[], list[dict[str, Any]]]] = [class_cases, pointwise_cases, activation_cases]


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    cases = [c for build in GROUPS for c in build()]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names)), "duplicate case name"
    lines = [json.dumps(c, allow_nan=False) for c in cases]
    OUT.write_text('{"cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{OUT.name}: {len(cases)} cases")


if __name__ == "__main__":
    main()
