"""Writes ``nn_pool3d.json``: PyTorch's results for the pooling functionals added for
issue 21 (3-d pooling, adaptive max 1-d/3-d, LP pooling, max_unpool 1-d/3-d,
fractional max pooling and ``interpolate(mode="area")``).

Run from the repository root with ``.torch-venv/bin/python
tests/vectors/generate_nn_pool3d.py``. Each case: ``fn`` (a ``torch.nn.functional``
name), ``inputs`` (tensors passed positionally: ``dtype``, ``shape``, ``values`` flat;
int64 ones are index tensors), ``kwargs`` (a value ``{"tensor": i}`` names input ``i``,
passed by keyword and not differentiated), ``outputs`` (the returned tensors, flat, with
shapes and dtypes), ``grad`` (the upstream gradient of the first output) and
``grads`` (the gradient of the first input, or null), ``more_grads`` (those of the
other differentiated inputs: ``grid_sample``'s grid) and ``grad_fn``. ``errors`` lists
rejected calls: ``fn``, ``shapes`` of the (float32 ones) inputs, ``kwargs``, ``dtype``
and PyTorch's exception ``type`` and ``message``. Inputs come from numpy generators
seeded with the CRC32 of the case name; PyTorch runs on one thread.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

torch.set_num_threads(1)
OUT = Path(__file__).with_name("nn_pool3d.json")
DT = {"float32": torch.float32, "float64": torch.float64}


def rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def enc(t: torch.Tensor) -> dict:
    t = t.detach()
    return {
        "dtype": str(t.dtype).removeprefix("torch."),
        "shape": list(t.shape),
        "values": t.reshape(-1).tolist(),
    }


CASES: list[dict] = []


def case(
    name, fn, shapes, dtype="float64", kwargs=None, tensors=(), positive=False, pre=None, init=None
):
    """One case: ``shapes`` of the float inputs (the first is differentiated);
    ``tensors`` extra (name, tensor) keyword tensors; ``pre`` builds extra positional
    index inputs from the first input."""
    r = rng(name)
    kwargs = dict(kwargs or {})
    xs = []
    for s in shapes:
        a = r.standard_normal(s)
        if positive:
            a = np.abs(a) + 0.1
        xs.append(torch.tensor(a, dtype=DT[dtype], requires_grad=True))
    if init is not None:
        xs = [t.clone().requires_grad_(True) for t in init]
    extra = pre(xs[0].detach()) if pre else []
    inputs = xs + extra
    kw = dict(kwargs)
    enc_kw = dict(kwargs)
    for i, (key, t) in enumerate(tensors):
        enc_kw[key] = {"tensor": len(inputs) + i}
        kw[key] = t
    out = getattr(F, fn)(*inputs, **kw)
    outs = list(out) if isinstance(out, tuple) else [out]
    g = torch.tensor(r.standard_normal(outs[0].shape), dtype=outs[0].dtype)
    gs = torch.autograd.grad(outs[0], xs, g, allow_unused=True)
    gx = gs[0]
    CASES.append(
        {
            "name": name,
            "fn": fn,
            "inputs": [enc(t) for t in inputs] + [enc(t) for _, t in tensors],
            "kwargs": enc_kw,
            "outputs": [enc(o) for o in outs],
            "grad": enc(g),
            "grads": None if gx is None else enc(gx),
            "more_grads": [None if t is None else enc(t) for t in gs[1:]],
            "grad_fn": type(outs[0].grad_fn).__name__ if outs[0].grad_fn else None,
        }
    )


for dt in ("float64", "float32"):
    s = f"_{dt}"
    case("max_pool3d_k2" + s, "max_pool3d", [(2, 3, 4, 5, 6)], dt, {"kernel_size": 2})
    case(
        "max_pool3d_opts" + s,
        "max_pool3d",
        [(1, 2, 7, 6, 8)],
        dt,
        {
            "kernel_size": (3, 2, 3),
            "stride": (2, 1, 2),
            "padding": (1, 1, 0),
            "dilation": (1, 2, 2),
            "ceil_mode": True,
            "return_indices": True,
        },
    )
    case(
        "max_pool3d_unbatched" + s,
        "max_pool3d",
        [(2, 5, 5, 5)],
        dt,
        {"kernel_size": 3, "stride": 2, "padding": 1, "return_indices": True},
    )
    case("avg_pool3d_k2" + s, "avg_pool3d", [(2, 2, 4, 5, 6)], dt, {"kernel_size": 2})
    case(
        "avg_pool3d_pad" + s,
        "avg_pool3d",
        [(1, 2, 5, 6, 7)],
        dt,
        {"kernel_size": (3, 2, 3), "stride": (2, 2, 1), "padding": (1, 1, 1), "ceil_mode": True},
    )
    case(
        "avg_pool3d_nopad" + s,
        "avg_pool3d",
        [(1, 2, 5, 6, 7)],
        dt,
        {
            "kernel_size": 3,
            "stride": 2,
            "padding": 1,
            "count_include_pad": False,
            "ceil_mode": True,
        },
    )
    case(
        "avg_pool3d_divisor" + s,
        "avg_pool3d",
        [(2, 4, 4, 4)],
        dt,
        {"kernel_size": 2, "stride": 1, "divisor_override": 3},
    )
    case(
        "adaptive_avg_pool3d" + s,
        "adaptive_avg_pool3d",
        [(2, 2, 5, 7, 6)],
        dt,
        {"output_size": (3, 4, 2)},
    )
    case(
        "adaptive_avg_pool3d_none" + s,
        "adaptive_avg_pool3d",
        [(2, 5, 3, 4)],
        dt,
        {"output_size": (2, None, 3)},
    )
    case(
        "adaptive_max_pool3d" + s,
        "adaptive_max_pool3d",
        [(2, 2, 5, 7, 6)],
        dt,
        {"output_size": (3, 4, 2), "return_indices": True},
    )
    case(
        "adaptive_max_pool3d_up" + s, "adaptive_max_pool3d", [(2, 3, 2, 4)], dt, {"output_size": 4}
    )
    case(
        "adaptive_max_pool1d" + s,
        "adaptive_max_pool1d",
        [(2, 3, 11)],
        dt,
        {"output_size": 4, "return_indices": True},
    )
    case(
        "adaptive_max_pool1d_unbatched" + s, "adaptive_max_pool1d", [(3, 7)], dt, {"output_size": 3}
    )
    case(
        "lp_pool1d_p2" + s,
        "lp_pool1d",
        [(2, 3, 9)],
        dt,
        {"norm_type": 2, "kernel_size": 3, "stride": 2},
        positive=True,
    )
    case(
        "lp_pool1d_p3_ceil" + s,
        "lp_pool1d",
        [(2, 8)],
        dt,
        {"norm_type": 3.0, "kernel_size": 3, "ceil_mode": True},
        positive=True,
    )
    case(
        "lp_pool2d_p2" + s,
        "lp_pool2d",
        [(2, 2, 6, 7)],
        dt,
        {"norm_type": 2, "kernel_size": (2, 3)},
        positive=True,
    )
    case(
        "lp_pool2d_p1_5" + s,
        "lp_pool2d",
        [(1, 2, 6, 6)],
        dt,
        {"norm_type": 1.5, "kernel_size": 3, "stride": (1, 2)},
        positive=True,
    )
    case(
        "lp_pool2d_inf" + s,
        "lp_pool2d",
        [(1, 2, 6, 6)],
        dt,
        {"norm_type": float("inf"), "kernel_size": 2},
    )
    case(
        "lp_pool3d_p2" + s,
        "lp_pool3d",
        [(1, 2, 4, 5, 6)],
        dt,
        {"norm_type": 2, "kernel_size": 2, "stride": (1, 2, 2)},
        positive=True,
    )

    def pooled(k, stride=None, padding=0, rank=3):
        def make(x):
            fn = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[rank]
            return [fn(x, k, stride, padding, return_indices=True)[1]]

        return make

    def unpool_case(name, fn, shape, k, stride, padding, rank, dt=dt, **kw):
        r = rng(name + "_x")
        x = torch.tensor(r.standard_normal(shape), dtype=DT[dt])
        pool = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[rank]
        v, i = pool(x, k, stride, padding, return_indices=True)
        case(
            name,
            fn,
            [tuple(v.shape)],
            dt,
            {"kernel_size": k, "stride": stride, "padding": padding, **kw},
            pre=lambda _x, i=i: [i],
        )

    unpool_case("max_unpool3d" + s, "max_unpool3d", (2, 2, 4, 6, 4), 2, 2, 0, 3)
    unpool_case(
        "max_unpool3d_pad_size" + s,
        "max_unpool3d",
        (1, 2, 5, 6, 5),
        3,
        2,
        1,
        3,
        output_size=(5, 6, 5),
    )
    unpool_case("max_unpool1d" + s, "max_unpool1d", (2, 3, 9), 2, 2, 0, 1)
    unpool_case("max_unpool1d_size" + s, "max_unpool1d", (3, 9), 3, 2, 1, 1, output_size=[9])
    r = rng("fractional" + s)
    case(
        "fractional_max_pool2d" + s,
        "fractional_max_pool2d",
        [(2, 3, 9, 8)],
        dt,
        {"kernel_size": 2, "output_size": (4, 5), "return_indices": True},
        tensors=[("_random_samples", torch.tensor(r.random((2, 3, 2)), dtype=DT[dt]))],
    )
    case(
        "fractional_max_pool2d_ratio" + s,
        "fractional_max_pool2d",
        [(2, 10, 9)],
        dt,
        {"kernel_size": (3, 2), "output_ratio": (0.5, 0.6)},
        tensors=[("_random_samples", torch.tensor(r.random((1, 2, 2)), dtype=DT[dt]))],
    )
    case(
        "fractional_max_pool3d" + s,
        "fractional_max_pool3d",
        [(1, 2, 7, 8, 9)],
        dt,
        {"kernel_size": (2, 3, 2), "output_size": (3, 4, 5), "return_indices": True},
        tensors=[("_random_samples", torch.tensor(r.random((1, 2, 3)), dtype=DT[dt]))],
    )
    case("interpolate_area_1d" + s, "interpolate", [(2, 3, 10)], dt, {"size": 4, "mode": "area"})
    case(
        "interpolate_area_2d" + s,
        "interpolate",
        [(1, 2, 7, 9)],
        dt,
        {"scale_factor": 0.5, "mode": "area"},
    )
    case(
        "interpolate_area_3d" + s,
        "interpolate",
        [(1, 2, 5, 6, 7)],
        dt,
        {"size": (2, 4, 3), "mode": "area"},
    )

for dt in ("float64", "float32"):
    s = f"_{dt}"
    for mode in ("bilinear", "bicubic"):
        for align in (False, True):
            tag = f"{mode}_{'ac' if align else 'noac'}{s}"
            case(
                "interpolate_aa_down_" + tag,
                "interpolate",
                [(1, 2, 11, 9)],
                dt,
                {"size": (4, 5), "mode": mode, "align_corners": align, "antialias": True},
            )
            case(
                "interpolate_aa_up_" + tag,
                "interpolate",
                [(2, 1, 5, 4)],
                dt,
                {"size": (7, 9), "mode": mode, "align_corners": align, "antialias": True},
            )
        case(
            f"interpolate_aa_scale_{mode}{s}",
            "interpolate",
            [(1, 2, 10, 12)],
            dt,
            {"scale_factor": (0.3, 0.45), "mode": mode, "antialias": True},
        )


def grid(name, shape):
    return rng(name + "_grid").uniform(-1.2, 1.2, shape)


for dt in ("float64", "float32"):
    s = f"_{dt}"
    for mode in ("bilinear", "nearest"):
        for pad in ("zeros", "border", "reflection"):
            for align in (False, True):
                tag = f"grid_sample_3d_{mode}_{pad}_{'ac' if align else 'noac'}{s}"
                # The grid is the second differentiated input; its values are spread
                # over [-1.2, 1.2] by a separate generator.
                r = rng(tag)
                x = torch.tensor(r.standard_normal((2, 2, 3, 4, 5)), dtype=DT[dt])
                gr = torch.tensor(grid(tag, (2, 3, 2, 4, 3)), dtype=DT[dt])
                case(
                    tag,
                    "grid_sample",
                    [(2, 2, 3, 4, 5), (2, 3, 2, 4, 3)],
                    dt,
                    {"mode": mode, "padding_mode": pad, "align_corners": align},
                    init=[x, gr],
                )

ERRORS: list[dict] = []


def error(fn, shapes, dtype="float32", samples=None, **kwargs):
    """A rejected call; ``samples`` (shape, dtype) passes ``_random_samples`` of 0.5."""
    xs = [torch.ones(s, dtype=getattr(torch, dtype)) for s in shapes]
    extra = {}
    if samples is not None:
        extra["_random_samples"] = torch.full(samples[0], 0.5, dtype=getattr(torch, samples[1]))
    try:
        getattr(F, fn)(*xs, **kwargs, **extra)
    except Exception as e:  # noqa: BLE001 - recording PyTorch's exception
        ERRORS.append(
            {
                "fn": fn,
                "shapes": [list(s) for s in shapes],
                "dtype": dtype,
                "kwargs": kwargs,
                "samples": None if samples is None else [list(samples[0]), samples[1]],
                "type": type(e).__name__,
                "message": str(e),
            }
        )
        return
    raise AssertionError(f"{fn} {shapes} {kwargs} did not fail")


X5 = (1, 2, 4, 4, 4)
error("max_pool3d", [(2, 4, 4)], kernel_size=2)
error("max_pool3d", [X5], kernel_size=(2, 2))
error("max_pool3d", [X5], kernel_size=2, stride=(1, 1))
error("max_pool3d", [X5], kernel_size=2, padding=2)
error("max_pool3d", [X5], kernel_size=5)
error("max_pool3d", [X5], kernel_size=0, stride=1)
error("max_pool3d", [X5], kernel_size=2, stride=0)
error("max_pool3d", [X5], kernel_size=2, dilation=0)
error("max_pool3d", [X5], kernel_size=2, padding=-1)
error("max_pool3d", [(1, 0, 4, 4, 4)], kernel_size=2)
error("max_pool3d", [X5], dtype="bool", kernel_size=2)
error("avg_pool3d", [(2, 4, 4)], kernel_size=2)
error("avg_pool3d", [X5], kernel_size=(2, 2))
error("avg_pool3d", [X5], kernel_size=2, padding=(1, 1))
error("avg_pool3d", [X5], kernel_size=5)
error("avg_pool3d", [X5], kernel_size=0, stride=1)
error("avg_pool3d", [X5], kernel_size=2, stride=-1)
error("avg_pool3d", [X5], kernel_size=2, divisor_override=0)
error("avg_pool3d", [(1, 0, 4, 4, 4)], kernel_size=2)
error("avg_pool3d", [X5], dtype="float16", kernel_size=2)
error("adaptive_avg_pool3d", [(4, 4)], output_size=2)
error("adaptive_avg_pool3d", [X5], output_size=(2, 2))
error("adaptive_avg_pool3d", [X5], output_size=-1)
error("adaptive_avg_pool3d", [(1, 2, 0, 4, 4)], output_size=2)
error("adaptive_avg_pool3d", [X5], dtype="int64", output_size=2)
error("adaptive_max_pool3d", [(4, 4)], output_size=2)
error("adaptive_max_pool3d", [X5], output_size=(2, 2))
error("adaptive_max_pool3d", [X5], output_size=-1)
error("adaptive_max_pool3d", [(1, 0, 4, 4, 4)], output_size=2)
error("adaptive_max_pool3d", [X5], dtype="int64", output_size=2)
error("adaptive_max_pool1d", [(4,)], output_size=2)
error("adaptive_max_pool1d", [(2, 4)], output_size=(2, 2))
error("adaptive_max_pool1d", [(2, 4)], output_size=-1)
error("adaptive_max_pool1d", [(2, 0)], output_size=2)
error("lp_pool2d", [(1, 2, 4, 4)], norm_type=0, kernel_size=2)
error("lp_pool3d", [(2, 4, 4)], norm_type=2, kernel_size=2)
error("fractional_max_pool2d", [(1, 2, 7, 7)], kernel_size=2)
error("fractional_max_pool2d", [(1, 2, 7, 7)], kernel_size=2, output_size=7)
error("fractional_max_pool2d", [(1, 2, 7, 7)], kernel_size=8, output_size=3)
error("fractional_max_pool2d", [(7, 7)], kernel_size=2, output_size=3)
error("fractional_max_pool2d", [(1, 2, 7, 7)], dtype="int64", kernel_size=2, output_size=3)
error("fractional_max_pool3d", [(1, 2, 5, 5, 5)], kernel_size=2)
error("fractional_max_pool3d", [(1, 2, 5, 5, 5)], kernel_size=2, output_size=5)
error("fractional_max_pool2d", [(1, 2, 5, 5)], kernel_size=0, output_size=2)
error("fractional_max_pool3d", [(1, 2, 5, 5, 5)], kernel_size=0, output_size=2)
error("fractional_max_pool3d", [(1, 0, 5, 5, 5)], kernel_size=2, output_size=2)
error("fractional_max_pool2d", [(1, 0, 5, 5)], kernel_size=2, output_size=2)
error("fractional_max_pool3d", [(5, 5, 5)], kernel_size=2, output_size=2)
S = "_random_samples"
error(
    "fractional_max_pool2d",
    [(1, 2, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((1, 2, 2), "float64"),
)
error(
    "fractional_max_pool2d",
    [(2, 2, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((1, 2, 2), "float32"),
)
error(
    "fractional_max_pool2d",
    [(1, 2, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((1, 1, 2), "float32"),
)
error(
    "fractional_max_pool2d",
    [(1, 2, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((2, 2), "float32"),
)
error(
    "fractional_max_pool2d",
    [(1, 2, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((1, 2, 3), "float32"),
)
error(
    "fractional_max_pool3d",
    [(1, 2, 5, 5, 5)],
    kernel_size=2,
    output_size=2,
    samples=((1, 2, 2), "float32"),
)
error("max_unpool3d", [(1, 2, 2, 2, 2), (1, 2, 2, 2, 2)], kernel_size=2)
error("max_unpool1d", [(1, 2, 3), (1, 2, 3)], kernel_size=2, output_size=[3])
error("interpolate", [(1, 2, 4, 4)], size=2, mode="area", align_corners=True)
error("grid_sample", [(1, 2, 3, 4, 5), (1, 2, 2, 2, 2)], align_corners=False)
error("grid_sample", [(1, 2, 3, 4, 5), (1, 2, 2, 2, 3)], dtype="int64", align_corners=False)
error("interpolate", [(1, 2, 4)], size=2, mode="linear", antialias=True)
error("interpolate", [(1, 2, 4, 4)], dtype="float16", size=2, mode="bilinear", antialias=True)

OUT.write_text(json.dumps({"cases": CASES, "errors": ERRORS}, separators=(",", ":")) + "\n")
print(f"wrote {OUT} ({len(CASES)} cases, {len(ERRORS)} errors)")
