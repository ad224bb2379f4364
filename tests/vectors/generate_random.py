"""Generate tests/vectors/random.json: PyTorch's random streams for given seeds.

Run from the repository root with the separate PyTorch environment (generate.py calls
it too):

    .torch-venv/bin/python tests/vectors/generate_random.py

Each case seeds a fresh ``torch.Generator`` and makes a sequence of calls on it (so the
cached normal sample and the stream position carry from one call to the next); every
output is recorded bit for bit. Small outputs are stored in full: floats as the hex of
their IEEE bits (``%08x`` for float32, ``%016x`` for float64), integers as integers.
Large outputs store ``numel``, a checksum over all elements and a few sampled elements:
the checksum is ``h = (h * 1099511628211 + bits) mod 2**64`` over the elements in order,
starting from ``h = 14695981039346656037``, where ``bits`` is the element's IEEE bits
(floats) or its two's-complement value (integers).

The float32 ``normal_`` of 16 or more contiguous elements depends on the CPU kernel
PyTorch picks: these vectors come from its AVX2 kernel (see Note [Random numbers]).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import torch

OUT = Path(__file__).resolve().parent / "random.json"
FULL_MAX = 64  # outputs up to this many elements are stored in full
FNV_OFFSET = 14695981039346656037
FNV_PRIME = 1099511628211
DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64}


def element_bits(t: torch.Tensor) -> list[int]:
    values = t.contiguous().flatten().tolist()
    if t.dtype == torch.float32:
        return [struct.unpack("<I", struct.pack("<f", v))[0] for v in values]
    if t.dtype == torch.float64:
        return [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]
    return [v & (2**64 - 1) for v in values]


def encode(t: torch.Tensor) -> dict[str, Any]:
    width = {torch.float32: 8, torch.float64: 16}.get(t.dtype)
    bits = element_bits(t)

    def show(b: int, v: Any) -> Any:
        return f"{b:0{width}x}" if width else v

    values = t.contiguous().flatten().tolist()
    out: dict[str, Any] = {"shape": list(t.shape), "dtype": str(t.dtype).removeprefix("torch.")}
    if len(bits) <= FULL_MAX:
        out["values"] = [show(b, v) for b, v in zip(bits, values)]
        return out
    h = FNV_OFFSET
    for b in bits:
        h = (h * FNV_PRIME + b) % 2**64
    picks = sorted({0, 1, 15, 16, 17, len(bits) // 2, len(bits) - 17, len(bits) - 1})
    out["checksum"] = f"{h:016x}"
    out["samples"] = {str(i): show(bits[i], values[i]) for i in picks}
    return out


def run(gen: torch.Generator, call: dict[str, Any]) -> torch.Tensor:
    op, shape = call["op"], call.get("shape")
    dtype = DTYPES[call.get("dtype", "float32")]
    if op == "rand":
        return torch.rand(shape, generator=gen, dtype=dtype)
    if op == "randn":
        return torch.randn(shape, generator=gen, dtype=dtype)
    if op == "randint":
        return torch.randint(call["low"], call["high"], shape, generator=gen, dtype=dtype)
    if op == "randperm":
        return torch.randperm(call["n"], generator=gen)
    if op in ("uniform_", "normal_"):
        # "transposed": fill the transpose of a contiguous tensor of the reversed shape.
        if call.get("transposed"):
            t = torch.zeros(list(reversed(shape)), dtype=dtype).t()
        else:
            t = torch.zeros(shape, dtype=dtype)
        getattr(t, op)(*call["args"], generator=gen)
        return t
    raise ValueError(op)


def case(name: str, seed: int, calls: list[dict[str, Any]], state: bool = False) -> dict[str, Any]:
    gen = torch.Generator()
    gen.manual_seed(seed)
    outputs = [encode(run(gen, c)) for c in calls]
    out = {"name": name, "seed": seed, "calls": calls, "outputs": outputs}
    if state:
        out["state_after"] = bytes(gen.get_state().tolist()).hex()
    return out


def cases() -> list[dict[str, Any]]:
    out = []
    for dt in ("float32", "float64"):
        for n in (1, 5, 16, 17, 1000, 100003):
            out.append(case(f"rand_{dt}_{n}", 0, [{"op": "rand", "shape": [n], "dtype": dt}]))
        for n in (1, 3, 15, 16, 17, 33, 1000, 100003):
            out.append(case(f"randn_{dt}_{n}", 1, [{"op": "randn", "shape": [n], "dtype": dt}]))
        out.append(case(f"randn_{dt}_2d", 2, [{"op": "randn", "shape": [4, 5], "dtype": dt}]))
        # The cached second Box-Muller sample carries across calls (scalar path only).
        out.append(
            case(
                f"randn_{dt}_cache",
                3,
                [
                    {"op": "randn", "shape": [5], "dtype": dt},
                    {"op": "randn", "shape": [3], "dtype": dt},
                    {"op": "randn", "shape": [20], "dtype": dt},
                    {"op": "randn", "shape": [1], "dtype": dt},
                ],
            )
        )
        for n in (7, 1000):
            args = [-3.7, 2.2]
            out.append(
                case(
                    f"uniform_{dt}_{n}",
                    4,
                    [{"op": "uniform_", "shape": [n], "dtype": dt, "args": args}],
                )
            )
            args = [2.5, 0.3]
            out.append(
                case(
                    f"normal_{dt}_{n}",
                    5,
                    [{"op": "normal_", "shape": [n], "dtype": dt, "args": args}],
                )
            )
        for op, args in (("uniform_", [0.0, 1.0]), ("normal_", [-1.5, 2.7])):
            call = {"op": op, "shape": [5, 8], "dtype": dt, "args": args, "transposed": True}
            out.append(case(f"{op}{dt}_transposed", 6, [call]))
        out.append(
            case(
                f"randint_{dt}",
                7,
                [{"op": "randint", "low": -5, "high": 10, "shape": [20], "dtype": dt}],
            )
        )
    out.append(
        case(
            "randint_int64",
            8,
            [{"op": "randint", "low": 0, "high": 10, "shape": [3, 7], "dtype": "int64"}],
        )
    )
    out.append(
        case(
            "randint_wide",
            9,
            [{"op": "randint", "low": 0, "high": 2**40, "shape": [6], "dtype": "int64"}],
        )
    )
    out.append(
        case(
            "randint_wide_negative",
            9,
            [{"op": "randint", "low": -(2**60), "high": 2**62, "shape": [6], "dtype": "int64"}],
        )
    )
    out.append(case("randperm_10", 10, [{"op": "randperm", "n": 10}]))
    out.append(case("randperm_50", 10, [{"op": "randperm", "n": 50}]))
    # Only the low 32 bits seed the twister; initial_seed keeps all 64.
    out.append(case("seed_above_32_bits", 2**40 + 7, [{"op": "rand", "shape": [4]}]))
    out.append(case("seed_max", 2**64 - 1, [{"op": "rand", "shape": [4]}]))
    out.append(
        case(
            "interleaved",
            11,
            [
                {"op": "rand", "shape": [3]},
                {"op": "randn", "shape": [3], "dtype": "float64"},
                {"op": "randint", "low": 0, "high": 100, "shape": [3], "dtype": "int64"},
                {"op": "randn", "shape": [2], "dtype": "float64"},
                {"op": "randn", "shape": [40]},
            ],
        )
    )
    # get_state after an odd-sized scalar randn: the cached double sample is valid.
    out.append(
        case("state_layout", 12, [{"op": "randn", "shape": [3], "dtype": "float64"}], state=True)
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
