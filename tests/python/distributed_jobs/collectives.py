"""One rank of the collectives job of tests/python/test_distributed.py.

Every collective, for float32/float64/int64 and for contiguous and non-contiguous
tensors, checked on every rank against numpy computed from all ranks' inputs (each
rank regenerates every rank's input from a seed). Prints ``OK <rank>`` at the end; any
failure raises, which aborts the whole MPI job.
"""

from __future__ import annotations

import datetime
import os

import numpy as np
import rustgrad as torch
import rustgrad.distributed as dist

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def data(rank: int, case: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Rank ``rank``'s input of case ``case`` (any rank can compute any rank's)."""
    g = np.random.default_rng(1000 * case + rank)
    if dtype == "int64":
        return g.integers(-5, 6, size=shape).astype(np.int64)
    return g.standard_normal(shape).astype(dtype)


def tensor(arr: np.ndarray, contiguous: bool) -> torch.Tensor:
    """A tensor holding ``arr``; a transposed (non-contiguous) one when asked."""
    if contiguous:
        return torch.tensor(arr)
    t = torch.tensor(np.ascontiguousarray(arr.T)).t()
    assert not t.is_contiguous()
    return t


def check(t: torch.Tensor, want: np.ndarray, what: str) -> None:
    got = t.numpy()
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if want.dtype.kind == "f":
        tol = 1e-5 if want.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def main() -> None:
    assert not dist.is_initialized()
    try:
        dist.all_reduce(torch.ones(1))
    except ValueError as e:
        assert "Default process group has not been initialized" in str(e)
    else:
        raise AssertionError("a collective before init_process_group must raise")
    dist.init_process_group(backend=os.environ.get("BACKEND", "gloo"))
    assert dist.is_initialized() and dist.is_available()
    rank, world = dist.get_rank(), dist.get_world_size()
    assert rank == int(os.environ.get("RANK", rank))
    assert world == int(os.environ.get("WORLD_SIZE", world))
    assert dist.get_backend() == os.environ.get("BACKEND", "gloo")
    ranks = range(world)
    case = 0
    shape = (4, 3)
    for dtype in DTYPES:
        for contiguous in (True, False):
            tag = f"{dtype} contiguous={contiguous}"

            def everyone(c: int, dtype: str = dtype) -> list[np.ndarray]:
                return [data(r, c, shape, dtype) for r in ranks]

            ops = {
                dist.ReduceOp.SUM: lambda a: np.sum(a, axis=0, dtype=a[0].dtype),
                dist.ReduceOp.PRODUCT: lambda a: np.prod(a, axis=0, dtype=a[0].dtype),
                dist.ReduceOp.MIN: lambda a: np.min(a, axis=0),
                dist.ReduceOp.MAX: lambda a: np.max(a, axis=0),
            }
            if dtype != "int64":
                ops[dist.ReduceOp.AVG] = lambda a: (np.sum(a, axis=0) / world).astype(a[0].dtype)
            for op, ref in ops.items():
                # all_reduce, blocking and async
                case += 1
                ins = everyone(case)
                t = tensor(ins[rank], contiguous)
                assert dist.all_reduce(t, op=op) is None
                check(t, ref(np.stack(ins)), f"all_reduce {op} {tag}")
                case += 1
                ins = everyone(case)
                t = tensor(ins[rank], contiguous)
                work = dist.all_reduce(t, op=op, async_op=True)
                assert work.wait() is True and work.is_completed()
                check(t, ref(np.stack(ins)), f"all_reduce async {op} {tag}")
                # reduce to the last rank
                case += 1
                ins = everyone(case)
                t = tensor(ins[rank], contiguous)
                dist.reduce(t, dst=world - 1, op=op)
                if rank == world - 1:
                    check(t, ref(np.stack(ins)), f"reduce {op} {tag}")
                else:
                    check(t, ins[rank], f"reduce leaves non-root {tag}")
                # reduce_scatter / reduce_scatter_tensor
                case += 1
                ins = [
                    np.stack([data(r, case + 100 * k, shape, dtype) for k in ranks]) for r in ranks
                ]
                out = tensor(np.zeros(shape, dtype), contiguous)
                dist.reduce_scatter(out, [tensor(x, contiguous) for x in ins[rank]], op=op)
                check(out, ref(np.stack([x[rank] for x in ins])), f"reduce_scatter {op} {tag}")
                out = torch.zeros(shape, dtype=DTYPES[dtype])
                dist.reduce_scatter_tensor(out, torch.tensor(ins[rank].reshape(-1, 3)), op=op)
                check(out, ref(np.stack([x[rank] for x in ins])), f"reduce_scatter_tensor {tag}")
            # broadcast from every root
            for src in ranks:
                case += 1
                ins = everyone(case)
                t = tensor(ins[rank], contiguous)
                work = dist.broadcast(t, src=src, async_op=True)
                work.wait()
                check(t, ins[src], f"broadcast src={src} {tag}")
            # all_gather / all_gather_into_tensor
            case += 1
            ins = everyone(case)
            outs = [tensor(np.zeros(shape, dtype), contiguous) for _ in ranks]
            dist.all_gather(outs, tensor(ins[rank], contiguous))
            for r in ranks:
                check(outs[r], ins[r], f"all_gather {tag}")
            out = torch.zeros((world * shape[0], shape[1]), dtype=DTYPES[dtype])
            dist.all_gather_into_tensor(out, tensor(ins[rank], contiguous))
            check(out, np.concatenate(ins), f"all_gather_into_tensor {tag}")
            out = torch.zeros((world, *shape), dtype=DTYPES[dtype])
            dist.all_gather_into_tensor(out, tensor(ins[rank], contiguous))
            check(out, np.stack(ins), f"all_gather_into_tensor stacked {tag}")
            # gather to rank 0, scatter from the last rank
            case += 1
            ins = everyone(case)
            outs = (
                [tensor(np.zeros(shape, dtype), contiguous) for _ in ranks] if rank == 0 else None
            )
            dist.gather(tensor(ins[rank], contiguous), outs, dst=0)
            if rank == 0:
                for r in ranks:
                    check(outs[r], ins[r], f"gather {tag}")
            case += 1
            ins = everyone(case)
            out = tensor(np.zeros(shape, dtype), contiguous)
            src = world - 1
            pieces = [tensor(x, contiguous) for x in ins] if rank == src else None
            dist.scatter(out, pieces, src=src)
            check(out, ins[rank], f"scatter {tag}")
            # ring of point-to-point messages: blocking send/recv and isend/irecv
            case += 1
            ins = everyone(case)
            right, left = (rank + 1) % world, (rank - 1) % world
            got = tensor(np.zeros(shape, dtype), contiguous)
            if rank % 2 == 0:
                dist.send(tensor(ins[rank], contiguous), dst=right)
                src_rank = dist.recv(got, src=left)
            else:
                src_rank = dist.recv(got, src=left)
                dist.send(tensor(ins[rank], contiguous), dst=right)
            assert src_rank == left
            check(got, ins[left], f"send/recv {tag}")
            got = tensor(np.zeros(shape, dtype), contiguous)
            works = [dist.irecv(got), dist.isend(tensor(ins[rank], contiguous), dst=right)]
            for w in works:
                w.wait()
            assert works[0].source_rank() == left
            check(got, ins[left], f"isend/irecv {tag}")

    # objects
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "sq": [rank] * rank})
    assert objs == [{"rank": r, "sq": [r] * r} for r in ranks], objs
    lst = ["a", rank, None] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(lst, src=1)
    assert lst == ["a", 1, None], lst
    gathered = [None] * world if rank == 0 else None
    dist.gather_object(("r", rank), gathered, dst=0)
    if rank == 0:
        assert gathered == [("r", r) for r in ranks], gathered
    out = [None]
    dist.scatter_object_list(out, [{"to": r} for r in ranks] if rank == 0 else None, src=0)
    assert out == [{"to": rank}], out
    # all_to_all_single: block j of rank i's input goes to block i of rank j's output
    blocks = {(i, j): data(i, 5000 + j, (2, 3), "float64") for i in ranks for j in ranks}
    inp = torch.tensor(np.concatenate([blocks[rank, j] for j in ranks]))
    out_t = torch.zeros(2 * world, 3, dtype=torch.float64)
    dist.all_to_all_single(out_t, inp)
    check(out_t, np.concatenate([blocks[i, rank] for i in ranks]), "all_to_all_single")
    outs = [torch.zeros(2, 3, dtype=torch.float64) for _ in ranks]
    dist.all_to_all(outs, [torch.tensor(blocks[rank, j]) for j in ranks])
    for i in ranks:
        check(outs[i], blocks[i, rank], "all_to_all")
    # batch_isend_irecv around the ring
    right, left = (rank + 1) % world, (rank - 1) % world
    got = torch.zeros(3, dtype=torch.int64)
    ops = [
        dist.P2POp(dist.isend, torch.tensor([rank, 7, -rank]), right),
        dist.P2POp(dist.irecv, got, left),
    ]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert got.tolist() == [left, 7, -left]
    dist.monitored_barrier(timeout=30)
    assert dist.is_torchelastic_launched() == ("TORCHELASTIC_RUN_ID" in os.environ)
    assert dist.get_node_local_rank(fallback_rank=rank) == int(os.environ.get("LOCAL_RANK", rank))
    # an integer AVG is floor division of the sum; bool SUM is logical or
    t = torch.tensor([rank * 3 + 1, -rank - 1])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    s = np.array([sum(r * 3 + 1 for r in ranks), sum(-r - 1 for r in ranks)])
    check(t, s // world, "int64 avg")
    b = torch.tensor([rank == 0, False])
    dist.all_reduce(b)
    assert b.tolist() == [True, False]
    # groups: the even ranks
    evens = list(range(0, world, 2))
    g = dist.new_group(evens)
    if rank in evens:
        assert dist.get_world_size(g) == len(evens)
        assert dist.get_rank(g) == evens.index(rank)
        assert dist.get_process_group_ranks(g) == evens
        t = torch.tensor([float(rank)], dtype=torch.float64)
        dist.all_reduce(t, group=g)
        check(t, np.array([float(sum(evens))]), "group all_reduce")
        t = torch.tensor([float(rank)], dtype=torch.float64)
        dist.broadcast(t, src=evens[-1], group=g)
        check(t, np.array([float(evens[-1])]), "group broadcast with a global src")
    else:
        assert g == dist.GroupMember.NON_GROUP_MEMBER
        assert dist.get_rank(g) == -1 and dist.get_world_size(g) == -1
        assert dist.all_reduce(torch.ones(1), group=g) is None
    # bytes handed to all_reduce are counted by the group
    pg = dist.GroupMember.WORLD
    before = pg.comm_bytes.get("all_reduce", 0)
    dist.all_reduce(torch.ones(10, dtype=torch.float64))
    assert pg.comm_bytes["all_reduce"] - before == 80
    # async barrier, and a work wait with a timeout
    work = dist.barrier(async_op=True)
    assert work.wait(timeout=datetime.timedelta(seconds=30))
    # bad input: a wrong-length list, a wrong root
    try:
        dist.all_gather([torch.zeros(2)], torch.zeros(2))
    except RuntimeError as e:
        assert "invalid output tensor list" in str(e) or world == 1, e
    else:
        assert world == 1
    try:
        dist.broadcast(torch.zeros(2), src=world)
    except RuntimeError as e:
        assert "invalid root rank" in str(e), e
    else:
        raise AssertionError("broadcast from a rank outside the group must raise")
    dist.barrier()
    dist.destroy_process_group()
    assert not dist.is_initialized()
    print(f"OK {rank}", flush=True)


if __name__ == "__main__":
    main()
