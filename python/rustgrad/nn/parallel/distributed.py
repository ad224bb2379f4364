"""``DistributedDataParallel``: PyTorch's DDP on ``rustgrad.distributed`` (Note
[Distributed]).

At construction rank 0's parameters and buffers are broadcast to every rank. The
parameters that require a gradient are put in buckets in reverse registration order (the
order backward produces their gradients; the first bucket capped at 1 MiB, the others
at ``bucket_cap_mb``, one dtype per bucket). Each parameter gets a post-accumulate-grad
hook: when the last gradient of a bucket is accumulated, the bucket's gradients are
copied into one flat buffer, scaled by 1/world size, and a non-blocking all-reduce of
it starts, in bucket order on every rank, while backward goes on with the rest of the
graph. When every bucket has started, the hook of the last one waits for all of them
and writes the averaged gradients back into each ``.grad`` in place. The bucket
assignment, the flattening and the write-back are the engine crate's
``rustgrad::distributed`` (the same functions a Rust program uses); the all-reduce is
``rustgrad.distributed`` (mpi4py).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import _rustgrad
from ... import distributed as dist
from ...distributed import distributed_c10d as c10d
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024

_UNUSED_ERROR = (
    "Expected to have finished reduction in the prior iteration before starting a new "
    "one. This error indicates that your module has parameters that were not used in "
    "producing loss. You can enable unused parameter detection by passing the keyword "
    "argument `find_unused_parameters=True` to "
    "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` "
    "function outputs participate in calculating loss. \nIf you already have done the "
    "above, then the distributed data parallel module wasn't able to locate the output "
    "tensors in the return value of your module's `forward` function. Please include "
    "the loss function and the structure of the return value of `forward` of your "
    "module when reporting this issue (e.g. list, dict, iterable).\nParameter indices "
    "which did not receive grad for rank {rank}: {indices}"
)


class _Bucket:
    """Parameters (indices into the DDP's parameter list) reduced together: the engine's
    bucket (``spec``) and the state of its reduction in the current backward."""

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.indices: list[int] = spec.indices
        self.pending = 0
        self.flat: Any = None
        self.work: Any = None


class DistributedDataParallel(Module):
    """Data-parallel training over the ranks of a process group, as PyTorch's DDP.

    Args:
        module: the module to replicate (the child ``module``: state_dict keys are
            ``module.<name>``).
        device_ids, output_device: must be None for a CPU module, as in PyTorch.
        broadcast_buffers: broadcast rank 0's buffers before each forward.
        process_group: the group to reduce over (the default group when None).
        bucket_cap_mb: bucket size in MiB (25 by default; the first bucket is 1 MiB).
        find_unused_parameters: find, after each forward, the parameters the output does
            not depend on and treat their gradients as zero (reduced with the others).
        gradient_as_bucket_view, static_graph: accepted; results are the same.
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        delay_all_reduce_named_params: Any = None,
        param_to_hook_all_reduce: Any = None,
        mixed_precision: Any = None,
        device_mesh: Any = None,
        skip_all_reduce_unused_params: bool = False,
    ) -> None:
        super().__init__()
        if not any(p.requires_grad for p in module.parameters()):
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any "
                "parameter that requires a gradient."
            )
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work "
                "with single-device/multiple-device GPU modules or CPU modules, but got "
                f"device_ids {device_ids}, output_device {output_device}, and module "
                "parameters {device(type='cpu')}."
            )
        self.module = module
        self.device_ids = None
        self.output_device = None
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.process_group = process_group if process_group is not None else c10d._group(None)
        pg = self.process_group
        self._world = dist.get_world_size(pg)
        self._rank = dist.get_rank(pg)
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 2**20)
        # PyTorch: the first bucket is 1 MiB only with the default cap
        self._first_bucket_bytes = (
            _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        )

        seen: set[int] = set()
        self._params: list[Any] = []
        self._param_names: list[str] = []
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                self._params.append(p)
                self._param_names.append(name)
        self._verify_same_model()
        if init_sync:
            self._sync_states()
        self._buckets = self._assign_buckets()
        self._bucket_of = {}
        for b, bucket in enumerate(self._buckets):
            for pos, i in enumerate(bucket.indices):
                self._bucket_of[i] = (b, pos)
        self._armed = False
        self._ready: list[bool] = []
        self._next_bucket = 0
        self._locally_unused: set[int] = set()
        # Seconds of the last synchronised backward (benchmarks/bench_ddp.py): from the
        # first bucket's all-reduce start to the end of the waits, and of the waits alone
        # (the communication not hidden behind backward).
        self._reduce_span_s = 0.0
        self._reduce_wait_s = 0.0
        self._first_launch = 0.0
        me = weakref.ref(self)
        self._hook_handles = [
            p.register_post_accumulate_grad_hook(_make_hook(me, i))
            for i, p in enumerate(self._params)
        ]

    # --- construction -----------------------------------------------------------------

    def _verify_same_model(self) -> None:
        mine = [(tuple(p.shape), str(p.dtype)) for p in self._params]
        everyone: list[Any] = [None] * self._world
        dist.all_gather_object(everyone, mine, group=self.process_group)
        for r, theirs in enumerate(everyone):
            if len(theirs) != len(everyone[0]):
                raise RuntimeError(
                    f"DDP expects same model across all ranks, but Rank {r} has "
                    f"{len(theirs)} params, while rank 0 has inconsistent "
                    f"{len(everyone[0])} params."
                )
            for i, (a, b) in enumerate(zip(theirs, everyone[0])):
                if a != b:
                    raise RuntimeError(
                        f"DDP expects same model across all ranks, but Rank {r} has "
                        f"parameter {self._param_names[i]} of shape {a[0]} and dtype "
                        f"{a[1]}, while rank 0 has shape {b[0]} and dtype {b[1]}."
                    )

    def _sync_states(self) -> None:
        """Broadcasts rank 0's parameters and buffers (all of them, frozen included)."""
        src = dist.get_global_rank(self.process_group, 0)
        for t in [*self.module.parameters(), *self.module.buffers()]:
            dist.broadcast(t.detach(), src=src, group=self.process_group)

    def _assign_buckets(self) -> list[_Bucket]:
        """PyTorch's ``compute_bucket_assignment_by_size`` over the parameters in reverse
        order: one open bucket per dtype, closed once it reaches its cap (1 MiB for the
        first bucket, ``bucket_cap_mb`` after); ``rustgrad::distributed::assign_buckets``.
        """
        specs = _rustgrad._ddp_assign_buckets(
            [p.detach() for p in self._params], self._first_bucket_bytes, self.bucket_bytes_cap
        )
        return [_Bucket(spec) for spec in specs]

    # --- forward ------------------------------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Runs ``module`` and prepares the gradient reduction of the coming backward."""
        if self._armed:
            missing = [i for i, r in enumerate(self._ready_params) if not r]
            self._armed = False
            raise RuntimeError(_UNUSED_ERROR.format(rank=self._rank, indices=missing))
        from ... import is_grad_enabled

        if self.broadcast_buffers and self.require_forward_param_sync:
            src = dist.get_global_rank(self.process_group, 0)
            for b in self.module.buffers():
                dist.broadcast(b.detach(), src=src, group=self.process_group)
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output: Any) -> None:
        self._armed = True
        self._next_bucket = 0
        self._ready_params = [False] * len(self._params)
        for bucket in self._buckets:
            bucket.pending = len(bucket.indices)
            bucket.flat = None
            bucket.work = None
        self._locally_unused = set()
        if self.find_unused_parameters:
            used = _reachable_leaves(output)
            unused = [i for i, p in enumerate(self._params) if id(p) not in used]
            self._locally_unused = set(unused)
            for i in unused:
                self._mark_ready(i)

    # --- backward -----------------------------------------------------------------------

    def _mark_ready(self, i: int) -> None:
        if self._ready_params[i]:
            return
        self._ready_params[i] = True
        b, _ = self._bucket_of[i]
        self._buckets[b].pending -= 1
        # MPICH moves a non-blocking collective forward only inside MPI calls: test the
        # buckets in flight at each gradient, so their reduction proceeds during backward.
        for bucket in self._buckets[: self._next_bucket]:
            if bucket.work is not None and not bucket.work._done:
                bucket.work.is_completed()
        while (
            self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0
        ):
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _launch(self, bucket: _Bucket) -> None:
        # The engine copies the gradients (zeros for a missing or unused one) into one
        # new flat tensor, times 1/world size; its numpy array is the MPI buffer.
        grads = [
            None if i in self._locally_unused else self._params[i].grad for i in bucket.indices
        ]
        if bucket is self._buckets[0]:
            self._first_launch = time.perf_counter()
        flat = _rustgrad._ddp_flatten_bucket(bucket.spec, grads, self._world)
        bucket.flat = flat
        bucket.work = dist.all_reduce(flat, group=self.process_group, async_op=True)

    def _finalize(self) -> None:
        self._armed = False
        start = time.perf_counter()
        for bucket in self._buckets:
            bucket.work.wait()
        end = time.perf_counter()
        self._reduce_wait_s = end - start
        self._reduce_span_s = end - self._first_launch
        globally_used = None
        if self.find_unused_parameters:
            used = np.zeros(len(self._params), dtype=np.int64)
            for i in range(len(self._params)):
                used[i] = 0 if i in self._locally_unused else 1
            t = _from_numpy(used)
            dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
            globally_used = used
        for bucket in self._buckets:
            # The engine writes the averages into each existing .grad in place and
            # returns new tensors for the missing ones; a parameter unused on every rank
            # is passed as None and its result dropped (its .grad is left alone).
            used = [globally_used is None or bool(globally_used[i]) for i in bucket.indices]
            grads = [self._params[i].grad if u else None for i, u in zip(bucket.indices, used)]
            new = _rustgrad._ddp_unflatten_bucket(bucket.spec, bucket.flat, grads)
            for i, u, t in zip(bucket.indices, used, new):
                if u and t is not None:
                    self._params[i].grad = t
            bucket.flat = None
            bucket.work = None

    # --- PyTorch's helpers -------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward accumulates gradients locally without communication; the
        first backward after it reduces the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old


def _from_numpy(arr: np.ndarray) -> Any:
    from ... import from_numpy

    return from_numpy(arr)


def _make_hook(ddp_ref: Any, index: int) -> Any:
    def hook(param: Any) -> None:
        ddp = ddp_ref()
        if ddp is not None and ddp._armed:
            ddp._mark_ready(index)

    return hook


def _reachable_leaves(output: Any) -> set[int]:
    """ids of the leaf tensors the autograd graph behind ``output``'s tensors reaches."""
    from ... import Tensor

    roots: list[Any] = []

    def collect(obj: Any) -> None:
        if isinstance(obj, Tensor):
            if obj.grad_fn is not None:
                roots.append(obj.grad_fn)
        elif isinstance(obj, dict):
            for v in obj.values():
                collect(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                collect(v)

    collect(output)
    leaves: set[int] = set()
    seen: set[int] = set()
    alive: list[Any] = []  # keeps the visited nodes' objects (and so their ids) alive
    stack = roots
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        alive.append(fn)
        var = getattr(fn, "variable", None)
        if var is not None:
            leaves.add(id(var))
        for nxt, _ in fn.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return leaves
