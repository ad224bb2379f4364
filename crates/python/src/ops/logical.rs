//! `Tensor` methods for the predicates and the logical / bitwise ops (`isnan`,
//! `logical_and`, `bitwise_or`, `t & u`, `~t`, `nan_to_num`, ...): the binding of
//! `rustgrad::ops::logical`.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::mark_python_site;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::operand_var;
use crate::tensor::written;
use crate::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad::kernels::logical::{FloatClass, LogicalOp};
use rustgrad::tensor::CmpOp;
use rustgrad::Variable;

/// The tensor `other` of a logical op (PyTorch binds them for tensors only).
fn logical_operand(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Variable> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().var.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{name}(): argument 'other' (position 1) must be Tensor, not {}",
            obj.get_type().name()?
        ))),
    }
}

fn logical_name(op: LogicalOp) -> &'static str {
    match op {
        LogicalOp::And => "logical_and",
        LogicalOp::Or => "logical_or",
        LogicalOp::Xor => "logical_xor",
    }
}

impl PyTensor {
    pub(super) fn class(&self, py: Python<'_>, class: FloatClass) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        new_tensor(py, maybe_detach(py, v.numel(), || v.is_class(class)).py()?)
    }

    pub(super) fn logical_op(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: LogicalOp,
    ) -> PyResult<Py<PyTensor>> {
        let (a, b) = (&self.var, logical_operand(other, logical_name(op))?);
        let out = maybe_detach(py, a.numel().max(b.numel()), || a.logical(&b, op));
        new_tensor(py, out.py()?)
    }

    pub(super) fn logical_op_in_place<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: LogicalOp,
    ) -> PyResult<Bound<'py, Self>> {
        let b = logical_operand(other, &format!("{}_", logical_name(op)))?;
        written(slf, |_, v| v.logical_(&b, op).py())
    }

    pub(super) fn bitwise_op(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: LogicalOp,
    ) -> PyResult<Py<PyTensor>> {
        let (a, b) = (&self.var, operand_var(other, &self.var)?);
        let out = maybe_detach(py, a.numel().max(b.numel()), || a.bitwise(&b, op));
        new_tensor(py, out.py()?)
    }

    pub(super) fn bitwise_op_in_place<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: LogicalOp,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let b = operand_var(other, v)?;
        v.bitwise_(&b, op).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }
}

#[pymethods]
impl PyTensor {
    /// True where the sign bit is set (negative numbers, -0.0).
    fn signbit(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        new_tensor(py, maybe_detach(py, v.numel(), || v.signbit()).py()?)
    }

    /// Replaces NaN, +inf and -inf (defaults: 0 and the dtype's extreme finite values).
    #[pyo3(signature = (nan = 0.0, posinf = None, neginf = None))]
    fn nan_to_num(
        &self,
        py: Python<'_>,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = maybe_detach(py, v.numel(), || v.nan_to_num(nan, posinf, neginf));
        new_tensor(py, out.py()?)
    }

    /// `nan_to_num` in place.
    #[pyo3(signature = (nan = 0.0, posinf = None, neginf = None))]
    fn nan_to_num_(
        slf: Bound<'_, Self>,
        nan: Option<f64>,
        posinf: Option<f64>,
        neginf: Option<f64>,
    ) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.nan_to_num_(nan, posinf, neginf).py())
    }

    /// Elementwise logical not (bool result).
    fn logical_not(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        new_tensor(py, maybe_detach(py, v.numel(), || v.logical_not()).py()?)
    }

    fn logical_not_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.logical_not_().py())
    }

    /// Elementwise bitwise not (`~`).
    fn bitwise_not(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        new_tensor(py, maybe_detach(py, v.numel(), || v.bitwise_not()).py()?)
    }

    fn bitwise_not_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.bitwise_not_().py())
    }

    /// `~self`: bitwise not of a bool or int64 tensor (PyTorch's TypeError otherwise).
    fn __invert__(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        if self.var.dtype().is_floating_point() {
            return Err(PyTypeError::new_err(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
            ));
        }
        self.bitwise_not(py)
    }
}

impl PyTensor {
    /// An in-place comparison (`eq_`, `lt_`, ...): `self` becomes 1 where it holds and 0
    /// elsewhere, in its own dtype; `other` is a number or a tensor that broadcasts.
    pub(super) fn compare_in_place<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: CmpOp,
        name: &str,
    ) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| {
            match extract_scalar(other)? {
            Some(s) => v.compare_scalar_(s, op).py(),
            None => match other.cast::<PyTensor>() {
                Ok(t) => v.compare_(&t.get().var, op).py(),
                Err(_) => Err(PyTypeError::new_err(format!(
                    "{name}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor other)\n * (Number other)",
                    other.get_type().name()?
                ))),
            },
        }
        })
    }
}
