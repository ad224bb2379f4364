"""Write the Python half of the cross-language checkpoint fixtures (Note [Rust
modules]): the Python package's LeNet and a width-reduced ResNet
(``tests/python/rust_nn_models.py``), each trained for three SGD steps from
``rustgrad.manual_seed(0)`` and saved with ``rustgrad.save(model.state_dict())`` to
``rust_nn_from_python_{lenet,resnet}.safetensors``, plus an input and the model's
evaluation-mode logits for it in ``..._io.safetensors`` (with ``simd``, the GEMM kernel
family of the machine that computed them, see ``rust_nn_models.simd_path``). Read by
``crates/engine/tests/nn_checkpoints.rs``, which loads them into
``rustgrad::models`` and checks the logits bit for bit.

Also ``rust_nn_pth_expected.safetensors``: PyTorch's ``eval_input`` and
``eval_output`` from ``ckpt_resnet_expected.npz`` (see generate_checkpoints.py) as a
safetensors file, for the Rust test that reads ``ckpt_resnet_zip.pt`` with
``rustgrad::nn::load_pth`` (numpy's npz is not read in Rust).

Run from the repository root with the rustgrad package (not PyTorch):

    .venv/bin/python tests/vectors/generate_rust_nn_checkpoints.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import rustgrad
from rustgrad import nn
from rustgrad.models import LeNet

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

from rust_nn_models import simd_path, small_resnet  # noqa: E402


def train_and_probe(model: nn.Module, classes: int) -> tuple[rustgrad.Tensor, rustgrad.Tensor]:
    """Three SGD steps (momentum 0.9) in training mode on random data; then a fresh
    input and the evaluation-mode logits for it."""
    x = rustgrad.randn(4, 3, 32, 32)
    y = rustgrad.randint(0, classes, (4,))
    sgd = rustgrad.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for _ in range(3):
        sgd.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        sgd.step()
    model.eval()
    probe = rustgrad.randn(2, 3, 32, 32)
    with rustgrad.no_grad():
        return probe, model(probe)


def main() -> None:
    for name, make, classes in [("lenet", LeNet, 10), ("resnet", small_resnet, 5)]:
        rustgrad.manual_seed(0)
        model = make()
        probe, logits = train_and_probe(model, classes)
        rustgrad.save(model.state_dict(), HERE / f"rust_nn_from_python_{name}.safetensors")
        # The GEMM kernel family the logits were computed with (bitwise reproducible
        # only within one: Note [GEMM plans]), as the bytes of its name.
        simd = rustgrad.tensor(list(simd_path().encode()), dtype=rustgrad.uint8)
        io = {"input": probe, "logits": logits, "simd": simd}
        rustgrad.save(io, HERE / f"rust_nn_from_python_{name}_io.safetensors")
    expected = np.load(HERE / "ckpt_resnet_expected.npz")
    pth = {k: rustgrad.from_numpy(expected[k].copy()) for k in ("eval_input", "eval_output")}
    rustgrad.save(pth, HERE / "rust_nn_pth_expected.safetensors")


if __name__ == "__main__":
    main()
