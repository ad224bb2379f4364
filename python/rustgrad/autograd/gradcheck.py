"""``gradcheck`` and ``gradgradcheck``: PyTorch's finite-difference checks of backward.

See Note [Public gradcheck] in docs/architecture.md for what is checked, the options
that are refused, and how the analytical Jacobian is built without ``autograd.grad``.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable, Sequence
from typing import Any, Union

import numpy as np

from .. import _rustgrad
from .._rustgrad import Tensor
from .grad_mode import no_grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]

_TensorOrTensors = Union[Tensor, Sequence[Any]]

_FAILED_NONDET_MSG = """

NOTE: If your op relies on non-deterministic operations i.e., it is listed here:
https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html
this failure might be expected.

If you are adding a new operator, please file an issue and then use one of the
workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.
If the test
- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck
  with `nondet_tol=<tol>` as a keyword argument.
- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test
  to have `gradcheck_nondet_tol=<tol>`.
- is a Module test (e.g., in common_nn.py), then modify the corresponding
  module_test entry to have `gradcheck_nondet_tol=<tol>`
"""

_UNDEFINED_GRAD_NOTE = 'Please look at "Notes about undefined output gradients" in ' + (
    '"tools/autograd/derivatives.yaml"'
)


class GradcheckError(RuntimeError):
    """Error raised by :func:`gradcheck` and :func:`gradgradcheck`."""


# ----- helpers ----------------------------------------------------------------------------------


def _as_tuple(x: Any) -> tuple[Any, ...]:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _differentiable_outputs(outputs: tuple[Any, ...]) -> tuple[Tensor, ...]:
    return tuple(o for o in outputs if isinstance(o, Tensor) and o.requires_grad)


def _is_float_tensor(x: Any) -> bool:
    return isinstance(x, Tensor) and x.is_floating_point()


def _flat(t: Tensor) -> np.ndarray:
    return np.asarray(t.detach().numpy()).reshape(-1)


def _numpy_dtype(t: Tensor) -> type:
    return np.float64 if t.dtype == _rustgrad.float64 else np.float32


def _as_tensor(array: np.ndarray) -> Tensor:
    # Not np.ascontiguousarray, which makes a 0-d array 1-d.
    return _rustgrad.from_numpy(np.array(array, order="C"))


def _one_hot(like: Tensor, index: int) -> Tensor:
    flat = np.zeros(like.numel(), dtype=_numpy_dtype(like))
    flat[index] = 1.0
    return _as_tensor(flat.reshape(tuple(like.shape)))


def _zero_grads(outputs: Sequence[Tensor]) -> list[Tensor]:
    return [_rustgrad.zeros(tuple(o.shape), dtype=o.dtype) for o in outputs]


def _backward_and_read(
    leaves: Sequence[Tensor],
    outputs: Sequence[Tensor],
    grad_outputs: Sequence[Tensor],
    create_graph: bool = False,
) -> list[Tensor | None]:
    """``autograd.grad(outputs, leaves, grad_outputs, allow_unused=True)`` built from
    ``backward``: clears the leaves' ``.grad``, runs one pass and takes the gradients
    out again, so that nothing stays in ``.grad`` (with ``create_graph`` a stored
    gradient that reaches its own leaf would be a reference cycle)."""
    for leaf in leaves:
        leaf.grad = None
    try:
        _rustgrad._backward(list(outputs), list(grad_outputs), True, create_graph)
        return [leaf.grad for leaf in leaves]
    finally:
        for leaf in leaves:
            leaf.grad = None


# ----- input and option checks -----------------------------------------------------------------


def _check_inputs(inputs: tuple[Any, ...]) -> None:
    any_requires_grad = False
    for idx, inp in enumerate(inputs):
        if isinstance(inp, Tensor) and inp.requires_grad:
            if inp.dtype != _rustgrad.float64:
                warnings.warn(
                    f"Input #{idx} requires gradient and "
                    "is not a double precision floating point or complex. "
                    "This check will likely fail if all the inputs are "
                    "not of double precision floating point or complex. ",
                    stacklevel=4,
                )
            if not all(st > 0 or sz <= 1 for st, sz in zip(inp.stride(), inp.shape)):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only "
                    "supports inputs that are non-overlapping to be able to "
                    "compute the numerical gradients correctly. You should call "
                    ".contiguous on the input before passing it to gradcheck."
                )
            any_requires_grad = True
    if not any_requires_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of them have requires_grad=True."
        )


def _refuse(option: str, reason: str) -> None:
    raise NotImplementedError(f"rustgrad's gradcheck does not support {option}=True: {reason}")


# ----- Jacobians ---------------------------------------------------------------------------------


def _numerical_jacobians(
    func: Callable[..., Any],
    inputs: tuple[Any, ...],
    float_outputs: list[int],
    eps: float,
) -> list[list[np.ndarray]]:
    """``jacobians[k][i]``: d(output ``float_outputs[i]``)/d(``k``-th input requiring
    grad), shape (input numel, output numel), by central differences.

    Each element is perturbed in place through ``.data``, which has its own version
    counter as in PyTorch, so graphs recorded from the unperturbed inputs stay usable;
    it is restored to its exact original value.
    """
    jacobians: list[list[np.ndarray]] = []
    for inp in inputs:
        if not (isinstance(inp, Tensor) and inp.requires_grad):
            continue
        data = inp.data
        per_output: list[np.ndarray] | None = None
        for d_idx, idx in enumerate(itertools.product(*[range(n) for n in inp.shape])):
            original = data[idx].item()
            with no_grad():
                data[idx] = original - eps
            # Copied at once: an output may be (a view of) the input being perturbed.
            out_a = _float_outputs(func(*inputs), float_outputs)
            with no_grad():
                data[idx] = original + eps
            out_b = _float_outputs(func(*inputs), float_outputs)
            with no_grad():
                data[idx] = original
            if per_output is None:
                per_output = [
                    np.zeros((inp.numel(), b.numel()), dtype=_numpy_dtype(b)) for b, _ in out_b
                ]
            for jacobian, (a, a_values), (b, b_values) in zip(per_output, out_a, out_b):
                _check_same_dtype_and_shape(a, b, eps, idx)
                jacobian[d_idx] = (b_values - a_values) / (2 * eps)
        if per_output is None:  # an empty input: no element to perturb
            outs = _as_tuple(func(*inputs))
            per_output = [
                np.zeros((0, outs[o].numel()), dtype=_numpy_dtype(outs[o])) for o in float_outputs
            ]
        jacobians.append(per_output)
    return jacobians


def _float_outputs(func_out: Any, float_outputs: list[int]) -> list[tuple[Tensor, np.ndarray]]:
    outs = _as_tuple(func_out)
    return [(outs[o], _flat(outs[o]).copy()) for o in float_outputs]


def _check_same_dtype_and_shape(a: Tensor, b: Tensor, eps: float, idx: tuple[int, ...]) -> None:
    if a.shape != b.shape:
        raise AssertionError(
            "Expected `func` to return outputs with the same shape"
            f" when inputs are perturbed on index {idx} by {eps}, but got:"
            f" shapes {a.shape} and {b.shape}."
        )
    if a.dtype != b.dtype:
        raise AssertionError(
            "Expected `func` to return outputs with the same dtype"
            f" when inputs are perturbed on index {idx} by {eps}, but got:"
            f" dtypes {a.dtype} and {b.dtype}."
        )


def _analytical_jacobian_rows(
    leaves: list[Tensor], output: Tensor
) -> tuple[list[np.ndarray], bool, bool]:
    """One backward per element of ``output`` with a one-hot gradient; returns the
    Jacobians (input numel, output numel) and whether every gradient had its input's
    dtype and shape."""
    jacobians = [
        np.zeros((leaf.numel(), output.numel()), dtype=_numpy_dtype(leaf)) for leaf in leaves
    ]
    types_ok = sizes_ok = True
    for j in range(output.numel()):
        grads = _backward_and_read(leaves, [output], [_one_hot(output, j)])
        for jacobian, leaf, grad in zip(jacobians, leaves, grads):
            if grad is None:
                continue
            if grad.shape != leaf.shape:
                sizes_ok = False
                continue
            if grad.dtype != leaf.dtype:
                types_ok = False
            jacobian[:, j] = _flat(grad)
    return jacobians, types_ok, sizes_ok


def _check_analytical_jacobian_attributes(
    leaves: list[Tensor], output: Tensor, nondet_tol: float, check_grad_dtypes: bool
) -> list[np.ndarray]:
    # Everything twice, to catch a nondeterministic ("non-reentrant") backward.
    jacobians1, types_ok, sizes_ok = _analytical_jacobian_rows(leaves, output)
    jacobians2, _, _ = _analytical_jacobian_rows(leaves, output)
    reentrant = all(
        j1.size == 0 or np.abs(j1 - j2).max() <= nondet_tol
        for j1, j2 in zip(jacobians1, jacobians2)
    )
    if not types_ok and check_grad_dtypes:
        raise GradcheckError("Gradient has dtype mismatch")
    if not sizes_ok:
        raise GradcheckError("Analytical gradient has incorrect size")
    if not reentrant:
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with "
            "same input and grad_output multiple times gives different values, "
            "although analytical gradient matches numerical gradient."
            f"The tolerance for nondeterminism was {nondet_tol}." + _FAILED_NONDET_MSG
        )
    return jacobians1


def _notallclose_msg(analytical: np.ndarray, numerical: np.ndarray, out: int, inp: int) -> str:
    return (
        f"Jacobian mismatch for output {out:d} with respect to input {inp:d},\n"
        f"numerical:{_as_tensor(numerical)!r}\nanalytical:{_as_tensor(analytical)!r}\n"
    )


# ----- the checks ------------------------------------------------------------------------------


def _slow_gradcheck(
    func: Callable[..., Any],
    func_out: tuple[Any, ...],
    inputs: tuple[Any, ...],
    leaves: list[Tensor],
    outputs: tuple[Tensor, ...],
    eps: float,
    rtol: float,
    atol: float,
    check_grad_dtypes: bool,
    nondet_tol: float,
) -> None:
    float_outputs = [i for i, o in enumerate(func_out) if _is_float_tensor(o)]
    numerical = _numerical_jacobians(func, inputs, float_outputs, eps)
    if not outputs:
        # No output requires grad: the function must not depend on the inputs.
        for per_output in numerical:
            for jacobian in per_output:
                if np.count_nonzero(jacobian) > 0:
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    # numerical[input][output] -> per differentiable output, per input.
    diff_positions = [k for k, o in enumerate(float_outputs) if func_out[o].requires_grad]
    for i, output in enumerate(outputs):
        analytical = _check_analytical_jacobian_attributes(
            leaves, output, nondet_tol, check_grad_dtypes
        )
        for j, a in enumerate(analytical):
            n = numerical[j][diff_positions[i]]
            if a.shape != n.shape or not np.allclose(a, n, rtol=rtol, atol=atol):
                raise GradcheckError(_notallclose_msg(a, n, i, j))


def _test_backward_mul_by_grad_output(leaves: list[Tensor], outputs: tuple[Tensor, ...]) -> None:
    grads = _backward_and_read(leaves, outputs, _zero_grads(outputs))
    for grad, leaf in zip(grads, leaves):
        if grad is None:
            continue
        if np.count_nonzero(_flat(grad)) > 0:
            raise GradcheckError("backward not multiplied by grad_output")
        if grad.dtype != leaf.dtype:
            raise GradcheckError("grad is incorrect type")
        if grad.shape != leaf.shape:
            raise GradcheckError("grad is incorrect size")


def _test_undefined_backward_mode(
    func: Callable[..., Any], inputs: tuple[Any, ...], leaves: list[Tensor]
) -> None:
    """PyTorch's check with rustgrad's undefined gradients: an output left out of the
    pass gets no gradient, which reaches its node as an undefined (``None``) slot when
    other outputs of the same multi-output node are in the pass (Note [Multi-output
    nodes]), as PyTorch's ``UndefinedGrad`` does. So, for several outputs, each output
    in turn is left out of the pass with zero gradients for the others, as PyTorch's.
    "All output grads undefined" is checked with zero gradients for every output: with
    none at all a node is never run here (which is what an all-undefined rule returns
    in PyTorch), so zeros are the stricter test."""

    def check(outputs: list[Tensor]) -> None:
        if not outputs:
            return
        try:
            grads = _backward_and_read(leaves, outputs, _zero_grads(outputs))
        except RuntimeError as e:
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. "
                + _UNDEFINED_GRAD_NOTE
            ) from e
        for grad in grads:
            if grad is not None and np.count_nonzero(_flat(grad)) > 0:
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads "
                    f"are undefined or zero. {_UNDEFINED_GRAD_NOTE}"
                )

    outputs = list(_differentiable_outputs(_as_tuple(func(*inputs))))
    check(outputs)
    if len(outputs) > 1:
        for left_out in range(len(outputs)):
            outputs = list(_differentiable_outputs(_as_tuple(func(*inputs))))
            check([o for k, o in enumerate(outputs) if k != left_out])


def gradcheck(
    func: Callable[..., Any],
    inputs: _TensorOrTensors,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Checks the gradients of ``func`` against central finite differences.

    The analytical Jacobian (one backward pass per output element) of every floating
    output that requires grad, with respect to every input that requires grad, must be
    ``allclose`` to the numerical one: ``|analytical - numerical| <= atol + rtol *
    |numerical|``. The function is called on detached copies of the inputs that require
    grad, so the caller's tensors and their ``.grad`` are left alone.

    Args:
        func: takes the tensors of ``inputs`` and returns a tensor or a tuple of them;
            non-floating outputs are not checked.
        inputs: a tensor or a tuple of inputs to ``func``; those that require grad
            should be float64.
        eps: the perturbation for the finite differences.
        atol: the absolute tolerance.
        rtol: the relative tolerance.
        raise_exception: raise :class:`GradcheckError` on a failed check (else
            return False).
        nondet_tol: how far two backward passes with the same gradient may differ.
        check_undefined_grad: check that zero output gradients give zero (or no)
            input gradients, also with each output in turn left out of the pass.
        check_grad_dtypes: check that each gradient has its input's dtype.
        check_batched_grad: not supported (rustgrad has no vmap); must be False.
        check_batched_forward_grad: not supported (no forward AD); must be False.
        check_forward_ad: not supported (no forward AD); must be False.
        check_backward_ad: must be True.
        fast_mode: accepted; runs the slow (full Jacobian) check.
        masked: accepted; rustgrad has no sparse tensors for it to act on.

    Returns:
        True if every check passes.

    Example:
        >>> import rustgrad as torch
        >>> from rustgrad.autograd import gradcheck
        >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        >>> gradcheck(torch.tanh, (x,))
        True
        >>> gradcheck(lambda x: x * x.detach(), (x,), raise_exception=False)
        False
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    if check_forward_ad:
        _refuse("check_forward_ad", "rustgrad has no forward-mode AD")
    if check_batched_forward_grad:
        _refuse("check_batched_forward_grad", "rustgrad has no forward-mode AD")
    if check_batched_grad:
        _refuse("check_batched_grad", "rustgrad has no vmap")
    try:
        return _gradcheck_helper(
            func, inputs, eps, atol, rtol, nondet_tol, check_undefined_grad, check_grad_dtypes
        )
    except GradcheckError:
        if raise_exception:
            raise
        return False


def _gradcheck_helper(
    func: Callable[..., Any],
    inputs: _TensorOrTensors,
    eps: float,
    atol: float,
    rtol: float,
    nondet_tol: float,
    check_undefined_grad: bool,
    check_grad_dtypes: bool,
) -> bool:
    user_inputs = _as_tuple(inputs)
    _check_inputs(user_inputs)
    # Work on leaf copies: backward writes ``.grad`` and the numerical Jacobian writes
    # the values; neither may touch the caller's tensors.
    tupled_inputs = tuple(
        x.detach().clone().requires_grad_() if isinstance(x, Tensor) and x.requires_grad else x
        for x in user_inputs
    )
    leaves = [x for x, u in zip(tupled_inputs, user_inputs) if x is not u]
    try:
        func_out = _as_tuple(func(*tupled_inputs))
        outputs = _differentiable_outputs(func_out)
        _slow_gradcheck(
            func,
            func_out,
            tupled_inputs,
            leaves,
            outputs,
            eps,
            rtol,
            atol,
            check_grad_dtypes,
            nondet_tol,
        )
        if outputs:
            _test_backward_mul_by_grad_output(leaves, outputs)
        if check_undefined_grad:
            _test_undefined_backward_mode(func, tupled_inputs, leaves)
    finally:
        for leaf in leaves:
            leaf.grad = None
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: _TensorOrTensors,
    grad_outputs: _TensorOrTensors | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Checks the gradients of the gradients of ``func`` against finite differences.

    Runs :func:`gradcheck` on ``(inputs, grad_outputs) -> d(outputs)/d(inputs)^T
    grad_outputs``, computed with ``create_graph=True``: the backward of ``func``'s
    backward is compared with finite differences of its backward.

    Args:
        func: takes the tensors of ``inputs`` and returns a tensor or a tuple of them.
        inputs: a tensor or a tuple of inputs to ``func``.
        grad_outputs: the gradients of ``func``'s outputs that require grad; by
            default, uniform in [-1, 1) from a generator seeded with 0, requiring grad.
        eps: the perturbation for the finite differences.
        atol: the absolute tolerance.
        rtol: the relative tolerance.
        gen_non_contig_grad_outputs: make the generated ``grad_outputs``
            non-contiguous.
        raise_exception: raise :class:`GradcheckError` on a failed check (else
            return False).
        nondet_tol: how far two backward passes with the same gradient may differ.
        check_undefined_grad: as in :func:`gradcheck`.
        check_grad_dtypes: check that each gradient has its input's dtype.
        check_batched_grad: not supported (rustgrad has no vmap); must be False.
        check_fwd_over_rev: not supported (no forward AD); must be False.
        check_rev_over_rev: must be True.
        fast_mode: accepted; runs the slow (full Jacobian) check.
        masked: accepted; rustgrad has no sparse tensors for it to act on.

    Returns:
        True if every check passes.

    Example:
        >>> import rustgrad as torch
        >>> from rustgrad.autograd import gradgradcheck
        >>> x = torch.randn(3, dtype=torch.float64, requires_grad=True)
        >>> gradgradcheck(torch.sigmoid, (x,))
        True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    if check_fwd_over_rev:
        _refuse("check_fwd_over_rev", "rustgrad has no forward-mode AD")
    tupled_inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(_as_tuple(func(*tupled_inputs)))
        generator = _rustgrad.Generator().manual_seed(0)
        tupled_grad_outputs = tuple(
            _random_grad_output(o, generator, gen_non_contig_grad_outputs) for o in outputs
        )
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    diff_input_indices = [
        i for i, x in enumerate(tupled_inputs) if isinstance(x, Tensor) and x.requires_grad
    ]

    def new_func(*args: Any) -> tuple[Tensor, ...]:
        input_args = args[:-num_outputs] if num_outputs else args
        leaves = [input_args[i] for i in diff_input_indices]
        outputs = _differentiable_outputs(_as_tuple(func(*input_args)))
        # gradcheck hands new_func its own leaf copies, so their ``.grad`` is ours to use.
        grads = _backward_and_read(
            leaves, outputs, args[len(args) - num_outputs :], create_graph=True
        )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad,
        check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad,
        fast_mode=fast_mode,
        check_forward_ad=check_fwd_over_rev,
        check_backward_ad=check_rev_over_rev,
        masked=masked,
    )


def _random_grad_output(output: Tensor, generator: Any, non_contiguous: bool) -> Tensor:
    dtype = output.dtype if output.is_floating_point() else _rustgrad.float64
    shape = tuple(output.shape)
    if non_contiguous and output.numel() > 1:
        # PyTorch's make_tensor(noncontiguous=True): every other element of a tensor
        # twice as long in the last dimension.
        wide = _rustgrad.rand(*shape[:-1], 2 * shape[-1], generator=generator, dtype=dtype)
        values = (wide * 2 - 1)[(slice(None),) * (len(shape) - 1) + (slice(None, None, 2),)]
    else:
        values = _rustgrad.rand(*shape, generator=generator, dtype=dtype) * 2 - 1
    return values.detach().requires_grad_()
