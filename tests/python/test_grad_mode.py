"""Grad-mode switches as decorators, as PyTorch's behave (printed by PyTorch 2.15 for
the same programs): with and without parentheses, on plain and generator functions,
nested, and restoring the caller's mode."""

import pytest
import rustgrad as torch


def test_bare_and_called_decorators():
    @torch.no_grad
    def bare():
        return torch.is_grad_enabled()

    @torch.no_grad()
    def called():
        return torch.is_grad_enabled()

    assert bare() is False and called() is False
    assert bare.__name__ == "bare"
    assert torch.is_grad_enabled()
    with torch.no_grad():

        @torch.enable_grad
        def inner():
            return torch.is_grad_enabled()

        assert inner() is True
        assert not torch.is_grad_enabled()


def test_generator_runs_under_the_mode_and_yields_back_the_callers():
    @torch.no_grad()
    def gen():
        seen = yield torch.is_grad_enabled()
        yield (seen, torch.is_grad_enabled())

    it = gen()
    assert next(it) is False
    assert torch.is_grad_enabled()  # the caller's mode between resumptions
    assert it.send("hello") == ("hello", False)
    assert torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def one():
        yield torch.is_grad_enabled()

    assert list(one()) == [False]
    assert torch.is_grad_enabled()


def test_generator_return_value_close_and_throw_run_under_the_mode():
    events = []

    @torch.no_grad
    def gen():
        try:
            yield 1
        except ValueError:
            events.append(("throw", torch.is_grad_enabled()))
            yield 2
        finally:
            events.append(("finally", torch.is_grad_enabled()))
        return 3

    it = gen()
    assert next(it) == 1
    assert it.throw(ValueError("x")) == 2
    with pytest.raises(StopIteration) as stop:
        next(it)
    assert stop.value.value == 3
    assert events == [("throw", False), ("finally", False)]

    it = gen()
    next(it)
    it.close()
    assert events[-1] == ("finally", False)
    assert torch.is_grad_enabled()


def test_gradients_inside_a_decorated_generator_are_not_recorded():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad
    def doubled():
        for _ in range(2):
            yield x * 2

    assert [y.requires_grad for y in doubled()] == [False, False]
    assert (x * 2).requires_grad


def test_exception_in_decorated_function_restores_mode():
    @torch.no_grad()
    def boom():
        raise KeyError("k")

    with pytest.raises(KeyError):
        boom()
    assert torch.is_grad_enabled()
