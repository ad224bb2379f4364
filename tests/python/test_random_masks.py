"""Random masks and noise against PyTorch, bit for bit: ``bernoulli_``, ``bernoulli(x,
p)``, the ``*_like`` samplers, the dropout family and ``rrelu`` in training, for the same
seed, and the
generator's state after each op (tests/vectors/random_masks.json, written by
tests/vectors/generate_random_masks.py with PyTorch); plus the default generator's
per-process seed (Note [Random numbers])."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch
import rustgrad.nn.functional as F

CASES = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "random_masks.json").read_text()
)["cases"]
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
REQUIRED_OPS = {
    "bernoulli_",
    "bernoulli_p",
    "rand_like",
    "randn_like",
    "randint_like",
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "rrelu",
    "rrelu_",
    "RReLU",
}


def make(spec: dict[str, Any]) -> Any:
    """The input a case describes, as the generator builds it."""
    shape, dtype, layout = list(spec["shape"]), DTYPES[spec["dtype"]], spec["layout"]
    if layout == "contiguous":
        stored = shape
    elif layout == "reversed":
        stored = shape[::-1]
    elif layout == "channels_last":
        stored = [shape[0], shape[2], shape[3], shape[1]]
    elif layout == "strided":
        stored = [*shape[:-1], 2 * shape[-1]]
    elif layout == "reversed_strided":
        stored = [*shape[:-1], 2 * shape[-1]][::-1]
    elif layout == "expanded":
        stored = [1, *shape[1:]]
    else:
        stored = [1, shape[2], shape[1]]
    numel = 1
    for s in stored:
        numel *= s
    i = torch.arange(numel, dtype=torch.float64)
    values = ((i * 7) % 23 - 11) / 4
    if not dtype.is_floating_point:
        values = torch.zeros(numel, dtype=torch.float64)
    base = values.reshape(stored).to(dtype)
    if layout == "reversed":
        return base.permute(*reversed(range(len(shape))))
    if layout == "channels_last":
        return base.permute(0, 3, 1, 2)
    if layout == "strided":
        return base[..., ::2]
    if layout == "reversed_strided":
        return base.permute(*reversed(range(len(shape))))[..., ::2]
    if layout == "expanded":
        return base.expand(*shape)
    if layout == "expanded_transposed":
        return base.expand(shape[0], shape[2], shape[1]).transpose(1, 2)
    return base


def run(op: str, x: Any, kw: dict[str, Any]) -> Any:
    """One op on ``x`` (the generator's dispatch)."""
    p = kw.get("p", 0.5)
    inplace = kw.get("inplace", False)
    if op == "bernoulli_":
        return x.bernoulli_(p)
    if op == "bernoulli_p":
        return torch.bernoulli(x, p)
    if op in ("rand_like", "randn_like", "randint_like"):
        args = [10] if op == "randint_like" else []
        dtype = DTYPES[kw["dtype"]] if "dtype" in kw else None
        return getattr(torch, op)(x, *args, dtype=dtype)
    if op in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        return getattr(F, op)(x, p, training=True, inplace=inplace)
    if op in ("alpha_dropout", "feature_alpha_dropout"):
        return getattr(F, op)(x, p, training=True, inplace=inplace)
    if op in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
        return getattr(torch.nn, op)(p, inplace=inplace).train()(x)
    if op == "FeatureAlphaDropout":
        return torch.nn.FeatureAlphaDropout(p, inplace=inplace).train()(x)
    lower, upper = kw.get("lower", 1.0 / 8), kw.get("upper", 1.0 / 3)
    if op == "rrelu":
        return F.rrelu(x, lower, upper, training=kw.get("training", True))
    if op == "rrelu_":
        return F.rrelu_(x, lower, upper, training=kw.get("training", True))
    if op == "RReLU":
        return torch.nn.RReLU(lower, upper).train(kw.get("training", True))(x)
    raise ValueError(op)


def test_the_vectors_cover_every_op():
    assert {c["op"] for c in CASES} == REQUIRED_OPS


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_mask_and_generator_state_match_pytorch(case):
    x = make(case["input"])
    kw = case["kwargs"]
    torch.manual_seed(case["seed"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(case["op"], x, kw)
    after = torch.rand(2, dtype=torch.float64).tolist()
    assert [str(w.message) for w in caught] == case["warnings"]
    assert list(out.shape) == case["out_shape"]
    assert out.dtype == DTYPES[case["out_dtype"]]
    assert out.contiguous().flatten().tolist() == case["out"]
    if "out_stride" in case:
        assert list(out.stride()) == case["out_stride"]
    assert after == case["next"], "the op drew another amount of random numbers than PyTorch"
    if kw.get("inplace") or case["op"].endswith("_"):
        assert out is x
    if "grad" in case:
        leaf = make(case["input"]).detach().requires_grad_(True)
        torch.manual_seed(case["seed"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arg = leaf.clone() if kw.get("inplace") or case["op"] == "rrelu_" else leaf
            y = run(case["op"], arg, kw)
        w = torch.arange(1, y.numel() + 1, dtype=y.dtype).reshape(y.shape)
        (y * w).sum().backward()
        assert leaf.grad.contiguous().flatten().tolist() == case["grad"]


def test_dropout_of_twenty_ones_is_pytorchs_mask():
    """The issue's example: ``manual_seed(0); F.dropout(ones(20), 0.5)``."""
    torch.manual_seed(0)
    got = F.dropout(torch.ones(20), 0.5).tolist()
    # torch.manual_seed(0); torch.nn.functional.dropout(torch.ones(20), 0.5)
    keep = [0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1, 1, 0, 0]
    assert got == [2.0 * k for k in keep]


def test_rrelu_training_refuses_float16_as_pytorch():
    with pytest.raises(NotImplementedError, match='"rrelu_with_noise_out_cpu" not implemented'):
        F.rrelu(torch.ones(3, dtype=torch.float16), training=True)
    # Evaluation is a leaky_relu, which float16 has.
    assert F.rrelu(-torch.ones(2, dtype=torch.float16), 0.25, 0.25).tolist() == [-0.25, -0.25]


# ------------------------------------------------------------ the default generator's seed


SEED_SCRIPT = "import rustgrad as torch; print(torch.initial_seed(), torch.rand(1).item())"


def _fresh_process_seed() -> tuple[int, float]:
    done = subprocess.run(
        [sys.executable, "-c", SEED_SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    seed, value = done.stdout.split()
    return int(seed), float(value)


def test_default_generator_is_seeded_from_the_os_in_each_process():
    (seed_a, value_a), (seed_b, value_b) = _fresh_process_seed(), _fresh_process_seed()
    # Two 64-bit seeds from the OS are equal with probability 2**-64.
    assert seed_a != seed_b
    assert seed_a != 67280421310721 and seed_b != 67280421310721
    assert value_a != value_b
    # The stream is the one manual_seed gives for that seed.
    gen = torch.Generator().manual_seed(seed_a)
    assert torch.rand(1, generator=gen).item() == value_a


def test_generator_objects_still_start_from_pytorchs_default_seed():
    assert torch.Generator().initial_seed() == 67280421310721


def test_manual_seed_and_seed_on_the_default_generator():
    torch.manual_seed(123)
    assert torch.initial_seed() == 123
    first = torch.rand(3).tolist()
    torch.manual_seed(123)
    assert torch.rand(3).tolist() == first
    s = torch.seed()
    assert torch.initial_seed() == s and 0 <= s < 2**64
    assert (
        torch.rand(3).tolist() == torch.rand(3, generator=torch.Generator().manual_seed(s)).tolist()
    )
