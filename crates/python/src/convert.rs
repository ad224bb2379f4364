//! Conversions between Python values and engine tensors: nested sequences, numpy
//! arrays, scalars, size and dim arguments.

use crate::errors::IntoPyResult;
use numpy::ndarray::ShapeBuilder;
use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PySequence, PyString, PyTuple};
use rustgrad::{DType, Scalar, Tensor};

/// A Python number as an engine scalar (bool before int: Python bools are ints);
/// `Ok(None)` for anything that is not a number. A Python int outside int64 is
/// PyTorch's OverflowError, "int too big to convert" or, below int64, "can't convert
/// negative int to unsigned" (its argument parser's, for every op that takes a Number:
/// `uint8_tensor + 2**70`, `x.fmod(2**70)`, `clamp_min`, `fill_`), so every caller
/// refuses it the same way (Note [Wrapped scalars]). PyTorch takes `2**63 ..
/// 2**64 - 1` as a uint64 Scalar; rustgrad, without one, refuses those too.
pub fn extract_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    match extract_element(obj) {
        Some((s, _)) => Ok(Some(s)),
        None if obj.is_instance_of::<PyInt>() && !obj.is_instance_of::<PyBool>() => {
            // c10 tries uint64 after int64, hence its message for a negative int.
            Err(PyOverflowError::new_err(if obj.lt(0)? {
                "can't convert negative int to unsigned"
            } else {
                "int too big to convert"
            }))
        }
        None => Ok(None),
    }
}

/// [`scalar_f64`] of an optional argument, `default` when it is absent.
pub fn opt_scalar_f64(obj: Option<&Bound<'_, PyAny>>, default: f64) -> PyResult<f64> {
    obj.map_or(Ok(default), scalar_f64)
}

/// A float parameter that PyTorch's signature types as `Scalar` (`threshold`,
/// `hardtanh`'s bounds, `leaky_relu`'s slope, `softplus`, `elu`, ...), as f64: a Python
/// int outside int64 is [`extract_scalar`]'s OverflowError, whereas a `double`
/// parameter (plain `f64`) takes any int a float can hold. Called in the function body,
/// not through `from_py_with`, so the error carries no "while processing" note.
pub fn scalar_f64(obj: &Bound<'_, PyAny>) -> PyResult<f64> {
    match extract_scalar(obj)? {
        Some(s) => Ok(s.to_f64()),
        None => obj.extract::<f64>(),
    }
}

/// A number with the dtype it carries in `tensor()` data: `None` for Python numbers
/// (whose dtype follows from their kind), a numpy scalar's own dtype otherwise
/// (`np.float64` is float64 and `np.float32` float32 even beside Python numbers, as in
/// PyTorch's `infer_scalar_type`; integer kinds are int64, the one integer dtype).
fn extract_element(obj: &Bound<'_, PyAny>) -> Option<(Scalar, Option<DType>)> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(|b| (Scalar::Bool(b), None));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(|v| (Scalar::Int(v), None));
    }
    if obj.is_instance_of::<PyFloat>() {
        // A numpy float64 is a subclass of Python's float: it carries float64.
        let dtype = (!obj.is_exact_instance_of::<PyFloat>())
            .then(|| numpy_scalar_dtype(obj))
            .flatten();
        return obj.extract::<f64>().ok().map(|v| (Scalar::Float(v), dtype));
    }
    // numpy scalars and other number-likes.
    if obj.hasattr("__float__").unwrap_or(false) && !obj.hasattr("__len__").unwrap_or(true) {
        if let Some(dtype) = numpy_scalar_dtype(obj) {
            return match dtype {
                DType::Bool => obj.extract::<bool>().ok().map(Scalar::Bool),
                DType::I64 => obj.extract::<i64>().ok().map(Scalar::Int),
                _ => obj.extract::<f64>().ok().map(Scalar::Float),
            }
            .map(|s| (s, Some(dtype)));
        }
        return obj.extract::<f64>().ok().map(|v| (Scalar::Float(v), None));
    }
    None
}

/// The dtype of a numpy scalar (from its `dtype.kind` and `dtype.itemsize`), or `None`
/// for an object without a numpy dtype.
fn numpy_scalar_dtype(obj: &Bound<'_, PyAny>) -> Option<DType> {
    let dtype = obj.getattr("dtype").ok()?;
    let kind = dtype.getattr("kind").ok()?.extract::<String>().ok()?;
    Some(match kind.as_str() {
        "b" => DType::Bool,
        "i" | "u" => DType::I64,
        "f" if dtype.getattr("itemsize").ok()?.extract::<usize>().ok()? >= 8 => DType::F64,
        // float16 and float32 (rustgrad has no half type).
        "f" => DType::F32,
        _ => return None,
    })
}

/// PyTorch's limit on the nesting depth of data given to `tensor()`: deeper data (a
/// self-containing list, or 30 000 nested lists) is a ValueError, never a stack overflow.
const MAX_DATA_DIMS: usize = 128;

/// The element buffer `tensor()` fills: the target's representation when the dtype is
/// given, else i64 until the first float is seen (Note [Exact scalars]).
enum Values {
    I64(Vec<i64>),
    F64(Vec<f64>),
    Bool(Vec<bool>),
}

/// The values of nested Python data and the kinds of number seen (for inference).
struct Collected {
    values: Values,
    /// The dtype every element is converted to as it is read, if given.
    target: Option<DType>,
    /// The promotion of the elements' dtypes so far (PyTorch's `infer_scalar_type`).
    inferred: Option<DType>,
}

impl Collected {
    /// With an inferred dtype, the first float turns the i64 buffer into f64.
    fn saw_float_value(&mut self) {
        if self.target.is_none() {
            if let Values::I64(ints) = &mut self.values {
                let floats = std::mem::take(ints).into_iter().map(|v| v as f64).collect();
                self.values = Values::F64(floats);
            }
        }
    }

    /// Promotes the inferred dtype with an element's.
    fn saw_dtype(&mut self, dtype: DType) {
        self.inferred = Some(match self.inferred {
            Some(d) => DType::promote(d, dtype),
            None => dtype,
        });
    }

    fn push(&mut self, s: Scalar, dtype: Option<DType>) -> PyResult<()> {
        self.saw_dtype(dtype.unwrap_or_else(|| match s {
            Scalar::Float(_) => DType::default_float(),
            Scalar::Int(_) => DType::I64,
            Scalar::Bool(_) => DType::Bool,
        }));
        if s.is_floating_point() {
            self.saw_float_value();
        }
        if let Some(d) = self.target {
            s.check_fits_tensor(d).py()?;
        }
        match &mut self.values {
            Values::I64(v) => v.push(s.checked_cast::<i64>().py()?),
            Values::F64(v) => v.push(s.cast::<f64>()),
            Values::Bool(v) => v.push(s.cast::<bool>()),
        }
        Ok(())
    }

    fn push_tensor(&mut self, t: &Tensor) -> PyResult<()> {
        self.saw_dtype(t.dtype());
        if t.dtype().is_floating_point() {
            self.saw_float_value();
        }
        match &mut self.values {
            Values::I64(v) => v.extend(t.to_vec::<i64>()),
            Values::F64(v) => v.extend(t.to_vec::<f64>()),
            Values::Bool(v) => v.extend(t.to_vec::<bool>()),
        }
        Ok(())
    }
}

fn invalid_data_type(obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "new(): invalid data type '{}'",
        obj.get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_default()
    ))
}

/// `obj` as a sequence to descend into; strs and bytes are sequences of themselves,
/// so they are refused rather than recursed into forever.
fn as_sequence<'a, 'py>(obj: &'a Bound<'py, PyAny>) -> PyResult<&'a Bound<'py, PySequence>> {
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(invalid_data_type(obj));
    }
    obj.cast::<PySequence>().map_err(|_| invalid_data_type(obj))
}

/// The shape of nested data, from its first elements (PyTorch's `compute_sizes`), with
/// the depth bounded by [`MAX_DATA_DIMS`]. Iterative: no recursion on user data.
fn data_shape(data: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let mut shape = vec![];
    let mut cur = data.clone();
    loop {
        if extract_element(&cur).is_some() {
            return Ok(shape);
        }
        if let Ok(t) = cur.cast::<crate::tensor::PyTensor>() {
            shape.extend_from_slice(&t.get().var.shape());
            return Ok(shape);
        }
        let seq = as_sequence(&cur)?;
        if shape.len() == MAX_DATA_DIMS {
            return Err(PyValueError::new_err(format!(
                "too many dimensions '{}'",
                cur.get_type().name()?
            )));
        }
        let len = seq.len()?;
        shape.push(len);
        if len == 0 {
            return Ok(shape);
        }
        let first = seq.get_item(0)?;
        cur = first;
    }
}

/// Reads the values of `obj`, which sits at `depth` of data of shape `shape`. The
/// recursion is at most `shape.len()` <= [`MAX_DATA_DIMS`] deep.
fn collect(
    obj: &Bound<'_, PyAny>,
    depth: usize,
    shape: &[usize],
    out: &mut Collected,
) -> PyResult<()> {
    if let Some((s, dtype)) = extract_element(obj) {
        if depth != shape.len() {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                shape[depth], depth
            )));
        }
        return out.push(s, dtype);
    }
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let t = t.get().var.tensor().clone();
        if t.shape() != &shape[depth.min(shape.len())..] {
            return Err(PyValueError::new_err(format!(
                "expected a tensor of shape {:?} at dim {} (got {:?})",
                &shape[depth.min(shape.len())..],
                depth,
                t.shape()
            )));
        }
        return out.push_tensor(&t);
    }
    let seq = as_sequence(obj)?;
    let len = seq.len()?;
    if depth == shape.len() {
        return Err(PyValueError::new_err(format!(
            "expected a number at dim {depth} (got a sequence)"
        )));
    }
    if shape[depth] != len {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {} (got {})",
            shape[depth], depth, len
        )));
    }
    for i in 0..len {
        collect(&seq.get_item(i)?, depth + 1, shape, out)?;
    }
    Ok(())
}

/// A vector with room for `n` elements, or PyTorch's allocator error (never an abort).
fn reserved<T>(n: usize) -> PyResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| rustgrad::Error::OutOfMemory {
            bytes: n.saturating_mul(std::mem::size_of::<T>()),
        })
        .py()?;
    Ok(v)
}

/// A tensor from Python data: a number, nested sequences, a numpy array or a tensor.
/// The dtype is inferred like `torch.tensor` (floats → the default float dtype, ints → int64, bools →
/// bool) unless given; then each element converts straight to it, as in PyTorch (so an
/// int64 above 2^53 stays exact and NaN into int64 is an error).
pub fn tensor_from_data(data: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Tensor> {
    if let Ok(t) = data.cast::<crate::tensor::PyTensor>() {
        let t = t.get().var.tensor().deep_clone().py()?;
        return Ok(match dtype {
            Some(d) => t.to_dtype(d).py()?,
            None => t,
        });
    }
    if let Some(t) = from_numpy_array(data)? {
        return Ok(match dtype {
            Some(d) => t.to_dtype(d).py()?,
            None => t,
        });
    }
    let shape = data_shape(data)?;
    let numel = rustgrad::shape::checked_numel(&shape).py()?;
    rustgrad::tensor::check_allocation(numel, dtype.unwrap_or(DType::I64)).py()?;
    let values = match dtype {
        Some(d) if d.is_floating_point() => Values::F64(reserved(numel)?),
        Some(DType::Bool) => Values::Bool(reserved(numel)?),
        Some(_) | None => Values::I64(reserved(numel)?),
    };
    let mut c = Collected {
        values,
        target: dtype,
        inferred: None,
    };
    collect(data, 0, &shape, &mut c)?;
    // An empty nested list has the shape of its nesting and the default float dtype.
    let inferred = c.inferred.unwrap_or_else(DType::default_float);
    let t = match c.values {
        Values::I64(v) => Tensor::from_vec(v, &shape),
        Values::F64(v) => Tensor::from_vec(v, &shape),
        Values::Bool(v) => Tensor::from_vec(v, &shape),
    }
    .py()?;
    t.to_dtype(dtype.unwrap_or(inferred)).py()
}

/// Copies a numpy array into a new tensor (`None` if `obj` is not an array).
pub fn from_numpy_array(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    macro_rules! try_type {
        ($t:ty) => {
            if let Ok(a) = obj.cast::<PyArrayDyn<$t>>() {
                let ro = a.readonly();
                let view = ro.as_array();
                let shape: Vec<usize> = view.shape().to_vec();
                let data: Vec<$t> = view.iter().copied().collect();
                return Ok(Some(Tensor::from_vec(data, &shape).py()?));
            }
        };
    }
    try_type!(f32);
    try_type!(f64);
    try_type!(i64);
    try_type!(bool);
    try_type!(i32);
    try_type!(i16);
    try_type!(i8);
    try_type!(u8);
    try_type!(rustgrad::dtype::f16);
    // A numpy scalar (`np.float64(1.5)`, an instance of `numpy.generic`) is a 0-d array
    // of its dtype, as PyTorch reads it.
    let py = obj.py();
    let generic = py.import("numpy")?.getattr("generic")?;
    if obj.is_instance(&generic)? {
        let array = py.import("numpy")?.call_method1("asarray", (obj,))?;
        if !array.is_instance(&generic)? {
            return from_numpy_array(&array);
        }
    }
    if obj.hasattr("__array_interface__").unwrap_or(false) && obj.hasattr("dtype").unwrap_or(false)
    {
        return Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.",
            obj.getattr("dtype")?.str()?
        )));
    }
    Ok(None)
}

/// Builds a numpy array holding a copy of the tensor's values.
pub fn to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    let shape = t.shape().to_vec();
    macro_rules! arr {
        ($ty:ty) => {{
            let flat = numpy::PyArray1::<$ty>::from_vec(py, t.try_to_vec::<$ty>().py()?);
            Ok(flat.reshape(shape)?.into_any())
        }};
    }
    match t.dtype() {
        DType::F32 => arr!(f32),
        DType::F64 => arr!(f64),
        DType::F16 => arr!(rustgrad::dtype::f16),
        DType::BF16 => Err(no_numpy_bfloat16()),
        DType::I64 => arr!(i64),
        DType::I32 => arr!(i32),
        DType::I16 => arr!(i16),
        DType::I8 => arr!(i8),
        DType::U8 => arr!(u8),
        DType::Bool => arr!(bool),
    }
}

/// PyTorch's error for `.numpy()` of a bfloat16 tensor (numpy has no bfloat16).
fn no_numpy_bfloat16() -> PyErr {
    PyTypeError::new_err("Got unsupported ScalarType BFloat16")
}

/// A Python number from an engine scalar.
pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::Float(v) => PyFloat::new(py, v).into_any(),
        Scalar::Int(v) => v.into_pyobject(py)?.into_any(),
        Scalar::Bool(v) => PyBool::new(py, v).to_owned().into_any(),
    })
}

/// Sizes given either as separate ints (`zeros(2, 3)`) or as one sequence
/// (`zeros((2, 3))`, `zeros([2, 3])`, `zeros(x.shape)`).
pub fn extract_sizes(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if !first.is_instance_of::<PyInt>() {
            if let Ok(seq) = first.cast::<PySequence>() {
                return (0..seq.len()?)
                    .map(|i| extract_int(&seq.get_item(i)?))
                    .collect();
            }
        }
    }
    args.iter().map(|a| extract_int(&a)).collect()
}

/// An int argument (accepting one-element integer tensors and numpy ints; not floats,
/// and not bools, which PyTorch refuses where it expects an int: `x.sum(True)`,
/// `x.view(True, 6)`).
pub fn extract_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if obj.is_instance_of::<PyFloat>() || obj.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "argument must be int, not {} ({})",
            obj.get_type().name()?,
            obj.repr()?
        )));
    }
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let t = t.get().var.tensor();
        if t.numel() == 1 && t.dtype() == DType::I64 {
            if let Scalar::Int(v) = t.item().py()? {
                return Ok(v);
            }
        }
    }
    obj.extract::<i64>().map_err(|_| {
        if obj.is_instance_of::<PyInt>() {
            // PyTorch's parser on an int past int64.
            return PyValueError::new_err("Overflow when unpacking long long");
        }
        PyTypeError::new_err(format!(
            "expected an int, but got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

/// A dim argument that may be an int, a tuple/list of ints, or None.
pub fn extract_dims(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) if o.is_instance_of::<PyTuple>() || o.is_instance_of::<PyList>() => {
            let seq = o.cast::<PySequence>()?;
            Ok(Some(
                (0..seq.len()?)
                    .map(|i| extract_int(&seq.get_item(i)?))
                    .collect::<PyResult<Vec<i64>>>()?,
            ))
        }
        Some(o) => Ok(Some(vec![extract_int(o)?])),
    }
}

/// A tensor sharing a numpy array's memory (`from_numpy`, `as_tensor`), as PyTorch's
/// `from_numpy`: float64, float32, float16, int64, int32, int16, int8 and uint8 arrays whose strides are non-negative are
/// shared (writes through either are seen by the other); a negative stride is PyTorch's
/// error; anything else (bool, int32, read-only or misaligned arrays) is copied.
/// `None` when `obj` is not a numpy array. See Note [Shared memory].
pub fn share_numpy_array(obj: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    macro_rules! share {
        ($t:ty, $dtype:expr) => {
            if let Ok(a) = obj.cast::<PyArrayDyn<$t>>() {
                let itemsize = std::mem::size_of::<$t>() as isize;
                let shape: Vec<usize> = a.shape().to_vec();
                let strides = a.strides();
                if strides.iter().any(|&s| s < 0) {
                    return Err(PyValueError::new_err(
                        "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
                    ));
                }
                let flags = obj.getattr("flags")?;
                let shareable = flags.getattr("writeable")?.is_truthy()?
                    && flags.getattr("aligned")?.is_truthy()?
                    && strides.iter().all(|&s| s % itemsize == 0);
                let Some(ptr) = std::ptr::NonNull::new(a.data() as *mut u8) else {
                    return from_numpy_array(obj);
                };
                if !shareable {
                    return from_numpy_array(obj);
                }
                let strides: rustgrad::shape::Dims =
                    strides.iter().map(|&s| (s / itemsize) as usize).collect();
                let layout = rustgrad::layout::Layout::new(shape.as_slice().into(), strides, 0);
                let len = if layout.numel() == 0 { 0 } else { layout.storage_extent().py()? };
                let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(obj.clone().unbind());
                // SAFETY: numpy's data pointer addresses `len` elements of this dtype
                // (the layout's extent, from the array's own shape and strides), aligned
                // (checked) and writeable (checked); the array object, kept alive by
                // `owner`, keeps them in place. Concurrent writes through numpy while a
                // kernel runs are the user's race, as with PyTorch's shared arrays.
                let t = unsafe { Tensor::from_external(ptr, len, $dtype, owner, layout) };
                return Ok(Some(t.py()?));
            }
        };
    }
    share!(f32, DType::F32);
    share!(f64, DType::F64);
    share!(i64, DType::I64);
    share!(i32, DType::I32);
    share!(i16, DType::I16);
    share!(i8, DType::I8);
    share!(u8, DType::U8);
    share!(rustgrad::dtype::f16, DType::F16);
    from_numpy_array(obj)
}

/// Keeps a tensor's storage alive while a numpy array views its memory.
#[pyclass(module = "rustgrad", frozen)]
struct StorageOwner {
    _storage: std::sync::Arc<rustgrad::storage::Storage>,
}

/// A numpy array sharing the tensor's memory (`t.numpy()`), as PyTorch's: writes through
/// either are seen by the other, bool tensors included (numpy's bool is one byte holding
/// 0 or 1, as Rust's). See Note [Shared memory].
pub fn share_to_numpy<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    macro_rules! share {
        ($ty:ty) => {{
            let base = t.storage().read().as_ptr() as *mut $ty;
            let shape: Vec<usize> = t.shape().to_vec();
            let strides: Vec<usize> = t.strides().to_vec();
            let owner = Bound::new(
                py,
                StorageOwner {
                    _storage: t.storage().clone(),
                },
            )?;
            let view = if t.numel() == 0 {
                None
            } else {
                // SAFETY: the layout is within the storage (every tensor's invariant),
                // so the offset and every strided element lie inside the buffer, which
                // never moves and stays alive while `owner` (the array's base) does.
                let first = unsafe { base.add(t.layout().offset()) };
                let view = unsafe {
                    numpy::ndarray::ArrayView::from_shape_ptr(
                        numpy::ndarray::IxDyn(&shape).strides(numpy::ndarray::IxDyn(&strides)),
                        first as *const $ty,
                    )
                };
                Some(view)
            };
            match view {
                // SAFETY: as above; numpy gets the view's pointer, shape and strides and
                // keeps `owner` as its base.
                Some(view) => Ok(unsafe {
                    numpy::PyArray::<$ty, _>::borrow_from_array(&view, owner.into_any())
                }
                .into_any()),
                None => to_numpy(py, t),
            }
        }};
    }
    match t.dtype() {
        DType::F32 => share!(f32),
        DType::F64 => share!(f64),
        DType::F16 => share!(rustgrad::dtype::f16),
        DType::BF16 => Err(no_numpy_bfloat16()),
        DType::I64 => share!(i64),
        DType::I32 => share!(i32),
        DType::I16 => share!(i16),
        DType::I8 => share!(i8),
        DType::U8 => share!(u8),
        DType::Bool => share!(bool),
    }
}
