"""The training kernels give bitwise-identical results for 1, 2 and 16 threads (issue 20).

Batch norm forward and backward, ReLU's backward, broadcast add and mul, sums and means
over dims, softmax and log-softmax, and SGD / Adam / AdamW steps (float32 and float16)
run in a fresh process per thread count (``RUSTGRAD_NUM_THREADS``; 16 runs
oversubscribed on a small machine); every result and gradient is hashed. Sizes reach
the parallel thresholds (32768 elements), so every kernel takes its split path (Note [Determinism]).
"""

import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import hashlib
import numpy as np
import rustgrad as torch
import rustgrad.nn.functional as F

print("threads", torch.get_num_threads())
rng = np.random.default_rng(2020)

def t(*shape, grad=True):
    x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    return x.requires_grad_() if grad else x

def digest(name, tensor):
    data = np.ascontiguousarray(tensor.detach().float().numpy()).tobytes()
    print(name, hashlib.sha256(data).hexdigest())

# Batch norm (training), then ReLU and a broadcast per-channel scale.
x, w, b, scale = t(4, 32, 16, 16), t(32), t(32), t(1, 32, 1, 1)
rm, rv = torch.zeros(32), torch.ones(32)
y = F.batch_norm(x, rm, rv, w, b, training=True)
loss = (F.relu(y) * scale * y).sum()
loss.backward()
for name, v in [("bn_out", y), ("bn_loss", loss), ("bn_rm", rm), ("bn_rv", rv),
                ("bn_gx", x.grad), ("bn_gw", w.grad), ("bn_gb", b.grad), ("bn_gs", scale.grad)]:
    digest(name, v)

# Sums and means over dims of a doubly broadcast add.
a, row, col = t(128, 256), t(256), t(128, 1)
s = a + row + col
s0, s1 = s.sum(0), s.mean(1, keepdim=True)
loss = (s0 * s0).sum() + (s1 * s1).sum()
loss.backward()
for name, v in [("s0", s0), ("s1", s1), ("sum_loss", loss), ("ga", a.grad),
                ("grow", row.grad), ("gcol", col.grad)]:
    digest(name, v)

# Softmax and log-softmax over rows, and over a middle dim.
z, weights = t(32, 1024), t(32, 1024, grad=False)
p, lp = z.softmax(1), z.log_softmax(1)
mid = z.view(32, 16, 64).log_softmax(1)
loss = (p * weights).sum() + (lp * weights).sum() + mid.sum()
loss.backward()
for name, v in [("softmax", p), ("log_softmax", lp), ("mid", mid), ("gz", z.grad)]:
    digest(name, v)

# Three optimizer steps over a large and a small parameter, float32 and float16.
makers = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.01, momentum=0.9, nesterov=True, weight_decay=1e-4),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-3),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01, amsgrad=True),
}
for dtype in (torch.float32, torch.float16):
    for name, make in makers.items():
        params = [t(n, grad=False).to(dtype).requires_grad_() for n in (40_000, 77)]
        opt = make(params)
        for _ in range(3):
            for q in params:
                q.grad = t(q.numel(), grad=False).to(dtype)
            opt.step()
        for i, q in enumerate(params):
            digest(f"{name}_{dtype}_{i}", q)
"""


def _run(threads: int) -> list[str]:
    env = dict(os.environ, RUSTGRAD_NUM_THREADS=str(threads))
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0] == f"threads {threads}", "RUSTGRAD_NUM_THREADS was not honoured"
    return lines[1:]


@pytest.mark.rustgrad_only
def test_training_kernels_are_bitwise_identical_for_1_2_and_16_threads():
    one = _run(1)
    assert len(one) == 30
    for threads in (2, 16):
        other = _run(threads)
        differ = [a.split()[0] for a, b in zip(one, other) if a != b]
        assert not differ, f"{threads} threads differ from 1 in {differ}"
