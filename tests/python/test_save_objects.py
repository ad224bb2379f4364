"""``rustgrad.save`` of any object ``torch.save`` accepts (whole modules, optimizers,
arbitrary picklables) and ``load(..., weights_only=False)`` of it. See Note
[Checkpoints]: safetensors where the object is representable, PyTorch's zip format
otherwise, without the user choosing.
"""

from __future__ import annotations

import io
import pickle
import re

import pytest
import rustgrad as torch
from rustgrad import nn

ZIP = b"PK\x03\x04"


class TiedNet(nn.Module):
    """Two layers sharing one weight, a buffer and a plain attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(4, 4, bias=False)
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 4))
        self.head = nn.Linear(4, 4, bias=False)
        self.head.weight = self.embed.weight
        self.register_buffer("scale", torch.tensor(2.0))
        self.name = "tied"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(self.embed(x))) * self.scale


class Holder:
    """An arbitrary picklable object holding tensors in attributes and containers."""

    def __init__(self, t: torch.Tensor) -> None:
        self.t = t
        self.view = t[1:]
        self.items = [t, {"again": t, "n": 3}]


def roundtrip(obj, **load_kwargs):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    data = buffer.getvalue()
    return data, torch.load(io.BytesIO(data), **load_kwargs)


def test_whole_module_round_trip():
    torch.manual_seed(0)
    model = TiedNet().eval()
    data, loaded = roundtrip(model, weights_only=False)
    assert data[:4] == ZIP
    assert type(loaded) is TiedNet and loaded.name == "tied" and not loaded.training
    assert loaded.head.weight is loaded.embed.weight
    assert all(isinstance(p, nn.Parameter) for p in loaded.parameters())
    assert all(p.requires_grad for p in loaded.parameters())
    x = torch.randn(3, 4)
    assert torch.equal(loaded(x), model(x))
    # The loaded module trains: one backward fills the tied weight's grad once.
    loaded.train()
    loaded(x).sum().backward()
    assert loaded.embed.weight.grad is not None


def test_whole_module_path_and_weights_only_refusal(tmp_path):
    model = TiedNet()
    torch.save(model, tmp_path / "model.pt")
    assert (tmp_path / "model.pt").read_bytes()[:4] == ZIP
    name = f"{TiedNet.__module__}.TiedNet"
    with pytest.raises(pickle.UnpicklingError) as caught:
        torch.load(tmp_path / "model.pt")
    message = str(caught.value)
    assert message.startswith("Weights only load failed.")
    assert f"Unsupported global: GLOBAL {name} was not an allowed global by default" in message
    assert "Re-running `torch.load` with `weights_only` set to `False` will likely succeed" in (
        message
    )
    # Allowlisting every class the file names is PyTorch's other way.
    unsafe = torch.serialization.get_unsafe_globals_in_checkpoint(tmp_path / "model.pt")
    assert name in unsafe
    assert isinstance(torch.load(tmp_path / "model.pt", weights_only=False), TiedNet)


def test_state_dicts_stay_safetensors():
    data, loaded = roundtrip(TiedNet().state_dict())
    assert data[:4] != ZIP and data[8:9] == b"{"
    assert set(loaded) == set(TiedNet().state_dict())


def test_model_and_optimizer_checkpoint_resumes_identically():
    torch.manual_seed(0)
    model = TiedNet()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.5, 0.9))
    x, y = torch.randn(5, 4), torch.randn(5, 4)

    def step(m, o):
        o.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        o.step()
        return loss.item()

    step(model, opt)
    data, loaded = roundtrip({"model": model, "opt": opt, "epoch": 1}, weights_only=False)
    assert data[:4] == ZIP and loaded["epoch"] == 1
    model2, opt2 = loaded["model"], loaded["opt"]
    assert type(opt2) is torch.optim.Adam
    params = list(model2.parameters())
    assert all(p is q for p, q in zip(opt2.param_groups[0]["params"], params))
    assert all(any(p is k for k in opt2.state) for p in params)
    # Both continue with the same losses and weights.
    assert [step(model, opt) for _ in range(3)] == [step(model2, opt2) for _ in range(3)]
    for a, b in zip(model.parameters(), model2.parameters()):
        assert torch.equal(a, b)


def test_arbitrary_picklables_keep_sharing():
    t = torch.arange(6.0)
    holder = Holder(t)
    data, loaded = roundtrip({"holder": holder, "tensor_keys": {t: 1}}, weights_only=False)
    assert data[:4] == ZIP
    h = loaded["holder"]
    assert type(h) is Holder and h.items[0] is h.t and h.items[1]["again"] is h.t
    assert torch.equal(h.t, t) and torch.equal(h.view, t[1:])
    h.t[1] = 100.0  # the view shares the loaded storage
    assert h.view[0].item() == 100.0
    assert list(loaded["tensor_keys"].values()) == [1]


def test_meta_tensors_save_and_load():
    meta = torch.empty(2, 3, device="meta", requires_grad=True)
    param = nn.Parameter(torch.empty(4, device="meta"))
    data, loaded = roundtrip({"meta": meta, "param": param})
    assert data[:4] == ZIP
    assert loaded["meta"].is_meta and loaded["meta"].shape == (2, 3)
    assert loaded["meta"].requires_grad and loaded["meta"].stride() == (3, 1)
    assert isinstance(loaded["param"], nn.Parameter) and loaded["param"].is_meta


def test_unpicklable_object_writes_nothing(tmp_path):
    model = nn.Sequential(nn.Linear(2, 2))
    model.fn = lambda x: x  # a lambda cannot be pickled, as with torch.save
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        torch.save(model, tmp_path / "m.pt")
    assert list(tmp_path.iterdir()) == []


def test_explicit_safetensors_refuses_a_module():
    with pytest.raises(TypeError, match=re.escape("cannot save an object of type TiedNet")):
        torch.save(TiedNet(), io.BytesIO(), format="safetensors")
