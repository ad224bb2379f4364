"""Write tests/vectors/nn_layers.json: every nn layer module, built and run by PyTorch.

Run from the repository root with PyTorch installed (never a test dependency):

    .torch-venv/bin/python tests/vectors/generate_nn_layers.py

For each case (a layer class with constructor arguments), after
``torch.manual_seed(0)`` the layer is constructed (so its parameters are PyTorch's
default initialisation for seed 0), then inputs are drawn, the layer runs in training
mode (or eval mode when ``eval``), and the first output is backpropagated with a fixed
upstream gradient. Recorded: the constructor arguments, ``repr``, the parameters and
buffers right after construction (``init``: names, shapes, values, so that rustgrad
can check its own initialisation and load the same weights), the inputs, the
outputs, the gradient of each input and parameter, the buffers after the forward and
the ``state_dict`` keys. float32 throughout, one thread.

Besides ``cases``: ``models`` (the repr, parameter, buffer, module and state_dict names
of the seed notes' ``TheModelClass`` and of a model nesting every container),
``inits`` (each ``nn.init`` function's result on ``torch.empty(shape)`` after
``torch.manual_seed(0)``) and ``gains`` (``calculate_gain`` values).

Argument encoding: a JSON list is a list, ``{"tuple": [...]}`` a tuple and
``{"tensor": t}`` a tensor (the same schema as the other tensors:
``{"data", "shape", "dtype"}``). Read by ``tests/python/test_nn_layers.py``,
``test_nn_module.py`` and ``test_nn_init.py``; the generic vector readers skip
``nn_*.json``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

OUT = Path(__file__).resolve().parent / "nn_layers.json"
torch.set_num_threads(1)


def tensor_json(t: torch.Tensor) -> dict[str, Any]:
    t = t.detach()
    data = t.reshape(-1).numpy()
    if t.dtype == torch.float32:
        values: list[Any] = [float(str(v)) for v in data]
    else:
        values = data.tolist()
    return {"data": values, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}


def T(*values: Any) -> dict[str, Any]:  # noqa: N802 - a tuple argument
    return {"tuple": list(values)}


def W(data: list[float]) -> dict[str, Any]:  # noqa: N802 - a tensor argument
    return {"tensor": tensor_json(torch.tensor(data))}


def decode(value: Any) -> Any:
    if isinstance(value, dict) and "tuple" in value:
        return tuple(decode(v) for v in value["tuple"])
    if isinstance(value, dict) and "tensor" in value:
        spec = value["tensor"]
        return torch.tensor(spec["data"], dtype=getattr(torch, spec["dtype"])).reshape(
            spec["shape"]
        )
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def make_input(spec: dict[str, Any]) -> torch.Tensor:
    kind, shape = spec["kind"], spec["shape"]
    if kind == "randn":
        return torch.randn(shape)
    if kind == "prob":
        return torch.rand(shape) * 0.9 + 0.05
    if kind == "logprob":
        return torch.randn(shape).log_softmax(-1)
    if kind == "sign":
        return torch.randint(0, 2, shape).float() * 2 - 1
    if kind == "index":
        return torch.randint(0, spec["high"], shape)
    if kind == "const":
        return torch.tensor(spec["data"])
    raise ValueError(kind)


def X(*shape: int, grad: bool = True) -> dict[str, Any]:  # noqa: N802
    return {"kind": "randn", "shape": list(shape), "grad": grad}


def P(*shape: int, grad: bool = True) -> dict[str, Any]:  # noqa: N802
    return {"kind": "prob", "shape": list(shape), "grad": grad}


def IDX(high: int, *shape: int) -> dict[str, Any]:
    return {"kind": "index", "shape": list(shape), "high": high, "grad": False}


def LOGP(*shape: int) -> dict[str, Any]:
    return {"kind": "logprob", "shape": list(shape), "grad": True}


def CONST(data: list[int]) -> dict[str, Any]:
    return {"kind": "const", "shape": [len(data)], "data": data, "grad": False}


def case(
    name: str, cls: str, *args: Any, inputs: list[dict[str, Any]], eval: bool = False, **kwargs: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "cls": cls,
        "args": list(args),
        "kwargs": kwargs,
        "inputs": inputs,
        "eval": eval,
    }


X24 = [X(2, 4)]
X234 = [X(2, 3, 4)]
ACTIVATIONS = [
    ("relu", "ReLU", [], {}),
    ("relu6", "ReLU6", [], {}),
    ("leaky_relu", "LeakyReLU", [], {}),
    ("leaky_relu_0.2", "LeakyReLU", [0.2], {}),
    ("elu", "ELU", [], {}),
    ("elu_alpha", "ELU", [], {"alpha": 0.5}),
    ("celu", "CELU", [], {"alpha": 1.5}),
    ("selu", "SELU", [], {}),
    ("gelu", "GELU", [], {}),
    ("gelu_tanh", "GELU", [], {"approximate": "tanh"}),
    ("silu", "SiLU", [], {}),
    ("mish", "Mish", [], {}),
    ("sigmoid", "Sigmoid", [], {}),
    ("tanh", "Tanh", [], {}),
    ("softplus", "Softplus", [], {}),
    ("softplus_beta", "Softplus", [], {"beta": 2.0, "threshold": 1.0}),
    ("hardtanh", "Hardtanh", [], {}),
    ("hardtanh_range", "Hardtanh", [-2.0, 0.5], {}),
    ("hardswish", "Hardswish", [], {}),
    ("hardsigmoid", "Hardsigmoid", [], {}),
    ("softmax", "Softmax", [], {"dim": 1}),
    ("log_softmax", "LogSoftmax", [], {"dim": -1}),
    ("softmin", "Softmin", [], {"dim": 1}),
    ("softsign", "Softsign", [], {}),
    ("tanhshrink", "Tanhshrink", [], {}),
    ("logsigmoid", "LogSigmoid", [], {}),
    ("threshold", "Threshold", [0.1, 20.0], {}),
    ("hardshrink", "Hardshrink", [], {}),
    ("softshrink", "Softshrink", [0.3], {}),
    ("glu", "GLU", [], {}),
    ("relu_inplace", "ReLU", [], {"inplace": True}),
]

CASES = [
    case("linear", "Linear", 3, 4, inputs=[X(2, 3)]),
    case("linear_no_bias", "Linear", 3, 4, bias=False, inputs=[X(2, 3)]),
    case("linear_3d_input", "Linear", 3, 2, inputs=[X(2, 5, 3)]),
    case("bilinear", "Bilinear", 3, 4, 5, inputs=[X(2, 3), X(2, 4)]),
    case("identity", "Identity", 7, inputs=X24),
    case("flatten", "Flatten", inputs=[X(2, 3, 2, 2)]),
    case("flatten_0_1", "Flatten", 0, 1, inputs=X234),
    case("unflatten", "Unflatten", 1, T(2, 2), inputs=[X(3, 4)]),
    case("conv1d", "Conv1d", 2, 3, 3, inputs=[X(2, 2, 7)]),
    case(
        "conv1d_opts",
        "Conv1d",
        2,
        4,
        3,
        stride=2,
        padding=1,
        groups=2,
        bias=False,
        inputs=[X(2, 2, 7)],
    ),
    case("conv2d_lenet", "Conv2d", 3, 6, 5, inputs=[X(1, 3, 8, 8)]),
    case(
        "conv2d_opts",
        "Conv2d",
        2,
        4,
        T(3, 2),
        stride=T(2, 1),
        padding=1,
        dilation=T(1, 2),
        inputs=[X(2, 2, 6, 7)],
    ),
    case(
        "conv2d_same_reflect",
        "Conv2d",
        2,
        2,
        3,
        padding="same",
        padding_mode="reflect",
        inputs=[X(1, 2, 5, 5)],
    ),
    case(
        "conv2d_circular_groups",
        "Conv2d",
        4,
        4,
        3,
        padding=1,
        groups=2,
        padding_mode="circular",
        inputs=[X(1, 4, 4, 5)],
    ),
    case("conv2d_valid", "Conv2d", 2, 3, 2, padding="valid", inputs=[X(1, 2, 4, 4)]),
    case("conv3d", "Conv3d", 2, 3, 2, inputs=[X(1, 2, 3, 4, 4)]),
    case("conv_transpose1d", "ConvTranspose1d", 2, 3, 3, stride=2, inputs=[X(2, 2, 5)]),
    case(
        "conv_transpose2d",
        "ConvTranspose2d",
        2,
        3,
        3,
        stride=2,
        padding=1,
        output_padding=1,
        inputs=[X(1, 2, 4, 4)],
    ),
    case(
        "conv_transpose2d_groups",
        "ConvTranspose2d",
        4,
        2,
        2,
        groups=2,
        bias=False,
        inputs=[X(1, 4, 3, 3)],
    ),
    case("max_pool1d", "MaxPool1d", 2, inputs=[X(2, 3, 8)]),
    case("max_pool2d", "MaxPool2d", 2, 2, inputs=[X(2, 3, 6, 6)]),
    case(
        "max_pool2d_opts",
        "MaxPool2d",
        3,
        stride=2,
        padding=1,
        ceil_mode=True,
        inputs=[X(1, 2, 7, 6)],
    ),
    case("max_pool2d_tuple", "MaxPool2d", T(2, 3), dilation=T(2, 1), inputs=[X(1, 2, 7, 7)]),
    case("avg_pool1d", "AvgPool1d", 3, stride=2, inputs=[X(2, 3, 9)]),
    case("avg_pool2d", "AvgPool2d", 2, inputs=[X(2, 3, 6, 6)]),
    case(
        "avg_pool2d_opts",
        "AvgPool2d",
        3,
        stride=2,
        padding=1,
        count_include_pad=False,
        inputs=[X(1, 2, 7, 6)],
    ),
    case("adaptive_avg_pool1d", "AdaptiveAvgPool1d", 3, inputs=[X(2, 3, 8)]),
    case("adaptive_avg_pool2d", "AdaptiveAvgPool2d", T(2, 3), inputs=[X(2, 3, 7, 8)]),
    case("adaptive_avg_pool2d_1", "AdaptiveAvgPool2d", 1, inputs=[X(2, 3, 5, 5)]),
    case("adaptive_max_pool2d", "AdaptiveMaxPool2d", 2, inputs=[X(2, 3, 5, 6)]),
    case("batch_norm1d", "BatchNorm1d", 3, inputs=[X(4, 3)]),
    case("batch_norm1d_3d_no_affine", "BatchNorm1d", 3, affine=False, inputs=[X(4, 3, 5)]),
    case("batch_norm2d", "BatchNorm2d", 3, inputs=[X(2, 3, 4, 4)]),
    case("batch_norm2d_momentum_none", "BatchNorm2d", 3, momentum=None, inputs=[X(2, 3, 4, 4)]),
    case(
        "batch_norm2d_no_stats", "BatchNorm2d", 3, track_running_stats=False, inputs=[X(2, 3, 4, 4)]
    ),
    case("batch_norm2d_eval", "BatchNorm2d", 3, eval=True, inputs=[X(2, 3, 4, 4)]),
    case("layer_norm", "LayerNorm", 4, inputs=X234),
    case("layer_norm_2d_no_affine", "LayerNorm", T(3, 4), elementwise_affine=False, inputs=X234),
    case("layer_norm_no_bias", "LayerNorm", 4, bias=False, eps=1e-3, inputs=X234),
    case("group_norm", "GroupNorm", 2, 4, inputs=[X(2, 4, 3, 3)]),
    case("group_norm_no_affine", "GroupNorm", 1, 4, affine=False, inputs=[X(2, 4, 5)]),
    case("rms_norm", "RMSNorm", 4, inputs=X234),
    case("rms_norm_eps", "RMSNorm", T(3, 4), eps=1e-3, inputs=X234),
    case("instance_norm2d", "InstanceNorm2d", 3, inputs=[X(2, 3, 4, 4)]),
    case(
        "instance_norm2d_affine_stats",
        "InstanceNorm2d",
        3,
        affine=True,
        track_running_stats=True,
        inputs=[X(2, 3, 4, 4)],
    ),
    case("local_response_norm", "LocalResponseNorm", 2, inputs=[X(2, 4, 3, 3)]),
    case("dropout_eval", "Dropout", 0.3, eval=True, inputs=X24),
    case("max_pool2d_indices", "MaxPool2d", 2, return_indices=True, inputs=[X(1, 2, 4, 4)]),
    case(
        "adaptive_max_pool2d_indices",
        "AdaptiveMaxPool2d",
        T(2, 1),
        return_indices=True,
        inputs=[X(1, 2, 5, 4)],
    ),
    case("dropout2d_eval", "Dropout2d", eval=True, inputs=[X(2, 3, 2, 2)]),
    case("embedding", "Embedding", 10, 3, inputs=[IDX(10, 2, 4)]),
    case("embedding_padding", "Embedding", 10, 3, padding_idx=0, inputs=[CONST([0, 3, 0, 9, 3])]),
    case("embedding_bag_mean", "EmbeddingBag", 10, 3, inputs=[IDX(10, 2, 4)]),
    case("embedding_bag_sum", "EmbeddingBag", 10, 3, mode="sum", inputs=[IDX(10, 3, 2)]),
    case("embedding_bag_max", "EmbeddingBag", 10, 3, mode="max", inputs=[IDX(10, 2, 3)]),
    case(
        "embedding_bag_offsets",
        "EmbeddingBag",
        10,
        3,
        mode="sum",
        inputs=[IDX(10, 7), CONST([0, 2, 5])],
    ),
    case("upsample_nearest", "Upsample", scale_factor=2, inputs=[X(1, 2, 3, 3)]),
    case(
        "upsample_bilinear_size",
        "Upsample",
        size=T(5, 6),
        mode="bilinear",
        align_corners=False,
        inputs=[X(1, 2, 3, 4)],
    ),
    case(
        "upsample_bilinear_corners",
        "Upsample",
        scale_factor=2,
        mode="bilinear",
        align_corners=True,
        inputs=[X(1, 2, 3, 3)],
    ),
    case("pixel_shuffle", "PixelShuffle", 2, inputs=[X(1, 8, 2, 3)]),
    case("zero_pad2d", "ZeroPad2d", 1, inputs=[X(1, 2, 3, 3)]),
    case("zero_pad2d_tuple", "ZeroPad2d", T(1, 0, 2, 1), inputs=[X(1, 2, 3, 3)]),
    case("reflection_pad2d", "ReflectionPad2d", 1, inputs=[X(1, 2, 3, 3)]),
    case("reflection_pad2d_tuple", "ReflectionPad2d", T(1, 2, 0, 1), inputs=[X(1, 2, 3, 4)]),
    case("conv_transpose3d", "ConvTranspose3d", 2, 2, 2, stride=2, inputs=[X(1, 2, 2, 2, 3)]),
    case("batch_norm3d", "BatchNorm3d", 2, inputs=[X(2, 2, 2, 2, 3)]),
    case("instance_norm1d", "InstanceNorm1d", 3, affine=True, inputs=[X(2, 3, 5)]),
    case("adaptive_max_pool1d", "AdaptiveMaxPool1d", 3, inputs=[X(2, 3, 7)]),
    case("constant_pad1d", "ConstantPad1d", T(2, 1), 0.5, inputs=[X(2, 3)]),
    case("constant_pad2d", "ConstantPad2d", 1, -1.5, inputs=[X(1, 2, 2, 3)]),
    case("zero_pad1d", "ZeroPad1d", 2, inputs=[X(2, 3)]),
    case("reflection_pad1d", "ReflectionPad1d", T(2, 1), inputs=[X(1, 2, 4)]),
    case("replication_pad1d", "ReplicationPad1d", 2, inputs=[X(1, 2, 3)]),
    case("replication_pad2d", "ReplicationPad2d", T(1, 2, 2, 0), inputs=[X(1, 2, 3, 3)]),
    case("pixel_unshuffle", "PixelUnshuffle", 2, inputs=[X(1, 2, 4, 6)]),
    case("upsampling_nearest2d", "UpsamplingNearest2d", scale_factor=3, inputs=[X(1, 2, 2, 2)]),
    case("upsampling_bilinear2d", "UpsamplingBilinear2d", size=T(4, 5), inputs=[X(1, 2, 2, 3)]),
    case("rrelu_eval", "RReLU", 0.1, 0.3, eval=True, inputs=X24),
    case("prelu", "PReLU", inputs=X234),
    case("prelu_channels", "PReLU", 3, init=0.1, inputs=X234),
    *[case(n, c, *a, inputs=X24, **k) for n, c, a, k in ACTIVATIONS],
    case("softmax2d", "Softmax2d", inputs=[X(2, 3, 2, 2)]),
    case("cross_entropy", "CrossEntropyLoss", inputs=[X(4, 5), IDX(5, 4)]),
    case(
        "cross_entropy_opts",
        "CrossEntropyLoss",
        label_smoothing=0.1,
        reduction="sum",
        inputs=[X(4, 5), IDX(5, 4)],
    ),
    case(
        "cross_entropy_weight",
        "CrossEntropyLoss",
        weight=W([1.0, 2.0, 0.5]),
        ignore_index=1,
        inputs=[X(5, 3), IDX(3, 5)],
    ),
    case("cross_entropy_probs", "CrossEntropyLoss", inputs=[X(4, 5), P(4, 5, grad=False)]),
    case("nll", "NLLLoss", inputs=[LOGP(4, 5), IDX(5, 4)]),
    case("nll_none", "NLLLoss", reduction="none", inputs=[LOGP(4, 5), IDX(5, 4)]),
    case("mse", "MSELoss", inputs=[X(3, 4), X(3, 4, grad=False)]),
    case("mse_none", "MSELoss", reduction="none", inputs=[X(3, 4), X(3, 4, grad=False)]),
    case("l1", "L1Loss", inputs=[X(3, 4), X(3, 4, grad=False)]),
    case("smooth_l1", "SmoothL1Loss", beta=0.5, inputs=[X(3, 4), X(3, 4, grad=False)]),
    case("huber", "HuberLoss", delta=0.5, inputs=[X(3, 4), X(3, 4, grad=False)]),
    case("bce", "BCELoss", inputs=[P(3, 4), P(3, 4, grad=False)]),
    case("bce_with_logits", "BCEWithLogitsLoss", inputs=[X(3, 4), P(3, 4, grad=False)]),
    case(
        "bce_with_logits_pos_weight",
        "BCEWithLogitsLoss",
        pos_weight=W([1.0, 2.0, 3.0, 0.5]),
        inputs=[X(3, 4), P(3, 4, grad=False)],
    ),
    case("kl_div", "KLDivLoss", reduction="batchmean", inputs=[LOGP(3, 4), P(3, 4, grad=False)]),
    case(
        "kl_div_log_target",
        "KLDivLoss",
        reduction="sum",
        log_target=True,
        inputs=[LOGP(3, 4), X(3, 4, grad=False)],
    ),
    case("poisson_nll", "PoissonNLLLoss", inputs=[X(3, 4), P(3, 4, grad=False)]),
    case(
        "margin_ranking",
        "MarginRankingLoss",
        margin=0.1,
        inputs=[X(5), X(5), {"kind": "sign", "shape": [5], "grad": False}],
    ),
    case(
        "cosine_embedding",
        "CosineEmbeddingLoss",
        inputs=[X(3, 4), X(3, 4), {"kind": "sign", "shape": [3], "grad": False}],
    ),
    case("triplet_margin", "TripletMarginLoss", inputs=[X(3, 4), X(3, 4), X(3, 4)]),
]


def run(spec: dict[str, Any]) -> dict[str, Any]:
    torch.manual_seed(0)
    layer = getattr(nn, spec["cls"])(*decode(spec["args"]), **decode(spec["kwargs"]))
    init = {
        "parameters": {n: tensor_json(p) for n, p in layer.named_parameters()},
        "buffers": {n: tensor_json(b) for n, b in layer.named_buffers()},
    }
    torch.manual_seed(1)
    inputs = []
    for s in spec["inputs"]:
        x = make_input(s)
        if s["grad"]:
            x.requires_grad_()
        inputs.append(x)
    if spec["eval"]:
        layer.eval()
    # Inplace layers must not write into the leaves.
    call_inputs = [x.clone() if x.requires_grad else x for x in inputs]
    out = layer(*call_inputs)
    outs = out if isinstance(out, tuple) else (out,)
    torch.manual_seed(2)
    upstream = torch.randn(outs[0].shape)
    outs[0].backward(upstream)
    return {
        **spec,
        "repr": repr(layer),
        "init": init,
        "input_values": [tensor_json(x) for x in inputs],
        "outputs": [tensor_json(o) for o in outs],
        "upstream": tensor_json(upstream),
        "input_grads": [tensor_json(x.grad) if x.grad is not None else None for x in inputs],
        "param_grads": {
            n: tensor_json(p.grad) for n, p in layer.named_parameters() if p.grad is not None
        },
        "buffers_after": {n: tensor_json(b) for n, b in layer.named_buffers()},
        "state_dict_keys": list(layer.state_dict().keys()),
    }


class TheModelClass(nn.Module):
    """The seed notes' LeNet."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)


class Block(nn.Module):
    """A ResNet basic block (named like torchvision's)."""

    def __init__(self, channels: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.downsample = (
            nn.Sequential(
                nn.Conv2d(channels, channels, 1, stride, bias=False), nn.BatchNorm2d(channels)
            )
            if stride != 1
            else None
        )


def nested() -> nn.Module:
    """A model nesting every container (rebuilt the same way by test_nn_module.py)."""
    from collections import OrderedDict

    shared = nn.Linear(4, 4)
    return nn.Sequential(
        OrderedDict(
            stem=nn.Conv2d(3, 4, 3, padding=1, bias=False),
            layer1=nn.Sequential(Block(4), Block(4, stride=2)),
            blocks=nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), shared, shared]),
            heads=nn.ModuleDict({"cls": nn.Linear(4, 10), "drop": nn.Dropout(0.1)}),
            extra=nn.ParameterList([nn.Parameter(torch.zeros(2, 3)), nn.Parameter(torch.zeros(4))]),
            table=nn.ParameterDict({"a": nn.Parameter(torch.zeros(3))}),
            empty=nn.ModuleList(),
        )
    )


def describe(model: nn.Module) -> dict[str, Any]:
    return {
        "repr": repr(model),
        "named_parameters": [[n, list(p.shape)] for n, p in model.named_parameters()],
        "named_buffers": [n for n, _ in model.named_buffers()],
        "named_modules": [n for n, _ in model.named_modules()],
        "named_children": [n for n, _ in model.named_children()],
        "state_dict_keys": list(model.state_dict().keys()),
    }


# nn.init functions: (name, function, shape, kwargs), each run on torch.empty(shape)
# right after torch.manual_seed(0).
INITS = [
    ("uniform", "uniform_", [40, 30], {"a": -2.0, "b": 3.0}),
    ("normal", "normal_", [40, 30], {"mean": 1.0, "std": 0.5}),
    ("trunc_normal", "trunc_normal_", [40, 30], {"mean": 0.5, "std": 2.0, "a": -1.0, "b": 2.0}),
    ("trunc_normal_tail", "trunc_normal_", [20, 30], {"mean": 0.0, "std": 1.0, "a": 2.0, "b": 4.0}),
    ("constant", "constant_", [3, 4], {"val": 0.25}),
    ("ones", "ones_", [3, 4], {}),
    ("zeros", "zeros_", [3, 4], {}),
    ("eye", "eye_", [3, 5], {}),
    ("dirac", "dirac_", [4, 2, 3, 3], {}),
    ("dirac_groups", "dirac_", [6, 2, 3], {"groups": 2}),
    ("xavier_uniform", "xavier_uniform_", [30, 20, 3], {"gain": 2.0}),
    ("xavier_normal", "xavier_normal_", [30, 20], {}),
    ("kaiming_uniform", "kaiming_uniform_", [30, 20, 2, 2], {}),
    (
        "kaiming_uniform_relu_fan_out",
        "kaiming_uniform_",
        [30, 20],
        {"mode": "fan_out", "nonlinearity": "relu"},
    ),
    ("kaiming_normal", "kaiming_normal_", [30, 20], {"a": 0.1}),
    ("orthogonal", "orthogonal_", [6, 4], {}),
    ("orthogonal_wide", "orthogonal_", [3, 2, 4], {"gain": 1.5}),
]
GAINS = [
    ["linear", None],
    ["conv2d", None],
    ["sigmoid", None],
    ["tanh", None],
    ["relu", None],
    ["leaky_relu", None],
    ["leaky_relu", 0.2],
    ["selu", None],
]


def inits() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, fn, shape, kwargs in INITS:
        torch.manual_seed(0)
        t = torch.empty(shape)
        getattr(nn.init, fn)(t, **kwargs)
        out[name] = {"fn": fn, "kwargs": kwargs, "result": tensor_json(t)}
    return out


def main() -> None:
    cases = [run(spec) for spec in CASES]
    models = {"the_model_class": describe(TheModelClass()), "nested": describe(nested())}
    gains = [[n, p, nn.init.calculate_gain(n, p)] for n, p in GAINS]
    OUT.write_text(
        json.dumps(
            {"cases": cases, "models": models, "inits": inits(), "gains": gains},
            indent=None,
            separators=(",", ":"),
        )
        + "\n"
    )
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
