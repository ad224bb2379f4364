"""Every nn layer module against PyTorch (tests/vectors/nn_layers.json, written by
tests/vectors/generate_nn_layers.py): repr, parameter and buffer names and shapes,
default initialisation for seed 0 (rustgrad's generator reproduces PyTorch's stream, so
the values agree exactly), the forward result, the gradients of the inputs and
parameters for a fixed upstream gradient, the buffers after the forward (BatchNorm's
running statistics and num_batches_tracked) and the state_dict keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
from rustgrad import nn

CASES = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_layers.json").read_text()
)["cases"]
IDS = [c["name"] for c in CASES]
TOL = 1e-5


def to_tensor(spec: dict[str, Any]) -> rustgrad.Tensor:
    dtype = {"float32": np.float32, "int64": np.int64}[spec["dtype"]]
    return rustgrad.tensor(np.array(spec["data"], dtype=dtype).reshape(spec["shape"]))


def decode(value: Any) -> Any:
    if isinstance(value, dict) and "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    if isinstance(value, dict) and "tensor" in value:
        return to_tensor(value["tensor"])
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def check(name: str, got: rustgrad.Tensor, spec: dict[str, Any]) -> None:
    want = np.array(spec["data"], dtype=np.float64).reshape(spec["shape"])
    have = got.detach().numpy().astype(np.float64)
    assert have.shape == want.shape, name
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(have, want, rtol=TOL, atol=TOL * scale, err_msg=name)


def build(case: dict[str, Any]) -> nn.Module:
    rustgrad.manual_seed(0)
    return getattr(nn, case["cls"])(*decode(case["args"]), **decode(case["kwargs"]))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_repr_names_and_shapes_match_pytorch(case: dict[str, Any]) -> None:
    layer = build(case)
    assert repr(layer) == case["repr"]
    params = dict(layer.named_parameters())
    assert list(params) == list(case["init"]["parameters"])
    for name, spec in case["init"]["parameters"].items():
        assert list(params[name].shape) == spec["shape"], name
        assert params[name].requires_grad and isinstance(params[name], nn.Parameter)
    buffers = dict(layer.named_buffers())
    assert list(buffers) == list(case["init"]["buffers"])
    for name, spec in case["init"]["buffers"].items():
        assert list(buffers[name].shape) == spec["shape"], name
        assert str(buffers[name].dtype) == "torch." + spec["dtype"], name


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_default_initialisation_equals_pytorch_for_seed_0(case: dict[str, Any]) -> None:
    layer = build(case)
    state = {**dict(layer.named_parameters()), **dict(layer.named_buffers())}
    for name, spec in {**case["init"]["parameters"], **case["init"]["buffers"]}.items():
        want = np.array(spec["data"], dtype=state[name].detach().numpy().dtype)
        want = want.reshape(spec["shape"])
        np.testing.assert_array_equal(state[name].detach().numpy(), want, err_msg=name)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_forward_backward_and_buffers_match_pytorch(case: dict[str, Any]) -> None:
    layer = build(case)
    with rustgrad.no_grad():
        for name, p in layer.named_parameters():
            p.copy_(to_tensor(case["init"]["parameters"][name]))
    if case["eval"]:
        layer.eval()
    inputs = []
    for spec, value in zip(case["inputs"], case["input_values"]):
        x = to_tensor(value)
        if spec["grad"]:
            x.requires_grad_()
        inputs.append(x)
    call_inputs = [x.clone() if x.requires_grad else x for x in inputs]
    out = layer(*call_inputs)
    outs = out if isinstance(out, tuple) else (out,)
    assert len(outs) == len(case["outputs"])
    for i, (o, spec) in enumerate(zip(outs, case["outputs"])):
        check(f"output {i}", o, spec)
    outs[0].backward(to_tensor(case["upstream"]))
    for i, (x, spec) in enumerate(zip(inputs, case["input_grads"])):
        if spec is None:
            assert x.grad is None
        else:
            check(f"input grad {i}", x.grad, spec)
    params = dict(layer.named_parameters())
    for name, p in params.items():
        if name in case["param_grads"]:
            check(f"grad of {name}", p.grad, case["param_grads"][name])
        else:
            assert p.grad is None, name
    buffers = dict(layer.named_buffers())
    for name, spec in case["buffers_after"].items():
        check(f"buffer {name}", buffers[name], spec)
    assert list(layer.state_dict().keys()) == case["state_dict_keys"]
    for value in layer.state_dict().values():
        assert not value.requires_grad


def test_every_layer_of_the_issue_has_a_case() -> None:
    wanted = """Linear Bilinear Identity Flatten Unflatten Conv1d Conv2d Conv3d ConvTranspose1d
    ConvTranspose2d MaxPool1d MaxPool2d AvgPool1d AvgPool2d AdaptiveAvgPool1d
    AdaptiveAvgPool2d AdaptiveMaxPool2d BatchNorm1d BatchNorm2d LayerNorm GroupNorm RMSNorm
    InstanceNorm2d LocalResponseNorm Dropout Dropout2d Embedding EmbeddingBag Upsample
    PixelShuffle ZeroPad2d ReflectionPad2d ReLU ReLU6 LeakyReLU PReLU ELU SELU GELU SiLU Mish
    Sigmoid Tanh Softplus Hardtanh Hardswish Softmax LogSoftmax CrossEntropyLoss NLLLoss
    MSELoss L1Loss SmoothL1Loss HuberLoss BCELoss BCEWithLogitsLoss KLDivLoss""".split()
    assert set(wanted) <= {c["cls"] for c in CASES}
