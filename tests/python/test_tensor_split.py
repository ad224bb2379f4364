"""tensor_split / hsplit / vsplit / dsplit, Tensor._is_view, torch.equal and
torch.broadcast_shapes. Expected shapes, values and grad_fn names were printed by
PyTorch 2.15 for the same calls."""

import pytest
import rustgrad as torch


def _x():
    return torch.arange(10.0).reshape(2, 5).requires_grad_()


# (indices_or_sections, dim) -> PyTorch's piece shapes.
SPLITS = [
    (3, 1, [(2, 2), (2, 2), (2, 1)]),
    ([1, 3], 1, [(2, 1), (2, 2), (2, 2)]),
    ((1,), 0, [(1, 5), (1, 5)]),
    ([-1, 10, 2], 0, [(1, 5), (1, 5), (0, 5), (0, 5)]),
    ([4, -2], 1, [(2, 4), (2, 0), (2, 2)]),
    (5, 0, [(1, 5), (1, 5), (0, 5), (0, 5), (0, 5)]),
]


@pytest.mark.parametrize("arg, dim, shapes", SPLITS)
def test_tensor_split_pieces_are_slice_views(arg, dim, shapes):
    x = _x()
    for form in (lambda: x.tensor_split(arg, dim), lambda: torch.tensor_split(x, arg, dim=dim)):
        pieces = form()
        assert [tuple(p.shape) for p in pieces] == shapes
        assert all(p.grad_fn.name() == "SliceBackward0" and p._is_view() for p in pieces)


def test_tensor_split_by_tensor_and_values():
    x = _x()
    by_indices = x.tensor_split(torch.tensor([1, 3]), 1)
    assert [p.tolist() for p in by_indices] == [
        [[0.0], [5.0]],
        [[1.0, 2.0], [6.0, 7.0]],
        [[3.0, 4.0], [8.0, 9.0]],
    ]
    by_sections = torch.tensor_split(x, torch.tensor(2), 1)
    assert [tuple(p.shape) for p in by_sections] == [(2, 3), (2, 2)]
    assert [tuple(p.shape) for p in torch.tensor_split(x, sections=2, dim=1)] == [(2, 3), (2, 2)]
    assert [tuple(p.shape) for p in torch.tensor_split(x, indices=[1], dim=1)] == [(2, 1), (2, 4)]


def test_tensor_split_gradient_reaches_each_slice():
    x = _x()
    pieces = x.tensor_split([1, 3], 1)
    (pieces[0].sum() + 3 * pieces[2].sum()).backward()
    assert x.grad.tolist() == [[1.0, 0.0, 0.0, 3.0, 3.0], [1.0, 0.0, 0.0, 3.0, 3.0]]


def test_hsplit_vsplit_dsplit():
    x = _x()
    assert [tuple(p.shape) for p in torch.hsplit(x, 5)] == [(2, 1)] * 5
    assert [tuple(p.shape) for p in x.hsplit([2])] == [(2, 2), (2, 3)]
    assert [p.tolist() for p in torch.hsplit(torch.arange(4), 2)] == [[0, 1], [2, 3]]
    assert [tuple(p.shape) for p in torch.vsplit(x, 2)] == [(1, 5), (1, 5)]
    y = torch.rand(2, 2, 4, requires_grad=True)
    pieces = torch.dsplit(y, [1])
    assert [tuple(p.shape) for p in pieces] == [(2, 2, 1), (2, 2, 3)]
    assert [p.grad_fn.name() for p in pieces] == ["SliceBackward0", "SliceBackward0"]
    assert [tuple(p.shape) for p in y.dsplit(2)] == [(2, 2, 2), (2, 2, 2)]


def test_is_view():
    assert torch.arange(10.0).reshape(2, 5)._is_view()
    x = torch.rand(2, 5, requires_grad=True)
    assert not x._is_view()
    assert x[0]._is_view() and x.view(10)._is_view() and x.T._is_view()
    assert not x.detach()._is_view()
    assert not x[0].detach()._is_view()


def test_equal():
    x = _x()
    assert torch.equal(x, x.clone()) and x.equal(x)
    assert torch.equal(torch.tensor([1, 2]), torch.tensor([1.0, 2.0]))
    assert not torch.equal(torch.tensor([float("nan")]), torch.tensor([float("nan")]))
    assert not torch.equal(torch.zeros(2), torch.zeros(1))
    assert not torch.equal(torch.zeros(2, 1), torch.zeros(1, 2))
    assert not torch.equal(x, torch.rand(3))


def test_broadcast_shapes():
    assert torch.broadcast_shapes((2, 1), (3,)) == torch.Size([2, 3])
    assert torch.broadcast_shapes() == torch.Size([])
    assert torch.broadcast_shapes(2, (1,)) == torch.Size([2])
    assert torch.broadcast_shapes([1, 3], (4, 1)) == torch.Size([4, 3])
    assert torch.broadcast_shapes(torch.Size([2, 1]), 5) == torch.Size([2, 5])
    assert torch.broadcast_shapes(None, (2,)) == torch.Size([2])
    assert isinstance(torch.broadcast_shapes((2,)), torch.Size)


def test_accumulate_grad_repr_and_name():
    a = torch.rand(2, requires_grad=True)
    node = (a * 2).grad_fn.next_functions[0][0]
    assert node.name() == "torch::autograd::AccumulateGrad"
    assert repr(node).startswith("<AccumulateGrad object at 0x")
