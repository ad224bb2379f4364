"""Checkpoints written by the Rust crate's ``rustgrad::nn`` load in the Python package
and give the logits Rust computed, bit for bit on a CPU with the same GEMM kernels
(Note [Rust modules]). The fixtures
(tests/vectors/rust_nn_from_rust_*.safetensors) are written by
``cargo run -p rustgrad --example nn_fixtures``; the other direction is
crates/engine/tests/nn_checkpoints.rs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import rustgrad
from rust_nn_models import simd_path, small_resnet
from rustgrad.models import LeNet

VECTORS = Path(__file__).resolve().parents[1] / "vectors"


@pytest.mark.parametrize("name", ["lenet", "resnet"])
def test_rust_checkpoints_load_by_name_and_give_bit_identical_logits(name: str) -> None:
    model = LeNet() if name == "lenet" else small_resnet()
    state = rustgrad.load(VECTORS / f"rust_nn_from_rust_{name}.safetensors")
    assert list(state) == list(model.state_dict())
    model.load_state_dict(state, strict=True)
    model.eval()
    probe = rustgrad.load(VECTORS / f"rust_nn_from_rust_{name}_io.safetensors")
    with rustgrad.no_grad():
        logits = model(probe["input"])
    assert logits.dtype == probe["logits"].dtype
    if bytes(probe["simd"].tolist()).decode() == simd_path():
        assert rustgrad.equal(logits, probe["logits"])
    else:
        # Written on a CPU with other GEMM kernels: equal to float32 rounding only
        # (Note [GEMM plans]).
        assert rustgrad.allclose(logits, probe["logits"], rtol=1e-4, atol=1e-5)


def test_a_rust_checkpoint_with_a_flipped_data_bit_is_refused() -> None:
    data = bytearray((VECTORS / "rust_nn_from_rust_resnet.safetensors").read_bytes())
    data[-1] ^= 1
    with pytest.raises(RuntimeError, match="checksum mismatch"):
        rustgrad.load(io.BytesIO(bytes(data)))
