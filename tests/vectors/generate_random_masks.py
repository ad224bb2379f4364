"""Generate tests/vectors/random_masks.json: PyTorch's random masks and noise for a seed,
and the generator's state after them (Note [Random samplers], Note [Functional
activations in Rust]): ``bernoulli_(p)`` on every kind of tensor, ``torch.bernoulli(x,
p)``, ``rand_like`` / ``randn_like`` / ``randint_like`` (with their result's strides),
``F.dropout`` (also in place and as ``nn.Dropout``), the feature forms
``dropout1d/2d/3d`` (batched and unbatched), ``alpha_dropout``,
``feature_alpha_dropout`` and ``rrelu`` / ``rrelu_`` / ``nn.RReLU`` in training.

Run from the repository root with the separate PyTorch environment:

    .torch-venv/bin/python tests/vectors/generate_random_masks.py

Each case seeds the default generator (``torch.manual_seed(seed)``: the functionals have
no ``generator=`` argument), builds its input, runs one op and records

- ``out``: the result's values in row-major order (floats are exact in JSON);
- ``grad``: for float32/float64 ops that have a gradient, the input's gradient of
  ``(out * w).sum()`` with ``w = arange(numel) + 1`` (so every position counts);
- ``next``: ``torch.rand(2, dtype=torch.float64)`` drawn right after the op: the
  generator's state, so an op that draws too many or too few numbers fails;
- ``warnings``: the messages of the warnings the call emits.

An input is ``{"shape", "dtype", "layout"}`` with values ``((i * 7) % 23 - 11) / 4`` for
the i-th element in memory order (0 for integer and bool dtypes): ``layout`` is
``contiguous``, ``reversed`` (the dims of a contiguous tensor of the reversed shape,
permuted back: a transpose in 2-D), ``channels_last`` (4-D) or ``strided`` (every other
column of a tensor twice as wide: not dense).

``bernoulli_`` with a float ``p`` comes from PyTorch's default CPU kernel (one double
uniform per element, ``u < p``), which PyTorch uses on a CPU that is not Intel's; an MKL
build on an Intel CPU draws from MKL's VSL stream instead. These vectors were made on an
AMD CPU.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "random_masks.json"
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
}


def make(spec: dict[str, Any]) -> torch.Tensor:
    """The input tensor a case describes (see the module docstring)."""
    shape, dtype, layout = list(spec["shape"]), DTYPES[spec["dtype"]], spec["layout"]
    if layout == "contiguous":
        stored = shape
    elif layout == "reversed":
        stored = shape[::-1]
    elif layout == "channels_last":
        stored = [shape[0], shape[2], shape[3], shape[1]]
    elif layout == "strided":
        stored = shape[:-1] + [2 * shape[-1]]
    elif layout == "reversed_strided":
        stored = (shape[:-1] + [2 * shape[-1]])[::-1]
    elif layout == "expanded":
        stored = [1] + shape[1:]
    elif layout == "expanded_transposed":
        stored = [1, shape[2], shape[1]]
    else:
        raise ValueError(layout)
    numel = 1
    for s in stored:
        numel *= s
    i = torch.arange(numel, dtype=torch.float64)
    values = ((i * 7) % 23 - 11) / 4
    if not dtype.is_floating_point:
        values = torch.zeros(numel, dtype=torch.float64)
    base = values.reshape(stored).to(dtype)
    if layout == "reversed":
        return base.permute(*reversed(range(len(shape))))
    if layout == "channels_last":
        return base.permute(0, 3, 1, 2)
    if layout == "strided":
        return base[..., ::2]
    if layout == "reversed_strided":
        return base.permute(*reversed(range(len(shape))))[..., ::2]
    if layout == "expanded":
        return base.expand(*shape)
    if layout == "expanded_transposed":
        return base.expand(shape[0], shape[2], shape[1]).transpose(1, 2)
    return base


def run(op: str, x: torch.Tensor, kw: dict[str, Any]) -> torch.Tensor:
    """One op on ``x`` (the same dispatch as the pytest reader's)."""
    p = kw.get("p", 0.5)
    inplace = kw.get("inplace", False)
    if op == "bernoulli_":
        return x.bernoulli_(p)
    if op == "bernoulli_p":
        return torch.bernoulli(x, p)
    if op in ("rand_like", "randn_like", "randint_like"):
        args = [10] if op == "randint_like" else []
        dtype = DTYPES[kw["dtype"]] if "dtype" in kw else None
        return getattr(torch, op)(x, *args, dtype=dtype)
    if op in ("dropout", "dropout1d", "dropout2d", "dropout3d"):
        return getattr(F, op)(x, p, training=True, inplace=inplace)
    if op in ("alpha_dropout", "feature_alpha_dropout"):
        return getattr(F, op)(x, p, training=True, inplace=inplace)
    if op in ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout"):
        return getattr(torch.nn, op)(p, inplace=inplace).train()(x)
    if op == "FeatureAlphaDropout":
        return torch.nn.FeatureAlphaDropout(p, inplace=inplace).train()(x)
    lower, upper = kw.get("lower", 1.0 / 8), kw.get("upper", 1.0 / 3)
    if op == "rrelu":
        return F.rrelu(x, lower, upper, training=kw.get("training", True))
    if op == "rrelu_":
        return F.rrelu_(x, lower, upper, training=kw.get("training", True))
    if op == "RReLU":
        return torch.nn.RReLU(lower, upper).train(kw.get("training", True))(x)
    raise ValueError(op)


DIFFERENTIABLE = {
    "dropout",
    "dropout1d",
    "dropout2d",
    "dropout3d",
    "alpha_dropout",
    "feature_alpha_dropout",
    "Dropout",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "AlphaDropout",
    "FeatureAlphaDropout",
    "rrelu",
    "rrelu_",
    "RReLU",
}


def case(name: str, op: str, inp: dict[str, Any], seed: int = 0, **kw: Any) -> dict[str, Any]:
    x = make(inp)
    torch.manual_seed(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = run(op, x, kw)
    nxt = torch.rand(2, dtype=torch.float64).tolist()
    result: dict[str, Any] = {
        "name": name,
        "op": op,
        "input": inp,
        "kwargs": kw,
        "seed": seed,
        "out": out.contiguous().flatten().tolist(),
        "out_shape": list(out.shape),
        "out_dtype": str(out.dtype).removeprefix("torch."),
        "next": nxt,
        "warnings": [str(w.message) for w in caught],
    }
    if op.endswith("_like"):
        result["out_stride"] = list(out.stride())
    if op in DIFFERENTIABLE and inp["dtype"] in ("float32", "float64"):
        leaf = make(inp).detach().requires_grad_(True)
        torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = run(op, leaf.clone() if kw.get("inplace") or op == "rrelu_" else leaf, kw)
        w = torch.arange(1, y.numel() + 1, dtype=y.dtype).reshape(y.shape)
        (y * w).sum().backward()
        assert torch.equal(y.detach(), out), name
        result["grad"] = leaf.grad.contiguous().flatten().tolist()
    return result


def spec(shape: list[int], dtype: str = "float32", layout: str = "contiguous") -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype, "layout": layout}


def cases() -> list[dict[str, Any]]:
    out = []
    floats = ("float32", "float64", "float16", "bfloat16")
    # bernoulli_(p): one double uniform per element, in memory order, whatever the dtype.
    for dt in (*floats, "int64", "int32", "uint8", "bool"):
        out.append(case(f"bernoulli__{dt}", "bernoulli_", spec([20], dt), p=0.5))
    for layout in ("reversed", "strided", "reversed_strided"):
        out.append(case(f"bernoulli__{layout}", "bernoulli_", spec([3, 5], layout=layout), p=0.37))
    for p in (0.0, 1.0):
        out.append(case(f"bernoulli__p{p:g}", "bernoulli_", spec([7]), p=p))
    # torch.bernoulli(x, p): a new contiguous tensor, whatever x's layout.
    out.append(case("bernoulli_p_float64", "bernoulli_p", spec([4, 5], "float64"), p=0.37))
    out.append(case("bernoulli_p_reversed", "bernoulli_p", spec([4, 5], layout="reversed"), p=0.37))
    # rand_like / randn_like / randint_like fill empty_like(input, dtype=dtype): its
    # layout sets the order of the draws.
    for op in ("rand_like", "randn_like", "randint_like"):
        for layout, shape in (("reversed", [4, 5]), ("reversed_strided", [5, 4])):
            out.append(case(f"{op}_{layout}", op, spec(shape, layout=layout)))
        out.append(
            case(f"{op}_reversed_float64", op, spec([4, 5], layout="reversed"), dtype="float64")
        )
    out.append(
        case(
            "rand_like_expanded_transposed",
            "rand_like",
            spec([2, 3, 2], layout="expanded_transposed"),
        )
    )
    # dropout: empty_like(input).bernoulli_(1 - p), so the input's layout sets the order.
    for dt in floats:
        for p in (0.2, 0.3, 0.5, 0.75):
            out.append(case(f"dropout_{dt}_p{p:g}", "dropout", spec([20], dt), p=p))
    for p in (0.0, 1.0):
        out.append(case(f"dropout_p{p:g}", "dropout", spec([6]), p=p))
    for layout in ("reversed", "strided"):
        out.append(case(f"dropout_{layout}", "dropout", spec([3, 5], layout=layout), p=0.5))
    # Not dense: empty_like gives dense strides in the input's dimension order
    # (infer_dense_strides; a stride of 0 keeps the row-major order).
    for layout, shape in (
        ("reversed_strided", [5, 4]),
        ("expanded", [3, 4]),
        ("expanded_transposed", [2, 3, 2]),
    ):
        out.append(case(f"dropout_{layout}", "dropout", spec(shape, layout=layout)))
    out.append(
        case(
            "bernoulli_p_reversed_strided",
            "bernoulli_p",
            spec([5, 4], layout="reversed_strided"),
            p=0.3,
        )
    )
    out.append(
        case(
            "alpha_dropout_expanded_transposed",
            "alpha_dropout",
            spec([2, 3, 2], "float64", "expanded_transposed"),
        )
    )
    out.append(case("dropout_channels_last", "dropout", spec([2, 3, 2, 2], layout="channels_last")))
    out.append(case("dropout_inplace", "dropout", spec([4, 5]), p=0.3, inplace=True))
    out.append(
        case("dropout_inplace_reversed", "dropout", spec([4, 5], layout="reversed"), inplace=True)
    )
    out.append(case("dropout_large", "dropout", spec([1000], "float64"), seed=7, p=0.1))
    out.append(case("Dropout", "Dropout", spec([4, 5]), p=0.4))
    # Feature dropout: noise of shape (N, C, 1, ...), contiguous.
    out.append(case("dropout1d_batched", "dropout1d", spec([2, 3, 4])))
    out.append(case("dropout1d_unbatched", "dropout1d", spec([3, 4])))
    out.append(case("Dropout1d", "Dropout1d", spec([2, 3, 4], "float64"), p=0.25))
    for dt in floats:
        out.append(case(f"dropout2d_{dt}", "dropout2d", spec([2, 3, 2, 2], dt), p=0.5))
        out.append(case(f"dropout2d_{dt}_p0.3", "dropout2d", spec([2, 3, 2, 2], dt), p=0.3))
    out.append(case("dropout2d_unbatched", "dropout2d", spec([3, 2, 2])))
    out.append(
        case("dropout2d_channels_last", "dropout2d", spec([2, 3, 2, 2], layout="channels_last"))
    )
    out.append(case("dropout2d_inplace", "dropout2d", spec([2, 3, 2, 2]), inplace=True))
    out.append(case("dropout2d_p1", "dropout2d", spec([2, 3, 2, 2]), p=1.0))
    out.append(case("Dropout2d", "Dropout2d", spec([2, 4, 3, 2]), p=0.3))
    out.append(case("dropout3d_batched", "dropout3d", spec([2, 3, 2, 2, 2])))
    out.append(case("dropout3d_unbatched", "dropout3d", spec([3, 2, 2, 2])))
    out.append(case("Dropout3d", "Dropout3d", spec([2, 3, 2, 1, 2], "float64")))
    # Alpha dropout: the same mask, then a * (x * mask + alpha' * (1 - mask)) + b.
    for dt in floats:
        for p in (0.2, 0.3, 0.5):
            out.append(case(f"alpha_dropout_{dt}_p{p:g}", "alpha_dropout", spec([20], dt), p=p))
    out.append(case("alpha_dropout_p1", "alpha_dropout", spec([6]), p=1.0))
    out.append(case("alpha_dropout_reversed", "alpha_dropout", spec([3, 5], layout="reversed")))
    out.append(case("alpha_dropout_inplace", "alpha_dropout", spec([4, 5]), inplace=True))
    out.append(case("AlphaDropout", "AlphaDropout", spec([4, 5], "float64"), p=0.3))
    out.append(case("feature_alpha_dropout", "feature_alpha_dropout", spec([2, 3, 2, 2])))
    out.append(
        case("FeatureAlphaDropout", "FeatureAlphaDropout", spec([2, 4, 3], "float64"), p=0.3)
    )
    # rrelu in training: one uniform_real_distribution<double>(lower, upper) per element
    # <= 0, in row-major order, bounds in the op-math type (float for float32 and
    # bfloat16), then x * r in that type.
    for dt in ("float32", "float64", "bfloat16"):
        out.append(case(f"rrelu_{dt}", "rrelu", spec([40], dt)))
        out.append(case(f"rrelu_bounds_{dt}", "rrelu", spec([40], dt), lower=0.1, upper=0.7))
    out.append(case("rrelu_reversed", "rrelu", spec([4, 5], layout="reversed")))
    out.append(case("rrelu_strided", "rrelu", spec([4, 5], "float64", layout="strided")))
    out.append(
        case("rrelu_expanded_transposed", "rrelu", spec([2, 3, 2], layout="expanded_transposed"))
    )
    out.append(case("rrelu_equal_bounds", "rrelu", spec([10]), lower=0.25, upper=0.25))
    out.append(case("rrelu_large", "rrelu", spec([1000], "float64"), seed=7))
    out.append(case("rrelu_inplace", "rrelu_", spec([4, 5])))
    out.append(
        case("rrelu_inplace_float64", "rrelu_", spec([4, 5], "float64"), lower=0.2, upper=0.4)
    )
    out.append(case("RReLU", "RReLU", spec([3, 7])))
    for dt in ("float32", "float64", "float16", "bfloat16"):
        out.append(case(f"rrelu_eval_{dt}", "rrelu", spec([12], dt), training=False))
    return out


def main() -> None:
    torch.set_num_threads(1)
    all_cases = cases()
    names = [c["name"] for c in all_cases]
    assert len(names) == len(set(names)), "duplicate case names"
    lines = [json.dumps(c, allow_nan=False) for c in all_cases]
    OUT.write_text('{"cases": [\n' + ",\n".join(lines) + "\n]}\n")
    print(f"{OUT.name}: {len(all_cases)} cases")


if __name__ == "__main__":
    main()
