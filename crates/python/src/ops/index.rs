//! `Tensor` methods for indexing: `t[...]` and `t[...] = v`, with the parser of Python
//! indices: the binding of `rustgrad::ops::index`.

use crate::convert::extract_int;
use crate::errors::IntoPyResult;
use crate::tensor::mark_python_site;
use crate::tensor::new_tensor;
use crate::tensor::operand_var;
use crate::PyTensor;
use pyo3::exceptions::{PyIndexError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyEllipsis, PySlice, PyTuple};
use rustgrad::{DType, Scalar, Variable};

#[pymethods]
impl PyTensor {
    /// Indexing: ints, slices, None, Ellipsis, bools, 0-d or one-element integer
    /// tensors, or tuples of them.
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let (view, copy) = index_variable(&self.var, index)?;
        let out = if copy { view.clone_data().py()? } else { view };
        new_tensor(py, out)
    }

    /// `x[index] = value`: copies into the indexed view.
    fn __setitem__(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let (view, _) = index_variable(&self.var, index)?;
        let src = operand_var(value, &view)?;
        view.copy_(&src).py()?;
        mark_python_site(py, &view);
        Ok(())
    }
}

/// One parsed item of a Python index.
enum IndexItem {
    /// `None`: a new dim of size 1.
    NewAxis,
    /// `...`
    Ellipsis,
    /// `start:stop:step`
    Slice(Option<i64>, Option<i64>, i64),
    /// An int or a 0-d integer tensor: selects, removing the dim.
    Int(i64),
    /// A Python bool or a 0-d bool tensor: PyTorch's mask over a new dim of size 1
    /// (`x[True]` adds a dim of size 1, `x[False]` one of size 0).
    Mask(bool),
    /// A one-element 1-d integer tensor: keeps the dim, with size 1.
    Tensor1(i64),
}

impl IndexItem {
    /// Whether the item indexes a dim of the tensor (None, `...` and masks do not).
    fn consumes(&self) -> bool {
        matches!(
            self,
            IndexItem::Slice(..) | IndexItem::Int(_) | IndexItem::Tensor1(_)
        )
    }

    /// Whether PyTorch treats the item as advanced indexing (the result is a copy).
    fn advanced(&self) -> bool {
        matches!(self, IndexItem::Mask(_) | IndexItem::Tensor1(_))
    }

    fn parse(item: &Bound<'_, PyAny>) -> PyResult<IndexItem> {
        if item.is_none() {
            return Ok(IndexItem::NewAxis);
        }
        if item.is_instance_of::<PyEllipsis>() {
            return Ok(IndexItem::Ellipsis);
        }
        if let Ok(s) = item.cast::<PySlice>() {
            let start = opt_index(&s.getattr("start")?)?;
            let stop = opt_index(&s.getattr("stop")?)?;
            let step = opt_index(&s.getattr("step")?)?.unwrap_or(1);
            if step <= 0 {
                return Err(PyValueError::new_err("step must be greater than zero"));
            }
            return Ok(IndexItem::Slice(start, stop, step));
        }
        if item.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(IndexItem::Mask(item.extract::<bool>()?));
        }
        if let Ok(t) = item.cast::<PyTensor>() {
            let t = &t.get().var;
            return match (t.dtype(), t.dim(), t.numel()) {
                (DType::F32 | DType::F64, _, _) => Err(PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                )),
                (DType::Bool, 0, _) => Ok(IndexItem::Mask(t.item().py()? == Scalar::Bool(true))),
                (DType::I64, 0, _) => match t.item().py()? {
                    Scalar::Int(i) => Ok(IndexItem::Int(i)),
                    _ => Err(PyRuntimeError::new_err("rustgrad internal error: int tensor item")),
                },
                (DType::I64, 1, 1) => match t.item().py()? {
                    Scalar::Int(i) => Ok(IndexItem::Tensor1(i)),
                    _ => Err(PyRuntimeError::new_err("rustgrad internal error: int tensor item")),
                },
                _ => Err(PyRuntimeError::new_err(
                    "rustgrad does not support advanced indexing with index tensors of several elements or bool mask tensors yet",
                )),
            };
        }
        if let Ok(i) = extract_int(item) {
            return Ok(IndexItem::Int(i));
        }
        Err(PyIndexError::new_err(format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
            item.get_type().name()?
        )))
    }
}

/// Applies a Python index (int, slice, None, Ellipsis, bool, a 0-d or one-element
/// integer tensor, or a tuple of them) as views of `var`. The flag says whether PyTorch
/// would return a copy (advanced indexing): `__getitem__` then copies, while
/// `__setitem__` writes through the view.
pub fn index_variable(var: &Variable, index: &Bound<'_, PyAny>) -> PyResult<(Variable, bool)> {
    let items: Vec<IndexItem> = match index.cast::<PyTuple>() {
        Ok(t) => t
            .iter()
            .map(|i| IndexItem::parse(&i))
            .collect::<PyResult<_>>()?,
        Err(_) => vec![IndexItem::parse(index)?],
    };
    let nd = var.dim();
    let used = items.iter().filter(|i| i.consumes()).count();
    if used > 0 && nd == 0 {
        return Err(PyIndexError::new_err(
            "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` in C++ to convert a 0-dim tensor to a number",
        ));
    }
    if used > nd {
        return Err(PyIndexError::new_err(format!(
            "too many indices for tensor of dimension {nd}"
        )));
    }
    let advanced = items.iter().filter(|i| i.advanced()).count();
    if advanced > 1 {
        return Err(PyRuntimeError::new_err(
            "rustgrad does not support combining several bool or tensor indices (advanced indexing) yet",
        ));
    }
    let mut out = var.clone();
    // `dim` is the dim of `out` the next item applies to; `source_dim` the dim of `var`
    // (for messages: selecting removes dims from `out`).
    let mut dim: i64 = 0;
    let mut source_dim: usize = 0;
    let mut seen_ellipsis = false;
    let bounded = |out: &Variable, dim: i64, i: i64, source_dim: usize| -> PyResult<i64> {
        let size = out.shape()[dim as usize] as i64;
        if i >= size || i < -size {
            return Err(PyIndexError::new_err(format!(
                "index {i} is out of bounds for dimension {source_dim} with size {size}"
            )));
        }
        Ok(if i < 0 { i + size } else { i })
    };
    for item in &items {
        match *item {
            IndexItem::NewAxis => {
                out = out.unsqueeze(dim).py()?;
                dim += 1;
            }
            IndexItem::Mask(keep) => {
                out = out.unsqueeze(dim).py()?;
                out = out.slice(dim, Some(0), Some(keep as i64), 1).py()?;
                dim += 1;
            }
            IndexItem::Ellipsis => {
                if seen_ellipsis {
                    return Err(PyIndexError::new_err(
                        "an index can only have a single ellipsis ('...')",
                    ));
                }
                seen_ellipsis = true;
                dim += (nd - used) as i64;
                source_dim += nd - used;
            }
            IndexItem::Slice(start, stop, step) => {
                out = out.slice(dim, start, stop, step).py()?;
                dim += 1;
                source_dim += 1;
            }
            IndexItem::Int(i) => {
                let i = bounded(&out, dim, i, source_dim)?;
                out = out.select(dim, i).py()?;
                source_dim += 1;
            }
            IndexItem::Tensor1(i) => {
                let i = bounded(&out, dim, i, source_dim)?;
                out = out.slice(dim, Some(i), Some(i + 1), 1).py()?;
                dim += 1;
                source_dim += 1;
            }
        }
    }
    if out.same(var) {
        // `x[...]` / `x[()]` is a new view of the whole tensor, never `x` itself.
        out = var.alias();
    }
    Ok((out, advanced > 0))
}

fn opt_index(obj: &Bound<'_, PyAny>) -> PyResult<Option<i64>> {
    if obj.is_none() {
        Ok(None)
    } else {
        extract_int(obj).map(Some)
    }
}
