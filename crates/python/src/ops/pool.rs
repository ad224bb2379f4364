//! The pooling functionals of `rustgrad.nn.functional` (private `_rustgrad` functions
//! that `python/rustgrad/nn/_pool.py` calls after normalising PyTorch's arguments): the
//! binding of `rustgrad::ops::pool`.

use crate::errors::IntoPyResult;
use crate::tensor::{maybe_detach, new_tensor};
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{Pool2d, Pool3d, Variable};

type Pair = (i64, i64);
type Triple = (i64, i64, i64);

fn arr3(t: Triple) -> [i64; 3] {
    [t.0, t.1, t.2]
}

fn pool2d(
    kernel_size: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    ceil_mode: bool,
) -> Pool2d {
    Pool2d {
        kernel_size: [kernel_size.0, kernel_size.1],
        stride: [stride.0, stride.1],
        padding: [padding.0, padding.1],
        dilation: [dilation.0, dilation.1],
        ceil_mode,
    }
}

fn pair_result(
    py: Python<'_>,
    r: rustgrad::Result<(Variable, Variable)>,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let (values, indices) = r.py()?;
    Ok((new_tensor(py, values)?, new_tensor(py, indices)?))
}

/// `max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)`:
/// `(values, indices)`.
#[pyfunction]
fn _max_pool2d_with_indices(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Pair,
    stride: Pair,
    padding: Pair,
    dilation: Pair,
    ceil_mode: bool,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let p = pool2d(kernel_size, stride, padding, dilation, ceil_mode);
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || x.max_pool2d_with_indices(&p));
    pair_result(py, r)
}

/// `avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Pair,
    stride: Pair,
    padding: Pair,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyTensor>> {
    let p = pool2d(kernel_size, stride, padding, (1, 1), ceil_mode);
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || {
        x.avg_pool2d(&p, count_include_pad, divisor_override)
    });
    new_tensor(py, r.py()?)
}

/// `adaptive_avg_pool2d(input, (oH, oW))`.
#[pyfunction]
fn _adaptive_avg_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Pair,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || {
        x.adaptive_avg_pool2d(&[output_size.0, output_size.1])
    });
    new_tensor(py, r.py()?)
}

/// `adaptive_max_pool2d(input, (oH, oW))`: `(values, indices)`.
#[pyfunction]
fn _adaptive_max_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Pair,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || {
        x.adaptive_max_pool2d(&[output_size.0, output_size.1])
    });
    pair_result(py, r)
}

/// `max_unpool2d(input, indices, (oH, oW))`.
#[pyfunction]
fn _max_unpool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    indices: PyRef<'_, PyTensor>,
    output_size: Pair,
) -> PyResult<Py<PyTensor>> {
    let (x, i) = (input.var.clone(), indices.var.clone());
    let r = maybe_detach(py, x.numel(), || {
        x.max_unpool2d(&i, &[output_size.0, output_size.1])
    });
    new_tensor(py, r.py()?)
}

/// `max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)`:
/// `(values, indices)`.
#[pyfunction]
fn _max_pool3d_with_indices(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Triple,
    stride: Triple,
    padding: Triple,
    dilation: Triple,
    ceil_mode: bool,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let p = Pool3d {
        kernel_size: arr3(kernel_size),
        stride: arr3(stride),
        padding: arr3(padding),
        dilation: arr3(dilation),
        ceil_mode,
    };
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || x.max_pool3d_with_indices(&p));
    pair_result(py, r)
}

/// `avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
/// divisor_override)`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn _avg_pool3d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Triple,
    stride: Triple,
    padding: Triple,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyTensor>> {
    let p = Pool3d {
        kernel_size: arr3(kernel_size),
        stride: arr3(stride),
        padding: arr3(padding),
        dilation: [1, 1, 1],
        ceil_mode,
    };
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || {
        x.avg_pool3d(&p, count_include_pad, divisor_override)
    });
    new_tensor(py, r.py()?)
}

/// `adaptive_avg_pool3d(input, (oT, oH, oW))`.
#[pyfunction]
fn _adaptive_avg_pool3d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Triple,
) -> PyResult<Py<PyTensor>> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || x.adaptive_avg_pool3d(&arr3(output_size)));
    new_tensor(py, r.py()?)
}

/// `adaptive_max_pool3d(input, (oT, oH, oW))`: `(values, indices)`.
#[pyfunction]
fn _adaptive_max_pool3d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    output_size: Triple,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let x = input.var.clone();
    let r = maybe_detach(py, x.numel(), || x.adaptive_max_pool3d(&arr3(output_size)));
    pair_result(py, r)
}

/// `max_unpool3d(input, indices, (oT, oH, oW))`.
#[pyfunction]
fn _max_unpool3d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    indices: PyRef<'_, PyTensor>,
    output_size: Triple,
) -> PyResult<Py<PyTensor>> {
    let (x, i) = (input.var.clone(), indices.var.clone());
    let r = maybe_detach(py, x.numel(), || x.max_unpool3d(&i, &arr3(output_size)));
    new_tensor(py, r.py()?)
}

/// `fractional_max_pool2d(input, kernel_size, output_size, random_samples)`:
/// `(values, indices)`.
#[pyfunction]
fn _fractional_max_pool2d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Pair,
    output_size: Pair,
    samples: PyRef<'_, PyTensor>,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let (x, s) = (input.var.clone(), samples.var.clone());
    let r = maybe_detach(py, x.numel(), || {
        x.fractional_max_pool2d(
            &[kernel_size.0, kernel_size.1],
            &[output_size.0, output_size.1],
            &s,
        )
    });
    pair_result(py, r)
}

/// `fractional_max_pool3d(input, kernel_size, output_size, random_samples)`:
/// `(values, indices)`.
#[pyfunction]
fn _fractional_max_pool3d(
    py: Python<'_>,
    input: PyRef<'_, PyTensor>,
    kernel_size: Triple,
    output_size: Triple,
    samples: PyRef<'_, PyTensor>,
) -> PyResult<(Py<PyTensor>, Py<PyTensor>)> {
    let (x, s) = (input.var.clone(), samples.var.clone());
    let r = maybe_detach(py, x.numel(), || {
        x.fractional_max_pool3d(&arr3(kernel_size), &arr3(output_size), &s)
    });
    pair_result(py, r)
}

/// Adds the pooling functions to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_max_pool2d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_max_unpool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_max_pool3d_with_indices, m)?)?;
    m.add_function(wrap_pyfunction!(_avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_avg_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(_adaptive_max_pool3d, m)?)?;
    m.add_function(wrap_pyfunction!(_max_unpool3d, m)?)?;
    m.add_function(wrap_pyfunction!(_fractional_max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(_fractional_max_pool3d, m)?)?;
    Ok(())
}
