//! A captured graph and its replay. See Note [Capture and replay].

use std::sync::Mutex;

use super::{Node, Source, ValueId};
use crate::autograd::grad_mode::GradModeGuard;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::shape::Dims;
use crate::variable::Variable;

/// What a graph input looked like when it was captured: a replay's input must match.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InputMeta {
    shape: Dims,
    dtype: DType,
    requires_grad: bool,
}

impl InputMeta {
    pub(crate) fn of(v: &Variable) -> InputMeta {
        InputMeta {
            shape: v.shape(),
            dtype: v.dtype(),
            requires_grad: v.requires_grad(),
        }
    }
}

/// The ops a function ran, captured by [`super::begin`] / [`super::end`], with a
/// memory plan: each value is released right after the last node that reads it.
#[derive(Debug)]
pub struct Graph {
    nodes: Vec<Node>,
    /// The values as a replay starts: bound tensors set, the rest empty.
    initial: Vec<Option<Variable>>,
    inputs: Vec<ValueId>,
    input_meta: Vec<InputMeta>,
    outputs: Vec<ValueId>,
    /// `release[i]`: the values no node after node `i` reads.
    release: Vec<Vec<ValueId>>,
    grad_enabled: bool,
    /// One replay at a time (the optimizer states are shared by all replays).
    running: Mutex<()>,
}

impl Graph {
    pub(crate) fn new(
        sources: Vec<Source>,
        meta: &[super::ValueMeta],
        nodes: Vec<Node>,
        outputs: Vec<ValueId>,
        input_meta: Vec<InputMeta>,
        grad_enabled: bool,
    ) -> Graph {
        let nodes = super::fused::fuse(nodes, meta, &outputs);
        let nodes = eliminate_dead(nodes, &outputs, sources.len());
        let mut inputs = vec![0; input_meta.len()];
        let mut initial = vec![None; sources.len()];
        for (id, source) in sources.into_iter().enumerate() {
            match source {
                Source::Input(k) => inputs[k] = id,
                Source::Bound(v) => initial[id] = Some(v),
                Source::Op => {}
            }
        }
        // The memory plan: the last node reading each value (outputs are never
        // released; a value nothing reads goes right after the node that makes it).
        let mut last: Vec<Option<usize>> = vec![None; initial.len()];
        for (i, node) in nodes.iter().enumerate() {
            for &v in node.inputs.iter().chain(&node.outputs) {
                last[v] = Some(i);
            }
        }
        let mut release = vec![Vec::new(); nodes.len()];
        for (v, l) in last.iter().enumerate() {
            if let Some(i) = l {
                if !outputs.contains(&v) {
                    release[*i].push(v);
                }
            }
        }
        Graph {
            nodes,
            initial,
            inputs,
            input_meta,
            outputs,
            release,
            grad_enabled,
            running: Mutex::new(()),
        }
    }

    /// Runs the captured ops on `inputs` (as many as the capture had, each of the
    /// captured shape, dtype and `requires_grad`) and returns the captured outputs'
    /// values. Bound tensors (parameters, buffers, optimizer state) are read and written
    /// as they are now. Runs under the grad mode of the capture.
    pub fn run(&self, inputs: &[Variable]) -> Result<Vec<Variable>> {
        self.check_inputs(inputs)?;
        let _one = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let _mode = GradModeGuard::new(self.grad_enabled);
        let mut values = self.initial.clone();
        for (&id, v) in self.inputs.iter().zip(inputs) {
            values[id] = Some(v.clone());
        }
        let mut args: Vec<Variable> = Vec::with_capacity(4);
        for (node, release) in self.nodes.iter().zip(&self.release) {
            args.clear();
            for &id in &node.inputs {
                args.push(values[id].clone().ok_or_else(|| missing(node))?);
            }
            let outs = node.op.apply(&args)?;
            for (&id, v) in node.outputs.iter().zip(outs) {
                values[id] = Some(v);
            }
            for &id in release {
                values[id] = None;
            }
        }
        self.outputs
            .iter()
            .map(|&id| values[id].clone().ok_or_else(|| missing(&self.nodes[0])))
            .collect()
    }

    fn check_inputs(&self, inputs: &[Variable]) -> Result<()> {
        if inputs.len() != self.input_meta.len() {
            return Err(Error::InvalidArgument(format!(
                "replay: the graph was captured with {} inputs but got {}",
                self.input_meta.len(),
                inputs.len()
            )));
        }
        for (k, (v, meta)) in inputs.iter().zip(&self.input_meta).enumerate() {
            if InputMeta::of(v) != *meta {
                return Err(Error::InvalidArgument(format!(
                    "replay: input {k} has shape {:?}, dtype {:?} and requires_grad={}, but the \
                     graph was captured with shape {:?}, dtype {:?} and requires_grad={}",
                    v.shape().as_slice(),
                    v.dtype(),
                    v.requires_grad(),
                    meta.shape.as_slice(),
                    meta.dtype,
                    meta.requires_grad
                )));
            }
        }
        Ok(())
    }

    /// The names of the recorded ops, in replay order.
    pub fn op_names(&self) -> Vec<&'static str> {
        self.nodes.iter().map(|n| n.op.name()).collect()
    }

    /// The number of graph inputs.
    pub fn num_inputs(&self) -> usize {
        self.input_meta.len()
    }

    /// The memory plan's effect: the most values a replay holds at once (bound tensors
    /// excluded), against the number of values the graph makes.
    pub fn peak_live_values(&self) -> (usize, usize) {
        let bound = self.initial.iter().filter(|v| v.is_some()).count();
        let mut live = self.inputs.len();
        let mut peak = live;
        for (node, release) in self.nodes.iter().zip(&self.release) {
            live += node.outputs.len();
            peak = peak.max(live);
            live -= release
                .iter()
                .filter(|&&id| self.initial[id].is_none())
                .count();
        }
        (peak, self.initial.len() - bound)
    }
}

fn missing(node: &Node) -> Error {
    Error::NotImplemented(format!(
        "rustgrad internal error: replay of `{}` found an operand missing",
        node.op.name()
    ))
}

/// Drops pure nodes none of whose outputs is read (a `.grad` read whose result was not
/// used, an intermediate the function computed and threw away).
fn eliminate_dead(nodes: Vec<Node>, outputs: &[ValueId], values: usize) -> Vec<Node> {
    let mut used = vec![false; values];
    for &o in outputs {
        used[o] = true;
    }
    let mut keep = vec![true; nodes.len()];
    for (i, node) in nodes.iter().enumerate().rev() {
        let needed = !node.op.is_pure() || node.outputs.iter().any(|&o| used[o]);
        keep[i] = needed;
        if needed {
            for &v in &node.inputs {
                used[v] = true;
            }
        }
    }
    nodes
        .into_iter()
        .zip(keep)
        .filter_map(|(n, k)| k.then_some(n))
        .collect()
}
