"""examples/demo_finetune.py --quick (the README's first command in miniature): it runs
to the end in a fresh process, writes its outputs and prints the seed notes' facts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _check_exported_onnx(out: Path, text: str) -> None:
    """``--export-onnx``: the file passes onnx.checker and onnxruntime gives the
    fine-tuned checkpoint's eval logits (any batch size) within 1e-5."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    import rustgrad
    from rustgrad.models import resnet18

    path = out / "finetuned.onnx"
    assert f"exported the fine-tuned model to {path} (ONNX opset 17)" in text
    onnx.checker.check_model(str(path))
    model = resnet18(num_classes=5)
    model.load_state_dict(rustgrad.load(out / "resnet18_digits59_finetuned.safetensors"))
    model.eval()
    x = np.random.default_rng(0).standard_normal((3, 3, 32, 32)).astype(np.float32)
    with rustgrad.no_grad():
        want = model(rustgrad.from_numpy(x)).numpy()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(["logits"], {"images": x})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_demo_quick_runs_and_prints_the_seed_notes_facts(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), *sys.path]))
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "examples" / "demo_finetune.py"),
            "--quick",
            "--out",
            str(out),
            "--export-onnx",
            str(out / "finetuned.onnx"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    _check_exported_onnx(out, text)
    for name in (
        "loss.png",
        "frozen_step.dot",
        "resnet18_digits04.safetensors",
        "resnet18_digits59_finetuned.safetensors",
    ):
        assert (out / name).stat().st_size > 0, name
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    dot = (out / "frozen_step.dot").read_text()
    assert dot.startswith("digraph backward {")
    assert "fc.weight" in dot and "AddmmBackward0" in dot
    assert "ConvolutionBackward0" not in dot
    assert (
        "optimizer over model.fc.parameters() and over filter(requires_grad) hold the same "
        "parameters: True"
    ) in text
    assert (
        "volatile input: requires_grad=False volatile=True grad_fn=None although the "
        "parameters require grad: True"
    ) in text
    # The flags column of the inference table, row by row.
    table = {
        m.group(1).strip(): (float(m.group(2)), m.group(3).split())
        for m in re.finditer(
            r"^  (volatile|no_grad\(\)|inference_mode\(\)|grad mode)\s+([\d.]+)\s+(.*)$",
            text,
            re.M,
        )
    }
    rows = {mode: flags for mode, (_, flags) in table.items()}
    # Peak tensor memory: volatile no higher than no_grad(); grad mode keeps activations.
    peak = {mode: mib for mode, (mib, _) in table.items()}
    assert peak["volatile"] <= peak["no_grad()"] < peak["grad mode"], peak
    assert rows == {
        "volatile": ["False", "True", "None"],
        "no_grad()": ["False", "False", "None"],
        "inference_mode()": ["False", "False", "None"],
        "grad mode": ["True", "False", "set"],
    }
    # The frozen step saves far less for backward than full fine-tuning.
    saved = re.search(r"bytes saved for backward \(MiB\)\s+([\d.]+)\s+([\d.]+)", text)
    assert saved is not None, text
    assert float(saved.group(1)) * 100 < float(saved.group(2))
    assert re.search(r"task B test accuracy: [\d.]+%", text)


def test_demo_quick_ddp_runs_data_parallel_on_two_ranks(tmp_path):
    """``--ddp 2`` re-launches the demo through rustgrad.distributed.run: both phases
    train under DistributedDataParallel on DistributedSampler shards, rank 0 alone
    prints and saves."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), *sys.path]))
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "RUSTGRAD_NUM_THREADS", "OMP_NUM_THREADS"):
        env.pop(name, None)
    script = str(ROOT / "examples" / "demo_finetune.py")
    result = subprocess.run(
        [sys.executable, script, "--quick", "--ddp", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout
    assert "data-parallel: 2 ranks, 16 images per rank per step (global batch 32)" in text
    # Only rank 0 prints: each line once.
    assert text.count("task B test accuracy:") == 1, text
    assert re.search(r"task B test accuracy: [\d.]+%", text)
    sent = re.search(r"this rank all-reduced ([\d.]+) MiB of gradients", text)
    assert sent is not None and float(sent.group(1)) > 0, text
    for name in (
        "loss.png",
        "frozen_step.dot",
        "resnet18_digits04.safetensors",
        "resnet18_digits59_finetuned.safetensors",
    ):
        assert (out / name).stat().st_size > 0, name
