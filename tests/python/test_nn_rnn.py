"""Recurrent layers, cells and ``nn.utils.rnn`` against PyTorch's vectors
(tests/vectors/nn_rnn.json, written by tests/vectors/generate_rnn.py), gradcheck and
gradgradcheck of the cells, PyTorch's errors, thread-count determinism, and small
training programs in the style of pytorch/examples' time_sequence_prediction and
mnist_rnn (own code, synthetic data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
from rustgrad.nn.utils import rnn as U

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "nn_rnn.json").read_text())
DT = {"float32": torch.float32, "float64": torch.float64}
TOL = {"float32": 1e-5, "float64": 1e-10}
INPUT, HIDDEN = 3, 4


def t(spec: dict[str, Any], dtype: Any, requires_grad: bool = False) -> torch.Tensor:
    out = torch.tensor(spec["data"], dtype=dtype).reshape(spec["shape"])
    return out.requires_grad_(requires_grad)


def close(actual: torch.Tensor, spec: dict[str, Any], tol: float, what: str) -> None:
    assert list(actual.shape) == spec["shape"], what
    a = np.asarray(actual.detach().reshape(-1).tolist(), dtype=np.float64)
    e = np.asarray(spec["data"], dtype=np.float64)
    np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=what)


def build(case: dict[str, Any]) -> torch.nn.Module:
    dtype = DT[case["dtype"]]
    m = getattr(torch.nn, case["module"])(INPUT, HIDDEN, **case["kwargs"]).to(dtype)
    sd = {k: t(v, dtype) for k, v in case["state"].items()}
    m.load_state_dict(sd)
    assert list(m.state_dict().keys()) == list(case["state"].keys())
    return m


def check_grads(case: dict[str, Any], m: Any, x: Any, h0: Any, c0: Any, tol: float) -> None:
    close(x.grad, case["grads"]["input"], tol, "input grad")
    if h0 is not None:
        close(h0.grad, case["grads"]["h0"], tol, "h0 grad")
    if c0 is not None:
        close(c0.grad, case["grads"]["c0"], tol, "c0 grad")
    for n, p in m.named_parameters():
        close(p.grad, case["grads"][n], tol, f"grad of {n}")


@pytest.mark.parametrize("case", VECTORS["layers"], ids=lambda c: c["name"])
def test_layer_matches_pytorch(case: dict[str, Any]) -> None:
    dtype, tol = DT[case["dtype"]], TOL[case["dtype"]]
    m = build(case)
    x = t(case["input"], dtype, True)
    h0 = t(case["h0"], dtype, True) if case["h0"] else None
    c0 = t(case["c0"], dtype, True) if case["c0"] else None
    inp: Any = x
    packed = case["packed"]
    if packed is not None:
        inp = U.pack_padded_sequence(
            x,
            packed["lengths"],
            batch_first=case["kwargs"].get("batch_first", False),
            enforce_sorted=packed["enforce_sorted"],
        )
    hx: Any = None
    if h0 is not None:
        hx = (h0, c0) if case["module"] == "LSTM" else h0
    out, hidden = m(inp, hx)
    if packed is not None:
        assert isinstance(out, U.PackedSequence)
        out = out.data
    outs = [out, *hidden] if case["module"] == "LSTM" else [out, hidden]
    for i, (o, e) in enumerate(zip(outs, case["outputs"], strict=True)):
        close(o, e, tol, f"output {i}")
    loss = sum((o * t(w, dtype)).sum() for o, w in zip(outs, case["loss_weights"], strict=True))
    loss.backward()
    check_grads(case, m, x, h0, c0, tol)


@pytest.mark.parametrize("case", VECTORS["cells"], ids=lambda c: c["name"])
def test_cell_matches_pytorch(case: dict[str, Any]) -> None:
    dtype, tol = DT[case["dtype"]], TOL[case["dtype"]]
    m = build(case)
    x = t(case["input"], dtype, True)
    h0 = t(case["h0"], dtype, True) if case["h0"] else None
    c0 = t(case["c0"], dtype, True) if case["c0"] else None
    hx: Any = None
    if h0 is not None:
        hx = (h0, c0) if case["module"] == "LSTMCell" else h0
    res = m(x, hx)
    outs = list(res) if case["module"] == "LSTMCell" else [res]
    for i, (o, e) in enumerate(zip(outs, case["outputs"], strict=True)):
        close(o, e, tol, f"output {i}")
    sum((o * t(w, dtype)).sum() for o, w in zip(outs, case["loss_weights"], strict=True)).backward()
    check_grads(case, m, x, h0, c0, tol)


@pytest.mark.parametrize("case", VECTORS["utils"], ids=lambda c: c["name"])
def test_utils_match_pytorch(case: dict[str, Any]) -> None:
    f64 = torch.float64
    if case["kind"] == "pack_padded":
        x = t(case["input"], f64, True)
        p = U.pack_padded_sequence(
            x,
            case["lengths"],
            batch_first=case["batch_first"],
            enforce_sorted=case["enforce_sorted"],
        )
        close(p.data, case["data"], 1e-12, "data")
        assert p.batch_sizes.tolist() == case["batch_sizes"]["data"]
        assert p.batch_sizes.dtype == torch.int64
        for field in ("sorted_indices", "unsorted_indices"):
            got = getattr(p, field)
            if case[field] is None:
                assert got is None
            else:
                assert got.tolist() == case[field]["data"]
        padded, lens = U.pad_packed_sequence(
            p,
            batch_first=case["batch_first"],
            padding_value=case["padding_value"],
            total_length=case["total_length"],
        )
        close(padded, case["padded"], 1e-12, "padded")
        assert lens.tolist() == case["lens"]["data"] and lens.dtype == torch.int64
        (padded * t(case["weights"], f64)).sum().backward()
        close(x.grad, case["grad"], 1e-12, "grad")
    else:
        seqs = [t(s, f64) for s in case["sequences"]]
        p = U.pack_sequence(seqs, enforce_sorted=case["enforce_sorted"])
        close(p.data, case["data"], 1e-12, "data")
        assert p.batch_sizes.tolist() == case["batch_sizes"]["data"]
        if case["sorted_indices"] is not None:
            assert p.sorted_indices.tolist() == case["sorted_indices"]["data"]
        back = U.unpack_sequence(p)
        for a, b in zip(back, seqs, strict=True):
            assert a.tolist() == b.tolist()
        padded = U.pad_sequence(
            seqs,
            batch_first=case["batch_first"],
            padding_value=0.5,
            padding_side=case["padding_side"],
        )
        close(padded, case["padded"], 1e-12, "pad_sequence")


def test_packing_errors_are_pytorchs() -> None:
    x = torch.randn(4, 3, 2)
    with pytest.raises(
        RuntimeError, match="must be sorted in decreasing order when `enforce_sorted` is True"
    ):
        U.pack_padded_sequence(x, [2, 3, 1])
    with pytest.raises(
        RuntimeError,
        match=r"Expected `len\(lengths\)` to be equal to batch_size, but got 2 \(batch_size=3\)",
    ):
        U.pack_padded_sequence(x, [3, 2])
    with pytest.raises(RuntimeError, match="Length of all samples has to be greater than 0"):
        U.pack_padded_sequence(x, [3, 2, 0])
    p = U.pack_padded_sequence(x, [3, 2, 1])
    with pytest.raises(
        ValueError, match="Expected total_length to be at least the length of the longest"
    ):
        U.pad_packed_sequence(p, total_length=2)
    with pytest.raises(RuntimeError, match="received an empty list of sequences"):
        U.pack_sequence([])
    u = U.unpad_sequence(torch.ones(4, 2, 3), torch.tensor([4, 1]))
    assert [s.shape[0] for s in u] == [4, 1]


def test_layer_errors_are_pytorchs() -> None:
    lstm = torch.nn.LSTM(4, 3)
    with pytest.raises(
        RuntimeError, match=r"input.size\(-1\) must be equal to input_size. Expected 4, got 5"
    ):
        lstm(torch.randn(5, 2, 5))
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[1\] size \(1, 2, 3\), got \[1, 2, 4\]"
    ):
        lstm(torch.randn(5, 2, 4), (torch.randn(1, 2, 3), torch.randn(1, 2, 4)))
    with pytest.raises(
        RuntimeError, match=r"Expected hidden\[0\] size \(1, 2, 3\), got \[2, 2, 3\]"
    ):
        lstm(torch.randn(5, 2, 4), (torch.randn(2, 2, 3), torch.randn(1, 2, 3)))
    with pytest.raises(
        ValueError,
        match=r"RNN input dtype \(torch.float64\) does not match weight dtype \(torch.float32\)",
    ):
        lstm(torch.randn(5, 2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="LSTM: Expected input to be 2D or 3D, got 4D instead"):
        lstm(torch.randn(1, 5, 2, 4))
    with pytest.raises(RuntimeError, match="For batched 3-D input, hx and cx should also be 3-D"):
        lstm(torch.randn(5, 2, 4), (torch.randn(2, 3), torch.randn(2, 3)))
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0 in RNN"):
        lstm(torch.randn(0, 2, 4))
    assert lstm(torch.randn(5, 0, 4))[0].shape == (5, 0, 3)
    with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
        torch.nn.GRU(4, 3).half()(torch.randn(5, 2, 4).half())
    gru = torch.nn.GRU(4, 3)
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 3\), got \[1, 3, 3\]"):
        gru(torch.randn(5, 2, 4), torch.randn(1, 3, 3))
    with pytest.raises(
        RuntimeError, match="For unbatched 2-D input, hx should also be 2-D but got 3-D tensor"
    ):
        gru(torch.randn(5, 4), torch.randn(1, 1, 3))
    with pytest.raises(
        ValueError, match="RNN: Expected input to be 2D or 3D, got 1D tensor instead"
    ):
        torch.nn.RNN(4, 3)(torch.randn(4))
    with pytest.raises(ValueError, match="Unknown nonlinearity 'x'. Select from 'tanh' or 'relu'."):
        torch.nn.RNN(4, 3, nonlinearity="x")
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        torch.nn.LSTM(4, 3, proj_size=3)
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        torch.nn.GRU(4, 3, proj_size=1)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        torch.nn.GRU(4, 3, dropout=2)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        torch.nn.GRU(4, 3, dropout=0.5)
    cell = torch.nn.LSTMCell(4, 3)
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 4"):
        cell(torch.randn(2, 5))
    with pytest.raises(
        RuntimeError, match="hidden0 has inconsistent hidden_size: got 2, expected 3"
    ):
        cell(torch.randn(2, 4), (torch.randn(2, 2), torch.randn(2, 3)))
    with pytest.raises(RuntimeError, match="Input batch size 2 doesn't match hidden0 batch size 3"):
        cell(torch.randn(2, 4), (torch.randn(3, 3), torch.randn(3, 3)))
    with pytest.raises(ValueError, match="GRUCell: Expected input to be 1D or 2D, got 3D instead"):
        torch.nn.GRUCell(4, 3)(torch.randn(1, 2, 4))


def test_parameters_and_init_are_pytorchs() -> None:
    m = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in m.named_parameters()]
    assert names[:6] == [
        "weight_ih_l0",
        "weight_hh_l0",
        "bias_ih_l0",
        "bias_hh_l0",
        "weight_hr_l0",
        "weight_ih_l0_reverse",
    ]
    assert m.weight_ih_l1.shape == (16, 4) and m.weight_hh_l0.shape == (16, 2)
    assert m.weight_hr_l1_reverse.shape == (2, 4)
    assert len(m.all_weights) == 4 and len(m._flat_weights) == 20
    bound = 1 / 4**0.5
    assert all(float(p.abs().max()) <= bound for p in m.parameters())
    m.flatten_parameters()
    assert repr(m) == "LSTM(3, 4, proj_size=2, num_layers=2, bidirectional=True)"
    g = torch.nn.GRU(3, 5, bias=False)
    assert [n for n, _ in g.named_parameters()] == ["weight_ih_l0", "weight_hh_l0"]
    c = torch.nn.GRUCell(3, 5)
    assert c.weight_ih.shape == (15, 3) and c.bias_hh.shape == (15,)


@pytest.mark.parametrize("module", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_gradcheck_and_gradgradcheck(module: str) -> None:
    torch.manual_seed(0)
    m = getattr(torch.nn, module)(3, 2).double()
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    h = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)
    c = torch.randn(2, 2, dtype=torch.float64, requires_grad=True)
    params = list(m.parameters())

    def f(x: Any, h: Any, c: Any, *ps: Any) -> Any:
        # `ps` are the module's own parameters: gradcheck perturbs them in place.
        return m(x, (h, c) if module == "LSTMCell" else h)

    inputs = (x, h, c, *params)
    assert torch.autograd.gradcheck(f, inputs)
    assert torch.autograd.gradgradcheck(f, inputs)


def test_layer_double_backward_is_refused_not_wrong() -> None:
    m = torch.nn.LSTM(3, 4).double()
    x = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    out, _ = m(x)
    (g,) = torch.autograd.grad(out.sum(), x, create_graph=True)
    with pytest.raises(
        RuntimeError, match="derivative for 'rnn_layer_backward' is not implemented"
    ):
        g.sum().backward()


def test_dropout_between_layers_only_in_training() -> None:
    torch.manual_seed(1)
    m = torch.nn.GRU(3, 4, num_layers=2, dropout=0.5)
    x = torch.randn(5, 2, 3)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert torch.equal(a, b)
    m.train()
    c = m(x)[0]
    assert not torch.equal(a, c)


_DETERMINISM = """
import rustgrad as torch
torch.manual_seed(0)
m = torch.nn.LSTM(32, 48, num_layers=2, bidirectional=True)
g = torch.nn.GRU(32, 48)
r = torch.nn.RNN(32, 48)
# 90 rows of 48 hidden units: the gate arithmetic of a step splits into row blocks
# (kernels/rnn.rs, rows_per_task).
x = torch.randn(30, 90, 32, requires_grad=True)
out = m(x)[0].sum() + g(x)[0].sum() + r(x)[0].sum()
out.backward()
params = list(m.parameters()) + list(g.parameters()) + list(r.parameters())
vals = [out.item(), x.grad.sum().item()] + [p.grad.double().pow(2).sum().item() for p in params]
print(repr(vals))
"""


def test_results_do_not_depend_on_thread_count() -> None:
    outs = []
    for n in ("1", "2", "16"):
        env = {**os.environ, "RUSTGRAD_NUM_THREADS": n}
        r = subprocess.run(
            [sys.executable, "-c", _DETERMINISM],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        outs.append(r.stdout)
    assert outs[0] == outs[1] == outs[2]


def test_time_sequence_prediction_pattern() -> None:
    """Two LSTMCells in a Python loop and a Linear, trained with LBFGS and a closure,
    then predicting `future` steps (the pattern of pytorch/examples'
    time_sequence_prediction, written here on synthetic sine waves)."""

    class Sequence(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm1 = torch.nn.LSTMCell(1, 12)
            self.lstm2 = torch.nn.LSTMCell(12, 12)
            self.linear = torch.nn.Linear(12, 1)

        def forward(self, input: Any, future: int = 0) -> Any:
            outputs = []
            h_t = torch.zeros(input.size(0), 12, dtype=torch.double)
            c_t = torch.zeros(input.size(0), 12, dtype=torch.double)
            h_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
            c_t2 = torch.zeros(input.size(0), 12, dtype=torch.double)
            output = None
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return torch.cat(outputs, dim=1)

    torch.manual_seed(0)
    phase = torch.arange(6, dtype=torch.double).unsqueeze(1) * 0.7
    wave = torch.sin(torch.arange(21, dtype=torch.double) * 0.3 + phase)
    inp, target = wave[:, :-1], wave[:, 1:]
    seq = Sequence().double()
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)
    losses = []

    def closure() -> Any:
        optimizer.zero_grad()
        loss = criterion(seq(inp), target)
        loss.backward()
        return loss

    for _ in range(3):
        losses.append(optimizer.step(closure).item())
    assert losses[-1] < losses[0]
    with torch.no_grad():
        pred = seq(inp[:2], future=5)
    assert pred.shape == (2, 25)


def test_mnist_rnn_pattern() -> None:
    """nn.LSTM(batch_first) + Linear + log_softmax trained a few steps on synthetic
    "images" (rows as time steps), as pytorch/examples' mnist_rnn does."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = torch.nn.LSTM(input_size=8, hidden_size=16, batch_first=True)
            self.batchnorm = torch.nn.BatchNorm1d(16)
            self.dropout1 = torch.nn.Dropout(0.25)
            self.fc1 = torch.nn.Linear(16, 10)

        def forward(self, input: Any) -> Any:
            input = input.reshape(-1, 8, 8)
            output, hidden = self.rnn(input)
            output = output[:, -1, :]
            output = self.batchnorm(output)
            output = self.dropout1(output)
            return torch.nn.functional.log_softmax(self.fc1(output), dim=1)

    torch.manual_seed(0)
    data = torch.randn(32, 1, 8, 8)
    target = torch.randint(0, 10, (32,))
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    model.train()
    for _ in range(15):
        opt.zero_grad()
        loss = torch.nn.functional.nll_loss(model(data), target)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
