//! The binding of `rustgrad::ops::loss` (`nll_loss`, `cross_entropy`): module-level
//! functions that `rustgrad.nn.functional` wraps with PyTorch's signatures (legacy
//! `size_average` / `reduce` arguments and the ValueError checks live there).

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rustgrad::{KlReduction, PointwiseLoss, Reduction, Result, Variable, WeightedMean};

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
        "soft_margin" => PointwiseLoss::SoftMargin,
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

/// Runs a loss over the given operands' variables (without the GIL when large).
fn run(
    py: Python<'_>,
    operands: &[&Bound<'_, PyTensor>],
    op: impl FnOnce(&[Variable]) -> Result<Variable> + Send,
) -> PyResult<Py<PyTensor>> {
    let vars: Vec<Variable> = operands.iter().map(|t| t.get().var.clone()).collect();
    let work = vars.first().map_or(0, Variable::numel);
    let out = maybe_detach(py, work, || op(&vars)).py()?;
    new_tensor(py, out)
}

/// `l1_loss(input, target, reduction, weight)`.
#[pyfunction]
#[pyo3(signature = (input, target, reduction, weight = None))]
fn _l1_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    reduction: &str,
    weight: Option<Bound<'_, PyTensor>>,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let w: Option<Variable> = weight.map(|w| w.get().var.clone());
    run(py, &[input, target], |v| {
        v[0].l1_loss(&v[1], w.as_ref(), reduction)
    })
}

/// The weighted path of an elementwise loss on its unweighted elementwise `loss`:
/// `loss * weight`, reduced; the mean divides by `weight.sum()` when `by_weight_sum`
/// (`mse_loss`, `l1_loss`), else by the count (`huber_loss`).
#[pyfunction]
fn _weighted_loss(
    py: Python<'_>,
    loss: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    reduction: &str,
    by_weight_sum: bool,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let mean = if by_weight_sum {
        WeightedMean::ByWeightSum
    } else {
        WeightedMean::ByCount
    };
    run(py, &[loss, weight], |v| {
        v[0].weighted_loss(&v[1], reduction, mean)
    })
}

/// `kl_div(input, target, reduction, log_target)`.
#[pyfunction]
fn _kl_div(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    reduction: &str,
    log_target: bool,
) -> PyResult<Py<PyTensor>> {
    let reduction = KlReduction::from_name(reduction).py()?;
    run(py, &[input, target], |v| {
        v[0].kl_div(&v[1], reduction, log_target)
    })
}

/// `poisson_nll_loss(input, target, log_input, full, eps, reduction)`.
#[pyfunction]
fn _poisson_nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    log_input: bool,
    full: bool,
    eps: f64,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    run(py, &[input, target], |v| {
        v[0].poisson_nll_loss(&v[1], log_input, full, eps, reduction)
    })
}

/// `cosine_similarity(x1, x2, dim, eps)`.
#[pyfunction]
fn _cosine_similarity(
    py: Python<'_>,
    x1: &Bound<'_, PyTensor>,
    x2: &Bound<'_, PyTensor>,
    dim: i64,
    eps: f64,
) -> PyResult<Py<PyTensor>> {
    run(py, &[x1, x2], |v| v[0].cosine_similarity(&v[1], dim, eps))
}

/// `pairwise_distance(x1, x2, p, eps, keepdim)`.
#[pyfunction]
fn _pairwise_distance(
    py: Python<'_>,
    x1: &Bound<'_, PyTensor>,
    x2: &Bound<'_, PyTensor>,
    p: f64,
    eps: f64,
    keepdim: bool,
) -> PyResult<Py<PyTensor>> {
    run(py, &[x1, x2], |v| {
        v[0].pairwise_distance(&v[1], p, eps, keepdim)
    })
}

/// `cosine_embedding_loss(input1, input2, target, margin, reduction)`.
#[pyfunction]
fn _cosine_embedding_loss(
    py: Python<'_>,
    input1: &Bound<'_, PyTensor>,
    input2: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    margin: f64,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    run(py, &[input1, input2, target], |v| {
        v[0].cosine_embedding_loss(&v[1], &v[2], margin, reduction)
    })
}

/// `margin_ranking_loss(input1, input2, target, margin, reduction)`.
#[pyfunction]
fn _margin_ranking_loss(
    py: Python<'_>,
    input1: &Bound<'_, PyTensor>,
    input2: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    margin: f64,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    run(py, &[input1, input2, target], |v| {
        v[0].margin_ranking_loss(&v[1], &v[2], margin, reduction)
    })
}

/// `triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _triplet_margin_loss(
    py: Python<'_>,
    anchor: &Bound<'_, PyTensor>,
    positive: &Bound<'_, PyTensor>,
    negative: &Bound<'_, PyTensor>,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    run(py, &[anchor, positive, negative], |v| {
        v[0].triplet_margin_loss(&v[1], &v[2], margin, p, eps, swap, reduction)
    })
}

/// `multi_margin_loss(input, target, p, margin, weight, reduction)`.
#[pyfunction]
#[pyo3(signature = (input, target, p, margin, weight, reduction))]
fn _multi_margin_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    p: i64,
    margin: f64,
    weight: Option<Bound<'_, PyTensor>>,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let t = target.get().var.tensor().clone();
    let w: Option<Variable> = weight.map(|w| w.get().var.clone());
    run(py, &[input], |v| {
        v[0].multi_margin_loss(&t, p, margin, w.as_ref(), reduction)
    })
}

/// `multilabel_margin_loss(input, target, reduction)`.
#[pyfunction]
fn _multilabel_margin_loss(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    target: &Bound<'_, PyTensor>,
    reduction: &str,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let t = target.get().var.tensor().clone();
    run(py, &[input], |v| v[0].multilabel_margin_loss(&t, reduction))
}

/// `ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, reduction,
/// zero_infinity)` with the lengths as integer lists.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _ctc_loss(
    py: Python<'_>,
    log_probs: &Bound<'_, PyTensor>,
    targets: &Bound<'_, PyTensor>,
    input_lengths: Vec<i64>,
    target_lengths: Vec<i64>,
    blank: i64,
    reduction: &str,
    zero_infinity: bool,
) -> PyResult<Py<PyTensor>> {
    let reduction = Reduction::from_name(reduction).py()?;
    let t = targets.get().var.tensor().clone();
    run(py, &[log_probs], |v| {
        v[0].ctc_loss(
            &t,
            &input_lengths,
            &target_lengths,
            blank,
            reduction,
            zero_infinity,
        )
    })
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(_pointwise_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_l1_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_weighted_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_kl_div, m)?)?;
    m.add_function(wrap_pyfunction!(_poisson_nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_cosine_similarity, m)?)?;
    m.add_function(wrap_pyfunction!(_pairwise_distance, m)?)?;
    m.add_function(wrap_pyfunction!(_cosine_embedding_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_margin_ranking_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_triplet_margin_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_multi_margin_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_multilabel_margin_loss, m)?)?;
    m.add_function(wrap_pyfunction!(_ctc_loss, m)?)?;
    Ok(())
}
