"""Device flags, the default device (``set_default_device``, ``with device(...)``), the
meta device, ``Module.to_empty`` / ``load_state_dict(assign=True)`` and ``DataParallel``.

Expected values and messages: tests/vectors/device_meta.json, written by PyTorch 2.15
(tests/vectors/generate_device_meta.py). See Note [Meta device].
"""

from __future__ import annotations

import copy
import io
import json
import pathlib
import pickle
import re
import threading
import warnings

import pytest
import rustgrad as torch
from rustgrad import nn

REF = json.loads((pathlib.Path(__file__).parents[1] / "vectors" / "device_meta.json").read_text())


def raises_like(key: str, fn) -> None:
    kind, message = REF["errors"][key]
    errors = {"RuntimeError": RuntimeError, "TypeError": TypeError, "ValueError": ValueError}
    errors["NotImplementedError"] = NotImplementedError
    with pytest.raises(errors[kind], match=re.escape(message)) as caught:
        fn()
    assert type(caught.value).__name__ == kind


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.bn = nn.BatchNorm2d(2)
        self.fc = nn.Linear(8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.relu(self.bn(self.conv(x))).flatten(1))


# ----------------------------------------------------------------- device flags


def test_cpu_tensor_flags_are_pytorchs():
    t = torch.ones(2)
    for name, value in REF["cpu_flags"].items():
        assert getattr(t, name) is value, name
    for name, value in REF["cpu_calls"].items():
        assert getattr(t, name)() is value, name
    raises_like("is_coalesced", t.is_coalesced)


def test_is_set_to():
    x = torch.ones(2, 3)
    assert x.is_set_to(x) and x.is_set_to(x[:])
    assert not x.is_set_to(x.view(3, 2)) and not x.is_set_to(x.clone())
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        x.is_set_to(1)


# ----------------------------------------------------------------- default device


def test_factories_follow_the_default_device():
    ref = REF["default_device"]
    makers = {
        "empty": lambda: torch.empty(2),
        "zeros": lambda: torch.zeros(2),
        "ones": lambda: torch.ones(2),
        "full": lambda: torch.full((2,), 1.0),
        "rand": lambda: torch.rand(2),
        "randn": lambda: torch.randn(2),
        "randint": lambda: torch.randint(3, (2,)),
        "randperm": lambda: torch.randperm(3),
        "arange": lambda: torch.arange(3),
        "linspace": lambda: torch.linspace(0, 1, 3),
        "logspace": lambda: torch.logspace(0, 1, 3),
        "eye": lambda: torch.eye(2),
        "tensor": lambda: torch.tensor([1.0, 2.0]),
        "explicit_cpu": lambda: torch.zeros(2, device="cpu"),
    }
    assert set(makers) == set(ref["factories"])
    cpu_tensor = torch.ones(2)
    with torch.device("meta"):
        assert str(torch.get_default_device()) == ref["default"]
        for name, make in makers.items():
            assert str(make().device) == ref["factories"][name], name
        assert str(torch.zeros_like(cpu_tensor).device) == ref["zeros_like_cpu"]
        assert str(torch.rand_like(cpu_tensor).device) == ref["rand_like_cpu"]
    assert torch.get_default_device() == torch.device("cpu")
    assert torch.zeros(2).device == torch.device("cpu")


def test_device_context_nests_and_is_per_thread():
    d = torch.device("meta")
    with d:
        with d:
            pass
        assert torch.empty(1).is_meta
        seen = []
        thread = threading.Thread(target=lambda: seen.append(torch.empty(1).device))
        thread.start()
        thread.join()
        assert seen == [torch.device("cpu")]
        with torch.device("cpu"):
            assert not torch.empty(1).is_meta
            assert torch.get_default_device() == torch.device("cpu")
        assert torch.empty(1).is_meta
    assert not torch.empty(1).is_meta
    # set_default_device inside a block lasts until the block ends.
    with torch.device("meta"):
        torch.set_default_device("cpu")
        assert not torch.empty(1).is_meta
    assert torch.get_default_device() == torch.device("cpu")


def test_set_default_device_meta():
    try:
        torch.set_default_device("meta")
        assert torch.get_default_device() == torch.device("meta")
        assert nn.Linear(2, 3).weight.is_meta
    finally:
        torch.set_default_device(None)
    assert not torch.zeros(1).is_meta


def test_default_device_bad_input():
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        with torch.device("cuda"):
            pass
    assert torch.get_default_device() == torch.device("cpu")
    with pytest.raises(RuntimeError, match="device type at start of device string: bogus"):
        torch.zeros(1, device="bogus")
    with pytest.raises(NotImplementedError, match="'MPS' backend"):
        torch.zeros(1, device="mps")


# ------------------------------------------------------------------------ meta


def test_meta_tensors_print_as_pytorch():
    ref = REF["reprs"]
    assert repr(torch.empty(3, 4, device="meta")) == ref["empty_3_4"]
    assert str(torch.empty(3, 4, device="meta")) == ref["empty_3_4"]
    assert repr(torch.empty(3, device="meta", dtype=torch.int64)) == ref["empty_int64"]
    assert repr(torch.empty(2, device="meta", dtype=torch.float64)) == ref["empty_float64"]
    assert repr(torch.empty(3, device="meta", requires_grad=True)) == ref["empty_requires_grad"]
    assert repr(nn.Parameter(torch.empty(2, device="meta"))) == ref["parameter"]
    assert str(nn.Parameter(torch.empty(2, device="meta"))) == ref["parameter"]
    assert repr(torch.empty(0, device="meta")) == ref["empty_0"]
    assert repr(torch.empty((), device="meta")) == ref["empty_scalar"]
    assert repr(torch.ones(2).to("meta")) == ref["to_meta"]


def test_meta_tensor_attributes_and_strides():
    x = torch.empty(2, 3, 4, device="meta", requires_grad=True)
    assert x.is_meta and not x.is_cpu and x.device == torch.device("meta")
    assert isinstance(x, torch.Tensor) and x.shape == (2, 3, 4) and x.dtype == torch.float32
    assert x.requires_grad and x.is_leaf
    assert list(x.stride()) == REF["strides"]["empty_2_3_4"] and x.stride(-1) == 1
    assert x.is_contiguous() and x.numel() == 24 and x.dim() == 3
    m = torch.empty(3, 4, device="meta")
    assert list(m.t().stride()) == REF["strides"]["t"] and not m.t().is_contiguous()
    assert list(x.permute(2, 0, 1).stride()) == REF["strides"]["permute"]
    assert list(m.view(12).stride()) == REF["strides"]["view"]


def test_meta_tensors_cost_no_memory():
    # 2**40 float32 elements: 4 TiB if it had storage.
    big = torch.empty(2**20, 2**20, device="meta")
    assert big.numel() == 2**40 and big.is_meta
    for made in (
        torch.zeros(2**40, device="meta"),
        torch.full((2**40,), 1.0, device="meta"),
        torch.randn(2**40, device="meta"),
        torch.randint(3, (2**40,), device="meta"),
    ):
        assert made.shape == (2**40,) and made.is_meta
    assert big.uniform_(-1, 1) is big and big.normal_() is big and big.zero_() is big
    assert big.t().shape == (2**20, 2**20) and big[0].shape == (2**20,)
    assert big.clone().is_meta and big.contiguous() is big and big.double().is_meta
    assert nn.init.kaiming_uniform_(big) is big
    with torch.device("meta"):
        layer = nn.Linear(2**16, 2**16)
    assert layer.weight.is_meta and layer.weight.shape == (2**16, 2**16)


def test_every_nn_init_function_accepts_meta_tensors():
    for name in (
        "uniform_ normal_ trunc_normal_ ones_ zeros_ eye_ xavier_uniform_ xavier_normal_ "
        "kaiming_uniform_ kaiming_normal_ orthogonal_"
    ).split():
        w = torch.empty(4, 3, device="meta")
        assert getattr(nn.init, name)(w) is w and w.is_meta, name
    w = torch.empty(4, 3, device="meta")
    assert nn.init.constant_(w, 0.5) is w and nn.init.sparse_(w, 0.5) is w
    w = torch.empty(4, 3, 3, 3, device="meta")
    assert nn.init.dirac_(w) is w


def test_meta_ops_give_meta_results():
    m = torch.empty(3, 4, device="meta")
    shapes = REF["shapes"]
    assert list((m @ torch.empty(4, 2, device="meta")).shape) == shapes["matmul"]
    assert list(m.sum().shape) == shapes["sum"] and m.sum().is_meta
    assert list(m.sum(1).shape) == shapes["sum_dim"]
    added = m + torch.empty(4, device="meta")
    assert list(added.shape) == shapes["add_broadcast"] and added.is_meta
    assert list(m[1:, None].shape) == shapes["getitem"]
    assert (m * 2).is_meta and (2 * m).is_meta and (-m).is_meta
    assert (m + torch.tensor(1.0)).is_meta  # a 0-dim CPU tensor is a scalar
    assert [p.shape for p in m.split(2)] == [(2, 4), (1, 4)]
    assert all(p.is_meta for p in m.unbind(0))
    assert m.to(torch.float64).dtype == torch.float64 and m.to("meta") is m
    assert torch.zeros_like(m).is_meta and torch.randn_like(m).is_meta
    cpu = torch.empty_like(m, device="cpu")
    assert not cpu.is_meta and cpu.shape == (3, 4)


def test_meta_data_access_raises_pytorchs_errors():
    m = torch.empty(3, 4, device="meta")
    raises_like("item", lambda: torch.empty((), device="meta").item())
    raises_like("tolist", m.tolist)
    raises_like("numpy", m.numpy)
    raises_like("cpu", m.cpu)
    raises_like("to_cpu", lambda: m.to("cpu"))
    raises_like("mixed_devices", lambda: m + torch.ones(3, 4))
    raises_like("bool", lambda: bool(m))
    with pytest.raises(NotImplementedError, match="'aten::nonzero' with arguments from the 'Meta'"):
        m.nonzero()
    with pytest.raises(RuntimeError, match="device type at start of device string"):
        m.to("bogus")


def test_meta_deepcopy_and_pickle_keep_meta():
    p = nn.Parameter(torch.empty(2, 3, device="meta"))
    for copied in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert copied.is_meta and isinstance(copied, nn.Parameter)
        assert copied.shape == (2, 3) and copied.requires_grad


def test_meta_module_then_load_state_dict_assign():
    torch.manual_seed(0)
    net = Net()
    buffer = io.BytesIO()
    torch.save(net.state_dict(), buffer)
    with torch.device("meta"):
        model = Net()
    assert all(p.is_meta for p in model.parameters())
    assert all(b.is_meta for b in model.buffers())
    assert isinstance(model.fc.weight, nn.Parameter)
    buffer.seek(0)
    state = torch.load(buffer, mmap=True, weights_only=True)
    result = model.load_state_dict(state, assign=True)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for name, value in model.state_dict().items():
        assert not value.is_meta and torch.equal(value, net.state_dict()[name]), name
    assert isinstance(model.fc.weight, nn.Parameter) and model.fc.weight.requires_grad
    x = torch.randn(2, 1, 4, 4)
    assert torch.allclose(model(x), net(x))


def test_load_state_dict_assign_on_cpu_modules():
    src, dst = nn.Linear(2, 3), nn.Linear(2, 3)
    state = {k: v.clone() for k, v in src.state_dict().items()}
    dst.load_state_dict(state, assign=True)
    assert dst.weight.data_ptr() == state["weight"].data_ptr()
    assert isinstance(dst.weight, nn.Parameter) and dst.weight.requires_grad
    frozen = nn.Linear(2, 3).requires_grad_(False)
    frozen.load_state_dict(nn.Linear(2, 3).state_dict(keep_vars=True), assign=True)
    assert not frozen.weight.requires_grad


def test_copying_into_meta_parameters_warns():
    with torch.device("meta"):
        model = nn.Linear(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.load_state_dict(nn.Linear(2, 3).state_dict())
    assert str(caught[0].message) == REF["meta_copy_warning"]
    assert model.weight.is_meta


def test_module_to_empty_and_to_meta():
    with torch.device("meta"):
        model = Net()
    raises_like("module_to_cpu", lambda: model.to("cpu"))
    assert model.to_empty(device="cpu") is model
    for t in [*model.parameters(), *model.buffers()]:
        assert not t.is_meta
    assert all(isinstance(p, nn.Parameter) for p in model.parameters())
    assert model(torch.randn(1, 1, 4, 4)).shape == (1, 3)
    cpu = Net().to("meta")
    assert all(t.is_meta for t in [*cpu.parameters(), *cpu.buffers()])
    with torch.device("meta"):
        outer = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
    outer.to_empty(device="cpu", recurse=False)
    assert outer[0].weight.is_meta


# ------------------------------------------------------------------ DataParallel


def test_data_parallel_wraps_the_module_on_cpu():
    ref = REF["data_parallel"]
    torch.manual_seed(0)
    inner = nn.Linear(2, 3)
    dp = nn.DataParallel(inner, device_ids=[0, 1], output_device=0, dim=1)
    assert nn.parallel.DataParallel is nn.DataParallel
    assert dp.module is inner and repr(dp) == ref["repr"]
    assert list(dp.state_dict()) == ref["state_dict_keys"] and dp.device_ids == ref["device_ids"]
    assert hasattr(dp, "dim") is ref["has_dim"]
    assert hasattr(dp, "output_device") is ref["has_output_device"]
    x = torch.randn(4, 2)
    assert torch.equal(dp(x), inner(x))
    kind, message = ref["functional_error"]
    with pytest.raises(RuntimeError, match=re.escape(message)):
        nn.parallel.data_parallel(inner, x)
    # A checkpoint of the wrapper loads back into a wrapper.
    other = nn.DataParallel(nn.Linear(2, 3))
    other.load_state_dict(dp.state_dict())
    assert torch.equal(other(x), dp(x))


def test_module_to_reads_devices():
    model = nn.Linear(2, 2)
    assert model.to("cpu", torch.float64).weight.dtype == torch.float64
    assert model.to(torch.device("cpu")) is model and model.weight.device.type == "cpu"
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        model.to(0)
    with pytest.raises(RuntimeError, match="device type at start of device string: bogus"):
        model.to("bogus")
