"""``rustgrad.nn.utils``: gradient clipping against numpy, parameter/vector
conversion and ``rnn.pad_sequence``."""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad
from rustgrad import nn
from rustgrad.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    parameters_to_vector,
    vector_to_parameters,
)
from rustgrad.nn.utils.rnn import pad_sequence


def params_with_grads(scale: float) -> tuple[list[nn.Parameter], list[np.ndarray]]:
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) * scale for s in [(3, 4), (5,), (2, 2, 2)]]
    params = []
    for g in grads:
        p = nn.Parameter(rustgrad.zeros(*g.shape))
        p.grad = rustgrad.tensor(g.copy())
        params.append(p)
    return params, grads


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("scale", [0.01, 10.0])
def test_clip_grad_norm_matches_numpy(norm_type: float, scale: float) -> None:
    params, grads = params_with_grads(scale)
    flat = np.concatenate([g.ravel() for g in grads]).astype(np.float64)
    if norm_type == math.inf:
        total = np.abs(flat).max()
    else:
        total = (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    max_norm = 1.0
    returned = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert returned.dim() == 0
    assert returned.item() == pytest.approx(total, rel=1e-5)
    coef = min(max_norm / (total + 1e-6), 1.0)
    for p, g in zip(params, grads):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5, atol=1e-7)
    if coef < 1.0:
        clipped = np.concatenate([p.grad.numpy().ravel() for p in params]).astype(np.float64)
        got = (
            np.abs(clipped).max()
            if norm_type == math.inf
            else ((np.abs(clipped) ** norm_type).sum() ** (1 / norm_type))
        )
        assert got == pytest.approx(max_norm, rel=1e-4)


def test_clip_grad_norm_single_tensor_no_grads_and_nonfinite() -> None:
    p = nn.Parameter(rustgrad.ones(4))
    assert clip_grad_norm_(p, 1.0).item() == 0.0
    p.grad = rustgrad.full((4,), 3.0)
    assert clip_grad_norm_(p, 1.0).item() == pytest.approx(6.0)
    np.testing.assert_allclose(p.grad.numpy(), np.full(4, 3.0 / (6.0 + 1e-6)), rtol=1e-6)
    p.grad = rustgrad.tensor([1.0, float("nan"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    assert math.isnan(clip_grad_norm_(p, 1.0).item())


def test_clip_grad_value_clamps_in_place() -> None:
    params, grads = params_with_grads(2.0)
    clip_grad_value_(params, 0.5)
    for p, g in zip(params, grads):
        np.testing.assert_array_equal(p.grad.numpy(), np.clip(g, -0.5, 0.5))


def test_parameters_to_vector_and_back() -> None:
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    vec = parameters_to_vector(model.parameters())
    want = np.concatenate([p.detach().numpy().ravel() for p in model.parameters()])
    np.testing.assert_array_equal(vec.detach().numpy(), want)
    assert vec.requires_grad  # differentiable, as PyTorch
    new = rustgrad.arange(vec.numel(), dtype=rustgrad.float32)
    vector_to_parameters(new, model.parameters())
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(model[1].bias.detach().numpy(), [10.0])
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in model.parameters())
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        vector_to_parameters([1.0], model.parameters())


def test_pad_sequence_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    seqs = [rng.standard_normal((n, 2)).astype(np.float32) for n in (3, 1, 4)]
    tensors = [rustgrad.tensor(s, requires_grad=True) for s in seqs]
    want = np.full((3, 4, 2), -1.0, dtype=np.float32)
    for i, s in enumerate(seqs):
        want[i, : len(s)] = s
    out = pad_sequence(tensors, batch_first=True, padding_value=-1.0)
    np.testing.assert_array_equal(out.detach().numpy(), want)
    np.testing.assert_array_equal(
        pad_sequence(tensors).detach().numpy(),
        np.where(want == -1.0, 0.0, want).transpose(1, 0, 2),
    )
    left = pad_sequence(tensors, batch_first=True, padding_side="left").detach().numpy()
    np.testing.assert_array_equal(left[1, :3], np.zeros((3, 2)))
    np.testing.assert_array_equal(left[1, 3], seqs[1][0])
    out.sum().backward()
    for t in tensors:
        np.testing.assert_array_equal(t.grad.numpy(), np.ones(t.shape))
    with pytest.raises(ValueError, match="padding_side"):
        pad_sequence(tensors, padding_side="middle")
