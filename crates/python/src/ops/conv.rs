//! Module functions for convolutions and linear layers (`_rustgrad._conv`,
//! `_rustgrad._linear`, ...): the binding of `rustgrad::ops::conv`. The Python
//! functionals in `rustgrad/nn/_conv.py` normalise the arguments (ints or tuples,
//! padding strings) and call these; the work runs without the GIL when large.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{ConvPadding, Variable};

fn var(t: &Bound<'_, PyTensor>) -> Variable {
    t.get().var.clone()
}

fn opt_var(t: Option<&Bound<'_, PyTensor>>) -> Option<Variable> {
    t.map(var)
}

/// Runs `f` (without the GIL when the operands are large) and wraps its result.
fn run(
    py: Python<'_>,
    work: usize,
    f: impl FnOnce() -> rustgrad::Result<Variable> + Send,
) -> PyResult<Py<PyTensor>> {
    new_tensor(py, maybe_detach(py, work, f).py()?)
}

/// `conv1d/2d/3d(input, weight, bias, stride, padding, dilation, groups)` with `nd`
/// spatial dims; `padding_mode` is `"same"`, `"valid"` or `None` (use `padding`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (nd, input, weight, bias, stride, padding, padding_mode, dilation, groups))]
fn _conv(
    py: Python<'_>,
    nd: usize,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyTensor>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    padding_mode: Option<String>,
    dilation: Vec<i64>,
    groups: i64,
) -> PyResult<Py<PyTensor>> {
    let (x, w, b) = (var(input), var(weight), opt_var(bias));
    let work = x.numel().saturating_mul(w.numel());
    run(py, work, move || {
        let pad = match padding_mode.as_deref() {
            Some("same") => ConvPadding::Same,
            Some("valid") => ConvPadding::Valid,
            _ => ConvPadding::Explicit(&padding),
        };
        let b = b.as_ref();
        match nd {
            1 => x.conv1d(&w, b, &stride, pad, &dilation, groups),
            2 => x.conv2d(&w, b, &stride, pad, &dilation, groups),
            _ => x.conv3d(&w, b, &stride, pad, &dilation, groups),
        }
    })
}

/// `conv_transpose1d/2d/3d(input, weight, bias, stride, padding, output_padding,
/// groups, dilation)` with `nd` spatial dims.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (nd, input, weight, bias, stride, padding, output_padding, groups, dilation))]
fn _conv_transpose(
    py: Python<'_>,
    nd: usize,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyTensor>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    output_padding: Vec<i64>,
    groups: i64,
    dilation: Vec<i64>,
) -> PyResult<Py<PyTensor>> {
    let (x, w, b) = (var(input), var(weight), opt_var(bias));
    let work = x.numel().saturating_mul(w.numel());
    run(py, work, move || {
        let b = b.as_ref();
        let f = match nd {
            1 => Variable::conv_transpose1d,
            2 => Variable::conv_transpose2d,
            _ => Variable::conv_transpose3d,
        };
        f(
            &x,
            &w,
            b,
            &stride,
            &padding,
            &output_padding,
            groups,
            &dilation,
        )
    })
}

/// `torch.convolution(input, weight, bias, stride, padding, dilation, transposed,
/// output_padding, groups)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn convolution(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyTensor>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
) -> PyResult<Py<PyTensor>> {
    let (x, w, b) = (var(input), var(weight), opt_var(bias));
    let work = x.numel().saturating_mul(w.numel());
    run(py, work, move || {
        x.convolution(
            &w,
            b.as_ref(),
            &stride,
            &padding,
            &dilation,
            transposed,
            &output_padding,
            groups,
        )
    })
}

/// `linear(input, weight, bias)`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias = None))]
fn _linear(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyTensor>> {
    let (x, w, b) = (var(input), var(weight), opt_var(bias));
    let work = x.numel().saturating_mul(w.numel());
    run(py, work, move || x.linear(&w, b.as_ref()))
}

/// `bilinear(input1, input2, weight, bias)`.
#[pyfunction]
#[pyo3(signature = (input1, input2, weight, bias = None))]
fn _bilinear(
    py: Python<'_>,
    input1: &Bound<'_, PyTensor>,
    input2: &Bound<'_, PyTensor>,
    weight: &Bound<'_, PyTensor>,
    bias: Option<&Bound<'_, PyTensor>>,
) -> PyResult<Py<PyTensor>> {
    let (x1, x2, w, b) = (var(input1), var(input2), var(weight), opt_var(bias));
    let work = x1.numel().saturating_mul(w.numel());
    run(py, work, move || x1.bilinear(&x2, &w, b.as_ref()))
}

/// `unfold(input, kernel_size, dilation, padding, stride)` (im2col).
#[pyfunction]
fn _unfold(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<Py<PyTensor>> {
    let x = var(input);
    run(py, x.numel(), move || {
        x.unfold_blocks(&kernel_size, &dilation, &padding, &stride)
    })
}

/// `fold(input, output_size, kernel_size, dilation, padding, stride)` (col2im).
#[pyfunction]
fn _fold(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    output_size: Vec<i64>,
    kernel_size: Vec<i64>,
    dilation: Vec<i64>,
    padding: Vec<i64>,
    stride: Vec<i64>,
) -> PyResult<Py<PyTensor>> {
    let x = var(input);
    run(py, x.numel(), move || {
        x.fold_blocks(&output_size, &kernel_size, &dilation, &padding, &stride)
    })
}

/// `pixel_shuffle(input, upscale_factor)`.
#[pyfunction]
fn _pixel_shuffle(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    upscale_factor: i64,
) -> PyResult<Py<PyTensor>> {
    let x = var(input);
    run(py, x.numel(), move || x.pixel_shuffle(upscale_factor))
}

/// `pixel_unshuffle(input, downscale_factor)`.
#[pyfunction]
fn _pixel_unshuffle(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    downscale_factor: i64,
) -> PyResult<Py<PyTensor>> {
    let x = var(input);
    run(py, x.numel(), move || x.pixel_unshuffle(downscale_factor))
}

/// Adds this family's functions to the extension module.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_conv, m)?)?;
    m.add_function(wrap_pyfunction!(_conv_transpose, m)?)?;
    m.add_function(wrap_pyfunction!(convolution, m)?)?;
    m.add_function(wrap_pyfunction!(_linear, m)?)?;
    m.add_function(wrap_pyfunction!(_bilinear, m)?)?;
    m.add_function(wrap_pyfunction!(_unfold, m)?)?;
    m.add_function(wrap_pyfunction!(_fold, m)?)?;
    m.add_function(wrap_pyfunction!(_pixel_shuffle, m)?)?;
    m.add_function(wrap_pyfunction!(_pixel_unshuffle, m)?)?;
    Ok(())
}
