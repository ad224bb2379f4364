//! `Tensor` methods for reductions (`sum`, `mean`): the binding of
//! `rustgrad::ops::reduce`.

use crate::convert::extract_dims;
use crate::dtype::extract_opt_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::prelude::*;

#[pymethods]
impl PyTensor {
    /// Sum of all elements, or over `dim` (int or tuple), keeping dims if `keepdim`.
    #[pyo3(signature = (dim = None, keepdim = false, *, dtype = None))]
    fn sum(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let src = match extract_opt_dtype(dtype)? {
            Some(d) => self.var.to_dtype(d).py()?,
            None => self.var.clone(),
        };
        let dims = extract_dims(dim)?;
        let out = maybe_detach(py, src.numel(), || match &dims {
            None => src.sum(),
            Some(d) => src.sum_dims(d, keepdim),
        });
        new_tensor(py, out.py()?)
    }

    /// Mean of all elements, or over `dim`.
    #[pyo3(signature = (dim = None, keepdim = false, *, dtype = None))]
    fn mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let src = match extract_opt_dtype(dtype)? {
            Some(d) => self.var.to_dtype(d).py()?,
            None => self.var.clone(),
        };
        let dims = extract_dims(dim)?;
        let out = maybe_detach(py, src.numel(), || match &dims {
            None => src.mean(),
            Some(d) => src.mean_dims(d, keepdim),
        });
        new_tensor(py, out.py()?)
    }
}
