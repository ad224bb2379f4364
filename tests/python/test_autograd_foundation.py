"""Regression tests for the autograd foundation rules (issue "Repair the foundation").

Expected values come from PyTorch's documented semantics, hand derivations or finite
differences, never from rustgrad itself.
"""

from __future__ import annotations

import itertools
import math

import pytest
import rustgrad as torch

# ----- Note [Gradient ownership] ------------------------------------------------------


def test_grad_after_create_graph_is_not_the_expanded_view():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    c = torch.tensor([10.0, 20.0, 30.0])
    x.sum().backward(create_graph=True)
    assert x.grad.stride() == (1,)
    (x * c).sum().backward()
    assert x.grad.tolist() == [11.0, 21.0, 31.0]


def test_fan_in_gradients_are_not_shared_between_leaves():
    x1 = torch.tensor([1.0, 2.0], requires_grad=True)
    x2 = torch.tensor([3.0, 4.0], requires_grad=True)
    (x1 + x2).sum().backward(create_graph=True)
    x1.grad.add_(1.0)
    assert x1.grad.tolist() == [2.0, 2.0]
    assert x2.grad.tolist() == [1.0, 1.0]


def test_fan_in_without_create_graph_is_not_shared():
    x1 = torch.tensor([1.0, 2.0], requires_grad=True)
    x2 = torch.tensor([3.0, 4.0], requires_grad=True)
    (x1 + x2).sum().backward()
    (x1 * 2).sum().backward()
    assert x1.grad.tolist() == [3.0, 3.0]
    assert x2.grad.tolist() == [1.0, 1.0]


def test_explicit_root_gradient_is_copied_not_kept():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    g = torch.tensor([5.0, 5.0, 5.0])
    x.backward(g)
    x.backward(g)
    assert g.tolist() == [5.0, 5.0, 5.0]
    assert x.grad.tolist() == [10.0, 10.0, 10.0]


def test_user_assigned_grad_accumulates_in_place():
    # PyTorch: a dense user-assigned .grad is updated in place (x.grad stays t).
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    t = torch.ones(3)
    x.grad = t
    (x * torch.tensor([10.0, 20.0, 30.0])).sum().backward()
    assert t.tolist() == [11.0, 21.0, 31.0]


def test_user_assigned_expanded_grad_is_never_written_through():
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = torch.ones(1)
    x.grad = base.expand(3)
    (x * torch.tensor([10.0, 20.0, 30.0])).sum().backward()
    assert x.grad.tolist() == [11.0, 21.0, 31.0]
    assert base.tolist() == [1.0]


def test_double_backward_grad_keeps_history_but_owns_buffer():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad
    assert g.tolist() == [2.0, 4.0]
    g.sum().backward()  # d(sum 2x)/dx = 2, accumulated out of place into x.grad
    assert x.grad.tolist() == [4.0, 6.0]
    x.grad = None


# ----- .grad assignment ---------------------------------------------------------------


def test_grad_assignment_is_validated():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = torch.ones(4)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = torch.ones(3, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        x.grad = x
    assert x.grad is None
    x.grad = x.detach()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


# ----- pow with a tensor exponent -----------------------------------------------------


def test_pow_tensor_exponent_zero_at_zero_base():
    x = torch.zeros(10, requires_grad=True)
    x.pow(torch.zeros(10)).sum().backward()
    assert x.grad.tolist() == [0.0] * 10


def test_pow_tensor_exponent_gradients():
    x = torch.tensor([0.0, 0.0, 0.0, 2.0], requires_grad=True)
    e = torch.tensor([0.0, 1.0, 2.0, 3.0], requires_grad=True)
    x.pow(e).sum().backward()
    # d/dx x^e = e x^(e-1) (0 where e == 0); d/de x^e = x^e ln x (0 where x == 0, e >= 0)
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 12.0]
    assert e.grad.tolist()[:3] == [0.0, 0.0, 0.0]
    assert math.isclose(e.grad.tolist()[3], 8 * math.log(2.0), rel_tol=1e-6)


# ----- zero gradients with infinite incoming gradients --------------------------------


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.sign(),
        lambda x: x**0,
        lambda x: x.pow(0.0),
        lambda x: x.clone().zero_(),
        lambda x: x.clone().fill_(2.0),
        lambda x: x.clone().copy_(torch.ones(2)),
    ],
    ids=["sign", "pow0", "pow0.", "zero_", "fill_", "copy_"],
)
def test_zero_gradient_rules_ignore_infinite_gradients(fn):
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    fn(x).backward(torch.tensor([math.inf, math.inf]))
    assert x.grad.tolist() == [0.0, 0.0]


def test_clamp_gradient_at_bounds_matches_pytorch():
    # PyTorch 2.x, number bounds: the gradient passes only strictly between them.
    values = [0.0, 1.0, 1.5, 2.0, 3.0]
    cases = [
        ((1.0, 2.0), [0, 0, 1, 0, 0]),
        ((1.0, None), [0, 0, 1, 1, 1]),
        ((None, 2.0), [1, 1, 1, 0, 0]),
    ]
    for (lo, hi), expected in cases:
        x = torch.tensor(values, requires_grad=True)
        x.clamp(lo, hi).sum().backward()
        assert x.grad.tolist() == [float(v) for v in expected]
        x = torch.tensor(values, requires_grad=True)
        y = x * 1
        y.clamp_(lo, hi)
        y.sum().backward()
        assert x.grad.tolist() == [float(v) for v in expected]


def test_relu_gradient_passes_through_nan():
    # PyTorch's threshold_backward zeroes the gradient only where relu(x) <= 0, so a NaN
    # element (relu(nan) = nan) passes it through, and x = 0 blocks it.
    x = torch.tensor([math.nan, -1.0, 0.0, 2.0], requires_grad=True)
    x.relu().backward(torch.ones(4))
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]
    y = x * 1
    y.relu_()
    x.grad = None
    y.backward(torch.ones(4))
    assert x.grad.tolist() == [1.0, 0.0, 0.0, 1.0]


# ----- integer and bool tensors have no history ---------------------------------------


def test_integer_tensors_never_get_history():
    w = torch.tensor([1.5, 2.5], requires_grad=True)
    b = torch.zeros(2, dtype=torch.int64)
    b[0] = w[0]
    assert b.tolist() == [1, 0]
    assert not b.requires_grad and b.grad_fn is None
    b.copy_(w * 2)
    assert b.tolist() == [3, 5]
    assert not b.requires_grad and b.grad_fn is None
    f = torch.zeros(2, dtype=torch.bool)
    f.copy_(w)
    assert not f.requires_grad and f.grad_fn is None
    # the float path still works
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


# ----- leaf and view rules ------------------------------------------------------------


def test_view_of_leaf_that_got_requires_grad_later():
    w = torch.arange(4.0).view(2, 2).requires_grad_()
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w[0].mul_(3)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        w.mul_(3)
    assert w.tolist() == [[0.0, 1.0], [2.0, 3.0]]


NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled"
)


def test_no_grad_view_modified_in_place_with_grad_raises():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        v = x[:2]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v.mul_(2)
    y = x * 1
    with torch.no_grad():
        v2 = y[:2]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v2.mul_(torch.ones(2))
    z = torch.ones(3)
    with torch.no_grad():
        v3 = z[:2]
    with pytest.raises(RuntimeError, match=NO_GRAD_VIEW):
        v3.mul_(torch.ones(2, requires_grad=True))
    # both under no_grad, or nothing requiring grad: allowed
    with torch.no_grad():
        v2.mul_(2)
    with torch.no_grad():
        v4 = z[:2]
    v4.mul_(2)
    assert z.tolist() == [2.0, 2.0, 1.0]


@pytest.mark.parametrize("index", [Ellipsis, ()], ids=["ellipsis", "empty-tuple"])
def test_full_index_is_a_distinct_alias(index):
    x = torch.ones(3, requires_grad=True)
    a = x[index]
    assert a is not x
    assert type(a.grad_fn).__name__ == "AliasBackward0"
    # The alias is a view: PyTorch refuses to detach it in place, and x is unchanged.
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        a.detach_()
    assert x.requires_grad and x.is_leaf
    b = x[index]
    (b * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    y = x * 1
    c = y[index]
    c.grad = None
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        c.detach_()
    assert y.grad_fn is not None and c.grad_fn is not None


def test_view_same_dtype_is_not_self():
    x = torch.ones(3, requires_grad=True)
    v = x.view(x.dtype)
    assert v is not x
    v.detach_()
    assert x.requires_grad


# ----- in-place ops through a view (CopySlices) ---------------------------------------


def _ops():
    """(name, takes_operand, fn(view, operand)) for every in-place op of the binding."""
    return [
        ("add_", True, lambda v, o: v.add_(o)),
        ("add_alpha", True, lambda v, o: v.add_(o, alpha=2.0)),
        ("sub_", True, lambda v, o: v.sub_(o)),
        ("mul_", True, lambda v, o: v.mul_(o)),
        ("div_", True, lambda v, o: v.div_(o)),
        ("iadd", True, lambda v, o: v.__iadd__(o)),
        ("isub", True, lambda v, o: v.__isub__(o)),
        ("imul", True, lambda v, o: v.__imul__(o)),
        ("idiv", True, lambda v, o: v.__itruediv__(o)),
        ("copy_", True, lambda v, o: v.copy_(o)),
        ("clamp_", False, lambda v, o: v.clamp_(-0.5, 0.7)),
        ("relu_", False, lambda v, o: v.relu_()),
        ("fill_", False, lambda v, o: v.fill_(0.25)),
        ("zero_", False, lambda v, o: v.zero_()),
        ("mul_scalar", False, lambda v, o: v.mul_(3.0)),
    ]


BASE0 = [[0.3, -0.8, 1.1], [-0.4, 0.9, -1.3]]
OPERAND0 = [1.7, -0.6]
WEIGHTS = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def _loss(fn, base_values, operand_values, base_rg, operand_rg, setitem):
    """Builds base (a non-leaf when base_rg), writes through the view base[:, 1] and
    returns (loss, leaf_base, operand)."""
    leaf = torch.tensor(base_values, dtype=torch.float64, requires_grad=base_rg)
    base = leaf * 1.0 if base_rg else leaf
    operand = torch.tensor(operand_values, dtype=torch.float64, requires_grad=operand_rg)
    if setitem:
        base[:, 1] = operand
    else:
        fn(base[:, 1], operand)
    weights = torch.tensor(WEIGHTS, dtype=torch.float64)
    return (base * weights).sum(), leaf, operand


def _finite_difference(fn, setitem, which, eps=1e-6):
    def value(base_values, operand_values):
        with torch.no_grad():
            loss, _, _ = _loss(fn, base_values, operand_values, False, False, setitem)
        return loss.item()

    if which == "base":
        grads = []
        for i in range(2):
            row = []
            for j in range(3):
                plus = [r[:] for r in BASE0]
                minus = [r[:] for r in BASE0]
                plus[i][j] += eps
                minus[i][j] -= eps
                row.append((value(plus, OPERAND0) - value(minus, OPERAND0)) / (2 * eps))
            grads.append(row)
        return grads
    grads = []
    for k in range(2):
        plus, minus = OPERAND0[:], OPERAND0[:]
        plus[k] += eps
        minus[k] -= eps
        grads.append((value(BASE0, plus) - value(BASE0, minus)) / (2 * eps))
    return grads


CASES = [
    (name, takes, fn, base_rg, operand_rg, False)
    for (name, takes, fn) in _ops()
    for base_rg, operand_rg in itertools.product([False, True], [False, True])
    if takes or not operand_rg
] + [
    ("setitem", True, None, base_rg, operand_rg, True)
    for base_rg, operand_rg in itertools.product([False, True], [False, True])
]


@pytest.mark.parametrize(
    "name,takes,fn,base_rg,operand_rg,setitem",
    CASES,
    ids=[f"{c[0]}-base{int(c[3])}-operand{int(c[4])}" for c in CASES],
)
def test_in_place_through_view_matches_finite_differences(
    name, takes, fn, base_rg, operand_rg, setitem
):
    loss, leaf, operand = _loss(fn, BASE0, OPERAND0, base_rg, operand_rg, setitem)
    if not (base_rg or operand_rg):
        assert not loss.requires_grad
        return
    loss.backward()
    if base_rg:
        expected = _finite_difference(fn, setitem, "base")
        for got_row, want_row in zip(leaf.grad.tolist(), expected):
            for got, want in zip(got_row, want_row):
                assert math.isclose(got, want, abs_tol=1e-5), (name, leaf.grad.tolist(), expected)
    if operand_rg:
        expected = _finite_difference(fn, setitem, "operand")
        for got, want in zip(operand.grad.tolist(), expected):
            assert math.isclose(got, want, abs_tol=1e-5), (name, operand.grad.tolist(), expected)


def test_in_place_on_view_of_plain_buffer_with_grad_operand():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    buf = torch.zeros(2, 3)
    buf[:, 1].mul_(w)
    buf.sum().backward()
    assert w.grad.tolist() == [0.0, 0.0]


# ----- Note [Python object identity] --------------------------------------------------


def test_grad_fn_is_one_object_per_node():
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    z = y.sum()
    assert y.grad_fn is y.grad_fn
    assert z.grad_fn.next_functions[0][0] is y.grad_fn
    acc = y.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc is y.grad_fn.next_functions[0][0]
    assert acc.variable is x


def test_accumulate_grad_variable_is_the_users_tensor():
    w = torch.Tensor([1.0, 2.0])
    w.requires_grad_()
    assert (w * 1).grad_fn.next_functions[0][0].variable is w
    p = torch.nn.Parameter(torch.ones(2))
    assert (p * 3).grad_fn.next_functions[0][0].variable is p
    t = torch.tensor([1.0], requires_grad=True)
    assert (t * 3).grad_fn.next_functions[0][0].variable is t


def test_grad_and_base_identity():
    x = torch.ones(3, requires_grad=True)
    t = torch.ones(3)
    x.grad = t
    assert x.grad is t
    assert x.grad is x.grad
    assert x[1:]._base is x


def test_node_objects_are_not_kept_alive():
    import gc
    import weakref

    x = torch.ones(3, requires_grad=True)
    y = x * 2
    ref = weakref.ref(y.grad_fn)
    gc.collect()
    assert ref() is None
    # a new object is made once the old one is gone, and it is cached again
    assert y.grad_fn is y.grad_fn
    del y
    gc.collect()


# ----- .data --------------------------------------------------------------------------


def test_data_has_its_own_version_counter():
    p = torch.ones(3, requires_grad=True)
    d = p.data
    assert (d._version, p._version) == (0, 0)
    d.add_(1.0)
    assert (d._version, p._version) == (1, 0)
    assert p.tolist() == [2.0, 2.0, 2.0]
    with torch.no_grad():
        p.mul_(2.0)
    assert (d._version, p._version) == (1, 1)
    assert d.tolist() == [4.0, 4.0, 4.0]


def test_legacy_data_update_after_save():
    # PyTorch: no version error; the saved p is read with its new values (2 * 0.9).
    p = torch.ones(3, requires_grad=True)
    q = (p * p).sum()
    p.data -= 0.1 * torch.ones(3)
    q.backward()
    assert p._version == 0
    for g in p.grad.tolist():
        assert math.isclose(g, 1.8, rel_tol=1e-6)


def test_data_assignment_keeps_autograd_identity():
    p = torch.ones(3, requires_grad=True)
    p.data = torch.tensor([1.0, 2.0, 3.0])
    assert p.requires_grad and p.is_leaf
    assert p.tolist() == [1.0, 2.0, 3.0]
    (p * p).sum().backward()
    assert p.grad.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(TypeError, match="Variable data has to be a tensor"):
        p.data = 3


def test_data_assignment_shares_the_new_data():
    # PyTorch: p takes t's storage (writes through either are seen by the other), any
    # shape, while p keeps requires_grad, its leaf status and its own version.
    p = torch.zeros(3, requires_grad=True)
    t = torch.ones(2, 2)
    p.data = t
    assert p.shape == (2, 2) and p.requires_grad and p.is_leaf
    t[0, 0] = 5.0
    assert p.tolist() == [[5.0, 1.0], [1.0, 1.0]]
    assert (p._version, t._version) == (0, 1)
    with torch.no_grad():
        p.add_(1.0)
    assert t.tolist() == [[6.0, 2.0], [2.0, 2.0]]
    assert (p._version, t._version) == (1, 1)
    (p * 2).sum().backward()
    assert p.grad.tolist() == [[2.0, 2.0], [2.0, 2.0]]


def test_data_assignment_is_seen_by_every_reference_and_by_saved_tensors():
    # PyTorch saves the leaf itself, so backward reads the data assigned after forward.
    q = torch.zeros(3, requires_grad=True)
    alias = [q]
    y = q * q
    q.data = torch.ones(3)
    assert alias[0].tolist() == [1.0, 1.0, 1.0]
    y.sum().backward()
    assert q.grad.tolist() == [2.0, 2.0, 2.0]


def test_data_assignment_of_another_dtype():
    x = torch.zeros(3)
    x.data = torch.arange(3)
    assert x.dtype == torch.int64 and x.tolist() == [0, 1, 2]
    p = torch.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must be"):
        p.data = torch.zeros(2, dtype=torch.int64)
    assert p.dtype == torch.float32 and p.shape == (3,)
    p.data = torch.zeros(2, dtype=torch.float64)
    assert p.dtype == torch.float64
    (p * 3).sum().backward()
    assert p.grad.dtype == torch.float64 and p.grad.tolist() == [3.0, 3.0]


def test_views_made_before_a_data_assignment_keep_the_old_data():
    s = torch.zeros(3, requires_grad=True)
    v = s[:2]
    s.data = torch.ones(3)
    assert v.tolist() == [0.0, 0.0] and v._base is s
    s.data = s  # assigning a tensor its own data changes nothing
    assert s.tolist() == [1.0, 1.0, 1.0]


def test_name_of_the_cpp_defined_nodes_has_their_namespace():
    # PyTorch: name() is "torch::autograd::AccumulateGrad" / "...::CopySlices", while
    # type(node).__name__ is the bare class name; op nodes have no namespace.
    x = torch.ones(3, requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert type(acc).__name__ == "AccumulateGrad"
    assert y.grad_fn.name() == "MulBackward0"
    z = x * 1
    z[1].mul_(2)
    assert z.grad_fn.name() == "torch::autograd::CopySlices"
    assert type(z.grad_fn).__name__ == "CopySlices"
