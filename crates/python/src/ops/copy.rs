//! `Tensor` methods for copies and dtype conversions (`clone`, `contiguous`, `float`,
//! `double`, `half`, `bfloat16`, `long`, `int`, `short`, `char`, `byte`, `bool`): the binding of `rustgrad::ops::copy`.

use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::DType;

/// `t.float()` and the like: `t` itself when it has `dtype` already (as PyTorch), else a
/// converted copy (differentiable between float dtypes).
pub(super) fn convert_dtype(slf: Bound<'_, PyTensor>, dtype: DType) -> PyResult<Bound<'_, PyAny>> {
    let v = &slf.get().var;
    if v.dtype() == dtype {
        return Ok(slf.into_any());
    }
    Ok(new_tensor(slf.py(), v.to_dtype(dtype).py()?)?
        .into_bound(slf.py())
        .into_any())
}

#[pymethods]
impl PyTensor {
    /// A contiguous tensor (self when already contiguous).
    fn contiguous(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let v = &slf.get().var;
        if v.tensor().is_contiguous() {
            return Ok(slf.into_any());
        }
        Ok(new_tensor(slf.py(), v.contiguous().py()?)?
            .into_bound(slf.py())
            .into_any())
    }

    /// `clone()`: a copy with its own storage (differentiable). As PyTorch's default
    /// `memory_format=torch.preserve_format`, a dense tensor keeps its strides.
    fn clone(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.clone_preserving_strides().py()?)
    }
}
