//! `Tensor` methods for elementwise ops of three operands (`lerp`, `addcmul`, `addcdiv`,
//! `clamp`/`clip` with number or tensor bounds, `where`) and their in-place forms: the
//! binding of `rustgrad::ops::ternary`.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::mark_python_site;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::tensor::opt_scalar;
use crate::tensor::Operand;
use crate::PyTensor;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad::{Scalar, Variable};

/// A tensor argument, with PyTorch's TypeError for anything else.
fn tensor_arg(obj: &Bound<'_, PyAny>, op: &str, name: &str, pos: usize) -> PyResult<Variable> {
    match obj.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().var.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{op}(): argument '{name}' (position {pos}) must be Tensor, not {}",
            obj.get_type().name()?
        ))),
    }
}

/// The `value=` of addcmul / addcdiv (a number; 1 by default), exact.
fn value_arg(value: Option<&Bound<'_, PyAny>>, op: &str) -> PyResult<Scalar> {
    match value {
        None => Ok(Scalar::Int(1)),
        Some(v) => extract_scalar(v)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{op}(): argument 'value' must be Number, not {}",
                v.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        }),
    }
}

/// The bounds of `clamp`: both numbers (or None), or both tensors (or None); a number
/// with a tensor is a pair of numbers when the tensor is 0-d and does not require grad
/// (PyTorch takes such a tensor as a Number), otherwise PyTorch's TypeError.
enum ClampBounds {
    Numbers(Option<Scalar>, Option<Scalar>),
    Tensors(Option<Variable>, Option<Variable>),
}

fn clamp_bounds(
    min: Option<&Bound<'_, PyAny>>,
    max: Option<&Bound<'_, PyAny>>,
) -> PyResult<ClampBounds> {
    let min = min.filter(|m| !m.is_none());
    let max = max.filter(|m| !m.is_none());
    let is_tensor = |o: Option<&Bound<'_, PyAny>>| o.is_some_and(|o| o.cast::<PyTensor>().is_ok());
    let is_number =
        |o: Option<&Bound<'_, PyAny>>| o.is_some_and(|o| matches!(extract_scalar(o), Ok(Some(_))));
    for o in [min, max].into_iter().flatten() {
        extract_scalar(o)?;
        if !is_tensor(Some(o)) && !is_number(Some(o)) {
            return Err(PyTypeError::new_err(format!(
                "clamp(): argument 'min' and 'max' must be Tensor or Number, not {}",
                o.get_type().name()?
            )));
        }
    }
    if (is_tensor(min) && is_number(max)) || (is_number(min) && is_tensor(max)) {
        // PyTorch's argument parser takes a 0-d tensor that does not require grad as a
        // Number, so the pair matches the Number overload (ClampBackward1).
        let as_number = |o: Option<&Bound<'_, PyAny>>| -> PyResult<Option<Option<Scalar>>> {
            let Some(o) = o else { return Ok(Some(None)) };
            match o.cast::<PyTensor>() {
                Ok(t) => {
                    let v = &t.get().var;
                    if v.dim() == 0 && !v.requires_grad() {
                        Ok(Some(Some(v.item().py()?)))
                    } else {
                        Ok(None)
                    }
                }
                Err(_) => Ok(Some(opt_scalar(Some(o))?)),
            }
        };
        if let (Some(lo), Some(hi)) = (as_number(min)?, as_number(max)?) {
            return Ok(ClampBounds::Numbers(lo, hi));
        }
        return Err(PyTypeError::new_err(
            "clamp() received an invalid combination of arguments: min and max must both be \
             Tensors or both be Numbers",
        ));
    }
    if is_tensor(min) || is_tensor(max) {
        let var = |o: Option<&Bound<'_, PyAny>>| -> Option<Variable> {
            o.and_then(|o| o.cast::<PyTensor>().ok().map(|t| t.get().var.clone()))
        };
        return Ok(ClampBounds::Tensors(var(min), var(max)));
    }
    Ok(ClampBounds::Numbers(opt_scalar(min)?, opt_scalar(max)?))
}

impl PyTensor {
    /// `clamp` out of place.
    pub(super) fn clamp_any(
        &self,
        py: Python<'_>,
        min: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let v = &self.var;
        let out = match clamp_bounds(min, max)? {
            ClampBounds::Numbers(lo, hi) => maybe_detach(py, v.numel(), || v.clamp_scalar(lo, hi)),
            ClampBounds::Tensors(lo, hi) => {
                maybe_detach(py, v.numel(), || v.clamp_tensor(lo.as_ref(), hi.as_ref()))
            }
        };
        new_tensor(py, out.py()?)
    }

    /// `clamp_`; returns `self`.
    pub(super) fn clamp_any_<'py>(
        slf: Bound<'py, Self>,
        min: Option<&Bound<'py, PyAny>>,
        max: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        match clamp_bounds(min, max)? {
            ClampBounds::Numbers(lo, hi) => v.clamp_scalar_(lo, hi).py()?,
            ClampBounds::Tensors(lo, hi) => v.clamp_tensor_(lo.as_ref(), hi.as_ref()).py()?,
        }
        mark_python_site(slf.py(), v);
        Ok(slf)
    }
}

/// `lerp` out of place or in place (`self` is returned for the latter).
pub(super) fn lerp_any(
    slf: &Bound<'_, PyTensor>,
    end: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let op = if in_place { "lerp_" } else { "lerp" };
    let v = &slf.get().var;
    let end = tensor_arg(end, op, "end", 1)?;
    let weight = match extract_scalar(weight)? {
        Some(w) => Operand::Scalar(w),
        None => Operand::Tensor(tensor_arg(weight, op, "weight", 2)?),
    };
    if in_place {
        match &weight {
            Operand::Scalar(w) => v.lerp_scalar_(&end, w.to_f64()).py()?,
            Operand::Tensor(w) => v.lerp_(&end, w).py()?,
        }
        mark_python_site(py, v);
        return Ok(slf.clone().into_any().unbind());
    }
    let out = maybe_detach(py, v.numel().max(end.numel()), || match &weight {
        Operand::Scalar(w) => v.lerp_scalar(&end, w.to_f64()),
        Operand::Tensor(w) => v.lerp(&end, w),
    });
    Ok(new_tensor(py, out.py()?)?.into_any())
}

/// `addcmul` / `addcdiv` (`div`), out of place or in place.
fn addc_any(
    slf: &Bound<'_, PyTensor>,
    tensors: (&Bound<'_, PyAny>, &Bound<'_, PyAny>),
    value: Option<&Bound<'_, PyAny>>,
    div: bool,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    let op = match (div, in_place) {
        (false, false) => "addcmul",
        (false, true) => "addcmul_",
        (true, false) => "addcdiv",
        (true, true) => "addcdiv_",
    };
    let v = &slf.get().var;
    let t1 = tensor_arg(tensors.0, op, "tensor1", 1)?;
    let t2 = tensor_arg(tensors.1, op, "tensor2", 2)?;
    let value = value_arg(value, op)?;
    if in_place {
        if div {
            v.addcdiv_(&t1, &t2, value).py()?;
        } else {
            v.addcmul_(&t1, &t2, value).py()?;
        }
        mark_python_site(py, v);
        return Ok(slf.clone().into_any().unbind());
    }
    let work = v.numel().max(t1.numel()).max(t2.numel());
    let out = maybe_detach(py, work, || {
        if div {
            v.addcdiv(&t1, &t2, value)
        } else {
            v.addcmul(&t1, &t2, value)
        }
    });
    Ok(new_tensor(py, out.py()?)?.into_any())
}

/// `addcmul` / `addcmul_`.
pub(super) fn addcmul_any(
    slf: &Bound<'_, PyTensor>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    addc_any(slf, (tensor1, tensor2), value, false, in_place)
}

/// `addcdiv` / `addcdiv_`.
pub(super) fn addcdiv_any(
    slf: &Bound<'_, PyTensor>,
    tensor1: &Bound<'_, PyAny>,
    tensor2: &Bound<'_, PyAny>,
    value: Option<&Bound<'_, PyAny>>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    addc_any(slf, (tensor1, tensor2), value, true, in_place)
}

#[pymethods]
impl PyTensor {
    /// `where(condition, self, other)`: `self` where `condition` holds, else `other` (a
    /// tensor or a number, wrapped with PyTorch's promotion).
    #[pyo3(name = "where")]
    fn where_(
        &self,
        py: Python<'_>,
        condition: &Bound<'_, PyAny>,
        other: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let cond = tensor_arg(condition, "where", "condition", 1)?;
        let other = match Operand::extract(other)? {
            Some(o) => o.to_var(&self.var),
            None => tensor_arg(other, "where", "other", 2)?,
        };
        let v = &self.var;
        let out = maybe_detach(py, v.numel().max(other.numel()), || {
            Variable::where_cond(&cond.tensor(), v, &other)
        });
        new_tensor(py, out.py()?)
    }
}
