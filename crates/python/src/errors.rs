//! Engine errors → Python exceptions. One exhaustive `match`: a new engine error
//! variant without a mapping does not compile.

use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError};
use pyo3::{PyErr, Python};
use rustgrad::{Error, ExternalError};

/// Wraps a Python exception raised by a callback (hook, custom Function) for the engine
/// to carry through backward; [`to_py`] re-raises it unchanged.
pub fn to_engine(err: PyErr) -> Error {
    let message = err.to_string();
    Error::External(ExternalError::new(message, err))
}

/// Converts an engine error into the Python exception PyTorch raises for it.
pub fn to_py(err: Error) -> PyErr {
    let msg = err.to_string();
    match err {
        // A Python exception raised in a hook or custom backward: re-raise the original.
        Error::External(e) => match e.payload().downcast_ref::<PyErr>() {
            Some(original) => Python::attach(|py| original.clone_ref(py)),
            None => PyRuntimeError::new_err(msg),
        },
        Error::DimOutOfRange { .. }
        | Error::NoDimensions { .. }
        | Error::IndexOutOfRange { .. }
        | Error::Index(_) => PyIndexError::new_err(msg),
        // PyTorch raises NotImplementedError (a RuntimeError subclass) for missing kernels.
        Error::NoKernel(_) => PyNotImplementedError::new_err(msg),
        Error::Type(_) => PyTypeError::new_err(msg),
        // PyTorch's C++ argument checks (TORCH_CHECK) raise RuntimeError, not ValueError.
        Error::InvalidArgument(_)
        | Error::BroadcastMismatch { .. }
        | Error::ShapeMismatch { .. }
        | Error::InvalidShape { .. }
        | Error::NonViewable
        | Error::DType { .. }
        | Error::CastError { .. }
        | Error::NotAScalar { .. }
        | Error::OutOfMemory { .. }
        | Error::NumelOverflow
        | Error::StorageSizeOverflow { .. }
        | Error::StridedStorageSizeOverflow { .. }
        | Error::OutOfBounds { .. }
        | Error::InternalOverlap
        | Error::PartialOverlap
        | Error::ImplicitGradNonScalar
        | Error::BackwardTwice
        | Error::DoesNotRequireGrad { .. }
        | Error::GradShapeMismatch { .. }
        | Error::LeafInplace
        | Error::ViewOfLeafInplace
        | Error::NoGradViewInplace
        | Error::MultiOutputViewInplace(_)
        | Error::CustomFunctionViewInplace(_)
        | Error::ModifiedByInplace { .. }
        | Error::RequiresGradNonFloat
        | Error::NewLeafRequiresGradNonFloat
        | Error::DataRequiresGradNonFloat
        | Error::NonLeafRequiresGrad
        | Error::NotImplemented(_)
        | Error::AnomalyNan { .. }
        | Error::StaleNode => PyRuntimeError::new_err(msg),
    }
}

/// `Result<T, rustgrad::Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py`].
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py(self) -> pyo3::PyResult<T> {
        // An op that refused to save an inference tensor defers its error (Note
        // [Inference mode]); every op's result passes through here.
        let deferred = rustgrad::variable::take_deferred_error();
        match (self, deferred) {
            (Err(e), _) => Err(to_py(e)),
            (Ok(_), Some(e)) => Err(to_py(e)),
            (Ok(v), None) => Ok(v),
        }
    }
}
