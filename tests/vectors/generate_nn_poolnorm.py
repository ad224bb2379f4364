"""Write tests/vectors/nn_poolnorm.json: PyTorch's pooling and normalisation
functionals (forward, indices, gradients of every differentiable input, running
statistics after the op) for many option combinations.

Run from the repository root with PyTorch installed (never a test dependency):

    /work/main/.torch-venv/bin/python tests/vectors/generate_nn_poolnorm.py

Schema: that of README.md, plus, per case:

- ``kwargs["tensor_args"]``: the keyword name of each input in order; the op is
  ``torch.nn.functional.<op>(**{name: input}, **other_kwargs)``.
- ``updated``: one entry per input, the input's values after the op (the running
  statistics batch_norm and instance_norm update in place), or null.
- ``indices``: for ``return_indices=True`` (the output is then the values).

Inputs are drawn as in generate.py (each case seeded by the CRC32 of its name, inputs
rounded to 4 decimals); an input spec may instead carry explicit ``values``.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import torch
from generate import DTYPES, INPUT_DECIMALS, apply_view, draw, inp, tensor_json

OUT = Path(__file__).resolve().parent / "nn_poolnorm.json"
F = torch.nn.functional


def make_case(
    name: str,
    op: str,
    inputs: list[tuple[str, dict[str, Any]]],
    kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One case: ``inputs`` are ``(keyword, spec)`` pairs."""
    kwargs = dict(kwargs or {})
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    leaves, inputs_json, names = [], [], []
    for keyword, spec in inputs:
        if "values" in spec:
            values = np.asarray(spec["values"], dtype=np.float64)
        else:
            values = draw(rng, spec["shape"], spec["dist"])
        data = [int(v) for v in values] if spec["dtype"] == "int64" else values.tolist()
        leaf = torch.tensor(data, dtype=DTYPES[spec["dtype"]]).reshape(tuple(spec["shape"]))
        leaf.requires_grad_(spec["requires_grad"])
        leaves.append(leaf)
        names.append(keyword)
        inputs_json.append(
            {
                "data": data,
                "shape": spec["shape"],
                "dtype": spec["dtype"],
                "requires_grad": spec["requires_grad"],
                "view": spec["view"],
            }
        )
    # The op sees views (or, for inputs without grad, the leaf itself, so that in-place
    # updates of running statistics land in the leaf).
    args = {
        n: (apply_view(t, s["view"]) if s["view"] else t)
        for n, t, (_, s) in zip(names, leaves, inputs)
    }
    out = getattr(F, op)(**args, **kwargs)
    kwargs["tensor_args"] = names
    indices = None
    if isinstance(out, tuple):
        out, indices = out
    case: dict[str, Any] = {
        "name": name,
        "op": op,
        "kwargs": kwargs,
        "inputs": inputs_json,
        "output": tensor_json(out),
    }
    if indices is not None:
        case["indices"] = tensor_json(indices)
    case["updated"] = [
        tensor_json(t)
        if (not s["requires_grad"] and kw in ("running_mean", "running_var"))
        else None
        for t, (kw, s) in zip(leaves, inputs)
    ]
    if out.requires_grad:
        go = np.round(rng.normal(0.0, 1.0, out.numel()), INPUT_DECIMALS)
        grad_output = torch.tensor(go.tolist(), dtype=out.dtype).reshape(out.shape)
        out.backward(grad_output)
        case["grad_output"] = tensor_json(grad_output)
        case["grads"] = [tensor_json(t.grad) if t.requires_grad else None for t in leaves]
    else:
        case["grad_output"] = None
        case["grads"] = [None] * len(leaves)
    return case


def x(shape: list[int], **kw: Any) -> tuple[str, dict[str, Any]]:
    return ("input", inp(shape, **kw))


def max_pool_cases() -> list[dict[str, Any]]:
    cases = []
    combos = [
        ("k2", {"kernel_size": 2}),
        ("k3_s2_p1", {"kernel_size": 3, "stride": 2, "padding": 1}),
        ("k3_s1_p1_d2", {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 2}),
        ("k2x3_s1x2", {"kernel_size": (2, 3), "stride": (1, 2)}),
        ("k3_s2_ceil", {"kernel_size": 3, "stride": 2, "ceil_mode": True}),
        ("k2_s2_p1_ceil", {"kernel_size": 2, "stride": 2, "padding": 1, "ceil_mode": True}),
        ("k3_p1_idx", {"kernel_size": 3, "padding": 1, "return_indices": True}),
        (
            "k2_d2_ceil_idx",
            {"kernel_size": 2, "dilation": 2, "ceil_mode": True, "return_indices": True},
        ),
    ]
    for tag, kw in combos:
        cases.append(make_case(f"max_pool2d_{tag}", "max_pool2d", [x([2, 3, 7, 6])], kw))
    cases.append(
        make_case(
            "max_pool2d_unbatched", "max_pool2d", [x([3, 5, 5])], {"kernel_size": 2, "stride": 1}
        )
    )
    cases.append(
        make_case(
            "max_pool2d_f32",
            "max_pool2d",
            [x([2, 2, 6, 6], dtype="float32")],
            {"kernel_size": 3, "stride": 2, "padding": 1},
        )
    )
    cases.append(
        make_case(
            "max_pool2d_ties",
            "max_pool2d",
            [x([1, 2, 4, 4], dist="ties")],
            {"kernel_size": 2, "stride": 1, "return_indices": True},
        )
    )
    cases.append(
        make_case(
            "max_pool2d_transposed",
            "max_pool2d",
            [x([2, 3, 6, 5], view={"kind": "transpose", "dim0": 2, "dim1": 3})],
            {"kernel_size": 2},
        )
    )
    cases.append(make_case("max_pool1d_k2", "max_pool1d", [x([2, 3, 9])], {"kernel_size": 2}))
    cases.append(
        make_case(
            "max_pool1d_k3_s2_p1_ceil",
            "max_pool1d",
            [x([2, 3, 10])],
            {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
        )
    )
    cases.append(
        make_case(
            "max_pool1d_d2_idx",
            "max_pool1d",
            [x([3, 9])],
            {"kernel_size": 2, "dilation": 2, "return_indices": True},
        )
    )
    cases.append(
        make_case(
            "max_pool1d_f32",
            "max_pool1d",
            [x([2, 4, 8], dtype="float32")],
            {"kernel_size": 3, "stride": 1, "padding": 1},
        )
    )
    return cases


def avg_pool_cases() -> list[dict[str, Any]]:
    cases = []
    combos = [
        ("k2", {"kernel_size": 2}),
        ("k3_s2_p1", {"kernel_size": 3, "stride": 2, "padding": 1}),
        (
            "k3_s2_p1_nopad",
            {"kernel_size": 3, "stride": 2, "padding": 1, "count_include_pad": False},
        ),
        ("k3_s2_p1_ceil", {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
        (
            "k3_s2_p1_ceil_nopad",
            {
                "kernel_size": 3,
                "stride": 2,
                "padding": 1,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        ),
        ("k2x3_div5", {"kernel_size": (2, 3), "divisor_override": 5}),
        ("k2_s3_ceil", {"kernel_size": 2, "stride": 3, "ceil_mode": True}),
    ]
    for tag, kw in combos:
        cases.append(make_case(f"avg_pool2d_{tag}", "avg_pool2d", [x([2, 3, 7, 6])], kw))
    cases.append(
        make_case(
            "avg_pool2d_unbatched_f32",
            "avg_pool2d",
            [x([3, 5, 5], dtype="float32")],
            {"kernel_size": 2, "stride": 1},
        )
    )
    cases.append(
        make_case(
            "avg_pool1d_k3_s2_p1",
            "avg_pool1d",
            [x([2, 3, 9])],
            {"kernel_size": 3, "stride": 2, "padding": 1},
        )
    )
    cases.append(
        make_case(
            "avg_pool1d_ceil_nopad",
            "avg_pool1d",
            [x([3, 10])],
            {
                "kernel_size": 3,
                "stride": 2,
                "padding": 1,
                "ceil_mode": True,
                "count_include_pad": False,
            },
        )
    )
    for tag, size in [("1", 1), ("3x2", (3, 2)), ("5x4", (5, 4)), ("none3", (None, 3))]:
        cases.append(
            make_case(
                f"adaptive_avg_pool2d_{tag}",
                "adaptive_avg_pool2d",
                [x([2, 3, 7, 6])],
                {"output_size": size},
            )
        )
    cases.append(
        make_case(
            "adaptive_avg_pool2d_f32",
            "adaptive_avg_pool2d",
            [x([3, 5, 5], dtype="float32")],
            {"output_size": 3},
        )
    )
    cases.append(
        make_case(
            "adaptive_avg_pool1d_4", "adaptive_avg_pool1d", [x([2, 3, 9])], {"output_size": 4}
        )
    )
    for tag, size, idx in [("3x2", (3, 2), False), ("4_idx", 4, True), ("1_idx", 1, True)]:
        cases.append(
            make_case(
                f"adaptive_max_pool2d_{tag}",
                "adaptive_max_pool2d",
                [x([2, 3, 7, 6])],
                {"output_size": size, "return_indices": idx},
            )
        )
    # max_unpool2d: indices from PyTorch's own max_pool2d of a fixed input.
    for tag, shape, kw in [
        ("k2", [2, 3, 6, 6], {"kernel_size": 2}),
        ("k3_s2_p1", [1, 2, 7, 7], {"kernel_size": 3, "stride": 2, "padding": 1}),
    ]:
        src = torch.tensor(
            draw(np.random.default_rng(zlib.crc32(tag.encode())), shape, "normal").tolist()
        ).reshape(shape)
        values, indices = F.max_pool2d(src, return_indices=True, **kw)
        vshape = list(values.shape)
        cases.append(
            make_case(
                f"max_unpool2d_{tag}",
                "max_unpool2d",
                [
                    ("input", inp(vshape)),
                    (
                        "indices",
                        {
                            **inp(vshape, requires_grad=False, dtype="int64"),
                            "values": indices.reshape(-1).tolist(),
                        },
                    ),
                ],
                kw,
            )
        )
    return cases


def norm_cases() -> list[dict[str, Any]]:
    cases = []

    def bn(
        name: str,
        shape: list[int],
        affine: bool,
        training: bool,
        stats: bool,
        dtype: str = "float64",
        **kw: Any,
    ) -> None:
        c = shape[1]
        ins = [x(shape, dtype=dtype)]
        ins.append(
            ("running_mean", inp([c], requires_grad=False, dtype=dtype))
            if stats
            else ("running_mean", None)
        )
        ins.append(
            ("running_var", inp([c], dist="positive", requires_grad=False, dtype=dtype))
            if stats
            else ("running_var", None)
        )
        if affine:
            ins.append(("weight", inp([c], dtype=dtype)))
            ins.append(("bias", inp([c], dtype=dtype)))
        ins = [i for i in ins if i[1] is not None]
        args = {"training": training, **kw}
        if not stats:
            args["running_mean"] = None
            args["running_var"] = None
        cases.append(make_case(name, "batch_norm", ins, args))

    bn("batch_norm_train_affine", [4, 3, 5, 2], True, True, True)
    bn("batch_norm_train_plain", [4, 3, 5], False, True, True, momentum=0.3)
    bn("batch_norm_train_nostats", [5, 2, 3, 3], True, True, False)
    bn("batch_norm_train_2d", [6, 4], True, True, True, eps=1e-3)
    bn("batch_norm_eval_affine", [4, 3, 5, 2], True, False, True)
    bn("batch_norm_eval_plain", [2, 3, 4], False, False, True)
    bn("batch_norm_train_f32", [4, 3, 6, 6], True, True, True, dtype="float32")
    bn("batch_norm_eval_f32", [4, 3, 6], True, False, True, dtype="float32")
    cases.append(
        make_case(
            "batch_norm_train_weight_only",
            "batch_norm",
            [x([3, 2, 4]), ("weight", inp([2]))],
            {"training": True, "running_mean": None, "running_var": None},
        )
    )

    def ln(
        name: str,
        shape: list[int],
        nshape: list[int],
        affine: bool,
        dtype: str = "float64",
        **kw: Any,
    ) -> None:
        ins = [x(shape, dtype=dtype)]
        if affine:
            ins += [("weight", inp(nshape, dtype=dtype)), ("bias", inp(nshape, dtype=dtype))]
        cases.append(make_case(name, "layer_norm", ins, {"normalized_shape": nshape, **kw}))

    ln("layer_norm_last", [3, 4, 5], [5], True)
    ln("layer_norm_two", [3, 4, 5], [4, 5], True, eps=1e-3)
    ln("layer_norm_plain", [6, 7], [7], False)
    ln("layer_norm_f32", [4, 8], [8], True, dtype="float32")

    def gn(name: str, shape: list[int], groups: int, affine: bool, dtype: str = "float64") -> None:
        ins = [x(shape, dtype=dtype)]
        if affine:
            ins += [
                ("weight", inp([shape[1]], dtype=dtype)),
                ("bias", inp([shape[1]], dtype=dtype)),
            ]
        cases.append(make_case(name, "group_norm", ins, {"num_groups": groups}))

    gn("group_norm_g2", [2, 4, 3, 3], 2, True)
    gn("group_norm_g1", [3, 6, 5], 1, True)
    gn("group_norm_g6_plain", [2, 6, 4], 6, False)
    gn("group_norm_f32", [2, 4, 5, 2], 2, True, dtype="float32")

    cases.append(make_case("instance_norm_plain", "instance_norm", [x([2, 3, 5, 4])]))
    cases.append(
        make_case(
            "instance_norm_stats_affine",
            "instance_norm",
            [
                x([2, 3, 6]),
                ("running_mean", inp([3], requires_grad=False)),
                ("running_var", inp([3], dist="positive", requires_grad=False)),
                ("weight", inp([3])),
                ("bias", inp([3])),
            ],
            {"momentum": 0.2},
        )
    )
    cases.append(
        make_case(
            "rms_norm_last",
            "rms_norm",
            [x([3, 4, 5]), ("weight", inp([5]))],
            {"normalized_shape": [5], "eps": 1e-6},
        )
    )
    cases.append(
        make_case(
            "rms_norm_two_default_eps", "rms_norm", [x([3, 4, 5])], {"normalized_shape": [4, 5]}
        )
    )
    cases.append(
        make_case(
            "rms_norm_f32", "rms_norm", [x([4, 6], dtype="float32")], {"normalized_shape": [6]}
        )
    )
    cases.append(
        make_case("local_response_norm_3d", "local_response_norm", [x([2, 5, 4])], {"size": 3})
    )
    cases.append(
        make_case(
            "local_response_norm_4d",
            "local_response_norm",
            [x([2, 6, 3, 3])],
            {"size": 4, "alpha": 0.01, "beta": 0.5, "k": 2.0},
        )
    )
    cases.append(make_case("normalize_default", "normalize", [x([3, 4, 5])]))
    cases.append(make_case("normalize_p1_dim2", "normalize", [x([3, 4, 5])], {"p": 1.0, "dim": 2}))
    cases.append(
        make_case("normalize_f32_dim0", "normalize", [x([4, 6], dtype="float32")], {"dim": 0})
    )
    return cases


def main() -> None:
    torch.set_num_threads(1)
    cases = max_pool_cases() + avg_pool_cases() + norm_cases()
    names = [c["name"] for c in cases]
    assert len(names) == len(set(names))
    lines = ",\n".join(json.dumps(c) for c in cases)
    OUT.write_text('{"cases": [\n' + lines + "\n]}\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
