//! What autograd needs from the layer above it. The graph, the saved tensors and the
//! scheduler are generic over a [`Value`] type (implemented once, by `Variable`) and its
//! [`NodeRule`] type (the ops' rule enum), so autograd names no op and no `Variable`
//! method, and a node still holds its rule inline (no allocation). See Note [The node
//! arena] in docs/architecture.md.

use super::graph::{Arena, EdgeSource, NodeId, NodeRef};
use super::hooks::NodeHooks;
use super::saved::Saved;
use crate::dtype::DType;
use crate::error::Result;
use crate::layout::Layout;
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::ops::Deref;

/// Gradients of a node's inputs, one slot each (`None`: not needed or not computed).
pub type Grads<V> = SmallVec<[Option<V>; 2]>;

/// A differentiable value as the graph sees it: what the scheduler sums and passes to
/// rules, what saved tensors keep and what an AccumulateGrad node fills.
pub trait Value: Clone + Send + Sync + Sized + 'static {
    /// The backward rule a node of this graph holds.
    type Rule: NodeRule<Self>;
    /// The value's data, borrowed.
    type Data<'a>: Deref<Target = Tensor>
    where
        Self: 'a;

    /// A reference that does not keep the value alive: what the graph holds of a leaf,
    /// so that leaf → `.grad` → graph → leaf is no cycle (Note [The graph does not own
    /// leaves]).
    type Weak: Clone + Send + Sync + 'static;

    /// The one arena that holds the nodes of this value type's graph.
    fn arena() -> &'static Arena<Self>;
    /// The data.
    fn data(&self) -> Self::Data<'_>;
    /// A weak reference to this value.
    fn downgrade(&self) -> Self::Weak;
    /// The value `weak` refers to, if it is still alive.
    fn upgrade(weak: &Self::Weak) -> Option<Self>;
    /// A value without history.
    fn from_data(tensor: Tensor) -> Self;
    /// A value sharing this one's data (and version counter) without history: what a
    /// saved leaf keeps (Note [The graph does not own leaves]).
    fn detached(&self) -> Self;
    /// What a node keeps when it saves this non-leaf input: the same data and history,
    /// without references that could lead back to a leaf (a view's base), so that a
    /// `.grad` with history never closes a cycle (Note [The graph does not own leaves]).
    fn for_saving(&self) -> Self;
    /// A value that is output `output_nr` of `grad_fn`.
    fn with_history(tensor: Tensor, grad_fn: NodeRef<Self>, output_nr: u32) -> Self;
    /// `(grad_fn, output_nr)` if the value was made by a recorded op.
    fn history(&self) -> Option<(NodeId<Self>, u32)>;
    /// Whether gradients flow to or through the value.
    fn needs_grad(&self) -> bool;
    /// The edge the value's gradient flows along (its grad_fn, or a leaf's
    /// AccumulateGrad node), `None` when it does not require grad.
    fn gradient_edge(&self) -> Option<EdgeSource<Self>>;
    /// `self + other` (recorded when grad mode is on).
    fn grad_add(&self, other: &Self) -> Result<Self>;
    /// The value converted to `dtype` (recorded when grad mode is on).
    fn grad_cast(&self, dtype: DType) -> Result<Self>;
    /// AccumulateGrad: adds `grad` to this leaf's `.grad`.
    fn accumulate(&self, grad: Self) -> Result<()>;
    /// A leaf's hooks, cloned (`None` when it has none): its tensor hooks (slot 0), which
    /// run before its gradient is accumulated or captured, and its post-accumulate-grad
    /// hooks. They live on the leaf because its AccumulateGrad node may be freed and
    /// made again while the leaf lives. See Note \[Hooks\].
    fn leaf_hooks(&self) -> Option<NodeHooks<Self>>;
    /// PyTorch's `retain_grad()` (a no-op on a leaf).
    fn retain_grad(&self) -> Result<()>;
    /// The elements of this value (made contiguous) that `layout` selects, as a view
    /// (recorded when grad mode is on): the part of a base gradient at a view's place.
    fn grad_region(&self, layout: &Layout) -> Result<Self>;
    /// This value with the elements `layout` selects replaced by `value` (by zeros
    /// when `None`), recorded when grad mode is on: CopySlices' gradient for the base.
    fn grad_replace_region(&self, layout: &Layout, value: Option<&Self>) -> Result<Self>;
}

/// A derivative formula, as a node holds it.
pub trait NodeRule<V: Value>: Clone + Send + Sync + 'static {
    /// PyTorch's grad_fn class name (`MulBackward0`, ...).
    fn name(&self) -> &'static str;
    /// The gradients of the node's inputs given `grads` (one slot per output of the
    /// node; `None` for an output no gradient reached, which the rule treats as zeros)
    /// and the saved tensors; `needs[i]` says whether input `i` wants a gradient.
    /// At least one slot of `grads` is `Some`.
    fn apply(&self, saved: &[Option<V>], grads: &[Option<V>], needs: &[bool]) -> Result<Grads<V>>;
    /// [`NodeRule::apply`] given the saved tensors still packed: what the scheduler
    /// calls. By default it unpacks them all first (so a tensor modified in place since
    /// it was saved fails the node before the rule runs).
    fn apply_saved(
        &self,
        saved: Saved<'_, V>,
        grads: &[Option<V>],
        needs: &[bool],
    ) -> Result<Grads<V>> {
        self.apply(&saved.unpack()?, grads, needs)
    }
    /// Whether the rule calls user code outside the engine (a custom Function's
    /// backward, which may be Python). Such a node runs on the thread that called
    /// backward, never on a pool worker (Note [Parallel backward]).
    fn calls_external(&self) -> bool {
        false
    }
}
