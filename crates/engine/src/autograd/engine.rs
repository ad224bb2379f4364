//! The backward scheduler. See Note [The backward scheduler].
//!
//! 1. From the roots, walk the graph (only nodes that need gradients are in it: inputs
//!    that do not require grad have no edge) and count each node's dependencies.
//! 2. Run ready nodes (all dependencies delivered) in decreasing `sequence_nr`, i.e.
//!    later-created first. Gradients arriving at a node are summed into its input
//!    buffer in execution order, which is fixed by the sequence numbers, so fan-in
//!    sums are bitwise reproducible.
//! 3. Unless `retain_graph`, a node frees its saved tensors as soon as it has run.
//!
//! A node's input buffer has one slot per output of the node (`Edge::input_nr`); a
//! rule receives `None` for outputs that no gradient reached (Note [Zero gradients]).
//!
//! Large pure-Rust nodes may run on the engine's pool while the calling thread goes on
//! with other ready nodes; contributions are then summed in the same order as above,
//! and user code (hooks, custom Functions) still runs only on the calling thread. See
//! Note [Parallel backward].

use super::anomaly;
use super::grad_mode::GradModeGuard;
use super::graph::{self, Edge, EdgeSource, NodeId, NodeKind, NodeRef};
use super::hooks::{self, NodeHooks};
use super::saved::{Saved, SavedSlots};
use super::value::{Grads, NodeRule, Value};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::parallel::PARALLEL_MIN_ELEMENTS;
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::collections::{BinaryHeap, HashMap};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Nodes run on the pool so far, process-wide.
static POOL_NODES: AtomicU64 = AtomicU64::new(0);

/// How many backward nodes have run on the pool (not on the thread that called
/// backward) since the process started: tests use it to check that the parallel path
/// of Note [Parallel backward] was taken.
pub fn pool_nodes_run() -> u64 {
    POOL_NODES.load(Ordering::Relaxed)
}

/// Per-node state during one backward pass.
struct Pending<V> {
    dependencies: usize,
    sequence_nr: u64,
    /// The input buffer: the summed gradient of each output of the node so far.
    inputs: SmallVec<[Option<V>; 1]>,
    /// Contributions that arrived once nodes ran concurrently: `(producer's
    /// sequence_nr, slot, gradient)`, summed in decreasing sequence_nr when the node is
    /// popped (Note [Parallel backward]).
    late: SmallVec<[(u64, u32, V); 1]>,
}

/// Where inputs' gradients are captured: node -> `(buffer slot, index of the input)`.
type Captures<V> = HashMap<NodeId<V>, SmallVec<[(u32, usize); 1]>>;
/// A root's gradient edge, its gradient, and the reference that keeps a leaf root's
/// AccumulateGrad node alive.
type RootEdge<V> = (Edge<V>, V, Option<NodeRef<V>>);

/// Computes gradients of `roots` and accumulates them into the leaves' `.grad`.
///
/// `grad_outputs[i]` is the gradient of `roots[i]` (`None`: implicit 1 for a scalar).
/// With `create_graph`, the backward computation is itself recorded.
pub fn backward<V: Value>(
    roots: &[V],
    grad_outputs: &[Option<V>],
    retain_graph: bool,
    create_graph: bool,
) -> Result<()> {
    execute(roots, grad_outputs, None, retain_graph, create_graph).map(|_| ())
}

/// PyTorch's `autograd.grad`: the gradients of `roots` with respect to `inputs`
/// (leaves or not), captured where they flow into each input (its gradient edge)
/// instead of being accumulated. Nodes that cannot reach an input never run and no
/// `.grad` changes. `None` marks an input no gradient reached. See Note [grad and
/// input capture].
///
/// Every input must require grad ("One of the differentiated Tensors does not require
/// grad"); the roots are checked as in [`backward`].
pub fn grad<V: Value>(
    roots: &[V],
    grad_outputs: &[Option<V>],
    inputs: &[V],
    retain_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<V>>> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument(
            "`inputs` argument to `grad()` cannot be empty.".into(),
        ));
    }
    if inputs.iter().any(|i| !i.needs_grad()) {
        return Err(Error::InvalidArgument(
            "One of the differentiated Tensors does not require grad".into(),
        ));
    }
    execute(
        roots,
        grad_outputs,
        Some(inputs),
        retain_graph,
        create_graph,
    )
}

/// `backward(inputs=...)`: like [`grad`], then adds each leaf input's gradient to its
/// `.grad`, once per distinct input. A non-leaf input is made to retain its gradient
/// first, as PyTorch does, so its `.grad` is filled once, by its `retain_grad` hook,
/// after its tensor hooks (Note \[Hooks\]). Other leaves are untouched.
pub fn backward_inputs<V: Value>(
    roots: &[V],
    grad_outputs: &[Option<V>],
    inputs: &[V],
    retain_graph: bool,
    create_graph: bool,
) -> Result<()> {
    if inputs.is_empty() {
        return Err(Error::InvalidArgument(
            "`inputs` argument to `backward()` cannot be empty.".into(),
        ));
    }
    if inputs.iter().any(|i| !i.needs_grad()) {
        return Err(Error::InvalidArgument(
            "can't retain_grad on Tensor that has requires_grad=False".into(),
        ));
    }
    for input in inputs {
        if input.history().is_some() {
            input.retain_grad()?;
        }
    }
    let grads = execute(
        roots,
        grad_outputs,
        Some(inputs),
        retain_graph,
        create_graph,
    )?;
    let _mode = GradModeGuard::new(create_graph);
    let mut done: Vec<(NodeId<V>, u32)> = Vec::new();
    for (input, g) in inputs.iter().zip(grads) {
        let key = match input.gradient_edge() {
            Some(EdgeSource::Borrowed(e)) => (e.node, e.input_nr),
            Some(EdgeSource::Owned(n)) => (n.id(), 0),
            None => continue,
        };
        if done.contains(&key) {
            continue;
        }
        done.push(key);
        if input.history().is_some() {
            continue;
        }
        if let Some(g) = g {
            input.accumulate(g)?;
            // PyTorch runs the inputs' AccumulateGrad nodes, with their hooks.
            if let Some(hooks) = input.leaf_hooks() {
                for (_, hook) in &hooks.post_accumulate {
                    hook(input)?;
                }
            }
        }
    }
    Ok(())
}

/// One backward pass. Without `inputs`, every node reachable from the roots runs and
/// leaves accumulate. With `inputs`, the gradient arriving at each input's edge is
/// captured and returned, and only nodes from which some input's edge can be reached
/// run (PyTorch's `exec_info`): the capture nodes themselves run only when they lead to
/// another input, and AccumulateGrad nodes never do.
fn execute<V: Value>(
    roots: &[V],
    grad_outputs: &[Option<V>],
    inputs: Option<&[V]>,
    retain_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<V>>> {
    let retain_graph = retain_graph || create_graph;
    let mut root_edges: Vec<RootEdge<V>> = Vec::with_capacity(roots.len());
    for (index, root) in roots.iter().enumerate() {
        if !root.needs_grad() {
            return Err(Error::DoesNotRequireGrad { index });
        }
        let grad = match grad_outputs.get(index).cloned().flatten() {
            Some(g) => {
                let (gd, rd) = (g.data(), root.data());
                if gd.shape() != rd.shape() {
                    return Err(Error::GradShapeMismatch {
                        index,
                        grad_shape: gd.shape().to_vec(),
                        output_shape: rd.shape().to_vec(),
                    });
                }
                drop(gd);
                g
            }
            None => {
                let rd = root.data();
                if rd.numel() != 1 {
                    return Err(Error::ImplicitGradNonScalar);
                }
                V::from_data(Tensor::ones(rd.shape(), rd.dtype())?)
            }
        };
        // Keep a reference so a leaf's AccumulateGrad node lives through the pass.
        let (edge, keep) = edge_of(root).ok_or(Error::DoesNotRequireGrad { index })?;
        root_edges.push((edge, grad, keep));
    }

    // The capture points: input `out` receives slot `slot` of node `node`'s buffer.
    let mut captures: Captures<V> = HashMap::new();
    let mut _keep_inputs: Vec<NodeRef<V>> = Vec::new();
    let n_inputs = inputs.map_or(0, <[V]>::len);
    for (out, input) in inputs.unwrap_or(&[]).iter().enumerate() {
        if let Some((edge, keep)) = edge_of(input) {
            captures
                .entry(edge.node)
                .or_default()
                .push((edge.input_nr, out));
            _keep_inputs.extend(keep);
        }
    }
    let mut captured: Vec<Option<V>> = vec![None; n_inputs];

    // 1. The graph reachable from the roots (iterative depth-first walk).
    let mut graph_edges: HashMap<NodeId<V>, (graph::Edges<V>, u64)> = HashMap::new();
    let mut stack: Vec<NodeId<V>> = Vec::new();
    for (edge, _, _) in &root_edges {
        if let std::collections::hash_map::Entry::Vacant(slot) = graph_edges.entry(edge.node) {
            slot.insert(graph::edges_and_sequence_nr(edge.node)?);
            stack.push(edge.node);
        }
    }
    while let Some(id) = stack.pop() {
        let edges = graph_edges[&id].0.clone();
        for e in edges.iter().flatten() {
            if let std::collections::hash_map::Entry::Vacant(slot) = graph_edges.entry(e.node) {
                slot.insert(graph::edges_and_sequence_nr(e.node)?);
                stack.push(e.node);
            }
        }
    }

    // 2. Which nodes run: all of them, or (capturing) those that reach a capture node.
    let needed: Option<HashMap<NodeId<V>, bool>> = match inputs {
        None => None,
        Some(_) => Some(needed_nodes(&graph_edges, &captures, &root_edges)),
    };
    let runs = |id: &NodeId<V>| needed.as_ref().is_none_or(|n| n[id]);
    let executes = |id: &NodeId<V>| runs(id) || captures.contains_key(id);

    // 3. Dependency counts, over the edges a running node sends gradients along.
    let mut pending: HashMap<NodeId<V>, Pending<V>> = HashMap::new();
    for (id, (_, seq)) in &graph_edges {
        if executes(id) {
            pending.insert(
                *id,
                Pending {
                    dependencies: 0,
                    sequence_nr: *seq,
                    inputs: SmallVec::new(),
                    late: SmallVec::new(),
                },
            );
        }
    }
    for (id, (edges, _)) in &graph_edges {
        if !runs(id) {
            continue;
        }
        for e in edges.iter().flatten() {
            if let Some(p) = pending.get_mut(&e.node) {
                p.dependencies += 1;
            }
        }
    }

    // 4. Seed the roots' buffers and run.
    let _mode = GradModeGuard::new(create_graph);
    for (edge, grad, _) in &root_edges {
        if pending.contains_key(&edge.node) {
            add_to_buffer(&mut pending, *edge, grad.clone(), None)?;
        }
    }
    let mut ready: BinaryHeap<(u64, NodeId<V>)> = BinaryHeap::new();
    let mut queued: Vec<NodeId<V>> = Vec::new();
    for (edge, _, _) in &root_edges {
        if let Some(p) = pending.get(&edge.node) {
            if p.dependencies == 0 && !queued.contains(&edge.node) {
                queued.push(edge.node);
                ready.push((p.sequence_nr, edge.node));
            }
        }
    }

    // 5. Run. See Note [Parallel backward]: a large pure-Rust node goes to the pool
    // when something else could run meanwhile; everything else (hooks, custom
    // Functions, AccumulateGrad, small nodes) runs here, on the calling thread.
    // Anomaly mode checks each node's result on the driver (Note [Anomaly detection]):
    // a debugging pass runs sequentially.
    let pool = if create_graph || anomaly::is_enabled() {
        None
    } else {
        crate::parallel::backward_pool()
    };
    let (done_tx, done_rx) = mpsc::channel::<Done<V>>();
    // Tasks of the nodes on the pool; dropped here (their saved tensors may hold
    // Python objects) once their results are back.
    let mut running: HashMap<NodeId<V>, graph::NodeTask<V>> = HashMap::new();
    // Set when the first node goes to the pool: from then on contributions are tagged
    // with their producer's sequence number and summed in that order.
    let mut concurrent = false;
    // The failure of the node with the highest sequence number: the one the
    // sequential order meets first.
    let mut failure: Option<(u64, Error)> = None;
    loop {
        let mut finished: Vec<Done<V>> = Vec::new();
        if !running.is_empty() {
            finished.extend(done_rx.try_iter());
        }
        let next = if finished.is_empty() {
            match ready.pop() {
                Some(next) => Some(next),
                None if running.is_empty() => break,
                None => {
                    finished.push(crate::parallel::recv_helping(&done_rx).map_err(|_| {
                        Error::NotImplemented(
                            "rustgrad internal error: lost a backward task".into(),
                        )
                    })?);
                    None
                }
            }
        } else {
            None
        };
        for done in finished {
            let task = running.remove(&done.id);
            let result = done.result.and_then(|grads| match &task {
                Some(task) => route(&mut pending, &task.next_edges, grads, Some(done.seq)),
                None => Ok(()),
            });
            if let Err(e) = result {
                record_failure(&mut failure, done.seq, e);
            }
            if let Some(task) = &task {
                release_dependencies(&mut pending, &mut ready, &task.next_edges);
            }
            drop(task);
            drop(done.keep);
        }
        let Some((seq, id)) = next else { continue };
        if failure.as_ref().is_some_and(|(s, _)| seq < *s) {
            // The sequential order would have stopped before this node.
            continue;
        }
        let mut step = || -> Result<()> {
            let mut inputs = match pending.get_mut(&id) {
                Some(p) => take_inputs(p)?,
                None => SmallVec::new(),
            };
            let runs_here = runs(&id);
            if let Some(caps) = captures.get(&id) {
                if !runs_here {
                    // PyTorch captures after the tensor hooks when the node does not run
                    // (a leaf, or an input nothing else needs); a running node's capture
                    // sees its incoming gradient and its hooks run in `run_node`.
                    let (hooks, leaf) = graph::capture_hooks(id)?;
                    if let Some(hooks) = with_leaf_hooks(hooks, leaf.as_ref()) {
                        let n = graph::num_outputs(id)?;
                        if inputs.len() < n {
                            inputs.resize(n, None);
                        }
                        hooks::call_tensor_pre_hooks(&hooks, &mut inputs)?;
                    }
                }
                for &(slot, out) in caps {
                    captured[out] = inputs.get(slot as usize).cloned().flatten();
                }
            }
            if !runs_here {
                return Ok(());
            }
            let late = concurrent.then_some(seq);
            let mut task = graph::take_task(id, retain_graph)?;
            let node_hooks = task.hooks.take();
            let leaf = task.kind.leaf();
            let hooks = with_leaf_hooks(node_hooks, leaf.as_ref());
            if hooks.is_none() && inputs.iter().all(Option::is_none) {
                // Nothing flowed here (all contributions were None): still release deps.
                release_dependencies(&mut pending, &mut ready, &task.next_edges);
                return Ok(());
            }
            // One slot per output: outputs no gradient reached are None.
            if inputs.len() < task.num_outputs {
                inputs.resize(task.num_outputs, None);
            }
            if let (Some(pool), None, NodeKind::Op(op)) = (&pool, &hooks, &task.kind) {
                let others = !ready.is_empty() || !running.is_empty();
                if others && !op.calls_external() && numel(&inputs) >= PARALLEL_MIN_ELEMENTS {
                    // Saved tensors are unpacked here: an unpack hook is Python.
                    let saved = unpack(&task.saved, id)?;
                    let needs = needs_of(&task, &pending);
                    let op = op.clone();
                    let tx = done_tx.clone();
                    pool.spawn(move || {
                        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            let _mode = GradModeGuard::new(false);
                            op.apply(&saved, &inputs, &needs)
                        }))
                        .unwrap_or_else(|_| {
                            Err(Error::NotImplemented(
                                "rustgrad internal error: a backward rule panicked".into(),
                            ))
                        });
                        drop(op);
                        // The receiver outlives every task (the pass waits for all).
                        let _ = tx.send(Done {
                            id,
                            seq,
                            result,
                            keep: (saved, inputs),
                        });
                    });
                    concurrent = true;
                    POOL_NODES.fetch_add(1, Ordering::Relaxed);
                    running.insert(id, task);
                    return Ok(());
                }
            }
            let grads = match hooks {
                // The common case: one branch, no hook machinery.
                None => run_node(&task, id, inputs, &pending, retain_graph)?,
                Some(hooks) => {
                    let mut inputs = inputs.into_vec();
                    hooks::call_tensor_pre_hooks(&hooks, &mut inputs)?;
                    hooks::call_pre_hooks(&hooks, &mut inputs)?;
                    let mut grads: Vec<Option<V>> = if inputs.iter().all(Option::is_none) {
                        vec![None; task.next_edges.len()]
                    } else {
                        let buffer = inputs.iter().cloned().collect();
                        run_node(&task, id, buffer, &pending, retain_graph)?.into_vec()
                    };
                    if let Some(variable) = &leaf {
                        if inputs.first().is_some_and(Option::is_some) {
                            for (_, hook) in &hooks.post_accumulate {
                                hook(variable)?;
                            }
                        }
                    }
                    hooks::call_post_hooks(&hooks, &mut grads, &inputs)?;
                    grads.into_iter().collect()
                }
            };
            route(&mut pending, &task.next_edges, grads, late)?;
            release_dependencies(&mut pending, &mut ready, &task.next_edges);
            Ok(())
        };
        if let Err(e) = step() {
            if running.is_empty() && !concurrent {
                // The sequential path stops at once.
                return Err(e);
            }
            record_failure(&mut failure, seq, e);
        }
    }
    match failure {
        Some((_, e)) => Err(e),
        None => Ok(captured),
    }
}

/// A node's result coming back from the pool, with the values it borrowed (dropped on
/// the calling thread, not on the worker).
struct Done<V: Value> {
    id: NodeId<V>,
    seq: u64,
    result: Result<Grads<V>>,
    keep: (Unpacked<V>, SmallVec<[Option<V>; 1]>),
}

/// A node's unpacked saved tensors.
type Unpacked<V> = SmallVec<[Option<V>; 3]>;

/// Keeps the failure the sequential order would meet first: the highest sequence
/// number (nodes run in decreasing sequence number).
fn record_failure(failure: &mut Option<(u64, Error)>, seq: u64, e: Error) {
    if failure.as_ref().is_none_or(|(s, _)| seq > *s) {
        *failure = Some((seq, e));
    }
}

/// The elements of the gradients a node receives: its work estimate.
fn numel<V: Value>(inputs: &[Option<V>]) -> usize {
    inputs.iter().flatten().map(|g| g.data().numel()).sum()
}

/// A node's input buffer, with the contributions that arrived while nodes ran
/// concurrently added in decreasing sequence number of their producers: the order the
/// sequential scheduler adds them in (Note [Parallel backward]).
fn take_inputs<V: Value>(p: &mut Pending<V>) -> Result<SmallVec<[Option<V>; 1]>> {
    let mut inputs = std::mem::take(&mut p.inputs);
    if !p.late.is_empty() {
        let mut late = std::mem::take(&mut p.late);
        // Stable: one producer's contributions keep their edge order.
        late.sort_by_key(|c| std::cmp::Reverse(c.0));
        for (_, slot, grad) in late {
            let slot = slot as usize;
            if inputs.len() <= slot {
                inputs.resize(slot + 1, None);
            }
            inputs[slot] = Some(match inputs[slot].take() {
                Some(acc) => acc.grad_add(&grad)?,
                None => grad,
            });
        }
    }
    Ok(inputs)
}

/// Which inputs of an op node get a gradient: those whose node executes.
fn needs_of<V: Value>(
    task: &graph::NodeTask<V>,
    pending: &HashMap<NodeId<V>, Pending<V>>,
) -> SmallVec<[bool; 3]> {
    task.next_edges
        .iter()
        .map(|e| e.is_some_and(|e| pending.contains_key(&e.node)))
        .collect()
}

/// The gradient edge of `v` and, when it had to be created (a leaf's AccumulateGrad
/// node), the reference that keeps it alive through the pass.
fn edge_of<V: Value>(v: &V) -> Option<(Edge<V>, Option<NodeRef<V>>)> {
    match v.gradient_edge()? {
        EdgeSource::Borrowed(e) => Some((e, None)),
        EdgeSource::Owned(n) => Some((
            Edge {
                node: n.id(),
                input_nr: 0,
            },
            Some(n),
        )),
    }
}

/// Runs a node's own work: its rule, AccumulateGrad, or CopySlices. Returns the
/// gradients of its inputs (one per edge; none for AccumulateGrad). Anomaly detection
/// checks and reports it (Note [Anomaly detection]).
fn run_node<V: Value>(
    task: &graph::NodeTask<V>,
    id: NodeId<V>,
    inputs: SmallVec<[Option<V>; 1]>,
    pending: &HashMap<NodeId<V>, Pending<V>>,
    retain_graph: bool,
) -> Result<Grads<V>> {
    anomaly::run_checked(id, || {
        run_node_unchecked(task, id, inputs, pending, retain_graph)
    })
}

fn run_node_unchecked<V: Value>(
    task: &graph::NodeTask<V>,
    id: NodeId<V>,
    inputs: SmallVec<[Option<V>; 1]>,
    pending: &HashMap<NodeId<V>, Pending<V>>,
    retain_graph: bool,
) -> Result<Grads<V>> {
    match &task.kind {
        NodeKind::AccumulateGrad(_) => {
            // A leaf that is gone has no `.grad` anyone could read.
            let grad = inputs.into_iter().next().flatten();
            if let (Some(variable), Some(grad)) = (task.kind.leaf(), grad) {
                variable.accumulate(grad)?;
            }
            Ok(Grads::new())
        }
        NodeKind::Op(op) => {
            // Only the inputs whose node will execute get a gradient computed.
            let saved = Saved {
                slots: &task.saved,
                owner: id,
            };
            op.apply_saved(saved, &inputs, &needs_of(task, pending))
        }
        NodeKind::CopySlices { layout, inner } => match inputs.into_iter().next().flatten() {
            Some(grad) => copy_slices(layout, *inner, &grad, retain_graph),
            None => Ok(Grads::new()),
        },
    }
}

/// A node's hooks with those of its leaf (for an AccumulateGrad node) merged in.
fn with_leaf_hooks<V: Value>(
    hooks: Option<Box<NodeHooks<V>>>,
    leaf: Option<&V>,
) -> Option<Box<NodeHooks<V>>> {
    let leaf_hooks = leaf.and_then(Value::leaf_hooks);
    match (hooks, leaf_hooks) {
        (hooks, None) => hooks,
        (None, Some(l)) => Some(Box::new(l)),
        (Some(mut h), l) => {
            merge_leaf_hooks(&mut h, l);
            Some(h)
        }
    }
}

/// PyTorch's AccumulateGrad reads its tensor's hooks: they run before the node's own
/// tensor pre-hooks list (there is none on an AccumulateGrad node otherwise).
fn merge_leaf_hooks<V: Value>(hooks: &mut NodeHooks<V>, leaf: Option<NodeHooks<V>>) {
    if let Some(mut l) = leaf {
        l.tensor_pre_hooks.append(&mut hooks.tensor_pre_hooks);
        hooks.tensor_pre_hooks = l.tensor_pre_hooks;
        hooks.post_accumulate.append(&mut l.post_accumulate);
    }
}

/// PyTorch's `exec_info`: a node is needed when one of its edges leads to a capture
/// node or to a needed node. Iterative post-order walk from the roots.
fn needed_nodes<V: Value>(
    graph_edges: &HashMap<NodeId<V>, (graph::Edges<V>, u64)>,
    captures: &Captures<V>,
    root_edges: &[RootEdge<V>],
) -> HashMap<NodeId<V>, bool> {
    let mut needed: HashMap<NodeId<V>, bool> = HashMap::with_capacity(graph_edges.len());
    for (root, _, _) in root_edges {
        if needed.contains_key(&root.node) {
            continue;
        }
        let mut stack: Vec<(NodeId<V>, usize)> = vec![(root.node, 0)];
        while let Some((id, next)) = stack.last_mut() {
            let edges = &graph_edges[id].0;
            if let Some(e) = edges.get(*next) {
                *next += 1;
                if let Some(e) = e {
                    if !needed.contains_key(&e.node) {
                        stack.push((e.node, 0));
                    }
                }
            } else {
                let id = *id;
                let n = edges
                    .iter()
                    .flatten()
                    .any(|e| captures.contains_key(&e.node) || needed[&e.node]);
                needed.insert(id, n);
                stack.pop();
            }
        }
    }
    needed
}

fn unpack<V: Value>(saved: &SavedSlots<V>, owner: NodeId<V>) -> Result<Unpacked<V>> {
    Saved {
        slots: saved,
        owner,
    }
    .unpack()
}

/// Sends a node's input gradients along its edges. `late`: the node's sequence number
/// when nodes run concurrently (the contributions are then summed later, in order).
fn route<V: Value>(
    pending: &mut HashMap<NodeId<V>, Pending<V>>,
    edges: &[Option<Edge<V>>],
    grads: Grads<V>,
    late: Option<u64>,
) -> Result<()> {
    for (edge, g) in edges.iter().zip(grads) {
        if let (Some(edge), Some(g)) = (edge, g) {
            add_to_buffer(pending, *edge, g, late)?;
        }
    }
    Ok(())
}

/// PyTorch's CopySlices backward: `grad` is the gradient of the whole base. The part
/// at the view goes through the in-place op's rule (`inner`); its gradient w.r.t. the
/// view's old values replaces that part, and its other inputs get theirs. Built from
/// differentiable ops, so it is itself differentiable under `create_graph`.
fn copy_slices<V: Value>(
    layout: &Layout,
    inner: NodeId<V>,
    grad: &V,
    retain_graph: bool,
) -> Result<Grads<V>> {
    let grad_slice = grad.grad_region(layout)?;
    let inner_task = graph::take_task(inner, retain_graph)?;
    let NodeKind::Op(op) = &inner_task.kind else {
        return Err(Error::NotImplemented(
            "rustgrad internal error: CopySlices wraps a non-op node".into(),
        ));
    };
    // Ask the inner rule only for the gradients it was recorded (and saved tensors)
    // for: its own edges. The view's old values have none when the view did not
    // require grad (a plain buffer written with an operand that does): they get zero.
    let needs: SmallVec<[bool; 3]> = inner_task.next_edges.iter().map(Option::is_some).collect();
    let mut grads = op
        .apply_saved(
            Saved {
                slots: &inner_task.saved,
                owner: inner,
            },
            &[Some(grad_slice)],
            &needs,
        )?
        .into_iter();
    let view_grad = grads.next().flatten();
    let mut out: Grads<V> = SmallVec::new();
    out.push(Some(grad.grad_replace_region(layout, view_grad.as_ref())?));
    out.extend(grads);
    Ok(out)
}

/// Adds a gradient to the input buffer of `edge.node`, converting its dtype to the one
/// the node expects (ops on mixed dtypes promote). With `late` (the producer's
/// sequence number) it is kept apart and summed when the node is popped.
fn add_to_buffer<V: Value>(
    pending: &mut HashMap<NodeId<V>, Pending<V>>,
    edge: Edge<V>,
    grad: V,
    late: Option<u64>,
) -> Result<()> {
    if !pending.contains_key(&edge.node) {
        // A node that does not execute in this pass (it cannot reach an input).
        return Ok(());
    }
    let (dtype, shape) = graph::input_meta(edge.node, edge.input_nr)?;
    let grad = if grad.data().dtype() != dtype {
        grad.grad_cast(dtype)?
    } else {
        grad
    };
    if grad.data().shape() != shape.as_slice() {
        return Err(Error::NotImplemented(format!(
            "rustgrad internal error: gradient of shape {:?} for a node expecting {:?}",
            grad.data().shape(),
            shape.as_slice()
        )));
    }
    let p = pending.get_mut(&edge.node).ok_or_else(|| {
        Error::NotImplemented("rustgrad internal error: edge outside the graph".into())
    })?;
    if let Some(seq) = late {
        p.late.push((seq, edge.input_nr, grad));
        return Ok(());
    }
    let slot = edge.input_nr as usize;
    if p.inputs.len() <= slot {
        p.inputs.resize(slot + 1, None);
    }
    p.inputs[slot] = Some(match p.inputs[slot].take() {
        Some(acc) => acc.grad_add(&grad)?,
        None => grad,
    });
    Ok(())
}

fn release_dependencies<V: Value>(
    pending: &mut HashMap<NodeId<V>, Pending<V>>,
    ready: &mut BinaryHeap<(u64, NodeId<V>)>,
    edges: &[Option<Edge<V>>],
) {
    for e in edges.iter().flatten() {
        if let Some(p) = pending.get_mut(&e.node) {
            p.dependencies -= 1;
            if p.dependencies == 0 {
                ready.push((p.sequence_nr, e.node));
            }
        }
    }
}
