//! `Tensor` methods for shape and movement ops (`view`, `reshape`, `transpose`,
//! `permute`, `expand`, ...): the binding of `rustgrad::ops::shape`.

use crate::convert::{extract_dims, extract_int, extract_sizes};
use crate::dtype::extract_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::new_tensor;
use crate::tensor::written;
use crate::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustgrad::{Result, Squeeze, Variable};

impl PyTensor {
    /// A view with sizes given as varargs or one sequence (`reshape(2, 3)`,
    /// `reshape((2, 3))`): the shell of `reshape`, `permute`, `expand`.
    pub(super) fn sizes_view(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        sizes: &Bound<'_, PyTuple>,
        f: impl FnOnce(&Variable, &[i64]) -> Result<Variable>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        new_tensor(py, f(&this.var, &extract_sizes(sizes)?).py()?)
    }

    /// A copy made with sizes given as varargs or one sequence (`flip`, `repeat`).
    pub(super) fn with_sizes(
        &self,
        py: Python<'_>,
        sizes: &Bound<'_, PyTuple>,
        f: impl FnOnce(&Variable, &[i64]) -> Result<Variable>,
    ) -> PyResult<Py<PyTensor>> {
        new_tensor(py, f(&self.var, &extract_sizes(sizes)?).py()?)
    }

    /// `tril` / `triu` (`upper`) above or below diagonal `diagonal` (0 when absent).
    pub(super) fn triangle(
        &self,
        py: Python<'_>,
        diagonal: Option<&Bound<'_, PyAny>>,
        upper: bool,
    ) -> PyResult<Py<PyTensor>> {
        let k = diagonal.map(extract_int).transpose()?.unwrap_or(0);
        new_tensor(py, self.var.tril_triu(k, upper).py()?)
    }

    /// `tril_` / `triu_`.
    pub(super) fn triangle_<'py>(
        slf: Bound<'py, Self>,
        diagonal: Option<&Bound<'py, PyAny>>,
        upper: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let k = diagonal.map(extract_int).transpose()?.unwrap_or(0);
        written(slf, |_, v| {
            v.in_place_with(None, |s| s.tril_triu(k, upper)).py()
        })
    }
}

#[pymethods]
impl PyTensor {
    /// A view with another shape (`view(2, 3)` or `view((2, 3))`); one size may be -1.
    #[pyo3(signature = (*shape))]
    fn view(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        shape: &Bound<'_, PyTuple>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        if shape.len() == 1 {
            if let Ok(d) = extract_dtype(&shape.get_item(0)?) {
                if d != this.var.dtype() {
                    return Err(PyRuntimeError::new_err(
                        "view(dtype) reinterpretation is not supported by rustgrad",
                    ));
                }
                // PyTorch 2.x: a distinct alias without autograd history (not `self`).
                return new_tensor(py, this.var.detach());
            }
        }
        new_tensor(py, this.var.view(&extract_sizes(shape)?).py()?)
    }

    /// Swaps two dims.
    fn transpose(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim0: &Bound<'_, PyAny>,
        dim1: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let (d0, d1) = (extract_int(dim0)?, extract_int(dim1)?);
        new_tensor(py, this.var.transpose(d0, d1).py()?)
    }

    /// Merges dims `start_dim..=end_dim` into one (a view when possible).
    #[pyo3(signature = (start_dim = None, end_dim = None))]
    fn flatten(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        start_dim: Option<&Bound<'_, PyAny>>,
        end_dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let start = start_dim.map(extract_int).transpose()?.unwrap_or(0);
        let end = end_dim.map(extract_int).transpose()?.unwrap_or(-1);
        let nd = this.var.dim();
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
            return new_tensor(py, this.var.reshape(&[1]).py()?);
        }
        let shape = this.var.shape();
        let mut target: Vec<i64> = shape[..s].iter().map(|&d| d as i64).collect();
        target.push(shape[s..=e].iter().product::<usize>() as i64);
        target.extend(shape[e + 1..].iter().map(|&d| d as i64));
        new_tensor(py, this.var.reshape(&target).py()?)
    }

    /// Transpose of a <= 2-D tensor.
    fn t(slf: &Bound<'_, Self>, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        new_tensor(py, this.var.t().py()?)
    }

    /// Inserts a size-1 dim.
    fn unsqueeze(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        new_tensor(py, this.var.unsqueeze(extract_int(dim)?).py()?)
    }

    /// Removes size-1 dims (all, the given one, or those of a tuple of dims).
    #[pyo3(signature = (dim = None))]
    fn squeeze(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let out = match squeeze_dims(dim)? {
            None => this.var.squeeze(),
            Some(SqueezeDims::One(d)) => this.var.squeeze_dim(d),
            Some(SqueezeDims::Many(dims)) => this.var.squeeze_dims(&dims),
        };
        new_tensor(py, out.py()?)
    }

    /// `squeeze` in place: this tensor's shape loses the size-1 dims.
    #[pyo3(signature = (dim = None))]
    fn squeeze_<'py>(
        slf: Bound<'py, Self>,
        dim: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let dims = squeeze_dims(dim)?;
        written(slf, |_, v| {
            match &dims {
                None => v.squeeze_(Squeeze::All),
                Some(SqueezeDims::One(d)) => v.squeeze_(Squeeze::Dim(*d)),
                Some(SqueezeDims::Many(ds)) => v.squeeze_(Squeeze::Dims(ds)),
            }
            .py()
        })
    }

    /// `unsqueeze` in place.
    fn unsqueeze_<'py>(
        slf: Bound<'py, Self>,
        dim: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let d = extract_int(dim)?;
        written(slf, |_, v| v.unsqueeze_(d).py())
    }

    /// `transpose` in place.
    fn transpose_<'py>(
        slf: Bound<'py, Self>,
        dim0: &Bound<'py, PyAny>,
        dim1: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        let (d0, d1) = (extract_int(dim0)?, extract_int(dim1)?);
        written(slf, |_, v| v.transpose_(d0, d1).py())
    }

    /// `t` in place (at most 2 dims).
    fn t_(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        written(slf, |_, v| v.t_().py())
    }
}

/// The `dim` argument of `squeeze`: none, one dim, or a tuple/list of dims.
enum SqueezeDims {
    One(i64),
    Many(Vec<i64>),
}

fn squeeze_dims(dim: Option<&Bound<'_, PyAny>>) -> PyResult<Option<SqueezeDims>> {
    let Some(d) = dim.filter(|d| !d.is_none()) else {
        return Ok(None);
    };
    if d.is_instance_of::<PyTuple>() || d.is_instance_of::<pyo3::types::PyList>() {
        let dims = d
            .try_iter()?
            .map(|x| extract_int(&x?))
            .collect::<PyResult<Vec<i64>>>()?;
        return Ok(Some(SqueezeDims::Many(dims)));
    }
    Ok(Some(SqueezeDims::One(extract_int(d)?)))
}

/// A Python tuple of new tensors.
fn tuple_of(py: Python<'_>, vars: Vec<rustgrad::Variable>) -> PyResult<Py<PyTuple>> {
    let items = vars
        .into_iter()
        .map(|v| new_tensor(py, v))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

/// The variables of a sequence of tensors (`cat`, `stack`).
fn tensor_list(tensors: &Bound<'_, PyAny>, op: &str) -> PyResult<Vec<rustgrad::Variable>> {
    let seq = tensors.cast::<pyo3::types::PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{op}(): argument 'tensors' must be tuple of Tensors, not {}",
            tensors
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    (0..seq.len()?)
        .map(|i| {
            let item = seq.get_item(i)?;
            item.cast::<PyTensor>()
                .map(|t| t.get().var.clone())
                .map_err(|_| {
                    PyTypeError::new_err(format!(
                        "expected Tensor as element {i} in argument 0, but got {}",
                        item.get_type()
                            .name()
                            .map(|n| n.to_string())
                            .unwrap_or_default()
                    ))
                })
        })
        .collect()
}

#[pymethods]
impl PyTensor {
    /// `cat(tensors, dim)`: the engine's concatenation (`rustgrad.cat` wraps it).
    #[staticmethod]
    fn _cat(
        py: Python<'_>,
        tensors: &Bound<'_, PyAny>,
        dim: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let vars = tensor_list(tensors, "cat")?;
        new_tensor(py, rustgrad::Variable::cat(&vars, extract_int(dim)?).py()?)
    }

    /// `stack(tensors, dim)` (`rustgrad.stack` wraps it).
    #[staticmethod]
    fn _stack(
        py: Python<'_>,
        tensors: &Bound<'_, PyAny>,
        dim: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let vars = tensor_list(tensors, "stack")?;
        new_tensor(
            py,
            rustgrad::Variable::stack(&vars, extract_int(dim)?).py()?,
        )
    }

    /// Pieces of `split_size` (an int) or of the given sizes (a list) along `dim`.
    #[pyo3(signature = (split_size_or_sections, dim = None))]
    fn split(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        split_size_or_sections: &Bound<'_, PyAny>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTuple>> {
        let this = crate::tensor::viewed(slf)?;
        let d = dim.map(extract_int).transpose()?.unwrap_or(0);
        let parts = match extract_int(split_size_or_sections) {
            Ok(size) => this.var.split(size, d),
            Err(_) => {
                let sizes = extract_dims(Some(split_size_or_sections))?.unwrap_or_default();
                this.var.split_with_sizes(&sizes, d)
            }
        };
        tuple_of(py, parts.py()?)
    }

    /// Pieces of the given sizes along `dim`.
    #[pyo3(signature = (split_sizes, dim = None))]
    fn split_with_sizes(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        split_sizes: &Bound<'_, PyAny>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTuple>> {
        let this = crate::tensor::viewed(slf)?;
        let d = dim.map(extract_int).transpose()?.unwrap_or(0);
        let sizes = extract_dims(Some(split_sizes))?.unwrap_or_default();
        tuple_of(py, this.var.split_with_sizes(&sizes, d).py()?)
    }

    /// `chunks` pieces of equal size along `dim`.
    #[pyo3(signature = (chunks, dim = None))]
    fn chunk(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        chunks: &Bound<'_, PyAny>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTuple>> {
        let this = crate::tensor::viewed(slf)?;
        let d = dim.map(extract_int).transpose()?.unwrap_or(0);
        tuple_of(py, this.var.chunk(extract_int(chunks)?, d).py()?)
    }

    /// The slices along `dim`, with the dim removed.
    #[pyo3(signature = (dim = None))]
    fn unbind(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTuple>> {
        let this = crate::tensor::viewed(slf)?;
        let d = dim.map(extract_int).transpose()?.unwrap_or(0);
        tuple_of(py, this.var.unbind(d).py()?)
    }

    /// `length` elements of `dim` from `start` (a view).
    fn narrow(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        start: &Bound<'_, PyAny>,
        length: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let out = this
            .var
            .narrow(extract_int(dim)?, extract_int(start)?, extract_int(length)?);
        new_tensor(py, out.py()?)
    }

    /// `self[..., index, ...]` along `dim` (a view without that dim).
    fn select(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let d = rustgrad::shape::wrap_dim_strict(extract_int(dim)?, this.var.dim()).py()?;
        let size = this.var.shape()[d] as i64;
        let i = extract_int(index)?;
        if i < -size || i >= size {
            return Err(pyo3::exceptions::PyIndexError::new_err(format!(
                "select(): index {i} out of range for tensor of size {:?} at dimension {d}",
                this.var.shape().as_slice()
            )));
        }
        new_tensor(py, this.var.select(d as i64, i).py()?)
    }

    /// Rolls elements by `shifts` along `dims` (of the flattened tensor without dims).
    #[pyo3(signature = (shifts, dims = None))]
    fn roll(
        &self,
        py: Python<'_>,
        shifts: &Bound<'_, PyAny>,
        dims: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let s = extract_dims(Some(shifts))?.unwrap_or_default();
        let d = extract_dims(dims)?.unwrap_or_default();
        new_tensor(py, self.var.roll(&s, &d).py()?)
    }

    /// `repeat` with the sizes padded with leading 1s to the tensor's dims.
    #[pyo3(signature = (*dims))]
    fn tile(&self, py: Python<'_>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyTensor>> {
        let mut sizes = extract_sizes(dims)?;
        while sizes.len() < self.var.dim() {
            sizes.insert(0, 1);
        }
        new_tensor(py, self.var.repeat(&sizes).py()?)
    }

    /// The diagonal `offset` of dims `dim1`, `dim2` (a view; the diagonal is last).
    #[pyo3(signature = (offset = 0, dim1 = 0, dim2 = 1))]
    fn diagonal(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::convert::extract_int)] offset: i64,
        #[pyo3(from_py_with = crate::convert::extract_int)] dim1: i64,
        #[pyo3(from_py_with = crate::convert::extract_int)] dim2: i64,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        new_tensor(py, this.var.diagonal(offset, dim1, dim2).py()?)
    }

    /// A 1-d tensor as a diagonal matrix, or a matrix's diagonal.
    #[pyo3(signature = (diagonal = 0))]
    fn diag(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::convert::extract_int)] diagonal: i64,
    ) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.diag(diagonal).py()?)
    }

    /// Matrices (dims `dim1`, `dim2`) with the last dim on diagonal `offset`.
    #[pyo3(signature = (offset = 0, dim1 = -2, dim2 = -1))]
    fn diag_embed(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::convert::extract_int)] offset: i64,
        #[pyo3(from_py_with = crate::convert::extract_int)] dim1: i64,
        #[pyo3(from_py_with = crate::convert::extract_int)] dim2: i64,
    ) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.diag_embed(offset, dim1, dim2).py()?)
    }

    /// Moves dims `source` to `destination` (ints or sequences).
    fn movedim(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let s = extract_dims(Some(source))?.unwrap_or_default();
        let d = extract_dims(Some(destination))?.unwrap_or_default();
        new_tensor(py, this.var.movedim(&s, &d).py()?)
    }

    /// Alias of `movedim`.
    fn moveaxis(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        destination: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        Self::movedim(slf, py, source, destination)
    }

    /// Windows of `size` elements of `dimension`, `step` apart, as a new last dim.
    fn unfold(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        dimension: &Bound<'_, PyAny>,
        size: &Bound<'_, PyAny>,
        step: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let out = this.var.unfold(
            extract_int(dimension)?,
            extract_int(size)?,
            extract_int(step)?,
        );
        new_tensor(py, out.py()?)
    }

    /// Repeats each element `repeats` times (an int or a 1-d int64 tensor) along `dim`.
    #[pyo3(signature = (repeats, dim = None, *, output_size = None))]
    fn repeat_interleave(
        &self,
        py: Python<'_>,
        repeats: &Bound<'_, PyAny>,
        dim: Option<&Bound<'_, PyAny>>,
        output_size: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let _ = output_size;
        let r = match repeats.cast::<PyTensor>() {
            Ok(t) if t.get().var.dim() == 1 => {
                let t = t.get().var.tensor();
                if t.dtype() != rustgrad::DType::I64 {
                    return Err(PyRuntimeError::new_err(
                        "repeat_interleave: repeats has to be Long tensor",
                    ));
                }
                t.try_to_vec::<i64>().py()?
            }
            _ => vec![extract_int(repeats)?],
        };
        let d = dim.filter(|d| !d.is_none()).map(extract_int).transpose()?;
        new_tensor(py, self.var.repeat_interleave(&r, d).py()?)
    }
}
