//! Bindings of the engine's safetensors files (`rustgrad.serialization` builds
//! checkpoints on them) and the storage identity that lets it save views sharing one
//! storage. See Note [Checkpoints].

use crate::errors::IntoPyResult;
use crate::leaf;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rustgrad::serialize::{from_safetensors, to_safetensors, RawTensor};
use rustgrad::Tensor;
use std::collections::BTreeMap;
use std::sync::Arc;

/// (name, tensor) pairs as `_safetensors_deserialize` returns them.
type NamedTensors = Vec<(String, Py<PyTensor>)>;

/// The bytes of a safetensors file holding `tensors` (name, tensor) and `metadata`.
/// The tensors' elements are written in row-major order whatever their layout.
#[pyfunction]
pub(crate) fn _safetensors_serialize<'py>(
    py: Python<'py>,
    tensors: Vec<(String, PyRef<'py, PyTensor>)>,
    metadata: BTreeMap<String, String>,
) -> PyResult<Bound<'py, PyBytes>> {
    // Tensor handles are cheap clones (shared storages); the copying runs without the GIL.
    let handles: Vec<(String, Tensor)> = tensors
        .iter()
        .map(|(name, t)| (name.clone(), (*t.var.tensor()).clone()))
        .collect();
    let bytes = py
        .detach(|| {
            let raw: Vec<RawTensor> = handles
                .iter()
                .map(|(name, t)| RawTensor::from_tensor(name, t))
                .collect();
            to_safetensors(&raw, metadata)
        })
        .py()?;
    Ok(PyBytes::new(py, &bytes))
}

/// The metadata and the (name, tensor) pairs, sorted by name, of a safetensors file's
/// bytes; ValueError when the file is truncated, corrupted or not safetensors.
#[pyfunction]
pub(crate) fn _safetensors_deserialize(
    py: Python<'_>,
    data: &[u8],
) -> PyResult<(BTreeMap<String, String>, NamedTensors)> {
    let (metadata, raw) = py.detach(|| from_safetensors(data)).py()?;
    let tensors = raw
        .iter()
        .map(|r| Ok((r.name.clone(), leaf(r.to_tensor().py()?, false)?)))
        .collect::<PyResult<Vec<_>>>()?;
    Ok((metadata, tensors))
}

/// `(key, numel)` of the storage under `tensor`: views of one storage (and `detach()`
/// results) have the same key while the storage is alive, like PyTorch's
/// `untyped_storage().data_ptr()`.
#[pyfunction]
pub(crate) fn _storage_info(tensor: PyRef<'_, PyTensor>) -> (usize, usize) {
    let data = tensor.var.tensor();
    let storage = data.storage();
    let numel = storage.read().len();
    (Arc::as_ptr(storage) as usize, numel)
}

/// The little-endian bytes of `tensor`'s elements in row-major order, as a
/// safetensors file stores them (used to checksum a checkpoint's tensors).
#[pyfunction]
pub(crate) fn _tensor_bytes<'py>(
    py: Python<'py>,
    tensor: PyRef<'py, PyTensor>,
) -> Bound<'py, PyBytes> {
    let raw = RawTensor::from_tensor("", &tensor.var.tensor());
    PyBytes::new(py, &raw.data)
}
