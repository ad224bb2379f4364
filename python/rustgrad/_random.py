"""``Tensor.uniform_`` and ``Tensor.normal_``: in-place sampling with PyTorch's numbers.

The native functions draw from the given ``Generator`` (or the default one) in
PyTorch's order and write through the engine's in-place path: a leaf that requires
grad is refused, and the version counter is bumped once.
"""

from __future__ import annotations

import operator
from typing import Any

from . import _rustgrad
from ._rustgrad import Generator, Tensor


def _uniform_(
    self: Tensor,
    from_: float = 0.0,
    to: float = 1.0,
    *,
    generator: Generator | None = None,
    **kwargs: Any,
) -> Tensor:
    """Fills with samples uniform in ``[from, to)``, in place.

    Args:
        from_: lower bound (also accepted as the keyword ``from``).
        to: upper bound (exclusive).
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(3).uniform_(-1, 1)
        tensor([-0.0075,  0.5364, -0.8230])
    """
    from_ = kwargs.pop("from", from_)
    if kwargs:
        raise TypeError(f"uniform_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    _rustgrad._uniform_(self, float(from_), float(to), generator)
    return self


def _normal_(
    self: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fills with normal samples of mean ``mean`` and standard deviation ``std``, in place.

    Args:
        mean: the mean.
        std: the standard deviation (>= 0).
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(2).normal_(0, 1)
        tensor([ 1.5410, -0.2934])
    """
    _rustgrad._normal_(self, float(mean), float(std), generator)
    return self


Tensor.uniform_ = _uniform_  # type: ignore[attr-defined]
Tensor.normal_ = _normal_  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------
# The other samplers (Note [Random samplers]): random_, bernoulli_, exponential_,
# geometric_, log_normal_, cauchy_, and the functions bernoulli, multinomial, normal,
# randint_like, rand_like, randn_like.
# ---------------------------------------------------------------------------


def _int_arg(name: str, value: Any) -> int:
    """An int argument of ``random_``; floats and bools are refused as PyTorch does."""
    if isinstance(value, (bool, float)) or not hasattr(value, "__index__"):
        raise TypeError(
            "random_() received an invalid combination of arguments - "
            f"argument '{name}' must be int, not {type(value).__name__}"
        )
    return operator.index(value)


def _random_(self: Tensor, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Tensor:
    """Fills with random integers, in place: ``random_()``, ``random_(to)`` or
    ``random_(from, to=None)``.

    ``random_()`` draws over the dtype's range (``[0, 2^mantissa]`` for floats, ``[0,
    2^63)`` for int64, ``{False, True}`` for bool); ``random_(to)`` over ``[0, to)``;
    ``random_(from, to)`` over ``[from, to)``, and ``to=None`` up to the dtype's
    largest value. The numbers are PyTorch's for the same seed.

    Args:
        from: lower bound (inclusive).
        to: upper bound (exclusive); None for the dtype's largest value (inclusive).
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(4, dtype=torch.int64).random_(10)
        tensor([4, 9, 3, 0])
    """
    unknown = set(kwargs) - {"from", "to"}
    if unknown or len(args) > 2:
        what = f"unexpected keyword argument '{unknown.pop()}'" if unknown else "too many arguments"
        raise TypeError(f"random_() got an {what}" if unknown else f"random_(): {what}")
    if not args and not kwargs:
        _rustgrad._random_(self, None, None, generator)
        return self
    if len(args) == 1 and not kwargs:
        to = _int_arg("to", args[0])
        _rustgrad._random_(self, 0, to, generator)
        return self
    params = dict(zip(("from", "to"), args))
    for key, value in kwargs.items():
        if key in params:
            raise TypeError(f"random_() got multiple values for argument '{key}'")
        params[key] = value
    if "from" not in params:
        raise TypeError("random_() missing required argument 'from'")
    from_ = _int_arg("from", params["from"])
    to_value = params.get("to")
    to_opt = None if to_value is None else _int_arg("to", to_value)
    _rustgrad._random_(self, from_, to_opt, generator)
    return self


def _bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Sets each element to 1 with probability ``p`` (a number or a tensor broadcast to
    this tensor's shape), else 0, in place.

    Args:
        p: the probability, in [0, 1].
        generator: the generator to draw from; the default one when None.

    Returns:
        this tensor.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(4).bernoulli_(0.5)
        tensor([0., 0., 1., 0.])
    """
    if not isinstance(p, Tensor):
        p = float(p)
    return _rustgrad._bernoulli_(self, p, generator)


def _exponential_(
    self: Tensor, lambd: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fills with samples of the exponential distribution of rate ``lambd``, in place.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(2, dtype=torch.float64).exponential_(2.0)
        tensor([1.7542, 0.6152], dtype=torch.float64)
    """
    return _rustgrad._exponential_(self, float(lambd), generator)


def _geometric_(self: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    """Fills with the number of Bernoulli(``p``) trials up to the first success, in place.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.zeros(4).geometric_(0.3)
        tensor([1., 1., 3., 1.])
    """
    return _rustgrad._geometric_(self, float(p), generator)


def _log_normal_(
    self: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None
) -> Tensor:
    """Fills with ``exp`` of normal samples of mean ``mean`` and std ``std``, in place."""
    return _rustgrad._log_normal_(self, float(mean), float(std), generator)


def _cauchy_(
    self: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None
) -> Tensor:
    """Fills with samples of the Cauchy distribution, in place."""
    return _rustgrad._cauchy_(self, float(median), float(sigma), generator)


def bernoulli(
    input: Tensor,
    p: float | None = None,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Bernoulli samples: element ``i`` is 1 with probability ``input[i]`` (or ``p``
    for every element when given), in ``input``'s dtype and shape.

    Args:
        input: the probabilities (a float tensor), or the template when ``p`` is given.
        p: one probability for every element.
        generator: the generator to draw from; the default one when None.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.bernoulli(torch.tensor([0.0, 1.0, 0.5]))
        tensor([0., 1., 1.])
    """
    if p is None:
        result = _rustgrad._bernoulli(input, generator)
    else:
        # PyTorch: empty_like(input, LEGACY_CONTIGUOUS_MEMORY_FORMAT).bernoulli_(p), so
        # the draws fill a contiguous result in row-major order whatever input's strides;
        # recorded with PyTorch's "NotImplemented" node when input requires grad.
        result = _rustgrad._bernoulli_p(input, float(p), generator)
    return result


def _no_grad() -> Any:
    from .autograd.grad_mode import no_grad

    return no_grad()


def _tensor_bernoulli(
    self: Tensor, p: float | None = None, *, generator: Generator | None = None
) -> Tensor:
    """``torch.bernoulli(self, p, generator=generator)`` as a method."""
    return bernoulli(self, p, generator=generator)


def multinomial(
    input: Tensor,
    num_samples: int,
    replacement: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Indices sampled from the categorical distributions in the rows of ``input``.

    ``input`` is 1-D (one distribution) or 2-D (one per row) of non-negative weights
    (they need not sum to one). Without replacement each index appears at most once
    per row. The result is int64 of shape ``(num_samples,)`` or ``(rows, num_samples)``;
    for a seed, the indices are PyTorch's.

    Args:
        input: the weights.
        num_samples: how many indices per row.
        replacement: draw with replacement.
        generator: the generator to draw from; the default one when None.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.multinomial(torch.tensor([0.1, 0.0, 0.9]), 2)
        tensor([2, 0])
    """
    if isinstance(num_samples, (bool, float)):
        raise TypeError(
            f"multinomial(): argument 'num_samples' must be int, not {type(num_samples).__name__}"
        )
    result = _rustgrad._multinomial(input, operator.index(num_samples), replacement, generator)
    return result


def _normal_std_ok(std: Tensor) -> bool:
    """Whether every element of ``std`` is >= 0 (NaN is not)."""
    return std.numel() == 0 or bool((std.detach().min() >= 0).item())


def normal(
    mean: Any,
    std: Any = 1.0,
    size: Any = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    """Normal samples with the given means and standard deviations.

    The four forms of PyTorch: ``normal(mean: Tensor, std: Tensor)`` (broadcast
    together; the mean's dtype), ``normal(mean: Tensor, std: float = 1)``,
    ``normal(mean: float, std: Tensor)`` (the std's dtype) and ``normal(mean: float,
    std: float, size)``. The numbers are PyTorch's for the same seed. The result of a
    tensor form records a node when an argument requires grad, whose gradient is
    zero (as PyTorch's ``NormalBackward``).

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.normal(torch.tensor([0.0, 10.0]), 1.0)
        tensor([1.5410, 9.7066])
    """
    from ._functional import empty, full
    from .autograd.grad_mode import is_grad_enabled

    mean_t = isinstance(mean, Tensor)
    std_t = isinstance(std, Tensor)
    if not mean_t and not std_t:
        if size is None:
            raise TypeError(
                "normal() received an invalid combination of arguments - got "
                f"({type(mean).__name__}, {type(std).__name__}), but expected one of: "
                "(Tensor mean, Tensor std), (Tensor mean, float std), (float mean, Tensor std), "
                "(float mean, float std, tuple of ints size)"
            )
        shape = (
            tuple(size) if isinstance(size, (tuple, list)) or hasattr(size, "__iter__") else (size,)
        )
        result = empty(*shape, dtype=dtype, device=device)
        result.normal_(float(mean), float(std), generator=generator)
        if requires_grad:
            result.requires_grad_(True)
        return result
    if size is not None:
        raise TypeError("normal(): a size is only taken with a float mean and a float std")
    if mean_t and not std_t:
        std_f = float(std)
        if not std_f >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {_fmt(std_f)}")
        shape, res_dtype = tuple(mean.shape), mean.dtype
    elif std_t and not mean_t:
        if not _normal_std_ok(std):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape, res_dtype = tuple(std.shape), std.dtype
    else:
        if not _normal_std_ok(std):
            raise RuntimeError("normal expects all elements of std >= 0.0")
        shape = _broadcast(tuple(mean.shape), tuple(std.shape))
        res_dtype = mean.dtype
    with _no_grad():
        result = empty(*shape, dtype=res_dtype)
        if mean_t and not std_t:
            result.normal_(0.0, std_f, generator=generator)
            result.add_(mean.detach())
        else:
            result.normal_(0.0, 1.0, generator=generator)
            result.mul_(std.detach())
            m = mean.detach() if mean_t else full((), float(mean), dtype=res_dtype)
            result.add_(m)
    tracked = [x for x in (mean, std) if isinstance(x, Tensor) and x.requires_grad]
    if tracked and is_grad_enabled():
        # A node whose gradient is zero for every input (PyTorch's NormalBackward).
        hist = tracked[0].to(res_dtype).expand(*shape).clone()
        for x in tracked[1:]:
            hist = hist + x.to(res_dtype).expand(*shape)
        hist.copy_(result)
        result = hist
    return result


def _broadcast(a: tuple, b: tuple) -> tuple:
    """The broadcast shape of ``a`` and ``b``, with PyTorch's error."""
    n = max(len(a), len(b))
    a2, b2 = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for i, (x, y) in enumerate(zip(a2, b2)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) "
                f"at non-singleton dimension {i}"
            )
        out.append(y if x == 1 else x)
    return tuple(out)


def _fmt(x: float) -> str:
    """A double as PyTorch's messages print it (``1``, ``0.5``, ``-1``)."""
    return str(int(x)) if x == int(x) else repr(x)


def _like_sample(
    input: Tensor,
    fill: Any,
    dtype: Any,
    device: Any,
    requires_grad: bool,
) -> Tensor:
    """A tensor laid out as PyTorch's ``empty_like(input, dtype=dtype)`` (``input``'s
    strides when it is dense, else dense strides in its dimension order, whatever the
    dtype), filled in place by ``fill``: so the samples are drawn in PyTorch's order."""
    from . import _functional

    # The device is checked as any factory's; None is input's device (not the default).
    meta = _functional.empty(0, device=device).is_meta if device is not None else input.is_meta
    if meta:
        # Note [Meta device]: no data to sample.
        dtype = input.dtype if dtype is None else dtype
        return _functional.empty(
            *input.shape, dtype=dtype, device="meta", requires_grad=requires_grad
        )
    result = _rustgrad._empty_like_preserve(input, dtype)
    fill(result)
    if requires_grad:
        result.requires_grad_(True)
    return result


def rand_like(
    input: Tensor,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Uniform samples in [0, 1) with ``input``'s shape (and dtype unless given)."""
    return _like_sample(
        input, lambda t: t.uniform_(0.0, 1.0, generator=generator), dtype, device, requires_grad
    )


def randn_like(
    input: Tensor,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Standard normal samples with ``input``'s shape (and dtype unless given)."""
    return _like_sample(
        input, lambda t: t.normal_(0.0, 1.0, generator=generator), dtype, device, requires_grad
    )


def randint_like(
    input: Tensor,
    low: int = 0,
    high: int | None = None,
    *,
    generator: Generator | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    memory_format: Any = None,
) -> Tensor:
    """Integers uniform in ``[low, high)`` with ``input``'s shape (and dtype unless
    given); ``randint_like(input, high)`` takes ``low = 0``.

    Example:
        >>> import rustgrad as torch
        >>> _ = torch.manual_seed(0)
        >>> torch.randint_like(torch.zeros(4), 10)
        tensor([4., 9., 3., 0.])
    """
    if high is None:
        low, high = 0, low
    lo, hi = _int_arg("low", low), _int_arg("high", high)
    return _like_sample(
        input,
        lambda t: t.random_(lo, hi, generator=generator),
        dtype,
        device,
        requires_grad,
    )


Tensor.random_ = _random_  # type: ignore[attr-defined]
Tensor.bernoulli_ = _bernoulli_  # type: ignore[attr-defined]
Tensor.bernoulli = _tensor_bernoulli  # type: ignore[attr-defined]
Tensor.exponential_ = _exponential_  # type: ignore[attr-defined]
Tensor.geometric_ = _geometric_  # type: ignore[attr-defined]
Tensor.log_normal_ = _log_normal_  # type: ignore[attr-defined]
Tensor.cauchy_ = _cauchy_  # type: ignore[attr-defined]
Tensor.multinomial = multinomial  # type: ignore[attr-defined]
