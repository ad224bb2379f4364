//! Random numbers: `Generator`, `default_generator`, `manual_seed`, `seed`,
//! `initial_seed`, `get_rng_state`/`set_rng_state`, `randint`, `randperm`, and the
//! samplers behind `rand`, `randn`, `Tensor.uniform_` and `Tensor.normal_`. The engine's
//! `rustgrad::random` does the work; see Note [Random numbers].

use crate::convert::extract_int;
use crate::dtype::extract_opt_dtype;
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use crate::{alloc_shape, leaf};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyInt, PyTuple};
use rustgrad::random::{self, Generator, STATE_BYTES};
use rustgrad::{DType, Tensor, Variable};
use std::sync::Arc;

/// Work above this many elements runs with the GIL released.
const DETACH_MIN_ELEMENTS: usize = 1 << 15;

/// `torch.Generator`: a CPU random number generator (PyTorch's mt19937).
#[pyclass(name = "Generator", module = "rustgrad", frozen)]
pub struct PyGenerator {
    inner: Arc<Generator>,
}

/// The one Python object for the default generator, so that
/// `manual_seed(s) is default_generator`.
fn default_object(py: Python<'_>) -> PyResult<Py<PyGenerator>> {
    static DEFAULT: PyOnceLock<Py<PyGenerator>> = PyOnceLock::new();
    DEFAULT
        .get_or_try_init(py, || {
            Py::new(
                py,
                PyGenerator {
                    inner: random::default_generator(),
                },
            )
        })
        .map(|g| g.clone_ref(py))
}

/// The generator a `generator=` argument names, or the default one.
pub fn generator_or_default(generator: Option<&Bound<'_, PyGenerator>>) -> Arc<Generator> {
    generator.map_or_else(random::default_generator, |g| Arc::clone(&g.get().inner))
}

/// A seed as PyTorch's `manual_seed` takes it: `int(seed)`, from -2^63 to 2^64 - 1,
/// negative values taken modulo 2^64.
fn extract_seed(seed: &Bound<'_, PyAny>) -> PyResult<u64> {
    let seed = if seed.is_instance_of::<PyInt>() {
        seed.clone()
    } else {
        seed.py()
            .get_type::<PyInt>()
            .call1((seed,))
            .map_err(|_| PyTypeError::new_err("seed must be an int"))?
    };
    if let Ok(v) = seed.extract::<u64>() {
        return Ok(v);
    }
    seed.extract::<i64>()
        .map(|v| v as u64)
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

/// The state bytes as a tensor: int64 values 0..=255, since rustgrad has no uint8.
fn state_tensor(bytes: Vec<u8>) -> PyResult<Py<PyTensor>> {
    let values: Vec<i64> = bytes.into_iter().map(i64::from).collect();
    let len = values.len();
    leaf(Tensor::from_vec(values, &[len]).py()?, false)
}

/// Bytes from a state tensor (integer values 0..=255) or a bytes-like object.
fn state_bytes(state: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(t) = state.cast::<PyTensor>() {
        let tensor = t.get().var.tensor();
        if tensor.dtype() != DType::I64 || tensor.dim() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "RNG state must be a 1-D integer tensor of byte values (as get_rng_state() returns), but got a {} of shape {:?}",
                tensor.dtype().legacy_type_name(),
                tensor.shape()
            )));
        }
        return tensor
            .try_to_vec::<i64>()
            .py()?
            .into_iter()
            .map(|v| {
                u8::try_from(v).map_err(|_| {
                    PyRuntimeError::new_err(format!("RNG state value {v} is not a byte"))
                })
            })
            .collect();
    }
    state.extract::<Vec<u8>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "expected a Tensor as the RNG state, but got {}",
            state
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

#[pymethods]
impl PyGenerator {
    /// `Generator(device='cpu')`: a new generator seeded with 67280421310721.
    #[new]
    #[pyo3(signature = (device = None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<PyGenerator> {
        crate::device::check_device(device)?;
        Ok(PyGenerator {
            inner: Arc::new(Generator::default()),
        })
    }

    /// Reseeds this generator and returns it.
    fn manual_seed<'py>(
        slf: Bound<'py, Self>,
        seed: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().inner.manual_seed(extract_seed(seed)?);
        Ok(slf)
    }

    /// Reseeds from the operating system's entropy; returns the new seed.
    fn seed(&self) -> u64 {
        self.inner.seed()
    }

    /// The seed this generator was last seeded with.
    fn initial_seed(&self) -> u64 {
        self.inner.initial_seed()
    }

    /// The state: 5056 byte values in PyTorch's layout, as an int64 tensor.
    fn get_state(&self) -> PyResult<Py<PyTensor>> {
        state_tensor(self.inner.get_state())
    }

    /// Restores a state from `get_state()`; returns this generator.
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        new_state: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, Self>> {
        slf.get().inner.set_state(&state_bytes(new_state)?).py()?;
        Ok(slf)
    }

    /// Always `device(type='cpu')`.
    #[getter]
    fn device(&self) -> crate::device::PyDevice {
        crate::device::PyDevice::CPU
    }
}

/// Seeds the default generator; returns it (`torch.manual_seed`).
#[pyfunction]
fn manual_seed(py: Python<'_>, seed: &Bound<'_, PyAny>) -> PyResult<Py<PyGenerator>> {
    random::manual_seed(extract_seed(seed)?);
    default_object(py)
}

/// Reseeds the default generator from the OS; returns the seed (`torch.seed`).
#[pyfunction]
fn seed() -> u64 {
    random::default_generator().seed()
}

/// The default generator's seed (`torch.initial_seed`).
#[pyfunction]
fn initial_seed() -> u64 {
    random::default_generator().initial_seed()
}

/// The default generator's state (`torch.get_rng_state`).
#[pyfunction]
fn get_rng_state() -> PyResult<Py<PyTensor>> {
    state_tensor(random::default_generator().get_state())
}

/// Restores the default generator's state (`torch.set_rng_state`).
#[pyfunction]
fn set_rng_state(new_state: &Bound<'_, PyAny>) -> PyResult<()> {
    random::default_generator()
        .set_state(&state_bytes(new_state)?)
        .py()
}

/// Which sampler `sample_leaf` runs.
#[derive(Clone, Copy)]
pub enum Sampler {
    /// `rand`: uniform in [0, 1).
    Uniform,
    /// `randn`: standard normal.
    Normal,
}

/// A new leaf of size `*size` filled by `sampler` from `generator` (`rand`, `randn`).
pub fn sample_leaf(
    py: Python<'_>,
    size: &Bound<'_, PyTuple>,
    generator: Option<&Bound<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
    sampler: Sampler,
) -> PyResult<Py<PyTensor>> {
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::default_float());
    let shape = alloc_shape(size, dtype)?;
    let numel: usize = shape.iter().product();
    let gen = generator_or_default(generator);
    let draw = move || match sampler {
        Sampler::Uniform => gen.rand(&shape, dtype),
        Sampler::Normal => gen.randn(&shape, dtype),
    };
    let tensor = if numel >= DETACH_MIN_ELEMENTS {
        py.detach(draw)
    } else {
        draw()
    };
    leaf(tensor.py()?, requires_grad)
}

/// `randint(low=0, high, size, *, generator=None, dtype=int64, requires_grad=False)`:
/// integers uniform in `[low, high)`; `randint(high, size)` and `randint(low, high,
/// size)` as in PyTorch.
#[pyfunction]
#[pyo3(signature = (*args, low = None, high = None, size = None, generator = None, dtype = None, device = None, requires_grad = false))]
#[allow(clippy::too_many_arguments)]
fn randint(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    low: Option<&Bound<'_, PyAny>>,
    high: Option<&Bound<'_, PyAny>>,
    size: Option<&Bound<'_, PyAny>>,
    generator: Option<&Bound<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::randint_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = crate::device::factory_is_meta(device)?;
    let mut positional: Vec<Bound<'_, PyAny>> = args.iter().collect();
    let size = match size {
        Some(s) => s.clone(),
        None => positional
            .pop()
            .ok_or_else(|| PyTypeError::new_err("randint() missing required argument 'size'"))?,
    };
    let (low, high) = match (positional.as_slice(), low, high) {
        ([], low, Some(high)) => (low.map(extract_int).transpose()?.unwrap_or(0), extract_int(high)?),
        ([high], None, None) => (0, extract_int(high)?),
        ([low, high], None, None) => (extract_int(low)?, extract_int(high)?),
        _ => {
            return Err(PyTypeError::new_err(
                "randint() received an invalid combination of arguments - expected (int high, tuple of ints size) or (int low, int high, tuple of ints size)",
            ))
        }
    };
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::I64);
    let size = PyTuple::new(py, [size])?;
    if meta {
        // No storage: any representable shape (Note [Meta device]).
        let sizes = crate::convert::extract_sizes(&size)?;
        let shape = rustgrad::shape::checked_shape(&sizes).py()?.to_vec();
        return crate::device::meta_tensor(py, &shape, dtype, requires_grad);
    }
    let shape = alloc_shape(&size, dtype)?;
    let gen = generator_or_default(generator);
    let tensor = gen.randint(low, high, &shape, dtype).py()?;
    leaf(tensor, requires_grad)
}

/// `randperm(n, *, generator=None, dtype=int64, requires_grad=False)`: a random
/// permutation of `0..n`.
#[pyfunction]
#[pyo3(signature = (n, *, generator = None, dtype = None, device = None, requires_grad = false))]
fn randperm(
    n: &Bound<'_, PyAny>,
    generator: Option<&Bound<'_, PyGenerator>>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
    #[pyo3(from_py_with = crate::flag::randperm_requires_grad_overloaded)] requires_grad: bool,
) -> PyResult<Py<PyTensor>> {
    let meta = crate::device::factory_is_meta(device)?;
    let n = extract_int(n)?;
    let n = usize::try_from(n)
        .map_err(|_| PyRuntimeError::new_err(format!("n must be non-negative, got{n}")))?;
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(DType::I64);
    if meta {
        return Python::attach(|py| crate::device::meta_tensor(py, &[n], dtype, requires_grad));
    }
    let tensor = generator_or_default(generator).randperm(n, dtype).py()?;
    leaf(tensor, requires_grad)
}

/// Runs an in-place sampler on `tensor`, with the GIL released for large tensors.
fn fill_in_place(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyGenerator>>,
    fill: fn(&Variable, f64, f64, &Generator) -> rustgrad::Result<()>,
    a: f64,
    b: f64,
) -> PyResult<()> {
    let var = tensor.get().var.clone();
    let gen = generator_or_default(generator);
    let work = move || fill(&var, a, b, &gen);
    if tensor.get().var.tensor().numel() >= DETACH_MIN_ELEMENTS {
        py.detach(work).py()
    } else {
        work().py()
    }
}

/// `Tensor.uniform_(from, to, generator=None)` (attached to the class in Python).
#[pyfunction]
#[pyo3(signature = (tensor, from_, to, generator = None))]
fn _uniform_(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    from_: f64,
    to: f64,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<()> {
    fill_in_place(
        py,
        tensor,
        generator,
        |v, a, b, g| random::uniform_(v, a, b, g),
        from_,
        to,
    )
}

/// `Tensor.normal_(mean, std, generator=None)` (attached to the class in Python).
#[pyfunction]
#[pyo3(signature = (tensor, mean, std, generator = None))]
fn _normal_(
    py: Python<'_>,
    tensor: &Bound<'_, PyTensor>,
    mean: f64,
    std: f64,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<()> {
    fill_in_place(
        py,
        tensor,
        generator,
        |v, a, b, g| random::normal_(v, a, b, g),
        mean,
        std,
    )
}

/// Runs `dist` in place on `tensor` (GIL released for large tensors) and records the
/// Python write site.
fn sample_in_place<'py>(
    tensor: Bound<'py, PyTensor>,
    generator: Option<&Bound<'py, PyGenerator>>,
    dist: random::Distribution,
) -> PyResult<Bound<'py, PyTensor>> {
    let gen = generator_or_default(generator);
    crate::tensor::written(tensor, |py, var| {
        let var = var.clone();
        let large = var.numel() >= DETACH_MIN_ELEMENTS;
        let work = move || random::sample_(&var, dist, &gen);
        if large { py.detach(work) } else { work() }.py()
    })
}

/// `Tensor.random_()`, `random_(to)`, `random_(from, to)` (`to=None`: up to the dtype's
/// largest value); the Python glue sorts out the forms.
#[pyfunction]
#[pyo3(signature = (tensor, from_ = None, to = None, generator = None))]
fn _random_<'py>(
    tensor: Bound<'py, PyTensor>,
    from_: Option<i64>,
    to: Option<i64>,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    let dist = match from_ {
        None => random::Distribution::Random,
        Some(from) => random::Distribution::RandomFromTo(from, to),
    };
    sample_in_place(tensor, generator, dist)
}

/// `Tensor.bernoulli_(p=0.5, generator=None)`: `p` a number or a tensor.
#[pyfunction]
#[pyo3(signature = (tensor, p, generator = None))]
fn _bernoulli_<'py>(
    tensor: Bound<'py, PyTensor>,
    p: &Bound<'py, PyAny>,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    if let Ok(pt) = p.cast::<PyTensor>() {
        let p = pt.get().var.tensor().clone();
        let gen = generator_or_default(generator);
        return crate::tensor::written(tensor, |_, var| {
            random::bernoulli_tensor_(var, &p, &gen).py()
        });
    }
    let p: f64 = p.extract()?;
    sample_in_place(tensor, generator, random::Distribution::Bernoulli(p))
}

/// `Tensor.exponential_(lambd=1, generator=None)`.
#[pyfunction]
#[pyo3(signature = (tensor, lambd, generator = None))]
fn _exponential_<'py>(
    tensor: Bound<'py, PyTensor>,
    lambd: f64,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    sample_in_place(tensor, generator, random::Distribution::Exponential(lambd))
}

/// `Tensor.geometric_(p, generator=None)`.
#[pyfunction]
#[pyo3(signature = (tensor, p, generator = None))]
fn _geometric_<'py>(
    tensor: Bound<'py, PyTensor>,
    p: f64,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    sample_in_place(tensor, generator, random::Distribution::Geometric(p))
}

/// `Tensor.log_normal_(mean=1, std=2, generator=None)`.
#[pyfunction]
#[pyo3(signature = (tensor, mean, std, generator = None))]
fn _log_normal_<'py>(
    tensor: Bound<'py, PyTensor>,
    mean: f64,
    std: f64,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    sample_in_place(
        tensor,
        generator,
        random::Distribution::LogNormal(mean, std),
    )
}

/// `Tensor.cauchy_(median=0, sigma=1, generator=None)`.
#[pyfunction]
#[pyo3(signature = (tensor, median, sigma, generator = None))]
fn _cauchy_<'py>(
    tensor: Bound<'py, PyTensor>,
    median: f64,
    sigma: f64,
    generator: Option<&Bound<'py, PyGenerator>>,
) -> PyResult<Bound<'py, PyTensor>> {
    sample_in_place(
        tensor,
        generator,
        random::Distribution::Cauchy(median, sigma),
    )
}

/// `torch.bernoulli(input, generator=None)`: 1 with probability `input[i]`.
#[pyfunction]
#[pyo3(signature = (input, generator = None))]
fn _bernoulli(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let gen = generator_or_default(generator);
    let out = random::bernoulli(&input.get().var, &gen).py()?;
    crate::tensor::new_tensor(py, out)
}

/// `torch.bernoulli(input, p, generator=None)`: 1 with probability `p` everywhere.
#[pyfunction]
#[pyo3(signature = (input, p, generator = None))]
fn _bernoulli_p(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    p: f64,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let gen = generator_or_default(generator);
    let out = random::bernoulli_p(&input.get().var, p, &gen).py()?;
    crate::tensor::new_tensor(py, out)
}

/// Zeros laid out as `torch.empty_like(input, dtype=dtype)` lays out its result
/// (`preserve_format`), for the `*_like` samplers.
#[pyfunction]
#[pyo3(signature = (input, dtype = None))]
fn _empty_like_preserve(
    py: Python<'_>,
    input: &Bound<'_, PyTensor>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let template = input.get().var.tensor();
    let dtype = extract_opt_dtype(dtype)?.unwrap_or(template.dtype());
    let out = random::empty_like(&template, dtype).py()?;
    crate::tensor::new_tensor(py, Variable::from_tensor(out))
}

/// `torch.multinomial(input, num_samples, replacement=False, generator=None)`.
#[pyfunction]
#[pyo3(signature = (input, num_samples, replacement = false, generator = None))]
fn _multinomial(
    input: &Bound<'_, PyTensor>,
    num_samples: i64,
    #[pyo3(from_py_with = crate::flag::multinomial_replacement)] replacement: bool,
    generator: Option<&Bound<'_, PyGenerator>>,
) -> PyResult<Py<PyTensor>> {
    let gen = generator_or_default(generator);
    let tensor = input.get().var.tensor().clone();
    let out = random::multinomial(&tensor, num_samples, replacement, &gen).py()?;
    leaf(out, false)
}

/// Adds this module's classes and functions to `_rustgrad`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add("default_generator", default_object(m.py())?)?;
    m.add("_RNG_STATE_BYTES", STATE_BYTES)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(get_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(randperm, m)?)?;
    m.add_function(wrap_pyfunction!(_uniform_, m)?)?;
    m.add_function(wrap_pyfunction!(_normal_, m)?)?;
    m.add_function(wrap_pyfunction!(_random_, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli_, m)?)?;
    m.add_function(wrap_pyfunction!(_exponential_, m)?)?;
    m.add_function(wrap_pyfunction!(_geometric_, m)?)?;
    m.add_function(wrap_pyfunction!(_log_normal_, m)?)?;
    m.add_function(wrap_pyfunction!(_cauchy_, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli, m)?)?;
    m.add_function(wrap_pyfunction!(_bernoulli_p, m)?)?;
    m.add_function(wrap_pyfunction!(_multinomial, m)?)?;
    m.add_function(wrap_pyfunction!(_empty_like_preserve, m)?)?;
    Ok(())
}
