"""The seed notes' module code, run unchanged with ``torch`` bound to rustgrad.

``sys.modules`` maps ``torch``, ``torch.nn``, ``torch.nn.functional`` and
``torch.autograd`` to rustgrad's modules for the duration of each test, and
``torchvision.models.resnet18`` to a ResNet-18 written here with ``rustgrad.nn``
(torchvision's layout and parameter names; ``pretrained`` weights are not available, so
the weights are freshly initialised). Seed 001's ``TheModelClass`` is written with
``forward`` (the notes misspell it ``farward``, which would leave the module without a
forward). The optimizer lines run as written too: ``optim.SGD(model.fc.parameters(),
lr=1e-2, momentum=0.9)`` and the ``filter(lambda p: p.requires_grad, ...)`` form (whose
``parameters=`` keyword PyTorch itself rejects, so it is run with the iterable passed
positionally, and the keyword form is checked to raise as in PyTorch).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
import rustgrad
import rustgrad.nn.functional
from rustgrad import nn


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: Any = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: Any) -> Any:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, layers: list[int], num_classes: int = 1000) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: Any) -> Any:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(rustgrad.flatten(self.avgpool(x), 1))


def resnet18(pretrained: bool = False) -> ResNet:
    return ResNet([2, 2, 2, 2])


@pytest.fixture
def torch_is_rustgrad(monkeypatch: pytest.MonkeyPatch) -> None:
    models = types.ModuleType("torchvision.models")
    models.resnet18 = resnet18  # type: ignore[attr-defined]
    torchvision = types.ModuleType("torchvision")
    torchvision.models = models  # type: ignore[attr-defined]
    for name, module in {
        "torch": rustgrad,
        "torch.nn": rustgrad.nn,
        "torch.nn.functional": rustgrad.nn.functional,
        "torch.autograd": rustgrad.autograd,
        "torch.optim": rustgrad.optim,
        "torchvision": torchvision,
        "torchvision.models": models,
    }.items():
        monkeypatch.setitem(sys.modules, name, module)


def run(code: str, **names: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = dict(names)
    exec(compile(code, "<seed>", "exec"), namespace)
    return namespace


# Seed 001, "2. 在Module中的层在定义时，相关Tensor的requires_grad属性默认是True", verbatim but
# for ``forward``.
SEED_001_MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F

# Define model
class TheModelClass(nn.Module):
    def __init__(self):
        super(TheModelClass,self).__init__()
        self.conv1=nn.Conv2d(3,6,5)
        self.pool=nn.MaxPool2d(2,2)
        self.conv2=nn.Conv2d(6,16,5)
        self.fc1=nn.Linear(16*5*5,120)
        self.fc2=nn.Linear(120,84)
        self.fc3=nn.Linear(84,10)
    def forward(self,x):
        x=self.pool(F.relu(self.conv1(x)))
        x=self.pool(F.relu(self.conv2(x)))
        x=x.view(-1,16*5*5)
        x=F.relu(self.fc1(x))
        x=F.relu(self.fc2(x))
        x=self.fc3(x)
        return x
# Initialize model
model=TheModelClass()
"""

SEED_001_PARAMETERS = """
for  param in model.parameters():
    print(param.requires_grad)
    #修改requires_grad的属性为False
    param.requires_grad=False

for  param in model.parameters():
    print(param.requires_grad)
"""

SEED_001_NAMED_PARAMETERS = """
for  name,param in model.named_parameters():
    print(name+'\\t'+str(param.requires_grad))
    #修改requires_grad的属性为False
    param.requires_grad=False

for  name,param in model.named_parameters():
    print(name+'\\t'+str(param.requires_grad))
"""

SEED_001_STATE_DICT = """
for name, param in model.state_dict().items():
    print(name+'\\t'+str(param.requires_grad))
"""

NAMES = [
    f"{layer}.{kind}"
    for layer in ("conv1", "conv2", "fc1", "fc2", "fc3")
    for kind in ("weight", "bias")
]


def test_seed_001_parameters_loop(
    torch_is_rustgrad: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = run(SEED_001_MODEL + SEED_001_PARAMETERS)
    assert capsys.readouterr().out.split() == ["True"] * 10 + ["False"] * 10
    assert not any(p.requires_grad for p in ns["model"].parameters())


def test_seed_001_named_parameters_loop(
    torch_is_rustgrad: None, capsys: pytest.CaptureFixture[str]
) -> None:
    run(SEED_001_MODEL + SEED_001_NAMED_PARAMETERS)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{n}\tTrue" for n in NAMES] + [f"{n}\tFalse" for n in NAMES]


def test_seed_001_state_dict_values_never_require_grad(
    torch_is_rustgrad: None, capsys: pytest.CaptureFixture[str]
) -> None:
    ns = run(SEED_001_MODEL + SEED_001_STATE_DICT)
    assert capsys.readouterr().out.splitlines() == [f"{n}\tFalse" for n in NAMES]
    # ... while the parameters themselves still do.
    assert all(p.requires_grad for p in ns["model"].parameters())


def test_seed_001_model_trains_with_a_manual_sgd_loop(torch_is_rustgrad: None) -> None:
    ns = run(SEED_001_MODEL)
    model = ns["model"]
    rustgrad.manual_seed(0)
    x = rustgrad.randn(8, 3, 32, 32)
    target = rustgrad.randint(0, 10, (8,))
    criterion = nn.CrossEntropyLoss()
    losses = []
    for _ in range(5):
        model.zero_grad()
        loss = criterion(model(x), target)
        loss.backward()
        for p in model.parameters():
            p.data -= 0.05 * p.grad
        losses.append(loss.item())
    assert losses[-1] < losses[0]


# Seeds 000, 002, 003 and 004: fine-tuning the last layer of a (pretrained) ResNet-18.
SEED_FINETUNE = """
import torch
import torch.nn as nn
from torch.autograd import Variable
import torchvision

model = torchvision.models.resnet18(pretrained=True)
for param in model.parameters():
    param.requires_grad = False
model.fc = nn.Linear(512, 100) # 为什么这个地方要重新制定呢？哦，因为输出的分类不同了。
"""


def test_seed_finetuning_replaces_fc_with_a_fresh_trainable_layer(torch_is_rustgrad: None) -> None:
    ns = run(SEED_FINETUNE)
    model = ns["model"]
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["fc.weight", "fc.bias"]
    assert len(list(model.parameters())) == 62  # torchvision's resnet18 has 62 tensors
    # torchvision: 11 689 512 parameters, of which 513 000 in the 512 -> 1000 fc.
    assert sum(p.numel() for p in model.parameters()) == 11_689_512 - 513_000 + 51_300
    assert "fc.weight" in model.state_dict()
    assert model.fc.weight.shape == (100, 512)
    rustgrad.manual_seed(0)
    x = rustgrad.randn(2, 3, 64, 64)
    target = rustgrad.tensor([3, 97])
    out = model(x)
    assert out.shape == (2, 100)
    loss = nn.functional.cross_entropy(out, target)
    loss.backward()
    assert model.fc.weight.grad is not None and model.fc.bias.grad is not None
    assert all(p.grad is None for n, p in model.named_parameters() if not n.startswith("fc."))
    before = loss.item()
    for p in model.fc.parameters():
        p.data -= 0.5 * p.grad
    assert nn.functional.cross_entropy(model(x), target).item() < before


# Seeds 000, 002, 003 and 004 build the optimizer over the new layer only.
SEED_FINETUNE_OPTIMIZER = """
import torch.optim as optim
optimizer = optim.SGD(model.fc.parameters(), lr=1e-2, momentum=0.9)
"""

# Seed 001, "2.4 改变了requires_grad之后要修改optimizer的属性", with ``cfg.TRAIN.*`` given
# values and the iterable passed positionally (see the module docstring).
SEED_001_FILTER_OPTIMIZER = """
import torch.optim as optim
optimizer = optim.SGD(
            filter(lambda p: p.requires_grad, model.parameters()),   #只更新requires_grad=True的参数
            lr=0.01,
            momentum=0.9,
            weight_decay=1e-4,
            nesterov=True
        )
"""


def test_seed_optimizers_hold_only_the_trainable_layer_and_train_it(
    torch_is_rustgrad: None,
) -> None:
    ns = run(SEED_FINETUNE + SEED_FINETUNE_OPTIMIZER)
    model, optimizer = ns["model"], ns["optimizer"]
    filtered = run(SEED_001_FILTER_OPTIMIZER, model=model)
    # Both spellings hold exactly the new fc layer's parameters, in the same order.
    fc = [id(p) for p in model.fc.parameters()]
    assert [id(p) for p in optimizer.param_groups[0]["params"]] == fc
    assert [id(p) for p in filtered["optimizer"].param_groups[0]["params"]] == fc
    assert filtered["optimizer"].param_groups[0]["nesterov"] is True
    frozen = {n: p.detach().clone() for n, p in model.named_parameters() if not n.startswith("fc.")}
    rustgrad.manual_seed(0)
    x = rustgrad.randn(4, 3, 32, 32)
    target = rustgrad.tensor([3, 97, 12, 50])
    model.eval()  # batch-norm statistics stay fixed, so the loss is comparable
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    for n, p in model.named_parameters():
        if not n.startswith("fc."):
            assert rustgrad.equal(p, frozen[n]), n


def test_seed_001_parameters_keyword_is_rejected_as_in_pytorch(torch_is_rustgrad: None) -> None:
    ns = run(SEED_001_MODEL)
    with pytest.raises(TypeError, match="unexpected keyword argument 'parameters'"):
        run(
            SEED_001_FILTER_OPTIMIZER.replace("filter(", "parameters=filter("),
            model=ns["model"],
        )
