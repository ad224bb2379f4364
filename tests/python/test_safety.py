"""Size arithmetic, bounds, overlap and allocation checks (issue "Repair the
foundation", items 2, 5, 14, 20). Every reproducer that once killed the interpreter runs
in a subprocess, so a regression fails its test instead of killing pytest."""

import re
import subprocess
import sys
import textwrap

import pytest
import rustgrad as torch

NUMEL_OVERFLOW = "numel: integer multiplication overflow"
ALLOC = "DefaultCPUAllocator: can't allocate memory"
INTERNAL = re.escape(
    "unsupported operation: more than one element of the written-to tensor refers to a "
    "single memory location. Please clone() the tensor before performing the operation."
)
PARTIAL = re.escape(
    "unsupported operation: some elements of the input tensor and the written-to tensor "
    "refer to a single memory location. Please clone() the tensor before performing the "
    "operation."
)


def run_isolated(code):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-c", "import rustgrad as torch\n" + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


# ----- item 2: size arithmetic overflow -------------------------------------------------


def test_view_whose_numel_wraps_to_zero_raises():
    with pytest.raises(RuntimeError, match=NUMEL_OVERFLOW):
        torch.zeros(0).view(1024, 2**54)
    with pytest.raises(RuntimeError, match=NUMEL_OVERFLOW):
        torch.zeros(0).reshape(1024, 2**54)


def test_expand_whose_numel_overflows_raises():
    with pytest.raises(RuntimeError, match=NUMEL_OVERFLOW):
        torch.ones(1).expand(2**32, 2**32)
    # 2**62 elements fit in an int64: a valid (huge) view, as in PyTorch.
    assert torch.ones(1).expand(2**31, 2**31).shape == (2**31, 2**31)


def test_factories_whose_storage_size_overflows_raise():
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        torch.zeros(2**31, 2**31)
    with pytest.raises(RuntimeError, match="Storage size calculation overflowed"):
        torch.zeros(2**62, 2)


def test_empty_tensors_may_have_huge_sizes():
    t = torch.zeros(0, 2**62).expand(2**40, 0, 2**62)
    assert t.shape == (2**40, 0, 2**62)
    assert t.sum().item() == 0.0


# ----- item 5: no kernel reads outside its storage --------------------------------------


def test_matmul_of_wrapped_views_raises_instead_of_segfaulting():
    code, _, err = run_isolated(
        """
        try:
            a = torch.zeros(0).view(1024, 2**54)
            b = torch.ones(1).expand(2**54, 1)
            a @ b
        except RuntimeError as e:
            assert "numel: integer multiplication overflow" in str(e), e
        else:
            raise SystemExit("no error")
        """
    )
    assert code == 0, err


# ----- item 14: huge materialisations, empty views past the buffer, threads ------------


@pytest.mark.parametrize(
    "op",
    ["clone", "contiguous", "tolist", "tensor", "exp", "add", "double"],
)
def test_materialising_a_huge_expanded_view_raises(op):
    exprs = {
        "clone": "v.clone()",
        "contiguous": "v.contiguous()",
        "tolist": "v.tolist()",
        "tensor": "torch.tensor(v)",
        "exp": "v.exp()",
        "add": "v + 1",
        "double": "v.double()",
    }
    code, _, err = run_isolated(
        f"""
        v = torch.ones(1).expand(2**20, 2**20)
        try:
            {exprs[op]}
        except RuntimeError as e:
            assert "{ALLOC}" in str(e), e
        else:
            raise SystemExit("no error")
        """
    )
    assert code == 0, err


def test_repr_of_a_huge_view_summarises_without_materialising():
    v = torch.ones(1).expand(2**20, 2**20)
    text = repr(v)
    assert text == (
        "tensor([[1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        ...,\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.],\n"
        "        [1., 1., 1.,  ..., 1., 1., 1.]])"
    )
    assert str(v) == text


def test_repr_summary_of_a_strided_view_reads_the_right_elements():
    # PyTorch 2.x: repr(torch.arange(2000.).view(2, 1000))
    assert repr(torch.arange(2000.0).view(2, 1000)) == (
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n"
        "         9.9900e+02],\n"
        "        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n"
        "         1.9990e+03]])"
    )
    t = torch.arange(2000.0).view(2, 1000).t()
    assert repr(t).startswith("tensor([[0.0000e+00, 1.0000e+03],\n        [1.0000e+00,")


def test_fill_of_an_expanded_view_writes_each_location_once():
    a = torch.zeros(1)
    a.expand(2**20, 2**20).fill_(2.0)
    assert a.tolist() == [2.0]
    a.expand(3).zero_()
    assert a.tolist() == [0.0]


@pytest.mark.parametrize(
    "op",
    ["tolist", "repr", "clone", "add", "copy_", "sum", "numpy", "setitem", "backward"],
)
def test_empty_view_past_the_end_of_its_buffer_is_an_empty_tensor(op):
    z = torch.zeros(3, 0)[2]
    assert z.shape == (0,)
    if op == "tolist":
        assert z.tolist() == []
    elif op == "repr":
        assert repr(z) == "tensor([])"
    elif op == "clone":
        assert z.clone().shape == (0,)
    elif op == "add":
        assert (z + 1).shape == (0,)
    elif op == "copy_":
        z.copy_(torch.ones(0))
    elif op == "sum":
        assert z.sum().item() == 0.0
    elif op == "numpy":
        assert z.numpy().shape == (0,)
    elif op == "setitem":
        a = torch.zeros(2, 0)
        a[1] = 5
        assert a.shape == (2, 0)
    elif op == "backward":
        x = torch.zeros(3, 0, requires_grad=True)
        (x[2] * 2).sum().backward()
        assert x.grad.shape == (3, 0)


def test_set_num_threads_rejects_bad_counts_once():
    for n in (0, -1):
        with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
            torch.set_num_threads(n)
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError, match="at most 1024"):
        torch.set_num_threads(20000)
    assert torch.get_num_threads() == before


# ----- item 20: overlapping in-place writes ---------------------------------------------


def test_write_into_an_expanded_view_raises():
    a = torch.ones(1)
    with pytest.raises(RuntimeError, match=INTERNAL):
        a.expand(3).add_(1)
    with pytest.raises(RuntimeError, match=INTERNAL):
        a.expand(3).copy_(torch.ones(3))
    with pytest.raises(RuntimeError, match=INTERNAL):
        a.expand(3).mul_(2)
    assert a.tolist() == [1.0]


def test_writes_into_an_empty_expanded_view_are_allowed():
    # PyTorch: an empty tensor is contiguous, hence never overlapping (found by the fuzzer).
    a = torch.arange(1.0)
    e = a.expand(0, 0, 3)
    e.copy_(a)
    e.add_(1)
    e.mul_(a)
    e.clamp_(min=1)
    e.relu_()
    torch.zeros(1, 0).expand(3, 0).sub_(1)
    assert e.shape == (0, 0, 3) and a.tolist() == [0.0]


def test_partially_overlapping_input_raises():
    a = torch.arange(4.0)
    with pytest.raises(RuntimeError, match=PARTIAL):
        a[1:] = a[:-1]
    m = torch.ones(3, 3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        m.add_(m.t())
    with pytest.raises(RuntimeError, match=PARTIAL):
        m.copy_(m.t())
    b = torch.ones(3)
    with pytest.raises(RuntimeError, match=PARTIAL):
        b.add_(b[0])
    c = torch.ones(4)
    with pytest.raises(RuntimeError, match=PARTIAL):
        c[:3].add_(c[1:])
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert m.tolist() == [[1.0] * 3] * 3


def test_full_alias_and_disjoint_views_are_allowed():
    m = torch.ones(3, 3)
    m.add_(m)
    assert m.tolist() == [[2.0] * 3] * 3
    m.copy_(m)
    c = torch.ones(4)
    c[:2].add_(c[2:])
    assert c.tolist() == [2.0, 2.0, 1.0, 1.0]
    d = torch.ones(3, 1)
    d.add_(d.expand(3, 1))
    assert d.tolist() == [[2.0]] * 3
