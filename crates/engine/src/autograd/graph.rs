//! The autograd DAG, allocated in one arena. See Note [The node arena] in
//! docs/architecture.md.
//!
//! Nodes live in slots of a global slab and are named by `NodeId { index, generation }`.
//! A slot's generation changes each time it is freed, so an id that outlived its node is
//! detected instead of silently naming the slot's next occupant. Nodes are reference
//! counted: every `NodeRef` (held by a Variable's `grad_fn`, or by a Python `grad_fn`
//! object) and every edge from another node counts once; a node is freed when its
//! count reaches zero, and freeing walks the graph with a worklist, never recursion.
//!
//! Everything here is generic over the [`Value`] type the graph differentiates (and
//! through it the rule type nodes hold); the one arena of a value type is
//! `V::arena()`.

use super::hooks::{HookId, NodeExtras, NodeHooks, NodeMetadata, ObserveHook};
use super::saved::SavedSlots;
use super::value::{NodeRule, Value};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::shape::Dims;
use smallvec::SmallVec;
use std::any::Any;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The address of a node of `V`'s graph: slot index plus the slot's generation when it
/// was created.
pub struct NodeId<V> {
    index: u32,
    generation: u32,
    value: PhantomData<fn() -> V>,
}

impl<V> NodeId<V> {
    fn key(&self) -> (u32, u32) {
        (self.index, self.generation)
    }
}

impl<V> Clone for NodeId<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for NodeId<V> {}
impl<V> PartialEq for NodeId<V> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<V> Eq for NodeId<V> {}
impl<V> PartialOrd for NodeId<V> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<V> Ord for NodeId<V> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}
impl<V> std::hash::Hash for NodeId<V> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key().hash(state);
    }
}
impl<V> std::fmt::Debug for NodeId<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeId({}, {})", self.index, self.generation)
    }
}

/// An edge to input `input_nr` of `node` (the output number of the variable that fed
/// the op, as in PyTorch).
pub struct Edge<V> {
    /// The node the gradient flows to.
    pub node: NodeId<V>,
    /// Which of that node's inputs (its forward outputs) receives it.
    pub input_nr: u32,
}

impl<V> Clone for Edge<V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V> Copy for Edge<V> {}
impl<V> PartialEq for Edge<V> {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.input_nr == other.input_nr
    }
}
impl<V> Eq for Edge<V> {}
impl<V> std::fmt::Debug for Edge<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Edge({:?}, {})", self.node, self.input_nr)
    }
}

/// An input's gradient edge, owning the reference when it created the node.
pub enum EdgeSource<V: Value> {
    /// An edge to an existing node, referenced by someone else.
    Borrowed(Edge<V>),
    /// An edge to a node just created for it (a leaf's AccumulateGrad).
    Owned(NodeRef<V>),
}

/// What a node does in backward.
pub(crate) enum NodeKind<V: Value> {
    /// Apply a derivative formula.
    Op(V::Rule),
    /// Add the incoming gradient to a leaf's `.grad`.
    /// The leaf is held weakly: the user owns it, the graph does not (Note [The graph
    /// does not own leaves]); a leaf that is gone receives nothing.
    AccumulateGrad(V::Weak),
    /// PyTorch's CopySlices: the history of a base whose view was written in place by
    /// the op of node `inner` (owned by this node). See Note [In-place ops].
    CopySlices {
        layout: Box<Layout>,
        inner: NodeId<V>,
    },
}

impl<V: Value> Clone for NodeKind<V> {
    fn clone(&self) -> Self {
        match self {
            NodeKind::Op(rule) => NodeKind::Op(rule.clone()),
            NodeKind::AccumulateGrad(v) => NodeKind::AccumulateGrad(v.clone()),
            NodeKind::CopySlices { layout, inner } => NodeKind::CopySlices {
                layout: layout.clone(),
                inner: *inner,
            },
        }
    }
}

impl<V: Value> NodeKind<V> {
    /// The leaf of an AccumulateGrad node, if it is still alive.
    pub(crate) fn leaf(&self) -> Option<V> {
        match self {
            NodeKind::AccumulateGrad(v) => V::upgrade(v),
            NodeKind::Op(_) | NodeKind::CopySlices { .. } => None,
        }
    }
}

/// A node's edges, one per input (`None` for inputs that do not require grad).
pub(crate) type Edges<V> = SmallVec<[Option<Edge<V>>; 2]>;

/// A node's `next_functions`: per input, the node and input number its gradient goes to.
pub type NextFunctions<V> = Vec<Option<(NodeRef<V>, u32)>>;

/// dtype and shape of the gradient of each output of a node (what its input buffer
/// receives, slot by slot); one entry, stored inline, for a single-output node.
pub(crate) type InputMeta = SmallVec<[(DType, Dims); 1]>;

/// One recorded op.
pub(crate) struct Node<V: Value> {
    pub kind: NodeKind<V>,
    pub next_edges: Edges<V>,
    pub saved: SavedSlots<V>,
    /// The sequence number (low 63 bits) and, in the top bit, whether backward already
    /// freed `saved` (only matters when it was non-empty): one word, so that `extras`
    /// does not make the slot bigger.
    seq_and_released: u64,
    /// dtype and shape of the gradient each output receives (its forward output's);
    /// its length is the node's number of outputs.
    pub input_meta: InputMeta,
    /// Hooks and metadata, for the few nodes that have any (Note \[Hooks\]).
    pub extras: Option<Box<NodeExtras<V>>>,
}

const RELEASED: u64 = 1 << 63;

impl<V: Value> Node<V> {
    pub fn sequence_nr(&self) -> u64 {
        self.seq_and_released & !RELEASED
    }

    pub fn released(&self) -> bool {
        self.seq_and_released & RELEASED != 0
    }

    fn set_released(&mut self, released: bool) {
        if released {
            self.seq_and_released |= RELEASED;
        } else {
            self.seq_and_released &= !RELEASED;
        }
    }

    /// The hooks to run, cloned (for running them outside the arena lock), or `None`.
    fn hooks(&self) -> Option<Box<NodeHooks<V>>> {
        match &self.extras {
            Some(e) if !e.hooks.is_empty() => Some(Box::new(e.hooks.clone())),
            _ => None,
        }
    }
}

struct Slot<V: Value> {
    generation: u32,
    refcount: u32,
    node: Option<Node<V>>,
}

struct ArenaInner<V: Value> {
    slots: Vec<Slot<V>>,
    free: Vec<u32>,
}

/// The slab holding every node of one value type's graph (`Value::arena`).
pub struct Arena<V: Value>(Mutex<ArenaInner<V>>);

impl<V: Value> Arena<V> {
    /// An empty arena, for a `static`.
    pub const fn new() -> Arena<V> {
        Arena(Mutex::new(ArenaInner {
            slots: Vec::new(),
            free: Vec::new(),
        }))
    }
}

impl<V: Value> Default for Arena<V> {
    fn default() -> Self {
        Arena::new()
    }
}

static NEXT_SEQUENCE_NR: AtomicU64 = AtomicU64::new(0);

/// Live nodes over all arenas.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn arena<V: Value>() -> MutexGuard<'static, ArenaInner<V>> {
    // Arena operations never panic halfway through an update, so a poisoned lock
    // (a panic elsewhere while it was held) leaves consistent data.
    V::arena().0.lock().unwrap_or_else(|e| e.into_inner())
}

impl<V: Value> ArenaInner<V> {
    fn slot(&self, id: NodeId<V>) -> Result<&Slot<V>> {
        match self.slots.get(id.index as usize) {
            Some(s) if s.generation == id.generation && s.node.is_some() => Ok(s),
            _ => Err(Error::StaleNode),
        }
    }

    fn node(&self, id: NodeId<V>) -> Result<&Node<V>> {
        self.slot(id)?.node.as_ref().ok_or(Error::StaleNode)
    }

    fn slot_mut(&mut self, id: NodeId<V>) -> Result<&mut Slot<V>> {
        match self.slots.get_mut(id.index as usize) {
            Some(s) if s.generation == id.generation && s.node.is_some() => Ok(s),
            _ => Err(Error::StaleNode),
        }
    }

    fn node_mut(&mut self, id: NodeId<V>) -> Result<&mut Node<V>> {
        self.slot_mut(id)?.node.as_mut().ok_or(Error::StaleNode)
    }

    fn incref(&mut self, id: NodeId<V>) {
        if let Ok(slot) = self.slot_mut(id) {
            slot.refcount += 1;
        }
    }

    /// Decrements `id`, freeing it and anything only it kept alive; freed nodes are
    /// pushed to `freed` so that their contents are dropped after the lock is released.
    fn decref(&mut self, id: NodeId<V>, freed: &mut Vec<Node<V>>) {
        let mut work: SmallVec<[NodeId<V>; 8]> = SmallVec::new();
        work.push(id);
        while let Some(id) = work.pop() {
            let Ok(slot) = self.slot_mut(id) else {
                continue;
            };
            slot.refcount -= 1;
            if slot.refcount > 0 {
                continue;
            }
            let node = slot
                .node
                .take()
                .expect("rustgrad internal error: live slot without node");
            slot.generation = slot.generation.wrapping_add(1);
            self.free.push(id.index);
            LIVE.fetch_sub(1, Ordering::Relaxed);
            work.extend(node.next_edges.iter().flatten().map(|e| e.node));
            if let NodeKind::CopySlices { inner, .. } = node.kind {
                work.push(inner);
            }
            freed.push(node);
        }
    }
}

/// This thread's drop queue, see `drop_freed`.
struct Dropping {
    /// Whether a `drop_freed` call on this thread is draining the queue.
    active: bool,
    /// A `Vec<Node<V>>` of the value type being drained (kept between calls, so
    /// queueing allocates nothing once the vector has grown).
    queue: Option<Box<dyn Any>>,
}

thread_local! {
    static DROPPING: RefCell<Dropping> = const {
        RefCell::new(Dropping {
            active: false,
            queue: None,
        })
    };
}

/// Drops freed nodes outside the arena lock. Dropping a node drops its saved values,
/// which may release further nodes; those are queued on this thread's list instead of
/// being dropped recursively, so a 100 000-node chain frees in constant stack depth.
fn drop_freed<V: Value>(freed: Vec<Node<V>>) {
    if freed.is_empty() {
        return;
    }
    enum Role<V: Value> {
        /// Queued for the drainer already running on this thread.
        Queued,
        /// This call drains the queue.
        Drainer(Vec<Node<V>>),
        /// Dropped here (thread-local teardown, or a drainer of another value type).
        Direct(Vec<Node<V>>),
    }
    let role = DROPPING
        .try_with(|d| {
            let mut d = d.borrow_mut();
            if d.active {
                match d
                    .queue
                    .as_mut()
                    .and_then(|q| q.downcast_mut::<Vec<Node<V>>>())
                {
                    Some(q) => {
                        q.extend(freed);
                        Role::Queued
                    }
                    None => Role::Direct(freed),
                }
            } else {
                d.active = true;
                if !d.queue.as_ref().is_some_and(|q| q.is::<Vec<Node<V>>>()) {
                    d.queue = Some(Box::new(Vec::<Node<V>>::new()));
                }
                Role::Drainer(freed)
            }
        })
        .unwrap_or(Role::Queued);
    let mut batch = match role {
        Role::Queued => return,
        Role::Direct(nodes) => {
            drop(nodes);
            return;
        }
        Role::Drainer(nodes) => nodes,
    };
    loop {
        // Each drop may push more nodes onto this thread's queue.
        batch.clear();
        let more = DROPPING
            .try_with(|d| {
                d.borrow_mut()
                    .queue
                    .as_mut()
                    .and_then(|q| q.downcast_mut::<Vec<Node<V>>>())
                    .map(std::mem::take)
            })
            .ok()
            .flatten();
        match more {
            Some(next) if !next.is_empty() => batch = next,
            _ => break,
        }
    }
    let _ = DROPPING.try_with(|d| d.borrow_mut().active = false);
}

/// A counted reference to a live node.
pub struct NodeRef<V: Value> {
    id: NodeId<V>,
}

impl<V: Value> std::fmt::Debug for NodeRef<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeRef({:?})", self.id)
    }
}

impl<V: Value> PartialEq for NodeRef<V> {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl<V: Value> Eq for NodeRef<V> {}

impl<V: Value> NodeRef<V> {
    /// The node's id.
    pub fn id(&self) -> NodeId<V> {
        self.id
    }

    /// A new counted reference to `id`, if the node is still alive.
    pub fn upgrade(id: NodeId<V>) -> Option<NodeRef<V>> {
        let mut a = arena::<V>();
        a.slot(id).ok()?;
        a.incref(id);
        Some(NodeRef { id })
    }
}

impl<V: Value> Clone for NodeRef<V> {
    fn clone(&self) -> Self {
        arena::<V>().incref(self.id);
        NodeRef { id: self.id }
    }
}

impl<V: Value> Drop for NodeRef<V> {
    fn drop(&mut self) {
        let mut freed = Vec::new();
        arena::<V>().decref(self.id, &mut freed);
        drop_freed(freed);
    }
}

/// Records a node; each edge counts as a reference to its target.
pub(crate) fn create_node<V: Value>(
    kind: NodeKind<V>,
    next_edges: Edges<V>,
    saved: SavedSlots<V>,
    input_meta: InputMeta,
) -> NodeRef<V> {
    let sources = next_edges
        .into_iter()
        .map(|e| e.map(EdgeSource::Borrowed))
        .collect();
    create_node_with_sources(kind, sources, saved, input_meta)
}

/// Records a node whose edges either borrow a reference (incremented here) or bring
/// their own (transferred to the edge). `input_meta` has one entry per output.
pub(crate) fn create_node_with_sources<V: Value>(
    kind: NodeKind<V>,
    sources: SmallVec<[Option<EdgeSource<V>>; 2]>,
    saved: SavedSlots<V>,
    input_meta: InputMeta,
) -> NodeRef<V> {
    // Before the lock: the capture may call into Python (Note [Anomaly detection]).
    let extras = match kind {
        NodeKind::AccumulateGrad(_) => None,
        NodeKind::Op(_) | NodeKind::CopySlices { .. } => {
            super::anomaly::capture_trace().map(|trace| {
                Box::new(NodeExtras {
                    anomaly_trace: Some(trace),
                    ..NodeExtras::default()
                })
            })
        }
    };
    let sequence_nr = NEXT_SEQUENCE_NR.fetch_add(1, Ordering::Relaxed);
    let mut a = arena::<V>();
    let next_edges = sources
        .into_iter()
        .map(|s| {
            s.map(|s| match s {
                EdgeSource::Borrowed(e) => {
                    a.incref(e.node);
                    e
                }
                EdgeSource::Owned(node) => {
                    let e = Edge {
                        node: node.id,
                        input_nr: 0,
                    };
                    // The edge takes over the reference `node` holds.
                    std::mem::forget(node);
                    e
                }
            })
        })
        .collect();
    let node = Node {
        kind,
        next_edges,
        saved,
        seq_and_released: sequence_nr & !RELEASED,
        input_meta,
        extras,
    };
    let index = match a.free.pop() {
        Some(i) => {
            let slot = &mut a.slots[i as usize];
            slot.refcount = 1;
            slot.node = Some(node);
            i
        }
        None => {
            let i = u32::try_from(a.slots.len())
                .expect("rustgrad internal error: more than 2^32 graph nodes");
            a.slots.push(Slot {
                generation: 0,
                refcount: 1,
                node: Some(node),
            });
            i
        }
    };
    LIVE.fetch_add(1, Ordering::Relaxed);
    let generation = a.slots[index as usize].generation;
    NodeRef {
        id: NodeId {
            index,
            generation,
            value: PhantomData,
        },
    }
}

/// Records a CopySlices node that takes over the reference `inner` holds.
pub(crate) fn create_copy_slices<V: Value>(
    layout: Layout,
    inner: NodeRef<V>,
    sources: SmallVec<[Option<EdgeSource<V>>; 2]>,
    input_meta: (DType, Dims),
) -> NodeRef<V> {
    let kind = NodeKind::CopySlices {
        layout: Box::new(layout),
        inner: inner.id,
    };
    // The node owns `inner`'s reference from now on (released in `ArenaInner::decref`).
    std::mem::forget(inner);
    let mut meta = InputMeta::new();
    meta.push(input_meta);
    create_node_with_sources(kind, sources, SmallVec::new(), meta)
}

/// What backward needs from a node to run it.
pub(crate) struct NodeTask<V: Value> {
    pub kind: NodeKind<V>,
    pub next_edges: Edges<V>,
    pub saved: SavedSlots<V>,
    /// The node's number of outputs (slots of its input buffer).
    pub num_outputs: usize,
    /// The node's hooks, if it has any (Note \[Hooks\]).
    pub hooks: Option<Box<NodeHooks<V>>>,
}

/// Takes what is needed to run `id`; unless `retain_graph`, frees its saved tensors
/// (they are moved into the task and dropped when it finishes, outside the lock).
pub(crate) fn take_task<V: Value>(id: NodeId<V>, retain_graph: bool) -> Result<NodeTask<V>> {
    let mut a = arena::<V>();
    let node = a.node_mut(id)?;
    if node.released() {
        return Err(Error::BackwardTwice);
    }
    let saved = if retain_graph {
        node.saved.clone()
    } else {
        let saved = std::mem::take(&mut node.saved);
        node.set_released(saved.iter().any(Option::is_some));
        saved
    };
    Ok(NodeTask {
        kind: node.kind.clone(),
        next_edges: node.next_edges.clone(),
        saved,
        num_outputs: node.input_meta.len(),
        hooks: node.hooks(),
    })
}

/// A capture node's hooks and, for an AccumulateGrad node, its leaf.
pub(crate) type CaptureHooks<V> = (Option<Box<NodeHooks<V>>>, Option<V>);

/// The hooks of a node that is popped only to capture a gradient (it does not run),
/// and the leaf of an AccumulateGrad node (whose tensor hooks live on the leaf).
pub(crate) fn capture_hooks<V: Value>(id: NodeId<V>) -> Result<CaptureHooks<V>> {
    let a = arena::<V>();
    let node = a.node(id)?;
    Ok((node.hooks(), node.kind.leaf()))
}

/// Runs `update` on the node's extras (created when missing), under the arena lock:
/// `update` must not run user code. Whatever it returns is dropped after the lock is
/// released (a replaced hook may hold a Python object whose destructor runs code).
fn with_extras<V: Value, T>(
    id: NodeId<V>,
    update: impl FnOnce(&mut NodeExtras<V>) -> T,
) -> Result<T> {
    let mut a = arena::<V>();
    let node = a.node_mut(id)?;
    let extras = node.extras.get_or_insert_with(Default::default);
    Ok(update(extras))
}

/// Registers a hook on node `id` with `add`, which gets a fresh id; returns that id.
pub fn add_hook<V: Value>(
    id: NodeId<V>,
    add: impl FnOnce(&mut NodeHooks<V>, HookId),
) -> Result<HookId> {
    let hook_id = super::hooks::next_hook_id();
    with_extras(id, |e| add(&mut e.hooks, hook_id))?;
    Ok(hook_id)
}

/// Removes hook `hook_id` from node `id`; a node that is gone has no hooks to remove.
pub fn remove_hook<V: Value>(id: NodeId<V>, hook_id: HookId) {
    let old = with_extras(id, |e| {
        let old = e.hooks.clone();
        e.hooks.remove(hook_id);
        old
    });
    drop(old);
}

/// Sets (or with `None` clears) the `retain_grad` hook of output `output_nr` of `id`.
pub fn set_retains_grad<V: Value>(id: NodeId<V>, output_nr: u32, hook: Option<ObserveHook<V>>) {
    let old = with_extras(id, |e| {
        let list = &mut e.hooks.retains_grad;
        let old = list
            .iter()
            .position(|(nr, _)| *nr == output_nr)
            .map(|i| list.remove(i));
        if let Some(hook) = hook {
            list.push((output_nr, hook));
        }
        old
    });
    drop(old);
}

/// The node's metadata, made by `init` on first use (PyTorch's `grad_fn.metadata`).
pub fn metadata<V: Value>(
    id: NodeId<V>,
    init: impl FnOnce() -> NodeMetadata,
) -> Result<NodeMetadata> {
    // `init` may allocate a Python object: made outside the lock, used only when the
    // node has no metadata yet.
    if let Some(m) = with_extras(id, |e| e.metadata.clone())? {
        return Ok(m);
    }
    let fresh = init();
    let (current, unused) = with_extras(id, |e| match &e.metadata {
        Some(m) => (m.clone(), Some(fresh)),
        None => {
            e.metadata = Some(fresh.clone());
            (fresh, None)
        }
    })?;
    drop(unused);
    Ok(current)
}

/// The forward trace anomaly detection kept for the node, if any.
pub(crate) fn anomaly_trace<V: Value>(id: NodeId<V>) -> Result<Option<String>> {
    let a = arena::<V>();
    Ok(a.node(id)?
        .extras
        .as_ref()
        .and_then(|e| e.anomaly_trace.clone()))
}

/// For graph traversal: the next edges and sequence number of a node.
pub(crate) fn edges_and_sequence_nr<V: Value>(id: NodeId<V>) -> Result<(Edges<V>, u64)> {
    let a = arena::<V>();
    let n = a.node(id)?;
    Ok((n.next_edges.clone(), n.sequence_nr()))
}

/// Points the saved outputs of node `id` at `to`'s data, at its current version: an
/// in-place op computes its result apart and writes it into `to`, whose storage is the
/// op's real output (Note [In-place ops]). The values dropped are freed after the
/// arena lock is released.
pub(crate) fn rebind_saved_outputs<V: Value>(id: NodeId<V>, to: &V) -> Result<()> {
    let mut dropped: SmallVec<[V; 1]> = SmallVec::new();
    {
        let mut a = arena::<V>();
        for slot in a.node_mut(id)?.saved.iter_mut().flatten() {
            if let Some(old) = slot.rebind_output(to) {
                dropped.push(old);
            }
        }
    }
    drop(dropped);
    Ok(())
}

/// The dtype and shape of the gradient output `output_nr` of a node expects.
pub(crate) fn input_meta<V: Value>(id: NodeId<V>, output_nr: u32) -> Result<(DType, Dims)> {
    let a = arena::<V>();
    a.node(id)?
        .input_meta
        .get(output_nr as usize)
        .cloned()
        .ok_or_else(|| {
            Error::NotImplemented(format!(
                "rustgrad internal error: a gradient for output {output_nr} of a node with fewer outputs"
            ))
        })
}

/// The number of outputs of a node (`grad_fn._num_outputs` ... in PyTorch's terms, the
/// number of slots of its input buffer).
pub fn num_outputs<V: Value>(id: NodeId<V>) -> Result<usize> {
    Ok(arena::<V>().node(id)?.input_meta.len())
}

/// The node's PyTorch class name (`MulBackward0`, `AccumulateGrad`, ...).
pub fn node_name<V: Value>(id: NodeId<V>) -> Result<&'static str> {
    let a = arena::<V>();
    Ok(match &a.node(id)?.kind {
        NodeKind::Op(op) => op.name(),
        NodeKind::AccumulateGrad(_) => "AccumulateGrad",
        NodeKind::CopySlices { .. } => "CopySlices",
    })
}

/// The node's `next_functions`: for each input, the node its gradient goes to and the
/// input number there, or `None` for inputs that do not require grad.
pub fn next_functions<V: Value>(id: NodeId<V>) -> Result<NextFunctions<V>> {
    let mut a = arena::<V>();
    let edges = a.node(id)?.next_edges.clone();
    Ok(edges
        .iter()
        .map(|e| {
            e.map(|e| {
                a.incref(e.node);
                (NodeRef { id: e.node }, e.input_nr)
            })
        })
        .collect())
}

/// The leaf variable of an `AccumulateGrad` node.
pub fn accumulate_grad_variable<V: Value>(id: NodeId<V>) -> Result<Option<V>> {
    let a = arena::<V>();
    Ok(a.node(id)?.kind.leaf())
}

/// The sequence number of a node (its creation order).
pub fn sequence_nr<V: Value>(id: NodeId<V>) -> Result<u64> {
    Ok(arena::<V>().node(id)?.sequence_nr())
}

/// What a node keeps for backward: the number of tensors it saved and their bytes
/// (numel × element size each; a CopySlices node counts those of the op it wraps).
/// Zero after a backward without `retain_graph` released them. See Note [Graph
/// introspection].
pub fn saved_summary<V: Value>(id: NodeId<V>) -> Result<(usize, usize)> {
    let a = arena::<V>();
    let mut count = 0;
    let mut bytes = 0;
    let mut node = a.node(id)?;
    loop {
        for s in node.saved.iter().flatten() {
            count += 1;
            bytes += s.nbytes();
        }
        match node.kind {
            NodeKind::CopySlices { inner, .. } => node = a.node(inner)?,
            NodeKind::Op(_) | NodeKind::AccumulateGrad(_) => return Ok((count, bytes)),
        }
    }
}

/// The shapes of a node's outputs in the forward graph (the shapes its incoming
/// gradients have); an AccumulateGrad node has its leaf's.
pub fn output_shapes<V: Value>(id: NodeId<V>) -> Result<Vec<Dims>> {
    Ok(arena::<V>()
        .node(id)?
        .input_meta
        .iter()
        .map(|(_, shape)| shape.clone())
        .collect())
}

/// Number of nodes alive in the process (for leak tests and debugging).
pub fn live_nodes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Saved tensor `index` of node `id` as its backward would read it (version-checked,
/// or through the unpack hook; a saved output gets its history back when grad mode is
/// on), `None` for a slot the op did not need. Raises "Trying to backward through the
/// graph a second time (or directly access saved tensors ...)" after a backward released
/// them. Unpacking runs outside the arena lock. Python's `grad_fn._saved_*`.
pub fn saved_tensor<V: Value>(id: NodeId<V>, index: usize) -> Result<Option<V>> {
    let slot = {
        let a = arena::<V>();
        let node = a.node(id)?;
        if node.released() {
            return Err(Error::BackwardTwice);
        }
        node.saved.get(index).cloned().flatten()
    };
    slot.map(|s| s.unpack(id)).transpose()
}

/// Packs saved tensor `index` of node `id` with `hooks` now (Python's
/// `grad_fn._raw_saved_<name>.register_hooks(pack, unpack)`): its backward will unpack
/// it through them. An empty slot (not saved, or released by a backward) raises
/// PyTorch's "Calling register_hooks on a saved tensor with value None is forbidden".
/// The pack hook runs outside the arena lock.
pub fn register_saved_hooks<V: Value>(
    id: NodeId<V>,
    index: usize,
    hooks: &dyn super::saved::SavedTensorHooks<V>,
) -> Result<()> {
    let slot = arena::<V>().node(id)?.saved.get(index).cloned().flatten();
    let slot = slot.ok_or_else(|| {
        Error::InvalidArgument(
            "Calling register_hooks on a saved tensor with value None is forbidden".into(),
        )
    })?;
    let packed = slot.with_hooks(hooks)?;
    let mut a = arena::<V>();
    if let Some(s) = a.node_mut(id)?.saved.get_mut(index) {
        *s = Some(packed);
    }
    Ok(())
}
