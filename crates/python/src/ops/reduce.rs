//! `Tensor` methods for reductions, scans and sorts (`sum`, `mean`, `max`, `amax`,
//! `argmax`, `softmax`, `logsumexp`, `prod`, `var`, `std`, `cumsum`, `cumprod`, `norm`,
//! `nansum`, `nanmean`, `all`, `any`, `count_nonzero`, `median`, `topk`, `sort`,
//! `argsort`, `unique`): the binding of `rustgrad::ops::reduce`. Ops that return values
//! and indices return `rustgrad.return_types.<op>` named tuples, as PyTorch's.

use crate::convert::{extract_dims, extract_int, extract_scalar};
use crate::dtype::extract_opt_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::maybe_detach;
use crate::tensor::new_tensor;
use crate::PyTensor;
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple};
use rustgrad::{Result, Variable};

/// `rustgrad.return_types.<name>(values, indices)`.
fn return_type(py: Python<'_>, name: &str, pair: (Variable, Variable)) -> PyResult<Py<PyAny>> {
    let (values, indices) = pair;
    let values = new_tensor(py, values)?;
    let indices = new_tensor(py, indices)?;
    let class = py.import("rustgrad.return_types")?.getattr(name)?;
    Ok(class.call1(((values, indices),))?.unbind())
}

impl PyTensor {
    /// `self`, converted first when a `dtype=` is given.
    fn with_dtype(&self, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Variable> {
        Ok(match extract_opt_dtype(dtype)? {
            Some(d) => self.var.to_dtype(d).py()?,
            None => self.var.clone(),
        })
    }

    /// Runs `f` on `src` (without the GIL when large) and wraps the result.
    fn run(
        py: Python<'_>,
        src: &Variable,
        f: impl FnOnce(&Variable) -> Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let out = maybe_detach(py, src.numel(), || f(src));
        new_tensor(py, out.py()?)
    }

    /// A reduction over `dim` (an int, a tuple, or every dim when absent), in `dtype`
    /// when given: the shell of `sum`, `mean`, `amax`, `all`, ... (Note [Op registry]).
    pub(super) fn reduce_dims(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Variable, Option<&[i64]>, bool) -> Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let dims = extract_dims(dim)?;
        let src = self.with_dtype(dtype)?;
        Self::run(py, &src, |v| f(v, dims.as_deref(), keepdim))
    }

    /// A reduction along one optional `dim` (`argmax`, `prod`, ...), in `dtype` when
    /// given.
    pub(super) fn reduce_opt_dim(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Variable, Option<i64>, bool) -> Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let dim = dim.filter(|d| !d.is_none()).map(extract_int).transpose()?;
        let src = self.with_dtype(dtype)?;
        Self::run(py, &src, |v| f(v, dim, keepdim))
    }

    /// An op along one required `dim` (`softmax`, `cumsum`, ...), in `dtype` when given.
    pub(super) fn along_dim(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Variable, i64) -> Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let dim = extract_int(dim)?;
        let src = self.with_dtype(dtype)?;
        Self::run(py, &src, |v| f(v, dim))
    }

    /// `var` / `std` with PyTorch's three overloads (see [`correction_of`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn corrected(
        &self,
        py: Python<'_>,
        name: &str,
        dim: Option<&Bound<'_, PyAny>>,
        unbiased: Option<bool>,
        keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Variable, Option<&[i64]>, f64, bool) -> Result<Variable> + Send,
    ) -> PyResult<Py<PyTensor>> {
        let (dims, c) = correction_of(name, dim, unbiased, correction)?;
        Self::run(py, &self.var, |v| f(v, dims.as_deref(), c, keepdim))
    }

    /// `max()` / `max(dim, keepdim)` and the same for `min`.
    pub(super) fn extremum(
        &self,
        py: Python<'_>,
        name: &str,
        dim: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        let max = name == "max";
        match dim {
            // `max(other)` / `min(other)`: PyTorch's elementwise `maximum` / `minimum`.
            Some(d) if d.cast::<PyTensor>().is_ok() => {
                let other = d.cast::<PyTensor>()?.get().var.clone();
                let src = &self.var;
                let out = maybe_detach(py, src.numel().max(other.numel()), || {
                    if max {
                        src.maximum(&other)
                    } else {
                        src.minimum(&other)
                    }
                })
                .py()?;
                Ok(new_tensor(py, out)?.into_any())
            }
            Some(d) if !d.is_none() => {
                let dim = extract_int(d)?;
                let src = &self.var;
                let pair = maybe_detach(py, src.numel(), || {
                    if max {
                        src.max_dim(dim, keepdim)
                    } else {
                        src.min_dim(dim, keepdim)
                    }
                })
                .py()?;
                return_type(py, name, pair)
            }
            _ => {
                let out = Self::run(py, &self.var, |v| if max { v.max() } else { v.min() })?;
                Ok(out.into_any())
            }
        }
    }
}

/// `sum` / `mean`: of every element (`whole`) with no dims, else over `dims` (`over`);
/// `sum(None, keepdim=True)` keeps every dim as size 1, as PyTorch's.
pub(super) fn whole_or_dims(
    v: &Variable,
    dims: Option<&[i64]>,
    keepdim: bool,
    whole: fn(&Variable) -> Result<Variable>,
    over: fn(&Variable, &[i64], bool) -> Result<Variable>,
) -> Result<Variable> {
    match dims {
        None if !keepdim => whole(v),
        None => over(v, &[], true),
        Some(d) => over(v, d, keepdim),
    }
}

/// `var`/`std`'s correction from PyTorch's overloads: `(dim, unbiased, keepdim)`,
/// `(unbiased)` and `(dim, *, correction, keepdim)`.
fn correction_of(
    name: &str,
    dim: Option<&Bound<'_, PyAny>>,
    unbiased: Option<bool>,
    correction: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Option<Vec<i64>>, f64)> {
    let (dim, unbiased) = match dim {
        Some(d) if d.is_instance_of::<PyBool>() => {
            if unbiased.is_some() {
                return Err(PyTypeError::new_err(format!(
                    "{name}() received an invalid combination of arguments"
                )));
            }
            (None, Some(d.extract::<bool>()?))
        }
        other => (extract_dims(other)?, unbiased),
    };
    let correction = match (unbiased, correction) {
        (Some(_), Some(c)) if !c.is_none() => {
            return Err(PyTypeError::new_err(format!(
                "{name}() received an invalid combination of arguments - got both unbiased and correction"
            )))
        }
        (Some(u), _) => u as u8 as f64,
        (None, Some(c)) if !c.is_none() => extract_scalar(c)?
            .filter(|s| !matches!(s, rustgrad::Scalar::Bool(_)))
            .ok_or_else(|| {
                PyTypeError::new_err(format!(
                    "{name}(): argument 'correction' must be Number, not {}",
                    c.get_type().name().map(|n| n.to_string()).unwrap_or_default()
                ))
            })?
            .to_f64(),
        _ => 1.0,
    };
    Ok((dim, correction))
}

/// A dim that defaults to -1 (the last).
fn last_dim_default(dim: Option<&Bound<'_, PyAny>>) -> PyResult<i64> {
    dim.filter(|d| !d.is_none()).map_or(Ok(-1), extract_int)
}

/// A norm order: a number, or `'fro'` (the 2-norm of the flattened dims).
fn norm_order(p: Option<&Bound<'_, PyAny>>) -> PyResult<f64> {
    match p {
        None => Ok(2.0),
        Some(p) if p.is_none() => Ok(2.0),
        Some(p) if p.is_instance_of::<PyString>() => match p.extract::<String>()?.as_str() {
            "fro" => Ok(2.0),
            other => Err(PyRuntimeError::new_err(format!(
                "rustgrad: the matrix norm {other:?} is not implemented (only vector norms)"
            ))),
        },
        Some(p) => match extract_scalar(p)? {
            Some(rustgrad::Scalar::Bool(_)) | None => Err(PyTypeError::new_err(format!(
                "norm(): argument 'p' must be Number, not {}",
                p.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))),
            Some(s) => Ok(s.to_f64()),
        },
    }
}

#[pymethods]
impl PyTensor {
    /// `log(sum(exp(x)))` over `dim` (int or tuple), computed stably.
    #[pyo3(signature = (dim, keepdim = false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = crate::flag::logsumexp_keepdim)] keepdim: bool,
    ) -> PyResult<Py<PyTensor>> {
        let dims = extract_dims(Some(dim))?.unwrap_or_default();
        Self::run(py, &self.var, |v| v.logsumexp(&dims, keepdim))
    }

    /// `(var, mean)`, or `(std, mean)` when `std`, over `dim`: the two outputs of one
    /// VarMeanBackward0 / StdMeanBackward0 node (`rustgrad.var_mean` / `std_mean`).
    #[pyo3(signature = (dim = None, unbiased = None, keepdim = false, *, correction = None, std = false))]
    fn _var_mean(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::var_mean_unbiased)] unbiased: Option<bool>,
        #[pyo3(from_py_with = crate::flag::var_mean_keepdim_overloaded)] keepdim: bool,
        correction: Option<&Bound<'_, PyAny>>,
        std: bool,
    ) -> PyResult<Py<PyTuple>> {
        let (dims, c) = correction_of(if std { "std" } else { "var" }, dim, unbiased, correction)?;
        let (a, b) = maybe_detach(py, self.var.numel(), || {
            if std {
                self.var.std_mean(dims.as_deref(), c, keepdim)
            } else {
                self.var.var_mean(dims.as_deref(), c, keepdim)
            }
        })
        .py()?;
        Ok(PyTuple::new(py, [new_tensor(py, a)?, new_tensor(py, b)?])?.unbind())
    }

    /// The vector `p`-norm over `dim` (`'fro'` is the 2-norm).
    #[pyo3(signature = (p = None, dim = None, keepdim = false, dtype = None))]
    fn norm(
        &self,
        py: Python<'_>,
        p: Option<&Bound<'_, PyAny>>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::norm_keepdim)] keepdim: bool,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let ord = norm_order(p)?;
        let dims = extract_dims(dim)?;
        Self::run(py, &self.with_dtype(dtype)?, |v| {
            v.vector_norm(ord, dims.as_deref(), keepdim)
        })
    }

    /// The number of nonzero elements (over `dim`).
    #[pyo3(signature = (dim = None))]
    fn count_nonzero(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let dims = extract_dims(dim)?;
        Self::run(py, &self.var, |v| v.count_nonzero(dims.as_deref()))
    }

    /// `median()`: the lower median; `median(dim, keepdim)`: `(values, indices)`.
    #[pyo3(signature = (dim = None, keepdim = false))]
    fn median(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::median_keepdim)] keepdim: bool,
    ) -> PyResult<Py<PyAny>> {
        match dim.filter(|d| !d.is_none()) {
            None => Ok(Self::run(py, &self.var, Variable::median)?.into_any()),
            Some(d) => {
                let dim = extract_int(d)?;
                let src = &self.var;
                let pair = maybe_detach(py, src.numel(), || src.median_dim(dim, keepdim)).py()?;
                return_type(py, "median", pair)
            }
        }
    }

    /// The `k` largest (or smallest) elements along `dim`: `(values, indices)`, sorted.
    #[pyo3(signature = (k, dim = None, largest = true, sorted = true))]
    fn topk(
        &self,
        py: Python<'_>,
        k: &Bound<'_, PyAny>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::topk_largest)] largest: bool,
        #[pyo3(from_py_with = crate::flag::topk_sorted)] sorted: bool,
    ) -> PyResult<Py<PyAny>> {
        // Unsorted results may come in any order: these come sorted.
        let _ = sorted;
        let (k, dim) = (extract_int(k)?, last_dim_default(dim)?);
        let src = &self.var;
        let pair = maybe_detach(py, src.numel(), || src.topk(k, dim, largest)).py()?;
        return_type(py, "topk", pair)
    }

    /// Sorts along `dim`: `(values, indices)`. The sort is always stable.
    #[pyo3(signature = (dim = None, descending = false, *, stable = false))]
    fn sort(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::sort_descending)] descending: bool,
        #[pyo3(from_py_with = crate::flag::sort_stable)] stable: bool,
    ) -> PyResult<Py<PyAny>> {
        let _ = stable;
        let dim = last_dim_default(dim)?;
        let src = &self.var;
        let pair = maybe_detach(py, src.numel(), || src.sort(dim, descending)).py()?;
        return_type(py, "sort", pair)
    }

    /// The indices that sort along `dim` (stable).
    #[pyo3(signature = (dim = None, descending = false, stable = false))]
    fn argsort(
        &self,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
        #[pyo3(from_py_with = crate::flag::argsort_descending)] descending: bool,
        #[pyo3(from_py_with = crate::flag::argsort_stable)] stable: bool,
    ) -> PyResult<Py<PyTensor>> {
        let _ = stable;
        let dim = last_dim_default(dim)?;
        Self::run(py, &self.var, |v| v.argsort(dim, descending))
    }

    /// The sorted distinct elements, with `inverse` indices and `counts` on request.
    #[pyo3(signature = (sorted = true, return_inverse = false, return_counts = false, dim = None))]
    fn unique(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::flag::unique_sorted)] sorted: bool,
        #[pyo3(from_py_with = crate::flag::unique_return_inverse)] return_inverse: bool,
        #[pyo3(from_py_with = crate::flag::unique_return_counts)] return_counts: bool,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        // PyTorch's CPU unique sorts whatever `sorted` says.
        let _ = sorted;
        if dim.is_some_and(|d| !d.is_none()) {
            return Err(PyNotImplementedError::new_err(
                "rustgrad: unique(dim=...) is not implemented",
            ));
        }
        let src = &self.var;
        let (values, inverse, counts) = maybe_detach(py, src.numel(), || src.unique()).py()?;
        let values = new_tensor(py, values)?.into_any();
        if !return_inverse && !return_counts {
            return Ok(values);
        }
        let mut items = vec![values];
        if return_inverse {
            items.push(new_tensor(py, inverse)?.into_any());
        }
        if return_counts {
            items.push(new_tensor(py, counts)?.into_any());
        }
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }
}
