"""PyTorch's random streams, bit for bit (tests/vectors/random.json, written by
tests/vectors/generate_random.py with PyTorch), and the Generator API."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import rustgrad as torch

CASES = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "random.json").read_text())[
    "cases"
]
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}
FNV_OFFSET, FNV_PRIME = 14695981039346656037, 1099511628211


def element_bits(t: Any) -> list[int]:
    values = t.contiguous().reshape(-1).tolist()
    if t.dtype == torch.float32:
        return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
    if t.dtype == torch.float64:
        return [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]
    return [int(v) & (2**64 - 1) for v in values]


def expected(value: Any) -> int:
    return int(value, 16) if isinstance(value, str) else value & (2**64 - 1)


def run(gen: Any, call: dict[str, Any]) -> Any:
    op, shape = call["op"], call.get("shape")
    dtype = DTYPES[call.get("dtype", "float32")]
    if op == "rand":
        return torch.rand(*shape, generator=gen, dtype=dtype)
    if op == "randn":
        return torch.randn(shape, generator=gen, dtype=dtype)
    if op == "randint":
        return torch.randint(call["low"], call["high"], tuple(shape), generator=gen, dtype=dtype)
    if op == "randperm":
        return torch.randperm(call["n"], generator=gen)
    t = (
        torch.zeros(*reversed(shape), dtype=dtype).t()
        if call.get("transposed")
        else torch.zeros(*shape, dtype=dtype)
    )
    assert getattr(t, op)(*call["args"], generator=gen) is t
    return t


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_stream_matches_pytorch(case: dict[str, Any]) -> None:
    gen = torch.Generator().manual_seed(case["seed"])
    assert gen.initial_seed() == case["seed"]
    for call, want in zip(case["calls"], case["outputs"]):
        got = run(gen, call)
        assert list(got.shape) == want["shape"]
        bits = element_bits(got)
        if "values" in want:
            assert bits == [expected(v) for v in want["values"]]
            continue
        for index, value in want["samples"].items():
            assert bits[int(index)] == expected(value)
        h = FNV_OFFSET
        for b in bits:
            h = (h * FNV_PRIME + b) % 2**64
        assert f"{h:016x}" == want["checksum"]
    if "state_after" in case:
        assert bytes(gen.get_state().tolist()).hex() == case["state_after"]


def test_manual_seed_returns_the_default_generator() -> None:
    g = torch.manual_seed(0)
    assert g is torch.default_generator
    assert torch.initial_seed() == 0
    assert torch.rand(3).tolist() == pytest.approx([0.4962566, 0.7682218, 0.0884774])
    torch.manual_seed(-1)
    assert torch.initial_seed() == 2**64 - 1
    with pytest.raises(ValueError, match="Overflow when unpacking long long"):
        torch.manual_seed(2**64)


def test_rng_state_round_trip_and_seed() -> None:
    torch.manual_seed(7)
    torch.randn(3, dtype=torch.float64)  # leaves a cached normal sample
    state = torch.get_rng_state()
    assert list(state.shape) == [5056]
    first = torch.randn(5, dtype=torch.float64).tolist()
    torch.set_rng_state(state)
    assert torch.randn(5, dtype=torch.float64).tolist() == first
    s = torch.seed()
    assert torch.initial_seed() == s
    with pytest.raises(RuntimeError, match="Expected a CPUGeneratorImplState of size 5056"):
        torch.set_rng_state(torch.zeros(10, dtype=torch.int64))


def test_generators_are_independent() -> None:
    a, b = torch.Generator(), torch.Generator()
    assert a.initial_seed() == 67280421310721 and a.device == torch.device("cpu")
    x = torch.rand(10, generator=a).tolist()
    torch.rand(100)
    assert torch.rand(10, generator=b).tolist() == x
    b.set_state(a.get_state())
    assert torch.randn(20, generator=a).tolist() == torch.randn(20, generator=b).tolist()


def test_same_numbers_for_any_thread_count() -> None:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = torch.randn(70001, generator=torch.Generator().manual_seed(3)).sum().item()
        torch.set_num_threads(2)
        two = torch.randn(70001, generator=torch.Generator().manual_seed(3)).sum().item()
    finally:
        torch.set_num_threads(before)
    assert one == two


def test_randint_overloads() -> None:
    g = torch.Generator()
    a = torch.randint(10, (3, 4), generator=g.manual_seed(1))
    b = torch.randint(0, 10, (3, 4), generator=g.manual_seed(1))
    c = torch.randint(low=0, high=10, size=(3, 4), generator=g.manual_seed(1))
    assert a.dtype == torch.int64 and list(a.shape) == [3, 4]
    assert a.tolist() == b.tolist() == c.tolist()


def test_argument_errors_use_pytorch_messages() -> None:
    with pytest.raises(
        RuntimeError, match=r"random_ expects 'from' to be less than 'to', but got from=5 >= to=5"
    ):
        torch.randint(5, 5, (2,))
    t = torch.zeros(2)
    with pytest.raises(
        RuntimeError,
        match=r"uniform_ expects to return a \[from, to\) range, but found from=1 > to=0",
    ):
        t.uniform_(1, 0)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        t.normal_(0, -1)


def test_in_place_sampling_under_autograd() -> None:
    leaf = torch.zeros(3, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation.",
    ):
        leaf.uniform_()
    with torch.no_grad():
        leaf.normal_()
    assert leaf._version == 1
    y = leaf * 2
    y.uniform_(generator=torch.Generator())
    y.sum().backward()
    assert leaf.grad.tolist() == [0.0, 0.0, 0.0]
