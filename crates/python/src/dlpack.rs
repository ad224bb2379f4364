//! DLPack both ways: `Tensor.__dlpack__` / `__dlpack_device__` export a tensor's memory
//! as a DLPack capsule, and `from_dlpack` imports any object with `__dlpack__` (or a raw
//! capsule) without copying, through the engine's external buffers. The structs are
//! written here from the DLPack specification (`dlpack.h`, v1.x). See Note [DLPack] in
//! docs/architecture.md.

use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyAssertionError, PyBufferError, PyRuntimeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustgrad::layout::Layout;
use rustgrad::storage::Storage;
use rustgrad::{DType, Tensor};
use std::ffi::{c_void, CStr};
use std::ptr::NonNull;
use std::sync::Arc;

/// `kDLCPU`.
const DL_CPU: i32 = 1;
/// The DLPack version this module implements (exported in versioned capsules).
const DLPACK_VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };
/// `DLPACK_FLAG_BITMASK_READ_ONLY`.
const FLAG_READ_ONLY: u64 = 1;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`.
const FLAG_IS_COPIED: u64 = 1 << 1;

const LEGACY: &CStr = c"dltensor";
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const KDL_INT: u8 = 0;
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
const KDL_BFLOAT: u8 = 4;
const KDL_BOOL: u8 = 6;

/// The DLPack type of a dtype. One exhaustive match: a new dtype adds its arm here.
fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::F32 => (KDL_FLOAT, 32),
        DType::F64 => (KDL_FLOAT, 64),
        DType::F16 => (KDL_FLOAT, 16),
        DType::BF16 => (KDL_BFLOAT, 16),
        DType::I64 => (KDL_INT, 64),
        DType::I32 => (KDL_INT, 32),
        DType::I16 => (KDL_INT, 16),
        DType::I8 => (KDL_INT, 8),
        DType::U8 => (KDL_UINT, 8),
        DType::Bool => (KDL_BOOL, 8),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The dtype of a DLPack type, if rustgrad has it (the inverse of [`dl_dtype`]).
fn dtype_of(dl: DLDataType) -> Option<DType> {
    if dl.lanes != 1 {
        return None;
    }
    DType::ALL.into_iter().find(|&d| dl_dtype(d) == dl)
}

/// What an exported capsule owns: the managed struct the consumer sees (first, so a
/// pointer to it is a pointer to the whole), its shape and strides, and the storage.
#[repr(C)]
struct Export<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _storage: Arc<Storage>,
}

/// The `DLTensor` of `t` (its data pointer at its offset, shape, strides in elements),
/// pointing into `shape` and `strides`.
fn dl_tensor_of(t: &Tensor, shape: &mut [i64], strides: &mut [i64]) -> DLTensor {
    let base = t.storage().read().as_ptr() as *mut u8;
    let byte_offset = t.layout().offset() * t.dtype().size_in_bytes();
    DLTensor {
        // wrapping_add: no dereference; the offset lies within the buffer (every
        // tensor's layout does), so the pointer stays inside its allocation.
        data: base.wrapping_add(byte_offset) as *mut c_void,
        device: DLDevice {
            device_type: DL_CPU,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: shape.as_mut_ptr(),
        strides: strides.as_mut_ptr(),
        byte_offset: 0,
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    if !managed.is_null() {
        // SAFETY: `managed` is the first field of the `Export` that `export_capsule`
        // leaked with `Box::into_raw`; the protocol calls the deleter once.
        drop(unsafe { Box::from_raw(managed as *mut Export<DLManagedTensor>) });
    }
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    if !managed.is_null() {
        // SAFETY: as in `delete_legacy`.
        drop(unsafe { Box::from_raw(managed as *mut Export<DLManagedTensorVersioned>) });
    }
}

/// The capsule destructor: frees the tensor unless a consumer took it (and renamed the
/// capsule to `used_...`).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a live capsule; `PyCapsule_IsValid` and
    // `PyCapsule_GetPointer` only read it, and an unconsumed capsule holds the pointer
    // `export_capsule` stored (of the kind its name says).
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()) as *mut DLManagedTensor;
            delete_legacy(p);
        } else if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let p = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr())
                as *mut DLManagedTensorVersioned;
            delete_versioned(p);
        }
    }
}

/// A capsule over `t`'s memory; `copied` marks a versioned capsule's `IS_COPIED` flag.
fn export_capsule(
    py: Python<'_>,
    t: &Tensor,
    versioned: bool,
    copied: bool,
) -> PyResult<Py<PyAny>> {
    let shape: Vec<i64> = t.shape().iter().map(|&s| s as i64).collect();
    let strides: Vec<i64> = t.strides().iter().map(|&s| s as i64).collect();
    let storage = t.storage().clone();
    let (ptr, name): (*mut c_void, &CStr) = if versioned {
        let mut export = Box::new(Export {
            managed: DLManagedTensorVersioned {
                version: DLPACK_VERSION,
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_versioned),
                flags: if copied { FLAG_IS_COPIED } else { 0 },
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: DLDevice {
                        device_type: DL_CPU,
                        device_id: 0,
                    },
                    ndim: 0,
                    dtype: dl_dtype(t.dtype()),
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
            },
            shape,
            strides,
            _storage: storage,
        });
        let e = &mut *export;
        e.managed.dl_tensor = dl_tensor_of(t, &mut e.shape, &mut e.strides);
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is a valid, just-leaked pointer; the context points to itself.
        unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
        (raw as *mut c_void, VERSIONED)
    } else {
        let mut export = Box::new(Export {
            managed: DLManagedTensor {
                dl_tensor: DLTensor {
                    data: std::ptr::null_mut(),
                    device: DLDevice {
                        device_type: DL_CPU,
                        device_id: 0,
                    },
                    ndim: 0,
                    dtype: dl_dtype(t.dtype()),
                    shape: std::ptr::null_mut(),
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_legacy),
            },
            shape,
            strides,
            _storage: storage,
        });
        let e = &mut *export;
        e.managed.dl_tensor = dl_tensor_of(t, &mut e.shape, &mut e.strides);
        let raw = Box::into_raw(export);
        // SAFETY: as above.
        unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
        (raw as *mut c_void, LEGACY)
    };
    // SAFETY: `ptr` is non-null; the name is a static C string; the destructor frees
    // `ptr` unless a consumer renamed the capsule.
    let capsule = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not made, so nothing else owns `ptr`.
        unsafe {
            if versioned {
                delete_versioned(ptr as *mut DLManagedTensorVersioned);
            } else {
                delete_legacy(ptr as *mut DLManagedTensor);
            }
        }
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `PyCapsule_New` returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// Whether `max_version` (a `(major, minor)` tuple or None) asks for a versioned capsule.
fn wants_versioned(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match max_version {
        None => Ok(false),
        Some(v) if v.is_none() => Ok(false),
        Some(v) => {
            let (major, _minor): (i64, i64) = v.extract()?;
            Ok(major >= 1)
        }
    }
}

#[pymethods]
impl PyTensor {
    /// `__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`: a
    /// DLPack capsule sharing this tensor's memory ("dltensor", or "dltensor_versioned"
    /// when the consumer passes `max_version >= (1, 0)`). A bool tensor, or
    /// `copy=True`, exports a copy. See Note [DLPack].
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        if self.var.requires_grad() {
            return Err(PyBufferError::new_err(
                "Can't export tensors that require gradient, use tensor.detach()",
            ));
        }
        if stream.is_some_and(|s| !s.is_none()) {
            return Err(PyAssertionError::new_err("stream should be None on cpu."));
        }
        if let Some(d) = dl_device.filter(|d| !d.is_none()) {
            let (kind, id): (i32, i32) = d.extract()?;
            if (kind, id) != (DL_CPU, 0) {
                return Err(PyBufferError::new_err(format!(
                    "rustgrad: cannot export to DLPack device ({kind}, {id}); only the CPU (1, 0) is supported"
                )));
            }
        }
        let versioned = wants_versioned(max_version)?;
        let tensor = self.var.tensor().clone();
        // Bool memory is copied: a consumer could store a byte that is not a valid
        // Rust bool (as for `.numpy()`, Note [Shared memory]).
        let copied = copy == Some(true) || tensor.dtype() == DType::Bool;
        let tensor = if copied {
            tensor.clone_preserving_strides().py()?
        } else {
            tensor
        };
        export_capsule(py, &tensor, versioned, copied)
    }

    /// `(1, 0)`: kDLCPU, device 0.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (DL_CPU, 0)
    }
}

/// Releases an imported DLPack tensor (calls its producer's deleter) when dropped.
struct Imported {
    managed: *mut c_void,
    versioned: bool,
}

// SAFETY: the DLPack protocol lets the deleter be called from any thread (numpy's takes
// the GIL itself); the pointer is only used by `drop`, once.
unsafe impl Send for Imported {}
// SAFETY: as for Send; `Imported` has no `&self` methods that touch the pointer.
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `managed` is the consumed capsule's pointer, of the kind `versioned`
        // says; after consuming it we own it and call its deleter exactly once.
        unsafe {
            if self.versioned {
                let m = self.managed as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

fn invalid_capsule() -> PyErr {
    PyRuntimeError::new_err(
        "from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.",
    )
}

/// A tensor from a DLPack capsule: the memory is shared (the capsule is renamed
/// `used_...` and the producer's deleter runs when the tensor's storage is dropped),
/// except for bool and read-only tensors, which are copied.
fn import_capsule(capsule: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let obj = capsule.as_ptr();
    // SAFETY: `PyCapsule_IsValid` accepts any object and sets no error.
    let (versioned, name, used) = unsafe {
        if ffi::PyCapsule_IsValid(obj, VERSIONED.as_ptr()) == 1 {
            (true, VERSIONED, USED_VERSIONED)
        } else if ffi::PyCapsule_IsValid(obj, LEGACY.as_ptr()) == 1 {
            (false, LEGACY, USED_LEGACY)
        } else {
            return Err(invalid_capsule());
        }
    };
    // SAFETY: the capsule is valid with this name, so the pointer is non-null.
    let managed = unsafe { ffi::PyCapsule_GetPointer(obj, name.as_ptr()) };
    if managed.is_null() {
        return Err(invalid_capsule());
    }
    // SAFETY: a valid capsule of this name holds a live managed tensor of this kind
    // (the producer's contract), which stays valid until its deleter runs.
    let (dl, flags): (&DLTensor, u64) = unsafe {
        if versioned {
            let m = &*(managed as *const DLManagedTensorVersioned);
            if m.version.major > DLPACK_VERSION.major {
                return Err(PyBufferError::new_err(format!(
                    "rustgrad: DLPack version {}.{} is not supported (rustgrad reads 1.x)",
                    m.version.major, m.version.minor
                )));
            }
            (&m.dl_tensor, m.flags)
        } else {
            (&(*(managed as *const DLManagedTensor)).dl_tensor, 0)
        }
    };
    if dl.device.device_type != DL_CPU {
        return Err(PyRuntimeError::new_err(format!(
            "rustgrad: from_dlpack supports only CPU tensors (kDLCPU), but got device type {}",
            dl.device.device_type
        )));
    }
    let dtype = dtype_of(dl.dtype).ok_or_else(|| {
        PyRuntimeError::new_err(format!(
            "rustgrad: from_dlpack does not support the DLPack dtype (code={}, bits={}, lanes={})",
            dl.dtype.code, dl.dtype.bits, dl.dtype.lanes
        ))
    })?;
    let ndim = usize::try_from(dl.ndim).map_err(|_| invalid_capsule())?;
    // SAFETY: `shape` (and `strides` when non-null) point to `ndim` int64 values.
    let shape_raw: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
    };
    let strides_raw: Option<Vec<i64>> = (!dl.strides.is_null() && ndim > 0)
        .then(|| unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec());
    if shape_raw.iter().any(|&s| s < 0) {
        return Err(PyRuntimeError::new_err(
            "from_dlpack: negative size in the DLPack shape",
        ));
    }
    let shape: Vec<usize> = shape_raw.iter().map(|&s| s as usize).collect();
    let strides: Vec<usize> = match strides_raw {
        Some(s) => {
            if s.iter().any(|&x| x < 0) {
                return Err(PyValueError::new_err(
                    "rustgrad: from_dlpack does not support negative strides (rustgrad tensors have none); copy the array first",
                ));
            }
            s.iter().map(|&x| x as usize).collect()
        }
        None => rustgrad::layout::contiguous_strides(&shape).to_vec(),
    };
    let layout = Layout::new(shape.as_slice().into(), strides.as_slice().into(), 0);
    let numel = layout.numel();
    let len = if numel == 0 {
        0
    } else {
        layout.storage_extent().py()?
    };
    let itemsize = dtype.size_in_bytes();
    let data = (dl.data as *mut u8).wrapping_add(dl.byte_offset as usize);
    // From here on the capsule is ours: rename it so neither its destructor nor a
    // second import uses it, and let `owner` call the producer's deleter.
    // SAFETY: a valid capsule and a static name.
    if unsafe { ffi::PyCapsule_SetName(obj, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(capsule.py()));
    }
    let owner = Imported { managed, versioned };
    if numel == 0 {
        drop(owner);
        return Tensor::zeros(&shape, dtype).py();
    }
    let Some(ptr) = NonNull::new(data) else {
        return Err(PyRuntimeError::new_err("from_dlpack: null data pointer"));
    };
    if !(ptr.as_ptr() as usize).is_multiple_of(itemsize) {
        return Err(PyRuntimeError::new_err(
            "rustgrad: from_dlpack needs data aligned to its element size",
        ));
    }
    if dtype == DType::Bool || flags & FLAG_READ_ONLY != 0 {
        return copy_elements(ptr, &layout, dtype);
    }
    // SAFETY: the producer's DLTensor addresses `len` elements of `dtype` from `ptr`
    // (the extent of its own shape and strides), aligned (checked), valid until its
    // deleter runs, which `owner` calls when the storage is dropped. Not read-only
    // (checked). Writes by other users while a kernel runs are the user's race, as with
    // shared numpy arrays (Note [Shared memory]).
    unsafe { Tensor::from_external(ptr, len, dtype, Box::new(owner), layout) }.py()
}

/// A contiguous copy of the elements that `layout` addresses from `ptr` (bool: any
/// non-zero byte is true).
fn copy_elements(ptr: NonNull<u8>, layout: &Layout, dtype: DType) -> PyResult<Tensor> {
    let shape = layout.shape().to_vec();
    let numel = layout.numel();
    let itemsize = dtype.size_in_bytes();
    let mut offsets = Vec::with_capacity(numel);
    let mut index = vec![0usize; shape.len()];
    for _ in 0..numel {
        offsets.push(
            index
                .iter()
                .zip(layout.strides())
                .map(|(&i, &s)| i * s)
                .sum::<usize>(),
        );
        for d in (0..shape.len()).rev() {
            index[d] += 1;
            if index[d] < shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    // SAFETY (each read): the offset is within the extent the producer's shape and
    // strides address, aligned (checked by the caller); read_unaligned of plain bytes.
    let read = |off: usize, k: usize| -> [u8; 8] {
        let mut b = [0u8; 8];
        for (j, byte) in b.iter_mut().enumerate().take(k) {
            *byte = unsafe { ptr.as_ptr().add(off * k + j).read() };
        }
        b
    };
    // A numeric element from its native-endian bytes.
    macro_rules! gather {
        ($t:ty, $n:expr) => {
            Tensor::from_vec(
                offsets
                    .iter()
                    .map(|&o| {
                        let b = read(o, itemsize);
                        let mut bytes = [0u8; $n];
                        bytes.copy_from_slice(&b[..$n]);
                        <$t>::from_ne_bytes(bytes)
                    })
                    .collect::<Vec<$t>>(),
                &shape,
            )
        };
    }
    let t: rustgrad::Result<Tensor> = match dtype {
        DType::Bool => Tensor::from_vec(
            offsets
                .iter()
                .map(|&o| read(o, 1)[0] != 0)
                .collect::<Vec<bool>>(),
            &shape,
        ),
        DType::F32 => gather!(f32, 4),
        DType::F64 => gather!(f64, 8),
        DType::F16 => gather!(half::f16, 2),
        DType::BF16 => gather!(half::bf16, 2),
        DType::I64 => gather!(i64, 8),
        DType::I32 => gather!(i32, 4),
        DType::I16 => gather!(i16, 2),
        DType::I8 => gather!(i8, 1),
        DType::U8 => gather!(u8, 1),
    };
    t.py()
}

/// `from_dlpack(ext_tensor)`: a tensor sharing the memory of any object with
/// `__dlpack__` (numpy arrays, rustgrad tensors, ...) or of a DLPack capsule.
#[pyfunction]
fn from_dlpack(py: Python<'_>, ext_tensor: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let capsule = if ext_tensor.hasattr("__dlpack__")? {
        if ext_tensor.hasattr("__dlpack_device__")? {
            let device: (i32, i32) = ext_tensor.call_method0("__dlpack_device__")?.extract()?;
            if device.0 != DL_CPU {
                return Err(PyRuntimeError::new_err(format!(
                    "rustgrad: from_dlpack supports only CPU tensors (kDLCPU), but got device type {}",
                    device.0
                )));
            }
        }
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("max_version", PyTuple::new(py, [1, 0])?)?;
        match ext_tensor.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(c) => c,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                ext_tensor.call_method0("__dlpack__")?
            }
            Err(e) => return Err(e),
        }
    } else {
        ext_tensor.clone()
    };
    let tensor = import_capsule(&capsule)?;
    crate::leaf(tensor, false)
}

/// Adds `from_dlpack` to `_rustgrad`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    Ok(())
}
