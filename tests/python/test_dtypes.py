"""The storage dtypes (uint8, int8, int16, int32, float16, bfloat16): dtype objects and
aliases, dtype facts, finfo / iinfo, conversions, numpy interop, gradients through
float16, wrapping integer arithmetic against numpy, and bad input. Values computed by
arithmetic come from numpy; the PyTorch strings (type names, messages, reprs) are the
ones PyTorch 2.15 prints. Promotion and conversion tables are in
tests/vectors/dtype_ops.json (test_vectors.py)."""

import numpy as np
import pytest
import rustgrad as torch
from hypothesis import given, settings
from hypothesis import strategies as st

NEW = ["uint8", "int8", "int16", "int32", "float16", "bfloat16"]
# dtype -> (element size, legacy type name, is_floating_point, is_signed)
FACTS = {
    "uint8": (1, "torch.ByteTensor", False, False),
    "int8": (1, "torch.CharTensor", False, True),
    "int16": (2, "torch.ShortTensor", False, True),
    "int32": (4, "torch.IntTensor", False, True),
    "int64": (8, "torch.LongTensor", False, True),
    "float16": (2, "torch.HalfTensor", True, True),
    "bfloat16": (2, "torch.BFloat16Tensor", True, True),
    "float32": (4, "torch.FloatTensor", True, True),
    "float64": (8, "torch.DoubleTensor", True, True),
    "bool": (1, "torch.BoolTensor", False, False),
}


def test_aliases_are_the_same_objects_as_in_pytorch():
    assert torch.half is torch.float16
    assert torch.short is torch.int16
    assert torch.int is torch.int32
    assert torch.long is torch.int64
    assert torch.float is torch.float32
    assert torch.double is torch.float64
    for name in NEW:
        d = getattr(torch, name)
        assert repr(d) == f"torch.{name}"
        assert torch.tensor([1], dtype=d).dtype is d


@pytest.mark.parametrize("name", sorted(FACTS))
def test_dtype_facts(name):
    size, legacy, floating, signed = FACTS[name]
    d = getattr(torch, name)
    x = torch.ones(3, 2, dtype=d)
    assert x.element_size() == size == x.itemsize == d.itemsize
    assert x.nbytes == 6 * size
    assert x.type() == legacy
    assert x.is_floating_point() is floating == d.is_floating_point
    assert d.is_signed is signed
    assert torch.ones(2).type(legacy).dtype is d


def test_conversion_methods():
    x = torch.tensor([1.5, -2.5, 300.0])
    for method, d in [
        ("byte", torch.uint8),
        ("char", torch.int8),
        ("short", torch.int16),
        ("int", torch.int32),
        ("half", torch.float16),
        ("bfloat16", torch.bfloat16),
    ]:
        y = getattr(x, method)()
        assert y.dtype is d
        assert getattr(y, method)() is y
    # x86 truncation then wrapping, as PyTorch: 300 -> 44, -2.5 -> 254 in uint8.
    assert x.byte().tolist() == [1, 254, 44]
    assert x.char().tolist() == [1, -2, 44]
    # float16 rounds to nearest even: 2049 is a tie between 2048 and 2050.
    assert torch.tensor([2049.0, 2051.0]).half().tolist() == [2048.0, 2052.0]
    assert torch.tensor([1.00390625]).bfloat16().tolist() == [1.0]


def test_reprs_as_pytorch():
    assert repr(torch.tensor([1, 1], dtype=torch.uint8)) == "tensor([1, 1], dtype=torch.uint8)"
    assert repr(torch.tensor([1.5, 2.25]).half()) == "tensor([1.5000, 2.2500], dtype=torch.float16)"
    x = torch.tensor([[1.5, 2.25]], dtype=torch.bfloat16, requires_grad=True)
    assert repr(x * 2) == "tensor([[3.0000, 4.5000]], dtype=torch.bfloat16, grad_fn=<MulBackward0>)"


def test_finfo_matches_numpy_and_bfloat16_closed_forms():
    f = torch.finfo(torch.float16)
    n = np.finfo(np.float16)
    assert (f.bits, f.eps, f.max, f.min, f.tiny) == (16, n.eps, n.max, n.min, n.tiny)
    assert f.resolution == 0.001 and f.dtype == "float16"
    b = torch.finfo(torch.bfloat16)
    assert b.bits == 16 and b.eps == 2.0**-7 and b.tiny == 2.0**-126
    assert b.max == (2 - 2.0**-7) * 2.0**127 == -b.min
    assert repr(f) == (
        "finfo(resolution=0.001, min=-65504, max=65504, eps=0.000976562, "
        "smallest_normal=6.10352e-05, tiny=6.10352e-05, dtype=float16)"
    )
    with pytest.raises(TypeError, match="requires a floating point input type"):
        torch.finfo(torch.int32)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_numpy(name):
    i, n = torch.iinfo(getattr(torch, name)), np.iinfo(getattr(np, name))
    assert (i.bits, i.min, i.max, i.dtype) == (n.bits, n.min, n.max, name)
    with pytest.raises(TypeError, match="requires an integer input type"):
        torch.iinfo(torch.float16)


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "float16"])
def test_numpy_memory_is_shared_both_ways(name):
    a = np.arange(6, dtype=getattr(np, name)).reshape(2, 3)
    t = torch.from_numpy(a)
    assert t.dtype is getattr(torch, name)
    a[0, 1] = 9
    assert t[0, 1].item() == 9
    back = t.numpy()
    assert back.dtype == a.dtype
    t[1, 2] = 7
    assert back[1, 2] == 7 and a[1, 2] == 7
    assert torch.tensor(a).dtype is getattr(torch, name)


def test_bfloat16_has_no_numpy_dtype():
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        torch.ones(2, dtype=torch.bfloat16).numpy()


def test_default_dtype_may_be_half():
    try:
        torch.set_default_dtype(torch.float16)
        assert torch.get_default_dtype() is torch.float16
        assert torch.tensor([1.5]).dtype is torch.float16
        assert torch.ones(2).dtype is torch.float16
        assert (torch.tensor([1, 2]) / 2).dtype is torch.float16
    finally:
        torch.set_default_dtype(torch.float32)
    with pytest.raises(TypeError, match="only floating-point types"):
        torch.set_default_dtype(torch.int32)


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_gradients_flow_through_half_types_in_their_dtype(name):
    d = getattr(torch, name)
    x = torch.tensor([1.0, 2.0, -3.0], dtype=d, requires_grad=True)
    w = torch.tensor([[0.5], [0.25], [2.0]], dtype=d, requires_grad=True)
    ((x * x).sum() + (x @ w).sum()).backward()
    assert x.grad.dtype is d and w.grad.dtype is d
    assert x.grad.tolist() == [2.5, 4.25, -4.0]
    assert w.grad.tolist() == [[1.0], [2.0], [-3.0]]
    # Conversions are differentiable both ways.
    y = torch.tensor([1.5], requires_grad=True)
    y.half().float().sum().backward()
    assert y.grad.tolist() == [1.0]


def test_integer_matmul_is_exact_and_wraps():
    a = torch.tensor([[100, 100], [-128, 1]], dtype=torch.int8)
    b = torch.tensor([[2, 0], [1, 1]], dtype=torch.int8)
    got = (a @ b).numpy()
    want = (a.numpy().astype(np.int64) @ b.numpy().astype(np.int64)).astype(np.int8)
    np.testing.assert_array_equal(got, want)
    big = torch.tensor([[2**62, 3]], dtype=torch.int64)
    assert (big @ torch.tensor([[4], [5]])).tolist() == [[15]]  # 2**64 wraps to 0
    with pytest.raises(RuntimeError, match="expected m1 and m2 to have the same dtype, but got: "):
        torch.ones(2, 2, dtype=torch.long) @ torch.ones(2, 2)
    with pytest.raises(RuntimeError, match="but got: long int != float"):
        torch.ones(2, 2, dtype=torch.long).mm(torch.ones(2, 2))
    with pytest.raises(RuntimeError, match="c10::Half != c10::BFloat16"):
        torch.ones(2, 2, dtype=torch.half).mm(torch.ones(2, 2, dtype=torch.bfloat16))


def test_reductions_of_integers_as_pytorch():
    x = torch.tensor([200, 100, 7], dtype=torch.uint8)
    assert x.sum().dtype is torch.int64 and x.sum().item() == 307
    assert x.cumsum(0).dtype is torch.int64 and x.prod().item() == 140000
    assert x.max().dtype is torch.uint8 and x.argmax().item() == 0
    h = torch.tensor([0.1] * 1000, dtype=torch.float16)
    # Accumulated in float32, rounded once (not 1000 float16 roundings).
    assert h.sum().dtype is torch.float16
    assert h.sum().item() == float(np.float16(np.float32(np.float16(0.1)) * 1000))


@settings(max_examples=25, deadline=None)
@given(
    st.sampled_from(["int8", "uint8"]),
    st.lists(st.integers(-128, 255), min_size=1, max_size=12),
    st.lists(st.integers(-128, 255), min_size=1, max_size=12),
)
def test_wrapping_arithmetic_matches_numpy(name, xs, ys):
    n = min(len(xs), len(ys))
    npd = getattr(np, name)
    a = np.array(xs[:n]).astype(npd)
    b = np.array(ys[:n]).astype(npd)
    ta, tb = torch.tensor(a), torch.tensor(b)
    assert ta.dtype is getattr(torch, name)
    with np.errstate(over="ignore"):
        for op in ["__add__", "__sub__", "__mul__", "__and__", "__or__", "__xor__"]:
            got = getattr(ta, op)(tb).numpy()
            np.testing.assert_array_equal(got, getattr(a, op)(b), err_msg=op)
        ok = (b != 0) & ~((a == -128) & (b == -1) & (name == "int8"))
        mask = torch.tensor(ok)
        np.testing.assert_array_equal((ta[mask] // tb[mask]).numpy(), a[ok] // b[ok])
        np.testing.assert_array_equal((ta[mask] % tb[mask]).numpy(), a[ok] % b[ok])
    # A Python int keeps the dtype and wraps (uint8 + 5 stays uint8).
    np.testing.assert_array_equal((ta + 5).numpy(), (a + npd(5)).astype(npd))


RT, TE, NIE = RuntimeError, TypeError, NotImplementedError

BAD = {
    "int32_requires_grad": (
        lambda: torch.zeros(2, dtype=torch.int32, requires_grad=True),
        RT,
        # PyTorch's factory says "Only Tensors...", its requires_grad_ "only Tensors...".
        "nly Tensors of floating point and complex dtype can require gradients",
    ),
    "uint8_fill_300": (
        lambda: torch.zeros(2, dtype=torch.uint8).fill_(300),
        RT,
        "value cannot be converted to type uint8_t without overflow",
    ),
    "int8_full_128": (
        lambda: torch.full((2,), 128, dtype=torch.int8),
        RT,
        "value cannot be converted to type int8_t without overflow",
    ),
    "half_fill_70000": (
        lambda: torch.zeros(2, dtype=torch.float16).fill_(70000.0),
        RT,
        "value cannot be converted to type c10::Half without overflow",
    ),
    "tensor_300_uint8": (
        lambda: torch.tensor([300], dtype=torch.uint8),
        RT,
        "value cannot be converted to type uint8 without overflow",
    ),
    "softmax_int32": (
        lambda: torch.ones(2, dtype=torch.int32).softmax(0),
        NIE,
        "not implemented for 'Int'",
    ),
    "mean_int16": (
        lambda: torch.ones(2, dtype=torch.int16).mean(),
        RT,  # PyTorch: NotImplementedError, a RuntimeError subclass
        "Input dtype must be either a floating point or complex dtype. Got: Short",
    ),
    "bitwise_half": (
        lambda: torch.ones(2, dtype=torch.int8) & torch.ones(2, dtype=torch.float16),
        NIE,
        "\"bitwise_and_cpu\" not implemented for 'Half'",
    ),
    "bitwise_not_bfloat16": (
        lambda: torch.ones(2, dtype=torch.bfloat16).bitwise_not(),
        NIE,
        "\"bitwise_not_cpu\" not implemented for 'BFloat16'",
    ),
    "int16_add_float_inplace": (
        lambda: torch.ones(2, dtype=torch.int16).add_(1.5),
        RT,
        "result type Float can't be cast to the desired output type Short",
    ),
    "uint8_mul_float_inplace": (
        lambda: torch.ones(2, dtype=torch.uint8).mul_(1.5),
        RT,
        "result type Float can't be cast to the desired output type Byte",
    ),
    # PyTorch 2.15 checks the in-place cast before the kernel refuses Float.
    "int32_bitwise_and_float_inplace": (
        lambda: torch.ones(2, dtype=torch.int32).bitwise_and_(2.5),
        RT,
        "result type Float can't be cast to the desired output type Int",
    ),
    "int32_bitwise_xor_float_tensor_inplace": (
        lambda: torch.ones(2, dtype=torch.int32).bitwise_xor_(torch.ones(2)),
        RT,
        "result type Float can't be cast to the desired output type Int",
    ),
    "int32_iand_float": (
        lambda: torch.ones(2, dtype=torch.int32).__iand__(2.5),
        RT,
        "result type Float can't be cast to the desired output type Int",
    ),
    # clamp_ with number bounds names the destination by its C++ type in PyTorch 2.15;
    # the tensor-bound form and other in-place ops use "Short".
    "int16_clamp_float_inplace": (
        lambda: torch.ones(2, dtype=torch.int16).clamp_(min=0.5),
        RT,
        "result type Float can't be cast to the desired output type short int",
    ),
    "bool_clamp_float_inplace": (
        lambda: torch.ones(2, dtype=torch.bool).clamp_(min=0.5),
        RT,
        "result type Float can't be cast to the desired output type bool",
    ),
    "uint8_clamp_max_float_inplace": (
        lambda: torch.ones(2, dtype=torch.uint8).clamp_(max=0.5),
        RT,
        "result type Float can't be cast to the desired output type unsigned char",
    ),
    "int8_clamp_min_float_inplace": (
        lambda: torch.ones(2, dtype=torch.int8).clamp_min_(0.5),
        RT,
        "result type Float can't be cast to the desired output type signed char",
    ),
    "int16_clamp_tensor_bound_inplace": (
        lambda: torch.ones(2, dtype=torch.int16).clamp_(torch.tensor(0.5)),
        RT,
        "result type Float can't be cast to the desired output type Short",
    ),
    "bool_matmul": (
        lambda: torch.ones(2, 2, dtype=torch.bool) @ torch.ones(2, 2, dtype=torch.bool),
        NIE,
        "not implemented for 'Bool'",
    ),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_as_pytorch(name):
    bad, exc, phrase = BAD[name]
    with pytest.raises(exc) as info:
        bad()
    assert phrase in str(info.value)
