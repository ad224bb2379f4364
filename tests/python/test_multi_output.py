"""Multi-output nodes (docs/architecture.md, Note [Multi-output nodes]).

split / split_with_sizes / chunk / unbind / var_mean / std_mean record ONE node whose
outputs are the results, as PyTorch's. The grad_fn names, output numbers and
next_functions below are what PyTorch 2.15 prints (hard-coded: an independent
reference); gradients are checked against numpy closed forms or by gradcheck's finite
differences.
"""

import numpy as np
import pytest
import rustgrad as torch
from rustgrad.autograd import gradcheck, gradgradcheck

MULTI_VIEWS = "This view is the output of a function that returns multiple views."

# op -> (call, PyTorch's grad_fn name, number of outputs) on a (5, 3) input.
NODES = {
    "split": (lambda x: x.split(2), "SplitBackward0", 3),
    "split_fn": (lambda x: torch.split(x, 2), "SplitBackward0", 3),
    "split_list": (lambda x: x.split([2, 3]), "SplitWithSizesBackward0", 2),
    "split_with_sizes": (lambda x: x.split_with_sizes([1, 4]), "SplitWithSizesBackward0", 2),
    "chunk": (lambda x: x.chunk(3), "SplitBackward0", 3),
    "chunk_one": (lambda x: x.chunk(1), "SplitBackward0", 1),
    "split_bigger_than_dim": (lambda x: x.split(10), "SplitBackward0", 1),
    "unbind": (lambda x: x.unbind(1), "UnbindBackward0", 3),
    "unbind_fn": (lambda x: torch.unbind(x, -1), "UnbindBackward0", 3),
    "var_mean": (lambda x: torch.var_mean(x, 0), "VarMeanBackward0", 2),
    "std_mean": (lambda x: torch.std_mean(x), "StdMeanBackward0", 2),
}


@pytest.mark.parametrize("op", sorted(NODES))
def test_one_node_for_all_outputs(op):
    call, name, count = NODES[op]
    x = torch.randn(5, 3, requires_grad=True)
    out = call(x)
    assert len(out) == count
    f = out[0].grad_fn
    assert f.name() == name
    assert type(f).__name__ == name
    for i, o in enumerate(out):
        assert o.grad_fn is f
        assert o.output_nr == i
        assert not o.is_leaf and o.requires_grad
    ((acc, nr),) = f.next_functions
    assert (acc.name(), nr) == ("torch::autograd::AccumulateGrad", 0)
    assert acc.variable is x


def test_views_and_output_numbers_match_pytorch():
    x = torch.randn(5, 3, requires_grad=True)
    assert all(p._base is x for p in x.split(2))
    assert all(p._base is x for p in x.unbind(0))
    assert all(p._base is x for p in x.split(1)[1].split(1))
    v, m = torch.var_mean(x, 0)
    assert v._base is None and m._base is None
    with torch.no_grad():
        x[2, 1] = 7.0
    assert float(x.split(2)[1][0, 1]) == 7.0 and float(x.unbind(1)[1][2]) == 7.0
    # An empty dim: chunk goes through split_with_sizes (PyTorch's names).
    e = torch.randn(0, 3, requires_grad=True)
    assert [(o.grad_fn.name(), o.output_nr) for o in e.chunk(3)] == [
        ("SplitWithSizesBackward0", 0),
        ("SplitWithSizesBackward0", 1),
        ("SplitWithSizesBackward0", 2),
    ]
    assert [(o.grad_fn.name(), o.output_nr) for o in e.split(2)] == [("SplitBackward0", 0)]
    assert e.unbind(0) == ()
    # Single-output ops keep output 0; a leaf is output 0.
    assert (x * 2).output_nr == 0 and x.output_nr == 0


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda x: x.max(0), "MaxBackward0"),
        (lambda x: x.min(1), "MinBackward0"),
        (lambda x: x.sort(0), "SortBackward0"),
        (lambda x: x.topk(2), "TopkBackward0"),
        (lambda x: x.median(0), "MedianBackward1"),
    ],
)
def test_values_and_indices_have_one_differentiable_output(call, name):
    # PyTorch: only the values are differentiable, output 0 of a one-output node.
    x = torch.randn(5, 3, requires_grad=True)
    values, indices = call(x)
    assert values.grad_fn.name() == name
    assert values.output_nr == 0
    assert indices.grad_fn is None and not indices.requires_grad


def test_piece_grad_fn_outlives_the_other_pieces():
    x = torch.randn(6, requires_grad=True)
    parts = list(x.split(2))
    middle = parts[1]
    f = middle.grad_fn
    del parts
    assert f.name() == "SplitBackward0"
    assert type(f.next_functions[0][0]).__name__ == "AccumulateGrad"
    middle.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 1, 1, 0, 0])


def test_backward_from_some_pieces_gives_zeros_for_the_others():
    a = np.arange(15.0).reshape(5, 3)
    x = torch.tensor(a, requires_grad=True)
    w = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    pieces = x.split(2)
    (pieces[1] * torch.tensor(w)).sum().backward()
    expected = np.zeros((5, 3))
    expected[2:4] = w
    np.testing.assert_array_equal(x.grad.numpy(), expected)

    # One piece twice, another once, one not at all: summed per output slot.
    x.grad = None
    p = x.split([1, 3, 1])
    (p[0] * 2 + p[0] * 3).sum().backward(retain_graph=True)
    (p[2] ** 2).sum().backward()
    expected = np.zeros((5, 3))
    expected[0] = 5.0
    expected[4] = 2 * a[4]
    np.testing.assert_array_equal(x.grad.numpy(), expected)

    # unbind: the gradient of column 1 only.
    y = torch.tensor(a, requires_grad=True)
    cols = y.unbind(1)
    (cols[1] ** 3).sum().backward()
    expected = np.zeros((5, 3))
    expected[:, 1] = 3 * a[:, 1] ** 2
    np.testing.assert_allclose(y.grad.numpy(), expected)


def test_var_mean_gradients_of_either_output():
    a = np.array([[1.0, 2.0, 4.0, 9.0], [0.5, -1.0, 3.0, 2.0]])
    n = a.shape[1]
    dev = a - a.mean(1, keepdims=True)
    for which in (0, 1):
        x = torch.tensor(a, requires_grad=True)
        out = torch.var_mean(x, 1)
        out[which].sum().backward()
        expected = 2 * dev / (n - 1) if which == 0 else np.full(a.shape, 1 / n)
        np.testing.assert_allclose(x.grad.numpy(), expected)
    x = torch.tensor(a, requires_grad=True)
    s, m = torch.std_mean(x, 1, correction=0, keepdim=True)
    assert s.shape == (2, 1)
    (s * 2 + m * 3).sum().backward()
    std = np.sqrt((dev**2).mean(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), 2 * dev / (n * std) + 3 / n)


def _inputs(shape, seed):
    g = np.random.default_rng(seed)
    return torch.tensor(g.standard_normal(shape), dtype=torch.float64, requires_grad=True)


GRADCHECK = {
    "split": lambda x: x.split(2),
    "split_sizes_dim1": lambda x: x.split([1, 3], 1),
    "chunk": lambda x: x.chunk(2, -1),
    "unbind": lambda x: x.unbind(0),
    "unbind_dim1": lambda x: torch.unbind(x, 1),
    "var_mean": lambda x: torch.var_mean(x, 1),
    "std_mean": lambda x: torch.std_mean(x, 0, keepdim=True),
    "pieces_reused": lambda x: (lambda p: (p[0] * p[2], p[1].exp()))(x.split(1)),
    "one_piece": lambda x: x.split(2)[1] ** 2,
    "var_only": lambda x: torch.var_mean(x, 1)[0],
    "mean_only": lambda x: torch.std_mean(x, 0)[1] ** 2,
}


@pytest.mark.parametrize("op", sorted(GRADCHECK))
def test_gradcheck_and_gradgradcheck(op):
    f = GRADCHECK[op]
    x = _inputs((3, 4), 0)
    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))
    # Non-contiguous input.
    xt = _inputs((4, 3), 1).detach().t().requires_grad_()
    assert not xt.is_contiguous()
    assert gradcheck(f, (xt,))


def test_double_backward_through_pieces():
    a = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    x = torch.tensor(a, requires_grad=True)
    p = x.split(2)
    ((p[0] ** 3).sum() + (p[2] ** 2).sum()).backward(create_graph=True)
    g = x.grad
    np.testing.assert_allclose(g.detach().numpy(), [3, 12, 0, 0, 10, 12])
    x.grad = None
    g.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [6, 12, 0, 0, 2, 2])


def test_in_place_on_a_piece_raises_pytorchs_error():
    x = torch.randn(5, 3, requires_grad=True)
    y = x * 1
    a, _, _ = y.split(2)
    with pytest.raises(
        RuntimeError,
        match="^Output 0 of Split is a view and is being modified inplace. " + MULTI_VIEWS,
    ):
        a.mul_(2)
    with pytest.raises(RuntimeError, match="Output 1 of Unbind is a view"):
        y.unbind(0)[1].add_(2)
    # Views of a piece inherit the refusal, named after the last view op.
    a, _ = y.split([2, 3])
    with pytest.raises(RuntimeError, match="Output 0 of Select is a view"):
        a[0].mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of View is a view"):
        a.view(6).mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of T is a view"):
        a.t().mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of Select is a view"):
        a[0] = 1.0
    with pytest.raises(RuntimeError, match="Output 0 of SplitWithSizes is a view"):
        a.copy_(torch.ones(2, 3))
    # Pieces of a leaf: this error comes before the view-of-a-leaf one.
    with pytest.raises(RuntimeError, match="Output 0 of SplitWithSizes is a view"):
        x.split([2, 3])[0].mul_(2)
    # A base without grad written with an operand that requires grad.
    w = torch.randn(2, 3, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match="^A view was created in no_grad mode and is being modified inplace with grad "
        "mode enabled. " + MULTI_VIEWS,
    ):
        torch.randn(5, 3).split([2, 3])[0].mul_(w)
    # Pieces made under no_grad: PyTorch's no_grad message.
    with torch.no_grad():
        a, _ = y.split([2, 3])
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        a.mul_(2)
    # Allowed: nothing recorded, or a detached piece.
    z = torch.zeros(4)
    z.split(2)[1].add_(1)
    np.testing.assert_array_equal(z.numpy(), [0, 0, 1, 1])
    a, _ = y.split([2, 3])
    a.detach().mul_(2)
    with torch.no_grad():
        y.split(2)[0].zero_()
    assert float(y[0].abs().sum()) == 0.0
