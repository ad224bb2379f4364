//! Python saved-tensor hooks (`rustgrad.autograd.graph.saved_tensors_hooks`): the
//! engine's `SavedTensorHooks` over a Python `pack_hook` / `unpack_hook` pair. Both
//! take the GIL only for the call (an op may save while the GIL is released, and
//! backward always runs without it). See Note [Saved tensor hooks].

use crate::errors::to_engine;
use crate::tensor::{object_of, PyTensor};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use rustgrad::autograd::saved::{self, PackedTensor, SavedTensorHooks};
use rustgrad::Variable;
use std::sync::Arc;

/// A registered `(pack_hook, unpack_hook)` pair.
pub struct PyHooks {
    pack: Py<PyAny>,
    unpack: Arc<Py<PyAny>>,
}

/// What `pack_hook` returned, with the `unpack_hook` that turns it back into a tensor.
struct PyPacked {
    packed: Py<PyAny>,
    unpack: Arc<Py<PyAny>>,
    nbytes: usize,
}

/// The bytes of a tensor's elements.
fn tensor_bytes(var: &Variable) -> usize {
    var.numel() * var.dtype().size_in_bytes()
}

impl SavedTensorHooks<Variable> for PyHooks {
    fn pack(&self, value: &Variable) -> rustgrad::Result<Arc<dyn PackedTensor<Variable>>> {
        Python::attach(|py| {
            let tensor = object_of(py, value.clone()).map_err(to_engine)?;
            let packed = self.pack.call1(py, (tensor,)).map_err(to_engine)?;
            // What the node keeps alive: a tensor's elements when the hook returned
            // one (save_on_cpu's copy), nothing for any other handle.
            let nbytes = match packed.bind(py).cast::<PyTensor>() {
                Ok(t) => tensor_bytes(&t.get().var),
                Err(_) => 0,
            };
            Ok(Arc::new(PyPacked {
                packed,
                unpack: self.unpack.clone(),
                nbytes,
            }) as Arc<dyn PackedTensor<Variable>>)
        })
    }
}

impl PackedTensor<Variable> for PyPacked {
    fn unpack(&self) -> rustgrad::Result<Variable> {
        Python::attach(|py| {
            let out = self
                .unpack
                .call1(py, (self.packed.clone_ref(py),))
                .map_err(to_engine)?;
            let out = out.bind(py);
            match out.cast::<PyTensor>() {
                Ok(t) => Ok(t.get().var.clone()),
                Err(_) => Err(to_engine(PyTypeError::new_err(format!(
                    "Output of saved tensor unpack_hook expected to be a Tensor but got \
                     result of type {}",
                    out.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                )))),
            }
        })
    }

    fn nbytes(&self) -> usize {
        self.nbytes
    }
}

/// The engine hooks for a Python `(pack_hook, unpack_hook)` pair.
pub fn python_hooks(pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) -> PyHooks {
    PyHooks {
        pack: pack_hook,
        unpack: Arc::new(unpack_hook),
    }
}

/// Registers `(pack_hook, unpack_hook)` on this thread until `_pop_saved_tensors_hooks`.
#[pyfunction]
pub fn _push_saved_tensors_hooks(pack_hook: Py<PyAny>, unpack_hook: Py<PyAny>) {
    saved::push_saved_tensors_hooks::<Variable>(Arc::new(python_hooks(pack_hook, unpack_hook)));
}

/// Removes this thread's innermost saved-tensor hooks.
#[pyfunction]
pub fn _pop_saved_tensors_hooks() {
    saved::pop_saved_tensors_hooks();
}
