"""The samplers of Note [Random samplers]: PyTorch's numbers bit for bit
(tests/vectors/samplers_ops.json, written by tests/vectors/generate_samplers.py with
PyTorch), seeded statistical checks of the distributions, determinism, PyTorch's
errors, and autograd behaviour of the in-place forms."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
from test_random import FNV_OFFSET, FNV_PRIME, element_bits, expected

CASES = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "samplers_ops.json").read_text()
)["cases"]
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
}
REQUIRED_OPS = {
    "random_",
    "random_full_",
    "bernoulli_",
    "geometric_",
    "exponential_",
    "log_normal_",
    "cauchy_",
    "bernoulli",
    "multinomial",
    "normal",
    "randint_like",
    "randint",
}


def make(spec: dict[str, Any]) -> Any:
    shape, dtype = spec["shape"], DTYPES[spec.get("dtype", "float32")]
    numel = math.prod(shape)
    stored = list(reversed(shape)) if spec.get("transposed") else shape
    if "values" in spec:
        base = torch.tensor(spec["values"], dtype=torch.float64).reshape(stored)
    else:
        base = (torch.arange(numel, dtype=torch.float64) / max(numel, 1)).reshape(stored)
    t = base.to(dtype)
    return t.t() if spec.get("transposed") else t


def run(gen: Any, call: dict[str, Any]) -> Any:
    op, args = call["op"], list(call.get("args", []))
    kwargs = dict(call.get("kwargs", {}))
    if "dtype" in kwargs:
        kwargs["dtype"] = DTYPES[kwargs["dtype"]]
    if op == "random_full_":
        t = make(call["input"])
        assert t.random_(-(2**63), None, generator=gen) is t
        return t
    if op.endswith("_"):
        t = make(call["input"])
        if "p" in call:
            args = [make(call["p"])]
        assert getattr(t, op)(*args, generator=gen) is t
        return t
    if op == "bernoulli":
        return torch.bernoulli(make(call["input"]), *args, generator=gen)
    if op == "multinomial":
        return torch.multinomial(make(call["input"]), *args, generator=gen)
    if op == "normal":
        mean = make(call["mean"]) if "mean" in call else call["mean_value"]
        std = make(call["std"]) if "std" in call else call["std_value"]
        return torch.normal(mean, std, *args, generator=gen, **kwargs)
    if op == "randint_like":
        return torch.randint_like(make(call["input"]), *args, generator=gen, **kwargs)
    if op == "randint":
        return torch.randint(*args, generator=gen, **kwargs)
    raise ValueError(op)


def test_every_required_op_has_vectors() -> None:
    assert {c["op"] for case in CASES for c in case["calls"]} == REQUIRED_OPS


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_samplers_match_pytorch(case: dict[str, Any]) -> None:
    gen = torch.Generator().manual_seed(case["seed"])
    for call, want in zip(case["calls"], case["outputs"]):
        got = run(gen, call)
        assert list(got.shape) == want["shape"]
        assert str(got.dtype).removeprefix("torch.") == want["dtype"]
        bits = (
            element_bits(got)
            if got.dtype != torch.bool
            else [int(v) for v in got.reshape(-1).tolist()]
        )
        if "values" in want:
            assert bits == [int(v) if isinstance(v, bool) else expected(v) for v in want["values"]]
            continue
        for index, value in want["samples"].items():
            assert bits[int(index)] == expected(value)
        h = FNV_OFFSET
        for b in bits:
            h = (h * FNV_PRIME + b) % 2**64
        assert f"{h:016x}" == want["checksum"]


N = 40000


def within(sample: np.ndarray, mean: float, var: float, sigmas: float = 5.0) -> None:
    """The sample mean lies within ``sigmas`` standard errors of ``mean``, and the sample
    variance within ``sigmas`` standard errors (fourth-moment bound, generous) of
    ``var``."""
    n = sample.size
    assert abs(sample.mean() - mean) <= sigmas * math.sqrt(var / n)
    assert abs(sample.var() - var) <= sigmas * var * math.sqrt(8.0 / n) + 1e-12


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_distributions_have_their_moments(dtype: Any) -> None:
    g = torch.Generator().manual_seed(123)
    p, lam = 0.3, 2.5
    within(torch.empty(N, dtype=dtype).bernoulli_(p, generator=g).numpy(), p, p * (1 - p))
    within(torch.empty(N, dtype=dtype).exponential_(lam, generator=g).numpy(), 1 / lam, 1 / lam**2)
    within(torch.empty(N, dtype=dtype).geometric_(p, generator=g).numpy(), 1 / p, (1 - p) / p**2)
    logs = np.log(torch.empty(N, dtype=dtype).log_normal_(0.5, 0.25, generator=g).numpy())
    within(logs, 0.5, 0.25**2)
    r = torch.empty(N, dtype=torch.int64).random_(0, 10, generator=g).numpy()
    within(r.astype(np.float64), 4.5, (100 - 1) / 12)
    c = torch.empty(N, dtype=dtype).cauchy_(1.0, 2.0, generator=g).numpy()
    # Cauchy has no mean: its median and quartiles are median +- sigma.
    q1, med, q3 = np.quantile(c, [0.25, 0.5, 0.75])
    assert abs(med - 1.0) < 0.1 and abs(q1 + 1.0) < 0.15 and abs(q3 - 3.0) < 0.15
    w = torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=dtype)
    m = torch.multinomial(w, N, replacement=True, generator=g).numpy()
    freq = np.bincount(m, minlength=4) / N
    assert np.all(np.abs(freq - np.array([0.1, 0.2, 0.3, 0.4])) < 5 * np.sqrt(0.25 / N))


def test_same_seed_same_numbers_for_any_thread_count() -> None:
    before = torch.get_num_threads()
    outs = []
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            g = torch.Generator().manual_seed(5)
            outs.append(
                (
                    torch.empty(70001).bernoulli_(0.4, generator=g).tolist(),
                    torch.empty(70001).exponential_(generator=g).tolist(),
                    torch.multinomial(torch.ones(500), 200, generator=g).tolist(),
                )
            )
    finally:
        torch.set_num_threads(before)
    assert outs[0] == outs[1]


def test_random_ranges_per_dtype() -> None:
    g = torch.Generator().manual_seed(0)
    b = torch.empty(1000, dtype=torch.bool).random_(generator=g)
    assert set(b.tolist()) == {False, True}
    f = torch.empty(1000).random_(generator=g)
    assert f.min().item() >= 0 and f.max().item() <= 2**24
    assert f.tolist() == f.floor().tolist()
    i = torch.empty(1000, dtype=torch.int64).random_(-3, 3, generator=g)
    assert set(i.tolist()) == set(range(-3, 3))
    assert set(torch.empty(50, dtype=torch.int64).random_(4).tolist()) <= set(range(4))


def test_forms_and_defaults() -> None:
    x = torch.full((4, 3), 0.5)
    a = torch.bernoulli(x, generator=torch.Generator().manual_seed(1))
    b = x.bernoulli(generator=torch.Generator().manual_seed(1))
    c = torch.empty(4, 3).bernoulli_(x, generator=torch.Generator().manual_seed(1))
    assert a.tolist() == b.tolist() == c.tolist()
    assert torch.bernoulli(torch.rand(3, dtype=torch.float64)).dtype == torch.float64
    assert x.multinomial(2).dtype == torch.int64
    g = torch.Generator()
    assert (
        torch.randint_like(x, 10, generator=g.manual_seed(2)).tolist()
        == torch.randint_like(x, 0, 10, generator=g.manual_seed(2)).tolist()
    )
    assert torch.randint_like(x, 10, dtype=torch.int64).dtype == torch.int64
    assert (
        torch.rand_like(x, generator=g.manual_seed(3)).tolist()
        == torch.rand(4, 3, generator=g.manual_seed(3)).tolist()
    )
    assert (
        torch.randn_like(x, generator=g.manual_seed(3)).tolist()
        == torch.randn(4, 3, generator=g.manual_seed(3)).tolist()
    )
    assert torch.normal(0.0, 1.0, (2, 3), dtype=torch.float64).dtype == torch.float64
    assert list(torch.normal(torch.zeros(2, 1), torch.ones(3)).shape) == [2, 3]
    out = torch.empty(2, 3)
    assert torch.normal(0.0, 1.0, (2, 3), out=out) is out
    # log_normal_ defaults: mean 1, std 2.
    g1, g2 = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    assert (
        torch.empty(5).log_normal_(generator=g1).tolist()
        == torch.empty(5).log_normal_(1.0, 2.0, generator=g2).tolist()
    )


def test_in_place_samplers_and_autograd() -> None:
    leaf = torch.rand(3, requires_grad=True)
    for op, args in (
        ("random_", ()),
        ("bernoulli_", (0.5,)),
        ("exponential_", ()),
        ("geometric_", (0.5,)),
        ("log_normal_", ()),
        ("cauchy_", ()),
    ):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            getattr(leaf, op)(*args)
        y = leaf * 2
        v = y._version
        getattr(y, op)(*args)
        assert y._version == v + 1 and y.requires_grad
        y.sum().backward()
        assert leaf.grad.tolist() == [0.0, 0.0, 0.0]
        leaf.grad = None
    # A refused write draws nothing.
    g = torch.Generator().manual_seed(9)
    with pytest.raises(RuntimeError):
        leaf.exponential_(generator=g)
    assert (
        torch.rand(2, generator=g).tolist()
        == torch.rand(2, generator=torch.Generator().manual_seed(9)).tolist()
    )


def test_normal_and_bernoulli_record_zero_gradients() -> None:
    m = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    s = torch.ones(3, dtype=torch.float64, requires_grad=True)
    torch.normal(m, s).sum().backward()
    assert m.grad.tolist() == [0.0] * 3 and s.grad.tolist() == [0.0] * 3
    p = torch.full((3,), 0.5, requires_grad=True)
    y = torch.bernoulli(p)
    assert y.requires_grad
    y.sum().backward()
    assert p.grad.tolist() == [0.0] * 3
    assert not torch.multinomial(p.detach(), 2).requires_grad


def test_bernoulli_with_p_records_pytorchs_not_implemented_node() -> None:
    # PyTorch 2.15: torch.bernoulli(x, 0.5) with x requiring grad requires grad, its
    # grad_fn is "NotImplemented", and backward raises this RuntimeError.
    x = torch.rand(3, requires_grad=True)
    y = torch.bernoulli(x, 0.5)
    assert y.requires_grad and y.grad_fn.name() == "NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::bernoulli is not implemented"):
        y.sum().backward()
    with torch.no_grad():
        assert not torch.bernoulli(x, 0.5).requires_grad
    assert not torch.bernoulli(x.detach(), 0.5).requires_grad


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (
            lambda: torch.randint(0, 10, (3,), dtype=torch.bool),
            RuntimeError,
            "to - 1 is out of bounds for bool",
        ),
        (
            lambda: torch.randint(-1, 2, (3,), dtype=torch.bool),
            RuntimeError,
            "from is out of bounds for bool",
        ),
        (
            lambda: torch.empty(3).random_(5, 3),
            RuntimeError,
            "random_ expects 'from' to be less than 'to'",
        ),
        (
            lambda: torch.empty(3, dtype=torch.bool).random_(3),
            RuntimeError,
            "to - 1 is out of bounds for bool",
        ),
        (lambda: torch.empty(3).random_(0.5, 3), TypeError, "random_()"),
        (
            lambda: torch.empty(3).exponential_(0),
            RuntimeError,
            "exponential_ expects lambda > 0.0, but found lambda=0",
        ),
        (lambda: torch.empty(3).exponential_(float("nan")), RuntimeError, "found lambda=nan"),
        (
            lambda: torch.empty(3, dtype=torch.int64).exponential_(),
            RuntimeError,
            "dtype must be a floating point but you specified Long",
        ),
        (
            lambda: torch.empty(3).geometric_(1),
            RuntimeError,
            "geometric_ expects p to be in (0, 1), but got p=1",
        ),
        (
            lambda: torch.empty(3, dtype=torch.bool).geometric_(0.5),
            NotImplementedError,
            "\"geometric_cpu\" not implemented for 'Bool'",
        ),
        (
            lambda: torch.empty(3).log_normal_(0, 0),
            RuntimeError,
            "log_normal_ expects std > 0.0, but found std=0",
        ),
        (
            lambda: torch.empty(3, dtype=torch.int64).log_normal_(),
            NotImplementedError,
            "\"log_normal_cpu\" not implemented for 'Long'",
        ),
        (
            lambda: torch.empty(3).cauchy_(0, -1),
            RuntimeError,
            "cauchy_ expects sigma > 0.0, but found sigma=-1",
        ),
        (
            lambda: torch.empty(3, dtype=torch.int64).cauchy_(),
            RuntimeError,
            "you specified long int",
        ),
        (
            lambda: torch.empty(3).bernoulli_(1.5),
            RuntimeError,
            "bernoulli_ expects p to be in [0, 1], but got p=1.5",
        ),
        (
            lambda: torch.empty(3).bernoulli_(torch.tensor([0.5, 1.5, 0.2])),
            RuntimeError,
            "Expected p_in >= 0 && p_in <= 1",
        ),
        (
            lambda: torch.empty(3).bernoulli_(torch.tensor([1, 0, 1])),
            NotImplementedError,
            "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'",
        ),
        (
            lambda: torch.empty(3).bernoulli_(torch.rand(4)),
            RuntimeError,
            "must match the existing size",
        ),
        (
            lambda: torch.multinomial(torch.tensor([0.2, -0.1]), 1),
            RuntimeError,
            "probability tensor contains either `inf`, `nan` or element < 0",
        ),
        (
            lambda: torch.multinomial(torch.tensor([0.2, float("inf")]), 2, True),
            RuntimeError,
            "encountering probability entry = infinity or NaN",
        ),
        (
            lambda: torch.multinomial(torch.tensor([0.2, float("nan")]), 2, True),
            RuntimeError,
            "encountering probability entry < 0",
        ),
        (
            lambda: torch.multinomial(torch.tensor([[0.0, 0.0], [1.0, 1.0]]), 1),
            RuntimeError,
            "invalid multinomial distribution (sum of probabilities <= 0)",
        ),
        (
            lambda: torch.multinomial(torch.tensor([0.2, 0.3]), 3),
            RuntimeError,
            "cannot sample n_sample > prob_dist.size(-1) samples without replacement",
        ),
        (
            lambda: torch.multinomial(torch.tensor([0.2, 0.3]), 0),
            RuntimeError,
            "cannot sample n_sample <= 0 samples",
        ),
        (
            lambda: torch.multinomial(torch.tensor(0.2), 1),
            RuntimeError,
            "prob_dist must be 1 or 2 dim",
        ),
        (
            lambda: torch.multinomial(torch.tensor([1, 2]), 1),
            RuntimeError,
            "multinomial only supports floating-point dtypes for input, got: Long",
        ),
        (
            lambda: torch.normal(torch.zeros(3), torch.tensor([1.0, -1.0, 1.0])),
            RuntimeError,
            "normal expects all elements of std >= 0.0",
        ),
        (
            lambda: torch.normal(torch.zeros(3), -1.0),
            RuntimeError,
            "normal expects std >= 0.0, but found std -1",
        ),
        (
            lambda: torch.normal(torch.zeros(3), torch.ones(2)),
            RuntimeError,
            "The size of tensor a (3) must match the size of tensor b (2)",
        ),
        (
            lambda: torch.normal(0.0, 1.0),
            TypeError,
            "normal() received an invalid combination of arguments",
        ),
        (
            lambda: torch.normal(torch.zeros(3, dtype=torch.int64), 1.0),
            NotImplementedError,
            "\"normal_kernel_cpu\" not implemented for 'Long'",
        ),
        (
            lambda: torch.randint_like(torch.zeros(3, dtype=torch.bool), 10),
            RuntimeError,
            "to - 1 is out of bounds for bool",
        ),
    ],
)
def test_errors_use_pytorch_messages(call: Any, exc: type, phrase: str) -> None:
    with pytest.raises(exc) as info:
        call()
    assert phrase in str(info.value)


def test_edge_cases() -> None:
    assert list(torch.multinomial(torch.ones(0, 3), 2).shape) == [0, 2]
    assert torch.multinomial(torch.tensor([0.2, 0.3, 0.0]), 3).tolist()[2] == 2
    # A float32 range beyond 2^24 is allowed (PyTorch only warns).
    assert torch.randint(0, 2**25, (3,), dtype=torch.float32).dtype == torch.float32
    assert torch.empty(0).exponential_().numel() == 0


# random_ on the narrow dtypes after manual_seed(3): random_(), random_(0, 10),
# random_(5), as PyTorch 2.15 printed them (its uniform_int of a 32-bit output).
NARROW_RANDOM = {
    "int32": [218175338, 303761048, 893988089, 1460070019, 1249426360, 521102280],
    "int16": [5994, 1688, 11513, 26243, 15288, 25544],
    "int8": [106, 24, 121, 3, 56, 72],
    "uint8": [106, 152, 249, 131, 184, 200],
    "float16": [379.0, 896.0, 1705.0, 258.0, 1483.0, 600.0],
    "bfloat16": [200.0, 155.0, 97.0, 206.0, 43.0, 85.0],
}


@pytest.mark.parametrize("dtype", sorted(NARROW_RANDOM))
def test_random_on_narrow_dtypes_matches_pytorch(dtype):
    torch.manual_seed(3)
    dt = getattr(torch, dtype)
    assert torch.empty(6, dtype=dt).random_().tolist() == NARROW_RANDOM[dtype]
    assert torch.empty(6, dtype=dt).random_(0, 10).tolist() == [0, 5, 1, 9, 4, 1]
    assert torch.empty(3, dtype=dt).random_(5).tolist() == [0, 4, 1]


def test_random_bounds_beyond_half_range_are_refused():
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for c10::Half"):
        torch.empty(2, dtype=torch.float16).random_(0, 70000)
