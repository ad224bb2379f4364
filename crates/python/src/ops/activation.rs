//! The activations and dropouts of `rustgrad.nn.functional` that are not elementwise
//! ops (private `_rustgrad` functions that `python/rustgrad/nn/_activation.py` and
//! `_dropout.py` call): the binding of `rustgrad::ops::{activation, dropout}`.

use crate::errors::IntoPyResult;
use crate::random::{generator_or_default, PyGenerator};
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{DropoutKind, Result, Variable};

/// Runs `op` on `input`'s variable (without the GIL when the input is large).
fn unary(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    op: impl FnOnce(&Variable) -> Result<Variable> + Send,
) -> PyResult<Py<PyTensor>> {
    let x = input.get().var.clone();
    let out = maybe_detach(py, x.numel(), || op(&x)).py()?;
    new_tensor(py, out)
}

/// `glu(input, dim)`.
#[pyfunction]
fn _glu(py: Python<'_>, input: &Bound<'_, PyTensor>, dim: i64) -> PyResult<Py<PyTensor>> {
    unary(py, input, |x| x.glu(dim))
}

/// `hardshrink(input, lambd)`.
#[pyfunction]
fn _hardshrink(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    lambd: &Bound<'_, PyAny>,
) -> PyResult<Py<PyTensor>> {
    let lambd = crate::convert::scalar_f64(lambd)?;
    unary(py, input, |x| x.hardshrink(lambd))
}

/// `softshrink(input, lambd)`.
#[pyfunction]
fn _softshrink(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    lambd: &Bound<'_, PyAny>,
) -> PyResult<Py<PyTensor>> {
    let lambd = crate::convert::scalar_f64(lambd)?;
    unary(py, input, |x| x.softshrink(lambd))
}

/// `tanhshrink(input)`.
#[pyfunction]
fn _tanhshrink(py: Python<'_>, input: &Bound<'_, PyTensor>) -> PyResult<Py<PyTensor>> {
    unary(py, input, |x| x.tanhshrink())
}

/// `threshold(input, threshold, value)`.
#[pyfunction]
fn _threshold(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    threshold: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
) -> PyResult<Py<PyTensor>> {
    let threshold = crate::convert::scalar_f64(threshold)?;
    let value = crate::convert::scalar_f64(value)?;
    unary(py, input, |x| x.threshold(threshold, value))
}

/// `prelu(input, weight)`.
#[pyfunction]
fn _prelu(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
) -> PyResult<Py<PyTensor>> {
    let w = weight.get().var.clone();
    unary(py, input, |x| x.prelu(&w))
}

/// `rrelu(input, lower, upper, training, generator)`.
#[pyfunction]
#[pyo3(signature = (input, lower, upper, training, generator = None))]
fn _rrelu(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    lower: &Bound<'_, PyAny>,
    upper: &Bound<'_, PyAny>,
    training: bool,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let lower = crate::convert::scalar_f64(lower)?;
    let upper = crate::convert::scalar_f64(upper)?;
    let gen = generator_or_default(generator);
    unary(py, input, |x| x.rrelu(lower, upper, training, &gen))
}

/// `dropout` and its feature / alpha forms: `_dropout(input, p, training, inplace,
/// feature, alpha)`.
#[pyfunction]
#[pyo3(signature = (input, p, training, inplace, feature, alpha, generator = None))]
#[allow(clippy::too_many_arguments)]
fn _dropout(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    p: f64,
    training: bool,
    inplace: bool,
    feature: bool,
    alpha: bool,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let gen = generator_or_default(generator);
    let kind = DropoutKind { feature, alpha };
    if inplace {
        // The result is `input` itself: return the same Python object.
        let x = input.get().var.clone();
        maybe_detach(py, x.numel(), || x.dropout(p, training, kind, true, &gen)).py()?;
        return Ok(input.clone().unbind());
    }
    unary(py, input, |x| x.dropout(p, training, kind, false, &gen))
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_glu, m)?)?;
    m.add_function(wrap_pyfunction!(_hardshrink, m)?)?;
    m.add_function(wrap_pyfunction!(_softshrink, m)?)?;
    m.add_function(wrap_pyfunction!(_tanhshrink, m)?)?;
    m.add_function(wrap_pyfunction!(_threshold, m)?)?;
    m.add_function(wrap_pyfunction!(_prelu, m)?)?;
    m.add_function(wrap_pyfunction!(_rrelu, m)?)?;
    m.add_function(wrap_pyfunction!(_dropout, m)?)?;
    Ok(())
}
