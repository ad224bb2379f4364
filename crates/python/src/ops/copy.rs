//! `Tensor` methods for copies and dtype conversions (`clone`, `contiguous`, `float`,
//! `double`, `long`, `bool`): the binding of `rustgrad::ops::copy`.

use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::DType;

#[pymethods]
impl PyTensor {
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
}
