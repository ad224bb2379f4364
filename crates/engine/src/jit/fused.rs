//! Elementwise chains of a captured graph fused into one node. See Note [Capture and
//! replay].

use super::{Node, Source, ValueId};
use crate::error::Result;
use crate::variable::Variable;

/// A fused chain of elementwise ops.
#[derive(Debug)]
pub(crate) struct Program;

impl Program {
    pub(crate) fn run(&self, _inputs: &[Variable]) -> Result<Variable> {
        Err(crate::error::Error::NotImplemented("fused".into()))
    }
}

/// Replaces the chains it can fuse exactly; the other nodes are returned as they are.
pub(crate) fn fuse(nodes: Vec<Node>, _sources: &[Source], _outputs: &[ValueId]) -> Vec<Node> {
    nodes
}
