//! `Tensor` methods for binary elementwise ops and comparisons, as methods and operators
//! (`t + u`, `t.mul(u)`, `t == u`, ...): the binding of `rustgrad::ops::binary`.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::binary;
use crate::tensor::compare;
use crate::tensor::mark_python_site;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::operand_var;
use crate::tensor::reflected;
use crate::tensor::written;
use crate::tensor::Operand;
use crate::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad::kernels::math::MathBinaryOp;
use rustgrad::tensor::CmpOp;
use rustgrad::Variable;

/// The tensor operand of an op that PyTorch binds for tensors only (`maximum`, `atan2`,
/// ...), with its TypeError for anything else.
fn tensor_operand(obj: &Bound<'_, PyAny>, op: MathBinaryOp) -> PyResult<Variable> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().var.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{}(): argument 'other' (position 1) must be Tensor, not {}",
            op_name(op),
            obj.get_type().name()?
        ))),
    }
}

/// PyTorch's Python name of `op`.
fn op_name(op: MathBinaryOp) -> &'static str {
    match op {
        MathBinaryOp::Atan2 => "atan2",
        MathBinaryOp::Maximum => "maximum",
        MathBinaryOp::Minimum => "minimum",
        MathBinaryOp::Fmax => "fmax",
        MathBinaryOp::Fmin => "fmin",
        MathBinaryOp::Fmod => "fmod",
        MathBinaryOp::Remainder => "remainder",
        MathBinaryOp::Copysign => "copysign",
        MathBinaryOp::Hypot => "hypot",
        MathBinaryOp::Logaddexp => "logaddexp",
        MathBinaryOp::Logaddexp2 => "logaddexp2",
        MathBinaryOp::DivTrunc | MathBinaryOp::DivFloor => "div",
        MathBinaryOp::Xlogy => "xlogy",
        MathBinaryOp::Xlog1py => "special_xlog1py",
    }
}

impl PyTensor {
    /// `op(self, other)` for a tensor `other`, or a number where PyTorch has the
    /// `.Scalar` overload (`fmod`, `remainder`, `copysign`).
    pub(super) fn math_binary(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: MathBinaryOp,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = match scalar_overload(other, op)? {
            Some(s) => maybe_detach(py, v.numel(), || v.math_binary_scalar(s, op)),
            None => {
                let b = tensor_operand(other, op)?;
                maybe_detach(py, v.numel().max(b.numel()), || v.math_binary(&b, op))
            }
        };
        new_tensor(py, out.py()?)
    }

    /// The in-place form of [`PyTensor::math_binary`]; returns `self`.
    pub(super) fn math_binary_in_place<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: MathBinaryOp,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        match scalar_overload(other, op)? {
            Some(s) => v.math_binary_scalar_(s, op).py()?,
            None => v.math_binary_(&tensor_operand(other, op)?, op).py()?,
        }
        mark_python_site(slf.py(), v);
        Ok(slf)
    }
}

/// How `add` / `sub` (and `add_` / `sub_`) scale their operand by `alpha`
/// (`scaled_operand`, `subtrahend`).
pub(super) type AlphaOperand =
    fn(&Variable, &Bound<'_, PyAny>, Option<&Bound<'_, PyAny>>) -> PyResult<Variable>;

impl PyTensor {
    /// `f(self, other)` for a tensor or number `other` (`mul`, `floor_divide`, ...).
    pub(super) fn with_operand(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let b = operand_var(other, v)?;
        new_tensor(py, maybe_detach(py, v.numel(), || f(v, &b)).py()?)
    }

    /// `f(self, alpha * other)` for `add` / `sub`, `operand` scaling `other` with
    /// PyTorch's checks of `alpha` (`scaled_operand` / `subtrahend`).
    pub(super) fn with_alpha(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        alpha: Option<&Bound<'_, PyAny>>,
        operand: AlphaOperand,
        f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let b = operand(v, other, alpha)?;
        new_tensor(py, maybe_detach(py, v.numel(), || f(v, &b)).py()?)
    }
}

/// The op of `div(..., rounding_mode=...)`: `None` for true division.
pub(crate) fn rounding_op(mode: Option<&str>) -> PyResult<Option<MathBinaryOp>> {
    match mode {
        None => Ok(None),
        Some("trunc") => Ok(Some(MathBinaryOp::DivTrunc)),
        Some("floor") => Ok(Some(MathBinaryOp::DivFloor)),
        Some(m) => Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '{m}'"
        ))),
    }
}

impl PyTensor {
    /// `div` / `divide` / `true_divide` with an optional rounding mode.
    pub(super) fn div_any(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        rounding_mode: Option<&str>,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let b = operand_var(other, v)?;
        let out = match rounding_op(rounding_mode)? {
            None => maybe_detach(py, v.numel(), || v.div(&b)),
            Some(op) => maybe_detach(py, v.numel(), || v.math_binary(&b, op)),
        };
        new_tensor(py, out.py()?)
    }
}

/// A number operand of an op that has PyTorch's `.Scalar` overload.
fn scalar_overload(
    other: &Bound<'_, PyAny>,
    op: MathBinaryOp,
) -> PyResult<Option<rustgrad::Scalar>> {
    match op {
        MathBinaryOp::Fmod
        | MathBinaryOp::Remainder
        | MathBinaryOp::Copysign
        | MathBinaryOp::Xlogy
        | MathBinaryOp::Xlog1py => extract_scalar(other),
        _ => Ok(None),
    }
}

/// The exponent of `float_power`: a number or a tensor, with PyTorch's TypeError for
/// anything else.
fn float_power_exponent(obj: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Operand::Tensor(t.get().var.clone()));
    }
    extract_scalar(obj)?.map(Operand::Scalar).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "float_power() received an invalid combination of arguments - got ({}), but expected (Tensor exponent) or (Number exponent)",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// The rich comparisons: PyO3 builds one `__richcmp__` slot from them, so they stay in
/// one `#[pymethods]` block (Note [Op registry]).
#[pymethods]
impl PyTensor {
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

    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let _ = modulo;
        match extract_scalar(other)? {
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
        if let Some(base) = extract_scalar(other)? {
            let v = &self.var;
            let out = maybe_detach(py, v.numel(), || v.pow_scalar_base(base)).py()?;
            return Ok(new_tensor(py, out)?.into_any());
        }
        reflected(py, &self.var, other, |a, b| a.pow(b))
    }

    /// `floor_divide` in place.
    fn floor_divide_<'py>(
        slf: Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| v.floor_divide_(&operand_var(other, v)?).py())
    }

    fn __ifloordiv__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::floor_divide_(slf, other).map(|_| ())
    }

    /// `self ** exponent` (scalar or tensor exponent).
    fn pow(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let out = match extract_scalar(exponent)? {
            Some(s) => self.var.pow_scalar_value(s),
            None => self.var.pow(&operand_var(exponent, &self.var)?),
        };
        new_tensor(py, out.py()?)
    }

    /// `xlogy(value, self)` / `xlog1py(value, self)` for a number `value` (the function
    /// forms' `Scalar self` overloads).
    fn _xlogy_scalar_self(
        &self,
        py: Python<'_>,
        value: &Bound<'_, PyAny>,
        log1p: bool,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let name = if log1p { "special_xlog1py" } else { "xlogy" };
        let value = extract_scalar(value)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name}() received an invalid combination of arguments - argument 'self' must be Number or Tensor"
            ))
        })?;
        let out = maybe_detach(py, v.numel(), || v.xlogy_scalar_self(value, log1p));
        new_tensor(py, out.py()?)
    }

    fn float_power(&self, py: Python<'_>, exponent: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = match float_power_exponent(exponent)? {
            Operand::Scalar(s) => maybe_detach(py, v.numel(), || v.float_power_scalar(s)),
            Operand::Tensor(e) => maybe_detach(py, v.numel().max(e.numel()), || v.float_power(&e)),
        };
        new_tensor(py, out.py()?)
    }

    fn float_power_<'py>(
        slf: Bound<'py, Self>,
        exponent: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let exponent = float_power_exponent(exponent)?;
        written(slf, |_, v| match exponent {
            Operand::Scalar(s) => v.float_power_scalar_(s).py(),
            Operand::Tensor(e) => v.float_power_(&e).py(),
        })
    }

    /// `float_power(base, self)` for a number `base`.
    fn _float_power_scalar_base(
        &self,
        py: Python<'_>,
        base: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let base = extract_scalar(base)?.ok_or_else(|| {
            PyTypeError::new_err(
                "float_power() received an invalid combination of arguments - argument 'self' must be Number or Tensor",
            )
        })?;
        let out = maybe_detach(py, v.numel(), || v.float_power_scalar_base(base));
        new_tensor(py, out.py()?)
    }

    /// `self % other` (Python's remainder: the divisor's sign).
    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        if Operand::extract(other)?.is_none() {
            return Ok(py.NotImplemented());
        }
        Ok(self
            .math_binary(py, other, MathBinaryOp::Remainder)?
            .into_any())
    }

    fn __imod__<'py>(slf: Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<()> {
        Self::math_binary_in_place(slf, other, MathBinaryOp::Remainder).map(|_| ())
    }
}
