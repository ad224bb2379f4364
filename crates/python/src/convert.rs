//! Conversions between Python values and engine tensors: nested sequences, numpy
//! arrays, scalars, size and dim arguments.

use crate::errors::IntoPyResult;
use numpy::{PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PySequence, PyString, PyTuple};
use rustgrad::{DType, Scalar, Tensor};

/// A Python number as an engine scalar (bool before int: Python bools are ints).
pub fn extract_scalar(obj: &Bound<'_, PyAny>) -> Option<Scalar> {
    if obj.is_instance_of::<PyBool>() {
        return obj.extract::<bool>().ok().map(Scalar::Bool);
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().ok().map(Scalar::Int);
    }
    if obj.is_instance_of::<PyFloat>() {
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    // numpy scalars and other number-likes.
    if obj.hasattr("__float__").unwrap_or(false) && !obj.hasattr("__len__").unwrap_or(true) {
        if let Ok(dtype) = obj.getattr("dtype").and_then(|d| d.getattr("kind")) {
            if let Ok(kind) = dtype.extract::<String>() {
                return match kind.as_str() {
                    "b" => obj.extract::<bool>().ok().map(Scalar::Bool),
                    "i" | "u" => obj.extract::<i64>().ok().map(Scalar::Int),
                    _ => obj.extract::<f64>().ok().map(Scalar::Float),
                };
            }
        }
        return obj.extract::<f64>().ok().map(Scalar::Float);
    }
    None
}

/// Values collected from nested Python sequences, widened, with the inferred kind.
struct Collected {
    shape: Vec<usize>,
    values: Vec<f64>,
    ints: Vec<i64>,
    saw_float: bool,
    saw_int: bool,
    saw_bool: bool,
}

fn collect(obj: &Bound<'_, PyAny>, depth: usize, out: &mut Collected) -> PyResult<()> {
    if let Some(s) = extract_scalar(obj) {
        if depth != out.shape.len() {
            return Err(PyValueError::new_err(format!(
                "expected sequence of length {} at dim {} (got a number)",
                out.shape.get(depth).copied().unwrap_or(0),
                depth
            )));
        }
        match s {
            Scalar::Float(v) => {
                out.saw_float = true;
                out.values.push(v);
                out.ints.push(v as i64);
            }
            Scalar::Int(v) => {
                out.saw_int = true;
                out.values.push(v as f64);
                out.ints.push(v);
            }
            Scalar::Bool(v) => {
                out.saw_bool = true;
                out.values.push(v as u8 as f64);
                out.ints.push(v as i64);
            }
        }
        return Ok(());
    }
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let t = t.get().var.tensor().clone();
        if t.numel() == 1 && t.dim() == 0 {
            return collect(&scalar_to_py(obj.py(), t.item().py()?)?, depth, out);
        }
        let list = crate::tensor::to_list(obj.py(), &t)?;
        return collect(&list, depth, out);
    }
    // A str is a sequence of one-character strs: recursing into it would never end.
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(format!(
            "new(): invalid data type '{}'",
            obj.get_type().name()?
        )));
    }
    let seq = obj.cast::<PySequence>().map_err(|_| {
        PyTypeError::new_err(format!(
            "new(): invalid data type '{}'",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })?;
    let len = seq.len()?;
    if depth == out.shape.len() {
        if !out.values.is_empty() {
            return Err(PyValueError::new_err(format!(
                "expected a number at dim {depth} (got a sequence)"
            )));
        }
        out.shape.push(len);
    } else if out.shape[depth] != len {
        return Err(PyValueError::new_err(format!(
            "expected sequence of length {} at dim {} (got {})",
            out.shape[depth], depth, len
        )));
    }
    for i in 0..len {
        collect(&seq.get_item(i)?, depth + 1, out)?;
    }
    Ok(())
}

/// A tensor from Python data: a number, nested sequences, a numpy array or a tensor.
/// The dtype is inferred like `torch.tensor` (floats → float32, ints → int64, bools →
/// bool) unless given.
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
    let mut c = Collected {
        shape: vec![],
        values: vec![],
        ints: vec![],
        saw_float: false,
        saw_int: false,
        saw_bool: false,
    };
    collect(data, 0, &mut c)?;
    // An empty nested list has the shape of its nesting but no further dims.
    let inferred = if c.saw_float || (!c.saw_int && !c.saw_bool) {
        DType::F32
    } else if c.saw_int {
        DType::I64
    } else {
        DType::Bool
    };
    let target = dtype.unwrap_or(inferred);
    let t = if target == DType::I64 && !c.saw_float {
        Tensor::from_vec(c.ints, &c.shape).py()?
    } else {
        Tensor::from_vec(c.values, &c.shape)
            .py()?
            .to_dtype(target)
            .py()?
    };
    t.to_dtype(target).py()
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
    if let Ok(a) = obj.cast::<PyArrayDyn<i32>>() {
        let ro = a.readonly();
        let view = ro.as_array();
        let shape: Vec<usize> = view.shape().to_vec();
        let data: Vec<i64> = view.iter().map(|&x| x as i64).collect();
        return Ok(Some(Tensor::from_vec(data, &shape).py()?));
    }
    if obj.hasattr("__array_interface__").unwrap_or(false) && obj.hasattr("dtype").unwrap_or(false)
    {
        return Err(PyTypeError::new_err(format!(
            "can't convert np.ndarray of type {}. The only supported types are: float64, float32, int64, int32, and bool.",
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
        DType::I64 => arr!(i64),
        DType::Bool => arr!(bool),
    }
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

/// An int argument (accepting 0-d integer tensors and numpy ints, not floats).
pub fn extract_int(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    if obj.is_instance_of::<PyFloat>() {
        return Err(PyTypeError::new_err(format!(
            "expected an int, but got float ({})",
            obj.repr()?
        )));
    }
    if let Ok(t) = obj.cast::<crate::tensor::PyTensor>() {
        let t = t.get().var.tensor();
        if t.numel() == 1 && !t.dtype().is_floating_point() {
            return Ok(t.item().py()?.to_f64() as i64);
        }
    }
    obj.extract::<i64>().map_err(|_| {
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
