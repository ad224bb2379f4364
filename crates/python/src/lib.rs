//! PyO3 bindings: the `rustgrad._rustgrad` extension module. All Python-facing code is
//! here; the engine crate knows nothing of Python. See Note [The GIL].

mod anomaly;
mod convert;
mod device;
mod distributed;
mod dlpack;
mod dtype;
mod errors;
mod factory;
mod flag;
mod function;
mod hooks;
mod identity;
mod jit;
mod node;
mod ops;
mod optim;
mod random;
mod saved_hooks;
mod serialize;
mod tensor;

use crate::convert::{extract_sizes, tensor_from_data};
use crate::dtype::{extract_opt_dtype, PyDType};
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustgrad::{DType, Tensor, Variable};

/// Large tensor buffers are reused between steps instead of faulted in anew (Note [Buffer cache]).
#[global_allocator]
static ALLOCATOR: rustgrad::buffer_cache::BufferCache = rustgrad::buffer_cache::BufferCache::new();

pub(crate) fn leaf(tensor: Tensor, requires_grad: bool) -> PyResult<Py<PyTensor>> {
    let var = Variable::new(tensor, requires_grad).py()?;
    Python::attach(|py| tensor::new_leaf(py, var))
}

fn shape_of(size: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    Ok(rustgrad::shape::checked_shape(&extract_sizes(size)?)
        .py()?
        .to_vec())
}

/// A shape for a new tensor of `dtype`, checked to be allocatable.
pub(crate) fn alloc_shape(size: &Bound<'_, PyTuple>, dtype: DType) -> PyResult<Vec<usize>> {
    let shape = shape_of(size)?;
    rustgrad::shape::checked_storage_bytes(&shape, dtype.size_in_bytes()).py()?;
    rustgrad::tensor::check_allocation(shape.iter().product(), dtype).py()?;
    Ok(shape)
}

/// A new leaf of the given size (`*size`) and dtype (default: the default float dtype,
/// Note [Devices and default dtype]), made by `make`
/// once the size is known to be allocatable.
fn sized_leaf(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    device: Option<&Bound<'_, PyAny>>,
    make: impl FnOnce(&[usize], DType) -> rustgrad::Result<Tensor>,
) -> PyResult<Py<PyTensor>> {
    let meta = device::factory_is_meta(device)?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    if meta {
        let shape = shape_of(size)?;
        return Python::attach(|py| device::meta_tensor(py, &shape, dtype, requires_grad));
    }
    let shape = alloc_shape(size, dtype)?;
    leaf(make(&shape, dtype).py()?, requires_grad)
}

/// `tensor(data, dtype=None, requires_grad=False)`: a new tensor copying `data`.
#[pyfunction(name = "tensor")]
#[pyo3(signature = (data, *, dtype = None, device = None, requires_grad = false))]
fn tensor_fn(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::tensor_requires_grad)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = device::factory_is_meta(device)?;
    device::factory_leaf(
        meta,
        tensor_from_data(data, extract_opt_dtype(dtype)?)?,
        requires_grad,
    )
}

/// `zeros(*size, dtype=None, requires_grad=False)`.
#[pyfunction]
#[pyo3(signature = (*size, dtype = None, device = None, requires_grad = false))]
fn zeros(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::zeros_requires_grad)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    sized_leaf(size, dtype, requires_grad, device, Tensor::zeros)
}

/// `empty(*size, dtype=None, device=None, requires_grad=False)`. PyTorch leaves the
/// values uninitialised; rustgrad zero-fills them, which is one of the values PyTorch
/// may return, and keeps safe Rust free of uninitialised memory.
#[pyfunction]
#[pyo3(signature = (*size, dtype = None, device = None, requires_grad = false))]
fn empty(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::empty_requires_grad)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    sized_leaf(size, dtype, requires_grad, device, Tensor::zeros)
}

/// `ones(*size, dtype=None, requires_grad=False)`.
#[pyfunction]
#[pyo3(signature = (*size, dtype = None, device = None, requires_grad = false))]
fn ones(
    size: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::ones_requires_grad)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    sized_leaf(size, dtype, requires_grad, device, Tensor::ones)
}

/// `full(size, fill_value, dtype=None, requires_grad=False)`; the dtype follows the
/// fill value (float → the default float dtype, int → int64, bool → bool) when not given.
#[pyfunction]
#[pyo3(signature = (size, fill_value, *, dtype = None, device = None, requires_grad = false))]
fn full(
    size: &Bound<'_, PyAny>,
    fill_value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::full_requires_grad)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = device::factory_is_meta(device)?;
    let value = convert::extract_scalar(fill_value)?
        .ok_or_else(|| PyValueError::new_err("fill_value must be a number"))?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(value.natural_dtype());
    value.check_fits(dtype).py()?;
    let size = PyTuple::new(size.py(), [size])?;
    if meta {
        return device::meta_tensor(size.py(), &shape_of(&size)?, dtype, requires_grad);
    }
    leaf(
        Tensor::full_scalar(&alloc_shape(&size, dtype)?, value, dtype).py()?,
        requires_grad,
    )
}

/// `arange(end)`, `arange(start, end[, step])`; int64 when all bounds are ints.
#[pyfunction]
#[pyo3(signature = (*args, dtype = None, device = None, requires_grad = false))]
fn arange(
    args: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::arange_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = device::factory_is_meta(device)?;
    let nums = args
        .iter()
        .map(|a| {
            convert::extract_scalar(&a)?
                .ok_or_else(|| PyValueError::new_err("arange() bounds must be numbers"))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let all_int = nums.iter().all(|s| !s.is_floating_point());
    let zero = rustgrad::Scalar::Int(0);
    let one = rustgrad::Scalar::Int(1);
    let (start, end, step) = match nums.as_slice() {
        [end] => (zero, *end, one),
        [start, end] => (*start, *end, one),
        [start, end, step] => (*start, *end, *step),
        _ => {
            return Err(PyValueError::new_err(
                "arange() takes 1 to 3 positional arguments",
            ))
        }
    };
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(if all_int {
        DType::I64
    } else {
        DType::default_float()
    });
    device::factory_leaf(
        meta,
        Tensor::arange_scalar(start, end, step, dtype).py()?,
        requires_grad,
    )
}

/// `rand(*size, generator=None)`: uniform samples in [0, 1), PyTorch's numbers.
#[pyfunction]
#[pyo3(signature = (*size, generator = None, dtype = None, device = None, requires_grad = false))]
fn rand(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Option<&Bound<'_, random::PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::rand_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    if device::factory_is_meta(device)? {
        let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::default_float());
        return device::meta_tensor(py, &shape_of(size)?, dtype, requires_grad);
    }
    random::sample_leaf(
        py,
        size,
        generator,
        dtype,
        requires_grad,
        random::Sampler::Uniform,
    )
}

/// `randn(*size, generator=None)`: standard normal samples, PyTorch's numbers.
#[pyfunction]
#[pyo3(signature = (*size, generator = None, dtype = None, device = None, requires_grad = false))]
fn randn(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Option<&Bound<'_, random::PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::randn_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    if device::factory_is_meta(device)? {
        let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::default_float());
        return device::meta_tensor(py, &shape_of(size)?, dtype, requires_grad);
    }
    random::sample_leaf(
        py,
        size,
        generator,
        dtype,
        requires_grad,
        random::Sampler::Normal,
    )
}

/// A tensor sharing a numpy array's memory, as PyTorch's `from_numpy` (float32, float64
/// and int64 arrays; other dtypes, and read-only or misaligned arrays, are copied). See
/// Note [Shared memory].
#[pyfunction]
fn from_numpy(array: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    match convert::share_numpy_array(array)? {
        Some(t) => leaf(t, false),
        None => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            array.get_type().name()?
        ))),
    }
}

/// A new leaf sharing `data`'s storage, with the given flags (`Variable(...)`).
#[pyfunction]
#[pyo3(signature = (data, requires_grad = false, volatile = false))]
fn _make_variable(
    data: &Bound<'_, PyTensor>,
    requires_grad: bool,
    volatile: bool,
) -> PyResult<Py<PyTensor>> {
    let t = data.get().var.tensor().clone();
    if volatile {
        return Python::attach(|py| Py::new(py, PyTensor::wrap(Variable::new_volatile(t))));
    }
    leaf(t, requires_grad)
}

thread_local! {
    /// Per backward pass running on this thread (innermost last): whether it captures
    /// gradients for given inputs (`grad`, `backward(inputs=)`), PyTorch's non-empty
    /// `exec_info`.
    static CAPTURING_PASSES: std::cell::RefCell<Vec<bool>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Marks a backward pass as running on this thread for `_is_checkpoint_valid`.
pub(crate) struct PassGuard;

impl PassGuard {
    /// A pass that captures gradients for given inputs (`capturing`) or not.
    pub(crate) fn new(capturing: bool) -> PassGuard {
        CAPTURING_PASSES.with(|p| p.borrow_mut().push(capturing));
        PassGuard
    }
}

impl Drop for PassGuard {
    fn drop(&mut self) {
        CAPTURING_PASSES.with(|p| p.borrow_mut().pop());
    }
}

/// PyTorch's `torch.autograd._is_checkpoint_valid()`: false inside a backward pass
/// started by `autograd.grad` or `backward(inputs=...)` (the reentrant checkpoint
/// cannot run there). It sees passes started on this thread, which is where the
/// scheduler runs Python nodes (Note [Checkpointing]).
#[pyfunction]
fn _is_checkpoint_valid() -> bool {
    CAPTURING_PASSES.with(|p| !p.borrow().last().copied().unwrap_or(false))
}

/// One backward pass from several roots (`rustgrad.autograd.backward`); with
/// `inputs`, only those tensors accumulate `.grad`.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs = None))]
fn _backward(
    py: Python<'_>,
    tensors: Vec<Bound<'_, PyTensor>>,
    grad_tensors: Vec<Option<Bound<'_, PyTensor>>>,
    retain_graph: bool,
    create_graph: bool,
    inputs: Option<Vec<Bound<'_, PyTensor>>>,
) -> PyResult<()> {
    let (roots, grads) = roots_and_grads(&tensors, &grad_tensors)?;
    let _pass = PassGuard::new(inputs.is_some());
    match inputs {
        None => py
            .detach(move || {
                rustgrad::autograd::backward(&roots, &grads, retain_graph, create_graph)
            })
            .py(),
        Some(inputs) => {
            let inputs: Vec<Variable> = inputs.iter().map(|t| t.get().var.clone()).collect();
            py.detach(move || {
                Variable::backward_inputs(&roots, &grads, &inputs, retain_graph, create_graph)
            })
            .py()
        }
    }
}

/// `rustgrad.autograd.grad`: the gradients of `outputs` w.r.t. `inputs`, `None` where
/// an input is unused (only possible with `allow_unused`).
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused))]
fn _grad(
    py: Python<'_>,
    outputs: Vec<Bound<'_, PyTensor>>,
    inputs: Vec<Bound<'_, PyTensor>>,
    grad_outputs: Vec<Option<Bound<'_, PyTensor>>>,
    retain_graph: bool,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Vec<Option<Py<PyTensor>>>> {
    let (roots, grads) = roots_and_grads(&outputs, &grad_outputs)?;
    let inputs: Vec<Variable> = inputs.iter().map(|t| t.get().var.clone()).collect();
    let _pass = PassGuard::new(true);
    let result = py
        .detach(move || {
            Variable::autograd_grad(
                &roots,
                &inputs,
                &grads,
                retain_graph,
                create_graph,
                allow_unused,
            )
        })
        .py()?;
    result
        .into_iter()
        .map(|g| g.map(|g| Py::new(py, PyTensor::wrap(g))).transpose())
        .collect()
}

/// The roots and their gradients as Variables (one gradient slot per root).
fn roots_and_grads(
    tensors: &[Bound<'_, PyTensor>],
    grad_tensors: &[Option<Bound<'_, PyTensor>>],
) -> PyResult<(Vec<Variable>, Vec<Option<Variable>>)> {
    if tensors.len() != grad_tensors.len() {
        return Err(PyRuntimeError::new_err(format!(
            "got {} tensors and {} gradients",
            tensors.len(),
            grad_tensors.len()
        )));
    }
    let roots: Vec<Variable> = tensors.iter().map(|t| t.get().var.clone()).collect();
    let grads: Vec<Option<Variable>> = grad_tensors
        .iter()
        .map(|g| g.as_ref().map(|g| g.get().var.clone()))
        .collect();
    Ok((roots, grads))
}

/// `set_default_dtype(d)`: the dtype factories, Python floats and integer-to-float
/// promotion use from now on, in the whole process (any floating dtype, as PyTorch 2.15).
#[pyfunction]
fn set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = d.cast::<PyDType>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "invalid dtype object: only floating-point types are supported as the default type",
        )
    })?;
    DType::set_default_float(d.get().inner).py()
}

/// `get_default_dtype()`: float32 unless `set_default_dtype` changed it.
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> PyResult<Bound<'_, PyDType>> {
    crate::dtype::dtype_object(py, DType::default_float())
}

/// Sets the number of threads kernels use (1 to `rustgrad.parallel.MAX_THREADS`,
/// 1024). The pool is started here, so a failure to start it raises here.
#[pyfunction]
fn set_num_threads(py: Python<'_>, n: i64) -> PyResult<()> {
    // PyTorch's check and message (RuntimeError).
    let n = usize::try_from(n)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| PyRuntimeError::new_err("set_num_threads expects a positive integer"))?;
    py.detach(|| rustgrad::set_num_threads(n)).py()
}

/// The number of threads kernels use.
#[pyfunction]
fn get_num_threads() -> usize {
    rustgrad::get_num_threads()
}

/// Starts recording the parallel plan of every GEMM and convolution kernel call
/// (`rustgrad.parallel.record_plans`).
#[pyfunction]
fn _start_plan_recording() {
    rustgrad::parallel::start_recording()
}

/// Stops recording and returns `(kernel, tasks, min_work, max_work)` per recorded call.
#[pyfunction]
fn _stop_plan_recording() -> Vec<(&'static str, usize, u64, u64)> {
    rustgrad::parallel::stop_recording()
        .into_iter()
        .map(|r| (r.kernel, r.tasks, r.min_work, r.max_work))
        .collect()
}

/// Bytes of tensor memory the engine holds now (`rustgrad.cpu.memory_allocated`).
#[pyfunction]
fn _memory_allocated() -> usize {
    rustgrad::memory::allocated()
}

/// The most tensor memory held at once since the last reset
/// (`rustgrad.cpu.max_memory_allocated`).
#[pyfunction]
fn _max_memory_allocated() -> usize {
    rustgrad::memory::peak()
}

/// Starts a new peak from the memory held now (`rustgrad.cpu.reset_peak_memory_stats`).
#[pyfunction]
fn _reset_peak_memory_stats() {
    rustgrad::memory::reset_peak()
}

/// Whether this thread records autograd history.
#[pyfunction]
fn is_grad_enabled() -> bool {
    rustgrad::autograd::is_grad_enabled()
}

/// Switches this thread's grad mode (the context managers are in Python).
#[pyfunction]
fn _set_grad_enabled(enabled: bool) {
    rustgrad::autograd::set_grad_enabled(enabled);
}

/// Whether inference mode is on for this thread.
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    rustgrad::autograd::is_inference_mode_enabled()
}

/// Sets this thread's inference mode, and grad mode to its opposite (the context
/// manager is in Python and restores both).
#[pyfunction]
fn _set_inference_mode(enabled: bool) {
    rustgrad::autograd::grad_mode::set_inference_mode(enabled);
}

/// Number of autograd graph nodes alive in the process (for leak tests).
#[pyfunction]
fn _live_nodes() -> usize {
    rustgrad::autograd::live_nodes()
}

/// Backward nodes run on the pool so far (Note [Parallel backward]; for tests).
#[pyfunction]
fn _pool_nodes_run() -> u64 {
    rustgrad::autograd::pool_nodes_run()
}

#[pymodule]
fn _rustgrad(m: &Bound<'_, PyModule>) -> PyResult<()> {
    if std::env::var_os("RUSTGRAD_BUFFER_CACHE").is_some_and(|v| v == "0") {
        ALLOCATOR.disable();
    }
    m.add_class::<PyTensor>()?;
    jit::register(m)?;
    m.add_class::<PyDType>()?;
    m.add_class::<node::PyNode>()?;
    m.add_class::<hooks::PyRemovableHandle>()?;
    for dtype in DType::ALL {
        let name = dtype.torch_name().trim_start_matches("torch.");
        m.add(name, crate::dtype::dtype_object(m.py(), dtype)?)?;
    }
    ops::loss::register(m)?;
    m.add_function(wrap_pyfunction!(tensor_fn, m)?)?;
    m.add_function(wrap_pyfunction!(crate::dtype::result_type, m)?)?;
    m.add_function(wrap_pyfunction!(crate::dtype::promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(crate::dtype::can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(serialize::_safetensors_serialize, m)?)?;
    m.add_function(wrap_pyfunction!(serialize::_safetensors_deserialize, m)?)?;
    m.add_function(wrap_pyfunction!(serialize::_storage_info, m)?)?;
    m.add_function(wrap_pyfunction!(serialize::_tensor_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(ones, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(factory::linspace, m)?)?;
    m.add_function(wrap_pyfunction!(factory::logspace, m)?)?;
    m.add_function(wrap_pyfunction!(factory::eye, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    random::register(m)?;
    dlpack::register(m)?;
    distributed::register(m)?;
    device::register(m)?;
    ops::conv::register(m)?;
    ops::pool::register(m)?;
    ops::norm::register(m)?;
    ops::attention::register(m)?;
    ops::activation::register(m)?;
    ops::embedding::register(m)?;
    ops::rnn::register(m)?;
    m.add_function(wrap_pyfunction!(set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(_make_variable, m)?)?;
    m.add_function(wrap_pyfunction!(_backward, m)?)?;
    m.add_function(wrap_pyfunction!(function::_custom_apply, m)?)?;
    m.add_function(wrap_pyfunction!(_grad, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_start_plan_recording, m)?)?;
    m.add_function(wrap_pyfunction!(_stop_plan_recording, m)?)?;
    m.add_function(wrap_pyfunction!(_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(_max_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(_reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_push_saved_tensors_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_pop_saved_tensors_hooks, m)?)?;
    m.add_class::<node::PySavedTensor>()?;
    m.add_function(wrap_pyfunction!(_live_nodes, m)?)?;
    m.add_function(wrap_pyfunction!(_pool_nodes_run, m)?)?;
    m.add_function(wrap_pyfunction!(_is_checkpoint_valid, m)?)?;
    m.add_function(wrap_pyfunction!(anomaly::set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(anomaly::is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(anomaly::is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(optim::_optim_step, m)?)?;
    m.add_function(wrap_pyfunction!(ops::registry::_op_registry, m)?)?;
    anomaly::install();
    Ok(())
}
