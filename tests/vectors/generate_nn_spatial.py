"""Write tests/vectors/nn_spatial.json: PyTorch's pad, interpolate, grid_sample and
affine_grid (forward, gradients of every differentiable input, grad_fn names) over many
option combinations, and the error sweep (exception type and message).

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_nn_spatial.py

Deterministic: each case draws its inputs from a numpy generator seeded with the CRC32
of its name; PyTorch runs on one thread. Schema: tests/vectors/README.md, plus
``grad_fn`` per case and a top-level ``errors`` list (see "Spatial ops" there).
"""

from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "nn_spatial.json"
DECIMALS = 4
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def inp(
    shape: list[int], dtype: str = "float64", dist: str = "normal", grad: bool = True
) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "dist": dist, "requires_grad": grad}


def draw(rng: np.random.Generator, shape: list[int], dist: str) -> np.ndarray:
    n = int(np.prod(shape)) if shape else 1
    if dist == "normal":
        values = rng.normal(0.0, 1.0, n)
    elif dist == "grid":
        # Sampling places, inside and somewhat outside [-1, 1].
        values = rng.uniform(-1.25, 1.25, n)
    elif dist == "theta":
        values = rng.uniform(-1.0, 1.0, n)
    else:
        raise ValueError(dist)
    return np.round(values, DECIMALS)


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    flat = t.detach().contiguous().reshape(-1).tolist()
    assert all(np.isfinite(flat)), "non-finite value in a vector"
    return {
        "data": [float(v) for v in flat],
        "shape": list(t.shape),
        "dtype": str(t.dtype).removeprefix("torch."),
    }


def call(op: str, xs: list[torch.Tensor], kwargs: dict[str, Any]) -> torch.Tensor:
    return getattr(F, op)(*xs, **kwargs)


def make_case(
    name: str, op: str, inputs: list[dict[str, Any]], kwargs: dict[str, Any]
) -> dict[str, Any]:
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    leaves, inputs_json = [], []
    for spec in inputs:
        values = draw(rng, spec["shape"], spec["dist"])
        leaf = torch.tensor(values.tolist(), dtype=DTYPES[spec["dtype"]]).reshape(spec["shape"])
        leaf.requires_grad_(spec["requires_grad"])
        leaves.append(leaf)
        inputs_json.append(
            {
                "data": values.tolist(),
                "shape": spec["shape"],
                "dtype": spec["dtype"],
                "requires_grad": spec["requires_grad"],
                "view": None,
            }
        )
    out = call(op, leaves, kwargs)
    go = np.round(rng.normal(0.0, 1.0, out.numel()), DECIMALS)
    grad_output = torch.tensor(go.tolist(), dtype=out.dtype).reshape(out.shape)
    out.backward(grad_output)
    return {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
        "grad_fn": out.grad_fn.name().removeprefix("torch::autograd::"),
        "grad_output": tensor_json(grad_output),
        "grads": [tensor_json(leaf.grad) if leaf.requires_grad else None for leaf in leaves],
    }


def pad_cases() -> list[tuple[str, str, list[dict[str, Any]], dict[str, Any]]]:
    cases = []
    specs = [
        ("c1d", [2, 3, 5], [1, 2], "constant", None),
        ("c2d_value", [1, 2, 4, 5], [1, 2, 2, 1], "constant", 0.5),
        ("c3d", [1, 2, 3, 4, 3], [1, 1, 0, 2, 1, 0], "constant", None),
        ("c_negative", [2, 3, 6], [-1, 2], "constant", None),
        ("c_crop2d", [1, 2, 4, 5], [-2, -1, 1, 0], "constant", -1.5),
        ("c_all_dims", [2, 3], [1, 1, 2, 0], "constant", 2.0),
        ("c_batch_dim", [2, 3, 4], [0, 0, 0, 0, 1, 1], "constant", None),
        ("c_to_empty", [2, 3, 5], [-5, 0], "constant", None),
        ("reflect_2d_input", [3, 5], [2, 3], "reflect", None),
        ("reflect_1d", [2, 3, 5], [-1, 4], "reflect", None),
        ("reflect_2d", [1, 2, 4, 5], [1, 2, 3, 0], "reflect", None),
        ("reflect_2d_3d_input", [2, 4, 5], [1, 1, 2, 2], "reflect", None),
        ("reflect_3d", [1, 2, 3, 4, 3], [1, 2, 2, 1, 1, 2], "reflect", None),
        ("reflect_3d_4d_input", [2, 3, 4, 3], [2, 0, 1, 3, 2, 1], "reflect", None),
        ("reflect_value_zero", [2, 3, 5], [1, 1], "reflect", 0.0),
        ("replicate_1d", [2, 3, 5], [4, 7], "replicate", None),
        ("replicate_1d_2d_input", [3, 4], [-1, 3], "replicate", None),
        ("replicate_2d", [1, 2, 4, 5], [3, 1, 0, 6], "replicate", None),
        ("replicate_2d_negative", [2, 4, 5], [-2, 1, 2, -1], "replicate", None),
        ("replicate_3d", [1, 2, 3, 2, 3], [1, 2, 2, 0, 3, 1], "replicate", None),
        ("circular_1d", [2, 3, 5], [2, 3], "circular", None),
        ("circular_1d_full", [2, 3, 5], [5, 5], "circular", None),
        ("circular_2d", [1, 2, 4, 5], [1, 2, 3, 4], "circular", None),
        ("circular_crop", [2, 6], [2, -3], "circular", None),
        ("circular_crop_both", [1, 2, 4, 6], [-1, -2, 1, -1], "circular", None),
        ("circular_3d", [1, 2, 3, 4, 3], [1, 2, 2, 1, 0, 3], "circular", None),
    ]
    for name, shape, pad, mode, value in specs:
        kwargs: dict[str, Any] = {"pad": pad, "mode": mode}
        if value is not None:
            kwargs["value"] = value
        cases.append((f"pad_{name}", "pad", [inp(shape)], kwargs))
        if name in ("c2d_value", "reflect_2d", "replicate_2d", "circular_2d", "reflect_3d"):
            cases.append((f"pad_{name}_f32", "pad", [inp(shape, "float32")], kwargs))
    return cases


def interpolate_cases() -> list[tuple[str, str, list[dict[str, Any]], dict[str, Any]]]:
    cases = []
    specs: list[tuple[str, list[int], dict[str, Any]]] = [
        ("nearest_1d_size", [2, 3, 5], {"size": 8}),
        ("nearest_1d_double", [2, 3, 5], {"size": 10}),
        ("nearest_1d_scale", [2, 2, 5], {"scale_factor": 1.5}),
        ("nearest_1d_down", [1, 2, 9], {"scale_factor": 0.6}),
        ("nearest_1d_recompute", [1, 2, 7], {"scale_factor": 1.7, "recompute_scale_factor": True}),
        ("nearest_2d", [1, 2, 3, 4], {"size": [5, 7]}),
        ("nearest_2d_scale", [2, 1, 4, 3], {"scale_factor": [2.5, 0.7]}),
        ("nearest_2d_same", [1, 2, 3, 4], {"size": [3, 4]}),
        ("nearest_3d", [1, 2, 2, 3, 2], {"scale_factor": 2}),
        ("nearest_3d_size", [1, 1, 3, 2, 4], {"size": [2, 5, 3]}),
    ]
    for mode in ("nearest-exact",):
        specs += [
            (f"{mode}_1d", [2, 3, 5], {"size": 8, "mode": mode}),
            (f"{mode}_1d_scale", [1, 2, 9], {"scale_factor": 0.6, "mode": mode}),
            (f"{mode}_2d", [1, 2, 3, 4], {"size": [5, 7], "mode": mode}),
            (f"{mode}_2d_scale", [1, 2, 4, 5], {"scale_factor": [1.3, 0.5], "mode": mode}),
            (f"{mode}_3d", [1, 1, 2, 3, 4], {"size": [3, 4, 2], "mode": mode}),
        ]
    for ac in (False, True):
        tag = "ac" if ac else "noac"
        specs += [
            (f"linear_size_{tag}", [2, 3, 5], {"size": 8, "mode": "linear", "align_corners": ac}),
            (f"linear_down_{tag}", [1, 2, 9], {"size": 4, "mode": "linear", "align_corners": ac}),
            (
                f"linear_scale_{tag}",
                [1, 2, 5],
                {"scale_factor": 1.7, "mode": "linear", "align_corners": ac},
            ),
            (f"linear_to_one_{tag}", [1, 2, 5], {"size": 1, "mode": "linear", "align_corners": ac}),
            (
                f"bilinear_up_{tag}",
                [1, 2, 3, 4],
                {"size": [5, 7], "mode": "bilinear", "align_corners": ac},
            ),
            (
                f"bilinear_down_{tag}",
                [2, 1, 6, 5],
                {"size": [4, 2], "mode": "bilinear", "align_corners": ac},
            ),
            (
                f"bilinear_scale_{tag}",
                [1, 2, 4, 5],
                {"scale_factor": [1.5, 0.8], "mode": "bilinear", "align_corners": ac},
            ),
            (
                f"bilinear_recompute_{tag}",
                [1, 1, 4, 5],
                {
                    "scale_factor": 1.3,
                    "mode": "bilinear",
                    "align_corners": ac,
                    "recompute_scale_factor": True,
                },
            ),
            (
                f"bicubic_up_{tag}",
                [1, 2, 4, 5],
                {"size": [7, 8], "mode": "bicubic", "align_corners": ac},
            ),
            (
                f"bicubic_down_{tag}",
                [1, 1, 7, 6],
                {"size": [3, 4], "mode": "bicubic", "align_corners": ac},
            ),
            (
                f"bicubic_scale_{tag}",
                [2, 1, 3, 4],
                {"scale_factor": 2.0, "mode": "bicubic", "align_corners": ac},
            ),
            (
                f"trilinear_{tag}",
                [1, 2, 2, 3, 4],
                {"size": [3, 5, 3], "mode": "trilinear", "align_corners": ac},
            ),
            (
                f"trilinear_scale_{tag}",
                [1, 1, 3, 2, 3],
                {"scale_factor": [1.5, 2.0, 0.7], "mode": "trilinear", "align_corners": ac},
            ),
        ]
    specs.append(("bilinear_default", [1, 2, 3, 3], {"scale_factor": 2, "mode": "bilinear"}))
    f32 = {
        "nearest_2d",
        "nearest-exact_2d",
        "bilinear_up_noac",
        "bilinear_up_ac",
        "bicubic_up_noac",
        "trilinear_ac",
    }
    for name, shape, kwargs in specs:
        cases.append((f"interpolate_{name}", "interpolate", [inp(shape)], kwargs))
        if name in f32:
            cases.append(
                (f"interpolate_{name}_f32", "interpolate", [inp(shape, "float32")], kwargs)
            )
    return cases


def grid_cases() -> list[tuple[str, str, list[dict[str, Any]], dict[str, Any]]]:
    cases = []
    for mode in ("bilinear", "nearest"):
        for padding in ("zeros", "border", "reflection"):
            for ac in (False, True):
                name = f"grid_sample_{mode}_{padding}_{'ac' if ac else 'noac'}"
                kwargs = {"mode": mode, "padding_mode": padding, "align_corners": ac}
                inputs = [inp([2, 3, 4, 5]), inp([2, 3, 4, 2], dist="grid")]
                cases.append((name, "grid_sample", inputs, kwargs))
    cases.append(
        (
            "grid_sample_bilinear_zeros_f32",
            "grid_sample",
            [inp([1, 2, 3, 4], "float32"), inp([1, 5, 2, 2], "float32", dist="grid")],
            {"mode": "bilinear", "padding_mode": "zeros", "align_corners": False},
        )
    )
    cases.append(
        (
            "grid_sample_reflection_far",
            "grid_sample",
            [inp([1, 2, 3, 4]), inp([1, 3, 3, 2], dist="grid")],
            {"mode": "bilinear", "padding_mode": "reflection", "align_corners": True},
        )
    )
    cases.append(
        (
            "grid_sample_input_only",
            "grid_sample",
            [inp([1, 2, 3, 4]), inp([1, 2, 3, 2], dist="grid", grad=False)],
            {"mode": "bilinear", "padding_mode": "border", "align_corners": False},
        )
    )
    for ac in (False, True):
        tag = "ac" if ac else "noac"
        cases.append(
            (
                f"affine_grid_2d_{tag}",
                "affine_grid",
                [inp([2, 2, 3], dist="theta")],
                {"size": [2, 3, 4, 5], "align_corners": ac},
            )
        )
        cases.append(
            (
                f"affine_grid_3d_{tag}",
                "affine_grid",
                [inp([1, 3, 4], dist="theta")],
                {"size": [1, 2, 3, 2, 4], "align_corners": ac},
            )
        )
    cases.append(
        (
            "affine_grid_2d_f32",
            "affine_grid",
            [inp([1, 2, 3], "float32", dist="theta")],
            {"size": [1, 1, 3, 3], "align_corners": False},
        )
    )
    return cases


def error_specs() -> list[dict[str, Any]]:
    """(name, fn, input shapes, kwargs[, phrase]): calls PyTorch rejects."""

    def e(
        name: str,
        fn: str,
        shapes: list[list[int]],
        kwargs: dict[str, Any],
        phrase: str | None = None,
        dtype: str = "float64",
    ) -> dict[str, Any]:
        return {
            "name": name,
            "fn": fn,
            "shapes": shapes,
            "kwargs": kwargs,
            "phrase": phrase,
            "dtype": dtype,
        }

    x3, x4, x5 = [2, 3, 5], [1, 2, 5, 6], [1, 2, 3, 4, 5]
    return [
        e("pad_odd", "pad", [x4], {"pad": [1]}),
        e("pad_too_long", "pad", [x4], {"pad": [1] * 10}),
        e("pad_reflect_value", "pad", [x4], {"pad": [1, 1], "mode": "reflect", "value": 1.0}),
        e("pad_reflect_wrong_size", "pad", [x4], {"pad": [1, 1], "mode": "reflect"}),
        e("pad_replicate_1d_input", "pad", [[5]], {"pad": [1, 1], "mode": "replicate"}),
        e("pad_reflect_six_on_3d", "pad", [x3], {"pad": [1] * 6, "mode": "reflect"}),
        e("pad_reflect_too_big", "pad", [x3], {"pad": [5, 1], "mode": "reflect"}),
        e("pad_reflect_too_big_2d", "pad", [x4], {"pad": [1, 1, 5, 1], "mode": "reflect"}),
        e("pad_reflect_too_big_3d", "pad", [x5], {"pad": [1, 1, 1, 1, 3, 1], "mode": "reflect"}),
        e("pad_reflect_negative_out", "pad", [x3], {"pad": [-5, -1], "mode": "reflect"}),
        e("pad_replicate_negative_out", "pad", [x3], {"pad": [-3, -2], "mode": "replicate"}),
        e(
            "pad_replicate_negative_out_2d",
            "pad",
            [x4],
            {"pad": [-7, 1, 0, 0], "mode": "replicate"},
        ),
        e("pad_circular_wraps", "pad", [x3], {"pad": [6, 1], "mode": "circular"}),
        e("pad_circular_empty", "pad", [[2, 6]], {"pad": [-7, 0], "mode": "circular"}),
        e("pad_constant_negative", "pad", [x3], {"pad": [-3, -3]}),
        e("pad_reflect_empty_dim", "pad", [[2, 0, 5]], {"pad": [1, 1], "mode": "reflect"}),
        e("pad_replicate_empty_dim", "pad", [[2, 3, 0]], {"pad": [1, 1], "mode": "replicate"}),
        e("pad_unknown_mode", "pad", [x4], {"pad": [1, 1], "mode": "foo"}),
        e("interp_no_size", "interpolate", [x4], {}),
        e("interp_both", "interpolate", [x4], {"size": 3, "scale_factor": 2.0}),
        e("interp_size_len", "interpolate", [x4], {"size": [3, 4, 5]}),
        e("interp_scale_len", "interpolate", [x4], {"scale_factor": [2.0]}),
        e("interp_nearest_align", "interpolate", [x4], {"size": 3, "align_corners": True}),
        e(
            "interp_recompute_size",
            "interpolate",
            [x4],
            {"size": 3, "mode": "bilinear", "recompute_scale_factor": True},
        ),
        e("interp_bilinear_3d", "interpolate", [x3], {"size": 3, "mode": "bilinear"}),
        e("interp_linear_4d", "interpolate", [x4], {"size": 3, "mode": "linear"}),
        e("interp_trilinear_4d", "interpolate", [x4], {"size": 3, "mode": "trilinear"}),
        e("interp_bicubic_5d", "interpolate", [x5], {"size": 3, "mode": "bicubic"}),
        e("interp_2d_input", "interpolate", [[3, 4]], {"size": 3}),
        e(
            "interp_antialias_3d",
            "interpolate",
            [x3],
            {"size": 3, "mode": "linear", "antialias": True},
        ),
        e("interp_zero_out", "interpolate", [x4], {"scale_factor": 0.1, "mode": "bilinear"}),
        e("interp_size_float", "interpolate", [x4], {"size": [2.5, 3]}),
        e("grid_mode", "grid_sample", [x4, [1, 3, 3, 2]], {"mode": "foo", "align_corners": False}),
        e(
            "grid_padding",
            "grid_sample",
            [x4, [1, 3, 3, 2]],
            {"padding_mode": "foo", "align_corners": False},
        ),
        e("grid_batch", "grid_sample", [x4, [2, 3, 3, 2]], {"align_corners": False}),
        e("grid_last", "grid_sample", [x4, [1, 3, 3, 3]], {"align_corners": False}),
        e("grid_dims", "grid_sample", [x4, [1, 3, 2]], {"align_corners": False}),
        e("grid_empty", "grid_sample", [[1, 2, 0, 4], [1, 3, 3, 2]], {"align_corners": False}),
        e(
            "affine_shape",
            "affine_grid",
            [[1, 3, 3]],
            {"size": [1, 1, 4, 4], "align_corners": False},
            phrase="Expected a batch of 2D affine matrices of shape Nx2x3 for size [1, 1, 4, 4]",
        ),
        e(
            "affine_shape_3d",
            "affine_grid",
            [[1, 2, 3]],
            {"size": [1, 1, 2, 4, 4], "align_corners": False},
            phrase="Expected a batch of 3D affine matrices of shape Nx3x4 for size [1, 1, 2, 4, 4]",
        ),
        e("affine_size", "affine_grid", [[1, 2, 3]], {"size": [1, 4, 4], "align_corners": False}),
        e(
            "affine_zero",
            "affine_grid",
            [[1, 2, 3]],
            {"size": [1, 1, 0, 4], "align_corners": False},
        ),
    ]


def run_error(spec: dict[str, Any]) -> dict[str, Any]:
    xs = [torch.ones(s, dtype=DTYPES[spec["dtype"]]) for s in spec["shapes"]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(spec["fn"], xs, spec["kwargs"])
    except Exception as err:  # noqa: BLE001 - recording PyTorch's exception type
        message = str(err)
        if spec["phrase"] is not None:
            assert spec["phrase"] in message, (spec["name"], message)
        return {**spec, "error": type(err).__name__, "message": message}
    raise AssertionError(f"{spec['name']}: PyTorch accepted the call")


def main() -> None:
    torch.set_num_threads(1)
    cases = [make_case(*c) for c in pad_cases() + interpolate_cases() + grid_cases()]
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    errors = [run_error(s) for s in error_specs()]
    lines = ",\n".join(json.dumps(c) for c in cases)
    error_lines = ",\n".join(json.dumps(e) for e in errors)
    OUT.write_text('{"cases": [\n' + lines + '\n],\n"errors": [\n' + error_lines + "\n]}\n")
    print(f"wrote {len(cases)} cases and {len(errors)} errors to {OUT}")


if __name__ == "__main__":
    main()
