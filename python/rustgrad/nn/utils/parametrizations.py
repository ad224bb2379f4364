"""``torch.nn.utils.parametrizations``: ``weight_norm``, ``spectral_norm`` and
``orthogonal`` as parametrizations (``parametrize.register_parametrization``), with
PyTorch's state-dict layout: ``parametrizations.weight.original0`` / ``original1``
(weight norm's g and v), ``parametrizations.weight.original`` with the ``_u`` / ``_v``
buffers of the spectral norm (``parametrizations.weight.0._u``), and the ``base`` buffer
of the orthogonal map. See Note [Parametrizations].

The ops PyTorch calls that rustgrad has no public op for are composed here of
differentiable ops: ``norm_except_dim`` / ``_weight_norm`` (a ``vector_norm`` over every
dim but one), ``matrix_exp`` (scaling and squaring of a degree-18 Taylor polynomial),
``householder_product`` (the product of the reflectors), ``linalg.solve`` for the Cayley
map (Gaussian elimination on the values, with its analytic backward), and ``geqrf`` (a
Householder QR, only ever run without grad, on the values).

Example:
    >>> import rustgrad.nn as nn
    >>> from rustgrad.nn.utils.parametrizations import weight_norm
    >>> m = weight_norm(nn.Linear(4, 3))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

import math
from enum import Enum, auto
from typing import Any

from ... import _rustgrad
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize

Tensor = _rustgrad.Tensor

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _torch() -> Any:
    import rustgrad

    return rustgrad


# ---------------------------------------------------------------- helper ops


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """PyTorch's ``norm_except_dim(v, 2, dim)``: the 2-norm over every dim but ``dim``
    (kept as size-1 dims); the whole tensor's norm (0-d) for ``dim == -1``."""
    torch = _torch()
    if dim == -1:
        return torch.linalg.vector_norm(v)
    dims = [d for d in range(v.dim()) if d != dim]
    if not dims:
        return v.abs()
    return torch.linalg.vector_norm(v, 2, dims, keepdim=True)


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """PyTorch's ``_weight_norm(v, g, dim)``: ``v * (g / norm_except_dim(v, 2, dim))``."""
    return v * (g / _norm_except_dim(v, dim))


def _matrix_exp(a: Tensor) -> Tensor:
    """``exp(A)`` of (a batch of) square matrices, differentiable: ``A`` is scaled by
    ``2**-s`` to a norm at most 1/2, the Taylor series to degree 18 is summed (Horner),
    and the result squared ``s`` times (truncation below 1e-22 of the scaled norm)."""
    torch = _torch()
    n = a.size(-1)
    with no_grad():
        norm = a.abs().sum(-1).max().item() if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    b = a / (2.0**s) if s else a
    eye = torch.eye(n, dtype=a.dtype).expand(a.shape)
    result = eye
    for k in range(18, 0, -1):
        result = eye + (b @ result) / k
    for _ in range(s):
        result = result @ result
    return result


def _solve_values(m: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    """``M^-1 B`` by Gaussian elimination with partial pivoting, on Python floats."""
    n = len(m)
    a = [row[:] + rhs[:] for row, rhs in zip(m, b, strict=True)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if a[pivot][col] == 0.0:
            raise RuntimeError(
                "linalg.solve: The solver failed because the input matrix is singular."
            )
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(n):
            if r != col and a[r][col] != 0.0:
                f = a[r][col] / a[col][col]
                a[r] = [x - f * y for x, y in zip(a[r], a[col], strict=True)]
    return [[x / a[r][r] for x in a[r][n:]] for r in range(n)]


def _solve_tensor(m: Tensor, b: Tensor) -> Tensor:
    """``M^-1 B`` for (batches of) square ``M``, without grad."""
    torch = _torch()
    flat_m = m.detach().double().reshape(-1, m.size(-2), m.size(-1)).tolist()
    flat_b = b.detach().double().reshape(-1, b.size(-2), b.size(-1)).tolist()
    out = [_solve_values(mi, bi) for mi, bi in zip(flat_m, flat_b, strict=True)]
    return torch.tensor(out, dtype=b.dtype).reshape(b.shape)


def _solve(m: Tensor, b: Tensor) -> Tensor:
    """``linalg.solve(M, B)`` (``M X = B``), differentiable once: ``dB = M^-T G`` and
    ``dM = -dB X^T``."""
    torch = _torch()

    class _Solve(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, m: Tensor, b: Tensor) -> Tensor:
            x = _solve_tensor(m, b)
            ctx.save_for_backward(m, x)
            return x

        @staticmethod
        def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, Tensor]:
            m, x = ctx.saved_tensors
            grad_b = _solve_tensor(m.transpose(-1, -2), grad)
            return -grad_b @ x.transpose(-1, -2), grad_b

    return _Solve.apply(m, b)


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """PyTorch's ``linalg.householder_product(A, tau)``: the first ``n`` columns of
    ``H_1 ... H_k`` with ``H_i = I - tau_i v_i v_i^T`` and ``v_i`` the ``i``-th column of
    ``A`` below the diagonal with a unit diagonal; differentiable in ``A`` and ``tau``."""
    torch = _torch()
    m, n = a.size(-2), a.size(-1)
    k = tau.size(-1)
    vs = a.tril(-1) + torch.eye(m, n, dtype=a.dtype)
    q = torch.eye(m, dtype=a.dtype).expand(*a.shape[:-2], m, m)
    for i in range(k):
        v = vs[..., :, i : i + 1]
        q = q - (q @ v) @ v.transpose(-1, -2) * tau[..., i : i + 1].unsqueeze(-1)
    return q[..., :, :n]


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` (PyTorch's ``torch.geqrf``) of one matrix, without grad: ``R``
    on and above the diagonal, the Householder vectors below it, and ``tau``."""
    torch = _torch()
    m, n = a.size(-2), a.size(-1)
    rows = [[float(x) for x in row] for row in a.detach().double().tolist()]
    taus = []
    for j in range(min(m, n)):
        alpha = rows[j][j]
        xnorm = math.sqrt(sum(rows[i][j] ** 2 for i in range(j + 1, m)))
        if xnorm == 0.0:
            taus.append(0.0)
            continue
        beta = -math.copysign(math.hypot(alpha, xnorm), alpha)
        tau = (beta - alpha) / beta
        scale = 1.0 / (alpha - beta)
        for i in range(j + 1, m):
            rows[i][j] *= scale
        rows[j][j] = beta
        v = [1.0] + [rows[i][j] for i in range(j + 1, m)]
        for c in range(j + 1, n):
            dot = sum(v[i - j] * rows[i][c] for i in range(j, m))
            for i in range(j, m):
                rows[i][c] -= tau * v[i - j] * dot
        taus.append(tau)
    return (
        torch.tensor(rows, dtype=a.dtype),
        torch.tensor(taus, dtype=a.dtype),
    )


def _batched_geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    torch = _torch()
    if a.dim() == 2:
        return _geqrf(a)
    flat = a.reshape(-1, a.size(-2), a.size(-1))
    parts = [_geqrf(m) for m in flat]
    x = torch.stack([p[0] for p in parts]).reshape(a.shape)
    tau = torch.stack([p[1] for p in parts]).reshape(*a.shape[:-2], -1)
    return x, tau


def _is_orthogonal(q: Tensor) -> bool:
    torch = _torch()
    n, k = q.size(-2), q.size(-1)
    eye = torch.eye(k, dtype=q.dtype)
    eps = 10.0 * n * torch.finfo(q.dtype).eps
    return bool(torch.allclose(q.transpose(-1, -2) @ q, eye, atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The ``Q`` of ``A = QR`` with a non-negative diagonal of ``R`` (``A`` tall)."""
    x, tau = _batched_geqrf(a)
    q = _householder_product(x, tau)
    return q * x.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


# ---------------------------------------------------------------- weight_norm


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        if dim is None:
            dim = -1
        self.dim = dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        weight_g = _norm_except_dim(weight, self.dim)
        weight_v = weight
        return weight_g, weight_v


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrizes ``module.<name>`` as ``g * v / ||v||`` with the norm over every dim
    but ``dim`` (the whole tensor for ``dim=None``): ``original0`` is ``g``,
    ``original1`` is ``v``.

    Returns:
        ``module``, parametrized.
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


# ---------------------------------------------------------------- spectral_norm


class _SpectralNorm(Module):
    def __init__(
        self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12
    ) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(
                "Dimension out of range (expected to be in range of "
                f"[-{ndim}, {ndim - 1}] but got {dim})"
            )
        if n_power_iterations <= 0:
            raise ValueError(
                "Expected n_power_iterations to be positive, but "
                f"got n_power_iterations={n_power_iterations}"
            )
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        torch = _torch()
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(torch.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(
                    F.normalize(torch.mv(weight_mat.transpose(0, 1), self._u), dim=0, eps=self.eps)
                )

    def forward(self, weight: Tensor) -> Tensor:
        torch = _torch()
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        sigma = torch.dot(u, torch.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def _is_conv_transpose(module: Module) -> bool:
    from .. import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    return isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d))


def spectral_norm(
    module: Module,
    name: str = "weight",
    n_power_iterations: int = 1,
    eps: float = 1e-12,
    dim: int | None = None,
) -> Module:
    """Reparametrizes ``module.<name>`` as ``W / sigma(W)``, ``sigma`` estimated by power
    iteration (``n_power_iterations`` per forward in training mode, on the ``_u`` / ``_v``
    buffers; 15 at registration). ``dim`` defaults to 1 for transposed convolutions.

    Returns:
        ``module``, parametrized.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps)
    )
    return module


# ---------------------------------------------------------------- orthogonal


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    base: Tensor

    def __init__(
        self, weight: Tensor, orthogonal_map: _OrthMaps, *, use_trivialization: bool = True
    ) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        torch = _torch()
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.transpose(-1, -2)
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = torch.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.transpose(-1, -2)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = _matrix_exp(A)
            else:
                eye = torch.eye(n, dtype=A.dtype).expand(A.shape)
                Q = _solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = _householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        if transposed:
            Q = Q.transpose(-1, -2)
        return Q

    def right_inverse(self, Q: Tensor) -> Tensor:
        torch = _torch()
        with no_grad():
            if Q.shape != self.shape:
                raise ValueError(
                    f"Expected a matrix or batch of matrices of shape {self.shape}. "
                    f"Got a tensor of shape {Q.shape}."
                )
            Q_init = Q
            n, k = Q.size(-2), Q.size(-1)
            transpose = n < k
            if transpose:
                Q = Q.transpose(-1, -2)
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                    raise NotImplementedError(
                        "It is not possible to assign to the matrix exponential "
                        "or the Cayley parametrizations when use_trivialization=False."
                    )
                A, tau = _batched_geqrf(Q)
                diag = A.diagonal(dim1=-2, dim2=-1)
                signs = diag.sign()
                signs = torch.where(tau == 0.0, -signs, signs)
                diag.copy_(signs)
                return A.transpose(-1, -2) if transpose else A
            if n == k:
                Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
            else:
                N = torch.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype)
                Q = _make_orthogonal(torch.cat([Q, N], dim=-1))
            self.base = Q
            neg_id = torch.zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(
    module: Module,
    name: str = "weight",
    orthogonal_map: str | None = None,
    *,
    use_trivialization: bool = True,
) -> Module:
    """Reparametrizes the matrix (or batch of matrices) ``module.<name>`` to be
    orthogonal: ``matrix_exp`` of a skew-symmetric matrix (the default for square
    matrices) or a product of Householder reflectors (the default otherwise), times the
    ``base`` buffer (``use_trivialization``), or the Cayley map ``(I - A/2)^-1 (I +
    A/2)`` (``cayley``).

    Returns:
        ``module``, parametrized.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError(
            f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions."
        )
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError(
            'orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
            f"Got: {orthogonal_map}"
        )
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
