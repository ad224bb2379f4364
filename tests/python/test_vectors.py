"""Check rustgrad against the PyTorch-generated vectors in tests/vectors/*.json.

Every case builds its inputs through the public, PyTorch-style API, applies the input
view, runs the op with the same method or operator a PyTorch user would write, then
compares the output and, after ``out.backward(grad_output)``, every leaf's ``.grad``.
The schema and the meaning of every op and kwarg are in tests/vectors/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad

VECTORS_DIR = Path(__file__).resolve().parents[1] / "vectors"

# A broken generator must not pass by writing empty or truncated files: each group has
# a floor on its case count (a little under what generate.py writes today).
MIN_CASES = {
    "unary": 40,
    "binary": 60,
    "compare": 30,
    "scalar": 30,
    "reduce": 30,
    "matmul": 15,
    "views": 40,
    "elementwise_ops": 200,
    "reduce_ops": 130,
    "shape_ops": 45,
    "linalg_ops": 25,
    "coverage_ops": 50,
    "extra_ops": 20,
    "forms_ops": 70,
    "scatter_reduce_ops": 30,
    "dtype_ops": 500,
}

TOLERANCES = {
    "float64": {"rtol": 1e-6, "atol": 1e-9},
    "float32": {"rtol": 1e-5, "atol": 1e-6},
    "int64": {"rtol": 0, "atol": 0},
    # A few units in the last place: half results are rounded from float32 compute, and
    # composite backward formulas round each step where PyTorch fuses some (tanh).
    # Cases marked "exact" are compared bit for bit instead.
    "float16": {"rtol": 5e-3, "atol": 1e-4},
    "bfloat16": {"rtol": 4e-2, "atol": 1e-3},
}

NUMPY_DTYPES = {
    "float64": np.float64,
    "float32": np.float32,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "float16": np.float16,
    "bool": np.bool_,
}


def _load_groups() -> dict[str, list[dict[str, Any]]]:
    return {
        path.stem: json.loads(path.read_text())["cases"]
        for path in sorted(VECTORS_DIR.glob("*.json"))
        # random streams and bit-exact factories: read by test_random.py and
        # test_factories.py
        # nn_*.json: each has its own reader (grad_fn names, errors, whole models):
        # test_nn_spatial.py, test_vectors_nn_loss.py, test_vectors_nn_conv.py,
        # test_nn_poolnorm_vectors.py, test_nn_models.py, test_nn_layers.py
        # data_samplers.json and lr_scheduler.json (Python-only features, not in the
        # generic format): read by test_data.py and test_lr_scheduler.py; likewise
        # data_workers.json (DataLoader worker processes), read by test_data_workers.py
        # optim*.json: optimizer trajectories and a PyTorch optimizer state_dict, read by
        # test_optim.py and crates/engine/tests/optim_vectors.rs
        # models_*.json (torchvision's ResNet names and outputs, its own schema): read by
        # test_models.py
        # random_masks.json (dropout / rrelu / bernoulli masks): test_random_masks.py
        # scalar_promotion.json (expressions with numbers): test_scalar_promotion.py
        # weighted_losses.json (losses with weight=, own schema): test_weighted_losses.py
        # index_scalars.json (index expressions, own schema): test_index_scalars.py
        # preserved_strides.json (strides of clone / *_like): test_preserved_strides.py
        # half_op_math.json (float16 / bfloat16 expressions): test_half_op_math.py
        # type_promotion.json (dtype tables, own schema): test_type_promotion.py
        # out_and_range_index.json (range indices, out=): test_out_and_range_index.py
        # losses_21.json, parametrize_21.json (own schema): test_nn_loss_21.py and
        # test_parametrize.py; device_meta.json (meta device): test_device_meta.py
        if path.stem not in ("random", "factory", "samplers_ops", "data_samplers", "lr_scheduler")
        and not path.stem.startswith(("nn_", "optim", "models_"))
        and path.stem not in ("data_workers", "random_masks", "scalar_promotion")
        and path.stem not in ("weighted_losses", "index_scalars", "preserved_strides")
        and path.stem not in ("half_op_math", "type_promotion")
        and path.stem != "out_and_range_index"
        and path.stem not in ("losses_21", "parametrize_21", "device_meta")
        # ddp_torchrun.json (losses of a DDP script): test_distributed*.py;
        # rust_nn_init.json (initial weights of the Rust layers): crates/engine/tests/nn_modules.rs;
        # distributed_sampler.json (index sequences): test_distributed_sampler.py
        and path.stem not in ("ddp_torchrun", "rust_nn_init", "distributed_sampler")
    }


GROUPS = _load_groups()
CASES = [case for cases in GROUPS.values() for case in cases]


# ---------------------------------------------------------------- ops, as a user writes them


def _slice_index(spec: dict[str, Any]) -> tuple[slice, ...]:
    return (slice(None),) * spec["dim"] + (slice(spec["start"], spec["end"], spec["step"]),)


def _reduce_dim(dims: list[int]) -> Any:
    # One dim goes in as an int, several as a tuple: both forms of PyTorch's `dim=`.
    return dims[0] if len(dims) == 1 else tuple(dims)


def _reduce(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    def run(xs: list[Any], kw: dict[str, Any]) -> Any:
        method = getattr(xs[0], op)
        if "dim" in kw:
            return method(dim=_reduce_dim(kw["dim"]), keepdim=kw["keepdim"])
        return method()

    return run


def _unary(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda xs, kw: getattr(xs[0], op)()


def _pow(xs: list[Any], kw: dict[str, Any]) -> Any:
    if "exponent" in kw:
        return xs[0] ** kw["exponent"]
    return xs[0] ** xs[1]


def _kt(spec: dict[str, Any]) -> Any:
    dtype = getattr(rustgrad, spec["dtype"])
    return rustgrad.tensor(spec["data"], dtype=dtype).reshape(tuple(spec["shape"]))


def _squeeze(xs: list[Any], kw: dict[str, Any]) -> Any:
    return xs[0].squeeze(kw["dim"]) if "dim" in kw else xs[0].squeeze()


def _dims_kw(kw: dict[str, Any]) -> dict[str, Any]:
    return {"dim": _reduce_dim(kw["dim"])} if "dim" in kw else {}


def _pair(r: Any) -> Any:
    # The (values, indices) named tuples as a plain pair; checks they are named tuples.
    if isinstance(r, tuple):
        assert type(r).__module__ == "rustgrad.return_types"
        assert r.values is r[0] and r.indices is r[1]
        return (r.values, r.indices)
    return r


def _dim_or_all(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    def run(xs: list[Any], kw: dict[str, Any]) -> Any:
        if "dim" in kw:
            return _pair(getattr(xs[0], op)(kw["dim"], kw["keepdim"]))
        return getattr(xs[0], op)()

    return run


def _dims_keepdim(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda xs, kw: getattr(xs[0], op)(**_dims_kw(kw), keepdim=kw["keepdim"])


REDUCE_OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    **{op: _dim_or_all(op) for op in ["max", "min", "median", "prod"]},
    **{
        op: _dims_keepdim(op)
        for op in ["amax", "amin", "logsumexp", "nansum", "nanmean", "all", "any"]
    },
    "argmax": lambda xs, kw: xs[0].argmax(dim=kw["dim"], keepdim=kw["keepdim"]),
    "argmin": lambda xs, kw: rustgrad.argmin(xs[0], dim=kw["dim"], keepdim=kw["keepdim"]),
    "count_nonzero": lambda xs, kw: xs[0].count_nonzero(**_dims_kw(kw)),
    "softmax": lambda xs, kw: xs[0].softmax(kw["dim"]),
    "log_softmax": lambda xs, kw: rustgrad.log_softmax(xs[0], kw["dim"]),
    "cumsum": lambda xs, kw: xs[0].cumsum(kw["dim"]),
    "cumprod": lambda xs, kw: rustgrad.cumprod(xs[0], kw["dim"]),
    "var": lambda xs, kw: xs[0].var(
        **_dims_kw(kw), correction=kw["correction"], keepdim=kw["keepdim"]
    ),
    "std": lambda xs, kw: rustgrad.std(
        xs[0], **_dims_kw(kw), correction=kw["correction"], keepdim=kw["keepdim"]
    ),
    "vector_norm": lambda xs, kw: rustgrad.linalg.vector_norm(
        xs[0], float(kw["ord"]), **_dims_kw(kw), keepdim=kw["keepdim"]
    ),
    "topk": lambda xs, kw: _pair(xs[0].topk(kw["k"], kw["dim"], kw["largest"])),
    "sort": lambda xs, kw: _pair(rustgrad.sort(xs[0], kw["dim"], kw["descending"])),
    "argsort": lambda xs, kw: xs[0].argsort(kw["dim"], kw["descending"]),
}


# elementwise_ops.json: Tensor methods where PyTorch has them, else the activations'
# function forms (PyTorch's torch.nn.functional).
EW_UNARY = [
    *("rsqrt exp2 expm1 log1p log2 log10 sin cos tan asin acos atan sinh cosh".split()),
    *("reciprocal square erf erfinv floor ceil round trunc frac".split()),
]
EW_ACTIVATIONS = [
    *("logsigmoid relu6 leaky_relu elu selu celu gelu silu mish softplus".split()),
    *("softsign hardtanh hardsigmoid hardswish".split()),
]
EW_PRED = ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num"]
EW_LOGICAL = [
    *("logical_and logical_or logical_xor logical_not".split()),
    *("bitwise_and bitwise_or bitwise_xor bitwise_not".split()),
]


def _specials(x: Any) -> Any:
    """generate.py's `specials`: +inf above 1.2, -inf below -1.2, NaN where |x| < 0.2."""
    if not x.is_floating_point():
        return x
    x2 = rustgrad.where(x.abs() < 0.2, float("nan"), x)
    return rustgrad.where(x > 1.2, float("inf"), rustgrad.where(x < -1.2, float("-inf"), x2))


def _on_specials(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda xs, kw: getattr(_specials(xs[0]), op)(**kw)


def _function(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda xs, kw: getattr(rustgrad, op)(*xs)


EW_BINARY = [
    "hypot",
    "logaddexp",
    "logaddexp2",
    "atan2",
    "maximum",
    "minimum",
    "fmax",
    "fmin",
    "fmod",
    "remainder",
    "copysign",
]


def _method(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    return lambda xs, kw: getattr(xs[0], op)(*xs[1:], **kw)


def _activation(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    from rustgrad import _elementwise

    return lambda xs, kw: getattr(_elementwise, op)(xs[0], **kw)


LINALG_OPS = [
    "mm",
    "bmm",
    "mv",
    "dot",
    "outer",
    "addmm",
    "addmv",
    "baddbmm",
    "addbmm",
    "tensordot",
    "einsum",
]


def _linalg(op: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    if op == "einsum":
        return lambda xs, kw: rustgrad.einsum(kw["equation"], *xs)
    return lambda xs, kw: getattr(rustgrad, op)(*xs, **kw)


def _ords(kw: dict[str, Any]) -> dict[str, Any]:
    return {k: float(v) if v in ("inf", "-inf") else v for k, v in kw.items()}


# coverage_ops.json: aliases, composites and multi-output reductions ("part").
COVERAGE_OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "sign": lambda xs, kw: xs[0].sign(),
    "clamp": lambda xs, kw: rustgrad.clamp(xs[0], **kw),
    "clip": lambda xs, kw: xs[0].clip(**kw),
    "norm": lambda xs, kw: rustgrad.norm(xs[0], **_ords(kw)),
    "matrix_norm": lambda xs, kw: rustgrad.linalg.matrix_norm(xs[0], **_ords(kw)),
    "linalg_norm": lambda xs, kw: rustgrad.linalg.norm(xs[0], **_ords(kw)),
    "var_mean": lambda xs, kw: rustgrad.var_mean(xs[0], kw["dim"], correction=kw["correction"])[
        kw["part"]
    ],
    "std_mean": lambda xs, kw: rustgrad.std_mean(xs[0], kw["dim"], correction=kw["correction"])[
        kw["part"]
    ],
    "unique": lambda xs, kw: xs[0].unique(sorted=True, return_inverse=True, return_counts=True)[
        kw["part"]
    ],
    "nonzero": lambda xs, kw: xs[0].nonzero(),
    "where_cond": lambda xs, kw: rustgrad.where(xs[0])[kw["part"]],
    "flatten": lambda xs, kw: rustgrad.flatten(xs[0], kw["start_dim"], kw["end_dim"]),
    "unflatten": lambda xs, kw: xs[0].unflatten(kw["dim"], kw["sizes"]),
    "hstack": lambda xs, kw: rustgrad.hstack(xs),
    "vstack": lambda xs, kw: rustgrad.vstack(xs),
    "concat": lambda xs, kw: rustgrad.concat(xs, dim=kw["dim"]),
    "broadcast_to": lambda xs, kw: rustgrad.broadcast_to(xs[0], kw["shape"]),
    "expand_as": lambda xs, kw: xs[0].expand_as(xs[1]),
    "view_as": lambda xs, kw: xs[0].view_as(xs[1]),
    "reshape_as": lambda xs, kw: xs[0].reshape_as(xs[1]),
    "swapaxes": lambda xs, kw: rustgrad.swapaxes(xs[0], kw["dim0"], kw["dim1"]),
    "mT": lambda xs, kw: xs[0].mT,
    "contiguous": lambda xs, kw: xs[0].contiguous(),
    "take_along_dim": lambda xs, kw: xs[0].take_along_dim(_kt(kw["indices"]), kw["dim"]),
    "meshgrid": lambda xs, kw: rustgrad.meshgrid(*xs, indexing=kw["indexing"])[kw["part"]],
}


EXTRA_OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "xlogy": lambda xs, kw: rustgrad.xlogy(xs[0], xs[1]),
    "xlogy_scalar_other": lambda xs, kw: xs[0].xlogy(kw["other"]),
    "xlogy_scalar_self": lambda xs, kw: rustgrad.special.xlogy(kw["self"], xs[0]),
    "xlog1py": lambda xs, kw: rustgrad.special.xlog1py(xs[0], xs[1]),
    "xlog1py_scalar_other": lambda xs, kw: rustgrad.special.xlog1py(xs[0], kw["other"]),
    "xlog1py_scalar_self": lambda xs, kw: rustgrad.special.xlog1py(kw["self"], xs[0]),
    "float_power": lambda xs, kw: xs[0].float_power(xs[1]),
    "float_power_scalar": lambda xs, kw: rustgrad.float_power(xs[0], kw["exponent"]),
    "float_power_scalar_base": lambda xs, kw: rustgrad.float_power(kw["base"], xs[0]),
    "einsum_sublist": lambda xs, kw: rustgrad.einsum(
        *[a for x, sub in zip(xs, kw["sublists"]) for a in (x, sub)],
        *([kw["output"]] if kw["output"] is not None else []),
    ),
}


def _in_place(method: str) -> Callable[[list[Any], dict[str, Any]], Any]:
    """forms_ops.json: ``y = x.clone()``, the method on ``y`` or ``y[region]``; ``y``."""

    def run(xs: list[Any], kw: dict[str, Any]) -> Any:
        y = xs[0].clone()
        target = y[_slice_index(kw["region"])] if "region" in kw else y
        assert getattr(target, method)(*xs[1:], *kw.get("args", [])) is target
        return y

    return run


FORMS_IN_PLACE = [
    *("abs_ absolute_ neg_ negative_ exp_ log_ sqrt_ sigmoid_ tanh_ sign_ pow_".split()),
    *("eq_ ne_ lt_ le_ gt_ ge_ greater_ greater_equal_ less_ less_equal_ not_equal_".split()),
    *("cumsum_ cumprod_ clamp_min_ clamp_max_ multiply_ subtract_".split()),
]
FORMS_OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    **{op: _in_place(op) for op in FORMS_IN_PLACE},
    "clamp_min": lambda xs, kw: rustgrad.clamp_min(xs[0], *kw["args"]),
    "clamp_max": lambda xs, kw: xs[0].clamp_max(*kw["args"]),
    "index_copy": lambda xs, kw: rustgrad.index_copy(xs[0], kw["dim"], _kt(kw["index"]), xs[1]),
    "index_copy_": lambda xs, kw: _cloned(xs, "index_copy_", kw["dim"], _kt(kw["index"]), xs[1]),
    "masked_scatter": lambda xs, kw: xs[0].masked_scatter(_kt(kw["mask"]), xs[1]),
    "masked_scatter_": lambda xs, kw: _cloned(xs, "masked_scatter_", _kt(kw["mask"]), xs[1]),
    "put": lambda xs, kw: rustgrad.put(xs[0], _kt(kw["index"]), xs[1], kw["accumulate"]),
    "put_": lambda xs, kw: _cloned(xs, "put_", _kt(kw["index"]), xs[1], kw["accumulate"]),
    "fill_diagonal_": lambda xs, kw: _cloned(xs, "fill_diagonal_", kw["value"], wrap=kw["wrap"]),
}


# In-place view ops and squeeze's tuple form.
VIEW_FORMS = "squeeze_ unsqueeze_ transpose_ swapaxes_ swapdims_ t_ as_strided_".split()
FORMS_OPS.update({op: _in_place(op) for op in VIEW_FORMS})
FORMS_OPS["squeeze_dims"] = lambda xs, kw: xs[0].squeeze(tuple(kw["dims"]))


def _cloned(xs: list[Any], method: str, *args: Any, **kwargs: Any) -> Any:
    """``y = x.clone()``; ``y.<method>(...)`` returns ``y``; the result is ``y``."""
    y = xs[0].clone()
    assert getattr(y, method)(*args, **kwargs) is y
    return y


SCATTER_REDUCE_OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    "scatter_reduce": lambda xs, kw: rustgrad.scatter_reduce(
        xs[0], kw["dim"], _kt(kw["index"]), xs[1], kw["reduce"], include_self=kw["include_self"]
    ),
    "scatter_reduce_": lambda xs, kw: _cloned(
        xs,
        "scatter_reduce_",
        kw["dim"],
        _kt(kw["index"]),
        xs[1],
        kw["reduce"],
        include_self=kw["include_self"],
    ),
}


OPS: dict[str, Callable[[list[Any], dict[str, Any]], Any]] = {
    **FORMS_OPS,
    **SCATTER_REDUCE_OPS,
    **{op: _method(op) for op in EW_UNARY + EW_BINARY},
    **{op: _activation(op) for op in EW_ACTIVATIONS},
    "fmod_scalar": lambda xs, kw: xs[0].fmod(kw["other"]),
    "remainder_scalar": lambda xs, kw: xs[0] % kw["other"],
    "copysign_scalar": lambda xs, kw: xs[0].copysign(kw["other"]),
    "lerp_scalar": lambda xs, kw: xs[0].lerp(xs[1], kw["weight"]),
    "lerp": lambda xs, kw: rustgrad.lerp(xs[0], xs[1], xs[2]),
    "addcmul": lambda xs, kw: rustgrad.addcmul(*xs, **kw),
    "addcdiv": lambda xs, kw: xs[0].addcdiv(xs[1], xs[2], **kw),
    "clamp_tensor": lambda xs, kw: rustgrad.clip(xs[0], xs[1], xs[2]),
    "clamp_min_tensor": lambda xs, kw: xs[0].clamp(min=xs[1]),
    "clamp_max_tensor": lambda xs, kw: xs[0].clip(max=xs[1]),
    "where": lambda xs, kw: rustgrad.where(xs[0] > 0, xs[1], xs[2]),
    **{op: _on_specials(op) for op in EW_PRED},
    **{op: _function(op) for op in EW_LOGICAL},
    "sgn": _function("sgn"),
    "div_trunc": lambda xs, kw: rustgrad.div(xs[0], xs[1], rounding_mode="trunc"),
    "div_floor": lambda xs, kw: xs[0].divide(xs[1], rounding_mode="floor"),
    "floor_divide": lambda xs, kw: xs[0] // xs[1],
    "signbit": _function("signbit"),
    "bitwise_and_bool": lambda xs, kw: (xs[0] > 0) & (xs[1] > 0),
    "bitwise_xor_bool": lambda xs, kw: rustgrad.bitwise_xor(xs[0] > 0, xs[1] > 0),
    "bitwise_not_bool": lambda xs, kw: ~(xs[0] > 0),
    **REDUCE_OPS,
    **{op: _unary(op) for op in ["neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs"]},
    "pow": _pow,
    "add": lambda xs, kw: xs[0] + xs[1],
    "sub": lambda xs, kw: xs[0] - xs[1],
    "mul": lambda xs, kw: xs[0] * xs[1],
    "div": lambda xs, kw: xs[0] / xs[1],
    "eq": lambda xs, kw: xs[0] == xs[1],
    "ne": lambda xs, kw: xs[0] != xs[1],
    "lt": lambda xs, kw: xs[0] < xs[1],
    "le": lambda xs, kw: xs[0] <= xs[1],
    "gt": lambda xs, kw: xs[0] > xs[1],
    "ge": lambda xs, kw: xs[0] >= xs[1],
    "add_scalar": lambda xs, kw: xs[0] + kw["other"],
    "radd_scalar": lambda xs, kw: kw["other"] + xs[0],
    "sub_scalar": lambda xs, kw: xs[0] - kw["other"],
    "rsub_scalar": lambda xs, kw: kw["other"] - xs[0],
    "mul_scalar": lambda xs, kw: xs[0] * kw["other"],
    "rmul_scalar": lambda xs, kw: kw["other"] * xs[0],
    "div_scalar": lambda xs, kw: xs[0] / kw["other"],
    "rdiv_scalar": lambda xs, kw: kw["other"] / xs[0],
    "pow_scalar_base": lambda xs, kw: kw["other"] ** xs[0],
    "sum": _reduce("sum"),
    "mean": _reduce("mean"),
    "matmul": lambda xs, kw: xs[0] @ xs[1],
    "view": lambda xs, kw: xs[0].view(tuple(kw["shape"])),
    "reshape": lambda xs, kw: xs[0].reshape(tuple(kw["shape"])),
    "transpose": lambda xs, kw: xs[0].transpose(kw["dim0"], kw["dim1"]),
    "t": lambda xs, kw: xs[0].t(),
    "permute": lambda xs, kw: xs[0].permute(*kw["dims"]),
    "expand": lambda xs, kw: xs[0].expand(*kw["shape"]),
    "unsqueeze": lambda xs, kw: xs[0].unsqueeze(kw["dim"]),
    "squeeze": _squeeze,
    "slice": lambda xs, kw: xs[0][_slice_index(kw)],
    **{
        # shape_ops.json: integer / bool tensors in kwargs are {"data", "shape", "dtype"}.
        "cat": lambda xs, kw: rustgrad.cat(xs, kw["dim"]),
        "stack": lambda xs, kw: rustgrad.stack(xs, kw["dim"]),
        "split": lambda xs, kw: rustgrad.split(xs[0], kw["split"], kw["dim"])[kw["part"]],
        "chunk": lambda xs, kw: xs[0].chunk(kw["chunks"], kw["dim"])[kw["part"]],
        "unbind": lambda xs, kw: xs[0].unbind(kw["dim"])[kw["part"]],
        "narrow": lambda xs, kw: xs[0].narrow(kw["dim"], kw["start"], kw["length"]),
        "select": lambda xs, kw: xs[0].select(kw["dim"], kw["index"]),
        "flip": lambda xs, kw: xs[0].flip(kw["dims"]),
        "roll": lambda xs, kw: xs[0].roll(kw["shifts"], kw["dims"]),
        "repeat": lambda xs, kw: xs[0].repeat(*kw["sizes"]),
        "tile": lambda xs, kw: xs[0].tile(kw["dims"]),
        "tril": lambda xs, kw: xs[0].tril(kw["diagonal"]),
        "triu": lambda xs, kw: xs[0].triu(kw["diagonal"]),
        "diagonal": lambda xs, kw: xs[0].diagonal(kw["offset"], kw["dim1"], kw["dim2"]),
        "diag": lambda xs, kw: xs[0].diag(kw["diagonal"]),
        "diag_embed": lambda xs, kw: xs[0].diag_embed(kw["offset"], kw["dim1"], kw["dim2"]),
        "movedim": lambda xs, kw: xs[0].movedim(kw["source"], kw["destination"]),
        "unfold": lambda xs, kw: xs[0].unfold(kw["dim"], kw["size"], kw["step"]),
        "repeat_interleave": lambda xs, kw: xs[0].repeat_interleave(kw["repeats"], kw["dim"]),
        "index_select": lambda xs, kw: xs[0].index_select(kw["dim"], _kt(kw["index"])),
        "gather": lambda xs, kw: xs[0].gather(kw["dim"], _kt(kw["index"])),
        "take": lambda xs, kw: xs[0].take(_kt(kw["index"])),
        "masked_select": lambda xs, kw: xs[0].masked_select(_kt(kw["mask"])),
        "masked_fill": lambda xs, kw: xs[0].masked_fill(_kt(kw["mask"]), kw["value"]),
        "index_fill": lambda xs, kw: xs[0].index_fill(kw["dim"], _kt(kw["index"]), kw["value"]),
        "scatter": lambda xs, kw: xs[0].scatter(kw["dim"], _kt(kw["index"]), xs[1]),
        "scatter_value": lambda xs, kw: xs[0].scatter(kw["dim"], _kt(kw["index"]), kw["value"]),
        "scatter_add": lambda xs, kw: xs[0].scatter_add(kw["dim"], _kt(kw["index"]), xs[1]),
        "index_add": lambda xs, kw: xs[0].index_add(kw["dim"], _kt(kw["index"]), xs[1]),
        "as_strided": lambda xs, kw: xs[0].as_strided(
            kw["size"], kw["stride"], kw["storage_offset"]
        ),
        "scatter_multiply": lambda xs, kw: xs[0].scatter(
            kw["dim"], _kt(kw["index"]), xs[1], reduce="multiply"
        ),
        "index": lambda xs, kw: xs[0][
            tuple(slice(None) if i is None else _kt(i) for i in kw["indices"])
        ],
    },
    # linalg_ops.json: function forms, beta/alpha as keyword arguments.
    **{op: _linalg(op) for op in LINALG_OPS},
    **COVERAGE_OPS,
    # extra_ops.json: xlogy, special.xlog1py, float_power (function, method and
    # number-operand forms), einsum's sublist format.
    **EXTRA_OPS,
    # dtype_ops.json: conversions.
    "to": lambda xs, kw: xs[0].to(getattr(rustgrad, kw["dtype"])),
}


def _apply_view(x: Any, view: dict[str, Any] | None) -> Any:
    if view is None:
        return x
    kind = view["kind"]
    if kind == "transpose":
        return x.transpose(view["dim0"], view["dim1"])
    if kind == "slice":
        return x[_slice_index(view)]
    if kind == "expand":
        return x.expand(*view["shape"])
    if kind == "permute":
        return x.permute(*view["dims"])
    raise AssertionError(f"unknown view kind {kind!r}")


# ------------------------------------------------------------------------ comparing


def _leaf(spec: dict[str, Any]) -> Any:
    dtype = getattr(rustgrad, spec["dtype"])
    t = rustgrad.tensor(spec["data"], dtype=dtype).reshape(tuple(spec["shape"]))
    return t.requires_grad_(spec["requires_grad"])


def _assert_matches(actual: Any, expected: dict[str, Any], what: str, exact: bool = False) -> None:
    assert tuple(actual.shape) == tuple(expected["shape"]), f"{what}: shape"
    assert actual.dtype == getattr(rustgrad, expected["dtype"]), f"{what}: dtype"
    if expected["dtype"] == "bfloat16":  # numpy has no bfloat16: compare as float64
        values = actual.detach().double().numpy()
    else:
        values = actual.detach().numpy()
        assert values.dtype == NUMPY_DTYPES[expected["dtype"]], f"{what}: numpy dtype"
    want = np.array(expected["data"], dtype=values.dtype).reshape(tuple(expected["shape"]))
    if expected["dtype"] not in TOLERANCES or exact:
        np.testing.assert_array_equal(values, want, err_msg=what)
    else:
        np.testing.assert_allclose(values, want, err_msg=what, **TOLERANCES[expected["dtype"]])


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_vector(case: dict[str, Any]) -> None:
    leaves = [_leaf(spec) for spec in case["inputs"]]
    viewed = [_apply_view(x, spec["view"]) for x, spec in zip(leaves, case["inputs"])]
    out = OPS[case["op"]](viewed, case["kwargs"])
    if "indices" in case:
        out, indices = out
        _assert_matches(indices, case["indices"], "indices")
        assert not indices.requires_grad

    _assert_matches(out, case["output"], "output", case.get("exact", False))

    grad_output = case["grad_output"]
    assert out.requires_grad == (grad_output is not None), "output requires_grad"
    if grad_output is None:
        return
    out.backward(_leaf({**grad_output, "requires_grad": False}))
    for input_nr, (leaf, expected) in enumerate(zip(leaves, case["grads"])):
        if expected is None:
            assert leaf.grad is None, f"grad of input {input_nr} should be None"
        else:
            assert leaf.grad is not None, f"grad of input {input_nr} is None"
            _assert_matches(leaf.grad, expected, f"grad of input {input_nr}")


# ------------------------------------------------------------- the vectors themselves

REQUIRED_OPS = {
    "unary": {"neg", "exp", "log", "sqrt", "tanh", "sigmoid", "relu", "abs", "pow"},
    "binary": {"add", "sub", "mul", "div", "pow"},
    "compare": {"eq", "ne", "lt", "le", "gt", "ge"},
    "scalar": {
        "add_scalar",
        "radd_scalar",
        "sub_scalar",
        "rsub_scalar",
        "mul_scalar",
        "rmul_scalar",
        "div_scalar",
        "rdiv_scalar",
        "pow_scalar_base",
    },
    "reduce": {"sum", "mean"},
    "matmul": {"matmul"},
    "views": {
        "view",
        "reshape",
        "transpose",
        "t",
        "permute",
        "expand",
        "unsqueeze",
        "squeeze",
        "slice",
    },
    "elementwise_ops": {
        *EW_UNARY,
        *EW_ACTIVATIONS,
        *EW_BINARY,
        "fmod_scalar",
        "remainder_scalar",
        "copysign_scalar",
        *("lerp_scalar lerp addcmul addcdiv where".split()),
        *("clamp_tensor clamp_min_tensor clamp_max_tensor".split()),
        *EW_PRED,
        *EW_LOGICAL,
        *("bitwise_and_bool bitwise_xor_bool bitwise_not_bool sgn signbit".split()),
        *("div_trunc div_floor floor_divide".split()),
    },
    "reduce_ops": set(REDUCE_OPS),
    "shape_ops": {
        "cat",
        "stack",
        "split",
        "chunk",
        "unbind",
        "narrow",
        "select",
        "flip",
        "roll",
        "repeat",
        "tile",
        "tril",
        "triu",
        "diagonal",
        "diag",
        "diag_embed",
        "movedim",
        "unfold",
        "repeat_interleave",
        "index_select",
        "gather",
        "take",
        "masked_select",
        "masked_fill",
        "index_fill",
        "scatter",
        "scatter_value",
        "scatter_add",
        "index_add",
        "index",
        "as_strided",
        "scatter_multiply",
    },
    "linalg_ops": set(LINALG_OPS),
    "coverage_ops": set(COVERAGE_OPS),
    "extra_ops": set(EXTRA_OPS),
    "forms_ops": set(FORMS_OPS),
    "scatter_reduce_ops": set(SCATTER_REDUCE_OPS),
    "dtype_ops": {
        *("add sub mul div floor_divide remainder eq lt add_scalar mul_scalar to".split()),
        *("bitwise_and bitwise_or bitwise_xor neg abs exp log sqrt tanh sigmoid".split()),
        *("relu pow sum mean prod cumsum amax argmax max sort mm bmm mv dot matmul".split()),
    },
}


@pytest.mark.parametrize("group", sorted(MIN_CASES))
def test_group_is_complete(group: str) -> None:
    assert group in GROUPS, f"tests/vectors/{group}.json is missing"
    cases = GROUPS[group]
    assert len(cases) >= MIN_CASES[group], f"{group}.json has only {len(cases)} cases"
    missing = REQUIRED_OPS[group] - {case["op"] for case in cases}
    assert not missing, f"{group}.json covers no case of {sorted(missing)}"


def test_vectors_are_well_formed() -> None:
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)), "case names must be unique across files"
    assert set(GROUPS) == set(MIN_CASES), "a vector file is not listed in MIN_CASES"
    dtypes = set()
    for case in CASES:
        assert case["op"] in OPS, f"{case['name']}: unknown op {case['op']!r}"
        assert len(case["grads"]) == len(case["inputs"]), case["name"]
        for spec in case["inputs"]:
            assert len(spec["data"]) == int(np.prod(spec["shape"])), case["name"]
            dtypes.add(spec["dtype"])
    # Both float dtypes appear, and the views of inputs reach non-contiguous layouts.
    assert dtypes == {
        *("float64 float32 float16 bfloat16".split()),
        *("int64 int32 int16 int8 uint8 bool".split()),
    }
    view_kinds = {spec["view"]["kind"] for case in CASES for spec in case["inputs"] if spec["view"]}
    assert view_kinds == {"transpose", "slice", "expand", "permute"}
