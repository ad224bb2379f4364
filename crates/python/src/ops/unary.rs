//! `Tensor` methods for unary elementwise ops (`exp`, `relu`, `clamp`, `-t`, `abs(t)`,
//! ...): the binding of `rustgrad::ops::unary`.

use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::tensor::opt_scalar;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::Variable;

#[pymethods]
impl PyTensor {
    fn __neg__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.neg().py()?)
    }

    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.abs().py()?)
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
}
