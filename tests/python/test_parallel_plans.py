"""Parallel plans of the GEMM and convolution kernels (Note [GEMM plans]).

``rustgrad.parallel.record_plans`` reports how each kernel call was split; plans depend
on the sizes and the thread count, and results never do: training steps give bitwise
the same gradients and parameters with 1, 2, 4 and 16 threads (16 oversubscribed on a
2-core machine).
"""

import os
import subprocess
import sys

import pytest
import rustgrad as torch
from rustgrad import nn
from rustgrad.models import resnet18


def _resnet_step_plans(num_threads):
    torch.manual_seed(0)
    model = resnet18(num_classes=1000)
    x = torch.randn(16, 3, 64, 64)
    y = torch.randint(0, 1000, (16,))
    with torch.parallel.record_plans(num_threads=num_threads) as plans:
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
    return plans


@pytest.mark.rustgrad_only
def test_resnet18_step_splits_into_64_comparable_tasks_with_16_threads():
    before = torch.get_num_threads()
    plans = _resnet_step_plans(16)
    assert torch.get_num_threads() == before
    kernels = {p.kernel for p in plans}
    assert {"conv_forward", "conv_input_grad", "conv_weight_grad", "matmul"} <= kernels
    # 20 convolutions forward; 19 input gradients (not the stem's), 20 weight ones.
    assert sum(p.kernel == "conv_forward" for p in plans) == 20
    for p in plans:
        # At least 4 tasks per thread, of comparable size: within 25% of each other.
        assert p.tasks >= 64, p
        assert p.max_work * 4 <= p.min_work * 5, p


@pytest.mark.rustgrad_only
def test_plans_follow_the_thread_count():
    one = _resnet_step_plans(1)
    two = _resnet_step_plans(2)
    # The same calls (in another order: backward runs branches concurrently).
    assert sorted(p.kernel for p in one) == sorted(p.kernel for p in two)
    # One thread: each convolution runs its sample groups, one GEMM task each.
    assert all(p.tasks <= 16 for p in one if p.kernel == "conv_forward")
    assert max(p.tasks for p in two) <= max(p.tasks for p in _resnet_step_plans(16))


def test_record_plans_is_not_reentrant_and_restores_the_thread_count():
    before = torch.get_num_threads()
    with torch.parallel.record_plans(num_threads=3) as plans:
        assert torch.get_num_threads() == 3
        with pytest.raises(RuntimeError, match="already in progress"):
            with torch.parallel.record_plans():
                pass
        torch.randn(300, 300) @ torch.randn(300, 300)
    assert torch.get_num_threads() == before
    assert [p.kernel for p in plans] == ["matmul"]
    assert plans[0].tasks > 1
    assert plans[0].min_work > 0


DETERMINISM_SCRIPT = r"""
import hashlib
import numpy as np
import rustgrad as torch
from rustgrad import nn
from rustgrad.models.resnet import BasicBlock

print("threads", torch.get_num_threads())

def digest(name, tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(np.ascontiguousarray(t.detach().numpy()).tobytes())
    print(name, h.hexdigest())

def train(name, model, x, y, opt_cls, **kw):
    opt = opt_cls(model.parameters(), **kw)
    for _ in range(2):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    digest(name + " loss", [loss])
    digest(name + " grads", [p.grad for p in model.parameters()])
    digest(name + " params", list(model.parameters()))

torch.manual_seed(0)
mlp = nn.Sequential(
    nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
)
x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
train("mlp sgd", mlp, x, y, torch.optim.SGD, lr=0.1, momentum=0.9)
train("mlp adam", mlp, x, y, torch.optim.Adam, lr=1e-3)

torch.manual_seed(1)
convnet = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10),
)
x, y = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,))
train("convnet", convnet, x, y, torch.optim.SGD, lr=0.1)

torch.manual_seed(2)
down = nn.Sequential(nn.Conv2d(64, 128, 1, stride=2, bias=False), nn.BatchNorm2d(128))
block = nn.Sequential(
    BasicBlock(64, 128, stride=2, downsample=down),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
)
x, y = torch.randn(8, 64, 16, 16), torch.randint(0, 10, (8,))
train("basic block", block, x, y, torch.optim.SGD, lr=0.1, momentum=0.9)
"""


def _run(num_threads):
    env = dict(os.environ, RUSTGRAD_NUM_THREADS=str(num_threads))
    done = subprocess.run(
        [sys.executable, "-c", DETERMINISM_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"threads {num_threads}"
    return lines[1:]


@pytest.mark.rustgrad_only
def test_training_steps_are_bitwise_identical_for_1_2_4_and_16_threads():
    one = _run(1)
    assert len(one) == 12
    for threads in (2, 4, 16):
        assert _run(threads) == one, f"{threads} threads differ from 1"
