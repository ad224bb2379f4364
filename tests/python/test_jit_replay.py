"""Capture and replay (rustgrad.jit.trace, rustgrad.compile): Note [Capture and replay].

A replay runs the same engine ops as the eager code, so the references here are eager
runs of the same code from the same start: parameters must be bitwise equal.
"""

import warnings

import pytest
import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad import nn
from rustgrad.models.resnet import BasicBlock

STEPS = 20


def _params(model):
    return [p.detach().clone() for p in model.state_dict().values()]


def _bitwise_equal(a, b):
    return all(x.shape == y.shape and bool((x == y).all()) for x, y in zip(a, b))


def _train(make_model, make_opt, data, captured):
    torch.manual_seed(0)
    model = make_model()
    opt = make_opt(model.parameters())

    def step(x, y):
        opt.zero_grad()
        loss = model.loss(x, y)
        loss.backward()
        opt.step()
        return loss

    run = torch.compile(step) if captured else step
    losses = [run(x, y).item() for x, y in data]
    return _params(model), losses


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 16)
        self.fc2 = nn.Linear(16, 3)

    def loss(self, x, y):
        return F.cross_entropy(self.fc2(F.relu(self.fc1(x))), y)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = BasicBlock(4, 4)
        self.head = nn.Linear(4 * 5 * 5, 2)

    def loss(self, x, y):
        return F.mse_loss(self.head(self.block(x).flatten(1)), y)


def _mlp_data():
    torch.manual_seed(1)
    return [(torch.randn(8, 6), torch.randint(0, 3, (8,))) for _ in range(STEPS)]


def _block_data():
    torch.manual_seed(2)
    return [(torch.randn(2, 4, 5, 5), torch.randn(2, 2)) for _ in range(STEPS)]


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    before = torch.get_num_threads()
    torch.set_num_threads(request.param)
    yield request.param
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
        lambda p: torch.optim.Adam(p, lr=0.01),
    ],
    ids=["sgd", "adam"],
)
def test_captured_mlp_training_matches_eager_bitwise(threads, make_opt):
    data = _mlp_data()
    eager, eager_losses = _train(Mlp, make_opt, data, captured=False)
    replayed, replay_losses = _train(Mlp, make_opt, data, captured=True)
    assert replay_losses == eager_losses
    assert _bitwise_equal(eager, replayed)


def test_captured_basic_block_training_matches_eager_bitwise(threads):
    data = _block_data()

    def make_opt(p):
        return torch.optim.SGD(p, lr=0.05, momentum=0.9)

    eager, eager_losses = _train(Block, make_opt, data, captured=False)
    replayed, replay_losses = _train(Block, make_opt, data, captured=True)
    assert replay_losses == eager_losses
    # state_dict holds the batch norms' running statistics too.
    assert _bitwise_equal(eager, replayed)


def test_trace_replays_forward_and_backward():
    def step(x, w):
        loss = (x @ w).tanh().sum()
        loss.backward()
        return loss

    x = torch.randn(3, 4)
    w = torch.randn(4, 2, requires_grad=True)
    traced = torch.jit.trace(step, (x, w))
    assert "backward" in traced.op_names
    x2, w2 = torch.randn(3, 4), torch.randn(4, 2, requires_grad=True)
    out = traced(x2, w2)
    w3 = w2.detach().clone().requires_grad_()
    expected = step(x2, w3)
    assert out.item() == expected.item()
    assert bool((w2.grad == w3.grad).all())


def test_replay_releases_intermediates():
    def chain(x):
        y = x
        for _ in range(50):
            y = (y * 0.5).tanh()
        return y

    traced = torch.jit.trace(chain, (torch.randn(4),))
    peak, made = traced.graph.peak_live_values()
    assert made > 100
    assert peak <= 4


def test_compile_recaptures_on_shape_dtype_and_grad_mode_change():
    calls = []

    def f(x):
        calls.append(1)
        return (x * 2.0 + 1.0).relu()

    g = torch.compile(f)
    a = torch.randn(3)
    assert bool((g(a) == f(a)).all())
    n = len(calls)
    g(torch.randn(3))  # replay: the Python function does not run
    assert len(calls) == n
    for x in [torch.randn(5), torch.randn(3, dtype=torch.float64)]:
        assert g(x).dtype == x.dtype
        assert bool((g(x) == f(x)).all())
    x = torch.randn(3, requires_grad=True)
    out = g(x)
    assert out.requires_grad
    with torch.no_grad():
        out = g(x)
    assert not out.requires_grad
    assert bool((out == f(x.detach())).all())


def test_item_during_capture_warns_tracer_warning():
    def f(x):
        if x.sum().item() > 0:
            return x * 2.0
        return x * 3.0

    with pytest.warns(torch.jit.TracerWarning, match="Python number"):
        traced = torch.jit.trace(f, (torch.ones(2),))
    # The replay follows the traced branch.
    assert traced(-torch.ones(2)).tolist() == [-2.0, -2.0]
    with pytest.warns(torch.jit.TracerWarning, match="Python boolean"):
        torch.jit.trace(lambda x: x * 2.0 if bool(x.sum() > 0) else x, (torch.ones(2),))
    with pytest.warns(torch.jit.TracerWarning, match="Python list"):
        torch.jit.trace(lambda x: x * float(len(x.tolist())), (torch.ones(2),))


def test_unsupported_op_fails_trace_naming_it():
    with pytest.raises(RuntimeError, match="cumsum"):
        torch.jit.trace(lambda x: x.cumsum(0) * 2.0, (torch.randn(3),))
    # The capture was dropped: a later trace works.
    assert (
        torch.jit.trace(lambda x: x * 2.0, (torch.randn(3),))(torch.ones(3)).tolist() == [2.0] * 3
    )


def test_unsupported_op_makes_compile_fall_back_to_eager():
    def f(x):
        return x.cumsum(0) * 2.0

    g = torch.compile(f)
    x = torch.randn(4)
    with pytest.warns(UserWarning, match="cumsum"):
        out = g(x)
    assert bool((out == f(x)).all())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bool((g(x) == f(x)).all())


def test_bad_input_to_traced_function_raises():
    traced = torch.jit.trace(lambda x: x * 2.0, (torch.randn(3),))
    with pytest.raises(TypeError, match="takes 1 arguments"):
        traced(torch.randn(3), torch.randn(3))
    with pytest.raises(TypeError, match="must be a Tensor"):
        traced(3.0)
    with pytest.raises(RuntimeError, match="captured with shape"):
        traced(torch.randn(4))
    with pytest.raises(RuntimeError, match="captured with shape"):
        traced(torch.randn(3, dtype=torch.float64))


def test_exception_in_captured_function_stops_the_capture():
    def f(x):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        torch.jit.trace(f, (torch.randn(2),))
    assert not torch._rustgrad._jit_is_capturing()
    assert torch.jit.trace(lambda x: x + 1.0, (torch.randn(2),))(torch.zeros(2)).tolist() == [
        1.0,
        1.0,
    ]


def _mixed_chain(x, w):
    y = x * w
    for _ in range(3):
        y = (y + x).sigmoid() * 1.5
        y = y - w / 3.0
        y = (-y).exp() / (w + 2.0)
        y = y.tanh() * y + x * w * 0.25
        y = 1.0 - y
    return y


@pytest.mark.parametrize("numel", [16, 40000], ids=["flat", "tensor-kernels"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_elementwise_chain_matches_eager_bitwise(numel, dtype):
    def step(x, w):
        loss = _mixed_chain(x, w).sum()
        loss.backward()
        return loss

    torch.manual_seed(3)
    x0 = torch.randn(numel, dtype=dtype)
    w0 = torch.rand(numel, dtype=dtype) + 0.5
    traced = torch.jit.trace(step, (x0.clone().requires_grad_(), w0.clone().requires_grad_()))
    assert "fused_elementwise" in traced.op_names
    for k in range(2):
        x, w = (x0 * (k + 1)).requires_grad_(), w0.clone().requires_grad_()
        xe, we = (x0 * (k + 1)).requires_grad_(), w0.clone().requires_grad_()
        assert traced(x, w).item() == step(xe, we).item()
        assert bool((x.grad == xe.grad).all())
        assert bool((w.grad == we.grad).all())


def test_dropout_replays_with_the_eager_random_stream():
    def step(x):
        return F.dropout(x, 0.5, training=True) * 2.0

    x = torch.ones(64)
    torch.manual_seed(5)
    traced = torch.jit.trace(step, (x,))
    replayed = [traced(x) for _ in range(3)]
    torch.manual_seed(5)
    eager = [step(x) for _ in range(4)][1:]
    assert all(bool((a == b).all()) for a, b in zip(replayed, eager))


def test_random_factory_in_captured_function_is_refused():
    with pytest.raises(RuntimeError, match="random sampling"):
        torch.jit.trace(lambda x: x + torch.randn(3), (torch.zeros(3),))


def test_compile_recaptures_when_a_scheduler_changes_the_learning_rate():
    data = _mlp_data()[:6]

    def train(captured):
        torch.manual_seed(0)
        model = Mlp()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

        def step(x, y):
            opt.zero_grad()
            loss = model.loss(x, y)
            loss.backward()
            opt.step()
            return loss

        run = torch.compile(step) if captured else step
        for x, y in data:
            run(x, y)
            sched.step()
        return _params(model)

    assert _bitwise_equal(train(False), train(True))
    model = Mlp()
    traced_opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step2(x, y):
        traced_opt.zero_grad()
        model.loss(x, y).backward()
        traced_opt.step()

    traced = torch.jit.trace(step2, data[0])
    traced_opt.param_groups[0]["lr"] = 0.05
    with pytest.raises(RuntimeError, match="options changed"):
        traced(*data[1])


def test_captured_lenet_training_matches_eager_bitwise():
    from rustgrad.models import LeNet

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = LeNet(num_classes=3)

        def loss(self, x, y):
            return F.cross_entropy(self.net(x), y)

    torch.manual_seed(4)
    data = [(torch.randn(2, 3, 32, 32), torch.randint(0, 3, (2,))) for _ in range(4)]

    def make_opt(p):
        return torch.optim.Adam(p, lr=0.01)

    eager, eager_losses = _train(Net, make_opt, data, captured=False)
    replayed, replay_losses = _train(Net, make_opt, data, captured=True)
    assert replay_losses == eager_losses
    assert _bitwise_equal(eager, replayed)


def test_compiled_function_inside_a_capture_is_inlined():
    inner = torch.compile(lambda x: x * 2.0)
    outer = torch.jit.trace(lambda x: inner(x).tanh(), (torch.randn(3),))
    assert outer.op_names == ["fused_elementwise"]  # mul and tanh, one chain
    x = torch.randn(3)
    assert bool((outer(x) == (x * 2.0).tanh()).all())
