//! `linspace`, `logspace` and `eye` (the binding of `rustgrad::factory`).

use crate::convert::extract_scalar;
use crate::dtype::extract_opt_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use rustgrad::{DType, Scalar, Tensor};

/// A bound of `linspace`/`logspace`: a number, or a 0-d tensor (PyTorch's message for
/// one with dims).
fn bound(name: &str, obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let var = &t.get().var;
        if var.dim() != 0 {
            return Err(PyRuntimeError::new_err(format!(
                "linspace only supports 0-dimensional start and end tensors, but got {name} with {} dimension(s).",
                var.dim()
            )));
        }
        return var.item().py();
    }
    extract_scalar(obj)?.ok_or_else(|| {
        PyTypeError::new_err(format!(
            "linspace(): argument '{name}' must be Number, not {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// `linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False)`:
/// PyTorch's values bit for bit (the default float dtype unless `dtype` is given).
#[pyfunction]
#[pyo3(signature = (start, end, steps, *, dtype = None, device = None, requires_grad = false))]
pub fn linspace(
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: i64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::linspace_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = crate::device::factory_is_meta(device)?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or_else(DType::default_float);
    let t = Tensor::linspace(bound("start", start)?, bound("end", end)?, steps, dtype).py()?;
    crate::device::factory_leaf(meta, t, requires_grad)
}

/// `logspace(start, end, steps, base=10.0, *, dtype=None, device=None,
/// requires_grad=False)`: `base ** linspace(start, end, steps)` as PyTorch computes it.
#[pyfunction]
#[pyo3(signature = (start, end, steps, base = 10.0, *, dtype = None, device = None, requires_grad = false))]
#[allow(clippy::too_many_arguments)]
pub fn logspace(
    start: &Bound<'_, PyAny>,
    end: &Bound<'_, PyAny>,
    steps: i64,
    base: f64,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::logspace_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = crate::device::factory_is_meta(device)?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or_else(DType::default_float);
    let (s, e) = (bound("start", start)?, bound("end", end)?);
    crate::device::factory_leaf(
        meta,
        Tensor::logspace(s, e, steps, base, dtype).py()?,
        requires_grad,
    )
}

/// `eye(n, m=None, *, dtype=None, device=None, requires_grad=False)`: ones on the
/// diagonal of an `n`×`m` matrix.
#[pyfunction]
#[pyo3(signature = (n, m = None, *, dtype = None, device = None, requires_grad = false))]
pub fn eye(
    n: i64,
    m: Option<i64>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::eye_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = crate::device::factory_is_meta(device)?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or_else(DType::default_float);
    crate::device::factory_leaf(meta, Tensor::eye(n, m, dtype).py()?, requires_grad)
}
