"""linspace, logspace and eye against PyTorch's values bit for bit
(tests/vectors/factory.json), plus their arguments and errors; and Tensor.new_*."""

import json
import struct
from pathlib import Path

import numpy as np
import pytest
import rustgrad as torch

CASES = json.loads((Path(__file__).parents[1] / "vectors" / "factory.json").read_text())["cases"]
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def _bits(t):
    values = t.flatten().tolist()
    if t.dtype is torch.float32:
        return [f"{struct.unpack('<I', struct.pack('<f', v))[0]:08x}" for v in values]
    if t.dtype is torch.float64:
        return [f"{struct.unpack('<Q', struct.pack('<d', v))[0]:016x}" for v in values]
    return [int(v) for v in values]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_factory_matches_pytorch_bit_for_bit(case):
    kwargs = dict(case["kwargs"])
    kwargs["dtype"] = DTYPES[kwargs["dtype"]]
    out = getattr(torch, case["op"])(*case["args"], **kwargs)
    assert list(out.shape) == case["shape"]
    assert out.dtype is DTYPES[case["dtype"]]
    assert _bits(out) == case["bits"]


def test_the_vectors_cover_every_factory_and_dtype():
    assert {c["op"] for c in CASES} == {"linspace", "logspace", "eye"}
    assert {c["dtype"] for c in CASES} == {"float32", "float64", "int64"}


def test_defaults_and_forms():
    assert torch.linspace(0, 1, 5).dtype is torch.float32  # the default dtype, even for ints
    assert torch.linspace(torch.tensor(0.0), torch.tensor(2.0), 3).tolist() == [0.0, 1.0, 2.0]
    assert torch.logspace(0, 2, 3).tolist() == [1.0, 10.0, 100.0]
    assert torch.eye(3).dtype is torch.float32
    np.testing.assert_array_equal(np.array(torch.eye(2, 3).tolist()), np.eye(2, 3))
    x = torch.linspace(0, 1, 4, requires_grad=True)
    assert x.requires_grad and x.is_leaf
    assert torch.linspace(0, 1, 0).shape == (0,)


@pytest.mark.parametrize(
    "call, exc, phrase",
    [
        (lambda: torch.linspace(0, 1, -1), RuntimeError, "number of steps must be non-negative"),
        (lambda: torch.logspace(0, 1, -2), RuntimeError, "number of steps must be non-negative"),
        (lambda: torch.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
        (lambda: torch.eye(2, -3), RuntimeError, "m must be greater or equal to 0, got -3"),
        (
            lambda: torch.linspace(torch.zeros(2), 1, 3),
            RuntimeError,
            "only supports 0-dimensional start and end tensors",
        ),
        (
            lambda: torch.linspace(0, 1, 3, dtype=torch.bool),
            RuntimeError,
            "not implemented for 'Bool'",
        ),
        (
            lambda: torch.linspace(0, 1, 3, device="cuda"),
            AssertionError,
            "Torch not compiled with CUDA",
        ),
        (lambda: torch.eye(2**40, 2**40), RuntimeError, "overflow"),
    ],
)
def test_bad_arguments_raise_pytorchs_errors(call, exc, phrase):
    with pytest.raises(exc, match=phrase):
        call()


def test_new_factories_take_the_dtype_of_the_tensor():
    d = torch.ones(2, dtype=torch.float64)
    z = d.new_zeros(2, 3)
    assert z.shape == (2, 3) and z.dtype is torch.float64 and z.sum().item() == 0.0
    assert d.new_zeros((4,)).shape == (4,)
    assert d.new_ones(3).tolist() == [1.0, 1.0, 1.0]
    f = d.new_full((2,), 7)
    assert f.dtype is torch.float64 and f.tolist() == [7.0, 7.0]
    assert d.new_empty(5).shape == (5,)
    t = d.new_tensor([1, 2])
    assert t.dtype is torch.float64 and t.tolist() == [1.0, 2.0]
    i = torch.ones(2, dtype=torch.int64).new_tensor([1.5], dtype=torch.float32)
    assert i.dtype is torch.float32
    g = d.new_zeros(2, requires_grad=True)
    assert g.requires_grad and g.is_leaf
