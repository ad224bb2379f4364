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
    /// Indexing: ints, slices, None, Ellipsis, bools, 0-d integer tensors, or tuples of
    /// them, as views; an index with integer tensors, lists or bool masks (advanced
    /// indexing) goes to `rustgrad._shape._getitem_advanced`.
    fn __getitem__(slf: &Bound<'_, Self>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let index = &normalize_index(index)?;
        if has_advanced_item(index) {
            return Ok(advanced_hook(slf.py(), "_getitem_advanced")?
                .call1((slf, index))?
                .unbind());
        }
        let this = crate::tensor::viewed(slf)?;
        let (view, copy) = index_variable(&this.var, index)?;
        let out = if copy { view.clone_data().py()? } else { view };
        Ok(new_tensor(slf.py(), out)?.into_any())
    }

    /// `x[index] = value`: copies into the indexed view (advanced indices: `index_put_`
    /// through `rustgrad._shape._setitem_advanced`).
    fn __setitem__(
        slf: &Bound<'_, Self>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let index = &normalize_index(index)?;
        if has_advanced_item(index) {
            advanced_hook(slf.py(), "_setitem_advanced")?.call1((slf, index, value))?;
            return Ok(());
        }
        let (view, _) = index_variable(&slf.get().var, index)?;
        let src = operand_var(value, &view)?;
        view.copy_(&src).py()?;
        mark_python_site(slf.py(), &view);
        Ok(())
    }
}

/// The one entry of every Python index (`__getitem__` and `__setitem__`): a sequence
/// index that is not a list, tuple or tensor (a `range`, a numpy array with dims, a
/// `deque`, ...) becomes the list (numpy: the tensor) of its items, at the top level and
/// as an item of a tuple, as PyTorch's `applySlicing` reads any `PySequence` as
/// `torch.tensor(seq)` (advanced indexing); then a list may be read as a tuple
/// (`sequence_as_tuple`). Other indices are returned as they are.
fn normalize_index<'py>(index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let index = match sequence_index(index)? {
        Some(seq) => seq,
        None => index.clone(),
    };
    let index = sequence_as_tuple(&index)?;
    let Ok(tuple) = index.cast::<PyTuple>() else {
        return Ok(index);
    };
    let mut items = Vec::with_capacity(tuple.len());
    let mut changed = false;
    for item in tuple.iter() {
        match sequence_index(&item)? {
            Some(seq) => {
                items.push(seq);
                changed = true;
            }
            None => items.push(item),
        }
    }
    if !changed {
        return Ok(index);
    }
    Ok(PyTuple::new(index.py(), items)?.into_any())
}

/// A sequence index item other than a list, tuple or tensor, as the list of its items
/// (a `deque`, an `array.array`, ...) or the tensor of it (a `range`: int64; a numpy
/// array with dims: `rustgrad.as_tensor`, so a bool array is a mask); `None` for every other
/// item (ints, numpy scalars and 0-d arrays, slices, ...). `str` and `bytes` are
/// PyTorch's TypeError (`torch.tensor("ab")`).
fn sequence_index<'py>(item: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    use pyo3::types::{PyByteArray, PyBytes, PyInt, PyList, PyRange, PySequence, PyString};
    if item.is_none()
        || item.is_instance_of::<PyInt>()
        || item.is_instance_of::<PySlice>()
        || item.is_instance_of::<PyList>()
        || item.is_instance_of::<PyTuple>()
        || item.is_instance_of::<PyEllipsis>()
        || item.cast::<PyTensor>().is_ok()
    {
        return Ok(None);
    }
    let py = item.py();
    if item.is_instance_of::<PyRange>() {
        // `rustgrad.tensor(range, dtype=int64)`: the element count is checked before
        // anything is allocated, so `x[range(2**40)]` is the allocator's error, not a
        // list of 2**40 Python ints.
        let rustgrad = py.import("rustgrad")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("dtype", rustgrad.getattr("int64")?)?;
        return Ok(Some(
            rustgrad.getattr("tensor")?.call((item,), Some(&kwargs))?,
        ));
    }
    for (is, name) in [
        (item.is_instance_of::<PyString>(), "str"),
        (item.is_instance_of::<PyBytes>(), "bytes"),
        (item.is_instance_of::<PyByteArray>(), "bytearray"),
    ] {
        if is {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "new(): invalid data type '{name}'"
            )));
        }
    }
    if item.hasattr(pyo3::intern!(py, "__array_interface__"))? {
        // numpy: an array with dims is a tensor index; scalars and 0-d arrays are ints.
        let ndim: i64 = item.getattr(pyo3::intern!(py, "ndim"))?.extract()?;
        if ndim == 0 {
            return Ok(None);
        }
        let rustgrad = py.import("rustgrad")?;
        return Ok(Some(rustgrad.getattr("as_tensor")?.call1((item,))?));
    }
    if item.cast::<PySequence>().is_ok() {
        return Ok(Some(as_list(item)?));
    }
    Ok(None)
}

/// The items of an iterable, as a list.
fn as_list<'py>(item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let items = item.try_iter()?.collect::<PyResult<Vec<_>>>()?;
    Ok(pyo3::types::PyList::new(item.py(), items)?.into_any())
}

/// Whether a list item is a sequence other than a list or tuple (a `range`, a numpy
/// array with dims, a `deque`, ...), which makes PyTorch read the list as a tuple.
fn is_other_sequence(item: &Bound<'_, PyAny>) -> bool {
    use pyo3::types::{PyBytes, PyInt, PyRange, PySequence, PyString};
    if item.is_instance_of::<PyInt>()
        || item.is_instance_of::<PyString>()
        || item.is_instance_of::<PyBytes>()
    {
        return false;
    }
    if item.is_instance_of::<PyRange>() || item.cast::<PySequence>().is_ok() {
        return true;
    }
    item.hasattr("__array_interface__").unwrap_or(false)
        && item
            .getattr("ndim")
            .and_then(|n| n.extract::<i64>())
            .is_ok_and(|n| n >= 1)
}

/// PyTorch's warning for a list index it reads as a tuple.
const SEQUENCE_AS_TUPLE: &str = "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a different result";

/// PyTorch's `treatSequenceAsTuple`: a list index of fewer than 32 items of which one
/// is a tensor, a sequence (list, tuple, range, numpy array, ...), a slice, `...` or `None` is read as the tuple of its
/// items, with PyTorch's deprecation warning (`x[[i]]` with a 0-d tensor `i` is `x[i]`,
/// `x[[0, None]]` is `x[0, None]`); other indices are returned as they are.
fn sequence_as_tuple<'py>(index: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let Ok(list) = index.cast::<pyo3::types::PyList>() else {
        return Ok(index.clone());
    };
    if list.len() >= 32 {
        return Ok(index.clone());
    }
    let structural = |item: &Bound<'_, PyAny>| {
        item.is_none()
            || item.is_instance_of::<PyEllipsis>()
            || item.is_instance_of::<PySlice>()
            || item.is_instance_of::<pyo3::types::PyList>()
            || item.is_instance_of::<PyTuple>()
            || item.cast::<PyTensor>().is_ok()
            || is_other_sequence(item)
    };
    if !list.iter().any(|item| structural(&item)) {
        return Ok(index.clone());
    }
    let py = index.py();
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    PyErr::warn(
        py,
        &category,
        &std::ffi::CString::new(SEQUENCE_AS_TUPLE)?,
        1,
    )?;
    Ok(PyTuple::new(py, list.iter())?.into_any())
}

/// Whether an index holds a list (or, inside a tuple index, a tuple) or a tensor with
/// dims (PyTorch's advanced indexing).
fn has_advanced_item(index: &Bound<'_, PyAny>) -> bool {
    let advanced = |item: &Bound<'_, PyAny>| {
        item.is_instance_of::<pyo3::types::PyList>()
            || item
                .cast::<PyTensor>()
                .is_ok_and(|t| t.get().var.dim() >= 1)
    };
    match index.cast::<PyTuple>() {
        Ok(t) => t
            .iter()
            .any(|i| advanced(&i) || i.is_instance_of::<PyTuple>()),
        Err(_) => advanced(index),
    }
}

/// A function of `rustgrad._shape` (imported once).
fn advanced_hook<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static MODULE: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();
    let module = MODULE.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py.import("rustgrad._shape")?.into_any().unbind())
    })?;
    module.bind(py).getattr(name)
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
            // PyTorch's applySlicing: a 0-d bool or uint8 (byte) tensor is a mask over a
            // new dim, a 0-d tensor of another integer dtype an int; every float dtype
            // is refused (`tensors used as indices ...`).
            let as_int = |t: &Variable| match t.item().py()? {
                Scalar::Int(i) => Ok(i),
                _ => Err(PyRuntimeError::new_err(
                    "rustgrad internal error: int tensor item",
                )),
            };
            let dtype = t.dtype();
            return match (dtype, t.dim(), t.numel()) {
                _ if dtype.is_floating_point() => Err(PyIndexError::new_err(
                    "tensors used as indices must be long, int, byte or bool tensors",
                )),
                (DType::Bool, 0, _) => Ok(IndexItem::Mask(t.item().py()? == Scalar::Bool(true))),
                (DType::U8, 0, _) => Ok(IndexItem::Mask(as_int(t)? != 0)),
                (DType::U8, _, _) => Err(PyRuntimeError::new_err(
                    "rustgrad does not support advanced indexing with index tensors of several elements or bool mask tensors yet",
                )),
                (_, 0, _) => Ok(IndexItem::Int(as_int(t)?)),
                (_, 1, 1) => Ok(IndexItem::Tensor1(as_int(t)?)),
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

/// The engine tensor of an index / mask argument.
fn index_tensor(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<rustgrad::Tensor> {
    obj.cast::<PyTensor>()
        .map(|t| t.get().var.tensor().clone())
        .map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "argument '{what}' must be Tensor, not {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })
}

/// A tensor argument `what` as a variable (TypeError otherwise).
fn index_var(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Variable> {
    index_tensor(obj, what)?;
    Ok(obj.cast::<PyTensor>()?.get().var.clone())
}

/// `index_copy` / `index_copy_`.
pub(super) fn index_copy_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    source: &Bound<'py, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let (d, idx) = (extract_int(dim)?, index_tensor(index, "index")?);
    let src = index_var(source, "source")?;
    out_or_in_place(slf, Some(&src), in_place, |x| x.index_copy(d, &idx, &src))
}

/// `scatter_add` / `scatter_add_`.
pub(super) fn scatter_add_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    src: &Bound<'py, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    scatter_any(slf, dim, index, Some(src), None, Some("add"), in_place)
}

/// `scatter_reduce` / `scatter_reduce_`.
pub(super) fn scatter_reduce_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    src: &Bound<'py, PyAny>,
    reduce: &str,
    include_self: bool,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let (d, idx, s) = (
        extract_int(dim)?,
        index_tensor(index, "index")?,
        index_var(src, "src")?,
    );
    out_or_in_place(slf, Some(&s), in_place, |x| {
        x.scatter_reduce(d, &idx, &s, reduce, include_self)
    })
}

/// `index_fill` / `index_fill_`.
pub(super) fn index_fill_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let (d, idx) = (extract_int(dim)?, index_tensor(index, "index")?);
    let val = operand_var(value, &slf.get().var)?;
    out_or_in_place(slf, Some(&val), in_place, |x| x.index_fill(d, &idx, &val))
}

/// `masked_fill` / `masked_fill_`.
pub(super) fn masked_fill_any<'py>(
    slf: &Bound<'py, PyTensor>,
    mask: &Bound<'py, PyAny>,
    value: &Bound<'py, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let m = index_tensor(mask, "mask")?;
    let val = operand_var(value, &slf.get().var)?;
    out_or_in_place(slf, Some(&val), in_place, |x| x.masked_fill(&m, &val))
}

/// `masked_scatter` / `masked_scatter_`.
pub(super) fn masked_scatter_any<'py>(
    slf: &Bound<'py, PyTensor>,
    mask: &Bound<'py, PyAny>,
    source: &Bound<'py, PyAny>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let (m, src) = (index_tensor(mask, "mask")?, index_var(source, "source")?);
    out_or_in_place(slf, Some(&src), in_place, |x| x.masked_scatter(&m, &src))
}

/// The result of an out-of-place op, or that op run in place on `slf`.
fn out_or_in_place<'py>(
    slf: &Bound<'py, PyTensor>,
    other: Option<&Variable>,
    in_place: bool,
    f: impl FnOnce(&Variable) -> rustgrad::Result<Variable>,
) -> PyResult<Py<PyAny>> {
    let v = &slf.get().var;
    if in_place {
        v.in_place_with(other, f).py()?;
        mark_python_site(slf.py(), v);
        Ok(slf.clone().into_any().unbind())
    } else {
        Ok(new_tensor(slf.py(), f(v).py()?)?.into_any())
    }
}

/// `scatter` / `scatter_` with a `src` tensor or a `value`, and PyTorch's `reduce=`.
pub(super) fn scatter_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    src: Option<&Bound<'py, PyAny>>,
    value: Option<&Bound<'py, PyAny>>,
    reduce: Option<&str>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let v = slf.get().var.clone();
    let d = extract_int(dim)?;
    let idx = index_tensor(index, "index")?;
    let add = match reduce {
        None => false,
        Some("add") => true,
        Some("multiply") => {
            let operand = src.or(value).ok_or_else(|| {
                pyo3::exceptions::PyTypeError::new_err(
                    "scatter() missing required argument 'src' or 'value'",
                )
            })?;
            let s = match operand.cast::<PyTensor>() {
                Ok(t) => t.get().var.clone(),
                Err(_) => operand_var(operand, &slf.get().var)?
                    .expand(&index_shape(&idx))
                    .py()?
                    .to_dtype(slf.get().var.dtype())
                    .py()?,
            };
            return out_or_in_place(slf, None, in_place, |x| x.scatter_multiply(d, &idx, &s));
        }
        Some(other) => {
            return Err(PyRuntimeError::new_err(format!(
                "reduce argument must be either add or multiply. Got {other}."
            )))
        }
    };
    let operand = src.or(value).ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(
            "scatter() missing required argument 'src' or 'value'",
        )
    })?;
    match operand.cast::<PyTensor>() {
        Ok(t) if src.is_some() || t.get().var.dim() > 0 => {
            let s = t.get().var.clone();
            out_or_in_place(slf, Some(&s), in_place, |x| x.scatter(d, &idx, &s, add))
        }
        _ => {
            let val = operand_var(operand, &v)?;
            if add {
                let s = val
                    .expand(&index_shape(&idx))
                    .py()?
                    .to_dtype(v.dtype())
                    .py()?;
                return out_or_in_place(slf, None, in_place, |x| x.scatter(d, &idx, &s, true));
            }
            out_or_in_place(slf, Some(&val), in_place, |x| {
                x.scatter_value(d, &idx, &val)
            })
        }
    }
}

fn index_shape(t: &rustgrad::Tensor) -> Vec<i64> {
    t.shape().iter().map(|&s| s as i64).collect()
}

/// The per-dim index list of `index_put_` / `Tensor.index`.
fn index_list(indices: &Bound<'_, PyAny>) -> PyResult<Vec<Option<rustgrad::Tensor>>> {
    let seq = indices.cast::<pyo3::types::PySequence>()?;
    (0..seq.len()?)
        .map(|i| {
            let item = seq.get_item(i)?;
            if item.is_none() {
                Ok(None)
            } else {
                index_tensor(&item, "indices").map(Some)
            }
        })
        .collect()
}

#[pymethods]
impl PyTensor {
    /// The entries `index` along `dim`.
    fn index_select(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        index: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyTensor>> {
        let idx = index_tensor(index, "index")?;
        new_tensor(py, self.var.index_select(extract_int(dim)?, &idx).py()?)
    }

    /// `out[i][j] = self[index[i][j]][j]` for `dim` 0 (and so on).
    #[pyo3(signature = (dim, index, *, sparse_grad = false))]
    fn gather(
        &self,
        py: Python<'_>,
        dim: &Bound<'_, PyAny>,
        index: &Bound<'_, PyAny>,
        #[pyo3(from_py_with = crate::flag::gather_sparse_grad)] sparse_grad: bool,
    ) -> PyResult<Py<PyTensor>> {
        let _ = sparse_grad;
        let idx = index_tensor(index, "index")?;
        new_tensor(py, self.var.gather(extract_int(dim)?, &idx).py()?)
    }

    /// A copy with `source` written (`accumulate`: added) at the flat positions `index`.
    #[pyo3(signature = (index, source, accumulate = false))]
    fn put<'py>(
        slf: &Bound<'py, Self>,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = crate::flag::put_accumulate)] accumulate: bool,
    ) -> PyResult<Py<PyAny>> {
        let (i, src) = (index_tensor(index, "index")?, index_var(source, "source")?);
        out_or_in_place(slf, Some(&src), false, |x| x.put(&i, &src, accumulate))
    }

    /// In-place `put`.
    #[pyo3(signature = (index, source, accumulate = false))]
    fn put_<'py>(
        slf: &Bound<'py, Self>,
        index: &Bound<'py, PyAny>,
        source: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = crate::flag::put_inplace_accumulate)] accumulate: bool,
    ) -> PyResult<Py<PyAny>> {
        let (i, src) = (index_tensor(index, "index")?, index_var(source, "source")?);
        out_or_in_place(slf, Some(&src), true, |x| x.put(&i, &src, accumulate))
    }

    /// Fills the main diagonal with `fill_value` in place (`wrap`: restart it below a
    /// tall matrix's first square).
    #[pyo3(signature = (fill_value, wrap = false))]
    fn fill_diagonal_<'py>(
        slf: Bound<'py, Self>,
        fill_value: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = crate::flag::fill_diagonal_inplace_wrap)] wrap: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let value = crate::convert::extract_scalar(fill_value)?.ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "fill_diagonal_(): argument 'fill_value' (position 1) must be Number, not {}",
                fill_value
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        crate::tensor::written(slf, |_, v| v.fill_diagonal_(value, wrap).py())
    }

    /// The elements where the bool `mask` is true, as a 1-d tensor.
    fn masked_select(&self, py: Python<'_>, mask: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let m = index_tensor(mask, "mask")?;
        new_tensor(py, self.var.masked_select(&m).py()?)
    }

    /// The elements at flat positions `index`, in `index`'s shape.
    fn take(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let idx = index_tensor(index, "index")?;
        new_tensor(py, self.var.take(&idx).py()?)
    }

    /// `aten::index`: one index tensor (or None) per dim.
    fn _index(&self, py: Python<'_>, indices: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        new_tensor(py, self.var.index(&index_list(indices)?).py()?)
    }

    /// `self[indices] = values` (or `+=` with `accumulate`), in place.
    #[pyo3(signature = (indices, values, accumulate = false))]
    fn index_put_<'py>(
        slf: Bound<'py, Self>,
        indices: &Bound<'py, PyAny>,
        values: &Bound<'py, PyAny>,
        #[pyo3(from_py_with = crate::flag::index_put_inplace_accumulate)] accumulate: bool,
    ) -> PyResult<Bound<'py, Self>> {
        let v = &slf.get().var;
        let vals = operand_var(values, v)?;
        v.index_put_(&index_list(indices)?, &vals, accumulate)
            .py()?;
        mark_python_site(slf.py(), v);
        Ok(slf)
    }

    /// A view of the storage with explicit sizes, strides and storage offset.
    #[pyo3(signature = (size, stride, storage_offset = None))]
    fn as_strided(
        slf: &Bound<'_, Self>,
        py: Python<'_>,
        size: &Bound<'_, PyAny>,
        stride: &Bound<'_, PyAny>,
        storage_offset: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyTensor>> {
        let this = crate::tensor::viewed(slf)?;
        let size = crate::convert::extract_dims(Some(size))?.unwrap_or_default();
        let stride = crate::convert::extract_dims(Some(stride))?.unwrap_or_default();
        let offset = storage_offset
            .filter(|o| !o.is_none())
            .map(extract_int)
            .transpose()?;
        new_tensor(py, this.var.as_strided_view(&size, &stride, offset).py()?)
    }

    /// `as_strided` in place: this tensor takes the given sizes, strides and offset.
    #[pyo3(signature = (size, stride, storage_offset = None))]
    fn as_strided_<'py>(
        slf: Bound<'py, Self>,
        size: &Bound<'py, PyAny>,
        stride: &Bound<'py, PyAny>,
        storage_offset: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, Self>> {
        let size = crate::convert::extract_dims(Some(size))?.unwrap_or_default();
        let stride = crate::convert::extract_dims(Some(stride))?.unwrap_or_default();
        let offset = storage_offset
            .filter(|o| !o.is_none())
            .map(extract_int)
            .transpose()?;
        crate::tensor::written(slf, |_, v| v.as_strided_(&size, &stride, offset).py())
    }

    /// The coordinates of the nonzero elements (`[n, ndim]`, or one tensor per dim).
    #[pyo3(signature = (*, as_tuple = false))]
    fn nonzero(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::flag::nonzero_as_tuple)] as_tuple: bool,
    ) -> PyResult<Py<PyAny>> {
        let rows = self.var.nonzero().py()?;
        if !as_tuple {
            return Ok(new_tensor(py, rows)?.into_any());
        }
        let cols = if self.var.dim() == 0 {
            // PyTorch treats a 0-d input as 1-d here: one index tensor of 0s.
            let flat = self.var.reshape(&[1]).py()?.nonzero().py()?;
            vec![flat.reshape(&[-1]).py()?]
        } else {
            (0..self.var.dim())
                .map(|d| rows.select(1, d as i64).and_then(|c| c.contiguous()))
                .collect::<rustgrad::Result<Vec<_>>>()
                .py()?
        };
        let items = cols
            .into_iter()
            .map(|c| new_tensor(py, c))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }
}

/// `index_add` / `index_add_`.
pub(super) fn index_add_any<'py>(
    slf: &Bound<'py, PyTensor>,
    dim: &Bound<'py, PyAny>,
    index: &Bound<'py, PyAny>,
    source: &Bound<'py, PyTensor>,
    alpha: Option<&Bound<'py, PyAny>>,
    in_place: bool,
) -> PyResult<Py<PyAny>> {
    let (d, idx) = (extract_int(dim)?, index_tensor(index, "index")?);
    let src = source.get().var.clone();
    let src = match alpha
        .map(crate::convert::extract_scalar)
        .transpose()?
        .flatten()
    {
        None => src,
        Some(a) if a.to_f64() == 1.0 => src,
        Some(a) => src.mul(&src.wrap_scalar(a)).py()?,
    };
    out_or_in_place(slf, Some(&src), in_place, |x| x.index_add(d, &idx, &src))
}
