"""One rank of the frozen fine-tune job of tests/python/test_distributed_ddp.py.

The seed scenario: ResNet-18 with every parameter frozen except a new ``fc`` head,
base in eval mode, wrapped in DDP. Each step must all-reduce exactly fc's bytes (counted
by the process group), and after 3 steps fc equals single-process training on the
concatenated batch (float32 within 1e-5).
"""

from __future__ import annotations

import copy

import numpy as np
import rustgrad as torch
import rustgrad.distributed as dist
from rustgrad import nn
from rustgrad.models import resnet18
from rustgrad.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
pg = dist.GroupMember.WORLD
torch.manual_seed(rank)
model = resnet18(num_classes=5)
for p in model.parameters():
    p.requires_grad_(False)
model.fc = nn.Linear(512, 5)
model.eval()  # the frozen base's batch norms use their running statistics
ddp = DDP(model)
ref = copy.deepcopy(ddp.module)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(ref.fc.parameters(), lr=0.1)
fc_bytes = (512 * 5 + 5) * 4
for step in range(3):
    g = np.random.default_rng(step)
    x = torch.tensor(g.standard_normal((2 * world, 3, 32, 32)).astype(np.float32))
    y = torch.tensor(g.integers(0, 5, size=2 * world))
    mine = slice(2 * rank, 2 * rank + 2)
    before = pg.comm_bytes.get("all_reduce", 0)
    opt.zero_grad()
    nn.functional.cross_entropy(ddp(x[mine]), y[mine]).backward()
    assert pg.comm_bytes["all_reduce"] - before == fc_bytes, pg.comm_bytes
    opt.step()
    ref_opt.zero_grad()
    nn.functional.cross_entropy(ref(x), y).backward()
    ref_opt.step()
for name, p in ddp.module.fc.named_parameters():
    q = getattr(ref.fc, name)
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-5)
assert all(p.grad is None for n, p in model.named_parameters() if not n.startswith("fc."))
print(f"OK {rank}", flush=True)
