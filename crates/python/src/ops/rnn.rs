//! Module function `_rustgrad._rnn_layer`: the binding of `rustgrad::ops::rnn`, one
//! layer and direction of a recurrent network (the Python modules in
//! `rustgrad/nn/modules/rnn.py` stack them). See Note [Recurrent layers].

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{RnnMode, Variable};

fn var(t: &Bound<'_, PyTensor>) -> Variable {
    t.get().var.clone()
}

/// `_rnn_layer(mode, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse,
/// batch_sizes)`: `mode` is `"RNN_TANH"`, `"RNN_RELU"`, `"LSTM"` or `"GRU"`; returns
/// `(output, h_n)` or `(output, h_n, c_n)` for an LSTM.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (mode, input, hx, cx, w_ih, w_hh, b_ih, b_hh, w_hr, reverse, batch_sizes))]
fn _rnn_layer(
    py: Python<'_>,
    mode: &str,
    input: &Bound<'_, PyTensor>,
    hx: &Bound<'_, PyTensor>,
    cx: Option<&Bound<'_, PyTensor>>,
    w_ih: &Bound<'_, PyTensor>,
    w_hh: &Bound<'_, PyTensor>,
    b_ih: Option<&Bound<'_, PyTensor>>,
    b_hh: Option<&Bound<'_, PyTensor>>,
    w_hr: Option<&Bound<'_, PyTensor>>,
    reverse: bool,
    batch_sizes: Option<Vec<i64>>,
) -> PyResult<Vec<Py<PyTensor>>> {
    let cell = match mode {
        "RNN_TANH" => RnnMode::RnnTanh,
        "RNN_RELU" => RnnMode::RnnRelu,
        "LSTM" => RnnMode::Lstm,
        "GRU" => RnnMode::Gru,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "Unknown mode '{other}'"
            )))
        }
    };
    let x = var(input);
    let (h, c) = (var(hx), cx.map(var));
    let (wi, wh) = (var(w_ih), var(w_hh));
    let (bi, bh, wr) = (b_ih.map(var), b_hh.map(var), w_hr.map(var));
    let work = x.numel().saturating_mul(wh.numel().max(1));
    let outs = maybe_detach(py, work, move || {
        x.rnn_layer(
            &h,
            c.as_ref(),
            &wi,
            &wh,
            bi.as_ref(),
            bh.as_ref(),
            wr.as_ref(),
            cell,
            reverse,
            batch_sizes.as_deref(),
        )
    })
    .py()?;
    outs.into_iter().map(|v| new_tensor(py, v)).collect()
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_rnn_layer, m)?)?;
    Ok(())
}
