//! `scaled_dot_product_attention` for `rustgrad.nn.functional` (the private
//! `_rustgrad._scaled_dot_product_attention` that `python/rustgrad/nn/_attention.py`
//! calls): the binding of `rustgrad::ops::attention`.

use crate::errors::IntoPyResult;
use crate::random::{generator_or_default, PyGenerator};
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;

/// `scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal,
/// scale, enable_gqa)` through the fused kernel (dropout drawn from `generator`).
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, generator = None))]
#[allow(clippy::too_many_arguments)]
fn _scaled_dot_product_attention(
    py: Python<'_>,
    query: PyRef<'_, PyTensor>,
    key: PyRef<'_, PyTensor>,
    value: PyRef<'_, PyTensor>,
    attn_mask: Option<PyRef<'_, PyTensor>>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let gen = generator_or_default(generator);
    let (q, k, v) = (query.var.clone(), key.var.clone(), value.var.clone());
    let m = attn_mask.as_ref().map(|t| t.var.clone());
    let work = q.numel().saturating_mul(k.numel().max(1));
    let r = maybe_detach(py, work, || {
        q.scaled_dot_product_attention(
            &k,
            &v,
            m.as_ref(),
            dropout_p,
            is_causal,
            scale,
            enable_gqa,
            &gen,
        )
    });
    new_tensor(py, r.py()?)
}

/// Adds the attention function to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_scaled_dot_product_attention, m)?)?;
    Ok(())
}
