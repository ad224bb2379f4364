//! The Python tensor class (`rustgrad.Tensor`), a frozen handle on an engine `Variable`.

use crate::convert::{self, extract_dims, extract_int, extract_scalar, extract_sizes};
use crate::dtype::{extract_dtype, extract_opt_dtype, PyDType};
use crate::errors::IntoPyResult;
use crate::identity::ObjectTable;
use crate::node::PyNode;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyEllipsis, PyList, PySlice, PyTuple};
use pyo3::IntoPyObjectExt;
use rustgrad::storage::WriteSite;
use rustgrad::tensor::CmpOp;
use rustgrad::{DType, Scalar, Tensor, Variable};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Elements above which a kernel call releases the GIL: below it, releasing and
/// retaking the GIL costs more than the work. See Note [The GIL].
const RELEASE_GIL_ELEMENTS: usize = 1 << 16;

/// A multi-dimensional array that takes part in automatic differentiation
/// (PyTorch's `torch.Tensor`; `rustgrad.autograd.Variable` is the same class).
#[pyclass(name = "Tensor", module = "rustgrad", subclass, frozen, weakref, dict)]
pub struct PyTensor {
    pub var: Variable,
    /// Whether this object is in `TENSOR_OBJECTS` (so that dropping it removes it).
    registered: AtomicBool,
}

impl PyTensor {
    pub fn wrap(var: Variable) -> PyTensor {
        PyTensor {
            var,
            registered: AtomicBool::new(false),
        }
    }
}

/// The Python objects of leaves that require grad, so that `AccumulateGrad.variable` is
/// the user's tensor. Only such leaves are registered (when they are made or set to
/// require grad), not every op output: registering costs a weak reference. See
/// Note [Python object identity].
static TENSOR_OBJECTS: ObjectTable<usize> = ObjectTable::new();

impl Drop for PyTensor {
    fn drop(&mut self) {
        if self.registered.load(Ordering::Relaxed) {
            TENSOR_OBJECTS.remove(self.var.identity());
        }
    }
}

/// Makes `obj` the Python object `object_of` returns for its variable.
fn register(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
    TENSOR_OBJECTS.insert(obj.get().var.identity(), obj.as_any())?;
    obj.get().registered.store(true, Ordering::Relaxed);
    Ok(())
}

/// The registered Python object of `var`, or a new (registered) one.
pub fn object_of(py: Python<'_>, var: Variable) -> PyResult<Py<PyTensor>> {
    if let Some(obj) = TENSOR_OBJECTS.get(py, var.identity()) {
        if let Ok(t) = obj.cast_into::<PyTensor>() {
            if t.get().var.same(&var) {
                return Ok(t.unbind());
            }
        }
    }
    let obj = Py::new(py, PyTensor::wrap(var))?;
    register(obj.bind(py))?;
    Ok(obj)
}

/// A Python object for a new leaf, registered when it requires grad.
pub fn new_leaf(py: Python<'_>, var: Variable) -> PyResult<Py<PyTensor>> {
    let requires_grad = var.requires_grad();
    let obj = Py::new(py, PyTensor::wrap(var))?;
    if requires_grad {
        register(obj.bind(py))?;
    }
    Ok(obj)
}

/// An operand of a binary op: another tensor or a Python number.
pub enum Operand {
    Tensor(Variable),
    Scalar(Scalar),
}

impl Operand {
    /// Reads an operand; `None` when the type is not supported (→ NotImplemented).
    pub fn extract(obj: &Bound<'_, PyAny>) -> Option<Operand> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Some(Operand::Tensor(t.get().var.clone()));
        }
        extract_scalar(obj).map(Operand::Scalar)
    }

    /// The operand as a variable; scalars are wrapped relative to `like`.
    pub fn to_var(&self, like: &Variable) -> Variable {
        match self {
            Operand::Tensor(v) => v.clone(),
            Operand::Scalar(s) => like.wrap_scalar(*s),
        }
    }
}

/// Runs `f` without the GIL when `work` elements make it worth it.
fn maybe_detach<T: Send>(py: Python<'_>, work: usize, f: impl FnOnce() -> T + Send) -> T {
    if work >= RELEASE_GIL_ELEMENTS {
        py.detach(f)
    } else {
        f()
    }
}

fn new_tensor(py: Python<'_>, var: Variable) -> PyResult<Py<PyTensor>> {
    Py::new(py, PyTensor::wrap(var))
}

/// The Python `file:line` of the innermost Python frame, for in-place write sites.
fn python_site(py: Python<'_>) -> Option<WriteSite> {
    static GETFRAME: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let getframe = GETFRAME
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("sys")?.getattr("_getframe")?.unbind())
        })
        .ok()?;
    let frame = getframe.bind(py).call1((0,)).ok()?;
    let line: i64 = frame.getattr("f_lineno").ok()?.extract().ok()?;
    let file: String = frame
        .getattr("f_code")
        .ok()?
        .getattr("co_filename")
        .ok()?
        .extract()
        .ok()?;
    Some(WriteSite::External(Arc::from(format!("{file}:{line}"))))
}

/// Records the Python caller as the site of the write that just happened to `var`.
fn mark_python_site(py: Python<'_>, var: &Variable) {
    if let Some(site) = python_site(py) {
        var.tensor().version_counter().set_last_write_site(site);
    }
}

/// The `torch.Size` class, defined in Python.
fn size_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static SIZE: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    Ok(SIZE
        .get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py.import("rustgrad._size")?.getattr("Size")?.unbind())
        })?
        .bind(py))
}

/// A `torch.Size` of `shape`.
pub fn make_size<'py>(py: Python<'py>, shape: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    size_class(py)?.call1((PyTuple::new(py, shape)?,))
}

/// Nested Python lists of a tensor's values (`tolist()`).
pub fn to_list<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    fn build<'py, T: Copy + IntoPyObjectExt<'py>>(
        py: Python<'py>,
        shape: &[usize],
        values: &[T],
    ) -> PyResult<Bound<'py, PyAny>> {
        if shape.is_empty() {
            return values[0].into_bound_py_any(py);
        }
        let inner: usize = shape[1..].iter().product();
        let items = (0..shape[0])
            .map(|i| build(py, &shape[1..], &values[i * inner..(i + 1) * inner]))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyList::new(py, items)?.into_any())
    }
    match t.dtype() {
        DType::F32 | DType::F64 => build(py, t.shape(), &t.try_to_vec::<f64>().py()?),
        DType::I64 => build(py, t.shape(), &t.try_to_vec::<i64>().py()?),
        DType::Bool => build(py, t.shape(), &t.try_to_vec::<bool>().py()?),
    }
}

fn binary(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyAny>> {
    let Some(op) = Operand::extract(other) else {
        return Ok(py.NotImplemented());
    };
    let b = op.to_var(a);
    let work = a.numel().max(b.numel());
    let out = maybe_detach(py, work, || f(a, &b)).py()?;
    Ok(new_tensor(py, out)?.into_any())
}

fn reflected(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyAny>> {
    let Some(op) = Operand::extract(other) else {
        return Ok(py.NotImplemented());
    };
    let b = op.to_var(a);
    let out = maybe_detach(py, a.numel(), || f(&b, a)).py()?;
    Ok(new_tensor(py, out)?.into_any())
}

fn operand_var(obj: &Bound<'_, PyAny>, like: &Variable) -> PyResult<Variable> {
    Operand::extract(obj)
        .map(|o| o.to_var(like))
        .ok_or_else(|| {
            PyTypeError::new_err(format!(
                "expected a Tensor or a number, but got {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
}

fn compare(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    op: CmpOp,
) -> PyResult<Py<PyAny>> {
    binary(py, a, other, move |x, y| x.compare(y, op))
}

/// The dtype of a legacy type name (`'torch.FloatTensor'`); a CUDA type name raises as
/// a CPU-only PyTorch build does.
fn legacy_type_from_name(name: &str) -> PyResult<DType> {
    let all = [DType::F32, DType::F64, DType::I64, DType::Bool];
    if let Some(d) = all.iter().find(|d| d.legacy_type_name() == name) {
        return Ok(*d);
    }
    let is_cuda_name = name.strip_prefix("torch.cuda.").is_some_and(|rest| {
        all.iter()
            .any(|d| d.legacy_type_name() == format!("torch.{rest}"))
    });
    if is_cuda_name {
        return Err(pyo3::exceptions::PyAssertionError::new_err(
            "Torch not compiled with CUDA enabled",
        ));
    }
    Err(PyValueError::new_err(format!("invalid type: '{name}'")))
}

/// The arguments of `Tensor.to`, read as PyTorch's three signatures:
/// `(device=None, dtype=None, non_blocking=False, copy=False)`,
/// `(dtype, non_blocking=False, copy=False)` and `(tensor, non_blocking=False, copy=False)`.
struct ToArgs<'py> {
    device: Option<Bound<'py, PyAny>>,
    dtype: Option<DType>,
    copy: bool,
}

impl<'py> ToArgs<'py> {
    fn parse(
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<ToArgs<'py>> {
        let invalid = || {
            let mut got: Vec<String> = args.iter().map(|a| crate::device::type_name(&a)).collect();
            if let Some(kw) = kwargs {
                for (k, v) in kw.iter() {
                    got.push(format!("{k}={}", crate::device::type_name(&v)));
                }
            }
            PyTypeError::new_err(format!(
                "to() received an invalid combination of arguments - got ({}), but expected one of:\n \
                 * (torch.device device = None, torch.dtype dtype = None, bool non_blocking = False, bool copy = False)\n \
                 * (torch.dtype dtype, bool non_blocking = False, bool copy = False)\n \
                 * (Tensor tensor, bool non_blocking = False, bool copy = False)",
                got.join(", ")
            ))
        };
        let positional: Vec<Bound<'py, PyAny>> = args.iter().collect();
        let mut out = ToArgs {
            device: None,
            dtype: None,
            copy: false,
        };
        // Names of the parameters in order, after the ones the first argument fixed.
        let (fixed, names): (usize, &[&str]) = match positional.first() {
            Some(first) if first.is_instance_of::<PyTensor>() => {
                out.dtype = Some(first.cast::<PyTensor>()?.get().var.dtype());
                (1, &["non_blocking", "copy"])
            }
            Some(first) if !crate::device::names_device(first) && !first.is_none() => {
                out.dtype = Some(extract_dtype(first).map_err(|_| invalid())?);
                (1, &["non_blocking", "copy"])
            }
            _ => (0, &["device", "dtype", "non_blocking", "copy"]),
        };
        if positional.len() - fixed > names.len() {
            return Err(invalid());
        }
        let mut given: Vec<(&str, Bound<'py, PyAny>)> = names
            .iter()
            .copied()
            .zip(positional.into_iter().skip(fixed))
            .collect();
        if let Some(kw) = kwargs {
            for (key, value) in kw.iter() {
                let key = key.extract::<String>()?;
                let name = names
                    .iter()
                    .copied()
                    .find(|n| *n == key)
                    .filter(|n| given.iter().all(|(g, _)| g != n))
                    .ok_or_else(invalid)?;
                given.push((name, value));
            }
        }
        for (name, value) in given {
            match name {
                "device" if value.is_none() || crate::device::names_device(&value) => {
                    out.device = Some(value)
                }
                "dtype" => out.dtype = extract_opt_dtype(Some(&value)).map_err(|_| invalid())?,
                "non_blocking" if value.is_instance_of::<pyo3::types::PyBool>() => {}
                "copy" if value.is_instance_of::<pyo3::types::PyBool>() => {
                    out.copy = value.is_truthy()?
                }
                _ => return Err(invalid()),
            }
        }
        Ok(out)
    }
}

/// An optional scalar bound (`clamp(min=None, max=...)`): a number or a one-element
/// tensor, kept exact (Note [Exact scalars]).
fn opt_scalar(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Scalar>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match extract_scalar(o) {
            Some(s) => Ok(Some(s)),
            None => match o.cast::<PyTensor>() {
                Ok(t) => Ok(Some(t.get().var.item().py()?)),
                Err(_) => Err(PyTypeError::new_err("clamp bounds must be numbers")),
            },
        },
    }
}

/// `alpha * other` for `add`/`sub`, with PyTorch's checks: a float alpha is refused when
/// the result is integral, a bool alpha unless it is bool; an integer alpha is exact.
fn scaled_operand(
    this: &Variable,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Variable> {
    let b = operand_var(other, this)?;
    let Some(alpha) = alpha.filter(|a| !a.is_none()) else {
        return Ok(b);
    };
    let a = extract_scalar(alpha).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "alpha must be a number, not {}",
            alpha
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let result = DType::result_type(this.dtype(), this.dim() == 0, b.dtype(), b.dim() == 0);
    match a {
        Scalar::Float(_) if !result.is_floating_point() => Err(PyRuntimeError::new_err(
            "For integral input tensors, argument alpha must not be a floating point number.",
        )),
        Scalar::Bool(_) if result != DType::Bool => Err(PyRuntimeError::new_err(
            "Boolean alpha only supported for Boolean results.",
        )),
        // A bool result takes alpha as a bool (PyTorch casts it to the result type).
        Scalar::Int(v) if result == DType::Bool => match v != 0 {
            true => Ok(b),
            false => b.mul(&b.wrap_scalar(Scalar::Bool(false))).py(),
        },
        Scalar::Int(1) | Scalar::Bool(true) => Ok(b),
        Scalar::Float(1.0) => Ok(b),
        _ => b.mul(&b.wrap_scalar(a)).py(),
    }
}

/// A comparison method (`eq`, `lt`, ...): unlike the operators, which return
/// NotImplemented so Python can try the other operand, the methods raise TypeError.
fn compare_method(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    op: CmpOp,
) -> PyResult<Py<PyAny>> {
    let Some(b) = Operand::extract(other).map(|o| o.to_var(a)) else {
        let name = match op {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        };
        return Err(PyTypeError::new_err(format!(
            "{name}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor other)\n * (Number other)",
            other.get_type().name()?
        )));
    };
    let out = maybe_detach(py, a.numel().max(b.numel()), || a.compare(&b, op)).py()?;
    Ok(new_tensor(py, out)?.into_any())
}

impl PyTensor {
    /// Applies an elementwise op, without the GIL when the tensor is large.
    fn elementwise(
        &self,
        py: Python<'_>,
        op: fn(&Variable) -> rustgrad::Result<Variable>,
    ) -> PyResult<Py<PyTensor>> {
        let out = maybe_detach(py, self.var.numel(), || op(&self.var)).py()?;
        new_tensor(py, out)
    }
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data)` (a copy of nested sequences in the default float dtype, float32
    /// unless `set_default_dtype` changed it), `Tensor(2, 3)` (zeros of that size), or
    /// `Tensor()` (an empty tensor).
    #[new]
    #[pyo3(signature = (*args, requires_grad = false, _share = None, volatile = false))]
    fn py_new(
        args: &Bound<'_, PyTuple>,
        requires_grad: bool,
        _share: Option<&Bound<'_, PyTensor>>,
        volatile: bool,
    ) -> PyResult<Self> {
        // The legacy constructor makes tensors of the default float dtype.
        let dtype = DType::default_float();
        let tensor = if let Some(src) = _share {
            src.get().var.tensor().clone()
        } else if args.is_empty() {
            Tensor::zeros(&[0], dtype)
        } else if args.len() == 1 && !args.get_item(0)?.is_instance_of::<pyo3::types::PyInt>() {
            convert::tensor_from_data(&args.get_item(0)?, Some(dtype))?
        } else {
            let sizes = rustgrad::shape::checked_shape(&extract_sizes(args)?).py()?;
            rustgrad::shape::checked_storage_bytes(&sizes, dtype.size_in_bytes()).py()?;
            rustgrad::tensor::check_allocation(sizes.iter().product(), dtype).py()?;
            Tensor::zeros(&sizes, dtype)
        };
        let var = if volatile {
            Variable::new_volatile(tensor)
        } else {
            Variable::new(tensor, requires_grad).py()?
        };
        Ok(PyTensor::wrap(var))
    }

    // ----- metadata -----------------------------------------------------------------

    /// The size of each dimension, as a `rustgrad.Size`.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        make_size(py, &self.var.shape())
    }

    /// `size()` → the shape; `size(dim)` → one dimension's size.
    #[pyo3(signature = (dim = None))]
    fn size<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        match dim.filter(|d| !d.is_none()) {
            None => make_size(py, &self.var.shape()),
            Some(d) => {
                let d = rustgrad::shape::wrap_dim_strict(extract_int(d)?, self.var.dim()).py()?;
                self.var.shape()[d].into_bound_py_any(py)
            }
        }
    }

    /// Number of dimensions.
    fn dim(&self) -> usize {
        self.var.dim()
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.var.dim()
    }

    /// Number of elements.
    fn numel(&self) -> usize {
        self.var.numel()
    }

    /// Element strides, or one dim's stride.
    #[pyo3(signature = (dim = None))]
    fn stride<'py>(
        &self,
        py: Python<'py>,
        dim: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let tensor = self.var.tensor();
        let strides = tensor.strides();
        match dim.filter(|d| !d.is_none()) {
            None => Ok(PyTuple::new(py, strides)?.into_any()),
            Some(d) => {
                let d = rustgrad::shape::wrap_dim_strict(extract_int(d)?, self.var.dim()).py()?;
                strides[d].into_bound_py_any(py)
            }
        }
    }

    /// Offset of the first element in the storage.
    fn storage_offset(&self) -> usize {
        self.var.tensor().layout().offset()
    }

    /// Whether the elements are laid out row-major without gaps.
    fn is_contiguous(&self) -> bool {
        self.var.tensor().is_contiguous()
    }

    /// The element type.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType {
            inner: self.var.dtype(),
        }
    }

    /// Always `device(type='cpu')`.
    #[getter]
    fn device(&self) -> crate::device::PyDevice {
        crate::device::PyDevice::CPU
    }

    /// Whether the dtype is floating point.
    fn is_floating_point(&self) -> bool {
        self.var.dtype().is_floating_point()
    }

    // ----- autograd state -----------------------------------------------------------

    /// Whether gradients are computed for this tensor.
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.var.requires_grad()
    }

    #[setter(requires_grad)]
    fn set_requires_grad_attr(slf: &Bound<'_, Self>, value: bool) -> PyResult<()> {
        slf.get().var.set_requires_grad(value).py()?;
        if value && slf.get().var.is_leaf() {
            register(slf)?;
        }
        Ok(())
    }

    /// Sets requires_grad in place and returns self.
    #[pyo3(signature = (requires_grad = true))]
    fn requires_grad_(slf: Bound<'_, Self>, requires_grad: bool) -> PyResult<Bound<'_, Self>> {
        Self::set_requires_grad_attr(&slf, requires_grad)?;
        Ok(slf)
    }

    /// Registers a tensor constructed with `requires_grad=True` (`Tensor(...)`,
    /// `Parameter(...)`); see `object_of`.
    #[pyo3(signature = (*args, **kwargs))]
    fn __init__(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        let _ = (args, kwargs);
        if slf.get().var.requires_grad() && slf.get().var.is_leaf() {
            register(slf)?;
        }
        Ok(())
    }

    /// The legacy volatile flag: an op with any volatile input records nothing.
    #[getter]
    fn volatile(&self) -> bool {
        self.var.is_volatile()
    }

    /// Whether this tensor was created by the user (not by a recorded op).
    #[getter]
    fn is_leaf(&self) -> bool {
        self.var.is_leaf()
    }

    /// The accumulated gradient, or None.
    #[getter(grad)]
    fn get_grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        self.var.grad().map(|g| object_of(py, g)).transpose()
    }

    #[setter(grad)]
    fn set_grad(&self, value: Option<&Bound<'_, PyTensor>>) -> PyResult<()> {
        self.var.set_grad(value.map(|v| v.get().var.clone())).py()?;
        // `x.grad = t; x.grad is t`, as in PyTorch.
        value.map(register).transpose().map(|_| ())
    }

    /// The node that created this tensor, or None for leaves.
    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.var
            .grad_fn()
            .map(|n| PyNode::create(py, n))
            .transpose()
    }

    /// The version counter: in-place writes to this tensor's storage so far.
    #[getter]
    fn _version(&self) -> u64 {
        self.var.tensor().version()
    }

    /// A tensor sharing this one's data, outside the graph, with its own version
    /// counter (`x.data`).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.data())
    }

    /// `x.data = t`: `x` now has `t`'s data (shared, any shape and dtype), keeping its
    /// autograd identity and version.
    #[setter(data)]
    fn set_data(&self, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let Ok(src) = value.cast::<PyTensor>() else {
            return Err(PyTypeError::new_err(format!(
                "Variable data has to be a tensor, but got {}",
                value.get_type().name()?
            )));
        };
        self.var.set_data(&src.get().var).py()
    }

    /// The base tensor of a view, or None.
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        self.var.view_base().map(|b| object_of(py, b)).transpose()
    }

    /// A new leaf sharing this tensor's data and version counter, with no history.
    fn detach(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.detach())
    }

    /// Turns this tensor into a leaf that does not require grad.
    fn detach_(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf.get().var.detach_();
        slf
    }

    /// Computes the gradient of this tensor w.r.t. graph leaves.
    #[pyo3(signature = (gradient = None, retain_graph = None, create_graph = false))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> PyResult<()> {
        let grad = match gradient {
            None => None,
            Some(g) if g.is_none() => None,
            Some(g) => Some(match g.cast::<PyTensor>() {
                Ok(t) => t.get().var.clone(),
                Err(_) => {
                    Variable::from_tensor(convert::tensor_from_data(g, Some(self.var.dtype()))?)
                }
            }),
        };
        let var = self.var.clone();
        let retain = retain_graph.unwrap_or(create_graph);
        py.detach(move || var.backward_with(grad.as_ref(), retain, create_graph))
            .py()
    }

    // ----- conversion ---------------------------------------------------------------

    /// The value of a one-element tensor as a Python number.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        convert::scalar_to_py(py, self.var.item().py()?)
    }

    /// The values as (nested) Python lists.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_list(py, &self.var.tensor())
    }

    /// A numpy array holding a copy of the values.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.var.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        convert::to_numpy(py, &self.var.tensor())
    }

    /// numpy's conversion hook (numpy 2 passes `dtype` and `copy`). The result is
    /// always a copy (Note [numpy interop]), so `copy=False` raises as numpy asks.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "Unable to avoid copy while creating an array as requested.",
            ));
        }
        let arr = convert::to_numpy(py, &self.var.tensor())?;
        match dtype {
            Some(d) if !d.is_none() => arr.call_method1("astype", (d,)),
            _ => Ok(arr),
        }
    }

    /// `to(device=None, dtype=None, non_blocking=False, copy=False)`, `to(dtype, ...)` or
    /// `to(other, ...)`: converts to the dtype (differentiable between float dtypes; the
    /// device must be the CPU). Returns `self` when nothing changes and `copy` is False,
    /// as PyTorch does.
    #[pyo3(signature = (*args, **kwargs))]
    fn to<'py>(
        slf: Bound<'py, Self>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let target = ToArgs::parse(args, kwargs)?;
        crate::device::check_device(target.device.as_ref())?;
        let var = &slf.get().var;
        let py = slf.py();
        let out = match target.dtype {
            Some(d) if target.copy => var.to_dtype_copy(d).py()?,
            Some(d) if d != var.dtype() => var.to_dtype(d).py()?,
            _ if target.copy => var.to_dtype_copy(var.dtype()).py()?,
            _ => return Ok(slf.into_any()),
        };
        Ok(new_tensor(py, out)?.into_bound(py).into_any())
    }

    /// `self`: tensors live on the CPU.
    #[pyo3(signature = (memory_format = None))]
    fn cpu<'py>(
        slf: Bound<'py, Self>,
        memory_format: Option<&Bound<'py, PyAny>>,
    ) -> Bound<'py, Self> {
        let _ = memory_format;
        slf
    }

    /// Raises as a CPU-only PyTorch build does: AssertionError "Torch not compiled with
    /// CUDA enabled".
    #[pyo3(signature = (device = None, non_blocking = false, memory_format = None))]
    fn cuda(
        &self,
        device: Option<&Bound<'_, PyAny>>,
        non_blocking: bool,
        memory_format: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let _ = (non_blocking, memory_format);
        // A malformed device string is reported first, as PyTorch parses before it
        // initialises CUDA.
        crate::device::check_cuda_device(device)?;
        Err(pyo3::exceptions::PyAssertionError::new_err(
            "Torch not compiled with CUDA enabled",
        ))
    }

    /// Always False: tensors live on the CPU.
    #[getter]
    fn is_cuda(&self) -> bool {
        false
    }

    /// Always True.
    #[getter]
    fn is_cpu(&self) -> bool {
        true
    }

    /// Bytes per element.
    fn element_size(&self) -> usize {
        self.var.dtype().size_in_bytes()
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.var.dtype().size_in_bytes()
    }

    /// `numel() * element_size()`: the bytes the elements take, as if dense (an expanded
    /// view counts every element, as in PyTorch).
    #[getter]
    fn nbytes(&self) -> usize {
        // Cannot overflow: a tensor's numel was checked against its byte size when the
        // shape was made (Note [Checked size arithmetic]); saturate to stay panic-free.
        self.var
            .numel()
            .saturating_mul(self.var.dtype().size_in_bytes())
    }

    /// `type()` → the legacy type name (`'torch.FloatTensor'`); `type(dtype)` or
    /// `type('torch.DoubleTensor')` converts like `to(dtype)` (`self` if unchanged).
    #[pyo3(name = "type", signature = (dtype = None, non_blocking = false))]
    fn type_<'py>(
        slf: Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        non_blocking: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = non_blocking;
        let py = slf.py();
        let current = slf.get().var.dtype();
        let Some(dtype) = dtype.filter(|d| !d.is_none()) else {
            return Ok(pyo3::types::PyString::new(py, current.legacy_type_name()).into_any());
        };
        let target = if let Ok(d) = dtype.cast::<PyDType>() {
            d.get().inner
        } else if let Ok(name) = dtype.extract::<String>() {
            legacy_type_from_name(&name)?
        } else if let Ok(t) = dtype.cast::<pyo3::types::PyType>() {
            return Err(PyValueError::new_err(format!(
                "invalid type: '{}'",
                t.name()?
            )));
        } else {
            return Err(PyTypeError::new_err(
                "dtype must be a type, str, or dtype object",
            ));
        };
        if target == current {
            return Ok(slf.into_any());
        }
        let out = slf.get().var.to_dtype(target).py()?;
        Ok(new_tensor(py, out)?.into_bound(py).into_any())
    }

    /// Converts to float32.
    fn float(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.to_dtype(DType::F32).py()?)
    }

    /// Converts to float64.
    fn double(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.to_dtype(DType::F64).py()?)
    }

    /// Converts to int64.
    fn long(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.to_dtype(DType::I64).py()?)
    }

    /// Converts to bool.
    fn bool(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.to_dtype(DType::Bool).py()?)
    }

    /// A contiguous tensor (self when already contiguous).
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let v = &slf.get().var;
        if v.tensor().is_contiguous() {
            return Ok(slf.into_any());
        }
        Ok(new_tensor(slf.py(), v.contiguous().py()?)?
            .into_bound(slf.py())
            .into_any())
    }

    /// `clone()`: a copy with its own storage (differentiable). As PyTorch's default
    /// `memory_format=torch.preserve_format`, a dense tensor keeps its strides.
    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.clone_preserving_strides().py()?)
    }

    fn __repr__(&self) -> String {
        self.var.repr()
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.var.shape().first() {
            Some(&n) => Ok(n),
            None => Err(PyTypeError::new_err("len() of a 0-d tensor")),
        }
    }

    fn __bool__(&self) -> PyResult<bool> {
        if self.var.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} values is ambiguous",
                if self.var.numel() == 0 {
                    "no"
                } else {
                    "more than one"
                }
            )));
        }
        Ok(self.var.item().py()?.to_f64() != 0.0)
    }

    fn __float__(&self) -> PyResult<f64> {
        Ok(self.var.item().py()?.to_f64())
    }

    /// `int(t)`: a float converts as Python's `int(float)` does (exact for any finite
    /// value; ValueError for NaN, OverflowError for infinities), never saturating.
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.var.item().py()? {
            Scalar::Float(v) => pyo3::types::PyFloat::new(py, v).call_method0("__int__"),
            Scalar::Int(v) => v.into_bound_py_any(py),
            Scalar::Bool(v) => (v as i64).into_bound_py_any(py),
        }
    }

    fn __index__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.var.dtype().is_floating_point() || self.var.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        self.__int__(py)
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    // ----- arithmetic ---------------------------------------------------------------

    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.add(b))
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.add(b))
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.sub(b))
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.rsub(b))
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.mul(b))
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.mul(b))
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        binary(py, &self.var, other, |a, b| a.div(b))
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        reflected(py, &self.var, other, |a, b| a.div(b))
    }

    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        match extract_scalar(other) {
            Some(e) => Ok(new_tensor(py, self.var.pow_scalar_value(e).py()?)?.into_any()),
            None => binary(py, &self.var, other, |a, b| a.pow(b)),
        }
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        reflected(py, &self.var, other, |a, b| a.pow(b))
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if other.cast::<PyTensor>().is_err() {
            return Ok(py.NotImplemented());
        }
        binary(py, &self.var, other, |a, b| a.matmul(b))
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if other.cast::<PyTensor>().is_err() {
            return Ok(py.NotImplemented());
        }
        reflected(py, &self.var, other, |a, b| a.matmul(b))
    }

    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.neg().py()?)
    }

    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.abs().py()?)
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Eq)
    }

    fn __ne__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Ne)
    }

    fn __lt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Lt)
    }

    fn __le__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Le)
    }

    fn __gt__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Gt)
    }

    fn __ge__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare(py, &self.var, other, CmpOp::Ge)
    }

    /// `self + alpha * other`.
    #[pyo3(signature = (other, *, alpha = None))]
    fn add(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let b = scaled_operand(&self.var, other, alpha)?;
        new_tensor(
            py,
            maybe_detach(py, self.var.numel(), || self.var.add(&b)).py()?,
        )
    }

    /// `self - alpha * other`.
    #[pyo3(signature = (other, *, alpha = None))]
    fn sub(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let b = scaled_operand(&self.var, other, alpha)?;
        new_tensor(
            py,
            maybe_detach(py, self.var.numel(), || self.var.sub(&b)).py()?,
        )
    }

    /// `self * other`.
    fn mul(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = operand_var(other, &self.var)?;
        new_tensor(
            py,
            maybe_detach(py, self.var.numel(), || self.var.mul(&b)).py()?,
        )
    }

    /// `self / other`.
    fn div(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let b = operand_var(other, &self.var)?;
        new_tensor(
            py,
            maybe_detach(py, self.var.numel(), || self.var.div(&b)).py()?,
        )
    }

    /// `self ** exponent` (scalar or tensor exponent).
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let out = match extract_scalar(exponent) {
            Some(s) => self.var.pow_scalar_value(s),
            None => self.var.pow(&operand_var(exponent, &self.var)?),
        };
        new_tensor(py, out.py()?)
    }

    /// Matrix product (`@`).
    fn matmul(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
        let b = other.get().var.clone();
        let work = self.var.numel().max(b.numel());
        new_tensor(py, maybe_detach(py, work, || self.var.matmul(&b)).py()?)
    }

    /// 2-D matrix product.
    fn mm(&self, py: Python<'_>, other: &Bound<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
        if self.var.dim() != 2 || other.get().var.dim() != 2 {
            return Err(PyRuntimeError::new_err("self must be a matrix"));
        }
        self.matmul(py, other)
    }

    fn neg(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.neg().py()?)
    }

    fn exp(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::exp)
    }

    fn log(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::log)
    }

    fn sqrt(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::sqrt)
    }

    fn tanh(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::tanh)
    }

    fn sigmoid(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::sigmoid)
    }

    fn relu(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        self.elementwise(py, Variable::relu)
    }

    fn abs(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.abs().py()?)
    }

    fn sign(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.sign().py()?)
    }

    /// Clamps into `[min, max]`.
    #[pyo3(signature = (min = None, max = None))]
    fn clamp(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        new_tensor(
            py,
            self.var
                .clamp_scalar(opt_scalar(min)?, opt_scalar(max)?)
                .py()?,
        )
    }

    fn eq(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Eq)
    }

    fn ne(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Ne)
    }

    fn lt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Lt)
    }

    fn le(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Le)
    }

    fn gt(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Gt)
    }

    fn ge(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        compare_method(py, &self.var, other, CmpOp::Ge)
    }

    // ----- reductions ---------------------------------------------------------------

    /// Sum of all elements, or over `dim` (int or tuple), keeping dims if `keepdim`.
    #[pyo3(signature = (dim = None, keepdim = false, *, dtype = None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let src = match extract_opt_dtype(dtype)? {
            Some(d) => self.var.to_dtype(d).py()?,
            None => self.var.clone(),
        };
        let dims = extract_dims(dim)?;
        let out = maybe_detach(py, src.numel(), || match &dims {
            None => src.sum(),
            Some(d) => src.sum_dims(d, keepdim),
        });
        new_tensor(py, out.py()?)
    }

    /// Mean of all elements, or over `dim`.
    #[pyo3(signature = (dim = None, keepdim = false, *, dtype = None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let src = match extract_opt_dtype(dtype)? {
            Some(d) => self.var.to_dtype(d).py()?,
            None => self.var.clone(),
        };
        let dims = extract_dims(dim)?;
        let out = maybe_detach(py, src.numel(), || match &dims {
            None => src.mean(),
            Some(d) => src.mean_dims(d, keepdim),
        });
        new_tensor(py, out.py()?)
    }

    // ----- views --------------------------------------------------------------------

    /// A view with another shape (`view(2, 3)` or `view((2, 3))`); one size may be -1.
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        if shape.len() == 1 {
            if let Ok(d) = extract_dtype(&shape.get_item(0)?) {
                if d != self.var.dtype() {
                    return Err(PyRuntimeError::new_err(
                        "view(dtype) reinterpretation is not supported by rustgrad",
                    ));
                }
                // PyTorch 2.x: a distinct alias without autograd history (not `self`).
                return new_tensor(py, self.var.detach());
            }
        }
        new_tensor(py, self.var.view(&extract_sizes(shape)?).py()?)
    }

    /// Like view, copying when needed.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.reshape(&extract_sizes(shape)?).py()?)
    }

    /// Swaps two dims.
    fn transpose(
        &self,
        py: Python<'_>,
        dim0: &Bound<'_, PyAny>,
        dim1: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let (d0, d1) = (extract_int(dim0)?, extract_int(dim1)?);
        new_tensor(py, self.var.transpose(d0, d1).py()?)
    }

    /// Merges dims `start_dim..=end_dim` into one (a view when possible).
    #[pyo3(signature = (start_dim = None, end_dim = None))]
    fn flatten(
        &self,
        py: Python<'_>,
        start_dim: Option<&Bound<'_, PyAny>>,
        end_dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let start = start_dim.map(extract_int).transpose()?.unwrap_or(0);
        let end = end_dim.map(extract_int).transpose()?.unwrap_or(-1);
        let nd = self.var.dim();
        let (s, e) = (
            rustgrad::shape::wrap_dim(start, nd).py()?,
            rustgrad::shape::wrap_dim(end, nd).py()?,
        );
        if s > e {
            return Err(PyRuntimeError::new_err(
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if nd == 0 {
            return new_tensor(py, self.var.reshape(&[1]).py()?);
        }
        let shape = self.var.shape();
        let mut target: Vec<i64> = shape[..s].iter().map(|&d| d as i64).collect();
        target.push(shape[s..=e].iter().product::<usize>() as i64);
        target.extend(shape[e + 1..].iter().map(|&d| d as i64));
        new_tensor(py, self.var.reshape(&target).py()?)
    }

    /// Transpose of a <= 2-D tensor.
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.t().py()?)
    }

    /// Reorders dims (`permute(1, 0)` or `permute((1, 0))`).
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.permute(&extract_sizes(dims)?).py()?)
    }

    /// Broadcasts to a larger size without copying (-1 keeps a size).
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.expand(&extract_sizes(sizes)?).py()?)
    }

    /// Inserts a size-1 dim.
    fn unsqueeze(&self, py: Python<'_>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.unsqueeze(extract_int(dim)?).py()?)
    }

    /// Removes size-1 dims (all, or the given one).
    #[pyo3(signature = (dim = None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
        let out = match dim.filter(|d| !d.is_none()) {
            None => self.var.squeeze(),
            Some(d) => self.var.squeeze_dim(extract_int(d)?),
        };
        new_tensor(py, out.py()?)
    }

    /// Indexing: ints, slices, None, Ellipsis, bools, 0-d or one-element integer
    /// tensors, or tuples of them.
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let (view, copy) = index_variable(&self.var, index)?;
        let out = if copy { view.clone_data().py()? } else { view };
        new_tensor(py, out)
    }

    /// `x[index] = value`: copies into the indexed view.
    fn __setitem__(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (view, _) = index_variable(&self.var, index)?;
        let src = operand_var(value, &view)?;
        view.copy_(&src).py()?;
        mark_python_site(py, &view);
        Ok(())
    }

    // ----- in-place ops -------------------------------------------------------------

    /// In-place `self += alpha * other`.
    #[pyo3(signature = (other, *, alpha = None))]
    fn add_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let b = scaled_operand(v, other, alpha)?;
        v.add_(&b).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// In-place `self -= alpha * other`.
    #[pyo3(signature = (other, *, alpha = None))]
    fn sub_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let b = scaled_operand(v, other, alpha)?;
        v.sub_(&b).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// In-place `self *= other`.
    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        v.mul_(&operand_var(other, v)?).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// In-place `self /= other`.
    fn div_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        v.div_(&operand_var(other, v)?).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Fills with zeros.
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let v = &slf.get().var;
        v.zero_().py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Fills with `value`.
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let value = match extract_scalar(value) {
            Some(s) => s,
            None => match value.cast::<PyTensor>() {
                Ok(t) => t.get().var.item().py()?,
                Err(_) => {
                    return Err(PyTypeError::new_err(
                        "fill_() expects a number or a 0-d tensor",
                    ))
                }
            },
        };
        if v.dtype() == DType::I64 {
            value.checked_cast::<i64>().py()?;
        }
        v.fill_scalar_(value).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Copies `src` (broadcast and converted) into this tensor.
    fn copy_<'py>(slf: Bound<'py, Self>, src: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        v.copy_(&src.get().var).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Clamps in place.
    #[pyo3(signature = (min = None, max = None))]
    fn clamp_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        v.clamp_scalar_(opt_scalar(min)?, opt_scalar(max)?).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// relu in place.
    fn relu_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        let v = &slf.get().var;
        v.relu_().py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    fn __iadd__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::add_(slf, other, None).map(|_| ())
    }

    fn __isub__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::sub_(slf, other, None).map(|_| ())
    }

    fn __imul__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::mul_(slf, other).map(|_| ())
    }

    fn __itruediv__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::div_(slf, other).map(|_| ())
    }
}

/// One parsed item of a Python index.
enum IndexItem {
    /// `None`: a new dim of size 1.
    NewAxis,
    /// `...`
    Ellipsis,
    /// `start:stop:step`
    Slice(Option<i64>, Option<i64>, i64),
    /// An int or a 0-d integer tensor: selects, removing the dim.
    Int(i64),
    /// A Python bool or a 0-d bool tensor: PyTorch's mask over a new dim of size 1
    /// (`x[True]` adds a dim of size 1, `x[False]` one of size 0).
    Mask(bool),
    /// A one-element 1-d integer tensor: keeps the dim, with size 1.
    Tensor1(i64),
}

impl IndexItem {
    /// Whether the item indexes a dim of the tensor (None, `...` and masks do not).
    fn consumes(&self) -> bool {
        matches!(
            self,
            IndexItem::Slice(..) | IndexItem::Int(_) | IndexItem::Tensor1(_)
        )
    }

    /// Whether PyTorch treats the item as advanced indexing (the result is a copy).
    fn advanced(&self) -> bool {
        matches!(self, IndexItem::Mask(_) | IndexItem::Tensor1(_))
    }

    fn parse(item: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
        if item.is_none() {
            return Ok(IndexItem::NewAxis);
        }
        if item.is_instance_of::<PyEllipsis>() {
            return Ok(IndexItem::Ellipsis);
        }
        if let Ok(s) = item.cast::<PySlice>() {
            let start = opt_index(&s.getattr("start")?)?;
            let stop = opt_index(&s.getattr("stop")?)?;
            let step = opt_index(&s.getattr("step")?)?.unwrap_or(1);
            if step <= 0 {
                return Err(PyValueError::new_err("step must be greater than zero"));
            }
            return Ok(IndexItem::Slice(start, stop, step));
        }
        if item.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(IndexItem::Mask(item.extract::<bool>()?));
        }
        if let Ok(t) = item.cast::<PyTensor>() {
            let t = &t.get().var;
            return match (t.dtype(), t.dim(), t.numel()) {
                (DType::F32 | DType::F64, _, _) => Err(PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                )),
                (DType::Bool, 0, _) => Ok(IndexItem::Mask(t.item().py()? == Scalar::Bool(true))),
                (DType::I64, 0, _) => match t.item().py()? {
                    Scalar::Int(i) => Ok(IndexItem::Int(i)),
                    _ => Err(PyRuntimeError::new_err("rustgrad internal error: int tensor item")),
                },
                (DType::I64, 1, 1) => match t.item().py()? {
                    Scalar::Int(i) => Ok(IndexItem::Tensor1(i)),
                    _ => Err(PyRuntimeError::new_err("rustgrad internal error: int tensor item")),
                },
                _ => Err(PyRuntimeError::new_err(
                    "rustgrad does not support advanced indexing with index tensors of several elements or bool mask tensors yet",
                )),
            };
        }
        if let Ok(i) = extract_int(item) {
            return Ok(IndexItem::Int(i));
        }
        Err(PyIndexError::new_err(format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
            item.get_type().name()?
        )))
    }
}

/// Applies a Python index (int, slice, None, Ellipsis, bool, a 0-d or one-element
/// integer tensor, or a tuple of them) as views of `var`. The flag says whether PyTorch
/// would return a copy (advanced indexing): `__getitem__` then copies, while
/// `__setitem__` writes through the view.
pub fn index_variable(var: &Variable, index: &Bound<'_, PyAny>) -> PyResult<(Variable, bool)> {
    let items: Vec<IndexItem> = match index.cast::<PyTuple>() {
        Ok(t) => t
            .iter()
            .map(|i| IndexItem::parse(&i))
            .collect::<PyResult<_>>()?,
        Err(_) => vec![IndexItem::parse(index)?],
    };
    let nd = var.dim();
    let used = items.iter().filter(|i| i.consumes()).count();
    if used > 0 && nd == 0 {
        return Err(PyIndexError::new_err(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ));
    }
    if used > nd {
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {nd}"
        )));
    }
    let advanced = items.iter().filter(|i| i.advanced()).count();
    if advanced > 1 {
        return Err(PyRuntimeError::new_err(
            "rustgrad does not support combining several bool or tensor indices (advanced indexing) yet",
        ));
    }
    let mut out = var.clone();
    // `dim` is the dim of `out` the next item applies to; `source_dim` the dim of `var`
    // (for messages: selecting removes dims from `out`).
    let mut dim: i64 = 0;
    let mut source_dim: usize = 0;
    let mut seen_ellipsis = false;
    let bounded = |out: &Variable, dim: i64, i: i64, source_dim: usize| -> PyResult<i64> {
        let size = out.shape()[dim as usize] as i64;
        if i >= size || i < -size {
            return Err(PyIndexError::new_err(format!(
                "index {i} is out of bounds for dimension {source_dim} with size {size}"
            )));
        }
        Ok(if i < 0 { i + size } else { i })
    };
    for item in &items {
        match *item {
            IndexItem::NewAxis => {
                out = out.unsqueeze(dim).py()?;
                dim += 1;
            }
            IndexItem::Mask(keep) => {
                out = out.unsqueeze(dim).py()?;
                out = out.slice(dim, Some(0), Some(keep as i64), 1).py()?;
                dim += 1;
            }
            IndexItem::Ellipsis => {
                if seen_ellipsis {
                    return Err(PyIndexError::new_err(
                        "an index can only have a single ellipsis ('...')",
                    ));
                }
                seen_ellipsis = true;
                dim += (nd - used) as i64;
                source_dim += nd - used;
            }
            IndexItem::Slice(start, stop, step) => {
                out = out.slice(dim, start, stop, step).py()?;
                dim += 1;
                source_dim += 1;
            }
            IndexItem::Int(i) => {
                let i = bounded(&out, dim, i, source_dim)?;
                out = out.select(dim, i).py()?;
                source_dim += 1;
            }
            IndexItem::Tensor1(i) => {
                let i = bounded(&out, dim, i, source_dim)?;
                out = out.slice(dim, Some(i), Some(i + 1), 1).py()?;
                dim += 1;
                source_dim += 1;
            }
        }
    }
    if out.same(var) {
        // `x[...]` / `x[()]` is a new view of the whole tensor, never `x` itself.
        out = var.alias();
    }
    Ok((out, advanced > 0))
}

fn opt_index(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        Ok(None)
    } else {
        extract_int(obj).map(Some)
    }
}
