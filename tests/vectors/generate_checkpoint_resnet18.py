"""Write the full-size ResNet-18 checkpoint fixture read by
tests/python/test_checkpoint_resnet18.py.

Run from the repository root with PyTorch and torchvision installed (never a test
dependency):

    /work/main/.torch-venv/bin/python tests/vectors/generate_checkpoint_resnet18.py

A torchvision ResNet-18 (``torchvision.models.resnet18()``, 1000 classes, 11.7 M
parameters) saved by ``torch.save`` is 45 MB of float32. Random weights do not compress,
so this script fills every tensor with a *tiled* pattern instead: one table of
``PERIOD`` (a prime) seeded normal float32 values, read from a per-tensor offset and
multiplied by a per-tensor power of two. A power of two changes only the exponent
bits, so every tensor repeats the same mantissas and xz (whose dictionary holds the
whole file) stores the table about once. See Note [Full-size checkpoint fixture].

Values (each tensor: ``scale * table[(offset + i) % PERIOD]`` over its flat index i,
``offset`` the CRC32 of its name modulo ``PERIOD``):

- convolutions: torchvision's kaiming-normal (fan-out, relu) std rounded to a power of
  two; ``fc``: ``nn.Linear``'s std ``1/sqrt(3 * 512)`` likewise; ``fc.bias`` 2^-6;
- batch norm weight ``1 + 2^-3 * pattern``, bias ``2^-4 * pattern``;
- batch norm running statistics calibrated on ``CALIBRATION_BATCHES`` random batches
  (cumulative averages, so eval-mode activations stay of order one through the 18
  layers, as in a trained network), then rounded (mean to a multiple of 2^-8, variance
  to 4 significant bits) so that they compress too; ``num_batches_tracked`` ``1000 + k``
  for the k-th batch norm;
- SGD (``lr=1e-4, momentum=0.9, weight_decay=1e-4``, PyTorch's other defaults): one
  real step creates the state, then every ``momentum_buffer`` is overwritten with the
  pattern scaled to a power of two near that step's gradient std.

Files:

- ``ckpt_resnet18_zip.pt.xz`` / ``ckpt_resnet18_legacy.pt.xz``: ``{"model":
  state_dict, "optimizer": optimizer.state_dict(), "epoch": EPOCH}`` saved by
  ``torch.save`` in the zip format and in the legacy format
  (``_use_new_zipfile_serialization=False``), compressed with Python's ``lzma`` (xz).
- ``ckpt_resnet18_expected.npz``: what PyTorch computes from the saved state.
  Inputs are not stored: they are float32 ``numpy.random.default_rng(seed)
  .standard_normal(shape, dtype=numpy.float32)`` (the test draws them again from
  ``<input>_seed`` and ``eval_shape`` / ``step_shape``) and ``<input>_sha256`` holds
  the SHA-256 of their bytes, so a change in numpy's stream is an error, not a
  mismatch. Entries:

  - ``names``, ``shapes`` (JSON), ``dtypes``: torchvision's state_dict keys in order,
    their shapes and dtypes; ``sha256``: the SHA-256 of every saved tensor's bytes
    (float32 / int64, little endian, row-major), then ``momentum_sha256`` (per
    parameter index); ``param_groups`` (JSON): the saved optimizer's param groups;
  - ``eval_output`` / ``train_output``: the logits for the ``eval`` input (2x3x64x64,
    seed ``SEEDS["eval"]``) in eval mode and in train mode (batch statistics);
  - three resumed SGD steps (train mode, cross_entropy) on the inputs ``step<k>``
    (4x3x64x64) with targets ``step<k>_target``, in float32 (the checkpoint's dtype)
    and in float64 (``model.to(torch.float64)`` after loading; the optimizer casts its
    state): ``f32_loss``, ``f64_loss`` (the three losses) and the state after the
    steps (45 MB of incompressible floats, so summarised per tensor). ``<p>_keys``
    names the floating tensors: ``final.<name>`` the buffers (running statistics),
    ``delta.<name>`` a parameter's change over the three steps, ``momentum.<i>`` the
    momentum buffer of parameter i (float64 only: see ``LR``); row r of ``<p>_sum``,
    ``<p>_sumsq``, ``<p>_l1`` holds its float64 sum, sum of squares and sum of
    absolute values, and of ``<p>_index`` / ``<p>_value`` ``SAMPLES`` flat indices
    (drawn from a generator seeded by the key) and the elements there;
    ``<p>_counter_keys`` / ``<p>_counter_value``: the ``num_batches_tracked``.

The legacy file's bytes change from run to run (its storage keys are PyTorch's object
ids); its contents do not.
"""

from __future__ import annotations

import hashlib
import io
import json
import lzma
import math
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from torch import nn

OUT = Path(__file__).resolve().parent
PERIOD = 4099
TABLE_SEED = 18
CALIBRATION_BATCHES = 4
SAMPLES = 32
EPOCH = 30
# Float32 training is chaotic at the level of single elements: a pre-activation within
# rounding of zero flips a ReLU, and that element's gradient moves the weight gradients
# by a few percent (the jump appears at one ReLU's gradient; float64 shows none). Under
# a one-ulp random change of the checkpoint's parameters PyTorch itself moves the
# momentum buffers after three steps by up to 22% of their largest element in half of
# the trials, and the third loss by 1e-4 at lr=1e-3; at lr=1e-4 the losses stay within
# 4e-6 (the momentum buffers still jump), so the float32 resume checks losses and
# running statistics and the float64 resume (where rounding is 1e-16) checks
# everything. PERTURBATIONS such trials run here and must stay inside F32_TOL.
LR = 1e-4
PERTURBATIONS = 6
F32_TOL = 1e-5
SEEDS = {"eval": 100, "calibration": 200, "step0": 300, "step1": 301, "step2": 302}
EVAL_SHAPE = (2, 3, 64, 64)
STEP_SHAPE = (4, 3, 64, 64)
NUM_CLASSES = 1000


def draw(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 normal input the test draws again."""
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def sha256(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def power_of_two(std: float) -> float:
    return 2.0 ** round(math.log2(std))


class Pattern:
    """The tiled table: ``scale * table[(crc32(name) % PERIOD + i) % PERIOD]``."""

    def __init__(self) -> None:
        self.table = np.random.default_rng(TABLE_SEED).standard_normal(PERIOD, dtype=np.float32)

    def __call__(self, name: str, shape: torch.Size, scale: float) -> torch.Tensor:
        offset = zlib.crc32(name.encode()) % PERIOD
        flat = self.table[(offset + np.arange(math.prod(shape))) % PERIOD]
        return torch.from_numpy(flat * np.float32(scale)).reshape(shape)


def parameter_values(model: nn.Module, pattern: Pattern) -> dict[str, torch.Tensor]:
    """The pattern for every parameter, at torchvision's init scale."""
    values = {}
    for name, p in model.named_parameters():
        if p.dim() == 4:
            fan_out = p.shape[0] * p.shape[2] * p.shape[3]
            values[name] = pattern(name, p.shape, power_of_two(math.sqrt(2.0 / fan_out)))
        elif name == "fc.weight":
            values[name] = pattern(name, p.shape, power_of_two(1 / math.sqrt(3 * p.shape[1])))
        elif name == "fc.bias":
            values[name] = pattern(name, p.shape, 2.0**-6)
        elif name.endswith(".weight"):  # batch norm
            values[name] = 1 + pattern(name, p.shape, 2.0**-3)
        else:
            values[name] = pattern(name, p.shape, 2.0**-4)
    return values


def round_to_bits(x: torch.Tensor, bits: int) -> torch.Tensor:
    """x with ``bits`` significant bits (positive x)."""
    mantissa, exponent = np.frexp(x.numpy())
    return torch.from_numpy(np.ldexp(np.round(mantissa * 2**bits) / 2**bits, exponent))


@torch.no_grad()
def calibrated_running_stats(model: nn.Module) -> dict[str, torch.Tensor]:
    """Rounded cumulative batch statistics over the calibration batches."""
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    for k in range(CALIBRATION_BATCHES):
        model(torch.from_numpy(draw(SEEDS["calibration"] + k, (8, 3, 64, 64))))
    for bn in bns:
        bn.momentum = 0.1
    stats = {}
    for k, (name, bn) in enumerate((n, m) for n, m in model.named_modules() if m in bns):
        stats[f"{name}.running_mean"] = torch.round(bn.running_mean * 256) / 256
        stats[f"{name}.running_var"] = round_to_bits(bn.running_var, 4)
        stats[f"{name}.num_batches_tracked"] = torch.tensor(1000 + k)
    return stats


def make_optimizer(model: nn.Module) -> torch.optim.SGD:
    return torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9, weight_decay=1e-4)


def train_step(model, optimizer, x, y) -> float:
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_batch(k: int) -> tuple[np.ndarray, np.ndarray]:
    x = draw(SEEDS[f"step{k}"], STEP_SHAPE)
    y = np.random.default_rng(SEEDS[f"step{k}"]).integers(0, NUM_CLASSES, STEP_SHAPE[0])
    return x, y


def build_checkpoint() -> dict:
    pattern = Pattern()
    model = torchvision.models.resnet18()
    values = parameter_values(model, pattern)
    model.load_state_dict(values, strict=False)
    stats = calibrated_running_stats(model)
    model.load_state_dict(stats, strict=False)
    optimizer = make_optimizer(model)
    x, y = step_batch(0)
    # One real step creates PyTorch's optimizer state (and moves everything it touches);
    # then every tensor gets its pattern back and the momentum buffers get theirs.
    train_step(model, optimizer, torch.from_numpy(x), torch.from_numpy(y))
    model.load_state_dict({**values, **stats}, strict=True)
    for name, p in model.named_parameters():
        buffer = optimizer.state[p]["momentum_buffer"]
        scale = power_of_two(float(buffer.std()))
        buffer.copy_(pattern(f"momentum.{name}", p.shape, scale))
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": EPOCH}


def load(data: bytes) -> dict:
    return torch.load(io.BytesIO(data), weights_only=True)


def summaries(prefix: str, tensors: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    """One row per floating tensor: float64 sum, sum of squares and sum of absolute
    values, and the elements (in the tensor's dtype) at ``SAMPLES`` flat indices drawn
    from a generator seeded by the key; integer tensors (``num_batches_tracked``) whole.
    """
    rows: dict[str, list] = {k: [] for k in ("keys", "sum", "sumsq", "l1", "index", "value")}
    counters: dict[str, list] = {"keys": [], "value": []}
    for key, tensor in tensors.items():
        flat = tensor.detach().reshape(-1).numpy()
        if not tensor.is_floating_point():
            counters["keys"].append(key)
            counters["value"].append(int(flat.item()))
            continue
        wide = flat.astype(np.float64)
        rng = np.random.default_rng(zlib.crc32(key.encode()))
        index = np.sort(rng.choice(flat.size, SAMPLES, replace=False))
        for field, value in zip(
            rows,
            (key, wide.sum(), (wide * wide).sum(), np.abs(wide).sum(), index, flat[index]),
        ):
            rows[field].append(value)
    out = {f"{prefix}_{field}": np.array(values) for field, values in rows.items()}
    out.update({f"{prefix}_counter_{field}": np.array(v) for field, v in counters.items()})
    return out


def resume(
    data: bytes, dtype: torch.dtype, noise_seed: int | None = None
) -> tuple[list[float], dict[str, torch.Tensor]]:
    """Three SGD steps from the saved file in ``dtype``; the losses and the state after
    them: the final buffers (``final.<name>``), the parameters' change
    (``delta.<name>``) and the momentum buffers (``momentum.<i>``). ``noise_seed``
    multiplies the float32 parameters by ``1 + 2^-23 * normal`` first (one ulp)."""
    # A fresh load each time: optimizer.load_state_dict keeps same-dtype tensors, so
    # the steps update the loaded momentum buffers in place.
    checkpoint = load(data)
    model = torchvision.models.resnet18()
    model.load_state_dict(checkpoint["model"])
    if noise_seed is not None:
        rng = np.random.default_rng(noise_seed)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(torch.from_numpy(1 + 2**-23 * rng.standard_normal(p.shape, np.float32)))
    model.to(dtype)
    initial = {k: v.detach().clone() for k, v in model.named_parameters()}
    optimizer = make_optimizer(model)
    optimizer.load_state_dict(checkpoint["optimizer"])  # casts the buffers to dtype
    model.train()
    losses = []
    for k in range(3):
        x, y = step_batch(k)
        x = torch.from_numpy(x).to(dtype)
        losses.append(train_step(model, optimizer, x, torch.from_numpy(y)))
    state: dict[str, torch.Tensor] = {f"final.{k}": v for k, v in model.named_buffers()}
    for i, (name, p) in enumerate(model.named_parameters()):
        state[f"delta.{name}"] = p.detach() - initial[name]
        state[f"momentum.{i}"] = optimizer.state[p]["momentum_buffer"]
    return losses, state


def check_float32_conditioning(data: bytes, losses: list[float], stats: dict) -> None:
    """PyTorch's float32 resume from one-ulp perturbed parameters stays within F32_TOL
    of the expected losses and running statistics (what the test compares)."""
    for seed in range(PERTURBATIONS):
        perturbed, state = resume(data, torch.float32, noise_seed=seed)
        moved = summaries("f32", {k: v for k, v in state.items() if k.startswith("final.")})
        errors = (
            np.abs(np.subtract(perturbed, losses)).max(),
            (np.abs(moved["f32_sum"] - stats["f32_sum"]) / stats["f32_l1"]).max(),
            np.abs(moved["f32_sumsq"] / stats["f32_sumsq"] - 1).max(),
            (
                np.abs(moved["f32_value"] - stats["f32_value"]) / (1 + np.abs(stats["f32_value"]))
            ).max(),
        )
        worst = max(errors)
        print(f"float32 resume, perturbation {seed}:", " ".join(f"{e:.1e}" for e in errors))
        assert worst < F32_TOL / 2, "the float32 resume is ill-conditioned"


def main() -> None:
    checkpoint = build_checkpoint()
    files = {}
    for fmt, zipfile_format in (("zip", True), ("legacy", False)):
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer, _use_new_zipfile_serialization=zipfile_format)
        files[fmt] = buffer.getvalue()
        compressed = lzma.compress(files[fmt], preset=9 | lzma.PRESET_EXTREME)
        (OUT / f"ckpt_resnet18_{fmt}.pt.xz").write_bytes(compressed)
        print(f"ckpt_resnet18_{fmt}.pt: {len(files[fmt])} bytes, xz {len(compressed)}")
    # The expected values come from what torch.load reads back, as the test's will.
    saved = load(files["zip"])
    legacy = load(files["legacy"])
    state = saved["model"]
    assert all(torch.equal(v, legacy["model"][k]) for k, v in state.items())

    expected: dict[str, np.ndarray] = {
        "names": np.array(list(state)),
        "shapes": np.array(json.dumps([list(v.shape) for v in state.values()])),
        "dtypes": np.array([str(v.dtype).removeprefix("torch.") for v in state.values()]),
        "sha256": np.array([sha256(v.numpy()) for v in state.values()]),
        "param_groups": np.array(json.dumps(saved["optimizer"]["param_groups"])),
    }
    momentum = saved["optimizer"]["state"]
    expected["momentum_sha256"] = np.array(
        [sha256(momentum[i]["momentum_buffer"].numpy()) for i in sorted(momentum)]
    )
    eval_input = draw(SEEDS["eval"], EVAL_SHAPE)
    expected["eval_seed"] = np.array(SEEDS["eval"])
    expected["eval_shape"] = np.array(EVAL_SHAPE)
    expected["eval_sha256"] = np.array(sha256(eval_input))
    expected["step_shape"] = np.array(STEP_SHAPE)
    for k in range(3):
        x, y = step_batch(k)
        expected[f"step{k}_seed"] = np.array(SEEDS[f"step{k}"])
        expected[f"step{k}_sha256"] = np.array(sha256(x))
        expected[f"step{k}_target"] = y

    model = torchvision.models.resnet18()
    model.load_state_dict(state)
    with torch.no_grad():
        model.eval()
        expected["eval_output"] = model(torch.from_numpy(eval_input)).numpy()
        model.train()
        expected["train_output"] = model(torch.from_numpy(eval_input)).numpy()
    print(
        "logits std: eval", expected["eval_output"].std(), "train", expected["train_output"].std()
    )

    losses, final = resume(files["zip"], torch.float32)
    expected["f32_loss"] = np.array(losses, dtype=np.float32)
    stats = summaries("f32", {k: v for k, v in final.items() if k.startswith("final.")})
    expected.update(stats)
    losses64, final64 = resume(files["zip"], torch.float64)
    expected["f64_loss"] = np.array(losses64)
    expected.update(summaries("f64", final64))
    print("losses", losses, "float64 - float32", np.subtract(losses64, losses))
    check_float32_conditioning(files["zip"], losses, stats)

    path = OUT / "ckpt_resnet18_expected.npz"
    np.savez_compressed(path, **expected)
    print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
