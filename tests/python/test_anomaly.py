"""Anomaly detection: ``detect_anomaly`` / ``set_detect_anomaly`` (Note [Anomaly
detection]). Texts and behaviour were checked against PyTorch 2.15."""

from __future__ import annotations

import warnings

import pytest
import rustgrad
from rustgrad.autograd import Function, detect_anomaly, set_detect_anomaly

ENABLED_WARNING = "Anomaly Detection has been enabled"
NAN_ERROR = "Function 'MulBackward0' returned nan values in its 0th output."


@pytest.fixture(autouse=True)
def _restore_mode():
    yield
    rustgrad.set_anomaly_enabled(False, True)


def _nan_product():
    x = rustgrad.tensor([0.0, 1.0], requires_grad=True)
    w = rustgrad.tensor([float("nan"), 2.0])
    y = x * w  # the forward line of the NaN
    return x, y


def test_default_mode_is_off_with_check_nan():
    assert rustgrad.is_anomaly_enabled() is False
    assert rustgrad.is_anomaly_check_nan_enabled() is True


def test_nan_in_backward_raises_and_warns_with_the_forward_traceback():
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with mode, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x, y = _nan_product()
        with pytest.raises(RuntimeError) as info:
            y.sum().backward()
    assert str(info.value) == NAN_ERROR
    messages = [str(w.message) for w in caught if w.category is UserWarning]
    assert len(messages) == 1
    text = messages[0]
    assert text.startswith(
        "Error detected in MulBackward0. Traceback of forward call that caused the error:\n"
    )
    assert "y = x * w  # the forward line of the NaN" in text
    assert __file__ in text and "in _nan_product" in text
    assert x.grad is None
    assert rustgrad.is_anomaly_enabled() is False


def test_check_nan_false_lets_nan_through():
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly(check_nan=False)
    with mode:
        assert rustgrad.is_anomaly_check_nan_enabled() is False
        x, y = _nan_product()
        y.sum().backward()
    # d(sum(x * w))/dx = w.
    assert x.grad.isnan().tolist() == [True, False]
    assert x.grad[1].item() == 2.0
    assert rustgrad.is_anomaly_check_nan_enabled() is True


def test_mode_off_lets_nan_through_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = _nan_product()
        y.sum().backward()
    assert x.grad.isnan().tolist() == [True, False]


def test_set_detect_anomaly_as_a_call_and_nested_context_managers():
    set_detect_anomaly(True, check_nan=False)
    assert rustgrad.is_anomaly_enabled() and not rustgrad.is_anomaly_check_nan_enabled()
    set_detect_anomaly(False)
    assert not rustgrad.is_anomaly_enabled() and rustgrad.is_anomaly_check_nan_enabled()
    with set_detect_anomaly(True):
        assert rustgrad.is_anomaly_enabled()
        with set_detect_anomaly(False, check_nan=False):
            assert not rustgrad.is_anomaly_enabled()
            assert not rustgrad.is_anomaly_check_nan_enabled()
            with pytest.warns(UserWarning, match=ENABLED_WARNING):
                inner = detect_anomaly()
            with inner:
                assert rustgrad.is_anomaly_enabled()
                assert rustgrad.is_anomaly_check_nan_enabled()
            assert not rustgrad.is_anomaly_enabled()
            assert not rustgrad.is_anomaly_check_nan_enabled()
        assert rustgrad.is_anomaly_enabled() and rustgrad.is_anomaly_check_nan_enabled()
    assert not rustgrad.is_anomaly_enabled()


def test_detect_anomaly_is_not_a_decorator_as_in_pytorch():
    # PyTorch 2.15's detect_anomaly has no __call__: using it as a decorator warns
    # (at construction) and then raises TypeError.
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with pytest.raises(TypeError, match="object is not callable"):
        mode(lambda: None)


def test_no_forward_information_when_recorded_outside_the_mode():
    x, y = _nan_product()
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with mode, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            y.sum().backward()
    assert [str(w.message) for w in caught] == [
        "Error detected in MulBackward0. No forward pass information available. "
        "Enable detect anomaly during forward pass for more information."
    ]


class _Boom(Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("boom in backward")


def test_custom_backward_exception_propagates_unchanged_with_the_warning():
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with mode, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = rustgrad.ones(3, requires_grad=True)
        z = _Boom.apply(x)  # custom forward line
        with pytest.raises(ValueError, match="^boom in backward$"):
            z.sum().backward()
    (text,) = [str(w.message) for w in caught]
    assert text.startswith("Error detected in _BoomBackward. Traceback of forward call")
    assert "z = _Boom.apply(x)  # custom forward line" in text
    # PyTorch's Function.apply is C++: the trace ends at the caller's line.
    assert text.endswith("z = _Boom.apply(x)  # custom forward line\n")
    # The engine stays usable.
    y = (x * 3).sum()
    y.backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_modified_saved_tensor_error_with_the_warning():
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with mode, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = rustgrad.ones(2, requires_grad=True)
        e = x.exp()  # saves its output
        e.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            e.sum().backward()
    (text,) = [str(w.message) for w in caught]
    assert text.startswith("Error detected in ExpBackward0. Traceback of forward call")
    assert "e = x.exp()  # saves its output" in text


def test_finite_backward_under_the_mode_gives_the_plain_gradients():
    with pytest.warns(UserWarning, match=ENABLED_WARNING):
        mode = detect_anomaly()
    with mode:
        x = rustgrad.tensor([0.5, -1.5], requires_grad=True)
        (x * x).sum().backward()
    # d(sum x^2)/dx = 2x
    assert x.grad.tolist() == [1.0, -3.0]


def test_threads_record_and_backward_under_the_mode_without_deadlock():
    import threading

    rustgrad.set_anomaly_enabled(True, True)
    errors = []
    caught = []

    def work(seed):
        try:
            for i in range(20):
                x = rustgrad.full((8,), (seed + i) / 10.0, requires_grad=True)
                (x * x).exp().mul(0.0).sum().backward()
                # d(sum(0 * exp(x^2)))/dx = 0.
                assert x.grad.tolist() == [0.0] * 8
            nan = rustgrad.tensor([float("nan")])
            y = rustgrad.ones(1, requires_grad=True) * nan  # thread forward line
            try:
                y.sum().backward()
            except RuntimeError as e:
                caught.append(str(e))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(repr(e))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert caught == [NAN_ERROR] * 4


def test_warnings_as_errors_keep_the_nodes_error(capsys):
    # PyTorch: the warning filter "error" does not replace the NaN error.
    set_detect_anomaly(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x, y = _nan_product()
        with pytest.raises(RuntimeError, match="returned nan values in its 0th output"):
            y.sum().backward()
    assert "Error detected in MulBackward0" in capsys.readouterr().err
