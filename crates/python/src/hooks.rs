//! Python hooks: `Tensor.register_hook`, `retain_grad`, `retains_grad`,
//! `register_post_accumulate_grad_hook`, `grad_fn.register_hook` / `register_prehook`,
//! `grad_fn.metadata`, and the `RemovableHandle` they return. Each Python callable is
//! wrapped in an engine hook (a Rust closure) that takes the GIL only for the call:
//! backward runs with the GIL released and no engine lock is held while a hook runs.
//! An exception a hook raises travels through the engine as `Error::External` and is
//! re-raised unchanged. See Note [Hooks] and Note [Errors from callbacks].

use crate::errors::{to_engine, IntoPyResult};
use crate::node::PyNode;
use crate::tensor::{new_tensor, object_of, PyTensor};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use rustgrad::autograd::{self, HookHandle, NodePostHook, NodePreHook, ObserveHook, TensorHook};
use rustgrad::Variable;
use std::sync::Arc;

/// A registered hook (PyTorch's `torch.utils.hooks.RemovableHandle`): `remove()`
/// unregisters it; usable as a context manager that removes it on exit.
#[pyclass(name = "RemovableHandle", module = "rustgrad.utils.hooks", frozen)]
pub struct PyRemovableHandle {
    handle: HookHandle,
}

#[pymethods]
impl PyRemovableHandle {
    /// Unregisters the hook (a no-op the second time).
    fn remove(&self) {
        self.handle.remove();
    }

    /// The hook's id, unique in the process.
    #[getter]
    fn id(&self) -> u64 {
        self.handle.id()
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, PyTuple>) {
        self.handle.remove();
    }
}

fn handle(py: Python<'_>, handle: HookHandle) -> PyResult<Py<PyRemovableHandle>> {
    Py::new(py, PyRemovableHandle { handle })
}

/// The name PyTorch's hook errors use: the callable's `__name__`, else its repr.
fn hook_name(hook: &Bound<'_, PyAny>) -> String {
    hook.getattr("__name__")
        .and_then(|n| n.extract::<String>())
        .or_else(|_| hook.repr().map(|r| r.to_string()))
        .unwrap_or_else(|_| "hook".into())
}

/// A gradient (or None) as a Python argument.
fn grad_arg(py: Python<'_>, grad: Option<&Variable>) -> PyResult<Py<PyAny>> {
    Ok(match grad {
        Some(g) => new_tensor(py, g.clone())?.into_any(),
        None => py.None(),
    })
}

fn grads_tuple<'py>(py: Python<'py>, grads: &[Option<Variable>]) -> PyResult<Bound<'py, PyTuple>> {
    let items = grads
        .iter()
        .map(|g| grad_arg(py, g.as_ref()))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, items)
}

/// A tensor a hook returned (PyTorch's "expected Variable, but hook returned 'int'").
fn returned_tensor(value: &Bound<'_, PyAny>) -> PyResult<Variable> {
    match value.cast::<PyTensor>() {
        Ok(t) => Ok(t.get().var.clone()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "expected Variable, but hook returned '{}'",
            value.get_type().name()?
        ))),
    }
}

/// A list of gradients a node hook returned in place of `old` (same length; each a
/// tensor or None, of the replaced gradient's shape and dtype).
fn returned_grads(
    value: &Bound<'_, PyAny>,
    old: &[Option<Variable>],
    name: &str,
) -> PyResult<Vec<Option<Variable>>> {
    let items: Vec<Bound<'_, PyAny>> = match value.try_iter() {
        Ok(it) if !value.is_instance_of::<PyTensor>() => it.collect::<PyResult<_>>()?,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "expected tuple, but hook returned '{}'",
                value.get_type().name()?
            )))
        }
    };
    if items.len() != old.len() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{name}' has returned an incorrect number of values (got {}, but expected {})",
            items.len(),
            old.len()
        )));
    }
    items
        .iter()
        .zip(old)
        .map(|(item, old)| {
            if item.is_none() {
                return Ok(None);
            }
            let new = returned_tensor(item)?;
            if let Some(old) = old {
                check_same_meta(old, &new, name)?;
            }
            Ok(Some(new))
        })
        .collect()
}

/// PyTorch's checks of a replacement gradient (its messages name the hook).
fn check_same_meta(old: &Variable, new: &Variable, name: &str) -> PyResult<()> {
    if old.dtype() != new.dtype() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{name}' has changed the type of value (was {} got {})",
            old.dtype().legacy_type_name(),
            new.dtype().legacy_type_name()
        )));
    }
    if old.shape() != new.shape() {
        return Err(PyRuntimeError::new_err(format!(
            "hook '{name}' has changed the size of value"
        )));
    }
    Ok(())
}

fn tensor_hook(hook: Py<PyAny>, name: String) -> TensorHook<Variable> {
    Arc::new(move |grad: Option<&Variable>| {
        Python::attach(|py| -> PyResult<Option<Variable>> {
            let out = hook.bind(py).call1((grad_arg(py, grad)?,))?;
            if out.is_none() {
                return Ok(None);
            }
            let new = returned_tensor(&out)?;
            if let Some(old) = grad {
                check_same_meta(old, &new, &name)?;
            }
            Ok(Some(new))
        })
        .map_err(to_engine)
    })
}

fn pre_hook(hook: Py<PyAny>, name: String) -> NodePreHook<Variable> {
    Arc::new(move |grads: &[Option<Variable>]| {
        Python::attach(|py| -> PyResult<Option<Vec<Option<Variable>>>> {
            let out = hook.bind(py).call1((grads_tuple(py, grads)?,))?;
            if out.is_none() {
                return Ok(None);
            }
            returned_grads(&out, grads, &name).map(Some)
        })
        .map_err(to_engine)
    })
}

fn post_hook(hook: Py<PyAny>, name: String) -> NodePostHook<Variable> {
    Arc::new(
        move |grad_inputs: &[Option<Variable>], grad_outputs: &[Option<Variable>]| {
            Python::attach(|py| -> PyResult<Option<Vec<Option<Variable>>>> {
                let out = hook.bind(py).call1((
                    grads_tuple(py, grad_inputs)?,
                    grads_tuple(py, grad_outputs)?,
                ))?;
                if out.is_none() {
                    return Ok(None);
                }
                returned_grads(&out, grad_inputs, &name).map(Some)
            })
            .map_err(to_engine)
        },
    )
}

fn post_accumulate_hook(hook: Py<PyAny>) -> ObserveHook<Variable> {
    Arc::new(move |leaf: &Variable| {
        Python::attach(|py| -> PyResult<()> {
            hook.bind(py).call1((object_of(py, leaf.clone())?,))?;
            Ok(())
        })
        .map_err(to_engine)
    })
}

#[pymethods]
impl PyTensor {
    /// Registers `hook(grad) -> Tensor | None`, called with the gradient w.r.t. this
    /// tensor during backward; a returned tensor replaces the gradient.
    ///
    /// Returns:
    ///     A handle whose ``remove()`` unregisters the hook.
    ///
    /// Example:
    ///     >>> x = rustgrad.ones(2, requires_grad=True)
    ///     >>> h = x.register_hook(lambda g: g * 2)
    ///     >>> (x * 3).sum().backward(); x.grad
    ///     tensor([6., 6.])
    fn register_hook(
        &self,
        py: Python<'_>,
        hook: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyRemovableHandle>> {
        if !self.var.requires_grad() {
            return Err(PyRuntimeError::new_err(
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let h = tensor_hook(hook.clone().unbind(), hook_name(hook));
        handle(py, self.var.register_hook(h).py()?)
    }

    /// Registers `hook(tensor) -> None`, called with this leaf after its ``.grad`` was
    /// updated in backward. Leaves only.
    fn register_post_accumulate_grad_hook(
        &self,
        py: Python<'_>,
        hook: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyRemovableHandle>> {
        let h = post_accumulate_hook(hook.clone().unbind());
        handle(py, self.var.register_post_accumulate_grad_hook(h).py()?)
    }

    /// Makes backward fill this non-leaf tensor's ``.grad`` (a no-op on leaves).
    fn retain_grad(&self) -> PyResult<()> {
        self.var.retain_grad().py()
    }

    /// Whether ``retain_grad()`` was called on this non-leaf tensor.
    #[getter]
    fn retains_grad(&self) -> bool {
        self.var.retains_grad()
    }
}

#[pymethods]
impl PyNode {
    /// Registers `hook(grad_inputs, grad_outputs) -> tuple | None`, called after this
    /// node ran; a returned tuple replaces `grad_inputs`.
    fn register_hook(
        &self,
        py: Python<'_>,
        fn_: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyRemovableHandle>> {
        let h = post_hook(fn_.clone().unbind(), hook_name(fn_));
        handle(py, autograd::register_node_hook(&self.node()?, h).py()?)
    }

    /// Registers `hook(grad_outputs) -> tuple | None`, called before this node runs; a
    /// returned tuple replaces `grad_outputs`.
    fn register_prehook(
        &self,
        py: Python<'_>,
        fn_: &Bound<'_, PyAny>,
    ) -> PyResult<Py<PyRemovableHandle>> {
        let h = pre_hook(fn_.clone().unbind(), hook_name(fn_));
        handle(py, autograd::register_node_prehook(&self.node()?, h).py()?)
    }

    /// A dict for user data that lives as long as the node.
    #[getter]
    fn metadata(&self, py: Python<'_>) -> PyResult<Py<PyDict>> {
        let m = autograd::graph::metadata(self.node()?.id(), || Arc::new(PyDict::new(py).unbind()))
            .py()?;
        m.downcast_ref::<Py<PyDict>>()
            .map(|d| d.clone_ref(py))
            .ok_or_else(|| PyRuntimeError::new_err("grad_fn.metadata was set from Rust"))
    }
}
