"""The seed notes' LeNet (``TheModelClass``) and a ResNet basic block written with
``rustgrad.nn.functional`` alone, against PyTorch-generated vectors
(tests/vectors/nn_models.json, written by generate_nn_models.py): forward, loss, the
gradient of every parameter and of the input, and the batch norm running statistics,
in float32."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F

CASES = {
    c["name"]: c
    for c in json.loads(
        (Path(__file__).resolve().parents[1] / "vectors" / "nn_models.json").read_text()
    )["cases"]
}
# The bound: float32 results within 1e-5 of PyTorch's (relative to the
# tensor's scale for the large gradient sums).
TOL = 1e-5


def tensor(spec: dict[str, Any], requires_grad: bool = False) -> rustgrad.Tensor:
    dtype = {"float32": np.float32, "int64": np.int64}[spec["dtype"]]
    array = np.array(spec["data"], dtype=dtype).reshape(spec["shape"])
    t = rustgrad.tensor(array)
    if requires_grad:
        t.requires_grad_()
    return t


def check(name: str, got: rustgrad.Tensor, spec: dict[str, Any]) -> None:
    want = np.array(spec["data"], dtype=np.float64).reshape(spec["shape"])
    have = got.detach().numpy().astype(np.float64)
    assert have.shape == want.shape, name
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(have, want, rtol=TOL, atol=TOL * scale, err_msg=name)


def test_lenet_forward_and_backward_match_pytorch():
    case = CASES["lenet_the_model_class"]
    t = case["tensors"]
    x = tensor(t["input"], requires_grad=True)
    target = tensor(t["target"])
    p = {k: tensor(v, requires_grad=True) for k, v in t.items() if "." in k}
    h = F.max_pool2d(F.relu(F.conv2d(x, p["conv1.weight"], p["conv1.bias"])), 2)
    h = F.max_pool2d(F.relu(F.conv2d(h, p["conv2.weight"], p["conv2.bias"])), 2)
    h = h.view(-1, 16 * 5 * 5)
    h = F.relu(F.linear(h, p["fc1.weight"], p["fc1.bias"]))
    h = F.relu(F.linear(h, p["fc2.weight"], p["fc2.bias"]))
    logits = F.linear(h, p["fc3.weight"], p["fc3.bias"])
    loss = F.cross_entropy(logits, target)
    loss.backward()
    e = case["expected"]
    check("logits", logits, e["logits"])
    check("loss", loss, e["loss"])
    check("grad.input", x.grad, e["grad.input"])
    for k, v in p.items():
        check(f"grad.{k}", v.grad, e[f"grad.{k}"])


def test_resnet_basic_block_in_training_mode_matches_pytorch():
    case = CASES["resnet_basic_block_training"]
    t = case["tensors"]
    x = tensor(t["input"], requires_grad=True)
    p = {
        k: tensor(v, requires_grad=True)
        for k, v in t.items()
        if k.split(".")[0][:2] in ("co", "bn")
    }
    running = {k: tensor(v) for k, v in t.items() if k.startswith("running_")}
    out = F.conv2d(x, p["conv1.weight"], padding=1)
    out = F.batch_norm(
        out,
        running["running_mean.1"],
        running["running_var.1"],
        p["bn1.weight"],
        p["bn1.bias"],
        training=True,
        momentum=0.1,
        eps=1e-5,
    )
    out = F.relu(out)
    out = F.conv2d(out, p["conv2.weight"], padding=1)
    out = F.batch_norm(
        out,
        running["running_mean.2"],
        running["running_var.2"],
        p["bn2.weight"],
        p["bn2.bias"],
        training=True,
        momentum=0.1,
        eps=1e-5,
    )
    out = F.relu(out + x)
    out.backward(tensor(t["grad_output"]))
    e = case["expected"]
    check("output", out, e["output"])
    check("grad.input", x.grad, e["grad.input"])
    for k, v in p.items():
        check(f"grad.{k}", v.grad, e[f"grad.{k}"])
    for k, v in running.items():
        check(k, v, e[k])


@pytest.mark.parametrize("threads", [1, 2])
def test_lenet_gradients_do_not_depend_on_the_thread_count(threads):
    before = rustgrad.get_num_threads()
    results = []
    try:
        for n in (1, threads):
            rustgrad.set_num_threads(n)
            case = CASES["lenet_the_model_class"]
            t = case["tensors"]
            x = tensor(t["input"])
            w = tensor(t["conv1.weight"], requires_grad=True)
            out = F.max_pool2d(F.relu(F.conv2d(x, w)), 2).sum()
            out.backward()
            results.append((out.item(), w.grad.numpy().copy()))
    finally:
        rustgrad.set_num_threads(before)
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])
