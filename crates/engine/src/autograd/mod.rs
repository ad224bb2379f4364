//! Automatic differentiation: the graph arena, saved tensors, derivative formulas, the
//! backward scheduler and grad mode.

pub mod anomaly;
pub mod engine;
pub mod grad_mode;
pub mod graph;
pub mod hooks;
pub mod saved;
pub mod value;

pub use engine::{backward, backward_inputs, grad, pool_nodes_run};
pub use grad_mode::{
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad,
    set_grad_enabled, GradModeGuard, InferenceModeGuard,
};
pub use graph::{live_nodes, next_functions, node_name, num_outputs, Edge, NodeId, NodeRef};
pub use hooks::{
    register_node_hook, register_node_prehook, HookHandle, HookId, NodeExtras, NodeHooks,
    NodeMetadata, NodePostHook, NodePreHook, ObserveHook, TensorHook,
};
pub use value::{Grads, NodeRule, Value};

#[cfg(test)]
mod tests {
    /// The dependency between autograd and the layers above it runs one way: autograd
    /// works on the `Value` / `NodeRule` traits and names no op, no `Variable` and no
    /// optimizer (DESIGN.md §2; Note [The node arena]).
    #[test]
    fn autograd_does_not_import_the_layers_above() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/autograd");
        let mut checked = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let source = std::fs::read_to_string(&path).unwrap();
            for (n, line) in source.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                // Spelled in pieces so that this test does not find itself.
                for forbidden in [
                    concat!("crate::", "variable"),
                    concat!("crate::", "ops"),
                    concat!("crate::", "optim"),
                    concat!("Vari", "able"),
                ] {
                    assert!(
                        !code.contains(forbidden),
                        "{}:{}: autograd names `{forbidden}`: {line}",
                        path.display(),
                        n + 1
                    );
                }
            }
            checked += 1;
        }
        assert!(checked >= 5, "expected the autograd sources in {dir}");
    }
}
