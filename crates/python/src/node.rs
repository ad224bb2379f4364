//! Python `grad_fn` objects. Each node is an instance of a per-name Python subclass of
//! `rustgrad.autograd.graph.Node` (`MeanBackward0`, `AccumulateGrad`, ...), so that
//! `type(t.grad_fn).__name__` is PyTorch's class name.

use crate::errors::IntoPyResult;
use crate::identity::ObjectTable;
use crate::tensor::PyTensor;
use pyo3::exceptions::{PyAttributeError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use rustgrad::autograd;
use rustgrad::variable::{NodeId, NodeRef};
use std::sync::OnceLock;

/// The saved slot that PyTorch's `_saved_<attr>` of a node named `node` reads, for
/// the common ops (names from PyTorch's derivatives.yaml, slot order from the ops'
/// `record` calls).
fn saved_slot(node: &str, attr: &str) -> Option<usize> {
    Some(match (node, attr) {
        ("MulBackward0" | "DivBackward0", "self") => 0,
        ("MulBackward0" | "DivBackward0", "other") => 1,
        ("MmBackward0" | "BmmBackward0", "self") => 0,
        ("MmBackward0", "mat2") | ("BmmBackward0", "mat2") => 1,
        ("PowBackward1", "self") => 0,
        ("PowBackward1", "exponent") => 1,
        ("PowBackward1", "result") => 2,
        (
            "ExpBackward0"
            | "TanhBackward0"
            | "SigmoidBackward0"
            | "ReluBackward0"
            | "SqrtBackward0"
            | "RsqrtBackward0"
            | "Exp2Backward0"
            | "Expm1Backward0"
            | "TanBackward0"
            | "ReciprocalBackward0",
            "result",
        ) => 0,
        (
            "LogBackward0" | "Log2Backward0" | "Log10Backward0" | "Log1PBackward0" | "SinBackward0"
            | "CosBackward0" | "AsinBackward0" | "AcosBackward0" | "AtanBackward0"
            | "SinhBackward0" | "CoshBackward0" | "ErfBackward0",
            "self",
        ) => 0,
        _ => return None,
    })
}

/// One saved tensor of a node (PyTorch's `torch._C._autograd.SavedTensor`, from
/// `grad_fn._raw_saved_<name>`): hooks can be registered on it.
#[pyclass(name = "SavedTensor", module = "rustgrad.autograd.graph", frozen)]
pub struct PySavedTensor {
    node: NodeRef,
    index: usize,
}

#[pymethods]
impl PySavedTensor {
    /// Packs the saved tensor now with `pack_hook`; backward will read it through
    /// `unpack_hook`. One pair per saved tensor, as in PyTorch.
    fn register_hooks(
        &self,
        py: Python<'_>,
        pack_hook: Py<PyAny>,
        unpack_hook: Py<PyAny>,
    ) -> PyResult<()> {
        if !pack_hook.bind(py).is_callable() || !unpack_hook.bind(py).is_callable() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "register_hooks(): incompatible function arguments: pack_hook and \
                 unpack_hook must be callables",
            ));
        }
        let hooks = crate::saved_hooks::python_hooks(pack_hook, unpack_hook);
        autograd::graph::register_saved_hooks(self.node.id(), self.index, &hooks).py()
    }
}

/// The live Python object of each node that has one. See Note [Python object identity].
static NODE_OBJECTS: ObjectTable<NodeId> = ObjectTable::new();

/// A node of the autograd graph (PyTorch's `torch.autograd.graph.Node`).
#[pyclass(
    name = "Node",
    module = "rustgrad.autograd.graph",
    subclass,
    frozen,
    weakref
)]
pub struct PyNode {
    node: OnceLock<Held>,
}

/// How a node object holds its node: strongly (the object keeps the node alive), or
/// weakly for a custom Function's `ctx`, which the node owns through its backward (a
/// strong reference back would be a cycle), as PyTorch's `THPFunction::cdata`.
enum Held {
    Strong(NodeRef),
    Weak(NodeId),
}

impl Held {
    fn id(&self) -> NodeId {
        match self {
            Held::Strong(n) => n.id(),
            Held::Weak(id) => *id,
        }
    }
}

impl PyNode {
    /// The Python object for `node`, an instance of its named subclass: the same object
    /// for as long as it is alive.
    pub fn create(py: Python<'_>, node: NodeRef) -> PyResult<Py<PyAny>> {
        let id = node.id();
        if let Some(obj) = NODE_OBJECTS.get(py, id) {
            return Ok(obj.unbind());
        }
        static NODE_CLASS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let factory = NODE_CLASS.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("rustgrad.autograd.graph")?
                .getattr("_node_class")?
                .unbind())
        })?;
        let name = autograd::node_name(node.id()).py()?;
        let cls = factory.bind(py).call1((name,))?;
        let obj = cls.call0()?;
        let _ = obj.cast::<PyNode>()?.get().node.set(Held::Strong(node));
        NODE_OBJECTS.insert(id, &obj)?;
        Ok(obj.unbind())
    }

    /// Makes `ctx`, a custom Function's context (an instance of a `Node` subclass), the
    /// Python object of `node`, the node its `apply` recorded: `y.grad_fn is ctx` from
    /// now on. `ctx` holds the node weakly (the node owns `ctx` through its backward).
    /// See Note [Custom Functions].
    pub(crate) fn adopt(ctx: &Bound<'_, PyAny>, node: &NodeRef) -> PyResult<()> {
        let obj = ctx.cast::<PyNode>()?;
        if obj.get().node.set(Held::Weak(node.id())).is_err() {
            return Err(PyRuntimeError::new_err(
                "rustgrad internal error: a Function's ctx recorded two nodes",
            ));
        }
        NODE_OBJECTS.insert(node.id(), ctx)
    }

    /// The node (a new counted reference), or an error when this object never had one
    /// or, for a custom Function's `ctx`, the node was freed.
    pub(crate) fn node(&self) -> PyResult<NodeRef> {
        match self.node.get() {
            Some(Held::Strong(n)) => Ok(n.clone()),
            Some(Held::Weak(id)) => NodeRef::upgrade(*id).ok_or_else(|| {
                PyRuntimeError::new_err(
                    "this custom Function's node was freed: the tensors its apply returned \
                     are gone",
                )
            }),
            None => Err(PyRuntimeError::new_err(
                "this autograd Node object has no node: it was not made by rustgrad, or it \
                 is the ctx of a custom Function that recorded none",
            )),
        }
    }
}

impl Drop for PyNode {
    fn drop(&mut self) {
        // Runs while the object is destroyed, under the GIL: no new object can be made
        // for this node in between, so the entry removed is this object's.
        if let Some(node) = self.node.get() {
            NODE_OBJECTS.remove(node.id());
        }
    }
}

#[pymethods]
impl PyNode {
    #[new]
    fn py_new() -> Self {
        PyNode {
            node: OnceLock::new(),
        }
    }

    /// PyTorch's class name of the node, e.g. `MulBackward0`.
    fn name(&self) -> PyResult<&'static str> {
        // PyTorch's name() of its two C++-defined nodes carries their namespace; the
        // Python class names (`type(node).__name__`) do not.
        Ok(match autograd::node_name(self.node()?.id()).py()? {
            "CopySlices" => "torch::autograd::CopySlices",
            "AccumulateGrad" => "torch::autograd::AccumulateGrad",
            other => other,
        })
    }

    /// For each input of the op: `(node, input_nr)`, or `(None, 0)` when that input
    /// does not require grad.
    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = autograd::next_functions(self.node()?.id())
            .py()?
            .into_iter()
            .map(|e| -> PyResult<Bound<'py, PyTuple>> {
                match e {
                    Some((n, nr)) => PyTuple::new(
                        py,
                        [
                            PyNode::create(py, n)?.into_bound(py),
                            nr.into_pyobject(py)?.into_any(),
                        ],
                    ),
                    None => PyTuple::new(
                        py,
                        [py.None().into_bound(py), 0u32.into_pyobject(py)?.into_any()],
                    ),
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }

    /// For an `AccumulateGrad` node, the leaf tensor it accumulates into.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        match autograd::graph::accumulate_grad_variable(self.node()?.id()).py()? {
            Some(v) => crate::tensor::object_of(py, v),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(
                "'variable' exists only on AccumulateGrad nodes",
            )),
        }
    }

    /// `(count, bytes)` of the tensors this node keeps for backward (numel × element
    /// size each); `(0, 0)` once a backward released them. Used by
    /// `rustgrad.autograd.graph_stats` and `rustgrad.viz`.
    fn _saved_summary(&self) -> PyResult<(usize, usize)> {
        autograd::graph::saved_summary(self.node()?.id()).py()
    }

    /// PyTorch's `_saved_<name>` attributes (`MulBackward0._saved_self`, ...): the
    /// tensors the node saved, as its backward reads them (None for one the op did not
    /// need to save). Any other attribute raises AttributeError.
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<Py<PyAny>> {
        let node = self.node()?;
        let id = node.id();
        let node_name = autograd::node_name(id).py()?;
        if let Some(index) = name
            .strip_prefix("_raw_saved_")
            .and_then(|attr| saved_slot(node_name, attr))
        {
            let raw = PySavedTensor { node, index };
            return Ok(Py::new(py, raw)?.into_any());
        }
        let index = name
            .strip_prefix("_saved_")
            .and_then(|attr| saved_slot(node_name, attr))
            .ok_or_else(|| {
                PyAttributeError::new_err(format!("'{node_name}' object has no attribute '{name}'"))
            })?;
        // A saved output comes back with its grad_fn whatever the grad mode, as PyTorch's.
        let _grad = autograd::enable_grad();
        match autograd::graph::saved_tensor(id, index).py()? {
            Some(v) => Ok(crate::tensor::object_of(py, v)?.into_any()),
            None => Ok(py.None()),
        }
    }

    /// The shapes of the node's forward outputs (one per output).
    fn _output_shapes(&self) -> PyResult<Vec<Vec<usize>>> {
        Ok(autograd::graph::output_shapes(self.node()?.id())
            .py()?
            .into_iter()
            .map(|d| d.to_vec())
            .collect())
    }

    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> bool {
        match (other.cast::<PyNode>(), slf.get().node.get()) {
            (Ok(o), Some(a)) => o.get().node.get().is_some_and(|b| a.id() == b.id()),
            // A custom Function's ctx that recorded no node is equal only to itself.
            (_, None) => slf.is(other),
            _ => false,
        }
    }

    /// The tensors of a custom Function's `save_for_backward` (`count` slots), read
    /// from the node outside its backward (`ctx.saved_tensors`, `y.grad_fn.saved_tensors`):
    /// version-checked, a saved output with its grad_fn; PyTorch's "Trying to backward
    /// through the graph a second time" once a backward released them or the node is gone.
    fn _custom_saved_tensors<'py>(
        &self,
        py: Python<'py>,
        count: usize,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let Ok(node) = self.node() else {
            return Err(crate::errors::to_py(rustgrad::Error::BackwardTwice));
        };
        let _grad = autograd::enable_grad();
        let values = (0..count)
            .map(
                |i| match autograd::graph::saved_tensor(node.id(), i).py()? {
                    Some(v) => Ok(crate::tensor::object_of(py, v)?.into_any()),
                    None => Ok(py.None()),
                },
            )
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, values)
    }

    fn __hash__(slf: &Bound<'_, Self>) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        match slf.get().node.get() {
            Some(Held::Strong(n)) => n.id().hash(&mut h),
            // A custom Function's ctx hashes by identity: it is its node's only object,
            // and its hash must not change when `apply` records the node.
            _ => (slf.as_ptr() as usize).hash(&mut h),
        }
        h.finish()
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        // The Python class name (`<AccumulateGrad object at ...>`), not name()'s
        // namespaced C++ name, as PyTorch's repr.
        Ok(format!(
            "<{} object at {:#x}>",
            slf.get_type().name()?,
            slf.as_ptr() as usize
        ))
    }
}
