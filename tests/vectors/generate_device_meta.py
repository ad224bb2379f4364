"""Write device_meta.json: PyTorch's device flags of CPU tensors, its printing, strides
and errors of meta tensors, default-device behaviour and DataParallel's CPU behaviour,
read by tests/python/test_device_meta.py.

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_device_meta.py
"""

from __future__ import annotations

import json
import pathlib
import warnings

import torch

OUT = pathlib.Path(__file__).with_name("device_meta.json")


def error_of(fn) -> list[str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return [type(e).__name__, str(e)]
    raise AssertionError("no error")


def main() -> None:
    t = torch.ones(2)
    flags = {
        n: getattr(t, n)
        for n in dir(torch.Tensor)
        if n.startswith("is_") and not callable(getattr(t, n)) and n != "is_leaf"
    }
    calls = {n: getattr(t, n)() for n in ("is_pinned", "is_shared", "is_distributed")}
    calls.update(is_neg=t.is_neg(), is_conj=t.is_conj())
    meta = torch.empty(3, 4, device="meta")
    reprs = {
        "empty_3_4": repr(meta),
        "empty_int64": repr(torch.empty(3, device="meta", dtype=torch.int64)),
        "empty_float64": repr(torch.empty(2, device="meta", dtype=torch.float64)),
        "empty_requires_grad": repr(torch.empty(3, device="meta", requires_grad=True)),
        "parameter": repr(torch.nn.Parameter(torch.empty(2, device="meta"))),
        "empty_0": repr(torch.empty(0, device="meta")),
        "empty_scalar": repr(torch.empty((), device="meta")),
        "to_meta": repr(torch.ones(2).to("meta")),
    }
    strides = {
        "empty_2_3_4": list(torch.empty(2, 3, 4, device="meta").stride()),
        "t": list(meta.t().stride()),
        "permute": list(torch.empty(2, 3, 4, device="meta").permute(2, 0, 1).stride()),
        "view": list(meta.view(12).stride()),
    }
    shapes = {
        "matmul": list((meta @ torch.empty(4, 2, device="meta")).shape),
        "sum": list(meta.sum().shape),
        "sum_dim": list(meta.sum(1).shape),
        "add_broadcast": list((meta + torch.empty(4, device="meta")).shape),
        "getitem": list(meta[1:, None].shape),
    }
    linear = torch.nn.Linear(2, 3)
    with torch.device("meta"):
        meta_linear = torch.nn.Linear(2, 3)
    sd = linear.state_dict()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        meta_linear.load_state_dict(sd)
    errors = {
        "item": error_of(lambda: torch.empty((), device="meta").item()),
        "tolist": error_of(lambda: meta.tolist()),
        "numpy": error_of(lambda: meta.numpy()),
        "cpu": error_of(lambda: meta.cpu()),
        "to_cpu": error_of(lambda: meta.to("cpu")),
        "module_to_cpu": error_of(lambda: meta_linear.to("cpu")),
        "mixed_devices": error_of(lambda: meta + torch.ones(3, 4)),
        "bool": error_of(lambda: bool(meta)),
        "is_coalesced": error_of(lambda: t.is_coalesced()),
    }
    with torch.device("meta"):
        inside = {
            "default": str(torch.get_default_device()),
            "factories": {
                name: str(fn().device)
                for name, fn in {
                    "empty": lambda: torch.empty(2),
                    "zeros": lambda: torch.zeros(2),
                    "ones": lambda: torch.ones(2),
                    "full": lambda: torch.full((2,), 1.0),
                    "rand": lambda: torch.rand(2),
                    "randn": lambda: torch.randn(2),
                    "randint": lambda: torch.randint(3, (2,)),
                    "randperm": lambda: torch.randperm(3),
                    "arange": lambda: torch.arange(3),
                    "linspace": lambda: torch.linspace(0, 1, 3),
                    "logspace": lambda: torch.logspace(0, 1, 3),
                    "eye": lambda: torch.eye(2),
                    "tensor": lambda: torch.tensor([1.0, 2.0]),
                    "explicit_cpu": lambda: torch.zeros(2, device="cpu"),
                }.items()
            },
        }
    cpu_tensor = torch.ones(2)
    with torch.device("meta"):
        inside["zeros_like_cpu"] = str(torch.zeros_like(cpu_tensor).device)
        inside["rand_like_cpu"] = str(torch.rand_like(cpu_tensor).device)
    dp = torch.nn.DataParallel(torch.nn.Linear(2, 3))
    data_parallel = {
        "repr": repr(dp),
        "state_dict_keys": list(dp.state_dict()),
        "device_ids": dp.device_ids,
        "functional_error": error_of(
            lambda: torch.nn.parallel.data_parallel(torch.nn.Linear(2, 3), torch.ones(1, 2))
        ),
        "has_dim": hasattr(dp, "dim"),
        "has_output_device": hasattr(dp, "output_device"),
    }
    OUT.write_text(
        json.dumps(
            {
                "torch_version": torch.__version__,
                "cpu_flags": flags,
                "cpu_calls": calls,
                "reprs": reprs,
                "strides": strides,
                "shapes": shapes,
                "errors": errors,
                "meta_copy_warning": str(caught[0].message),
                "default_device": inside,
                "data_parallel": data_parallel,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
