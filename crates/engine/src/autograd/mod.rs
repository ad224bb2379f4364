//! Automatic differentiation: the graph arena, saved tensors, derivative formulas, the
//! backward scheduler and grad mode.

pub mod engine;
pub mod grad_mode;
pub mod graph;
pub(crate) mod saved;

pub use engine::backward;
pub use grad_mode::{enable_grad, is_grad_enabled, no_grad, set_grad_enabled, GradModeGuard};
pub use graph::{live_nodes, next_functions, node_name, Edge, NodeId, NodeRef};
