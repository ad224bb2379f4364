"""Generate tests/vectors/samplers_ops.json: PyTorch's numbers for the samplers of
Note [Random samplers] (random_, bernoulli_, exponential_, geometric_, log_normal_,
cauchy_, bernoulli, multinomial, normal, randint_like, randint).

Run from the repository root with the separate PyTorch environment (generate.py calls
it too):

    .torch-venv/bin/python tests/vectors/generate_samplers.py

The format is random.json's (see generate_random.py: a case seeds a fresh generator and
makes calls on it; outputs are stored bit for bit, large ones as a checksum and
samples). A call is ``{"op": name, "args": [...], "input": {...}}``: ``input`` describes
the tensor the op runs on: ``shape``, ``dtype``, ``transposed`` (the transpose of a
contiguous tensor of the reversed shape), and ``values`` (filled with ``arange(numel) /
numel`` unless given); an in-place op writes into it. ``p`` (bernoulli_), ``mean`` and
``std`` (normal) name more such tensors.

``bernoulli_`` with a float ``p`` comes from PyTorch's default kernel, which PyTorch uses
on a CPU that is not Intel's; an MKL build on an Intel CPU draws from MKL's VSL stream
instead (Note [Random samplers]). These vectors were made on an AMD CPU.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from generate_random import encode

OUT = Path(__file__).resolve().parent / "samplers_ops.json"
DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "bool": torch.bool,
}


def make(spec: dict[str, Any]) -> torch.Tensor:
    shape, dtype = spec["shape"], DTYPES[spec.get("dtype", "float32")]
    numel = 1
    for s in shape:
        numel *= s
    if "values" in spec:
        base = torch.tensor(spec["values"], dtype=torch.float64).reshape(
            list(reversed(shape)) if spec.get("transposed") else shape
        )
    else:
        base = (torch.arange(numel, dtype=torch.float64) / max(numel, 1)).reshape(
            list(reversed(shape)) if spec.get("transposed") else shape
        )
    t = base.to(dtype)
    return t.t() if spec.get("transposed") else t


def run(gen: torch.Generator, call: dict[str, Any]) -> torch.Tensor:
    op, args = call["op"], list(call.get("args", []))
    kwargs = dict(call.get("kwargs", {}))
    if "dtype" in kwargs:
        kwargs["dtype"] = DTYPES[kwargs["dtype"]]
    if op.endswith("_") and op != "random_full_":
        t = make(call["input"])
        if "p" in call:
            args = [make(call["p"])]
        getattr(t, op)(*args, generator=gen)
        return t
    if op == "random_full_":
        t = make(call["input"])
        t.random_(-(2**63), None, generator=gen)
        return t
    if op == "bernoulli":
        return torch.bernoulli(make(call["input"]), *args, generator=gen)
    if op == "multinomial":
        return torch.multinomial(make(call["input"]), *args, generator=gen)
    if op == "normal":
        mean = make(call["mean"]) if "mean" in call else call["mean_value"]
        std = make(call["std"]) if "std" in call else call["std_value"]
        return torch.normal(mean, std, *args, generator=gen, **kwargs)
    if op == "randint_like":
        return torch.randint_like(make(call["input"]), *args, generator=gen, **kwargs)
    if op == "randint":
        return torch.randint(*args, generator=gen, **kwargs)
    raise ValueError(op)


def case(name: str, seed: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
    gen = torch.Generator()
    gen.manual_seed(seed)
    outputs = [encode(run(gen, c)) for c in calls]
    return {"name": name, "seed": seed, "calls": calls, "outputs": outputs}


def cases() -> list[dict[str, Any]]:
    out = []
    for dt in ("float32", "float64", "int64", "bool"):
        inp = {"shape": [3, 7], "dtype": dt}
        tr = {"shape": [4, 5], "dtype": dt, "transposed": True}
        out.append(case(f"random_{dt}", 1, [{"op": "random_", "input": inp}]))
        out.append(case(f"random_to_{dt}", 2, [{"op": "random_", "args": [2], "input": tr}]))
        if dt != "bool":
            out.append(
                case(f"random_from_to_{dt}", 3, [{"op": "random_", "args": [-7, 40], "input": inp}])
            )
            out.append(
                case(
                    f"random_wide_{dt}",
                    4,
                    [{"op": "random_", "args": [-5, 2**40], "input": {"shape": [9], "dtype": dt}}],
                )
            )
            out.append(
                case(f"random_from_{dt}", 5, [{"op": "random_", "args": [3, None], "input": inp}])
            )
            out.append(case(f"random_full_{dt}", 6, [{"op": "random_full_", "input": inp}]))
            out.append(
                case(f"geometric_{dt}", 7, [{"op": "geometric_", "args": [0.2], "input": tr}])
            )
        out.append(case(f"bernoulli_{dt}", 8, [{"op": "bernoulli_", "args": [0.3], "input": tr}]))
        for pdt in ("float32", "float64"):
            out.append(
                case(
                    f"bernoulli_tensor_p_{dt}_{pdt}",
                    9,
                    [
                        {
                            "op": "bernoulli_",
                            "input": {"shape": [4, 5], "dtype": dt, "transposed": True},
                            "p": {"shape": [5], "dtype": pdt},
                        }
                    ],
                )
            )
    for dt in ("float32", "float64"):
        inp = {"shape": [3, 7], "dtype": dt}
        tr = {"shape": [4, 5], "dtype": dt, "transposed": True}
        for n in (5, 1000):
            one = {"shape": [n], "dtype": dt}
            out.append(
                case(
                    f"exponential_{dt}_{n}",
                    10,
                    [{"op": "exponential_", "args": [3.0], "input": one}],
                )
            )
            out.append(
                case(
                    f"log_normal_{dt}_{n}",
                    11,
                    [{"op": "log_normal_", "args": [0.5, 0.7], "input": one}],
                )
            )
            out.append(
                case(f"cauchy_{dt}_{n}", 12, [{"op": "cauchy_", "args": [1.0, 2.0], "input": one}])
            )
        out.append(case(f"exponential_{dt}_transposed", 10, [{"op": "exponential_", "input": tr}]))
        out.append(case(f"bernoulli_fn_{dt}", 13, [{"op": "bernoulli", "input": tr}]))
        out.append(
            case(f"bernoulli_fn_p_{dt}", 13, [{"op": "bernoulli", "args": [0.6], "input": inp}])
        )
        weights = {
            "shape": [3, 5],
            "dtype": dt,
            "values": [0.1, 0.0, 0.5, 0.4, 0.3, 1, 2, 3, 4, 5, 0, 0.2, 1e-3, 0.7, 0],
        }
        for n, rep in ((1, False), (3, False), (7, True), (1, True)):
            out.append(
                case(
                    f"multinomial_{dt}_{n}_{rep}",
                    14,
                    [{"op": "multinomial", "args": [n, rep], "input": weights}],
                )
            )
        big = {"shape": [300], "dtype": dt, "values": [float(i % 17 + 1) for i in range(300)]}
        out.append(
            case(f"multinomial_{dt}_big", 15, [{"op": "multinomial", "args": [100], "input": big}])
        )
        out.append(
            case(
                f"multinomial_{dt}_big_rep",
                15,
                [{"op": "multinomial", "args": [500, True], "input": big}],
            )
        )
        out.append(
            case(
                f"multinomial_{dt}_transposed",
                16,
                [
                    {
                        "op": "multinomial",
                        "args": [2],
                        "input": {"shape": [4, 3], "dtype": dt, "transposed": True},
                    }
                ],
            )
        )
        for n in (5, 40):
            vec = {"shape": [n], "dtype": dt}
            out.append(
                case(
                    f"normal_tensor_tensor_{dt}_{n}",
                    17,
                    [{"op": "normal", "mean": vec, "std": {"shape": [n], "dtype": "float64"}}],
                )
            )
            out.append(
                case(
                    f"normal_tensor_float_{dt}_{n}",
                    18,
                    [{"op": "normal", "mean": vec, "std_value": 2.5}],
                )
            )
            out.append(
                case(
                    f"normal_float_tensor_{dt}_{n}",
                    19,
                    [{"op": "normal", "mean_value": -1.5, "std": vec}],
                )
            )
            out.append(
                case(
                    f"normal_float_float_{dt}_{n}",
                    20,
                    [
                        {
                            "op": "normal",
                            "mean_value": 1.0,
                            "std_value": 2.0,
                            "args": [[n]],
                            "kwargs": {"dtype": dt},
                        }
                    ],
                )
            )
        out.append(
            case(
                f"normal_broadcast_{dt}",
                21,
                [
                    {
                        "op": "normal",
                        "mean": {"shape": [2, 1], "dtype": dt},
                        "std": {"shape": [3], "dtype": dt},
                    }
                ],
            )
        )
        out.append(
            case(f"randint_like_{dt}", 22, [{"op": "randint_like", "args": [-3, 9], "input": tr}])
        )
    out.append(
        case(
            "randint_bool",
            23,
            [{"op": "randint", "args": [0, 2, [7]], "kwargs": {"dtype": "bool"}}],
        )
    )
    out.append(
        case(
            "randint_float32_wide",
            23,
            [{"op": "randint", "args": [0, 2**25, [7]], "kwargs": {"dtype": "float32"}}],
        )
    )
    return out


def main() -> None:
    all_cases = cases()
    names = [c["name"] for c in all_cases]
    assert len(names) == len(set(names)), "duplicate case names"
    lines = [json.dumps(c, allow_nan=False) for c in all_cases]
    text = '{"cases": [\n' + ",\n".join(lines) + "\n]}\n"
    OUT.write_text(text)
    print(f"{OUT.name}: {len(all_cases)} cases, {len(text)} bytes")


if __name__ == "__main__":
    main()
