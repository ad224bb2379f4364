"""``pad_sequence`` (PyTorch's ``torch/nn/utils/rnn.py``)."""

from __future__ import annotations

from collections.abc import Sequence

from ..._rustgrad import Tensor
from .. import functional as F

__all__ = ["pad_sequence"]


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
