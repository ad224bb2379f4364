//! Saved tensors (PyTorch's `SavedVariable`): a tensor kept for backward together with
//! the version of its storage at save time. See Note [Version counters].

use super::grad_mode;
use super::graph::{self, NodeId, NodeRef};
use crate::error::{Error, Result};
use crate::variable::Variable;

/// The node that produced a saved tensor.
#[derive(Copy, Clone)]
enum Origin {
    /// An input's grad_fn.
    Node(NodeId),
    /// The saving op itself (a saved output).
    Named(&'static str),
}

/// A tensor saved for backward.
#[derive(Clone)]
pub(crate) struct SavedTensor {
    variable: Variable,
    saved_version: u64,
    /// `(grad_fn, output_nr)` of the saved variable when it was saved, for the error
    /// message. The name is looked up only when the error is raised: saving runs on
    /// every recorded op, the error almost never. The node stays alive while the saving
    /// node has an edge to it, i.e. whenever this can be unpacked.
    origin: Option<(Origin, u32)>,
    /// Whether this is output 0 of the node that saved it. See Note [Saved outputs].
    is_output: bool,
}

impl SavedTensor {
    /// Saves an input of the op (keeps its history, for double backward).
    pub fn input(variable: &Variable) -> SavedTensor {
        SavedTensor {
            variable: variable.clone(),
            saved_version: variable.tensor().version(),
            origin: variable.grad_fn_id().map(|(id, nr)| (Origin::Node(id), nr)),
            is_output: false,
        }
    }

    /// Saves the op's own output. It is stored without its `grad_fn`: the node would
    /// otherwise own a reference to itself.
    pub fn output(output: &Variable, op_name: &'static str) -> SavedTensor {
        SavedTensor {
            variable: Variable::from_tensor(output.tensor().clone()),
            saved_version: output.tensor().version(),
            origin: Some((Origin::Named(op_name), 0)),
            is_output: true,
        }
    }

    /// The saved variable, if it was not modified in place since it was saved. `owner`
    /// is the node that saved it: when backward is itself recorded (`create_graph`), a
    /// saved output gets its history back so second derivatives flow through it.
    pub fn unpack(&self, owner: NodeId) -> Result<Variable> {
        let tensor = self.variable.tensor();
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
        if self.is_output && grad_mode::is_grad_enabled() {
            if let Some(node) = NodeRef::upgrade(owner) {
                return Ok(Variable::with_history(tensor.clone(), node, 0));
            }
        }
        Ok(self.variable.clone())
    }
}
