//! `scaled_dot_product_attention` for `rustgrad.nn.functional` (the private
//! `_rustgrad._scaled_dot_product_attention` that `python/rustgrad/nn/_attention.py`
//! calls): the binding of `rustgrad::ops::attention`.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;

/// `scaled_dot_product_attention(query, key, value, attn_mask, is_causal, scale,
/// enable_gqa)` without dropout (the fused kernel).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _scaled_dot_product_attention(
    py: Python<'_>,
    query: PyRef<'_, PyTensor>,
    key: PyRef<'_, PyTensor>,
    value: PyRef<'_, PyTensor>,
    attn_mask: Option<PyRef<'_, PyTensor>>,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> PyResult<Py<PyTensor>> {
    let (q, k, v) = (query.var.clone(), key.var.clone(), value.var.clone());
    let m = attn_mask.as_ref().map(|t| t.var.clone());
    let work = q.numel().saturating_mul(k.numel().max(1));
    let r = maybe_detach(py, work, || {
        q.scaled_dot_product_attention(&k, &v, m.as_ref(), is_causal, scale, enable_gqa)
    });
    new_tensor(py, r.py()?)
}

/// Adds the attention function to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_scaled_dot_product_attention, m)?)?;
    Ok(())
}
