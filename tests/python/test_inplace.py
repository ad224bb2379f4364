"""In-place operations: version counters, saved-tensor checks, leaves, history rebasing."""

import inspect
import os
import re

import numpy as np
import pytest
import rustgrad as torch

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation"

INPLACE_OPS = {
    "add_": lambda t: t.add_(1.0),
    "sub_": lambda t: t.sub_(1.0),
    "mul_": lambda t: t.mul_(2.0),
    "div_": lambda t: t.div_(2.0),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(3.0),
    "copy_": lambda t: t.copy_(torch.ones(*t.shape)),
    "clamp_": lambda t: t.clamp_(-0.5, 0.5),
    "relu_": lambda t: t.relu_(),
}


def assert_engine_works():
    """A fresh forward + backward still gives the right gradient."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0, 6.0])


# --- saved tensors modified in place --------------------------------------------------------


def test_modifying_a_saved_tensor_is_detected():
    x = torch.randn(5, 5, requires_grad=True)
    y = x.exp()  # exp saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as excinfo:
        y.sum().backward()
    assert "[5, 5]" in str(excinfo.value)
    assert x.grad is None
    assert_engine_works()


@pytest.mark.rustgrad_only
def test_modified_saved_tensor_error_names_the_inplace_line():
    x = torch.randn(5, 5, requires_grad=True)
    y = x.exp()
    _, inplace_line = y.add_(1), inspect.currentframe().f_lineno
    with pytest.raises(RuntimeError, match="modified by an inplace operation") as excinfo:
        y.sum().backward()
    message = str(excinfo.value)
    assert os.path.basename(__file__) in message
    assert re.search(rf"(?<!\d){inplace_line}(?!\d)", message), message
    assert_engine_works()


def test_modifying_a_saved_input_is_detected():
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(3)
    out = a * b  # mul saves b for a's gradient
    b.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()
    assert_engine_works()


def test_inplace_on_an_unsaved_tensor_is_fine():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x + 1  # add saves nothing
    z = y * 1  # a different tensor
    z.add_(1)
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0])


# --- version counters --------------------------------------------------------------------------


@pytest.mark.parametrize("op_name", sorted(INPLACE_OPS))
def test_each_inplace_op_bumps_version_by_one(op_name):
    x = torch.randn(3, 4)
    before = x._version
    result = INPLACE_OPS[op_name](x)
    assert x._version == before + 1
    assert result is x  # in-place ops return self
    INPLACE_OPS[op_name](x)
    assert x._version == before + 2


def test_inplace_op_results_match_numpy():
    data = np.array([[-2.0, -0.25, 0.0], [0.25, 1.5, 3.0]], dtype=np.float32)
    expected = {
        "add_": data + 1,
        "sub_": data - 1,
        "mul_": data * 2,
        "div_": data / 2,
        "zero_": np.zeros_like(data),
        "fill_": np.full_like(data, 3.0),
        "copy_": np.ones_like(data),
        "clamp_": np.clip(data, -0.5, 0.5),
        "relu_": np.maximum(data, 0),
    }
    for name, op in INPLACE_OPS.items():
        t = torch.from_numpy(data.copy())
        op(t)
        np.testing.assert_array_equal(t.numpy(), expected[name], err_msg=name)


def test_inplace_with_tensor_operand():
    x = torch.tensor([1.0, 2.0, 3.0])
    v0 = x._version
    x.add_(torch.tensor([1.0, 1.0, 1.0]))
    x.mul_(torch.tensor([2.0, 3.0, 4.0]))
    x.sub_(torch.tensor(1.0))
    x.div_(torch.tensor([1.0, 4.0, 3.0]))
    np.testing.assert_array_equal(x.numpy(), [3.0, 2.0, 5.0])
    assert x._version == v0 + 4


def test_out_of_place_ops_do_not_bump_version():
    x = torch.randn(3)
    v0 = x._version
    _ = x + 1
    _ = x.exp()
    _ = x.clone()
    _ = x.view(3)
    assert x._version == v0


def test_views_share_the_version_counter():
    x = torch.zeros(4, 3)
    views = [
        x[1],
        x[1:3, ::2],
        x.view(12),
        x.t(),
        x.transpose(0, 1),
        x.unsqueeze(0),
        x.reshape(2, 6),
    ]
    v0 = x._version
    assert all(v._version == v0 for v in views)
    views[0].add_(1)
    assert x._version == v0 + 1
    assert all(v._version == v0 + 1 for v in views)
    x.mul_(2)
    assert all(v._version == v0 + 2 for v in views)
    views[1].fill_(5)
    assert x._version == v0 + 3
    np.testing.assert_array_equal(x.numpy()[1], [5.0, 2.0, 5.0])
    np.testing.assert_array_equal(x.numpy()[2], [5.0, 0.0, 5.0])


def test_detach_shares_the_version_counter():
    x = torch.randn(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    v0 = y._version
    d.add_(1)
    assert y._version == v0 + 1
    assert d._version == y._version


def test_clone_has_its_own_version_counter():
    x = torch.randn(3)
    c = x.clone()
    v0 = x._version
    c.add_(1)
    assert x._version == v0


# --- in-place on leaves ------------------------------------------------------------------------


@pytest.mark.parametrize("op_name", sorted(INPLACE_OPS))
def test_inplace_on_leaf_requiring_grad_raises(op_name):
    x = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    v0 = x._version
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        INPLACE_OPS[op_name](x)
    np.testing.assert_array_equal(x.detach().numpy(), [-1.0, 0.5, 2.0])  # unchanged
    assert x._version == v0
    assert_engine_works()


def test_inplace_on_view_of_leaf_requiring_grad_raises():
    x = torch.ones(3, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match=LEAF_INPLACE):
        x[0].mul_(2)
    assert_engine_works()


def test_inplace_on_leaf_is_allowed_under_no_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    v0 = x._version
    with torch.no_grad():
        x.add_(1)
        x.mul_(2)
    assert x._version == v0 + 2
    assert x.requires_grad is True
    assert x.is_leaf and x.grad_fn is None
    np.testing.assert_array_equal(x.detach().numpy(), [4.0, 6.0])
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [8.0, 12.0])


def test_sgd_style_update_under_no_grad():
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    for _ in range(3):
        loss = (w * w).sum()
        loss.backward()
        with torch.no_grad():
            w.sub_(w.grad * 0.25)
        w.grad.zero_()
    # Each step multiplies w by (1 - 2 * 0.25).
    np.testing.assert_allclose(w.detach().numpy(), [0.125, -0.25])


def test_inplace_on_leaf_not_requiring_grad_is_allowed():
    x = torch.tensor([1.0, 2.0])
    x.add_(1)
    np.testing.assert_array_equal(x.numpy(), [2.0, 3.0])


# --- in-place on non-leaves: history is rebased ------------------------------------------------


def test_mul_inplace_on_non_leaf_rebases_history():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    y.mul_(3)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    assert not y.is_leaf
    assert y.requires_grad
    np.testing.assert_array_equal(y.detach().numpy(), [6.0, 12.0, 18.0])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 6.0, 6.0])


def test_inplace_add_of_a_tensor_requiring_grad_gives_it_a_gradient():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([5.0, 7.0], requires_grad=True)
    y = x * 2
    y.add_(w)
    assert type(y.grad_fn).__name__ == "AddBackward0"
    (y * y).sum().backward()
    # y = 2x + w, d(sum y^2) = 2y * dy
    y_np = np.array([7.0, 11.0])
    np.testing.assert_array_equal(w.grad.numpy(), 2 * y_np)
    np.testing.assert_array_equal(x.grad.numpy(), 4 * y_np)


def test_inplace_on_tensor_not_requiring_grad_with_operand_requiring_grad():
    x = torch.zeros(3)
    w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.add_(w)
    assert x.requires_grad is True
    assert type(x.grad_fn).__name__ == "AddBackward0"
    (x * 2).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0, 2.0])


def test_chain_of_inplace_ops_on_non_leaf():
    x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(4).sub_(1).div_(2)  # y = (4x - 1) / 2
    y.relu_()
    y.sum().backward()
    expected = np.where(4 * np.array([0.5, -1.0, 2.0]) - 1 > 0, 2.0, 0.0)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_inplace_on_view_of_non_leaf_rebases_the_base():
    x = torch.ones(3, 2, requires_grad=True)
    y = x * 1
    y[0].mul_(5)
    np.testing.assert_array_equal(y.detach().numpy(), [[5.0, 5.0], [1.0, 1.0], [1.0, 1.0]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[5.0, 5.0], [1.0, 1.0], [1.0, 1.0]])


def test_errors_do_not_poison_later_work():
    x = torch.randn(4, requires_grad=True)
    for _ in range(3):
        y = x.exp()
        y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        with pytest.raises(RuntimeError, match=LEAF_INPLACE):
            x.add_(1)
        assert_engine_works()
