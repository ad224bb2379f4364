//! The autograd DAG, allocated in one arena. See Note [The node arena] in
//! docs/architecture.md.
//!
//! Nodes live in slots of a global slab and are named by `NodeId { index, generation }`.
//! A slot's generation changes each time it is freed, so an id that outlived its node is
//! detected instead of silently naming the slot's next occupant. Nodes are reference
//! counted: every `NodeRef` (held by a Variable's `grad_fn`, or by a Python `grad_fn`
//! object) and every edge from another node counts once; a node is freed when its
//! count reaches zero, and freeing walks the graph with a worklist, never recursion.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::Rule;
use crate::shape::Dims;
use crate::variable::{EdgeSource, SavedSlots, Variable};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The address of a node: slot index plus the slot's generation when it was created.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    index: u32,
    generation: u32,
}

/// An edge to input `input_nr` of `node` (the output number of the variable that fed
/// the op, as in PyTorch).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The node the gradient flows to.
    pub node: NodeId,
    /// Which of that node's inputs (its forward outputs) receives it.
    pub input_nr: u32,
}

/// What a node does in backward.
#[derive(Clone)]
pub(crate) enum NodeKind {
    /// Apply a derivative formula.
    Op(Rule),
    /// Add the incoming gradient to a leaf's `.grad`.
    AccumulateGrad(Variable),
    /// PyTorch's CopySlices: the history of a base whose view was written in place by
    /// the op of node `inner` (owned by this node). See Note [In-place ops].
    CopySlices { layout: Box<Layout>, inner: NodeId },
}

/// One recorded op.
pub(crate) struct Node {
    pub kind: NodeKind,
    pub next_edges: SmallVec<[Option<Edge>; 2]>,
    pub saved: SavedSlots,
    /// Whether backward already freed `saved` (only matters when it was non-empty).
    pub released: bool,
    pub sequence_nr: u64,
    /// dtype and shape of the gradient this node receives (its forward output's).
    pub input_meta: (DType, Dims),
}

struct Slot {
    generation: u32,
    refcount: u32,
    node: Option<Node>,
}

struct Arena {
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

static ARENA: Mutex<Arena> = Mutex::new(Arena {
    slots: Vec::new(),
    free: Vec::new(),
    live: 0,
});

static NEXT_SEQUENCE_NR: AtomicU64 = AtomicU64::new(0);

fn arena() -> MutexGuard<'static, Arena> {
    // Arena operations never panic halfway through an update, so a poisoned lock
    // (a panic elsewhere while it was held) leaves consistent data.
    ARENA.lock().unwrap_or_else(|e| e.into_inner())
}

impl Arena {
    fn slot(&self, id: NodeId) -> Result<&Slot> {
        match self.slots.get(id.index as usize) {
            Some(s) if s.generation == id.generation && s.node.is_some() => Ok(s),
            _ => Err(Error::StaleNode),
        }
    }

    fn slot_mut(&mut self, id: NodeId) -> Result<&mut Slot> {
        match self.slots.get_mut(id.index as usize) {
            Some(s) if s.generation == id.generation && s.node.is_some() => Ok(s),
            _ => Err(Error::StaleNode),
        }
    }

    fn node_mut(&mut self, id: NodeId) -> Result<&mut Node> {
        self.slot_mut(id)?.node.as_mut().ok_or(Error::StaleNode)
    }

    fn incref(&mut self, id: NodeId) {
        if let Ok(slot) = self.slot_mut(id) {
            slot.refcount += 1;
        }
    }

    /// Decrements `id`, freeing it and anything only it kept alive; freed nodes are
    /// pushed to `freed` so that their contents are dropped after the lock is released.
    fn decref(&mut self, id: NodeId, freed: &mut Vec<Node>) {
        let mut work: SmallVec<[NodeId; 8]> = SmallVec::new();
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
            self.live -= 1;
            work.extend(node.next_edges.iter().flatten().map(|e| e.node));
            if let NodeKind::CopySlices { inner, .. } = node.kind {
                work.push(inner);
            }
            freed.push(node);
        }
    }
}

thread_local! {
    /// Nodes whose contents are being dropped on this thread, see `drop_freed`.
    static DROPPING: RefCell<Option<Vec<Node>>> = const { RefCell::new(None) };
}

/// Drops freed nodes outside the arena lock. Dropping a node drops its saved
/// Variables, which may release further nodes; those are queued on this thread's list
/// instead of being dropped recursively, so a 100 000-node chain frees in constant
/// stack depth.
fn drop_freed(freed: Vec<Node>) {
    if freed.is_empty() {
        return;
    }
    let queued = DROPPING
        .try_with(|d| {
            let mut d = d.borrow_mut();
            match d.as_mut() {
                Some(pending) => {
                    pending.extend(freed);
                    None
                }
                None => {
                    *d = Some(Vec::new());
                    Some(freed)
                }
            }
        })
        .unwrap_or(None);
    let Some(mut batch) = queued else { return };
    loop {
        // Each drop may push more nodes onto this thread's pending list.
        for node in batch.drain(..) {
            drop(node);
        }
        let more = DROPPING
            .try_with(|d| d.borrow_mut().as_mut().map(std::mem::take))
            .ok()
            .flatten();
        match more {
            Some(next) if !next.is_empty() => batch = next,
            _ => break,
        }
    }
    let _ = DROPPING.try_with(|d| d.borrow_mut().take());
}

/// A counted reference to a live node.
#[derive(Debug, PartialEq, Eq)]
pub struct NodeRef {
    id: NodeId,
}

impl NodeRef {
    /// The node's id.
    pub fn id(&self) -> NodeId {
        self.id
    }

    /// A new counted reference to `id`, if the node is still alive.
    pub fn upgrade(id: NodeId) -> Option<NodeRef> {
        let mut a = arena();
        a.slot(id).ok()?;
        a.incref(id);
        Some(NodeRef { id })
    }
}

impl Clone for NodeRef {
    fn clone(&self) -> Self {
        arena().incref(self.id);
        NodeRef { id: self.id }
    }
}

impl Drop for NodeRef {
    fn drop(&mut self) {
        let mut freed = Vec::new();
        arena().decref(self.id, &mut freed);
        drop_freed(freed);
    }
}

/// Records a node; each edge counts as a reference to its target.
pub(crate) fn create_node(
    kind: NodeKind,
    next_edges: SmallVec<[Option<Edge>; 2]>,
    saved: SavedSlots,
    input_meta: (DType, Dims),
) -> NodeRef {
    let sources = next_edges
        .into_iter()
        .map(|e| e.map(EdgeSource::Borrowed))
        .collect();
    create_node_with_sources(kind, sources, saved, input_meta)
}

/// Records a node whose edges either borrow a reference (incremented here) or bring
/// their own (transferred to the edge).
pub(crate) fn create_node_with_sources(
    kind: NodeKind,
    sources: SmallVec<[Option<EdgeSource>; 2]>,
    saved: SavedSlots,
    input_meta: (DType, Dims),
) -> NodeRef {
    let sequence_nr = NEXT_SEQUENCE_NR.fetch_add(1, Ordering::Relaxed);
    let mut a = arena();
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
        released: false,
        sequence_nr,
        input_meta,
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
    a.live += 1;
    let generation = a.slots[index as usize].generation;
    NodeRef {
        id: NodeId { index, generation },
    }
}

/// Records a CopySlices node that takes over the reference `inner` holds.
pub(crate) fn create_copy_slices(
    layout: Layout,
    inner: NodeRef,
    sources: SmallVec<[Option<EdgeSource>; 2]>,
    input_meta: (DType, Dims),
) -> NodeRef {
    let kind = NodeKind::CopySlices {
        layout: Box::new(layout),
        inner: inner.id,
    };
    // The node owns `inner`'s reference from now on (released in `Arena::decref`).
    std::mem::forget(inner);
    create_node_with_sources(kind, sources, SmallVec::new(), input_meta)
}

/// What backward needs from a node to run it.
pub(crate) struct NodeTask {
    pub kind: NodeKind,
    pub next_edges: SmallVec<[Option<Edge>; 2]>,
    pub saved: SavedSlots,
}

/// Takes what is needed to run `id`; unless `retain_graph`, frees its saved tensors
/// (they are moved into the task and dropped when it finishes, outside the lock).
pub(crate) fn take_task(id: NodeId, retain_graph: bool) -> Result<NodeTask> {
    let mut a = arena();
    let node = a.node_mut(id)?;
    if node.released {
        return Err(Error::BackwardTwice);
    }
    let saved = if retain_graph {
        node.saved.clone()
    } else {
        let saved = std::mem::take(&mut node.saved);
        node.released = saved.iter().any(Option::is_some);
        saved
    };
    Ok(NodeTask {
        kind: node.kind.clone(),
        next_edges: node.next_edges.clone(),
        saved,
    })
}

/// For graph traversal: the next edges and sequence number of a node.
pub(crate) fn edges_and_sequence_nr(id: NodeId) -> Result<(SmallVec<[Option<Edge>; 2]>, u64)> {
    let a = arena();
    let n = a.slot(id)?.node.as_ref().ok_or(Error::StaleNode)?;
    Ok((n.next_edges.clone(), n.sequence_nr))
}

/// The dtype and shape of the gradient a node expects.
pub(crate) fn input_meta(id: NodeId) -> Result<(DType, Dims)> {
    let a = arena();
    Ok(a.slot(id)?
        .node
        .as_ref()
        .ok_or(Error::StaleNode)?
        .input_meta
        .clone())
}

/// The node's PyTorch class name (`MulBackward0`, `AccumulateGrad`, ...).
pub fn node_name(id: NodeId) -> Result<&'static str> {
    let a = arena();
    let n = a.slot(id)?.node.as_ref().ok_or(Error::StaleNode)?;
    Ok(match &n.kind {
        NodeKind::Op(op) => op.name(),
        NodeKind::AccumulateGrad(_) => "AccumulateGrad",
        NodeKind::CopySlices { .. } => "CopySlices",
    })
}

/// The node's `next_functions`: for each input, the node its gradient goes to and the
/// input number there, or `None` for inputs that do not require grad.
pub fn next_functions(id: NodeId) -> Result<Vec<Option<(NodeRef, u32)>>> {
    let mut a = arena();
    let edges = a
        .slot(id)?
        .node
        .as_ref()
        .ok_or(Error::StaleNode)?
        .next_edges
        .clone();
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
pub fn accumulate_grad_variable(id: NodeId) -> Result<Option<Variable>> {
    let a = arena();
    let n = a.slot(id)?.node.as_ref().ok_or(Error::StaleNode)?;
    Ok(match &n.kind {
        NodeKind::AccumulateGrad(v) => Some(v.clone()),
        NodeKind::Op(_) | NodeKind::CopySlices { .. } => None,
    })
}

/// The sequence number of a node (its creation order).
pub fn sequence_nr(id: NodeId) -> Result<u64> {
    let a = arena();
    Ok(a.slot(id)?
        .node
        .as_ref()
        .ok_or(Error::StaleNode)?
        .sequence_nr)
}

/// Number of nodes alive in the process (for leak tests and debugging).
pub fn live_nodes() -> usize {
    arena().live
}
