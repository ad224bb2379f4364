"""Every op of docs/ops.md, given a view of 2**40 elements (`ones(1, 1).expand(2**20,
2**20)`: 4 TiB as float32, one element stored), raises an ordinary exception -- PyTorch's
"can't allocate memory" wherever the op must allocate its result -- or returns a
correct result when it needs no such memory (views, `zero_`); it never aborts the
process in the allocator. Factories get the equivalent huge size. The op list is parsed
from docs/ops.md, so a new op is covered: without an entry in `CALLS` it gets its
section's default call, and the test names it if that call does not reach the
allocation check. Cases run in child processes, many per child; a child that dies
names the case it was running. See Note [Allocation failures]."""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OOM = "DefaultCPUAllocator: can't allocate memory"
OVERLAP = "more than one element of the written-to tensor refers to a single memory location"

# The names every call below may use. `h` is the huge input; `v` a small operand that
# broadcasts against it; the others are huge inputs of the shapes some ops need.
IMPORTS = """
import warnings
warnings.simplefilter("ignore")
import rustgrad as torch
import rustgrad.nn.functional as F
G = 2**20
"""
TENSORS = """
h = torch.ones(1, 1).expand(G, G)                      # 2**40 elements
h1 = torch.ones(1).expand(2**40)                       # the same in 1-D
hr = torch.ones(1, 1, 1).expand(G, G, 2)               # reducing dim -1 keeps 2**40
h3 = torch.ones(1, 1, 1).expand(2, 2**19, G)           # (N, C, L)
h4 = torch.ones(1, 1, 1, 1).expand(2, 2**19, 2**10, 2**10)  # (N, C, H, W)
h5 = torch.ones(1, 1, 1, 1, 1).expand(2, 2**19, 1, 2**10, 2**10)  # (N, C, D, H, W)
hcol = torch.ones(1, 1).expand(G, 1)                   # hcol @ hrow has 2**40 elements
hrow = torch.ones(1, 1).expand(1, G)
hb = torch.ones(1, 1, dtype=torch.bool).expand(G, G)
hl = torch.zeros(1, 1, dtype=torch.int64).expand(G, G)
hl1 = torch.zeros(1, dtype=torch.int64).expand(2**40)
v = torch.ones(G)
vb = torch.ones(G, dtype=torch.bool)
vl = torch.ones(G, dtype=torch.int64)
hd = torch.ones(1, 1, dtype=torch.float64).expand(G, G)
i0 = torch.tensor([0])
zl = torch.zeros(2, G, dtype=torch.int64)
x1 = torch.ones(1, requires_grad=True)
"""


# Every case starts from fresh tensors (an in-place view op such as `unsqueeze_` changes
# `h` itself).
def _prelude(tensors: str) -> str:
    names = ", ".join(re.findall(r"^(\w+) =", tensors, re.M))
    body = "".join(f"    {line}\n" for line in tensors.strip().splitlines())
    return IMPORTS + f"def _fresh():\n    global {names}\n" + body


PRELUDE = _prelude(TENSORS)
# The same with float leaves that require grad: recording the backward builds index
# maps and saves tensors of the huge size too.
GRAD_PRELUDE = _prelude(
    re.sub(r"torch\.ones\(([\d, ]+|G)\)", r"torch.ones(\1, requires_grad=True)", TENSORS)
)

# Calls by op name (binding ops: `{x}` is the op's name) or by form (Python-level ops and
# factories). An op of the doc not listed here gets its section's DEFAULTS entry.
DEFAULTS = {
    "binary": "h.{x}(v)",
    "copy": "h.{x}()",
    "forms": "h.{x}(1)",
    "index": "h.{x}()",
    "inplace": "h.{x}(v)",
    "linalg": "hcol.{x}(hrow)",
    "logical": "h.{x}()",
    "reduce": "hr.{x}(-1)",
    "shape": "h.{x}()",
    "ternary": "h.{x}(v, v)",
    "unary": "h.{x}()",
    "python-level ops": "{x}(h)",
    "factories": "{x}(2**40)",
    # Functions over dtypes: a huge view's dtype is read, nothing is allocated.
    "type promotion": "torch.{x}(h, v)",
}

CALLS = {
    # binary: the in-place forms write into the huge view (PyTorch's overlap error)
    "xlogy_": "h.xlogy_(v)",
    "float_power_": "hd.float_power_(v)",
    # index
    "__getitem__": "h1[hl]",
    "__setitem__": "h[0] = 1",
    "index_select": "h1.index_select(0, hl1)",
    # type promotion: over dtypes
    "promote_types": "torch.promote_types(h.dtype, v.dtype)",
    "can_cast": "torch.can_cast(h.dtype, v.dtype)",
    "gather": "h.gather(1, hl)",
    "scatter": "h.scatter(1, hl, 1.0)",
    "scatter_": "h.scatter_(1, hl, 1.0)",
    "scatter_add": "h.scatter_add(1, hl, h)",
    "scatter_add_": "h.scatter_add_(1, hl, h)",
    "scatter_reduce": "h.scatter_reduce(1, hl, h, 'sum')",
    "scatter_reduce_": "h.scatter_reduce_(1, hl, h, 'sum')",
    "index_add": "h.index_add(0, i0, v[None])",
    "index_add_": "h.index_add_(0, i0, v[None])",
    "index_fill": "h.index_fill(0, i0, 2.0)",
    "index_fill_": "h.index_fill_(0, i0, 2.0)",
    "masked_fill": "h.masked_fill(hb, 2.0)",
    "masked_fill_": "h.masked_fill_(hb, 2.0)",
    "index_copy": "h.index_copy(0, i0, v[None])",
    "index_copy_": "h.index_copy_(0, i0, v[None])",
    "masked_scatter": "h.masked_scatter(hb, h)",
    "masked_scatter_": "h.masked_scatter_(hb, h)",
    "put": "h.put(hl1, h1)",
    "put_": "h.put_(hl1, h1)",
    "fill_diagonal_": "h.fill_diagonal_(2.0)",
    "masked_select": "h.masked_select(hb)",
    "take": "h.take(hl)",
    "index_put_": "h.index_put_((i0,), v)",
    "as_strided": "h.as_strided((G, G), (0, 0))",
    "as_strided_": "h.as_strided_((G, G), (0, 0))",
    "nonzero": "h.nonzero()",
    # in place
    "zero_": "h.zero_()",
    "fill_": "h.fill_(2.0)",
    "copy_": "h.copy_(v)",
    "relu_": "h.relu_()",
    # linear algebra: results of 2**40 elements from small inner sizes
    "bmm": "hcol[None].bmm(hrow[None])",
    "mv": "torch.ones(1, 1).expand(2**40, 1).mv(torch.ones(1))",
    "dot": "h1.dot(h1.double())",
    "outer": "h1.outer(torch.ones(2))",
    "addmm": "h.addmm(hcol, hrow)",
    "addmm_": "h.addmm_(hcol, hrow)",
    "addmv": "h1.addmv(torch.ones(1, 1).expand(2**40, 1), torch.ones(1))",
    "addmv_": "h1.addmv_(torch.ones(1, 1).expand(2**40, 1), torch.ones(1))",
    "baddbmm": "h[None].baddbmm(hcol[None], hrow[None])",
    "baddbmm_": "h[None].baddbmm_(hcol[None], hrow[None])",
    "addbmm": "h.addbmm(hcol[None], hrow[None])",
    "addbmm_": "h.addbmm_(hcol[None], hrow[None])",
    # logical
    **{
        x: f"hb.{x}(vb)"
        for x in ["logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or"]
    },
    **{f"{x}_": f"hb.{x}_(vb)" for x in ["logical_and", "logical_or", "logical_xor"]},
    **{f"{x}_": f"hb.{x}_(vb)" for x in ["bitwise_and", "bitwise_or", "bitwise_xor"]},
    "bitwise_xor": "hb.bitwise_xor(vb)",
    "bitwise_not": "hb.bitwise_not()",
    "bitwise_not_": "hb.bitwise_not_()",
    **{f"{x}_": f"h.{x}_(v)" for x in ["eq", "ne", "lt", "le", "gt", "ge"]},
    # reductions along the last dim of `hr`: a result of 2**40 elements
    "max": "hr.max(-1)",
    "min": "hr.min(-1)",
    "norm": "hr.norm(dim=-1)",
    "topk": "hr.topk(1)",
    "sort": "hr.sort()",
    "argsort": "hr.argsort()",
    "unique": "h.unique()",
    "count_nonzero": "hr.count_nonzero(-1)",
    # shape: views succeed; copies are refused
    "view": "h.view(G, G)",
    "reshape": "h.reshape(-1)",
    "transpose": "h.transpose(0, 1)",
    "permute": "h.permute(1, 0)",
    "expand": "h.expand(2, G, G)",
    "unsqueeze": "h.unsqueeze(0)",
    "squeeze_": "h.squeeze_()",
    "unsqueeze_": "h.unsqueeze_(0)",
    "transpose_": "h.transpose_(0, 1)",
    "split": "h.split(2**19, 1)",
    "split_with_sizes": "h.split_with_sizes([2**19, 2**19], 1)",
    "chunk": "h.chunk(2, 1)",
    "unbind": "hr.unbind(-1)",
    "narrow": "h.narrow(1, 0, 2**19)",
    "select": "h.select(1, 0)",
    "flip": "h.flip(0)",
    "roll": "h.roll(1, 1)",
    "repeat": "h.repeat(2, 1)",
    "tile": "h.tile(2)",
    "movedim": "h.movedim(0, 1)",
    "moveaxis": "h.moveaxis(0, 1)",
    "unfold": "h.unfold(1, 2, 1)",
    "repeat_interleave": "h.repeat_interleave(2)",
    # ternary
    "clamp": "h.clamp(0, 1)",
    "clip": "h.clip(0, 1)",
    "clamp_": "h.clamp_(0, 1)",
    "clip_": "h.clip_(0, 1)",
    "lerp": "h.lerp(v, 0.5)",
    "lerp_": "h.lerp_(v, 0.5)",
    "where": "h.where(hb, v)",
    # unary with arguments
    "pow_": "h.pow_(2)",
    "clamp_min": "h.clamp_min(0)",
    "clamp_max": "h.clamp_max(0)",
    "clamp_min_": "h.clamp_min_(0)",
    "clamp_max_": "h.clamp_max_(0)",
    # Python-level ops, by form
    "torch.cat": "torch.cat([h, h])",
    "torch.concat": "torch.concat([h, v[None]])",
    "torch.concatenate": "torch.concatenate([v[None], h])",
    "torch.stack": "torch.stack([h, h])",
    "torch.hstack": "torch.hstack([h, h])",
    "torch.vstack": "torch.vstack([h, v])",
    "torch.meshgrid": "torch.meshgrid(v, v, indexing='ij')",
    "torch.broadcast_to": "torch.broadcast_to(v, (G, G))",
    "t.broadcast_to": "v.broadcast_to((G, G))",
    "torch.swapaxes": "torch.swapaxes(h, 0, 1)",
    "t.swapaxes": "h.swapaxes(0, 1)",
    "torch.swapdims": "torch.swapdims(h, 0, 1)",
    "t.swapdims": "h.swapdims(0, 1)",
    "t.T": "h.T",
    "t.mT": "h.mT",
    "t.expand_as": "v.expand_as(h)",
    "t.view_as": "h.view_as(h)",
    "t.reshape_as": "h.reshape_as(h1)",
    "torch.unflatten": "torch.unflatten(h1, 0, (G, G))",
    "t.unflatten": "h1.unflatten(0, (G, G))",
    "torch.take_along_dim": "torch.take_along_dim(h, hl, 1)",
    "t.take_along_dim": "h.take_along_dim(hl, 1)",
    "t.index_put": "h.index_put((i0,), v)",
    "torch.tensor_split": "torch.tensor_split(h, 2, 1)",
    "t.tensor_split": "h.tensor_split([1], 1)",
    "torch.hsplit": "torch.hsplit(h, [1])",
    "t.hsplit": "h.hsplit([1])",
    "torch.vsplit": "torch.vsplit(h, [1])",
    "t.vsplit": "h.vsplit([1])",
    "torch.dsplit": "torch.dsplit(hr, [1])",
    "torch.var_mean": "torch.var_mean(hr, -1)",
    "torch.std_mean": "torch.std_mean(hr, -1)",
    "torch.einsum": "torch.einsum('ij,jk->ik', hcol, hrow)",
    "torch.tensordot": "torch.tensordot(hcol, hrow, ([1], [0]))",
    "torch.linalg.vector_norm": "torch.linalg.vector_norm(hr, dim=-1)",
    "torch.linalg.matrix_norm": (
        "torch.linalg.matrix_norm(torch.ones(1, 1, 1, 1).expand(G, G, 1, 1))"
    ),
    "torch.linalg.norm": "torch.linalg.norm(hr, dim=-1)",
    "F.softmax": "F.softmax(h, 1)",
    "F.softmin": "F.softmin(h, 1)",
    "F.log_softmax": "F.log_softmax(h, 1)",
    "F.pad": "F.pad(h, (1, 2))",
    "F.interpolate": "F.interpolate(h3, None, 2.0)",
    "F.grid_sample": "F.grid_sample(h4, torch.zeros(2, 1, 1, 2), 'bilinear', 'zeros', False)",
    "F.affine_grid": "F.affine_grid(torch.zeros(1, 2, 3), (1, 1, 1, 2**40), False)",
    "F.dropout1d": "F.dropout1d(h3)",
    "F.dropout2d": "F.dropout2d(h4)",
    "F.dropout3d": "F.dropout3d(h5)",
    "F.alpha_dropout": "F.alpha_dropout(h, 0.5, True)",
    "F.feature_alpha_dropout": "F.feature_alpha_dropout(h3, 0.5, True)",
    "F.glu": "F.glu(hr, -1)",
    "F.threshold": "F.threshold(h, 0.5, 0.0)",
    "F.prelu": "F.prelu(h, torch.ones(1))",
    "F.embedding": "F.embedding(hl, torch.ones(2, 3))",
    "F.embedding_bag": "F.embedding_bag(hl1[None], torch.ones(2, 3))",
    "F.one_hot": "F.one_hot(hl)",
    "F.cross_entropy": "F.cross_entropy(h3, zl, reduction='none')",
    "F.nll_loss": "F.nll_loss(h3, zl, reduction='none')",
    **{
        f"F.{x}": f"F.{x}(h, v, reduction='none')"
        for x in [
            "mse_loss",
            "l1_loss",
            "smooth_l1_loss",
            "huber_loss",
            "poisson_nll_loss",
        ]
    },
    "F.binary_cross_entropy": "F.binary_cross_entropy(h, h, reduction='none')",
    "F.binary_cross_entropy_with_logits": (
        "F.binary_cross_entropy_with_logits(h, h, reduction='none')"
    ),
    "F.kl_div": "F.kl_div(h, v, reduction='none')",
    "F.cosine_similarity": "F.cosine_similarity(hr, hr, -1)",
    "F.pairwise_distance": "F.pairwise_distance(hr, hr)",
    "F.cosine_embedding_loss": "F.cosine_embedding_loss(h, h, v, reduction='none')",
    "F.margin_ranking_loss": "F.margin_ranking_loss(h, h, h, reduction='none')",
    "F.triplet_margin_loss": "F.triplet_margin_loss(hr, hr, hr, reduction='none')",
    "F.conv1d": "F.conv1d(h3, torch.ones(1, 2**19, 1))",
    "F.conv2d": "F.conv2d(h4, torch.ones(1, 2**19, 1, 1))",
    "F.conv3d": "F.conv3d(h5, torch.ones(1, 2**19, 1, 1, 1))",
    "F.conv_transpose1d": "F.conv_transpose1d(h1[None, None], torch.ones(1, 1, 1))",
    "F.conv_transpose2d": "F.conv_transpose2d(h[None, None], torch.ones(1, 1, 1, 1))",
    "F.conv_transpose3d": "F.conv_transpose3d(h[None, None, None], torch.ones(1, 1, 1, 1, 1))",
    "F.linear": "F.linear(hcol, torch.ones(G, 1))",
    "F.bilinear": "F.bilinear(hcol, hcol, torch.ones(G, 1, 1))",
    "F.unfold": "F.unfold(h4, 1)",
    "F.fold": "F.fold(torch.ones(1, 1, 1).expand(1, 1, 2**40), (G, G), 1)",
    "F.pixel_shuffle": "F.pixel_shuffle(torch.ones(1, 1, 1).expand(4, G, 2**18), 2)",
    "F.pixel_unshuffle": "F.pixel_unshuffle(torch.ones(1, 1, 1).expand(1, G, G), 2)",
    "F.max_pool1d": "F.max_pool1d(h3, 1)",
    "F.max_pool2d": "F.max_pool2d(h4, 1)",
    "F.avg_pool1d": "F.avg_pool1d(h3, 1)",
    "F.avg_pool2d": "F.avg_pool2d(h4, 1)",
    "F.adaptive_avg_pool1d": "F.adaptive_avg_pool1d(h3, G)",
    "F.adaptive_avg_pool2d": "F.adaptive_avg_pool2d(h4, 2**10)",
    "F.adaptive_max_pool2d": "F.adaptive_max_pool2d(h4, 2**10)",
    "F.max_unpool2d": "F.max_unpool2d(h[None], hl[None], 1)",
    "F.max_pool3d": "F.max_pool3d(h5, 1)",
    "F.avg_pool3d": "F.avg_pool3d(h5, 1)",
    "F.adaptive_avg_pool3d": "F.adaptive_avg_pool3d(h5, (1, 2**10, 2**10))",
    "F.adaptive_max_pool1d": "F.adaptive_max_pool1d(h3, G)",
    "F.adaptive_max_pool3d": "F.adaptive_max_pool3d(h5, (1, 2**10, 2**10))",
    "F.lp_pool1d": "F.lp_pool1d(h3, 2, 1)",
    "F.lp_pool2d": "F.lp_pool2d(h4, 2, 1)",
    "F.lp_pool3d": "F.lp_pool3d(h5, 2, 1)",
    "F.max_unpool1d": "F.max_unpool1d(h[None], hl[None], 1)",
    "F.max_unpool3d": "F.max_unpool3d(h[None, None], hl[None, None], 1)",
    "F.fractional_max_pool2d": "F.fractional_max_pool2d(h4, 1, 2**10)",
    "F.fractional_max_pool3d": "F.fractional_max_pool3d(h5, 1, (1, 2**10, 2**10))",
    "F.batch_norm": "F.batch_norm(h3, None, None, None, None, True)",
    "F.layer_norm": "F.layer_norm(hr, (2,))",
    "F.group_norm": "F.group_norm(h3, 1)",
    "F.instance_norm": "F.instance_norm(h3)",
    "F.rms_norm": "F.rms_norm(hr, (2,))",
    "F.local_response_norm": "F.local_response_norm(h3, 2)",
    "F.normalize": "F.normalize(h)",
    # factories
    "torch.tensor": "torch.tensor(h)",
    "torch.full": "torch.full((2**40,), 1.0)",
    "torch.arange": "torch.arange(2**40)",
    "torch.linspace": "torch.linspace(0, 1, 2**40)",
    "torch.logspace": "torch.logspace(0, 1, 2**40)",
    "torch.eye": "torch.eye(G)",
    "torch.randint": "torch.randint(0, 10, (2**40,))",
    "torch.zeros_like": "torch.zeros_like(h)",
    "torch.ones_like": "torch.ones_like(h)",
    "torch.full_like": "torch.full_like(h, 7)",
    "torch.empty_like": "torch.empty_like(h)",
    "torch.rand_like": "torch.rand_like(h)",
    "torch.randn_like": "torch.randn_like(h)",
    "torch.randint_like": "torch.randint_like(h, 5)",
    "torch.normal": "torch.normal(0.0, 1.0, (2**40,))",
    "torch.as_tensor": "torch.as_tensor(h, dtype=torch.float64)",
}

# Cases that legitimately succeed without allocating a huge result (views, ops that
# write each distinct stored element once, results with few elements). Every other case
# must raise PyTorch's allocator error or, for a write into the huge view, its overlap
# error.
SUCCEED = {
    *"view transpose t permute expand unsqueeze squeeze squeeze_ unsqueeze_".split(),
    *"reshape flatten t.reshape_as +a fill_diagonal_".split(),
    *"transpose_ t_ split split_with_sizes chunk unbind narrow select diagonal".split(),
    *"movedim moveaxis unfold as_strided as_strided_ zero_ fill_ diag float".split(),
    *"b@a".split(),
    *"torch.meshgrid torch.broadcast_to t.broadcast_to torch.swapaxes t.swapaxes".split(),
    *"torch.swapdims t.swapdims t.T t.mT t.expand_as t.view_as torch.unflatten".split(),
    *"t.unflatten torch.tensor_split t.tensor_split torch.hsplit t.hsplit".split(),
    *"torch.vsplit t.vsplit torch.dsplit".split(),
    # Reads one pixel per channel of a huge expanded input, in place.
    "F.grid_sample",
    # Type promotion reads dtypes only.
    *"result_type promote_types can_cast".split(),
}

# Refusals with another message than the allocator's (PyTorch: "can't allocate memory").
OTHER_REFUSALS = {
    "torch.randperm": "randperm of 1099511627776 elements",
}

# More huge inputs: the 1-D view `h1`, the dropouts that once aborted, sizes that are
# huge only once broadcast, factories of 2**40 elements in 2-D.
ONE_D = [
    "h1.flip(0)",
    "h1.roll(1)",
    "h1.roll(1, 0)",
    "h1.exp()",
    "h1 + 1",
    "h1.cumsum(0)",
    "h1.sort()",
    "h1.repeat_interleave(2)",
    "h1.masked_fill(hl1 == 0, 1.0)",
    "F.dropout(h1, 0.5)",
    "F.dropout(h1, 1.0)",
    "F.dropout(h1, 0.5, inplace=True)",
    "F.alpha_dropout(h1, 0.5, True)",
    "F.feature_alpha_dropout(h, 0.5, True)",
    "F.feature_alpha_dropout(h3, 0.5, True)",
    "F.dropout1d(h, 0.5)",
    "F.dropout2d(h3, 0.5)",
    "F.rrelu(h, training=True)",
    "F.rrelu(h1)",
    "F.rrelu_(h1, training=True)",
    "torch.zeros(G, G)",
    "torch.ones(G, G, dtype=torch.bool)",
    "torch.full((G, G), 2)",
    "torch.rand(G, G)",
    "torch.bernoulli(h)",
    "h.bernoulli_()",
    "h.uniform_()",
    "h.normal_()",
    "torch.multinomial(torch.ones(2), 2**40, True)",
    "F.affine_grid(torch.zeros(1, 2, 3), (1, 1, G, G), False)",
    "F.affine_grid(torch.zeros(1, 3, 4), (1, 1, 1, G, G), True)",
    "F.grid_sample(torch.ones(1, 1, 1, 1), torch.zeros(1, 1, 1, 2).expand(1, G, G, 2))",
    "F.interpolate(torch.ones(1, 1, 1), size=2**40)",
    "F.interpolate(torch.ones(1, 1, 1, 1), size=(G, G), mode='bilinear')",
    "F.pad(torch.ones(1, 1), (2**40, 0))",
    "F.pad(torch.ones(1, 1, 1).expand(1, G, G), (G - 1, G - 1), mode='reflect')",
    "F.one_hot(torch.tensor([2**40 - 1]))",
    "torch.ones(1).expand(G, G) * torch.ones(1, 1)",
    "torch.ones(G, 1) * torch.ones(1, G)",
    "v[:, None] + v",
    "torch.where(hb, 1.0, 0.0)",
    "hcol - hrow",
    # Index tables of a huge dim that is not the indexed one.
    "torch.ones(1, 1).expand(2**40, 1).index_select(1, i0)",
    "torch.ones(1, 1).expand(2**40, 1).index_add(1, i0, torch.ones(1, 1).expand(2**40, 1))",
    # Recording a backward: the map of an as_strided view of a huge input.
    "torch.ones(1, requires_grad=True).expand(2**40).as_strided((3,), (0,))",
    # Backward through a small piece of a huge view: the gradient of the view is
    # huge (zeros with the piece written in), as in PyTorch.
    "x1.expand(2**40)[:: 2**20].sum().backward()",
    "x1.expand(G, G)[3].sum().backward()",
    "x1.expand(G, G).diag().sum().backward()",
    "x1.expand(2**40).unfold(0, 2, 2**39).sum().backward()",
    "x1.expand(G, G).gather(1, torch.zeros(2, 1, dtype=torch.int64)).sum().backward()",
    "x1.expand(G, G)[:, [0, 1]].sum().backward()",
    "x1.expand(2**40).split(2**39)[0][:3].sum().backward()",
    "x1.expand(G, G)[:2].max().backward()",
    "torch.autograd.grad(x1.expand(2**40)[:3].sum(), x1)",
]


def _doc_cases() -> dict[str, str]:
    """case id -> call, for every op row and operator of docs/ops.md."""
    cases: dict[str, str] = {}
    section = None
    for line in (ROOT / "docs" / "ops.md").read_text().splitlines():
        if line.startswith("## "):
            section = line[3:]
            continue
        if section == "module functions":
            # The binding's kernels behind nn.functional: the sweep reaches them through
            # their Python forms, the python-level rows.
            continue
        m = re.match(r"\| (\w+) \| ([^|]+) \|", line)
        if m and m.group(1) != "op":
            name, forms = m.group(1), re.findall(r"`([^`]+)`", m.group(2))
            if section in ("python-level ops", "factories"):
                for form in forms:
                    cases[form] = CALLS.get(form, DEFAULTS[section].format(x=form))
            else:
                cases[name] = CALLS.get(name, DEFAULTS[section].format(x=name))
                if section == "binary" and not name.endswith("_"):
                    # Only the second operand huge.
                    cases[f"{name}(v, h)"] = f"v.{name}(h)"
        elif line.startswith("Operators: "):
            for op in re.findall(r"`([^`]+)`", line):
                cases[op.replace(" ", "")] = _operator_call(section, op)
    return cases


def _operator_call(section: str | None, op: str) -> str:
    """A Python operator of the doc (`a + b`, `n // a`, `a &= b`, `-a`) on huge operands."""
    a, b = {
        "linalg": ("hcol", "hrow"),
        "logical": ("hb", "vb"),
    }.get(section or "", ("h", "v"))
    if re.fullmatch(r"a \S+= b", op):
        # An augmented assignment: on a new name, so `h` stays the huge view.
        return f"_a = {a}\n{op.replace('a', '_a', 1).replace('b', b)}"
    return re.sub(r"\bn\b", "2", re.sub(r"\bb\b", b, re.sub(r"\ba\b", a, op)))


def _is_expression(call: str) -> bool:
    try:
        compile(call, "<case>", "eval")
    except SyntaxError:
        return False
    return True


def _child(cases: list[tuple[str, str]], timeout: float, prelude: str) -> dict[str, str]:
    """Runs `cases` in one child process, in order: case id -> 'ok', 'exc Type: msg',
    'died rc=...' (the case the child was running when it ended) or 'hung'. Cases after
    a death or a hang are left out."""
    body = [prelude]
    for key, call in cases:
        stmt = f"_r = {call}" if _is_expression(call) else call
        stmt = stmt.replace("\n", "\n    ")
        body.append(
            "_fresh()\n"
            f"print('start', {key!r}, sep='\\t', flush=True)\n"
            f"try:\n    {stmt}\n    print('ok', {key!r}, sep='\\t', flush=True)\n"
            f"except Exception as e:\n"
            f"    print('exc', {key!r}, type(e).__name__ + ': ' + (str(e).splitlines() or [''])[0],"
            f" sep='\\t', flush=True)\n"
            "_r = _a = None\n"
        )
    with (
        tempfile.TemporaryFile("w+") as err,
        subprocess.Popen(
            [sys.executable, "-c", "\n".join(body)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            cwd=ROOT,
        ) as proc,
    ):
        lines: queue.Queue = queue.Queue()

        def pump() -> None:
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        out: dict[str, str] = {}
        running = None
        while True:
            try:
                line = lines.get(timeout=timeout)
            except queue.Empty:
                proc.kill()
                if running is not None:
                    out[running] = "hung"
                return out
            if line is None:
                break
            kind, key, *msg = line.rstrip("\n").split("\t", 2)
            if kind == "start":
                running = key
            elif kind == "ok":
                out[key] = "ok"
                running = None
            elif kind == "exc":
                out[key] = "exc " + msg[0]
                running = None
        rc = proc.wait()
        if running is not None:
            err.seek(0)
            text = err.read().strip().splitlines() or [""]
            why = next((t for t in text if re.search("memory allocation|panicked", t)), text[0])
            out[running] = f"died rc={rc}: {why}"
    return out


def _run_all(
    cases: dict[str, str], batch: int = 60, timeout: float = 30.0, prelude: str = PRELUDE
) -> dict[str, str]:
    """Outcome per case id: batches of cases per child; after a child dies or hangs, the
    case it was running is re-run alone (to name it without doubt) and the rest of its
    batch continues in a new child."""
    results: dict[str, str] = {}
    items = list(cases.items())
    while items:
        chunk, items = items[:batch], items[batch:]
        while chunk:
            out = _child(chunk, timeout, prelude)
            results.update(out)
            done = [k for k, _ in chunk if k in out]
            bad = [k for k in done if out[k].startswith(("died", "hung"))]
            for key in bad:
                alone = _child([(key, cases[key])], timeout, prelude)
                results[key] = alone.get(key, "died (alone)")
            chunk = [(k, c) for k, c in chunk if k not in out]
            if chunk and not bad:
                # The child ended without starting the rest: an interpreter failure.
                results.update({k: "not run" for k, _ in chunk})
                break
    return results


def _refused(outcome: str) -> bool:
    """PyTorch's allocator error, or its overlap error for a write into the huge view."""
    return outcome.startswith("exc RuntimeError") and (OOM in outcome or OVERLAP in outcome)


def _bad(outcome: str) -> bool:
    return (
        not outcome.startswith(("ok", "exc"))
        or "PanicException" in outcome
        or "internal error" in outcome
    )


@pytest.fixture(scope="module")
def doc_results() -> tuple[dict[str, str], dict[str, str]]:
    cases = _doc_cases()
    return cases, _run_all(cases)


def test_the_sweep_covers_every_op_of_the_doc(doc_results):
    cases, results = doc_results
    text = (ROOT / "docs" / "ops.md").read_text()
    rows = re.findall(r"^\| (\w+) \|", text, re.M)
    assert len([r for r in rows if r != "op"]) >= 400
    for name in ["dropout1d", "flip", "roll", "affine_grid", "zeros", "matmul", "sum"]:
        assert any(k == name or k.endswith("." + name) for k in cases), name
    assert set(results) == set(cases)


def test_no_op_aborts_on_a_huge_view(doc_results):
    cases, results = doc_results
    crashed = {k: results[k] for k in cases if _bad(results[k])}
    assert not crashed, "\n".join(f"{k}: {cases[k]} -> {o}" for k, o in crashed.items())


def test_every_op_refuses_a_huge_result_with_the_allocator_error(doc_results):
    """Not just any exception: the op reached the allocation check (a shape error would
    mean the call no longer exercises a huge result: fix its CALLS entry)."""
    cases, results = doc_results
    wrong = {}
    for key, outcome in results.items():
        if _bad(outcome):
            continue
        if key in SUCCEED:
            ok = outcome == "ok"
        elif key in OTHER_REFUSALS:
            ok = outcome.startswith("exc RuntimeError") and OTHER_REFUSALS[key] in outcome
        else:
            ok = _refused(outcome)
        if not ok:
            wrong[key] = outcome
    assert not wrong, "\n".join(f"{k}: {cases[k]} -> {o}" for k, o in wrong.items())


def test_no_op_aborts_on_a_huge_view_that_requires_grad():
    """The sweep again on leaves that require grad (any ordinary exception is fine: an
    in-place write into a view of such a leaf is refused before anything else)."""
    cases = _doc_cases()
    results = _run_all(cases, prelude=GRAD_PRELUDE)
    crashed = {k: results[k] for k in cases if _bad(results[k])}
    assert not crashed, "\n".join(f"{k}: {cases[k]} -> {o}" for k, o in crashed.items())


@pytest.mark.parametrize("dtype", ["float16", "int64"])
def test_no_op_aborts_on_a_huge_view_of_another_dtype(dtype):
    """The sweep on half and integer inputs (their kernels convert or dispatch on other
    paths); any ordinary exception is fine."""
    tensors = re.sub(
        r"torch\.ones\(([\d, ]+|G)\)", rf"torch.ones(\1, dtype=torch.{dtype})", TENSORS
    )
    cases = _doc_cases()
    results = _run_all(cases, prelude=_prelude(tensors))
    crashed = {k: results[k] for k in cases if _bad(results[k])}
    assert not crashed, "\n".join(f"{k}: {cases[k]} -> {o}" for k, o in crashed.items())


def test_more_huge_inputs_are_refused_with_the_allocator_error():
    results = _run_all({call: call for call in ONE_D})
    wrong = {k: o for k, o in results.items() if not _refused(o)}
    assert not wrong, "\n".join(f"{k} -> {o}" for k, o in wrong.items())


def test_small_reads_of_a_huge_view_are_correct():
    """Ops that read a few places of a huge view return PyTorch's result (values from
    PyTorch 2.15 on the same calls) without materialising it."""
    code = IMPORTS + textwrap.dedent(
        """
        h = torch.arange(3.0).reshape(3, 1).expand(3, 2**40)
        assert h.diag().tolist() == [0.0, 1.0, 2.0]
        assert h[:, [5, 2**40 - 1]].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
        assert h.gather(1, torch.tensor([[0], [9], [2**40 - 1]])).flatten().tolist() == [
            0.0, 1.0, 2.0
        ]
        x = torch.arange(4.0).reshape(1, 1, 2, 2).expand(2, G, 2, 2)
        g = F.grid_sample(x, torch.zeros(2, 1, 1, 2), "bilinear", "zeros", False)
        assert g.shape == (2, G, 1, 1) and g[1, -3:].flatten().tolist() == [1.5, 1.5, 1.5]
        print("fine")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout.strip() == "fine", proc.stderr[-2000:]


def test_a_dead_child_is_named():
    """The harness itself: an abort in the middle of a batch names that case and the
    rest still run."""
    cases = {
        "fine": "1 + 1",
        "abort": "__import__('os').abort()",
        "after": "torch.ones(1).expand(2**40).exp()",
    }
    results = _run_all(cases, batch=3)
    assert results["fine"] == "ok"
    assert results["abort"].startswith("died")
    assert results["after"].startswith("exc RuntimeError") and OOM in results["after"]
