//! `Tensor` methods for copies and dtype conversions (`clone`, `contiguous`, `float`,
//! `double`, `half`, `bfloat16`, `long`, `int`, `short`, `char`, `byte`, `bool`): the binding of `rustgrad::ops::copy`.

use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::DType;

/// `t.float()` and the like: `t` itself when it has `dtype` already (as PyTorch), else a
/// converted copy (differentiable between float dtypes).
fn convert_dtype(slf: Bound<'_, PyTensor>, dtype: DType) -> PyResult<Bound<'_, PyAny>> {
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
    /// Converts to float32 (the tensor itself when it is float32 already).
    fn float(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::F32)
    }

    /// Converts to float64 (the tensor itself when it is float64 already).
    fn double(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::F64)
    }

    /// Converts to int64 (the tensor itself when it is int64 already).
    fn long(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::I64)
    }

    /// Converts to int32 (the tensor itself when it is int32 already).
    fn int(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::I32)
    }

    /// Converts to int16 (the tensor itself when it is int16 already).
    fn short(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::I16)
    }

    /// Converts to int8 (the tensor itself when it is int8 already).
    fn char(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::I8)
    }

    /// Converts to uint8 (the tensor itself when it is uint8 already).
    fn byte(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::U8)
    }

    /// Converts to float16, rounding to nearest even (the tensor itself when it is
    /// float16 already; differentiable).
    fn half(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::F16)
    }

    /// Converts to bfloat16, rounding to nearest even (the tensor itself when it is
    /// bfloat16 already; differentiable).
    fn bfloat16(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::BF16)
    }

    /// Converts to bool (the tensor itself when it is bool already).
    fn bool(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        convert_dtype(slf, DType::Bool)
    }

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
