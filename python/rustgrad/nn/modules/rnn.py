"""Recurrent layers (PyTorch's ``torch/nn/modules/rnn.py``): ``RNN``, ``LSTM``, ``GRU``
and the cells ``RNNCell``, ``LSTMCell``, ``GRUCell``.

Each layer and direction of a multi-layer network runs as ONE engine node
(``_rustgrad._rnn_layer``: the time loop and its fused backward in Rust); this module
stacks layers and directions, applies dropout between layers, and handles batch_first,
unbatched and packed input. The cells are composed of differentiable ops, so they can be
differentiated any number of times. See Note [Recurrent layers].
"""

from __future__ import annotations

import math
import numbers
import warnings
from typing import Any

from ... import _rustgrad
from ..._rustgrad import Tensor
from .. import functional as F
from .. import init
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from ._utils import _empty
from .module import Module

__all__ = ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]


def _gate_size(mode: str, hidden_size: int) -> int:
    return {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}[mode] * hidden_size


class RNNBase(Module):
    """The parameters and checks shared by :class:`RNN`, :class:`LSTM` and :class:`GRU`:
    per layer ``l`` and direction (suffix ``_reverse``) ``weight_ih_l{l}``,
    ``weight_hh_l{l}``, ``bias_ih_l{l}``, ``bias_hh_l{l}`` and, for an LSTM with
    ``proj_size``, ``weight_hr_l{l}``, all initialised from U(-1/sqrt(hidden),
    1/sqrt(hidden)) as in PyTorch.
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        if (
            not isinstance(dropout, numbers.Number)
            or isinstance(dropout, bool)
            or not 0 <= dropout <= 1  # type: ignore[operator]
        ):
            raise ValueError(
                "dropout should be a number in range [0, 1] representing the probability "
                "of an element being zeroed"
            )
        self.dropout = float(dropout)  # type: ignore[arg-type]
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        if dropout > 0 and num_layers == 1:  # type: ignore[operator]
            warnings.warn(
                "dropout option adds dropout after all but last recurrent layer, so "
                "non-zero dropout expects num_layers greater than 1, but got "
                f"dropout={dropout} and num_layers={num_layers}",
                stacklevel=2,
            )
        if not isinstance(bias, bool):
            raise TypeError(f"bias should be of type bool, got: {type(bias).__name__}")
        if not isinstance(batch_first, bool):
            raise TypeError(
                f"batch_first should be of type bool, got: {type(batch_first).__name__}"
            )
        if not isinstance(input_size, int):
            raise TypeError(f"input_size should be of type int, got: {type(input_size).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError(
                "proj_size should be a positive integer or zero to disable projections"
            )
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU"):
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = _gate_size(mode, hidden_size)
        num_directions = 2 if bidirectional else 1
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names: list[str] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = "_reverse" if direction == 1 else ""
                params = [
                    (f"weight_ih_l{layer}{suffix}", (gate_size, layer_input)),
                    (f"weight_hh_l{layer}{suffix}", (gate_size, real_hidden)),
                ]
                if bias:
                    params += [
                        (f"bias_ih_l{layer}{suffix}", (gate_size,)),
                        (f"bias_hh_l{layer}{suffix}", (gate_size,)),
                    ]
                if proj_size > 0:
                    params.append((f"weight_hr_l{layer}{suffix}", (proj_size, hidden_size)))
                for name, shape in params:
                    setattr(self, name, Parameter(_empty(*shape, dtype=dtype)))
                names = [name for name, _ in params]
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _flat_weights(self) -> list[Tensor | None]:
        return [getattr(self, n, None) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters per layer and direction, in PyTorch's order."""
        return [[getattr(self, w) for w in weights] for weights in self._all_weights]

    def flatten_parameters(self) -> None:
        """A no-op (PyTorch compacts cuDNN weights here; the CPU has nothing to do)."""

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    # ----- checks (PyTorch's messages) ---------------------------------------------

    def check_input(self, input: Tensor, batch_sizes: list[int] | None) -> None:
        """PyTorch's dtype, rank and feature-size checks."""
        w0 = self._flat_weights[0]
        if w0 is not None and input.dtype != w0.dtype:
            raise ValueError(
                f"RNN input dtype ({input.dtype}) does not match weight dtype ({w0.dtype}). "
                f"Convert input: input.to({w0.dtype}), or convert model: model.to({input.dtype})"
            )
        expected_input_dim = 2 if batch_sizes is not None else 3
        if input.dim() != expected_input_dim:
            raise RuntimeError(
                f"input must have {expected_input_dim} dimensions, got {input.dim()}"
            )
        if self.input_size != input.size(-1):
            raise RuntimeError(
                "input.size(-1) must be equal to input_size. Expected "
                f"{self.input_size}, got {input.size(-1)}"
            )

    def get_expected_hidden_size(
        self, input: Tensor, batch_sizes: list[int] | None
    ) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, proj_size or hidden_size)``."""
        if batch_sizes is not None:
            mini_batch = batch_sizes[0] if batch_sizes else 0
        else:
            mini_batch = input.size(0) if self.batch_first else input.size(1)
        num_directions = 2 if self.bidirectional else 1
        size = self.proj_size if self.proj_size > 0 else self.hidden_size
        return (self.num_layers * num_directions, mini_batch, size)

    def check_hidden_size(
        self,
        hx: Tensor,
        expected_hidden_size: tuple[int, int, int],
        msg: str = "Expected hidden size {}, got {}",
    ) -> None:
        """PyTorch's hidden-state shape check."""
        if tuple(hx.size()) != expected_hidden_size:
            raise RuntimeError(msg.format(expected_hidden_size, list(hx.size())))

    def check_forward_args(
        self, input: Tensor, hidden: Tensor, batch_sizes: list[int] | None
    ) -> None:
        """Input and hidden-state checks."""
        self.check_input(input, batch_sizes)
        self.check_hidden_size(hidden, self.get_expected_hidden_size(input, batch_sizes))

    def permute_hidden(self, hx: Any, permutation: Tensor | None) -> Any:
        """Reorders the batch of a hidden state (a packed batch was sorted)."""
        if permutation is None:
            return hx
        if isinstance(hx, tuple):
            return tuple(h.index_select(1, permutation) for h in hx)
        return hx.index_select(1, permutation)

    # ----- the stack of fused layers ----------------------------------------------

    def _run(
        self, x: Tensor, batch_sizes: list[int] | None, h0: Tensor, c0: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Runs every layer and direction on time-major ``x`` (or packed rows)."""
        from ... import cat, stack

        num_directions = 2 if self.bidirectional else 1
        lstm = self.mode == "LSTM"
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        layer_input = x
        for layer in range(self.num_layers):
            outs = []
            for direction in range(num_directions):
                k = layer * num_directions + direction
                names = self._all_weights[k]
                ws = [getattr(self, n) for n in names]
                w_ih, w_hh = ws[0], ws[1]
                b_ih = ws[2] if self.bias else None
                b_hh = ws[3] if self.bias else None
                w_hr = ws[-1] if self.proj_size > 0 else None
                res = _rustgrad._rnn_layer(
                    self.mode,
                    layer_input,
                    h0[k],
                    c0[k] if lstm and c0 is not None else None,
                    w_ih,
                    w_hh,
                    b_ih,
                    b_hh,
                    w_hr,
                    direction == 1,
                    batch_sizes,
                )
                outs.append(res[0])
                hs.append(res[1])
                if lstm:
                    cs.append(res[2])
            layer_input = outs[0] if num_directions == 1 else cat(outs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, training=True)
        return layer_input, stack(hs, 0), (stack(cs, 0) if lstm else None)

    def _forward(self, input: Any, hx: Any) -> tuple[Any, Any]:
        lstm = self.mode == "LSTM"
        name = {"LSTM": "LSTM", "GRU": "GRU"}.get(self.mode, "RNN")
        num_directions = 2 if self.bidirectional else 1
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        orig_input = input
        batch_sizes: list[int] | None = None
        sorted_indices = unsorted_indices = None
        is_batched = True
        if isinstance(orig_input, PackedSequence):
            input = orig_input.data
            batch_sizes = [int(b) for b in orig_input.batch_sizes.tolist()]
            sorted_indices = orig_input.sorted_indices
            unsorted_indices = orig_input.unsorted_indices
            max_batch_size = batch_sizes[0] if batch_sizes else 0
        else:
            if input.dim() not in (2, 3):
                suffix = " tensor instead" if not lstm and name != "GRU" else " instead"
                raise ValueError(
                    f"{name}: Expected input to be 2D or 3D, got {input.dim()}D{suffix}"
                )
            is_batched = input.dim() == 3
            batch_dim = 0 if self.batch_first else 1
            if not is_batched:
                input = input.unsqueeze(batch_dim)
            max_batch_size = input.size(0) if self.batch_first else input.size(1)
        zeros_shape = (self.num_layers * num_directions, max_batch_size)
        if lstm:
            if hx is None:
                h0 = input.new_zeros((*zeros_shape, real_hidden))
                c0 = input.new_zeros((*zeros_shape, self.hidden_size))
            else:
                h0, c0 = hx
                if batch_sizes is None:
                    if is_batched and (h0.dim() != 3 or c0.dim() != 3):
                        raise RuntimeError(
                            "For batched 3-D input, hx and cx should also be 3-D but got "
                            f"({h0.dim()}-D, {c0.dim()}-D) tensors"
                        )
                    if not is_batched:
                        if h0.dim() != 2 or c0.dim() != 2:
                            raise RuntimeError(
                                "For unbatched 2-D input, hx and cx should also be 2-D but got "
                                f"({h0.dim()}-D, {c0.dim()}-D) tensors"
                            )
                        h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
            self.check_input(input, batch_sizes)
            expected = self.get_expected_hidden_size(input, batch_sizes)
            self.check_hidden_size(h0, expected, "Expected hidden[0] size {}, got {}")
            cell_expected = (expected[0], expected[1], self.hidden_size)
            self.check_hidden_size(c0, cell_expected, "Expected hidden[1] size {}, got {}")
            if hx is not None:
                h0, c0 = self.permute_hidden((h0, c0), sorted_indices)
        else:
            c0 = None
            if hx is None:
                h0 = input.new_zeros((*zeros_shape, real_hidden))
            else:
                h0 = hx
                if batch_sizes is None:
                    if not is_batched:
                        if h0.dim() != 2:
                            raise RuntimeError(
                                "For unbatched 2-D input, hx should also be 2-D but got "
                                f"{h0.dim()}-D tensor"
                            )
                        h0 = h0.unsqueeze(1)
                    elif h0.dim() != 3:
                        raise RuntimeError(
                            "For batched 3-D input, hx should also be 3-D but got "
                            f"{h0.dim()}-D tensor"
                        )
                h0 = self.permute_hidden(h0, sorted_indices)
            self.check_forward_args(input, h0, batch_sizes)
        x = input
        if batch_sizes is None and self.batch_first:
            x = x.transpose(0, 1)
        if batch_sizes is None and x.size(0) == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
        out, h_n, c_n = self._run(x, batch_sizes, h0, c0)
        hidden: Any = (h_n, c_n) if lstm else h_n
        if isinstance(orig_input, PackedSequence):
            packed = PackedSequence(out, orig_input.batch_sizes, sorted_indices, unsorted_indices)
            return packed, self.permute_hidden(hidden, unsorted_indices)
        if self.batch_first:
            out = out.transpose(0, 1)
        if not is_batched:
            out = out.squeeze(0 if self.batch_first else 1)
            hidden = (h_n.squeeze(1), c_n.squeeze(1)) if lstm else h_n.squeeze(1)  # type: ignore[union-attr]
        return out, hidden


class RNN(RNNBase):
    """An Elman RNN, ``h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh)`` (or relu),
    over ``num_layers`` layers, optionally bidirectional.

    Example:
        >>> import rustgrad
        >>> rnn = rustgrad.nn.RNN(10, 20, 2)
        >>> out, h = rnn(rustgrad.randn(5, 3, 10))
        >>> out.shape, h.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            self.nonlinearity = args[3]
            args = args[:3] + args[4:]
        else:
            self.nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if self.nonlinearity == "tanh":
            mode = "RNN_TANH"
        elif self.nonlinearity == "relu":
            mode = "RNN_RELU"
        else:
            raise ValueError(
                f"Unknown nonlinearity '{self.nonlinearity}'. Select from 'tanh' or 'relu'."
            )
        super().__init__(mode, *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """``(output, h_n)``."""
        return self._forward(input, hx)


class LSTM(RNNBase):
    """A long short-term memory network (gates i, f, g, o as PyTorch), with optional
    projection of the hidden state (``proj_size``).

    Example:
        >>> import rustgrad
        >>> lstm = rustgrad.nn.LSTM(10, 20, 2)
        >>> out, (h, c) = lstm(rustgrad.randn(5, 3, 10))
        >>> out.shape, h.shape, c.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)

    def get_expected_cell_size(
        self, input: Tensor, batch_sizes: list[int] | None
    ) -> tuple[int, int, int]:
        """``(num_layers * num_directions, batch, hidden_size)``."""
        layers, batch, _ = self.get_expected_hidden_size(input, batch_sizes)
        return (layers, batch, self.hidden_size)

    def forward(
        self, input: Any, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Any, tuple[Tensor, Tensor]]:
        """``(output, (h_n, c_n))``."""
        return self._forward(input, hx)


class GRU(RNNBase):
    """A gated recurrent unit network (gates r, z, n as PyTorch).

    Example:
        >>> import rustgrad
        >>> gru = rustgrad.nn.GRU(10, 20, 2)
        >>> out, h = gru(rustgrad.randn(5, 3, 10))
        >>> out.shape, h.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)

    def forward(self, input: Any, hx: Tensor | None = None) -> tuple[Any, Tensor]:
        """``(output, h_n)``."""
        return self._forward(input, hx)


class RNNCellBase(Module):
    """The parameters shared by the cells: ``weight_ih`` ``(chunks·hidden, input)``,
    ``weight_hh`` ``(chunks·hidden, hidden)``, ``bias_ih``, ``bias_hh``."""

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool,
        num_chunks: int,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(_empty(num_chunks * hidden_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(_empty(num_chunks * hidden_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(_empty(num_chunks * hidden_size, dtype=dtype))
            self.bias_hh = Parameter(_empty(num_chunks * hidden_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = "{input_size}, {hidden_size}"
        if "bias" in self.__dict__ and self.bias is not True:
            s += ", bias={bias}"
        if "nonlinearity" in self.__dict__ and self.nonlinearity != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)

    def reset_parameters(self) -> None:
        """Every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))."""
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _check(self, input: Tensor, hxs: list[Tensor]) -> None:
        """PyTorch's cell checks (``check_rnn_cell_forward_input/hidden``)."""
        if input.size(1) != self.input_size:
            raise RuntimeError(
                f"input has inconsistent input_size: got {input.size(1)} expected {self.input_size}"
            )
        for i, h in enumerate(hxs):
            if input.size(0) != h.size(0):
                raise RuntimeError(
                    f"Input batch size {input.size(0)} doesn't match hidden{i} batch size "
                    f"{h.size(0)}"
                )
            if h.size(1) != self.hidden_size:
                raise RuntimeError(
                    f"hidden{i} has inconsistent hidden_size: got {h.size(1)}, expected "
                    f"{self.hidden_size}"
                )

    def _prepare(self, name: str, input: Tensor, hx: Tensor | None) -> tuple[Tensor, bool]:
        if input.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{name}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        is_batched = input.dim() == 2
        return (input if is_batched else input.unsqueeze(0)), is_batched

    def _gates(self, input: Tensor, hx: Tensor) -> tuple[Tensor, Tensor]:
        return (
            F.linear(input, self.weight_ih, self.bias_ih),
            F.linear(hx, self.weight_hh, self.bias_hh),
        )


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: ``h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh)`` (or relu).

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.RNNCell(10, 20)(rustgrad.randn(3, 10)).shape
        torch.Size([3, 20])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        input, is_batched = self._prepare("RNNCell", input, hx)
        if hx is None:
            hx = input.new_zeros((input.size(0), self.hidden_size))
        elif not is_batched:
            hx = hx.unsqueeze(0)
        self._check(input, [hx])
        gi, gh = self._gates(input, hx)
        if self.nonlinearity == "tanh":
            ret = (gi + gh).tanh()
        elif self.nonlinearity == "relu":
            ret = (gi + gh).relu()
        else:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        return ret if is_batched else ret.squeeze(0)


class LSTMCell(RNNCellBase):
    """One step of an LSTM: returns ``(h', c')``.

    Example:
        >>> import rustgrad
        >>> h, c = rustgrad.nn.LSTMCell(10, 20)(rustgrad.randn(3, 10))
        >>> h.shape, c.shape
        (torch.Size([3, 20]), torch.Size([3, 20]))
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(
        self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None
    ) -> tuple[Tensor, Tensor]:
        """The next ``(h, c)``."""
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for idx, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(
                        f"LSTMCell: Expected hx[{idx}] to be 1D or 2D, got {value.dim()}D instead"
                    )
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = input.new_zeros((input.size(0), self.hidden_size))
            h, c = zeros, zeros
        else:
            h, c = (hx[0].unsqueeze(0), hx[1].unsqueeze(0)) if not is_batched else hx
        self._check(input, [h, c])
        gi, gh = self._gates(input, h)
        i, f, g, o = (gi + gh).chunk(4, 1)
        c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h2 = o.sigmoid() * c2.tanh()
        if not is_batched:
            return h2.squeeze(0), c2.squeeze(0)
        return h2, c2


class GRUCell(RNNCellBase):
    """One step of a GRU: ``h' = (1 - z) * n + z * h``.

    Example:
        >>> import rustgrad
        >>> rustgrad.nn.GRUCell(10, 20)(rustgrad.randn(3, 10)).shape
        torch.Size([3, 20])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """The next hidden state."""
        input, is_batched = self._prepare("GRUCell", input, hx)
        if hx is None:
            hx = input.new_zeros((input.size(0), self.hidden_size))
        elif not is_batched:
            hx = hx.unsqueeze(0)
        self._check(input, [hx])
        gi, gh = self._gates(input, hx)
        i_r, i_z, i_n = gi.chunk(3, 1)
        h_r, h_z, h_n = gh.chunk(3, 1)
        r = (i_r + h_r).sigmoid()
        z = (i_z + h_z).sigmoid()
        n = (i_n + r * h_n).tanh()
        ret = (1 - z) * n + z * hx
        return ret if is_batched else ret.squeeze(0)
