"""Devices, the default dtype, and dtype facts, as a CPU-only PyTorch build has them.

Expected values come from PyTorch's documentation (torch.device, Tensor.to,
set_default_dtype, Tensor.type's legacy names, "Torch not compiled with CUDA enabled")
and, for finfo / iinfo / element sizes, from numpy's finfo, iinfo and itemsize.
"""

import pickle
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import rustgrad as torch

UNKNOWN_DEVICE = (
    "Expected one of cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, "
    "maia, xla, lazy, vulkan, mps, meta, hpu, mtia, privateuseone device type at start of "
    "device string: "
)
NO_CUDA = "Torch not compiled with CUDA enabled"


@pytest.fixture
def float64_default():
    """Makes float64 the default dtype for one test; the conftest checks it is restored."""
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.fixture(autouse=True)
def _default_device_is_restored():
    yield
    torch.set_default_device(None)


# ----- device objects --------------------------------------------------------------------


def test_cpu_device_objects():
    d = torch.device("cpu")
    assert (d.type, d.index) == ("cpu", None)
    assert repr(d) == "device(type='cpu')" and str(d) == "cpu"
    d0 = torch.device("cpu", 0)
    assert (d0.type, d0.index) == ("cpu", 0)
    assert repr(d0) == "device(type='cpu', index=0)" and str(d0) == "cpu:0"
    assert torch.device("cpu:0") == d0 == torch.device(d0) == torch.device(type="cpu", index=0)
    # An index makes a different device, and a device is not equal to its string.
    assert d != d0 and d != "cpu"
    assert hash(torch.device("cpu")) == hash(d) and len({d, torch.device("cpu"), d0}) == 2
    assert torch.device("cpu", index=None) == d
    assert pickle.loads(pickle.dumps(d0)) == d0 and pickle.loads(pickle.dumps(d)) == d
    assert isinstance(d, torch.device)


def test_devices_that_cannot_be_used_can_still_be_named():
    cuda = torch.device("cuda")
    assert (cuda.type, cuda.index, str(cuda)) == ("cuda", None, "cuda")
    assert torch.device("cuda", 1) == torch.device("cuda:1")
    assert repr(torch.device("cuda:1")) == "device(type='cuda', index=1)"
    # An ordinal alone names a CUDA device.
    assert torch.device(0) == torch.device("cuda:0")
    assert torch.device("mps").type == "mps" and torch.device("meta").type == "meta"


@pytest.mark.parametrize(
    ("make", "exc", "phrase"),
    [
        (lambda: torch.device("bogus"), RuntimeError, UNKNOWN_DEVICE + "bogus"),
        (lambda: torch.device("CPU"), RuntimeError, UNKNOWN_DEVICE + "CPU"),
        (lambda: torch.device(""), RuntimeError, "Device string must not be empty"),
        (lambda: torch.device("cpu:x"), RuntimeError, "Invalid device string: 'cpu:x'"),
        (lambda: torch.device("cpu:-1"), RuntimeError, "Invalid device string: 'cpu:-1'"),
        (lambda: torch.device("cpu:01"), RuntimeError, "Invalid device string: 'cpu:01'"),
        (lambda: torch.device("cpu:0:0"), RuntimeError, "Invalid device string: 'cpu:0:0'"),
        (lambda: torch.device(" cpu"), RuntimeError, "Invalid device string: ' cpu'"),
        (lambda: torch.device("cpu", -1), RuntimeError, "Device index must not be negative"),
        (lambda: torch.device(-1), RuntimeError, "Device index must not be negative"),
        (
            lambda: torch.device("cpu:0", 0),
            RuntimeError,
            "type (string) must not include an index because index was passed explicitly",
        ),
        (lambda: torch.device(1.5), TypeError, "device() received an invalid combination"),
        (lambda: torch.device(None), TypeError, "device() received an invalid combination"),
        (lambda: torch.device("cpu", True), TypeError, "'index' (position 2) must be int"),
        (lambda: torch.device("cpu", 1.0), TypeError, "'index' (position 2) must be int"),
        (lambda: torch.device("cpu", 2**70), ValueError, "Overflow when unpacking long long"),
    ],
)
def test_bad_device_names_raise_pytorchs_errors(make, exc, phrase):
    with pytest.raises(exc) as info:
        make()
    assert phrase in str(info.value)


# ----- device= on factories and tensors --------------------------------------------------

FACTORIES = {
    "tensor": lambda **kw: torch.tensor([1.0, 2.0], **kw),
    "zeros": lambda **kw: torch.zeros(2, 3, **kw),
    "ones": lambda **kw: torch.ones(2, **kw),
    "full": lambda **kw: torch.full((2,), 7.0, **kw),
    "empty": lambda **kw: torch.empty(2, 2, **kw),
    "arange": lambda **kw: torch.arange(4, **kw),
    "rand": lambda **kw: torch.rand(3, **kw),
    "randn": lambda **kw: torch.randn(3, **kw),
    "randint": lambda **kw: torch.randint(0, 5, (3,), **kw),
    "randperm": lambda **kw: torch.randperm(4, **kw),
    "zeros_like": lambda **kw: torch.zeros_like(torch.ones(2), **kw),
    "ones_like": lambda **kw: torch.ones_like(torch.ones(2), **kw),
    "full_like": lambda **kw: torch.full_like(torch.ones(2), 3.0, **kw),
    "empty_like": lambda **kw: torch.empty_like(torch.ones(2), **kw),
    "rand_like": lambda **kw: torch.rand_like(torch.ones(2), **kw),
    "randn_like": lambda **kw: torch.randn_like(torch.ones(2), **kw),
}


@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("device", ["cpu", "cpu:0", torch.device("cpu"), torch.device("cpu", 1)])
def test_every_factory_accepts_a_cpu_device(name, device):
    t = FACTORIES[name](device=device)
    # A tensor's device never carries the CPU index, as in PyTorch.
    assert t.device == torch.device("cpu") and t.is_cpu and not t.is_cuda


@pytest.mark.parametrize("name", sorted(FACTORIES))
@pytest.mark.parametrize("device", ["cuda", "cuda:1", torch.device("cuda"), 0])
def test_every_factory_refuses_cuda_as_a_cpu_only_build(name, device):
    with pytest.raises(AssertionError, match=NO_CUDA):
        FACTORIES[name](device=device)


@pytest.mark.parametrize("name", sorted(FACTORIES))
def test_every_factory_reports_bad_devices(name):
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        FACTORIES[name](device="foo")
    with pytest.raises(TypeError, match="must be torch.device, not float"):
        FACTORIES[name](device=1.5)
    # A backend the build lacks: PyTorch's NotImplementedError (a RuntimeError).
    with pytest.raises(NotImplementedError, match="with arguments from the 'MPS' backend"):
        FACTORIES[name](device="mps")


def test_tensor_device_properties():
    x = torch.ones(2)
    assert x.device == torch.device("cpu") and repr(x.device) == "device(type='cpu')"
    assert x.is_cpu is True and x.is_cuda is False
    assert x.get_device() == -1
    assert x.cpu() is x
    with pytest.raises(AssertionError, match=NO_CUDA):
        x.cuda()
    with pytest.raises(AssertionError, match=NO_CUDA):
        x.cuda("cuda:1")
    with pytest.raises(RuntimeError, match="Invalid device, must be cuda device"):
        x.cuda("cpu")
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        x.cuda("foo")


# ----- Tensor.to -------------------------------------------------------------------------


def test_to_returns_self_when_nothing_changes():
    x = torch.ones(2)
    for args, kwargs in [
        (("cpu",), {}),
        ((torch.device("cpu"),), {}),
        ((torch.float32,), {}),
        ((), {"dtype": torch.float32}),
        ((), {"device": "cpu", "dtype": torch.float32, "non_blocking": True}),
        ((None,), {}),
        ((), {}),
        ((torch.zeros(1),), {}),
    ]:
        assert x.to(*args, **kwargs) is x, (args, kwargs)


def test_to_three_signatures():
    x = torch.tensor([1.5, 2.5], requires_grad=True)
    # (device, dtype, non_blocking, copy), positionally and by keyword.
    assert x.to("cpu", torch.float64).dtype == torch.float64
    assert x.to(None, torch.float64).dtype == torch.float64
    assert x.to(device="cpu", dtype=torch.float64, non_blocking=True, copy=True).dtype == (
        torch.float64
    )
    assert x.to("cpu", torch.float64, False, True).dtype == torch.float64
    # (dtype, non_blocking, copy); a Python type is a dtype.
    assert x.to(torch.int64, True, True).tolist() == [1, 2]
    assert x.to(float).dtype == torch.float64 and x.to(dtype=float).dtype == torch.float64
    # (tensor, non_blocking, copy): the other tensor's dtype.
    assert x.to(torch.zeros(1, dtype=torch.int64), non_blocking=True).dtype == torch.int64
    # Differentiable between float dtypes.
    y = x.to(torch.float64)
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and x.grad.dtype == torch.float32


def test_to_copy_makes_a_new_tensor():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cpu", copy=True)
    assert y is not x and y.tolist() == [1.0, 2.0] and y.dtype == torch.float32
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    with torch.no_grad():
        y.add_(1)
    assert x.tolist() == [1.0, 2.0]
    i = torch.tensor([1, 2])
    j = i.to(torch.int64, copy=True)
    j.add_(1)
    assert i.tolist() == [1, 2] and j.tolist() == [2, 3]


@pytest.mark.parametrize(
    ("call", "exc", "phrase"),
    [
        (lambda x: x.to("cuda"), AssertionError, NO_CUDA),
        (lambda x: x.to(torch.device("cuda", 0)), AssertionError, NO_CUDA),
        (lambda x: x.to(0), AssertionError, NO_CUDA),
        (lambda x: x.to(device="cuda", dtype=torch.float64), AssertionError, NO_CUDA),
        (lambda x: x.to("mps"), NotImplementedError, "with arguments from the 'MPS' backend"),
        (lambda x: x.to("bogus"), RuntimeError, UNKNOWN_DEVICE + "bogus"),
        (lambda x: x.to(1.5), TypeError, "to() received an invalid combination of arguments"),
        (lambda x: x.to(torch.int64, torch.float64), TypeError, "invalid combination"),
        (lambda x: x.to("cpu", copy=1), TypeError, "invalid combination"),
        (lambda x: x.to(torch.float64, non_blocking=1), TypeError, "invalid combination"),
        (lambda x: x.to(torch.float64, device="cpu"), TypeError, "invalid combination"),
        (lambda x: x.to(foo=1), TypeError, "invalid combination"),
        (lambda x: x.to(dtype=5), TypeError, "invalid combination"),
        (lambda x: x.to(other=torch.ones(1)), TypeError, "invalid combination"),
        (lambda x: x.to("cpu", torch.float64, False, True, 5), TypeError, ""),
    ],
)
def test_to_bad_arguments(call, exc, phrase):
    with pytest.raises(exc) as info:
        call(torch.ones(2))
    assert phrase in str(info.value)


def test_a_device_agnostic_script_runs_unchanged():
    script = textwrap.dedent(
        """
        import rustgrad as torch

        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        torch.manual_seed(0)
        w = torch.randn(3, 1, device=device, requires_grad=True)
        x = torch.randn(8, 3).to(device)
        y = torch.zeros(8, 1, device=device)
        for _ in range(3):
            loss = ((x @ w - y) ** 2).mean()
            loss.backward()
            with torch.no_grad():
                w -= 0.1 * w.grad
                w.grad.zero_()
        assert loss.to(device).device == device
        assert loss.cpu().item() == loss.item()
        print(device)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "cpu"


def test_default_device():
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device("cpu:0")
    assert torch.get_default_device() == torch.device("cpu", 0)
    # Tensors are made on the CPU, without its index.
    assert torch.zeros(1).device == torch.device("cpu")
    torch.set_default_device(torch.device("cpu"))
    assert torch.get_default_device() == torch.device("cpu")
    torch.set_default_device(None)
    assert torch.get_default_device() == torch.device("cpu")
    with pytest.raises(RuntimeError, match="device type at start of device string: bogus"):
        torch.set_default_device("bogus")
    with pytest.raises(TypeError, match=re.escape("device() received an invalid combination")):
        torch.set_default_device(1.5)
    assert torch.get_default_device() == torch.device("cpu")


def test_cuda_accelerator_and_backends_report_nothing():
    assert torch.cuda.is_available() is False
    assert torch.cuda.device_count() == 0
    assert torch.cuda.is_initialized() is False
    torch.cuda.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.cuda.empty_cache()
    with pytest.raises(AssertionError, match=NO_CUDA):
        torch.cuda.current_device()
    with pytest.raises(AssertionError, match=NO_CUDA):
        torch.cuda.synchronize()
    assert torch.accelerator.is_available() is False
    assert torch.accelerator.device_count() == 0
    assert torch.accelerator.current_accelerator() is None
    assert torch.backends.mps.is_available() is False
    assert torch.backends.mps.is_built() is False
    assert torch.backends.cudnn.is_available() is False


def test_generator_device():
    assert torch.Generator().device == torch.device("cpu")
    assert torch.Generator(device="cpu").device == torch.device("cpu")
    with pytest.raises(AssertionError, match=NO_CUDA):
        torch.Generator("cuda")


# ----- the default dtype -----------------------------------------------------------------


def test_default_dtype_starts_as_float32():
    assert torch.get_default_dtype() == torch.float32
    assert torch.tensor([1.5]).dtype == torch.float32
    assert torch.zeros(1).dtype == torch.float32


def test_float64_default_changes_every_float_default(float64_default):
    f64, i64 = torch.float64, torch.int64
    assert torch.get_default_dtype() == f64
    assert torch.tensor(1.5).dtype == f64 and torch.tensor([1.5]).dtype == f64
    assert torch.tensor([]).dtype == f64
    for make in (torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn):
        assert make(2).dtype == f64, make
    assert torch.full((2,), 1.5).dtype == f64
    assert torch.arange(0, 1, 0.5).dtype == f64
    assert torch.Tensor([1]).dtype == f64 and torch.Tensor(2).dtype == f64
    assert torch.nn.Parameter().dtype == f64
    # int / int, int with a Python float, float functions of ints.
    one, two = torch.tensor([1]), torch.tensor([2])
    assert (one / two).dtype == f64 and (one / two).item() == 0.5
    assert (torch.tensor(2) / 3).dtype == f64
    assert (one * 2.5).dtype == f64
    assert one.sqrt().dtype == f64 and (torch.tensor(2) ** 0.5).dtype == f64
    assert (torch.tensor([True]) / torch.tensor([True])).dtype == f64
    # The precision is float64's: 0.1 is not rounded to float32.
    assert torch.tensor(0.1).item() == 0.1
    # Integers stay int64, explicit dtypes and float32 tensors stay as they are.
    assert torch.tensor([1]).dtype == i64 and torch.full((1,), 1).dtype == i64
    assert torch.arange(3).dtype == i64 and torch.randint(0, 3, (2,)).dtype == i64
    assert torch.randperm(3).dtype == i64
    assert torch.tensor([1.5], dtype=torch.float32).dtype == torch.float32
    f32 = torch.ones(2, dtype=torch.float32)
    assert (f32 * 2.5).dtype == torch.float32
    assert torch.tensor(np.array([1.0], dtype=np.float32)).dtype == torch.float32
    assert torch.zeros_like(torch.tensor([1])).dtype == i64
    # The repr omits the default dtype and names float32.
    assert repr(torch.tensor([1.5])) == "tensor([1.5000])"
    assert repr(torch.zeros(0)) == "tensor([])"
    assert repr(torch.tensor([1.0], dtype=torch.float32)) == "tensor([1.], dtype=torch.float32)"
    assert repr(torch.zeros(0, dtype=torch.float32)) == "tensor([], dtype=torch.float32)"
    assert torch.zeros(2).type() == "torch.DoubleTensor"
    # Autograd works in the new default.
    w = torch.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    assert w.grad.dtype == f64 and w.grad.tolist() == [2.0, 4.0]


def test_default_dtype_can_go_back_to_float32(float64_default):
    torch.set_default_dtype(torch.float32)
    assert torch.get_default_dtype() == torch.float32
    assert torch.tensor([1.5]).dtype == torch.float32
    assert repr(torch.tensor([1.5])) == "tensor([1.5000])"


@pytest.mark.parametrize(
    ("bad", "phrase"),
    [
        (torch.int64, "only floating-point types are supported as the default type"),
        (torch.bool, "only floating-point types are supported as the default type"),
        ("float64", "invalid dtype object: only floating-point types are supported"),
        (float, "invalid dtype object: only floating-point types are supported"),
        (None, "invalid dtype object: only floating-point types are supported"),
    ],
)
def test_set_default_dtype_refuses_non_float_types(bad, phrase):
    with pytest.raises(TypeError) as info:
        torch.set_default_dtype(bad)
    assert phrase in str(info.value)
    assert torch.get_default_dtype() == torch.float32


# ----- dtype facts -----------------------------------------------------------------------

DTYPES = [
    (torch.float32, np.float32, "torch.FloatTensor", True),
    (torch.float64, np.float64, "torch.DoubleTensor", True),
    (torch.int64, np.int64, "torch.LongTensor", False),
    (torch.bool, np.bool_, "torch.BoolTensor", False),
]


@pytest.mark.parametrize(("dtype", "np_dtype", "legacy", "is_float"), DTYPES)
def test_element_sizes_and_legacy_type_names(dtype, np_dtype, legacy, is_float):
    x = torch.zeros(2, 3, dtype=dtype)
    itemsize = np.dtype(np_dtype).itemsize
    assert x.element_size() == itemsize and x.itemsize == itemsize
    assert x.nbytes == 6 * itemsize
    assert x.type() == legacy
    assert x.is_floating_point() is is_float
    # type(dtype) and type(name) convert, and give self when nothing changes.
    assert x.type(dtype) is x and x.type(legacy) is x
    y = torch.ones(2).type(dtype)
    assert y.dtype == dtype and y.type() == legacy
    assert torch.ones(2).type(legacy).dtype == dtype


def test_nbytes_counts_the_view_not_the_storage():
    # PyTorch: numel() * element_size().
    assert torch.zeros(10)[2:4].nbytes == 8
    assert torch.zeros(1).expand(5).nbytes == 20
    assert torch.zeros(0, 3).nbytes == 0


@pytest.mark.parametrize(
    ("arg", "exc", "phrase"),
    [
        (5, TypeError, "dtype must be a type, str, or dtype object"),
        ("bogus", ValueError, "invalid type: 'bogus'"),
        (float, ValueError, "invalid type: 'float'"),
        ("torch.cuda.FloatTensor", AssertionError, NO_CUDA),
    ],
)
def test_type_bad_arguments(arg, exc, phrase):
    with pytest.raises(exc) as info:
        torch.ones(2).type(arg)
    assert phrase in str(info.value)


@pytest.mark.parametrize(
    ("dtype", "np_dtype"), [(torch.float32, np.float32), (torch.float64, np.float64)]
)
def test_finfo_matches_numpy(dtype, np_dtype):
    fi, nfi = torch.finfo(dtype), np.finfo(np_dtype)
    assert fi.bits == nfi.bits
    assert fi.eps == float(nfi.eps)
    assert fi.max == float(nfi.max) and fi.min == float(nfi.min)
    assert fi.tiny == float(nfi.tiny) and fi.smallest_normal == float(nfi.smallest_normal)
    # numpy's resolution is 10 ** -precision rounded to the dtype; PyTorch's the exact
    # Python float 10 ** -precision.
    assert fi.resolution == 10.0**-nfi.precision
    assert fi.dtype == np.dtype(np_dtype).name
    assert torch.finfo(dtype) == fi


def test_finfo_repr_and_defaults(float64_default):
    assert torch.finfo().dtype == "float64"
    assert torch.finfo(float).dtype == "float64"
    assert repr(torch.finfo(torch.float32)) == (
        "finfo(resolution=1e-06, min=-3.40282e+38, max=3.40282e+38, eps=1.19209e-07, "
        "smallest_normal=1.17549e-38, tiny=1.17549e-38, dtype=float32)"
    )


def test_iinfo_matches_numpy():
    ii, nii = torch.iinfo(torch.int64), np.iinfo(np.int64)
    assert (ii.bits, ii.max, ii.min, ii.dtype) == (nii.bits, int(nii.max), int(nii.min), "int64")
    assert torch.iinfo(int).dtype == "int64"
    assert repr(ii) == "iinfo(min=-9.22337e+18, max=9.22337e+18, dtype=int64)"


@pytest.mark.parametrize(
    ("call", "phrase"),
    [
        (lambda: torch.finfo(torch.int64), "torch.finfo() requires a floating point input type"),
        (lambda: torch.finfo(torch.bool), "torch.finfo() requires a floating point input type"),
        (lambda: torch.finfo("float32"), "argument 'type' (position 1) must be torch.dtype"),
        (lambda: torch.iinfo(torch.float32), "torch.iinfo() requires an integer input type"),
        (lambda: torch.iinfo(torch.bool), "torch.bool is not supported by torch.iinfo"),
        (lambda: setattr(torch.finfo(torch.float32), "eps", 1.0), "is not writable"),
    ],
)
def test_finfo_iinfo_bad_input(call, phrase):
    with pytest.raises((TypeError, AttributeError)) as info:
        call()
    assert phrase in str(info.value)
