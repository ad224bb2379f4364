"""``rustgrad.autograd.functional``: vjp, jvp, jacobian, hessian, vhp, hvp.

Built on :func:`rustgrad.autograd.grad`, following PyTorch's
``torch/autograd/functional.py`` (same signatures, results, strict-mode checks and
error messages). ``jvp`` and ``hvp`` use the double-backward trick (there is no
forward-mode AD). ``vectorize=True`` and the forward-mode strategies need vmap /
forward AD and raise ``NotImplementedError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._rustgrad import Tensor
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(inp: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple[Tensor, ...]]:
    is_tuple = isinstance(inp, tuple)
    if not is_tuple:
        inp = (inp,)
    for i, el in enumerate(inp):
        if not isinstance(el, Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                f"Tensors but {where} has type {type(el)}."
            )
    return is_tuple, inp


def _tuple_postprocess(res: Any, to_unpack: bool | tuple[bool, bool]) -> Any:
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _grad_preprocess(
    inputs: tuple[Tensor, ...], create_graph: bool, need_graph: bool
) -> tuple[Tensor, ...]:
    # With create_graph, a view keeps the link to the caller's graph; otherwise a
    # fresh leaf, so the caller's tensors and .grad are never touched.
    res = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            res.append(inp.view_as(inp))
        else:
            res.append(inp.detach().requires_grad_(need_graph))
    return tuple(res)


def _grad_postprocess(inputs: Any, create_graph: bool) -> Any:
    if isinstance(inputs[0], Tensor):
        if not create_graph:
            return tuple(inp.detach() for inp in inputs)
        return inputs
    return tuple(_grad_postprocess(inp, create_graph) for inp in inputs)


def _validate_v(v: tuple[Tensor, ...], other: tuple[Tensor, ...], is_other_tuple: bool) -> None:
    if len(other) != len(v):
        if is_other_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for idx, (el_v, el_other) in enumerate(zip(v, other)):
        if el_v.size() != el_other.size():
            prepend = f"Entry {idx} in " if is_other_tuple else ""
            raise RuntimeError(
                f"{prepend}v has invalid size: should be {el_other.size()} but got {el_v.size()}."
            )


def _check_requires_grad(inputs: Any, input_type: str, strict: bool) -> None:
    if not strict:
        return
    for i, inp in enumerate(inputs):
        if inp is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode."
            )
        if inp.requires_grad:
            continue
        if input_type == "hessian":
            raise RuntimeError(
                f"The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."
            )
        if input_type == "jacobian":
            raise RuntimeError(
                "While computing the hessian, found that the jacobian of the user-provided "
                f"function with respect to input {i} is independent of the input. This is "
                "not allowed in strict mode. You should ensure that your function is twice "
                "differentiable and that the jacobian depends on the inputs (this would be "
                "violated by a linear function for example)."
            )
        if input_type == "grad_inputs":
            raise RuntimeError(
                f"The gradient with respect to input {i} is independent of the inputs of "
                "the user-provided function. This is not allowed in strict mode."
            )
        raise RuntimeError(
            f"Output {i} of the user-provided function does not require gradients. The "
            "outputs must be computed in a differentiable manner from the input when "
            "running in strict mode."
        )


def _autograd_grad(
    outputs: tuple[Tensor | None, ...],
    inputs: tuple[Tensor, ...],
    grad_outputs: tuple[Tensor | None, ...] | None = None,
    create_graph: bool = False,
    retain_graph: bool | None = None,
) -> tuple[Tensor | None, ...]:
    # autograd.grad over the outputs that require grad only, allowing unused inputs.
    from . import grad

    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    new_outputs = []
    new_grad_outputs = []
    for out, grad_out in zip(outputs, grad_outputs):
        if out is not None and out.requires_grad:
            new_outputs.append(out)
            new_grad_outputs.append(grad_out)
    if not new_outputs:
        return (None,) * len(inputs)
    return grad(
        new_outputs,
        inputs,
        new_grad_outputs,
        allow_unused=True,
        create_graph=create_graph,
        retain_graph=retain_graph,
    )


_STRICT_NONE = {
    "back": "The output of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} "
    "in the grad_outputs when using the double backward trick to compute forward mode "
    "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input "
    "{i}. This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of "
    "entry {i} in the grad_jacobian. This is not allowed in strict mode as it prevents "
    "from using the double backward trick to replace forward mode AD.",
}


def _fill_in_zeros(
    grads: tuple[Tensor | None, ...],
    refs: tuple[Tensor, ...],
    strict: bool,
    create_graph: bool,
    stage: str,
) -> tuple[Tensor, ...]:
    from .. import zeros_like

    res = []
    for i, grads_i in enumerate(grads):
        if grads_i is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            grads_i = zeros_like(refs[i])
        elif strict and create_graph and not grads_i.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. "
                "This is not allowed in strict mode when create_graph=True."
            )
        res.append(grads_i)
    return tuple(res)


def _single_v_check(v: Any, inputs: tuple[Tensor, ...], where: str) -> None:
    if v is None and (len(inputs) != 1 or inputs[0].numel() != 1):
        raise RuntimeError(
            f"The vector v can only be None if the {where} a single Tensor with a single element."
        )


def vjp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """The vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``.

    Returns ``(func_output, vjp)``; ``vjp`` has the structure of ``inputs``. ``v`` may
    be omitted when ``func`` returns a single one-element tensor. With ``strict``, an
    output independent of an input raises instead of giving zeros.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import vjp
        >>> vjp(lambda x: (x * x).sum(), rustgrad.tensor([1.0, 2.0]))[1]
        tensor([2., 4.])
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vjp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, outputs, is_outputs_tuple)
        else:
            _single_v_check(v, outputs, "user-provided function returns")
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(result, is_inputs_tuple),
    )


def jvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """The Jacobian-vector product ``J v`` of ``func`` at ``inputs``.

    Computed with the double-backward trick: ``u -> J^T u`` is linear in ``u``, so
    differentiating it with respect to ``u`` in direction ``v`` gives ``J v``.
    Returns ``(func_output, jvp)``; ``jvp`` has the structure of the output.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import jvp
        >>> x = rustgrad.tensor([1.0, 2.0])
        >>> jvp(lambda x: x * x, x, rustgrad.tensor([1.0, 1.0]))[1]
        tensor([2., 4.])
    """
    from .. import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            _single_v_check(v, inputs, "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        grad_outputs = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, grad_outputs, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(grad_inputs, grad_outputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, outputs, strict, create_graph, "back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(result, is_outputs_tuple),
    )


def jacobian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    strategy: str = "reverse-mode",
) -> Any:
    """The Jacobian of ``func`` at ``inputs``, one reverse pass per output element.

    For a single input and output the result is a tensor of shape
    ``output.shape + input.shape``; with tuples, ``result[i][j]`` is the Jacobian of
    output ``i`` w.r.t. input ``j``.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import jacobian
        >>> jacobian(lambda x: x * x, rustgrad.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 4.]])
    """
    from .. import stack, zeros_like

    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If '
            'your function has more outputs than inputs, "forward-mode" tends to be more '
            'performant. Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        raise NotImplementedError(
            'rustgrad.autograd.functional.jacobian: strategy="forward-mode" needs '
            'forward-mode AD, which rustgrad does not have; use strategy="reverse-mode".'
        )
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        if vectorize:
            if strict:
                raise RuntimeError(
                    "torch.autograd.functional.jacobian: `strict=True` and "
                    "`vectorized=True` are not supported together. Please either set "
                    "`strict=False` or `vectorize=False`."
                )
            raise NotImplementedError(
                "rustgrad.autograd.functional: vectorize=True needs vmap, which rustgrad "
                "does not have; use vectorize=False."
            )
        jac: list[tuple[Tensor, ...]] = []
        for i, out in enumerate(outputs):
            jac_i: tuple[list[Tensor], ...] = tuple([] for _ in inputs)
            flat = out.reshape(-1)
            for j in range(out.numel()):
                vj = _autograd_grad(
                    (flat[j],), inputs, retain_graph=True, create_graph=create_graph
                )
                for el_idx, (jac_i_el, vj_el, inp_el) in enumerate(zip(jac_i, vj, inputs)):
                    if vj_el is not None:
                        if strict and create_graph and not vj_el.requires_grad:
                            raise RuntimeError(
                                "The jacobian of the user-provided function is independent "
                                f"of input {i}. This is not allowed in strict mode when "
                                "create_graph=True."
                            )
                        jac_i_el.append(vj_el)
                    else:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent "
                                f"of input {el_idx}. This is not allowed in strict mode."
                            )
                        jac_i_el.append(zeros_like(inp_el))
            jac.append(
                tuple(
                    stack(jac_i_el, dim=0).view(tuple(out.size()) + tuple(inputs[k].size()))
                    for k, jac_i_el in enumerate(jac_i)
                )
            )
        result = _grad_postprocess(tuple(jac), create_graph)
        return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    create_graph: bool = False,
    strict: bool = False,
    vectorize: bool = False,
    outer_jacobian_strategy: str = "reverse-mode",
) -> Any:
    """The Hessian of a scalar function ``func`` at ``inputs`` (the Jacobian of its
    gradient).

    For a single input the result has shape ``input.shape + input.shape``; with a
    tuple, ``result[i][j]`` is the block for inputs ``i`` and ``j``.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import hessian
        >>> hessian(lambda x: (x**3).sum(), rustgrad.tensor([1.0, 2.0]))
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Tensor) -> Tensor:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(t_out, "outputs", strict=strict)
        if is_out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a "
                "single element"
            )
        return out.squeeze()

    def jac_func(*inp: Tensor) -> Any:
        jac = jacobian(ensure_single_output_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        return jac

    res = jacobian(
        jac_func,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output_check(outputs: tuple[Tensor, ...], is_tuple: bool, name: str) -> None:
    if is_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {name} should contain a single element"
        )


def vhp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """The vector-Hessian product ``v^T H`` of a scalar ``func`` at ``inputs``.

    Returns ``(func_output, vhp)``; two reverse passes (the second through the first).

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import vhp
        >>> x = rustgrad.tensor([1.0, 2.0])
        >>> vhp(lambda x: (x**3).sum(), x, rustgrad.tensor([1.0, 1.0]))[1]
        tensor([ 6., 12.])
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "vhp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            _single_v_check(v, inputs, "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "vhp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_output_check(outputs, is_outputs_tuple, "vhp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(result, is_inputs_tuple),
    )


def hvp(
    func: Callable[..., Any],
    inputs: Tensor | tuple[Tensor, ...],
    v: Tensor | tuple[Tensor, ...] | None = None,
    create_graph: bool = False,
    strict: bool = False,
) -> tuple[Any, Any]:
    """The Hessian-vector product ``H v`` of a scalar ``func`` at ``inputs``.

    Uses the double-backward trick (three reverse passes), as PyTorch does. Returns
    ``(func_output, hvp)``.

    Example:
        >>> import rustgrad
        >>> from rustgrad.autograd.functional import hvp
        >>> x = rustgrad.tensor([1.0, 2.0])
        >>> hvp(lambda x: (x**3).sum(), x, rustgrad.tensor([1.0, 1.0]))[1]
        tensor([ 6., 12.])
    """
    from .. import zeros_like

    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _grad_preprocess(inputs, create_graph=create_graph, need_graph=True)
        if v is not None:
            _, v = _as_tuple(v, "v", "hvp")
            v = _grad_preprocess(v, create_graph=create_graph, need_graph=False)
            _validate_v(v, inputs, is_inputs_tuple)
        else:
            _single_v_check(v, inputs, "input to the user-provided function is")
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "hvp"
        )
        _check_requires_grad(outputs, "outputs", strict=strict)
        _scalar_output_check(outputs, is_outputs_tuple, "hvp")
        jac = _autograd_grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict=strict)
        grad_jac = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, grad_jac, create_graph=True)
        _check_requires_grad(jac, "hessian", strict=strict)
    with set_grad_enabled(True if create_graph else is_grad_enabled()):
        grad_res = _autograd_grad(double_back, grad_jac, v, create_graph=create_graph)
        result = _fill_in_zeros(grad_res, inputs, strict, create_graph, "double_back_trick")
    outputs = _grad_postprocess(outputs, create_graph)
    result = _grad_postprocess(result, create_graph)
    return (
        _tuple_postprocess(outputs, is_outputs_tuple),
        _tuple_postprocess(result, is_inputs_tuple),
    )
