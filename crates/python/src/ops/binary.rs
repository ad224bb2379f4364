//! `Tensor` methods for binary elementwise ops and comparisons, as methods and operators
//! (`t + u`, `t.mul(u)`, `t == u`, ...): the binding of `rustgrad::ops::binary`.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::binary;
use crate::tensor::compare;
use crate::tensor::compare_method;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::operand_var;
use crate::tensor::reflected;
use crate::tensor::scaled_operand;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::tensor::CmpOp;

#[pymethods]
impl PyTensor {
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
}
