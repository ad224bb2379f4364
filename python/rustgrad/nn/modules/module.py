"""``Module``: the base class of every layer (PyTorch's ``torch.nn.Module``).

Parameters, buffers and submodules live in three ordered dicts and are registered by
``__setattr__`` (Note [Module registration]); ``__call__`` runs ``forward`` directly
when the module has no hooks, so a small layer costs little more than its functional.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from ..._rustgrad import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["Module", "RemovableHandle"]


def typename(obj: Any) -> str:
    """PyTorch's ``torch.typename`` with rustgrad's package name: ``rustgrad.FloatTensor``."""
    if isinstance(obj, Tensor):
        return "rustgrad." + obj.type().rsplit(".", 1)[-1]
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join(num_spaces * " " + line for line in lines)


class RemovableHandle:
    """A handle returned by the ``register_*_hook`` methods; ``remove()`` unregisters.

    Example:
        >>> import rustgrad
        >>> m = rustgrad.nn.Identity()
        >>> h = m.register_forward_hook(lambda mod, inp, out: None)
        >>> h.remove()
    """

    _next_id = itertools.count()

    def __init__(self, *hooks_dicts: dict[int, Any]) -> None:
        self.hooks_dicts = hooks_dicts
        self.id = next(RemovableHandle._next_id)

    def remove(self) -> None:
        """Removes the hook from every dict it was registered in."""
        for hooks in self.hooks_dicts:
            hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *args: object) -> None:
        self.remove()


class _IncompatibleKeysBase(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class _IncompatibleKeys(_IncompatibleKeysBase):
    """``load_state_dict``'s result: ``(missing_keys, unexpected_keys)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__().replace("_IncompatibleKeysBase", "_IncompatibleKeys")

    __str__ = __repr__


def _tensors_of(value: Any) -> tuple[bool, tuple[Any, ...]]:
    """(was a single tensor, the tuple of values) of a module's inputs or outputs."""
    if isinstance(value, Tensor):
        return True, (value,)
    if isinstance(value, tuple):
        return False, value
    return False, (value,)


class _BackwardHookFunction(Function):
    """Identity on a module's input or output tensors; its backward sees their gradients
    and lets the module's full backward (pre) hooks read and replace them."""

    @staticmethod
    def forward(ctx: Any, state: _BackwardHookState, side: str, *tensors: Tensor) -> Any:
        ctx.state = state
        ctx.side = side
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tuple(t.view_as(t) for t in tensors)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> Any:
        if ctx.side == "output":
            grads = ctx.state.on_grad_output(grads)
        else:
            grads = ctx.state.on_grad_input(grads)
        return (None, None, *grads)


class _BackwardHookState:
    """One forward call's link between the output-side and input-side hook Functions
    (PyTorch's ``torch.utils.hooks.BackwardHook``)."""

    def __init__(self, module: Module, hooks: list[Any], pre_hooks: list[Any]) -> None:
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs: tuple[Any, ...] | None = None
        self.n_inputs = 0
        self.requires_input_grad = False

    def _wrap(self, side: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        if side == "input":
            self.n_inputs = len(positions)
            self.requires_input_grad = any(values[i].requires_grad for i in positions)
            if not self.requires_input_grad:
                return values
        if not positions:
            return values
        wrapped = _BackwardHookFunction.apply(self, side, *(values[i] for i in positions))
        if isinstance(wrapped, Tensor):
            wrapped = (wrapped,)
        out = list(values)
        for i, w in zip(positions, wrapped):
            out[i] = w
        return tuple(out)

    def setup_input_hook(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """Wraps the tensor inputs so that their gradients reach the full hooks."""
        return self._wrap("input", args)

    def setup_output_hook(self, result: Any) -> Any:
        """Wraps the tensor outputs so that their gradients reach the pre hooks."""
        single, values = _tensors_of(result)
        wrapped = self._wrap("output", values)
        return wrapped[0] if single else (wrapped if isinstance(result, tuple) else wrapped[0])

    @staticmethod
    def _replace(name: str, grads: tuple[Any, ...], result: Any) -> tuple[Any, ...]:
        if result is None:
            return grads
        result = (result,) if isinstance(result, Tensor) else tuple(result)
        if len(result) != len(grads):
            raise RuntimeError(
                f"Backward hook returned an invalid number of grad_{name} (got "
                f"{len(result)}, but expected {len(grads)})"
            )
        return result

    def on_grad_output(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        for hook in self.pre_hooks:
            grads = self._replace("output", grads, hook(self.module, grads))
        self.grad_outputs = grads
        if not self.requires_input_grad:
            # No input requires grad: the full hooks run now, with grad_input None.
            for hook in self.hooks:
                hook(self.module, (None,) * max(self.n_inputs, 1), grads)
        return grads

    def on_grad_input(self, grads: tuple[Any, ...]) -> tuple[Any, ...]:
        for hook in self.hooks:
            grads = self._replace("input", grads, hook(self.module, grads, self.grad_outputs))
        return grads


_global_forward_pre_hooks: dict[int, Any] = OrderedDict()
_global_forward_hooks: dict[int, Any] = OrderedDict()


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A forward pre hook run before every module's forward."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """A forward hook run after every module's forward."""
    handle = RemovableHandle(_global_forward_hooks)
    _global_forward_hooks[handle.id] = hook
    return handle


def _forward_unimplemented(self: Module, *input: Any) -> None:
    raise NotImplementedError(
        f'Module [{type(self).__name__}] is missing the required "forward" function'
    )


class Module:
    """Base class of all neural network modules; subclass it and assign layers in
    ``__init__`` (after ``super().__init__()``), then write ``forward``.

    Example:
        >>> import rustgrad
        >>> from rustgrad import nn
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(3, 2)
        ...     def forward(self, x):
        ...         return self.fc(x)
        >>> [name for name, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    training: bool
    _version: int = 1
    call_super_init: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise TypeError(
                f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                f"'{next(iter(kwargs))}'"
                if kwargs
                else f"{type(self).__name__}.__init__() takes 1 positional argument but "
                f"{len(args) + 1} were given"
            )
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        setattr_(self, "_forward_pre_hooks", OrderedDict())
        setattr_(self, "_forward_pre_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks", OrderedDict())
        setattr_(self, "_forward_hooks_with_kwargs", {})
        setattr_(self, "_forward_hooks_always_called", {})
        setattr_(self, "_backward_hooks", OrderedDict())
        setattr_(self, "_backward_pre_hooks", OrderedDict())
        setattr_(self, "_state_dict_hooks", OrderedDict())
        setattr_(self, "_state_dict_pre_hooks", OrderedDict())
        setattr_(self, "_load_state_dict_post_hooks", OrderedDict())

    forward: Callable[..., Any] = _forward_unimplemented

    # ----------------------------------------------------------------- registration

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Adds a buffer (state that is not a parameter, e.g. BatchNorm's running mean);
        it is in ``state_dict`` unless ``persistent=False``."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        self._check_name("buffer", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(
                f"cannot assign '{typename(tensor)}' object to buffer '{name}' "
                "(torch Tensor or None required)"
            )
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def _check_name(self, kind: str, name: Any) -> None:
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {typename(name)}")
        if "." in name:
            raise KeyError(f'{kind} name can\'t contain "."')
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        store = {"buffer": "_buffers", "parameter": "_parameters", "module": "_modules"}[kind]
        if hasattr(self, name) and name not in getattr(self, store):
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Adds a parameter; ``param`` must be a ``Parameter`` or None."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        self._check_name("parameter", name)
        if param is None:
            self._parameters[name] = None
        elif not isinstance(param, Parameter):
            raise TypeError(
                f"cannot assign '{typename(param)}' object to parameter '{name}' "
                "(torch.nn.Parameter or None required)"
            )
        elif param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters "
                "must be created explicitly. To express '{name}' as a function of another "
                "Tensor, compute the value in the forward() method."
            )
        else:
            self._parameters[name] = param

    def add_module(self, name: str, module: Module | None) -> None:
        """Adds a child module, reachable as an attribute ``name``."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{typename(module)} is not a Module subclass")
        self._check_name("module", name)
        self._modules[name] = module

    def register_module(self, name: str, module: Module | None) -> None:
        """Alias of ``add_module``."""
        self.add_module(name, module)

    def get_submodule(self, target: str) -> Module:
        """The submodule at a dotted path such as ``"layer1.0.conv1"``."""
        if target == "":
            return self
        mod: Module = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")
        return mod

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at a dotted path such as ``"layer1.0.conv1.weight"``."""
        module_path, _, param_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, param_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + param_name + "`")
        param = getattr(mod, param_name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + param_name + "` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at a dotted path such as ``"bn1.running_mean"``."""
        module_path, _, buffer_name = target.rpartition(".")
        mod = self.get_submodule(module_path)
        if not hasattr(mod, buffer_name):
            raise AttributeError(mod._get_name() + " has no attribute `" + buffer_name + "`")
        if buffer_name not in mod._buffers:
            raise AttributeError("`" + buffer_name + "` is not a buffer")
        return getattr(mod, buffer_name)

    # ----------------------------------------------------------------- attributes

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: the registered names.
        d = self.__dict__
        if "_parameters" in d and name in d["_parameters"]:
            return d["_parameters"][name]
        if "_buffers" in d and name in d["_buffers"]:
            return d["_buffers"][name]
        if "_modules" in d and name in d["_modules"]:
            return d["_modules"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, "_buffers", "_modules", "_non_persistent_buffers_set")
            d.pop(name, None)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(
                    f"cannot assign '{typename(value)}' as parameter '{name}' "
                    "(torch.nn.Parameter or None expected)"
                )
            self.register_parameter(name, value)
        else:
            modules = d.get("_modules")
            if isinstance(value, Module):
                if modules is None:
                    raise AttributeError("cannot assign module before Module.__init__() call")
                self._remove_from(name, d, "_parameters", "_buffers", "_non_persistent_buffers_set")
                d.pop(name, None)
                modules[name] = value
            elif modules is not None and name in modules:
                if value is not None:
                    raise TypeError(
                        f"cannot assign '{typename(value)}' as child module '{name}' "
                        "(torch.nn.Module or None expected)"
                    )
                modules[name] = value
            else:
                buffers = d.get("_buffers")
                if buffers is not None and name in buffers:
                    if value is not None and not isinstance(value, Tensor):
                        raise TypeError(
                            f"cannot assign '{typename(value)}' as buffer '{name}' "
                            "(torch.Tensor or None expected)"
                        )
                    buffers[name] = value
                else:
                    object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, d: dict[str, Any], *stores: str) -> None:
        for store in stores:
            container = d.get(store)
            if container is not None and name in container:
                if isinstance(container, set):
                    container.discard(name)
                else:
                    del container[name]

    def __delattr__(self, name: str) -> None:
        for store in ("_parameters", "_buffers", "_modules"):
            container = self.__dict__.get(store)
            if container is not None and name in container:
                del container[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        module_attrs = dir(self.__class__)
        attrs = list(self.__dict__.keys())
        keys = module_attrs + attrs + list(self._parameters) + list(self._modules)
        keys += list(self._buffers)
        return sorted(k for k in set(keys) if not k[0].isdigit())

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        # Modules pickled without some of the newer attributes still work.
        defaults: dict[str, Any] = {
            "_forward_pre_hooks": OrderedDict,
            "_forward_pre_hooks_with_kwargs": dict,
            "_forward_hooks": OrderedDict,
            "_forward_hooks_with_kwargs": dict,
            "_forward_hooks_always_called": dict,
            "_backward_hooks": OrderedDict,
            "_backward_pre_hooks": OrderedDict,
            "_state_dict_hooks": OrderedDict,
            "_state_dict_pre_hooks": OrderedDict,
            "_load_state_dict_post_hooks": OrderedDict,
            "_non_persistent_buffers_set": set,
        }
        for key, factory in defaults.items():
            if key not in self.__dict__:
                self.__dict__[key] = factory()

    # ----------------------------------------------------------------- calling

    def _call_impl(self, *args: Any, **kwargs: Any) -> Any:
        # The fast path: plain dict reads (no attribute lookup through the class MRO).
        d = self.__dict__
        if (
            d["_forward_hooks"]
            or d["_forward_pre_hooks"]
            or d["_backward_hooks"]
            or d["_backward_pre_hooks"]
            or _global_forward_hooks
            or _global_forward_pre_hooks
        ):
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    __call__: Callable[..., Any] = _call_impl

    def _call_with_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        pre_hooks = itertools.chain(
            ((hid, h, False) for hid, h in _global_forward_pre_hooks.items()),
            (
                (hid, h, hid in self._forward_pre_hooks_with_kwargs)
                for hid, h in self._forward_pre_hooks.items()
            ),
        )
        for _hid, hook, with_kwargs in list(pre_hooks):
            if with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of "
                            f"(new_args, new_kwargs), but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)

        bw_state = None
        if self._backward_hooks or self._backward_pre_hooks:
            bw_state = _BackwardHookState(
                self, list(self._backward_hooks.values()), list(self._backward_pre_hooks.values())
            )
            args = bw_state.setup_input_hook(args)

        try:
            result = self.forward(*args, **kwargs)
        except Exception:
            self._run_always_called_hooks(args, kwargs)
            raise

        post_hooks = itertools.chain(
            ((hid, h, False) for hid, h in _global_forward_hooks.items()),
            (
                (hid, h, hid in self._forward_hooks_with_kwargs)
                for hid, h in self._forward_hooks.items()
            ),
        )
        for _hid, hook, with_kwargs in list(post_hooks):
            hook_result = (
                hook(self, args, kwargs, result) if with_kwargs else hook(self, args, result)
            )
            if hook_result is not None:
                result = hook_result

        if bw_state is not None:
            result = bw_state.setup_output_hook(result)
        return result

    def _run_always_called_hooks(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """After ``forward`` raised: the forward hooks registered with ``always_call``
        run with output None; their own errors become warnings (the first error wins)."""
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id not in self._forward_hooks_always_called:
                continue
            try:
                if hook_id in self._forward_hooks_with_kwargs:
                    hook(self, args, kwargs, None)
                else:
                    hook(self, args, None)
            except Exception as e:
                warnings.warn(
                    "module forward hook with ``always_call=True`` raised an exception that "
                    f"was silenced as another error was raised in forward: {e}",
                    stacklevel=3,
                )

    # ----------------------------------------------------------------- hooks

    def _add_hook(
        self, store: dict[int, Any], hook: Any, prepend: bool, *extra: dict[int, Any]
    ) -> RemovableHandle:
        handle = RemovableHandle(store, *extra)
        store[handle.id] = hook
        if prepend:
            store.move_to_end(handle.id, last=False)  # type: ignore[attr-defined]
        return handle

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """``hook(module, args)`` (or ``hook(module, args, kwargs)`` with ``with_kwargs``)
        runs before ``forward`` and may return replacement args."""
        handle = self._add_hook(
            self._forward_pre_hooks, hook, prepend, self._forward_pre_hooks_with_kwargs
        )
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        return handle

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """``hook(module, args, output)`` runs after ``forward`` and may return a
        replacement output."""
        handle = self._add_hook(
            self._forward_hooks,
            hook,
            prepend,
            self._forward_hooks_with_kwargs,
            self._forward_hooks_always_called,
        )
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        return handle

    def register_full_backward_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients with respect
        to the module's inputs are computed; it may return a replacement grad_input."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """``hook(module, grad_output)`` runs when the gradients with respect to the
        module's outputs are computed; it may return a replacement grad_output."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """Deprecated in PyTorch; rustgrad runs it as a full backward hook."""
        return self.register_full_backward_hook(hook)

    # ----------------------------------------------------------------- traversal

    def _named_members(
        self,
        get_members: Callable[[Module], Any],
        prefix: str = "",
        recurse: bool = True,
        remove_duplicate: bool = True,
    ) -> Iterator[tuple[str, Any]]:
        memo: set[int] = set()
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        for module_prefix, module in modules:
            for k, v in get_members(module):
                if v is None or id(v) in memo:
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (module_prefix + ("." if module_prefix else "") + k, v)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """The parameters of this module (and its submodules if ``recurse``), each once."""
        for _name, param in self.named_parameters(recurse=recurse):
            yield param

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` pairs such as ``("layer1.0.conv1.weight", p)``."""
        return self._named_members(
            lambda m: m._parameters.items(), prefix, recurse, remove_duplicate
        )

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """The buffers of this module (and its submodules if ``recurse``)."""
        for _name, buf in self.named_buffers(recurse=recurse):
            yield buf

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Tensor]]:
        """``(dotted name, buffer)`` pairs, persistent or not."""
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _name, module in self.named_children():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` of the direct submodules, each module once."""
        memo: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in memo:
                memo.add(id(module))
                yield name, module

    def modules(self) -> Iterator[Module]:
        """This module and every submodule, depth first, each once."""
        for _name, module in self.named_modules():
            yield module

    def named_modules(
        self, memo: set[int] | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """``(dotted name, module)`` of this module (name ``""``) and every submodule."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            submodule_prefix = prefix + ("." if prefix else "") + name
            yield from module.named_modules(memo, submodule_prefix, remove_duplicate)

    # ----------------------------------------------------------------- modes and state

    def train(self, mode: bool = True) -> Module:
        """Sets training mode (dropout active, batch norm updating its statistics)."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> Module:
        """Sets evaluation mode: ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Sets ``requires_grad`` of every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Resets the gradients of every parameter (to None by default)."""
        for p in self.parameters():
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad = p.grad.detach().zero_()

    def apply(self, fn: Callable[[Module], None]) -> Module:
        """Calls ``fn`` on every submodule (children first) and then on this module."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _apply(self, fn: Callable[[Tensor], Tensor], recurse: bool = True) -> Module:
        if recurse:
            for module in self.children():
                module._apply(fn)
        with no_grad():
            for key, param in self._parameters.items():
                if param is None:
                    continue
                applied = fn(param.data)
                if applied.is_meta == param.is_meta:
                    param.data = applied
                    if param.grad is not None:
                        param.grad = fn(param.grad)
                    continue
                # To or from the meta device: a new Parameter, as PyTorch does when the
                # tensor types differ (Note [Meta device]).
                new = Parameter(applied, param.requires_grad)
                if param.grad is not None:
                    new.grad = fn(param.grad)
                self._parameters[key] = new
            for key, buf in self._buffers.items():
                if buf is not None:
                    self._buffers[key] = fn(buf)
        return self

    def to(self, *args: Any, **kwargs: Any) -> Module:
        """Converts floating-point parameters and buffers: ``to(dtype)``, ``to(device)``,
        ``to(tensor)`` or ``to(device, dtype)``. Integer buffers keep their dtype. The
        devices are the CPU and ``meta``; a meta module moves to the CPU with
        :meth:`to_empty`, as in PyTorch."""
        from ... import device as device_type

        dtype, device = kwargs.get("dtype"), kwargs.get("device")
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif hasattr(arg, "is_floating_point"):
                dtype = arg
            elif isinstance(arg, (str, device_type)) or (
                isinstance(arg, int) and not isinstance(arg, bool)
            ):
                device = arg
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got "
                f"desired dtype={dtype}"
            )

        def convert(t: Tensor) -> Tensor:
            cast = dtype if dtype is not None and t.is_floating_point() else None
            try:
                if device is not None:
                    return t.to(device=device, dtype=cast)
                return t if cast is None else t.to(cast)
            except NotImplementedError as e:
                base = "Cannot copy out of meta tensor; no data!"
                if str(e).startswith(base):
                    raise NotImplementedError(
                        f"{base} Please use torch.nn.Module.to_empty() instead of "
                        "torch.nn.Module.to() when moving module from meta to a different "
                        "device."
                    ) from None
                raise

        return self._apply(convert)

    def to_empty(self, *, device: Any, recurse: bool = True) -> Module:
        """Moves the parameters and buffers to ``device`` with new, uninitialised storage
        (here zero-filled): how a module built on the ``meta`` device gets real tensors.

        Args:
            device: the target device (the CPU, or ``meta``).
            recurse: also the submodules' parameters and buffers (default True).

        Example:
            >>> with rustgrad.device("meta"):
            ...     model = nn.Linear(3, 4)
            >>> model.to_empty(device="cpu").weight.is_meta
            False
        """
        from ... import empty_like

        return self._apply(lambda t: empty_like(t, device=device), recurse=recurse)

    def _float_as(self, dtype: Any) -> Module:
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self) -> Module:
        """Casts floating-point parameters and buffers to float32."""
        from ... import float32

        return self._float_as(float32)

    def double(self) -> Module:
        """Casts floating-point parameters and buffers to float64."""
        from ... import float64

        return self._float_as(float64)

    def half(self) -> Module:
        """Casts floating-point parameters and buffers to float16."""
        from ... import float16

        return self._float_as(float16)

    def cpu(self) -> Module:
        """A no-op: rustgrad runs on the CPU."""
        return self

    def type(self, dst_type: Any) -> Module:
        """Casts every parameter and buffer to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    def share_memory(self) -> Module:
        """A no-op kept for PyTorch compatibility."""
        return self

    # ----------------------------------------------------------------- state dict

    def _save_to_state_dict(
        self, destination: dict[str, Any], prefix: str, keep_vars: bool
    ) -> None:
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()

    def state_dict(
        self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False
    ) -> dict[str, Any]:
        """An ordered dict of every parameter and persistent buffer by dotted name; the
        values are detached (never requiring grad) unless ``keep_vars``. As PyTorch's:
        pre-hooks run first (``hook(module, prefix, keep_vars)``), then this module's
        entries and its children's are saved, then the post-hooks run
        (``hook(module, state_dict, prefix, local_metadata)``)."""
        if args:
            # PyTorch's deprecated positional form state_dict(destination, prefix, keep_vars).
            warnings.warn(
                "Positional args are being deprecated, use kwargs instead. Refer to "
                "https://pytorch.org/docs/main/generated/torch.nn.Module.html"
                "#torch.nn.Module.state_dict for details.",
                FutureWarning,
                stacklevel=2,
            )
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # type: ignore[attr-defined]
        local_metadata = {"version": self._version}
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(
                    destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars
                )
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, local_metadata)
            if not getattr(hook, "_from_public_api", False):
                if result is not None:
                    destination = result
            elif result is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return destination

    def _check_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
        to_load: list[tuple[Module, str, Any, bool]],
        assign: bool = False,
    ) -> None:
        """Collects this module's own problems and the (module, name, value) pairs to load."""
        persistent_buffers = {
            k: v for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set
        }
        local_state = {
            **{k: (v, True) for k, v in self._parameters.items() if v is not None},
            **{k: (v, False) for k, v in persistent_buffers.items() if v is not None},
        }
        for name, (param, is_param) in local_state.items():
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            input_param = state_dict[key]
            if not isinstance(input_param, Tensor):
                error_msgs.append(
                    f'While copying the parameter named "{key}", expected torch.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(input_param)}"
                )
                continue
            if tuple(input_param.shape) != tuple(param.shape):
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {input_param.shape} "
                    f"from checkpoint, the shape in current model is {param.shape}."
                )
                continue
            if param.is_meta and not input_param.is_meta and not assign:
                warnings.warn(
                    f"for {key}: copying from a non-meta parameter in the checkpoint to a meta "
                    "parameter in the current model, which is a no-op. (Did you mean to "
                    "pass `assign=True` to assign items in the state dictionary to their "
                    "corresponding key in the module instead of copying them in place?)",
                    stacklevel=3,
                )
            to_load.append((self, name, input_param, is_param))
        for key in state_dict.keys():
            if key.startswith(prefix):
                input_name = key[len(prefix) :].split(".", 1)
                if len(input_name) > 1:
                    if input_name[0] not in self._modules:
                        unexpected_keys.append(key)
                elif input_name[0] not in local_state:
                    unexpected_keys.append(key)

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copies parameters and buffers from ``state_dict``.

        Every problem (missing keys and unexpected keys when ``strict``, size mismatches
        always) is reported in one RuntimeError, and then nothing in the model has
        changed (PyTorch copies the matching entries before raising; rustgrad checks
        first). With ``assign=True`` the module takes the state dict's tensors
        (as Parameters where it had Parameters) instead of copying into its own.

        Returns:
            ``(missing_keys, unexpected_keys)`` as a named tuple.
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing_keys: list[str] = []
        unexpected_keys: list[str] = []
        error_msgs: list[str] = []
        to_load: list[tuple[Module, str, Any, bool]] = []
        for prefix, module in self.named_modules(remove_duplicate=False):
            module._check_state_dict(
                state_dict,
                prefix + "." if prefix else "",
                missing_keys,
                unexpected_keys,
                error_msgs,
                to_load,
                assign,
            )
        if strict:
            if unexpected_keys:
                error_msgs.insert(
                    0,
                    "Unexpected key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in unexpected_keys)
                    ),
                )
            if missing_keys:
                error_msgs.insert(
                    0,
                    "Missing key(s) in state_dict: {}. ".format(
                        ", ".join(f'"{k}"' for k in missing_keys)
                    ),
                )
        if error_msgs:
            raise RuntimeError(
                "Error(s) in loading state_dict for {}:\n\t{}".format(
                    self.__class__.__name__, "\n\t".join(error_msgs)
                )
            )
        with no_grad():
            for module, name, value, is_param in to_load:
                if assign:
                    if is_param:
                        old = module._parameters[name]
                        if isinstance(value, Parameter):
                            new = value.requires_grad_(old.requires_grad)
                        else:
                            new = Parameter(value, requires_grad=old.requires_grad)
                        module._parameters[name] = new
                    else:
                        module._buffers[name] = value
                else:
                    target = module._parameters[name] if is_param else module._buffers[name]
                    target.copy_(value)
        result = _IncompatibleKeys(missing_keys, unexpected_keys)
        for hook in self._load_state_dict_post_hooks.values():
            hook(self, result)
        return result

    def register_state_dict_pre_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, prefix, keep_vars)`` runs at the start of ``state_dict``,
        before anything is saved (PyTorch's)."""
        return self._add_hook(self._state_dict_pre_hooks, hook, False)

    def register_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` runs at the end of
        ``state_dict``; it may change ``state_dict`` in place and must return None."""
        hook._from_public_api = True  # type: ignore[attr-defined]
        return self._add_hook(self._state_dict_hooks, hook, False)

    def _register_state_dict_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """PyTorch's private post-hook: as ``register_state_dict_post_hook``, but a
        returned dict replaces the state dict (respected at the root module)."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError(
                "Cannot register the same function as the state dict post hook that was "
                "previously registered via register_state_dict_post_hook"
            )
        return self._add_hook(self._state_dict_hooks, hook, False)

    def register_load_state_dict_post_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict``."""
        return self._add_hook(self._load_state_dict_post_hooks, hook, False)

    # ----------------------------------------------------------------- repr

    def extra_repr(self) -> str:
        """The module-specific part of ``repr``; layers override it."""
        return ""

    def _get_name(self) -> str:
        return self.__class__.__name__

    def __repr__(self) -> str:
        extra_lines: list[str] = []
        extra_repr = self.extra_repr()
        if extra_repr:
            extra_lines = extra_repr.split("\n")
        child_lines = []
        for key, module in self._modules.items():
            mod_str = _addindent(repr(module), 2)
            child_lines.append("(" + key + "): " + mod_str)
        lines = extra_lines + child_lines
        main_str = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                main_str += extra_lines[0]
            else:
                main_str += "\n  " + "\n  ".join(lines) + "\n"
        return main_str + ")"
