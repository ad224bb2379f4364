"""One rank of the failure job of tests/python/test_distributed.py: rank 1 raises (or,
with ``kill`` as the second argument, is killed by SIGKILL) while the others wait in a
collective (which would never complete)."""

import os
import signal
import sys
import time

import rustgrad as torch
import rustgrad.distributed as dist

dist.init_process_group("gloo")
print(
    f"env {os.environ.get('RANK')} {os.environ.get('LOCAL_RANK')} "
    f"{os.environ.get('WORLD_SIZE')} {sys.argv[1:]} "
    f"threads={os.environ.get('RUSTGRAD_NUM_THREADS')}",
    flush=True,
)
if dist.get_rank() == 1:
    time.sleep(0.2)
    if sys.argv[2:] == ["kill"]:
        os.kill(os.getpid(), signal.SIGKILL)
    raise ZeroDivisionError("rank one failed on purpose")
dist.all_reduce(torch.ones(3))
time.sleep(60)
