"""autograd.grad, backward(inputs=), higher-order gradients and autograd.functional.

Expected values are closed forms, numpy, or central finite differences in float64;
none comes from the code under test. Errors are PyTorch 2.15's (type + key phrase).
"""

import gc

import numpy as np
import pytest
import rustgrad as torch
from rustgrad.autograd import functional as F


def f64(a, requires_grad=False):
    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def fd_grad(fn, x_np, eps=1e-6):
    """Central finite-difference gradient of a scalar numpy function."""
    x_np = np.array(x_np, dtype=np.float64)
    g = np.zeros_like(x_np)
    for i in np.ndindex(x_np.shape):
        xp, xm = x_np.copy(), x_np.copy()
        xp[i] += eps
        xm[i] -= eps
        g[i] = (fn(xp) - fn(xm)) / (2 * eps)
    return g


# ----- basics ---------------------------------------------------------------------------


def test_grad_closed_form_and_leaves_untouched():
    x = f64([1.0, -2.0, 3.0], requires_grad=True)
    w = f64([0.5, 0.5, 0.5], requires_grad=True)
    y = (x * x * w).sum()
    (gx,) = torch.autograd.grad(y, x)
    np.testing.assert_allclose(gx.numpy(), 2 * np.array([1.0, -2.0, 3.0]) * 0.5)
    assert x.grad is None and w.grad is None
    assert gx.grad_fn is None and not gx.requires_grad


def test_grad_with_existing_grad_leaves_it_alone():
    x = f64([2.0], requires_grad=True)
    (x * 3).sum().backward()
    before = x.grad.numpy().copy()
    (g,) = torch.autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(g.numpy(), [4.0])
    np.testing.assert_array_equal(x.grad.numpy(), before)


def test_grad_non_leaf_input_captures_incoming_gradient():
    x = f64([1.0, 2.0], requires_grad=True)
    h = x * 3  # non-leaf input
    y = (h.exp()).sum()
    (gh,) = torch.autograd.grad(y, h)
    np.testing.assert_allclose(gh.numpy(), np.exp([3.0, 6.0]))
    assert x.grad is None


def test_grad_of_output_wrt_itself_is_ones():
    x = f64([1.0, 2.0], requires_grad=True)
    y = x * 2
    (g,) = torch.autograd.grad(y, y, grad_outputs=torch.ones(2, dtype=torch.float64))
    np.testing.assert_array_equal(g.numpy(), [1.0, 1.0])


def test_several_outputs_and_inputs():
    a = f64([1.0, 2.0], requires_grad=True)
    b = f64([3.0], requires_grad=True)
    y1 = a * b  # shape [2]
    y2 = (a * a).sum()
    v = f64([1.0, -1.0])
    ga, gb = torch.autograd.grad([y1, y2], [a, b], grad_outputs=[v, None])
    np.testing.assert_allclose(ga.numpy(), [3.0 + 2.0, -3.0 + 4.0])
    np.testing.assert_allclose(gb.numpy(), [1.0 - 2.0])


def test_duplicate_inputs_and_dict_inputs():
    x = f64([2.0], requires_grad=True)
    g1, g2 = torch.autograd.grad((x**3).sum(), [x, x])
    np.testing.assert_allclose(g1.numpy(), [12.0])
    np.testing.assert_allclose(g2.numpy(), [12.0])
    d = torch.autograd.grad((x**2).sum(), {"x": x})
    assert list(d) == ["x"]
    np.testing.assert_allclose(d["x"].numpy(), [4.0])


def test_allow_unused_and_materialize():
    x = f64([1.0], requires_grad=True)
    z = f64([1.0, 2.0], requires_grad=True)
    gx, gz = torch.autograd.grad((x * 2).sum(), [x, z], allow_unused=True, retain_graph=True)
    assert gz is None
    np.testing.assert_allclose(gx.numpy(), [2.0])
    gx, gz = torch.autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    np.testing.assert_array_equal(gz.numpy(), [0.0, 0.0])
    assert gz.shape == z.shape


def test_retain_graph_defaults_to_create_graph():
    x = f64([1.0, 2.0], requires_grad=True)
    y = (x.exp()).sum()
    torch.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        torch.autograd.grad(y, x)
    y = (x.exp()).sum()
    torch.autograd.grad(y, x, create_graph=True)
    (g,) = torch.autograd.grad(y, x)  # still there
    np.testing.assert_allclose(g.numpy(), np.exp([1.0, 2.0]))


def test_dtype_of_result_follows_input():
    x = torch.tensor([1.0, 2.0], requires_grad=True)  # float32
    (g,) = torch.autograd.grad((x.double() * 3).sum(), x)
    assert g.dtype == torch.float32
    np.testing.assert_array_equal(g.numpy(), [3.0, 3.0])


# ----- pruning --------------------------------------------------------------------------


def test_branch_that_cannot_reach_the_inputs_never_runs():
    x = f64([1.0, 2.0], requires_grad=True)
    other = f64([0.5, 0.1], requires_grad=True)
    e = other.exp()  # ExpBackward0 saves its result
    e.add_(1.0)  # so running it would raise the in-place error
    loss = (x * x).sum() + e.sum()
    (g,) = torch.autograd.grad(loss, x, retain_graph=True)
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])
    assert other.grad is None
    # The same graph does run that branch in a full backward:
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_backward_inputs_prunes_and_accumulates_only_inputs():
    x = f64([1.0, 2.0], requires_grad=True)
    other = f64([0.5, 0.1], requires_grad=True)
    e = other.exp()
    e.add_(1.0)
    loss = (x * x).sum() + e.sum()
    loss.backward(inputs=[x])
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])
    assert other.grad is None


def test_backward_inputs_non_leaf_gets_grad():
    a = f64([1.0, 1.0], requires_grad=True)
    y = a * 2
    z = (y * y).sum()
    z.backward(inputs=[y])
    np.testing.assert_allclose(y.grad.numpy(), [4.0, 4.0])
    assert a.grad is None


def test_autograd_backward_inputs_accumulates_twice():
    a = f64([3.0], requires_grad=True)
    b = f64([5.0], requires_grad=True)
    for _ in range(2):
        torch.autograd.backward((a * b).sum(), inputs=a)
    np.testing.assert_allclose(a.grad.numpy(), [10.0])
    assert b.grad is None


# ----- higher order ---------------------------------------------------------------------


def test_third_derivative_of_x4():
    x = f64([1.5, -0.5], requires_grad=True)
    (g1,) = torch.autograd.grad((x**4).sum(), x, create_graph=True)
    (g2,) = torch.autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = torch.autograd.grad(g2.sum(), x)
    xn = np.array([1.5, -0.5])
    np.testing.assert_allclose(g1.detach().numpy(), 4 * xn**3)
    np.testing.assert_allclose(g2.detach().numpy(), 12 * xn**2)
    np.testing.assert_allclose(g3.numpy(), 24 * xn)
    assert x.grad is None


def test_hessian_vector_product_by_double_grad():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    x = f64([1.0, -1.0], requires_grad=True)
    A = f64(a)
    f = (x * (A @ x)).sum() * 0.5 + (x**3).sum()
    (g,) = torch.autograd.grad(f, x, create_graph=True)
    v = f64([1.0, 2.0])
    (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
    hess = a + np.diag(6 * np.array([1.0, -1.0]))
    np.testing.assert_allclose(hv.numpy(), hess @ np.array([1.0, 2.0]), rtol=1e-12)


def _mlp_np(p, x, w2, t):
    w1 = p.reshape(3, 4)
    h = np.tanh(x @ w1)
    return float(((h @ w2 - t) ** 2).mean())


def test_hessian_of_mlp_loss_matches_finite_differences():
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((5, 3))
    w1_np = rng.standard_normal((3, 4)) * 0.5
    w2_np = rng.standard_normal((4, 2))
    t_np = rng.standard_normal((5, 2))
    x, w2, t = f64(x_np), f64(w2_np), f64(t_np)

    def loss(w1):
        return ((torch.tanh(x @ w1) @ w2 - t) ** 2).mean()

    hess = F.hessian(loss, f64(w1_np)).numpy().reshape(12, 12)
    p0 = w1_np.reshape(-1)
    fd = np.zeros((12, 12))
    for i in range(12):
        e = np.zeros(12)
        e[i] = 1e-5
        gp = fd_grad(lambda p: _mlp_np(p, x_np, w2_np, t_np), p0 + e)
        gm = fd_grad(lambda p: _mlp_np(p, x_np, w2_np, t_np), p0 - e)
        fd[i] = (gp - gm) / 2e-5
    np.testing.assert_allclose(hess, fd, rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(hess, hess.T, atol=1e-12)


def test_gradient_penalty_gradient_matches_finite_differences():
    # WGAN-GP: penalty(w) = (||d critic(x)/dx|| - 1)^2, critic(x) = tanh(x @ w).sum().
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((4, 3))
    w_np = rng.standard_normal((3, 2))

    def penalty_np(w_flat):
        w = w_flat.reshape(3, 2)
        s = 1 - np.tanh(x_np @ w) ** 2  # d tanh
        gx = s @ w.T  # d critic / dx, shape (4, 3)
        norms = np.sqrt((gx**2).sum(axis=1))
        return float(((norms - 1) ** 2).mean())

    w = f64(w_np, requires_grad=True)
    x = f64(x_np, requires_grad=True)
    critic = torch.tanh(x @ w).sum()
    (gx,) = torch.autograd.grad(critic, x, create_graph=True)
    penalty = ((gx.pow(2).sum(dim=1).sqrt() - 1) ** 2).mean()
    np.testing.assert_allclose(penalty.item(), penalty_np(w_np.reshape(-1)), rtol=1e-12)
    penalty.backward()
    expected = fd_grad(penalty_np, w_np.reshape(-1)).reshape(3, 2)
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_gradient_penalty_loop_trains():
    rng = np.random.default_rng(2)
    x = f64(rng.standard_normal((8, 3)))
    w = f64(rng.standard_normal((3, 4)), requires_grad=True)
    losses = []
    for _ in range(60):
        xi = x.detach().requires_grad_()
        (gx,) = torch.autograd.grad(torch.tanh(xi @ w).sum(), xi, create_graph=True)
        loss = ((gx.pow(2).sum(dim=1).sqrt() - 1) ** 2).mean()
        losses.append(loss.item())
        (gw,) = torch.autograd.grad(loss, w)
        with torch.no_grad():
            w -= 0.05 * gw
    assert losses[-1] < 0.5 * losses[0]


def test_create_graph_loop_does_not_grow_rss():
    from test_memory import rss_bytes

    w = torch.nn.Parameter(torch.randn(16, 16))
    x = torch.randn(8, 16)

    def step():
        loss = torch.tanh(x @ w).pow(2).sum()
        (g,) = torch.autograd.grad(loss, w, create_graph=True)
        pen = g.pow(2).sum()
        pen.backward()
        w.grad = None  # the create_graph .grad -> grad_fn -> w cycle, broken here
        return pen

    for _ in range(100):
        step()
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        step()
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 2**20:.2f} MiB"


def test_create_graph_backward_on_parameters_does_not_grow_rss():
    # The parameter -> .grad -> grad_fn -> parameter cycle, which leaks in PyTorch: the
    # parameters are made anew each step and never have their .grad cleared. The model
    # uses w directly and through views (w.t(), w[0]), which the graph saves.
    from test_memory import rss_bytes

    x = torch.randn(8, 32)

    def step():
        w = torch.nn.Parameter(torch.randn(32, 32))
        b = torch.nn.Parameter(torch.randn(32))
        loss = (torch.tanh(x @ w.t() + b) * w[0]).pow(2).sum()
        loss.backward(create_graph=True)
        assert w.grad.grad_fn is not None and b.grad.grad_fn is not None

    for _ in range(100):
        step()
    gc.collect()
    before = rss_bytes()
    for _ in range(1000):
        step()
    gc.collect()
    growth = rss_bytes() - before
    assert growth < 5 * 1024 * 1024, f"RSS grew by {growth / 2**20:.2f} MiB"


@pytest.mark.rustgrad_only
def test_create_graph_backward_leaves_grad_with_history_freed():
    # PyTorch leaks parameter -> .grad -> grad_fn -> parameter; here the nodes are freed.
    if not hasattr(torch._rustgrad, "_live_nodes"):
        pytest.skip("rustgrad only")
    gc.collect()
    base = torch._rustgrad._live_nodes()
    for _ in range(50):
        w = f64([1.0, 2.0], requires_grad=True)
        (w**3).sum().backward(create_graph=True)
        assert w.grad.grad_fn is not None
        del w
        v = f64([1.0, 2.0], requires_grad=True)
        (v.t()[0] * v).sum().backward(create_graph=True)
        del v
    gc.collect()
    assert torch._rustgrad._live_nodes() - base <= 1


def test_create_graph_still_differentiates_through_saved_leaves_and_views():
    # The graph keeps saved leaves weakly: higher derivatives must still reach them.
    w = f64([0.5, -1.5, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad((w**3 * w[1]).sum(), w, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), w)
    a = w.detach().numpy()
    # f = w1 * sum_i w_i^3; d2f/dw_i dw_j summed over i.
    expected = 6 * a * a[1] + 3 * a**2
    expected[1] += (3 * a**2).sum()
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-12)


def test_saved_leaf_is_the_leaf_and_a_dead_leaf_is_not_needed():
    x = torch.randn(3, requires_grad=True)
    y = x * x
    assert y.grad_fn._saved_self is x
    assert y.grad_fn.next_functions[0][0].variable is x
    # The graph does not keep a leaf alive: backward still computes (its .grad is
    # unobservable once the leaf is gone).
    z = (torch.randn(3, requires_grad=True) * 2).sum()
    z.backward()


# ----- functional -----------------------------------------------------------------------


def test_functional_closed_forms():
    x = f64([1.0, 2.0])
    v = f64([1.0, -1.0])
    out, res = F.vjp(lambda x: x**2, x, v)
    np.testing.assert_allclose(out.numpy(), [1.0, 4.0])
    np.testing.assert_allclose(res.numpy(), [2.0, -4.0])
    _, res = F.jvp(lambda x: x**3, x, v)
    np.testing.assert_allclose(res.numpy(), [3.0, -12.0])
    np.testing.assert_allclose(F.jacobian(lambda x: x**3, x).numpy(), np.diag([3.0, 12.0]))
    np.testing.assert_allclose(F.hessian(lambda x: (x**3).sum(), x).numpy(), np.diag([6.0, 12.0]))
    _, res = F.hvp(lambda x: (x**3).sum(), x, v)
    np.testing.assert_allclose(res.numpy(), [6.0, -12.0])
    _, res = F.vhp(lambda x: (x**3).sum(), x, v)
    np.testing.assert_allclose(res.numpy(), [6.0, -12.0])
    assert not res.requires_grad


def test_functional_tuples():
    a, b = f64([1.0, 2.0]), f64([3.0])
    jac = F.jacobian(lambda a, b: (a * b, a.sum()), (a, b))
    np.testing.assert_allclose(jac[0][0].numpy(), np.diag([3.0, 3.0]))
    np.testing.assert_allclose(jac[0][1].numpy(), [[1.0], [2.0]])
    np.testing.assert_allclose(jac[1][0].numpy(), [1.0, 1.0])
    np.testing.assert_allclose(jac[1][1].numpy(), [0.0])
    hess = F.hessian(lambda a, b: (a * a * b).sum(), (a, b))
    np.testing.assert_allclose(hess[0][0].numpy(), np.diag([6.0, 6.0]))
    np.testing.assert_allclose(hess[0][1].numpy(), [[2.0], [4.0]])


def test_functional_create_graph_is_differentiable():
    x = f64([2.0], requires_grad=True)
    _, res = F.vjp(lambda x: (x**3).sum(), x, create_graph=True)
    (g,) = torch.autograd.grad(res.sum(), x)
    np.testing.assert_allclose(g.numpy(), [12.0])


def test_functional_errors():
    x = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        F.vjp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match="v has invalid size"):
        F.vjp(lambda x: x * 2, x, f64([1.0]))
    with pytest.raises(RuntimeError, match="independent of input 0"):
        F.vjp(lambda x: x.detach() * 2 + 0 * f64([1.0, 1.0], True).sum(), x, x, strict=True)
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda x: x, [x])
    with pytest.raises(NotImplementedError, match="vmap"):
        F.jacobian(lambda x: x, x, vectorize=True)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hvp(lambda x: (x.sum(), x.sum()), x, x)


# ----- errors ---------------------------------------------------------------------------


def test_errors():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    c = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        torch.autograd.grad((x * 2).sum(), [x, f64([1.0], True)])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape"):
        torch.autograd.grad(x * 2, x, grad_outputs=f64([1.0, 1.0]))
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        torch.autograd.grad(x * 2, x)
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        torch.autograd.grad(c * 2, x)
    with pytest.raises(
        RuntimeError, match="One of the differentiated Tensors does not require grad"
    ):
        torch.autograd.grad((x * 2).sum(), c)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        torch.autograd.grad((x * 2).sum(), [])
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(ValueError, match="Expected allow_unused to be True"):
        torch.autograd.grad((x * 2).sum(), x, materialize_grads=True, allow_unused=False)
    with pytest.raises(NotImplementedError, match="vmap"):
        torch.autograd.grad((x * 2).sum(), x, is_grads_batched=True)
    assert x.grad is None
    # The engine stays usable after every error.
    (g,) = torch.autograd.grad((x * 2).sum(), x)
    np.testing.assert_array_equal(g.numpy(), [2.0, 2.0, 2.0])


def test_mismatch_message_is_pytorchs():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(RuntimeError) as err:
        torch.autograd.grad(x * 2, x, grad_outputs=f64([1.0, 1.0]))
    assert str(err.value) == (
        "Mismatch in shape: grad_output[0] has a shape of torch.Size([2]) and "
        "output[0] has a shape of torch.Size([3])."
    )
