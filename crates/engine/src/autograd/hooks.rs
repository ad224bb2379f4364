//! Autograd hooks: user callbacks the scheduler runs around a node (PyTorch's tensor
//! pre-hooks, `retain_grad`, node pre- and post-hooks, post-accumulate-grad hooks), and
//! the node's metadata. They are plain Rust closures, so the Python binding and Rust
//! users share them. See Note \[Hooks\] in docs/architecture.md for the order and the
//! locking rules (no engine lock is held while a hook runs).

use super::value::Value;
use crate::error::{Error, Result};
use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Identifies one registered hook (for removing it).
pub type HookId = u64;

/// A tensor hook: sees the gradient flowing into a tensor (`None` where PyTorch passes
/// an undefined gradient, e.g. an unused output of a multi-output op) and may replace
/// it (`Ok(Some(new))`) or keep it (`Ok(None)`).
pub type TensorHook<V> = Arc<dyn Fn(Option<&V>) -> Result<Option<V>> + Send + Sync>;

/// A node pre-hook (`grad_fn.register_prehook`): sees the gradients of the node's
/// outputs and may replace them (a list of the same length).
pub type NodePreHook<V> = Arc<dyn Fn(&[Option<V>]) -> Result<Option<Vec<Option<V>>>> + Send + Sync>;

/// A node post-hook (`grad_fn.register_hook`): sees `(grad_inputs, grad_outputs)`
/// after the node ran and may replace `grad_inputs` (a list of the same length).
pub type NodePostHook<V> =
    Arc<dyn Fn(&[Option<V>], &[Option<V>]) -> Result<Option<Vec<Option<V>>>> + Send + Sync>;

/// A hook that observes a value: a post-accumulate-grad hook (called with the leaf
/// after its `.grad` was updated) or the `retain_grad` hook of a non-leaf (called with
/// the gradient flowing into it).
pub type ObserveHook<V> = Arc<dyn Fn(&V) -> Result<()> + Send + Sync>;

/// Opaque per-node user data (Python's `grad_fn.metadata` dict): lives as long as the
/// node, not as long as any handle on it.
pub type NodeMetadata = Arc<dyn Any + Send + Sync>;

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh hook id.
pub(crate) fn next_hook_id() -> HookId {
    NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

/// The hooks a node runs in backward, in registration order within each list.
pub struct NodeHooks<V> {
    /// Tensor hooks of the node's outputs: `(id, output_nr, hook)`.
    pub tensor_pre_hooks: Vec<(HookId, u32, TensorHook<V>)>,
    /// `retain_grad` of the node's outputs: one per output number at most.
    pub retains_grad: Vec<(u32, ObserveHook<V>)>,
    /// `grad_fn.register_prehook`.
    pub pre_hooks: Vec<(HookId, NodePreHook<V>)>,
    /// `grad_fn.register_hook`.
    pub post_hooks: Vec<(HookId, NodePostHook<V>)>,
    /// Post-accumulate-grad hooks (only for a leaf's AccumulateGrad node, merged in from
    /// the leaf when it runs).
    pub post_accumulate: Vec<(HookId, ObserveHook<V>)>,
}

impl<V> Default for NodeHooks<V> {
    fn default() -> Self {
        NodeHooks {
            tensor_pre_hooks: Vec::new(),
            retains_grad: Vec::new(),
            pre_hooks: Vec::new(),
            post_hooks: Vec::new(),
            post_accumulate: Vec::new(),
        }
    }
}

impl<V> Clone for NodeHooks<V> {
    fn clone(&self) -> Self {
        NodeHooks {
            tensor_pre_hooks: self.tensor_pre_hooks.clone(),
            retains_grad: self.retains_grad.clone(),
            pre_hooks: self.pre_hooks.clone(),
            post_hooks: self.post_hooks.clone(),
            post_accumulate: self.post_accumulate.clone(),
        }
    }
}

impl<V> NodeHooks<V> {
    /// Whether no hook of any kind is registered.
    pub fn is_empty(&self) -> bool {
        self.tensor_pre_hooks.is_empty()
            && self.retains_grad.is_empty()
            && self.pre_hooks.is_empty()
            && self.post_hooks.is_empty()
            && self.post_accumulate.is_empty()
    }

    /// Removes the hook `id` from whichever list holds it; whether one was removed.
    pub(crate) fn remove(&mut self, id: HookId) -> bool {
        let before = self.tensor_pre_hooks.len()
            + self.pre_hooks.len()
            + self.post_hooks.len()
            + self.post_accumulate.len();
        self.tensor_pre_hooks.retain(|h| h.0 != id);
        self.pre_hooks.retain(|h| h.0 != id);
        self.post_hooks.retain(|h| h.0 != id);
        self.post_accumulate.retain(|h| h.0 != id);
        let after = self.tensor_pre_hooks.len()
            + self.pre_hooks.len()
            + self.post_hooks.len()
            + self.post_accumulate.len();
        after != before
    }
}

/// What a node keeps beyond its rule and edges, allocated only for the few nodes that
/// need it (`Node::extras`), so the arena slot stays small.
pub struct NodeExtras<V> {
    /// The hooks registered on the node or its outputs.
    pub hooks: NodeHooks<V>,
    /// `grad_fn.metadata`.
    pub metadata: Option<NodeMetadata>,
    /// The trace of the forward call that recorded the node, kept while anomaly
    /// detection is on (Note [Anomaly detection]).
    pub anomaly_trace: Option<String>,
}

impl<V> Default for NodeExtras<V> {
    fn default() -> Self {
        NodeExtras {
            hooks: NodeHooks::default(),
            metadata: None,
            anomaly_trace: None,
        }
    }
}

/// Runs the tensor hooks of slot `output_nr` (in registration order) and then its
/// `retain_grad` hook: PyTorch's `call_tensor_pre_hooks`. A replacement gradient must
/// keep the shape and dtype of the one it replaces.
pub(crate) fn call_tensor_pre_hooks<V: Value>(
    hooks: &NodeHooks<V>,
    inputs: &mut [Option<V>],
) -> Result<()> {
    for (_, output_nr, hook) in &hooks.tensor_pre_hooks {
        let Some(slot) = inputs.get_mut(*output_nr as usize) else {
            continue;
        };
        if let Some(new) = hook(slot.as_ref())? {
            if let Some(old) = slot.as_ref() {
                check_replacement(old, &new)?;
            }
            *slot = Some(new);
        }
    }
    for (output_nr, hook) in &hooks.retains_grad {
        if let Some(Some(grad)) = inputs.get(*output_nr as usize) {
            hook(grad)?;
        }
    }
    Ok(())
}

/// Runs the node pre-hooks on the gradients of the node's outputs.
pub(crate) fn call_pre_hooks<V: Value>(
    hooks: &NodeHooks<V>,
    inputs: &mut Vec<Option<V>>,
) -> Result<()> {
    for (_, hook) in &hooks.pre_hooks {
        if let Some(new) = hook(inputs)? {
            check_count("pre-hook", inputs.len(), new.len())?;
            *inputs = new;
        }
    }
    Ok(())
}

/// Runs the node post-hooks on `(grad_inputs, grad_outputs)`.
pub(crate) fn call_post_hooks<V: Value>(
    hooks: &NodeHooks<V>,
    grad_inputs: &mut Vec<Option<V>>,
    grad_outputs: &[Option<V>],
) -> Result<()> {
    for (_, hook) in &hooks.post_hooks {
        if let Some(new) = hook(grad_inputs, grad_outputs)? {
            check_count("hook", grad_inputs.len(), new.len())?;
            *grad_inputs = new;
        }
    }
    Ok(())
}

fn check_count(what: &str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Error::InvalidArgument(format!(
            "{what} returned an incorrect number of gradients: expected {expected}, got {got}"
        )));
    }
    Ok(())
}

/// PyTorch's checks of a gradient a hook returned in place of `old`.
pub(crate) fn check_replacement<V: Value>(old: &V, new: &V) -> Result<()> {
    let (o, n) = (old.data(), new.data());
    if o.dtype() != n.dtype() {
        return Err(Error::InvalidArgument(format!(
            "hook 'hook' has changed the type of value (was {} got {})",
            o.dtype().legacy_type_name(),
            n.dtype().legacy_type_name()
        )));
    }
    if o.shape() != n.shape() {
        return Err(Error::InvalidArgument(
            "hook 'hook' has changed the size of value".into(),
        ));
    }
    Ok(())
}

/// A registered hook: `remove()` unregisters it (PyTorch's `RemovableHandle`).
/// Dropping the handle keeps the hook registered.
pub struct HookHandle {
    id: HookId,
    remover: Box<dyn Fn(HookId) + Send + Sync>,
}

impl HookHandle {
    /// A handle for hook `id`, removed by `remover`.
    pub(crate) fn new(id: HookId, remover: impl Fn(HookId) + Send + Sync + 'static) -> Self {
        HookHandle {
            id,
            remover: Box::new(remover),
        }
    }

    /// The hook's id (unique in the process).
    pub fn id(&self) -> HookId {
        self.id
    }

    /// Unregisters the hook; a no-op when it was removed already or its tensor or node
    /// is gone.
    pub fn remove(&self) {
        (self.remover)(self.id);
    }
}

impl std::fmt::Debug for HookHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HookHandle({})", self.id)
    }
}

/// Registers `hook` as a pre-hook of node `node` (`grad_fn.register_prehook`): it runs
/// before the node with the gradients of its outputs.
pub fn register_node_prehook<V: Value>(
    node: &super::graph::NodeRef<V>,
    hook: NodePreHook<V>,
) -> Result<HookHandle> {
    let node_id = node.id();
    let id = super::graph::add_hook(node_id, |h, id| h.pre_hooks.push((id, hook)))?;
    Ok(HookHandle::new(id, move |id| {
        super::graph::remove_hook(node_id, id)
    }))
}

/// Registers `hook` as a post-hook of node `node` (`grad_fn.register_hook`): it runs
/// after the node with `(grad_inputs, grad_outputs)`.
pub fn register_node_hook<V: Value>(
    node: &super::graph::NodeRef<V>,
    hook: NodePostHook<V>,
) -> Result<HookHandle> {
    let node_id = node.id();
    let id = super::graph::add_hook(node_id, |h, id| h.post_hooks.push((id, hook)))?;
    Ok(HookHandle::new(id, move |id| {
        super::graph::remove_hook(node_id, id)
    }))
}

/// Registers a tensor hook on output `output_nr` of node `node` (a non-leaf's
/// `register_hook`).
pub(crate) fn register_output_hook<V: Value>(
    node: super::graph::NodeId<V>,
    output_nr: u32,
    hook: TensorHook<V>,
) -> Result<HookHandle> {
    let id = super::graph::add_hook(node, |h, id| h.tensor_pre_hooks.push((id, output_nr, hook)))?;
    Ok(HookHandle::new(id, move |id| {
        super::graph::remove_hook(node, id)
    }))
}
