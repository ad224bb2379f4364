//! The Python `dtype` objects (`rustgrad.float32`, ...).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use rustgrad::dtype::Tier;
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

/// A dtype argument of `promote_types` / `can_cast`, with PyTorch's TypeError.
fn dtype_arg(obj: &Bound<'_, PyAny>, op: &str, name: &str, pos: usize) -> PyResult<DType> {
    extract_dtype(obj).map_err(|_| {
        let got = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default();
        PyTypeError::new_err(format!(
            "{op}(): argument '{name}' (position {pos}) must be torch.dtype, not {got}"
        ))
    })
}

/// `torch.promote_types(type1, type2)`: the dtype two tensors with dims promote to
/// (`DType::promote`, PyTorch's table).
#[pyfunction]
pub fn promote_types<'py>(
    py: Python<'py>,
    type1: &Bound<'py, PyAny>,
    type2: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDType>> {
    let a = dtype_arg(type1, "promote_types", "type1", 1)?;
    let b = dtype_arg(type2, "promote_types", "type2", 2)?;
    dtype_object(py, DType::promote(a, b))
}

/// `torch.can_cast(from_, to)`: whether an in-place op may write a `from_` result into
/// a `to` tensor (no float into an integer, nothing but bool into bool).
#[pyfunction]
pub fn can_cast(from_: &Bound<'_, PyAny>, to: &Bound<'_, PyAny>) -> PyResult<bool> {
    let from = dtype_arg(from_, "can_cast", "from_", 1)?;
    let to = dtype_arg(to, "can_cast", "to", 2)?;
    Ok(to.can_cast_from(from))
}

/// `torch.result_type(tensor, other)`: the dtype an arithmetic op of the two operands
/// (tensors or Python numbers) gives, by the wrapped-number promotion of Note [Wrapped
/// scalars] (`DType::result_type_of`): `result_type(uint8_tensor, 300)` is uint8.
#[pyfunction]
pub fn result_type<'py>(
    py: Python<'py>,
    tensor: &Bound<'py, PyAny>,
    other: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDType>> {
    let operand = |o: &Bound<'py, PyAny>| -> PyResult<Option<(DType, Tier)>> {
        if let Ok(t) = o.cast::<crate::PyTensor>() {
            let t = t.get().var.tensor();
            return Ok(Some((t.dtype(), t.tier())));
        }
        Ok(crate::convert::extract_scalar(o)?.map(|s| (s.natural_dtype(), Tier::Wrapped)))
    };
    match (operand(tensor)?, operand(other)?) {
        (Some(a), Some(b)) => dtype_object(py, DType::result_type_of(&[a, b])),
        _ => {
            let name = |o: &Bound<'py, PyAny>| -> String {
                match o.cast::<crate::PyTensor>() {
                    Ok(_) => "Tensor".into(),
                    Err(_) => o
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default(),
                }
            };
            Err(PyTypeError::new_err(format!(
                "result_type() received an invalid combination of arguments - got ({}, {}), but expected one of:\n * (Tensor tensor, Tensor other)\n * (Number scalar, Tensor tensor)\n * (Tensor tensor, Number other)\n * (Number scalar1, Number scalar2)\n",
                name(tensor),
                name(other)
            )))
        }
    }
}
