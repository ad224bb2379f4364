//! `rustgrad.jit`'s native side: capture the ops a Python function runs into a
//! `rustgrad::jit::Graph` and replay it without the GIL. See Note [Capture and replay].

use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rustgrad::{jit, Variable};

use crate::tensor::{object_of, PyTensor};

fn runtime(e: rustgrad::Error) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

fn vars(tensors: &[PyRef<'_, PyTensor>]) -> Vec<Variable> {
    tensors.iter().map(|t| t.var.clone()).collect()
}

/// A captured graph (`rustgrad.jit`'s traced functions hold one).
#[pyclass(name = "Graph", module = "rustgrad._rustgrad", frozen)]
pub struct PyGraph {
    graph: Arc<jit::Graph>,
}

#[pymethods]
impl PyGraph {
    /// Replays the graph on `inputs` with the GIL released; returns its outputs.
    fn run(&self, py: Python<'_>, inputs: Vec<PyRef<'_, PyTensor>>) -> PyResult<Vec<Py<PyTensor>>> {
        let inputs = vars(&inputs);
        let graph = Arc::clone(&self.graph);
        let outs = py.detach(move || graph.run(&inputs)).map_err(runtime)?;
        outs.into_iter().map(|v| object_of(py, v)).collect()
    }

    /// The recorded ops' names, in replay order.
    fn op_names(&self) -> Vec<&'static str> {
        self.graph.op_names()
    }

    /// `(most values a replay holds at once, values the graph makes)`.
    fn peak_live_values(&self) -> (usize, usize) {
        self.graph.peak_live_values()
    }
}

/// Starts capturing this thread's ops; `inputs` are the graph's inputs.
#[pyfunction]
fn _jit_begin(inputs: Vec<PyRef<'_, PyTensor>>) -> PyResult<()> {
    jit::begin(&vars(&inputs)).map_err(runtime)
}

/// Ends the capture with the function's `outputs`; raises RuntimeError naming the op
/// when the capture cannot be replayed.
#[pyfunction]
fn _jit_end(outputs: Vec<PyRef<'_, PyTensor>>) -> PyResult<PyGraph> {
    let graph = jit::end(&vars(&outputs)).map_err(runtime)?;
    Ok(PyGraph {
        graph: Arc::new(graph),
    })
}

/// Drops a capture in progress (the captured function raised).
#[pyfunction]
fn _jit_abort() {
    jit::abort();
}

/// Whether a capture is recording ops on this thread now.
#[pyfunction]
fn _jit_is_capturing() -> bool {
    jit::is_capturing()
}

/// Warns (`rustgrad.jit.TracerWarning`) that a tensor became a Python value while
/// capturing: the capture records only the path this value chose.
pub(crate) fn warn_conversion(py: Python<'_>, what: &str) -> PyResult<()> {
    if !jit::is_capturing() {
        return Ok(());
    }
    let category = py.import("rustgrad.jit")?.getattr("TracerWarning")?;
    let message = format!(
        "Converting a tensor to a Python {what} might cause the trace to be incorrect. We \
         can't record the data flow of Python values, so this value will be treated as a \
         constant in the future. This means that the trace might not generalize to other \
         inputs!"
    );
    let message = std::ffi::CString::new(message).unwrap_or_default();
    PyErr::warn(py, &category, &message, 1)
}

/// Adds the module's functions and classes.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGraph>()?;
    m.add_function(wrap_pyfunction!(_jit_begin, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_end, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_abort, m)?)?;
    m.add_function(wrap_pyfunction!(_jit_is_capturing, m)?)?;
    Ok(())
}
