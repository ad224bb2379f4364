"""In-place writes through views (PyTorch's CopySlices) and views whose base was
written in place after they were made. Expected gradients were printed by PyTorch 2.15
for the same programs (and follow from the chain rule by hand: e.g. in the first test
y[0] = 5 * x[0], so d/dx[0] sum(y*y) = 2 * 25 * x[0])."""

import rustgrad as torch


def _x():
    return torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)


def test_inplace_on_view_of_non_leaf_routes_gradient_through_base():
    x = _x()
    y = x * 1
    y[0].mul_(5)
    assert type(y.grad_fn).__name__ == "CopySlices"
    (y * y).sum().backward()
    assert x.grad.tolist() == [[50.0, 100.0, 150.0], [8.0, 10.0, 12.0]]


def test_view_made_before_inplace_write_to_base_sees_new_history():
    x = _x()
    y = x * 2
    v = y[1]
    y.mul_(3)
    v.sum().backward()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [6.0, 6.0, 6.0]]


def test_setitem_of_tensor_requiring_grad_into_plain_buffer():
    w = torch.tensor([7.0, 8.0], requires_grad=True)
    buf = torch.zeros(2, 3)
    buf[:, 1] = w
    assert buf.requires_grad and not buf.is_leaf
    assert type(buf.grad_fn).__name__ == "CopySlices"
    (buf * torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])).sum().backward()
    assert w.grad.tolist() == [2.0, 5.0]


def test_inplace_on_one_view_backward_through_another():
    x = _x()
    y = x * 3
    a = y[:, 0]
    b = y[:, 1:]
    b.add_(a.unsqueeze(1))
    (y.sum() + a.sum() * 2).backward()
    assert x.grad.tolist() == [[15.0, 3.0, 3.0], [15.0, 3.0, 3.0]]


def test_inplace_on_expanded_view_is_rejected():
    x = _x()
    y = (x * 1)[0:1].expand(3, 3)
    try:
        y.add_(1)
    except RuntimeError as e:
        assert "more than one element of the written-to tensor" in str(e)
    else:
        raise AssertionError("in-place on an expanded view must raise")


def test_view_made_under_no_grad_stays_out_of_the_graph():
    x = _x()
    y = x * 1
    with torch.no_grad():
        v = y[0]
    y.mul_(2)
    # No history is derived for it (PyTorch raises on reading it here; see Note [Views
    # and in-place checks]); it requires grad through its base, as in PyTorch.
    assert v.grad_fn is None
    assert v.requires_grad


# ----- CopySlices is twice differentiable ---------------------------------------------
# Checked against finite differences of the first derivative (gradgradcheck), so a
# backward that is not built from differentiable ops fails here.


def _writes_through_views(x, y):
    b = x * 1.5
    b[1:3].mul_(y)  # a tensor operand through a slice
    b[:, 0].sin_()  # a unary op through a column (non-contiguous view)
    b.diagonal().add_(y[0, :3] * y[1, :3])  # a strided view of the whole base
    return b


def test_inplace_writes_through_views_pass_gradgradcheck():
    from rustgrad.autograd import gradcheck, gradgradcheck

    torch.manual_seed(0)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    y = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(_writes_through_views, (x, y))
    assert gradgradcheck(_writes_through_views, (x, y))


def test_setitem_into_plain_buffer_passes_gradgradcheck():
    from rustgrad.autograd import gradgradcheck

    torch.manual_seed(1)
    w = torch.randn(2, dtype=torch.float64, requires_grad=True)

    def f(w):
        buf = torch.zeros(2, 3, dtype=torch.float64)
        buf[:, 1] = w * w  # the old values of the view do not require grad
        return buf.exp()

    assert gradgradcheck(f, (w,))


def test_second_derivative_through_copy_slices_matches_closed_form():
    # b = x * 1; b[0] *= x[0]  =>  sum(b) = x0^2 + x1 + x2; d2/dx0^2 = 2.
    x = torch.tensor([3.0, 4.0, 5.0], dtype=torch.float64, requires_grad=True)
    b = x * 1
    b[0:1].mul_(x[0:1])
    b.sum().backward(create_graph=True)
    g, x.grad = x.grad, None
    assert g.tolist() == [6.0, 1.0, 1.0]
    g[0].backward()
    assert x.grad.tolist() == [2.0, 0.0, 0.0]
