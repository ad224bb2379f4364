//! `embedding`, `embedding_bag` and `one_hot` of `rustgrad.nn.functional` (private
//! `_rustgrad` functions that `python/rustgrad/nn/_dropout.py` calls after PyTorch's
//! argument checks): the binding of `rustgrad::ops::embedding`.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{BagMode, BagOptions};

/// `embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)`.
#[pyfunction]
fn _embedding(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    padding_idx: Option<i64>,
    max_norm: Option<f64>,
    norm_type: f64,
    scale_grad_by_freq: bool,
) -> PyResult<Py<PyTensor>> {
    let indices = input.get().var.tensor().clone();
    let w = weight.get().var.clone();
    let out = maybe_detach(py, indices.numel(), || {
        w.embedding(
            &indices,
            padding_idx,
            max_norm,
            norm_type,
            scale_grad_by_freq,
        )
    })
    .py()?;
    new_tensor(py, out)
}

/// `embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode,
/// per_sample_weights, include_last_offset, padding_idx)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _embedding_bag(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    offsets: Option<Bound<'_, PyTensor>>,
    max_norm: Option<f64>,
    norm_type: f64,
    scale_grad_by_freq: bool,
    mode: &str,
    per_sample_weights: Option<Bound<'_, PyTensor>>,
    include_last_offset: bool,
    padding_idx: Option<i64>,
) -> PyResult<Py<PyTensor>> {
    let options = BagOptions {
        mode: BagMode::from_name(mode).py()?,
        include_last_offset,
        padding_idx,
        max_norm,
        norm_type,
        scale_grad_by_freq,
    };
    let indices = input.get().var.tensor().clone();
    let offsets = offsets.map(|o| o.get().var.tensor().clone());
    let psw = per_sample_weights.map(|p| p.get().var.clone());
    let w = weight.get().var.clone();
    let out = maybe_detach(py, indices.numel(), || {
        w.embedding_bag(&indices, offsets.as_ref(), psw.as_ref(), &options)
    })
    .py()?;
    new_tensor(py, out)
}

/// `one_hot(tensor, num_classes)`.
#[pyfunction]
fn _one_hot(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    num_classes: i64,
) -> PyResult<Py<PyTensor>> {
    let x = tensor.get().var.clone();
    let out = maybe_detach(py, x.numel(), || x.one_hot(num_classes)).py()?;
    new_tensor(py, out)
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_embedding, m)?)?;
    m.add_function(wrap_pyfunction!(_embedding_bag, m)?)?;
    m.add_function(wrap_pyfunction!(_one_hot, m)?)?;
    Ok(())
}
