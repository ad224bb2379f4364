"""Bad inputs raise PyTorch's exception type with PyTorch's key phrase, and nothing breaks."""

import numpy as np
import pytest
import rustgrad as torch


@pytest.fixture(autouse=True)
def _engine_still_works_afterwards():
    """After every error test, a normal forward + backward still gives the right answer."""
    yield
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = torch.tensor([[0.5], [-1.0]], requires_grad=True)
    loss = ((x @ w) * 2).sum()
    assert loss.item() == pytest.approx(2 * (0.5 - 2.0 + 1.5 - 4.0))
    loss.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, -2.0], [1.0, -2.0]])
    np.testing.assert_array_equal(w.grad.numpy(), [[8.0], [12.0]])


# --- shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        lambda a, b: a + b,
        lambda a, b: a - b,
        lambda a, b: a * b,
        lambda a, b: a / b,
    ],
    ids=["add", "sub", "mul", "div"],
)
def test_broadcast_shape_mismatch(op):
    a = torch.ones(2, 3)
    b = torch.ones(2, 4)
    with pytest.raises(RuntimeError, match=r"must match the size of tensor b \(4\)"):
        op(a, b)


def test_broadcast_mismatch_with_requires_grad_records_nothing():
    a = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="must match the size of tensor"):
        a * torch.ones(4)
    assert a.grad is None


def test_inplace_broadcast_mismatch():
    a = torch.ones(2, 3)
    v0 = a._version
    with pytest.raises(RuntimeError):
        a.add_(torch.ones(2, 4))
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))
    assert a._version == v0


def test_matmul_2d_mismatch():
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        torch.ones(2, 3) @ torch.ones(4, 5)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        torch.ones(2, 3).matmul(torch.ones(2, 3))


@pytest.mark.parametrize(
    "shapes",
    [((3,), (4,)), ((2, 3, 4), (2, 3, 5)), ((3, 4), (5,)), ((5,), (4, 3)), ((2, 3, 4), (3, 4, 5))],
    ids=["dot", "batched", "mat-vec", "vec-mat", "batch-broadcast"],
)
def test_matmul_other_mismatches(shapes):
    a, b = shapes
    with pytest.raises(RuntimeError):
        torch.ones(*a) @ torch.ones(*b)


def test_matmul_of_scalars_is_an_error():
    with pytest.raises(RuntimeError):
        torch.tensor(2.0) @ torch.tensor(3.0)


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.sum(2),
        lambda t: t.sum(-3),
        lambda t: t.mean(dim=5),
        lambda t: t.sum(dim=2, keepdim=True),
        lambda t: t.transpose(0, 2),
        lambda t: t.transpose(-3, 1),
        lambda t: t.unsqueeze(4),
        lambda t: t.squeeze(2),
        lambda t: t.permute(0, 2),
    ],
    ids=[
        "sum",
        "sum-neg",
        "mean",
        "sum-keepdim",
        "transpose",
        "transpose-neg",
        "unsqueeze",
        "squeeze",
        "permute",
    ],
)
def test_dimension_out_of_range(op):
    t = torch.ones(2, 3)
    with pytest.raises(IndexError, match="Dimension out of range"):
        op(t)


def test_dimension_out_of_range_message_gives_the_range():
    with pytest.raises(IndexError, match=r"expected to be in range of \[-2, 1\], but got 2"):
        torch.ones(2, 3).sum(2)


@pytest.mark.parametrize(
    "op",
    [lambda t: t.view(4), lambda t: t.view(3, 3), lambda t: t.reshape(5), lambda t: t.view(-1, 4)],
    ids=["view", "view-2d", "reshape", "view-infer"],
)
def test_view_with_wrong_numel(op):
    with pytest.raises(RuntimeError, match="is invalid for input of size 6"):
        op(torch.ones(2, 3))


def test_view_wrong_numel_message():
    with pytest.raises(RuntimeError, match=r"shape '\[4\]' is invalid for input of size 6"):
        torch.ones(2, 3).view(4)


def test_view_of_non_contiguous_tensor_needs_reshape():
    t = torch.arange(0, 6, 1).view(2, 3).t()
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        t.view(6)
    assert t.reshape(6).tolist() == [0, 3, 1, 4, 2, 5]


def test_expand_to_incompatible_size():
    with pytest.raises(RuntimeError):
        torch.ones(2, 3).expand(4, 3)


# --- autograd state ---------------------------------------------------------------------------


def test_backward_on_non_scalar_without_gradient():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError, match="grad can be implicitly created only for scalar outputs"
    ):
        y.backward()
    assert x.grad is None
    y.backward(torch.ones(3))  # with a gradient it works
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])


def test_backward_with_gradient_of_wrong_shape():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        (x * 2).backward(torch.ones(4))


def test_second_backward_through_freed_graph():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()  # mul saves both inputs
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])  # the failed call added nothing


def test_retain_graph_allows_second_backward():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0])


def test_backward_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.ones(3).sum().backward()
    with pytest.raises(RuntimeError, match="does not require grad"):
        with torch.no_grad():
            y = (torch.ones(3, requires_grad=True) * 2).sum()
        y.backward()


def test_inplace_on_leaf_requiring_grad():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="a leaf Variable that requires grad is being used in an in-place operation",
    ):
        x.mul_(2)


def test_modified_saved_tensor():
    x = torch.ones(2, 2, requires_grad=True)
    y = x.tanh()  # tanh saves its output
    loss = y.sum()
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize(
    "make",
    [
        lambda: torch.tensor([1, 2], requires_grad=True),
        lambda: torch.ones(2, dtype=torch.int64, requires_grad=True),
        lambda: torch.tensor([1, 2]).requires_grad_(),
        lambda: torch.tensor([True, False], requires_grad=True),
    ],
    ids=["tensor", "ones", "requires_grad_", "bool"],
)
def test_requires_grad_on_non_float_tensor(make):
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        make()


def test_setting_requires_grad_attribute_on_int_tensor():
    t = torch.tensor([1, 2])
    with pytest.raises(RuntimeError, match="(?i)only Tensors of floating point"):
        t.requires_grad = True
    assert t.requires_grad is False


def test_requires_grad_on_non_leaf_cannot_be_turned_off():
    x = torch.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(
        RuntimeError, match="you can only change requires_grad flags of leaf variables"
    ):
        y.requires_grad = False


# --- argument types ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t + "a",
        lambda t: "a" * t,
        lambda t: t @ "a",
        lambda t: t.matmul("a"),
        lambda t: t.pow("a"),
        lambda t: t.transpose(0.5, 1),
        lambda t: t.view(2.5),
        lambda t: t.sum(dim=1.5),
        lambda t: t.add_("a"),
        lambda t: torch.zeros("abc"),
        lambda t: torch.ones(2, None),
    ],
    ids=[
        "add-str",
        "rmul-str",
        "matmul-op-str",
        "matmul-str",
        "pow-str",
        "transpose-float",
        "view-float",
        "sum-float",
        "add_-str",
        "zeros-str",
        "ones-none",
    ],
)
def test_wrong_argument_types(op):
    t = torch.ones(2, 3)
    with pytest.raises(TypeError):
        op(t)
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3)))


# --- indexing and conversion ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "index, message",
    [
        (5, "index 5 is out of bounds for dimension 0 with size 3"),
        (-4, "index -4 is out of bounds for dimension 0 with size 3"),
        ((1, 7), "index 7 is out of bounds for dimension 1 with size 2"),
    ],
)
def test_out_of_range_index(index, message):
    t = torch.ones(3, 2)
    with pytest.raises(IndexError, match=message):
        t[index]


def test_too_many_indices():
    with pytest.raises(IndexError, match="too many indices"):
        torch.ones(3, 2)[0, 0, 0]


def test_item_on_multi_element_tensor():
    with pytest.raises(
        RuntimeError, match="a Tensor with 4 elements cannot be converted to Scalar"
    ):
        torch.ones(2, 2).item()
    assert torch.ones(1, 1).item() == 1.0  # one element is fine, whatever the shape


def test_item_on_empty_tensor():
    with pytest.raises(
        RuntimeError, match="a Tensor with 0 elements cannot be converted to Scalar"
    ):
        torch.ones(0).item()


def test_numpy_on_tensor_requiring_grad():
    x = torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\) instead"):
        x.numpy()
    np.testing.assert_array_equal(x.detach().numpy(), [1.0, 1.0])
