//! `Tensor` methods for in-place ops (`add_`, `fill_`, `copy_`, `t += u`, ...): the
//! binding of `rustgrad::ops::inplace`.

use super::binary::AlphaOperand;
use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::mark_python_site;
use crate::tensor::operand_var;
use crate::tensor::written;
use crate::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad::Variable;

impl PyTensor {
    /// `f(self, alpha * other)` in place (`add_`, `sub_`); returns `self`.
    pub(super) fn with_alpha_in_place<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        alpha: Option<&Bound<'py, PyAny>>,
        operand: AlphaOperand,
        f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<()>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let b = operand(v, other, alpha)?;
        f(v, &b).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }
}

#[pymethods]
impl PyTensor {
    /// In-place `self *= other`.
    fn mul_<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| v.mul_(&operand_var(other, v)?).py())
    }

    /// In-place `self /= other`.
    #[pyo3(signature = (other, *, rounding_mode = None))]
    fn div_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let b = operand_var(other, v)?;
        match crate::ops::binary::rounding_op(rounding_mode)? {
            None => v.div_(&b).py()?,
            Some(op) => v.math_binary_(&b, op).py()?,
        }
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Alias of `div_`.
    #[pyo3(signature = (other, *, rounding_mode = None))]
    fn divide_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::div_(slf, other, rounding_mode)
    }

    /// `div_` without rounding.
    fn true_divide_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::div_(slf, other, None)
    }

    /// Fills with zeros.
    fn zero_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.zero_().py())
    }

    /// Fills with `value`.
    fn fill_<'py>(slf: Bound<'py, Self>, value: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let value = match extract_scalar(value)? {
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
        value.check_fits(v.dtype()).py()?;
        v.fill_scalar_(value).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// Copies `src` (broadcast and converted) into this tensor.
    fn copy_<'py>(slf: Bound<'py, Self>, src: &Bound<'py, PyTensor>) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| v.copy_(&src.get().var).py())
    }

    /// relu in place.
    fn relu_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.relu_().py())
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
        Self::div_(slf, other, None).map(|_| ())
    }
}
