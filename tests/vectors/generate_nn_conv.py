"""Generate tests/vectors/nn_conv.json: convolutions and linear layers, with PyTorch.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_nn_conv.py

Same schema and determinism as generate.py (whose helpers this script imports): each
case draws its inputs from a numpy generator seeded with the CRC32 of its name. The ops
and kwargs are described in tests/vectors/README.md ("Convolutions and linear layers").
The file is read by tests/python/test_vectors_nn_conv.py and
crates/engine/tests/vectors_nn_conv.rs (the generic readers skip it).
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from generate import (
    DTYPES,
    INPUT_DECIMALS,
    apply_view,
    draw,
    f32,
    inp,
    permute,
    slice_,
    tensor_json,
    transpose,
)

OUT = Path(__file__).resolve().parent / "nn_conv.json"
F = torch.nn.functional


def _arg(v: Any) -> Any:
    """A JSON list stands for a tuple argument."""
    return tuple(v) if isinstance(v, list) else v


def apply(op: str, kw: dict[str, Any], xs: list[torch.Tensor]) -> torch.Tensor:
    """Runs `op` as a PyTorch user would; the readers mirror this."""
    kwargs = {k: _arg(v) for k, v in kw.items()}
    if op in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d"):
        return getattr(F, op)(*xs, **kwargs)
    if op == "conv_transpose3d":
        return F.conv_transpose3d(*xs, **kwargs)
    if op == "linear":
        return F.linear(*xs)
    if op == "bilinear":
        return F.bilinear(*xs)
    if op == "unfold":
        return F.unfold(xs[0], **kwargs)
    if op == "fold":
        return F.fold(xs[0], **kwargs)
    if op == "pixel_shuffle":
        return F.pixel_shuffle(xs[0], **kwargs)
    if op == "pixel_unshuffle":
        return F.pixel_unshuffle(xs[0], **kwargs)
    raise ValueError(f"unknown op {op!r}")


def make_case(
    name: str, op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One case in generate.py's schema (its make_case with this file's ops)."""
    kwargs = kwargs or {}
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    leaves = []
    inputs_json = []
    for spec in inputs:
        values = draw(rng, spec["shape"], spec["dist"])
        leaf = (
            torch.tensor(values.tolist(), dtype=DTYPES[spec["dtype"]])
            .reshape(tuple(spec["shape"]))
            .requires_grad_(spec["requires_grad"])
        )
        leaves.append(leaf)
        inputs_json.append(
            {
                "data": values.tolist(),
                "shape": spec["shape"],
                "dtype": spec["dtype"],
                "requires_grad": spec["requires_grad"],
                "view": spec["view"],
            }
        )
    out = apply(op, kwargs, [apply_view(t, s["view"]) for t, s in zip(leaves, inputs)])
    case: dict[str, Any] = {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
    }
    go_values = np.round(rng.normal(0.0, 1.0, out.numel()), INPUT_DECIMALS)
    grad_output = torch.tensor(go_values.tolist(), dtype=out.dtype).reshape(out.shape)
    out.backward(grad_output)
    case["grad_output"] = tensor_json(grad_output)
    case["grads"] = [tensor_json(t.grad) if t.requires_grad else None for t in leaves]
    return case


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []

    def c(name: str, op: str, specs: list[dict[str, Any]], **kwargs: Any) -> None:
        out.append(make_case(f"nn_{name}", op, specs, kwargs))

    x4 = inp([2, 3, 5, 6])
    w3 = inp([4, 3, 3, 3])
    b4 = inp([4])
    # conv2d
    c("conv2d_bias", "conv2d", [x4, w3, b4])
    c("conv2d_no_bias", "conv2d", [x4, w3])
    c("conv2d_stride2_pad1", "conv2d", [x4, w3, b4], stride=2, padding=1)
    c(
        "conv2d_tuple_args",
        "conv2d",
        [inp([1, 3, 8, 9]), inp([2, 3, 3, 2]), inp([2])],
        stride=[2, 1],
        padding=[1, 2],
        dilation=[1, 2],
    )
    c("conv2d_dilation2_pad2", "conv2d", [x4, w3, b4], padding=2, dilation=2)
    c("conv2d_same", "conv2d", [x4, w3, b4], padding="same")
    c("conv2d_same_even_kernel", "conv2d", [inp([1, 2, 6, 5]), inp([3, 2, 4, 2])], padding="same")
    c(
        "conv2d_same_dilated",
        "conv2d",
        [inp([1, 2, 6, 6]), inp([2, 2, 2, 3]), inp([2])],
        padding="same",
        dilation=2,
    )
    c("conv2d_valid", "conv2d", [x4, w3, b4], padding="valid")
    c("conv2d_groups2", "conv2d", [inp([2, 4, 5, 5]), inp([6, 2, 3, 3]), inp([6])], groups=2)
    c(
        "conv2d_depthwise",
        "conv2d",
        [inp([2, 3, 6, 6]), inp([6, 1, 3, 3]), inp([6])],
        groups=3,
        padding=1,
    )
    c("conv2d_pointwise", "conv2d", [inp([2, 5, 4, 4]), inp([3, 5, 1, 1]), inp([3])])
    c("conv2d_pointwise_stride2", "conv2d", [inp([2, 5, 5, 5]), inp([3, 5, 1, 1])], stride=2)
    c("conv2d_unbatched", "conv2d", [inp([3, 6, 6]), w3, b4], padding=1)
    c("conv2d_unbatched_same", "conv2d", [inp([3, 5, 6]), w3], padding="same")
    c("conv2d_kernel_gt_input_padded", "conv2d", [inp([1, 2, 3, 3]), inp([2, 2, 5, 5])], padding=2)
    c("conv2d_batch3_stride3", "conv2d", [inp([3, 2, 10, 8]), inp([2, 2, 3, 3])], stride=3)
    c(
        "conv2d_permuted_input",
        "conv2d",
        [inp([2, 5, 6, 3], view=permute([0, 3, 1, 2])), w3, b4],
        padding=1,
    )
    c(
        "conv2d_transposed_weight",
        "conv2d",
        [x4, inp([4, 3, 3, 3], view=transpose(2, 3)), b4],
    )
    c("conv2d_sliced_input", "conv2d", [inp([2, 3, 9, 7], view=slice_(2, 1, None, 2)), w3])
    c("conv2d_input_no_grad", "conv2d", [inp([2, 3, 5, 5], requires_grad=False), w3, b4])
    c("conv2d_weight_no_grad", "conv2d", [x4, inp([4, 3, 3, 3], requires_grad=False)])
    c("conv2d_f32", "conv2d", [f32(x4), f32(w3), f32(b4)], stride=2, padding=1)
    c(
        "conv2d_groups_f32",
        "conv2d",
        [f32(inp([2, 4, 5, 5])), f32(inp([4, 1, 3, 3]))],
        groups=4,
        padding="same",
    )
    # conv1d
    c("conv1d_bias", "conv1d", [inp([2, 3, 9]), inp([4, 3, 3]), inp([4])])
    c(
        "conv1d_stride_pad_dil",
        "conv1d",
        [inp([2, 2, 11]), inp([3, 2, 3])],
        stride=2,
        padding=2,
        dilation=2,
    )
    c("conv1d_groups", "conv1d", [inp([1, 4, 7]), inp([4, 2, 2]), inp([4])], groups=2)
    c("conv1d_same_even", "conv1d", [inp([2, 2, 7]), inp([3, 2, 4])], padding="same")
    c("conv1d_unbatched", "conv1d", [inp([3, 8]), inp([2, 3, 3])], padding=[1])
    c("conv1d_f32", "conv1d", [f32(inp([2, 3, 9])), f32(inp([4, 3, 3])), f32(inp([4]))], stride=2)
    # conv3d
    c("conv3d_bias", "conv3d", [inp([1, 2, 4, 5, 4]), inp([3, 2, 2, 3, 2]), inp([3])])
    c(
        "conv3d_stride_pad",
        "conv3d",
        [inp([2, 2, 5, 5, 5]), inp([2, 2, 3, 3, 3])],
        stride=2,
        padding=1,
    )
    c("conv3d_groups", "conv3d", [inp([1, 4, 3, 4, 3]), inp([2, 2, 2, 2, 2])], groups=2)
    c("conv3d_unbatched", "conv3d", [inp([2, 4, 4, 3]), inp([2, 2, 3, 3, 2])], padding="same")
    c("conv3d_f32", "conv3d", [f32(inp([1, 2, 4, 4, 4])), f32(inp([2, 2, 3, 3, 3]))], dilation=1)
    # transposed convolutions
    c("conv_transpose2d_bias", "conv_transpose2d", [inp([2, 3, 4, 4]), inp([3, 2, 3, 3]), inp([2])])
    c(
        "conv_transpose2d_stride_outpad",
        "conv_transpose2d",
        [inp([1, 2, 4, 3]), inp([2, 3, 3, 3]), inp([3])],
        stride=2,
        padding=1,
        output_padding=1,
    )
    c(
        "conv_transpose2d_groups",
        "conv_transpose2d",
        [inp([2, 4, 3, 3]), inp([4, 3, 2, 2])],
        groups=2,
        stride=[1, 2],
    )
    c(
        "conv_transpose2d_dilation_outpad",
        "conv_transpose2d",
        [inp([1, 2, 3, 3]), inp([2, 2, 3, 3])],
        dilation=2,
        output_padding=1,
    )
    c(
        "conv_transpose2d_unbatched",
        "conv_transpose2d",
        [inp([3, 3, 4]), inp([3, 2, 2, 3]), inp([2])],
        stride=2,
    )
    c(
        "conv_transpose2d_f32",
        "conv_transpose2d",
        [f32(inp([2, 3, 4, 4])), f32(inp([3, 2, 3, 3])), f32(inp([2]))],
        stride=2,
        padding=1,
    )
    c("conv_transpose1d_bias", "conv_transpose1d", [inp([2, 3, 5]), inp([3, 2, 3]), inp([2])])
    c(
        "conv_transpose1d_stride_outpad",
        "conv_transpose1d",
        [inp([1, 2, 4]), inp([2, 3, 4])],
        stride=3,
        padding=1,
        output_padding=2,
    )
    c(
        "conv_transpose1d_groups",
        "conv_transpose1d",
        [inp([1, 4, 5]), inp([4, 1, 3]), inp([2])],
        groups=2,
        dilation=2,
    )
    c(
        "conv_transpose3d_stride",
        "conv_transpose3d",
        [inp([1, 2, 2, 3, 2]), inp([2, 2, 2, 2, 2]), inp([2])],
        stride=2,
    )
    # linear and bilinear
    c("linear_2d_bias", "linear", [inp([3, 4]), inp([5, 4]), inp([5])])
    c("linear_2d_no_bias", "linear", [inp([3, 4]), inp([5, 4])])
    c("linear_3d_bias", "linear", [inp([2, 3, 4]), inp([5, 4]), inp([5])])
    c("linear_1d_input", "linear", [inp([4]), inp([5, 4]), inp([5])])
    c("linear_1d_weight", "linear", [inp([3, 4]), inp([4])])
    c("linear_transposed_input", "linear", [inp([4, 3], view=transpose(0, 1)), inp([5, 4])])
    c("linear_f32", "linear", [f32(inp([3, 4])), f32(inp([5, 4])), f32(inp([5]))])
    c("bilinear_bias", "bilinear", [inp([3, 4]), inp([3, 5]), inp([2, 4, 5]), inp([2])])
    c("bilinear_no_bias", "bilinear", [inp([3, 4]), inp([3, 5]), inp([2, 4, 5])])
    c("bilinear_3d", "bilinear", [inp([2, 3, 4]), inp([2, 3, 2]), inp([3, 4, 2]), inp([3])])
    c(
        "bilinear_f32",
        "bilinear",
        [f32(inp([3, 4])), f32(inp([3, 5])), f32(inp([2, 4, 5])), f32(inp([2]))],
    )
    # unfold / fold
    c("unfold_basic", "unfold", [inp([2, 3, 5, 5])], kernel_size=3)
    c(
        "unfold_args",
        "unfold",
        [inp([1, 2, 6, 7])],
        kernel_size=[2, 3],
        dilation=[2, 1],
        padding=1,
        stride=[2, 3],
    )
    c("unfold_unbatched", "unfold", [inp([2, 4, 4])], kernel_size=2, stride=2)
    c("unfold_f32", "unfold", [f32(inp([1, 2, 4, 5]))], kernel_size=[2, 2], padding=1)
    c("fold_basic", "fold", [inp([2, 12, 16])], output_size=[5, 5], kernel_size=2)
    c(
        "fold_args",
        "fold",
        [inp([1, 12, 9])],
        output_size=[6, 7],
        kernel_size=[2, 3],
        dilation=[2, 1],
        padding=1,
        stride=[2, 3],
    )
    c("fold_unbatched", "fold", [inp([8, 4])], output_size=4, kernel_size=2, stride=2)
    c("fold_f32", "fold", [f32(inp([2, 8, 9]))], output_size=[4, 4], kernel_size=2, padding=[0, 0])
    # pixel shuffle
    c("pixel_shuffle_4d", "pixel_shuffle", [inp([2, 8, 2, 3])], upscale_factor=2)
    c("pixel_shuffle_3d", "pixel_shuffle", [inp([9, 2, 2])], upscale_factor=3)
    c("pixel_shuffle_5d", "pixel_shuffle", [inp([2, 1, 4, 2, 2])], upscale_factor=2)
    c("pixel_unshuffle_4d", "pixel_unshuffle", [inp([1, 2, 4, 6])], downscale_factor=2)
    c("pixel_unshuffle_3d", "pixel_unshuffle", [inp([1, 6, 3])], downscale_factor=3)
    c("pixel_shuffle_f32", "pixel_shuffle", [f32(inp([1, 4, 3, 3]))], upscale_factor=2)
    return out


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    built = cases()
    names = [case["name"] for case in built]
    assert len(names) == len(set(names)), "duplicate case names"
    lines = [json.dumps(case, allow_nan=False) for case in built]
    text = '{"cases": [\n' + ",\n".join(lines) + "\n]}\n"
    OUT.write_text(text)
    print(f"{OUT.name}: {len(built)} cases, {len(text)} bytes")


if __name__ == "__main__":
    main()
