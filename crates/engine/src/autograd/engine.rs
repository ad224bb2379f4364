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

use super::grad_mode::GradModeGuard;
use super::graph::{self, Edge, EdgeSource, NodeId, NodeKind, NodeRef};
use super::saved::SavedSlots;
use super::value::{Grads, NodeRule, Value};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;
use smallvec::SmallVec;
use std::collections::{BinaryHeap, HashMap};

/// Per-node state during one backward pass.
struct Pending<V> {
    dependencies: usize,
    sequence_nr: u64,
    /// The input buffer: the summed gradient of each output of the node so far.
    inputs: SmallVec<[Option<V>; 1]>,
}

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
    let retain_graph = retain_graph || create_graph;
    let mut root_edges: Vec<(Edge<V>, V, Option<NodeRef<V>>)> = Vec::with_capacity(roots.len());
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
                V::from_data(Tensor::ones(rd.shape(), rd.dtype()))
            }
        };
        // Keep a reference so a leaf's AccumulateGrad node lives through the pass.
        let (edge, keep) = match root.gradient_edge() {
            Some(EdgeSource::Borrowed(e)) => (e, None),
            Some(EdgeSource::Owned(n)) => (
                Edge {
                    node: n.id(),
                    input_nr: 0,
                },
                Some(n),
            ),
            None => return Err(Error::DoesNotRequireGrad { index }),
        };
        root_edges.push((edge, grad, keep));
    }

    // 1. Dependency counts.
    let mut pending: HashMap<NodeId<V>, Pending<V>> = HashMap::new();
    let mut stack: Vec<NodeId<V>> = Vec::new();
    for (edge, _, _) in &root_edges {
        if let std::collections::hash_map::Entry::Vacant(slot) = pending.entry(edge.node) {
            let (_, seq) = graph::edges_and_sequence_nr(edge.node)?;
            slot.insert(Pending {
                dependencies: 0,
                sequence_nr: seq,
                inputs: SmallVec::new(),
            });
            stack.push(edge.node);
        }
    }
    while let Some(id) = stack.pop() {
        let (edges, _) = graph::edges_and_sequence_nr(id)?;
        for e in edges.iter().flatten() {
            match pending.get_mut(&e.node) {
                Some(p) => p.dependencies += 1,
                None => {
                    let (_, seq) = graph::edges_and_sequence_nr(e.node)?;
                    pending.insert(
                        e.node,
                        Pending {
                            dependencies: 1,
                            sequence_nr: seq,
                            inputs: SmallVec::new(),
                        },
                    );
                    stack.push(e.node);
                }
            }
        }
    }

    // 2. Seed the roots' buffers and run.
    let _mode = GradModeGuard::new(create_graph);
    for (edge, grad, _) in &root_edges {
        add_to_buffer(&mut pending, *edge, grad.clone())?;
    }
    let mut ready: BinaryHeap<(u64, NodeId<V>)> = BinaryHeap::new();
    let mut queued: Vec<NodeId<V>> = Vec::new();
    for (edge, _, _) in &root_edges {
        let p = &pending[&edge.node];
        if p.dependencies == 0 && !queued.contains(&edge.node) {
            queued.push(edge.node);
            ready.push((p.sequence_nr, edge.node));
        }
    }
    while let Some((_, id)) = ready.pop() {
        let mut inputs = pending
            .get_mut(&id)
            .map(|p| std::mem::take(&mut p.inputs))
            .unwrap_or_default();
        let task = graph::take_task(id, retain_graph)?;
        if inputs.iter().all(Option::is_none) {
            // Nothing flowed here (all contributions were None): still release deps.
            release_dependencies(&mut pending, &mut ready, &task.next_edges);
            continue;
        }
        // One slot per output: outputs no gradient reached are None.
        if inputs.len() < task.num_outputs {
            inputs.resize(task.num_outputs, None);
        }
        match &task.kind {
            NodeKind::AccumulateGrad(variable) => {
                if let Some(grad) = inputs.into_iter().next().flatten() {
                    variable.accumulate(grad)?;
                }
            }
            NodeKind::Op(op) => {
                let needs: SmallVec<[bool; 3]> =
                    task.next_edges.iter().map(Option::is_some).collect();
                let grads = op.apply(&unpack(&task.saved, id)?, &inputs, &needs)?;
                route(&mut pending, &task.next_edges, grads)?;
            }
            NodeKind::CopySlices { layout, inner } => {
                if let Some(grad) = inputs.into_iter().next().flatten() {
                    let grads = copy_slices(layout, *inner, &grad, retain_graph)?;
                    route(&mut pending, &task.next_edges, grads)?;
                }
            }
        }
        release_dependencies(&mut pending, &mut ready, &task.next_edges);
    }
    Ok(())
}

fn unpack<V: Value>(saved: &SavedSlots<V>, owner: NodeId<V>) -> Result<SmallVec<[Option<V>; 3]>> {
    saved
        .iter()
        .map(|s| s.as_ref().map(|s| s.unpack(owner)).transpose())
        .collect()
}

fn route<V: Value>(
    pending: &mut HashMap<NodeId<V>, Pending<V>>,
    edges: &[Option<Edge<V>>],
    grads: Grads<V>,
) -> Result<()> {
    for (edge, g) in edges.iter().zip(grads) {
        if let (Some(edge), Some(g)) = (edge, g) {
            add_to_buffer(pending, *edge, g)?;
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
        .apply(
            &unpack(&inner_task.saved, inner)?,
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
/// the node expects (ops on mixed dtypes promote).
fn add_to_buffer<V: Value>(
    pending: &mut HashMap<NodeId<V>, Pending<V>>,
    edge: Edge<V>,
    grad: V,
) -> Result<()> {
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
