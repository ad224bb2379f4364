//! In-place forms of ops whose out-of-place forms live in another family's binding
//! (`cumsum_`, `cumprod_`) and the in-place view ops (`t_`, `transpose_`,
//! `squeeze_`, ...). Pure aliases (`absolute`, `multiply`, `greater_`, ...) are added
//! in Python (`python/rustgrad/_forms.py`).

use crate::convert::extract_int;
use crate::dtype::extract_opt_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::maybe_detach;
use crate::tensor::written;
use crate::PyTensor;
use pyo3::prelude::*;
use rustgrad::{Result, Variable};

impl PyTensor {
    /// A scan (`cumsum` / `cumprod`) along `dim` written into `self`; with `dtype=`
    /// the scan runs in that dtype and is cast back (PyTorch's cast rules apply).
    fn scan_in_place<'py>(
        slf: Bound<'py, Self>,
        dim: &Bound<'py, PyAny>,
        dtype: Option<&Bound<'py, PyAny>>,
        scan: fn(&Variable, i64) -> Result<Variable>,
    ) -> PyResult<Bound<'py, Self>> {
        let dim = extract_int(dim)?;
        let dtype = extract_opt_dtype(dtype)?;
        written(slf, |py, v| {
            maybe_detach(py, v.numel(), || {
                v.in_place_with(None, |s| match dtype {
                    Some(d) => scan(&s.to_dtype(d)?, dim),
                    None => scan(s, dim),
                })
            })
            .py()
        })
    }
}

#[pymethods]
impl PyTensor {
    /// Running sums along `dim`, in place.
    #[pyo3(signature = (dim, *, dtype = None))]
    fn cumsum_<'py>(
        slf: Bound<'py, Self>,
        dim: &Bound<'py, PyAny>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::scan_in_place(slf, dim, dtype, Variable::cumsum)
    }

    /// Running products along `dim`, in place.
    #[pyo3(signature = (dim, *, dtype = None))]
    fn cumprod_<'py>(
        slf: Bound<'py, Self>,
        dim: &Bound<'py, PyAny>,
        dtype: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        Self::scan_in_place(slf, dim, dtype, Variable::cumprod)
    }
}
