"""``nn.utils.parametrize``, ``nn.utils.parametrizations`` (weight_norm, spectral_norm,
orthogonal) and the legacy hook-based ``nn.utils.weight_norm`` / ``spectral_norm``:
PyTorch 2.15 state dicts load into the parametrized modules and give PyTorch's outputs,
gradients and updated buffers (tests/vectors/parametrize_21.json, written by
tests/vectors/generate_parametrize_21.py), the state dicts come back with PyTorch's
keys, and the parametrize API behaves as PyTorch's. See Note [Parametrizations]."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn as nn
from rustgrad.autograd import gradcheck
from rustgrad.nn.utils import parametrizations as P
from rustgrad.nn.utils import parametrize

VECTORS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "parametrize_21.json").read_text()
)["cases"]
CASES = {c["name"]: c for c in VECTORS}
WRAPS = {
    "parametrizations.weight_norm": P.weight_norm,
    "parametrizations.spectral_norm": P.spectral_norm,
    "parametrizations.orthogonal": P.orthogonal,
    "weight_norm": nn.utils.weight_norm,
    "spectral_norm": nn.utils.spectral_norm,
}


def _tensor(spec: dict[str, Any]) -> Any:
    return torch.tensor(spec["data"], dtype=getattr(torch, spec["dtype"])).reshape(spec["shape"])


def _close(got: Any, spec: dict[str, Any]) -> None:
    assert list(got.shape) == spec["shape"]
    tol = 1e-10 if spec["dtype"] == "float64" else 1e-5
    want = np.asarray(spec["data"], dtype=np.float64).reshape(spec["shape"])
    np.testing.assert_allclose(got.detach().double().numpy(), want, rtol=tol, atol=tol)


def _build(case: dict[str, Any]) -> Any:
    dtype = getattr(torch, case["state_dict"][next(iter(case["state_dict"]))]["dtype"])
    module = getattr(nn, case["module"])(**case["kwargs"]).to(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return WRAPS[case["wrap"]](module, **case["wrap_kwargs"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_pytorch_state_dict_gives_pytorchs_outputs_and_gradients(name: str) -> None:
    case = CASES[name]
    module = _build(case)
    assert type(module).__name__ == case["class_name"]
    assert list(module.state_dict()) == list(case["state_dict"])
    module.load_state_dict({k: _tensor(v) for k, v in case["state_dict"].items()})
    module.train(case["mode"] == "train")
    x = _tensor(case["input"]).requires_grad_()
    out = module(x)
    _close(out, case["output"])
    out.backward(_tensor(case["grad_output"]))
    params = dict(module.named_parameters())
    assert sorted(params) == sorted(k for k in case["grads"] if k != "input")
    for key, want in case["grads"].items():
        _close(x.grad if key == "input" else params[key].grad, want)
    after = module.state_dict()
    assert list(after) == list(case["state_dict_after"])
    for key, want in case["state_dict_after"].items():
        _close(after[key], want)


def test_vectors_cover_every_parametrization() -> None:
    assert {c["wrap"] for c in VECTORS} == set(WRAPS)


def test_state_dict_round_trips_between_parametrized_modules() -> None:
    a = P.weight_norm(nn.Linear(4, 3))
    b = P.weight_norm(nn.Linear(4, 3))
    b.load_state_dict(a.state_dict())
    x = torch.randn(2, 4)
    assert torch.equal(a(x), b(x))
    c = P.orthogonal(nn.Linear(5, 3))
    d = P.orthogonal(nn.Linear(5, 3))
    d.load_state_dict(c.state_dict())
    assert torch.equal(c.weight, d.weight)


class _Symmetric(nn.Module):
    def forward(self, X: Any) -> Any:
        return X.triu() + X.triu(1).transpose(-1, -2)

    def right_inverse(self, A: Any) -> Any:
        return A.triu()


class _Split(nn.Module):
    """A parametrization of two tensors: ``right_inverse`` returns a pair."""

    def forward(self, A: Any, B: Any) -> Any:
        return A + B

    def right_inverse(self, X: Any) -> tuple[Any, Any]:
        return X / 2, X / 2


def test_register_parametrization_swaps_the_class_and_moves_the_parameter() -> None:
    m = nn.Linear(3, 3)
    weight = m.weight
    parametrize.register_parametrization(m, "weight", _Symmetric())
    assert type(m).__name__ == "ParametrizedLinear"
    assert isinstance(m, nn.Linear)
    assert parametrize.type_before_parametrizations(m) is nn.Linear
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "bias")
    # the original keeps the Parameter object (optimizers need not be rebuilt)
    assert m.parametrizations.weight.original is weight
    assert torch.equal(m.weight, m.weight.T)
    assert sorted(m.state_dict()) == ["bias", "parametrizations.weight.original"]
    # another instance of Linear is untouched
    assert type(nn.Linear(2, 2)).__name__ == "Linear"
    # assigning goes through right_inverse
    value = torch.randn(3, 3)
    value = value + value.T
    m.weight = value
    assert torch.allclose(m.weight, value)
    assert torch.equal(m.parametrizations.weight.original, value.triu())
    # gradients reach the original
    m(torch.randn(2, 3)).sum().backward()
    assert weight.grad is not None and torch.equal(weight.grad, weight.grad.triu())


def test_chained_parametrizations_and_removal() -> None:
    m = nn.Linear(3, 3)
    parametrize.register_parametrization(m, "weight", _Symmetric())
    parametrize.register_parametrization(m, "weight", _Symmetric())
    assert len(m.parametrizations.weight) == 2
    value = m.weight.detach().clone()
    original = m.parametrizations.weight.original
    parametrize.remove_parametrizations(m, "weight")
    assert type(m).__name__ == "Linear" and not hasattr(m, "parametrizations")
    assert m.weight is original and torch.allclose(m.weight, value)
    assert sorted(m.state_dict()) == ["bias", "weight"]
    m2 = nn.Linear(3, 3)
    parametrize.register_parametrization(m2, "weight", _Symmetric())
    stored = m2.parametrizations.weight.original.detach().clone()
    parametrize.remove_parametrizations(m2, "weight", leave_parametrized=False)
    assert torch.equal(m2.weight, stored)
    with pytest.raises(ValueError, match="does not have a parametrization on weight"):
        parametrize.remove_parametrizations(m2, "weight")


def test_multi_tensor_right_inverse_gives_original0_original1() -> None:
    m = nn.Linear(2, 3)
    w = m.weight.detach().clone()
    parametrize.register_parametrization(m, "weight", _Split())
    plist = m.parametrizations.weight
    assert plist.ntensors == 2 and not plist.is_tensor
    assert torch.allclose(plist.original0, w / 2) and torch.allclose(m.weight, w)
    assert isinstance(plist.original0, nn.Parameter)
    assert sorted(m.state_dict()) == [
        "bias",
        "parametrizations.weight.original0",
        "parametrizations.weight.original1",
    ]
    with pytest.raises(ValueError, match="Cannot leave unparametrized"):
        parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    parametrize.remove_parametrizations(m, "weight")
    assert torch.allclose(m.weight, w) and isinstance(m.weight, nn.Parameter)


def test_cached_computes_each_parametrized_tensor_once() -> None:
    calls = []

    class Counting(nn.Module):
        def forward(self, X: Any) -> Any:
            calls.append(1)
            return X * 2

    m = nn.Linear(2, 2)
    parametrize.register_parametrization(m, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        a = m.weight
        b = m.weight
    assert a is b and len(calls) == 1
    _ = m.weight
    assert len(calls) == 2


def test_bad_parametrizations_raise_pytorchs_errors() -> None:
    class Shrink(nn.Module):
        def forward(self, X: Any) -> Any:
            return X[:1]

    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shrink())
    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", Shrink(), unsafe=True)
    assert tuple(m.weight.shape) == (1, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized"):
        parametrize.register_parametrization(nn.Linear(2, 2), "nothing", _Symmetric())
    m = parametrize.register_parametrization(nn.Linear(2, 2), "weight", _Symmetric())
    with pytest.raises(RuntimeError, match="Serialization of parametrized modules is only"):
        pickle.dumps(m)
    clone = copy.deepcopy(m)
    assert torch.equal(clone.weight, m.weight)
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        P.orthogonal(nn.Linear(2, 2), orthogonal_map="nope")
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices"):
        P.orthogonal(nn.Linear(2, 2), "bias")
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        P.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_weight_norm_and_orthogonal_gradcheck_float64() -> None:
    for module in [
        P.weight_norm(nn.Linear(3, 2).double()),
        P.weight_norm(nn.Linear(3, 2).double(), dim=None),
        P.orthogonal(nn.Linear(3, 3, bias=False).double()),
        P.orthogonal(nn.Linear(4, 2, bias=False).double()),
        P.orthogonal(nn.Linear(3, 3, bias=False).double(), orthogonal_map="cayley"),
    ]:
        plist = module.parametrizations.weight
        names = ["original"] if plist.is_tensor else ["original0", "original1"]
        originals = [getattr(plist, n).detach().clone().requires_grad_() for n in names]
        if len(names) == 1:
            originals[0] = (originals[0] + 0.1 * torch.randn_like(originals[0])).detach()
            originals[0].requires_grad_()

        def weight(*tensors: Any, plist: Any = plist) -> Any:
            x = plist[0](*tensors)
            return x

        assert gradcheck(weight, originals)


def test_spectral_norm_eval_divides_by_sigma_of_the_stored_vectors() -> None:
    m = P.spectral_norm(nn.Linear(5, 4).double()).eval()
    W = m.parametrizations.weight.original
    u, v = m.parametrizations.weight[0]._u, m.parametrizations.weight[0]._v
    sigma = torch.dot(u, torch.mv(W, v))
    assert torch.allclose(m.weight, W / sigma)
    # 15 power iterations at registration: close to the largest singular value
    assert abs(sigma.item() - np.linalg.svd(W.detach().numpy())[1][0]) < 1e-3


def test_legacy_weight_norm_and_spectral_norm() -> None:
    with pytest.warns(FutureWarning, match="torch.nn.utils.weight_norm` is deprecated"):
        m = nn.utils.weight_norm(nn.Linear(4, 3))
    assert list(m.state_dict()) == ["bias", "weight_g", "weight_v"]
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            nn.utils.weight_norm(m)
    x = torch.randn(2, 4)
    y = m(x)
    nn.utils.remove_weight_norm(m)
    assert list(m.state_dict()) == ["bias", "weight"]
    assert torch.allclose(m(x), y)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found in"):
        nn.utils.remove_weight_norm(m)
    s = nn.utils.spectral_norm(nn.Linear(4, 3))
    assert list(s.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert s.state_dict()._metadata[""]["spectral_norm"] == {"weight.version": 1}
    s.eval()
    y = s(x)
    nn.utils.remove_spectral_norm(s)
    assert list(s.state_dict()) == ["bias", "weight"]
    assert torch.allclose(s(x), y)
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found in"):
        nn.utils.remove_spectral_norm(s)
