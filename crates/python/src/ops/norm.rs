//! The normalisation functionals of `rustgrad.nn.functional` (private `_rustgrad`
//! functions that `python/rustgrad/nn/_norm.py` calls): the binding of
//! `rustgrad::ops::norm`.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::Variable;

fn var(t: &Option<PyRef<'_, PyTensor>>) -> Option<Variable> {
    t.as_ref().map(|t| t.var.clone())
}

/// `batch_norm(input, running_mean, running_var, weight, bias, training, momentum,
/// eps)`; the running statistics are updated in place when training.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _batch_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    running_mean: Option<PyRef<'_, PyTensor>>,
    running_var: Option<PyRef<'_, PyTensor>>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let (rm, rv, w, b) = (
        var(&running_mean),
        var(&running_var),
        var(&weight),
        var(&bias),
    );
    let r = maybe_detach(py, x.numel(), || {
        x.batch_norm(
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            training,
            momentum,
            eps,
        )
    });
    new_tensor(py, r.py()?)
}

/// `layer_norm(input, normalized_shape, weight, bias, eps)`.
#[pyfunction]
fn _layer_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: Vec<i64>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let (w, b) = (var(&weight), var(&bias));
    let r = maybe_detach(py, x.numel(), || {
        x.layer_norm(&normalized_shape, w.as_ref(), b.as_ref(), eps)
    });
    new_tensor(py, r.py()?)
}

/// `group_norm(input, num_groups, weight, bias, eps)`.
#[pyfunction]
fn _group_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    num_groups: i64,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let (w, b) = (var(&weight), var(&bias));
    let r = maybe_detach(py, x.numel(), || {
        x.group_norm(num_groups, w.as_ref(), b.as_ref(), eps)
    });
    new_tensor(py, r.py()?)
}

/// `instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
/// momentum, eps)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _instance_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    running_mean: Option<PyRef<'_, PyTensor>>,
    running_var: Option<PyRef<'_, PyTensor>>,
    weight: Option<PyRef<'_, PyTensor>>,
    bias: Option<PyRef<'_, PyTensor>>,
    use_input_stats: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let (rm, rv, w, b) = (
        var(&running_mean),
        var(&running_var),
        var(&weight),
        var(&bias),
    );
    let r = maybe_detach(py, x.numel(), || {
        x.instance_norm(
            rm.as_ref(),
            rv.as_ref(),
            w.as_ref(),
            b.as_ref(),
            use_input_stats,
            momentum,
            eps,
        )
    });
    new_tensor(py, r.py()?)
}

/// `rms_norm(input, normalized_shape, weight, eps)`.
#[pyfunction]
fn _rms_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    normalized_shape: Vec<i64>,
    weight: Option<PyRef<'_, PyTensor>>,
    eps: Option<f64>,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let w = var(&weight);
    let r = maybe_detach(py, x.numel(), || {
        x.rms_norm(&normalized_shape, w.as_ref(), eps)
    });
    new_tensor(py, r.py()?)
}

/// `local_response_norm(input, size, alpha, beta, k)`.
#[pyfunction]
fn _local_response_norm(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    size: i64,
    alpha: f64,
    beta: f64,
    k: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || {
        x.local_response_norm(size, alpha, beta, k)
    });
    new_tensor(py, r.py()?)
}

/// `normalize(input, p, dim, eps)`.
#[pyfunction]
fn _normalize(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    p: f64,
    dim: i64,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || x.normalize(p, dim, eps));
    new_tensor(py, r.py()?)
}

/// Adds the normalisation functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_group_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_instance_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_rms_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_local_response_norm, m)?)?;
    m.add_function(wrap_pyfunction!(_normalize, m)?)?;
    Ok(())
}
