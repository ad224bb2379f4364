//! The Python `device` objects (`rustgrad.device("cpu")`), the one parser of device
//! strings, and the check every `device=` argument goes through. rustgrad runs on the
//! CPU only, so it behaves like a CPU-only PyTorch build: any device can be *named*, but
//! using one that is not the CPU raises. See Note [Devices and default dtype].

use pyo3::exceptions::{
    PyAssertionError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyInt, PyString, PyTuple};
use rustgrad::{DType, Tensor};
use std::cell::{Cell, RefCell};

/// The device types c10 knows, in the order of its parse error message.
const KNOWN: [&str; 20] = [
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
];

/// A device: a type and an optional index (`torch.device`). Equal devices hash equal;
/// `device("cpu") != device("cpu", 0)` and `device("cpu") != "cpu"`, as in PyTorch.
#[pyclass(name = "device", module = "rustgrad", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct PyDevice {
    kind: &'static str,
    /// PyTorch's `DeviceIndex` is an int8; None is PyTorch's -1.
    index: Option<i8>,
}

thread_local! {
    /// The device factories use when none is given (`set_default_device`, `with
    /// device(...)`), per thread as PyTorch's: a CPU device or `meta` (others are
    /// refused when set). Factories read it through `factory_is_meta`.
    static DEFAULT_DEVICE: Cell<PyDevice> = const { Cell::new(PyDevice::CPU) };
    /// The defaults that `with device(...)` blocks replaced, innermost last.
    static SAVED_DEFAULTS: RefCell<Vec<PyDevice>> = const { RefCell::new(Vec::new()) };
}

/// Makes a meta tensor: `rustgrad._meta._make(shape, dtype, requires_grad)`, registered
/// when `rustgrad` is imported (Note [Meta device]).
static META_FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// How PyTorch's argument parser names an argument's type in its errors
/// (`torch.dtype`, `torch.device`, else the Python type's name).
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    if obj.is_instance_of::<crate::dtype::PyDType>() {
        return "torch.dtype".into();
    }
    if obj.is_instance_of::<PyDevice>() {
        return "torch.device".into();
    }
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// PyTorch's error for `device(x)` when `x` names no device.
fn invalid_device_args(obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "device() received an invalid combination of arguments - got ({}), but expected one of:\n \
         * (torch.device device)\n \
         * (str type, int index = -1)",
        type_name(obj)
    ))
}

fn negative_index() -> PyErr {
    PyRuntimeError::new_err("Device index must not be negative")
}

impl PyDevice {
    /// `device(type='cpu')`.
    pub const CPU: PyDevice = PyDevice {
        kind: "cpu",
        index: None,
    };

    /// Parses a device string as c10's `Device(std::string)` does: the pattern
    /// `([a-zA-Z_]+)(?::([1-9]\d*|0))?`, then the type name against the known types.
    fn parse(text: &str) -> PyResult<PyDevice> {
        if text.is_empty() {
            return Err(PyRuntimeError::new_err("Device string must not be empty"));
        }
        let (name, index) = match text.split_once(':') {
            Some((name, index)) => (name, Some(index)),
            None => (text, None),
        };
        let name_ok =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphabetic() || b == b'_');
        let index_ok = index.is_none_or(|i| {
            !i.is_empty()
                && i.bytes().all(|b| b.is_ascii_digit())
                && (i == "0" || !i.starts_with('0'))
        });
        if !name_ok || !index_ok {
            return Err(PyRuntimeError::new_err(format!(
                "Invalid device string: '{text}'"
            )));
        }
        // PyTorch reads the index with stoi and then narrows it to int8 silently
        // (`cpu:300` is index 44); here an index past 127 is refused instead.
        let index = index
            .map(|i| {
                i.parse::<i8>().map_err(|_| {
                    PyRuntimeError::new_err(format!(
                        "Could not parse device index '{i}' in device string '{text}'"
                    ))
                })
            })
            .transpose()?;
        let kind = KNOWN.iter().find(|k| **k == name).ok_or_else(|| {
            PyRuntimeError::new_err(format!(
                "Expected one of {} device type at start of device string: {name}",
                KNOWN.join(", ")
            ))
        })?;
        Ok(PyDevice { kind, index })
    }

    /// A device named by a Python object: a `device`, a string, or an int (which names a
    /// CUDA device, as in PyTorch). Anything else is a TypeError naming `what`.
    fn from_object(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<PyDevice> {
        if let Ok(d) = obj.cast::<PyDevice>() {
            return Ok(*d.get());
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return PyDevice::parse(s.to_str()?);
        }
        if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() {
            let index = extract_index(obj)?;
            if index < 0 {
                return Err(negative_index());
            }
            return Ok(PyDevice {
                kind: "cuda",
                index: Some(index_to_i8(index)?),
            });
        }
        Err(PyTypeError::new_err(format!(
            "{what} must be torch.device, not {}",
            type_name(obj)
        )))
    }

    /// Raises unless this is the CPU: `cuda` as a CPU-only PyTorch build does
    /// (AssertionError "Torch not compiled with CUDA enabled"), other types as PyTorch
    /// does for a backend it was built without (NotImplementedError "Could not run ...
    /// with arguments from the '...' backend"). `meta` raises too: the places that can
    /// make meta tensors (factories, `Tensor.to`) ask `factory_is_meta` first.
    pub fn require_cpu(self) -> PyResult<()> {
        match self.kind {
            "cpu" => Ok(()),
            "cuda" => Err(PyAssertionError::new_err(
                "Torch not compiled with CUDA enabled",
            )),
            k => Err(PyNotImplementedError::new_err(format!(
                "Could not run the operator with arguments from the '{}' backend: \
                 rustgrad runs on the CPU only",
                backend_name(k)
            ))),
        }
    }
}

/// The name PyTorch's dispatcher gives a device type's backend in its errors
/// (`'MPS'`, `'Meta'`, `'PrivateUse1'`).
fn backend_name(kind: &str) -> String {
    match kind {
        "meta" => "Meta".into(),
        "lazy" => "Lazy".into(),
        "vulkan" => "Vulkan".into(),
        "privateuseone" => "PrivateUse1".into(),
        k => k.to_ascii_uppercase(),
    }
}

/// An int device index; one beyond int64 is PyTorch's ValueError, not OverflowError.
fn extract_index(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

fn index_to_i8(index: i64) -> PyResult<i8> {
    i8::try_from(index).map_err(|_| {
        PyRuntimeError::new_err(format!(
            "Device index must be at most {} (an int8, as PyTorch's DeviceIndex), got {index}",
            i8::MAX
        ))
    })
}

/// Reads an optional device name (a `device=` argument or `Tensor.to`'s device) and
/// checks that it is the CPU. `None` is the default device, always the CPU.
pub fn check_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match device.filter(|d| !d.is_none()) {
        None => Ok(()),
        Some(d) => PyDevice::from_object(d, "argument 'device'")?.require_cpu(),
    }
}

/// Reads a factory's `device=` argument: whether the result is a meta tensor (the
/// device is `meta`, or it is None and the default device is `meta`); any other device
/// than the CPU raises as `check_device`.
pub fn factory_is_meta(device: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match device.filter(|d| !d.is_none()) {
        None => Ok(DEFAULT_DEVICE.with(|d| d.get().kind == "meta")),
        Some(d) => target_is_meta(PyDevice::from_object(d, "argument 'device'")?),
    }
}

/// Whether `device` is `meta`; any other device than the CPU raises.
fn target_is_meta(device: PyDevice) -> PyResult<bool> {
    if device.kind == "meta" {
        return Ok(true);
    }
    device.require_cpu()?;
    Ok(false)
}

/// Reads `Tensor.to`'s device: whether it is `meta` (None is no change of device, so
/// not the default device); others than the CPU raise as `check_device`.
pub fn to_is_meta(device: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match device.filter(|d| !d.is_none()) {
        None => Ok(false),
        Some(d) => target_is_meta(PyDevice::from_object(d, "argument 'device'")?),
    }
}

/// A meta tensor (shape, dtype and requires_grad, no data) made by `rustgrad._meta`.
pub fn meta_tensor(
    py: Python<'_>,
    shape: &[usize],
    dtype: DType,
    requires_grad: bool,
) -> PyResult<Py<crate::tensor::PyTensor>> {
    let make = META_FACTORY
        .get(py)
        .ok_or_else(|| PyRuntimeError::new_err("rustgrad._meta is not imported"))?;
    let dtype = crate::dtype::dtype_object(py, dtype)?;
    make.bind(py)
        .call1((PyTuple::new(py, shape)?, dtype, requires_grad))?
        .extract()
        .map_err(Into::into)
}

/// A factory's result: `tensor` as a new leaf, or, when `meta`, a meta tensor of its
/// shape and dtype (factories whose size is cheap to know ask `meta_tensor` before
/// computing anything instead).
pub fn factory_leaf(
    meta: bool,
    tensor: Tensor,
    requires_grad: bool,
) -> PyResult<Py<crate::tensor::PyTensor>> {
    if meta {
        return Python::attach(|py| meta_tensor(py, tensor.shape(), tensor.dtype(), requires_grad));
    }
    crate::leaf(tensor, requires_grad)
}

/// `_set_meta_factory(make)`: registers `rustgrad._meta._make` (once, at import).
#[pyfunction]
fn _set_meta_factory(py: Python<'_>, make: Py<PyAny>) {
    let _ = META_FACTORY.set(py, make);
}

/// Reads `Tensor.cuda`'s optional device: it must name a CUDA device (PyTorch:
/// "Invalid device, must be cuda device"); a malformed name raises its parse error.
pub fn check_cuda_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    match device.filter(|d| !d.is_none()) {
        None => Ok(()),
        Some(d) => match PyDevice::from_object(d, "argument 'device'")?.kind {
            "cuda" => Ok(()),
            _ => Err(PyRuntimeError::new_err(
                "Invalid device, must be cuda device",
            )),
        },
    }
}

/// Whether `obj` can name a device (a `device`, a string, or an int), for parsing
/// `Tensor.to`'s positional arguments.
pub fn names_device(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyDevice>()
        || obj.is_instance_of::<PyString>()
        || (obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>())
}

#[pymethods]
impl PyDevice {
    /// `device("cpu")`, `device("cpu:0")`, `device("cpu", 0)`, `device(other_device)`,
    /// `device(0)` (CUDA ordinal 0). Devices that rustgrad cannot use can be made; using
    /// them for a tensor raises.
    #[new]
    #[pyo3(signature = (r#type, index = None))]
    fn py_new(r#type: &Bound<'_, PyAny>, index: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let Some(index) = index.filter(|i| !i.is_none()) else {
            if !names_device(r#type) {
                return Err(invalid_device_args(r#type));
            }
            return PyDevice::from_object(r#type, "device");
        };
        let text = r#type.cast::<PyString>().map_err(|_| {
            PyTypeError::new_err(format!(
                "device(): argument 'type' (position 1) must be str, not {}",
                type_name(r#type)
            ))
        })?;
        if !index.is_instance_of::<PyInt>() || index.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "device(): argument 'index' (position 2) must be int, not {}",
                type_name(index)
            )));
        }
        let text = text.to_str()?;
        let parsed = PyDevice::parse(text)?;
        if parsed.index.is_some() {
            return Err(PyRuntimeError::new_err(format!(
                "type (string) must not include an index because index was passed explicitly: {text}"
            )));
        }
        let index = extract_index(index)?;
        if index < 0 {
            return Err(negative_index());
        }
        Ok(PyDevice {
            kind: parsed.kind,
            index: Some(index_to_i8(index)?),
        })
    }

    /// The device type, e.g. `"cpu"`.
    #[getter(r#type)]
    fn kind(&self) -> &'static str {
        self.kind
    }

    /// The device index, or None.
    #[getter]
    fn index(&self) -> Option<i8> {
        self.index
    }

    fn __repr__(&self) -> String {
        match self.index {
            None => format!("device(type='{}')", self.kind),
            Some(i) => format!("device(type='{}', index={i})", self.kind),
        }
    }

    fn __str__(&self) -> String {
        match self.index {
            None => self.kind.to_string(),
            Some(i) => format!("{}:{i}", self.kind),
        }
    }

    /// `with device("meta"):` makes this the default device of factories until the
    /// block ends (blocks nest; per thread, as PyTorch's `DeviceContext`).
    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let device = *slf.get();
        if device.kind != "meta" {
            device.require_cpu()?;
        }
        let previous = DEFAULT_DEVICE.with(|d| d.replace(device));
        SAVED_DEFAULTS.with(|s| s.borrow_mut().push(previous));
        Ok(slf)
    }

    /// Restores the default device the matching `__enter__` replaced.
    fn __exit__(
        &self,
        _exc_type: &Bound<'_, PyAny>,
        _exc_value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> bool {
        if let Some(previous) = SAVED_DEFAULTS.with(|s| s.borrow_mut().pop()) {
            DEFAULT_DEVICE.with(|d| d.set(previous));
        }
        false
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let d = slf.get();
        let args = match d.index {
            None => (d.kind,).into_pyobject(slf.py())?.into_any(),
            Some(i) => (d.kind, i).into_pyobject(slf.py())?.into_any(),
        };
        (slf.get_type(), args)
            .into_pyobject(slf.py())
            .map(|t| t.into_any())
    }
}

/// `set_default_device(device)`: CPU devices and `meta` are accepted (the others raise
/// as `device=` does); None restores `device(type='cpu')`. Per thread, as in PyTorch.
#[pyfunction]
fn set_default_device(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    let device = match device.filter(|d| !d.is_none()) {
        None => PyDevice::CPU,
        Some(d) if !names_device(d) => return Err(invalid_device_args(d)),
        Some(d) => {
            let d = PyDevice::from_object(d, "device")?;
            target_is_meta(d)?;
            d
        }
    };
    DEFAULT_DEVICE.with(|d| d.set(device));
    Ok(())
}

/// `get_default_device()`: `device(type='cpu')` unless `set_default_device` or a
/// `with device(...)` block chose another.
#[pyfunction]
fn get_default_device() -> PyDevice {
    DEFAULT_DEVICE.with(|d| d.get())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyDevice>()?;
    m.add_function(wrap_pyfunction!(set_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_device, m)?)?;
    m.add_function(wrap_pyfunction!(_set_meta_factory, m)?)?;
    Ok(())
}
