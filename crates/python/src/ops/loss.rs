//! The binding of `rustgrad::ops::loss` (`nll_loss`, `cross_entropy`): module-level
//! functions that `rustgrad.nn.functional` wraps with PyTorch's signatures (legacy
//! `size_average` / `reduce` arguments and the ValueError checks live there).

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustgrad::{PointwiseLoss, Reduction, Variable};

/// `nll_loss` of log-probabilities `input` at class indices `target`.
#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction, ignore_index))]
fn _nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    weight: Option<Bound<'_, PyTensor>>,
    reduction: &str,
    ignore_index: i64,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let x = input.get().var.clone();
    let t = target.get().var.tensor().clone();
    let w: Option<Variable> = weight.map(|w| w.get().var.clone());
    let out = maybe_detach(py, x.numel(), || {
        x.nll_loss(&t, w.as_ref(), reduction, ignore_index)
    })
    .py()?;
    new_tensor(py, out)
}

/// `cross_entropy` of logits `input` with class indices or class probabilities.
#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction, ignore_index, label_smoothing))]
fn _cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    weight: Option<Bound<'_, PyTensor>>,
    reduction: &str,
    ignore_index: i64,
    label_smoothing: f64,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let x = input.get().var.clone();
    let t = target.get().var.clone();
    let w: Option<Variable> = weight.map(|w| w.get().var.clone());
    let out = maybe_detach(py, x.numel(), || {
        x.cross_entropy(&t, w.as_ref(), reduction, ignore_index, label_smoothing)
    })
    .py()?;
    new_tensor(py, out)
}

/// A pointwise loss by name (`"mse"`, `"smooth_l1"` with `beta = param`, `"huber"` with
/// `delta = param`, `"bce"`, `"bce_logits"`).
#[pyfunction]
#[pyo3(signature = (input, target, kind, param, weight, pos_weight, reduction))]
#[allow(clippy::too_many_arguments)]
fn _pointwise_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    kind: &str,
    param: f64,
    weight: Option<Bound<'_, PyTensor>>,
    pos_weight: Option<Bound<'_, PyTensor>>,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let kind = match kind {
        "mse" => PointwiseLoss::Mse,
        "smooth_l1" => PointwiseLoss::SmoothL1 { beta: param },
        "huber" => PointwiseLoss::Huber { delta: param },
        "bce" => PointwiseLoss::BinaryCrossEntropy,
        "bce_logits" => PointwiseLoss::BinaryCrossEntropyWithLogits,
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown pointwise loss {other}"
            )))
        }
    };
    let reduction = Reduction::from_name(reduction).py()?;
    let x = input.get().var.clone();
    let y = target.get().var.clone();
    let w: Option<Variable> = weight.map(|w| w.get().var.clone());
    let p: Option<Variable> = pos_weight.map(|p| p.get().var.clone());
    let out = maybe_detach(py, x.numel(), || {
        x.pointwise_loss(&y, kind, w.as_ref(), p.as_ref(), reduction)
    })
    .py()?;
    new_tensor(py, out)
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(_pointwise_loss, m)?)?;
    Ok(())
}
