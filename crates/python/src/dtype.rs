//! The Python `dtype` objects (`rustgrad.float32`, ...).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use rustgrad::DType;

/// A tensor element type, `rustgrad.float32` etc. Its repr is PyTorch's (`torch.float32`),
/// matching what tensor reprs print.
///
/// There is one object per dtype, as in PyTorch (`x.dtype is torch.float32`): get it
/// with [`dtype_object`]; the private field keeps other modules from making more.
#[pyclass(name = "dtype", module = "rustgrad", frozen, eq, hash)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub inner: DType,
    _one_per_dtype: (),
}

static DTYPE_OBJECTS: PyOnceLock<Vec<Py<PyDType>>> = PyOnceLock::new();

/// The one Python object of `dtype` (`rustgrad.float32`, ...).
pub fn dtype_object(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyDType>> {
    let all = DTYPE_OBJECTS.get_or_try_init(py, || -> PyResult<Vec<Py<PyDType>>> {
        DType::ALL
            .iter()
            .map(|&inner| {
                Py::new(
                    py,
                    PyDType {
                        inner,
                        _one_per_dtype: (),
                    },
                )
            })
            .collect()
    })?;
    Ok(all[dtype.code() as usize].bind(py).clone())
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> &'static str {
        self.inner.torch_name()
    }

    /// Whether this dtype is a floating-point type.
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.inner.is_floating_point()
    }

    /// Size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.inner.size_in_bytes()
    }

    /// Whether values of this dtype can be negative.
    #[getter]
    fn is_signed(&self) -> bool {
        self.inner.is_signed()
    }

    fn __reduce__(&self) -> (&'static str,) {
        (self.inner.torch_name().trim_start_matches("torch."),)
    }
}

/// Reads a dtype argument: a `rustgrad.dtype`, or the Python types float/int/bool
/// (which PyTorch maps to float64/int64/bool).
pub fn extract_dtype(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.cast::<PyDType>() {
        return Ok(d.get().inner);
    }
    if let Ok(t) = obj.cast::<PyType>() {
        let name = t.name()?;
        match name.to_str()? {
            "float" => return Ok(DType::F64),
            "int" => return Ok(DType::I64),
            "bool" => return Ok(DType::Bool),
            _ => {}
        }
    }
    Err(PyTypeError::new_err(format!(
        "dtype must be a rustgrad.dtype (e.g. rustgrad.float32), got {}",
        obj.repr()?
    )))
}

/// Reads an optional dtype argument.
pub fn extract_opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => extract_dtype(o).map(Some),
    }
}
