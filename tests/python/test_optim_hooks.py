"""PyTorch's optimizer hooks: step pre/post hooks (per optimizer and global),
``state_dict`` and ``load_state_dict`` pre/post hooks, their handles, and their
survival through pickling and deep copies.

The expected call orders, arguments and messages are read from PyTorch's
``torch/optim/optimizer.py`` (``profile_hook_step``, ``state_dict``,
``load_state_dict``, ``__setstate__``). This file was also run against PyTorch 2.x
itself (rustgrad aliased to torch in a scratch conftest, outside the test suite): every
test passed there except ``test_subclass_calling_super_step_fires_hooks_once``, where
PyTorch fires the hooks twice once the parent class has been instantiated (it patches
each class's ``step`` separately); rustgrad fires them once, as Note [Optimizer steps]
says. Parameter values after a step are SGD's rule ``w - lr * grad`` worked by hand.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
import rustgrad
from rustgrad import optim
from rustgrad.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

BAD_RETURN = r"must return None or a tuple of \(new_args, new_kwargs\), but got"


def make_sgd(lr: float = 0.25) -> tuple[Any, Any]:
    """A parameter [1, 2] with gradient 2 * w (from sum(w * w)) and its SGD."""
    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    return w, optim.SGD([w], lr=lr)


@pytest.fixture
def global_handles() -> Iterator[list[Any]]:
    """Handles of global hooks a test registers, removed afterwards even on failure."""
    handles: list[Any] = []
    yield handles
    for handle in handles:
        handle.remove()


# ----- step hooks -----------------------------------------------------------------


def test_step_hooks_run_in_pytorch_order_around_the_step(global_handles):
    w, opt = make_sgd()
    log: list[Any] = []

    def record(name: str) -> Any:
        return lambda o, args, kwargs: log.append((name, w.tolist()))

    global_handles.append(register_optimizer_step_pre_hook(record("global pre 1")))
    global_handles.append(register_optimizer_step_post_hook(record("global post 1")))
    opt.register_step_pre_hook(record("pre 1"))
    opt.register_step_post_hook(record("post 1"))
    opt.register_step_pre_hook(record("pre 2"))
    opt.register_step_post_hook(record("post 2"))
    global_handles.append(register_optimizer_step_pre_hook(record("global pre 2")))
    global_handles.append(register_optimizer_step_post_hook(record("global post 2")))

    opt.step()

    before, after = [1.0, 2.0], [0.5, 1.0]  # w - 0.25 * 2w
    assert log == [
        ("global pre 1", before),
        ("global pre 2", before),
        ("pre 1", before),
        ("pre 2", before),
        ("post 1", after),
        ("post 2", after),
        ("global post 1", after),
        ("global post 2", after),
    ]


def test_step_hooks_receive_the_optimizer_then_the_call_arguments():
    _, opt = make_sgd()
    seen: list[Any] = []
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o, args, kwargs)))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", o, args, kwargs)))

    def closure() -> float:
        return 3.0

    assert opt.step() is None
    assert opt.step(closure) == 3.0
    assert opt.step(closure=closure) == 3.0
    assert seen == [
        ("pre", opt, (opt,), {}),
        ("post", opt, (opt,), {}),
        ("pre", opt, (opt, closure), {}),
        ("post", opt, (opt, closure), {}),
        ("pre", opt, (opt,), {"closure": closure}),
        ("post", opt, (opt,), {"closure": closure}),
    ]


def test_pre_hook_replaces_the_closure_for_the_step_and_the_later_hooks():
    _, opt = make_sgd()
    seen: list[Any] = []

    def original() -> float:
        return 1.0

    def replacement() -> float:
        seen.append("replacement ran")
        return 2.0

    def swap(o: Any, args: Any, kwargs: Any) -> Any:
        return (o,), {"closure": replacement}

    opt.register_step_pre_hook(swap)
    opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", args, kwargs)))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", args, kwargs)))

    assert opt.step(original) == 2.0
    assert seen == [
        ("pre", (opt,), {"closure": replacement}),
        "replacement ran",
        ("post", (opt,), {"closure": replacement}),
    ]


@pytest.mark.parametrize("bad", [5, (1, 2, 3), [(), {}]])
def test_pre_hook_returning_something_else_raises(bad):
    w, opt = make_sgd()
    opt.register_step_pre_hook(lambda o, args, kwargs: bad)
    with pytest.raises(RuntimeError, match=BAD_RETURN):
        opt.step()
    assert w.tolist() == [1.0, 2.0]


def test_handles_remove_step_hooks(global_handles):
    w, opt = make_sgd()
    log: list[str] = []
    keep = opt.register_step_pre_hook(lambda o, a, k: log.append("kept"))
    gone = opt.register_step_pre_hook(lambda o, a, k: log.append("removed pre"))
    gone_post = opt.register_step_post_hook(lambda o, a, k: log.append("removed post"))
    gone_global = register_optimizer_step_pre_hook(lambda o, a, k: log.append("removed global"))
    global_handles.append(gone_global)
    assert len({keep.id, gone.id, gone_post.id, gone_global.id}) == 4

    gone.remove()
    gone_post.remove()
    gone_global.remove()
    gone.remove()  # a second remove does nothing
    opt.step()
    assert log == ["kept"]
    assert w.tolist() == [0.5, 1.0]

    with opt.register_step_post_hook(lambda o, a, k: log.append("scoped")):
        opt.step()
    opt.step()
    assert log == ["kept", "kept", "scoped", "kept"]


def test_hooks_of_one_optimizer_do_not_fire_for_another():
    _, opt = make_sgd()
    _, other = make_sgd()
    log: list[Any] = []
    opt.register_step_pre_hook(lambda o, a, k: log.append(o))
    other.step()
    assert log == []
    opt.step()
    assert log == [opt]


ALL_OPTIMIZERS = [
    lambda p: optim.SGD(p, lr=0.1),
    lambda p: optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: optim.Adam(p),
    lambda p: optim.AdamW(p),
    lambda p: optim.Adamax(p),
    lambda p: optim.NAdam(p),
    lambda p: optim.RAdam(p),
    lambda p: optim.RMSprop(p),
    lambda p: optim.Adagrad(p),
    lambda p: optim.Adadelta(p),
    lambda p: optim.LBFGS(p),
]


@pytest.mark.parametrize("make", ALL_OPTIMIZERS)
def test_global_hooks_fire_once_per_step_for_every_optimizer(make, global_handles):
    w = rustgrad.tensor([1.0, -2.0], requires_grad=True)
    opt = make([w])
    log: list[Any] = []
    global_handles.append(register_optimizer_step_pre_hook(lambda o, a, k: log.append(("pre", o))))
    global_handles.append(
        register_optimizer_step_post_hook(lambda o, a, k: log.append(("post", o)))
    )

    def closure() -> Any:
        opt.zero_grad()
        loss = (w * w).sum()
        loss.backward()
        log.append("closure")
        return loss

    opt.step(closure)
    assert log[0] == ("pre", opt) and log[-1] == ("post", opt)
    assert log.count(("pre", opt)) == 1 and log.count(("post", opt)) == 1
    assert "closure" in log
    assert w.tolist() != [1.0, -2.0]


def test_lbfgs_hooks_wrap_all_its_closure_calls_and_see_the_final_parameters():
    w = rustgrad.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.LBFGS([w], lr=1.0, max_iter=5)
    log: list[Any] = []

    def closure() -> Any:
        opt.zero_grad()
        loss = ((w - 3.0) ** 2).sum()
        loss.backward()
        log.append("closure")
        return loss

    opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", a)))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", w.tolist())))
    opt.step(closure)
    assert log[0] == ("pre", (opt, closure))
    assert log[1:-1] == ["closure"] * (len(log) - 2) and len(log) > 3
    # the quadratic's minimum, reached by LBFGS within max_iter
    assert log[-1] == ("post", pytest.approx([3.0, 3.0]))


def test_pre_hook_may_replace_the_lbfgs_closure():
    w = rustgrad.tensor([0.0], requires_grad=True)
    opt = optim.LBFGS([w], max_iter=3)
    calls: list[str] = []

    def closure_to_4() -> Any:
        calls.append("to 4")
        opt.zero_grad()
        loss = ((w - 4.0) ** 2).sum()
        loss.backward()
        return loss

    opt.register_step_pre_hook(lambda o, args, kwargs: ((o, closure_to_4), kwargs))
    first_loss = opt.step(lambda: pytest.fail("the replaced closure ran"))
    assert float(first_loss.detach()) == 16.0  # (0 - 4)^2, the loss at the start of the step
    assert calls and set(calls) == {"to 4"}


def test_python_subclass_overriding_step_fires_hooks(global_handles):
    class PlainSGD(optim.Optimizer):
        """An optimizer written in Python from the base class, as users write them."""

        def __init__(self, params: Any, lr: float) -> None:
            super().__init__(params, {"lr": lr})

        def step(self, closure: Any = None) -> Any:
            with rustgrad.no_grad():
                for group in self.param_groups:
                    for p in group["params"]:
                        p.sub_(group["lr"] * p.grad)
            return "stepped"

    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    opt = PlainSGD([w], lr=0.25)
    log: list[Any] = []
    global_handles.append(register_optimizer_step_pre_hook(lambda o, a, k: log.append("g pre")))
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append(("post", w.tolist())))
    assert opt.step() == "stepped"
    assert log == ["g pre", "pre", ("post", [0.5, 1.0])]


def test_subclass_calling_super_step_fires_hooks_once():
    class LoggingSGD(optim.SGD):
        def step(self, closure: Any = None) -> Any:
            log.append("subclass step")
            return super().step(closure)

    log: list[Any] = []
    _, plain = make_sgd()  # the parent class has been used too
    plain.step()
    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    opt = LoggingSGD([w], lr=0.25)
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))
    opt.step()
    assert log == ["pre", "subclass step", "post"]
    assert w.tolist() == [0.5, 1.0]


def test_hooks_fire_again_after_a_step_that_raised():
    _, opt = make_sgd()
    log: list[str] = []
    opt.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    opt.register_step_post_hook(lambda o, a, k: log.append("post"))

    def failing() -> Any:
        raise KeyError("closure failed")

    with pytest.raises(KeyError):
        opt.step(failing)
    assert log == ["pre"]
    opt.step()
    assert log == ["pre", "pre", "post"]


def test_hooks_fire_under_an_lr_scheduler():
    w, opt = make_sgd(lr=1.0)
    scheduler = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    lrs: list[float] = []
    opt.register_step_pre_hook(lambda o, a, k: lrs.append(o.param_groups[0]["lr"]))
    opt.step()
    scheduler.step()
    opt.step()
    assert lrs == [1.0, 0.5]


# ----- state_dict and load_state_dict hooks ---------------------------------------


def test_state_dict_hooks_change_what_is_returned():
    w = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    opt = optim.SGD([w], lr=0.25, momentum=0.5)
    opt.step()
    log: list[Any] = []

    def pre(o: Any) -> None:
        log.append(("pre", o))
        o.param_groups[0]["tag"] = "set by the pre hook"

    def post_in_place(o: Any, state_dict: dict[str, Any]) -> None:
        log.append("post in place")
        state_dict["extra"] = 1

    def post_new(o: Any, state_dict: dict[str, Any]) -> dict[str, Any]:
        log.append(("post new", sorted(state_dict)))
        return {"replaced": state_dict}

    opt.register_state_dict_pre_hook(pre)
    opt.register_state_dict_post_hook(post_in_place)
    opt.register_state_dict_post_hook(post_new)
    result = opt.state_dict()
    assert log == [("pre", opt), "post in place", ("post new", ["extra", "param_groups", "state"])]
    assert list(result) == ["replaced"]
    inner = result["replaced"]
    assert inner["param_groups"][0]["tag"] == "set by the pre hook"
    assert inner["state"][0]["momentum_buffer"].tolist() == [2.0, 4.0]  # the first grad


def test_load_state_dict_pre_hook_replaces_what_is_loaded():
    _, source = make_sgd(lr=0.5)
    saved = source.state_dict()
    w, opt = make_sgd(lr=0.25)
    log: list[Any] = []

    def pre(o: Any, state_dict: dict[str, Any]) -> dict[str, Any]:
        log.append(("pre", state_dict is saved, o.param_groups[0]["lr"]))
        groups = [dict(g, lr=0.125) for g in state_dict["param_groups"]]
        return {"state": state_dict["state"], "param_groups": groups}

    def post(o: Any) -> None:
        log.append(("post", o.param_groups[0]["lr"]))

    opt.register_load_state_dict_pre_hook(pre)
    opt.register_load_state_dict_post_hook(post)
    opt.load_state_dict(saved)
    # the hook gets a shallow copy, sees the state before loading and PyTorch loads
    # what it returned; the post hook sees the loaded state
    assert log == [("pre", False, 0.25), ("post", 0.125)]
    assert saved["param_groups"][0]["lr"] == 0.5
    opt.step()
    assert w.tolist() == [0.75, 1.5]  # w - 0.125 * 2w


def test_load_state_dict_pre_hook_may_edit_the_copy_in_place():
    _, source = make_sgd(lr=0.5)
    saved = source.state_dict()
    _, opt = make_sgd(lr=0.25)

    def set_lr(o: Any, state_dict: dict[str, Any]) -> None:
        state_dict["param_groups"] = [dict(g, lr=2.0) for g in state_dict["param_groups"]]

    opt.register_load_state_dict_pre_hook(set_lr)
    opt.load_state_dict(saved)
    assert opt.param_groups[0]["lr"] == 2.0
    assert "param_groups" in saved and saved["param_groups"][0]["lr"] == 0.5


@pytest.mark.parametrize(
    "register, trigger",
    [
        ("register_state_dict_pre_hook", lambda opt: opt.state_dict()),
        ("register_state_dict_post_hook", lambda opt: opt.state_dict()),
        ("register_load_state_dict_pre_hook", lambda opt: opt.load_state_dict(opt.state_dict())),
        ("register_load_state_dict_post_hook", lambda opt: opt.load_state_dict(opt.state_dict())),
    ],
)
def test_prepend_puts_a_hook_first_and_handles_remove(register, trigger):
    _, opt = make_sgd()
    log: list[str] = []

    def hook(name: str) -> Any:
        return lambda *args: log.append(name)

    add = getattr(opt, register)
    add(hook("first"))
    add(hook("second"))
    front = add(hook("prepended"), prepend=True)
    add(hook("prepended by keyword"), True)
    last = add(hook("appended"), prepend=False)
    trigger(opt)
    assert log == ["prepended by keyword", "prepended", "first", "second", "appended"]

    log.clear()
    front.remove()
    last.remove()
    trigger(opt)
    assert log == ["prepended by keyword", "first", "second"]


# ----- copies ---------------------------------------------------------------------


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))])
def test_copies_start_without_hooks_and_accept_new_ones(copier):
    w, opt = make_sgd()
    log: list[str] = []
    opt.register_step_pre_hook(lambda o, a, k: log.append("original"))
    opt.register_state_dict_pre_hook(lambda o: log.append("original state_dict"))

    clone = copier(opt)
    for name in (
        "_optimizer_step_pre_hooks",
        "_optimizer_step_post_hooks",
        "_optimizer_state_dict_pre_hooks",
        "_optimizer_state_dict_post_hooks",
        "_optimizer_load_state_dict_pre_hooks",
        "_optimizer_load_state_dict_post_hooks",
    ):
        assert len(getattr(clone, name)) == 0, name
    clone.state_dict()
    clone.register_step_post_hook(lambda o, a, k: log.append("clone"))
    clone.step()
    assert log == ["clone"]


def test_setstate_of_a_state_saved_without_hook_dicts_adds_them():
    w, opt = make_sgd()
    old = optim.SGD.__new__(optim.SGD)
    old.__setstate__(
        {"defaults": opt.defaults, "state": opt.state, "param_groups": opt.param_groups}
    )
    log: list[str] = []
    old.register_step_pre_hook(lambda o, a, k: log.append("pre"))
    old.register_load_state_dict_post_hook(lambda o: log.append("loaded"))
    old.step()
    old.load_state_dict(old.state_dict())
    assert log == ["pre", "loaded"]
    assert w.tolist() == [0.5, 1.0]
