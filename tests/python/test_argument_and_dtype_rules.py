"""PyTorch's argument and dtype rules for the binding's shared helpers: exact Python
ints (Note [Exact scalars]), bool and tensor indices, empty dim lists, dim wrapping,
integer pow/clamp/alpha, NaN propagation, int(), numpy conversion. Expected values
are PyTorch 2.x's documented results or exact arithmetic."""

import math

import numpy as np
import pytest
import rustgrad as torch

BIG = 2**53 + 1  # the first int64 that float64 cannot hold


def test_python_ints_stay_exact_end_to_end():
    assert torch.full((1,), BIG).item() == BIG
    assert torch.zeros(1, dtype=torch.int64).fill_(BIG).item() == BIG
    assert (torch.tensor([2**53]) + 1).item() == BIG
    assert torch.tensor([BIG]).tolist() == [BIG]
    assert (torch.tensor([BIG]) == BIG).item() is True
    assert (torch.tensor([BIG]) == 2**53).item() is False
    assert torch.arange(2**53, 2**53 + 3).tolist() == [2**53, BIG, 2**53 + 2]
    assert torch.tensor([BIG]).clamp(min=BIG).item() == BIG
    assert torch.tensor([1]).add(2**53, alpha=2).item() == 2**54 + 1
    assert torch.tensor([1]).add(1, alpha=BIG).item() == 2**53 + 2
    assert torch.tensor([BIG, 0.5], dtype=torch.int64).tolist() == [BIG, 0]


def test_empty_dim_tuple_reduces_everything():
    x = torch.arange(6.0).view(2, 3)
    assert x.sum(()).shape == () and x.sum(()).item() == 15.0
    assert x.mean(()).item() == 2.5
    assert x.sum([], keepdim=True).shape == (1, 1)
    xg = torch.ones(2, 3, requires_grad=True)
    xg.sum(()).backward()
    assert xg.grad.tolist() == [[1.0] * 3] * 2


def test_bool_indices_are_masks_over_a_new_dim():
    x = torch.arange(6.0).view(2, 3)
    assert x[True].shape == (1, 2, 3)
    assert x[False].shape == (0, 2, 3)
    assert x[torch.tensor(True)].shape == (1, 2, 3)
    assert x[True, 0].tolist() == [[0.0, 1.0, 2.0]]
    assert x[..., True].shape == (2, 3, 1)
    assert x[None, True].shape == (1, 1, 2, 3)
    # Advanced indexing copies.
    y = x[True]
    y.add_(1)
    assert x[0, 0].item() == 0.0


def test_integer_tensor_indices():
    x = torch.arange(6.0).view(2, 3)
    assert x[torch.tensor([1])].tolist() == [[3.0, 4.0, 5.0]]
    assert x[torch.tensor(1)].shape == (3,)
    assert x[torch.tensor(1), 0].item() == 3.0
    assert x[0, torch.tensor([1])].tolist() == [1.0]
    assert x[torch.tensor([-1])].tolist() == [[3.0, 4.0, 5.0]]
    x[torch.tensor([0])] = 7.0  # assignment writes through
    assert x[0].tolist() == [7.0, 7.0, 7.0]


def test_dims_wrap_through_one_helper():
    s = torch.tensor(1.0)
    assert s.transpose(0, 0).shape == ()
    assert s.squeeze(0).shape == () and s.sum(0).item() == 1.0
    assert s.flatten().shape == (1,) and s.flatten(0, 0).shape == (1,)
    x3 = torch.zeros(2, 3, 4)
    assert x3.flatten(-2).shape == (2, 12)
    assert x3.flatten(0, 1).shape == (6, 4)
    assert x3.size(-1) == 4 and x3.stride(0) == 12


def test_integer_pow_follows_pytorch_dtypes():
    assert (torch.tensor([-1]) ** 2**32).tolist() == [1]
    assert (torch.tensor([-1]) ** (2**32 + 1)).tolist() == [-1]
    assert (torch.tensor([3]) ** 3).dtype == torch.int64
    r = torch.tensor([2]) ** 2.0
    assert r.dtype == torch.float32 and r.tolist() == [4.0]
    assert (torch.tensor([2]) ** 1e20).tolist() == [math.inf]
    assert (torch.tensor([2]) ** -1.0).tolist() == [0.5]
    assert (torch.tensor([True]) ** 2).dtype == torch.int64
    assert (torch.tensor([True]) ** True).dtype == torch.bool
    # Tensor exponents use integer division semantics, as in PyTorch.
    assert (torch.tensor([2, 1, -1]) ** torch.tensor([-1])).tolist() == [0, 1, -1]


def test_integer_clamp_with_float_bounds_promotes():
    r = torch.tensor([1, 5]).clamp(min=2.5)
    assert r.dtype == torch.float32 and r.tolist() == [2.5, 5.0]
    assert torch.tensor([1, 5]).clamp(2, 3).tolist() == [2, 3]
    assert torch.tensor([1, 5]).clamp(2, 3).dtype == torch.int64


def test_nan_propagates_through_relu_and_clamp():
    nan = float("nan")
    assert math.isnan(torch.tensor([nan, -1.0]).relu()[0].item())
    assert torch.tensor([nan, -1.0]).relu()[1].item() == 0.0
    assert math.isnan(torch.tensor([1.0]).clamp(min=nan).item())
    assert math.isnan(torch.tensor([1.0]).clamp(max=nan).item())
    assert math.isnan(torch.tensor([nan]).clamp(min=0.0).item())
    t = torch.tensor([nan])
    t.relu_()
    assert math.isnan(t.item())


def test_sign_of_nan_and_negative_zero_is_positive_zero():
    # PyTorch computes sign as (0 < x) - (x < 0): NaN and -0.0 give +0.0.
    s = torch.tensor([math.nan, -0.0, -2.0, 3.0], dtype=torch.float64).sign()
    assert s.tolist() == [0.0, 0.0, -1.0, 1.0]
    assert math.copysign(1.0, s[1].item()) == 1.0


def test_float_to_int64_casts_follow_pytorch_on_x86():
    # NaN and out-of-range values become INT64_MIN (cvttsd2si), not saturated values.
    t = torch.tensor([math.nan, 1e30, -1e30, -2.7, 2.7], dtype=torch.float64).long()
    assert t.tolist() == [-(2**63), -(2**63), -(2**63), -2, 2]
    assert torch.tensor([math.inf]).to(torch.int64).tolist() == [-(2**63)]


def test_int_of_a_float_tensor_is_exact():
    assert int(torch.tensor(1e30, dtype=torch.float64)) == int(1e30)
    assert int(torch.tensor(1e30)) == 1000000015047466219876688855040
    assert int(torch.tensor(-2.7)) == -2
    assert int(torch.tensor(BIG)) == BIG


def test_alpha_and_bool_unary_ops():
    assert torch.tensor([1]).add(torch.tensor([2]), alpha=2).tolist() == [5]
    assert torch.tensor([1]).add(torch.tensor([2.0]), alpha=2.5).tolist() == [6.0]
    b = torch.tensor([True]).add(torch.tensor([True]), alpha=2)
    assert b.dtype == torch.bool
    s = torch.tensor([True, False]).sign()
    assert s.dtype == torch.bool and s.tolist() == [True, False]


def test_a_python_bool_operand_is_a_bool_wrapped_number():
    # Bool is the lowest category: it never changes the result type ...
    assert (torch.tensor([1, 2]) + True).dtype == torch.int64
    assert (torch.tensor([1.5], dtype=torch.float64) * True).dtype == torch.float64
    assert (torch.tensor(2) * False).dtype == torch.int64
    assert (torch.tensor([True]) + False).dtype == torch.bool
    assert (torch.tensor([1, 2]) / True).dtype == torch.float32
    assert (torch.tensor([1, 2]) == True).tolist() == [True, False]  # noqa: E712
    t = torch.tensor([1.0, 2.0])
    t += True
    assert t.tolist() == [2.0, 3.0]
    # ... but subtraction refuses it as it refuses a bool tensor.
    for sub in (lambda: t - True, lambda: True - t, lambda: t.sub(True), lambda: t.sub_(True)):
        with pytest.raises(NotImplementedError, match="with a bool tensor is not supported"):
            sub()
    assert t.tolist() == [2.0, 3.0]


def test_numpy_conversion_protocol():
    t = torch.tensor([1.0, 2.0])
    a = np.asarray(t)
    assert a.dtype == np.float32 and a.tolist() == [1.0, 2.0]
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    assert np.array(t, copy=True).tolist() == [1.0, 2.0]
    r = np.float64(1) + t
    assert isinstance(r, torch.Tensor) and r.tolist() == [2.0, 3.0]


def test_eq_operator_with_unsupported_type_follows_python():
    x = torch.zeros(2)
    assert (x == "a") is False
    assert (x != "a") is True


def test_tensor_data_up_to_128_dims_and_cpu_devices():
    d = 1
    for _ in range(128):
        d = [d]
    assert torch.tensor(d).dim() == 128
    assert torch.tensor(range(5)).tolist() == [0, 1, 2, 3, 4]
    assert torch.zeros(2, device="cpu:0").tolist() == [0.0, 0.0]
    assert torch.ones(1).to("cpu").tolist() == [1.0]


# PyTorch's parser names the function in a rejected bool argument's message.
@pytest.mark.parametrize(
    "call,message",
    [
        (lambda x: x.sum(0, keepdim=1), "sum(): argument 'keepdim' must be bool, not int"),
        (lambda x: x.amax(0, keepdim=1), "amax(): argument 'keepdim' must be bool, not int"),
        (lambda x: x.topk(1, largest=1), "topk(): argument 'largest' must be bool, not int"),
        (
            lambda x: torch.zeros(2, requires_grad=1),
            "zeros(): argument 'requires_grad' must be bool, not int",
        ),
        (
            lambda x: x.std(0, keepdim=1),
            "std() received an invalid combination of arguments",
        ),
        (
            lambda x: x.std(unbiased=None),
            "std() received an invalid combination of arguments",
        ),
        (
            lambda x: torch.var(x, 0, unbiased=None),
            "var() received an invalid combination of arguments",
        ),
    ],
)
def test_bool_argument_errors_name_the_function(call, message):
    with pytest.raises(TypeError) as e:
        call(torch.ones(2, 3))
    assert message in str(e.value)


def test_var_and_std_take_unbiased_when_given():
    x = torch.tensor([1.0, 2.0, 4.0], dtype=torch.float64)
    a = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(torch.var(x, 0, False).item(), a.var())
    np.testing.assert_allclose(torch.var(x, unbiased=True).item(), a.var(ddof=1))
    np.testing.assert_allclose(x.std(0, True).item(), a.std(ddof=1))
    np.testing.assert_allclose(torch.std(x).item(), a.std(ddof=1))
    v, m = torch.var_mean(x, 0, unbiased=False)
    np.testing.assert_allclose([v.item(), m.item()], [a.var(), a.mean()])
