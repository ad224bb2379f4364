"""The calls of public PyTorch programs, on synthetic data, with ``import rustgrad as
torch``: pytorch/tutorials' tensor basics (tensorqs), "What is torch.nn really?"
(nn_tutorial), the saving-for-inference and state-dict-tips recipes, and
pytorch/examples' dcgan and mnist_forward_forward.

These are this project's own small programs that exercise the same calls, patterns and
idioms (not copies of the originals), kept to a few seconds: each trains briefly and
checks that its loss went down, or checks the values the program relies on.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad import nn, optim
from rustgrad.utils.data import DataLoader, TensorDataset

# ----------------------------------------------------------------------- tensorqs


def test_tensor_basics_tutorial_calls():
    data = [[1, 2], [3, 4]]
    x_data = torch.tensor(data)
    np_array = np.array(data)
    x_np = torch.from_numpy(np_array)
    assert torch.equal(x_data, x_np) and x_data.dtype == torch.int64
    x_ones = torch.ones_like(x_data)
    x_rand = torch.rand_like(x_data, dtype=torch.float)
    assert x_ones.dtype == torch.int64 and x_rand.dtype == torch.float32
    shape = (2, 3)
    for t in (torch.rand(shape), torch.ones(shape), torch.zeros(shape)):
        assert t.shape == shape
    tensor = torch.rand(3, 4)
    assert (tensor.shape, tensor.dtype, tensor.device) == (
        torch.Size([3, 4]),
        torch.float32,
        torch.device("cpu"),
    )
    if torch.accelerator.is_available():
        tensor = tensor.to(torch.accelerator.current_accelerator())
    if torch.cuda.is_available():
        tensor = tensor.to("cuda")
    tensor = torch.ones(4, 4)
    tensor[:, 1] = 0
    assert tensor[0].tolist() == [1, 0, 1, 1] and tensor[:, 0].sum() == 4
    assert tensor[..., -1].tolist() == [1, 1, 1, 1]
    t1 = torch.cat([tensor, tensor, tensor], dim=1)
    assert t1.shape == (4, 12)
    y1 = tensor @ tensor.T
    y2 = tensor.matmul(tensor.T)
    assert torch.equal(y1, y2)
    z1 = tensor * tensor
    z2 = tensor.mul(tensor)
    assert torch.equal(z1, z2)
    agg = tensor.sum()
    agg_item = agg.item()
    assert isinstance(agg_item, float) and agg_item == 12.0
    tensor.add_(5)
    assert tensor[0, 0].item() == 6.0
    # Bridges with numpy share memory.
    t = torch.ones(5)
    n = t.numpy()
    t.add_(1)
    assert n.tolist() == [2.0] * 5
    n = np.ones(5)
    t = torch.from_numpy(n)
    np.add(n, 1, out=n)
    assert t.tolist() == [2.0] * 5


# -------------------------------------------------------------------- nn_tutorial


def synthetic_mnist(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Flattened 28x28 "images" whose class is readable from a few pixels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = rng.random((n, 784), dtype=np.float32) * 0.1
    x[np.arange(n)[:, None], y[:, None] * 70 + np.arange(20)] += 1.0
    return x, y


@pytest.fixture(scope="module")
def mnist():
    x_train, y_train = synthetic_mnist(512, 0)
    x_valid, y_valid = synthetic_mnist(128, 1)
    return tuple(map(torch.tensor, (x_train, y_train, x_valid, y_valid)))


def test_nn_tutorial_from_scratch(mnist):
    x_train, y_train, _, _ = mnist
    n, c = x_train.shape
    assert (n, c) == (512, 784) and y_train.min() >= 0 and y_train.max() <= 9
    torch.manual_seed(0)
    weights = torch.randn(784, 10) / math.sqrt(784)
    weights.requires_grad_()
    bias = torch.zeros(10, requires_grad=True)

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        preds = torch.argmax(out, dim=1)
        return (preds == yb).float().mean()

    bs, lr = 64, 0.5
    first = nll(model(x_train[:bs]), y_train[:bs]).item()
    for _ in range(10):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            xb, yb = x_train[start_i : start_i + bs], y_train[start_i : start_i + bs]
            loss = nll(model(xb), yb)
            loss.backward()
            with torch.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
    last = nll(model(x_train[:bs]), y_train[:bs]).item()
    assert last < first / 2
    assert accuracy(model(x_train), y_train).item() > 0.8
    # F.cross_entropy is log_softmax + nll.
    out = xb @ weights + bias
    assert torch.allclose(F.cross_entropy(out, yb), nll(log_softmax(out), yb), atol=1e-6)


class MnistLogistic(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weights = nn.Parameter(torch.randn(784, 10) / math.sqrt(784))
        self.bias = nn.Parameter(torch.zeros(10))

    def forward(self, xb):
        return xb @ self.weights + self.bias


class MnistCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1)
        self.conv2 = nn.Conv2d(8, 8, kernel_size=3, stride=2, padding=1)
        self.conv3 = nn.Conv2d(8, 10, kernel_size=3, stride=2, padding=1)

    def forward(self, xb):
        xb = xb.view(-1, 1, 28, 28)
        xb = F.relu(self.conv1(xb))
        xb = F.relu(self.conv2(xb))
        xb = F.relu(self.conv3(xb))
        xb = F.avg_pool2d(xb, 4)
        return xb.view(-1, xb.size(1))


class Lambda(nn.Module):
    def __init__(self, func) -> None:
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x):
    return x.view(-1, 1, 28, 28)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    history = []
    for _ in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        history.append(np.sum(np.multiply(losses, nums)) / np.sum(nums))
    return history


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True),
        DataLoader(valid_ds, batch_size=bs * 2),
    )


class WrappedDataLoader:
    def __init__(self, dl, func) -> None:
        self.dl, self.func = dl, func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield self.func(*b)


def test_nn_tutorial_modules_optim_datasets(mnist):
    x_train, y_train, x_valid, y_valid = mnist
    torch.manual_seed(0)
    loss_func = F.cross_entropy
    train_ds, valid_ds = TensorDataset(x_train, y_train), TensorDataset(x_valid, y_valid)
    xb, yb = train_ds[0:64]
    assert xb.shape == (64, 784) and yb.shape == (64,)
    train_dl, valid_dl = get_data(train_ds, valid_ds, 64)

    # nn.Module with Parameters, updated by hand.
    model = MnistLogistic()
    before = loss_func(model(xb), yb).item()
    for xb_, yb_ in [*train_dl, *train_dl]:
        loss_func(model(xb_), yb_).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= p.grad * 0.5
            model.zero_grad()
    assert loss_func(model(xb), yb).item() < before / 2

    # nn.Linear and optim.SGD.
    model = nn.Linear(784, 10)
    opt = optim.SGD(model.parameters(), lr=0.5)
    history = fit(2, model, loss_func, opt, train_dl, valid_dl)
    assert history[-1] < 1.0

    # CNN, then nn.Sequential with Lambda and AdaptiveAvgPool2d, momentum SGD.
    dev = torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")

    def to_device(x, y):
        return x.view(-1, 1, 28, 28).to(dev), y.to(dev)

    model = MnistCNN().to(dev)
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    first = fit(1, model, loss_func, opt, train_dl, valid_dl)[0]
    assert np.isfinite(first)
    seq = nn.Sequential(
        Lambda(preprocess),
        nn.Conv2d(1, 8, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.Conv2d(8, 10, kernel_size=3, stride=2, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        Lambda(lambda x: x.view(x.size(0), -1)),
    ).to(dev)
    opt = optim.SGD(seq.parameters(), lr=0.2, momentum=0.9)
    wrapped_train = WrappedDataLoader(train_dl, to_device)
    wrapped_valid = WrappedDataLoader(valid_dl, to_device)
    history = fit(4, seq, loss_func, opt, wrapped_train, wrapped_valid)
    assert history[-1] < history[0]


# -------------------------------------------------------- saving-for-inference


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 5 * 5)
        return self.fc2(F.relu(self.fc1(x)))


class NetB(Net):
    """Net with one more layer: warmstarting from Net needs ``strict=False``."""

    def __init__(self) -> None:
        super().__init__()
        self.fc3 = nn.Linear(10, 4)

    def forward(self, x):
        return self.fc3(super().forward(x))


def test_saving_and_loading_for_inference(tmp_path):
    torch.manual_seed(0)
    net = Net()
    x = torch.randn(2, 3, 32, 32)
    expected = net.eval()(x)

    path = tmp_path / "state_dict_model.pt"
    torch.save(net.state_dict(), path)
    model = Net()
    model.load_state_dict(torch.load(path, weights_only=True))
    model.eval()
    assert torch.equal(model(x), expected)

    path = tmp_path / "entire_model.pt"
    torch.save(net, path)
    model = torch.load(path, weights_only=False)
    model.eval()
    assert type(model) is Net and torch.equal(model(x), expected)

    # A general checkpoint: model, optimizer, epoch and loss.
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    net.train()
    loss = F.cross_entropy(net(x), torch.tensor([1, 2]))
    loss.backward()
    optimizer.step()
    path = tmp_path / "model.pt"
    torch.save(
        {
            "epoch": 5,
            "model_state_dict": net.state_dict(),
            "optimizer_state_dict": optimizer.state_dict(),
            "loss": 0.4,
        },
        path,
    )
    model = Net()
    optimizer2 = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer2.load_state_dict(checkpoint["optimizer_state_dict"])
    assert checkpoint["epoch"] == 5 and checkpoint["loss"] == 0.4
    model.train()
    for m, o in ((net, optimizer), (model, optimizer2)):
        o.zero_grad()
        F.cross_entropy(m(x), torch.tensor([1, 2])).backward()
        o.step()
    for a, b in zip(net.parameters(), model.parameters()):
        assert torch.equal(a, b)

    # Several models (and their optimizers) in one file.
    net_a, net_b = Net(), NetB()
    opt_a, opt_b = optim.SGD(net_a.parameters(), lr=0.1), optim.Adam(net_b.parameters())
    path = tmp_path / "multiple.pt"
    torch.save(
        {
            "modelA_state_dict": net_a.state_dict(),
            "modelB_state_dict": net_b.state_dict(),
            "optimizerA_state_dict": opt_a.state_dict(),
            "optimizerB_state_dict": opt_b.state_dict(),
        },
        path,
    )
    checkpoint = torch.load(path, weights_only=True)
    model_a, model_b = Net(), NetB()
    model_a.load_state_dict(checkpoint["modelA_state_dict"])
    model_b.load_state_dict(checkpoint["modelB_state_dict"])
    optim.SGD(model_a.parameters(), lr=0.1).load_state_dict(checkpoint["optimizerA_state_dict"])
    optim.Adam(model_b.parameters()).load_state_dict(checkpoint["optimizerB_state_dict"])
    assert torch.equal(model_b.eval()(x), net_b.eval()(x))

    # Warmstarting a different model: strict=False reports, and loads what matches.
    path = tmp_path / "net_a.pt"
    torch.save(net_a.state_dict(), path)
    net_b = NetB()
    result = net_b.load_state_dict(torch.load(path, weights_only=True), strict=False)
    assert result.missing_keys == ["fc3.weight", "fc3.bias"] and result.unexpected_keys == []
    assert torch.equal(net_b.conv1.weight, net_a.conv1.weight)
    result = net_a.load_state_dict(net_b.state_dict(), strict=False)
    assert result.unexpected_keys == ["fc3.weight", "fc3.bias"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "fc3.weight"'):
        net_b.load_state_dict(torch.load(path, weights_only=True))


# -------------------------------------------------------------- state-dict tips


class SomeModule(nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(size, size) for _ in range(4)])

    def forward(self, x):
        for linear in self.linears:
            x = linear(x)
        return x


def test_state_dict_tips_meta_mmap_assign(tmp_path):
    torch.manual_seed(0)
    m = SomeModule(64)
    torch.save(m.state_dict(), tmp_path / "checkpoint.pth")
    state_dict = torch.load(tmp_path / "checkpoint.pth", mmap=True, weights_only=True)
    with torch.device("meta"):
        meta_m = SomeModule(64)
    assert all(p.is_meta for p in meta_m.parameters())
    meta_m.load_state_dict(state_dict, assign=True)
    assert not any(p.is_meta for p in meta_m.parameters())
    x = torch.randn(3, 64)
    assert torch.equal(meta_m(x), m(x))
    # assign=True keeps the state dict's tensors (no copy).
    assert meta_m.linears[0].weight.data_ptr() == state_dict["linears.0.weight"].data_ptr()
    # The usual way (materialise, then copy) gives the same module.
    m2 = SomeModule(64)
    m2.load_state_dict(state_dict)
    assert torch.equal(m2(x), m(x))
    # to_empty, then initialise in place.
    with torch.device("meta"):
        m3 = SomeModule(8)
    m3.to_empty(device="cpu")
    with torch.no_grad():
        for linear in m3.linears:
            linear.reset_parameters()
    assert m3(torch.randn(2, 8)).shape == (2, 8)


# -------------------------------------------------------------------------- dcgan


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        torch.nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        torch.nn.init.normal_(m.weight, 1.0, 0.02)
        torch.nn.init.zeros_(m.bias)


NZ, NGF, NDF, NC = 8, 4, 4, 3


class Generator(nn.Module):
    def __init__(self, ngpu: int) -> None:
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(NZ, NGF * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(NGF * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 8, NGF * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 4, NGF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NGF * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(NGF * 2, NC, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            return nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ngpu: int) -> None:
        super().__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.Conv2d(NC, NDF, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF, NDF * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 2, NDF * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(NDF * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(NDF * 4, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        if input.is_cuda and self.ngpu > 1:
            output = nn.parallel.data_parallel(self.main, input, range(self.ngpu))
        else:
            output = self.main(input)
        return output.view(-1, 1).squeeze(1)


def test_dcgan_training_steps(tmp_path):
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    net_g = Generator(1).to(device)
    net_g.apply(weights_init)
    net_d = Discriminator(1).to(device)
    net_d.apply(weights_init)
    assert abs(net_d.main[0].weight.std().item() - 0.02) < 0.005
    assert torch.all(net_g.main[1].bias == 0)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(4, NZ, 1, 1, device=device)
    real_label, fake_label = 1, 0
    optimizer_d = optim.Adam(net_d.parameters(), lr=0.002, betas=(0.5, 0.999))
    optimizer_g = optim.Adam(net_g.parameters(), lr=0.002, betas=(0.5, 0.999))
    # "Real" images: a fixed smooth pattern in [-1, 1].
    grid = torch.linspace(-1, 1, 32)
    real = torch.sin(3 * grid).view(1, 1, 1, 32) * torch.cos(2 * grid).view(1, 1, 32, 1)
    real = real.expand(4, NC, 32, 32).contiguous()
    d_real = []
    for _ in range(6):
        net_d.zero_grad()
        real_cpu = real.to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = net_d(real_cpu)
        err_d_real = criterion(output, label)
        err_d_real.backward()
        d_real.append(output.mean().item())
        noise = torch.randn(batch_size, NZ, 1, 1, device=device)
        fake = net_g(noise)
        assert fake.shape == (4, NC, 32, 32)
        label.fill_(fake_label)
        output = net_d(fake.detach())
        err_d_fake = criterion(output, label)
        err_d_fake.backward()
        err_d = err_d_real + err_d_fake
        optimizer_d.step()
        net_g.zero_grad()
        label.fill_(real_label)
        output = net_d(fake)
        err_g = criterion(output, label)
        err_g.backward()
        optimizer_g.step()
        assert math.isfinite(err_d.item()) and math.isfinite(err_g.item())
    assert d_real[-1] > d_real[0]  # the discriminator learns to accept real images
    with torch.no_grad():
        assert net_g(fixed_noise).detach().abs().max() <= 1
    torch.save(net_g.state_dict(), f"{tmp_path}/netG_epoch_{0}.pth")
    net_g2 = Generator(1)
    net_g2.load_state_dict(torch.load(f"{tmp_path}/netG_epoch_{0}.pth"))
    net_g.eval(), net_g2.eval()
    assert torch.equal(net_g2(fixed_noise), net_g(fixed_noise))


# ---------------------------------------------------------- mnist_forward_forward


def overlay_y_on_x(x, y, classes=10):
    x_ = x.clone()
    x_[:, :classes] *= 0.0
    x_[range(x.shape[0]), y] = x.max()
    return x_


def get_y_neg(y, device):
    y_neg = y.clone()
    for idx, y_samp in enumerate(y):
        allowed_indices = list(range(10))
        allowed_indices.remove(y_samp.item())
        y_neg[idx] = torch.tensor(allowed_indices)[
            torch.randint(len(allowed_indices), size=(1,))
        ].item()
    return y_neg.to(device)


class FFLayer(nn.Linear):
    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.relu = torch.nn.ReLU()
        self.opt = optim.Adam(self.parameters(), lr=0.03)
        self.threshold = 2.0
        self.num_epochs = 15

    def forward(self, x):
        x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
        return self.relu(torch.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

    def train(self, x_pos, x_neg):
        losses = []
        for _ in range(self.num_epochs):
            g_pos = self.forward(x_pos).pow(2).mean(1)
            g_neg = self.forward(x_neg).pow(2).mean(1)
            loss = torch.log(
                1 + torch.exp(torch.cat([-g_pos + self.threshold, g_neg - self.threshold]))
            ).mean()
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            losses.append(loss.item())
        self.losses = losses
        return self.forward(x_pos).detach(), self.forward(x_neg).detach()


class FFNet(torch.nn.Module):
    def __init__(self, dims, device):
        super().__init__()
        self.layers = []
        for d in range(len(dims) - 1):
            self.layers = self.layers + [FFLayer(dims[d], dims[d + 1]).to(device)]

    def predict(self, x):
        goodness_per_label = []
        for label in range(10):
            h = overlay_y_on_x(x, label)
            goodness = []
            for layer in self.layers:
                h = layer(h)
                goodness = goodness + [h.pow(2).mean(1)]
            goodness_per_label += [sum(goodness).unsqueeze(1)]
        return torch.cat(goodness_per_label, 1).argmax(1)

    def train(self, x_pos, x_neg):
        h_pos, h_neg = x_pos, x_neg
        for layer in self.layers:
            h_pos, h_neg = layer.train(h_pos, h_neg)


def test_mnist_forward_forward(mnist):
    use_cuda = torch.cuda.is_available()
    use_xpu = torch.xpu.is_available()
    use_mps = torch.backends.mps.is_available()
    assert not (use_cuda or use_xpu or use_mps)
    device = torch.device("cpu")
    torch.manual_seed(1)
    x_train, y_train, _, _ = mnist
    x, y = x_train[:128].to(device), y_train[:128].to(device)
    x_pos = overlay_y_on_x(x, y)
    assert torch.all(x_pos[torch.arange(128), y] == x.max())
    y_neg = get_y_neg(y, device)
    assert not torch.any(y_neg == y)
    x_neg = overlay_y_on_x(x, y_neg)
    net = FFNet([784, 64, 64], device)
    net.train(x_pos, x_neg)
    for layer in net.layers:
        assert layer.losses[-1] < layer.losses[0]
    error = 1.0 - net.predict(x).eq(y).float().mean().item()
    assert 0.0 <= error <= 1.0
    # torch.log(1 + torch.exp(z)) is softplus / log1p(exp(z)).
    z = torch.randn(5)
    assert torch.allclose(torch.log(1 + torch.exp(z)), torch.log1p(torch.exp(z)), atol=1e-6)
