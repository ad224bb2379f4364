"""The margin, Gaussian and CTC losses of issue 21 against PyTorch 2.15's vectors
(tests/vectors/losses_21.json, written by tests/vectors/generate_losses_21.py): values
for every reduction and option combination, grad_fn names, and the gradients of every
input; float64 gradcheck; their modules; determinism across thread counts. See Note
[Margin and CTC losses]."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn as nn
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "losses_21.json").read_text()
)["cases"]
CASES = {c["name"]: c for c in VECTORS}
DISTANCES = {
    "l1": lambda a, b: F.pairwise_distance(a, b, p=1),
    "cosine": lambda a, b: 1.0 - F.cosine_similarity(a, b),
}


def _tensor(spec: dict[str, Any]) -> Any:
    dtype = getattr(torch, spec["dtype"])
    t = torch.tensor(spec["data"], dtype=dtype).reshape(spec["shape"])
    return t.requires_grad_() if spec.get("requires_grad") else t


def _arg(spec: dict[str, Any]) -> Any:
    if "value" in spec:
        v = spec["value"]
        return tuple(v) if isinstance(v, list) else v
    return _tensor(spec)


def _close(got: Any, spec: dict[str, Any]) -> None:
    want = np.asarray(spec["data"], dtype=np.float64).reshape(spec["shape"])
    assert list(got.shape) == spec["shape"]
    tol = 1e-10 if spec["dtype"] == "float64" else 1e-5
    np.testing.assert_allclose(
        got.detach().double().numpy(), want, rtol=tol, atol=tol, equal_nan=True
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_loss_matches_pytorch(name: str) -> None:
    case = CASES[name]
    args = [_arg(a) for a in case["args"]]
    kwargs = {k: (_tensor(v) if isinstance(v, dict) else v) for k, v in case["kwargs"].items()}
    if isinstance(kwargs.get("distance_function"), str):
        kwargs["distance_function"] = DISTANCES[kwargs["distance_function"]]
    out = getattr(F, case["fn"])(*args, **kwargs)
    assert str(out.dtype) == "torch." + case["output"]["dtype"]
    _close(out, case["output"])
    assert type(out.grad_fn).__name__ == case["grad_fn"]
    out.backward(_tensor(case["grad_output"]))
    for a, want in zip(args, case["grads"], strict=True):
        if want is not None:
            _close(a.grad, want)


def test_vectors_cover_every_loss_and_reduction() -> None:
    seen = {(c["fn"], c["kwargs"].get("reduction")) for c in VECTORS}
    for fn in [
        "ctc_loss",
        "gaussian_nll_loss",
        "hinge_embedding_loss",
        "soft_margin_loss",
        "multilabel_margin_loss",
        "multilabel_soft_margin_loss",
        "multi_margin_loss",
        "triplet_margin_with_distance_loss",
    ]:
        for red in ("none", "mean", "sum"):
            assert (fn, red) in seen


def _f64(*shape: int, seed: int = 0, lo: float = -2.0, hi: float = 2.0) -> Any:
    rng = np.random.default_rng(seed)
    return torch.tensor(rng.uniform(lo, hi, size=shape)).requires_grad_()


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradcheck_float64(reduction: str) -> None:
    x = _f64(4, 5)
    t = torch.tensor([1, 0, 4, 2])
    w = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.7], dtype=torch.float64)
    for p in (1, 2):
        assert gradcheck(
            lambda x, p=p: F.multi_margin_loss(
                x, t, p=p, margin=0.6, weight=w, reduction=reduction
            ),
            [x],
        )
    mt = torch.tensor([[1, 2, -1, 0, 0], [4, -1, 0, 0, 0], [0, 1, 2, 3, 4], [3, 0, -1, 1, 1]])
    assert gradcheck(lambda x: F.multilabel_margin_loss(x, mt, reduction=reduction), [x])
    y = torch.tensor(np.sign(np.random.default_rng(1).normal(size=(4, 5))))
    assert gradcheck(lambda x: F.soft_margin_loss(x, y, reduction=reduction), [x])
    assert gradcheck(lambda x: F.hinge_embedding_loss(x, y, 0.5, reduction=reduction), [x])
    yb = (y > 0).double()
    assert gradcheck(
        lambda x, w: F.multilabel_soft_margin_loss(x, yb, w, reduction=reduction),
        [x, w.requires_grad_()],
    )
    v = _f64(4, seed=2, lo=0.1, hi=2.0)
    assert gradcheck(
        lambda x, z, v: F.gaussian_nll_loss(x, z, v, full=True, reduction=reduction),
        [x, _f64(4, 5, seed=3), v],
    )
    assert gradcheck(
        lambda a, p, n: F.triplet_margin_with_distance_loss(
            a, p, n, distance_function=DISTANCES["cosine"], swap=True, reduction=reduction
        ),
        [_f64(3, 4, seed=4), _f64(3, 4, seed=5), _f64(3, 4, seed=6)],
    )


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_ctc_gradcheck_float64(reduction: str, zero_infinity: bool) -> None:
    # The third sample is impossible (three repeats need 5 steps, it has 4): its loss is
    # infinite, zeroed with zero_infinity; without, its gradient is NaN as in PyTorch, so
    # only the finite samples are checked.
    batch = 3 if zero_infinity else 2
    logits = _f64(6, batch, 4, seed=7)
    targets = torch.tensor([[1, 2, 2], [3, 1, 0], [2, 2, 2]][:batch])

    def loss(x: Any) -> Any:
        return F.ctc_loss(
            x.log_softmax(2),
            targets,
            torch.tensor([6, 5, 4][:batch]),
            torch.tensor([3, 2, 3][:batch]),
            reduction=reduction,
            zero_infinity=zero_infinity,
        )

    assert gradcheck(loss, [logits])


def test_ctc_impossible_alignment_is_infinite() -> None:
    x = _f64(4, 1, 3)
    lp = x.log_softmax(2)
    loss = F.ctc_loss(lp, torch.tensor([[2, 2, 2]]), (4,), (3,), reduction="none")
    assert math.isinf(loss.item())
    zeroed = F.ctc_loss(lp, torch.tensor([[2, 2, 2]]), (4,), (3,), zero_infinity=True)
    zeroed.backward()
    assert zeroed.item() == 0.0
    assert x.grad.abs().sum().item() == 0.0


def test_ctc_double_backward_is_not_implemented_as_in_pytorch() -> None:
    x = _f64(5, 2, 3).log_softmax(2)
    loss = F.ctc_loss(x, torch.tensor([[1, 2], [2, 2]]), (5, 5), (2, 2))
    (g,) = torch.autograd.grad(loss, x, create_graph=True)
    with pytest.raises(RuntimeError, match="derivative for aten::_ctc_loss_backward is not"):
        g.sum().backward()


def test_modules_match_functionals() -> None:
    x = _f64(4, 5)
    t = torch.tensor([1, 0, 4, 2])
    w = torch.tensor([0.5, 1.0, 1.5, 2.0, 0.7], dtype=torch.float64)
    m = nn.MultiMarginLoss(p=2, margin=0.5, weight=w, reduction="sum")
    assert m(x, t).item() == F.multi_margin_loss(x, t, 2, 0.5, w, reduction="sum").item()
    assert "weight" in m.state_dict()
    y = torch.ones(4, 5, dtype=torch.float64)
    assert nn.SoftMarginLoss()(x, y).item() == F.soft_margin_loss(x, y).item()
    assert nn.HingeEmbeddingLoss(0.2)(x, y).item() == F.hinge_embedding_loss(x, y, 0.2).item()
    mt = torch.tensor([[1, 2, -1, 0, 0]] * 4)
    assert nn.MultiLabelMarginLoss()(x, mt).item() == F.multilabel_margin_loss(x, mt).item()
    assert (
        nn.MultiLabelSoftMarginLoss(weight=w)(x, y).item()
        == F.multilabel_soft_margin_loss(x, y, w).item()
    )
    v = torch.ones(4, 5, dtype=torch.float64)
    assert (
        nn.GaussianNLLLoss(full=True)(x, y, v).item() == F.gaussian_nll_loss(x, y, v, True).item()
    )
    tm = nn.TripletMarginWithDistanceLoss(distance_function=DISTANCES["l1"], swap=True)
    assert (
        tm(x, y, v).item()
        == F.triplet_margin_with_distance_loss(
            x, y, v, distance_function=DISTANCES["l1"], swap=True
        ).item()
    )
    lp = x.reshape(4, 1, 5).log_softmax(2)
    ctc = nn.CTCLoss(blank=4, reduction="sum", zero_infinity=True)
    assert (
        ctc(lp, torch.tensor([[1, 2]]), (4,), (2,)).item()
        == F.ctc_loss(lp, torch.tensor([[1, 2]]), (4,), (2,), 4, "sum", True).item()
    )
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginWithDistanceLoss(margin=0.0)
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        assert nn.SoftMarginLoss(size_average=False).reduction == "sum"


def test_ctc_lengths_must_both_be_tensors_or_both_sequences() -> None:
    lp = _f64(4, 1, 3).log_softmax(2)
    with pytest.raises(TypeError):
        F.ctc_loss(lp, torch.tensor([[1]]), torch.tensor([4]), (1,))
    with pytest.raises(TypeError):
        F.ctc_loss(lp, torch.tensor([[1]]), 4, 1)


@pytest.mark.parametrize("threads", [1, 2])
def test_kernels_are_bitwise_identical_for_any_thread_count(threads: int) -> None:
    rng = np.random.default_rng(11)
    lp = torch.tensor(rng.normal(size=(60, 40, 30))).log_softmax(2).requires_grad_()
    targets = torch.tensor(rng.integers(1, 30, size=(40, 20)))
    il, tl = (
        tuple(rng.integers(40, 61, size=40).tolist()),
        tuple(rng.integers(5, 21, size=40).tolist()),
    )
    # Sizes above the engine's parallel threshold (2**15 elements), so 2 threads split
    # the samples.
    x = torch.tensor(rng.normal(size=(800, 50))).requires_grad_()
    t = torch.tensor(rng.integers(0, 50, size=800))
    mt = torch.tensor(rng.integers(-1, 50, size=(800, 50)))

    def run() -> list[np.ndarray]:
        outs = []
        for loss, inp in [
            (lambda: F.ctc_loss(lp, targets, il, tl, reduction="sum"), lp),
            (lambda: F.multi_margin_loss(x, t, p=2, reduction="sum"), x),
            (lambda: F.multilabel_margin_loss(x, mt, reduction="sum"), x),
        ]:
            inp.grad = None
            out = loss()
            out.backward()
            outs += [out.detach().numpy().copy(), inp.grad.numpy().copy()]
        return outs

    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        reference = run()
        torch.set_num_threads(threads)
        for a, b in zip(run(), reference, strict=True):
            assert a.tobytes() == b.tobytes()
    finally:
        torch.set_num_threads(old)


def test_ctc_target_out_of_range_is_an_index_error() -> None:
    # ATen reads out of bounds here (its CPU kernel does not check the labels).
    lp = _f64(4, 1, 3).log_softmax(2)
    with pytest.raises(IndexError, match="target 3 is out of bounds for 3 classes"):
        F.ctc_loss(lp, torch.tensor([[1, 3]]), (4,), (2,))
    with pytest.raises(IndexError, match="target -1 is out of bounds"):
        F.ctc_loss(lp, torch.tensor([[-1]]), (4,), (1,))
    # padding beyond a target's length is never read
    assert math.isfinite(F.ctc_loss(lp, torch.tensor([[1, 99]]), (4,), (1,)).item())
