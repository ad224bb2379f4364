//! The Python tensor class (`rustgrad.Tensor`), a frozen handle on an engine `Variable`.

use crate::convert::{self, extract_int, extract_scalar, extract_sizes};
use crate::dtype::{extract_dtype, extract_opt_dtype, PyDType};
use crate::errors::IntoPyResult;
use crate::identity::ObjectTable;
use crate::node::PyNode;
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};
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
    /// Whether `viewed` has run: views made of this object find it as their `_base`.
    viewed: AtomicBool,
}

impl PyTensor {
    pub fn wrap(var: Variable) -> PyTensor {
        PyTensor {
            var,
            registered: AtomicBool::new(false),
            viewed: AtomicBool::new(false),
        }
    }
}

/// PyTorch's warning when `.grad` of a non-leaf that does not retain it is read.
const NON_LEAF_GRAD: &std::ffi::CStr = c"The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute won't be populated during autograd.backward(). If you indeed want the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 for more information.";

/// The Python objects of leaves that require grad, so that `AccumulateGrad.variable` is
/// the user's tensor. Only such leaves are registered (when they are made or set to
/// require grad), not every op output: registering costs a weak reference. See
/// Note [Python object identity].
static TENSOR_OBJECTS: ObjectTable<usize> = ObjectTable::new();

impl Drop for PyTensor {
    fn drop(&mut self) {
        if self.registered.load(Ordering::Relaxed) {
            Python::attach(|py| TENSOR_OBJECTS.remove_if_dead(py, self.var.identity()));
        }
    }
}

/// Makes `obj` the Python object `object_of` returns for its variable.
pub(crate) fn register(obj: &Bound<'_, PyTensor>) -> PyResult<()> {
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

/// `slf`, made findable as the `_base` of the views about to be made of it (`x[1:]._base
/// is x`): a non-view is registered the first time a view of it is made. A view needs
/// nothing: its views' base is its own base, registered when it was made (a view stays
/// a view). After the first call, costs one atomic load. See Note [Python object
/// identity].
pub(crate) fn viewed<'a>(slf: &'a Bound<'_, PyTensor>) -> PyResult<&'a PyTensor> {
    let t = slf.get();
    if !t.viewed.load(Ordering::Relaxed) {
        if !t.registered.load(Ordering::Relaxed) && !t.var.is_view() {
            register(slf)?;
        }
        t.viewed.store(true, Ordering::Relaxed);
    }
    Ok(t)
}

/// `force` of `numpy()`: only a Python bool, as PyTorch's parser takes it (an explicit
/// `None` included).
fn numpy_force(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    match obj.cast_exact::<pyo3::types::PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "numpy(): argument 'force' must be bool, not {}",
            crate::device::type_name(obj)
        ))),
    }
}

/// An operand of a binary op: another tensor or a Python number.
pub enum Operand {
    Tensor(Variable),
    Scalar(Scalar),
}

impl Operand {
    /// Reads an operand; `None` when the type is not supported (→ NotImplemented).
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<Option<Operand>> {
        if let Ok(t) = obj.cast::<PyTensor>() {
            return Ok(Some(Operand::Tensor(t.get().var.clone())));
        }
        Ok(extract_scalar(obj)?.map(Operand::Scalar))
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
pub(crate) fn maybe_detach<T: Send>(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> T + Send,
) -> T {
    if work >= RELEASE_GIL_ELEMENTS {
        py.detach(f)
    } else {
        f()
    }
}

/// The Python object of an op's new result (raising the op's deferred error, if any:
/// Note [Inference mode]).
pub(crate) fn new_tensor(py: Python<'_>, var: Variable) -> PyResult<Py<PyTensor>> {
    if let Some(e) = rustgrad::variable::take_deferred_error() {
        return Err(crate::errors::to_py(e));
    }
    Py::new(py, PyTensor::wrap(var))
}

/// The Python `file:line` of the innermost Python frame, for in-place write sites.
pub(crate) fn python_site(py: Python<'_>) -> Option<WriteSite> {
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
pub(crate) fn mark_python_site(py: Python<'_>, var: &Variable) {
    if let Some(site) = python_site(py) {
        var.tensor().version_counter().set_last_write_site(site);
    }
}

/// Runs an in-place op `f` on `slf`'s variable, records the Python line as the site of
/// the write (Note [Version counters]) and returns `slf`, as every `x.op_()` does.
pub(crate) fn written<'py>(
    slf: Bound<'py, PyTensor>,
    f: impl FnOnce(Python<'py>, &Variable) -> PyResult<()>,
) -> PyResult<Bound<'py, PyTensor>> {
    let py = slf.py();
    let v = &slf.get().var;
    f(py, v)?;
    mark_python_site(py, v);
    Ok(slf)
}

/// The `torch.Size` class, defined in Python.
pub(crate) fn size_class(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
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
    match t.dtype().category() {
        2 => build(py, t.shape(), &t.try_to_vec::<f64>().py()?),
        1 => build(py, t.shape(), &t.try_to_vec::<i64>().py()?),
        _ => build(py, t.shape(), &t.try_to_vec::<bool>().py()?),
    }
}

pub(crate) fn binary(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyAny>> {
    let Some(op) = Operand::extract(other)? else {
        return Ok(py.NotImplemented());
    };
    let b = op.to_var(a);
    let work = a.numel().max(b.numel());
    let out = maybe_detach(py, work, || f(a, &b)).py()?;
    Ok(new_tensor(py, out)?.into_any())
}

pub(crate) fn reflected(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyAny>> {
    let Some(op) = Operand::extract(other)? else {
        return Ok(py.NotImplemented());
    };
    let b = op.to_var(a);
    let out = maybe_detach(py, a.numel(), || f(&b, a)).py()?;
    Ok(new_tensor(py, out)?.into_any())
}

pub(crate) fn operand_var(obj: &Bound<'_, PyAny>, like: &Variable) -> PyResult<Variable> {
    Operand::extract(obj)?
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

pub(crate) fn compare(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    op: CmpOp,
) -> PyResult<Py<PyAny>> {
    binary(py, a, other, move |x, y| x.compare(y, op))
}

/// The dtype of a legacy type name (`'torch.FloatTensor'`); a CUDA type name raises as
/// a CPU-only PyTorch build does.
pub(crate) fn legacy_type_from_name(name: &str) -> PyResult<DType> {
    let all = DType::ALL;
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
pub(crate) struct ToArgs<'py> {
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
pub(crate) fn opt_scalar(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Scalar>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => match extract_scalar(o)? {
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
pub(crate) fn scaled_operand(
    this: &Variable,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Variable> {
    let b = operand_var(other, this)?;
    let Some(alpha) = alpha.filter(|a| !a.is_none()) else {
        return Ok(b);
    };
    let a = extract_scalar(alpha)?.ok_or_else(|| {
        PyTypeError::new_err(format!(
            "alpha must be a number, not {}",
            alpha
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let result = rustgrad::Tensor::result_type(&this.tensor(), &b.tensor());
    // PyTorch's add kernel takes alpha in the result dtype and computes in it: on float16
    // / bfloat16 `alpha * other` is rounded before the sum (`alpha=5.2922` scales by
    // 5.28125 in bfloat16), unlike the op-math fused ops (lerp, addcmul).
    let a = match a {
        Scalar::Float(_) | Scalar::Int(_) if result.is_half() => {
            rustgrad::Tensor::from_scalar(a, result).item().py()?
        }
        _ => a,
    };
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
        // `other` joins in the result dtype before it is scaled, as in PyTorch's kernel
        // (`bfloat16.add(257, alpha=3)` adds 3 * 256; Note [Wrapped scalars]).
        _ if b.dtype() != result && b.dtype() != DType::Bool => {
            let b = b.to_dtype(result).py()?;
            b.mul(&b.wrap_scalar(a)).py()
        }
        _ => b.mul(&b.wrap_scalar(a)).py(),
    }
}

/// `alpha * other` for `sub` / `sub_`: a bool `other` is passed on unscaled, so that the
/// subtraction refuses it with PyTorch's error before `alpha` could make it an integer
/// (`uint8.sub(True, alpha=2)`).
pub(crate) fn subtrahend(
    this: &Variable,
    other: &Bound<'_, PyAny>,
    alpha: Option<&Bound<'_, PyAny>>,
) -> PyResult<Variable> {
    let raw = operand_var(other, this)?;
    if raw.dtype() == DType::Bool {
        return Ok(raw);
    }
    scaled_operand(this, other, alpha)
}

/// A comparison method (`eq`, `lt`, ...): unlike the operators, which return
/// NotImplemented so Python can try the other operand, the methods raise TypeError.
pub(crate) fn compare_method(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyAny>,
    op: CmpOp,
) -> PyResult<Py<PyAny>> {
    let Some(b) = Operand::extract(other)?.map(|o| o.to_var(a)) else {
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
    pub(crate) fn elementwise(
        &self,
        py: Python<'_>,
        op: fn(&Variable) -> rustgrad::Result<Variable>,
    ) -> PyResult<Py<PyTensor>> {
        let out = maybe_detach(py, self.var.numel(), || op(&self.var)).py()?;
        new_tensor(py, out)
    }

    /// PyTorch's refusal to hand the memory of a tensor that requires grad to numpy
    /// while grad mode is on.
    fn check_numpy_allowed(&self) -> PyResult<()> {
        if self.var.requires_grad() && rustgrad::autograd::grad_mode::is_grad_enabled() {
            return Err(PyRuntimeError::new_err(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            ));
        }
        Ok(())
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
        #[pyo3(from_py_with = crate::flag::py_new_requires_grad)] requires_grad: bool,
        _share: Option<&Bound<'_, PyTensor>>,
        volatile: bool,
    ) -> PyResult<Self> {
        // The legacy constructor makes tensors of the default float dtype.
        let dtype = DType::default_float();
        let tensor = if let Some(src) = _share {
            src.get().var.tensor().clone()
        } else if args.is_empty() {
            Tensor::zeros(&[0], dtype).py()?
        } else if args.len() == 1 && !args.get_item(0)?.is_instance_of::<pyo3::types::PyInt>() {
            convert::tensor_from_data(&args.get_item(0)?, Some(dtype))?
        } else {
            let sizes = rustgrad::shape::checked_shape(&extract_sizes(args)?).py()?;
            rustgrad::shape::checked_storage_bytes(&sizes, dtype.size_in_bytes()).py()?;
            Tensor::zeros(&sizes, dtype).py()?
        };
        let var = if volatile {
            Variable::new_volatile(tensor)
        } else {
            Variable::new(tensor, requires_grad).py()?
        };
        Ok(PyTensor::wrap(var))
    }

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
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDType>> {
        crate::dtype::dtype_object(py, self.var.dtype())
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

    /// Whether gradients are computed for this tensor.
    #[getter]
    fn get_requires_grad(&self) -> bool {
        self.var.requires_grad()
    }

    #[setter(requires_grad)]
    fn set_requires_grad_attr(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        // PyTorch's setter refuses a non-bool with a RuntimeError, not the parser's TypeError.
        let value = value
            .cast_exact::<pyo3::types::PyBool>()
            .map_err(|_| PyRuntimeError::new_err("requires_grad must be a bool"))?
            .is_true();
        Self::set_requires_grad(slf, value)
    }

    /// `del t.requires_grad` raises PyTorch's RuntimeError (its setter sees no bool).
    #[deleter(requires_grad)]
    fn delete_requires_grad(&self) -> PyResult<()> {
        Err(PyRuntimeError::new_err("requires_grad must be a bool"))
    }

    /// Sets requires_grad in place and returns self.
    #[pyo3(signature = (requires_grad = true))]
    fn requires_grad_(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::requires_grad_inplace_requires_grad)]
        requires_grad: bool,
    ) -> PyResult<Bound<'_, Self>> {
        Self::set_requires_grad(&slf, requires_grad)?;
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

    /// Which output of its `grad_fn` this tensor is (0 for leaves and single-output
    /// ops; `i` for piece `i` of a split, Note [Multi-output nodes]).
    #[getter]
    fn output_nr(&self) -> u32 {
        self.var.output_nr()
    }

    /// The accumulated gradient, or None. Reading it on a non-leaf that does not retain
    /// its gradient gives PyTorch's UserWarning (backward will never fill it).
    #[getter(grad)]
    fn get_grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyTensor>>> {
        let grad = self.var.grad();
        if grad.is_none() && !self.var.is_leaf() && !self.var.retains_grad() {
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            PyErr::warn(py, &category, NON_LEAF_GRAD, 1)?;
        }
        grad.map(|g| object_of(py, g)).transpose()
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

    /// The version counter: in-place writes to this tensor's storage so far (inference
    /// tensors have none: RuntimeError).
    #[getter]
    fn _version(&self) -> PyResult<u64> {
        self.var.version().py()
    }

    /// Whether this is an inference tensor (made under `inference_mode`).
    fn is_inference(&self) -> bool {
        self.var.is_inference()
    }

    /// A tensor sharing this one's data, outside the graph, with its own version
    /// counter (`x.data`).
    #[getter]
    fn data(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.data())
    }

    /// `x.data = t`: `x` now has `t`'s data (shared, any shape and dtype), keeping its
    /// autograd identity and version counter.
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

    /// `del x.data` raises, as in PyTorch.
    #[deleter(data)]
    fn delete_data(&self) -> PyResult<()> {
        Err(PyRuntimeError::new_err(
            "Deleting tensor data is not allowed. Delete tensor instead!",
        ))
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

    /// Turns this tensor into a leaf that does not require grad (a view refuses, as in
    /// PyTorch).
    fn detach_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().var.detach_().py()?;
        Ok(slf)
    }

    /// The address of the first element: the storage's address plus the offset in
    /// bytes, 0 for a tensor without elements (PyTorch's `data_ptr()`). Views of one
    /// storage differ by their offsets, and a shared numpy array (`numpy()`) starts at
    /// the same address.
    fn data_ptr(&self) -> usize {
        let tensor = self.var.tensor();
        if tensor.numel() == 0 {
            return 0;
        }
        let buffer = tensor.storage().read();
        let offset = tensor.layout().offset() * tensor.dtype().size_in_bytes();
        (buffer.as_ptr() as usize).wrapping_add(offset)
    }

    /// Computes the gradient of this tensor w.r.t. graph leaves (only `inputs`' `.grad`
    /// when `inputs` is given).
    #[pyo3(signature = (gradient = None, retain_graph = None, create_graph = false, inputs = None))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::truthy_or_none)] retain_graph: Option<bool>,
        #[pyo3(from_py_with = crate::flag::truthy)] create_graph: bool,
        inputs: Option<&Bound<'_, PyAny>>,
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
        let inputs: Option<Vec<Variable>> = match inputs {
            None => None,
            Some(i) if i.is_none() => None,
            Some(i) => Some(match i.cast::<PyTensor>() {
                Ok(t) => vec![t.get().var.clone()],
                Err(_) => i
                    .try_iter()?
                    .map(|t| Ok(t?.cast::<PyTensor>()?.get().var.clone()))
                    .collect::<PyResult<_>>()?,
            }),
        };
        let var = self.var.clone();
        let retain = retain_graph.unwrap_or(create_graph);
        let _pass = crate::PassGuard::new(inputs.is_some());
        py.detach(move || match inputs {
            None => var.backward_with(grad.as_ref(), retain, create_graph),
            Some(inputs) => {
                Variable::backward_inputs(&[var], &[grad], &inputs, retain, create_graph)
            }
        })
        .py()
    }

    /// The value of a one-element tensor as a Python number.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::jit::warn_conversion(py, "number")?;
        convert::scalar_to_py(py, self.var.item().py()?)
    }

    /// The values as (nested) Python lists.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        crate::jit::warn_conversion(py, "list")?;
        to_list(py, &self.var.tensor())
    }

    /// A numpy array sharing the tensor's memory, as PyTorch's.
    /// A tensor that requires grad refuses in grad mode and is shared under `no_grad`,
    /// as in PyTorch; `force=True` shares it in any mode (PyTorch detaches it).
    #[pyo3(signature = (*, force = false))]
    fn numpy<'py>(
        &self,
        py: Python<'py>,
        #[pyo3(from_py_with = numpy_force)] force: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        if !force {
            self.check_numpy_allowed()?;
        }
        convert::share_to_numpy(py, &self.var.tensor())
    }

    /// numpy's conversion hook (numpy 2 passes `dtype` and `copy`): `np.asarray(t)`
    /// shares the tensor's memory as `t.numpy()` does; `copy=True` or another dtype
    /// copies (Note [Shared memory]).
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.check_numpy_allowed()?;
        let arr = if copy == Some(true) {
            convert::to_numpy(py, &self.var.tensor())?
        } else {
            convert::share_to_numpy(py, &self.var.tensor())?
        };
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
        let var = &slf.get().var;
        let py = slf.py();
        if crate::device::to_is_meta(target.device.as_ref())? {
            // Note [Meta device]: a meta tensor of the same shape (meta tensors
            // themselves override `to` in Python).
            let dtype = target.dtype.unwrap_or(var.dtype());
            let meta = crate::device::meta_tensor(py, &var.shape(), dtype, var.requires_grad())?;
            return Ok(meta.into_bound(py).into_any());
        }
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
        #[pyo3(from_py_with = crate::flag::cuda_non_blocking)] non_blocking: bool,
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
        #[pyo3(from_py_with = crate::flag::type_non_blocking)] non_blocking: bool,
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

    fn __repr__(&self) -> String {
        self.var.repr()
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.var.shape().first() {
            Some(&n) => Ok(n),
            None => Err(PyTypeError::new_err("len() of a 0-d tensor")),
        }
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        crate::jit::warn_conversion(py, "boolean")?;
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
}

impl PyTensor {
    /// `requires_grad = value` once `value` is known to be a bool.
    fn set_requires_grad(slf: &Bound<'_, Self>, value: bool) -> PyResult<()> {
        slf.get().var.set_requires_grad(value).py()?;
        if value && slf.get().var.is_leaf() {
            register(slf)?;
        }
        Ok(())
    }
}
