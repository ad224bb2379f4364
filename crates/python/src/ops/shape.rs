//! `Tensor` methods for shape and movement ops (`view`, `reshape`, `transpose`,
//! `permute`, `expand`, ...): the binding of `rustgrad::ops::shape`.

use crate::convert::{extract_int, extract_sizes};
use crate::dtype::extract_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pymethods]
impl PyTensor {
    /// A view with another shape (`view(2, 3)` or `view((2, 3))`); one size may be -1.
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        if shape.len() == 1 {
            if let Ok(d) = extract_dtype(&shape.get_item(0)?) {
                if d != self.var.dtype() {
                    return Err(PyRuntimeError::new_err(
                        "view(dtype) reinterpretation is not supported by rustgrad",
                    ));
                }
                // PyTorch 2.x: a distinct alias without autograd history (not `self`).
                return new_tensor(py, self.var.detach());
            }
        }
        new_tensor(py, self.var.view(&extract_sizes(shape)?).py()?)
    }

    /// Like view, copying when needed.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.reshape(&extract_sizes(shape)?).py()?)
    }

    /// Swaps two dims.
    fn transpose(
        &self,
        py: Python<'_>,
        dim0: &Bound<'_, PyAny>,
        dim1: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let (d0, d1) = (extract_int(dim0)?, extract_int(dim1)?);
        new_tensor(py, self.var.transpose(d0, d1).py()?)
    }

    /// Merges dims `start_dim..=end_dim` into one (a view when possible).
    #[pyo3(signature = (start_dim = None, end_dim = None))]
    fn flatten(
        &self,
        py: Python<'_>,
        start_dim: Option<&Bound<'_, PyAny>>,
        end_dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let start = start_dim.map(extract_int).transpose()?.unwrap_or(0);
        let end = end_dim.map(extract_int).transpose()?.unwrap_or(-1);
        let nd = self.var.dim();
        let (s, e) = (
            rustgrad::shape::wrap_dim(start, nd).py()?,
            rustgrad::shape::wrap_dim(end, nd).py()?,
        );
        if s > e {
            return Err(PyRuntimeError::new_err(
                "flatten() has invalid args: start_dim cannot come after end_dim",
            ));
        }
        if nd == 0 {
            return new_tensor(py, self.var.reshape(&[1]).py()?);
        }
        let shape = self.var.shape();
        let mut target: Vec<i64> = shape[..s].iter().map(|&d| d as i64).collect();
        target.push(shape[s..=e].iter().product::<usize>() as i64);
        target.extend(shape[e + 1..].iter().map(|&d| d as i64));
        new_tensor(py, self.var.reshape(&target).py()?)
    }

    /// Transpose of a <= 2-D tensor.
    fn t(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.t().py()?)
    }

    /// Reorders dims (`permute(1, 0)` or `permute((1, 0))`).
    #[pyo3(signature = (*dims))]
    fn permute(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.permute(&extract_sizes(dims)?).py()?)
    }

    /// Broadcasts to a larger size without copying (-1 keeps a size).
    #[pyo3(signature = (*sizes))]
    fn expand(&self, py: Python<'_>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.expand(&extract_sizes(sizes)?).py()?)
    }

    /// Inserts a size-1 dim.
    fn unsqueeze(&self, py: Python<'_>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.unsqueeze(extract_int(dim)?).py()?)
    }

    /// Removes size-1 dims (all, or the given one).
    #[pyo3(signature = (dim = None))]
    fn squeeze(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyTensor>> {
        let out = match dim.filter(|d| !d.is_none()) {
            None => self.var.squeeze(),
            Some(d) => self.var.squeeze_dim(extract_int(d)?),
        };
        new_tensor(py, out.py()?)
    }
}
