"""rustgrad.models against torchvision and PyTorch: ResNet-18/34/50 state_dict names,
shapes and dtypes; ResNet-18's outputs, batch-norm statistics and gradients in eval and
training mode (tests/vectors/models_resnet.json, written by generate_models.py with
torchvision); torchvision's initialisation; local weights and their errors; LeNet
against tests/vectors/nn_models.json; and the seed notes' fine-tuning facts: a frozen
base gets no gradient, stays bit-identical and saves nothing for backward; a volatile
input records nothing and peaks no higher than no_grad()."""

from __future__ import annotations

import gc
import json
import multiprocessing
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import rustgrad
import rustgrad.nn as nn
import rustgrad.nn.functional as F
from rustgrad.autograd import Variable, graph_stats
from rustgrad.autograd.graph import _walk
from rustgrad.models import LeNet, checkpoint_dir, resnet18, resnet34, resnet50

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
FIXTURE = json.loads((VECTORS / "models_resnet.json").read_text())
TOL = 1e-5


def weights_for(name: str, shape: tuple[int, ...]) -> np.ndarray:
    """A copy of generate_models.py's weights_for (numpy only)."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    if name.endswith("num_batches_tracked"):
        return np.array(3, dtype=np.int64)
    if name.endswith("running_var"):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if name.endswith(("running_mean", "bias")):
        return (0.1 * rng.standard_normal(shape)).astype(np.float32)
    if len(shape) == 1:
        return (1.0 + 0.1 * rng.standard_normal(shape)).astype(np.float32)
    fan_in = int(np.prod(shape[1:]))
    return (np.sqrt(2.0 / fan_in) * rng.standard_normal(shape)).astype(np.float32)


def array(spec: dict[str, Any]) -> np.ndarray:
    return np.array(spec["data"], dtype=np.float64).reshape(spec["shape"])


def check(name: str, got: rustgrad.Tensor, spec: dict[str, Any]) -> None:
    want = array(spec)
    have = got.detach().numpy().astype(np.float64)
    assert have.shape == want.shape, name
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    np.testing.assert_allclose(have, want, rtol=TOL, atol=TOL * scale, err_msg=name)


def fixture_state(model: nn.Module) -> dict[str, rustgrad.Tensor]:
    return {
        name: rustgrad.from_numpy(weights_for(name, tuple(t.shape)))
        for name, t in model.state_dict().items()
    }


@pytest.mark.parametrize("arch", ["resnet18", "resnet34", "resnet50"])
def test_state_dict_names_shapes_and_dtypes_are_torchvisions(arch):
    model = {"resnet18": resnet18, "resnet34": resnet34, "resnet50": resnet50}[arch]()
    got = [
        [name, list(t.shape), str(t.dtype).removeprefix("torch.")]
        for name, t in model.state_dict().items()
    ]
    assert got == FIXTURE["architectures"][arch]
    params = {name for name, _ in model.named_parameters()}
    buffers = {name for name, _ in model.named_buffers()}
    assert params | buffers == {name for name, _, _ in FIXTURE["architectures"][arch]}
    assert all(n.endswith(("running_mean", "running_var", "num_batches_tracked")) for n in buffers)


def test_resnet18_outputs_match_torchvision_in_eval_and_train_mode():
    case = FIXTURE["resnet18"]
    model = resnet18(num_classes=10)
    model.load_state_dict(fixture_state(model), strict=True)
    x = rustgrad.from_numpy(array(case["input"]).astype(np.float32))
    model.eval()
    with rustgrad.no_grad():
        check("eval_logits", model(x), case["eval_logits"])
    model.train()
    logits = model(x)
    check("train_logits", logits, case["train_logits"])
    loss = F.cross_entropy(logits, rustgrad.tensor(case["target"]))
    np.testing.assert_allclose(float(loss), case["train_loss"], rtol=TOL)
    loss.backward()
    state = model.state_dict()
    for name, spec in case["running"].items():
        if name.endswith("num_batches_tracked"):
            assert int(state[name]) == spec["data"][0]
        else:
            check(name, state[name], spec)
    # The gradients are ill-conditioned in float32 (see generate_models.py): checked in
    # float64, from the same weights.
    model.load_state_dict(fixture_state(model), strict=True)
    model.double().zero_grad()
    F.cross_entropy(model(x.double()), rustgrad.tensor(case["target"])).backward()
    params = dict(model.named_parameters())
    for name, spec in case["grads"].items():
        assert params[name].grad.dtype == rustgrad.float64
        check(f"grad.{name}", params[name].grad, spec)


def test_resnet50_forward_shape_and_torchvision_init():
    model = resnet50(num_classes=7)
    conv = model.conv1.weight.detach().numpy()
    # kaiming_normal_(mode="fan_out", nonlinearity="relu"): std = sqrt(2 / (out * k * k))
    assert abs(conv.std() / np.sqrt(2.0 / (64 * 7 * 7)) - 1) < 0.05
    assert abs(conv.mean()) < 3 * np.sqrt(2.0 / (64 * 7 * 7)) / np.sqrt(conv.size)
    for name, module in model.named_modules():
        if isinstance(module, nn.BatchNorm2d):
            assert (module.weight.detach().numpy() == 1).all(), name
            assert (module.bias.detach().numpy() == 0).all(), name
    bound = 1 / np.sqrt(2048)  # nn.Linear's own default init, kept by torchvision
    assert np.abs(model.fc.weight.detach().numpy()).max() <= bound
    with rustgrad.no_grad():
        assert model.eval()(rustgrad.randn(1, 3, 64, 64)).shape == (1, 7)


def test_zero_init_residual_zeroes_the_last_norm_of_each_block():
    basic = resnet18(zero_init_residual=True)
    bottleneck = resnet50(zero_init_residual=True)
    for block in [b for layer in (basic.layer1, basic.layer4) for b in layer]:
        assert (block.bn2.weight.detach().numpy() == 0).all()
        assert (block.bn1.weight.detach().numpy() == 1).all()
    for block in bottleneck.layer2:
        assert (block.bn3.weight.detach().numpy() == 0).all()
        assert (block.bn2.weight.detach().numpy() == 1).all()


def test_replace_stride_with_dilation_and_width_per_group():
    model = resnet50(replace_stride_with_dilation=[False, True, True], width_per_group=128)
    assert model.layer3[0].conv2.stride == (1, 1)
    assert model.layer4[1].conv2.dilation == (4, 4)
    assert model.layer1[0].conv1.out_channels == 128
    with rustgrad.no_grad():
        out = model.eval().layer1(rustgrad.randn(1, 64, 8, 8))
    assert out.shape == (1, 256, 8, 8)
    with pytest.raises(ValueError, match="replace_stride_with_dilation"):
        resnet18(replace_stride_with_dilation=[True])
    with pytest.raises(NotImplementedError, match="Dilation > 1 not supported in BasicBlock"):
        resnet18(replace_stride_with_dilation=[False, False, True])
    with pytest.raises(ValueError, match="BasicBlock only supports groups=1"):
        resnet18(groups=2)


def test_missing_weights_say_where_to_put_them_and_how_to_export(tmp_path, monkeypatch):
    monkeypatch.setenv("RUSTGRAD_HOME", str(tmp_path))
    assert checkpoint_dir() == tmp_path / "checkpoints"
    with pytest.raises(FileNotFoundError) as info:
        resnet18(pretrained=True)
    message = str(info.value)
    assert str(tmp_path / "checkpoints" / "resnet18.pth") in message
    assert "torchvision.models.resnet18(weights='DEFAULT').state_dict()" in message
    assert "never downloads" in message
    missing = tmp_path / "nowhere.npz"
    with pytest.raises(FileNotFoundError, match="nowhere.npz"):
        resnet34(weights=missing)
    with pytest.raises(FileNotFoundError, match="nowhere.pth"):
        resnet34(weights=str(tmp_path / "nowhere.pth"))
    with pytest.raises(FileNotFoundError, match="resnet50.pth"):
        resnet50(weights="DEFAULT")
    monkeypatch.delenv("RUSTGRAD_HOME")
    assert checkpoint_dir() == Path("~/.cache/rustgrad/checkpoints").expanduser()


def test_weights_load_from_a_path_and_from_the_cache(tmp_path, monkeypatch):
    source = resnet18(num_classes=10)
    state = {k: weights_for(k, tuple(v.shape)) for k, v in source.state_dict().items()}
    (tmp_path / "checkpoints").mkdir()
    np.savez(tmp_path / "checkpoints" / "resnet18.npz", **state)
    monkeypatch.setenv("RUSTGRAD_HOME", str(tmp_path))
    for model in (
        resnet18(num_classes=10, pretrained=True),
        resnet18(num_classes=10, weights="DEFAULT"),
        resnet18(num_classes=10, weights="IMAGENET1K_V1"),  # a weights name: the cache
        resnet18(num_classes=10, weights=tmp_path / "checkpoints" / "resnet18.npz"),
    ):
        loaded = model.state_dict()
        assert set(loaded) == set(state)
        for name, value in state.items():
            assert np.array_equal(loaded[name].numpy(), value), name
    # strict=True: a state_dict for another head does not fit
    with pytest.raises(RuntimeError, match="size mismatch for fc.weight"):
        resnet18(pretrained=True)


def test_lenet_has_the_tutorials_names_and_matches_pytorch():
    case = next(
        c
        for c in json.loads((VECTORS / "nn_models.json").read_text())["cases"]
        if c["name"] == "lenet_the_model_class"
    )
    model = LeNet()
    assert [(k, tuple(v.shape)) for k, v in model.state_dict().items()] == [
        ("conv1.weight", (6, 3, 5, 5)),
        ("conv1.bias", (6,)),
        ("conv2.weight", (16, 6, 5, 5)),
        ("conv2.bias", (16,)),
        ("fc1.weight", (120, 400)),
        ("fc1.bias", (120,)),
        ("fc2.weight", (84, 120)),
        ("fc2.bias", (84,)),
        ("fc3.weight", (10, 84)),
        ("fc3.bias", (10,)),
    ]
    t = case["tensors"]
    model.load_state_dict(
        {k: rustgrad.from_numpy(array(v).astype(np.float32)) for k, v in t.items() if "." in k}
    )
    x = rustgrad.from_numpy(array(t["input"]).astype(np.float32))
    check("logits", model(x), case["expected"]["logits"])
    assert LeNet(num_classes=3)(rustgrad.randn(2, 3, 32, 32)).shape == (2, 3)


def frozen_resnet18() -> nn.Module:
    """The seed notes' fine-tuning: freeze every parameter, replace fc (eval mode)."""
    rustgrad.manual_seed(0)
    model = resnet18(num_classes=5)
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(512, 5)
    return model.eval()


def test_frozen_base_gets_no_gradient_and_stays_bit_identical():
    model = frozen_resnet18()
    before = {k: v.numpy().copy() for k, v in model.state_dict().items() if not k.startswith("fc.")}
    fc_before = model.fc.weight.detach().numpy().copy()
    optimizer = rustgrad.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = rustgrad.randn(4, 3, 32, 32)
    target = rustgrad.tensor([0, 1, 2, 4])
    for _ in range(3):
        optimizer.zero_grad()
        F.cross_entropy(model(x), target).backward()
        with_grad = {n for n, p in model.named_parameters() if p.grad is not None}
        assert with_grad == {"fc.weight", "fc.bias"}
        optimizer.step()
    after = model.state_dict()
    for name, value in before.items():
        assert np.array_equal(after[name].numpy(), value), name
    assert not np.array_equal(model.fc.weight.detach().numpy(), fc_before)


def test_frozen_forward_saves_only_what_fc_needs():
    model = frozen_resnet18()
    batch = 4
    loss = F.cross_entropy(model(rustgrad.randn(batch, 3, 32, 32)), rustgrad.tensor([0, 1, 2, 3]))
    nodes = _walk(loss)
    leaves = {id(n.variable) for n in nodes if type(n).__name__ == "AccumulateGrad"}
    assert leaves == {id(model.fc.weight), id(model.fc.bias)}
    # Only the head and the loss are in the graph: no convolution, norm, pool or relu.
    kinds = {type(n).__name__ for n in nodes}
    assert kinds <= {
        "AccumulateGrad",
        "AddmmBackward0",
        "TBackward0",
        "NllLossBackward0",
        "LogSoftmaxBackward0",
    }, kinds
    stats = graph_stats(loss)
    # fc's backward needs its input (batch x 512 float32) for the weight gradient; the
    # loss needs at most a few batch x classes tensors.
    fc_input = batch * 512 * 4
    assert fc_input <= stats.saved_bytes <= fc_input + 4 * batch * 5 * 8, stats
    full = resnet18(num_classes=5).eval()
    full_loss = F.cross_entropy(full(rustgrad.randn(batch, 3, 32, 32)), rustgrad.tensor([0] * 4))
    assert graph_stats(full_loss).saved_bytes > 100 * stats.saved_bytes


def test_volatile_input_records_nothing_although_parameters_require_grad():
    model = resnet18(num_classes=5).eval()
    assert all(p.requires_grad for p in model.parameters())
    out = model(Variable(rustgrad.randn(2, 3, 32, 32), volatile=True))
    assert out.requires_grad is False
    assert out.volatile is True
    assert out.grad_fn is None
    assert graph_stats(out) == (0, 0, 0)


def _forward(model: Any, x: Any, mode: str) -> Any:
    """``model(x)`` with a volatile input, under no_grad(), or in grad mode."""
    if mode == "volatile":
        return model(Variable(x, volatile=True))
    if mode == "no_grad":
        with rustgrad.no_grad():
            return model(x)
    return model(x)


def _tensor_memory_peak(model: Any, x: Any, mode: str) -> tuple[int, bool]:
    """Peak bytes of live tensor storages during one forward, above those held before
    it (exact counts, Note [Memory statistics]), and the output's requires_grad."""
    gc.collect()
    rustgrad.cpu.reset_peak_memory_stats()
    base = rustgrad.cpu.memory_allocated()
    out = _forward(model, x, mode)
    return rustgrad.cpu.max_memory_allocated() - base, out.requires_grad


def test_volatile_forward_keeps_no_more_tensor_memory_than_no_grad():
    model = resnet18(num_classes=10).eval()
    x = rustgrad.randn(8, 3, 64, 64)
    volatile, volatile_rg = _tensor_memory_peak(model, x, "volatile")
    no_grad, _ = _tensor_memory_peak(model, x, "no_grad")
    grad, grad_rg = _tensor_memory_peak(model, x, "grad")
    assert (volatile_rg, grad_rg) == (False, True)
    assert volatile <= no_grad, (volatile, no_grad)
    # The stem's convolution output (8x64x32x32 float32) and batch norm's output of it
    # are alive at once in every mode; grad mode also keeps every activation it saves.
    stem = 8 * 64 * 32 * 32 * 4
    assert no_grad >= 2 * stem, no_grad
    assert grad > 2 * no_grad, (grad, no_grad)


def _proc_status_kib(field: str) -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith(field + ":"))
    return int(line.split()[1])


def _peak_rss_growth(mode: str, queue: Any) -> None:
    """In a fresh process: peak RSS growth (KiB) of one ResNet-18 eval forward, from
    the current RSS to the high-water mark (reset first through /proc/self/clear_refs,
    so that building the model does not hide the forward's peak)."""
    import rustgrad
    from rustgrad.models import resnet18

    model = resnet18(num_classes=10).eval()
    x = rustgrad.randn(32, 3, 64, 64)
    with rustgrad.no_grad():
        model(rustgrad.randn(1, 3, 64, 64))  # warm up allocators outside the measure
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    base = _proc_status_kib("VmRSS")
    out = _forward(model, x, mode)
    queue.put((_proc_status_kib("VmHWM") - base, out.requires_grad))


def measure(mode: str) -> tuple[int, bool]:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=_peak_rss_growth, args=(mode, queue))
    process.start()
    result = queue.get(timeout=120)
    process.join()
    return result


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
def test_volatile_forward_peaks_no_higher_than_no_grad():
    volatile, volatile_rg = measure("volatile")
    no_grad, _ = measure("no_grad")
    grad, grad_rg = measure("grad")
    assert (volatile_rg, grad_rg) == (False, True)
    # Both peak at about two live activations (~12 MiB here), give or take ~2.5 MiB of
    # allocator noise between runs; grad mode keeps every activation alive (~50 MiB).
    assert volatile <= no_grad * 1.25 + 2048, (volatile, no_grad)
    assert grad > 2 * max(volatile, no_grad), (grad, volatile, no_grad)
