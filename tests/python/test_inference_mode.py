"""inference_mode and inference tensors. Expected behaviour is PyTorch 2.15's documented
semantics (checked against PyTorch when written; PyTorch is not imported here)."""

import pytest
import rustgrad as torch

SAVED = "Inference tensors cannot be saved for backward"
INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed"


def test_context_manager_sets_and_restores_modes():
    assert not torch.is_inference_mode_enabled()
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled()
        assert not torch.is_grad_enabled()
    assert not torch.is_inference_mode_enabled()
    assert torch.is_grad_enabled()


def test_tensors_made_inside_are_inference_tensors():
    x = torch.ones(3, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        z = torch.zeros(2)
    assert y.is_inference() and z.is_inference()
    assert not y.requires_grad and y.grad_fn is None and y.is_leaf
    assert not x.is_inference()
    assert y.tolist() == [2.0, 2.0, 2.0]


def test_inference_tensor_has_no_version_counter():
    with torch.inference_mode():
        y = torch.ones(2)
        with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
            _ = y._version
    with pytest.raises(RuntimeError, match="Inference tensors do not track version counter"):
        _ = y._version


def test_inference_tensor_in_recorded_op_raises():
    x = torch.ones(3, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    with pytest.raises(RuntimeError, match=SAVED):
        y * x
    # The error is raised once, by the op that needed to save it.
    assert (x + 1).requires_grad
    # Ops that save nothing of it, or do not record, are fine.
    assert not (y * 2).requires_grad
    assert not (y * 2).is_inference()
    with torch.no_grad():
        assert (y * x).tolist() == [2.0, 2.0, 2.0]


def test_clone_of_inference_tensor_is_usable_in_autograd():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    c = y.clone()
    assert not c.is_inference()
    (c * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


def test_inplace_update_outside_raises_inside_works():
    with torch.inference_mode():
        y = torch.ones(3)
        y.add_(1)
    with pytest.raises(RuntimeError, match=INPLACE):
        y.add_(1)
    with torch.no_grad(), pytest.raises(RuntimeError, match=INPLACE):
        y.mul_(2)
    # (PyTorch writes the values before raising; here a refused write writes nothing.)
    with torch.inference_mode():
        y.fill_(2.0)
        y.mul_(3)
    assert y.tolist() == [6.0, 6.0, 6.0]


def test_normal_tensor_in_inference_mode():
    x = torch.ones(3, requires_grad=True)
    n = torch.ones(3)
    with torch.inference_mode():
        # A view of a normal tensor stays normal; in-place on a leaf records nothing.
        v = n[0:2]
        assert not v.is_inference()
        v.add_(1)
        x.add_(1)
    assert n.tolist() == [2.0, 2.0, 1.0]
    assert x.is_leaf and x.grad_fn is None and x.tolist() == [2.0, 2.0, 2.0]
    assert n._version == 1


def test_view_of_inference_tensor_is_inference():
    with torch.inference_mode():
        y = torch.ones(4)
    assert y[1:3].is_inference()
    assert y.view(2, 2).is_inference()


def test_requires_grad_rules():
    with torch.inference_mode():
        y = torch.ones(2)
        t = torch.ones(2, requires_grad=True)
        assert t.requires_grad and t.is_inference()
        assert torch.ones(2).requires_grad_().requires_grad
    with pytest.raises(RuntimeError, match="Setting requires_grad=True on inference tensor"):
        y.requires_grad_()
    assert not y.requires_grad_(False).requires_grad
    # A leaf made inside that requires grad trains outside when it is not saved.
    (t * 2).sum().backward()
    assert t.grad.tolist() == [2.0, 2.0]


def test_nesting_with_grad_modes():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        with torch.enable_grad():
            assert torch.is_grad_enabled() and torch.is_inference_mode_enabled()
            w = x * 2
            assert not w.requires_grad and w.is_inference()
        with torch.inference_mode(False):
            assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
            u = x * 2
            assert u.requires_grad and not u.is_inference()
            assert type(u.grad_fn).__name__ == "MulBackward0"
        with torch.no_grad():
            assert not torch.is_grad_enabled() and torch.is_inference_mode_enabled()
        assert not torch.is_grad_enabled()
    with torch.no_grad():
        with torch.inference_mode():
            assert not torch.is_grad_enabled()
        assert not torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
        with torch.inference_mode(False):
            # PyTorch's InferenceMode(False) turns grad mode on.
            assert torch.is_grad_enabled()
        assert not torch.is_grad_enabled()


def test_backward_inside_inference_mode_has_nothing_to_differentiate():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        with pytest.raises(RuntimeError, match="does not require grad"):
            (x * x).sum().backward()


def test_decorators():
    @torch.inference_mode
    def bare():
        return torch.is_inference_mode_enabled()

    @torch.inference_mode()
    def called():
        return torch.is_inference_mode_enabled()

    @torch.inference_mode(False)
    def off():
        return torch.is_inference_mode_enabled()

    assert bare() and called() and bare.__name__ == "bare"
    with torch.inference_mode():
        assert not off()
        assert torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled()


def test_generator_function():
    @torch.inference_mode()
    def gen():
        yield torch.is_inference_mode_enabled()
        yield torch.is_inference_mode_enabled()

    g = gen()
    assert next(g)
    assert not torch.is_inference_mode_enabled()
    assert next(g)
    assert not torch.is_inference_mode_enabled()


def test_clone_and_alias():
    im = torch.inference_mode(False)
    assert im.clone().mode is False
    assert torch.autograd.inference_mode is torch.inference_mode


def test_exception_inside_restores_modes():
    with pytest.raises(ValueError), torch.inference_mode():
        raise ValueError("boom")
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()


def test_modes_are_thread_local():
    import threading

    seen = []
    with torch.inference_mode():
        t = threading.Thread(target=lambda: seen.append(torch.is_inference_mode_enabled()))
        t.start()
        t.join()
    assert seen == [False]
