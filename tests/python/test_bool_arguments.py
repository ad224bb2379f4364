"""Bool arguments: a Python bool is taken everywhere; what PyTorch writes as plain
Python functions (the ``torch.nn.functional`` activations' ``inplace=``,
``Tensor.backward``) takes any object by its truth value, as PyTorch does. The refusals
of non-bools by the parsed bindings are cases of test_bad_input_never_crashes.py."""

import pytest
import rustgrad as torch
import rustgrad.nn.functional as F


@pytest.mark.parametrize(
    "name", ["elu", "celu", "selu", "leaky_relu", "hardtanh", "silu", "mish", "hardswish"]
)
@pytest.mark.parametrize("inplace", [1, "x", None, 0])
def test_functional_inplace_takes_any_object_by_its_truth(name, inplace):
    x = torch.tensor([-1.0, 0.5, 2.0])
    out = getattr(F, name)(x, inplace=inplace)
    # PyTorch 2.15: F.elu(x, inplace=1) works and writes into x; inplace=None does not.
    assert (out is x) == bool(inplace)


def test_backward_flags_take_any_object_by_its_truth():
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=1, create_graph=0)
    y.backward(retain_graph=None)
    assert w.grad.tolist() == [4.0, 8.0]


def test_bool_arguments_take_python_bools():
    x = torch.tensor([[3.0, 1.0], [2.0, 4.0]])
    assert x.sum(0, keepdim=True).shape == (1, 2)
    assert x.sort(descending=True, stable=True).values.tolist() == [[3.0, 1.0], [4.0, 2.0]]
    assert x.topk(1, largest=False, sorted=False).values.tolist() == [[1.0], [2.0]]
    assert x.std(0, unbiased=False).tolist() == [0.5, 1.5]
