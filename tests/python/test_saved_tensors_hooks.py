"""Saved-tensor hooks: saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks.
Expected behaviour is PyTorch 2.15's (checked against PyTorch when written; PyTorch is
not imported here); gradients are closed forms."""

import math

import pytest
import rustgrad as torch
from rustgrad.autograd.graph import (
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)


def test_pack_at_forward_unpack_at_backward():
    log = []

    def pack(t):
        log.append(("pack", t.tolist(), torch.is_grad_enabled()))
        return ("handle", t)

    def unpack(h):
        log.append(("unpack", torch.is_grad_enabled()))
        return h[1]

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(pack, unpack):
        y = x.exp()
    # exp saves its output; pack runs with grad mode off.
    assert log == [("pack", pytest.approx([math.e, math.e**2, math.e**3]), False)]
    log.clear()
    y.sum().backward()
    assert log == [("unpack", False)]
    assert x.grad.tolist() == pytest.approx([math.e, math.e**2, math.e**3])


def test_hooks_outside_the_block_are_not_called():
    calls = []
    x = torch.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: calls.append(1) or t, lambda t: t):
        with torch.no_grad():
            x * x
    y = x * x
    y.sum().backward()
    assert calls == []
    assert x.grad.tolist() == [2.0, 2.0]


def test_innermost_hooks_win():
    seen = []
    x = torch.tensor([2.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: ("outer", t), lambda h: seen.append(h[0]) or h[1]):
        with saved_tensors_hooks(lambda t: ("inner", t), lambda h: seen.append(h[0]) or h[1]):
            y = x * x
        z = x.exp()
    (y.sum() + z.sum()).backward()
    assert seen == ["outer", "inner", "inner"]
    assert x.grad.tolist() == pytest.approx([4.0 + math.exp(2.0), 6.0 + math.exp(3.0)])


def test_unpack_can_substitute_the_tensor():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([5.0, 7.0])
    # The saved `w` is replaced by 10 * w: d(x * w)/dx reads the unpacked value.
    with saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x * w
    y.sum().backward()
    assert x.grad.tolist() == [50.0, 70.0]


def test_packed_tensors_are_not_version_checked():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        a = x * 1
        y = a * a
    a.add_(1)
    y.sum().backward()
    # Backward reads the modified a (2, 3, 4): d(a*a)/dx = 2a.
    assert x.grad.tolist() == [4.0, 6.0, 8.0]


def test_save_on_cpu():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    # A CPU tensor is kept as is (PyTorch's tensor.cpu() is the tensor), unchecked.
    with save_on_cpu():
        a = x * 1
        y = a * a
    a.add_(1)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 6.0, 8.0]
    # pin_memory=True copies when packing: the write after does not reach the copy.
    x.grad = None
    with save_on_cpu(pin_memory=True):
        a = x * 1
        y = a * a
    a.add_(1)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_retain_graph_unpacks_each_time():
    count = [0]

    def unpack(t):
        count[0] += 1
        return t

    x = torch.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, unpack):
        y = x.exp()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert count[0] == 2


def test_errors_in_hooks_propagate_unchanged():
    x = torch.ones(2, requires_grad=True)

    class PackError(Exception):
        pass

    def bad_pack(t):
        raise PackError("pack boom")

    with pytest.raises(PackError, match="pack boom"), saved_tensors_hooks(bad_pack, lambda t: t):
        x * x
    # The engine stays usable, with no hooks left behind.
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]

    def bad_unpack(t):
        raise KeyError("unpack boom")

    with saved_tensors_hooks(lambda t: t, bad_unpack):
        y = x * x
    with pytest.raises(KeyError, match="unpack boom"):
        y.sum().backward()


def test_unpack_must_return_a_tensor():
    x = torch.ones(2, requires_grad=True)
    with saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x * x
    with pytest.raises(
        TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor"
    ):
        y.sum().backward()


def test_disable_saved_tensors_hooks():
    with disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="not while hooks"):
            with disable_saved_tensors_hooks("not while hooks"):
                pass
    # Restored on exit.
    with saved_tensors_hooks(lambda t: t, lambda t: t):
        pass


def test_graph_stats_counts_what_the_node_holds():
    x = torch.ones(1000, requires_grad=True)
    plain = torch.autograd.graph_stats((x * x).sum())
    assert plain.saved_bytes == 8000
    with saved_tensors_hooks(lambda t: None, lambda h: x):
        handle = torch.autograd.graph_stats((x * x).sum())
    assert handle.saved_tensors == 2 and handle.saved_bytes == 0
    with save_on_cpu(pin_memory=True):
        copies = torch.autograd.graph_stats((x * x).sum())
    assert copies.saved_bytes == 8000


def test_hooks_are_thread_local():
    import threading

    calls = []
    x = torch.ones(2, requires_grad=True)

    def other_thread():
        x * x

    with saved_tensors_hooks(lambda t: calls.append(1) or t, lambda t: t):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
    assert calls == []


# ----- grad_fn._saved_* -------------------------------------------------------------


def test_saved_attributes_of_common_ops():
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    w = torch.tensor([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    y = x * w
    assert y.grad_fn._saved_self.tolist() == x.tolist()
    assert y.grad_fn._saved_other.tolist() == w.tolist()
    # A saved leaf is the leaf itself.
    assert y.grad_fn._saved_self is x
    d = x / w
    assert d.grad_fn._saved_other.tolist() == w.tolist()
    m = x.mm(w)
    assert type(m.grad_fn).__name__ == "MmBackward0"
    assert m.grad_fn._saved_mat2.tolist() == w.tolist()
    assert m.grad_fn._saved_self.tolist() == x.tolist()
    for op in ("exp", "tanh", "sigmoid"):
        out = getattr(x, op)()
        r = out.grad_fn._saved_result
        assert r.tolist() == out.tolist()
        # PyTorch gives the saved output back with its grad_fn.
        assert r.grad_fn is out.grad_fn
    p = x**w
    assert p.grad_fn._saved_exponent.tolist() == w.tolist()
    assert x.log().grad_fn._saved_self.tolist() == x.tolist()


def test_saved_attribute_not_saved_is_none():
    x = torch.ones(2, requires_grad=True)
    w = torch.full((2,), 3.0)
    y = x * w
    # `self` is saved only for `other`'s gradient.
    assert y.grad_fn._saved_self is None
    assert y.grad_fn._saved_other.tolist() == [3.0, 3.0]


def test_unknown_saved_attribute_raises_attribute_error():
    x = torch.ones(2, requires_grad=True)
    y = x * x
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute '_saved_foo'"):
        _ = y.grad_fn._saved_foo
    with pytest.raises(AttributeError):
        _ = (x + x).grad_fn._saved_self
    assert not hasattr(y.grad_fn, "anything_else")


def test_saved_attribute_after_backward_raises():
    x = torch.ones(2, requires_grad=True)
    y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="directly access saved tensors after they have"):
        _ = y.grad_fn._saved_self


def test_saved_attribute_version_check_and_unpack_hook():
    x = torch.ones(2, requires_grad=True)
    a = x * 1
    y = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _ = y.grad_fn._saved_self
    calls = []
    with saved_tensors_hooks(lambda t: t, lambda t: calls.append(1) or t):
        z = x * x
    assert z.grad_fn._saved_other.tolist() == [1.0, 1.0]
    assert calls == [1]


def test_raw_saved_register_hooks():
    x = torch.ones(2, requires_grad=True)
    w = torch.ones(2)
    y = x * w
    raw = y.grad_fn._raw_saved_other
    assert type(raw).__name__ == "SavedTensor"
    log = []
    # pack runs at once; backward reads the doubled `other` through unpack.
    raw.register_hooks(lambda t: log.append("p") or t * 2, lambda t: log.append("u") or t)
    assert log == ["p"]
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        raw.register_hooks(lambda t: t, lambda t: t)
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
    assert log == ["p", "u"]
    unsaved = (x * w).grad_fn._raw_saved_self
    with pytest.raises(RuntimeError, match="with value None is forbidden"):
        unsaved.register_hooks(lambda t: t, lambda t: t)
    with pytest.raises(TypeError):
        unsaved.register_hooks(1, lambda t: t)
    with pytest.raises(AttributeError):
        _ = y.grad_fn._raw_saved_foo


def test_packed_tensors_keep_their_history_for_double_backward():
    # PyTorch's SavedVariable gives the unpacked data the saved tensor's history back
    # (grad_fn of a non-leaf, AccumulateGrad of a leaf), so a hook that detaches does
    # not cut higher derivatives: d/dx (y + sum(g**2)) with y = sum(h**3), h = x or
    # x * 1, at ones(3) is 3 + 2*3*6 = 39.
    for make in (lambda x: x, lambda x: x * 1.0):
        x = torch.ones(3, dtype=torch.float64, requires_grad=True)
        h = make(x)
        with saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            y = (h**3).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        assert g.requires_grad
        (y + (g**2).sum()).backward()
        assert x.grad.tolist() == [39.0, 39.0, 39.0]
