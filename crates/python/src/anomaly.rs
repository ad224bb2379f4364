//! Anomaly detection from Python (Note [Anomaly detection]): the mode switches, and the
//! two callbacks the engine calls while the mode is on. The capture formats the Python
//! stack of the op being recorded (PyTorch's `traceback.format_list(extract_stack())`);
//! the reporter emits PyTorch's "Error detected in ..." `UserWarning`. Both take the GIL
//! only for their own call (backward runs with it released).

use pyo3::exceptions::PyUserWarning;
use pyo3::prelude::*;
use pyo3::types::PyString;
use rustgrad::autograd::anomaly;
use std::sync::Arc;

/// PyTorch's `torch.set_anomaly_enabled(enabled, check_nan=True)`.
#[pyfunction]
#[pyo3(signature = (enabled, check_nan = true))]
pub fn set_anomaly_enabled(enabled: bool, check_nan: bool) {
    anomaly::set_enabled(enabled, check_nan);
}

/// Whether anomaly detection is on (`torch.is_anomaly_enabled`).
#[pyfunction]
pub fn is_anomaly_enabled() -> bool {
    anomaly::is_enabled()
}

/// Whether anomaly detection checks backward for NaN
/// (`torch.is_anomaly_check_nan_enabled`).
#[pyfunction]
pub fn is_anomaly_check_nan_enabled() -> bool {
    anomaly::is_check_nan_enabled()
}

/// The current Python stack, formatted as PyTorch stores it. Innermost frames of
/// rustgrad's `Function.apply` are left out: PyTorch's is C++ and has no frame.
fn format_stack(py: Python<'_>) -> PyResult<String> {
    let traceback = py.import("traceback")?;
    let stack = traceback.call_method0("extract_stack")?;
    while let Some(last) = stack.len()?.checked_sub(1) {
        let filename: String = stack.get_item(last)?.getattr("filename")?.extract()?;
        if !filename
            .replace('\\', "/")
            .ends_with("rustgrad/autograd/function.py")
        {
            break;
        }
        stack.del_item(last)?;
    }
    let lines = traceback.call_method1("format_list", (stack,))?;
    let joined = PyString::new(py, "").call_method1("join", (lines,))?;
    joined.extract()
}

/// Installs the Python capture and reporter in the engine (at module import).
pub fn install() {
    anomaly::set_trace_capture(Some(Arc::new(|| {
        Python::attach(|py| format_stack(py).ok())
    })));
    anomaly::set_error_reporter(Some(Arc::new(|message: &str| {
        Python::attach(|py| {
            let warned = py.import("warnings").and_then(|warnings| {
                let category = py.get_type::<PyUserWarning>();
                warnings.call_method1("warn", (message, category))
            });
            // A warning turned into an exception is shown, not raised: the node's own
            // error propagates, as in PyTorch.
            if let Err(err) = warned {
                err.display(py);
            }
        })
    })));
}
