//! `Tensor` methods for linear algebra (`t @ u`, `matmul`, `mm`, `bmm`, `mv`, `dot`,
//! `outer`, `addmm`, `addmv`, `baddbmm`, `addbmm` and their in-place forms,
//! `tensordot`): the binding of `rustgrad::ops::linalg`.

use crate::convert::extract_scalar;
use crate::errors::IntoPyResult;
use crate::tensor::mark_python_site;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use rustgrad::{Scalar, Variable};

/// A product of `a` and `other` (`mm`, `bmm`, `mv`, ...), without the GIL when large.
pub(super) fn product(
    py: Python<'_>,
    a: &Variable,
    other: &Bound<'_, PyTensor>,
    f: impl FnOnce(&Variable, &Variable) -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyTensor>> {
    let b = other.get().var.clone();
    let work = a.numel().max(b.numel());
    new_tensor(py, maybe_detach(py, work, || f(a, &b)).py()?)
}

/// `beta` or `alpha` of the `addmm` family: a number (kept exact), 1 when absent.
fn coefficient(name: &str, obj: Option<&Bound<'_, PyAny>>) -> PyResult<Scalar> {
    match obj {
        None => Ok(Scalar::Int(1)),
        Some(o) => extract_scalar(o)?.ok_or_else(|| {
            PyTypeError::new_err(format!(
                "{name} must be a number, not {}",
                o.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        }),
    }
}

/// An op of the `addmm` family.
#[derive(Clone, Copy)]
pub(super) enum ScaledOp {
    /// `addmm`.
    Addmm,
    /// `addmv`.
    Addmv,
    /// `baddbmm`.
    Baddbmm,
    /// `addbmm`.
    Addbmm,
}

impl ScaledOp {
    fn run(
        self,
        input: &Variable,
        a: &Variable,
        b: &Variable,
        beta: Scalar,
        alpha: Scalar,
    ) -> rustgrad::Result<Variable> {
        match self {
            ScaledOp::Addmm => input.addmm(a, b, beta, alpha),
            ScaledOp::Addmv => input.addmv(a, b, beta, alpha),
            ScaledOp::Baddbmm => input.baddbmm(a, b, beta, alpha),
            ScaledOp::Addbmm => input.addbmm(a, b, beta, alpha),
        }
    }

    /// The result's shape when the factors have the ranks the op expects.
    fn out_shape(self, sa: &[usize], sb: &[usize]) -> Option<Vec<usize>> {
        match (self, sa.len(), sb.len()) {
            (ScaledOp::Addmm, 2, 2) => Some(vec![sa[0], sb[1]]),
            (ScaledOp::Addmv, 2, 1) => Some(vec![sa[0]]),
            (ScaledOp::Baddbmm, 3, 3) => Some(vec![sa[0], sa[1], sb[2]]),
            (ScaledOp::Addbmm, 3, 3) => Some(vec![sa[1], sb[2]]),
            _ => None,
        }
    }
}

/// `beta * input + alpha * product(a, b)`, out of place.
pub(super) fn scaled(
    py: Python<'_>,
    input: &Variable,
    a: &Bound<'_, PyTensor>,
    b: &Bound<'_, PyTensor>,
    beta: Option<&Bound<'_, PyAny>>,
    alpha: Option<&Bound<'_, PyAny>>,
    f: ScaledOp,
) -> PyResult<Py<PyTensor>> {
    let (beta, alpha) = (coefficient("beta", beta)?, coefficient("alpha", alpha)?);
    let (a, b) = (a.get().var.clone(), b.get().var.clone());
    let work = input.numel().max(a.numel()).max(b.numel());
    new_tensor(
        py,
        maybe_detach(py, work, || f.run(input, &a, &b, beta, alpha)).py()?,
    )
}

/// `input = beta * input + alpha * product(a, b)`, in place; the result must have
/// `input`'s shape ("Bad in-place call").
pub(super) fn scaled_<'py>(
    slf: Bound<'py, PyTensor>,
    a: &Bound<'py, PyTensor>,
    b: &Bound<'py, PyTensor>,
    beta: Option<&Bound<'py, PyAny>>,
    alpha: Option<&Bound<'py, PyAny>>,
    f: ScaledOp,
) -> PyResult<Bound<'py, PyTensor>> {
    let (beta, alpha) = (coefficient("beta", beta)?, coefficient("alpha", alpha)?);
    let v = &slf.get().var;
    let (a, b) = (&a.get().var, &b.get().var);
    // The operand that decides whether the write records history: a volatile factor
    // first, then one that requires grad.
    let carrier = [a, b]
        .into_iter()
        .find(|x| x.is_volatile())
        .or_else(|| [a, b].into_iter().find(|x| x.requires_grad()))
        .unwrap_or(a);
    // PyTorch checks the result's shape against `self` before anything else.
    let (sa, sb) = (a.shape(), b.shape());
    if let Some(out) = f
        .out_shape(&sa, &sb)
        .filter(|o| o.as_slice() != v.shape().as_slice())
    {
        return Err(PyRuntimeError::new_err(format!(
            "Bad in-place call: input tensor size {:?} and output tensor size {:?} should match",
            v.shape().as_slice(),
            out
        )));
    }
    v.in_place_with(Some(carrier), |s| f.run(s, a, b, beta, alpha))
        .py()?;
    mark_python_site(slf.py(), v);
    Ok(slf)
}

#[pymethods]
impl PyTensor {
    /// `torch.tensordot` with explicit dim lists (the Python function parses `dims`).
    fn _tensordot(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyTensor>,
        dims_a: Vec<i64>,
        dims_b: Vec<i64>,
    ) -> PyResult<Py<PyTensor>> {
        product(py, &self.var, other, |a, b| {
            a.tensordot(b, &dims_a, &dims_b)
        })
    }

    /// `torch.einsum` (the Python function collects the operands).
    #[staticmethod]
    fn _einsum(
        py: Python<'_>,
        equation: &str,
        operands: Vec<Bound<'_, PyTensor>>,
    ) -> PyResult<Py<PyTensor>> {
        let vars: Vec<Variable> = operands.iter().map(|o| o.get().var.clone()).collect();
        let work = vars.iter().map(Variable::numel).max().unwrap_or(0);
        new_tensor(
            py,
            maybe_detach(py, work, || Variable::einsum(equation, &vars)).py()?,
        )
    }
}
