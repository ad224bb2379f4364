//! `Tensor` methods for unary elementwise ops (`exp`, `relu`, `clamp`, `-t`, `abs(t)`,
//! `sin`, `floor`, `sin_`, ...): the binding of `rustgrad::ops::unary`.
//!
//! The activations that PyTorch has only in `torch.nn.functional` (gelu, elu, ...) are
//! private methods here (`_gelu`, ...), called by `python/rustgrad/_elementwise.py`,
//! so that `Tensor` shows no method PyTorch's lacks.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::operand_var;
use crate::tensor::written;
use crate::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use rustgrad::kernels::math::MathOp;
use rustgrad::Variable;

impl PyTensor {
    /// `op` out of place, without the GIL when the tensor is large.
    pub(super) fn math(&self, py: Python<'_>, op: MathOp) -> PyResult<Py<PyTensor>> {
        let out = maybe_detach(py, self.var.numel(), || self.var.math(op)).py()?;
        new_tensor(py, out)
    }

    /// `op` in place; returns `self`.
    pub(super) fn math_in_place(slf: Bound<'_, Self>, op: MathOp) -> PyResult<Bound<'_, Self>> {
        written(slf, |py, v| {
            maybe_detach(py, v.numel(), || v.math_(op)).py()
        })
    }

    /// A one-tensor op in place (`exp_`, `abs_`, ...); returns `self`.
    pub(super) fn unary_in_place(
        slf: Bound<'_, Self>,
        op: fn(&Variable) -> rustgrad::Result<Variable>,
    ) -> PyResult<Bound<'_, Self>> {
        written(slf, |py, v| {
            maybe_detach(py, v.numel(), || v.unary_(op)).py()
        })
    }

    /// An activation with PyTorch's `inplace=` flag: `self` written in place and
    /// returned, or a new tensor.
    fn activation(slf: Bound<'_, Self>, op: MathOp, inplace: bool) -> PyResult<Py<PyAny>> {
        if inplace {
            return Ok(Self::math_in_place(slf, op)?.into_any().unbind());
        }
        let py = slf.py();
        Ok(slf.get().math(py, op)?.into_any())
    }
}

/// The tensor bound of `clamp_min` / `clamp_max` (a number is handled before).
fn clamp_tensor_bound(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Variable> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().var.clone()),
        Err(_) => {
            let arg = if name.starts_with("clamp_min") {
                "min"
            } else {
                "max"
            };
            Err(PyTypeError::new_err(format!(
                "{name}() received an invalid combination of arguments - got ({}), but expected one of:\n * (Tensor {arg})\n * (Number {arg})",
                obj.get_type().name()?
            )))
        }
    }
}

/// `approximate=` of gelu.
fn gelu_tanh(approximate: &str) -> PyResult<bool> {
    match approximate {
        "none" => Ok(false),
        "tanh" => Ok(true),
        _ => Err(PyRuntimeError::new_err(
            "approximate argument must be either none or tanh.",
        )),
    }
}

#[pymethods]
impl PyTensor {
    fn __pos__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// `sgn` in place.
    fn sgn_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.sgn_().py())
    }

    /// Rounds half to even, to `decimals` decimal places.
    #[pyo3(signature = (*, decimals = 0))]
    fn round(&self, py: Python<'_>, decimals: i64) -> PyResult<Py<PyTensor>> {
        self.math(py, MathOp::Round { decimals })
    }

    /// `self ** exponent` in place (a number or a tensor that broadcasts to `self`).
    fn pow_<'py>(
        slf: Bound<'py, Self>,
        exponent: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| match extract_scalar(exponent)? {
            Some(e) => v.pow_scalar_(e).py(),
            None => v.pow_(&operand_var(exponent, v)?).py(),
        })
    }

    /// `max(self, min)`: a number (ClampMinBackward0) or a tensor bound.
    fn clamp_min(&self, py: Python<'_>, min: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = match extract_scalar(min)? {
            Some(m) => maybe_detach(py, v.numel(), || v.clamp_min(m)),
            None => v.clamp_tensor(Some(&clamp_tensor_bound(min, "clamp_min")?), None),
        };
        new_tensor(py, out.py()?)
    }

    /// `min(self, max)`: a number (ClampMaxBackward0) or a tensor bound.
    fn clamp_max(&self, py: Python<'_>, max: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = match extract_scalar(max)? {
            Some(m) => maybe_detach(py, v.numel(), || v.clamp_max(m)),
            None => v.clamp_tensor(None, Some(&clamp_tensor_bound(max, "clamp_max")?)),
        };
        new_tensor(py, out.py()?)
    }

    /// `clamp_min` in place.
    fn clamp_min_<'py>(
        slf: Bound<'py, Self>,
        min: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| match extract_scalar(min)? {
            Some(m) => v.clamp_min_(m).py(),
            None => v
                .clamp_tensor_(Some(&clamp_tensor_bound(min, "clamp_min_")?), None)
                .py(),
        })
    }

    /// `clamp_max` in place.
    fn clamp_max_<'py>(
        slf: Bound<'py, Self>,
        max: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        written(slf, |_, v| match extract_scalar(max)? {
            Some(m) => v.clamp_max_(m).py(),
            None => v
                .clamp_tensor_(None, Some(&clamp_tensor_bound(max, "clamp_max_")?))
                .py(),
        })
    }

    fn square_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.square_().py())
    }

    /// Rounds in place.
    #[pyo3(signature = (*, decimals = 0))]
    fn round_(slf: Bound<'_, Self>, decimals: i64) -> PyResult<Bound<'_, Self>> {
        Self::math_in_place(slf, MathOp::Round { decimals })
    }

    // Activations that PyTorch's Tensor has as methods.

    #[pyo3(signature = (inplace = false))]
    fn _selu(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        Self::activation(slf, selu_op(), inplace)
    }

    #[pyo3(signature = (alpha = None, inplace = false))]
    fn _celu(
        slf: Bound<'_, Self>,
        alpha: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        let alpha = crate::convert::opt_scalar_f64(alpha, 1.0)?;
        if alpha == 0.0 {
            return Err(PyRuntimeError::new_err(
                "ZeroDivisionError: alpha cannot be 0 for CELU",
            ));
        }
        let op = MathOp::Elu {
            alpha,
            kind: rustgrad::kernels::math::EluKind::Celu,
        };
        Self::activation(slf, op, inplace)
    }

    #[pyo3(signature = (alpha = None, inplace = false))]
    fn _elu(
        slf: Bound<'_, Self>,
        alpha: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        let alpha = crate::convert::opt_scalar_f64(alpha, 1.0)?;
        let op = MathOp::Elu {
            alpha,
            kind: rustgrad::kernels::math::EluKind::Elu,
        };
        Self::activation(slf, op, inplace)
    }

    #[pyo3(signature = (negative_slope = None, inplace = false))]
    fn _leaky_relu(
        slf: Bound<'_, Self>,
        negative_slope: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        let negative_slope = crate::convert::opt_scalar_f64(negative_slope, 0.01)?;
        Self::activation(slf, MathOp::LeakyRelu { negative_slope }, inplace)
    }

    #[pyo3(signature = (min_val = None, max_val = None, inplace = false))]
    fn _hardtanh(
        slf: Bound<'_, Self>,
        min_val: Option<&Bound<'_, PyAny>>,
        max_val: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        let min_val = crate::convert::opt_scalar_f64(min_val, -1.0)?;
        let max_val = crate::convert::opt_scalar_f64(max_val, 1.0)?;
        Self::activation(slf, MathOp::Hardtanh { min_val, max_val }, inplace)
    }

    #[pyo3(signature = (inplace = false))]
    fn _silu(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        Self::activation(slf, MathOp::Silu, inplace)
    }

    #[pyo3(signature = (inplace = false))]
    fn _mish(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        Self::activation(slf, MathOp::Mish, inplace)
    }

    #[pyo3(signature = (inplace = false))]
    fn _hardsigmoid(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        Self::activation(slf, MathOp::Hardsigmoid, inplace)
    }

    #[pyo3(signature = (inplace = false))]
    fn _hardswish(
        slf: Bound<'_, Self>,
        #[pyo3(from_py_with = crate::flag::truthy)] inplace: bool,
    ) -> PyResult<Py<PyAny>> {
        Self::activation(slf, MathOp::Hardswish, inplace)
    }

    #[pyo3(signature = (*, approximate = "none"))]
    fn _gelu(&self, py: Python<'_>, approximate: &str) -> PyResult<Py<PyTensor>> {
        self.math(
            py,
            MathOp::Gelu {
                tanh: gelu_tanh(approximate)?,
            },
        )
    }

    #[pyo3(signature = (beta = None, threshold = None))]
    fn _softplus(
        &self,
        py: Python<'_>,
        beta: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let beta = crate::convert::opt_scalar_f64(beta, 1.0)?;
        let threshold = crate::convert::opt_scalar_f64(threshold, 20.0)?;
        self.math(py, MathOp::Softplus { beta, threshold })
    }
}

/// selu's op: PyTorch's fixed alpha and scale.
fn selu_op() -> MathOp {
    MathOp::Elu {
        alpha: rustgrad::kernels::math::SELU_ALPHA,
        kind: rustgrad::kernels::math::EluKind::Selu,
    }
}
