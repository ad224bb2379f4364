//! The engine's data-parallel arithmetic (`rustgrad::distributed`) for the Python
//! `DistributedDataParallel`: bucket assignment, flattening a bucket's gradients into
//! one buffer, and writing the reduced buffer back. MPI itself is driven in Python
//! (mpi4py). See Note [Distributed].

use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use rustgrad::distributed::{self, Bucket};
use rustgrad::Tensor;

/// A bucket of parameters reduced together (`rustgrad::distributed::Bucket`).
#[pyclass(module = "rustgrad._rustgrad", name = "_DdpBucket", frozen)]
struct PyBucket {
    inner: Bucket,
}

#[pymethods]
impl PyBucket {
    /// The parameters' indices, in their order in the flat buffer.
    #[getter]
    fn indices(&self) -> Vec<usize> {
        self.inner.indices().to_vec()
    }

    /// Where each parameter starts in the flat buffer (in elements).
    #[getter]
    fn offsets(&self) -> Vec<usize> {
        self.inner.offsets().to_vec()
    }

    /// The flat buffer's number of elements.
    #[getter]
    fn numel(&self) -> usize {
        self.inner.numel()
    }

    /// The flat buffer's size in bytes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.bytes()
    }
}

fn tensors(grads: &[Option<PyRef<'_, PyTensor>>]) -> Vec<Option<Tensor>> {
    grads
        .iter()
        .map(|g| g.as_ref().map(|g| g.var.tensor().clone()))
        .collect()
}

/// `_ddp_assign_buckets(params, first_bucket_bytes, bucket_cap_bytes)`: PyTorch's
/// bucket assignment over `params` (registration order).
#[pyfunction]
fn _ddp_assign_buckets(
    params: Vec<PyRef<'_, PyTensor>>,
    first_bucket_bytes: usize,
    bucket_cap_bytes: usize,
) -> PyResult<Vec<PyBucket>> {
    let tensors: Vec<Tensor> = params.iter().map(|p| p.var.tensor().clone()).collect();
    Ok(
        distributed::assign_buckets(&tensors, first_bucket_bytes, bucket_cap_bytes)
            .py()?
            .into_iter()
            .map(|inner| PyBucket { inner })
            .collect(),
    )
}

/// `_ddp_flatten_bucket(bucket, grads, world_size)`: a new 1-D tensor holding each
/// gradient (None: zeros) times 1/world_size.
#[pyfunction]
fn _ddp_flatten_bucket(
    py: Python<'_>,
    bucket: &PyBucket,
    grads: Vec<Option<PyRef<'_, PyTensor>>>,
    world_size: usize,
) -> PyResult<Py<PyTensor>> {
    let grads = tensors(&grads);
    let flat = py
        .detach(|| {
            let refs: Vec<Option<&Tensor>> = grads.iter().map(Option::as_ref).collect();
            distributed::flatten_bucket(&bucket.inner, &refs, world_size)
        })
        .py()?;
    crate::leaf(flat, false)
}

/// `_ddp_unflatten_bucket(bucket, flat, grads)`: writes `flat`'s values into each
/// gradient in place; returns, per position, a new tensor where the gradient was None.
#[pyfunction]
fn _ddp_unflatten_bucket(
    py: Python<'_>,
    bucket: &PyBucket,
    flat: PyRef<'_, PyTensor>,
    grads: Vec<Option<PyRef<'_, PyTensor>>>,
) -> PyResult<Vec<Option<Py<PyTensor>>>> {
    let grads = tensors(&grads);
    let flat = flat.var.tensor().clone();
    let new = py
        .detach(|| {
            let refs: Vec<Option<&Tensor>> = grads.iter().map(Option::as_ref).collect();
            distributed::unflatten_bucket(&bucket.inner, &flat, &refs)
        })
        .py()?;
    new.into_iter()
        .map(|t| t.map(|t| crate::leaf(t, false)).transpose())
        .collect()
}

/// Adds the functions and the bucket class to the extension module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyBucket>()?;
    m.add_function(wrap_pyfunction!(_ddp_assign_buckets, m)?)?;
    m.add_function(wrap_pyfunction!(_ddp_flatten_bucket, m)?)?;
    m.add_function(wrap_pyfunction!(_ddp_unflatten_bucket, m)?)?;
    Ok(())
}
