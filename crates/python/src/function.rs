//! Custom autograd Functions (`rustgrad.autograd.Function`): the Python class's
//! backward runs as a node of the Rust graph. `python/rustgrad/autograd/function.py`
//! runs the forward and calls `_custom_apply`, which records the node through the
//! engine's `Variable::record_custom`. See Note [Custom Functions].

use crate::errors::{to_engine, IntoPyResult};
use crate::node::PyNode;
use crate::tensor::{new_tensor, object_of, PyTensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use rustgrad::{intern_name, CustomBackward, CustomOptions, Result, SavedValues, Variable};
use std::sync::Arc;

/// The saved tensors of a custom Function's node while its backward runs:
/// `ctx.saved_tensors` calls `unpack()`, which version-checks them then (Note [Custom
/// Functions]).
#[pyclass(name = "_SavedTensors", module = "rustgrad._rustgrad", frozen)]
pub struct PySavedTensors {
    saved: SavedValues,
}

#[pymethods]
impl PySavedTensors {
    /// The saved tensors (None where None was saved); raises PyTorch's "modified by an
    /// inplace operation" error when one was written in place since it was saved.
    fn unpack<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let values = self.saved.unpack().py()?;
        let objs = values
            .iter()
            .map(|s| to_py_tensor(py, s))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, objs)
    }
}

/// A Python callable `backward(grads, saved, needs) -> [Tensor | None, ...]` (one
/// gradient per tensor input) as a node's backward. The scheduler runs it with the GIL
/// released; it takes the GIL for this node only, and a Python exception it raises
/// travels through the engine unchanged (Note [Errors from callbacks]).
struct PyBackward {
    name: &'static str,
    callable: Py<PyAny>,
}

/// A Python object for a variable handed to user code: a leaf that requires grad is
/// the user's own object (`x is saved_x`), anything else a new one.
fn to_py_tensor(py: Python<'_>, var: &Option<Variable>) -> PyResult<Py<PyAny>> {
    Ok(match var {
        None => py.None(),
        Some(v) if v.is_leaf() && v.requires_grad() => object_of(py, v.clone())?.into_any(),
        Some(v) => new_tensor(py, v.clone())?.into_any(),
    })
}

impl CustomBackward for PyBackward {
    fn name(&self) -> &'static str {
        self.name
    }

    fn backward(
        &self,
        grads: &[Option<Variable>],
        saved: &SavedValues,
        needs_input_grad: &[bool],
    ) -> Result<Vec<Option<Variable>>> {
        Python::attach(|py| -> PyResult<Vec<Option<Variable>>> {
            let grads = grads
                .iter()
                .map(|g| to_py_tensor(py, g))
                .collect::<PyResult<Vec<_>>>()?;
            let saved = Py::new(
                py,
                PySavedTensors {
                    saved: saved.clone(),
                },
            )?;
            let args = (
                PyTuple::new(py, grads)?,
                saved,
                PyTuple::new(py, needs_input_grad)?,
            );
            let result = self.callable.bind(py).call1(args)?;
            result
                .try_iter()?
                .map(|g| {
                    let g = g?;
                    if g.is_none() {
                        Ok(None)
                    } else {
                        Ok(Some(g.cast::<PyTensor>()?.get().var.clone()))
                    }
                })
                .collect()
        })
        .map_err(to_engine)
    }
}

fn vars(objs: &[Bound<'_, PyTensor>]) -> Vec<Variable> {
    objs.iter().map(|o| o.get().var.clone()).collect()
}

/// Records the node of a custom Function after its forward ran: `ctx` (an instance of
/// the Function's `Node` subclass) becomes the node's Python object, so `y.grad_fn is
/// ctx`; `outputs` (the tensor outputs) get the node as their history; `backward` is called with the output
/// gradients, the saved tensors and `needs_input_grad` (one per tensor input). Returns
/// the tensors to hand out, in `outputs`' order (the same objects where the engine kept
/// the variable, e.g. a dirty input).
#[pyfunction]
#[pyo3(signature = (ctx, backward, name, inputs, outputs, dirty, non_differentiable, saved, materialize_grads, other_outputs))]
#[allow(clippy::too_many_arguments)]
pub fn _custom_apply(
    py: Python<'_>,
    ctx: &Bound<'_, PyAny>,
    backward: Py<PyAny>,
    name: &str,
    inputs: Vec<Bound<'_, PyTensor>>,
    outputs: Vec<Bound<'_, PyTensor>>,
    dirty: Vec<Bound<'_, PyTensor>>,
    non_differentiable: Vec<Bound<'_, PyTensor>>,
    saved: Vec<Option<Bound<'_, PyTensor>>>,
    materialize_grads: bool,
    other_outputs: usize,
) -> PyResult<Vec<Py<PyTensor>>> {
    let node = Arc::new(PyBackward {
        name: intern_name(name),
        callable: backward,
    });
    let input_vars = vars(&inputs);
    let input_refs: Vec<&Variable> = input_vars.iter().collect();
    let output_vars = vars(&outputs);
    let (dirty, non_differentiable) = (vars(&dirty), vars(&non_differentiable));
    let saved: Vec<Option<Variable>> = saved
        .iter()
        .map(|s| s.as_ref().map(|s| s.get().var.clone()))
        .collect();
    let options = CustomOptions {
        dirty: &dirty,
        non_differentiable: &non_differentiable,
        saved: &saved,
        materialize_grads,
        other_outputs,
    };
    let (wrapped, recorded) =
        Variable::record_custom_node(node, &input_refs, &output_vars, options).py()?;
    if let Some(recorded) = &recorded {
        PyNode::adopt(ctx, recorded)?;
    }
    wrapped
        .into_iter()
        .zip(&outputs)
        .map(|(var, obj)| {
            if var.same(&obj.get().var) {
                Ok(obj.clone().unbind())
            } else {
                new_tensor(py, var)
            }
        })
        .collect()
}
