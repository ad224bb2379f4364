"""rustgrad.utils.data: datasets, samplers, default_collate and the DataLoader.

Seeded random orders are compared with PyTorch's (tests/vectors/data_samplers.json,
written by tests/vectors/generate_data.py); collation results with numpy.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
from rustgrad.utils.data import (
    BatchSampler,
    ChainDataset,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    default_convert,
    get_worker_info,
    random_split,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors" / "data_samplers.json"
CASES = json.loads(VECTORS.read_text())["cases"]


def run_case(case: dict[str, Any]) -> tuple[list[Any], list[int]]:
    """The case's epochs and the ``after`` draw, as generate_data.py records them."""
    if "seed" in case:
        generator = torch.Generator().manual_seed(case["seed"])
    else:
        torch.manual_seed(case["global_seed"])
        generator = None
    kind, args = case["kind"], case["args"]
    epochs: list[Any] = []
    if kind == "random_split":
        parts = random_split(range(args["n"]), args["lengths"], generator=generator)
        epochs.append([list(part.indices) for part in parts])
    else:
        if kind == "random_sampler":
            source: Any = RandomSampler(
                range(args["n"]),
                replacement=args.get("replacement", False),
                num_samples=args.get("num_samples"),
                generator=generator,
            )
        elif kind == "subset_random_sampler":
            source = SubsetRandomSampler(args["indices"], generator=generator)
        elif kind == "weighted_random_sampler":
            source = WeightedRandomSampler(
                args["weights"],
                args["num_samples"],
                replacement=args.get("replacement", True),
                generator=generator,
            )
        elif kind == "batch_sampler":
            source = BatchSampler(
                RandomSampler(range(args["n"]), generator=generator),
                args["batch_size"],
                args["drop_last"],
            )
        else:
            assert kind == "dataloader"
            source = DataLoader(
                TensorDataset(torch.arange(args["n"])),
                batch_size=args["batch_size"],
                shuffle=args.get("shuffle", True),
                drop_last=args.get("drop_last", False),
                generator=generator,
            )
        for _ in range(case.get("epochs", 1)):
            if kind == "dataloader":
                epochs.append([batch[0].tolist() for batch in source])
            else:
                epochs.append(list(source))
    after = torch.randperm(8, generator=generator).tolist()
    return epochs, after


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_random_order_matches_pytorch(case: dict[str, Any]) -> None:
    epochs, after = run_case(case)
    assert epochs == case["expected"]
    assert after == case["after"]  # the same numbers of draws were consumed


def test_vectors_cover_every_random_kind() -> None:
    kinds = {case["kind"] for case in CASES}
    assert kinds == {
        "random_sampler",
        "subset_random_sampler",
        "weighted_random_sampler",
        "random_split",
        "batch_sampler",
        "dataloader",
    }
    assert {"seed", "global_seed"} <= {key for case in CASES for key in case}


# ---------------------------------------------------------------------------------------
# Datasets


class Squares(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(index)
        return index * index


class Stream(IterableDataset):
    def __init__(self, start: int, end: int, length: int | None = None) -> None:
        self.start, self.end, self.length = start, end, length

    def __iter__(self):
        return iter(range(self.start, self.end))

    def __len__(self) -> int:
        return self.length if self.length is not None else self.end - self.start


def test_dataset_base() -> None:
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement"):
        Dataset()[0]
    both = Squares(2) + Squares(3)
    assert isinstance(both, ConcatDataset)
    assert [both[i] for i in range(len(both))] == [0, 1, 0, 1, 4]
    chained = Stream(0, 2) + Stream(5, 7)
    assert isinstance(chained, ChainDataset)
    assert list(chained) == [0, 1, 5, 6] and len(chained) == 4


def test_tensor_dataset() -> None:
    x = torch.arange(12).reshape(4, 3)
    y = torch.tensor([1.0, 2.0, 3.0, 4.0])
    ds = TensorDataset(x, y)
    assert len(ds) == 4
    row, label = ds[2]
    assert row.tolist() == [6, 7, 8] and label.item() == 3.0
    rows, labels = ds[1:3]
    assert rows.tolist() == [[3, 4, 5], [6, 7, 8]] and labels.tolist() == [2.0, 3.0]
    assert ds.tensors[0] is x
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, torch.zeros(5))


def test_concat_dataset() -> None:
    ds = ConcatDataset([Squares(2), [10, 11, 12], Squares(1)])
    assert len(ds) == 6 and ds.cumulative_sizes == [2, 5, 6]
    assert [ds[i] for i in range(6)] == [0, 1, 10, 11, 12, 0]
    assert ds[-1] == 0 and ds[-4] == 10
    with pytest.raises(ValueError, match="absolute value of index should not exceed"):
        ds[-7]
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        ConcatDataset([Squares(1), Stream(0, 1)])


def test_chain_dataset_rejects_map_style() -> None:
    chained = ChainDataset([Stream(0, 1), Squares(2)])
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        list(chained)
    with pytest.raises(AssertionError, match="ChainDataset only supports IterableDataset"):
        len(chained)


def test_stack_dataset() -> None:
    assert StackDataset([1, 2], ["a", "b"])[1] == (2, "b")
    assert StackDataset(x=[1, 2], y=["a", "b"])[0] == {"x": 1, "y": "a"}
    assert len(StackDataset([1, 2], [3, 4])) == 2
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        StackDataset([1, 2], [3])
    with pytest.raises(ValueError, match="At least one dataset should be passed"):
        StackDataset()
    with pytest.raises(ValueError, match="but both types are given"):
        StackDataset([1], x=[2])


def test_subset() -> None:
    sub = Subset(Squares(6), [5, 1, 3])
    assert len(sub) == 3
    assert [sub[i] for i in range(3)] == [25, 1, 9]
    assert sub.__getitems__([2, 0]) == [9, 25]

    class Batched(Squares):
        def __getitems__(self, indices: list[int]) -> list[str]:
            return [f"batch:{i}" for i in indices]

    assert Subset(Batched(6), [4, 2]).__getitems__([1, 0]) == ["batch:2", "batch:4"]
    over_list = Subset(["a", "b", "c"], [2, 0])
    assert over_list[0] == "c"

    class Doubled(Subset):
        def __getitem__(self, idx: int) -> int:
            return 2 * super().__getitem__(idx)

    with pytest.raises(NotImplementedError, match="Doubled overrides __getitem__ but not"):
        Doubled(Squares(3), [0])

    class DoubledBatches(Doubled):
        def __getitems__(self, indices: list[int]) -> list[int]:
            return [self[i] for i in indices]

    loader = DataLoader(DoubledBatches(Squares(4), [3, 1]), batch_size=2)
    assert [b.tolist() for b in loader] == [[18, 2]]


def test_random_split_partitions() -> None:
    g = torch.Generator().manual_seed(3)
    parts = random_split(Squares(10), [0.5, 0.2, 0.3], generator=g)
    assert [len(p) for p in parts] == [5, 2, 3]
    indices = sorted(i for p in parts for i in p.indices)
    assert indices == list(range(10))
    assert all(isinstance(p, Subset) for p in parts)
    assert parts[0][0] == parts[0].indices[0] ** 2


def test_random_split_errors_and_warnings() -> None:
    with pytest.raises(ValueError, match="Sum of input lengths does not equal the length"):
        random_split(range(10), [3, 5])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [1.25, -0.25])
    with pytest.warns(UserWarning, match="Length of split at index") as record:
        parts = random_split(range(2), [0.9, 0.05, 0.05])
    assert [str(w.message).split(".")[0] for w in record] == [
        "Length of split at index 1 is 0",
        "Length of split at index 2 is 0",
    ]
    # floor(1.8) = 1, floor(0.1) = 0 twice, and the remainder 1 goes to the first split
    assert [len(p) for p in parts] == [2, 0, 0]


# ---------------------------------------------------------------------------------------
# Samplers


def test_sequential_sampler() -> None:
    sampler = SequentialSampler(Squares(4))
    assert list(sampler) == [0, 1, 2, 3] and len(sampler) == 4
    with pytest.raises(NotImplementedError):
        iter(Sampler())


def test_random_sampler_properties() -> None:
    g = torch.Generator().manual_seed(1)
    sampler = RandomSampler(range(20), generator=g)
    assert len(sampler) == 20 and sorted(sampler) == list(range(20))
    with_replacement = RandomSampler(range(3), replacement=True, num_samples=300, generator=g)
    drawn = list(with_replacement)
    assert len(with_replacement) == 300 and len(drawn) == 300
    counts = np.bincount(drawn, minlength=3)
    assert counts.min() > 60  # each of three values ~100 times
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        RandomSampler([])


def test_unseeded_shuffle_follows_manual_seed() -> None:
    torch.manual_seed(123)
    first = list(RandomSampler(range(30)))
    torch.manual_seed(123)
    assert list(RandomSampler(range(30))) == first
    assert list(RandomSampler(range(30))) != first  # the global stream moved on


def test_subset_random_sampler() -> None:
    g = torch.Generator().manual_seed(2)
    sampler = SubsetRandomSampler([10, 20, 30, 40], generator=g)
    assert len(sampler) == 4 and sorted(sampler) == [10, 20, 30, 40]


def test_weighted_random_sampler() -> None:
    g = torch.Generator().manual_seed(4)
    sampler = WeightedRandomSampler([0.0, 3.0, 1.0], 4000, generator=g)
    drawn = np.array(list(sampler))
    assert len(sampler) == 4000 and set(drawn.tolist()) <= {1, 2}
    assert abs((drawn == 1).mean() - 0.75) < 0.03
    assert sampler.weights.dtype == torch.float64
    without = WeightedRandomSampler([1.0, 1.0, 1.0, 5.0], 4, replacement=False, generator=g)
    assert sorted(without) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean value"):
        WeightedRandomSampler([1.0], 1, replacement=None)
    with pytest.raises(ValueError, match=r"weights should be a 1d sequence .* shape \(2, 1\)"):
        WeightedRandomSampler([[1.0], [2.0]], 1)


def test_batch_sampler() -> None:
    sampler = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=False)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]] and len(sampler) == 4
    sampler = BatchSampler(SequentialSampler(range(10)), batch_size=3, drop_last=True)
    assert list(sampler) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]] and len(sampler) == 3
    assert list(BatchSampler(range(4), 2, True)) == [[0, 1], [2, 3]]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
            BatchSampler(range(3), bad, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value"):
        BatchSampler(range(3), 2, 0)


# ---------------------------------------------------------------------------------------
# default_collate / default_convert


def test_collate_tensors_stack() -> None:
    batch = [torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]]), torch.tensor([[5.0, 6.0]])]
    out = default_collate(batch)
    assert isinstance(out, torch.Tensor) and out.shape == (3, 1, 2)
    np.testing.assert_array_equal(out.numpy(), np.stack([b.numpy() for b in batch]))
    scalars = default_collate([torch.tensor(1), torch.tensor(2)])
    assert scalars.shape == (2,) and scalars.dtype == torch.int64


def test_collate_numbers() -> None:
    floats = default_collate([1.5, 2.0])
    assert floats.dtype == torch.float64 and floats.tolist() == [1.5, 2.0]
    ints = default_collate([1, 2, 3])
    assert ints.dtype == torch.int64 and ints.tolist() == [1, 2, 3]
    bools = default_collate([True, False])
    assert bools.dtype == torch.bool and bools.tolist() == [True, False]


def test_collate_numpy() -> None:
    arrays = [np.array([1.0, 2.0], dtype=np.float32), np.array([3.0, 4.0], dtype=np.float32)]
    out = default_collate(arrays)
    assert out.dtype == torch.float32
    np.testing.assert_array_equal(out.numpy(), np.stack(arrays))
    out64 = default_collate([np.arange(3), np.arange(3) * 2])
    assert out64.dtype == torch.int64 and out64.tolist() == [[0, 1, 2], [0, 2, 4]]
    scalars = default_collate([np.float64(0.5), np.float64(1.5)])
    assert scalars.dtype == torch.float64 and scalars.tolist() == [0.5, 1.5]
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors"):
        default_collate([np.array(["a"]), np.array(["b"])])


@pytest.mark.parametrize("kind", [np.int8, np.int16, np.int32, np.float16, np.float32, np.bool_])
def test_collate_numpy_scalars_keep_their_dtype(kind: type) -> None:
    out = default_collate([kind(1), kind(0), kind(1)])
    assert out.numpy().dtype == np.dtype(kind)
    np.testing.assert_array_equal(out.numpy(), np.array([1, 0, 1], dtype=kind))


def test_collate_strings_and_containers() -> None:
    assert default_collate(["a", "b"]) == ["a", "b"]
    assert default_collate([b"x", b"y"]) == [b"x", b"y"]
    out = default_collate([{"x": 1.0, "y": "a"}, {"x": 2.0, "y": "b"}])
    assert set(out) == {"x", "y"} and out["y"] == ["a", "b"]
    assert out["x"].dtype == torch.float64 and out["x"].tolist() == [1.0, 2.0]
    point = collections.namedtuple("point", ["x", "y"])
    out = default_collate([point(0, 1.0), point(2, 3.0)])
    assert type(out) is point and out.x.tolist() == [0, 2] and out.y.tolist() == [1.0, 3.0]
    out = default_collate([(0, "a"), (1, "b")])
    assert isinstance(out, list) and out[0].tolist() == [0, 1] and out[1] == ("a", "b")
    out = default_collate([[1, 2], [3, 4]])
    assert isinstance(out, list) and [t.tolist() for t in out] == [[1, 3], [2, 4]]
    nested = default_collate([{"a": (torch.ones(2), 1)}, {"a": (torch.zeros(2), 2)}])
    assert nested["a"][0].tolist() == [[1.0, 1.0], [0.0, 0.0]] and nested["a"][1].tolist() == [1, 2]


def test_collate_errors() -> None:
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(
        TypeError,
        match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
        "lists; found <class 'object'>",
    ):
        default_collate([object(), object()])


def test_default_convert() -> None:
    assert default_convert(3) == 3 and default_convert("s") == "s"
    out = default_convert(np.array([1, 2]))
    assert isinstance(out, torch.Tensor) and out.tolist() == [1, 2]
    out = default_convert((np.array([0, 1]), 2))
    assert isinstance(out, list) and out[0].tolist() == [0, 1] and out[1] == 2
    point = collections.namedtuple("point", ["x", "y"])
    out = default_convert(point(np.float64(1.0), 0))
    assert type(out) is point and isinstance(out.x, torch.Tensor) and out.y == 0
    out = default_convert({"k": [np.array([1.0])]})
    assert out["k"][0].tolist() == [1.0]
    strings = np.array(["a", "b"])
    assert default_convert(strings) is strings
    t = torch.ones(2)
    assert default_convert(t) is t


# ---------------------------------------------------------------------------------------
# DataLoader


def labelled(n: int = 10) -> TensorDataset:
    return TensorDataset(torch.arange(n), torch.arange(n).double() / 10)


def test_loader_batches_in_order() -> None:
    loader = DataLoader(labelled(), batch_size=4)
    batches = list(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert [b[0].tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert batches[0][1].dtype == torch.float64
    assert list(DataLoader(labelled(), batch_size=4)) != []  # a new pass each time
    drop = DataLoader(labelled(), batch_size=4, drop_last=True)
    assert len(drop) == 2 and [b[0].tolist() for b in drop] == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_loader_default_batch_size_is_one() -> None:
    batches = list(DataLoader(Squares(3)))
    assert [b.tolist() for b in batches] == [[0], [1], [4]]


def test_loader_without_batching_converts() -> None:
    class Arrays(Dataset):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> Any:
            return {"x": np.full(2, i, dtype=np.float32), "i": i}

    out = list(DataLoader(Arrays(), batch_size=None))
    assert out[1]["x"].tolist() == [1.0, 1.0] and out[1]["i"] == 1
    assert out[0]["x"].shape == (2,)  # no batch dimension


def test_loader_shuffle_reshuffles_each_epoch() -> None:
    loader = DataLoader(Squares(20), batch_size=20, shuffle=True)
    first, second = (next(iter(loader)).tolist() for _ in range(2))
    assert sorted(first) == sorted(second) == [i * i for i in range(20)]
    assert first != second


def test_loader_custom_sampler_and_batch_sampler() -> None:
    loader = DataLoader(Squares(5), batch_size=2, sampler=[4, 3, 2, 1, 0])
    assert [b.tolist() for b in loader] == [[16, 9], [4, 1], [0]]
    loader = DataLoader(Squares(5), batch_sampler=[[0, 4], [2]])
    assert loader.batch_size is None and [b.tolist() for b in loader] == [[0, 16], [4]]
    assert len(loader) == 2


def test_loader_custom_collate_and_getitems() -> None:
    loader = DataLoader(Squares(5), batch_size=2, collate_fn=lambda batch: sum(batch))
    assert list(loader) == [1, 13, 16]

    class Batched(Squares):
        def __getitems__(self, indices: list[int]) -> list[int]:
            return [-i for i in indices]

    assert [b.tolist() for b in DataLoader(Batched(3), batch_size=2)] == [[0, -1], [-2]]


def test_loader_iterable_dataset() -> None:
    loader = DataLoader(Stream(0, 7), batch_size=3)
    assert len(loader) == 3 and [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5], [6]]
    loader = DataLoader(Stream(0, 7), batch_size=3, drop_last=True)
    assert len(loader) == 2 and [b.tolist() for b in loader] == [[0, 1, 2], [3, 4, 5]]
    assert list(DataLoader(Stream(3, 5), batch_size=None)) == [3, 4]
    lying = DataLoader(Stream(0, 3, length=2), batch_size=None)
    assert len(lying) == 2
    with pytest.warns(UserWarning, match="Length of IterableDataset .* was reported to be 2"):
        assert list(lying) == [0, 1, 2]


def test_loader_pin_memory_is_accepted() -> None:
    plain = [b[0].tolist() for b in DataLoader(labelled(), batch_size=3)]
    pinned = [b[0].tolist() for b in DataLoader(labelled(), batch_size=3, pin_memory=True)]
    assert pinned == plain


def test_loader_attributes_frozen() -> None:
    loader = DataLoader(labelled(), batch_size=2)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader"):
        loader.batch_size = 3
    loader.collate_fn = default_collate  # not frozen
    assert get_worker_info() is None


def test_loader_errors() -> None:
    ds = labelled()
    cases = [
        (dict(batch_size=0), ValueError, "batch_size should be a positive integer value"),
        (dict(batch_size=-2), ValueError, "batch_size should be a positive integer value"),
        (dict(shuffle=True, sampler=[0, 1]), ValueError, "sampler option is mutually exclusive"),
        (
            dict(batch_sampler=[[0]], batch_size=2),
            ValueError,
            "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
            "and drop_last",
        ),
        (dict(batch_sampler=[[0]], shuffle=True), ValueError, "batch_sampler option is mutually"),
        (dict(batch_sampler=[[0]], sampler=[0]), ValueError, "batch_sampler option is mutually"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "batch_sampler option is mutually"),
        (dict(batch_size=None, drop_last=True), ValueError, "mutually exclusive with drop_last"),
        (dict(drop_last=1), ValueError, "drop_last should be a boolean value"),
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            DataLoader(ds, **kwargs)
    for kwargs, message in [
        (dict(shuffle=True), "expected unspecified shuffle option, but got shuffle=True"),
        (dict(sampler=[0]), "expected unspecified sampler option"),
        (dict(batch_sampler=[[0]]), "expected unspecified batch_sampler option"),
    ]:
        with pytest.raises(ValueError, match="DataLoader with IterableDataset: " + message):
            DataLoader(Stream(0, 3), **kwargs)


def test_loader_seeded_generator_is_reproducible() -> None:
    def epoch(seed: int) -> list[list[int]]:
        g = torch.Generator().manual_seed(seed)
        return [
            b[0].tolist() for b in DataLoader(labelled(30), batch_size=7, shuffle=True, generator=g)
        ]

    assert epoch(5) == epoch(5)
    assert epoch(5) != epoch(6)


def test_default_collate_keeps_the_tuples_zip_makes_as_pytorch() -> None:
    # PyTorch 2.15 collates each field of a sequence sample from the tuple zip makes,
    # so strings nested in a tuple (or list, or namedtuple) come back as tuples; at the
    # top level and under a mapping they stay a list. Expected reprs from PyTorch 2.15.
    point = collections.namedtuple("point", "a b")
    assert default_collate([(1, ("a", "b")), (2, ("c", "d"))])[1] == [("a", "c"), ("b", "d")]
    assert default_collate([("s", 1), ("t", 2)])[0] == ("s", "t")
    assert default_collate([["s", 1], ["t", 2]])[0] == ("s", "t")
    got = default_collate([point("s", (1, "x")), point("t", (2, "y"))])
    assert type(got) is point and got.a == ("s", "t")
    assert got.b[0].tolist() == [1, 2] and got.b[1] == ("x", "y")
    assert default_collate([{"k": "s"}, {"k": "t"}]) == {"k": ["s", "t"]}
    assert default_collate(["s", "t"]) == ["s", "t"]
    nested = default_collate([(1, (2, 3)), (4, (5, 6))])
    assert isinstance(nested, list) and isinstance(nested[1], list)
    assert [t.tolist() for t in nested[1]] == [[2, 5], [3, 6]]
