"""Custom autograd Functions (``rustgrad.autograd.Function``): gradients against finite
differences (gradcheck / gradgradcheck) and closed forms, every ctx feature, PyTorch's
errors, errors raised in backward, and reentrant backward. Expected texts are PyTorch
2.15's."""

import math
import threading

import pytest
import rustgrad as torch
from rustgrad.autograd import Function, gradcheck, gradgradcheck
from rustgrad.autograd.function import FunctionCtx, once_differentiable

FREED = "Trying to backward through the graph a second time"


def dleaf(*values):
    return torch.tensor(list(values), dtype=torch.float64, requires_grad=True)


class Sin(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos()


class Exp(Function):
    """Saves its output."""

    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad * y


class MulAdd(Function):
    """``x * y + k``, a number argument among the tensors; two outputs."""

    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x, y)
        ctx.k = k
        return x * y + k, x - y

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return g1 * y + g2, None, g1 * x - g2


class SinSetup(Function):
    """The ``setup_context`` style, with a keyword argument that has a default."""

    @staticmethod
    def forward(x, scale=2.0):
        return x.sin() * scale

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, scale = inputs
        ctx.save_for_backward(x)
        ctx.scale = scale

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x.cos() * ctx.scale, None


def test_forward_value_grad_fn_name_and_closed_form_gradient():
    x = dleaf(0.1, 0.5, 2.0)
    y = Sin.apply(x)
    assert type(y.grad_fn).__name__ == "SinBackward"
    assert y.grad_fn.name() == "SinBackward"
    assert y.grad_fn is y.grad_fn
    assert y.grad_fn.next_functions[0][0].variable is x
    assert y.requires_grad and not y.is_leaf
    y.sum().backward()
    assert x.grad.tolist() == pytest.approx([math.cos(v) for v in (0.1, 0.5, 2.0)], abs=1e-15)


@pytest.mark.parametrize("fn", [Sin, Exp, SinSetup])
def test_gradcheck_and_gradgradcheck(fn):
    x = dleaf(0.3, -0.8, 1.4)
    assert gradcheck(fn.apply, (x,))
    assert gradgradcheck(fn.apply, (x,))


def test_several_inputs_and_outputs_with_a_number_argument():
    x, y = dleaf(1.0, 2.0), dleaf(3.0, -1.0)
    a, b = MulAdd.apply(x, 5.0, y)
    assert a.tolist() == [8.0, 3.0] and b.tolist() == [-2.0, 3.0]
    assert a.grad_fn is b.grad_fn and (a.output_nr, b.output_nr) == (0, 1)
    (a.sum() + 2 * b.sum()).backward()
    assert x.grad.tolist() == [3.0 + 2.0, -1.0 + 2.0]
    assert y.grad.tolist() == [1.0 - 2.0, 2.0 - 2.0]
    assert gradcheck(lambda x, y: MulAdd.apply(x, 5.0, y), (x, y))
    assert gradgradcheck(lambda x, y: MulAdd.apply(x, 5.0, y), (x, y))


def test_forward_runs_with_grad_mode_off_and_kwargs_reach_it():
    seen = []

    class F(Function):
        @staticmethod
        def forward(ctx, x, k=3.0):
            seen.append(torch.is_grad_enabled())
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * 2.0, None

    x = dleaf(1.0)
    assert F.apply(x, k=2.0).tolist() == [2.0]
    assert seen == [False]
    y = SinSetup.apply(x, scale=3.0)
    assert y.tolist() == pytest.approx([3 * math.sin(1.0)])


def test_needs_input_grad_and_none_gradient_for_non_tensor_inputs():
    record = []

    class F(Function):
        @staticmethod
        def forward(ctx, x, y, flag):
            record.append(ctx.needs_input_grad)
            return x * y

        @staticmethod
        def backward(ctx, g):
            record.append(ctx.needs_input_grad)
            return g, None, None

    x = dleaf(1.0, 2.0)
    out = F.apply(x, torch.ones(2, dtype=torch.float64), "flag")
    assert out.grad_fn.next_functions[1] == (None, 0)
    out.sum().backward()
    assert record == [(True, False, False), (True, False, False)]


def test_no_node_when_nothing_requires_grad_or_under_no_grad():
    x = torch.tensor([1.0, 2.0], dtype=torch.float64)
    assert Sin.apply(x).grad_fn is None
    with torch.no_grad():
        y = Sin.apply(dleaf(1.0))
    assert y.grad_fn is None and not y.requires_grad


def test_input_returned_as_is_is_a_new_tensor_with_the_node():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return 3 * g

    x = dleaf(1.0, 2.0)
    y = Identity.apply(x)
    assert y is not x and y._base is x
    assert type(y.grad_fn).__name__ == "IdentityBackward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    a = x * 1.0
    for target, name in ((lambda t: t, "Identity"), (lambda t: t[0], "Select")):
        y = Identity.apply(a)
        with pytest.raises(RuntimeError) as info:
            target(y).add_(1.0)
        assert str(info.value).startswith(
            f"Output 0 of {name} is a view and is being modified inplace. This view was "
            "created inside a custom Function (or because an input was returned as-is)"
        )
    assert a.tolist() == [1.0, 2.0]


def test_a_view_made_in_forward_refuses_in_place_writes():
    class First(Function):
        @staticmethod
        def forward(ctx, x):
            return x[0]

        @staticmethod
        def backward(ctx, g):
            return torch.stack([g, torch.zeros_like(g)])

    x = dleaf(1.0, 2.0)
    a = x * 1.0
    y = First.apply(a)
    # (``y._base is a`` in PyTorch; here a non-leaf base is a new object with a's data.)
    assert y._base.tolist() == a.tolist() and type(y.grad_fn).__name__ == "FirstBackward"
    with pytest.raises(RuntimeError, match="Output 0 of First is a view and is being modified"):
        y.add_(1.0)
    y.backward()
    assert x.grad.tolist() == [1.0, 0.0]


def test_non_tensor_outputs_pass_through_and_get_none_gradients():
    got = []

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, 3

        @staticmethod
        def backward(ctx, g, g_number):
            got.append(g_number)
            return g * 2

    x = dleaf(1.0, 2.0)
    y, n = F.apply(x)
    assert n == 3
    y.sum().backward()
    assert got == [None] and x.grad.tolist() == [2.0, 2.0]


def test_materialize_grads_zeros_by_default_and_none_when_off():
    got = []

    def make(materialize):
        class F(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x.sum(), x * 2

            @staticmethod
            def backward(ctx, a, b):
                got.append(a)
                return b * 2

        return F

    x = dleaf(1.0, 2.0, 3.0)
    make(True).apply(x)[1].sum().backward()
    assert got[-1] is not None and got[-1].tolist() == 0.0
    make(False).apply(x)[1].sum().backward()
    assert got[-1] is None
    assert x.grad.tolist() == [4.0, 4.0, 4.0]


def test_mark_non_differentiable():
    class SortValues(Function):
        @staticmethod
        def forward(ctx, x):
            values, idx = x.sort()
            mask = values > 1.5
            ctx.mark_non_differentiable(mask)
            ctx.save_for_backward(idx)
            return values, mask

        @staticmethod
        def backward(ctx, g, g_mask):
            (idx,) = ctx.saved_tensors
            out = torch.zeros(g.shape, dtype=g.dtype)
            return out.scatter(0, idx, g)

    x = dleaf(3.0, 1.0, 2.0)
    values, mask = SortValues.apply(x)
    assert values.requires_grad and not mask.requires_grad and mask.grad_fn is None
    (values * torch.tensor([1.0, 10.0, 100.0], dtype=torch.float64)).sum().backward()
    assert x.grad.tolist() == [100.0, 1.0, 10.0]


class AddOneInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        x.add_(1.0)
        return x

    @staticmethod
    def backward(ctx, g):
        return g * 5.0


def test_mark_dirty_rebases_the_input_and_bumps_its_version():
    x = dleaf(1.0, 2.0)
    a = x * 1.0
    version = a._version
    b = AddOneInPlace.apply(a)
    assert b is a
    assert a._version == version + 1
    assert type(a.grad_fn).__name__ == "AddOneInPlaceBackward"
    assert a.tolist() == [2.0, 3.0]
    a.sum().backward()
    assert x.grad.tolist() == [5.0, 5.0]


def test_mark_dirty_on_a_leaf_that_requires_grad_raises():
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used"):
        AddOneInPlace.apply(dleaf(1.0))


def test_saved_tensor_modified_in_place_raises_the_version_error():
    x = dleaf(1.0, 2.0)
    a = x * 1.0
    y = Sin.apply(a)
    a.mul_(2)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "one of the variables needed for gradient computation has been modified by an" in msg
    assert "[torch.DoubleTensor [2]], which is output 0 of MulBackward0, is at version 1" in msg
    assert "expected version 0 instead" in msg


CAUGHT: list[str] = []


class SavesButMayNotRead(Function):
    """Saves its input; its backward reads ``ctx.saved_tensors`` only when ``read``."""

    @staticmethod
    def forward(ctx, x, read):
        ctx.save_for_backward(x)
        ctx.read = read
        return x * 3

    @staticmethod
    def backward(ctx, grad):
        if ctx.read:
            try:
                _ = ctx.saved_tensors
            except RuntimeError as e:
                CAUGHT.append(str(e))
            _ = ctx.saved_tensors  # raises again: reading is what checks
        return grad * 3, None


def test_saved_tensors_are_version_checked_when_read_not_before():
    # PyTorch checks ctx.saved_tensors when backward reads them: a backward that does
    # not read them runs even though the saved tensor was modified in place.
    x = dleaf(1.0, 2.0)
    a = x * 1.0
    y = SavesButMayNotRead.apply(a, False)
    a.mul_(2)
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    # One that reads them gets the version error inside its own backward (where it can
    # catch it), naming the tensor and the node that made it.
    x = dleaf(1.0, 2.0)
    a = x * 1.0
    y = SavesButMayNotRead.apply(a, True)
    a.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    caught = CAUGHT.pop()
    assert "which is output 0 of MulBackward0, is at version 1" in caught
    assert "expected version 0 instead" in caught


def test_backward_twice_and_saved_tensors_outside_backward():
    x = dleaf(1.0)
    y = Sin.apply(x)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == pytest.approx([2 * math.cos(1.0)])
    with pytest.raises(RuntimeError, match=FREED):
        y.backward()


def test_saved_tensors_of_a_leaf_is_the_same_object_and_ctx_attributes_survive():
    seen = {}

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            ctx.anything = {"a": 1}
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen["saved"] = ctx.saved_tensors
            seen["anything"] = ctx.anything
            seen["ctx"] = ctx
            return g * 2

    x = dleaf(1.0)
    F.apply(x).backward()
    assert seen["saved"][0] is x and seen["saved"][1] is None
    assert seen["anything"] == {"a": 1}
    assert isinstance(seen["ctx"], FunctionCtx)
    assert type(seen["ctx"]).__name__ == "FBackward"
    with pytest.raises(RuntimeError, match=FREED):
        _ = seen["ctx"].saved_tensors


def test_double_backward_with_create_graph():
    x = dleaf(0.5, 1.5)
    y = Sin.apply(x).sum()
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    assert g.tolist() == pytest.approx([math.cos(0.5), math.cos(1.5)])
    g.sum().backward()
    assert x.grad.tolist() == pytest.approx([-math.sin(0.5), -math.sin(1.5)])
    x.grad = None
    y = Exp.apply(x).sum()
    y.backward(create_graph=True)
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == pytest.approx([math.exp(0.5), math.exp(1.5)])


class OnceExp(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert not torch.is_grad_enabled()
        return g * x.exp()


def test_once_differentiable_first_order_works_and_double_backward_raises():
    x = dleaf(0.2, 0.4)
    OnceExp.apply(x).sum().backward()
    assert x.grad.tolist() == pytest.approx([math.exp(0.2), math.exp(0.4)])
    ones = torch.ones(2, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(OnceExp.apply(x), x, grad_outputs=ones, create_graph=True)
    assert g.requires_grad
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        g.sum().backward()
    # With an implicit root gradient nothing requires grad: the result has no history.
    (g,) = torch.autograd.grad(OnceExp.apply(x).sum(), x, create_graph=True)
    assert not g.requires_grad


def make_returning(grads):
    class F(Function):
        @staticmethod
        def forward(ctx, x, k=None):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return grads(g)

    return F


def test_wrong_number_of_gradients():
    x = dleaf(1.0, 2.0)
    with pytest.raises(RuntimeError) as info:
        make_returning(lambda g: (g, g)).apply(x).sum().backward()
    assert str(info.value) == (
        "function FBackward returned an incorrect number of gradients (expected 1, got 2)"
    )
    # Extra Nones are allowed.
    make_returning(lambda g: (g, None, None)).apply(x).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_wrong_shape_of_gradient():
    x = dleaf(1.0, 2.0)
    three = torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError) as info:
        make_returning(lambda g: three).apply(x).sum().backward()
    assert str(info.value) == (
        "Function FBackward returned an invalid gradient at index 0 - got [3] but expected "
        "shape compatible with [2]"
    )
    # A gradient the input's shape expands to is summed down, as PyTorch's.
    x.grad = None
    make_returning(lambda g: torch.ones(3, 2, dtype=torch.float64)).apply(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_gradient_of_another_dtype_is_cast():
    x = dleaf(1.0, 2.0)
    make_returning(lambda g: torch.ones(2, dtype=torch.float32)).apply(x).sum().backward()
    assert x.grad.dtype == torch.float64 and x.grad.tolist() == [1.0, 1.0]
    make_returning(lambda g: torch.ones(2, dtype=torch.int64)).apply(x).sum().backward()
    assert x.grad.dtype == torch.float64 and x.grad.tolist() == [2.0, 2.0]


def test_gradient_for_a_non_tensor_input_and_a_non_tensor_gradient():
    x = dleaf(1.0)
    with pytest.raises(RuntimeError) as info:
        make_returning(lambda g: (g, g)).apply(x, 3).sum().backward()
    assert str(info.value) == (
        "function FBackward returned a gradient different than None at position 2, but the "
        "corresponding forward input was not a Variable"
    )
    with pytest.raises(RuntimeError, match=r"expected Variable or None \(got int\)"):
        make_returning(lambda g: 3).apply(x).sum().backward()


def test_an_exception_in_backward_reaches_the_caller_unchanged():
    class Boom(Exception):
        pass

    error = Boom("mine")

    class F(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise error

    x = dleaf(1.0)
    with pytest.raises(Boom) as info:
        F.apply(x).sum().backward()
    assert info.value is error
    with pytest.raises(Boom):
        torch.autograd.grad(F.apply(x).sum(), x)
    Sin.apply(x).backward()
    assert x.grad.tolist() == pytest.approx([math.cos(1.0)])


class Reentrant(Function):
    """Calls ``autograd.grad`` and ``backward`` inside its backward."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            inner = x.detach().requires_grad_()
            (d,) = torch.autograd.grad((inner * inner).sum(), inner)
            other = inner * 3
            other.sum().backward()
        return g * d


def test_reentrant_backward_and_grad_inside_backward():
    x = dleaf(1.0, 2.0)
    Reentrant.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_threads_running_custom_backward_finish():
    errors = []

    def work():
        try:
            for _ in range(20):
                x = dleaf(0.5, 1.0)
                Sin.apply(Exp.apply(x)).sum().backward()
                expected = [math.cos(math.exp(v)) * math.exp(v) for v in (0.5, 1.0)]
                assert x.grad.tolist() == pytest.approx(expected)
                x.grad = None
                Reentrant.apply(x).sum().backward()
                assert x.grad.tolist() == [1.0, 2.0]  # 2x
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "deadlock"
    assert errors == []


def test_legacy_and_missing_methods_raise_pytorchs_errors():
    class NoBackward(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    class Empty(Function):
        pass

    x = dleaf(1.0)
    with pytest.raises(NotImplementedError, match="You must implement the forward function"):
        Empty.apply(x)
    with pytest.raises(NotImplementedError, match="You must implement either the backward"):
        NoBackward.apply(x).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save variables"):

        class BadSave(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x

        BadSave.apply(x)


def test_nodes_are_freed_with_the_graph():
    import gc

    gc.collect()
    before = torch._rustgrad._live_nodes()
    for _ in range(50):
        x = dleaf(1.0, 2.0)
        y = MulAdd.apply(x, 1.0, Exp.apply(x))[0]
        y.sum().backward()
        del x, y
    gc.collect()
    assert torch._rustgrad._live_nodes() - before < 10


# ----- grad_fn is the ctx (issue 19 item 13) -------------------------------------------


def test_grad_fn_is_the_ctx_as_pytorch():
    # PyTorch 2.15: the node of a custom Function is its ctx object, so what forward
    # put on ctx is read from y.grad_fn, and the node's API works on the ctx.
    import gc
    import weakref

    seen = {}

    class Scale(Function):
        @staticmethod
        def forward(ctx, x, k):
            seen["forward"] = ctx
            ctx.k = k
            ctx.save_for_backward(x)
            return x * k

        @staticmethod
        def backward(ctx, g):
            seen["backward"] = ctx
            (x,) = ctx.saved_tensors
            return g * ctx.k + ctx.extra * x, None

    x = dleaf(1.0, 2.0)
    h = x * 1
    y = Scale.apply(h, 3.0)
    node = y.grad_fn
    assert node is seen["forward"] and y.grad_fn is node
    assert type(node).__name__ == "ScaleBackward" and node.name() == "ScaleBackward"
    assert isinstance(node, torch.autograd.graph.Node) and isinstance(node, FunctionCtx)
    assert node.k == 3.0 and node.needs_input_grad == (True, False)
    (saved,) = node.saved_tensors
    assert saved.tolist() == [1.0, 2.0] and saved.grad_fn is h.grad_fn
    assert node.next_functions == ((h.grad_fn, 0),)
    assert node.metadata == {}
    node.extra = 10.0  # set on grad_fn, read by backward from ctx
    log = []
    handle = node.register_hook(lambda gi, go: log.append((gi[0].tolist(), go[0].tolist())))
    y.sum().backward(retain_graph=True)
    assert seen["backward"] is node and x.grad.tolist() == [13.0, 23.0]
    assert log == [([13.0, 23.0], [1.0, 1.0])]
    handle.remove()
    assert node.saved_tensors[0].tolist() == [1.0, 2.0]
    y.sum().backward()
    with pytest.raises(RuntimeError, match=FREED):
        _ = node.saved_tensors
    # The node owns ctx and ctx holds the node weakly: no cycle, both are freed.
    ref = weakref.ref(node)
    del node, y, seen["forward"], seen["backward"]
    gc.collect()
    assert ref() is None


def test_ctx_of_a_function_that_records_nothing():
    # No node under no_grad: PyTorch's ctx.saved_tensors is then empty.
    seen = {}

    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            seen["ctx"] = ctx
            ctx.save_for_backward(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with torch.no_grad():
        y = Id.apply(dleaf(1.0))
    assert y.grad_fn is None
    ctx = seen["ctx"]
    assert ctx.saved_tensors == () and ctx.name() == "IdBackward"
    assert ctx == ctx and ctx != Id._backward_cls()


# ----- mark_dirty on a view (issue 19 item 11) -----------------------------------------


class _MulInplace(Function):
    """x *= w in place (x marked dirty); the dirty input is argument ``dirty_at``."""

    @staticmethod
    def forward(ctx, a, b, dirty_at):
        x, w = (a, b) if dirty_at == 0 else (b, a)
        ctx.dirty_at = dirty_at
        x.mul_(w)
        ctx.mark_dirty(x)
        ctx.save_for_backward(x, w)  # the output: differentiable for double backward
        return x

    @staticmethod
    def backward(ctx, g):
        out, w = ctx.saved_tensors
        gx, gw = g * w, (g * out / w).sum()
        return (gx, gw, None) if ctx.dirty_at == 0 else (gw, gx, None)


@pytest.mark.parametrize("dirty_at", [0, 1])
def test_mark_dirty_on_a_view_rebases_the_base_through_copy_slices(dirty_at):
    # As PyTorch's rebase_history: the base's grad_fn becomes CopySlices around the
    # Function's node, the view's is re-derived (AsStridedBackward0), and gradients
    # flow to the base's history and to w. Hand-derived: b = a, b[1:4] *= w, loss =
    # sum(b * arange(6)): d/da = arange * (w on 1..3) = [0, 3, 6, 9, 4, 5], d/dw =
    # sum(a[1:4] * arange[1:4]) = 1 + 4 + 9 = 14. (PyTorch 2.15 agrees for
    # dirty_at=0; for dirty_at=1 its CopySlices takes input 0 for the view and gives
    # wrong gradients.)
    a = torch.arange(6.0, dtype=torch.float64).requires_grad_()
    w = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    b = a * 1
    v = b[1:4]
    args = (v, w) if dirty_at == 0 else (w, v)
    out = _MulInplace.apply(*args, dirty_at)
    assert out is v and v._base is b and v._version == 1
    assert type(b.grad_fn).__name__ == "CopySlices"
    assert type(v.grad_fn).__name__ == "AsStridedBackward0"
    assert b.tolist() == [0.0, 3.0, 6.0, 9.0, 4.0, 5.0]
    (b * torch.arange(6.0, dtype=torch.float64)).sum().backward()
    assert a.grad.tolist() == [0.0, 3.0, 6.0, 9.0, 4.0, 5.0]
    assert w.grad.item() == 14.0


def test_mark_dirty_on_a_view_matches_finite_differences():
    def f(a, w):
        b = a * 1
        _MulInplace.apply(w, b[1:3], 1)
        return b.exp()

    a = torch.tensor([0.1, -0.4, 0.7, 0.2], dtype=torch.float64, requires_grad=True)
    w = torch.tensor(1.3, dtype=torch.float64, requires_grad=True)
    assert gradcheck(f, (a, w))
    assert gradgradcheck(f, (a, w))


def test_mark_dirty_on_a_view_of_a_plain_buffer():
    # The view does not require grad, w does: the buffer gets CopySlices and only w a
    # gradient: d/dw sum(buf * arange(4)) with buf[1:3] *= w = 1 + 2 = 3.
    w = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    buf = torch.zeros(4, dtype=torch.float64) + 1
    _MulInplace.apply(buf[1:3], w, 0)
    assert buf.requires_grad and type(buf.grad_fn).__name__ == "CopySlices"
    (buf * torch.arange(4.0, dtype=torch.float64)).sum().backward()
    assert w.grad.item() == 3.0


def test_mark_dirty_on_a_view_refusals_as_pytorch():
    class Two(Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, 5

        @staticmethod
        def backward(ctx, g, h):
            return g * 2

    a = dleaf(1.0, 2.0, 3.0)
    with pytest.raises(RuntimeError, match="your Function cannot return more than one Tensor"):
        Two.apply((a * 1)[1:])
    w = dleaf(2.0)
    with pytest.raises(
        RuntimeError,
        match="a view of a leaf Variable that requires grad is being used in an in-place",
    ):
        _MulInplace.apply(a[1:], w, 0)


def test_ctx_hash_does_not_change_when_the_node_is_recorded():
    seen = {}

    class Id(Function):
        @staticmethod
        def forward(ctx, x):
            seen["hash"] = hash(ctx)
            seen["set"] = {ctx}
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    y = Id.apply(dleaf(1.0))
    assert hash(y.grad_fn) == seen["hash"] and y.grad_fn in seen["set"]
