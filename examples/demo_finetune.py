"""The seed scenario end to end: fine-tune a "pretrained" ResNet-18 whose base is frozen,
then check the seed notes' claims about freezing and ``volatile`` by measuring them.

Run it with `make demo` (which sets up .venv first). On scikit-learn's bundled
handwritten digits (1 797 8x8 images, upsampled to 3x32x32; no network needed):

1. train ``rustgrad.models.resnet18(num_classes=5)`` (torchvision's structure) on digits
   0-4 and save it as the "pretrained" checkpoint;
2. load it with ``resnet18(weights=PATH)``, freeze every parameter, replace ``fc`` with
   ``nn.Linear(512, 5)`` for digits 5-9, build the optimizer both ways the seed notes
   show (``model.fc.parameters()`` and ``filter(lambda p: p.requires_grad, ...)``),
   train the head with a progress bar and report test accuracy;
3. print the claims side by side: time per step and bytes saved for backward, frozen vs
   full fine-tuning; peak memory of inference with a volatile input, under
   ``no_grad()``, under ``inference_mode()`` and in grad mode (exact bytes of live
   tensors, ``rustgrad.cpu.max_memory_allocated``); the volatile output's flags;
4. write ``<out>/loss.png``, ``<out>/frozen_step.dot`` (and ``.svg`` when Graphviz is
   installed) and the two checkpoints.

    .venv/bin/python examples/demo_finetune.py [--epochs N] [--batch-size B]
        [--threads T] [--out DIR] [--quick] [--ddp N] [--export-onnx PATH]

``--export-onnx PATH`` also writes the fine-tuned model as an ONNX file
(``rustgrad.onnx.export``, opset 17, input ``images`` and output ``logits`` with a
dynamic batch axis), runnable by onnxruntime; it needs the ``onnx`` package.

``--ddp N`` runs phases 1 and 2 data-parallel on N processes: the script re-launches
itself through ``python -m rustgrad.distributed.run --nproc-per-node N``; each rank
trains on its ``DistributedSampler`` shard with ``batch-size / N`` images per step (the
same global batch), the model wrapped in ``DistributedDataParallel`` (in phase 2 only
``fc``'s gradients are all-reduced); rank 0 alone prints, saves and plots. Phase 3's
single-process measurements are skipped.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from sklearn.datasets import load_digits
    from tqdm import tqdm
except ImportError as error:  # pragma: no cover - a setup problem, said clearly
    sys.exit(
        f"demo_finetune.py needs the demo extras ({error.name} is missing): "
        "run `make setup` or `.venv/bin/pip install -r requirements-demo.txt`"
    )

import rustgrad
import rustgrad.distributed
import rustgrad.nn as nn
import rustgrad.nn.functional as F
import rustgrad.onnx
from rustgrad.autograd import Variable, graph_stats
from rustgrad.models import resnet18
from rustgrad.utils.data import DataLoader, TensorDataset
from rustgrad.utils.data.distributed import DistributedSampler

SEED = 0
MIB = 1024 * 1024
# SGD with momentum 0.9 for both phases (the seed notes' optimizer); the head's learning
# rate follows a cosine schedule over the fine-tuning epochs.
LR_PRETRAIN = 0.02
LR_FINETUNE = 0.05


# --- checkpoints ---------------------------------------------------------------------
# rustgrad.save / rustgrad.load: safetensors with the structure in its header, written
# atomically (Note [Checkpoints]).


def _save_state(state_dict: dict[str, Any], path: Path) -> None:
    """Writes ``state_dict`` ({name: tensor}) to ``path`` with ``rustgrad.save``."""
    rustgrad.save(state_dict, path)


def _load_state(path: Path) -> dict[str, Any]:
    """Reads a state_dict written by ``_save_state``."""
    return rustgrad.load(path)


# --- data ----------------------------------------------------------------------------


def digits(quick: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's digits as float32 3x32x32 images (each 8x8 pixel repeated 4x4,
    standardised), split by a seeded permutation into task A (digits 0-4, labels 0-4)
    and task B (digits 5-9, labels 0-4), 80% train / 20% test each."""
    data = load_digits()
    images = np.kron(data.images / 16.0, np.ones((4, 4))).astype(np.float32)
    images = (images - images.mean()) / images.std()
    images = np.repeat(images[:, None], 3, axis=1)
    rng = np.random.default_rng(SEED)
    out = {}
    for task, low in (("A", 0), ("B", 5)):
        index = np.flatnonzero((data.target >= low) & (data.target < low + 5))
        index = rng.permutation(index)
        cut = int(0.8 * len(index))
        train, test = index[:cut], index[cut:]
        if quick:
            train, test = train[:48], test[:48]
        for split, rows in (("train", train), ("test", test)):
            out[f"{task}_{split}"] = (images[rows], (data.target[rows] - low).astype(np.int64))
    return out


def loader(
    arrays: tuple[np.ndarray, np.ndarray], batch_size: int, shuffle: bool, epoch: int = -1
) -> DataLoader:
    """Batches of ``arrays``; under ``--ddp`` (``epoch >= 0``), this rank's
    ``DistributedSampler`` shard of them for ``epoch``."""
    x, y = arrays
    dataset = TensorDataset(rustgrad.from_numpy(x), rustgrad.from_numpy(y))
    if epoch >= 0 and DDP.enabled:
        sampler = DistributedSampler(dataset, shuffle=shuffle, seed=SEED)
        sampler.set_epoch(epoch)
        return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
    generator = rustgrad.Generator().manual_seed(SEED)
    return DataLoader(dataset, batch_size=batch_size, shuffle=shuffle, generator=generator)


class DDP:
    """``--ddp``: whether this process is one rank of a data-parallel run, and its rank."""

    enabled = False
    rank = 0
    world = 1

    @classmethod
    def wrap(cls, model: nn.Module) -> nn.Module:
        """``model`` in ``DistributedDataParallel`` under ``--ddp``, else ``model``."""
        if not cls.enabled:
            return model
        return nn.parallel.DistributedDataParallel(model)

    @classmethod
    def unwrap(cls, model: nn.Module) -> nn.Module:
        """The module a ``DistributedDataParallel`` wraps (evaluation runs on it alone)."""
        return model.module if isinstance(model, nn.parallel.DistributedDataParallel) else model


# --- training ------------------------------------------------------------------------


def accuracy(model: nn.Module, arrays: tuple[np.ndarray, np.ndarray]) -> float:
    """Test accuracy, in eval mode under no_grad()."""
    was_training = model.training
    model.eval()
    correct = 0
    with rustgrad.no_grad():
        for x, y in loader(arrays, 256, shuffle=False):
            correct += int((model(x).argmax(1) == y).sum())
    model.train(was_training)
    return correct / len(arrays[1])


def train(
    name: str,
    model: nn.Module,
    optimizer: Any,
    data: dict[str, tuple[np.ndarray, np.ndarray]],
    task: str,
    epochs: int,
    batch_size: int,
    base_eval: bool,
    scheduler: Any = None,
) -> dict[str, list[float]]:
    """Trains ``model`` for ``epochs`` with a tqdm bar; returns per-step losses and the
    per-epoch test accuracy. ``base_eval`` keeps the (frozen) model in eval mode, so the
    batch norms' running statistics stay as pretrained too; ``scheduler`` (if any) steps
    once per epoch."""
    history: dict[str, list[float]] = {"loss": [], "accuracy": []}
    model.train(not base_eval)
    for epoch in range(epochs):
        batches = (
            loader(data[f"{task}_train"], batch_size // DDP.world, shuffle=True, epoch=epoch)
            if DDP.enabled
            else loader(data[f"{task}_train"], batch_size, shuffle=True)
        )
        bar = tqdm(batches, leave=False, disable=DDP.rank != 0)
        bar.set_description(f"{name} epoch {epoch + 1}/{epochs}")
        for x, y in bar:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            history["loss"].append(float(loss))
            bar.set_postfix(loss=f"{float(loss):.3f}")
        if scheduler is not None:
            scheduler.step()
        history["accuracy"].append(accuracy(DDP.unwrap(model), data[f"{task}_test"]))
        print(f"{name}: epoch {epoch + 1}/{epochs}, test accuracy {history['accuracy'][-1]:.1%}")
    return history


def freeze_and_replace_fc(model: nn.Module) -> nn.Module:
    """The seed notes' fine-tuning: freeze every parameter, then a new ``fc`` (whose
    parameters require grad, as any new module's)."""
    for param in model.parameters():
        param.requires_grad = False
    model.fc = nn.Linear(512, 5)
    return model


# --- measurements --------------------------------------------------------------------


def step_cost(model: nn.Module, x: Any, y: Any, repeats: int) -> tuple[float, int, int]:
    """Median seconds of a training step (forward, loss, backward, SGD step) over the
    parameters that require grad, and the tensors / bytes saved for backward."""
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = rustgrad.optim.SGD(params, lr=1e-3, momentum=0.9)
    times = []
    stats = None
    for _ in range(repeats + 1):  # the first step warms up and is not timed
        start = time.perf_counter()
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        stats = graph_stats(loss)
        loss.backward()
        optimizer.step()
        times.append(time.perf_counter() - start)
    assert stats is not None
    return statistics.median(times[1:]), stats.saved_tensors, stats.saved_bytes


def inference_peaks(model: nn.Module, batch: int) -> dict[str, tuple]:
    """Peak tensor memory of one eval forward of ``model`` on ``batch`` images in each
    mode, above what was held before it (``rustgrad.cpu.max_memory_allocated``: exact
    bytes of live tensor storages, so the modes compare to the byte; Note [Memory
    statistics]), and the output's flags. The parameters require grad, as after
    loading a checkpoint."""
    for param in model.parameters():
        param.requires_grad = True
    model.eval()
    x = rustgrad.randn(batch, 3, 32, 32)
    results = {}
    for mode in ("volatile", "no_grad()", "inference_mode()", "grad mode"):
        rustgrad.cpu.reset_peak_memory_stats()
        base = rustgrad.cpu.memory_allocated()
        if mode == "volatile":
            out = model(Variable(x, volatile=True))
        elif mode == "no_grad()":
            with rustgrad.no_grad():
                out = model(x)
        elif mode == "inference_mode()":
            with rustgrad.inference_mode():
                out = model(x)
        else:
            out = model(x)
        peak = rustgrad.cpu.max_memory_allocated() - base
        params_require_grad = all(p.requires_grad for p in model.parameters())
        results[mode] = (
            peak,
            out.requires_grad,
            out.volatile,
            out.grad_fn is None,
            params_require_grad,
        )
        del out  # frees the grad-mode graph before the next mode
    return results


# --- outputs -------------------------------------------------------------------------


def plot(histories: dict[str, dict[str, list[float]]], path: Path) -> None:
    """Both phases' loss per step and test accuracy per epoch."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    for column, (name, history) in enumerate(histories.items()):
        axes[0][column].plot(history["loss"])
        axes[0][column].set(title=f"{name}: training loss", xlabel="step", ylabel="loss")
        epochs = range(1, len(history["accuracy"]) + 1)
        axes[1][column].plot(epochs, history["accuracy"], marker="o")
        axes[1][column].set(
            title=f"{name}: test accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1)
        )
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_graph(model: nn.Module, x: Any, y: Any, out: Path) -> Path:
    """The frozen step's backward graph as DOT (and SVG when Graphviz is installed)."""
    loss = F.cross_entropy(model(x), y)
    path = out / "frozen_step.dot"
    path.write_text(rustgrad.viz.to_dot(loss, dict(model.named_parameters())))
    if shutil.which("dot"):
        subprocess.run(["dot", "-Tsvg", str(path), "-o", str(out / "frozen_step.svg")], check=True)
    return path


def export_onnx(model: nn.Module, data: dict[str, Any], path: Path) -> None:
    """Writes ``model`` to ``path`` as ONNX, traced on two task-B images; the batch
    axis stays dynamic. The model's train/eval mode is left as it was."""
    example = rustgrad.from_numpy(data["B_train"][0][:2])
    rustgrad.onnx.export(
        model,
        (example,),
        str(path),
        input_names=["images"],
        output_names=["logits"],
        dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}},
    )
    print(f"exported the fine-tuned model to {path} (ONNX opset 17)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--epochs",
        type=int,
        default=None,
        help="pretraining epochs (3); fine-tuning runs twice as many (its steps are cheap)",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="rustgrad threads (2; with --ddp, per rank: the CPUs divided by the ranks)",
    )
    parser.add_argument("--out", type=Path, default=Path("demo_out"))
    parser.add_argument(
        "--quick", action="store_true", help="seconds: tiny subsets, one short epoch (tests)"
    )
    parser.add_argument(
        "--ddp",
        type=int,
        default=None,
        metavar="N",
        help="train data-parallel on N processes (rustgrad.distributed.run, MPI)",
    )
    parser.add_argument(
        "--export-onnx",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the fine-tuned model to PATH as ONNX (rustgrad.onnx.export)",
    )
    args = parser.parse_args(argv)
    if args.ddp is not None:
        ddp_setup(args, sys.argv[1:] if argv is None else argv)
    epochs = args.epochs or (1 if args.quick else 3)
    finetune_epochs = 1 if args.quick and not args.epochs else 2 * epochs
    args.out.mkdir(parents=True, exist_ok=True)
    if args.threads is None:  # --ddp: the launcher's share of the CPUs
        args.threads = rustgrad.get_num_threads()
    rustgrad.set_num_threads(args.threads)
    rustgrad.manual_seed(SEED)
    started = time.perf_counter()
    data = digits(args.quick)
    print(
        f"digits: task A (0-4) {len(data['A_train'][1])} train / {len(data['A_test'][1])} "
        f"test, task B (5-9) {len(data['B_train'][1])} / {len(data['B_test'][1])}; "
        f"{args.threads} threads"
    )

    # 1. "pretrained": a ResNet-18 (torchvision's structure) trained on digits 0-4.
    print("\n== 1. pretraining resnet18(num_classes=5) on digits 0-4")
    model = resnet18(num_classes=5)
    optimizer = rustgrad.optim.SGD(
        model.parameters(), lr=LR_PRETRAIN, momentum=0.9, weight_decay=1e-4
    )
    history_a = train(
        "task A", DDP.wrap(model), optimizer, data, "A", epochs, args.batch_size, False
    )
    pretrained = args.out / "resnet18_digits04.safetensors"
    if DDP.rank == 0:
        _save_state(model.state_dict(), pretrained)
    if DDP.enabled:
        rustgrad.distributed.barrier()  # the other ranks load rank 0's checkpoint
    print(f"saved the pretrained checkpoint to {pretrained}")

    # 2. fine-tuning: load, freeze, replace fc, train the head on digits 5-9.
    print("\n== 2. fine-tuning a frozen base on digits 5-9")
    model = resnet18(num_classes=5, weights=pretrained)
    model = freeze_and_replace_fc(model)
    by_fc = rustgrad.optim.SGD(model.fc.parameters(), lr=LR_FINETUNE, momentum=0.9)
    by_filter = rustgrad.optim.SGD(
        filter(lambda p: p.requires_grad, model.parameters()), lr=LR_FINETUNE, momentum=0.9
    )
    same = [id(p) for g in by_fc.param_groups for p in g["params"]] == [
        id(p) for g in by_filter.param_groups for p in g["params"]
    ]
    print(
        "optimizer over model.fc.parameters() and over filter(requires_grad) hold the same "
        f"parameters: {same}"
    )
    if not same:
        raise SystemExit("the two ways of building the optimizer disagree")
    schedule = rustgrad.optim.lr_scheduler.CosineAnnealingLR(by_fc, finetune_epochs)
    history_b = train(
        "task B",
        DDP.wrap(model),
        by_fc,
        data,
        "B",
        finetune_epochs,
        args.batch_size,
        True,
        schedule,
    )
    finetuned = args.out / "resnet18_digits59_finetuned.safetensors"
    if DDP.rank == 0:
        _save_state(model.state_dict(), finetuned)
    print(f"task B test accuracy: {history_b['accuracy'][-1]:.1%} (chance: 20%)")
    print(f"saved the fine-tuned checkpoint to {finetuned}")
    if args.export_onnx is not None and DDP.rank == 0:
        export_onnx(model, data, args.export_onnx)
    if DDP.enabled:
        ddp_finish(args, history_a, history_b, model, started)
        return

    # 3. the seed notes' claims, measured.
    print("\n== 3. the seed notes' claims, measured")
    measured = 8 if args.quick else args.batch_size
    x = rustgrad.from_numpy(data["B_train"][0][:measured])
    y = rustgrad.from_numpy(data["B_train"][1][:measured])
    repeats = 1 if args.quick else 3
    model.eval()
    frozen = step_cost(model, x, y, repeats)
    full_model = resnet18(num_classes=5, weights=pretrained)  # every parameter trains
    full_model.fc = nn.Linear(512, 5)
    full_model.train()
    full = step_cost(full_model, x, y, repeats)
    print(f"training step on a batch of {len(y)} images of 3x32x32:")
    print(f"  {'':34}{'frozen base (fc only)':>24}{'full fine-tuning':>20}")
    print(f"  {'time per step (ms)':34}{frozen[0] * 1e3:>24.1f}{full[0] * 1e3:>20.1f}")
    print(f"  {'tensors saved for backward':34}{frozen[1]:>24}{full[1]:>20}")
    print(f"  {'bytes saved for backward (MiB)':34}{frozen[2] / MIB:>24.3f}{full[2] / MIB:>20.3f}")
    # graph_stats counts every saved tensor, the convolutions' weights too: those are the
    # model's own parameters, saved by reference, not extra memory.
    conv_weights = sum(
        m.weight.numel() * 4 for m in full_model.modules() if isinstance(m, nn.Conv2d)
    )
    print(
        f"  frozen/full: {frozen[0] / full[0]:.2f}x the time, "
        f"{frozen[2] / full[2]:.4f}x the saved bytes ({conv_weights / MIB:.1f} MiB of the "
        "full model's are its convolution weights, saved by reference)"
    )
    batch = 16 if args.quick else 128
    # The fine-tuned weights in a model whose parameters all require grad (the frozen
    # `model` keeps its flags for the graph drawn below).
    full_model.load_state_dict(_load_state(finetuned))
    peaks = inference_peaks(full_model, batch)
    print(f"eval inference on {batch} images:")
    print(
        f"  {'mode':20}{'peak tensor memory (MiB)':>26}{'requires_grad':>15}{'volatile':>10}"
        f"{'grad_fn':>10}"
    )
    for mode, (peak, requires_grad, volatile, no_grad_fn, _) in peaks.items():
        grad_fn = "None" if no_grad_fn else "set"
        print(f"  {mode:20}{peak / MIB:>26.2f}{requires_grad!s:>15}{volatile!s:>10}{grad_fn:>10}")
    _, requires_grad, volatile, no_grad_fn, params_rg = peaks["volatile"]
    print(
        f"volatile input: requires_grad={requires_grad} volatile={volatile} "
        f"grad_fn={'None' if no_grad_fn else 'set'} "
        f"although the parameters require grad: {params_rg}"
    )

    # 4. outputs.
    plot(
        {"task A (pretraining, 0-4)": history_a, "task B (frozen base, 5-9)": history_b},
        args.out / "loss.png",
    )
    dot = write_graph(model, x[:2], y[:2], args.out)
    print(f"\nwrote {args.out / 'loss.png'}, {dot}" + (" (+ .svg)" if shutil.which("dot") else ""))
    print(f"done in {time.perf_counter() - started:.0f}s")


# --- --ddp ---------------------------------------------------------------------------


def ddp_setup(args: argparse.Namespace, argv: list[str]) -> None:
    """Under ``--ddp N``: started by hand, re-runs this script on N ranks through the
    launcher and exits with its status; started by the launcher (torchrun's
    ``LOCAL_RANK`` is set), joins the process group. Ranks other than 0 print nothing."""
    if "LOCAL_RANK" not in os.environ:
        command = [
            sys.executable,
            "-m",
            "rustgrad.distributed.run",
            "--nproc-per-node",
            str(args.ddp),
            str(Path(__file__).resolve()),
            *argv,
        ]
        sys.exit(subprocess.run(command).returncode)
    rustgrad.distributed.init_process_group(backend="gloo")
    DDP.enabled = True
    DDP.rank = rustgrad.distributed.get_rank()
    DDP.world = rustgrad.distributed.get_world_size()
    if args.batch_size % DDP.world:
        raise SystemExit(f"--batch-size {args.batch_size} is not a multiple of --ddp {DDP.world}")
    if DDP.rank != 0:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    print(
        f"data-parallel: {DDP.world} ranks, {args.batch_size // DDP.world} images per rank "
        f"per step (global batch {args.batch_size})"
    )


def ddp_finish(
    args: argparse.Namespace,
    history_a: dict[str, list[float]],
    history_b: dict[str, list[float]],
    model: nn.Module,
    started: float,
) -> None:
    """The end of a ``--ddp`` run: rank 0 writes the plot and the graph (phase 3's
    single-process measurements are skipped); every rank leaves the process group."""
    sent = rustgrad.distributed.distributed_c10d._group(None).comm_bytes.get("all_reduce", 0)
    print(
        "\n== 3. single-process measurements: skipped under --ddp "
        f"(this rank all-reduced {sent / MIB:.2f} MiB of gradients)"
    )
    if DDP.rank == 0:
        plot(
            {"task A (pretraining, 0-4)": history_a, "task B (frozen base, 5-9)": history_b},
            args.out / "loss.png",
        )
        data = digits(args.quick)
        x = rustgrad.from_numpy(data["B_train"][0][:2])
        y = rustgrad.from_numpy(data["B_train"][1][:2])
        dot = write_graph(model, x, y, args.out)
        print(f"\nwrote {args.out / 'loss.png'}, {dot}")
    print(f"done in {time.perf_counter() - started:.0f}s")
    rustgrad.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
