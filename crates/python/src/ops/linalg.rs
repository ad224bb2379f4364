//! `Tensor` methods for linear algebra (`t @ u`, `matmul`, `mm`): the binding of
//! `rustgrad::ops::linalg`.

use crate::errors::IntoPyResult;
use crate::tensor::binary;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::reflected;
use crate::PyTensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
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
}
