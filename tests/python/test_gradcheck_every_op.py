"""Every differentiable op passes float64 gradcheck and gradgradcheck.

The list of ops is docs/ops.md (generated from the code and checked fresh by
test_ops_doc.py): every row whose backward is a grad_fn must have a case here, so an op
added without one fails `test_every_differentiable_op_has_a_case`. Each case runs
``rustgrad.autograd.gradcheck`` (analytic vector-Jacobian products against central
finite differences) and ``gradgradcheck`` (the same for the backward itself), on
contiguous inputs and, for 2-D first inputs, on a transposed (non-contiguous) layout.
In-place forms ``x_`` run on a clone of their first input, with the arguments of ``x``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest
import rustgrad as torch
import rustgrad.nn.functional as F
from rustgrad.autograd import gradcheck, gradgradcheck

OPS_MD = Path(__file__).resolve().parents[2] / "docs" / "ops.md"

# Input domains: keep each op away from its poles, kinks and branch cuts.
N, P, U, NZ = "normal", "positive", "unit", "nonzero"


def _values(shape: tuple[int, ...], dom: str, rng: np.random.Generator) -> np.ndarray:
    if dom == P:
        return rng.uniform(0.5, 2.0, shape)
    if dom == U:
        return rng.uniform(-0.8, 0.8, shape)
    if dom == NZ:
        return rng.choice([-1.0, 1.0], shape) * rng.uniform(0.3, 2.0, shape)
    return rng.normal(0.0, 1.0, shape)


class Case:
    """Inputs (shape, domain) and a function of them; `method` cases also give their
    in-place form."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *specs: tuple[tuple[int, ...], str],
        method: str | None = None,
        args: Callable[[], tuple] = lambda: (),
        contiguous_only: bool = False,
        tolerances: dict[str, float] | None = None,
    ) -> None:
        self.fn, self.specs, self.method, self.args = fn, specs, method, args
        self.contiguous_only = contiguous_only  # e.g. `view`, which needs viewable strides
        self.tolerances = tolerances or {}

    def inputs(self, seed: int, transposed: bool) -> list[Any]:
        rng = np.random.default_rng(seed)
        out = []
        for k, (shape, dom) in enumerate(self.specs):
            if k == 0 and transposed:
                base = torch.tensor(_values(shape[::-1], dom, rng)).t()
            else:
                base = torch.tensor(_values(shape, dom, rng))
            out.append(base.detach().requires_grad_())
        return out


def M(
    name: str, *specs: tuple[tuple[int, ...], str], args: Callable[[], tuple] = lambda: ()
) -> Case:
    """The method `x.name(*other_inputs, *args())`."""
    return Case(lambda x, *rest: getattr(x, name)(*rest, *args()), *specs, method=name, args=args)


def S(*shape: int, dom: str = N) -> tuple[tuple[int, ...], str]:
    return (tuple(shape), dom)


A, B = S(2, 3), S(2, 3)
ROW = S(3)
IDX = lambda *v: torch.tensor(list(v))  # noqa: E731
MASK = lambda: torch.tensor([[True, False, True], [False, True, True]])  # noqa: E731

CASES: dict[str, Case] = {
    # ---- binary (with broadcasting against a row)
    **{n: M(n, A, ROW) for n in ["add", "sub", "mul", "maximum", "minimum", "fmax", "fmin"]},
    **{n: M(n, A, S(3, dom=NZ)) for n in ["div", "divide", "true_divide", "fmod", "remainder"]},
    **{n: M(n, A, ROW) for n in ["atan2", "arctan2", "hypot", "logaddexp", "logaddexp2"]},
    "copysign": M("copysign", A, S(3, dom=NZ)),
    "pow": M("pow", S(2, 3, dom=P), ROW),
    "float_power": M("float_power", S(2, 3, dom=P), ROW),
    "xlogy": M("xlogy", A, S(3, dom=P)),
    # ---- unary math
    **{
        n: M(n, S(2, 3, dom=d))
        for n, d in [
            ("neg", N),
            ("exp", N),
            ("log", P),
            ("sqrt", P),
            ("tanh", N),
            ("sigmoid", N),
            ("relu", NZ),
            ("abs", NZ),
            ("sign", NZ),
            ("sgn", NZ),
            ("rsqrt", P),
            ("exp2", N),
            ("expm1", N),
            ("log1p", P),
            ("log2", P),
            ("log10", P),
            ("sin", N),
            ("cos", N),
            ("tan", U),
            ("asin", U),
            ("arcsin", U),
            ("acos", U),
            ("arccos", U),
            ("atan", N),
            ("arctan", N),
            ("sinh", N),
            ("cosh", N),
            ("reciprocal", NZ),
            ("square", N),
            ("erf", N),
            ("erfinv", U),
            ("floor", N),
            ("ceil", N),
            ("round", N),
            ("trunc", N),
            ("fix", N),
            ("frac", N),
            ("nan_to_num", N),
            ("float", N),
        ]
    },  # fmt: skip
    # float32 in the middle: finite differences see its rounding (eps and atol widened).
    "float": Case(lambda x: x.float().double(), A, tolerances={"eps": 1e-3, "atol": 1e-3}),
    "half": Case(lambda x: x.half().double(), A, tolerances={"eps": 1 / 16, "atol": 0.05}),
    "bfloat16": Case(lambda x: x.bfloat16().double(), A, tolerances={"eps": 0.25, "atol": 0.1}),
    "clamp": M("clamp", A, args=lambda: (-0.5, 0.5)),
    "clamp_min": M("clamp_min", A, args=lambda: (-0.3,)),
    "clamp_max": M("clamp_max", A, args=lambda: (0.4,)),
    "negative": M("negative", A),
    "absolute": M("absolute", S(2, 3, dom=NZ)),
    # in-place comparisons write 0/1 into self: zero gradients everywhere
    **{
        n: Case(lambda x, y, n=n: getattr(x.clone(), n)(y), A, ROW)
        for n in [
            "eq_",
            "ne_",
            "lt_",
            "le_",
            "gt_",
            "ge_",
            "greater_",
            "greater_equal_",
            "less_",
            "less_equal_",
            "not_equal_",
        ]
    },  # fmt: skip
    "clip": M("clip", A, args=lambda: (-0.5, 0.5)),
    "contiguous": M("contiguous", A),
    "clone": M("clone", A),
    # ---- three operands
    "lerp": M("lerp", A, B, S(3, dom=U)),
    "addcmul": M("addcmul", A, B, ROW),
    "addcdiv": M("addcdiv", A, B, S(3, dom=NZ)),
    "where": Case(lambda x, y: torch.where(MASK(), x, y), A, ROW),
    # ---- in-place with no out-of-place twin in the table
    "zero_": Case(lambda x: x.clone().zero_(), A),
    "fill_": Case(lambda x: x.clone().fill_(2.0), A),
    "copy_": Case(lambda x, y: x.clone().copy_(y), A, ROW),
    "relu_": Case(lambda x: x.clone().relu_(), S(2, 3, dom=NZ)),
    **{
        n: Case(lambda x, y, n=n: getattr(x.clone(), n)(y), A, ROW)
        for n in ["logical_and_", "logical_or_", "logical_xor_"]
    },
    "logical_not_": Case(lambda x: x.clone().logical_not_(), A),
    "__setitem__": Case(lambda x, y: _setitem(x, y), A, S(2)),
    # ---- indexing
    "__getitem__": Case(lambda x: x[1, 1:], A),
    "index_select": M("index_select", A, args=lambda: (1, IDX(2, 0, 2))),
    "gather": M("gather", A, args=lambda: (1, IDX([0, 2], [1, 1]))),
    "scatter": Case(lambda x, s: x.scatter(1, IDX([0], [2]), s), A, S(2, 1)),
    "scatter_add": Case(lambda x, s: x.scatter_add(1, IDX([0, 0], [2, 1]), s), A, S(2, 2)),
    "index_add": Case(lambda x, s: x.index_add(1, IDX(0, 2, 0), s), A, S(2, 3)),
    "scatter_": Case(lambda x, s: x.clone().scatter_(1, IDX([0], [2]), s), A, S(2, 1)),
    "scatter_add_": Case(
        lambda x, s: x.clone().scatter_add_(1, IDX([0, 0], [2, 1]), s), A, S(2, 2)
    ),
    "index_add_": Case(lambda x, s: x.clone().index_add_(1, IDX(0, 2, 0), s), A, S(2, 3)),
    "index_fill": M("index_fill", A, args=lambda: (1, IDX(0, 2), 1.5)),
    "masked_fill": M("masked_fill", A, args=lambda: (MASK(), 0.5)),
    "masked_select": M("masked_select", A, args=lambda: (MASK(),)),
    "take": M("take", A, args=lambda: (IDX(5, 0, 3, 3),)),
    "index_copy": Case(lambda x, s: x.index_copy(1, IDX(2, 0), s), A, S(2, 2)),
    "index_copy_": Case(lambda x, s: x.clone().index_copy_(1, IDX(2, 0), s), A, S(2, 2)),
    "masked_scatter": Case(lambda x, s: x.masked_scatter(MASK(), s), A, S(2, 3)),
    "masked_scatter_": Case(lambda x, s: x.clone().masked_scatter_(MASK(), s), A, S(2, 3)),
    "put": Case(lambda x, s: x.put(IDX(4, 0), s, accumulate=False), A, S(2)),
    "put_": Case(lambda x, s: x.clone().put_(IDX(1, 1), s, accumulate=True), A, S(2)),
    "fill_diagonal_": Case(lambda x: x.clone().fill_diagonal_(0.5), S(3, 3)),
    "scatter_reduce": Case(
        lambda x, s: x.scatter_reduce(1, IDX([0, 0, 2], [1, 1, 1]), s, "prod"), A, S(2, 3)
    ),
    "scatter_reduce_": Case(
        lambda x, s: x.clone().scatter_reduce_(
            1, IDX([2, 0], [1, 2]), s, "mean", include_self=False
        ),
        A,
        S(2, 2),
    ),
    "index_put_": Case(lambda x, v: x.clone().index_put_((IDX(1, 0),), v), A, S(2, 3)),
    "index_put": Case(lambda x, v: x.index_put((IDX(1, 1),), v, accumulate=True), A, ROW),
    "as_strided": M("as_strided", S(6), args=lambda: ((2, 2), (1, 2), 1)),
    "take_along_dim": Case(lambda x: torch.take_along_dim(x, IDX([0, 2], [1, 1]), 1), A),
    # ---- linear algebra
    "matmul": M("matmul", S(2, 3), S(3, 2)),
    "mm": M("mm", S(2, 3), S(3, 2)),
    "bmm": M("bmm", S(2, 2, 3), S(2, 3, 2)),
    "mv": M("mv", S(2, 3), ROW),
    "dot": M("dot", ROW, ROW),
    "outer": M("outer", S(2), ROW),
    "addmm": M("addmm", S(2, 2), S(2, 3), S(3, 2), args=lambda: ()),
    "addmv": M("addmv", S(2), S(2, 3), ROW),
    "baddbmm": M("baddbmm", S(2, 2, 2), S(2, 2, 3), S(2, 3, 2)),
    "addbmm": M("addbmm", S(2, 2), S(2, 2, 3), S(2, 3, 2)),
    "einsum": Case(lambda x, y: torch.einsum("ij,kj->ik", x, y), A, B),
    "tensordot": Case(lambda x, y: torch.tensordot(x, y, ([1], [1])), A, B),
    "vector_norm": Case(lambda x: torch.linalg.vector_norm(x, 3, dim=1), S(2, 3, dom=NZ)),
    "matrix_norm": Case(lambda x: torch.linalg.matrix_norm(x, 1), S(2, 3, dom=NZ)),
    "norm": Case(lambda x: x.norm(), A),
    # ---- reductions
    "sum": M("sum", A, args=lambda: (1,)),
    "mean": M("mean", A, args=lambda: (0,)),
    "nansum": M("nansum", A),
    "nanmean": M("nanmean", A, args=lambda: (1,)),
    "max": M("max", A),
    "min": M("min", A, args=lambda: (1,)),
    "amax": M("amax", A, args=lambda: (0,)),
    "amin": M("amin", A),
    "median": M("median", A, args=lambda: (1,)),
    "softmax": M("softmax", A, args=lambda: (1,)),
    "log_softmax": M("log_softmax", A, args=lambda: (0,)),
    "logsumexp": M("logsumexp", A, args=lambda: (1,)),
    "prod": M("prod", S(2, 3, dom=NZ), args=lambda: (1,)),
    "var": M("var", A, args=lambda: (1,)),
    "std": M("std", A, args=lambda: (0,)),
    "var_mean": Case(lambda x: torch.var_mean(x, 1)[0] + torch.var_mean(x, 1)[1], A),
    "std_mean": Case(lambda x: torch.std_mean(x, 0)[0] * torch.std_mean(x, 0)[1], A),
    "cumsum": M("cumsum", A, args=lambda: (1,)),
    "cumprod": M("cumprod", S(2, 3, dom=NZ), args=lambda: (1,)),
    "topk": Case(lambda x: x.topk(2, 1)[0], A),
    "sort": Case(lambda x: x.sort(0, descending=True)[0], A),
    # ---- shape and movement
    "view": Case(lambda x: x.view(3, 2), A, contiguous_only=True),
    "reshape": M("reshape", A, args=lambda: (6,)),
    "transpose": M("transpose", A, args=lambda: (0, 1)),
    "flatten": M("flatten", S(2, 3, 2), args=lambda: (1,)),
    "unflatten": M("unflatten", A, args=lambda: (1, (3, 1))),
    "t": M("t", A),
    "T": Case(lambda x: x.T, S(2, 3, 2)),
    "mT": Case(lambda x: x.mT, S(2, 3, 2)),
    "permute": M("permute", S(2, 3, 2), args=lambda: (2, 0, 1)),
    "expand": M("expand", S(1, 3), args=lambda: (2, 2, 3)),
    "expand_as": Case(lambda x: x.expand_as(torch.zeros(2, 2, 3)), S(1, 3)),
    "broadcast_to": Case(lambda x: torch.broadcast_to(x, (2, 3)), ROW),
    "view_as": Case(lambda x: x.view_as(torch.zeros(3, 2)), A, contiguous_only=True),
    "reshape_as": Case(lambda x: x.reshape_as(torch.zeros(6)), A),
    "unsqueeze": M("unsqueeze", A, args=lambda: (-1,)),
    "squeeze": M("squeeze", S(2, 1, 3), args=lambda: (1,)),
    "split": Case(lambda x: x.split(2, 1)[1], A),
    "split_with_sizes": Case(lambda x: x.split_with_sizes([1, 2], 1)[0], A),
    "chunk": Case(lambda x: x.chunk(2, 1)[0], A),
    "unbind": Case(lambda x: x.unbind(1)[2], A),
    "narrow": M("narrow", A, args=lambda: (1, 1, 2)),
    "tensor_split": Case(lambda x: x.tensor_split(torch.tensor([1, 2]), 1)[1], A),
    "hsplit": Case(lambda x: torch.hsplit(x, 3)[2], A),
    "vsplit": Case(lambda x: x.vsplit([1])[1], A),
    "dsplit": Case(lambda x: torch.dsplit(x.reshape(1, 2, 3), [2])[0], A),
    "select": M("select", A, args=lambda: (1, -1)),
    "flip": M("flip", A, args=lambda: ((0, 1),)),
    "roll": M("roll", A, args=lambda: (1, 1)),
    "repeat": M("repeat", A, args=lambda: (2, 1)),
    "tile": M("tile", A, args=lambda: ((2,),)),
    "tril": M("tril", A),
    "triu": M("triu", A, args=lambda: (1,)),
    "diagonal": M("diagonal", A, args=lambda: (1,)),
    "diag": M("diag", A),
    "diag_embed": M("diag_embed", A),
    "movedim": M("movedim", S(2, 3, 2), args=lambda: (0, 2)),
    "moveaxis": M("moveaxis", S(2, 3, 2), args=lambda: (2, 0)),
    "swapaxes": M("swapaxes", S(2, 3, 2), args=lambda: (0, 2)),
    "swapdims": M("swapdims", S(2, 3, 2), args=lambda: (1, 2)),
    "unfold": M("unfold", A, args=lambda: (1, 2, 1)),
    "repeat_interleave": M("repeat_interleave", A, args=lambda: (2, 0)),
    "cat": Case(lambda x, y: torch.cat([x, y], 1), A, S(2, 2)),
    "concat": Case(lambda x, y: torch.concat([x, y], 0), A, B),
    "concatenate": Case(lambda x, y: torch.concatenate([x, y], -1), A, B),
    "stack": Case(lambda x, y: torch.stack([x, y], 1), A, B),
    "hstack": Case(lambda x, y: torch.hstack([x, y]), A, B),
    "vstack": Case(lambda x, y: torch.vstack([x, y]), A, ROW),
    "meshgrid": Case(lambda x, y: torch.meshgrid(x, y, indexing="ij")[1] * 2, S(2), ROW),
    # ---- activations (rustgrad.nn.functional, torch.selu / torch.celu)
    **{
        n: Case(lambda x, n=n: getattr(F, n)(x), S(2, 3, dom=NZ))
        for n in [
            "relu6",
            "leaky_relu",
            "elu",
            "selu",
            "celu",
            "gelu",
            "silu",
            "mish",
            "softplus",
            "softsign",
            "hardtanh",
            "hardsigmoid",
            "hardswish",
            "logsigmoid",
            "softmin",
        ]
    },  # fmt: skip
    **{
        n: Case(lambda x, n=n: getattr(F, n)(x.clone()), S(2, 3, dom=NZ))
        for n in ["celu_", "leaky_relu_", "elu_", "hardtanh_"]
    },
    "selu_": Case(lambda x: torch.selu_(x.clone()), S(2, 3, dom=NZ)),
    "softmin": Case(lambda x: F.softmin(x, 1), A),
    # ---- padding, resampling and grids (more options in test_nn_spatial.py)
    "pad": Case(lambda x: F.pad(x, (1, 2), mode="reflect"), A),
    "interpolate": Case(
        lambda x: F.interpolate(x, size=(3, 4), mode="bicubic", align_corners=False),
        S(1, 1, 2, 3),
    ),
    "grid_sample": Case(
        lambda x, g: F.grid_sample(x, g, align_corners=False), S(1, 2, 3, 4), S(1, 2, 2, 2, dom=U)
    ),
    "affine_grid": Case(lambda t: F.affine_grid(t, [1, 1, 2, 3], align_corners=False), S(1, 2, 3)),
    # ---- nn.functional activations, dropout, embedding and losses (nn/_activation.py,
    # nn/_dropout.py, nn/_loss.py; the random ones reseed the global generator)
    "hardshrink": Case(lambda x: F.hardshrink(x, 0.2), S(2, 3, dom=NZ)),
    "softshrink": Case(lambda x: F.softshrink(x, 0.2), S(2, 3, dom=NZ)),
    "tanhshrink": Case(F.tanhshrink, A),
    "rrelu": Case(lambda x: F.rrelu(x), S(2, 3, dom=NZ)),
    "rrelu_": Case(lambda x: F.rrelu_(x.clone()), S(2, 3, dom=NZ)),
    "dropout1d": Case(lambda x: _seeded(F.dropout1d, x), A),
    "dropout2d": Case(lambda x: _seeded(F.dropout2d, x.reshape(1, 2, 3, 1)), A),
    "dropout3d": Case(lambda x: _seeded(F.dropout3d, x.reshape(1, 2, 1, 3, 1)), A),
    "glu": Case(lambda x: F.glu(x, 0), A),
    "threshold": Case(lambda x: F.threshold(x, 0.1, 5.0), S(2, 3, dom=NZ)),
    "prelu": Case(F.prelu, S(2, 3, dom=NZ), S(3, dom=P)),
    "embedding": Case(lambda w: F.embedding(IDX(0, 1, 1), w), A),
    "embedding_bag": Case(lambda w: F.embedding_bag(IDX(0, 1, 1), w, IDX(0, 1)), A),
    "cross_entropy": Case(lambda x: F.cross_entropy(x, IDX(0, 2), label_smoothing=0.1), A),
    "nll_loss": Case(lambda x: F.nll_loss(x, IDX(0, 2)), A),
    **{n: Case(getattr(F, n), A, B) for n in ["mse_loss", "l1_loss", "smooth_l1_loss"]},
    **{n: Case(getattr(F, n), A, B) for n in ["huber_loss", "cosine_similarity"]},
    "pairwise_distance": Case(F.pairwise_distance, A, B),
    "binary_cross_entropy": Case(
        lambda x, y: F.binary_cross_entropy(x.sigmoid(), y.sigmoid()), A, B
    ),
    "binary_cross_entropy_with_logits": Case(
        lambda x, y: F.binary_cross_entropy_with_logits(x, y.sigmoid()), A, B
    ),
    "poisson_nll_loss": Case(F.poisson_nll_loss, A, S(2, 3, dom=P)),
    "kl_div": Case(lambda x, y: F.kl_div(x, y, reduction="batchmean"), A, S(2, 3, dom=P)),
    "cosine_embedding_loss": Case(
        lambda a, b: F.cosine_embedding_loss(a, b, torch.tensor([1.0, -1.0]), margin=-0.9), A, B
    ),
    "margin_ranking_loss": Case(
        lambda a, b: F.margin_ranking_loss(a, b, torch.ones(2, 3, dtype=torch.float64), 3.0),
        A,
        B,
    ),
    "triplet_margin_loss": Case(lambda a, p, n: F.triplet_margin_loss(a, p, n, 5.0), A, B, A),
    # margin, Gaussian and CTC losses (issue 21; more in test_nn_loss_21.py). ctc_loss is
    # checked through log_softmax: PyTorch's (and rustgrad's) CTC gradient is the one of
    # the log-probabilities of a softmax, exact for normalised inputs only.
    "ctc_loss": Case(
        lambda x: F.ctc_loss(x.log_softmax(2), IDX(1, 2, 2, 1), (4, 3), (2, 2)), S(4, 2, 3)
    ),
    "gaussian_nll_loss": Case(F.gaussian_nll_loss, A, B, S(2, 3, dom=P)),
    "hinge_embedding_loss": Case(
        lambda x: F.hinge_embedding_loss(x, torch.tensor([[1.0, -1.0, 1.0]] * 2), 0.5),
        S(2, 3, dom=NZ),
    ),
    "multi_margin_loss": Case(lambda x: F.multi_margin_loss(x, IDX(0, 2), p=2), A),
    "multilabel_margin_loss": Case(
        lambda x: F.multilabel_margin_loss(x, torch.tensor([[2, -1, 0], [0, 1, -1]])), A
    ),
    "multilabel_soft_margin_loss": Case(
        lambda x, w: F.multilabel_soft_margin_loss(x, torch.tensor([[1.0, 0.0, 1.0]] * 2), w),
        A,
        S(3, dom=P),
    ),
    "soft_margin_loss": Case(lambda x: F.soft_margin_loss(x, torch.tensor([1.0, -1.0, 1.0])), A),
    "triplet_margin_with_distance_loss": Case(
        lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=5.0, swap=True),
        A,
        B,
        A,
    ),
    # convolutions and linear layers (nn/_conv.py; more in test_nn_conv.py)
    "conv1d": Case(lambda x, w, b: F.conv1d(x, w, b, padding=1), S(1, 2, 4), S(3, 2, 2), S(3)),
    "conv2d": Case(lambda x, w: F.conv2d(x, w, stride=2, padding=1), S(1, 2, 3, 3), S(2, 2, 2, 2)),
    "conv3d": Case(lambda x, w: F.conv3d(x, w, groups=2), S(1, 2, 2, 2, 2), S(2, 1, 2, 1, 2)),
    "conv_transpose1d": Case(
        lambda x, w: F.conv_transpose1d(x, w, stride=2), S(1, 2, 3), S(2, 1, 2)
    ),
    "conv_transpose2d": Case(
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, output_padding=1),
        S(1, 2, 2, 2),
        S(2, 1, 2, 2),
        S(1),
    ),
    "conv_transpose3d": Case(
        lambda x, w: F.conv_transpose3d(x, w), S(1, 1, 2, 1, 2), S(1, 2, 2, 2, 1)
    ),
    "linear": Case(lambda x, w, b: F.linear(x, w, b), A, S(4, 3), S(4)),
    "bilinear": Case(lambda x, y, w: F.bilinear(x, y, w), A, S(2, 2), S(2, 3, 2)),
    "fold": Case(lambda x: F.fold(x, (3, 3), 2), S(1, 4, 4)),
    "pixel_shuffle": Case(lambda x: F.pixel_shuffle(x, 2), S(4, 1, 2)),
    "pixel_unshuffle": Case(lambda x: F.pixel_unshuffle(x, 2), S(1, 2, 4)),
    # ---- pooling and normalisation (rustgrad.nn.functional)
    "max_pool1d": Case(lambda x: F.max_pool1d(x, 2, 1), S(2, 5)),
    "max_pool2d": Case(lambda x: F.max_pool2d(x, 2, 1, 1), S(2, 4, 4)),
    "avg_pool1d": Case(lambda x: F.avg_pool1d(x, 2, 1), S(2, 5)),
    "avg_pool2d": Case(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), S(2, 4, 5)),
    "adaptive_avg_pool1d": Case(lambda x: F.adaptive_avg_pool1d(x, 3), S(2, 5)),
    "adaptive_avg_pool2d": Case(lambda x: F.adaptive_avg_pool2d(x, (3, 2)), S(2, 4, 5)),
    "adaptive_max_pool2d": Case(lambda x: F.adaptive_max_pool2d(x, (3, 2)), S(2, 4, 5)),
    "max_unpool2d": Case(
        lambda x: F.max_unpool2d(x, torch.tensor([[[0, 3], [9, 14]]]), 2), S(1, 2, 2)
    ),
    "batch_norm": Case(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), S(4, 3), ROW, ROW),
    "layer_norm": Case(lambda x, w, b: F.layer_norm(x, (3,), w, b), A, ROW, ROW),
    "group_norm": Case(lambda x: F.group_norm(x, 1), S(2, 3, 2)),
    "instance_norm": Case(lambda x: F.instance_norm(x), S(2, 2, 3)),
    "rms_norm": Case(lambda x, w: F.rms_norm(x, (3,), w), A, ROW),
    "local_response_norm": Case(lambda x: F.local_response_norm(x, 2), S(1, 3, 2)),
    "normalize": Case(lambda x: F.normalize(x), A),
    "scaled_dot_product_attention": Case(
        lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        S(1, 2, 3, 4),
        S(1, 2, 4, 4),
        S(1, 2, 4, 2),
    ),
    "multi_head_attention_forward": Case(
        lambda x, w, wo: F.multi_head_attention_forward(
            x, x, x, 4, 2, w, None, None, None, False, 0.0, wo, None, need_weights=False
        )[0],
        S(3, 2, 4),
        S(12, 4),
        S(4, 4),
    ),
    # The rest of rustgrad.nn.functional (test_every_nn_functional_has_a_case).
    "max_pool1d_with_indices": Case(lambda x: F.max_pool1d_with_indices(x, 2, 1)[0], S(2, 5)),
    "max_pool2d_with_indices": Case(lambda x: F.max_pool2d_with_indices(x, 2, 1)[0], S(2, 4, 4)),
    "adaptive_max_pool2d_with_indices": Case(
        lambda x: F.adaptive_max_pool2d_with_indices(x, (3, 2))[0], S(2, 4, 5)
    ),
    # Pooling of issue 21 (tests/python/test_nn_pool3d.py has PyTorch's vectors).
    "max_pool3d": Case(lambda x: F.max_pool3d(x, 2, 1, 1), S(1, 3, 3, 4)),
    "max_pool3d_with_indices": Case(lambda x: F.max_pool3d_with_indices(x, 2)[0], S(1, 2, 4, 4)),
    "avg_pool3d": Case(lambda x: F.avg_pool3d(x, 3, 2, 1, True, False), S(1, 3, 4, 5)),
    "adaptive_avg_pool3d": Case(lambda x: F.adaptive_avg_pool3d(x, (2, 3, 2)), S(1, 3, 4, 5)),
    "adaptive_max_pool3d": Case(lambda x: F.adaptive_max_pool3d(x, (2, 3, 2)), S(1, 3, 4, 5)),
    "adaptive_max_pool3d_with_indices": Case(
        lambda x: F.adaptive_max_pool3d_with_indices(x, 2)[0], S(1, 3, 4, 5)
    ),
    "adaptive_max_pool1d": Case(lambda x: F.adaptive_max_pool1d(x, 3), S(2, 5)),
    "adaptive_max_pool1d_with_indices": Case(
        lambda x: F.adaptive_max_pool1d_with_indices(x, 3)[0], S(2, 5)
    ),
    "lp_pool1d": Case(lambda x: F.lp_pool1d(x.abs() + 0.5, 2, 2), S(2, 5)),
    "lp_pool2d": Case(lambda x: F.lp_pool2d(x.abs() + 0.5, 3, 2), S(2, 4, 4)),
    "lp_pool3d": Case(lambda x: F.lp_pool3d(x.abs() + 0.5, 2, 2), S(1, 2, 4, 4)),
    "max_unpool1d": Case(lambda x: F.max_unpool1d(x, torch.tensor([[1, 2], [0, 3]]), 2), S(2, 2)),
    "max_unpool3d": Case(
        lambda x: F.max_unpool3d(x, torch.tensor([[[[0, 7]]]]), 2, output_size=(2, 2, 4)),
        S(1, 1, 1, 2),
    ),
    "fractional_max_pool2d": Case(
        lambda x: F.fractional_max_pool2d(
            x, 2, 3, _random_samples=torch.tensor([[[0.3, 0.7]]], dtype=torch.float64)
        ),
        S(1, 5, 6),
    ),
    "fractional_max_pool2d_with_indices": Case(
        lambda x: F.fractional_max_pool2d_with_indices(
            x, 2, 2, _random_samples=torch.tensor([[[0.6, 0.2]]], dtype=torch.float64)
        )[0],
        S(1, 4, 5),
    ),
    "fractional_max_pool3d": Case(
        lambda x: F.fractional_max_pool3d(
            x, 2, 2, _random_samples=torch.tensor([[[0.3, 0.7, 0.5]]], dtype=torch.float64)
        ),
        S(1, 3, 4, 4),
    ),
    "fractional_max_pool3d_with_indices": Case(
        lambda x: F.fractional_max_pool3d_with_indices(
            x, 2, 2, _random_samples=torch.tensor([[[0.1, 0.9, 0.4]]], dtype=torch.float64)
        )[0],
        S(1, 3, 4, 4),
    ),
    "dropout": Case(lambda x: _seeded(lambda t: F.dropout(t, 0.4), x), A),
    "alpha_dropout": Case(lambda x: _seeded(lambda t: F.alpha_dropout(t, 0.4, True), x), A),
    "feature_alpha_dropout": Case(
        lambda x: _seeded(lambda t: F.feature_alpha_dropout(t, 0.4, True), x), A
    ),
    "threshold_": Case(lambda x: F.threshold_(x.clone(), 0.1, 5.0), S(2, 3, dom=NZ)),
    "upsample": Case(lambda x: _quiet(F.upsample, x, scale_factor=2), S(1, 1, 3)),
    "upsample_nearest": Case(lambda x: _quiet(F.upsample_nearest, x, scale_factor=2), S(1, 1, 3)),
    "upsample_bilinear": Case(
        lambda x: _quiet(F.upsample_bilinear, x, scale_factor=2), S(1, 1, 2, 3)
    ),
}

# Functionals with no gradient to check (integer results).
NOT_DIFFERENTIABLE = {"one_hot"}
# Functionals whose backward is, as in PyTorch, not differentiable again (native
# backward kernels): gradcheck only; gradgradcheck must raise PyTorch's "derivative for
# aten::..._backward is not implemented".
FIRST_ORDER_ONLY = {"ctc_loss", "multi_margin_loss", "multilabel_margin_loss"}


def _quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` without its deprecation warning."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def _seeded(fn: Callable[..., Any], x: Any) -> Any:
    """``fn(x)`` with the global generator reseeded: the same mask on every call."""
    torch.manual_seed(0)
    return fn(x)


def _setitem(x: Any, y: Any) -> Any:
    z = x.clone()
    z[1, :2] = y
    return z


def _case(name: str) -> Case | None:
    if name in CASES:
        return CASES[name]
    base = CASES.get(name[:-1]) if name.endswith("_") else None
    if base is not None and base.method is not None:
        args = base.args
        return Case(lambda x, *rest: getattr(x.clone(), name)(*rest, *args()), *base.specs)
    return None


def _differentiable_ops() -> list[str]:
    names: list[str] = []
    for line in OPS_MD.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 6 or cells[1] in ("op", "---"):
            continue
        if re.fullmatch(r"\w*Backward\w*|CopySlices", cells[4]) and cells[1] not in names:
            names.append(cells[1])
    return names


OPS = _differentiable_ops()


def test_every_differentiable_op_has_a_case() -> None:
    assert len(OPS) > 200
    missing = [name for name in OPS if _case(name) is None]
    assert not missing, f"no gradcheck case for {missing}"


def test_every_nn_functional_has_a_case() -> None:
    """Every differentiable name of ``rustgrad.nn.functional.__all__`` is gradchecked."""
    missing = [n for n in F.__all__ if n not in NOT_DIFFERENTIABLE and _case(n) is None]
    assert not missing, f"no gradcheck case for {missing}"


NN_FUNCTIONALS = [n for n in F.__all__ if n not in NOT_DIFFERENTIABLE and n not in OPS]


@pytest.mark.parametrize("name", NN_FUNCTIONALS)
def test_nn_functional_gradcheck_and_gradgradcheck(name: str) -> None:
    case = _case(name)
    assert case is not None, f"no gradcheck case for {name}"
    inputs = case.inputs(seed=sum(map(ord, name)), transposed=False)
    assert gradcheck(case.fn, inputs, **case.tolerances)
    if name in FIRST_ORDER_ONLY:
        with pytest.raises(RuntimeError, match="backward is not implemented"):
            gradgradcheck(case.fn, inputs, **case.tolerances)
        return
    assert gradgradcheck(case.fn, inputs, **case.tolerances)


def _layouts(name: str) -> list[str]:
    case = _case(name)
    if case is None or case.contiguous_only or len(case.specs[0][0]) != 2:
        return ["contiguous"]
    return ["contiguous", "transposed"]


@pytest.mark.parametrize(
    "name, layout", [(name, layout) for name in OPS for layout in _layouts(name)]
)
def test_gradcheck_and_gradgradcheck(name: str, layout: str) -> None:
    case = _case(name)
    assert case is not None, f"no gradcheck case for {name}"
    inputs = case.inputs(seed=sum(map(ord, name)), transposed=layout == "transposed")
    assert gradcheck(case.fn, inputs, **case.tolerances)
    assert gradgradcheck(case.fn, inputs, **case.tolerances)
