"""The public ``rustgrad.autograd.gradcheck`` / ``gradgradcheck`` (Note [Public gradcheck]).

Expected messages are PyTorch 2.x's, checked by hand against
``torch.autograd.gradcheck``.
"""

import re

import pytest
import rustgrad as torch
from rustgrad.autograd import gradcheck, gradgradcheck
from rustgrad.autograd.gradcheck import GradcheckError


def _leaf(*shape, low=-1.0, high=1.0, seed=0):
    g = torch.Generator().manual_seed(seed)
    values = torch.rand(*shape, generator=g, dtype=torch.float64) * (high - low) + low
    return values.requires_grad_()


def _x12():
    return torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)


def _square_with_first_order_only(x):
    """Value x**2 and gradient 2x, but the gradient is a constant: d2/dx2 is 0, not 2."""
    c = x.detach()
    return c * c + 2 * c * (x - c)


WRONG_GRAD_MSG = (
    "Jacobian mismatch for output 0 with respect to input 0,\n"
    "numerical:tensor([[2.0000, 0.0000],\n        [0.0000, 4.0000]], dtype=torch.float64)\n"
    "analytical:tensor([[1., 0.],\n        [0., 2.]], dtype=torch.float64)\n"
)


# --- passing checks ------------------------------------------------------------------------------


def _views_and_inplace(x):
    y = x * 1.0
    y[0].mul_(2.0)
    y.t()[1].add_(y[0, 0] * 3.0)
    return y.view(-1)


PASSING = {
    "exp": (torch.exp, [(3, 2)]),
    "tanh": (torch.tanh, [(4,)]),
    "sigmoid": (lambda x: x.sigmoid(), [(2, 3)]),
    "matmul": (torch.matmul, [(2, 3), (3, 4)]),
    "pow-tensor": (lambda x, y: (x + 2.0) ** y, [(3,), (3,)]),
    "pow-scalar": (lambda x: (x + 2.0) ** 2.5, [(3,)]),
    "div": (lambda x, y: x / (y + 2.0), [(2, 3), (3,)]),
    "sum-dim": (lambda x: x.sum(1), [(2, 3)]),
    "sum-dim-keepdim": (lambda x: x.sum(0, keepdim=True), [(2, 3)]),
    "mean-dim": (lambda x: x.mean(dim=1), [(2, 3)]),
    "mean-all": (lambda x: x.mean(), [(2, 3)]),
    "views-and-inplace": (_views_and_inplace, [(2, 2)]),
    "scalar-input": (lambda x: x * x, [()]),
}


@pytest.mark.parametrize("name", sorted(PASSING))
def test_gradcheck_passes_on_correct_gradients(name):
    fn, shapes = PASSING[name]
    inputs = tuple(_leaf(*shape, seed=k) for k, shape in enumerate(shapes))
    assert gradcheck(fn, inputs) is True


def test_non_contiguous_input():
    x = _leaf(3, 2).detach().t().requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(lambda x: x.exp() * 2.0, (x,))


def test_a_tensor_not_a_tuple_and_non_tensor_inputs():
    assert gradcheck(torch.tanh, _leaf(3))
    assert gradcheck(lambda x, n: x**n, [_leaf(3), 3])


def test_inputs_not_requiring_grad_are_passed_through():
    x, y = _leaf(3), _leaf(3, seed=1).detach()
    assert gradcheck(lambda x, y: x * y.exp(), (x, y))


def test_callers_tensors_are_left_alone():
    x = _leaf(3)
    before = x.tolist()
    assert gradcheck(lambda x: (x * x).sum(), (x,))
    assert gradgradcheck(lambda x: (x * x * x).sum(), (x,))
    assert x.grad is None
    assert x._version == 0
    assert x.tolist() == before


# --- failures ------------------------------------------------------------------------------------


def test_wrong_gradient_raises_pytorchs_message():
    with pytest.raises(GradcheckError) as info:
        gradcheck(lambda x: x * x.detach(), (_x12(),))
    assert str(info.value) == WRONG_GRAD_MSG
    assert isinstance(info.value, RuntimeError)


def test_wrong_gradient_returns_false_without_raise_exception():
    assert gradcheck(lambda x: x * x.detach(), (_x12(),), raise_exception=False) is False


def test_tolerances_are_used():
    # numerical 2x, analytical x: |x - 2x| = x <= atol for atol=3.
    assert gradcheck(lambda x: x * x.detach(), (_x12(),), atol=3.0)
    assert gradcheck(lambda x: x * x.detach(), (_x12(),), rtol=0.6)


def test_mismatch_names_the_output_and_input():
    x, y = _x12(), torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(
        GradcheckError, match="^Jacobian mismatch for output 1 with respect to input 1,\n"
    ):
        gradcheck(lambda x, y: (x * y, x * y.detach()), (x, y))


def test_float32_input_warns():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    message = (
        "Input #0 requires gradient and is not a double precision floating point or complex. "
        "This check will likely fail if all the inputs are not of double precision floating "
        "point or complex. "
    )
    with pytest.warns(UserWarning, match=re.escape(message)):
        assert gradcheck(lambda x: x * 2.0, (x,), eps=1e-3, atol=1e-2)


def test_no_input_requiring_grad():
    with pytest.raises(ValueError) as info:
        gradcheck(lambda x: x * 2.0, (_x12().detach(),))
    assert str(info.value) == (
        "gradcheck expects at least one input tensor to require gradient, "
        "but none of them have requires_grad=True."
    )


def test_overlapping_input():
    x = _x12().detach().expand(3, 2).requires_grad_()
    with pytest.raises(RuntimeError, match="^The 0th input has a dimension with stride 0. "):
        gradcheck(lambda x: x * 2.0, (x,))


# --- outputs -------------------------------------------------------------------------------------


def test_tuple_outputs():
    assert gradcheck(lambda x, y: (x * y, x.exp(), y.sum()), (_leaf(3), _leaf(3, seed=1)))


def test_non_float_outputs_are_skipped():
    assert gradcheck(lambda x: (x.gt(0), x * 2.0, (x > 0).long()), (_leaf(3),))


def test_no_differentiable_output():
    # Constant in x: fine. Depends on x without a graph: the numerical Jacobian is not 0.
    assert gradcheck(lambda x: torch.zeros(2, dtype=torch.float64) + (x > 5).double(), (_x12(),))
    with pytest.raises(
        GradcheckError, match="^Numerical gradient for function expected to be zero$"
    ):
        gradcheck(lambda x: x.detach() * 2.0, (_x12(),))


def test_output_that_is_the_input():
    assert gradcheck(lambda x: x, _leaf(3))
    assert gradcheck(lambda x: x[1], _leaf(3))


# --- options -------------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["check_forward_ad", "check_batched_grad"], ids=lambda o: o)
def test_unsupported_gradcheck_options_are_refused(option):
    with pytest.raises(NotImplementedError, match=option):
        gradcheck(torch.tanh, (_leaf(2),), **{option: True})


def test_unsupported_gradgradcheck_options_are_refused():
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev"):
        gradgradcheck(torch.tanh, (_leaf(2),), check_fwd_over_rev=True)
    with pytest.raises(NotImplementedError, match="check_batched_grad"):
        gradgradcheck(torch.tanh, (_leaf(2),), check_batched_grad=True)


def test_pytorchs_option_assertions():
    with pytest.raises(AssertionError, match="check_forward_ad or check_backward_ad"):
        gradcheck(torch.tanh, (_leaf(2),), check_backward_ad=False)
    with pytest.raises(AssertionError, match="requires check_forward_ad to be True"):
        gradcheck(torch.tanh, (_leaf(2),), check_batched_forward_grad=True)
    with pytest.raises(AssertionError, match="check_fwd_over_rev or check_rev_over_rev"):
        gradgradcheck(torch.tanh, (_leaf(2),), check_rev_over_rev=False)


def test_accepted_options():
    x = _leaf(3)
    assert gradcheck(
        torch.tanh,
        (x,),
        fast_mode=True,
        masked=True,
        nondet_tol=1e-12,
        check_undefined_grad=False,
        check_grad_dtypes=True,
    )
    assert gradgradcheck(torch.tanh, (x,), fast_mode=True, check_undefined_grad=False)


# --- gradgradcheck -------------------------------------------------------------------------------

SECOND_ORDER = {
    "tanh": (torch.tanh, [(3,)]),
    "sigmoid": (torch.sigmoid, [(2, 2)]),
    "exp": (torch.exp, [(3,)]),
    "cube": (lambda x: x**3, [(3,)]),
    "matmul": (torch.matmul, [(2, 3), (3, 2)]),
    "div": (lambda x, y: x / (y + 2.0), [(3,), (3,)]),
    "tuple-outputs": (lambda x: (x.tanh(), (x * x).sum()), [(3,)]),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_gradgradcheck_passes(name):
    fn, shapes = SECOND_ORDER[name]
    inputs = tuple(_leaf(*shape, seed=k) for k, shape in enumerate(shapes))
    assert gradgradcheck(fn, inputs) is True


def test_gradgradcheck_with_given_and_non_contiguous_grad_outputs():
    x = _leaf(2, 3)
    v = torch.ones(2, 3, dtype=torch.float64).requires_grad_()
    assert gradgradcheck(torch.tanh, (x,), (v,))
    assert gradgradcheck(torch.tanh, (x,), gen_non_contig_grad_outputs=True)


def test_wrong_second_derivative():
    x = _x12()
    assert gradcheck(_square_with_first_order_only, (x,))
    v = torch.tensor([0.5, -1.0], dtype=torch.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradgradcheck(_square_with_first_order_only, (x,), (v,))
    # The gradient 2x*v differentiated w.r.t. x: numerical 2v, analytical 0.
    assert str(info.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[ 1.0000,  0.0000],\n        [ 0.0000, -2.0000]], "
        "dtype=torch.float64)\n"
        "analytical:tensor([[0., 0.],\n        [0., 0.]], dtype=torch.float64)\n"
    )
    assert gradgradcheck(_square_with_first_order_only, (x,), raise_exception=False) is False


def test_gradgradcheck_random_grad_outputs_are_seeded():
    messages = []
    for _ in range(2):
        with pytest.raises(GradcheckError) as info:
            gradgradcheck(_square_with_first_order_only, (_x12(),))
        messages.append(str(info.value))
    assert messages[0] == messages[1]
