"""``rustgrad.autograd``: Variable, grad mode, ``backward``, ``gradcheck``."""

from __future__ import annotations

from collections.abc import Sequence

from .. import _rustgrad
from .._rustgrad import Tensor
from . import anomaly_mode, function, functional, graph
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from .function import Function
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)

# As in PyTorch, the functions shadow the submodule's name here; the module (with
# GradcheckError) stays importable as ``rustgrad.autograd.gradcheck``.
from .gradcheck import gradcheck, gradgradcheck
from .graph import graph_stats
from .variable import Variable

__all__ = [
    "Function",
    "Variable",
    "anomaly_mode",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "function",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "graph_stats",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]


def _is_checkpoint_valid() -> bool:
    """False inside a backward pass started by ``grad`` or ``backward(inputs=...)``,
    where the reentrant checkpoint cannot run (PyTorch's private helper)."""
    return _rustgrad._is_checkpoint_valid()


def _tensor_list(tensors: Tensor | Sequence[Tensor]) -> list[Tensor]:
    if isinstance(tensors, Tensor):
        return [tensors]
    return list(tensors)


def _grad_list(grads: Tensor | Sequence[Tensor | None] | None, n: int) -> list[Tensor | None]:
    if grads is None:
        return [None] * n
    if isinstance(grads, Tensor):
        return [grads]
    return list(grads)


def backward(
    tensors: Tensor | Sequence[Tensor],
    grad_tensors: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    grad_variables: Tensor | Sequence[Tensor | None] | None = None,
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor] | None = None,
) -> None:
    """Computes the sum of gradients of ``tensors`` w.r.t. graph leaves.

    Args:
        tensors: the outputs to differentiate.
        grad_tensors: their gradients (None for scalars).
        retain_graph: keep saved tensors for another backward (default:
            ``create_graph``).
        create_graph: record the backward pass for higher-order gradients.
        grad_variables: deprecated alias of ``grad_tensors``.
        inputs: when given, only these tensors accumulate ``.grad`` (a non-leaf
            input gets its ``.grad`` too); other leaves are untouched and nodes
            that cannot reach them do not run.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.ones(2, requires_grad=True)
        >>> rustgrad.autograd.backward((x * 3).sum())
        >>> x.grad
        tensor([3., 3.])
    """
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError(
                "'grad_tensors' and 'grad_variables' (deprecated) arguments both "
                "passed to backward(). Please only use 'grad_tensors'."
            )
        grad_tensors = grad_variables
    tensors = _tensor_list(tensors)
    grad_list = _grad_list(grad_tensors, len(tensors))
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        if isinstance(inputs, dict):
            inputs = list(inputs.values())
        inputs = _tensor_list(inputs)
    _rustgrad._backward(tensors, grad_list, retain, create_graph, inputs)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor] | dict[str, Tensor],
    grad_outputs: Tensor | Sequence[Tensor | None] | None = None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...] | dict[str, Tensor | None]:
    """Computes and returns the gradients of ``outputs`` w.r.t. ``inputs``.

    Only what the inputs need is computed: nodes that cannot reach an input never
    run, and no ``.grad`` changes. Inputs may be leaves or intermediate results (the
    gradient flowing into the tensor is returned). See Note [grad and input
    capture] in docs/architecture.md.

    Args:
        outputs: the outputs to differentiate.
        inputs: the tensors to differentiate with respect to (a dict gives a dict).
        grad_outputs: the vector in the vector-Jacobian product, one per output
            (None for a scalar output means ones).
        retain_graph: keep saved tensors for another backward (default:
            ``create_graph``).
        create_graph: record the backward pass, so the results can be
            differentiated again (Hessian-vector products, gradient penalties).
        only_inputs: deprecated and ignored, as in PyTorch.
        allow_unused: return None (zeros with ``materialize_grads``) for inputs
            that the outputs do not depend on instead of raising. Defaults to
            ``materialize_grads``.
        is_grads_batched: needs vmap; raises NotImplementedError when True.
        materialize_grads: zeros instead of None for unused inputs.

    Example:
        >>> import rustgrad
        >>> x = rustgrad.tensor([3.0], requires_grad=True)
        >>> (g,) = rustgrad.autograd.grad((x**3).sum(), x, create_graph=True)
        >>> rustgrad.autograd.grad(g.sum(), x)
        (tensor([18.]),)
    """
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    if allow_unused is None:
        allow_unused = materialize_grads
    if is_grads_batched:
        raise NotImplementedError(
            "rustgrad.autograd.grad: is_grads_batched=True needs vmap, which rustgrad "
            "does not have; call grad once per batch element instead."
        )
    names = None
    if isinstance(inputs, dict):
        names = list(inputs.keys())
        inputs = list(inputs.values())
    outputs = _tensor_list(outputs)
    inputs = _tensor_list(inputs)
    grad_list = _grad_list(grad_outputs, len(outputs))
    retain = create_graph if retain_graph is None else retain_graph
    result = _rustgrad._grad(outputs, inputs, grad_list, retain, create_graph, bool(allow_unused))
    if materialize_grads:
        from .. import zeros_like

        result = [zeros_like(inp) if g is None else g for g, inp in zip(result, inputs)]
    if names is not None:
        return dict(zip(names, result))
    return tuple(result)
