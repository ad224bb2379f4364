"""Packed sequences and padding (PyTorch's ``torch/nn/utils/rnn.py``).

A :class:`PackedSequence` holds the time-major rows of a batch of sequences sorted by
decreasing length: ``data[sum(batch_sizes[:t]) + b]`` is step ``t`` of sequence ``b``,
and ``batch_sizes[t]`` sequences are still running at step ``t``. The recurrent layers
run on it directly (Note [Recurrent layers]). Packing and padding are index selects,
so gradients flow through them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from ..._rustgrad import Tensor
from .. import functional as F

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pack_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpack_sequence",
    "unpad_sequence",
]


def _long(values: Iterable[int]) -> Tensor:
    from ... import int64, tensor

    return tensor(list(values), dtype=int64)


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a permutation of ``0..n-1`` (None for None)."""
    if permutation is None:
        return None
    perm = [int(i) for i in permutation.tolist()]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return _long(inverse)


class _PackedSequenceBase(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(_PackedSequenceBase):
    """The rows of a batch of variable-length sequences, time-major, with the number of
    sequences still running at each step (``batch_sizes``) and the permutation that
    sorted the batch by length (``sorted_indices``; ``unsorted_indices`` undoes it).
    Made by :func:`pack_padded_sequence` or :func:`pack_sequence`, never by hand.
    """

    def __new__(
        cls,
        data: Tensor,
        batch_sizes: Tensor | None = None,
        sorted_indices: Tensor | None = None,
        unsorted_indices: Tensor | None = None,
    ) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:
            # PackedSequence(data_and_batch_sizes_tuple) as PyTorch accepts.
            data, batch_sizes = data  # type: ignore[misc]
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data.to(...)``; the index tensors follow a device change only."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def _with(self, data: Tensor) -> PackedSequence:
        return type(self)(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """This sequence (rustgrad tensors live on the CPU)."""
        return self

    def double(self) -> PackedSequence:
        """``data`` as float64."""
        return self._with(self.data.double())

    def float(self) -> PackedSequence:
        """``data`` as float32."""
        return self._with(self.data.float())

    def half(self) -> PackedSequence:
        """``data`` as float16."""
        return self._with(self.data.half())

    def long(self) -> PackedSequence:
        """``data`` as int64."""
        return self._with(self.data.long())

    def int(self) -> PackedSequence:
        """``data`` as int32."""
        return self._with(self.data.int())

    @property
    def is_cuda(self) -> bool:
        """False: rustgrad tensors live on the CPU."""
        return False

    def is_pinned(self) -> bool:
        """False (no pinned memory on the CPU)."""
        return False


def _lengths_list(lengths: Any) -> list[int]:
    if isinstance(lengths, Tensor):
        return [int(v) for v in lengths.reshape(-1).tolist()]
    return [int(v) for v in lengths]


def _batch_sizes(lengths: list[int]) -> list[int]:
    """Sequences running at each step, for lengths sorted in decreasing order."""
    if not lengths:
        return []
    return [sum(1 for n in lengths if n > t) for t in range(lengths[0])]


def pack_padded_sequence(
    input: Tensor,
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
    enforce_sorted: bool = True,
) -> PackedSequence:
    """Packs a padded batch ``(T, B, *)`` (``(B, T, *)`` with ``batch_first``) of
    sequences of the given lengths. With ``enforce_sorted`` the lengths must decrease;
    otherwise the batch is sorted here and ``sorted_indices`` records how.
    """
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    sorted_indices = None
    if not enforce_sorted:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = _long(order)
        lens = [lens[i] for i in order]
        if len(lens) == input.size(batch_dim):
            input = input.index_select(batch_dim, sorted_indices)
    if batch_first:
        input = input.transpose(0, 1)
    steps, batch = input.size(0), input.size(1)
    if len(lens) != batch:
        raise RuntimeError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {len(lens)} "
            f"(batch_size={batch})"
        )
    if any(b > a for a, b in zip(lens, lens[1:], strict=False)):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
            "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
            "pack_sequence to sidestep this requirement if you do not need ONNX "
            "exportability."
        )
    if batch and lens[-1] <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if batch and lens[0] > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {lens[0]} exceeds the padded sequence "
            f"length {steps}"
        )
    sizes = _batch_sizes(lens)
    rows = [t * batch + b for t, bs in enumerate(sizes) for b in range(bs)]
    flat = input.reshape(steps * batch, *input.shape[2:])
    data = flat.index_select(0, _long(rows))
    return PackedSequence(data, _long(sizes), sorted_indices, None)


def pad_packed_sequence(
    sequence: PackedSequence,
    batch_first: bool = False,
    padding_value: float = 0.0,
    total_length: int | None = None,
) -> tuple[Tensor, Tensor]:
    """Undoes :func:`pack_padded_sequence`: the padded batch ``(T, B, *)`` (or
    ``(B, T, *)``) in the original batch order and the lengths (int64).
    """
    from ... import cat

    sizes = [int(v) for v in sequence.batch_sizes.tolist()]
    max_len = len(sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence "
                f"in input, but got total_length={total_length} and max sequence length "
                f"being {max_len}"
            )
        max_len = total_length
    data = sequence.data
    batch = sizes[0] if sizes else 0
    n = data.size(0)
    pad_row = data.new_full((1, *data.shape[1:]), padding_value)
    extended = cat([data, pad_row], 0)
    index = [n] * (max_len * batch)
    row = 0
    for t, bs in enumerate(sizes):
        for b in range(bs):
            index[t * batch + b] = row
            row += 1
    padded = extended.index_select(0, _long(index)).reshape(max_len, batch, *data.shape[1:])
    lengths = [sum(1 for bs in sizes if bs > b) for b in range(batch)]
    lengths_t = _long(lengths)
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths_t = lengths_t.index_select(0, sequence.unsorted_indices)
    if batch_first:
        padded = padded.transpose(0, 1)
    return padded, lengths_t


def pad_sequence(
    sequences: Tensor | Sequence[Tensor],
    batch_first: bool = False,
    padding_value: float = 0.0,
    padding_side: str = "right",
) -> Tensor:
    """Pads tensors of shape ``(L_i, *)`` to the longest and stacks them: ``(L, B, *)``,
    or ``(B, L, *)`` with ``batch_first`` (differentiable).

    Example:
        >>> import rustgrad
        >>> from rustgrad.nn.utils.rnn import pad_sequence
        >>> pad_sequence([rustgrad.ones(2), rustgrad.ones(3)], batch_first=True)
        tensor([[1., 1., 0.],
                [1., 1., 1.]])
    """
    from ... import stack

    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    if isinstance(sequences, Tensor):
        sequences = list(sequences.unbind(0))
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    max_len = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        missing = max_len - s.size(0)
        # F.pad's spec runs from the last dimension back: the first dimension is last.
        spec = [0, 0] * (s.dim() - 1) + ([0, missing] if padding_side == "right" else [missing, 0])
        padded.append(F.pad(s, spec, "constant", padding_value) if missing else s)
    return stack(padded, 0 if batch_first else 1)


def unpad_sequence(
    padded_sequences: Tensor,
    lengths: Tensor | Sequence[int],
    batch_first: bool = False,
) -> list[Tensor]:
    """Splits a padded batch into its sequences, each cut to its length."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences, _lengths_list(lengths), strict=False)]


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences ``(L_i, *)`` (by decreasing length unless
    ``enforce_sorted=False``)."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """Undoes :func:`pack_sequence`: the list of sequences in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
