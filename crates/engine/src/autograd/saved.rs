//! Saved tensors (PyTorch's `SavedVariable`): a tensor kept for backward together with
//! the version of its storage at save time. See Note [Version counters].

use super::grad_mode;
use super::graph::{self, NodeId, NodeRef};
use super::value::Value;
use crate::error::{Error, Result};
use smallvec::SmallVec;

/// Saved-tensor slots of a node: `None` where the rule will not need it.
pub(crate) type SavedSlots<V> = SmallVec<[Option<SavedTensor<V>>; 2]>;

/// The node that produced a saved tensor.
enum Origin<V> {
    /// An input's grad_fn.
    Node(NodeId<V>),
    /// The saving op itself (a saved output).
    Named(&'static str),
}

impl<V> Clone for Origin<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Origin<V> {}

/// A tensor saved for backward.
#[derive(Clone)]
pub(crate) struct SavedTensor<V: Value> {
    variable: V,
    saved_version: u64,
    /// `(grad_fn, output_nr)` of the saved variable when it was saved, for the error
    /// message. The name is looked up only when the error is raised: saving runs on
    /// every recorded op, the error almost never. The node stays alive while the saving
    /// node has an edge to it, i.e. whenever this can be unpacked.
    origin: Option<(Origin<V>, u32)>,
    /// Which output of the node that saved it this is, if it is one. See Note [Saved
    /// outputs].
    output_nr: Option<u32>,
}

impl<V: Value> SavedTensor<V> {
    /// Saves an input of the op (keeps its history, for double backward).
    pub fn input(variable: &V) -> SavedTensor<V> {
        SavedTensor {
            variable: variable.clone(),
            saved_version: variable.data().version(),
            origin: variable.history().map(|(id, nr)| (Origin::Node(id), nr)),
            output_nr: None,
        }
    }

    /// Saves the op's own output. It is stored without its `grad_fn`: the node would
    /// otherwise own a reference to itself.
    pub fn output(output: &V, op_name: &'static str) -> SavedTensor<V> {
        SavedTensor::output_nr(output, op_name, 0)
    }

    /// Saves output `output_nr` of a multi-output op, as [`SavedTensor::output`].
    pub fn output_nr(output: &V, op_name: &'static str, output_nr: u32) -> SavedTensor<V> {
        let data = output.data();
        SavedTensor {
            saved_version: data.version(),
            variable: V::from_data(data.clone()),
            origin: Some((Origin::Named(op_name), output_nr)),
            output_nr: Some(output_nr),
        }
    }

    /// If this is a saved output, makes it `to`'s data at its current version and returns
    /// the value it held (see [`graph::rebind_saved_outputs`]).
    pub fn rebind_output(&mut self, to: &V) -> Option<V> {
        self.output_nr?;
        let data = to.data();
        self.saved_version = data.version();
        let new = V::from_data(data.clone());
        drop(data);
        Some(std::mem::replace(&mut self.variable, new))
    }

    /// The bytes of the saved tensor's elements (numel × element size), for graph
    /// statistics (`graph_stats`, `viz.to_dot`).
    pub fn nbytes(&self) -> usize {
        let t = self.variable.data();
        t.numel() * t.dtype().size_in_bytes()
    }

    /// The saved variable, if it was not modified in place since it was saved. `owner`
    /// is the node that saved it: when backward is itself recorded (`create_graph`), a
    /// saved output gets its history back so second derivatives flow through it.
    pub fn unpack(&self, owner: NodeId<V>) -> Result<V> {
        let tensor = self.variable.data();
        let version = tensor.version();
        if version != self.saved_version {
            let name = self.origin.and_then(|(origin, nr)| match origin {
                Origin::Node(id) => graph::node_name(id).ok().map(|n| (n, nr)),
                Origin::Named(n) => Some((n, nr)),
            });
            let origin = match name {
                Some((name, nr)) => format!(", which is output {nr} of {name}"),
                None => String::new(),
            };
            let site = match tensor.version_counter().last_write_site() {
                Some(s) => format!(" The last in-place write to it happened at {s}."),
                None => String::new(),
            };
            return Err(Error::ModifiedByInplace {
                type_name: tensor.dtype().legacy_type_name(),
                shape: tensor.shape().to_vec(),
                origin,
                version,
                expected: self.saved_version,
                site,
            });
        }
        if let (Some(nr), true) = (self.output_nr, grad_mode::is_grad_enabled()) {
            if let Some(node) = NodeRef::upgrade(owner) {
                return Ok(V::with_history(tensor.clone(), node, nr));
            }
        }
        Ok(self.variable.clone())
    }
}
