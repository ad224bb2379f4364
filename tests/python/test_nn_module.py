"""``rustgrad.nn.Module``: registration on assignment, naming, state_dict and its load
errors, hooks (forward and full backward), train/eval, dtype conversion, deepcopy and
pickling, and ``repr`` of nested models exactly as PyTorch prints them (expected reprs
and names from tests/vectors/nn_layers.json, written by generate_nn_layers.py)."""

from __future__ import annotations

import copy
import json
import math
import pickle
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn.functional as F
from rustgrad import nn

MODELS = json.loads(
    (Path(__file__).resolve().parents[1] / "vectors" / "nn_layers.json").read_text()
)["models"]


class TheModelClass(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: rustgrad.Tensor) -> rustgrad.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


class Block(nn.Module):
    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = (
            nn.Sequential(
                nn.Conv2d(channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )
            if stride != 1
            else None
        )


def nested() -> nn.Module:
    shared = nn.Linear(4, 4)
    return nn.Sequential(
        OrderedDict(
            stem=nn.Conv2d(3, 4, 3, padding=1, bias=False),
            layer1=nn.Sequential(Block(4), Block(4, stride=2)),
            blocks=nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), shared, shared]),
            heads=nn.ModuleDict({"cls": nn.Linear(4, 10), "drop": nn.Dropout(0.1)}),
            extra=nn.ParameterList(
                [nn.Parameter(rustgrad.zeros(2, 3)), nn.Parameter(rustgrad.zeros(4))]
            ),
            table=nn.ParameterDict({"a": nn.Parameter(rustgrad.zeros(3))}),
            empty=nn.ModuleList(),
        )
    )


@pytest.mark.parametrize(
    ("name", "build"), [("the_model_class", TheModelClass), ("nested", nested)]
)
def test_repr_and_names_of_nested_models_match_pytorch(name: str, build: Any) -> None:
    want = MODELS[name]
    model = build()
    assert repr(model) == want["repr"]
    assert [[n, list(p.shape)] for n, p in model.named_parameters()] == want["named_parameters"]
    assert [n for n, _ in model.named_buffers()] == want["named_buffers"]
    assert [n for n, _ in model.named_modules()] == want["named_modules"]
    assert [n for n, _ in model.named_children()] == want["named_children"]
    assert list(model.state_dict().keys()) == want["state_dict_keys"]


def test_registration_on_assignment_and_plain_tensors_are_not_registered() -> None:
    m = nn.Module()
    m.w = nn.Parameter(rustgrad.ones(2))
    m.t = rustgrad.ones(3)
    m.sub = nn.Linear(2, 2)
    m.register_buffer("buf", rustgrad.zeros(1))
    m.register_buffer("tmp", rustgrad.zeros(1), persistent=False)
    assert [n for n, _ in m.named_parameters()] == ["w", "sub.weight", "sub.bias"]
    assert [n for n, _ in m.named_buffers()] == ["buf", "tmp"]
    assert list(m.state_dict()) == ["w", "buf", "sub.weight", "sub.bias"]
    assert "t" not in dict(m.named_parameters()) and "t" in m.__dict__
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["w"]
    del m.w
    assert [n for n, _ in m.named_parameters()] == ["sub.weight", "sub.bias"]
    with pytest.raises(AttributeError):
        _ = m.w
    # A Parameter replaces a plain attribute of the same name, and the other way round.
    m.t = nn.Parameter(rustgrad.ones(1))
    assert "t" in dict(m.named_parameters()) and "t" not in m.__dict__
    assert set(dir(m)) >= {"t", "sub", "buf", "forward"}


def test_replacing_a_layer_registers_the_fresh_trainable_layer() -> None:
    model = TheModelClass()
    for p in model.parameters():
        p.requires_grad = False
    old = model.fc3
    model.fc3 = nn.Linear(84, 100)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["fc3.weight", "fc3.bias"]
    assert model.fc3 is not old
    assert model(rustgrad.randn(2, 3, 32, 32)).shape == (2, 100)


def test_shared_parameters_are_listed_once_unless_remove_duplicate_is_false() -> None:
    m = nn.Module()
    m.a = nn.Linear(2, 2)
    m.b = m.a
    assert [n for n, _ in m.named_parameters()] == ["a.weight", "a.bias"]
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4
    assert [n for n, _ in m.named_modules()] == ["", "a"]


def test_get_submodule_and_get_parameter() -> None:
    model = nested()
    assert model.get_submodule("layer1.1.downsample.0") is model.layer1[1].downsample[0]
    assert model.get_parameter("layer1.0.bn1.weight") is model.layer1[0].bn1.weight
    assert model.get_buffer("layer1.0.bn1.running_mean") is model.layer1[0].bn1.running_mean
    with pytest.raises(AttributeError, match="has no attribute `nope`"):
        model.get_submodule("layer1.nope")
    with pytest.raises(AttributeError, match="is not an nn.Parameter"):
        model.get_parameter("layer1.0.bn1.running_mean")


def test_assigning_wrong_types_raises_pytorchs_type_errors() -> None:
    lin = nn.Linear(2, 3)
    with pytest.raises(TypeError) as info:
        lin.weight = rustgrad.ones(3, 2)
    assert str(info.value) == (
        "cannot assign 'rustgrad.FloatTensor' as parameter 'weight' "
        "(torch.nn.Parameter or None expected)"
    )
    model = TheModelClass()
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'fc1'"):
        model.fc1 = 3
    bn = nn.BatchNorm1d(2)
    with pytest.raises(TypeError, match="as buffer 'running_mean'"):
        bn.running_mean = [1.0, 2.0]
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    assert "bias" in lin._parameters


def test_module_without_forward_raises_not_implemented() -> None:
    with pytest.raises(
        NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'
    ):
        nn.Module()(rustgrad.ones(1))
    with pytest.raises(RuntimeError, match="should not be called"):
        nn.ParameterList()(1)


def test_state_dict_values_are_detached_and_keep_vars_keeps_parameters() -> None:
    model = TheModelClass()
    sd = model.state_dict()
    assert all(not v.requires_grad and v.grad_fn is None for v in sd.values())
    # Detached values share the parameters' storage, as PyTorch's.
    with rustgrad.no_grad():
        sd["fc3.bias"].fill_(7.0)
    assert model.fc3.bias[0].item() == 7.0
    kept = model.state_dict(keep_vars=True)
    assert kept["fc1.weight"] is model.fc1.weight
    prefixed = model.state_dict(prefix="net.")
    assert next(iter(prefixed)) == "net.conv1.weight"


def test_batchnorm_buffers_are_in_the_state_dict_and_round_trip() -> None:
    bn = nn.BatchNorm2d(3)
    bn(rustgrad.randn(2, 3, 4, 4))
    sd = bn.state_dict()
    assert list(sd) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert sd["num_batches_tracked"].item() == 1
    fresh = nn.BatchNorm2d(3)
    result = fresh.load_state_dict(sd)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    np.testing.assert_array_equal(fresh.running_mean.numpy(), bn.running_mean.numpy())
    assert fresh.num_batches_tracked.item() == 1


def test_load_state_dict_lists_every_problem_and_changes_nothing() -> None:
    model = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    bad = {k: v.clone() + 1 for k, v in model.state_dict().items()}
    del bad["1.bias"]
    bad["0.weight"] = rustgrad.zeros(4, 2)
    bad["extra.weight"] = rustgrad.zeros(1)
    with pytest.raises(RuntimeError) as info:
        model.load_state_dict(bad)
    assert str(info.value) == (
        "Error(s) in loading state_dict for Sequential:\n"
        '\tMissing key(s) in state_dict: "1.bias". \n'
        '\tUnexpected key(s) in state_dict: "extra.weight". \n'
        "\tsize mismatch for 0.weight: copying a param with shape torch.Size([4, 2]) from "
        "checkpoint, the shape in current model is torch.Size([3, 2])."
    )
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k].numpy(), err_msg=k)
    # strict=False reports the keys and loads the rest; size mismatches still raise.
    del bad["0.weight"]
    result = model.load_state_dict(bad, strict=False)
    assert result.missing_keys == ["0.weight", "1.bias"]
    assert result.unexpected_keys == ["extra.weight"]
    np.testing.assert_array_equal(model[1].weight.detach().numpy(), bad["1.weight"].numpy())


def test_load_state_dict_assign_takes_the_tensors() -> None:
    lin = nn.Linear(2, 2)
    sd = {"weight": rustgrad.ones(2, 2), "bias": rustgrad.zeros(2)}
    lin.load_state_dict(sd, assign=True)
    assert isinstance(lin.weight, nn.Parameter) and lin.weight.requires_grad
    np.testing.assert_array_equal(lin.weight.detach().numpy(), np.ones((2, 2)))


def test_train_eval_zero_grad_requires_grad_and_apply() -> None:
    model = nested()
    assert model.training and model.heads.drop.training
    model.eval()
    assert not any(m.training for m in model.modules())
    model.train()
    assert all(m.training for m in model.modules())
    model.heads.cls(rustgrad.ones(1, 4)).sum().backward()
    assert model.heads.cls.weight.grad is not None
    model.zero_grad(set_to_none=False)
    assert model.heads.cls.weight.grad.abs().sum().item() == 0
    model.zero_grad()
    assert model.heads.cls.weight.grad is None
    model.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())
    seen: list[str] = []
    model.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Sequential" and seen.count("Block") == 2


def test_to_double_float_half_convert_floating_parameters_and_buffers() -> None:
    bn = nn.BatchNorm1d(2)
    weight = bn.weight
    bn.double()
    assert bn.weight.dtype == rustgrad.float64 and bn.running_mean.dtype == rustgrad.float64
    assert bn.num_batches_tracked.dtype == rustgrad.int64
    assert bn.weight is weight  # converted in place, as PyTorch
    bn.float()
    assert bn.weight.dtype == rustgrad.float32
    bn.half()
    assert bn.running_var.dtype == rustgrad.float16
    bn.to(rustgrad.float64)
    assert bn.bias.dtype == rustgrad.float64
    with pytest.raises(TypeError, match="only accepts floating point"):
        bn.to(rustgrad.int64)
    lin = nn.Linear(2, 2).double()
    assert lin(rustgrad.ones(1, 2, dtype=rustgrad.float64)).dtype == rustgrad.float64


def test_forward_pre_and_post_hooks_replace_inputs_and_outputs() -> None:
    lin = nn.Linear(2, 2)
    calls: list[str] = []

    def pre(module: nn.Module, args: tuple[Any, ...]) -> Any:
        calls.append("pre")
        return (args[0] * 0,)

    def post(module: nn.Module, args: tuple[Any, ...], out: Any) -> Any:
        calls.append("post")
        return out + 1

    h1 = lin.register_forward_pre_hook(pre)
    h2 = lin.register_forward_hook(post)
    out = lin(rustgrad.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), lin.bias.detach().numpy()[None] + 1, rtol=1e-6)
    assert calls == ["pre", "post"]
    h1.remove()
    h2.remove()
    assert not lin._forward_hooks and not lin._forward_pre_hooks
    kw: list[Any] = []
    lin.register_forward_hook(lambda m, a, k, o: kw.append(k), with_kwargs=True)
    lin(input=rustgrad.ones(1, 2))
    assert list(kw[0]) == ["input"]


def test_a_forward_that_raises_leaves_hooks_and_state_consistent() -> None:
    class Boom(nn.Module):
        def forward(self, x: Any) -> Any:
            raise ValueError("boom")

    m = Boom()
    seen: list[str] = []
    m.register_forward_pre_hook(lambda mod, args: seen.append("pre"))
    m.register_forward_hook(lambda mod, args, out: seen.append("post"))
    m.register_forward_hook(lambda mod, args, out: seen.append(f"always {out}"), always_call=True)
    with pytest.raises(ValueError, match="boom"):
        m(rustgrad.ones(1))
    assert seen == ["pre", "always None"]
    assert len(m._forward_hooks) == 2 and len(m._forward_pre_hooks) == 1 and m.training


def test_full_backward_hooks_see_and_replace_gradients() -> None:
    lin = nn.Linear(3, 2)
    x = rustgrad.randn(4, 3, requires_grad=True)
    upstream = rustgrad.randn(4, 2)
    records: dict[str, Any] = {}

    def pre_hook(module: nn.Module, grad_output: tuple[Any, ...]) -> Any:
        records["pre"] = grad_output
        return (grad_output[0] * 2,)

    def hook(module: nn.Module, grad_input: tuple[Any, ...], grad_output: tuple[Any, ...]) -> Any:
        records["grad_input"] = grad_input
        records["grad_output"] = grad_output
        return (grad_input[0] * 0 + 5,)

    lin.register_full_backward_pre_hook(pre_hook)
    lin.register_full_backward_hook(hook)
    lin(x).backward(upstream)
    w = lin.weight.detach().numpy()
    up = upstream.numpy()
    np.testing.assert_allclose(records["pre"][0].numpy(), up, rtol=1e-6)
    np.testing.assert_allclose(records["grad_output"][0].numpy(), 2 * up, rtol=1e-6)
    np.testing.assert_allclose(records["grad_input"][0].numpy(), 2 * up @ w, rtol=1e-5)
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 3), 5.0, dtype=np.float32))
    # Parameter gradients are not affected by the grad_input replacement.
    np.testing.assert_allclose(
        lin.weight.grad.numpy(), 2 * up.T @ x.detach().numpy(), rtol=1e-5, atol=1e-6
    )


def test_full_backward_hook_without_input_grad_gets_none() -> None:
    lin = nn.Linear(3, 2)
    got: list[Any] = []
    lin.register_full_backward_hook(lambda m, gi, go: got.append((gi, go)))
    lin(rustgrad.randn(1, 3)).sum().backward()
    assert got[0][0] == (None,)
    np.testing.assert_array_equal(got[0][1][0].numpy(), np.ones((1, 2), dtype=np.float32))


def test_global_forward_hooks_run_for_every_module() -> None:
    names: list[str] = []
    handle = nn.register_module_forward_hook(lambda m, a, o: names.append(type(m).__name__))
    try:
        nn.Sequential(nn.Linear(2, 2), nn.ReLU())(rustgrad.ones(1, 2))
    finally:
        handle.remove()
    assert names == ["Linear", "ReLU", "Sequential"]


def test_deepcopy_copies_parameters_buffers_and_sharing() -> None:
    model = nested()
    model.heads.cls.weight.grad = rustgrad.ones(10, 4)
    clone = copy.deepcopy(model)
    assert repr(clone) == repr(model)
    assert clone.blocks[3] is clone.blocks[4]
    assert clone.blocks[3] is not model.blocks[3]
    assert isinstance(clone.stem.weight, nn.Parameter) and clone.stem.weight.requires_grad
    np.testing.assert_array_equal(clone.heads.cls.weight.grad.numpy(), np.ones((10, 4)))
    with rustgrad.no_grad():
        clone.stem.weight.fill_(3.0)
    assert model.stem.weight.detach().numpy().max() != 3.0
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(model.stem.weight * 2)


def test_pickle_round_trip_keeps_state_and_behaviour() -> None:
    model = TheModelClass()
    model.eval()
    restored = pickle.loads(pickle.dumps(model))
    assert restored.training is False
    assert isinstance(restored.fc1.weight, nn.Parameter)
    x = rustgrad.randn(1, 3, 32, 32)
    np.testing.assert_array_equal(restored(x).detach().numpy(), model(x).detach().numpy())
    t = rustgrad.arange(6, dtype=rustgrad.int64).view(2, 3)
    back = pickle.loads(pickle.dumps(t))
    assert back.dtype == rustgrad.int64 and back.tolist() == t.tolist()


def test_sequential_indexing_slicing_and_editing() -> None:
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert isinstance(seq[-1], nn.Linear) and seq[-1] is seq[2]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    seq.append(nn.Sigmoid())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2"]
    seq[0] = nn.Linear(2, 3)
    assert seq(rustgrad.ones(4, 2)).shape == (4, 1)
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]
    ml = nn.ModuleList([nn.ReLU()])
    ml += [nn.Tanh()]
    ml.insert(0, nn.Sigmoid())
    assert [type(m).__name__ for m in ml] == ["Sigmoid", "ReLU", "Tanh"]
    md = nn.ModuleDict({"a": nn.ReLU()})
    md["b"] = nn.Tanh()
    assert list(md.keys()) == ["a", "b"] and "b" in md and len(md) == 2
    pl = nn.ParameterList([rustgrad.ones(2)])
    assert isinstance(pl[0], nn.Parameter) and pl[0].requires_grad
    pd = nn.ParameterDict({"w": rustgrad.ones(2)})
    assert [n for n, _ in pd.named_parameters()] == ["w"]


def test_call_without_hooks_runs_forward_directly() -> None:
    lin = nn.Linear(3, 2)
    x = rustgrad.randn(2, 3)
    np.testing.assert_array_equal(
        lin(x).detach().numpy(), F.linear(x, lin.weight, lin.bias).detach().numpy()
    )
    assert nn.Module.__call__ is nn.Module._call_impl


def test_dropout_follows_train_and_eval_modes() -> None:
    drop = nn.Dropout(0.25)
    x = rustgrad.ones(200, 300)
    out = drop(x).numpy()
    zeros = (out == 0).mean()
    assert abs(zeros - 0.25) < 5 * math.sqrt(0.25 * 0.75 / out.size)
    np.testing.assert_allclose(out[out != 0], 1 / 0.75, rtol=1e-6)
    drop.eval()
    assert drop(x) is x or np.array_equal(drop(x).numpy(), x.numpy())
    channels = nn.Dropout2d(0.5)(rustgrad.ones(64, 32, 2, 2)).numpy()
    # Whole channels are dropped together.
    per_channel = channels.reshape(64, 32, 4)
    assert ((per_channel == 0).all(-1) | (per_channel == 2).all(-1)).all()
    with pytest.raises(
        ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"
    ):
        nn.Dropout(1.5)


def test_full_backward_hook_with_two_inputs_and_a_tuple_output() -> None:
    class Split(nn.Module):
        def forward(self, a: Any, b: Any) -> Any:
            return a * b, a + b

    m = Split()
    got: list[Any] = []
    m.register_full_backward_hook(lambda mod, gi, go: got.append((gi, go)))
    a = rustgrad.tensor([1.0, 2.0], requires_grad=True)
    b = rustgrad.tensor([3.0, 4.0], requires_grad=True)
    prod, total = m(a, b)
    (prod.sum() + 2 * total.sum()).backward()
    grad_input, grad_output = got[0]
    assert len(grad_input) == 2 and len(grad_output) == 2
    np.testing.assert_array_equal(grad_output[0].numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(grad_output[1].numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(grad_input[0].numpy(), [5.0, 6.0])  # b + 2
    np.testing.assert_array_equal(grad_input[1].numpy(), [3.0, 4.0])  # a + 2
    np.testing.assert_array_equal(a.grad.numpy(), [5.0, 6.0])


def test_layers_take_a_dtype_and_conv_transpose_an_output_size() -> None:
    lin = nn.Linear(3, 2, dtype=rustgrad.float64)
    assert lin.weight.dtype == rustgrad.float64 and lin.bias.dtype == rustgrad.float64
    assert nn.BatchNorm1d(2, dtype=rustgrad.float64).running_mean.dtype == rustgrad.float64
    up = nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1)
    x = rustgrad.randn(1, 2, 4, 4)
    assert up(x).shape == (1, 3, 7, 7)
    assert up(x, output_size=[8, 8]).shape == (1, 3, 8, 8)
    with pytest.raises(ValueError, match="requested an output size of"):
        up(x, output_size=[10, 10])


def test_setstate_fills_hook_dicts_missing_from_old_pickles() -> None:
    lin = nn.Linear(2, 2)
    state = dict(lin.__dict__)
    for key in ("_forward_hooks_always_called", "_backward_pre_hooks", "_state_dict_hooks"):
        del state[key]
    fresh = nn.Linear.__new__(nn.Linear)
    fresh.__setstate__(state)
    assert fresh._backward_pre_hooks == {} and fresh._forward_hooks_always_called == {}
    fresh.register_forward_hook(lambda m, a, o: None, always_call=True)
    assert fresh(rustgrad.ones(1, 2)).shape == (1, 2)


def test_bad_arguments_raise_pytorchs_errors() -> None:
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(3, 4)
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        nn.BatchNorm2d(3)(rustgrad.ones(2, 3))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        nn.Linear(1, 1).register_buffer("forward", rustgrad.ones(1))
    with pytest.raises(KeyError, match="parameter name can"):
        nn.Module().register_parameter("a.b", None)


def test_batchnorm_loads_an_old_state_dict_without_num_batches_tracked() -> None:
    bn = nn.BatchNorm1d(2)
    bn(rustgrad.randn(4, 2))
    old = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    fresh = nn.BatchNorm1d(2)
    assert fresh.load_state_dict(old).missing_keys == []
    assert fresh.num_batches_tracked.item() == 0
    np.testing.assert_array_equal(fresh.running_var.numpy(), bn.running_var.numpy())
    # With version-2 metadata the key is required, as PyTorch.
    current = bn.state_dict()
    del current["num_batches_tracked"]
    with pytest.raises(
        RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'
    ):
        fresh.load_state_dict(current)
    model = nn.Sequential(nn.Linear(2, 2))
    model.register_module("bn", nn.BatchNorm1d(2))
    assert [n for n, _ in model.named_children()] == ["0", "bn"]


def test_state_dict_pre_and_post_hooks_as_pytorch() -> None:
    # PyTorch 2.15: pre-hooks run first with (module, prefix, keep_vars), post-hooks at
    # the end with (module, state_dict, prefix, local_metadata); the public post-hook
    # must return None, the private one may replace the dict. Log checked against
    # PyTorch 2.15.
    m = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    log: list[Any] = []

    def pre(mod: Any, prefix: str, keep_vars: bool) -> None:
        log.append(("pre", type(mod).__name__, prefix, keep_vars))

    def post(mod: Any, sd: Any, prefix: str, meta: Any) -> None:
        log.append(("post", type(mod).__name__, prefix, sorted(sd), dict(meta)))

    m.register_state_dict_pre_hook(pre)
    m[0].register_state_dict_pre_hook(pre)
    m[0].register_state_dict_post_hook(post)
    m.register_state_dict_post_hook(post)
    m.state_dict(prefix="net.", keep_vars=True)
    assert log == [
        ("pre", "Sequential", "net.", True),
        ("pre", "Linear", "net.0.", True),
        ("post", "Linear", "net.0.", ["net.0.bias", "net.0.weight"], {"version": 1}),
        ("post", "Sequential", "net.", ["net.0.bias", "net.0.weight"], {"version": 1}),
    ]
    m.register_state_dict_post_hook(lambda *a: {})
    with pytest.raises(RuntimeError, match="state_dict post-hook must return None"):
        m.state_dict()
    lin = nn.Linear(1, 1)
    lin._register_state_dict_hook(lambda *a: {"x": 1})
    assert lin.state_dict() == {"x": 1}

    def f(*a: Any) -> None:
        return None

    lin.register_state_dict_post_hook(f)
    with pytest.raises(RuntimeError, match="Cannot register the same function"):
        lin._register_state_dict_hook(f)
    with pytest.warns(FutureWarning, match="Positional args are being deprecated"):
        assert list(nn.Linear(1, 1).state_dict(None, "p.")) == ["p.weight", "p.bias"]
