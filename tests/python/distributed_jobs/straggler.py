"""One rank of the timeout job of tests/python/test_distributed.py: the group's timeout
is 1 s and rank 1 never joins the all_reduce (it sleeps, alive), so the others' wait
must fail with a RuntimeError naming the timeout, which ends the job."""

import datetime
import time

import rustgrad as torch
import rustgrad.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=1))
dist.barrier()
if dist.get_rank() == 1:
    time.sleep(60)
dist.all_reduce(torch.ones(2))
