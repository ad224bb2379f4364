//! Anomaly detection (PyTorch's `detect_anomaly` / `set_detect_anomaly`). See Note
//! [Anomaly detection] in docs/architecture.md.
//!
//! While the mode is on, every recorded op node keeps a trace of the code that created
//! it (made by a capture callback: the binding registers one returning the Python
//! traceback; Rust users get a Rust backtrace). In backward, a node whose run fails is
//! reported (with that trace) through a reporter callback before the error propagates
//! unchanged, and with `check_nan` a NaN in a gradient a node returns is an error.
//! The mode is process-wide, as PyTorch's; off, recording an op costs one atomic load.

use super::graph::{self, NodeId};
use super::value::{Grads, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

const ENABLED: u8 = 1;
const CHECK_NAN: u8 = 2;

/// The mode: `ENABLED | CHECK_NAN` bits. PyTorch's default is off with check_nan on.
static MODE: AtomicU8 = AtomicU8::new(CHECK_NAN);

/// Makes the trace of the forward call that is recording a node (`None`: no trace).
/// Called outside every engine lock, on the thread recording the op.
pub type CaptureTrace = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// Reports a failing node: receives PyTorch's warning text ("Error detected in
/// MulBackward0. Traceback of forward call that caused the error:\n..."). The node's
/// error propagates afterwards whatever the reporter does (as in PyTorch, where a
/// warning turned into an exception does not replace it).
pub type ReportError = Arc<dyn Fn(&str) + Send + Sync>;

static CAPTURE: RwLock<Option<CaptureTrace>> = RwLock::new(None);
static REPORT: RwLock<Option<ReportError>> = RwLock::new(None);

/// Turns anomaly detection on or off (PyTorch's `torch.set_anomaly_enabled`).
pub fn set_enabled(enabled: bool, check_nan: bool) {
    let mode = if enabled { ENABLED } else { 0 } | if check_nan { CHECK_NAN } else { 0 };
    MODE.store(mode, Ordering::SeqCst);
}

/// Whether anomaly detection is on (`torch.is_anomaly_enabled`).
pub fn is_enabled() -> bool {
    MODE.load(Ordering::Relaxed) & ENABLED != 0
}

/// Whether a NaN gradient is an error while anomaly detection is on
/// (`torch.is_anomaly_check_nan_enabled`; true by default).
pub fn is_check_nan_enabled() -> bool {
    MODE.load(Ordering::Relaxed) & CHECK_NAN != 0
}

/// Installs the trace capture (`None`: the default, a Rust backtrace).
pub fn set_trace_capture(capture: Option<CaptureTrace>) {
    let old = std::mem::replace(
        &mut *CAPTURE.write().unwrap_or_else(|e| e.into_inner()),
        capture,
    );
    drop(old);
}

/// Installs the error reporter (`None`: the default, which prints to stderr).
pub fn set_error_reporter(report: Option<ReportError>) {
    let old = std::mem::replace(
        &mut *REPORT.write().unwrap_or_else(|e| e.into_inner()),
        report,
    );
    drop(old);
}

/// The trace of the op being recorded, when the mode is on: called by node creation
/// before it takes the arena lock (the capture may run Python).
pub(crate) fn capture_trace() -> Option<String> {
    if MODE.load(Ordering::Relaxed) & ENABLED == 0 {
        return None;
    }
    let capture = CAPTURE.read().unwrap_or_else(|e| e.into_inner()).clone();
    match capture {
        Some(capture) => capture(),
        None => Some(std::backtrace::Backtrace::force_capture().to_string()),
    }
}

/// Runs node `id` through `run` (the scheduler's one call): with the mode on, checks
/// the gradients it returns for NaN (when `check_nan`) and reports a failure with the
/// node's forward trace before returning the error unchanged.
pub(crate) fn run_checked<V: Value>(
    id: NodeId<V>,
    run: impl FnOnce() -> Result<Grads<V>>,
) -> Result<Grads<V>> {
    if !is_enabled() {
        return run();
    }
    let result = run().and_then(|grads| {
        if is_check_nan_enabled() {
            check_nan(id, &grads)?;
        }
        Ok(grads)
    });
    match result {
        Ok(grads) => Ok(grads),
        Err(err) => {
            report(id);
            Err(err)
        }
    }
}

/// PyTorch's "Function 'MulBackward0' returned nan values in its 0th output.".
fn check_nan<V: Value>(id: NodeId<V>, grads: &Grads<V>) -> Result<()> {
    for (index, grad) in grads.iter().enumerate() {
        let Some(grad) = grad else { continue };
        let data = grad.data();
        let has_nan = match data.dtype() {
            DType::F32 | DType::F16 | DType::BF16 => {
                data.try_to_vec::<f32>()?.iter().any(|x| x.is_nan())
            }
            DType::F64 => data.try_to_vec::<f64>()?.iter().any(|x| x.is_nan()),
            _ => false,
        };
        if has_nan {
            return Err(Error::AnomalyNan {
                name: graph::node_name(id)?,
                index,
            });
        }
    }
    Ok(())
}

/// The warning PyTorch's `print_stack` emits for a failing node.
fn report<V: Value>(id: NodeId<V>) {
    let name = graph::node_name(id).unwrap_or("unknown");
    let message = match graph::anomaly_trace(id).ok().flatten() {
        Some(trace) => format!(
            "Error detected in {name}. Traceback of forward call that caused the error:\n{trace}"
        ),
        None => format!(
            "Error detected in {name}. No forward pass information available. Enable detect \
             anomaly during forward pass for more information."
        ),
    };
    let reporter = REPORT.read().unwrap_or_else(|e| e.into_inner()).clone();
    match reporter {
        Some(reporter) => reporter(&message),
        None => eprintln!("rustgrad warning: {message}"),
    }
}
