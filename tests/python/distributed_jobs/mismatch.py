"""One rank of the shape-mismatch job of tests/python/test_distributed.py: run with
RUSTGRAD_DISTRIBUTED_DEBUG=DETAIL, rank 1 all-reduces a tensor of another shape, and
every rank must raise a RuntimeError naming the shapes (never hang)."""

import rustgrad as torch
import rustgrad.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
t = torch.ones(3 if rank == 1 else 2, dtype=torch.float64)
try:
    dist.all_reduce(t)
except RuntimeError as e:
    assert "(3,)" in str(e) and "(2,)" in str(e), e
else:
    raise AssertionError("mismatched shapes must raise")
# the group is still usable afterwards
t = torch.ones(2)
dist.all_reduce(t)
assert t.tolist() == [dist.get_world_size()] * 2
print(f"OK {rank}", flush=True)
