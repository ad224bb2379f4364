"""A full-size torchvision ResNet-18 checkpoint written by ``torch.save`` (zip and legacy
formats) loads into ``rustgrad.models.resnet18()`` without PyTorch, gives PyTorch's
outputs in eval and train mode and resumes SGD-momentum training as PyTorch does.

The fixtures (tests/vectors/ckpt_resnet18_*) come from
tests/vectors/generate_checkpoint_resnet18.py, run with PyTorch and torchvision: the
checkpoints are xz-compressed (their weights are a tiled pattern, see Note
[Full-size checkpoint fixture]) and the state after training is summarised per tensor.
"""

from __future__ import annotations

import collections
import hashlib
import json
import lzma
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad.models import resnet18

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
FORMATS = ["zip", "legacy"]
# What a file of each format starts with: a zip's local header, a pickle's PROTO 2.
MAGIC = {"zip": b"PK\x03\x04", "legacy": b"\x80\x02"}
# float32: the tolerance; PyTorch's own float32 runs from one-ulp perturbed
# parameters stay within 3e-6 of each other (the generator checks it).
F32_TOL = 1e-5
# float64: rustgrad is 2e-12 away from PyTorch (relative to each tensor's rms).
F64_TOL = 1e-10


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(VECTORS / "ckpt_resnet18_expected.npz") as data:
        return dict(data)


@pytest.fixture(scope="module", params=FORMATS)
def checkpoint_path(request, tmp_path_factory) -> Path:
    """The checkpoint, decompressed. Each test loads it anew: resuming updates the
    loaded momentum buffers in place (``load_state_dict`` keeps same-dtype tensors,
    as PyTorch's does)."""
    path = tmp_path_factory.mktemp("ckpt") / f"ckpt_resnet18_{request.param}.pt"
    path.write_bytes(lzma.decompress((VECTORS / f"{path.name}.xz").read_bytes()))
    return path


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def drawn(expected: dict[str, np.ndarray], name: str, shape: str) -> rustgrad.Tensor:
    """The generator's input ``name``, drawn again from its seed."""
    rng = np.random.default_rng(int(expected[f"{name}_seed"]))
    x = rng.standard_normal(tuple(expected[shape]), dtype=np.float32)
    assert sha256(x) == str(expected[f"{name}_sha256"]), "numpy's normal stream changed"
    return rustgrad.tensor(x)


def loaded_model(checkpoint: dict[str, Any]) -> rustgrad.nn.Module:
    model = resnet18()
    model.load_state_dict(checkpoint["model"], strict=True)
    return model


def test_checkpoint_holds_torchvision_state_bit_for_bit(checkpoint_path, expected):
    fmt = checkpoint_path.stem.removeprefix("ckpt_resnet18_")
    assert checkpoint_path.read_bytes()[:4].startswith(MAGIC[fmt])
    checkpoint = rustgrad.load(checkpoint_path)
    assert checkpoint["epoch"] == 30
    state = checkpoint["model"]
    assert isinstance(state, collections.OrderedDict)
    names = expected["names"].tolist()
    assert list(state) == names
    assert [list(v.shape) for v in state.values()] == json.loads(str(expected["shapes"]))
    assert [v.dtype for v in state.values()] == [getattr(rustgrad, d) for d in expected["dtypes"]]
    assert [sha256(v.numpy()) for v in state.values()] == expected["sha256"].tolist()
    # rustgrad's own ResNet-18 has torchvision's names, order, shapes and dtypes.
    own = resnet18().state_dict()
    assert list(own) == names
    assert [(v.shape, v.dtype) for v in own.values()] == [
        (v.shape, v.dtype) for v in state.values()
    ]

    optimizer = checkpoint["optimizer"]
    assert optimizer["param_groups"] == json.loads(str(expected["param_groups"]))
    momentum = optimizer["state"]
    assert sorted(momentum) == list(range(len(expected["momentum_sha256"])))
    buffers = [momentum[i]["momentum_buffer"] for i in sorted(momentum)]
    assert [sha256(b.numpy()) for b in buffers] == expected["momentum_sha256"].tolist()


def test_checkpoint_gives_pytorch_outputs_in_eval_and_train_mode(checkpoint_path, expected):
    model = loaded_model(rustgrad.load(checkpoint_path))
    x = drawn(expected, "eval", "eval_shape")
    model.eval()
    with rustgrad.no_grad():
        out = model(x)
    np.testing.assert_allclose(out.numpy(), expected["eval_output"], rtol=F32_TOL, atol=F32_TOL)
    model.train()
    with rustgrad.no_grad():
        out = model(x)
    # Train mode normalises by the statistics of a 2-sample batch, which amplifies
    # rounding: the float64 result of this model is itself 9.9e-6 from PyTorch's float32
    # output, and rustgrad's float32 one 8.2e-6 from the float64 one (on the other
    # side), so two float32 summation orders (Note [GEMM plans]) may differ by twice
    # the eval tolerance here.
    tol = 2 * F32_TOL
    np.testing.assert_allclose(out.numpy(), expected["train_output"], rtol=tol, atol=tol)


def resume(path: Path, expected, dtype: rustgrad.dtype) -> tuple[list[float], dict]:
    """The generator's ``resume``: three SGD steps from the checkpoint in ``dtype``;
    the losses and the final buffers, the parameters' change and the momentum buffers.
    """
    checkpoint = rustgrad.load(path)
    model = loaded_model(checkpoint).to(dtype)
    initial = {k: v.detach().clone() for k, v in model.named_parameters()}
    group = checkpoint["optimizer"]["param_groups"][0]
    assert (group["lr"], group["momentum"], group["weight_decay"]) == (1e-4, 0.9, 1e-4)
    optimizer = rustgrad.optim.SGD(model.parameters(), lr=1e-4, momentum=0.9, weight_decay=1e-4)
    optimizer.load_state_dict(checkpoint["optimizer"])
    model.train()
    losses = []
    for k in range(3):
        x = drawn(expected, f"step{k}", "step_shape").to(dtype)
        y = rustgrad.tensor(expected[f"step{k}_target"])
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    state = {f"final.{k}": v for k, v in model.named_buffers()}
    for i, (name, p) in enumerate(model.named_parameters()):
        state[f"delta.{name}"] = p.detach() - initial[name]
        state[f"momentum.{i}"] = optimizer.state[p]["momentum_buffer"]
    return losses, state


def check_summaries(prefix: str, state: dict, expected, tol: float) -> None:
    """The generator's per-tensor summaries of ``state``, within ``tol``: sums relative
    to the sum of absolute values (each element's error adds up), sums of squares and
    of absolute values relative, sampled elements within ``tol * (1 + |value|)``;
    ``num_batches_tracked`` exactly."""
    counter_keys = expected[f"{prefix}_counter_keys"].tolist()
    counters = [int(state[k].item()) for k in counter_keys]
    assert counters == expected[f"{prefix}_counter_value"].tolist()
    keys = expected[f"{prefix}_keys"].tolist()
    assert sorted(keys + counter_keys) == sorted(state)
    flats = [state[k].detach().numpy().reshape(-1) for k in keys]
    wide = [f.astype(np.float64) for f in flats]
    l1 = expected[f"{prefix}_l1"]
    errors = np.abs([w.sum() for w in wide] - expected[f"{prefix}_sum"])
    assert not [k for k, e, a in zip(keys, errors, l1) if e > tol * a], "sums differ"
    np.testing.assert_allclose([np.abs(w).sum() for w in wide], l1, rtol=tol)
    np.testing.assert_allclose([(w * w).sum() for w in wide], expected[f"{prefix}_sumsq"], rtol=tol)
    values = np.stack([f[i] for f, i in zip(flats, expected[f"{prefix}_index"])])
    np.testing.assert_allclose(values, expected[f"{prefix}_value"], rtol=tol, atol=tol)


def test_checkpoint_resumes_float32_training_as_pytorch(checkpoint_path, expected):
    """The checkpoint's own dtype. The losses and running statistics; the gradients are
    too sensitive in float32 to compare element by element (the float64 test does)."""
    losses, state = resume(checkpoint_path, expected, rustgrad.float32)
    np.testing.assert_allclose(losses, expected["f32_loss"], rtol=0, atol=F32_TOL)
    buffers = {k: v for k, v in state.items() if k.startswith("final.")}
    check_summaries("f32", buffers, expected, F32_TOL)


# Both formats load bit-identical states (the first test), so one format is enough here.
@pytest.mark.parametrize("checkpoint_path", ["zip"], indirect=True)
def test_checkpoint_resumes_float64_training_as_pytorch(checkpoint_path, expected):
    """``model.double()`` after loading: the whole trajectory, parameters' changes and
    momentum buffers included, matches PyTorch's float64 run (where rounding cannot
    flip a ReLU, so every element is reproducible)."""
    losses, state = resume(checkpoint_path, expected, rustgrad.float64)
    np.testing.assert_allclose(losses, expected["f64_loss"], rtol=0, atol=F64_TOL)
    check_summaries("f64", state, expected, F64_TOL)
