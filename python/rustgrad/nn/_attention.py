"""``scaled_dot_product_attention`` of ``rustgrad.nn.functional``, with PyTorch's
signature, checks and messages: one fused Rust node
(``crates/engine/src/ops/attention.rs``: tiles over keys with an online softmax, memory
linear in the sequence length, dropout drawn inside the kernel; grad_fn
``ScaledDotProductFlashAttentionForCpuBackward0`` as PyTorch's CPU kernel). Also
``multi_head_attention_forward``, PyTorch's ``MultiheadAttention`` computation. See Note
[Fused attention].
"""

from __future__ import annotations

import builtins
from typing import Any

from .. import _rustgrad
from .._rustgrad import Tensor

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: builtins.float = 0.0,
    is_causal: builtins.bool = False,
    scale: builtins.float | None = None,
    enable_gqa: builtins.bool = False,
) -> Tensor:
    """``softmax(query @ key.mT * scale + mask) @ value`` over ``(..., L, E)``,
    ``(..., S, E)`` and ``(..., S, Ev)``, the leading dims broadcast. ``attn_mask`` is
    bool (True takes part in attention) or of the query's dtype (added to the scores);
    ``is_causal`` keeps the keys ``j <= i`` for query ``i``; ``scale`` defaults to
    ``1 / sqrt(E)``; ``enable_gqa`` lets ``key``/``value`` have fewer heads (dim -3),
    each shared by ``Hq / Hk`` query heads. A query row that sees no key gives zeros.

    Example:
        >>> import rustgrad
        >>> import rustgrad.nn.functional as F
        >>> q = rustgrad.ones(1, 2, 4)
        >>> F.scaled_dot_product_attention(q, q, q).shape
        torch.Size([1, 2, 4])
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"scaled_dot_product_attention(): argument '{name}' (position "
                f"{('query', 'key', 'value').index(name) + 1}) must be Tensor, not "
                f"{type(t).__name__}"
            )
    if attn_mask is not None and not isinstance(attn_mask, Tensor):
        raise TypeError(
            "scaled_dot_product_attention(): argument 'attn_mask' must be Tensor, not "
            f"{type(attn_mask).__name__}"
        )
    dropout_p = builtins.float(dropout_p)
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if scale is not None:
        scale = builtins.float(scale)
    return _rustgrad._scaled_dot_product_attention(
        query,
        key,
        value,
        attn_mask,
        dropout_p,
        builtins.bool(is_causal),
        scale,
        builtins.bool(enable_gqa),
    )


def _none_or_dtype(mask: Tensor | None) -> Any:
    """The mask's dtype, or None."""
    return None if mask is None else mask.dtype


def _canonical_mask(
    mask: Tensor | None,
    mask_name: str,
    other_type: Any,
    other_name: str,
    target_type: Any,
    check_other: builtins.bool = True,
) -> Tensor | None:
    """A bool mask as an additive float mask of ``target_type`` (True: ``-inf``); a
    float mask as it is. PyTorch's warning when the two masks' types differ."""
    import warnings

    import rustgrad

    if mask is None:
        return None
    if mask.dtype != rustgrad.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(
            f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same "
            "type for both instead.",
            stacklevel=3,
        )
    if not mask.is_floating_point():
        mask = rustgrad.zeros_like(mask, dtype=target_type).masked_fill_(mask, float("-inf"))
    return mask


def _mha_shape_check(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    key_padding_mask: Tensor | None,
    attn_mask: Tensor | None,
    num_heads: int,
) -> builtins.bool:
    """Whether the input is batched (3-D query), with PyTorch's shape assertions."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(
                "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(
                "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                f"found {attn_mask.dim()}-D tensor instead"
            )
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                f"{key.dim()}-D and {value.dim()}-D tensors respectively"
            )
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(
                "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D "
                f"but found {key_padding_mask.dim()}-D tensor instead"
            )
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(
                    "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or "
                    f"3-D but found {attn_mask.dim()}-D tensor instead"
                )
            if attn_mask.dim() == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(
                        f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}"
                    )
        return False
    raise AssertionError(
        "query should be unbatched 2D or batched 3D tensor but received "
        f"{query.dim()}-D query tensor"
    )


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: builtins.bool,
    dropout_p: builtins.float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: builtins.bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: builtins.bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: builtins.bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: builtins.bool = True,
    is_causal: builtins.bool = False,
) -> tuple[Tensor, Tensor | None]:
    """PyTorch's ``F.multi_head_attention_forward`` on sequence-first ``(L, N, E)``
    (or unbatched ``(L, E)``) inputs: in-projection, optional ``bias_k``/``bias_v`` and
    zero-attention column, the merged masks, attention (the fused kernel when the
    weights are not needed), out-projection. Returns ``(output, weights or None)``.
    """
    import math

    import rustgrad

    from . import functional as F  # noqa: N812

    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]
    key_padding_mask = _canonical_mask(
        key_padding_mask, "key_padding_mask", _none_or_dtype(attn_mask), "attn_mask", query.dtype
    )
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer "
            "module method `generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        # The fused kernel applies the causal mask itself.
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        if key_padding_mask is not None:
            is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(
            f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}"
        )
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                f"{value.shape[:2]}"
            )
    elif key.shape != value.shape:
        raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
    # In-projection.
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:
            q, k, v = F.linear(query, in_proj_weight, in_proj_bias).chunk(3, dim=-1)
        else:
            w_q, w_k, w_v = in_proj_weight.chunk(3)
            b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
            q = F.linear(query, w_q, b_q)
            k = F.linear(key, w_k, b_k)
            v = F.linear(value, w_v, b_v)
    else:
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(
                    f"use_separate_proj_weight is True but {name}_proj_weight is None"
                )
        b_q, b_k, b_v = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
        q = F.linear(query, q_proj_weight, b_q)
        k = F.linear(key, k_proj_weight, b_k)
        v = F.linear(value, v_proj_weight, b_v)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                    f"{(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                    f"{(bsz * num_heads, tgt_len, src_len)}."
                )
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None and bias_v is not None:
        if static_k is not None:
            raise AssertionError("bias cannot be added to static key.")
        if static_v is not None:
            raise AssertionError("bias cannot be added to static value.")
        k = rustgrad.cat([k, bias_k.repeat(1, bsz, 1)])
        v = rustgrad.cat([v, bias_v.repeat(1, bsz, 1)])
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    elif bias_k is not None:
        raise AssertionError("bias_k is set but bias_v is None")
    elif bias_v is not None:
        raise AssertionError("bias_v is set but bias_k is None")
    # Heads into the batch: (N * H, L, head_dim).
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k.shape[0], bsz * num_heads, head_dim) if static_k is None else static_k
    v = v.reshape(v.shape[0], bsz * num_heads, head_dim) if static_v is None else static_v
    if static_k is None:
        k = k.transpose(0, 1)
    if static_v is None:
        v = v.transpose(0, 1)
    if add_zero_attn:
        zeros = rustgrad.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype)
        k = rustgrad.cat([k, zeros], dim=1)
        v = rustgrad.cat([v, zeros.to(v.dtype)], dim=1)
        if attn_mask is not None:
            attn_mask = F.pad(attn_mask, (0, 1))
        if key_padding_mask is not None:
            key_padding_mask = F.pad(key_padding_mask, (0, 1))
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(
                f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                f"{key_padding_mask.shape}"
            )
        key_padding_mask = (
            key_padding_mask.view(bsz, 1, 1, src_len)
            .expand(-1, num_heads, -1, -1)
            .reshape(bsz * num_heads, 1, src_len)
        )
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        q_scaled = q * math.sqrt(1.0 / builtins.float(q.shape[-1]))
        scores = q_scaled @ k.transpose(-2, -1)
        if attn_mask is not None:
            scores = attn_mask + scores
        weights = F.softmax(scores, dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        out = (weights @ v).transpose(0, 1).contiguous().view(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(dim=1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights
    if attn_mask is not None:
        if attn_mask.shape[0] == 1 and attn_mask.dim() == 3:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
    q = q.view(bsz, num_heads, tgt_len, head_dim)
    k = k.view(bsz, num_heads, src_len, head_dim)
    v = v.view(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).contiguous().view(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None
