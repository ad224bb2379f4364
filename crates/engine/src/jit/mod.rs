//! Capture and replay: record the ops a function runs on this thread into a
//! [`Graph`], then run that graph again without the front end (no Python per op).
//! See Note [Capture and replay].
//!
//! ```
//! use rustgrad::{jit, Variable};
//!
//! let x = Variable::from_slice(&[1.0f32, 2.0], &[2])?;
//! jit::begin(&[x.clone()])?;
//! let y = x.tanh().and_then(|t| t.mul(&x));
//! let graph = jit::end(&[y?])?;
//! let z = Variable::from_slice(&[3.0f32, 4.0], &[2])?;
//! let out = graph.run(&[z.clone()])?;
//! assert_eq!(out[0].to_vec::<f32>(), z.tanh()?.mul(&z)?.to_vec::<f32>());
//! # Ok::<(), rustgrad::Error>(())
//! ```

mod fused;
pub(crate) use fused::FusedRule;
mod graph;
mod op;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::variable::Variable;

pub use graph::Graph;
pub(crate) use op::{Op, Padding};

thread_local! {
    /// Whether a capture is active on this thread (one cheap check per op otherwise).
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// Nesting depth of recorded ops: an op run inside a recorded op (`linear` calling
    /// `matmul`, a backward's rules) is part of the outer node, not a node of its own.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

/// Index of a value (graph input, bound tensor or op output) in a [`Graph`].
pub(crate) type ValueId = usize;

/// Where a value comes from.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    /// The `k`-th argument of [`Graph::run`].
    Input(usize),
    /// A tensor made outside the capture (a parameter, a buffer, a constant, a wrapped
    /// Python number), bound by identity: replay reads its data as it is then.
    Bound(Variable),
    /// An output of a recorded op.
    Op,
}

/// A value's metadata as captured.
#[derive(Clone, Debug)]
pub(crate) struct ValueMeta {
    pub(crate) shape: crate::shape::Dims,
    pub(crate) dtype: crate::dtype::DType,
    /// A wrapped Python number (never requires grad, broadcasts anywhere).
    pub(crate) wrapped: bool,
}

impl ValueMeta {
    fn of(v: &Variable) -> ValueMeta {
        let t = v.tensor();
        ValueMeta {
            shape: t.shape().into(),
            dtype: t.dtype(),
            wrapped: t.is_wrapped_number(),
        }
    }
}

/// One recorded op: what it does, the values it reads and the values it makes.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) op: Op,
    pub(crate) inputs: Vec<ValueId>,
    pub(crate) outputs: Vec<ValueId>,
}

/// The state of a capture in progress.
struct Recorder {
    sources: Vec<Source>,
    /// Each value's shape and dtype as captured (the fusion pass reads them).
    meta: Vec<ValueMeta>,
    /// Variable identity -> value; `keep` holds the variables so identities stay unique.
    ids: HashMap<usize, ValueId>,
    keep: Vec<Variable>,
    nodes: Vec<Node>,
    /// Outputs of ops the recorder does not know, by identity, with the op's name.
    unknown: HashMap<usize, String>,
    /// The first reason the capture cannot be replayed.
    error: Option<String>,
    input_meta: Vec<graph::InputMeta>,
    grad_enabled: bool,
    /// The grad mode of the last recorded node: a change becomes a `SetGradEnabled`.
    mode: bool,
}

impl Recorder {
    fn value_of(&mut self, v: &Variable) -> Option<ValueId> {
        if let Some(&id) = self.ids.get(&v.identity()) {
            return Some(id);
        }
        if let Some(name) = self.unknown.get(&v.identity()) {
            let message = format!(
                "capture does not support the op `{name}`: it is not recorded, so a replay \
                 could not recompute its result"
            );
            self.error.get_or_insert(message);
            return None;
        }
        // Made outside the capture: bound by reference.
        Some(self.add(Source::Bound(v.clone()), v))
    }

    fn add(&mut self, source: Source, v: &Variable) -> ValueId {
        let id = self.sources.len();
        self.sources.push(source);
        self.meta.push(ValueMeta::of(v));
        self.ids.insert(v.identity(), id);
        self.keep.push(v.clone());
        id
    }
}

/// Whether a capture is active on this thread and no recorded op is running (so an op
/// starting now would be recorded).
pub fn is_capturing() -> bool {
    ACTIVE.with(Cell::get) && DEPTH.with(Cell::get) == 0
}

/// Starts capturing the ops this thread runs; `inputs` are the graph's inputs, in
/// [`Graph::run`]'s order. Errors if a capture is already active on this thread.
pub fn begin(inputs: &[Variable]) -> Result<()> {
    if ACTIVE.with(Cell::get) {
        return Err(Error::InvalidArgument(
            "capture: a capture is already running on this thread".into(),
        ));
    }
    let mut r = Recorder {
        sources: Vec::new(),
        meta: Vec::new(),
        ids: HashMap::new(),
        keep: Vec::new(),
        nodes: Vec::new(),
        unknown: HashMap::new(),
        error: None,
        input_meta: inputs.iter().map(graph::InputMeta::of).collect(),
        grad_enabled: crate::autograd::is_grad_enabled(),
        mode: crate::autograd::is_grad_enabled(),
    };
    for (k, v) in inputs.iter().enumerate() {
        if r.ids.contains_key(&v.identity()) {
            return Err(Error::InvalidArgument(format!(
                "capture: input {k} is the same tensor as an earlier input"
            )));
        }
        r.add(Source::Input(k), v);
    }
    RECORDER.with(|c| *c.borrow_mut() = Some(r));
    DEPTH.with(|d| d.set(0));
    ACTIVE.with(|a| a.set(true));
    Ok(())
}

/// Stops the capture without building a graph (the captured function raised).
pub fn abort() {
    ACTIVE.with(|a| a.set(false));
    RECORDER.with(|c| c.borrow_mut().take());
}

/// Ends the capture: the graph of the ops run since [`begin`], whose results are
/// `outputs`. Errors (naming the op) if an op the capture does not support made a
/// value the graph needs.
pub fn end(outputs: &[Variable]) -> Result<Graph> {
    if !ACTIVE.with(Cell::get) {
        return Err(Error::InvalidArgument(
            "capture: no capture is running".into(),
        ));
    }
    ACTIVE.with(|a| a.set(false));
    let Some(mut r) = RECORDER.with(|c| c.borrow_mut().take()) else {
        return Err(Error::InvalidArgument(
            "capture: no capture is running".into(),
        ));
    };
    let outs: Vec<ValueId> = outputs.iter().filter_map(|v| r.value_of(v)).collect();
    if let Some(e) = r.error {
        return Err(Error::NotImplemented(e));
    }
    Ok(Graph::new(
        r.sources,
        &r.meta,
        r.nodes,
        outs,
        r.input_meta,
        r.grad_enabled,
    ))
}

/// Marks the capture as not replayable, with `why` (an op that cannot be captured ran).
pub(crate) fn unsupported(why: &str) {
    if !is_capturing() {
        return;
    }
    RECORDER.with(|c| {
        if let Some(r) = c.borrow_mut().as_mut() {
            r.error
                .get_or_insert_with(|| format!("capture does not support {why}"));
        }
    });
}

/// Called by `Variable::record*` for every op result: while capturing, outside any
/// recorded op, a result the recorder has not been told about came from an op it
/// does not know; `site` is the type name of the op's recording closure, which names
/// the op's method.
pub(crate) fn note_result(out: &Variable, site: &str) {
    if !is_capturing() {
        return;
    }
    let name = op_name_from_site(site);
    RECORDER.with(|c| {
        if let Some(r) = c.borrow_mut().as_mut() {
            if !r.ids.contains_key(&out.identity()) {
                r.unknown.insert(out.identity(), name);
                r.keep.push(out.clone());
            }
        }
    });
}

/// `rustgrad::ops::index::<impl rustgrad::variable::Variable>::gather::{{closure}}` ->
/// `gather`.
pub(crate) fn op_name_from_site(site: &str) -> String {
    site.split("::")
        .filter(|p| !p.is_empty() && !p.starts_with('{') && !p.starts_with('<') && !p.contains('>'))
        .last()
        .unwrap_or(site)
        .to_string()
}

/// The outputs of an op, as the recorder sees them.
pub(crate) trait Outputs {
    /// The new variables the op returned.
    fn outputs(&self) -> Vec<Variable>;
}

impl Outputs for Variable {
    fn outputs(&self) -> Vec<Variable> {
        vec![self.clone()]
    }
}

impl Outputs for Vec<Variable> {
    fn outputs(&self) -> Vec<Variable> {
        self.clone()
    }
}

impl Outputs for () {
    fn outputs(&self) -> Vec<Variable> {
        Vec::new()
    }
}

impl Outputs for (Variable, Variable) {
    fn outputs(&self) -> Vec<Variable> {
        vec![self.0.clone(), self.1.clone()]
    }
}

/// Runs `run`, an op of the engine, and records it as one node (`make` describes it,
/// `inputs` are the variables it reads, in [`Op::apply`]'s order) when a capture is
/// active and no other recorded op is running. Ops that `run` calls are not recorded.
#[inline]
pub(crate) fn op<T: Outputs>(
    make: impl FnOnce() -> Op,
    inputs: &[&Variable],
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    op_opt(make, inputs, &[], run)
}

/// [`op`] for an op with optional tensor operands: those present follow `inputs`.
#[inline]
pub(crate) fn op_opt<T: Outputs>(
    make: impl FnOnce() -> Op,
    inputs: &[&Variable],
    optional: &[Option<&Variable>],
    run: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let Some(scope) = Scope::enter() else {
        return run();
    };
    let result = run();
    if let Ok(out) = &result {
        let mut all: Vec<&Variable> = inputs.to_vec();
        all.extend(optional.iter().flatten());
        scope.finish(make, &all, &out.outputs());
    }
    result
}

/// An op running while a capture is active (see [`op`]): `top` when it is not inside
/// another recorded op, so that it becomes a node.
pub(crate) struct Scope {
    top: bool,
}

impl Scope {
    /// `None` when no capture is active (the common case: one thread-local read).
    #[inline]
    pub(crate) fn enter() -> Option<Scope> {
        if !ACTIVE.with(Cell::get) {
            return None;
        }
        let top = DEPTH.with(|d| {
            let top = d.get() == 0;
            d.set(d.get() + 1);
            top
        });
        Some(Scope { top })
    }

    /// Leaves the op; records it if it was a top-level one.
    pub(crate) fn finish(
        self,
        make: impl FnOnce() -> Op,
        inputs: &[&Variable],
        outputs: &[Variable],
    ) {
        let top = self.top;
        drop(self);
        if top {
            record(make(), inputs, outputs);
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Records `op` reading `inputs` and making `outputs` if a capture is active outside
/// any recorded op (for ops that are not a call of [`op`], such as a `.grad` read).
pub(crate) fn record_now(op: impl FnOnce() -> Op, inputs: &[&Variable], outputs: &[Variable]) {
    if is_capturing() {
        record(op(), inputs, outputs);
    }
}

fn record(op: Op, inputs: &[&Variable], outputs: &[Variable]) {
    RECORDER.with(|c| {
        let mut c = c.borrow_mut();
        let Some(r) = c.as_mut() else { return };
        let mut ins = Vec::with_capacity(inputs.len());
        for v in inputs {
            match r.value_of(v) {
                Some(id) => ins.push(id),
                None => return,
            }
        }
        let mut outs = Vec::with_capacity(outputs.len());
        for v in outputs {
            match r.ids.get(&v.identity()) {
                // An op that returns one of its inputs (`dropout` with p = 0, an
                // in-place op returning `self`): the same value.
                Some(&id) if ins.contains(&id) => outs.push(id),
                _ => {
                    r.unknown.remove(&v.identity());
                    outs.push(r.add(Source::Op, v));
                }
            }
        }
        let mode = crate::autograd::is_grad_enabled();
        if mode != r.mode {
            r.mode = mode;
            r.nodes.push(Node {
                op: Op::SetGradEnabled(mode),
                inputs: Vec::new(),
                outputs: Vec::new(),
            });
        }
        r.nodes.push(Node {
            op,
            inputs: ins,
            outputs: outs,
        });
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn op_names_come_from_closure_paths() {
        let site = "rustgrad::ops::index::<impl rustgrad::variable::Variable>::gather::{{closure}}";
        assert_eq!(super::op_name_from_site(site), "gather");
    }
}
